//! The native v1 profile: its 53-byte header, key derivation and layout.
//!
//! See the crate documentation for the byte diagram. [`Header`] parses and
//! encodes the header bytes (public through [`crate::format`]).

use super::{Stream, fresh};
use crate::core::kdf::{HkdfHash, derive_key};
use crate::core::layout::{Ends, Layout};
use crate::core::suite::{NONCE_PREFIX_LEN, Suite};
use crate::{Algorithm, Error, Key, Provider};

/// The eight magic bytes that start every native stream: ASCII `cipherio`.
pub const MAGIC: [u8; 8] = *b"cipherio";
/// The native format version this crate writes and reads.
pub const VERSION: u8 = 1;
/// The version byte of the framed variant (records whose lengths are
/// authenticated; see the crate documentation). A reader that knows only
/// [`VERSION`] refuses it as an unsupported version.
pub const VERSION_FRAMED: u8 = 2;
/// Bytes of random HKDF salt in the header.
pub const SALT_LEN: usize = 32;
/// Total length of the native v1 header.
pub const HEADER_LEN: usize = 8 + 1 + 1 + 4 + SALT_LEN + NONCE_PREFIX_LEN;
/// Bytes of authentication tag after each segment.
pub const TAG_LEN: usize = crate::core::suite::TAG_LEN;
/// The default buffer size of [`CipherWriter`](crate::CipherWriter) and
/// [`CipherReader`](crate::CipherReader) (and their async fronts): a native
/// writer's segment size, a reader's read-ahead.
pub const DEFAULT_CAPACITY: usize = 8 * 1024;
/// Default reader limit on the plaintext segment size a header may ask for.
pub const DEFAULT_MAX_SEGMENT_SIZE: usize = 16 << 20;
/// Largest writer capacity (plaintext bytes per segment): the default
/// reader limit, so that every reader with default settings reads every
/// writer's stream.
pub const MAX_WRITER_CAPACITY: usize = DEFAULT_MAX_SEGMENT_SIZE;
/// Largest segment size of a framed header: a record header holds a
/// record's length in 31 bits, so no record can be longer.
const MAX_FRAMED_SEGMENT_SIZE: usize = (1 << 31) - 1;

/// The fixed-size header of a native v1 stream. Build one with
/// [`Header::new`] or [`Header::parse`]; fields may be added with later
/// format versions (hence `#[non_exhaustive]`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Header {
    /// The AEAD sealing every segment.
    pub algorithm: Algorithm,
    /// Plaintext bytes per segment (all but the last segment are full).
    pub segment_size: u32,
    /// The stream's random HKDF salt.
    pub salt: [u8; SALT_LEN],
    /// The stream's random 7-byte nonce prefix.
    pub nonce_prefix: [u8; NONCE_PREFIX_LEN],
    /// The framed variant ([`VERSION_FRAMED`]): records of any length up
    /// to `segment_size`, each with an authenticated length; `false` for
    /// fixed-size segments ([`VERSION`]).
    pub framed: bool,
}

impl Header {
    /// A header with these fields (the bytes [`to_bytes`](Self::to_bytes)
    /// gives; nothing is checked until a reader parses them).
    pub fn new(
        algorithm: Algorithm,
        segment_size: u32,
        salt: [u8; SALT_LEN],
        nonce_prefix: [u8; NONCE_PREFIX_LEN],
    ) -> Header {
        Header {
            algorithm,
            segment_size,
            salt,
            nonce_prefix,
            framed: false,
        }
    }

    /// The same header for the framed variant (or not).
    pub fn with_framed(mut self, framed: bool) -> Header {
        self.framed = framed;
        self
    }

    /// Parses the first [`HEADER_LEN`] bytes of `bytes` (more may follow).
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `bytes` is shorter than the header,
    /// [`Error::BadMagic`], [`Error::UnsupportedVersion`],
    /// [`Error::UnknownAlgorithm`] or [`Error::ZeroSegmentSize`] for a
    /// malformed header.
    pub fn parse(bytes: &[u8]) -> Result<Header, Error> {
        if bytes.len() < MAGIC.len() {
            return if MAGIC.starts_with(bytes) {
                Err(Error::Truncated)
            } else {
                Err(Error::BadMagic)
            };
        }
        if bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::BadMagic);
        }
        let Some(h) = bytes.get(..HEADER_LEN) else {
            return Err(Error::Truncated);
        };
        let framed = match h[8] {
            VERSION => false,
            VERSION_FRAMED => true,
            v => return Err(Error::UnsupportedVersion(v)),
        };
        let algorithm = Algorithm::from_id(h[9]).ok_or(Error::UnknownAlgorithm(h[9]))?;
        let segment_size = u32::from_be_bytes([h[10], h[11], h[12], h[13]]);
        if segment_size == 0 {
            return Err(Error::ZeroSegmentSize);
        }
        let mut salt = [0u8; SALT_LEN];
        salt.copy_from_slice(&h[14..14 + SALT_LEN]);
        let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
        nonce_prefix.copy_from_slice(&h[14 + SALT_LEN..]);
        Ok(Header {
            algorithm,
            segment_size,
            salt,
            nonce_prefix,
            framed,
        })
    }

    /// The header's [`HEADER_LEN`] bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8] = if self.framed { VERSION_FRAMED } else { VERSION };
        h[9] = self.algorithm.id();
        h[10..14].copy_from_slice(&self.segment_size.to_be_bytes());
        h[14..14 + SALT_LEN].copy_from_slice(&self.salt);
        h[14 + SALT_LEN..].copy_from_slice(&self.nonce_prefix);
        h
    }

    /// A header with a fresh random salt and nonce prefix.
    pub(crate) fn random(algorithm: Algorithm, segment_size: u32) -> Result<Header, Error> {
        let mut r = [0u8; SALT_LEN + NONCE_PREFIX_LEN];
        fresh(&mut r)?;
        let mut salt = [0u8; SALT_LEN];
        salt.copy_from_slice(&r[..SALT_LEN]);
        let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
        nonce_prefix.copy_from_slice(&r[SALT_LEN..]);
        Ok(Header::new(algorithm, segment_size, salt, nonce_prefix))
    }

    /// The stream's suite: the key derived with HKDF-SHA256 from `key`
    /// (ikm), the salt, and info = the 53 header bytes ‖ `aad`.
    pub(crate) fn suite(&self, key: &Key, aad: &[u8], provider: Provider) -> Result<Suite, Error> {
        if key.algorithm() != self.algorithm {
            return Err(Error::AlgorithmMismatch {
                stream: self.algorithm,
                key: key.algorithm(),
            });
        }
        let derived = derive_key(
            HkdfHash::Sha256,
            self.algorithm.key_len(),
            key.as_bytes(),
            &self.salt,
            &[&self.to_bytes(), aad],
        );
        Ok(Suite::new(
            provider,
            self.algorithm,
            &derived,
            self.nonce_prefix,
        ))
    }
}

/// Fixed-size segments of `size` plaintext bytes, one encoding per
/// plaintext (no empty final segment after full ones); or, `framed`,
/// records of up to `size` bytes.
fn layout(size: usize, suite: &Suite, framed: bool) -> Layout {
    Layout {
        header: HEADER_LEN,
        first: size,
        rest: size,
        tag: suite.tag_len(),
        ends: Ends::Flag,
        framed,
    }
}

pub(super) fn native_write(
    key: &Key,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
    framed: bool,
) -> Result<(Vec<u8>, Stream), Error> {
    let size = segment_size(capacity)?;
    let header = Header::random(key.algorithm(), size)?.with_framed(framed);
    let suite = header.suite(key, aad, provider)?;
    let layout = layout(capacity, &suite, framed);
    Ok((header.to_bytes().to_vec(), Stream { suite, layout }))
}

pub(super) fn native_read(
    key: &Key,
    aad: &[u8],
    bytes: &[u8],
    max_segment: usize,
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    let header = match Header::parse(bytes) {
        Ok(h) => h,
        Err(Error::Truncated) => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = usize::try_from(header.segment_size).unwrap_or(usize::MAX);
    // A framed header's segment size is capped by the record header's
    // 31-bit length, whatever the reader's own limit.
    let limit = if header.framed {
        max_segment.min(MAX_FRAMED_SEGMENT_SIZE)
    } else {
        max_segment
    };
    // (On 32-bit targets a size near 2^32 has no room for its tag.)
    if size > limit || size.checked_add(TAG_LEN).is_none() {
        return Err(Error::SegmentTooLarge {
            size: u64::from(header.segment_size),
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
        });
    }
    let suite = header.suite(key, aad, provider)?;
    let layout = layout(size, &suite, header.framed);
    Ok(Some((HEADER_LEN, Stream { suite, layout })))
}

/// Checks a writer capacity and turns it into the header's field.
pub(crate) fn segment_size(capacity: usize) -> Result<u32, Error> {
    match u32::try_from(capacity) {
        Ok(s) if s > 0 && capacity <= MAX_WRITER_CAPACITY => Ok(s),
        _ => Err(Error::InvalidCapacity(capacity)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            algorithm: Algorithm::ChaCha20Poly1305,
            segment_size: 0x0001_0203,
            salt: [0x5a; SALT_LEN],
            nonce_prefix: [0xc3; NONCE_PREFIX_LEN],
            framed: false,
        }
    }

    #[test]
    fn header_bytes_are_as_documented() {
        let b = sample().to_bytes();
        assert_eq!(b.len(), 53);
        assert_eq!(&b[..8], b"cipherio");
        assert_eq!(b[8], 1);
        assert_eq!(b[9], 3);
        assert_eq!(&b[10..14], &[0, 1, 2, 3]);
        assert_eq!(&b[14..46], &[0x5a; 32]);
        assert_eq!(&b[46..53], &[0xc3; 7]);
        assert_eq!(Header::parse(&b), Ok(sample()));
    }

    #[test]
    fn malformed_headers_are_named() {
        let good = sample().to_bytes();
        assert_eq!(Header::parse(&good[..5]), Err(Error::Truncated));
        assert_eq!(Header::parse(&good[..52]), Err(Error::Truncated));
        assert_eq!(Header::parse(b"ciphe-"), Err(Error::BadMagic));
        let mut b = good;
        b[0] ^= 1;
        assert_eq!(Header::parse(&b), Err(Error::BadMagic));
        let mut b = good;
        b[8] = 3;
        assert_eq!(Header::parse(&b), Err(Error::UnsupportedVersion(3)));
        let mut b = good;
        b[8] = 2;
        assert_eq!(Header::parse(&b), Ok(sample().with_framed(true)));
        let mut b = good;
        b[9] = 0;
        assert_eq!(Header::parse(&b), Err(Error::UnknownAlgorithm(0)));
        let mut b = good;
        b[10..14].copy_from_slice(&[0; 4]);
        assert_eq!(Header::parse(&b), Err(Error::ZeroSegmentSize));
    }

    #[test]
    fn capacity_must_fit_the_header_field() {
        assert_eq!(segment_size(0), Err(Error::InvalidCapacity(0)));
        assert_eq!(segment_size(1), Ok(1));
        assert_eq!(segment_size(MAX_WRITER_CAPACITY), Ok(16 << 20));
        assert_eq!(
            segment_size(MAX_WRITER_CAPACITY + 1),
            Err(Error::InvalidCapacity(MAX_WRITER_CAPACITY + 1))
        );
    }
}
