//! One handle over the std front (`CipherWriter`/`CipherReader`) and the
//! tokio front (`AsyncCipherWriter`/`AsyncCipherReader`, feature `tokio`),
//! so that every stream behaviour is tested through both.
//!
//! The tokio front runs over the same sync doubles as the std front,
//! through [`SyncIo`]: it passes every call and every error (`WouldBlock`
//! and `Interrupted` included) through as `Poll::Ready`, so the inner call
//! counts are the same on both fronts, and every front call completes in
//! one poll (no runtime needed; `Pending` fails the test).

use std::io::{self, BufRead, Read, Write};

use cipherio::{CipherReader, CipherWriter, Provider, ReaderBuilder, StreamKey, WriterBuilder};

/// A front: the std one, and the tokio one with the feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    Std,
    #[cfg(feature = "tokio")]
    Tokio,
}

impl Front {
    pub const ALL: &'static [Front] = &[
        Front::Std,
        #[cfg(feature = "tokio")]
        Front::Tokio,
    ];

    /// `builder.build(inner)` or `builder.build_async(inner)`.
    pub fn build_writer<W: Write + Unpin>(
        self,
        builder: WriterBuilder,
        inner: W,
    ) -> FrontWriter<W> {
        match self {
            Front::Std => FrontWriter::Std(builder.build(inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => FrontWriter::Tokio(builder.build_async(SyncIo::new(inner))),
        }
    }

    /// The writer's `new`.
    pub fn writer<K: StreamKey, W: Write + Unpin>(self, key: &K, inner: W) -> FrontWriter<W> {
        match self {
            Front::Std => FrontWriter::Std(CipherWriter::new(key, inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => {
                FrontWriter::Tokio(on_tokio::AsyncCipherWriter::new(key, SyncIo::new(inner)))
            }
        }
    }

    /// The writer's `with_capacity`.
    pub fn writer_with_capacity<K: StreamKey, W: Write + Unpin>(
        self,
        capacity: usize,
        key: &K,
        inner: W,
    ) -> FrontWriter<W> {
        match self {
            Front::Std => FrontWriter::Std(CipherWriter::with_capacity(capacity, key, inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => FrontWriter::Tokio(on_tokio::AsyncCipherWriter::with_capacity(
                capacity,
                key,
                SyncIo::new(inner),
            )),
        }
    }

    /// `builder.build(inner)` or `builder.build_async(inner)`.
    pub fn build_reader<R: Read + Unpin>(self, builder: ReaderBuilder, inner: R) -> FrontReader<R> {
        match self {
            Front::Std => FrontReader::Std(builder.build(inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => FrontReader::Tokio(builder.build_async(SyncIo::new(inner))),
        }
    }

    /// The reader's `new`.
    pub fn reader<K: StreamKey, R: Read + Unpin>(self, key: &K, inner: R) -> FrontReader<R> {
        match self {
            Front::Std => FrontReader::Std(CipherReader::new(key, inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => {
                FrontReader::Tokio(on_tokio::AsyncCipherReader::new(key, SyncIo::new(inner)))
            }
        }
    }

    /// The reader's `with_capacity`.
    pub fn reader_with_capacity<K: StreamKey, R: Read + Unpin>(
        self,
        capacity: usize,
        key: &K,
        inner: R,
    ) -> FrontReader<R> {
        match self {
            Front::Std => FrontReader::Std(CipherReader::with_capacity(capacity, key, inner)),
            #[cfg(feature = "tokio")]
            Front::Tokio => FrontReader::Tokio(on_tokio::AsyncCipherReader::with_capacity(
                capacity,
                key,
                SyncIo::new(inner),
            )),
        }
    }
}

/// A writing front over a sync inner writer.
pub enum FrontWriter<W: Write + Unpin> {
    Std(CipherWriter<W>),
    #[cfg(feature = "tokio")]
    Tokio(on_tokio::AsyncCipherWriter<SyncIo<W>>),
}

impl<W: Write + Unpin> FrontWriter<W> {
    /// The std writer, for its std-only API (`try_finish` after a
    /// `finish`-less drop, `Debug`).
    pub fn as_std(&self) -> Option<&CipherWriter<W>> {
        match self {
            FrontWriter::Std(w) => Some(w),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(_) => None,
        }
    }

    pub fn front(&self) -> Front {
        match self {
            FrontWriter::Std(_) => Front::Std,
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(_) => Front::Tokio,
        }
    }

    /// The provider the writer seals with.
    pub fn provider(&self) -> Provider {
        match self {
            FrontWriter::Std(w) => w.provider(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => w.provider(),
        }
    }

    /// The writer's capacity (a native stream's segment size).
    pub fn capacity(&self) -> usize {
        match self {
            FrontWriter::Std(w) => w.capacity(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => w.capacity(),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            FrontWriter::Std(w) => w.write(buf),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => on_tokio::block_on(::tokio::io::AsyncWriteExt::write(w, buf)),
        }
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            FrontWriter::Std(w) => w.write_all(buf),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => {
                on_tokio::block_on(::tokio::io::AsyncWriteExt::write_all(w, buf))
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            FrontWriter::Std(w) => w.flush(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => on_tokio::block_on(::tokio::io::AsyncWriteExt::flush(w)),
        }
    }

    /// Completes the stream, resumable after an error: the std front's
    /// `try_finish`; on tokio one `poll_shutdown` (which also shuts the
    /// inner writer down: a flush of the sync double, counted by
    /// [`SyncIo`]).
    pub fn try_finish(&mut self) -> io::Result<()> {
        match self {
            FrontWriter::Std(w) => w.try_finish(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => on_tokio::block_on(std::future::poll_fn(|cx| {
                ::tokio::io::AsyncWrite::poll_shutdown(std::pin::Pin::new(&mut *w), cx)
            })),
        }
    }

    /// `finish`: completes the stream (without shutting the inner writer
    /// down) and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        match self {
            FrontWriter::Std(w) => w.finish(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => on_tokio::block_on(w.finish()).map(SyncIo::into_inner),
        }
    }

    pub fn get_ref(&self) -> &W {
        match self {
            FrontWriter::Std(w) => w.get_ref(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => &w.get_ref().inner,
        }
    }

    pub fn get_mut(&mut self) -> &mut W {
        match self {
            FrontWriter::Std(w) => w.get_mut(),
            #[cfg(feature = "tokio")]
            FrontWriter::Tokio(w) => &mut w.get_mut().inner,
        }
    }
}

/// A reading front over a sync inner reader.
pub enum FrontReader<R: Read + Unpin> {
    Std(CipherReader<R>),
    #[cfg(feature = "tokio")]
    Tokio(on_tokio::AsyncCipherReader<SyncIo<R>>),
}

impl<R: Read + Unpin> FrontReader<R> {
    /// The std reader, for its std-only API (`Debug`).
    pub fn as_std(&self) -> Option<&CipherReader<R>> {
        match self {
            FrontReader::Std(r) => Some(r),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(_) => None,
        }
    }

    pub fn front(&self) -> Front {
        match self {
            FrontReader::Std(_) => Front::Std,
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(_) => Front::Tokio,
        }
    }

    /// The provider the reader opens with.
    pub fn provider(&self) -> Provider {
        match self {
            FrontReader::Std(r) => r.provider(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => r.provider(),
        }
    }

    /// The reader's capacity (its read-ahead).
    pub fn capacity(&self) -> usize {
        match self {
            FrontReader::Std(r) => r.capacity(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => r.capacity(),
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            FrontReader::Std(r) => r.read(buf),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => on_tokio::block_on(::tokio::io::AsyncReadExt::read(r, buf)),
        }
    }

    pub fn read_to_end(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            FrontReader::Std(r) => r.read_to_end(out),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => {
                on_tokio::block_on(::tokio::io::AsyncReadExt::read_to_end(r, out))
            }
        }
    }

    pub fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        match self {
            FrontReader::Std(r) => r.read_exact(buf),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => {
                on_tokio::block_on(::tokio::io::AsyncReadExt::read_exact(r, buf)).map(drop)
            }
        }
    }

    pub fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            FrontReader::Std(r) => r.fill_buf(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => on_tokio::block_on(::tokio::io::AsyncBufReadExt::fill_buf(r)),
        }
    }

    pub fn consume(&mut self, amt: usize) {
        match self {
            FrontReader::Std(r) => r.consume(amt),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => ::tokio::io::AsyncBufReadExt::consume(r, amt),
        }
    }

    pub fn get_ref(&self) -> &R {
        match self {
            FrontReader::Std(r) => r.get_ref(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => &r.get_ref().inner,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        match self {
            FrontReader::Std(r) => r.get_mut(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => &mut r.get_mut().inner,
        }
    }

    pub fn into_inner(self) -> R {
        match self {
            FrontReader::Std(r) => r.into_inner(),
            #[cfg(feature = "tokio")]
            FrontReader::Tokio(r) => r.into_inner().inner,
        }
    }
}

/// A sync reader or writer as a tokio one: every call goes straight to the
/// inner one and its result, errors included (`WouldBlock` too), comes
/// back `Ready`. A shutdown is a flush of the inner writer (a sync writer
/// has no other end); `shutdowns` counts them.
#[derive(Debug)]
pub struct SyncIo<T> {
    pub inner: T,
    pub shutdowns: usize,
}

impl<T> SyncIo<T> {
    pub fn new(inner: T) -> Self {
        SyncIo {
            inner,
            shutdowns: 0,
        }
    }

    pub fn into_inner(self) -> T {
        self.inner
    }
}

#[cfg(feature = "tokio")]
mod on_tokio {
    use std::future::Future;
    use std::io::{self, Read, Write};
    use std::pin::{Pin, pin};
    use std::task::{Context, Poll, Waker};

    pub use cipherio::tokio::{AsyncCipherReader, AsyncCipherWriter};
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    use super::SyncIo;

    /// Polls `f` once with a no-op waker: over [`SyncIo`], whose every
    /// call is `Ready`, a front's future must complete at once. A
    /// `Pending` here is a front that returned `Pending` without its inner
    /// I/O doing so (it registered no waker: a runtime would hang on it),
    /// and fails the test.
    pub fn block_on<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the tokio front returned Pending over a never-pending inner"),
        }
    }

    impl<R: Read + Unpin> AsyncRead for SyncIo<R> {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            let n = this.inner.read(buf.initialize_unfilled())?;
            buf.advance(n);
            Poll::Ready(Ok(()))
        }
    }

    impl<W: Write + Unpin> AsyncWrite for SyncIo<W> {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(self.get_mut().inner.write(buf))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(self.get_mut().inner.flush())
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            this.shutdowns += 1;
            Poll::Ready(this.inner.flush())
        }
    }
}
