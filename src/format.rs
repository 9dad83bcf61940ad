//! The native v1 header: pure bytes, no I/O.
//!
//! See the crate documentation for the byte diagram. [`Header`] parses and
//! encodes the 53 header bytes; the reader and writer use it (or, for a
//! [`TinkKey`], the Tink header) to set up a stream's
//! sealing core and segment layout.

use crate::key::sealed::Profile;
use crate::seal::{self, NONCE_PREFIX_LEN, SegmentCipher};
use crate::tink::{HkdfHash, TinkKey};
use crate::{Algorithm, Error, Key, Provider};

/// The eight magic bytes that start every native stream: ASCII `cipherio`.
pub const MAGIC: [u8; 8] = *b"cipherio";
/// The native format version this crate writes and reads.
pub const VERSION: u8 = 1;
/// Bytes of random HKDF salt in the header.
pub const SALT_LEN: usize = 32;
/// Total length of the native v1 header.
pub const HEADER_LEN: usize = 8 + 1 + 1 + 4 + SALT_LEN + NONCE_PREFIX_LEN;
/// Bytes of authentication tag after each segment.
pub const TAG_LEN: usize = seal::TAG_LEN;
/// Default reader limit on the plaintext segment size a header may ask for.
pub const DEFAULT_MAX_SEGMENT_SIZE: usize = 16 << 20;
/// Largest writer capacity (plaintext bytes per segment): the default
/// reader limit, so that every reader with default settings reads every
/// writer's stream.
pub const MAX_WRITER_CAPACITY: usize = DEFAULT_MAX_SEGMENT_SIZE;

/// The fixed-size header of a native v1 stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The AEAD sealing every segment.
    pub algorithm: Algorithm,
    /// Plaintext bytes per segment (all but the last segment are full).
    pub segment_size: u32,
    /// The stream's random HKDF salt.
    pub salt: [u8; SALT_LEN],
    /// The stream's random 7-byte nonce prefix.
    pub nonce_prefix: [u8; NONCE_PREFIX_LEN],
}

impl Header {
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
        if h[8] != VERSION {
            return Err(Error::UnsupportedVersion(h[8]));
        }
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
        })
    }

    /// The header's [`HEADER_LEN`] bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8] = VERSION;
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
        Ok(Header {
            algorithm,
            segment_size,
            salt,
            nonce_prefix,
        })
    }

    /// The stream's sealing core: the key derived with HKDF-SHA256 from
    /// `key` (ikm), the salt, and info = the 53 header bytes ‖ `aad`.
    pub(crate) fn cipher(
        &self,
        key: &Key,
        aad: &[u8],
        provider: Provider,
    ) -> Result<SegmentCipher, Error> {
        if key.algorithm() != self.algorithm {
            return Err(Error::AlgorithmMismatch {
                stream: self.algorithm,
                key: key.algorithm(),
            });
        }
        let derived = seal::derive_key(
            HkdfHash::Sha256,
            self.algorithm.key_len(),
            key.as_bytes(),
            &self.salt,
            &[&self.to_bytes(), aad],
        );
        Ok(SegmentCipher::new(
            provider,
            self.algorithm,
            &derived,
            self.nonce_prefix,
        ))
    }
}

/// Plaintext bytes per segment. Every segment but the last is full; a
/// profile whose first segment also carries the header (Tink's) makes
/// `first` smaller than `rest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) first: usize,
    pub(crate) rest: usize,
    /// Whether an empty final segment may follow full ones (Tink readers
    /// accept it; the native format has one encoding per plaintext).
    pub(crate) empty_final: bool,
}

impl Layout {
    /// Plaintext capacity of segment `index`.
    pub(crate) fn plain(&self, index: u64) -> usize {
        if index == 0 { self.first } else { self.rest }
    }

    /// Sealed (ciphertext + tag) length of a full segment `index`.
    pub(crate) fn sealed(&self, index: u64) -> usize {
        self.plain(index) + TAG_LEN
    }
}

/// A stream as its profile set it up: the sealing core and the segment
/// layout. The reader and writer drive it; only the profile knows headers.
pub(crate) struct Stream {
    pub(crate) cipher: SegmentCipher,
    pub(crate) layout: Layout,
}

/// Starts a stream to write with `capacity`-byte segments: the header
/// bytes (to go out with the first segment) and the stream.
pub(crate) fn begin_write(
    profile: &Profile,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    match profile {
        Profile::Native(key) => native_write(key, aad, capacity, provider),
        Profile::Tink(key) => tink_write(key, aad, capacity, provider),
    }
}

/// Starts a stream to read from its first bytes: `Ok(None)` while they
/// hold no complete header, else the header's length and the stream. A
/// native header asking for segments over `max_segment` is refused here,
/// before the caller allocates anything for them.
pub(crate) fn begin_read(
    profile: &Profile,
    aad: &[u8],
    bytes: &[u8],
    max_segment: usize,
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    match profile {
        Profile::Native(key) => native_read(key, aad, bytes, max_segment, provider),
        Profile::Tink(key) => tink_read(key, aad, bytes, provider),
    }
}

impl Profile {
    /// The writer capacity when the caller sets none.
    pub(crate) fn default_capacity(&self) -> usize {
        match self {
            Profile::Native(_) => crate::DEFAULT_CAPACITY,
            Profile::Tink(key) => key.params().segment_plaintext(),
        }
    }

    /// The header length of this profile (for a Tink key, exact; natively
    /// always [`HEADER_LEN`]).
    pub(crate) fn header_len(&self) -> usize {
        match self {
            Profile::Native(_) => HEADER_LEN,
            Profile::Tink(key) => key.params().header_len(),
        }
    }
}

fn native_write(
    key: &Key,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    let size = segment_size(capacity)?;
    let header = Header::random(key.algorithm(), size)?;
    let cipher = header.cipher(key, aad, provider)?;
    let layout = Layout {
        first: capacity,
        rest: capacity,
        empty_final: false,
    };
    Ok((header.to_bytes().to_vec(), Stream { cipher, layout }))
}

fn native_read(
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
    // (On 32-bit targets a size near 2^32 has no room for its tag.)
    if size > max_segment || size.checked_add(TAG_LEN).is_none() {
        return Err(Error::SegmentTooLarge {
            size: u64::from(header.segment_size),
            limit: u64::try_from(max_segment).unwrap_or(u64::MAX),
        });
    }
    let cipher = header.cipher(key, aad, provider)?;
    let layout = Layout {
        first: size,
        rest: size,
        empty_final: false,
    };
    Ok(Some((HEADER_LEN, Stream { cipher, layout })))
}

/// The Tink header's first byte: its own length (24 or 40).
fn tink_len_byte(key: &TinkKey) -> u8 {
    u8::try_from(key.params().header_len())
        .unwrap_or_else(|_| unreachable!("a Tink header is at most 40 bytes"))
}

/// The Tink stream's sealing core and layout from its header: length byte,
/// salt (derived key size), nonce prefix.
fn tink_stream(key: &TinkKey, aad: &[u8], header: &[u8], provider: Provider) -> Stream {
    let p = key.params();
    let (salt, prefix) = header[1..].split_at(p.derived_key_size());
    let derived = seal::derive_key(
        p.hkdf_hash(),
        p.derived_key_size(),
        key.as_bytes(),
        salt,
        &[aad],
    );
    let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
    nonce_prefix.copy_from_slice(prefix);
    Stream {
        cipher: SegmentCipher::new(provider, p.algorithm(), &derived, nonce_prefix),
        layout: Layout {
            first: p.first_segment_plaintext(),
            rest: p.segment_plaintext(),
            empty_final: true,
        },
    }
}

fn tink_write(
    key: &TinkKey,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    let p = key.params();
    if capacity != p.segment_plaintext() {
        return Err(Error::InvalidCapacity(capacity));
    }
    let mut header = vec![0u8; p.header_len()];
    header[0] = tink_len_byte(key);
    fresh(&mut header[1..])?;
    let stream = tink_stream(key, aad, &header, provider);
    Ok((header, stream))
}

fn tink_read(
    key: &TinkKey,
    aad: &[u8],
    bytes: &[u8],
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    let expected = tink_len_byte(key);
    let Some(&found) = bytes.first() else {
        return Ok(None);
    };
    if found != expected {
        return Err(Error::HeaderLength { expected, found });
    }
    let Some(header) = bytes.get(..usize::from(expected)) else {
        return Ok(None);
    };
    Ok(Some((
        header.len(),
        tink_stream(key, aad, header, provider),
    )))
}

#[cfg(test)]
thread_local! {
    /// Bytes that replace the next streams' random salt and nonce prefix
    /// on this thread (tests that reproduce known ciphertexts).
    pub(crate) static FIXED_RANDOM: std::cell::RefCell<Option<Vec<u8>>> =
        const { std::cell::RefCell::new(None) };
}

/// Fills `buf` with fresh randomness for a salt and nonce prefix.
fn fresh(buf: &mut [u8]) -> Result<(), Error> {
    #[cfg(test)]
    if let Some(fixed) = FIXED_RANDOM.with(|f| f.borrow().clone()) {
        buf.copy_from_slice(&fixed[..buf.len()]);
        return Ok(());
    }
    getrandom::fill(buf).map_err(|_| Error::Random)
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
        b[8] = 2;
        assert_eq!(Header::parse(&b), Err(Error::UnsupportedVersion(2)));
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
