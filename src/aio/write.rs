//! `AsyncCipherWriter`: the tokio `AsyncWrite` front over the [`Sealer`]
//! engine.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::tokio::io::AsyncWrite;

use crate::core::sealer::Sealer;
use crate::{CipherWriter, Error, Provider, StreamKey, WriterBuilder};

/// Encrypts everything written to it into a cipherio stream on an
/// [`AsyncWrite`]: the async twin of [`CipherWriter`], same format, same
/// options, same errors.
///
/// Complete the stream with `shutdown().await`
/// ([`poll_shutdown`](AsyncWrite::poll_shutdown), which then shuts `W` down) or [`finish`](Self::finish) (which returns
/// `W` open). Dropping the writer before either never completes the stream.
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
    /// size with a [`TinkKey`](crate::tink::TinkKey)) and no associated data.
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

    /// Moves the engine's sealed output to `inner`.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.engine.output().is_empty() {
            match ready!(Pin::new(&mut self.inner).poll_write(cx, self.engine.output())) {
                Ok(0) => return Poll::Ready(Err(Error::WriteZero.into())),
                Ok(n) => self.engine.consume_output(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Completes the stream (seals the final segment once) and writes
    /// everything out.
    fn poll_seal_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.engine.start()?;
        if !self.engine.is_sealed() {
            ready!(self.poll_drain(cx))?;
            self.engine.finish()?;
        }
        self.poll_drain(cx)
    }

    /// Completes the stream and flushes the inner writer.
    fn poll_complete(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_seal_all(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for AsyncCipherWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.engine.is_sealed() {
            return Poll::Ready(Err(Error::Finished.into()));
        }
        this.engine.start()?;
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        // Whatever an earlier call left pending goes first; `Pending` here
        // has taken nothing, so a dropped future loses nothing.
        ready!(this.poll_drain(cx))?;
        let mut taken = 0;
        while taken < buf.len() {
            // With threads, whole segments go to `inner` as they are
            // sealed; when it takes none, the run stops and its `Pending`
            // or error is kept (it is not polled again in this call).
            let inner = &mut this.inner;
            let mut stopped = None;
            let mut to_inner = |bytes: &[u8]| loop {
                match Pin::new(&mut *inner).poll_write(cx, bytes) {
                    Poll::Ready(Ok(0)) => {
                        stopped = Some(Poll::Ready(Err(Error::WriteZero.into())));
                        return 0;
                    }
                    Poll::Ready(Ok(n)) => return n,
                    Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                    Poll::Ready(Err(e)) => {
                        stopped = Some(Poll::Ready(Err(e)));
                        return 0;
                    }
                    Poll::Pending => {
                        stopped = Some(Poll::Pending);
                        return 0;
                    }
                }
            };
            match this.engine.write(&buf[taken..], Some(&mut to_inner)) {
                Ok(n) => taken += n,
                Err(e) if taken == 0 => return Poll::Ready(Err(e.into())),
                Err(_) => return Poll::Ready(Ok(taken)),
            }
            if let Some(stop) = stopped {
                // The engine took the bytes after the last segment sealed;
                // the `Pending` (its waker is registered) or error comes
                // back with the next call.
                return if taken > 0 {
                    Poll::Ready(Ok(taken))
                } else {
                    stop
                };
            }
            if !matches!(this.poll_drain(cx), Poll::Ready(Ok(()))) {
                // The segment just sealed is non-final: the bytes after it
                // are taken now, and the call reports them. A `Pending` or
                // an error of the inner writer comes back with the next call.
                taken += this.engine.hold(&buf[taken..]);
                return Poll::Ready(Ok(taken));
            }
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.engine.error() {
            return Poll::Ready(Err(e.clone().into()));
        }
        ready!(this.poll_drain(cx))?;
        // Framed: what is buffered becomes a record and goes out too.
        this.engine.flush_record()?;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.shut_down {
            return Poll::Ready(Ok(()));
        }
        // The inner writer's shutdown flushes it: one inner poll per poll
        // once everything is written.
        ready!(this.poll_seal_all(cx))?;
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
