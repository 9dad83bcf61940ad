//! `AsyncCipherWriter`: the tokio `AsyncWrite` front over the [`Sealer`]
//! engine.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::tokio::io::AsyncWrite;

use super::sync::SyncIo;
use crate::core::sealer::Sealer;
use crate::drive::write as drive;
use crate::{CipherWriter, Provider, StreamKey, WriterBuilder};

/// Encrypts everything written to it into a cipherio stream on an
/// [`AsyncWrite`]: the async twin of [`CipherWriter`], same format, same
/// options, same errors.
///
/// Complete the stream with `shutdown().await`
/// ([`poll_shutdown`](AsyncWrite::poll_shutdown), which then shuts `W` down) or [`finish`](Self::finish) (which returns
/// `W` open). Dropping the writer before either never completes the stream.
#[must_use = "an AsyncCipherWriter must be completed with `shutdown` or `finish`; dropping it leaves a truncated stream"]
pub struct AsyncCipherWriter<W> {
    pub(crate) engine: Sealer,
    inner: W,
    /// `poll_shutdown` has shut the inner writer down.
    shut_down: bool,
}

impl WriterBuilder {
    /// The async writer over `inner` (feature `tokio`). Does no I/O.
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn build_async<W: AsyncWrite + Unpin>(self, inner: W) -> AsyncCipherWriter<W> {
        AsyncCipherWriter {
            engine: self.engine(),
            inner,
            shut_down: false,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncCipherWriter<W> {
    /// A writer with the default 8 KiB segments (a Tink key's segment
    /// size with an [`AesGcmHkdfKey`](crate::tink::AesGcmHkdfKey)) and no associated data.
    pub fn new<K: StreamKey>(key: &K, inner: W) -> Self {
        CipherWriter::builder(key).build_async(inner)
    }

    /// A writer whose segments hold `capacity` plaintext bytes each.
    pub fn with_capacity<K: StreamKey>(capacity: usize, key: &K, inner: W) -> Self {
        CipherWriter::builder(key)
            .capacity(capacity)
            .build_async(inner)
    }

    /// Plaintext bytes per segment.
    pub fn capacity(&self) -> usize {
        self.engine.capacity()
    }

    /// Which library seals this stream's segments.
    pub fn provider(&self) -> Provider {
        self.engine.provider()
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer. Writing to it directly corrupts the stream.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Seals the final segment, writes everything out and flushes the
    /// inner writer, then returns it — without shutting it down.
    ///
    /// # Errors
    ///
    /// Any error of the inner writer, or a sticky error of this writer.
    pub async fn finish(mut self) -> io::Result<W> {
        std::future::poll_fn(|cx| self.poll_complete(cx)).await?;
        Ok(self.inner)
    }

    /// Completes the stream and flushes the inner writer.
    fn poll_complete(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut io = SyncIo::new(&mut self.inner, cx);
        let done = drive::complete(&mut self.engine, &mut io);
        io.settle(done)
    }
}

// Each poll runs the std writer's loop once through `SyncIo`: a `Pending`
// of the inner writer stops it as an error would, so a dropped future
// loses nothing and seals nothing twice.
impl<W: AsyncWrite + Unpin> AsyncWrite for AsyncCipherWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut io = SyncIo::new(&mut this.inner, cx);
        let taken = drive::write(&mut this.engine, &mut io, buf);
        io.settle(taken)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut io = SyncIo::new(&mut this.inner, cx);
        let done = drive::flush(&mut this.engine, &mut io);
        io.settle(done)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.shut_down {
            return Poll::Ready(Ok(()));
        }
        // The inner writer's shutdown flushes it: one inner poll per poll
        // once everything is written.
        let mut io = SyncIo::new(&mut this.inner, cx);
        let sealed = drive::seal_all(&mut this.engine, &mut io);
        ready!(io.settle(sealed))?;
        ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
        this.shut_down = true;
        Poll::Ready(Ok(()))
    }
}

impl<W: fmt::Debug> fmt::Debug for AsyncCipherWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncCipherWriter")
            .field("inner", &self.inner)
            .field("capacity", &self.engine.capacity())
            .field("provider", &self.engine.provider())
            .field("stage", &self.engine.stage_name())
            .field("buffered", &self.engine.buffered())
            .field("pending", &self.engine.output().len())
            .field("shut_down", &self.shut_down)
            .finish()
    }
}
