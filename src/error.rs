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
///
/// Errors compare with `==` (`PartialEq`) but are not `Eq`: as in rustls,
/// a later variant may carry a source with no equality of its own (an
/// `io::Error`, held behind an `Arc` so that the error stays `Clone`), and
/// such a variant will compare unequal to every error, itself included.
/// `Clone` stays: a stream's error is sticky and returned again by every
/// later call. Struct-like variants are `#[non_exhaustive]`: match them
/// with `..` (`matches!(e, Error::SegmentTooLarge { limit, .. })`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A segment failed to authenticate: the ciphertext, the header, the key
    /// or the associated data is not the one the stream was sealed with.
    ///
    /// A changed header that passes the header checks is reported at
    /// segment 0, but not always as this: read as framed, its first record
    /// can be refused first as [`SegmentTooLarge`](Error::SegmentTooLarge)
    /// (a length above the header's segment size) or
    /// [`Truncated`](Error::Truncated) (a length the input does not hold).
    Authentication,
    /// The input does not start with the cipherio magic bytes.
    BadMagic,
    /// A Tink-profile header whose first byte (the header length) is not
    /// the one the key's parameters give.
    #[non_exhaustive]
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
    #[non_exhaustive]
    AlgorithmMismatch {
        /// The algorithm named in the stream header.
        stream: crate::Algorithm,
        /// The algorithm of the key the reader was given.
        key: crate::Algorithm,
    },
    /// The header asks for a segment size of zero.
    ZeroSegmentSize,
    /// A segment larger than the reader accepts; nothing was allocated for
    /// it. Either the header's segment size is above the reader's limit
    /// (for a framed header, above the smaller of that limit and
    /// 2^31 − 1, the longest record a record header can name), or a framed
    /// record's header names a length above the stream's segment size
    /// (which a changed header's segment size can also cause).
    #[non_exhaustive]
    SegmentTooLarge {
        /// Plaintext bytes asked for: the header's segment size, or the
        /// record's length.
        size: u64,
        /// The limit it is above: the reader's (at most 2^31 − 1 for a
        /// framed header), or, for a record, the header's segment size.
        limit: u64,
    },
    /// The stream ended before its final segment (truncated, or written by a
    /// writer that was never finished). Also a changed header read as
    /// framed whose first record is longer than the input.
    Truncated,
    /// Bytes follow the final segment.
    TrailingData,
    /// An empty final segment follows a non-empty one; the writer never
    /// produces this, so the stream was not written by cipherio.
    EmptyFinalSegment,
    /// The stream goes on past the last segment its counter can number:
    /// 2^32 − 1 for the 32-bit counters, 2^38 − 1 for Cobblestone's.
    TooManySegments,
    /// The writer cannot take more data: its stream has reached 2^32
    /// segments (at this capacity; a Cobblestone chunk is always 16 KiB).
    /// What it holds can still be finished.
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
    #[non_exhaustive]
    InvalidKeyLength {
        /// The length the algorithm needs.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A Tink key shorter than its derived key size.
    #[non_exhaustive]
    KeyTooShort {
        /// The derived key size, the least the raw key may have.
        minimum: usize,
        /// The length given.
        actual: usize,
    },
    /// A key given as hex that is not valid hex.
    InvalidHex,
    /// A Tink key's derived key size other than 16 or 32 bytes.
    #[non_exhaustive]
    DerivedKeySize {
        /// The size given.
        size: usize,
    },
    /// A Tink AES-CTR-HMAC key's HMAC tag size out of the range Tink
    /// accepts: from 10 bytes up to the HMAC hash's output.
    #[non_exhaustive]
    TagSize {
        /// The size given.
        size: usize,
        /// The least Tink accepts.
        min: usize,
        /// The most the HMAC hash gives.
        max: usize,
    },
    /// A Tink key's ciphertext segment size out of the range Tink accepts:
    /// room for the header, the tag and one plaintext byte in the first
    /// segment, and below 2^31.
    #[non_exhaustive]
    CiphertextSegmentSize {
        /// The size given.
        size: usize,
        /// The least the key's other parameters allow.
        min: usize,
        /// The most Tink accepts, 2^31 − 1.
        max: usize,
    },
    /// `threads(0)`: a stream needs at least one thread.
    ZeroThreads,
    /// A writer asked to write the framed variant with a Tink key: framing
    /// is a native-format option, and a Tink key writes Tink's format.
    FramedTinkKey,
    /// A seek, a length query or a positional reader on a framed stream,
    /// whose records have no computable offsets. Not sticky: reading goes
    /// on.
    NoRandomAccess,
    /// A seek to a negative position or one past 2^64. Not sticky.
    InvalidSeek,
    /// The inner reader was moved (by the caller) to before the stream's
    /// start, so the reader no longer knows where the stream is.
    SourceMovedBack,
    /// A buffer capacity of zero, or a writer capacity above
    /// [`format::MAX_WRITER_CAPACITY`](crate::format::MAX_WRITER_CAPACITY).
    /// (A writer capacity other than a Tink key's segment size is
    /// [`Error::CapacityForKey`], which names the size the key takes.)
    InvalidCapacity(usize),
    /// A writer capacity other than the one a Tink key's segment size
    /// allows: `required` plaintext bytes per segment (leave the capacity
    /// unset to get it).
    #[non_exhaustive]
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
    /// Plaintext handed to a segment sealer
    /// ([`SegmentSealer`](crate::segments::SegmentSealer)) that is not whole
    /// segments where whole ones are needed: only the run that ends the
    /// stream may end with a short segment. Not sticky.
    PartialSegment,
    /// Plaintext handed to
    /// [`SegmentSealer::seal_part`](crate::segments::SegmentSealer::seal_part)
    /// that is not the length of the part. Not sticky.
    #[non_exhaustive]
    PartLength {
        /// The part's plaintext length.
        expected: u64,
        /// The length given.
        actual: u64,
    },
    /// A writer asked to write the framed variant with a Cobblestone key:
    /// framing is a native-format option, and a Cobblestone key writes
    /// C2SP chunked encryption.
    FramedCobblestoneKey,
    /// Segments by index ([`segments`](crate::segments)) with a Tink key:
    /// its format's first segment is shorter than the others, which a
    /// segment layout does not describe.
    UnevenSegments,
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
            | Error::DerivedKeySize { .. }
            | Error::TagSize { .. }
            | Error::CiphertextSegmentSize { .. }
            | Error::ZeroThreads
            | Error::FramedTinkKey
            | Error::NoRandomAccess
            | Error::InvalidSeek
            | Error::SourceMovedBack
            | Error::PartialSegment
            | Error::PartLength { .. }
            | Error::FramedCobblestoneKey
            | Error::UnevenSegments
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
                "cipherio: a {size}-byte segment is above the limit of {limit}"
            ),
            Error::Truncated => f.write_str("cipherio: stream ends before its final segment"),
            Error::TrailingData => f.write_str("cipherio: data after the final segment"),
            Error::EmptyFinalSegment => {
                f.write_str("cipherio: empty final segment after a non-empty one")
            }
            Error::TooManySegments => {
                f.write_str("cipherio: stream goes on past the last segment its counter can number")
            }
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
            Error::DerivedKeySize { size } => write!(
                f,
                "cipherio: Tink derived key size must be 16 or 32, got {size}"
            ),
            Error::TagSize { size, min, max } => write!(
                f,
                "cipherio: Tink HMAC tag size must be from {min} to {max} (the hash length), got {size}"
            ),
            Error::CiphertextSegmentSize { size, min, max } => write!(
                f,
                "cipherio: Tink ciphertext segment size must be from {min} (header + tag + 1) to {max}, got {size}"
            ),
            Error::ZeroThreads => f.write_str("cipherio: threads must be at least 1"),
            Error::FramedTinkKey => f.write_str(
                "cipherio: framing is a native-format option; a Tink key writes Tink's format",
            ),
            Error::NoRandomAccess => f.write_str("cipherio: a framed stream has no random access"),
            Error::InvalidSeek => {
                f.write_str("cipherio: seek to a negative or overflowing position")
            }
            Error::SourceMovedBack => {
                f.write_str("cipherio: the inner reader was moved behind the stream's start")
            }
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
            Error::PartialSegment => f.write_str(
                "cipherio: only the run of segments that ends the stream may end with a short segment",
            ),
            Error::FramedCobblestoneKey => f.write_str(
                "cipherio: framing is a native-format option; a Cobblestone key writes C2SP chunked encryption",
            ),
            Error::UnevenSegments => f.write_str(
                "cipherio: a Tink key's first segment is shorter than the others: no segments by index",
            ),
            Error::PartLength { expected, actual } => write!(
                f,
                "cipherio: a part of {expected} plaintext bytes was given {actual}"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind::{
        FileTooLarge, InvalidData, InvalidInput, Other, OutOfMemory, UnexpectedEof, WriteZero,
    };

    use super::*;
    use crate::Algorithm;

    /// Each variant's place in the table below. No wildcard arm: a new
    /// variant does not compile here until it has a row.
    fn ordinal(e: &Error) -> usize {
        match e {
            Error::Authentication => 0,
            Error::BadMagic => 1,
            Error::HeaderLength { .. } => 2,
            Error::UnsupportedVersion(_) => 3,
            Error::UnknownAlgorithm(_) => 4,
            Error::AlgorithmMismatch { .. } => 5,
            Error::ZeroSegmentSize => 6,
            Error::SegmentTooLarge { .. } => 7,
            Error::Truncated => 8,
            Error::TrailingData => 9,
            Error::EmptyFinalSegment => 10,
            Error::TooManySegments => 11,
            Error::StreamTooLong => 12,
            Error::WriteZero => 13,
            Error::Allocation(_) => 14,
            Error::WorkerPanicked => 15,
            Error::InvalidKeyLength { .. } => 16,
            Error::KeyTooShort { .. } => 17,
            Error::InvalidHex => 18,
            Error::DerivedKeySize { .. } => 19,
            Error::TagSize { .. } => 20,
            Error::CiphertextSegmentSize { .. } => 21,
            Error::ZeroThreads => 22,
            Error::FramedTinkKey => 23,
            Error::NoRandomAccess => 24,
            Error::InvalidSeek => 25,
            Error::SourceMovedBack => 26,
            Error::InvalidCapacity(_) => 27,
            Error::CapacityForKey { .. } => 28,
            Error::Finished => 29,
            Error::Random => 30,
            Error::PartialSegment => 31,
            Error::PartLength { .. } => 32,
            Error::FramedCobblestoneKey => 33,
            Error::UnevenSegments => 34,
        }
    }

    /// Every variant, with the `io::ErrorKind` the README's table gives it,
    /// through the `io::Error` and back, and with a message of its own.
    #[test]
    fn every_variant_has_its_documented_kind() {
        let cases = [
            (Error::Authentication, InvalidData),
            (Error::BadMagic, InvalidData),
            (
                Error::HeaderLength {
                    expected: 24,
                    found: 40,
                },
                InvalidData,
            ),
            (Error::UnsupportedVersion(3), InvalidData),
            (Error::UnknownAlgorithm(9), InvalidData),
            (
                Error::AlgorithmMismatch {
                    stream: Algorithm::Aes128Gcm,
                    key: Algorithm::Aes256Gcm,
                },
                InvalidData,
            ),
            (Error::ZeroSegmentSize, InvalidData),
            (Error::SegmentTooLarge { size: 2, limit: 1 }, InvalidData),
            (Error::Truncated, UnexpectedEof),
            (Error::TrailingData, InvalidData),
            (Error::EmptyFinalSegment, InvalidData),
            (Error::TooManySegments, InvalidData),
            (Error::StreamTooLong, FileTooLarge),
            (Error::WriteZero, WriteZero),
            (Error::Allocation(1), OutOfMemory),
            (Error::WorkerPanicked, Other),
            (
                Error::InvalidKeyLength {
                    expected: 16,
                    actual: 3,
                },
                InvalidInput,
            ),
            (
                Error::KeyTooShort {
                    minimum: 32,
                    actual: 20,
                },
                InvalidInput,
            ),
            (Error::InvalidHex, InvalidInput),
            (Error::DerivedKeySize { size: 24 }, InvalidInput),
            (
                Error::TagSize {
                    size: 9,
                    min: 10,
                    max: 32,
                },
                InvalidInput,
            ),
            (
                Error::CiphertextSegmentSize {
                    size: 40,
                    min: 41,
                    max: 1 << 31,
                },
                InvalidInput,
            ),
            (Error::ZeroThreads, InvalidInput),
            (Error::FramedTinkKey, InvalidInput),
            (Error::NoRandomAccess, InvalidInput),
            (Error::InvalidSeek, InvalidInput),
            (Error::SourceMovedBack, InvalidInput),
            (Error::InvalidCapacity(0), InvalidInput),
            (
                Error::CapacityForKey {
                    capacity: 1,
                    required: 2,
                },
                InvalidInput,
            ),
            (Error::Finished, InvalidInput),
            (Error::Random, Other),
            (Error::PartialSegment, InvalidInput),
            (
                Error::PartLength {
                    expected: 2,
                    actual: 1,
                },
                InvalidInput,
            ),
            (Error::FramedCobblestoneKey, InvalidInput),
            (Error::UnevenSegments, InvalidInput),
        ];
        let rows: Vec<usize> = cases.iter().map(|(e, _)| ordinal(e)).collect();
        assert_eq!(rows, (0..cases.len()).collect::<Vec<_>>(), "one row each");
        let mut messages = std::collections::HashSet::new();
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e:?}");
            let io_err: io::Error = e.clone().into();
            assert_eq!(io_err.kind(), kind, "{e:?}");
            assert_eq!(Error::from_io(&io_err), Some(&e));
            let text = e.to_string();
            assert!(text.starts_with("cipherio: "), "{text}");
            assert!(messages.insert(text.clone()), "{e:?}: {text} said twice");
        }
    }
}
