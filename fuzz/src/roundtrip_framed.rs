//! The `roundtrip_framed` target: the framed variant of the native format
//! (`CipherWriter::builder(&key).framed()`), with flushes at any points,
//! checked against `oracle_framed` (written from the format description),
//! read back, then damaged once and read again.

use std::future::Future;
use std::io::Write;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use arbitrary::Arbitrary;
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use tokio::io::AsyncWrite;

use crate::drive::{self, SCRATCH_LEN};
use crate::oracle_framed::{self as oracle, HEADER_LEN, OVERHEAD};
use crate::roundtrip::Mutation;

/// Largest plaintext (as `roundtrip`).
const MAX_PLAINTEXT: usize = 4096;

/// One `roundtrip_framed` input.
#[derive(Arbitrary, Debug)]
pub struct Input {
    alg: u8,
    key: [u8; 32],
    /// Writer capacity (the largest record) is `1 + v % 300`.
    writer_capacity: u16,
    /// Reader capacity is `1 + v % 2048`; bit 14 picks the writer's
    /// provider and bit 15 the reader's (`Provider::ALL`); bit 13 writes
    /// through the async writer (`build_async` over a `Vec`, polled by
    /// hand) instead of the std one.
    reader_capacity: u16,
    aad: Vec<u8>,
    /// Write sizes, in turn; `None` is a `flush`. (Cycled until the
    /// plaintext is written; a flush after the last byte too.)
    writes: Vec<Option<u16>>,
    /// Read ops, in turn (see `drive::drive`).
    reads: Vec<u8>,
    mutation: Mutation,
    plaintext: Vec<u8>,
}

/// The writer, std or async (polled once per call with a no-op waker: a
/// `Vec` never pends).
enum W {
    Std(CipherWriter<Vec<u8>>),
    Async(cipherio::tokio::AsyncCipherWriter<Vec<u8>>),
}

fn ready<T>(f: impl Future<Output = T>) -> T {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(t) => t,
        Poll::Pending => panic!("the async writer pended over a Vec"),
    }
}

impl W {
    fn write_all(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            let n = match self {
                W::Std(w) => w.write(b).expect("write"),
                W::Async(w) => ready(std::future::poll_fn(|cx| {
                    Pin::new(&mut *w).poll_write(cx, b)
                }))
                .expect("poll_write"),
            };
            assert!(n > 0 && n <= b.len(), "write returned {n} of {}", b.len());
            b = &b[n..];
        }
    }

    fn flush(&mut self) {
        match self {
            W::Std(w) => w.flush().expect("flush"),
            W::Async(w) => ready(std::future::poll_fn(|cx| Pin::new(&mut *w).poll_flush(cx)))
                .expect("poll_flush"),
        }
    }

    fn written(&self) -> usize {
        match self {
            W::Std(w) => w.get_ref().len(),
            W::Async(w) => w.get_ref().len(),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            W::Std(w) => w.finish().expect("finish"),
            W::Async(mut w) => {
                ready(std::future::poll_fn(|cx| {
                    Pin::new(&mut w).poll_shutdown(cx)
                }))
                .expect("poll_shutdown");
                w.get_ref().clone()
            }
        }
    }
}

impl Input {
    fn provider(&self, bit: u32) -> Provider {
        let i = usize::from((self.reader_capacity >> bit) & 1);
        Provider::ALL[i % Provider::ALL.len()]
    }

    fn plaintext(&self) -> &[u8] {
        &self.plaintext[..self.plaintext.len().min(MAX_PLAINTEXT)]
    }

    fn read(&self, key: &Key, ct: &[u8]) -> (Vec<u8>, Result<(), Error>) {
        let mut scratch = vec![0u8; SCRATCH_LEN];
        let mut out = Vec::new();
        let mut r = CipherReader::builder(key)
            .capacity(1 + usize::from(self.reader_capacity) % 2048)
            .associated_data(&self.aad)
            .max_segment_size(4096)
            .provider(self.provider(15))
            .build(ct);
        let end = drive::drive(&mut r, &self.reads, &mut scratch, &mut out);
        drive::check_after(&mut r, &end, &mut scratch);
        (out, end)
    }
}

/// - The writer's output, whatever the write sizes and flushes, is exactly
///   the oracle's stream for the pieces between flushes (records split at
///   the capacity, none for an empty flush, a final record, empty if need
///   be) with the header's salt and nonce prefix; after each flush the
///   inner writer holds exactly the records of everything written so far.
/// - The oracle parses it back into those records; the reader, whatever
///   its capacity and read ops, returns the plaintext and then `Ok(0)`.
/// - After one mutation that changes the bytes, the oracle refuses the
///   stream and the reader errors, having released a prefix of the
///   plaintext made of whole records before the first damaged one.
///
/// # Panics
///
/// On any of those failing.
pub fn check(input: &Input) {
    let alg = Algorithm::ALL[usize::from(input.alg) % 3];
    let kb = &input.key[..alg.key_len()];
    let key = Key::new(alg, kb).expect("right length");
    let cap = 1 + usize::from(input.writer_capacity) % 300;
    let pt = input.plaintext();
    let b = CipherWriter::builder(&key)
        .framed()
        .capacity(cap)
        .associated_data(&input.aad)
        .provider(input.provider(14));
    let mut w = if input.reader_capacity >> 13 & 1 == 1 {
        W::Async(b.build_async(Vec::new()))
    } else {
        W::Std(b.build(Vec::new()))
    };
    // (A write of 0 bytes is one byte, so that the cycle ends.)
    let ops = if input.writes.iter().any(Option::is_some) {
        &input.writes[..]
    } else {
        &[Some(64)][..]
    };
    // Plaintext offsets of the flushes.
    let mut flushes: Vec<usize> = Vec::new();
    let mut pos = 0;
    for op in ops.iter().cycle() {
        match op {
            Some(n) => {
                if pos == pt.len() {
                    break;
                }
                let n = usize::from(*n).max(1).min(pt.len() - pos);
                w.write_all(&pt[pos..pos + n]);
                pos += n;
            }
            None => {
                w.flush();
                // Everything written so far is out, in records (the header
                // too, unless nothing was written yet).
                let (mut v, rest) = pieces(pt, &flushes, pos);
                v.push(rest);
                let recs: usize = oracle::split(cap, &v, &[])
                    .iter()
                    .filter(|(_, last)| !last)
                    .map(|(c, _)| c.len() + OVERHEAD)
                    .sum();
                let out = w.written();
                assert!(
                    out == HEADER_LEN + recs || (pos == 0 && out == 0),
                    "after a flush at {pos}: {out} bytes out, want {HEADER_LEN} + {recs}"
                );
                if flushes.last() != Some(&pos) {
                    flushes.push(pos);
                }
            }
        }
    }
    let ct = w.finish();
    let (ps, last) = pieces(pt, &flushes, pt.len());
    let salt: [u8; 32] = ct[14..46].try_into().expect("a header");
    let prefix: [u8; 7] = ct[46..53].try_into().expect("a header");
    let spec = oracle::build(alg, kb, &input.aad, cap, &salt, &prefix, &ps, last);
    assert!(ct == spec, "the writer's stream differs from the oracle's");
    let recs = oracle::parse(kb, &input.aad, &ct).expect("the oracle parses it");

    let (out, end) = input.read(&key, &ct);
    assert_eq!(end, Ok(()));
    assert!(out == pt, "read back differs");

    let bad = input.mutation.apply(&ct);
    let Some(first) = ct
        .iter()
        .zip(&bad)
        .position(|(a, b)| a != b)
        .or_else(|| (ct.len() != bad.len()).then_some(ct.len().min(bad.len())))
    else {
        return;
    };
    assert!(
        oracle::parse(kb, &input.aad, &bad).is_err(),
        "the oracle accepts a damaged stream"
    );
    let (out, end) = input.read(&key, &bad);
    assert!(end.is_err(), "damaged at byte {first}, read to the end");
    // Records wholly before the damage may be released (and the final
    // one, if the damage is bytes after it).
    let intact = recs.iter().take_while(|r| r.end() <= first).count();
    let boundaries: Vec<usize> = (0..=intact)
        .map(|k| recs[..k].iter().map(|r| r.pt.len()).sum())
        .collect();
    assert!(
        boundaries.contains(&out.len()) && pt.starts_with(&out),
        "released {} bytes; damage at byte {first}, record boundaries {boundaries:?}",
        out.len()
    );
}

/// The pieces of `pt[..end]` between the flush offsets, and the rest
/// after the last flush.
fn pieces<'a>(pt: &'a [u8], flushes: &[usize], end: usize) -> (Vec<&'a [u8]>, &'a [u8]) {
    let mut v = Vec::new();
    let mut from = 0;
    for &f in flushes {
        v.push(&pt[from..f]);
        from = f;
    }
    (v, &pt[from..end])
}
