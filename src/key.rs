//! Algorithms and the caller's long-term key.

use std::fmt;

use zeroize::Zeroizing;

use crate::Error;
use crate::cobblestone::CobblestoneKey;
use crate::tink::{AesCtrHmacKey, AesGcmHkdfKey};

/// The AEAD that seals each segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// AES-128 in Galois/Counter Mode (16-byte key).
    Aes128Gcm,
    /// AES-256 in Galois/Counter Mode (32-byte key).
    Aes256Gcm,
    /// ChaCha20-Poly1305 as in RFC 8439 (32-byte key).
    ChaCha20Poly1305,
}

impl Algorithm {
    /// All algorithms, in identifier order. A slice, not an array: its
    /// length is no part of the API, so a new algorithm is no breaking
    /// change.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::Aes128Gcm,
        Algorithm::Aes256Gcm,
        Algorithm::ChaCha20Poly1305,
    ];

    /// Key length in bytes, for the caller's key and for each derived
    /// per-stream key.
    pub const fn key_len(self) -> usize {
        match self {
            Algorithm::Aes128Gcm => 16,
            Algorithm::Aes256Gcm | Algorithm::ChaCha20Poly1305 => 32,
        }
    }

    /// The algorithm's identifier byte in the native header.
    pub const fn id(self) -> u8 {
        match self {
            Algorithm::Aes128Gcm => 1,
            Algorithm::Aes256Gcm => 2,
            Algorithm::ChaCha20Poly1305 => 3,
        }
    }

    /// The algorithm with identifier byte `id`, if there is one.
    pub const fn from_id(id: u8) -> Option<Algorithm> {
        match id {
            1 => Some(Algorithm::Aes128Gcm),
            2 => Some(Algorithm::Aes256Gcm),
            3 => Some(Algorithm::ChaCha20Poly1305),
            _ => None,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Aes128Gcm => "AES-128-GCM",
            Algorithm::Aes256Gcm => "AES-256-GCM",
            Algorithm::ChaCha20Poly1305 => "ChaCha20-Poly1305",
        })
    }
}

/// A long-term key for one algorithm.
///
/// The key is never used directly: every stream derives its own key from it
/// with HKDF-SHA256 and a fresh random salt. The bytes are wiped when the
/// `Key` is dropped, and `Debug` prints only the algorithm.
#[derive(Clone)]
pub struct Key {
    alg: Algorithm,
    bytes: Zeroizing<Vec<u8>>,
}

impl Key {
    /// A key from raw bytes, which must be exactly
    /// [`alg.key_len()`](Algorithm::key_len) long.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKeyLength`] if `bytes` has the wrong length.
    pub fn new(alg: Algorithm, bytes: &[u8]) -> Result<Key, Error> {
        if bytes.len() != alg.key_len() {
            return Err(Error::InvalidKeyLength {
                expected: alg.key_len(),
                actual: bytes.len(),
            });
        }
        Ok(Key {
            alg,
            bytes: Zeroizing::new(bytes.to_vec()),
        })
    }

    /// A key from its hex encoding (upper or lower case).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHex`] if `hex` is not valid hex, and
    /// [`Error::InvalidKeyLength`] if it decodes to the wrong length.
    pub fn from_hex(alg: Algorithm, hex: &str) -> Result<Key, Error> {
        let bytes = Zeroizing::new(hex::decode(hex.trim()).map_err(|_| Error::InvalidHex)?);
        Key::new(alg, &bytes)
    }

    /// A fresh random key from the operating system's generator.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails, which on
    /// the supported platforms does not happen once it has been seeded. Use
    /// [`Key::try_generate`] to get the error instead. Every key type has
    /// this pair (`generate`, `try_generate`), as RustCrypto's
    /// `generate_key`/`try_generate_key`.
    pub fn generate(alg: Algorithm) -> Key {
        Key::try_generate(alg).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh random key, or [`Error::Random`] if the operating system's
    /// generator fails.
    ///
    /// # Errors
    ///
    /// [`Error::Random`] if the operating system's generator fails.
    pub fn try_generate(alg: Algorithm) -> Result<Key, Error> {
        let mut bytes = Zeroizing::new(vec![0u8; alg.key_len()]);
        getrandom::fill(&mut bytes).map_err(|_| Error::Random)?;
        Ok(Key { alg, bytes })
    }

    /// The algorithm this key is for.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The raw key bytes (for storing the key; handle with care).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// A key that [`CipherWriter`](crate::CipherWriter) and
/// [`CipherReader`](crate::CipherReader) can be built with; it chooses the
/// wire format. Implemented by [`Key`] (the native format), [`AesGcmHkdfKey`]
/// (Tink's AES-GCM-HKDF streaming format), [`AesCtrHmacKey`] (Tink's
/// AES-CTR-HMAC streaming format) and [`CobblestoneKey`] (C2SP chunked
/// encryption); sealed.
pub trait StreamKey: sealed::Sealed {}

impl StreamKey for Key {}
impl StreamKey for AesGcmHkdfKey {}
impl StreamKey for AesCtrHmacKey {}
impl StreamKey for CobblestoneKey {}
impl<K: StreamKey + ?Sized> StreamKey for &K {}
impl<K: StreamKey + ?Sized> StreamKey for Box<K> {}
impl<K: StreamKey + ?Sized> StreamKey for std::rc::Rc<K> {}
impl<K: StreamKey + ?Sized> StreamKey for std::sync::Arc<K> {}

pub(crate) mod sealed {
    pub use crate::profile::Profile;

    use super::{AesCtrHmacKey, AesGcmHkdfKey, CobblestoneKey, Key};

    /// Which wire format a stream uses, with its key.
    pub trait Sealed {
        fn profile(&self) -> Profile;
    }

    impl Sealed for Key {
        fn profile(&self) -> Profile {
            Profile::Native(self.clone())
        }
    }

    impl Sealed for AesGcmHkdfKey {
        fn profile(&self) -> Profile {
            Profile::Tink(self.clone())
        }
    }

    impl Sealed for AesCtrHmacKey {
        fn profile(&self) -> Profile {
            Profile::TinkCtrHmac(self.clone())
        }
    }

    impl Sealed for CobblestoneKey {
        fn profile(&self) -> Profile {
            Profile::Cobblestone(self.clone())
        }
    }

    impl<K: Sealed + ?Sized> Sealed for &K {
        fn profile(&self) -> Profile {
            (**self).profile()
        }
    }

    impl<K: Sealed + ?Sized> Sealed for Box<K> {
        fn profile(&self) -> Profile {
            (**self).profile()
        }
    }

    impl<K: Sealed + ?Sized> Sealed for std::rc::Rc<K> {
        fn profile(&self) -> Profile {
            (**self).profile()
        }
    }

    impl<K: Sealed + ?Sized> Sealed for std::sync::Arc<K> {
        fn profile(&self) -> Profile {
            (**self).profile()
        }
    }
}
