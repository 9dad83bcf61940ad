//! The writer's pipeline on a stream: large writes sealed in runs of
//! shares and moved out share by share, the tail job that copies what a
//! write ends in, a failure partway through a run, the counter's end
//! (with the helpers of `stream_tests`); both fronts. A pipelined stream
//! is always the stream one thread writes.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{Read, Write};

#[cfg(feature = "tokio")]
use super::stream_tests::run;
use super::stream_tests::{FRONTS, Plan, data, fixed, read_in_chunks, write_std};
use crate::probe::FIXED_RANDOM;
use crate::{Algorithm, CipherReader, CipherWriter, Key, Provider};

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
        .threads_after(0)
        .build(Vec::new());
    w.engine.counts.fail_tail_alloc.arm(());
    for c in pt.chunks(8 * seg + 1000) {
        assert_eq!(w.write(c).unwrap(), c.len());
    }
    assert!(
        w.engine.counts.pipelines.get() >= 3,
        "{} pipelines",
        w.engine.counts.pipelines.get()
    );
    assert_eq!(w.engine.counts.tails.get(), 0);
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
                let b = || {
                    CipherWriter::builder(&key)
                        .capacity(seg)
                        .threads(threads)
                        .threads_after(0)
                };
                let bound = writes * seg;
                let ctx = format!("seg {seg} threads {threads} chunk {chunk}");

                let mut w = b().build(Vec::new());
                let mut sizes = Vec::new();
                for c in pt.chunks(chunk) {
                    w.write_all(c).unwrap();
                    sizes.push(w.engine.out_allocated());
                }
                let (copied, pipelines) = (
                    w.engine.counts.copied.get(),
                    w.engine.counts.pipelines.get(),
                );
                let tails = w.engine.counts.tails.get();
                let ct = w.finish().unwrap();
                assert!(copied <= bound, "{ctx} std: copied {copied} > {bound}");
                assert_eq!(pipelines, writes, "{ctx} std: pipelines");
                assert_eq!(tails, writes, "{ctx} std: tails copied in the run");
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
                        let (copied, pipelines) = (
                            w.engine.counts.copied.get(),
                            w.engine.counts.pipelines.get(),
                        );
                        assert_eq!(w.engine.counts.tails.get(), writes, "{ctx} tokio: tails");
                        (copied, pipelines, sizes, w.finish().await.unwrap())
                    });
                    assert!(copied <= bound, "{ctx} tokio: copied {copied} > {bound}");
                    assert_eq!(pipelines, writes, "{ctx} tokio: pipelines");
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
    let builder = |t: usize| {
        CipherWriter::builder(&key)
            .capacity(seg)
            .threads(t)
            .threads_after(0)
    };
    let one = write_std(builder(1), &pt, whole, 1).0;
    let per_run = crate::core::pipe::MAX_PIPE_UNITS * crate::threads::batch_segments(1, seg) * seg;
    for t in [2, 3, 8] {
        fixed();
        let mut w = builder(t).build(Vec::new());
        assert_eq!(w.write(&pt).unwrap(), pt.len(), "one call takes it all");
        let runs = w.engine.counts.pipelines.get();
        let out = w.finish().unwrap();
        FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
        assert!(out == one, "threads {t}: bytes differ from one thread");
        assert!(
            runs > pt.len() / per_run,
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
    let builder = || {
        CipherWriter::builder(&key)
            .capacity(seg)
            .threads(2)
            .threads_after(0)
    };
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
    w.engine.counts.fail_unit.arm(4);
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
            w.engine.counts.fail_unit.arm(4);
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
        let builder = || {
            CipherWriter::builder(&key)
                .capacity(seg)
                .threads(t)
                .threads_after(0)
        };
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
