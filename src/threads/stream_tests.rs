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
    let unit = crate::threads::unit_segments(w.capacity()) * w.capacity();
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
                    if t > 1 && pt.len() > 4 * crate::threads::unit_segments(seg) * seg {
                        let c = &r.engine.counts;
                        assert!(
                            c.ring_units.get() + c.runs.get() > 0,
                            "{ctx} threads {t}: nothing opened on the workers"
                        );
                    }
                }
            }
        }
    }
}

/// Lengths around the segment and batch boundaries of `seg`-byte segments
/// (`first` bytes in segment 0): a ring's units and a full ring.
fn lengths(first: usize, seg: usize, threads: usize) -> Vec<usize> {
    let unit = crate::threads::unit_segments(seg);
    let ring = 2 * threads * unit;
    let mut v = vec![0, 1, first - 1, first, first + 1];
    for k in [2, unit, unit + 1, 2 * unit + 3, ring, ring + 1] {
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

/// A prefetching reader's small reads go through its ring, and the pool
/// opens some of the units, fixed-size and framed; large reads open in
/// place, as runs on the workers, and with prefetch the caller reads the
/// next run's input beside each; small reads without prefetch open
/// as runs into the plaintext buffer.
#[test]
fn a_threaded_readers_pool_opens_units_of_every_kind_of_read() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(60 * seg + 1000);
    for framed in [false, true] {
        let ct = if framed {
            let plan = Plan {
                chunk: seg,
                flush: true,
            };
            write_std(
                CipherWriter::builder(&key).capacity(seg).framed(),
                &pt,
                plan,
                1,
            )
            .0
        } else {
            sealed(&key, seg, &pt)
        };
        for prefetch in [false, true] {
            for (kind, chunk) in [("small", 5000), ("large", 1 << 20), ("bufread", 0)] {
                let ctx = format!("framed {framed} prefetch {prefetch} {kind} reads");
                // A pool thread may not get a core on a loaded test
                // machine: streams are read until the pool opened a unit
                // of one (a bound in case none does).
                let pooled = (0..20).find(|_| {
                    let mut r = CipherReader::builder(&key)
                        .threads(2)
                        .threads_after(0)
                        .prefetch(prefetch)
                        .build(&ct[..]);
                    let back = if chunk == 0 {
                        read_buffered(&mut r)
                    } else {
                        read_in_chunks(&mut r, chunk)
                    };
                    assert!(back == pt, "{ctx}");
                    let c = &r.engine.counts;
                    let (units, runs) = (c.ring_units.get(), c.runs.get());
                    let beside = c.runs_read_beside.get();
                    if !prefetch || kind == "large" {
                        // Opened in place, as runs.
                        assert!(runs >= 3 && units == 0, "{ctx}: {runs} runs, {units} units");
                        if prefetch {
                            assert!(beside >= 3, "{ctx}: {beside} runs read beside");
                        } else {
                            assert_eq!(beside, 0, "{ctx}: no read beside without prefetch");
                        }
                        return true;
                    }
                    assert!(units >= 10, "{ctx}: {units} units through the ring");
                    r.engine.ring_pooled() > 0
                });
                if crate::threads::cpus() > 1 {
                    assert!(pooled.is_some(), "{ctx}: none opened on the pool");
                }
            }
        }
    }
}

/// A panic in a unit's or a run's work (on the pool or the caller's thread) is the
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
    for prefetch in [false, true] {
        INJECT_PANIC.with(|f| f.set(true));
        let mut r = CipherReader::builder(&key)
            .threads(2)
            .threads_after(0)
            .prefetch(prefetch)
            .build(&ct[..]);
        // Armed when the first read makes the ring.
        let (got, e) = read_to_error(&mut r);
        INJECT_PANIC.with(|f| f.set(false));
        let e = e.expect("a clean end after a panic in a ring");
        assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
        let c = &r.engine.counts;
        let threaded = c.ring_units.get() + c.runs.get();
        assert!(threaded > 0, "the panic came from the workers");
        assert!(
            got.len() < pt.len() && got == pt[..got.len()],
            "only a prefix"
        );
        let e = r.read(&mut [0u8; 10]).unwrap_err();
        assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
    }
}

/// The caller never waits long for a pool thread that stopped in the
/// middle of a unit (on a busy machine, one that lost its core): with
/// every pool thread sleeping 2 ms after each claim, the caller takes the
/// units it waits for over and opens them itself, and goes round the ring
/// before the pool thread wakes (whose copy is dropped). The plaintext is
/// whole in each stream (read through `BufRead` in every other one).
#[test]
fn a_reader_takes_a_unit_over_from_a_stalled_pool_thread() {
    use crate::probe::STALL_POOL;
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * 1024;
    let pt = data(100 * seg + 77);
    let ct = sealed(&key, seg, &pt);
    let mut taken = 0;
    for stream in 0..10 {
        STALL_POOL.with(|s| s.set(Some(std::time::Duration::from_millis(2))));
        let mut r = CipherReader::builder(&key)
            .threads(2)
            .threads_after(0)
            .prefetch(stream % 4 < 2)
            .build(&ct[..]);
        let back = match stream % 2 {
            0 => read_in_chunks(&mut r, 8 * 1024),
            _ => read_buffered(&mut r),
        };
        STALL_POOL.with(|s| s.set(None));
        assert!(back == pt, "stream {stream}");
        taken += r.engine.ring_taken_over();
    }
    if crate::threads::cpus() > 1 {
        assert!(taken > 0, "no unit taken over in 10 streams");
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
    let units = r.engine.counts.ring_units.get();
    assert!(units > 0, "the ring took units before the damaged one");
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
                    let n = r
                        .read(&mut buf[..want])
                        .unwrap_or_else(|e| panic!("{e} at {}", got.len()));
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            };
            let at_end = call.ends_with("end");
            small(&mut r, &mut got, 20 * seg + if at_end { 0 } else { 500 });
            assert!(r.engine.counts.ring_units.get() > 0, "{ctx}: a ring runs");
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
