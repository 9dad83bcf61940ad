//! Cobblestone: C2SP chunked encryption (`c2sp.org/chunked-encryption`),
//! byte for byte, on the same [`CipherWriter`](crate::CipherWriter) and
//! [`CipherReader`](crate::CipherReader) (and every other front).
//!
//! A [`CobblestoneKey`] is the spec's *input key* for one of its two named
//! instantiations ([`Instantiation`]). Give it to a builder where a
//! [`Key`](crate::Key) would go; the builder's
//! [`associated_data`](crate::WriterBuilder::associated_data) is the spec's
//! *context* (empty by default):
//!
//! ```
//! use std::io::{Read, Write};
//! use cipherio::cobblestone::{CobblestoneKey, Instantiation};
//! use cipherio::{CipherReader, CipherWriter};
//!
//! let key = CobblestoneKey::from_hex(Instantiation::Cobblestone128, "000102030405060708090a0b0c0d0e0f")?;
//! let mut w = CipherWriter::builder(&key).associated_data(b"app/context").build(Vec::new());
//! w.write_all(b"hello, Cobblestone")?;
//! let ciphertext = w.finish()?; // pyca/cryptography, Go or the `cobblestone` crate reads it
//!
//! let mut r = CipherReader::builder(&key).associated_data(b"app/context").build(&ciphertext[..]);
//! let mut plaintext = Vec::new();
//! r.read_to_end(&mut plaintext)?;
//! assert_eq!(plaintext, b"hello, Cobblestone");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The format
//!
//! ```text
//! stream = salt (24 bytes, random) || commitment (32) || chunk 0 || chunk 1 || ...
//! key || base_nonce (12) || commitment = HKDF-Expand(SHA-512, prk = input key,
//!     info = "c2sp.org/chunked-encryption@v1+" || aead || 0x00 || salt || context)
//!     aead = "AEAD_AES_128_GCM" (Cobblestone-128, 16-byte keys)
//!          | "AEAD_AES_256_GCM" (Cobblestone-256, 32-byte keys)
//! chunk i = AES-GCM(key, nonce = base_nonce XOR BE96(i), aad = empty, plaintext_i)
//!     every chunk but the last holds 16384 plaintext bytes; the last holds
//!     0 ..= 16383 (a message of 16 KiB is one full chunk and an empty one)
//! ```
//!
//! # The rules, as this crate keeps them
//!
//! - **Key commitment first.** A reader derives the commitment from its
//!   key, the salt and the context and compares it (in constant time) with
//!   the stream's before it opens any chunk: a wrong key or context fails
//!   with [`Error::Authentication`] and
//!   releases nothing. One ciphertext never opens under two keys.
//! - **The last chunk is short.** A stream that ends after a full chunk is
//!   truncated ([`Error::Truncated`], an
//!   `UnexpectedEof`); an empty final chunk is valid. There is no final
//!   flag, so the writer seals a full chunk as soon as it is full, and the
//!   reader releases a full chunk as soon as it authenticates, without
//!   waiting for the bytes after it. `flush` therefore sends every full
//!   chunk written so far (the bytes of the chunk begun stay buffered:
//!   a chunk shorter than 16 KiB can only be the last one).
//! - **Chunk count.** The spec allows 2^38 chunks and lets an
//!   implementation stop earlier, but not before 2^32: writers stop at
//!   2^32 chunks (64 TiB), their counter's limit, with
//!   [`Error::StreamTooLong`] (what they hold can still be finished);
//!   readers open up to 2^38 chunks and refuse a stream whose length
//!   needs more with [`Error::TooManySegments`], before opening a chunk.
//! - **The length** is authenticated by opening the last chunk: what
//!   `SeekFrom::End` and `plaintext_len` do.
//!
//! # Capacity
//!
//! The chunk size is fixed by the format. For these keys a builder's
//! [`capacity`](crate::WriterBuilder::capacity) is an I/O buffer, not the
//! segment size: the reader's is its read-ahead (as for every key); the
//! writer buffers one chunk whatever capacity it is given, and
//! [`CipherWriter::capacity`](crate::CipherWriter::capacity) says 16384.
//! Both providers write the same bytes.

use std::fmt;

use hmac::{Hmac, KeyInit};
use sha2::Sha512;
use zeroize::Zeroizing;

use crate::tink::{hex_bytes, random_bytes};
use crate::{Algorithm, Error};

/// Plaintext bytes of every chunk but the last.
pub const CHUNK_SIZE: usize = 16 * 1024;

/// One of the spec's two named instantiations; both use HKDF-SHA-512.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Instantiation {
    /// Cobblestone-128: AES-128-GCM, 16-byte keys (the recommended one).
    Cobblestone128,
    /// Cobblestone-256: AES-256-GCM, 32-byte keys.
    Cobblestone256,
}

impl Instantiation {
    /// Both instantiations.
    pub const ALL: &'static [Instantiation] =
        &[Instantiation::Cobblestone128, Instantiation::Cobblestone256];

    /// The AEAD sealing the chunks.
    pub const fn algorithm(self) -> Algorithm {
        match self {
            Instantiation::Cobblestone128 => Algorithm::Aes128Gcm,
            Instantiation::Cobblestone256 => Algorithm::Aes256Gcm,
        }
    }

    /// Bytes of the input key (the AEAD's key size).
    pub const fn key_len(self) -> usize {
        self.algorithm().key_len()
    }

    /// The AEAD's name in the IANA registry, as the key derivation uses it.
    pub const fn aead_name(self) -> &'static str {
        match self {
            Instantiation::Cobblestone128 => "AEAD_AES_128_GCM",
            Instantiation::Cobblestone256 => "AEAD_AES_256_GCM",
        }
    }
}

impl fmt::Display for Instantiation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Instantiation::Cobblestone128 => "Cobblestone-128",
            Instantiation::Cobblestone256 => "Cobblestone-256",
        })
    }
}

/// A Cobblestone input key: exactly [`Instantiation::key_len`] uniformly
/// random bytes. The bytes are wiped on drop; `Debug` prints only the
/// instantiation.
#[derive(Clone)]
pub struct CobblestoneKey {
    instantiation: Instantiation,
    bytes: Zeroizing<Vec<u8>>,
    /// HMAC-SHA-512 keyed with `bytes`, where every stream's key
    /// derivation starts: keying hashes two blocks, half of what a
    /// stream's derivation hashes, done once per key instead. Boxed: a
    /// key is moved by value, and the HMAC's state is about 340 bytes.
    prk: Box<Hmac<Sha512>>,
}

impl CobblestoneKey {
    /// A key from raw bytes, 16 for Cobblestone-128 and 32 for
    /// Cobblestone-256.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKeyLength`] if `bytes` has the wrong length.
    pub fn new(instantiation: Instantiation, bytes: &[u8]) -> Result<CobblestoneKey, Error> {
        if bytes.len() != instantiation.key_len() {
            return Err(Error::InvalidKeyLength {
                expected: instantiation.key_len(),
                actual: bytes.len(),
            });
        }
        Ok(CobblestoneKey::keyed(
            instantiation,
            Zeroizing::new(bytes.to_vec()),
        ))
    }

    /// A key from its hex encoding (upper or lower case).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHex`] if `hex` is not valid hex, and
    /// [`Error::InvalidKeyLength`] if it decodes to the wrong length.
    pub fn from_hex(instantiation: Instantiation, hex: &str) -> Result<CobblestoneKey, Error> {
        CobblestoneKey::new(instantiation, &hex_bytes(hex)?)
    }

    /// A fresh random key from the operating system's generator.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails, as
    /// [`Key::generate`](crate::Key::generate) does. Use
    /// [`try_generate`](Self::try_generate) to get the error instead.
    pub fn generate(instantiation: Instantiation) -> CobblestoneKey {
        CobblestoneKey::try_generate(instantiation).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh random key, or [`Error::Random`] if the operating system's
    /// generator fails.
    ///
    /// # Errors
    ///
    /// [`Error::Random`] if the operating system's generator fails.
    pub fn try_generate(instantiation: Instantiation) -> Result<CobblestoneKey, Error> {
        Ok(CobblestoneKey::keyed(
            instantiation,
            random_bytes(instantiation.key_len())?,
        ))
    }

    /// The key of `bytes`, of the right length.
    fn keyed(instantiation: Instantiation, bytes: Zeroizing<Vec<u8>>) -> CobblestoneKey {
        let prk = <Hmac<Sha512> as KeyInit>::new_from_slice(&bytes)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        CobblestoneKey {
            instantiation,
            bytes,
            prk: Box::new(prk),
        }
    }

    /// HMAC-SHA-512 keyed with the input key (the key derivation's PRK).
    pub(crate) fn prk(&self) -> &Hmac<Sha512> {
        &self.prk
    }

    /// The instantiation this key is for.
    pub fn instantiation(&self) -> Instantiation {
        self.instantiation
    }

    /// The raw key bytes (for storing the key; handle with care).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for CobblestoneKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CobblestoneKey")
            .field("instantiation", &self.instantiation)
            .finish_non_exhaustive()
    }
}
