//! The adapter through which the tokio fronts run the shared drive loops
//! ([`crate::drive`]): a std `Read`/`Write` over an async inner object and
//! the task's `Context`.
//!
//! `Poll::Pending` from the inner object becomes an
//! [`io::ErrorKind::WouldBlock`] error, which stops the loop as any error
//! does, and the adapter remembers that it made it. [`SyncIo::settle`]
//! turns the loop's result back into a `Poll`: `WouldBlock` is `Pending`
//! only if the adapter made it; a `WouldBlock` that the inner object
//! itself returned as `Poll::Ready(Err(..))` stays an error, as the fronts
//! returned it before the loops were shared. (Mapping every `WouldBlock`
//! to `Pending` would return `Pending` with no waker registered, and the
//! task would never be woken.) Since a loop never calls the inner object
//! again after an error, the adapter's `WouldBlock`, when there is one, is
//! the error the loop returns or the one it kept for the next call while
//! reporting bytes taken.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A std `Read`/`Write` over an async `T` for the length of one poll.
pub(super) struct SyncIo<'a, 'b, T> {
    pub(super) io: &'a mut T,
    pub(super) cx: &'a mut Context<'b>,
    /// The inner object returned `Pending` (its waker is registered).
    pending: bool,
}

impl<'a, 'b, T> SyncIo<'a, 'b, T> {
    pub(super) fn new(io: &'a mut T, cx: &'a mut Context<'b>) -> Self {
        SyncIo {
            io,
            cx,
            pending: false,
        }
    }

    /// An inner poll's result for a drive loop: `Pending` becomes the
    /// adapter's `WouldBlock`.
    pub(super) fn block<U>(&mut self, poll: Poll<io::Result<U>>) -> io::Result<U> {
        match poll {
            Poll::Ready(r) => r,
            Poll::Pending => {
                self.pending = true;
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }

    /// A drive loop's result for the poll that ran it: the adapter's
    /// `WouldBlock` becomes `Pending` again; anything else is ready.
    pub(super) fn settle<U>(&self, result: io::Result<U>) -> Poll<io::Result<U>> {
        match result {
            Err(e) if self.pending && e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            r => Poll::Ready(r),
        }
    }
}

impl<T: AsyncRead + Unpin> Read for SyncIo<'_, '_, T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut room = ReadBuf::new(buf);
        let poll = Pin::new(&mut *self.io).poll_read(self.cx, &mut room);
        self.block(poll)?;
        Ok(room.filled().len())
    }
}

impl<T: AsyncWrite + Unpin> Write for SyncIo<'_, '_, T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let poll = Pin::new(&mut *self.io).poll_write(self.cx, buf);
        self.block(poll)
    }

    fn flush(&mut self) -> io::Result<()> {
        let poll = Pin::new(&mut *self.io).poll_flush(self.cx);
        self.block(poll)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::task::Waker;

    use ::tokio::io::AsyncWrite;

    use super::*;
    use crate::tokio::AsyncCipherWriter;
    use crate::{Algorithm, Key};

    /// An inner writer that answers every poll with `pending` (`Pending`)
    /// or a ready `WouldBlock` error.
    struct Stuck {
        pending: bool,
    }

    impl AsyncWrite for Stuck {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.pending {
                Poll::Pending
            } else {
                Poll::Ready(Err(io::ErrorKind::WouldBlock.into()))
            }
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// The adapter's own `WouldBlock` is `Pending` again; a `WouldBlock`
    /// the inner writer returned as ready stays a ready error (turned into
    /// `Pending`, it would leave the task with no waker to wake it).
    #[test]
    fn only_the_adapters_would_block_is_pending() {
        let key = Key::generate(Algorithm::Aes128Gcm);
        let mut cx = Context::from_waker(Waker::noop());
        for pending in [true, false] {
            let mut w = AsyncCipherWriter::with_capacity(4, &key, Stuck { pending });
            // Two segments' worth: the first is sealed (with the header)
            // and stays in the output, the bytes after it are taken.
            let poll = Pin::new(&mut w).poll_write(&mut cx, &[7u8; 9]);
            assert!(matches!(poll, Poll::Ready(Ok(n)) if n > 4), "{pending}");
            // Now the sealed bytes must go first, and cannot.
            let poll = Pin::new(&mut w).poll_write(&mut cx, &[7u8; 1]);
            match poll {
                Poll::Pending => assert!(pending),
                Poll::Ready(Err(e)) => {
                    assert!(!pending);
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
                }
                Poll::Ready(Ok(n)) => panic!("{pending}: took {n} with sealed bytes stuck"),
            }
        }
    }
}
