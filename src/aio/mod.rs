//! The tokio fronts (feature `tokio`): [`AsyncCipherWriter`] over
//! [`tokio::io::AsyncWrite`] and
//! [`AsyncCipherReader`] over [`tokio::io::AsyncRead`].
//!
//! They are the same engine as [`CipherWriter`](crate::CipherWriter) and
//! [`CipherReader`](crate::CipherReader) — the same format, errors,
//! buffering and inner call counts — with `Poll::Pending` where the std
//! fronts would block. Build them with the same builders
//! (`CipherWriter::builder(&key)….build_async(w)`), or with `new` /
//! `with_capacity`:
//!
//! ```
//! # async fn demo() -> std::io::Result<()> {
//! use cipherio::tokio::{AsyncCipherReader, AsyncCipherWriter};
//! use cipherio::{Algorithm, CipherReader, Key};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! let key = Key::generate(Algorithm::Aes256Gcm);
//! let (client, server) = tokio::io::duplex(64 * 1024);
//!
//! let sender = tokio::spawn({
//!     let key = key.clone();
//!     async move {
//!         let mut w = AsyncCipherWriter::new(&key, client);
//!         w.write_all(b"hello over an async pipe").await?;
//!         w.shutdown().await // seals the final segment, then shuts the pipe down
//!     }
//! });
//!
//! let mut r = CipherReader::builder(&key).build_async(server);
//! let mut plaintext = Vec::new();
//! r.read_to_end(&mut plaintext).await?;
//! assert_eq!(plaintext, b"hello over an async pipe");
//! sender.await??;
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! # Cancellation and shutdown
//!
//! Dropping a `read`, `write`, `flush` or `shutdown` future at any await
//! point loses nothing and seals nothing twice: the engine keeps sealed
//! bytes until the inner writer takes them, and releases plaintext only
//! into the caller's buffer of a completed poll. `poll_write` never returns
//! `Ok(0)` for non-empty input (`tokio::io::copy` would fail with
//! `WriteZero`).
//!
//! [`poll_shutdown`](::tokio::io::AsyncWrite::poll_shutdown) completes the
//! stream — seals the final segment once and writes it — then shuts the
//! inner writer down; polled again, after `Pending` or after it finished,
//! it neither errors nor seals again. [`AsyncCipherWriter::finish`]
//! completes the stream without shutting the inner writer down, for
//! protocols that go on using it. As with the std writer, dropping a writer
//! that was neither finished nor shut down never completes the stream: the
//! reader fails with [`io::ErrorKind::UnexpectedEof`](std::io::ErrorKind::UnexpectedEof).

mod read;
mod sync;
mod write;

pub use read::AsyncCipherReader;
pub use write::AsyncCipherWriter;
