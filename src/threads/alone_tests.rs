//! A threaded stream's first bytes are sealed or opened on the calling
//! thread alone (its workers, and their buffers, are made only once it
//! has delivered [`READER_ALONE`] or sealed [`WRITER_ALONE`] bytes): a
//! stream shorter than that starts no thread, and one longer goes on on
//! the workers, with the same bytes, in every kind of call.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{BufRead, Read, Write};

use super::stream_tests::data;
use crate::core::opener::READER_ALONE;
use crate::core::sealer::WRITER_ALONE;
use crate::{Algorithm, CipherReader, CipherWriter, Key};

const SEG: usize = 64 * 1024;

/// How a test reads: 1 MiB reads (runs), 8 KiB reads (a ring with
/// prefetch), `BufRead` (a ring with prefetch).
#[derive(Clone, Copy, Debug)]
enum Calls {
    Large,
    Small,
    Buffered,
}

/// Reads `r` with `calls` until it has delivered `upto` bytes or reached
/// the end; appends what it read to `got`.
fn read_upto(r: &mut CipherReader<&[u8]>, calls: Calls, upto: usize, got: &mut Vec<u8>) {
    let mut buf = vec![0u8; 1 << 20];
    while got.len() < upto {
        let want = (upto - got.len()).min(match calls {
            Calls::Large => 1 << 20,
            _ => 8 * 1024,
        });
        let n = match calls {
            Calls::Buffered => {
                let b = r.fill_buf().unwrap();
                let n = b.len().min(want);
                got.extend_from_slice(&b[..n]);
                r.consume(n);
                n
            }
            _ => {
                let n = r.read(&mut buf[..want]).unwrap();
                got.extend_from_slice(&buf[..n]);
                n
            }
        };
        if n == 0 {
            return;
        }
    }
}

fn sealed(key: &Key, pt: &[u8]) -> Vec<u8> {
    let mut w = CipherWriter::builder(key).capacity(SEG).build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// A stream of `len` bytes under `alg`, read in each kind of call by a
/// reader on `threads` threads, prefetching or opening in the inner
/// reader's buffer, handed to `check`.
fn each_reader(
    alg: Algorithm,
    len: usize,
    threads: usize,
    check: impl Fn(Calls, bool, &mut CipherReader<&[u8]>, &[u8]),
) {
    let key = Key::generate(alg);
    let pt = data(len);
    let ct = sealed(&key, &pt);
    for calls in [Calls::Large, Calls::Small, Calls::Buffered] {
        for inner in [false, true] {
            let b = CipherReader::builder(&key).threads(threads);
            // Segments opened where they lie in the inner reader's buffer
            // (it holds the whole stream: every segment but the first and
            // the last opens in its window).
            let mut r = if inner {
                b.build_from_buf_read(&ct[..])
            } else {
                b.prefetch(true).build(&ct[..])
            };
            check(calls, inner, &mut r, &pt);
        }
    }
}

#[test]
fn a_reader_opens_alone_until_it_has_delivered_its_first_bytes() {
    let alone = READER_ALONE as usize;
    let len = alone + 3 * (1 << 20) + 5;
    each_reader(
        Algorithm::ChaCha20Poly1305,
        len,
        2,
        |calls, inner, r, pt| {
            let ctx = format!("{calls:?}, inner buffer {inner}");
            let mut got = Vec::new();
            // Just short of the bytes read alone: no workers, no run, no ring.
            read_upto(r, calls, alone - 1, &mut got);
            assert_eq!(got.len(), alone - 1, "{ctx}");
            assert!(!r.engine.threaded(), "{ctx}: workers made early");
            assert_eq!(r.engine.counts.ring_units.get(), 0, "{ctx}");
            assert_eq!(r.engine.counts.runs.get(), 0, "{ctx}");
            // The rest goes to the workers.
            read_upto(r, calls, usize::MAX, &mut got);
            assert!(got == pt, "{ctx}: plaintext differs");
            assert!(r.engine.threaded(), "{ctx}: no workers made");
            // Reads of a segment or more open in place as runs, smaller
            // ones and `BufRead` through the ring (in an inner buffer's
            // window, one segment at a time, whatever the threads).
            let c = &r.engine.counts;
            let (units, runs) = (c.ring_units.get(), c.runs.get());
            let one_by_one = inner && !matches!(calls, Calls::Large);
            assert!(
                one_by_one || units + runs > 0,
                "{ctx}: nothing opened on the workers"
            );
            // (A prefetching reader's large reads go through the ring.)
            if let (Calls::Large, true) = (calls, inner) {
                assert!(runs > 0, "{ctx}: no run");
                // Whole runs: the read-ahead grew to a ring's when it came.
                let rest = (pt.len() - alone).div_ceil(SEG);
                let per = 2 * super::unit_segments(SEG);
                assert!(
                    runs <= rest / per + 2,
                    "{ctx}: {runs} runs of {rest} segments"
                );
            }
        },
    );
}

#[test]
fn a_reader_shorter_than_that_starts_no_thread() {
    each_reader(
        Algorithm::Aes128Gcm,
        READER_ALONE as usize,
        4,
        |calls, _, r, pt| {
            let mut got = Vec::new();
            read_upto(r, calls, usize::MAX, &mut got);
            assert!(got == pt, "{calls:?}: plaintext differs");
            assert!(!r.engine.threaded(), "{calls:?}: workers made");
            let mut rest = Vec::new();
            assert_eq!(r.read_to_end(&mut rest).unwrap(), 0, "{calls:?}");
        },
    );
}

#[test]
fn a_writer_seals_alone_until_it_has_sealed_its_first_bytes() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let alone = WRITER_ALONE as usize;
    let pt = data(alone + 3 * (1 << 20) + 5);
    for chunk in [1024, 1 << 20] {
        let mut w = CipherWriter::builder(&key)
            .capacity(SEG)
            .threads(2)
            .build(Vec::new());
        // Up to the bytes sealed alone (a segment more is held back).
        let mut at = 0;
        while at < alone {
            let end = (at + chunk).min(alone);
            w.write_all(&pt[at..end]).unwrap();
            at = end;
        }
        assert!(!w.engine.threaded(), "chunk {chunk}: workers made early");
        assert_eq!(w.engine.counts.posted.get(), 0, "chunk {chunk}");
        for piece in pt[at..].chunks(chunk) {
            w.write_all(piece).unwrap();
        }
        assert!(w.engine.threaded(), "chunk {chunk}: no workers made");
        assert!(w.engine.counts.posted.get() > 0, "chunk {chunk}: no run");
        reads_back(&key, w.finish().unwrap(), &pt, chunk);
    }
}

#[test]
fn a_writer_shorter_than_that_starts_no_thread() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(WRITER_ALONE as usize);
    for chunk in [1024, 1 << 20] {
        let mut w = CipherWriter::builder(&key)
            .capacity(SEG)
            .threads(4)
            .build(Vec::new());
        for piece in pt.chunks(chunk) {
            w.write_all(piece).unwrap();
        }
        w.flush().unwrap();
        assert!(!w.engine.threaded(), "chunk {chunk}: workers made");
        reads_back(&key, w.finish().unwrap(), &pt, chunk);
    }
}

/// `ct` reads back to `pt` (written in `chunk`-byte writes).
fn reads_back(key: &Key, ct: Vec<u8>, pt: &[u8], chunk: usize) {
    let mut got = Vec::new();
    CipherReader::new(key, &ct[..])
        .read_to_end(&mut got)
        .unwrap();
    assert!(got == pt, "chunk {chunk}: plaintext differs");
}

#[test]
fn one_large_read_in_an_inner_buffer_stops_where_the_threads_start() {
    let alone = READER_ALONE as usize;
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(alone + 3 * (1 << 20) + 5);
    let ct = sealed(&key, &pt);
    let mut r = CipherReader::builder(&key)
        .threads(2)
        .build_from_buf_read(&ct[..]);
    let mut got = vec![0u8; pt.len()];
    let mut n = 0;
    while n < got.len() {
        let k = r.read(&mut got[n..]).unwrap();
        assert!(k > 0, "ended early at {n}");
        // No call opens past the bytes read alone on the calling thread.
        assert!(n >= alone || n + k <= alone + SEG, "{k} bytes read at {n}");
        n += k;
    }
    assert!(got == pt, "plaintext differs");
    assert!(
        r.engine.counts.runs.get() > 0,
        "nothing opened on the workers"
    );
}
