//! `AsyncCipherReader`: the tokio `AsyncRead`/`AsyncBufRead` front over the
//! [`Opener`] engine.

use std::fmt;
use std::io::{self, Read, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, ReadBuf};

use super::sync::SyncIo;
use crate::core::opener::Opener;
use crate::core::step::Step;
use crate::drive::read::{self as drive, Source};
use crate::{CipherReader, Provider, ReaderBuilder, StreamKey};

/// Decrypts a cipherio stream read from an [`AsyncRead`]: the async twin
/// of [`CipherReader`], same format, options, errors, read-ahead and inner
/// call counts. Plaintext is released only after its segment
/// authenticated; errors are sticky; a read future dropped at any point
/// loses nothing.
pub struct AsyncCipherReader<R> {
    engine: Opener,
    /// Set by the first seek or length query, where `R: AsyncSeek` is
    /// known.
    seeker: Option<Seeker<R>>,
    /// A seek asked with `start_seek`, carried out by `poll_complete`.
    requested: Option<SeekFrom>,
    inner: R,
}

type StartSeek<R> = fn(Pin<&mut R>, SeekFrom) -> io::Result<()>;
type PollSeek<R> = fn(Pin<&mut R>, &mut Context<'_>) -> Poll<io::Result<u64>>;

/// The inner reader's `AsyncSeek`, captured where the bound is known, the
/// inner offset where the stream starts, and the inner seek in flight (so
/// that a dropped future's seek is completed, never started twice).
struct Seeker<R> {
    start: StartSeek<R>,
    complete: PollSeek<R>,
    base: Option<u64>,
    in_flight: Option<SeekFrom>,
}

impl ReaderBuilder {
    /// The async reader over `inner` (feature `tokio`). Does no I/O.
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn build_async<R: AsyncRead + Unpin>(self, inner: R) -> AsyncCipherReader<R> {
        AsyncCipherReader {
            // A read beside the ring would be a poll whose wake-up the
            // caller never asked for: the async front does not prefetch.
            engine: self.engine(false).with_prefetch(false),
            seeker: None,
            requested: None,
            inner,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncCipherReader<R> {
    /// A reader with the default 8 KiB read-ahead and no associated data.
    pub fn new<K: StreamKey>(key: &K, inner: R) -> Self {
        CipherReader::builder(key).build_async(inner)
    }

    /// A reader that asks the inner reader for `capacity` bytes at a time.
    pub fn with_capacity<K: StreamKey>(capacity: usize, key: &K, inner: R) -> Self {
        CipherReader::builder(key)
            .capacity(capacity)
            .build_async(inner)
    }

    /// The configured read-ahead.
    pub fn capacity(&self) -> usize {
        self.engine.capacity()
    }

    /// Which library opens this stream's segments.
    pub fn provider(&self) -> Provider {
        self.engine.provider()
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader. Reading from it directly corrupts the stream.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader. Read-ahead ciphertext and undelivered plaintext
    /// are lost (and the plaintext wiped).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The engine and, borrowed beside it, what answers its steps in this
    /// poll.
    fn parts<'a, 'b>(&'a mut self, cx: &'a mut Context<'b>) -> (&'a mut Opener, Inner<'a, 'b, R>) {
        let inner = Inner {
            io: SyncIo::new(&mut self.inner, cx),
            seeker: &mut self.seeker,
        };
        (&mut self.engine, inner)
    }
}

/// The inner reader, the task's context and the seek state: the [`Source`]
/// the read loop drives, for one poll.
struct Inner<'a, 'b, R> {
    io: SyncIo<'a, 'b, R>,
    seeker: &'a mut Option<Seeker<R>>,
}

impl<R: Unpin> Inner<'_, '_, R> {
    /// Moves the inner reader to `pos` and returns where it is, one inner
    /// seek at a time (resumed, not restarted, after `Pending`).
    fn poll_inner_seek(&mut self, pos: SeekFrom) -> Poll<io::Result<u64>> {
        let s = self
            .seeker
            .as_mut()
            .unwrap_or_else(|| unreachable!("asked only after a seek or a length query"));
        let (inner, cx) = (&mut *self.io.io, &mut *self.io.cx);
        if s.in_flight != Some(pos) {
            if s.in_flight.is_some() {
                // A different seek was left in flight by a dropped future:
                // finish it first.
                ready!((s.complete)(Pin::new(&mut *inner), cx))?;
            }
            (s.start)(Pin::new(&mut *inner), pos)?;
            s.in_flight = Some(pos);
        }
        let at = ready!((s.complete)(Pin::new(inner), cx));
        s.in_flight = None;
        Poll::Ready(at)
    }

    /// Where the stream starts in the inner reader (asked once).
    fn base(&mut self, engine: &Opener) -> io::Result<u64> {
        if let Some(b) = self.seeker.as_ref().and_then(|s| s.base) {
            return Ok(b);
        }
        let poll = self.poll_inner_seek(SeekFrom::Current(0));
        let at = self.io.block(poll)?;
        let base = engine.stream_base(at)?;
        if let Some(s) = self.seeker.as_mut() {
            s.base = Some(base);
        }
        Ok(base)
    }
}

impl<R: AsyncRead + Unpin> Source for Inner<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read(buf)
    }

    fn window(&mut self, _: &mut Opener, _: &mut [u8]) -> io::Result<usize> {
        unreachable!("the async front shows no inner buffer")
    }

    fn seek(&mut self, engine: &mut Opener, step: &Step) -> io::Result<()> {
        let base = self.base(engine)?;
        let pos = engine.inner_seek_for(step, base)?;
        // The inner seek's own result, error or not, is the engine's to
        // judge; only `Pending` stops here.
        let result = match self.poll_inner_seek(pos) {
            Poll::Ready(result) => result,
            Poll::Pending => return self.io.block(Poll::Pending),
        };
        engine.inner_sought(step, base, result)?;
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for AsyncCipherReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let (engine, mut inner) = self.get_mut().parts(cx);
        let read = drive::read(engine, &mut inner, buf.initialize_unfilled());
        let n = ready!(inner.io.settle(read))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<R: AsyncRead + AsyncSeek + Unpin> AsyncCipherReader<R> {
    /// The authenticated plaintext length, as
    /// [`CipherReader::plaintext_len`]: the final segment is opened (once;
    /// cached), never trusted from the source's raw length.
    ///
    /// # Errors
    ///
    /// The stream's typed errors (sticky), and the inner reader's.
    pub async fn plaintext_len(&mut self) -> io::Result<u64> {
        std::future::poll_fn(|cx| self.poll_len(cx)).await
    }

    fn poll_len(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        self.seekable();
        let (engine, mut inner) = self.parts(cx);
        let len = drive::length(engine, &mut inner);
        inner.io.settle(len)
    }

    /// Carries out the seek to `pos` asked with `start_seek`.
    fn poll_requested(&mut self, cx: &mut Context<'_>, pos: SeekFrom) -> Poll<io::Result<u64>> {
        let (engine, mut inner) = self.parts(cx);
        let ready = inner.base(engine).and_then(|_| match pos {
            SeekFrom::End(_) => drive::length(engine, &mut inner).map(drop),
            _ => Ok(()),
        });
        ready!(inner.io.settle(ready))?;
        let target = self.engine.seek_target(pos)?;
        self.engine.seek_to(target)?;
        Poll::Ready(Ok(target))
    }

    fn seekable(&mut self) {
        if self.seeker.is_none() {
            self.seeker = Some(Seeker {
                start: <R as AsyncSeek>::start_seek,
                complete: <R as AsyncSeek>::poll_complete,
                base: None,
                in_flight: None,
            });
        }
    }
}

/// Random access in plaintext offsets, as [`CipherReader`]'s `Seek` (the
/// same engine steps): a seek costs nothing until the next read, which
/// opens exactly the segment holding the position; `SeekFrom::End` uses
/// [`plaintext_len`](AsyncCipherReader::plaintext_len).
impl<R: AsyncRead + AsyncSeek + Unpin> AsyncSeek for AsyncCipherReader<R> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        this.seekable();
        this.requested = Some(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        let Some(pos) = this.requested else {
            return Poll::Ready(Ok(this.engine.position()));
        };
        // The seek asked is forgotten once it completes, an error too: a
        // seek that failed did not happen, and tokio's next seek (which
        // first completes any seek still in flight) must not carry it out.
        let done = ready!(this.poll_requested(cx, pos));
        this.requested = None;
        Poll::Ready(done)
    }
}

impl<R: AsyncRead + Unpin> AsyncBufRead for AsyncCipherReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        let (engine, mut inner) = this.parts(cx);
        let filled = drive::fill(engine, &mut inner);
        ready!(inner.io.settle(filled))?;
        Poll::Ready(Ok(this.engine.buffered()))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().engine.consume(amt);
    }
}

impl<R: fmt::Debug> fmt::Debug for AsyncCipherReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncCipherReader")
            .field("inner", &self.inner)
            .field("capacity", &self.engine.capacity())
            .field("provider", &self.engine.provider())
            .field("stage", &self.engine.stage_name())
            .field("read_ahead", &self.engine.read_ahead())
            .field("buffered", &self.engine.buffered().len())
            .finish()
    }
}
