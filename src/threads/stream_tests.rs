//! Threads are an implementation detail: a stream written on several
//! threads is byte for byte the
//! stream one thread writes, for the same key, salt and nonce prefix
//! (injected here, which only a unit test can do: `FIXED_RANDOM`). Every
//! algorithm, provider, format (native, framed with flushes, Tink
//! AES-GCM-HKDF, Tink AES-CTR-HMAC), segment size, length class and
//! chunking, on both fronts; each threaded stream also reads back with
//! threaded readers.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{Read, Write};

use crate::probe::FIXED_RANDOM;
use crate::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use crate::{Algorithm, CipherReader, CipherWriter, Key, Provider, StreamKey, WriterBuilder};

/// How a stream is written: chunk sizes in turn, and whether to flush
/// after each chunk (the framed format seals a record per flush).
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) chunk: usize,
    pub(super) flush: bool,
}

pub(super) fn fixed() {
    FIXED_RANDOM.with(|f| *f.borrow_mut() = Some((0..64u8).map(|i| i ^ 0x3c).collect()));
}

pub(super) fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 251) as u8).collect()
}

/// The std front; with threads and two batches or more written, the
/// workers must have sealed some.
pub(super) fn write_std(b: WriterBuilder, pt: &[u8], plan: Plan, threads: usize) -> Written {
    fixed();
    let mut w = b.build(Vec::new());
    let mut flushed = Vec::new();
    for piece in pt.chunks(plan.chunk.max(1)) {
        w.write_all(piece).unwrap();
        if plan.flush {
            w.flush().unwrap();
            flushed.push(w.get_ref().len());
        }
    }
    // A unit goes to the ring once full with a byte after it; a flush
    // seals the whole segments buffered itself (and the ring may be
    // made up to 2.5 segments in).
    let unit = crate::threads::batch_segments(1, w.capacity()) * w.capacity();
    if threads > 1 && pt.len() > 4 * unit && (!plan.flush || plan.chunk > unit) {
        assert!(
            w.engine.counts.posted.get() > 0,
            "no unit posted to the ring: {plan:?} len {} cap {}",
            pt.len(),
            w.capacity()
        );
    }
    if threads == 1 {
        assert_eq!(
            w.engine.counts.posted.get(),
            0,
            "one thread seals one segment at a time"
        );
    }
    let out = w.finish().unwrap();
    FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
    (out, flushed)
}

/// `pt` sealed in `seg`-byte segments, written in one call on one thread.
fn sealed(key: &Key, seg: usize, pt: &[u8]) -> Vec<u8> {
    let plan = Plan {
        chunk: pt.len(),
        flush: false,
    };
    write_std(CipherWriter::builder(key).capacity(seg), pt, plan, 1).0
}

/// A stream, and how many of its bytes had gone out after each flush.
pub(super) type Written = (Vec<u8>, Vec<usize>);

/// Polls `f` to its end: the tokio front over a `Vec` never waits.
#[cfg(feature = "tokio")]
pub(super) fn run<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// The tokio front.
#[cfg(feature = "tokio")]
fn write_tokio(b: WriterBuilder, pt: &[u8], plan: Plan, _threads: usize) -> Written {
    use ::tokio::io::AsyncWriteExt;
    fixed();
    let out = run(async {
        let mut w = b.build_async(Vec::new());
        let mut flushed = Vec::new();
        for piece in pt.chunks(plan.chunk.max(1)) {
            w.write_all(piece).await.unwrap();
            if plan.flush {
                w.flush().await.unwrap();
                flushed.push(w.get_ref().len());
            }
        }
        (w.finish().await.unwrap(), flushed)
    });
    FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
    out
}

pub(super) type WriteFn = fn(WriterBuilder, &[u8], Plan, usize) -> Written;

pub(super) const FRONTS: &[(&str, WriteFn)] = &[
    ("std", write_std),
    #[cfg(feature = "tokio")]
    ("tokio", write_tokio),
];

/// Everything `r` gives, read in `size`-byte reads.
pub(super) fn read_in_chunks(r: &mut impl Read, size: usize) -> Vec<u8> {
    let mut back = Vec::new();
    let mut buf = vec![0u8; size];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            return back;
        }
        back.extend_from_slice(&buf[..n]);
    }
}

/// Thread counts compared with one thread (8: more threads than cores).
const THREADS: &[usize] = &[2, 3, 8];

/// Writes `pt` with one thread and with each of [`THREADS`], on each
/// front and provider, in each plan: the same bytes; and each reads back
/// with a threaded reader in reads of each size.
fn same_bytes<K: StreamKey>(ctx: &str, key: &K, cap: Option<usize>, framed: bool, pt: &[u8]) {
    let seg = cap.unwrap_or(8 * 1024);
    let mut plans = vec![
        Plan {
            chunk: pt.len(),
            flush: false,
        },
        Plan {
            chunk: 1000,
            flush: false,
        },
        Plan {
            chunk: seg,
            flush: false,
        },
        Plan {
            chunk: 3 * seg + 1,
            flush: false,
        },
    ];
    // A flush delivers what it delivers with one thread: every segment
    // but the last begun (fixed size), every byte (framed).
    plans.push(Plan {
        chunk: 5 * seg / 2 + 7,
        flush: true,
    });
    if framed {
        plans.push(Plan {
            chunk: 333,
            flush: true,
        });
    }
    for &p in Provider::ALL {
        // Each distinct stream is read back once: plans that write the
        // same bytes (every fixed-size plan) need no second reading.
        let mut read_back: Vec<Vec<u8>> = Vec::new();
        for plan in &plans {
            let builder = |t: usize, after: u64| {
                let mut b = CipherWriter::builder(key)
                    .associated_data(b"threads")
                    .provider(p)
                    .threads(t)
                    .threads_after(after);
                if let Some(c) = cap {
                    b = b.capacity(c);
                }
                if framed {
                    b = b.framed();
                }
                b
            };
            let one = write_std(builder(1, 0), pt, *plan, 1);
            // Threads from the first byte, and (at two threads) from
            // `2.5 × seg` bytes in (the middle of the third segment; of the
            // sixth in a Tink stream of 4 KiB segments, `seg` being the
            // default capacity there).
            let mid = (2 * seg + seg / 2) as u64;
            let counts = THREADS.iter().map(|&t| (t, 0)).chain([(2, mid)]);
            for &(front, write) in FRONTS {
                for (t, after) in counts.clone() {
                    let ctx = format!(
                        "{ctx} {p:?} {front} threads {t} after {after} {plan:?} len {}",
                        pt.len()
                    );
                    let many = write(builder(t, after), pt, *plan, t);
                    assert!(many.0 == one.0, "{ctx}: bytes differ from one thread");
                    assert_eq!(many.1, one.1, "{ctx}: bytes out after each flush");
                }
            }
            if read_back.contains(&one.0) {
                continue;
            }
            read_back.push(one.0.clone());
            for &t in THREADS {
                for read in [1, seg, 4 * seg + 3, 1 << 20] {
                    let mut r = CipherReader::builder(key)
                        .associated_data(b"threads")
                        .provider(p)
                        .threads(t)
                        .threads_after(0)
                        .build(&one.0[..]);
                    let back = read_in_chunks(&mut r, read);
                    assert!(
                        back == pt,
                        "{ctx} {p:?} threads {t} reads of {read}: read back"
                    );
                    if pt.len() > 4 * crate::threads::open_batch_segments(t, seg) * seg {
                        assert!(
                            r.engine.counts.runs.get() > 0,
                            "{ctx} threads {t}: no run opened"
                        );
                    }
                }
            }
        }
    }
}

/// Lengths around the segment and batch boundaries of `seg`-byte segments
/// (`first` bytes in segment 0): a writer's batches and a reader's runs.
fn lengths(first: usize, seg: usize, threads: usize) -> Vec<usize> {
    let batch = crate::threads::batch_segments(threads, seg);
    let run = crate::threads::open_batch_segments(threads, seg);
    let mut v = vec![0, 1, first - 1, first, first + 1];
    for k in [2, batch, batch + 1, 2 * batch + 3, run, run + 1] {
        let len = first + (k - 1) * seg;
        v.extend([len - 1, len, len + 1]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn native_streams_are_the_same_bytes_on_threads() {
    for alg in [
        Algorithm::Aes128Gcm,
        Algorithm::Aes256Gcm,
        Algorithm::ChaCha20Poly1305,
    ] {
        let key = Key::generate(alg);
        for seg in [17, 4 * 1024, 64 * 1024] {
            for len in lengths(seg, seg, 2) {
                if len > 600 * 1024 {
                    continue;
                }
                let pt = data(len);
                same_bytes(&format!("{alg:?} seg {seg}"), &key, Some(seg), false, &pt);
            }
        }
    }
}

#[test]
fn framed_streams_are_the_same_bytes_on_threads() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    for seg in [17, 4 * 1024] {
        for len in lengths(seg, seg, 2) {
            let pt = data(len);
            same_bytes(&format!("framed seg {seg}"), &key, Some(seg), true, &pt);
        }
    }
}

#[test]
fn tink_streams_are_the_same_bytes_on_threads() {
    let gcm = AesGcmHkdfKey::generate(AesGcmHkdfParams::new(16, 4096, HkdfHash::Sha256).unwrap());
    let p = gcm.params();
    let (first, seg) = (p.first_segment_plaintext(), p.segment_plaintext());
    for len in lengths(first, seg, 2) {
        same_bytes("tink gcm", &gcm, None, false, &data(len));
    }
    let params = AesCtrHmacParams::new(32, 4096, HkdfHash::Sha256, HmacHash::Sha256, 32).unwrap();
    let ctr = AesCtrHmacKey::generate(params);
    let p = ctr.params();
    let (first, seg) = (p.first_segment_plaintext(), p.segment_plaintext());
    for len in lengths(first, seg, 2) {
        same_bytes("tink ctr-hmac", &ctr, None, false, &data(len));
    }
}

/// A panic in a worker fails the stream with `WorkerPanicked`, sticky, on
/// both sides and both fronts' engine: the writer writes nothing of the
/// batch, the reader releases nothing of the run, and nothing hangs.
#[test]
fn a_worker_panic_is_a_sticky_error() {
    use crate::Error;
    use crate::probe::INJECT_PANIC;
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(6 * seg + 5);
    let ct = write_std(
        CipherWriter::builder(&key).capacity(seg),
        &pt,
        Plan {
            chunk: pt.len(),
            flush: false,
        },
        1,
    )
    .0;

    INJECT_PANIC.with(|f| f.set(true));
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .threads(2)
        .threads_after(0)
        .build(Vec::new());
    let e = w.write_all(&pt).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert!(w.get_ref().is_empty(), "nothing of a failed unit went out");
    let e = w.write(b"x").unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
    let e = w.try_finish().unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");

    // Units posted after some went out: the failure comes with the write
    // that delivers the failed unit, or with the finish.
    INJECT_PANIC.with(|f| f.set(false));
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .threads(2)
        .threads_after(0)
        .build(Vec::new());
    w.write_all(&pt[..2 * seg + 1]).unwrap();
    let posted = w.engine.counts.posted.get();
    w.engine.inject_panic();
    let e = match w.write_all(&pt[2 * seg + 1..]) {
        Err(e) => e,
        Ok(()) => w.try_finish().unwrap_err(),
    };
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert!(w.engine.counts.posted.get() > posted, "units were posted");
    let e = w.try_finish().unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");

    INJECT_PANIC.with(|f| f.set(true));
    let mut r = CipherReader::builder(&key)
        .threads(2)
        .threads_after(0)
        .build(&ct[..]);
    let mut got = Vec::new();
    let e = loop {
        let mut buf = vec![0xAAu8; pt.len()];
        match r.read(&mut buf) {
            Ok(0) => panic!("a clean end after a worker panic"),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => {
                assert!(
                    buf.iter().all(|&b| b == 0xAA || b == 0),
                    "plaintext left behind"
                );
                break e;
            }
        }
    };
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert!(
        got.len() < pt.len() && got == pt[..got.len()],
        "only a prefix"
    );
    let e = r.read(&mut [0u8; 10]).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
    INJECT_PANIC.with(|f| f.set(false));
}

/// A panic in a ring's posted job itself, on a pool thread (outside the
/// units it opens and catches), is the sticky `WorkerPanicked` after a
/// prefix of the plaintext: it aborted the process. The job runs only
/// once a pool thread takes it, so streams are read until one met it (a
/// bound in case none does); each other stream reads whole.
#[test]
fn a_panic_in_a_rings_posted_job_is_a_sticky_error() {
    use crate::Error;
    use crate::probe::{Job, PANIC_JOB};
    if crate::threads::cpus() < 2 {
        return; // No pool thread: no ring.
    }
    let key = Key::generate(Algorithm::Aes256Gcm);
    let seg = 64 * 1024;
    let pt = data(20 * seg + 5);
    let ct = sealed(&key, seg, &pt);
    PANIC_JOB.with(|f| f.set(Some(Job::Posted)));
    let failed = (0..50).find_map(|_| {
        let mut r = ring_reader(&key, &ct);
        let (got, e) = read_to_error(&mut r);
        assert!(got == pt[..got.len()], "only a prefix");
        assert!(e.is_some() || got == pt, "a clean end before the whole");
        e.map(|e| (r, got, e))
    });
    PANIC_JOB.with(|f| f.set(None));
    let (mut r, got, e) = failed.expect("a pool thread ran a ring's job");
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert!(got.len() < pt.len());
    let e = r.read(&mut [0u8; 10]).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
}

/// Bulk reads of a file-like source go to the workers: with reads that
/// end on segment boundaries, a run is the whole read-ahead (its last
/// segment tried as non-final, as one thread tries it first too), so
/// nearly every segment opens in a run, and no segment is opened twice
/// but the final one (tried as non-final first, as on one thread).
#[test]
fn bulk_reads_open_whole_batches_on_the_workers() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    for (len, threads) in [(40 * seg, 2), (40 * seg + 77, 2), (40 * seg, 3)] {
        let pt = data(len);
        let ct = sealed(&key, seg, &pt);
        let mut r = CipherReader::builder(&key)
            .threads(threads)
            .threads_after(0)
            .build(&ct[..]);
        let back = read_in_chunks(&mut r, 1 << 20);
        assert!(back == pt);
        let segments = len.div_ceil(seg);
        let batch = crate::threads::open_batch_segments(threads, seg);
        let ctx = format!(
            "len {len} threads {threads}: {} runs, {} opens",
            r.engine.counts.runs.get(),
            r.engine.counts.opens.get()
        );
        assert!(r.engine.counts.runs.get() >= segments / batch - 2, "{ctx}");
        assert!(r.engine.counts.opens.get() <= segments + 2, "{ctx}");
    }
}

/// Through an inner buffer (`build_from_buf_read` over a slice), the runs
/// open where the segments lie: nothing is copied into the read-ahead but
/// the final segment, and nearly every segment opens in a run.
#[test]
fn buffered_reads_open_runs_in_the_inner_buffer() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let seg = 64 * 1024;
    let pt = data(40 * seg + 99);
    let ct = sealed(&key, seg, &pt);
    let mut r = CipherReader::builder(&key)
        .threads(2)
        .threads_after(0)
        .build_from_buf_read(&ct[..]);
    let back = read_in_chunks(&mut r, 1 << 20);
    assert!(back == pt);
    let ctx = format!(
        "{} runs, {} opens, {} read ahead",
        r.engine.counts.runs.get(),
        r.engine.counts.opens.get(),
        r.engine.read_ahead()
    );
    assert!(r.engine.counts.runs.get() >= 40 / 16 - 1, "{ctx}");
    assert!(r.engine.counts.opens.get() <= 41 + 1, "{ctx}");
}

/// With prefetch, a read of several segments is a fed run: its
/// ciphertext is read while its segments open, one inner read per
/// segment, every run after the first segment is fed, no read is made
/// beside a run, no segment is opened twice (the final one aside), and
/// nothing is moved in the read-ahead but the header's segment. Reads
/// smaller than a segment and `BufRead` (chunk 0 below) go through one
/// ring instead, which opens all but the first and last few segments,
/// none twice, with one inner read per segment. Without prefetch (a read
/// then waits for no more than its first segment), with one thread, or
/// from an inner buffer, no run is fed and no read is made beside one.
#[test]
fn prefetching_readers_read_each_run_while_it_opens() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    for (len, threads, chunk) in [
        (40 * seg, 2, 1 << 20),
        (40 * seg + 77, 2, 8 * 1024),
        (40 * seg + 77, 3, 1 << 20),
        (40 * seg, 8, 8 * 1024),
        (40 * seg + 77, 2, 0),
    ] {
        let pt = data(len);
        let ct = sealed(&key, seg, &pt);
        let segments = len.div_ceil(seg);
        let reader = |prefetch| {
            CipherReader::builder(&key)
                .capacity(seg)
                .threads(threads)
                .threads_after(0)
                .prefetch(prefetch)
        };
        let read_all = |r: &mut CipherReader<Counted<&[u8]>>| match chunk {
            0 => read_buffered(r),
            _ => read_in_chunks(r, chunk),
        };
        let mut plain = reader(false).build(Counted::new(&ct[..]));
        assert!(read_all(&mut plain) == pt);
        let mut r = reader(true).build(Counted::new(&ct[..]));
        assert!(read_all(&mut r) == pt);
        let c = &r.engine.counts;
        let (runs, beside, calls) = (c.runs.get(), c.beside.get(), r.get_ref().calls);
        if chunk < seg {
            // Reads smaller than a segment go through a ring instead.
            let (rings, ringed) = (c.rings.get(), c.ring_opened.get());
            let ctx = format!(
                "len {len} threads {threads} chunk {chunk}: {rings} rings, {ringed} segments \
                 opened in them, {} opened the usual way, {runs} runs, {calls} inner reads",
                c.opens.get()
            );
            assert_eq!(
                plain.engine.counts.rings.get(),
                0,
                "{ctx}: without prefetch"
            );
            assert_eq!(rings, 1, "{ctx}");
            assert!(ringed + 3 >= segments, "{ctx}");
            assert!(ringed + c.opens.get() <= segments + 2, "{ctx}");
            assert!(calls <= segments + 4, "{ctx}");
            continue;
        }
        let fed = c.fed.get();
        let ctx = format!(
            "len {len} threads {threads} chunk {chunk}: {runs} runs ({} without prefetch), \
             {fed} fed, {beside} reads beside them of {calls} inner reads, {} opens, \
             {} bytes moved",
            plain.engine.counts.runs.get(),
            c.opens.get(),
            c.moved.get(),
        );
        let p = &plain.engine.counts;
        assert_eq!(
            (p.beside.get(), p.fed.get()),
            (0, 0),
            "{ctx}: without prefetch"
        );
        assert!(fed >= 1 && fed + 1 >= runs, "{ctx}");
        assert_eq!(c.fed_in_place.get(), fed, "{ctx}: in place");
        assert_eq!(beside, 0, "{ctx}");
        assert!(calls <= segments + 4, "{ctx}");
        assert!(c.opens.get() <= segments + 2, "{ctx}");
        assert!(c.moved.get() <= seg + 16, "{ctx}");
    }
    // Into the read-ahead instead: a read-ahead larger than a segment (an
    // inner read in place is one segment at most), or a provider that
    // does not open in place.
    let pt = data(40 * seg + 77);
    let ct = sealed(&key, seg, &pt);
    let apart = [
        (2 * seg, Provider::RustCrypto),
        #[cfg(feature = "aws-lc")]
        (seg, Provider::AwsLc),
    ];
    for (capacity, provider) in apart {
        let b = CipherReader::builder(&key).capacity(capacity);
        let mut r = prefetching(b.provider(provider), &ct);
        assert!(read_in_chunks(&mut r, 1 << 20) == pt);
        let c = &r.engine.counts;
        let ctx = format!(
            "{provider:?} capacity {capacity}: {} fed, {} in place, {} opens",
            c.fed.get(),
            c.fed_in_place.get(),
            c.opens.get()
        );
        assert!(c.fed.get() >= 2 && c.fed_in_place.get() == 0, "{ctx}");
        assert!(c.opens.get() <= 41 + 2, "{ctx}");
    }
    let ct = write_std(
        CipherWriter::builder(&key).capacity(seg),
        &data(20 * seg),
        Plan {
            chunk: 20 * seg,
            flush: false,
        },
        1,
    )
    .0;
    let mut one = CipherReader::builder(&key).prefetch(true).build(&ct[..]);
    assert_eq!(read_in_chunks(&mut one, 1 << 20).len(), 20 * seg);
    assert_eq!(one.engine.counts.beside.get(), 0, "one thread");
    assert_eq!(one.engine.counts.fed.get(), 0, "one thread");
    let mut inner_buf = CipherReader::builder(&key)
        .threads(2)
        .threads_after(0)
        .prefetch(true)
        .build_from_buf_read(&ct[..]);
    assert_eq!(read_in_chunks(&mut inner_buf, 1 << 20).len(), 20 * seg);
    assert_eq!(inner_buf.engine.counts.beside.get(), 0, "inner buffer");
    assert_eq!(inner_buf.engine.counts.fed.get(), 0, "inner buffer");
}

/// A prefetching reader's fed runs ask their inner reader for at least
/// the read-ahead's capacity at a time, as the one-thread path does, as
/// long as no read came back short (here none does before the input's
/// end): with segments far smaller than the read-ahead (12 bytes against
/// 323), a run with less than a capacity still to read is read the usual
/// way, and a rest under the capacity goes with the read before it. An
/// inner reader with a system call per read would otherwise pay one for
/// every few segments.
#[test]
fn fed_runs_ask_their_inner_reader_for_at_least_the_capacity() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let (seg, capacity) = (12, 323);
    let pt = data(16 * 1024 + 5);
    let ct = sealed(&key, seg, &pt);
    let providers = [
        Provider::RustCrypto,
        #[cfg(feature = "aws-lc")]
        Provider::AwsLc,
    ];
    for (provider, chunk) in providers
        .into_iter()
        .flat_map(|p| [40, 100, 300, 1000, 4096].map(|c| (p, c)))
    {
        let mut r = CipherReader::builder(&key)
            .capacity(capacity)
            .threads(2)
            .threads_after(0)
            .prefetch(true)
            .provider(provider)
            .build(Counted::new(&ct[..]));
        assert!(read_in_chunks(&mut r, chunk) == pt);
        let (asks, fed) = (&r.get_ref().asks, r.engine.counts.fed.get());
        let small: Vec<usize> = asks.iter().copied().filter(|&a| a < capacity).collect();
        let ctx = format!(
            "{provider:?} chunk {chunk}: {fed} fed runs, {} inner reads, asks under the \
             capacity {small:?}",
            asks.len()
        );
        assert!(small.len() <= 1, "{ctx}");
        // Reads of a capacity or more are fed runs.
        assert!(chunk < capacity || fed > 0, "{ctx}");
    }
}

/// Where no fed run can be made (framed records, whose lengths are known
/// only as they arrive), a prefetching reader still reads the next run
/// beside each run: large reads of a framed stream read beside their runs,
/// give the plaintext whole, and open no record twice.
#[test]
fn prefetching_readers_of_records_read_the_next_run_beside_each_run() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 16 * 1024;
    let pt = data(60 * seg + 5);
    let plan = Plan {
        chunk: seg,
        flush: true,
    };
    let ct = write_std(
        CipherWriter::builder(&key).capacity(seg).framed(),
        &pt,
        plan,
        1,
    )
    .0;
    // A framed reader's read-ahead grows for the record in hand only:
    // room for several records a read is its capacity.
    let mut r = prefetching(CipherReader::builder(&key).capacity(8 * seg), &ct);
    assert!(read_in_chunks(&mut r, 1 << 20) == pt);
    let c = &r.engine.counts;
    let ctx = format!(
        "{} runs, {} reads beside them, {} fed, {} opens",
        c.runs.get(),
        c.beside.get(),
        c.fed.get(),
        c.opens.get()
    );
    assert!(c.runs.get() >= 2, "{ctx}");
    assert!(c.beside.get() + 1 >= c.runs.get(), "{ctx}");
    assert_eq!(c.fed.get(), 0, "{ctx}");
    assert!(c.opens.get() <= 61 + 1, "{ctx}");
}

/// Reads `r` to its end through `BufRead`, taking at most 5000 bytes of
/// what each `fill_buf` shows (the rest is shown again).
fn read_buffered(r: &mut impl std::io::BufRead) -> Vec<u8> {
    let mut back = Vec::new();
    loop {
        let got = r.fill_buf().expect("read");
        if got.is_empty() {
            return back;
        }
        let n = got.len().min(5000);
        back.extend_from_slice(&got[..n]);
        r.consume(n);
    }
}

/// An inner reader that counts its calls.
struct Counted<R> {
    inner: R,
    calls: usize,
    /// How many bytes each call asked for.
    asks: Vec<usize>,
}

impl<R> Counted<R> {
    fn new(inner: R) -> Self {
        Counted {
            inner,
            calls: 0,
            asks: Vec::new(),
        }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls += 1;
        self.asks.push(buf.len());
        self.inner.read(buf)
    }
}

/// What a reader's rings did, for an assertion's message.
fn rings(c: &crate::core::opener::Counts) -> String {
    format!(
        "{} rings, {} segments opened in them, {} by the pool, {} taken over",
        c.rings.get(),
        c.ring_opened.get(),
        c.ring_pool.get(),
        c.ring_taken.get()
    )
}

/// One CPU: a stream has no pool threads, and the caller opens every
/// segment.
fn no_pool() -> bool {
    std::thread::available_parallelism().map_or(1, usize::from) < 2
}

/// A ring's pool thread opens the segments read ahead while the caller is
/// away, between its calls: after the read that starts the ring, the
/// caller waits outside the reader until the pool has opened what it
/// published (a bounded wait for an event, not a timing), and the next
/// reads hand those segments out without opening them. Without prefetch
/// no ring starts.
#[test]
fn a_rings_pool_thread_opens_segments_between_the_callers_reads() {
    if no_pool() {
        return;
    }
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(30 * seg + 1000);
    let ct = sealed(&key, seg, &pt);
    let mut r = CipherReader::builder(&key)
        .threads(2)
        .threads_after(0)
        .prefetch(true)
        .build(&ct[..]);
    let mut back = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    while r.engine.counts.rings.get() == 0 {
        let n = r.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended before a ring started");
        back.extend_from_slice(&buf[..n]);
    }
    let since = std::time::Instant::now();
    while r.engine.counts.ring_pool.get() == 0 && since.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let by_pool = r.engine.counts.ring_pool.get();
    let opened = r.engine.counts.ring_opened.get();
    assert!(
        by_pool > 0,
        "the pool opened nothing while the caller was away"
    );
    back.extend_from_slice(&read_in_chunks(&mut r, 8 * 1024));
    assert!(back == pt);
    assert!(
        r.engine.counts.ring_opened.get() > opened,
        "the ring went on opening"
    );

    let mut none = CipherReader::builder(&key)
        .threads(2)
        .threads_after(0)
        .build(&ct[..]);
    assert!(read_in_chunks(&mut none, 8 * 1024) == pt);
    assert_eq!(
        none.engine.counts.rings.get(),
        0,
        "no ring without prefetch"
    );
}

/// A panic in a ring's job (on the pool or the caller's thread) is the
/// sticky [`Error::WorkerPanicked`](crate::Error::WorkerPanicked), after
/// a prefix of the plaintext only.
#[test]
fn a_panic_in_a_ring_is_a_sticky_error() {
    use crate::Error;
    use crate::probe::INJECT_PANIC;
    let key = Key::generate(Algorithm::Aes256Gcm);
    let seg = 64 * 1024;
    let pt = data(20 * seg + 5);
    let ct = sealed(&key, seg, &pt);
    INJECT_PANIC.with(|f| f.set(true));
    let mut r = ring_reader(&key, &ct);
    // Armed when the first read makes the workers.
    let (got, e) = read_to_error(&mut r);
    INJECT_PANIC.with(|f| f.set(false));
    let e = e.expect("a clean end after a panic in a ring");
    let mut buf = [0u8; 10];
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert_eq!(r.engine.counts.rings.get(), 1, "the panic came from a ring");
    assert!(
        got.len() < pt.len() && got == pt[..got.len()],
        "only a prefix"
    );
    let e = r.read(&mut buf).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
}

/// The caller never waits long for a ring's pool thread that stopped in
/// the middle of a segment (on a busy machine, one that lost its core):
/// with every pool thread sleeping 2 ms after each claim, the caller takes
/// the segments it waits for over and opens them itself, and goes round
/// the ring before the pool thread wakes: the slot that thread claimed
/// from then holds a later segment, which it must leave alone (else the
/// ring stops there and starts again, or hands out a wiped segment). The
/// plaintext is whole, from one ring, in each of ten streams (read
/// through `BufRead` in every other one).
#[test]
fn a_ring_takes_a_segment_over_from_a_stalled_pool_thread() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(200 * seg + 77);
    let ct = sealed(&key, seg, &pt);
    let mut taken = 0;
    for stream in 0..10 {
        let mut r = ring_reader(&key, &ct);
        let mut buf = vec![0u8; 8 * 1024];
        let n = r.read(&mut buf).unwrap();
        let c = &r.engine.counts;
        assert_eq!(c.rings.get(), 0, "a ring before the first segment");
        r.engine.delay_pool(std::time::Duration::from_millis(2));
        let mut back = buf[..n].to_vec();
        back.extend_from_slice(&match stream % 2 {
            0 => read_in_chunks(&mut r, 8 * 1024),
            _ => read_buffered(&mut r),
        });
        let c = &r.engine.counts;
        let ctx = format!("stream {stream}: {}", rings(c));
        assert!(back == pt, "{ctx}");
        assert_eq!(c.rings.get(), 1, "{ctx}");
        taken += c.ring_taken.get();
    }
    assert!(taken > 0, "no segment taken over in 10 streams");
}

/// A ring whose segments went to the caller alone for a while (as while
/// its pool does not pay) gives them to the pool again afterwards: the
/// caller leaves a segment no thread has claimed to the pool while it has
/// reading to do, so its calls return with segments read and waiting.
/// Taking each one as soon as it was published, it left the pool thread
/// (woken by the publish, microseconds later) none, and the ring stayed on
/// the caller for the rest of the stream. The first 32 publishes are the
/// caller's alone; 48 segments later the caller waits outside the reader
/// until the pool has opened one (a bounded wait for an event, not a
/// timing), with each provider (the async front does not prefetch: no
/// ring there).
#[test]
fn a_ring_gives_its_segments_to_the_pool_again_after_a_while_alone() {
    if no_pool() {
        return;
    }
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(160 * seg + 77);
    let ct = sealed(&key, seg, &pt);
    for &provider in Provider::ALL {
        let b = CipherReader::builder(&key).provider(provider);
        let mut r = prefetching(b, &ct);
        let mut buf = vec![0u8; 8 * 1024];
        let n = r.read(&mut buf).unwrap();
        assert_eq!(
            r.engine.counts.rings.get(),
            0,
            "a ring before the first segment"
        );
        r.engine.solo_ring(32);
        let mut back = buf[..n].to_vec();
        while back.len() < 80 * seg {
            let n = r.read(&mut buf).unwrap();
            back.extend_from_slice(&buf[..n]);
        }
        let since = std::time::Instant::now();
        while r.engine.counts.ring_pool.get() == 0 && since.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let by_pool = r.engine.counts.ring_pool.get();
        back.extend_from_slice(&read_in_chunks(&mut r, 8 * 1024));
        let c = &r.engine.counts;
        let ctx = format!(
            "{provider:?}: {} ({by_pool} by the pool after the caller waited)",
            rings(c)
        );
        assert!(back == pt, "{ctx}");
        assert_eq!(c.rings.get(), 1, "{ctx}");
        assert!(by_pool > 0, "{ctx}");
    }
}

/// A ring whose pool makes each unit's whole way slower than one thread
/// (here a caller that sleeps 500 µs whenever it takes a unit a pool
/// thread opened, as where the cores pass each other's data slowly)
/// leaves the pool out after its first verdicts, though the pool takes
/// nothing off the caller's time opening and waiting: its way with the
/// pool is judged against its way alone, measured on the one-thread path
/// before the workers are made (the default) or, with workers from the
/// first byte, by leaving the pool out once the ring is warm. This
/// verdict alone judged as outside the tests, with each provider (the
/// async front does not prefetch: no ring there).
#[test]
fn a_ring_whose_pool_slows_its_way_leaves_the_pool_out() {
    use crate::probe::{CHECK_WAY, SLOW_HANDOUT};
    if no_pool() {
        return;
    }
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(800 * seg + 77);
    let ct = sealed(&key, seg, &pt);
    for &provider in Provider::ALL {
        for after in [None, Some(0)] {
            CHECK_WAY.with(|c| c.set(true));
            SLOW_HANDOUT.with(|c| c.set(Some(std::time::Duration::from_micros(500))));
            let mut b = CipherReader::builder(&key)
                .provider(provider)
                .threads(2)
                .prefetch(true);
            if let Some(after) = after {
                b = b.threads_after(after);
            }
            let mut r = b.build(&ct[..]);
            let got = read_in_chunks(&mut r, 8 * 1024);
            CHECK_WAY.with(|c| c.set(false));
            SLOW_HANDOUT.with(|c| c.set(None));
            let c = &r.engine.counts;
            let (by_pool, opened) = (c.ring_pool.get(), c.ring_opened.get());
            let ctx = format!("{provider:?}, threads after {after:?}: {}", rings(c));
            assert!(got == pt, "{ctx}");
            assert!(opened >= 700, "{ctx}");
            // With the verdict the pool opened at most a fifth of them
            // (the build the tests use), without it more than half.
            assert!(by_pool <= opened * 3 / 10, "{ctx}");
        }
    }
}

/// A reader with threads measures a segment's way through the one-thread
/// path over the second half of what it delivers before its workers are
/// made, small reads and `BufRead` alike, so that its ring need not leave
/// the pool out to measure it; with workers from the first byte there is
/// nothing to measure. This verdict judged as outside the tests.
#[test]
fn a_readers_way_alone_is_measured_before_its_workers_are_made() {
    use crate::probe::CHECK_WAY;
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(40 * seg);
    let ct = sealed(&key, seg, &pt);
    for buffered in [false, true] {
        for after in [None, Some(0)] {
            CHECK_WAY.with(|c| c.set(true));
            let mut b = CipherReader::builder(&key).threads(2);
            if let Some(after) = after {
                b = b.threads_after(after);
            }
            let mut r = b.build(&ct[..]);
            let mut got = Vec::new();
            while got.len() <= crate::core::opener::READER_ALONE as usize {
                if buffered {
                    use std::io::BufRead;
                    let shown = r.fill_buf().unwrap();
                    let n = shown.len().min(5000);
                    got.extend_from_slice(&shown[..n]);
                    r.consume(n);
                } else {
                    let mut buf = [0u8; 8192];
                    let n = r.read(&mut buf).unwrap();
                    got.extend_from_slice(&buf[..n]);
                }
            }
            CHECK_WAY.with(|c| c.set(false));
            assert!(
                got == pt[..got.len()],
                "buffered {buffered}, after {after:?}"
            );
            assert_eq!(
                r.engine.knows_way_alone(),
                after.is_none(),
                "buffered {buffered}, threads after {after:?}"
            );
        }
    }
}

/// `pt` written in `chunk`-byte writes through the std front or (`tokio`)
/// the tokio one, with pool threads that sleep 2 ms after each claim: the
/// stream, and the units the caller took over.
fn stalled_write(b: WriterBuilder, pt: &[u8], chunk: usize, tokio: bool) -> (Vec<u8>, usize) {
    use crate::probe::STALL_POOL;
    fixed();
    STALL_POOL.with(|s| s.set(Some(std::time::Duration::from_millis(2))));
    let out = if tokio {
        #[cfg(feature = "tokio")]
        {
            use ::tokio::io::AsyncWriteExt;
            run(async {
                let mut w = b.build_async(Vec::new());
                for piece in pt.chunks(chunk) {
                    w.write_all(piece).await.unwrap();
                }
                let taken = w.engine.taken_over();
                (w.finish().await.unwrap(), taken)
            })
        }
        #[cfg(not(feature = "tokio"))]
        unreachable!("the tokio front is asked for only with its feature")
    } else {
        let mut w = b.build(Vec::new());
        for piece in pt.chunks(chunk) {
            w.write_all(piece).unwrap();
        }
        let taken = w.engine.taken_over();
        (w.finish().unwrap(), taken)
    };
    STALL_POOL.with(|s| s.set(None));
    FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
    out
}

/// The caller never waits long for a writer's pool thread that stopped in
/// the middle of a share (on a busy machine, one that lost its core): with
/// every pool thread sleeping 2 ms after each claim, the caller seals the
/// shares it waits for itself, and the shares after them whose slots a
/// stalled thread still holds. The stream is one thread's, byte for
/// byte, on each front and provider, fixed-size and framed, in writes of
/// 1 MiB (the write's tail copied by the run's last job) and of three
/// segments and a byte (buffered shares first).
#[test]
fn a_writer_takes_a_share_over_from_a_stalled_pool_thread() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(4 * (1 << 20) + 77);
    for tokio in [false, cfg!(feature = "tokio")] {
        // Pool threads join a run once seen awake, which on a loaded test
        // machine may take several streams: passes until one took a
        // share (a bound in case none does).
        let mut taken = 0;
        for pass in 0..20 {
            if taken > 0 {
                break;
            }
            for &p in Provider::ALL {
                for framed in [false, true] {
                    let builder = |t: usize| {
                        let b = CipherWriter::builder(&key)
                            .provider(p)
                            .capacity(seg)
                            .threads(t)
                            .threads_after(0);
                        if framed { b.framed() } else { b }
                    };
                    let plan = Plan {
                        chunk: pt.len(),
                        flush: false,
                    };
                    let one = write_std(builder(1), &pt, plan, 1).0;
                    for chunk in [1 << 20, 3 * seg + 1] {
                        let (many, n) = stalled_write(builder(2), &pt, chunk, tokio);
                        let ctx = format!(
                            "pass {pass} tokio {tokio} {p:?} framed {framed} writes of {chunk}"
                        );
                        eprintln!("{ctx}: {n} units taken over");
                        assert!(many == one, "{ctx}: bytes differ from one thread");
                        taken += n;
                    }
                }
            }
        }
        assert!(taken > 0, "tokio {tokio}: no share taken over");
    }
}

/// A segment that fails inside a ring: every segment before it is handed
/// out, then the one-thread reader's error (the ring leaves the segment
/// to the usual path, which tries both flags), sticky; the ring was in
/// use when it failed.
#[test]
fn a_segment_that_fails_in_a_ring_ends_the_stream_as_on_one_thread() {
    use crate::Error;
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(30 * seg + 9);
    let mut ct = sealed(&key, seg, &pt);
    let header = ct.len() - (pt.len() + 31 * 16);
    let bad = 17;
    ct[header + bad * (seg + 16) + 100] ^= 1;
    let mut r = ring_reader(&key, &ct);
    let (got, e) = read_to_error(&mut r);
    let e = e.expect("a clean end of a damaged stream");
    let mut buf = [0u8; 10];
    assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
    assert!(got == pt[..bad * seg], "{} bytes released", got.len());
    let c = &r.engine.counts;
    assert_eq!(c.rings.get(), 1, "one ring, not started again");
    assert!(
        c.ring_opened.get() >= bad - 1,
        "the ring opened what came before"
    );
    let e = r.read(&mut buf).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::Authentication), "sticky");
}

/// A prefetching reader on two threads hands reads smaller than a segment
/// and `BufRead` fills out of a ring; a call of another kind in the middle
/// of a segment (a read of several segments, a seek back, a length query),
/// after small reads or after a fill taken in part, takes over where they
/// stopped, and the plaintext comes out whole and in order. Each call
/// comes while the ring runs (one started, none unwound for another
/// reason). The std front only: the async front does not prefetch, and
/// has no ring.
#[test]
fn calls_that_leave_a_ring_in_the_middle_of_a_segment_keep_the_plaintext() {
    use std::io::{BufRead, Read, Seek, SeekFrom};
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 16 * 1024;
    let pt = data(seg * 60 + 123);
    let ct = sealed(&key, seg, &pt);
    for &rp in Provider::ALL {
        let calls = [
            "fill_buf",
            "large read",
            "large read at a segment's end",
            "seek back",
            "length",
            "none",
        ];
        let after_fill = [false, true];
        for (call, after_fill) in calls.into_iter().flat_map(|c| after_fill.map(|f| (c, f))) {
            let ctx = format!("{rp:?} {call}, after a fill taken in part: {after_fill}");
            let mut r = CipherReader::builder(&key)
                .provider(rp)
                .threads(2)
                .threads_after(0)
                .prefetch(true)
                .build(std::io::Cursor::new(&ct[..]));
            let mut got = Vec::new();
            let mut buf = [0u8; 1000];
            let mut small = |r: &mut CipherReader<_>, got: &mut Vec<u8>, upto: usize| {
                while got.len() < upto {
                    let want = buf.len().min(upto - got.len());
                    let n = r.read(&mut buf[..want]).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            };
            let at_end = call.ends_with("end");
            small(&mut r, &mut got, 20 * seg + if at_end { 0 } else { 500 });
            assert_eq!(r.engine.counts.rings.get(), 1, "{ctx}: a ring runs");
            if after_fill {
                // Part of what a fill shows: the rest of the segment stays
                // buffered for the call below.
                let b = r.fill_buf().unwrap();
                let n = b.len().min(300);
                assert!(n > 0, "{ctx}");
                got.extend_from_slice(&b[..n]);
                r.consume(n);
            }
            match call {
                "fill_buf" => {
                    let b = r.fill_buf().unwrap().to_vec();
                    assert!(!b.is_empty(), "{ctx}");
                    got.extend_from_slice(&b);
                    r.consume(b.len());
                }
                "large read" | "large read at a segment's end" => {
                    let mut big = vec![0u8; 3 * seg];
                    r.read_exact(&mut big).unwrap();
                    got.extend_from_slice(&big);
                }
                "seek back" => {
                    let pos = r.stream_position().unwrap();
                    assert_eq!(pos, got.len() as u64, "{ctx}");
                    r.seek(SeekFrom::Start(pos - 700)).unwrap();
                    got.truncate(got.len() - 700);
                }
                "length" => {
                    assert_eq!(r.plaintext_len().unwrap(), pt.len() as u64, "{ctx}");
                }
                _ => {}
            }
            small(&mut r, &mut got, usize::MAX);
            assert!(got == pt, "{ctx}: {} bytes of {}", got.len(), pt.len());
        }
    }
}

/// A reader of `ct` on two threads with prefetch: its reads smaller than
/// a segment go through a ring.
fn ring_reader<'a>(key: &Key, ct: &'a [u8]) -> CipherReader<&'a [u8]> {
    prefetching(CipherReader::builder(key), ct)
}

/// A reader on two threads from the first byte, prefetching, over `ct`.
fn prefetching(b: crate::ReaderBuilder, ct: &[u8]) -> CipherReader<&[u8]> {
    b.threads(2).threads_after(0).prefetch(true).build(ct)
}

/// Reads `r` 8 KiB at a time to its end or its first error: the bytes
/// released, and the error.
fn read_to_error(r: &mut impl Read) -> (Vec<u8>, Option<std::io::Error>) {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return (got, Some(e)),
        }
    }
}
