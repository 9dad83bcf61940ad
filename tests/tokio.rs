//! The tokio fronts, `AsyncCipherWriter` and `AsyncCipherReader` (feature
//! `tokio`): glue over the same engine as the std fronts, cancel-safe,
//! shut down once.
//!
//! Every check is made over both key types (a native [`Key`] and a
//! [`AesGcmHkdfKey`]) and every provider in [`Provider::ALL`], with associated
//! data, so that the builders' options are seen to reach the async fronts.
//! Writer outputs are checked against the format: the exact length (header
//! plus one tag per segment plus the plaintext; a segment sealed twice adds
//! a tag and breaks the counter sequence) and a decryption with the std
//! `CipherReader` that must give exactly the plaintext.
//!
//! The scripted inner reader and writer (`tests/common/aio.rs`) return
//! `Pending`, errors, short writes and `Ok(0)` at chosen poll positions;
//! the deterministic tests poll by hand with a no-op waker, so that a
//! "dropped future" is a `Pending` poll followed by a call with another
//! buffer, at every position. The runtime tests use `tokio::io::duplex`,
//! `tokio::io::copy`, loopback TCP, `timeout` and `select!`. Timeouts are
//! only hang guards or cancellation tools; nothing asserts a duration.
#![cfg(feature = "tokio")]
#![allow(clippy::unwrap_used, clippy::too_many_lines)]

mod common;

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::io::{self, ErrorKind, Read, Write};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::tokio::{AsyncCipherReader, AsyncCipherWriter};
use cipherio::{
    Algorithm, CipherReader, CipherWriter, Error, Key, Provider, ReaderBuilder, WriterBuilder,
};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

use common::aio::{ScriptedReader, ScriptedWriter, is_injected};
use common::{Layout, TAG as TAG_LEN, data};

/// Hang guard for everything that waits on another task or a socket.
const GUARD: Duration = Duration::from_secs(60);

/// Plaintext bytes per segment in most tests (a Tink key's later
/// segments; its first one is shorter by the header).
const SEG: usize = 1024;

// ---------------------------------------------------------------------------
// keys and cases (data and the layout model: `common`)

#[derive(Clone, Debug)]
enum AnyKey {
    Native(Key),
    Tink(AesGcmHkdfKey),
}

/// One key (and wire format), one provider, `seg`-byte segments, and
/// associated data.
#[derive(Clone, Debug)]
struct Case {
    key: AnyKey,
    provider: Provider,
    lay: Layout,
    aad: Vec<u8>,
}

impl Case {
    /// Native AES-256-GCM, native ChaCha20-Poly1305 and a Tink
    /// AES-128-GCM-HKDF key whose later segments hold `seg` bytes, for
    /// every provider.
    fn all(seg: usize) -> Vec<Case> {
        let mut cases = Vec::new();
        for &provider in Provider::ALL {
            for alg in [Algorithm::Aes256Gcm, Algorithm::ChaCha20Poly1305] {
                cases.push(Case {
                    key: AnyKey::Native(Key::generate(alg)),
                    provider,
                    lay: Layout::native(seg),
                    aad: b"tokio tests".to_vec(),
                });
            }
            let params = AesGcmHkdfParams::new(16, seg + TAG_LEN, HkdfHash::Sha256).unwrap();
            cases.push(Case {
                key: AnyKey::Tink(AesGcmHkdfKey::generate(params)),
                provider,
                lay: Layout::of_tink(&params),
                aad: b"tokio tests".to_vec(),
            });
        }
        cases
    }

    fn name(&self) -> String {
        let key = match &self.key {
            AnyKey::Native(k) => format!("native {:?}", k.algorithm()),
            AnyKey::Tink(k) => format!("tink {}", k.params().ciphertext_segment_size()),
        };
        format!("{key}, {}", self.provider.name())
    }

    fn writer_builder(&self) -> WriterBuilder {
        let b = match &self.key {
            AnyKey::Native(k) => CipherWriter::builder(k).capacity(self.lay.rest),
            AnyKey::Tink(k) => CipherWriter::builder(k),
        };
        b.associated_data(&self.aad).provider(self.provider)
    }

    fn reader_builder(&self, rcap: usize) -> ReaderBuilder {
        let b = match &self.key {
            AnyKey::Native(k) => CipherReader::builder(k),
            AnyKey::Tink(k) => CipherReader::builder(k),
        };
        b.capacity(rcap)
            .associated_data(&self.aad)
            .provider(self.provider)
    }

    fn writer<W: AsyncWrite + Unpin>(&self, w: W) -> AsyncCipherWriter<W> {
        self.writer_builder().build_async(w)
    }

    fn reader<R: AsyncRead + Unpin>(&self, rcap: usize, r: R) -> AsyncCipherReader<R> {
        self.reader_builder(rcap).build_async(r)
    }

    /// The stream the std writer makes of `plain`.
    fn seal(&self, plain: &[u8]) -> Vec<u8> {
        let mut w = self.writer_builder().build(Vec::new());
        w.write_all(plain).unwrap();
        w.finish().unwrap()
    }

    /// `ct` decrypted by the std reader.
    fn open_std(&self, ct: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.reader_builder(8192)
            .build(ct)
            .read_to_end(&mut out)
            .map(|_| out)
    }

    /// `ct` is exactly the finished stream of `plain`: its length is the
    /// layout's (every segment sealed once) and the std reader gives back
    /// `plain`.
    fn assert_stream(&self, ct: &[u8], plain: &[u8], what: &str) {
        assert_eq!(
            ct.len(),
            self.lay.stream_len(plain.len()),
            "{}: {what}: ciphertext length for {} plaintext bytes",
            self.name(),
            plain.len()
        );
        let out = self
            .open_std(ct)
            .unwrap_or_else(|e| panic!("{}: {what}: std reader: {e}", self.name()));
        assert!(out == plain, "{}: {what}: plaintext differs", self.name());
    }

    /// Interesting plaintext lengths: empty, around the first segment's
    /// end, several segments, and a non-multiple.
    fn lengths(&self) -> Vec<usize> {
        let l = self.lay;
        vec![
            0,
            1,
            l.first - 1,
            l.first,
            l.first + 1,
            l.plain_before(3),
            l.plain_before(3) + 1,
            l.plain_before(5) + 321,
        ]
    }
}

/// `e` is an error of the crate whose kind says truncation or bad data
/// (what a reader must say about an incomplete stream).
fn assert_incomplete(e: &io::Error, what: &str) {
    assert!(
        matches!(e.kind(), ErrorKind::UnexpectedEof | ErrorKind::InvalidData),
        "{what}: {e:?}"
    );
}

// ---------------------------------------------------------------------------
// polling by hand (no runtime; a no-op waker)

fn cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

/// One `poll_read` into `buf`: `Ready(Ok(n))` with the bytes filled.
fn poll_read_once<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Poll<io::Result<usize>> {
    let mut rb = ReadBuf::new(buf);
    match Pin::new(r).poll_read(&mut cx(), &mut rb) {
        Poll::Ready(Ok(())) => Poll::Ready(Ok(rb.filled().len())),
        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        Poll::Pending => {
            assert!(rb.filled().is_empty(), "Pending with filled bytes");
            Poll::Pending
        }
    }
}

const SENTINEL: u8 = 0x5A;

/// True if `buf` holds a 16-byte window of `unreleased` (checked at every
/// 8th offset of `unreleased`, so any run of 24 bytes or more is seen).
fn leaks(buf: &[u8], unreleased: &[u8]) -> bool {
    if buf.iter().all(|&b| b == SENTINEL) || unreleased.len() < 16 {
        return false;
    }
    let windows: HashSet<&[u8]> = buf.windows(16).collect();
    (0..=unreleased.len() - 16)
        .step_by(8)
        .any(|i| windows.contains(&unreleased[i..i + 16]))
}

/// What a hand-driven read loop saw.
#[derive(Debug, Default)]
struct ReadRun {
    out: Vec<u8>,
    pendings: usize,
    /// Errors returned, in order.
    errors: Vec<io::Error>,
    /// Caller reads that returned `Ready`.
    reads: usize,
}

/// Reads `r` to the end by hand, calling with buffers of the sizes in
/// `bufsizes` in turn: after every `Pending` (a dropped read future) and
/// every error the next call uses the next size and a fresh buffer. Each
/// buffer starts filled with [`SENTINEL`]; after a `Pending` or an error it
/// must hold no plaintext beyond what has been released. Injected inner
/// errors are passed over (the next call resumes); any other error ends
/// the run.
fn read_by_hand<R: AsyncRead + Unpin>(r: &mut R, bufsizes: &[usize], plain: &[u8]) -> ReadRun {
    let mut run = ReadRun::default();
    let mut turn = 0;
    let mut buf = Vec::new();
    for spin in 0.. {
        assert!(spin < 5_000_000, "reader makes no progress");
        let size = bufsizes[turn % bufsizes.len()];
        buf.clear();
        buf.resize(size, SENTINEL);
        match poll_read_once(r, &mut buf) {
            Poll::Ready(Ok(0)) => {
                run.reads += 1;
                break;
            }
            Poll::Ready(Ok(n)) => {
                run.reads += 1;
                run.out.extend_from_slice(&buf[..n]);
                assert!(
                    plain.starts_with(&run.out),
                    "released bytes differ from the plaintext at {}",
                    run.out.len() - n
                );
            }
            Poll::Pending => {
                run.pendings += 1;
                turn += 1;
                let released = run.out.len().min(plain.len());
                assert!(
                    !leaks(&buf, &plain[released..]),
                    "unreleased plaintext in the caller's buffer after Pending"
                );
            }
            Poll::Ready(Err(e)) => {
                turn += 1;
                let released = run.out.len().min(plain.len());
                assert!(
                    !leaks(&buf, &plain[released..]),
                    "unreleased plaintext in the caller's buffer after {e}"
                );
                let injected = is_injected(&e);
                run.errors.push(e);
                if !injected {
                    break;
                }
            }
        }
    }
    run
}

/// Writes `plain` into `w` by hand in chunks of the sizes in `chunks` (in
/// turn; after a `Pending` or an error the next call takes the next size,
/// as a caller whose write future was dropped might), then shuts it down,
/// polling `poll_shutdown` again after each `Pending` or error. Every
/// `Ready(Ok(n))` for non-empty input must have `0 < n <= len`. Errors
/// must be injected ones passed through, or `WriteZero`; they are
/// returned.
fn write_by_hand<W: AsyncWrite + Unpin>(
    w: &mut AsyncCipherWriter<W>,
    plain: &[u8],
    chunks: &[usize],
) -> Vec<io::Error> {
    let mut errors = Vec::new();
    let mut pos = 0;
    let mut turn = 0;
    let mut spins = 0;
    while pos < plain.len() {
        spins += 1;
        assert!(spins < 5_000_000, "writer makes no progress");
        let end = (pos + chunks[turn % chunks.len()]).min(plain.len());
        match Pin::new(&mut *w).poll_write(&mut cx(), &plain[pos..end]) {
            Poll::Ready(Ok(n)) => {
                assert!(n > 0, "poll_write returned Ok(0) for {} bytes", end - pos);
                assert!(n <= end - pos);
                pos += n;
            }
            Poll::Ready(Err(e)) => {
                assert!(
                    is_injected(&e) || e.kind() == ErrorKind::WriteZero,
                    "unexpected write error {e:?}"
                );
                errors.push(e);
                turn += 1;
            }
            Poll::Pending => turn += 1,
        }
    }
    loop {
        spins += 1;
        assert!(spins < 5_000_000, "shutdown makes no progress");
        match Pin::new(&mut *w).poll_shutdown(&mut cx()) {
            Poll::Ready(Ok(())) => break,
            Poll::Ready(Err(e)) => {
                assert!(
                    is_injected(&e) || e.kind() == ErrorKind::WriteZero,
                    "unexpected shutdown error {e:?}"
                );
                errors.push(e);
            }
            Poll::Pending => {}
        }
    }
    errors
}

/// Reads `r` to the end with `bufsize`-byte reads on the runtime.
async fn read_all<R: AsyncRead + Unpin>(r: &mut R, bufsize: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0; bufsize];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Reads until the end or an error: the bytes released, and the error.
async fn read_until_error<R: AsyncRead + Unpin>(
    r: &mut R,
    bufsize: usize,
) -> (Vec<u8>, Option<io::Error>) {
    let mut out = Vec::new();
    let mut buf = vec![0; bufsize];
    loop {
        match r.read(&mut buf).await {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// After an error: three more reads (and a `fill_buf`) fail again, never
/// `Ok(0)`, with the same kind.
async fn assert_sticky<R: AsyncRead + Unpin>(r: &mut AsyncCipherReader<R>, first: &io::Error) {
    let mut buf = vec![0; 4096];
    for i in 0..3 {
        match r.read(&mut buf).await {
            Ok(n) => panic!("read {i} after {first:?} returned Ok({n})"),
            Err(e) => assert_eq!(e.kind(), first.kind(), "read {i} after {first:?}"),
        }
    }
    match r.fill_buf().await {
        Ok(b) => panic!("fill_buf after {first:?} returned {} bytes", b.len()),
        Err(e) => assert_eq!(e.kind(), first.kind()),
    }
}

// ---------------------------------------------------------------------------
// API shape

#[test]
fn async_types_are_send_sync_and_unpin() {
    fn check<T: Send + Sync + Unpin>() {}
    check::<AsyncCipherWriter<tokio::io::DuplexStream>>();
    check::<AsyncCipherReader<tokio::io::DuplexStream>>();
    check::<AsyncCipherWriter<tokio::net::tcp::OwnedWriteHalf>>();
    check::<AsyncCipherReader<tokio::net::tcp::OwnedReadHalf>>();
}

/// `new`, `with_capacity` and the builders, both key types: the stream is
/// the format's, and each side reads what the other front wrote.
#[tokio::test]
async fn constructors_and_builders_round_trip_with_both_key_types() {
    let plain = data(3 * 4096 + 17, 1);

    // Native key: new (8 KiB segments), with_capacity, builder.
    let key = Key::generate(Algorithm::Aes128Gcm);
    let native = Layout::native;
    let mut w = AsyncCipherWriter::new(&key, Vec::new());
    w.write_all(&plain).await.unwrap();
    let ct = w.finish().await.unwrap();
    assert_eq!(ct.len(), native(8192).stream_len(plain.len()));
    let mut w = AsyncCipherWriter::with_capacity(4096, &key, Vec::new());
    w.write_all(&plain).await.unwrap();
    let ct2 = w.finish().await.unwrap();
    assert_eq!(ct2.len(), native(4096).stream_len(plain.len()));
    for ct in [&ct, &ct2] {
        let mut out = Vec::new();
        CipherReader::new(&key, &ct[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, plain);
        let mut r = AsyncCipherReader::new(&key, &ct[..]);
        assert_eq!(read_all(&mut r, 1000).await.unwrap(), plain);
        let mut r = AsyncCipherReader::with_capacity(100, &key, &ct[..]);
        assert_eq!(read_all(&mut r, 1000).await.unwrap(), plain);
    }
    // The std writer's stream, read by the async reader built by the builder.
    let mut sw = CipherWriter::builder(&key)
        .capacity(777)
        .associated_data(b"ad")
        .build(Vec::new());
    sw.write_all(&plain).unwrap();
    let ct3 = sw.finish().unwrap();
    let mut r = CipherReader::builder(&key)
        .associated_data(b"ad")
        .max_segment_size(777)
        .build_async(&ct3[..]);
    assert_eq!(read_all(&mut r, 64 * 1024).await.unwrap(), plain);

    // Tink key: new and with_capacity(the key's segment size).
    let params = AesGcmHkdfParams::AES256_GCM_HKDF_4KB;
    let tkey = AesGcmHkdfKey::generate(params);
    let tlay = Layout::of_tink(&params);
    let mut w = AsyncCipherWriter::new(&tkey, Vec::new());
    w.write_all(&plain).await.unwrap();
    let ct = w.finish().await.unwrap();
    assert_eq!(ct.len(), tlay.stream_len(plain.len()));
    let mut w = AsyncCipherWriter::with_capacity(params.segment_plaintext(), &tkey, Vec::new());
    w.write_all(&plain).await.unwrap();
    let ct2 = w.finish().await.unwrap();
    assert_eq!(ct2.len(), tlay.stream_len(plain.len()));
    for ct in [&ct, &ct2] {
        let mut out = Vec::new();
        CipherReader::new(&tkey, &ct[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, plain);
        let mut r = AsyncCipherReader::new(&tkey, &ct[..]);
        assert_eq!(read_all(&mut r, 1000).await.unwrap(), plain);
        let mut r = AsyncCipherReader::with_capacity(333, &tkey, &ct[..]);
        assert_eq!(read_all(&mut r, 1000).await.unwrap(), plain);
    }
}

/// `get_ref` / `get_mut` / `into_inner` reach the inner reader and writer.
#[tokio::test]
async fn accessors_reach_the_inner_reader_and_writer() {
    let case = &Case::all(SEG)[0];
    let plain = data(2 * SEG + 5, 2);
    let mut w = case.writer(ScriptedWriter::new());
    w.write_all(&plain).await.unwrap();
    w.flush().await.unwrap();
    assert_eq!(w.get_ref().len(), case.lay.seg_start(2), "get_ref");
    w.get_mut().set_max_per_call(3);
    let inner = w.finish().await.unwrap();
    assert!(inner.writes > 3, "get_mut did not reach the inner writer");
    case.assert_stream(&inner.output(), &plain, "accessors");

    let mut r = case.reader(8192, ScriptedReader::new(inner.output()));
    assert_eq!(r.get_ref().polls, 0, "the reader polled before it was read");
    let out = read_all(&mut r, 100).await.unwrap();
    assert_eq!(out, plain);
    assert!(r.get_mut().polls > 0);
    let inner = r.into_inner();
    assert_eq!(inner.delivered(), case.lay.stream_len(plain.len()));
}

// ---------------------------------------------------------------------------
// writer: poll_write, Pending, short writes, errors, Ok(0)

/// A writer over an inner writer that takes a few bytes per call and is
/// `Pending` on every second or third poll; the caller changes its chunk
/// after every `Pending` (a dropped write future). `poll_write` never
/// returns `Ok(0)`, and the stream is exactly the format's and decrypts to
/// the plaintext: nothing sealed twice, nothing lost.
#[test]
fn poll_write_never_returns_zero_over_short_pending_writes() {
    for case in Case::all(SEG) {
        for len in case.lengths() {
            let plain = data(len, len as u64);
            for (max, every, chunks) in [
                (1, 2, vec![1, 1000, 7]),
                (7, 3, vec![SEG, 1, SEG + 1]),
                (100, 2, vec![5 * SEG, 333]),
                (5000, 3, vec![17]),
            ] {
                let inner = ScriptedWriter::new().max_per_call(max).pending_every(every);
                let mut w = case.writer(inner);
                let errors = write_by_hand(&mut w, &plain, &chunks);
                assert!(errors.is_empty(), "{errors:?}");
                let inner = w.get_ref();
                assert_eq!(inner.shutdowns, 1, "{}", case.name());
                case.assert_stream(
                    &inner.output(),
                    &plain,
                    &format!("{len} bytes, {max} per inner call, pending every {every}"),
                );
            }
        }
    }
}

/// `Pending`, an injected error or an `Ok(0)` at every poll position of a
/// whole write-and-shutdown (writes, flushes, the final seal, the inner
/// shutdown): errors pass through unchanged (an inner `Ok(0)` becomes
/// `WriteZero`, never `Ok(0)`), the next call resumes, and the stream is
/// still exactly the format's. An error at an inner flush or shutdown
/// must reach the caller; one at an inner write may be deferred when the
/// same call already took bytes (it answers `Ok(taken)`, as the std
/// writer does, and the next call drains again), so there at most one.
#[test]
fn writer_resumes_after_pending_error_or_zero_at_every_poll_position() {
    for case in Case::all(SEG) {
        let len = case.lay.plain_before(3) + 100;
        let plain = data(len, 3);
        let chunks = [700, 3, SEG];
        // A clean run gives the number of inner polls.
        let mut w = case.writer(ScriptedWriter::new().max_per_call(256));
        assert!(write_by_hand(&mut w, &plain, &chunks).is_empty());
        let polls = w.get_ref().polls;
        let kinds = w.get_ref().kinds.clone();
        assert_eq!(kinds.len(), polls);
        case.assert_stream(&w.get_ref().output(), &plain, "clean");
        for (at, &kind) in kinds.iter().enumerate() {
            for what in ["pending", "error", "zero"] {
                let inner = ScriptedWriter::new().max_per_call(256);
                let inner = match what {
                    "pending" => inner.pending_at([at]),
                    "error" => inner.error_at(at, ErrorKind::ConnectionReset),
                    _ => inner.zero_at(at),
                };
                let mut w = case.writer(inner);
                let errors = write_by_hand(&mut w, &plain, &chunks);
                match what {
                    "error" => {
                        let what = format!("{}: error at poll {at} ({kind})", case.name());
                        if kind == 'w' {
                            assert!(errors.len() <= 1, "{what}: {errors:?}");
                        } else {
                            assert_eq!(errors.len(), 1, "{what}: {errors:?}");
                        }
                        for e in &errors {
                            assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{what}");
                        }
                    }
                    "zero" => {
                        // Only a poll_write position turns into an error.
                        assert!(errors.len() <= 1, "{errors:?}");
                        for e in &errors {
                            assert_eq!(e.kind(), ErrorKind::WriteZero);
                        }
                    }
                    _ => assert!(errors.is_empty(), "{errors:?}"),
                }
                case.assert_stream(
                    &w.get_ref().output(),
                    &plain,
                    &format!("{what} at inner poll {at} of {polls}"),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// writer: flush, shutdown, finish, drop

/// `poll_flush` writes every sealed segment and flushes the inner writer:
/// after `plain_before(k) + 1` bytes (k segments sealed, one byte held
/// back) and a flush through `Pending`s and short writes, the inner writer
/// holds exactly the header and k segments, flushed after the last byte;
/// the std reader gets their plaintext and then `UnexpectedEof`. The
/// stream then goes on to its end.
#[tokio::test]
async fn flush_writes_every_sealed_segment_and_flushes_the_inner_writer() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(4) + 10, 4);
        let inner = ScriptedWriter::new().max_per_call(100).pending_every(2);
        let mut w = case.writer(inner);
        for k in 1..=3 {
            let upto = case.lay.plain_before(k) + 1;
            let from = if k == 1 {
                0
            } else {
                case.lay.plain_before(k - 1) + 1
            };
            w.write_all(&plain[from..upto]).await.unwrap();
            w.flush().await.unwrap();
            let inner = w.get_ref();
            let prefix = case.lay.seg_start(k);
            assert_eq!(inner.len(), prefix, "{}: after flush {k}", case.name());
            assert_eq!(
                inner.flushed_at.last(),
                Some(&prefix),
                "{}: inner not flushed after the sealed segments",
                case.name()
            );
            let mut out = Vec::new();
            let err = case
                .reader_builder(8192)
                .build(&inner.output()[..])
                .read_to_end(&mut out)
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::UnexpectedEof, "{}", case.name());
            assert_eq!(out, plain[..case.lay.plain_before(k)]);
        }
        w.write_all(&plain[case.lay.plain_before(3) + 1..])
            .await
            .unwrap();
        w.shutdown().await.unwrap();
        case.assert_stream(&w.get_ref().output(), &plain, "flushed three times");
    }
}

/// `poll_shutdown` polled again after every `Pending` (the inner writer is
/// `Pending` on every second poll and takes 64 bytes a call), then twice
/// more after it returned `Ready`: it never errors, the final segment is
/// sealed and written once (the output is exactly the stream and does not
/// grow), and the inner writer is shut down after the last byte. A write
/// after shutdown is an error and writes nothing.
#[tokio::test]
async fn poll_shutdown_is_idempotent_and_seals_once() {
    for case in Case::all(SEG) {
        for len in case.lengths() {
            let plain = data(len, 5);
            let inner = ScriptedWriter::new().max_per_call(64).pending_every(2);
            let mut w = case.writer(inner);
            w.write_all(&plain).await.unwrap();
            let mut polls = 0;
            poll_fn(|cx| {
                polls += 1;
                assert!(polls < 1_000_000);
                Pin::new(&mut w).poll_shutdown(cx)
            })
            .await
            .unwrap();
            let ct_len = case.lay.stream_len(len);
            let what = format!("{}: {len} bytes", case.name());
            assert!(polls > 1, "{what}: the scripted Pendings were not seen");
            assert_eq!(
                w.get_ref().shut_at,
                Some(ct_len),
                "{what}: inner shut down early"
            );
            case.assert_stream(&w.get_ref().output(), &plain, "shutdown");
            for again in 0..2 {
                let r = poll_fn(|cx| Pin::new(&mut w).poll_shutdown(cx)).await;
                assert!(r.is_ok(), "{what}: shutdown again ({again}): {r:?}");
                assert_eq!(w.get_ref().len(), ct_len, "{what}: sealed twice");
            }
            let r = w.write(b"more").await;
            assert!(r.is_err(), "{what}: write after shutdown: {r:?}");
            assert_eq!(w.get_ref().len(), ct_len);
        }
    }
}

/// `Pending` or an injected error at each poll position of the shutdown
/// itself (the final seal's drain, the inner flush, the inner shutdown):
/// polled again, `poll_shutdown` resumes and completes the stream once.
#[test]
fn poll_shutdown_resumes_after_pending_or_error_at_every_position() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(2) + 500, 6);
        // Polls made before shutdown, and in all (a clean run).
        let clean = |inner: ScriptedWriter| {
            let mut w = case.writer(inner);
            let mut pos = 0;
            while pos < plain.len() {
                match Pin::new(&mut w).poll_write(&mut cx(), &plain[pos..]) {
                    Poll::Ready(Ok(n)) => pos += n,
                    other => panic!("{other:?}"),
                }
            }
            w
        };
        let mut w = clean(ScriptedWriter::new().max_per_call(200));
        let before = w.get_ref().polls;
        assert!(matches!(
            Pin::new(&mut w).poll_shutdown(&mut cx()),
            Poll::Ready(Ok(()))
        ));
        let total = w.get_ref().polls;
        for at in before..total {
            for error in [false, true] {
                let inner = ScriptedWriter::new().max_per_call(200);
                let inner = if error {
                    inner.error_at(at, ErrorKind::BrokenPipe)
                } else {
                    inner.pending_at([at])
                };
                let mut w = clean(inner);
                let mut errors = 0;
                let mut spins = 0;
                loop {
                    spins += 1;
                    assert!(spins < 1000);
                    match Pin::new(&mut w).poll_shutdown(&mut cx()) {
                        Poll::Ready(Ok(())) => break,
                        Poll::Ready(Err(e)) => {
                            assert!(is_injected(&e), "{e:?}");
                            errors += 1;
                        }
                        Poll::Pending => {}
                    }
                }
                assert_eq!(errors, usize::from(error));
                let inner = w.get_ref();
                assert_eq!(inner.shut_at, Some(case.lay.stream_len(plain.len())));
                case.assert_stream(
                    &inner.output(),
                    &plain,
                    &format!("error {error} at shutdown poll {at}"),
                );
            }
        }
    }
}

/// `finish()` completes the stream and does not shut the inner writer
/// down: it returns the inner writer, which takes more bytes, and they
/// follow the stream. Over a scripted writer (Pendings and short writes)
/// and over a duplex whose other side reads exactly the stream (through
/// `take`) with the async reader, then the bytes after it.
#[tokio::test]
async fn finish_completes_without_shutting_down() {
    const TRAILER: &[u8] = b"protocol goes on after the stream";
    for case in Case::all(SEG) {
        for len in [0, case.lay.first + 1, case.lay.plain_before(3) + 7] {
            let plain = data(len, 7);
            let mut w = case.writer(ScriptedWriter::new().max_per_call(100).pending_every(3));
            w.write_all(&plain).await.unwrap();
            let mut inner = w.finish().await.unwrap();
            assert_eq!(
                inner.shutdowns,
                0,
                "{}: finish shut the writer down",
                case.name()
            );
            inner.write_all(TRAILER).await.unwrap();
            let out = inner.output();
            let ct_len = case.lay.stream_len(len);
            assert_eq!(out.len(), ct_len + TRAILER.len());
            case.assert_stream(&out[..ct_len], &plain, "finish");
            assert_eq!(&out[ct_len..], TRAILER);

            let (a, mut b) = tokio::io::duplex(64);
            let sender = {
                let case = case.clone();
                let plain = plain.clone();
                tokio::spawn(async move {
                    let mut w = case.writer(a);
                    w.write_all(&plain).await?;
                    let mut a = w.finish().await?;
                    a.write_all(TRAILER).await?;
                    a.shutdown().await?;
                    io::Result::Ok(())
                })
            };
            let recv = async {
                // The reader borrows the duplex (through `take`) only for
                // the stream; the bytes after it are read directly.
                let got = {
                    let mut r = case.reader(8192, (&mut b).take(ct_len as u64));
                    read_all(&mut r, 1000).await.unwrap()
                };
                let mut rest = Vec::new();
                b.read_to_end(&mut rest).await.unwrap();
                (got, rest)
            };
            let (got, rest) = timeout(GUARD, recv).await.expect("hang");
            timeout(GUARD, sender).await.unwrap().unwrap().unwrap();
            assert!(got == plain, "{}: duplex finish", case.name());
            assert_eq!(rest, TRAILER);
        }
    }
}

/// A writer dropped without `finish` or `shutdown` (after writing, after
/// flushing, or before any write) never completes the stream: what it
/// left decrypts, with the std and the async reader, to a prefix of the
/// plaintext and then `UnexpectedEof` (only whole sealed segments went
/// out), never a clean end; the async reader's error is sticky.
#[tokio::test]
async fn dropped_writer_never_completes_the_stream() {
    for case in Case::all(SEG) {
        for len in case.lengths() {
            for flush in [false, true] {
                let plain = data(len, 8);
                let inner = ScriptedWriter::new();
                let out = inner.handle();
                let mut w = case.writer(inner);
                w.write_all(&plain).await.unwrap();
                if flush {
                    w.flush().await.unwrap();
                }
                drop(w);
                let ct = out.lock().unwrap().clone();
                let what = format!("{}: {len} bytes, flush {flush}", case.name());
                assert!(
                    ct.len() < case.lay.stream_len(len),
                    "{what}: completed on drop"
                );

                let mut std_out = Vec::new();
                let e = case
                    .reader_builder(8192)
                    .build(&ct[..])
                    .read_to_end(&mut std_out)
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{what}: std: {e:?}");

                let mut r = case.reader(8192, &ct[..]);
                let (got, e) = read_until_error(&mut r, 1000).await;
                let e = e.unwrap_or_else(|| panic!("{what}: async reader: clean end"));
                assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{what}: async: {e:?}");
                assert!(plain.starts_with(&got), "{what}");
                assert_eq!(got, std_out, "{what}");
                assert_sticky(&mut r, &e).await;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// writer and reader over a runtime: duplex, copy, TCP, cancellation

/// Writer and reader in two tasks over a 7-byte duplex (nearly every call
/// is `Pending` on both sides): every length arrives exactly, small and
/// large, through the writer's `shutdown`.
#[tokio::test]
async fn duplex_with_a_tiny_buffer_round_trips() {
    for case in Case::all(SEG) {
        let mut lens = case.lengths();
        lens.push(150_000);
        for len in lens {
            let plain = data(len, 9);
            let (a, b) = tokio::io::duplex(7);
            let sender = {
                let case = case.clone();
                let plain = plain.clone();
                tokio::spawn(async move {
                    let mut w = case.writer(a);
                    for c in plain.chunks(1000) {
                        w.write_all(c).await?;
                    }
                    w.shutdown().await
                })
            };
            let mut r = case.reader(8192, b);
            let got = timeout(GUARD, read_all(&mut r, 3000))
                .await
                .expect("hang")
                .unwrap();
            timeout(GUARD, sender).await.unwrap().unwrap().unwrap();
            assert!(got == plain, "{}: {len} bytes over duplex(7)", case.name());
        }
    }
}

/// `tokio::io::copy` into the writer (it fails with `WriteZero` if
/// `poll_write` ever returns `Ok(0)`) and out of the reader; `copy_buf`
/// out of the reader through its `AsyncBufRead`.
#[tokio::test]
async fn tokio_io_copy_into_the_writer_and_out_of_the_reader() {
    for case in Case::all(SEG) {
        for len in [0, 5, case.lay.plain_before(2), 200_003] {
            for buffered in [false, true] {
                let plain = data(len, 10);
                let (a, b) = tokio::io::duplex(64);
                let sender = {
                    let case = case.clone();
                    let plain = plain.clone();
                    tokio::spawn(async move {
                        let mut w = case.writer(a);
                        let n = tokio::io::copy(&mut &plain[..], &mut w).await?;
                        assert_eq!(n, plain.len() as u64);
                        w.shutdown().await
                    })
                };
                let mut r = case.reader(4096, b);
                let mut got = Vec::new();
                let n = if buffered {
                    timeout(GUARD, tokio::io::copy_buf(&mut r, &mut got)).await
                } else {
                    timeout(GUARD, tokio::io::copy(&mut r, &mut got)).await
                }
                .expect("hang")
                .unwrap();
                timeout(GUARD, sender).await.unwrap().unwrap().unwrap();
                assert_eq!(n, len as u64);
                assert!(
                    got == plain,
                    "{}: {len} bytes, buffered {buffered}",
                    case.name()
                );
            }
        }
    }
}

async fn tcp_pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
    let client = client.unwrap();
    let (server, _) = accepted.unwrap();
    client.set_nodelay(true).unwrap();
    server.set_nodelay(true).unwrap();
    (client, server)
}

/// A real loopback TCP pair. First a ping-pong: the client seals exactly
/// one segment (`first + 1` bytes written, flushed) and waits for a reply;
/// the server must release that segment's plaintext without more input,
/// and answers over its own encrypted stream (one segment, flushed). Then
/// a large payload, the client's `shutdown` ending it; the server replies
/// with what it received re-encrypted and shuts down, and the client
/// reads it all.
#[tokio::test]
async fn tcp_pair_ping_pong_then_bulk() {
    for case in Case::all(SEG) {
        let (client, server) = tcp_pair().await;
        let plain = data(case.lay.first + 1 + 300_000, 11);
        let server_task = {
            let case = case.clone();
            let first = case.lay.first;
            tokio::spawn(async move {
                let (rd, wr) = server.into_split();
                let mut r = case.reader(64 * 1024, rd);
                let mut w = case.writer(wr);
                // The first segment: it must come without more input.
                let mut got = vec![0; first];
                r.read_exact(&mut got).await?;
                // The reply: those bytes and one more, so that exactly
                // one segment is sealed; flushed.
                w.write_all(&got).await?;
                w.write_all(b"!").await?;
                w.flush().await?;
                // The rest, then it goes back too.
                r.read_to_end(&mut got).await?;
                w.write_all(&got[first..]).await?;
                w.shutdown().await?;
                io::Result::Ok(got)
            })
        };
        let client_side = async {
            let (rd, wr) = client.into_split();
            let mut w = case.writer(wr);
            let mut r = case.reader(64 * 1024, rd);
            let first = case.lay.first;
            w.write_all(&plain[..=first]).await?;
            w.flush().await?;
            // Wait for the reply's first segment before sending more.
            let mut reply = vec![0; first];
            r.read_exact(&mut reply).await?;
            assert!(reply == plain[..first], "{}: reply", case.name());
            w.write_all(&plain[first + 1..]).await?;
            w.shutdown().await?;
            let mut echoed = Vec::new();
            r.read_to_end(&mut echoed).await?;
            io::Result::Ok((reply, echoed))
        };
        let (mut reply, echoed) = timeout(GUARD, client_side).await.expect("hang").unwrap();
        let received = timeout(GUARD, server_task).await.unwrap().unwrap().unwrap();
        assert!(received == plain, "{}: server received", case.name());
        // The reply stream: the first segment, "!", then the rest.
        reply.extend_from_slice(&echoed);
        let mut expect = plain[..case.lay.first].to_vec();
        expect.push(b'!');
        expect.extend_from_slice(&plain[case.lay.first..]);
        assert!(reply == expect, "{}: echoed", case.name());
    }
}

/// A peer that sends exactly the header and one full segment of
/// ciphertext and then waits for a reply gets that segment's plaintext:
/// the reader (64 KiB read-ahead, 64 KiB reads) does not wait to fill its
/// buffer. Over a duplex, the ciphertext written raw.
#[tokio::test]
async fn a_reader_waits_only_for_the_first_segment() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(4) + 99, 12);
        let ct = case.seal(&plain);
        let one = case.lay.seg_start(1);
        let (mut a, b) = tokio::io::duplex(256 * 1024);
        let (tx, mut rx) = mpsc::unbounded_channel::<usize>();
        let sender = tokio::spawn(async move {
            a.write_all(&ct[..one]).await?;
            // Wait (unfinished) until the reader has the segment.
            let got = timeout(GUARD, rx.recv())
                .await
                .expect("reader never got segment 0");
            a.write_all(&ct[one..]).await?;
            a.shutdown().await?;
            io::Result::Ok(got)
        });
        let mut r = case.reader(64 * 1024, b);
        let mut buf = vec![0; 64 * 1024];
        let mut out = Vec::new();
        while out.len() < case.lay.first {
            let n = timeout(GUARD, r.read(&mut buf))
                .await
                .expect("the reader waited for more than the first segment")
                .unwrap();
            assert!(n > 0);
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out.len(), case.lay.first, "{}", case.name());
        tx.send(out.len()).unwrap();
        out.extend(
            timeout(GUARD, read_all(&mut r, 5000))
                .await
                .unwrap()
                .unwrap(),
        );
        assert_eq!(sender.await.unwrap().unwrap(), Some(case.lay.first));
        assert!(out == plain, "{}", case.name());
    }
}

/// A raw ciphertext sender over a duplex that stops in the middle of each
/// segment: it writes half of segment k, reports the pause and waits to be
/// told to go on.
fn pausing_sender(
    ct: Vec<u8>,
    lay: Layout,
    mut a: tokio::io::DuplexStream,
) -> (
    mpsc::UnboundedReceiver<()>,
    mpsc::UnboundedSender<()>,
    tokio::task::JoinHandle<io::Result<usize>>,
) {
    let (paused_tx, paused_rx) = mpsc::unbounded_channel();
    let (resume_tx, mut resume_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut pos = 0;
        let mut pauses = 0;
        let mut k = 0;
        while pos < ct.len() {
            let end = (lay.seg_start(k + 1)).min(ct.len());
            let mid = if k == 0 {
                lay.header + lay.first / 2
            } else {
                (pos + end) / 2
            };
            a.write_all(&ct[pos..mid]).await?;
            paused_tx.send(()).unwrap();
            pauses += 1;
            resume_rx.recv().await.unwrap();
            a.write_all(&ct[mid..end]).await?;
            pos = end;
            k += 1;
        }
        a.shutdown().await?;
        Ok(pauses)
    });
    (paused_rx, resume_tx, task)
}

/// Read futures dropped by `tokio::time::timeout` while the sender is
/// stopped in the middle of a segment: after each, reading resumes and
/// the whole plaintext arrives, nothing lost, nothing repeated.
#[tokio::test]
async fn read_futures_dropped_by_timeout_mid_segment_lose_nothing() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(4) + 200, 13);
        let ct = case.seal(&plain);
        let (a, b) = tokio::io::duplex(1 << 20);
        let (mut paused, resume, sender) = pausing_sender(ct, case.lay, a);
        let mut r = case.reader(8192, b);
        let mut buf = vec![0; 3000];
        let mut out = Vec::new();
        let mut cancelled = 0;
        let run = async {
            loop {
                match timeout(Duration::from_millis(5), r.read(&mut buf)).await {
                    Ok(Ok(0)) => break,
                    Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                    Ok(Err(e)) => panic!("{}: {e:?}", case.name()),
                    Err(_elapsed) => {
                        // The read future was dropped. If the sender is
                        // paused mid-segment, let it go on.
                        if paused.try_recv().is_ok() {
                            cancelled += 1;
                            resume.send(()).unwrap();
                        }
                    }
                }
            }
        };
        timeout(GUARD, run).await.expect("hang");
        let pauses = sender.await.unwrap().unwrap();
        assert_eq!(cancelled, pauses, "{}", case.name());
        assert!(out == plain, "{}", case.name());
    }
}

/// Read futures dropped by `tokio::select!` (the "sender paused" branch
/// wins while the read waits for the rest of a segment): reading resumes
/// and the whole plaintext arrives.
#[tokio::test]
async fn read_futures_dropped_by_select_mid_segment_lose_nothing() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(4) + 200, 14);
        let ct = case.seal(&plain);
        let (a, b) = tokio::io::duplex(1 << 20);
        let (mut paused, resume, sender) = pausing_sender(ct, case.lay, a);
        let mut r = case.reader(8192, b);
        let mut buf = vec![0; 700];
        let mut out = Vec::new();
        let mut cancelled = 0;
        let run = async {
            loop {
                tokio::select! {
                    biased;
                    res = r.read(&mut buf) => match res {
                        Ok(0) => break,
                        Ok(n) => out.extend_from_slice(&buf[..n]),
                        Err(e) => panic!("{}: {e:?}", case.name()),
                    },
                    Some(()) = paused.recv() => {
                        cancelled += 1;
                        resume.send(()).unwrap();
                    }
                }
            }
        };
        timeout(GUARD, run).await.expect("hang");
        let pauses = sender.await.unwrap().unwrap();
        assert_eq!(cancelled, pauses, "{}", case.name());
        assert!(out == plain, "{}", case.name());
    }
}

/// Write, flush and shutdown futures dropped while the inner duplex is
/// full: the collecting side reads only when the writer has given up a
/// future (one token per cancellation), so every `Pending` write is
/// cancelled, by `select!` or by `timeout`. The bytes collected are
/// exactly the stream: nothing sealed twice, nothing lost.
#[tokio::test]
async fn write_flush_and_shutdown_futures_dropped_mid_segment_seal_once() {
    for case in Case::all(SEG) {
        for use_select in [true, false] {
            let plain = data(case.lay.plain_before(3) + 77, 15);
            let (a, mut b) = tokio::io::duplex(256);
            let (token_tx, mut token_rx) = mpsc::unbounded_channel::<()>();
            let collector = tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0; 256];
                while token_rx.recv().await.is_some() {
                    let n = b.read(&mut buf).await?;
                    got.extend_from_slice(&buf[..n]);
                }
                b.read_to_end(&mut got).await?;
                io::Result::Ok(got)
            });
            let mut w = case.writer(a);
            let mut cancelled = 0;
            let mut cancel = || {
                cancelled += 1;
                token_tx.send(()).unwrap();
            };
            let mut pos = 0;
            while pos < plain.len() {
                let end = (pos + 500).min(plain.len());
                let chunk = &plain[pos..end];
                let done = if use_select {
                    tokio::select! {
                        biased;
                        r = w.write(chunk) => Some(r),
                        () = tokio::task::yield_now() => None,
                    }
                } else {
                    timeout(Duration::from_millis(2), w.write(chunk)).await.ok()
                };
                match done {
                    Some(r) => {
                        let n = r.unwrap();
                        assert!(n > 0, "write returned Ok(0)");
                        pos += n;
                    }
                    None => cancel(),
                }
                // Now and then a flush, also cancelled while blocked.
                if pos.is_multiple_of(3) {
                    loop {
                        match timeout(Duration::from_millis(2), w.flush()).await {
                            Ok(r) => break r.unwrap(),
                            Err(_) => cancel(),
                        }
                    }
                }
            }
            loop {
                let done = if use_select {
                    tokio::select! {
                        biased;
                        r = w.shutdown() => Some(r),
                        () = tokio::task::yield_now() => None,
                    }
                } else {
                    timeout(Duration::from_millis(2), w.shutdown()).await.ok()
                };
                match done {
                    Some(r) => break r.unwrap(),
                    None => cancel(),
                }
            }
            drop(w);
            drop(token_tx);
            let ct = timeout(GUARD, collector).await.unwrap().unwrap().unwrap();
            assert!(cancelled > 0, "{}: no future was cancelled", case.name());
            case.assert_stream(
                &ct,
                &plain,
                &format!("select {use_select}: {cancelled} futures dropped"),
            );
        }
    }
}

/// A writer task that panics, or is aborted, after sending two whole
/// segments (flushed): its writer is dropped unfinished and the reader
/// gets those segments' plaintext, then `UnexpectedEof` (sticky), never a
/// clean end. Aborted at an arbitrary point while streaming over a tiny
/// duplex: an error too, never `Ok(0)`.
#[tokio::test]
async fn writer_task_panic_or_abort_leaves_the_reader_with_unexpected_eof() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(3), 16);
        let two = case.lay.plain_before(2);
        for abort in [false, true] {
            let (a, b) = tokio::io::duplex(64 * 1024);
            let (tx, mut rx) = mpsc::unbounded_channel::<()>();
            let task = {
                let case = case.clone();
                let plain = plain.clone();
                tokio::spawn(async move {
                    let mut w = case.writer(a);
                    w.write_all(&plain[..=two]).await.unwrap();
                    w.flush().await.unwrap();
                    tx.send(()).unwrap();
                    if abort {
                        std::future::pending::<()>().await;
                    }
                    panic!("writer task fails mid-stream (expected by the test)");
                })
            };
            let mut r = case.reader(8192, b);
            let mut got = vec![0; two];
            timeout(GUARD, r.read_exact(&mut got))
                .await
                .unwrap()
                .unwrap();
            assert!(got == plain[..two]);
            timeout(GUARD, rx.recv()).await.unwrap();
            if abort {
                task.abort();
            }
            let join = timeout(GUARD, task).await.unwrap().unwrap_err();
            assert_eq!(join.is_panic(), !abort);
            assert_eq!(join.is_cancelled(), abort);
            let (rest, e) = timeout(GUARD, read_until_error(&mut r, 4096))
                .await
                .unwrap();
            let e = e.unwrap_or_else(|| panic!("{}: clean end", case.name()));
            assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{}: {e:?}", case.name());
            assert!(rest.is_empty());
            assert_sticky(&mut r, &e).await;
        }

        // Aborted at an arbitrary point of a long stream.
        let (a, b) = tokio::io::duplex(7);
        let task = {
            let case = case.clone();
            tokio::spawn(async move {
                let mut w = case.writer(a);
                let chunk = data(999, 17);
                loop {
                    w.write_all(&chunk).await.unwrap();
                }
            })
        };
        let mut r = case.reader(8192, b);
        let mut buf = vec![0; 999];
        let mut got = 0;
        while got < 5 * SEG {
            let n = timeout(GUARD, r.read(&mut buf)).await.unwrap().unwrap();
            assert!(n > 0);
            got += n;
        }
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        let res = timeout(GUARD, read_all(&mut r, 999)).await.unwrap();
        let e = res.expect_err("an aborted stream read to a clean end");
        assert_incomplete(&e, &case.name());
        assert_sticky(&mut r, &e).await;
    }
}

// ---------------------------------------------------------------------------
// reader: cancel safety, errors, counts

/// `Pending` at every poll position of the inner reader (which delivers
/// 37 bytes a call), and `Pending` on every second or third poll: the
/// caller changes its buffer after every `Pending` (a dropped read
/// future); no byte is lost or repeated and no unauthenticated plaintext
/// reaches a caller's buffer.
#[test]
fn reads_resume_after_pending_at_every_poll_position() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(3) + 123, 18);
        let ct = case.seal(&plain);
        let sizes = [5000, 1, 700, 64 * 1024];
        let mut r = case.reader(4096, ScriptedReader::new(ct.clone()).max_per_call(37));
        let clean = read_by_hand(&mut r, &sizes, &plain);
        assert!(
            clean.out == plain && clean.errors.is_empty(),
            "{}",
            case.name()
        );
        let polls = r.get_ref().polls;
        for at in 0..polls {
            let inner = ScriptedReader::new(ct.clone())
                .max_per_call(37)
                .pending_at([at]);
            let mut r = case.reader(4096, inner);
            let run = read_by_hand(&mut r, &sizes, &plain);
            assert!(run.errors.is_empty(), "{:?}", run.errors);
            assert!(run.out == plain, "{}: Pending at poll {at}", case.name());
            assert!(run.pendings <= 1, "{}: Pending at poll {at}", case.name());
        }
        for every in [2, 3] {
            for max in [1, 37, 5000] {
                let inner = ScriptedReader::new(ct.clone())
                    .max_per_call(max)
                    .pending_every(every);
                let mut r = case.reader(4096, inner);
                let run = read_by_hand(&mut r, &sizes, &plain);
                assert!(run.errors.is_empty(), "{:?}", run.errors);
                assert!(
                    run.out == plain,
                    "{}: every {every}, max {max}",
                    case.name()
                );
            }
        }
    }
}

/// An inner error at every poll position passes through unchanged (same
/// kind, same message: not the crate's) exactly once, and the next read
/// resumes: the whole plaintext arrives.
#[test]
fn inner_read_errors_pass_through_and_the_next_poll_resumes() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(3) + 5, 19);
        let ct = case.seal(&plain);
        let sizes = [3000, 64 * 1024, 10];
        let mut r = case.reader(2048, ScriptedReader::new(ct.clone()).max_per_call(300));
        read_by_hand(&mut r, &sizes, &plain);
        let polls = r.get_ref().polls;
        for at in 0..polls {
            for kind in [ErrorKind::ConnectionReset, ErrorKind::Interrupted] {
                let inner = ScriptedReader::new(ct.clone())
                    .max_per_call(300)
                    .error_at(at, kind);
                let mut r = case.reader(2048, inner);
                let run = read_by_hand(&mut r, &sizes, &plain);
                let what = format!("{}: {kind:?} at poll {at}", case.name());
                // ConnectionReset must come through; Interrupted may also
                // be retried inside (it is the one kind callers retry).
                if kind == ErrorKind::Interrupted {
                    assert!(run.errors.len() <= 1, "{what}: {:?}", run.errors);
                } else {
                    assert_eq!(run.errors.len(), 1, "{what}: {:?}", run.errors);
                }
                for e in &run.errors {
                    assert_eq!(e.kind(), kind, "{what}");
                    assert!(Error::from_io(e).is_none(), "{what}");
                }
                assert!(run.out == plain, "{what}");
            }
        }
    }
}

/// Errors are sticky and release nothing unauthenticated: a flipped bit
/// in segment 1, a stream cut at a segment boundary, cut inside a segment,
/// bytes after the final segment, wrong associated data. The reader
/// releases only the plaintext of the segments before the damage (with
/// 64 KiB reads over a fully available input, so that a careless front
/// would decrypt the damaged segment into the caller's buffer), then an
/// error of the right kind, then the same error on every later read and
/// `fill_buf`, never `Ok(0)`.
#[tokio::test]
async fn reader_errors_are_sticky_and_release_nothing_unauthenticated() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(4) + 50, 20);
        let ct = case.seal(&plain);
        let l = case.lay;
        let mut flipped = ct.clone();
        flipped[l.seg_start(1) + 10] ^= 1;
        let mut trailing = ct.clone();
        trailing.extend_from_slice(b"junk");
        let variants: Vec<(&str, Vec<u8>, usize, ErrorKind)> = vec![
            (
                "bit flipped in segment 1",
                flipped,
                l.plain_before(1),
                ErrorKind::InvalidData,
            ),
            (
                "cut after segment 2",
                ct[..l.seg_start(2)].to_vec(),
                l.plain_before(2),
                ErrorKind::UnexpectedEof,
            ),
            (
                "cut inside segment 2",
                ct[..l.seg_start(2) + 100].to_vec(),
                l.plain_before(2),
                ErrorKind::InvalidData,
            ),
            (
                "trailing bytes",
                trailing,
                plain.len(),
                ErrorKind::InvalidData,
            ),
        ];
        for (what, bad, good, kind) in variants {
            for max in [usize::MAX, 777] {
                let what = format!("{}: {what}, {max} per inner call", case.name());
                let mut r = case.reader(
                    64 * 1024,
                    ScriptedReader::new(bad.clone()).max_per_call(max),
                );
                let run = read_by_hand(&mut r, &[64 * 1024, 100], &plain);
                assert_eq!(run.errors.len(), 1, "{what}: {run:?}");
                let e = &run.errors[0];
                assert_eq!(e.kind(), kind, "{what}: {e:?}");
                assert!(Error::from_io(e).is_some(), "{what}: not a cipherio error");
                assert!(run.out.len() <= good, "{what}: released {}", run.out.len());
                assert!(plain.starts_with(&run.out), "{what}");
                let e = io::Error::new(e.kind(), e.to_string());
                assert_sticky(&mut r, &e).await;
            }
        }
        // Wrong associated data: an authentication error, sticky.
        let mut other = case.clone();
        other.aad = b"other".to_vec();
        let mut r = other.reader(8192, &ct[..]);
        let e = read_all(&mut r, 1000).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert_eq!(
            Error::from_io(&e),
            Some(&Error::Authentication),
            "{}",
            case.name()
        );
        assert_sticky(&mut r, &e).await;
    }
}

/// The reader's `max_segment_size` reaches the async front: a native
/// header asking for larger segments is refused before any allocation.
#[tokio::test]
async fn max_segment_size_applies_to_the_async_reader() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
    w.write_all(&data(10_000, 21)).unwrap();
    let ct = w.finish().unwrap();
    for &p in Provider::ALL {
        let mut r = CipherReader::builder(&key)
            .max_segment_size(4095)
            .provider(p)
            .build_async(&ct[..]);
        let e = read_all(&mut r, 1000).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(
            matches!(Error::from_io(&e), Some(Error::SegmentTooLarge { .. })),
            "{e:?}"
        );
        assert_sticky(&mut r, &e).await;
    }
}

/// Drives a std `CipherReader` over `inner` with `bufsize`-byte reads.
fn std_reads(b: ReaderBuilder, inner: ScriptedReader, bufsize: usize) -> (Vec<u8>, ScriptedReader) {
    let mut r = b.build(inner);
    let mut out = Vec::new();
    let mut buf = vec![0; bufsize];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    (out, r.into_inner())
}

/// Coalescing and counts are the std reader's: over a fully available
/// ciphertext (and over inners that deliver one sealed segment, or 7
/// bytes, per call), for several read-ahead and read sizes, the async
/// reader makes exactly as many inner `poll_read` calls as the std reader
/// makes inner `read` calls over the same bytes.
#[test]
fn inner_polls_equal_the_std_readers_inner_reads() {
    for case in Case::all(SEG) {
        let l = case.lay;
        let plain = data(l.plain_before(6) + 321, 22);
        let ct = case.seal(&plain);
        let mut per_segment = vec![l.seg_start(1)];
        per_segment.extend(std::iter::repeat_n(l.rest + TAG_LEN, 7));
        let make = |how: &str| match how {
            "all at once" => ScriptedReader::new(ct.clone()),
            "one segment a call" => ScriptedReader::new(ct.clone()).chunks(per_segment.clone()),
            _ => ScriptedReader::new(ct.clone()).max_per_call(7),
        };
        for how in ["all at once", "one segment a call", "7 bytes a call"] {
            for rcap in [SEG, 8192, 65536] {
                for bufsize in [1, 100, SEG, 65536] {
                    let (std_out, std_inner) =
                        std_reads(case.reader_builder(rcap), make(how), bufsize);
                    assert!(std_out == plain);
                    let mut r = case.reader(rcap, make(how));
                    let run = read_by_hand(&mut r, &[bufsize], &plain);
                    assert!(run.out == plain && run.errors.is_empty(), "{run:?}");
                    let what = format!(
                        "{}: {how}, read-ahead {rcap}, {bufsize}-byte reads",
                        case.name()
                    );
                    assert_eq!(
                        r.get_ref().polls,
                        std_inner.polls,
                        "{what}: async inner polls vs std inner reads"
                    );
                    assert_eq!(r.get_ref().pendings, 0);
                }
            }
        }
    }
}

/// All segments delivered by one inner call come out without a second
/// poll (the read-ahead holds the whole stream); with one sealed segment
/// per inner call, segment i's plaintext is out after exactly i + 1
/// polls: a read never waits for more than the first segment it works on.
#[test]
fn coalesced_segments_need_no_second_poll_and_reads_wait_for_one_segment() {
    for case in Case::all(SEG) {
        let l = case.lay;
        let n = 6;
        let plain = data(l.plain_before(n), 23);
        let ct = case.seal(&plain);
        assert_eq!(ct.len(), l.seg_start(n));
        for bufsize in [1, 100, SEG, 64 * 1024] {
            // Everything in one call: the first n - 1 segments (and the
            // last one, full-length, too) without a second poll.
            let mut r = case.reader(64 * 1024, ScriptedReader::new(ct.clone()));
            let mut out = Vec::new();
            let mut buf = vec![0; bufsize];
            while out.len() < l.plain_before(n - 1) {
                match poll_read_once(&mut r, &mut buf) {
                    Poll::Ready(Ok(k)) if k > 0 => out.extend_from_slice(&buf[..k]),
                    other => panic!("{other:?}"),
                }
                assert_eq!(r.get_ref().polls, 1, "{}: buf {bufsize}", case.name());
            }

            // One sealed segment per inner call.
            let mut chunks = vec![l.seg_start(1)];
            chunks.extend(std::iter::repeat_n(l.rest + TAG_LEN, n - 1));
            let inner = ScriptedReader::new(ct.clone()).chunks(chunks);
            let mut r = case.reader(64 * 1024, inner);
            let mut out = Vec::new();
            for k in 0..n {
                while out.len() < l.plain_before(k + 1) {
                    match poll_read_once(&mut r, &mut buf) {
                        Poll::Ready(Ok(got)) if got > 0 => out.extend_from_slice(&buf[..got]),
                        other => panic!("{}: segment {k}: {other:?}", case.name()),
                    }
                    assert_eq!(
                        r.get_ref().polls,
                        k + 1,
                        "{}: segment {k}, buf {bufsize}",
                        case.name()
                    );
                }
                assert_eq!(out.len(), l.plain_before(k + 1));
            }
            assert!(matches!(
                poll_read_once(&mut r, &mut buf),
                Poll::Ready(Ok(0))
            ));
            assert!(out == plain);
        }
    }
}

// ---------------------------------------------------------------------------
// AsyncBufRead

fn text(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("line {i}: {}\n", "abcdefghij".repeat(i % 23)))
        .collect()
}

/// `lines()` and `read_line` over a plaintext of text lines crossing
/// segment boundaries, through an inner reader that is `Pending` on every
/// second poll and delivers 33 bytes a call.
#[tokio::test]
async fn buf_read_lines_over_segment_boundaries() {
    for case in Case::all(SEG) {
        let plain = text(300);
        let ct = case.seal(plain.as_bytes());
        let inner = ScriptedReader::new(ct.clone())
            .max_per_call(33)
            .pending_every(2);
        let mut lines = case.reader(4096, inner).lines();
        let mut got = Vec::new();
        while let Some(line) = timeout(GUARD, lines.next_line()).await.unwrap().unwrap() {
            got.push(line);
        }
        let expect: Vec<&str> = plain.lines().collect();
        assert_eq!(got, expect, "{}", case.name());

        let mut r = case.reader(100, ScriptedReader::new(ct).max_per_call(1000));
        let mut all = String::new();
        let mut line = String::new();
        while r.read_line(&mut line).await.unwrap() > 0 {
            assert!(line.ends_with('\n'));
            all.push_str(&line);
            line.clear();
        }
        assert_eq!(all, plain);
    }
}

/// `poll_fill_buf` / `consume` by hand, with `Pending`s: each filled
/// buffer is non-empty and continues the plaintext; consuming part of it
/// leaves the rest for the next call; `poll_read` after a partial consume
/// goes on from there; at the end `fill_buf` is empty, twice.
#[test]
fn poll_fill_buf_and_consume_continue_the_plaintext() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(3) + 400, 24);
        let ct = case.seal(&plain);
        for every in [0, 2] {
            let inner = ScriptedReader::new(ct.clone()).max_per_call(200);
            let inner = if every > 0 {
                inner.pending_every(every)
            } else {
                inner
            };
            let mut r = case.reader(1000, inner);
            let mut out = Vec::new();
            let mut turn = 0usize;
            let mut spins = 0;
            loop {
                spins += 1;
                assert!(spins < 1_000_000);
                turn += 1;
                if turn.is_multiple_of(3) {
                    // A read between buffered calls.
                    let mut buf = [0; 50];
                    match poll_read_once(&mut r, &mut buf) {
                        Poll::Ready(Ok(n)) => out.extend_from_slice(&buf[..n]),
                        Poll::Ready(Err(e)) => panic!("{e:?}"),
                        Poll::Pending => {}
                    }
                    continue;
                }
                let avail = match Pin::new(&mut r).poll_fill_buf(&mut cx()) {
                    Poll::Ready(Ok(b)) => b.to_vec(),
                    Poll::Ready(Err(e)) => panic!("{}: {e:?}", case.name()),
                    Poll::Pending => continue,
                };
                if avail.is_empty() {
                    break;
                }
                assert!(
                    plain[out.len()..].starts_with(&avail),
                    "{}: fill_buf at {} is not the plaintext",
                    case.name(),
                    out.len()
                );
                let take = avail.len().min(1 + turn % 97);
                out.extend_from_slice(&avail[..take]);
                Pin::new(&mut r).consume(take);
            }
            assert!(out == plain, "{}: every {every}", case.name());
            for _ in 0..2 {
                match Pin::new(&mut r).poll_fill_buf(&mut cx()) {
                    Poll::Ready(Ok(b)) => assert!(b.is_empty()),
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

/// A future that is polled once, by hand, then dropped: used to make sure
/// `AsyncCipherWriter::finish` is a future that can be dropped when
/// `Pending` without harm to the inner writer (nothing completes).
#[tokio::test]
async fn a_dropped_finish_future_does_not_complete_the_stream() {
    for case in Case::all(SEG) {
        let plain = data(case.lay.plain_before(2) + 3, 25);
        // Pending on every poll from the first one after the writes.
        let inner = ScriptedWriter::new();
        let out = inner.handle();
        let mut w = case.writer(inner);
        w.write_all(&plain).await.unwrap();
        let before = w.get_ref().polls;
        w.get_mut().add_pending_at(before..before + 1000);
        {
            let mut fut = pin!(w.finish());
            assert!(fut.as_mut().poll(&mut cx()).is_pending());
        }
        let ct = out.lock().unwrap().clone();
        assert!(
            ct.len() < case.lay.stream_len(plain.len()),
            "{}",
            case.name()
        );
        let e = case.open_std(&ct).unwrap_err();
        assert_incomplete(&e, &case.name());
    }
}
