//! Throughput of `CipherWriter`/`CipherReader` against the raw AEAD, by
//! buffer size and by the caller's write/read granularity.
//!
//! For each algorithm and direction, and each buffer size `s` (the
//! `capacity` of writer and reader; for the writer it is the segment size),
//! the benchmark `<alg>-<encrypt|decrypt>/stream/<s>` times a fresh stream
//! per iteration. Encrypt: `write_all` of the whole payload into
//! `CipherWriter<io::Sink>` and `finish`. Decrypt: `CipherReader<&[u8]>`
//! over a stream sealed with `s`-byte segments, `read` into one reused
//! `s`-byte buffer until it returns 0 (a caller that handles each chunk
//! and reads the next into the same buffer; a read of a whole segment
//! takes the reader's zero-copy path).
//!
//! Beside it, the ceiling: the same AEAD crate (`aes_gcm::Aes128Gcm`, …),
//! one keyed instance reused, seals the same payload in `s`-byte messages
//! with the calls the crate makes (`{en,de}crypt_inout_detached`). Like the
//! writer it seals into one reused message-sized buffer; like the reader's
//! caller it opens each message into one reused message-sized buffer. The
//! one difference left is inherent: the raw AEAD opens the messages where
//! they lie, while a `Read` adapter must first copy them out of its source.
//! (Out of place
//! rather than in place: an in-place open cannot be repeated on the same
//! bytes, and these are the calls `seal.rs` makes.) The ceiling is timed in
//! pairs with the stream: every time criterion asks for a sample of `n`
//! stream iterations, `n` raw iterations run interleaved with them one by
//! one, each timed, and the sample's sums and median per-iteration ratio go
//! to `CIPHERIO_BENCH_PAIRS_OUT` (see [`Pairs`]).
//!
//! With `--features tokio` the buffer sweep has three more directions,
//! the async fronts driven with `block_on` on a current-thread runtime
//! (created once, outside the timed loops): `encrypt-async`
//! (`AsyncCipherWriter` over an `AsyncWrite` that discards, `write_all`
//! then `shutdown`) and `decrypt-async` (`AsyncCipherReader<&[u8]>`, the
//! same reads), each timed beside the std front doing the same work
//! (reference `std`) as well as the raw AEAD; and `roundtrip-duplex`, a
//! writer task encrypting into a `tokio::io::duplex` and the reader
//! decrypting from its other end, timed beside the same two fronts run
//! one after the other without a pipe (reference `async`) and the raw
//! AEAD sealing and opening the payload. Without the feature those
//! directions are left out and the bench builds as before.
//!
//! A second sweep, `<alg>-<dir>-chunk/stream/<c>`, fixes the buffer at the
//! default 8 KiB and varies the caller's chunk: `write_all` of `c`-byte
//! pieces, `read` into a reused `c`-byte buffer, paired with the raw AEAD
//! in 8 KiB messages.
//!
//! With `--features hazmat`, `<cipher>-keystream-<write|read>` rows time
//! the unauthenticated keystream adapters (`cipherio::hazmat`) against
//! the raw cipher over the same bytes: see `sweep/keystream.rs`.
//!
//! `cobblestone128-<encrypt|decrypt>` rows time Cobblestone-128 (16 KiB
//! chunks) on one thread against the raw AES-128-GCM in 16 KiB messages,
//! the `cobblestone` crate and `threads(2)`: see `sweep/cobblestone.rs`.
//!
//! Criterion keeps each stream estimate in
//! `<criterion dir>/<group>/stream/<size>/new/estimates.json`.
//!
//! Configured from the environment (the driver, `examples/bench.rs`,
//! steers it; `cargo bench` alone runs the full sweep):
//!
//! | variable | meaning (default) |
//! |---|---|
//! | `CIPHERIO_BENCH_QUICK=1` | fewer sizes and chunks, short timing |
//! | `CIPHERIO_BENCH_SIZES` | buffer sizes, comma-separated (512 … 1 MiB) |
//! | `CIPHERIO_BENCH_CHUNKS` | caller chunks at 8 KiB (64 … 1 MiB); empty: none |
//! | `CIPHERIO_BENCH_ALGS` | `aes128gcm,aes256gcm,chacha20poly1305` |
//! | `CIPHERIO_BENCH_DIRS` | directions of the buffer sweep (all of `encrypt`, `decrypt`, `decrypt-bufread` and, with `--features tokio`, `encrypt-async`, `decrypt-async`, `roundtrip-duplex`) |
//! | `CIPHERIO_BENCH_PAYLOAD` | bytes per iteration (4 MiB) |
//! | `CIPHERIO_BENCH_WARMUP_MS`, `_MEASURE_MS`, `_SAMPLES` | criterion timing |
//! | `CIPHERIO_BENCH_ROUND` | round number: even rounds start pairs with `raw` |
//! | `CIPHERIO_BENCH_BACKEND_OUT` | file to write the backends that ran into |
//! | `CIPHERIO_BENCH_PAIRS_OUT` | file to write the paired samples into (one row per sample and reference) |
//! | `CIPHERIO_BENCH_KEYSTREAM` | with `--features hazmat`: buffer sizes of the keystream adapters' rows (8 KiB, 64 KiB; empty: none; see `keystream.rs`) |
//! | `CIPHERIO_BENCH_KEYSTREAM_CIPHERS` | their ciphers (`aes128ctr,chacha20`) |
//! | `CIPHERIO_BENCH_COBBLESTONE` | `0` or empty: no Cobblestone-128 rows (see `cobblestone.rs`) |
//! | `CIPHERIO_BENCH_PROBE_MS` | instead of the sweep, only encrypt and decrypt 64 KiB-buffer streams of each algorithm for this long (the driver samples it with `perf` to see which AES/GHASH routines run) |
//!
//! On stderr, a line `cipherio-bench: point <group> <x>` as each point
//! starts measuring (the driver's progress report).

use std::env;
use std::hint::black_box;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use aead::{AeadInOut, KeyInit, Tag};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Key, Provider, backend};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use inout::InOutBuf;

// Not benches/keystream.rs: cargo would take that for a bench target.
#[cfg(feature = "hazmat")]
#[path = "sweep/keystream.rs"]
mod keystream;

#[path = "sweep/cobblestone.rs"]
mod cobblestone128;

const TAG: usize = 16;
const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// The sweep's settings, read from the environment.
struct Config {
    sizes: Vec<usize>,
    chunks: Vec<usize>,
    algs: Vec<Algorithm>,
    payload: usize,
    warm_up: Duration,
    measure: Duration,
    samples: usize,
    raw_first: bool,
    /// Directions of the buffer sweep to run (`None`: all).
    dirs: Option<Vec<String>>,
}

fn powers(from: usize, to: usize) -> Vec<usize> {
    std::iter::successors(Some(from), |&s| Some(s * 2))
        .take_while(|&s| s <= to)
        .collect()
}

fn var(name: &str) -> Option<String> {
    env::var(name).ok()
}

fn list(name: &str, default: Vec<usize>) -> Vec<usize> {
    match var(name) {
        None => default,
        Some(v) => v
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: bad size {s:?}"))
            })
            .collect(),
    }
}

fn number(name: &str, default: usize) -> usize {
    var(name).map_or(default, |v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: bad number {v:?}"))
    })
}

/// The short name used in group names and by `CIPHERIO_BENCH_ALGS`.
fn short(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::Aes128Gcm => "aes128gcm",
        Algorithm::Aes256Gcm => "aes256gcm",
        Algorithm::ChaCha20Poly1305 => "chacha20poly1305",
        _ => "unknown",
    }
}

impl Config {
    fn from_env() -> Config {
        let quick = var("CIPHERIO_BENCH_QUICK").is_some_and(|v| v != "0" && !v.is_empty());
        let (sizes, chunks, payload, warm_up, measure, samples) = if quick {
            let s = vec![512, 4 * KIB, 8 * KIB, 64 * KIB, MIB];
            let c = vec![64, KIB, 8 * KIB, 64 * KIB];
            (s, c, 4 * MIB, 100, 250, 10)
        } else {
            (powers(512, MIB), powers(64, MIB), 4 * MIB, 200, 600, 20)
        };
        let algs = match var("CIPHERIO_BENCH_ALGS") {
            None => Algorithm::ALL.to_vec(),
            Some(v) => v
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| {
                    Algorithm::ALL
                        .iter()
                        .copied()
                        .find(|&a| short(a) == s.trim())
                        .unwrap_or_else(|| panic!("CIPHERIO_BENCH_ALGS: unknown {s:?}"))
                })
                .collect(),
        };
        let ms = |name, d| Duration::from_millis(number(name, d) as u64);
        Config {
            sizes: list("CIPHERIO_BENCH_SIZES", sizes),
            chunks: list("CIPHERIO_BENCH_CHUNKS", chunks),
            algs,
            payload: number("CIPHERIO_BENCH_PAYLOAD", payload),
            warm_up: ms("CIPHERIO_BENCH_WARMUP_MS", warm_up),
            measure: ms("CIPHERIO_BENCH_MEASURE_MS", measure),
            samples: number("CIPHERIO_BENCH_SAMPLES", samples).max(10),
            raw_first: number("CIPHERIO_BENCH_ROUND", 1) & 1 == 0,
            dirs: var("CIPHERIO_BENCH_DIRS").map(|v| {
                v.split(',')
                    .map(|d| d.trim().to_string())
                    .filter(|d| !d.is_empty())
                    .collect()
            }),
        }
    }

    /// The buffer sizes to run direction `dir` at: none if
    /// `CIPHERIO_BENCH_DIRS` leaves it out.
    fn sizes_for(&self, dir: &str) -> &[usize] {
        match &self.dirs {
            Some(d) if !d.iter().any(|x| x == dir) => &[],
            _ => &self.sizes,
        }
    }
}

/// Incompressible bytes (xorshift64*), so nothing depends on the content.
fn payload(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut v = vec![0u8; len];
    for b in v.chunks_mut(8) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let x = state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        b.copy_from_slice(&x[..b.len()]);
    }
    v
}

/// The provider the streams of this build seal and open with: AWS-LC when
/// the bench is built with the `aws-lc` feature (the driver's `aws-lc`
/// build), else the default, RustCrypto. Features never change the default.
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// The provider the streams of this build seal and open with.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

/// The one-shot AEAD of the library the streams use, keyed once: the
/// RustCrypto crates, or AWS-LC when the `aws-lc` feature is on (the
/// streams then seal with it: [`PROVIDER`]).
enum Raw {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
    #[cfg(feature = "aws-lc")]
    AwsLc(Box<aws::LessSafeKey>),
}

macro_rules! with_raw {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            Raw::Aes128($a) => $body,
            Raw::Aes256($a) => $body,
            Raw::ChaCha($a) => $body,
            #[cfg(feature = "aws-lc")]
            Raw::AwsLc($a) => $body,
        }
    };
}

/// The one-shot calls of `aws-lc-rs`, out of place as `seal.rs` makes
/// them (`seal_out_of_place_scatter`, `open_separate_gather`), behind the
/// same helpers as the RustCrypto AEADs.
#[cfg(feature = "aws-lc")]
mod aws {
    pub use aws_lc_rs::aead::LessSafeKey;
    use aws_lc_rs::aead::{self, Aad, Nonce};
    use cipherio::Algorithm;

    pub fn key(alg: Algorithm, k: &[u8]) -> LessSafeKey {
        let a = match alg {
            Algorithm::Aes128Gcm => &aead::AES_128_GCM,
            Algorithm::Aes256Gcm => &aead::AES_256_GCM,
            _ => &aead::CHACHA20_POLY1305,
        };
        LessSafeKey::new(aead::UnboundKey::new(a, k).expect("key length matches the algorithm"))
    }

    pub fn seal(k: &LessSafeKey, n: [u8; 12], m: &[u8], body: &mut [u8], tag: &mut [u8]) {
        k.seal_out_of_place_scatter(
            Nonce::assume_unique_for_key(n),
            Aad::empty(),
            m,
            body,
            &[],
            tag,
        )
        .expect("message within the AEAD's limit");
    }

    pub fn open(k: &LessSafeKey, n: [u8; 12], body: &[u8], tag: &[u8], out: &mut [u8]) -> bool {
        k.open_separate_gather(
            Nonce::assume_unique_for_key(n),
            Aad::empty(),
            body,
            tag,
            out,
        )
        .is_ok()
    }
}

/// One message at a time, out of place: what the benchmark asks of a raw
/// AEAD.
trait OneShot {
    fn seal_msg(&self, i: usize, m: &[u8], body: &mut [u8], tag: &mut [u8]);
    fn open_msg(&self, i: usize, body: &[u8], tag: &[u8], out: &mut [u8]) -> bool;
}

macro_rules! one_shot_rustcrypto {
    ($($t:ty),*) => {$(
        impl OneShot for $t {
            fn seal_msg(&self, i: usize, m: &[u8], body: &mut [u8], tag: &mut [u8]) {
                let buf = InOutBuf::new(m, body).expect("same lengths");
                let t = self
                    .encrypt_inout_detached(&nonce(i).into(), &[], buf)
                    .expect("message within the AEAD's limit");
                tag.copy_from_slice(&t);
            }

            fn open_msg(&self, i: usize, body: &[u8], tag: &[u8], out: &mut [u8]) -> bool {
                let tag = Tag::<$t>::try_from(tag).expect("16-byte tag");
                let buf = InOutBuf::new(body, out).expect("same lengths");
                self.decrypt_inout_detached(&nonce(i).into(), &[], buf, &tag)
                    .is_ok()
            }
        }
    )*};
}

one_shot_rustcrypto!(Aes128Gcm, Aes256Gcm, ChaCha20Poly1305);

#[cfg(feature = "aws-lc")]
impl OneShot for aws::LessSafeKey {
    fn seal_msg(&self, i: usize, m: &[u8], body: &mut [u8], tag: &mut [u8]) {
        aws::seal(self, nonce(i), m, body, tag);
    }

    fn open_msg(&self, i: usize, body: &[u8], tag: &[u8], out: &mut [u8]) -> bool {
        aws::open(self, nonce(i), body, tag, out)
    }
}

impl Raw {
    fn new(key: &Key) -> Raw {
        let k = key.as_bytes();
        let bad = "key length matches the algorithm";
        #[cfg(feature = "aws-lc")]
        if PROVIDER == Provider::AwsLc {
            return Raw::AwsLc(Box::new(aws::key(key.algorithm(), k)));
        }
        match key.algorithm() {
            Algorithm::Aes128Gcm => Raw::Aes128(Box::new(Aes128Gcm::new_from_slice(k).expect(bad))),
            Algorithm::Aes256Gcm => Raw::Aes256(Box::new(Aes256Gcm::new_from_slice(k).expect(bad))),
            _ => Raw::ChaCha(Box::new(ChaCha20Poly1305::new_from_slice(k).expect(bad))),
        }
    }

    /// Seals `input` in `msg`-byte messages, each into the start of `out`
    /// (`msg + TAG` bytes, reused), as the writer does.
    fn seal_into(&self, input: &[u8], msg: usize, out: &mut [u8]) {
        with_raw!(self, a => seal_each(&**a, input, msg, |_, _| {}, out));
    }

    /// Seals `input` in `msg`-byte messages, all kept: each message's
    /// ciphertext followed by its tag.
    fn seal_all(&self, input: &[u8], msg: usize) -> Vec<u8> {
        let mut sealed = Vec::with_capacity(input.len() + input.len().div_ceil(msg) * TAG);
        let mut out = vec![0u8; msg + TAG];
        let keep = |_: usize, m: &[u8]| sealed.extend_from_slice(m);
        with_raw!(self, a => seal_each(&**a, input, msg, keep, &mut out));
        sealed
    }

    /// Opens each message of [`seal_all`](Self::seal_all) into the start
    /// of `out` (`msg` bytes, reused), as a caller reading `msg` bytes at a
    /// time does.
    fn open_each(&self, sealed: &[u8], msg: usize, out: &mut [u8]) {
        with_raw!(self, a => open_each(&**a, sealed, msg, None, out));
    }

    /// [`open_each`](Self::open_each), each message first copied out of
    /// `sealed` into `copy` (`msg + TAG` bytes, reused), as `Read` hands
    /// a reader its bytes: the least work a reader through `Read` does.
    fn open_each_read(&self, sealed: &[u8], msg: usize, copy: &mut [u8], out: &mut [u8]) {
        with_raw!(self, a => open_each(&**a, sealed, msg, Some(copy), out));
    }
}

/// Message `i`'s nonce: distinct per message, as in a stream.
fn nonce(i: usize) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&(i as u64).to_be_bytes());
    n
}

/// Seals each `msg`-byte message of `input` into `out`, then hands the
/// sealed bytes to `then`.
fn seal_each<A: OneShot>(
    a: &A,
    input: &[u8],
    msg: usize,
    mut then: impl FnMut(usize, &[u8]),
    out: &mut [u8],
) {
    for (i, m) in input.chunks(msg).enumerate() {
        let (body, tag) = out[..m.len() + TAG].split_at_mut(m.len());
        a.seal_msg(i, m, body, tag);
        then(i, &out[..m.len() + TAG]);
    }
    black_box(&out[..]);
}

/// Opens each message of `sealed` into `out`, where it lies or, given
/// `copy`, after copying it there.
fn open_each<A: OneShot>(
    a: &A,
    sealed: &[u8],
    msg: usize,
    mut copy: Option<&mut [u8]>,
    out: &mut [u8],
) {
    for (i, mut m) in sealed.chunks(msg + TAG).enumerate() {
        if let Some(c) = copy.as_deref_mut() {
            c[..m.len()].copy_from_slice(m);
            m = &c[..m.len()];
        }
        let (body, tag) = m.split_at(m.len() - TAG);
        if !a.open_msg(i, body, tag, &mut out[..body.len()]) {
            panic!("raw message {i} must open");
        }
        black_box(&out[..]);
    }
}

/// A stream of `plain` sealed with `capacity`-byte segments.
fn sealed_stream(key: &Key, capacity: usize, plain: &[u8]) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .capacity(capacity)
        .provider(PROVIDER)
        .build(Vec::new());
    w.write_all(plain).expect("write to a Vec");
    w.finish().expect("finish to a Vec")
}

/// Encrypts `plain` through a fresh writer, `chunk` bytes per `write_all`.
fn stream_encrypt(key: &Key, capacity: usize, plain: &[u8], chunk: usize) {
    let mut w = CipherWriter::builder(key)
        .capacity(capacity)
        .provider(PROVIDER)
        .build(io::sink());
    for piece in plain.chunks(chunk) {
        w.write_all(piece).expect("write to a sink");
    }
    w.finish().expect("finish to a sink");
}

/// Decrypts `sealed` through a fresh reader, reading into `out` (longer
/// than the plaintext, so the last read confirms the end) or, if `chunk`
/// is smaller, into a reused `chunk`-byte window at its start, as a caller
/// with a `chunk`-byte buffer does. Returns the plaintext length.
fn stream_decrypt(
    key: &Key,
    capacity: usize,
    sealed: &[u8],
    out: &mut [u8],
    chunk: usize,
    from_buf: bool,
) -> usize {
    let b = CipherReader::builder(key)
        .capacity(capacity)
        .provider(PROVIDER);
    let mut r = if from_buf {
        b.build_from_buf_read(sealed)
    } else {
        b.build(sealed)
    };
    let mut total = 0;
    loop {
        let window = if chunk < out.len() {
            &mut out[..chunk]
        } else {
            &mut out[total..]
        };
        match r.read(window).expect("stream opens") {
            0 => break,
            n => total += n,
        }
    }
    black_box(&out[..]);
    total
}

/// The async fronts (feature `tokio`), each driven to completion with
/// `block_on` on a current-thread runtime created once, outside the timed
/// loops.
#[cfg(feature = "tokio")]
mod async_fronts {
    use std::io;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use cipherio::{CipherReader, CipherWriter, Key};
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
    use tokio::runtime::Runtime;

    /// The pipe of the duplex round trip: a socket-buffer-sized
    /// `tokio::io::duplex`, whatever the segment size.
    pub const PIPE: usize = 64 * 1024;

    /// The async twin of `io::sink()`: takes every byte at once. (tokio's
    /// own `io::sink()` spends the task's cooperative budget on every
    /// write and answers `Pending` every 128 writes, a cost `io::sink()`
    /// does not have.)
    pub struct Discard;

    impl AsyncWrite for Discard {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    pub fn runtime() -> Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    }

    async fn encrypt_into<W: AsyncWrite + Unpin>(key: &Key, capacity: usize, plain: &[u8], w: W) {
        let mut w = CipherWriter::builder(key)
            .capacity(capacity)
            .provider(super::PROVIDER)
            .build_async(w);
        w.write_all(plain).await.expect("async write");
        w.shutdown().await.expect("async shutdown");
    }

    /// Reads the stream on `r` into a reused `capacity`-byte window at the
    /// start of `out` until it ends; returns the plaintext length.
    async fn decrypt_from<R: AsyncRead + Unpin>(
        key: &Key,
        capacity: usize,
        r: R,
        out: &mut [u8],
    ) -> usize {
        let mut r = CipherReader::builder(key)
            .capacity(capacity)
            .provider(super::PROVIDER)
            .build_async(r);
        let window = capacity.min(out.len());
        let mut total = 0;
        loop {
            match r.read(&mut out[..window]).await.expect("stream opens") {
                0 => break,
                n => total += n,
            }
        }
        total
    }

    /// `encrypt`'s stream through `AsyncCipherWriter<Discard>`: one
    /// `write_all` of the payload, then `shutdown`.
    pub fn encrypt(rt: &Runtime, key: &Key, capacity: usize, plain: &[u8]) {
        rt.block_on(encrypt_into(key, capacity, plain, Discard));
    }

    /// `decrypt`'s stream through `AsyncCipherReader<&[u8]>`, read into a
    /// reused `capacity`-byte buffer.
    pub fn decrypt(
        rt: &Runtime,
        key: &Key,
        capacity: usize,
        sealed: &[u8],
        out: &mut [u8],
    ) -> usize {
        rt.block_on(decrypt_from(key, capacity, sealed, out))
    }

    /// The round trip through a pipe: a spawned task encrypts the payload
    /// into one end of a `tokio::io::duplex(PIPE)` and shuts it down; the
    /// `block_on` task decrypts from the other end. One thread: the two
    /// tasks take turns as the pipe fills and empties.
    pub fn duplex(
        rt: &Runtime,
        key: &Arc<Key>,
        capacity: usize,
        plain: &Arc<[u8]>,
        out: &mut [u8],
    ) -> usize {
        rt.block_on(async {
            let (tx, rx) = tokio::io::duplex(PIPE);
            let (key_w, plain) = (Arc::clone(key), Arc::clone(plain));
            let writer =
                tokio::spawn(async move { encrypt_into(&key_w, capacity, &plain, tx).await });
            let n = decrypt_from(key, capacity, rx, out).await;
            writer.await.expect("writer task");
            n
        })
    }
}

/// The implementations the streams of this build run: the RustCrypto
/// backends `cipherio::backend` detects, or, with aws-lc, AWS-LC, which
/// picks its own assembly at run time (cipherio cannot see which).
fn backends() -> backend::Backends {
    let b = backend::detect();
    #[cfg(feature = "aws-lc")]
    if PROVIDER == Provider::AwsLc {
        let aws = "AWS-LC (its own CPU dispatch)";
        return backend::Backends {
            aes: aws,
            ghash: aws,
            chacha20: aws,
            poly1305: aws,
        };
    }
    b
}

/// Writes the backends this build runs (from its cfg flags and the CPU, as
/// `cipherio::backend` sees them) and the target features compiled in.
fn write_backends(path: &str) {
    let b = backends();
    let cpu: Vec<String> = backend::cpu_features()
        .into_iter()
        .map(|(n, on)| format!("{n}{}", if on { "+" } else { "-" }))
        .collect();
    let mut compiled = Vec::new();
    macro_rules! tf {
        ($($f:tt),*) => { $( if cfg!(target_feature = $f) { compiled.push($f); } )* };
    }
    tf!(
        "aes",
        "pclmulqdq",
        "avx",
        "avx2",
        "vaes",
        "vpclmulqdq",
        "avx512f",
        "avx512vl",
        "neon"
    );
    let text = format!(
        "provider={}\naes={}\nghash={}\nchacha20={}\npoly1305={}\ncpu={}\ncompiled={}\n",
        PROVIDER.name(),
        b.aes,
        b.ghash,
        b.chacha20,
        b.poly1305,
        cpu.join(" "),
        compiled.join(" "),
    );
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {path}: {e}"));
}

fn group<'a>(
    c: &'a mut Criterion,
    cfg: &Config,
    name: String,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(cfg.payload as u64));
    // Every iteration is a whole payload (>= 1 MiB of AEAD work normally):
    // the same number of iterations in each sample.
    g.sampling_mode(SamplingMode::Flat);
    g
}

/// Paired samples: for every criterion sample of a stream benchmark, the
/// raw AEAD runs as many iterations, interleaved with the stream's one by
/// one (stream, raw, stream, raw …, starting with the other one on every
/// sample), each timed on its own. So each stream iteration has a raw one
/// timed within a millisecond of it, and the ratio of such neighbours
/// survives a busy machine far better than a ratio of two medians taken
/// seconds apart.
///
/// A benchmark may have more than one reference (the async directions
/// pair with the std front as well as with the raw AEAD): each iteration
/// then runs the stream and every reference once, in an order rotated by
/// one on every iteration (and every sample), and each reference gets its
/// own row. With one reference the order is exactly stream/raw alternating
/// as described above.
#[derive(Default)]
struct Pairs {
    /// (group, x, iterations, stream ns, reference ns, median of the
    /// iterations' reference ÷ stream time, reference name)
    rows: Vec<(String, usize, u64, u128, u128, f64, &'static str)>,
    /// The point measured last, to announce each new one once.
    last: Option<(String, usize)>,
}

impl Pairs {
    /// Times `iters` runs of `stream` interleaved with `iters` runs of
    /// `raw`; records the sums and the median per-iteration ratio, and
    /// returns the stream's time.
    fn measure(
        &mut self,
        group: &str,
        x: usize,
        iters: u64,
        flip: &mut bool,
        stream: &mut dyn FnMut(),
        raw: &mut dyn FnMut(),
    ) -> Duration {
        self.measure_with(group, x, iters, flip, stream, &mut [("raw", raw)])
    }

    /// [`measure`](Self::measure) against several references, each
    /// iteration of the stream timed beside one of each.
    fn measure_with(
        &mut self,
        group: &str,
        x: usize,
        iters: u64,
        flip: &mut bool,
        stream: &mut dyn FnMut(),
        refs: &mut [(&'static str, &mut dyn FnMut())],
    ) -> Duration {
        let time = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed()
        };
        if self
            .last
            .as_ref()
            .is_none_or(|(g, v)| g != group || *v != x)
        {
            eprintln!("cipherio-bench: point {group} {x}");
            self.last = Some((group.to_string(), x));
        }
        *flip = !*flip;
        let n = refs.len() + 1;
        let mut ts = Duration::ZERO;
        let mut tr = vec![Duration::ZERO; refs.len()];
        let cap = usize::try_from(iters).unwrap_or(0);
        let mut ratios = vec![Vec::with_capacity(cap); refs.len()];
        let mut t = vec![Duration::ZERO; n];
        for i in 0..iters {
            // Slot 0 is the stream; the rotation puts it first when
            // `flip == (i is even)` (with one reference: stream, raw, then
            // raw, stream, …).
            let rot = usize::try_from(i % n as u64).unwrap_or(0) + usize::from(!*flip);
            for k in 0..n {
                let slot = (k + n - rot % n) % n;
                t[slot] = if slot == 0 {
                    time(stream)
                } else {
                    time(refs[slot - 1].1)
                };
            }
            ts += t[0];
            for (j, r) in t[1..].iter().enumerate() {
                tr[j] += *r;
                ratios[j].push(r.as_secs_f64() / t[0].as_secs_f64().max(1e-12));
            }
        }
        for (j, (name, _)) in refs.iter().enumerate() {
            let r = &mut ratios[j];
            r.sort_by(f64::total_cmp);
            let median = r.get(r.len() / 2).copied().unwrap_or(f64::NAN);
            self.rows.push((
                group.to_string(),
                x,
                iters,
                ts.as_nanos(),
                tr[j].as_nanos(),
                median,
                name,
            ));
        }
        ts
    }

    fn write(&self, path: &str) {
        let mut text =
            String::from("# group\tx\titerations\tstream_ns\tref_ns\tmedian_ref_per_stream\tref\n");
        for (g, x, n, s, r, m, name) in &self.rows {
            text.push_str(&format!("{g}\t{x}\t{n}\t{s}\t{r}\t{m}\t{name}\n"));
        }
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}

fn sweep(c: &mut Criterion, cfg: &Config, pairs: &mut Pairs) {
    let plain = payload(cfg.payload);
    // Room past the plaintext: a full-buffer read ends with a read that
    // returns 0, which confirms the end of the stream.
    let mut out = vec![0u8; cfg.payload + 1];
    let mut flip = cfg.raw_first;
    for &alg in &cfg.algs {
        let key = Key::generate(alg);
        let raw = Raw::new(&key);
        let name = short(alg);

        // Encrypt, by buffer size.
        let group_name = format!("{name}-encrypt");
        let mut g = group(c, cfg, group_name.clone());
        for &s in cfg.sizes_for("encrypt") {
            let mut msg_out = vec![0u8; s + TAG];
            g.bench_function(BenchmarkId::new("stream", s), |b| {
                b.iter_custom(|iters| {
                    pairs.measure(
                        &group_name,
                        s,
                        iters,
                        &mut flip,
                        &mut || stream_encrypt(&key, s, &plain, plain.len().max(1)),
                        &mut || raw.seal_into(&plain, s, &mut msg_out),
                    )
                });
            });
        }
        g.finish();

        // Decrypt, by buffer size: through `Read` (the ciphertext copied
        // out of the `&[u8]`), then with `build_from_buf_read` (segments
        // opened where they lie in the `&[u8]`: no copy).
        for (dir, from_buf) in [("decrypt", false), ("decrypt-bufread", true)] {
            let group_name = format!("{name}-{dir}");
            let mut g = group(c, cfg, group_name.clone());
            for &s in cfg.sizes_for(dir) {
                let stream = sealed_stream(&key, s, &plain);
                let sealed = raw.seal_all(&plain, s);
                let n = stream_decrypt(&key, s, &stream, &mut out, usize::MAX, from_buf);
                assert_eq!(&out[..n], &plain[..], "stream round trip at {s}");
                // Two outputs, so the two closures need not share one.
                let mut raw_out = vec![0u8; s];
                g.bench_function(BenchmarkId::new("stream", s), |b| {
                    b.iter_custom(|iters| {
                        pairs.measure(
                            &group_name,
                            s,
                            iters,
                            &mut flip,
                            &mut || {
                                stream_decrypt(&key, s, &stream, &mut out, s, from_buf);
                            },
                            &mut || raw.open_each(&sealed, s, &mut raw_out),
                        )
                    });
                });
            }
            g.finish();
        }

        #[cfg(feature = "tokio")]
        sweep_async(c, cfg, pairs, &mut flip, &key, &raw, &plain, &mut out);

        if cfg.chunks.is_empty() {
            continue;
        }
        let cap = DEFAULT_CAPACITY;

        // Encrypt at the default buffer, by the caller's write size.
        let group_name = format!("{name}-encrypt-chunk");
        let mut g = group(c, cfg, group_name.clone());
        let mut msg_out = vec![0u8; cap + TAG];
        for &chunk in &cfg.chunks {
            g.bench_function(BenchmarkId::new("stream", chunk), |b| {
                b.iter_custom(|iters| {
                    pairs.measure(
                        &group_name,
                        chunk,
                        iters,
                        &mut flip,
                        &mut || stream_encrypt(&key, cap, &plain, chunk),
                        &mut || raw.seal_into(&plain, cap, &mut msg_out),
                    )
                });
            });
        }
        g.finish();

        // Decrypt at the default buffer, by the caller's read size.
        let group_name = format!("{name}-decrypt-chunk");
        let mut g = group(c, cfg, group_name.clone());
        let stream = sealed_stream(&key, cap, &plain);
        let sealed = raw.seal_all(&plain, cap);
        let mut raw_out = vec![0u8; cap];
        for &chunk in &cfg.chunks {
            g.bench_function(BenchmarkId::new("stream", chunk), |b| {
                b.iter_custom(|iters| {
                    pairs.measure(
                        &group_name,
                        chunk,
                        iters,
                        &mut flip,
                        &mut || {
                            stream_decrypt(&key, cap, &stream, &mut out, chunk, false);
                        },
                        &mut || raw.open_each(&sealed, cap, &mut raw_out),
                    )
                });
            });
        }
        g.finish();
    }
}

/// The async directions of the buffer sweep (feature `tokio`), each
/// paired with the std front doing the same work and with the raw AEAD:
///
/// - `encrypt-async`: `AsyncCipherWriter<Discard>` (an `AsyncWrite` that
///   takes everything, like `io::sink()`) against `encrypt`'s
///   `CipherWriter<io::Sink>`;
/// - `decrypt-async`: `AsyncCipherReader<&[u8]>` against `decrypt`'s
///   `CipherReader<&[u8]>`, both reading into a reused `s`-byte buffer;
/// - `roundtrip-duplex`: the writer in a spawned task encrypting into a
///   `tokio::io::duplex` pipe, the reader decrypting from its other end,
///   against the same two async fronts run one after the other without a
///   pipe (reference `async`) and against the raw AEAD sealing and
///   opening the payload (`raw`).
#[cfg(feature = "tokio")]
#[allow(clippy::too_many_arguments)]
fn sweep_async(
    c: &mut Criterion,
    cfg: &Config,
    pairs: &mut Pairs,
    flip: &mut bool,
    key: &Key,
    raw: &Raw,
    plain: &[u8],
    out: &mut [u8],
) {
    use std::sync::Arc;

    let rt = async_fronts::runtime();
    let name = short(key.algorithm());
    let mut async_out = vec![0u8; out.len()];

    let group_name = format!("{name}-encrypt-async");
    let mut g = group(c, cfg, group_name.clone());
    for &s in cfg.sizes_for("encrypt-async") {
        let mut msg_out = vec![0u8; s + TAG];
        g.bench_function(BenchmarkId::new("stream", s), |b| {
            b.iter_custom(|iters| {
                pairs.measure_with(
                    &group_name,
                    s,
                    iters,
                    flip,
                    &mut || async_fronts::encrypt(&rt, key, s, plain),
                    &mut [
                        ("std", &mut || {
                            stream_encrypt(key, s, plain, plain.len().max(1))
                        }),
                        ("raw", &mut || raw.seal_into(plain, s, &mut msg_out)),
                    ],
                )
            });
        });
    }
    g.finish();

    let group_name = format!("{name}-decrypt-async");
    let mut g = group(c, cfg, group_name.clone());
    for &s in cfg.sizes_for("decrypt-async") {
        let stream = sealed_stream(key, s, plain);
        let sealed = raw.seal_all(plain, s);
        let n = async_fronts::decrypt(&rt, key, s, &stream, &mut async_out);
        assert_eq!(n, plain.len(), "async round trip at {s}");
        let mut raw_out = vec![0u8; s];
        g.bench_function(BenchmarkId::new("stream", s), |b| {
            b.iter_custom(|iters| {
                pairs.measure_with(
                    &group_name,
                    s,
                    iters,
                    flip,
                    &mut || {
                        async_fronts::decrypt(&rt, key, s, &stream, &mut async_out);
                        black_box(&async_out[..]);
                    },
                    &mut [
                        ("std", &mut || {
                            stream_decrypt(key, s, &stream, out, s, false);
                        }),
                        ("raw", &mut || raw.open_each(&sealed, s, &mut raw_out)),
                    ],
                )
            });
        });
    }
    g.finish();

    let group_name = format!("{name}-roundtrip-duplex");
    let mut g = group(c, cfg, group_name.clone());
    let shared_key = Arc::new(key.clone());
    let shared_plain: Arc<[u8]> = Arc::from(plain);
    for &s in cfg.sizes_for("roundtrip-duplex") {
        let stream = sealed_stream(key, s, plain);
        let n = async_fronts::duplex(&rt, &shared_key, s, &shared_plain, &mut async_out);
        assert_eq!(n, plain.len(), "duplex round trip at {s}");
        let mut msg_out = vec![0u8; s + TAG];
        let sealed = raw.seal_all(plain, s);
        let mut raw_out = vec![0u8; s];
        g.bench_function(BenchmarkId::new("stream", s), |b| {
            b.iter_custom(|iters| {
                pairs.measure_with(
                    &group_name,
                    s,
                    iters,
                    flip,
                    &mut || {
                        async_fronts::duplex(&rt, &shared_key, s, &shared_plain, &mut async_out);
                        black_box(&async_out[..]);
                    },
                    &mut [
                        ("async", &mut || {
                            async_fronts::encrypt(&rt, key, s, plain);
                            async_fronts::decrypt(&rt, key, s, &stream, out);
                            black_box(&out[..]);
                        }),
                        ("raw", &mut || {
                            raw.seal_into(plain, s, &mut msg_out);
                            raw.open_each(&sealed, s, &mut raw_out);
                        }),
                    ],
                )
            });
        });
    }
    g.finish();
}

/// `CIPHERIO_BENCH_PROBE_MS`: the streams' steady state alone, for a
/// sampling profiler (the driver runs it under `perf record` to show which
/// assembly routines an AES tier really ran): encrypt and decrypt through
/// 64 KiB buffers, each algorithm in turn, for `ms` milliseconds.
fn probe(cfg: &Config, ms: u64) {
    let plain = payload(cfg.payload);
    let mut out = vec![0u8; cfg.payload + 1];
    let s = 64 * KIB;
    let keys: Vec<Key> = cfg.algs.iter().map(|&a| Key::generate(a)).collect();
    let sealed: Vec<Vec<u8>> = keys.iter().map(|k| sealed_stream(k, s, &plain)).collect();
    let (t, mut rounds) = (Instant::now(), 0u64);
    while t.elapsed() < Duration::from_millis(ms) {
        for (k, st) in keys.iter().zip(&sealed) {
            stream_encrypt(k, s, &plain, plain.len().max(1));
            let n = stream_decrypt(k, s, st, &mut out, s, false);
            assert_eq!(n, plain.len(), "probe round trip");
        }
        rounds += 1;
    }
    eprintln!(
        "cipherio probe: {rounds} round(s) of {} B per algorithm in {:.2} s",
        plain.len(),
        t.elapsed().as_secs_f64()
    );
}

fn main() {
    let cfg = Config::from_env();
    if let Some(path) = var("CIPHERIO_BENCH_BACKEND_OUT") {
        write_backends(&path);
    }
    if let Some(ms) = var("CIPHERIO_BENCH_PROBE_MS") {
        probe(
            &cfg,
            ms.trim()
                .parse()
                .expect("CIPHERIO_BENCH_PROBE_MS: milliseconds"),
        );
        return;
    }
    let b = backends();
    eprintln!(
        "cipherio sweep: AES {}, GHASH {}, ChaCha20 {}, Poly1305 {}; payload {} B, sizes {:?}, chunks {:?}",
        b.aes, b.ghash, b.chacha20, b.poly1305, cfg.payload, cfg.sizes, cfg.chunks
    );
    let mut c = Criterion::default()
        .warm_up_time(cfg.warm_up)
        .measurement_time(cfg.measure)
        .sample_size(cfg.samples)
        .nresamples(1000)
        .without_plots()
        .configure_from_args();
    let mut pairs = Pairs::default();
    sweep(&mut c, &cfg, &mut pairs);
    let mut flip = cfg.raw_first;
    #[cfg(feature = "hazmat")]
    keystream::sweep(&mut c, &cfg, &mut pairs, &mut flip);
    cobblestone128::sweep(&mut c, &cfg, &mut pairs, &mut flip);
    c.final_summary();
    if let Some(path) = var("CIPHERIO_BENCH_PAIRS_OUT") {
        pairs.write(&path);
    }
}
