//! The crate's error type and its mapping onto `io::ErrorKind`.

use std::fmt;
use std::io;

/// What went wrong in a cipherio stream.
///
/// At the `Read`/`Write` boundary every variant travels inside an
/// [`io::Error`] whose [`kind`](io::Error::kind) is given by
/// [`Error::kind`]; get it back with [`Error::from_io`] (or
/// `io_error.get_ref()` and `downcast_ref::<cipherio::Error>()`).
///
/// Authentication failures are deliberately one opaque variant: the crate
/// never says *why* a segment failed to verify.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A segment failed to authenticate: the ciphertext, the header, the key
    /// or the associated data is not the one the stream was sealed with.
    Authentication,
    /// The input does not start with the cipherio magic bytes.
    BadMagic,
    /// A Tink-profile header whose first byte (the header length) is not
    /// the one the key's parameters give.
    HeaderLength {
        /// The header length the parameters give.
        expected: u8,
        /// The first byte of the stream.
        found: u8,
    },
    /// The header names a format version this crate does not read.
    UnsupportedVersion(u8),
    /// The header names an algorithm identifier this crate does not know.
    UnknownAlgorithm(u8),
    /// The header names a different algorithm from the key's.
    AlgorithmMismatch {
        /// The algorithm named in the stream header.
        stream: crate::Algorithm,
        /// The algorithm of the key the reader was given.
        key: crate::Algorithm,
    },
    /// The header asks for a segment size of zero.
    ZeroSegmentSize,
    /// The header asks for segments larger than the reader's limit; nothing
    /// was allocated for them.
    SegmentTooLarge {
        /// Plaintext bytes per segment asked for by the header.
        size: u64,
        /// The reader's configured limit.
        limit: u64,
    },
    /// The stream ended before its final segment (truncated, or written by a
    /// writer that was never finished).
    Truncated,
    /// Bytes follow the final segment.
    TrailingData,
    /// An empty final segment follows a non-empty one; the writer never
    /// produces this, so the stream was not written by cipherio.
    EmptyFinalSegment,
    /// The stream goes on past segment 2^32 − 1, the last one the 32-bit
    /// segment counter can number.
    TooManySegments,
    /// The writer cannot take more data: its stream has reached 2^32
    /// segments (at this capacity). What it holds can still be finished.
    StreamTooLong,
    /// The inner writer accepted no bytes (`Ok(0)`); nothing was lost, and
    /// a later call resumes.
    WriteZero,
    /// A buffer of this many bytes could not be allocated.
    Allocation(usize),
    /// A thread sealing or opening segments for the stream panicked (a
    /// stream built with `threads(n)`, n > 1). Sticky: nothing after the
    /// segments released before it is delivered or written.
    WorkerPanicked,
    /// A key of the wrong length for its algorithm.
    InvalidKeyLength {
        /// The length the algorithm needs.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A Tink key shorter than its derived key size.
    KeyTooShort {
        /// The derived key size, the least the raw key may have.
        minimum: usize,
        /// The length given.
        actual: usize,
    },
    /// A key given as hex that is not valid hex.
    InvalidHex,
    /// Tink parameters out of the range Tink accepts (the text says which).
    InvalidParameters(&'static str),
    /// A buffer capacity of zero, a writer capacity above
    /// [`format::MAX_WRITER_CAPACITY`](crate::format::MAX_WRITER_CAPACITY),
    /// (A writer capacity other than a Tink key's segment size is
    /// [`Error::CapacityForKey`], which names the size the key takes.)
    InvalidCapacity(usize),
    /// A writer capacity other than the one a Tink key's segment size
    /// allows: `required` plaintext bytes per segment (leave the capacity
    /// unset to get it).
    CapacityForKey {
        /// The capacity asked for.
        capacity: usize,
        /// The key's segment plaintext size, the only capacity it takes.
        required: usize,
    },
    /// A write after the writer was finished.
    Finished,
    /// The operating system's random number generator failed.
    Random,
}

impl Error {
    /// The `io::ErrorKind` this error carries at the I/O boundary.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Error::Authentication
            | Error::BadMagic
            | Error::HeaderLength { .. }
            | Error::UnsupportedVersion(_)
            | Error::UnknownAlgorithm(_)
            | Error::AlgorithmMismatch { .. }
            | Error::ZeroSegmentSize
            | Error::SegmentTooLarge { .. }
            | Error::TrailingData
            | Error::EmptyFinalSegment
            | Error::TooManySegments => io::ErrorKind::InvalidData,
            Error::Truncated => io::ErrorKind::UnexpectedEof,
            Error::InvalidKeyLength { .. }
            | Error::KeyTooShort { .. }
            | Error::InvalidHex
            | Error::InvalidParameters(_)
            | Error::InvalidCapacity(_)
            | Error::CapacityForKey { .. } => io::ErrorKind::InvalidInput,
            Error::Finished => io::ErrorKind::InvalidInput,
            Error::StreamTooLong => io::ErrorKind::FileTooLarge,
            Error::WriteZero => io::ErrorKind::WriteZero,
            Error::Allocation(_) => io::ErrorKind::OutOfMemory,
            Error::WorkerPanicked => io::ErrorKind::Other,
            Error::Random => io::ErrorKind::Other,
        }
    }

    /// The cipherio error inside an `io::Error` returned by this crate, if
    /// there is one (errors of the inner reader or writer pass through
    /// unchanged and have none).
    pub fn from_io(err: &io::Error) -> Option<&Error> {
        err.get_ref().and_then(|e| e.downcast_ref::<Error>())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Authentication => f.write_str("cipherio: segment failed to authenticate"),
            Error::BadMagic => f.write_str("cipherio: not a cipherio stream (bad magic)"),
            Error::HeaderLength { expected, found } => write!(
                f,
                "cipherio: Tink header length byte is {found}, the key's parameters give {expected}"
            ),
            Error::UnsupportedVersion(v) => {
                write!(f, "cipherio: unsupported format version {v}")
            }
            Error::UnknownAlgorithm(a) => write!(f, "cipherio: unknown algorithm id {a:#04x}"),
            Error::AlgorithmMismatch { stream, key } => write!(
                f,
                "cipherio: stream is sealed with {stream} but the key is for {key}"
            ),
            Error::ZeroSegmentSize => f.write_str("cipherio: header has a zero segment size"),
            Error::SegmentTooLarge { size, limit } => write!(
                f,
                "cipherio: header asks for {size}-byte segments, above the reader's limit of {limit}"
            ),
            Error::Truncated => f.write_str("cipherio: stream ends before its final segment"),
            Error::TrailingData => f.write_str("cipherio: data after the final segment"),
            Error::EmptyFinalSegment => {
                f.write_str("cipherio: empty final segment after a non-empty one")
            }
            Error::TooManySegments => f.write_str("cipherio: stream goes on past segment 2^32-1"),
            Error::StreamTooLong => f.write_str(
                "cipherio: stream is at 2^32 segments; finish it or use a larger capacity",
            ),
            Error::WriteZero => f.write_str("cipherio: inner writer accepted no bytes"),
            Error::Allocation(n) => write!(f, "cipherio: cannot allocate a {n}-byte buffer"),
            Error::WorkerPanicked => f.write_str("cipherio: a worker thread panicked"),
            Error::InvalidKeyLength { expected, actual } => {
                write!(f, "cipherio: key must be {expected} bytes, got {actual}")
            }
            Error::KeyTooShort { minimum, actual } => write!(
                f,
                "cipherio: Tink key must be at least {minimum} bytes (its derived key size), got {actual}"
            ),
            Error::InvalidHex => f.write_str("cipherio: key is not valid hex"),
            Error::InvalidParameters(why) => write!(f, "cipherio: {why}"),
            Error::InvalidCapacity(c) => write!(
                f,
                "cipherio: buffer capacity {c} is not allowed (at least 1; a writer's at most 16 MiB)"
            ),
            Error::CapacityForKey { capacity, required } => write!(
                f,
                "cipherio: buffer capacity {capacity} does not fit this Tink key, whose segments hold {required} plaintext bytes: use {required}, or leave the capacity unset"
            ),
            Error::Finished => f.write_str("cipherio: write after finish"),
            Error::Random => f.write_str("cipherio: the system random number generator failed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}
