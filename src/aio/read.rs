//! `AsyncCipherReader`: the tokio `AsyncRead`/`AsyncBufRead` front over the
//! [`Opener`] engine.

use std::fmt;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, ReadBuf};

use crate::core::opener::{Opener, Step};
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
            engine: self.engine(false),
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

    /// Moves the inner reader to `pos` and returns where it is, one inner
    /// seek at a time (resumed, not restarted, after `Pending`).
    fn poll_inner_seek(&mut self, cx: &mut Context<'_>, pos: SeekFrom) -> Poll<io::Result<u64>> {
        let s = self
            .seeker
            .as_mut()
            .unwrap_or_else(|| unreachable!("asked only after a seek or a length query"));
        if s.in_flight != Some(pos) {
            if s.in_flight.is_some() {
                // A different seek was left in flight by a dropped future:
                // finish it first.
                ready!((s.complete)(Pin::new(&mut self.inner), cx))?;
            }
            (s.start)(Pin::new(&mut self.inner), pos)?;
            s.in_flight = Some(pos);
        }
        let at = ready!((s.complete)(Pin::new(&mut self.inner), cx));
        s.in_flight = None;
        Poll::Ready(at)
    }

    /// Answers a step that moves or measures the inner reader.
    fn poll_seek_step(&mut self, cx: &mut Context<'_>, step: &Step) -> Poll<io::Result<()>> {
        let base = ready!(self.poll_base(cx))?;
        let pos = self.engine.inner_seek_for(step, base)?;
        let result = ready!(self.poll_inner_seek(cx, pos));
        self.engine.inner_sought(step, base, result)?;
        Poll::Ready(Ok(()))
    }

    /// Where the stream starts in the inner reader (asked once).
    fn poll_base(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        if let Some(b) = self.seeker.as_ref().and_then(|s| s.base) {
            return Poll::Ready(Ok(b));
        }
        let at = ready!(self.poll_inner_seek(cx, SeekFrom::Current(0)))?;
        let base = self.engine.stream_base(at)?;
        if let Some(s) = self.seeker.as_mut() {
            s.base = Some(base);
        }
        Poll::Ready(Ok(base))
    }

    /// Reads into the read-ahead the engine offers.
    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut room = ReadBuf::new(self.engine.room()?);
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut room))?;
        let n = room.filled().len();
        self.engine.filled(n);
        Poll::Ready(Ok(()))
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for AsyncCipherReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut fresh = true;
        loop {
            match this.engine.read(buf.initialize_unfilled(), fresh)? {
                Step::Done(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Step::Read => ready!(this.poll_inner(cx))?,
                Step::Window => unreachable!("the async front shows no inner buffer"),
                step => ready!(this.poll_seek_step(cx, &step))?,
            }
            fresh = false;
        }
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
        loop {
            match self.engine.length()? {
                Step::Done(_) => {
                    return Poll::Ready(Ok(self
                        .engine
                        .auth_len()
                        .unwrap_or_else(|| unreachable!("the query ends with a length"))));
                }
                Step::Read => ready!(self.poll_inner(cx))?,
                Step::Window => unreachable!("the async front shows no inner buffer"),
                step => ready!(self.poll_seek_step(cx, &step))?,
            }
        }
    }

    /// Carries out the seek to `pos` asked with `start_seek`.
    fn poll_requested(&mut self, cx: &mut Context<'_>, pos: SeekFrom) -> Poll<io::Result<u64>> {
        ready!(self.poll_base(cx))?;
        if let SeekFrom::End(_) = pos {
            ready!(self.poll_len(cx))?;
        }
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
        let mut fresh = true;
        loop {
            match this.engine.fill(fresh)? {
                Step::Done(_) => return Poll::Ready(Ok(this.engine.buffered())),
                Step::Read => ready!(this.poll_inner(cx))?,
                Step::Window => unreachable!("the async front shows no inner buffer"),
                step => ready!(this.poll_seek_step(cx, &step))?,
            }
            fresh = false;
        }
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
