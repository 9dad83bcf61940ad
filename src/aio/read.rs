//! `AsyncCipherReader`: the tokio `AsyncRead`/`AsyncBufRead` front over the
//! [`Opener`] engine.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

use crate::core::opener::{Opener, Step};
use crate::{CipherReader, Provider, ReaderBuilder, StreamKey};

/// Decrypts a cipherio stream read from an [`AsyncRead`]: the async twin
/// of [`CipherReader`], same format, options, errors, read-ahead and inner
/// call counts. Plaintext is released only after its segment
/// authenticated; errors are sticky; a read future dropped at any point
/// loses nothing.
pub struct AsyncCipherReader<R> {
    engine: Opener,
    inner: R,
}

impl ReaderBuilder {
    /// The async reader over `inner` (feature `tokio`). Does no I/O.
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn build_async<R: AsyncRead + Unpin>(self, inner: R) -> AsyncCipherReader<R> {
        AsyncCipherReader {
            engine: self.engine(false),
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
                step => unreachable!(
                    "the async front neither shows nor seeks its inner reader: {step:?}"
                ),
            }
            fresh = false;
        }
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
                step => unreachable!(
                    "the async front neither shows nor seeks its inner reader: {step:?}"
                ),
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
