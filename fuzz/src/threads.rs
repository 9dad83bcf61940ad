//! The `threads` target (threads are an implementation detail): a stream
//! sealed and opened on
//! several threads against the same stream on one thread, with the same
//! key, chunking and flushes, and the same reads.
//!
//! - Writers: both streams have the same length, put out the same number
//!   of bytes at every flush, and read back (one thread) to the plaintext.
//!   (Their bytes differ only in the random salt and nonce prefix, which a
//!   fuzz target cannot fix; `src/threads/stream_tests.rs` compares them
//!   byte for byte with both injected.)
//! - Readers: the stream, and a damaged copy of it, read with the same ops
//!   over the same inner reader (short reads, injected errors, `BufRead`)
//!   by a threaded and a one-thread reader: the same plaintext released and
//!   the same end (clean, or the same cipherio error); intact, it is the
//!   plaintext.
//! - A nonce is spent once: every segment of both writers' streams,
//!   opened by its index, gives one plaintext per `(header, index)`
//!   ([`Seals`]).

use std::io::Write;

use arbitrary::Arbitrary;
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};

use crate::drive::{self, Inner, SCRATCH_LEN};
use crate::oracle::HEADER_LEN;
use crate::roundtrip::Mutation;
use crate::seals::Seals;

/// Largest plaintext: with 1-byte segments, a few batches of 2 to 4
/// threads (64 segments a share).
const MAX_PLAINTEXT: usize = 2048;

/// One `threads` input.
#[derive(Arbitrary, Debug)]
pub struct Input {
    alg: u8,
    key: [u8; 32],
    /// Writer capacity (segment size): `1 + v % 300`.
    segment: u16,
    /// Threads: `2 + (v & 3)` (2 to 4), `usize::MAX` for 3 (clamped
    /// to the CPUs, as any count past them); bit 2 makes the threaded reader
    /// prefetch (rings for small reads, fed runs for large ones) when no
    /// inner call fails (a prefetching reader returns a failed read
    /// beside a run after the run's plaintext, later than one thread);
    /// bit 4 picks the writers' provider and bit 5 the readers'
    /// (`Provider::ALL`); bit 6 reads through `build_from_buf_read`; bit 7
    /// starts the threads (writer and reader) only once the stream is
    /// `segment % 1024` bytes in (the writer's at the next segment
    /// boundary), else with the first byte.
    threads: u8,
    /// Reader capacity: `1 + v % 2048`.
    reader_capacity: u16,
    /// The inner reader's read sizes, in turn (0: as much as asked), and
    /// an injected error every `2 + period % 6`-th call (0: never).
    sizes: [u8; 4],
    period: u8,
    /// Write sizes, in turn; `None` is a `flush`.
    writes: Vec<Option<u16>>,
    /// Read ops (see `drive::drive`).
    reads: Vec<u8>,
    mutation: Mutation,
    plaintext: Vec<u8>,
}

impl Input {
    /// The bytes a threaded stream seals or delivers alone first.
    fn after(&self) -> u64 {
        if self.threads & 0x80 != 0 {
            u64::from(self.segment % 1024)
        } else {
            0
        }
    }

    fn provider(&self, bit: u8) -> Provider {
        Provider::ALL[usize::from(self.threads >> bit & 1) % Provider::ALL.len()]
    }

    /// The stream written by `threads` threads, and the bytes out after
    /// each flush.
    fn write(&self, key: &Key, pt: &[u8], threads: usize) -> (Vec<u8>, Vec<usize>) {
        let mut w = CipherWriter::builder(key)
            .capacity(1 + usize::from(self.segment) % 300)
            .provider(self.provider(4))
            .threads(threads)
            .threads_after(self.after())
            .build(Vec::new());
        let mut flushed = Vec::new();
        let mut rest = pt;
        let ops = if self.writes.iter().all(Option::is_none) {
            &[None, Some(u16::MAX)][..]
        } else {
            &self.writes[..]
        };
        for op in ops.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            match op {
                Some(n) => {
                    let n = usize::from(*n).clamp(1, rest.len());
                    w.write_all(&rest[..n]).expect("write to a Vec");
                    rest = &rest[n..];
                }
                None => {
                    w.flush().expect("flush to a Vec");
                    flushed.push(w.get_ref().len());
                }
            }
        }
        (w.finish().expect("finish to a Vec"), flushed)
    }

    /// Reads `ct` with `threads` threads: the plaintext released and the
    /// end.
    fn read(&self, key: &Key, ct: &[u8], threads: usize) -> (Vec<u8>, Result<(), Error>) {
        let capacity = 1 + usize::from(self.reader_capacity) % 2048;
        // Every call failing would never end: from every 2nd to every 7th
        // (as `open` does).
        let period = (self.period > 0).then_some(2 + usize::from(self.period % 6));
        let inner = Inner::new(ct, self.sizes, period, capacity, HEADER_LEN);
        let b = CipherReader::builder(key)
            .capacity(capacity)
            .provider(self.provider(5))
            .threads(threads)
            .prefetch(self.threads & 0x04 != 0 && period.is_none())
            .threads_after(self.after());
        let mut scratch = vec![0u8; SCRATCH_LEN];
        let mut out = Vec::new();
        let end = if self.threads & 0x40 != 0 {
            let mut r = b.build_from_buf_read(inner);
            drive::drive(&mut r, &self.reads, &mut scratch, &mut out)
        } else {
            drive::drive(&mut b.build(inner), &self.reads, &mut scratch, &mut out)
        };
        (out, end)
    }
}

/// The target's check.
///
/// # Panics
///
/// When the threaded stream differs from the one-thread stream as above.
pub fn check(input: &Input) {
    let alg = Algorithm::ALL[usize::from(input.alg) % Algorithm::ALL.len()];
    let key = Key::new(alg, &input.key[..alg.key_len()]).expect("a key of the right length");
    let pt = &input.plaintext[..input.plaintext.len().min(MAX_PLAINTEXT)];
    let threads = match input.threads & 3 {
        3 => usize::MAX,
        n => 2 + usize::from(n),
    };

    let (one, flushed_one) = input.write(&key, pt, 1);
    let (many, flushed_many) = input.write(&key, pt, threads);
    let mut seals = Seals::default();
    seals.record(&key, &one, &[]);
    seals.record(&key, &many, &[]);
    assert_eq!(many.len(), one.len(), "stream length on {threads} threads");
    assert_eq!(flushed_many, flushed_one, "bytes out after each flush");
    let (back, end) = input.read(&key, &many, 1);
    assert_eq!(
        end,
        Ok(()),
        "the threaded writer's stream, read on one thread"
    );
    assert!(back == pt, "the threaded writer's stream reads back");

    for ct in [one.clone(), input.mutation.apply(&one)] {
        let (got_one, end_one) = input.read(&key, &ct, 1);
        let (got_many, end_many) = input.read(&key, &ct, threads);
        assert_eq!(end_many, end_one, "the end on {threads} threads");
        assert!(
            got_many == got_one,
            "the plaintext released on {threads} threads"
        );
        if ct == one {
            assert_eq!(end_one, Ok(()));
            assert!(got_one == pt);
        }
    }
}
