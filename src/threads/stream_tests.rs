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

use crate::profile::FIXED_RANDOM;
use crate::tink::{AesCtrHmacKey, AesCtrHmacParams, HkdfHash, HmacHash, TinkKey, TinkParams};
use crate::{Algorithm, CipherReader, CipherWriter, Key, Provider, StreamKey, WriterBuilder};

/// How a stream is written: chunk sizes in turn, and whether to flush
/// after each chunk (the framed format seals a record per flush).
#[derive(Clone, Copy, Debug)]
struct Plan {
    chunk: usize,
    flush: bool,
}

fn fixed() {
    FIXED_RANDOM.with(|f| *f.borrow_mut() = Some((0..64u8).map(|i| i ^ 0x3c).collect()));
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 251) as u8).collect()
}

/// The std front; with threads and two batches or more written, the
/// workers must have sealed some.
fn write_std(b: WriterBuilder, pt: &[u8], plan: Plan, threads: usize) -> Written {
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
    let two_batches = 2 * crate::threads::batch_segments(threads, w.capacity()) * w.capacity();
    if threads > 1 && pt.len() > two_batches && (!plan.flush || plan.chunk > 2 * w.capacity()) {
        assert!(
            w.engine.counts.runs > 0,
            "no run sealed on the workers: {plan:?} len {} cap {}",
            pt.len(),
            w.capacity()
        );
    }
    if threads == 1 {
        assert_eq!(
            w.engine.counts.runs, 0,
            "one thread seals one segment at a time"
        );
    }
    let out = w.finish().unwrap();
    FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
    (out, flushed)
}

/// A stream, and how many of its bytes had gone out after each flush.
type Written = (Vec<u8>, Vec<usize>);

/// Polls `f` to its end: the tokio front over a `Vec` never waits.
#[cfg(feature = "tokio")]
fn run<F: Future>(f: F) -> F::Output {
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

type WriteFn = fn(WriterBuilder, &[u8], Plan, usize) -> Written;

const FRONTS: &[(&str, WriteFn)] = &[
    ("std", write_std),
    #[cfg(feature = "tokio")]
    ("tokio", write_tokio),
];

/// Everything `r` gives, read in `size`-byte reads.
fn read_in_chunks(r: &mut impl Read, size: usize) -> Vec<u8> {
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
        for plan in &plans {
            let builder = |t: usize| {
                let mut b = CipherWriter::builder(key)
                    .associated_data(b"threads")
                    .provider(p)
                    .threads(t);
                if let Some(c) = cap {
                    b = b.capacity(c);
                }
                if framed {
                    b = b.framed();
                }
                b
            };
            let one = write_std(builder(1), pt, *plan, 1);
            for &(front, write) in FRONTS {
                for &t in THREADS {
                    let ctx = format!("{ctx} {p:?} {front} threads {t} {plan:?} len {}", pt.len());
                    let many = write(builder(t), pt, *plan, t);
                    assert!(many.0 == one.0, "{ctx}: bytes differ from one thread");
                    assert_eq!(many.1, one.1, "{ctx}: bytes out after each flush");
                }
            }
            for &t in THREADS {
                for read in [1, seg, 4 * seg + 3, 1 << 20] {
                    let mut r = CipherReader::builder(key)
                        .associated_data(b"threads")
                        .provider(p)
                        .threads(t)
                        .build(&one.0[..]);
                    let back = read_in_chunks(&mut r, read);
                    assert!(
                        back == pt,
                        "{ctx} {p:?} threads {t} reads of {read}: read back"
                    );
                    if pt.len() > 4 * crate::threads::batch_segments(t, seg) * seg {
                        assert!(r.engine.counts.runs > 0, "{ctx} threads {t}: no run opened");
                    }
                }
            }
        }
    }
}

/// Lengths around the segment and batch boundaries of `seg`-byte segments
/// (`first` bytes in segment 0).
fn lengths(first: usize, seg: usize, threads: usize) -> Vec<usize> {
    let batch = crate::threads::batch_segments(threads, seg);
    let mut v = vec![0, 1, first - 1, first, first + 1];
    for k in [2, batch, batch + 1, 2 * batch + 3] {
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
    let gcm = TinkKey::generate(TinkParams::new(16, 4096, HkdfHash::Sha256).unwrap()).unwrap();
    let p = gcm.params();
    let (first, seg) = (p.first_segment_plaintext(), p.segment_plaintext());
    for len in lengths(first, seg, 2) {
        same_bytes("tink gcm", &gcm, None, false, &data(len));
    }
    let params = AesCtrHmacParams::new(32, 4096, HkdfHash::Sha256, HmacHash::Sha256, 32).unwrap();
    let ctr = AesCtrHmacKey::generate(params).unwrap();
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
    use crate::threads::INJECT_PANIC;
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
        .build(Vec::new());
    let e = w.write(&pt).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert!(w.get_ref().is_empty(), "nothing of the batch went out");
    let e = w.write(b"x").unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");
    let e = w.try_finish().unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");

    // In a pipeline (the header out, then whole segments sealed and moved
    // out share by share): nothing of the failing share goes out.
    INJECT_PANIC.with(|f| f.set(false));
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .threads(2)
        .build(Vec::new());
    w.write_all(&pt[..2 * seg + 1]).unwrap();
    let before = w.get_ref().len();
    assert!(before > 2 * seg, "the first batch went out");
    let runs = w.engine.counts.runs;
    w.engine.inject_panic();
    let e = w.write_all(&pt[2 * seg + 1..]).unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked));
    assert_eq!(w.engine.counts.runs, runs + 1, "a pipeline ran");
    assert_eq!(
        w.get_ref().len(),
        before,
        "nothing of the pipeline went out"
    );
    let e = w.try_finish().unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::WorkerPanicked), "sticky");

    INJECT_PANIC.with(|f| f.set(true));
    let mut r = CipherReader::builder(&key).threads(2).build(&ct[..]);
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
        let plan = Plan {
            chunk: pt.len(),
            flush: false,
        };
        let ct = write_std(CipherWriter::builder(&key).capacity(seg), &pt, plan, 1).0;
        let mut r = CipherReader::builder(&key).threads(threads).build(&ct[..]);
        let back = read_in_chunks(&mut r, 1 << 20);
        assert!(back == pt);
        let segments = len.div_ceil(seg);
        let batch = crate::threads::batch_segments(threads, seg);
        let ctx = format!(
            "len {len} threads {threads}: {} runs, {} opens",
            r.engine.counts.runs, r.engine.counts.opens
        );
        assert!(r.engine.counts.runs >= segments / batch - 2, "{ctx}");
        assert!(r.engine.counts.opens <= segments + 2, "{ctx}");
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
    let plan = Plan {
        chunk: pt.len(),
        flush: false,
    };
    let ct = write_std(CipherWriter::builder(&key).capacity(seg), &pt, plan, 1).0;
    let mut r = CipherReader::builder(&key)
        .threads(2)
        .build_from_buf_read(&ct[..]);
    let back = read_in_chunks(&mut r, 1 << 20);
    assert!(back == pt);
    let ctx = format!(
        "{} runs, {} opens, {} read ahead",
        r.engine.counts.runs,
        r.engine.counts.opens,
        r.engine.read_ahead()
    );
    assert!(r.engine.counts.runs >= 40 / 16 - 1, "{ctx}");
    assert!(r.engine.counts.opens <= 41 + 1, "{ctx}");
}

/// A tail job that cannot allocate the buffer leaves the copy to the
/// caller after the run: the write takes every byte (not an error for
/// shares already written out) and the stream reads back.
#[test]
fn a_tail_job_that_cannot_allocate_leaves_the_copy_to_the_caller() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(3 * (8 * seg + 1000));
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .threads(2)
        .build(Vec::new());
    w.engine.counts.fail_tail_alloc = true;
    for c in pt.chunks(8 * seg + 1000) {
        assert_eq!(w.write(c).unwrap(), c.len());
    }
    assert!(
        w.engine.counts.pipelines >= 3,
        "{} pipelines",
        w.engine.counts.pipelines
    );
    assert_eq!(w.engine.counts.tails, 0);
    let ct = w.finish().unwrap();
    let back = read_in_chunks(&mut CipherReader::new(&key, &ct[..]), 1 << 20);
    assert!(back == pt);
}

/// Large writes on threads go through the pipeline: the buffered
/// segments and the whole segments of the write are sealed as one run
/// (a run per write, the first write's too: the header goes out at the
/// head of its first share), and a write copies at most the segment it
/// ends in (as one thread does) — sealing a batch at a time copied up to
/// a batch at the end of every write — and that copy is the run's last
/// job, not the caller's after the run. The output buffer is allocated once,
/// at the pipeline's size (a first write sealed as a batch allocated it
/// for the batch, then the second write grew it). Both fronts.
#[test]
fn large_writes_copy_only_the_segment_they_end_in() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    for seg in [8 * 1024, 64 * 1024] {
        for threads in [2, 3] {
            for extra in [0, 5] {
                let chunk = 32 * seg + extra;
                let writes = 8;
                let pt = data(writes * chunk);
                let b = || CipherWriter::builder(&key).capacity(seg).threads(threads);
                let bound = writes * seg;
                let ctx = format!("seg {seg} threads {threads} chunk {chunk}");

                let mut w = b().build(Vec::new());
                let mut sizes = Vec::new();
                for c in pt.chunks(chunk) {
                    w.write_all(c).unwrap();
                    sizes.push(w.engine.out_allocated());
                }
                let (copied, pipelines) = (w.engine.counts.copied, w.engine.counts.pipelines);
                let tails = w.engine.counts.tails;
                let ct = w.finish().unwrap();
                assert!(copied <= bound, "{ctx} std: copied {copied} > {bound}");
                assert_eq!(pipelines, writes as u64, "{ctx} std: pipelines");
                assert_eq!(tails, writes as u64, "{ctx} std: tails copied in the run");
                sizes.dedup();
                assert_eq!(sizes.len(), 1, "{ctx} std: output buffer sizes {sizes:?}");
                let back = read_in_chunks(&mut CipherReader::new(&key, &ct[..]), 1 << 20);
                assert!(back == pt, "{ctx} std");

                #[cfg(feature = "tokio")]
                {
                    use ::tokio::io::AsyncWriteExt;
                    let (copied, pipelines, mut sizes, ct) = run(async {
                        let mut w = b().build_async(Vec::new());
                        let mut sizes = Vec::new();
                        for c in pt.chunks(chunk) {
                            w.write_all(c).await.unwrap();
                            sizes.push(w.engine.out_allocated());
                        }
                        let (copied, pipelines) =
                            (w.engine.counts.copied, w.engine.counts.pipelines);
                        assert_eq!(w.engine.counts.tails, writes as u64, "{ctx} tokio: tails");
                        (copied, pipelines, sizes, w.finish().await.unwrap())
                    });
                    assert!(copied <= bound, "{ctx} tokio: copied {copied} > {bound}");
                    assert_eq!(pipelines, writes as u64, "{ctx} tokio: pipelines");
                    sizes.dedup();
                    assert_eq!(sizes.len(), 1, "{ctx} tokio: output buffer sizes {sizes:?}");
                    let back = read_in_chunks(&mut CipherReader::new(&key, &ct[..]), 1 << 20);
                    assert!(back == pt, "{ctx} tokio");
                }
            }
        }
    }
}

/// A write longer than one pipelined run (a bounded number of shares,
/// `MAX_PIPE_UNITS`) is sealed in several runs, on both fronts, and is
/// still the stream one thread writes: the run's list of shares stays
/// small however long the write (`tests/alloc.rs` counts the memory).
#[test]
fn a_write_longer_than_a_run_is_sealed_in_several() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 100;
    let pt = data(4 << 20);
    let whole = Plan {
        chunk: pt.len(),
        flush: false,
    };
    let builder = |t: usize| CipherWriter::builder(&key).capacity(seg).threads(t);
    let one = write_std(builder(1), &pt, whole, 1).0;
    let per_run = crate::core::pipe::MAX_PIPE_UNITS * crate::threads::batch_segments(1, seg) * seg;
    for t in [2, 3, 8] {
        fixed();
        let mut w = builder(t).build(Vec::new());
        assert_eq!(w.write(&pt).unwrap(), pt.len(), "one call takes it all");
        let runs = w.engine.counts.pipelines;
        let out = w.finish().unwrap();
        FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
        assert!(out == one, "threads {t}: bytes differ from one thread");
        assert!(
            runs as usize > pt.len() / per_run,
            "threads {t}: {runs} runs for a write of {} runs' length",
            pt.len() / per_run + 1
        );
        for &(front, write) in FRONTS {
            let many = write(builder(t), &pt, whole, t);
            assert!(
                many.0 == one,
                "threads {t} {front}: bytes differ from one thread"
            );
        }
    }
}

/// A job that fails partway through a pipelined run (an injected panic in
/// its fifth share): the four shares before it went out, so the write
/// reports their bytes (`Ok`), and the error comes with the next call,
/// sticky; what went out reads back as that prefix, then `Truncated`.
/// Both fronts.
#[test]
fn a_failure_partway_through_a_run_reports_the_shares_written_out() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * 1024;
    let pt = data(10 * seg + 5);
    let builder = || CipherWriter::builder(&key).capacity(seg).threads(2);
    let check = |front: &str, first: usize, next: crate::Error, out: &[u8]| {
        assert_eq!(first, 4 * seg, "{front}: the shares before the failing one");
        assert_eq!(next, crate::Error::WorkerPanicked, "{front}: then sticky");
        let mut r = CipherReader::new(&key, out);
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(
            crate::Error::from_io(&e),
            Some(&crate::Error::Truncated),
            "{front}"
        );
        assert!(got == pt[..4 * seg], "{front}: the prefix that went out");
    };

    let mut w = builder().build(Vec::new());
    w.engine.counts.fail_unit = Some(4);
    let first = w.write(&pt).unwrap();
    let e = w.write(&pt[first..]).unwrap_err();
    check(
        "std",
        first,
        crate::Error::from_io(&e).unwrap().clone(),
        w.get_ref(),
    );

    #[cfg(feature = "tokio")]
    {
        use ::tokio::io::AsyncWriteExt;
        let (first, e, out) = run(async {
            let mut w = builder().build_async(Vec::new());
            w.engine.counts.fail_unit = Some(4);
            let first = w.write(&pt).await.unwrap();
            let e = w.write(&pt[first..]).await.unwrap_err();
            (first, e, w.get_ref().clone())
        });
        check(
            "tokio",
            first,
            crate::Error::from_io(&e).unwrap().clone(),
            &out,
        );
    }
}

/// At the counter's end (segment 2^32 − 1 can only be the final one), a
/// write with nothing buffered fills that segment before the stream
/// refuses more: it never seals the segment before it with no byte after
/// it, which left `finish` an empty final segment after full ones (the
/// reader refuses that stream), and how much the stream takes does not
/// depend on the chunking. One thread and several; found by review.
#[test]
fn the_last_numbered_segment_is_filled_before_the_stream_refuses_more() {
    use crate::format::{HEADER_LEN, Header};
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 4096;
    let pt = data(20_000);
    let last = u64::from(u32::MAX);
    // Writes `chunk`-byte pieces until the stream refuses one.
    let take_all = |chunk: usize, write: &mut dyn FnMut(&[u8]) -> std::io::Result<usize>| {
        let mut taken = 0;
        loop {
            match write(&pt[taken..(taken + chunk).min(pt.len())]) {
                Ok(n) => taken += n,
                Err(e) => return (taken, e),
            }
        }
    };
    for t in [1, 2, 3] {
        let builder = || CipherWriter::builder(&key).capacity(seg).threads(t);
        for chunk in [20_000, 5000, seg, 1000] {
            let mut w = builder().build(Vec::new());
            w.engine.start().unwrap();
            w.engine.set_next(last - 3);
            let (taken, err) = take_all(chunk, &mut |b| w.write(b));
            #[cfg_attr(not(feature = "tokio"), allow(unused_mut))]
            let mut streams = vec![("std", taken, err, w.finish().unwrap())];
            #[cfg(feature = "tokio")]
            {
                use ::tokio::io::AsyncWriteExt;
                let mut w = builder().build_async(Vec::new());
                w.engine.start().unwrap();
                w.engine.set_next(last - 3);
                let (taken, err) = take_all(chunk, &mut |b| run(w.write(b)));
                streams.push(("tokio", taken, err, run(w.finish()).unwrap()));
            }
            for (front, taken, err, out) in streams {
                let ctx = format!("{front} threads {t} writes of {chunk}");
                assert_eq!(
                    crate::Error::from_io(&err),
                    Some(&crate::Error::StreamTooLong),
                    "{ctx}"
                );
                assert_eq!(taken, 4 * seg, "{ctx}: three segments and the last, full");
                let body = &out[HEADER_LEN..];
                assert_eq!(
                    body.len(),
                    4 * (seg + 16),
                    "{ctx}: the final segment is full"
                );
                let suite = Header::parse(&out)
                    .unwrap()
                    .suite(&key, b"", Provider::default())
                    .unwrap();
                let mut got = vec![0u8; seg];
                suite
                    .open_at(last, true, &[], &body[3 * (seg + 16)..], &mut got)
                    .unwrap();
                assert!(got == pt[3 * seg..4 * seg], "{ctx}: the final segment");
            }
        }
    }
}
