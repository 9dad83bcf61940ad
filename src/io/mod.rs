//! The std fronts: [`CipherWriter`] over `Write`, [`CipherReader`] over
//! `Read` (and `BufRead`, opening segments in the inner buffer), with their
//! builders. They hold the public types and answer the engine's steps with
//! inner I/O; the stream's rules live in [`crate::core`].

pub(crate) mod read;
pub(crate) mod read_at;
pub(crate) mod write;

pub use read::{CipherReader, ReaderBuilder};
pub use read_at::{CipherReaderAt, ReadAt};
pub use write::{CipherWriter, WriterBuilder};
