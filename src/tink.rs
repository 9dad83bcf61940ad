//! The Tink-compatible profile: Google Tink's AES-GCM-HKDF streaming AEAD,
//! byte for byte, on the same [`CipherWriter`](crate::CipherWriter) and
//! [`CipherReader`](crate::CipherReader).
//!
//! An [`AesGcmHkdfKey`] is what a Tink `AesGcmHkdfStreamingKey` holds: the raw key
//! bytes (Tink's `key_value`, the HKDF input) and its [`AesGcmHkdfParams`]
//! (derived key size, ciphertext segment size, HKDF hash). Give it to the
//! writer or reader where a [`Key`](crate::Key) would go:
//!
//! ```
//! use std::io::{Read, Write};
//! use cipherio::tink::{HkdfHash, AesGcmHkdfKey, AesGcmHkdfParams};
//! use cipherio::{CipherReader, CipherWriter};
//!
//! let params = AesGcmHkdfParams::new(16, 4096, HkdfHash::Sha256)?; // = Tink's AES128_GCM_HKDF_4KB
//! let key = AesGcmHkdfKey::from_hex(params, "000102030405060708090a0b0c0d0e0f")?;
//!
//! let mut w = CipherWriter::builder(&key).associated_data(b"file.bin").build(Vec::new());
//! w.write_all(b"hello, Tink")?;
//! let ciphertext = w.finish()?; // any Tink StreamingAead with this key decrypts it
//!
//! let mut r = CipherReader::builder(&key).associated_data(b"file.bin").build(&ciphertext[..]);
//! let mut plaintext = Vec::new();
//! r.read_to_end(&mut plaintext)?;
//! assert_eq!(plaintext, b"hello, Tink");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The format
//!
//! ```text
//! header (H = 1 + derived_key_size + 7 bytes)
//!     H (1 byte) || salt (derived_key_size bytes, random) || nonce_prefix (7, random)
//! segment i: ciphertext || tag (16)
//!     segment 0 holds ciphertext_segment_size - H - 16 plaintext bytes,
//!     later ones ciphertext_segment_size - 16; the last holds 0 ..= that
//!     (an empty plaintext is the header and one 16-byte tag)
//! key    = HKDF(hkdf_hash, salt, ikm = raw key, info = associated data,
//!               L = derived_key_size); AES-128-GCM or AES-256-GCM by L
//! nonce_i = nonce_prefix || BE32(i) || 0x01 if last else 0x00; segment AAD empty
//! ```
//!
//! Unlike the native format, nothing in the header names the parameters:
//! reader and writer must be given the same [`AesGcmHkdfParams`].
//!
//! # Edge cases (where Tink's own implementations differ)
//!
//! - **Bytes after the final segment are refused** ([`Error::TrailingData`]
//!   or [`Error::Authentication`], depending on where the segment boundary
//!   falls), as Tink Java does. Tink C++ (and so Python) ignores junk after
//!   a full final segment; this crate does not, so a stream it accepts
//!   has exactly one length.
//! - **An empty final segment after full ones is accepted** when reading,
//!   as Tink does (the C++ implementation, checked through Tink's Python
//!   package; Tink Java's decrypting stream, by its source, too), so every
//!   well-formed ciphertext Tink writes or reads, this reader reads (the
//!   native format refuses it with [`Error::EmptyFinalSegment`]). The
//!   writer never produces one, and neither does Tink: a full last segment
//!   is sealed as the final one.
//! - A header whose first byte is not the length the parameters give is
//!   refused with [`Error::HeaderLength`]. Any other damage to the header
//!   changes the derived key or the nonces, and the first segment fails to
//!   authenticate.
//! - These rules hold for both key types.
//!
//! # AES-CTR-HMAC keys
//!
//! Tink's other streaming key type, `AesCtrHmacStreamingKey`, is
//! [`AesCtrHmacKey`] with [`AesCtrHmacParams`] (derived key size, segment
//! size, HKDF hash, HMAC hash, tag size; Tink's four templates as
//! constants). It goes wherever an [`AesGcmHkdfKey`] goes, with the same header
//! and layout; only the key derivation and the segment cipher differ:
//!
//! ```text
//! header    = H || salt (derived_key_size) || nonce_prefix (7), H = 1 + derived_key_size + 7
//! keys      = HKDF(hkdf_hash, salt, ikm = raw key, info = associated data,
//!                  L = derived_key_size + 32) = aes_key || hmac_key (32 bytes)
//! iv_i      = nonce_prefix || BE32(i) || 0x01 if last else 0x00 || 00 00 00 00
//! segment i = AES-CTR(aes_key, iv_i, plaintext)
//!             || HMAC(hmac_hash, hmac_key, iv_i || ciphertext)[..tag_size]
//! ```
//!
//! Segment 0 holds `ciphertext_segment_size - H - tag_size` plaintext
//! bytes, later ones `ciphertext_segment_size - tag_size`. A reader checks
//! each tag in constant time before it decrypts a byte. With
//! [`Provider::AwsLc`](crate::Provider::AwsLc) the AES-CTR and the HMAC
//! are AWS-LC's (`aws_lc_rs::cipher`, `aws_lc_rs::hmac`); both providers
//! write the same bytes.
//!
//! ```
//! use std::io::{Read, Write};
//! use cipherio::tink::{AesCtrHmacKey, AesCtrHmacParams};
//! use cipherio::{CipherReader, CipherWriter};
//!
//! let key = AesCtrHmacKey::generate(AesCtrHmacParams::AES128_CTR_HMAC_SHA256_4KB);
//! let mut w = CipherWriter::builder(&key).associated_data(b"obj").build(Vec::new());
//! w.write_all(b"hello, Tink CTR-HMAC")?;
//! let ciphertext = w.finish()?;
//! let mut r = CipherReader::builder(&key).associated_data(b"obj").build(&ciphertext[..]);
//! let mut plaintext = Vec::new();
//! r.read_to_end(&mut plaintext)?;
//! assert_eq!(plaintext, b"hello, Tink CTR-HMAC");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The reader's [`max_segment_size`](crate::ReaderBuilder::max_segment_size)
//! limit guards against hostile native headers; with a Tink key the segment
//! size comes from the key, not the stream, and the limit does not apply.
//! Memory follows the data, not the key's segment size: a writer or reader
//! holds at most one segment of plaintext and one sealed (plus its
//! read-ahead), grown as the data is written or arrives — one byte through
//! the largest segment size Tink allows costs about 8 KiB; 2 GiB written,
//! about 4 GiB.
//! A writer with a Tink key buffers one segment of the key's size; setting a
//! different [`capacity`](crate::WriterBuilder::capacity) is an
//! [`Error::CapacityForKey`], which names the size the key takes.

use std::fmt;

use zeroize::Zeroizing;

use crate::core::suite::{NONCE_PREFIX_LEN, TAG_LEN};
use crate::{Algorithm, Error};

pub use crate::core::kdf::HkdfHash;

mod ctr_hmac;
pub use ctr_hmac::{AesCtrHmacKey, AesCtrHmacParams, HmacHash, MIN_TAG_SIZE};

/// Largest ciphertext segment size Tink accepts: `i32::MAX`.
pub const MAX_CIPHERTEXT_SEGMENT_SIZE: usize = i32::MAX as usize;

/// The parameters of a Tink `AesGcmHkdfStreamingKey`, checked as Tink
/// checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AesGcmHkdfParams {
    derived_key_size: usize,
    ciphertext_segment_size: usize,
    hkdf_hash: HkdfHash,
}

impl AesGcmHkdfParams {
    /// Tink's `AES128_GCM_HKDF_4KB` template.
    pub const AES128_GCM_HKDF_4KB: AesGcmHkdfParams = AesGcmHkdfParams::known(16, 4096);
    /// Tink's `AES128_GCM_HKDF_1MB` template.
    pub const AES128_GCM_HKDF_1MB: AesGcmHkdfParams = AesGcmHkdfParams::known(16, 1 << 20);
    /// Tink's `AES256_GCM_HKDF_4KB` template.
    pub const AES256_GCM_HKDF_4KB: AesGcmHkdfParams = AesGcmHkdfParams::known(32, 4096);
    /// Tink's `AES256_GCM_HKDF_1MB` template.
    pub const AES256_GCM_HKDF_1MB: AesGcmHkdfParams = AesGcmHkdfParams::known(32, 1 << 20);

    const fn known(derived_key_size: usize, ciphertext_segment_size: usize) -> AesGcmHkdfParams {
        AesGcmHkdfParams {
            derived_key_size,
            ciphertext_segment_size,
            hkdf_hash: HkdfHash::Sha256,
        }
    }

    /// Parameters as Tink accepts them: `derived_key_size` 16 (AES-128-GCM)
    /// or 32 (AES-256-GCM); `ciphertext_segment_size` from the header
    /// length + 17 (one plaintext byte in the first segment; 41 for 16-byte
    /// keys, 57 for 32-byte keys) up to 2^31 − 1, any alignment.
    ///
    /// A large segment costs memory only when it is used: a writer or
    /// reader holds at most one segment of plaintext and one of ciphertext,
    /// grown as the data is written or arrives (one byte through 2^31 − 1-byte
    /// segments costs about 8 KiB; 2 GiB written costs about 4 GiB).
    ///
    /// # Errors
    ///
    /// [`Error::DerivedKeySize`] or [`Error::CiphertextSegmentSize`] for
    /// the parameter out of range.
    pub fn new(
        derived_key_size: usize,
        ciphertext_segment_size: usize,
        hkdf_hash: HkdfHash,
    ) -> Result<AesGcmHkdfParams, Error> {
        if derived_key_size != 16 && derived_key_size != 32 {
            return Err(Error::DerivedKeySize {
                size: derived_key_size,
            });
        }
        let p = AesGcmHkdfParams {
            derived_key_size,
            ciphertext_segment_size,
            hkdf_hash,
        };
        let min = p.header_len() + TAG_LEN + 1;
        if !(min..=MAX_CIPHERTEXT_SEGMENT_SIZE).contains(&ciphertext_segment_size) {
            return Err(Error::CiphertextSegmentSize {
                size: ciphertext_segment_size,
                min,
                max: MAX_CIPHERTEXT_SEGMENT_SIZE,
            });
        }
        Ok(p)
    }

    /// Bytes of each per-stream AES key (16 or 32).
    pub fn derived_key_size(&self) -> usize {
        self.derived_key_size
    }

    /// Bytes of each sealed segment (ciphertext and tag); the first one
    /// also holds the header.
    pub fn ciphertext_segment_size(&self) -> usize {
        self.ciphertext_segment_size
    }

    /// The HKDF hash.
    pub fn hkdf_hash(&self) -> HkdfHash {
        self.hkdf_hash
    }

    /// The AEAD sealing the segments: AES-GCM with the derived key size.
    pub fn algorithm(&self) -> Algorithm {
        if self.derived_key_size == 16 {
            Algorithm::Aes128Gcm
        } else {
            Algorithm::Aes256Gcm
        }
    }

    /// Bytes of stream header: 1 + derived key size + 7.
    pub fn header_len(&self) -> usize {
        1 + self.derived_key_size + NONCE_PREFIX_LEN
    }

    /// Plaintext bytes in the first segment (which shares its ciphertext
    /// segment with the header).
    pub fn first_segment_plaintext(&self) -> usize {
        self.ciphertext_segment_size - self.header_len() - TAG_LEN
    }

    /// Plaintext bytes in every later segment.
    pub fn segment_plaintext(&self) -> usize {
        self.ciphertext_segment_size - TAG_LEN
    }
}

/// A Tink AES-GCM-HKDF streaming key (Tink's `AesGcmHkdfStreamingKey`,
/// beside [`AesCtrHmacKey`] for `AesCtrHmacStreamingKey`): the raw key
/// bytes (HKDF's input key material, at least the derived key size) and
/// the parameters. The bytes are wiped on drop; `Debug` prints only the
/// parameters.
///
/// Memory: a writer or reader with this key holds at most one segment of
/// plaintext and one of ciphertext (the reader also its read-ahead), and
/// only as much as has been written or has arrived: the buffers grow with
/// the data, so one byte through 2^31 − 1-byte segments costs about 8 KiB.
#[derive(Clone)]
pub struct AesGcmHkdfKey {
    params: AesGcmHkdfParams,
    ikm: Zeroizing<Vec<u8>>,
}

impl AesGcmHkdfKey {
    /// A key from Tink's `key_value` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooShort`] if `raw` is shorter than the derived key
    /// size (Tink's rule).
    pub fn new(params: AesGcmHkdfParams, raw: &[u8]) -> Result<AesGcmHkdfKey, Error> {
        let ikm = key_bytes(raw, params.derived_key_size)?;
        Ok(AesGcmHkdfKey { params, ikm })
    }

    /// A key from the hex encoding of Tink's `key_value` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHex`] if `hex` is not valid hex, and
    /// [`Error::KeyTooShort`] if it is too short.
    pub fn from_hex(params: AesGcmHkdfParams, hex: &str) -> Result<AesGcmHkdfKey, Error> {
        AesGcmHkdfKey::new(params, &hex_bytes(hex)?)
    }

    /// A fresh random key of the derived key size (what Tink's key manager
    /// makes), from the operating system's generator.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails, as
    /// [`Key::generate`](crate::Key::generate) does. Use
    /// [`try_generate`](Self::try_generate) to get the error instead.
    pub fn generate(params: AesGcmHkdfParams) -> AesGcmHkdfKey {
        AesGcmHkdfKey::try_generate(params).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh random key of the derived key size, or [`Error::Random`] if
    /// the operating system's generator fails.
    ///
    /// # Errors
    ///
    /// [`Error::Random`] if the operating system's generator fails.
    pub fn try_generate(params: AesGcmHkdfParams) -> Result<AesGcmHkdfKey, Error> {
        let ikm = random_bytes(params.derived_key_size)?;
        Ok(AesGcmHkdfKey { params, ikm })
    }

    /// The key's parameters.
    pub fn params(&self) -> &AesGcmHkdfParams {
        &self.params
    }

    /// The raw key bytes (for storing the key; handle with care).
    pub fn as_bytes(&self) -> &[u8] {
        &self.ikm
    }
}

impl fmt::Debug for AesGcmHkdfKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesGcmHkdfKey")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// Tink's raw key bytes, at least `minimum` (the derived key size) long.
fn key_bytes(raw: &[u8], minimum: usize) -> Result<Zeroizing<Vec<u8>>, Error> {
    if raw.len() < minimum {
        return Err(Error::KeyTooShort {
            minimum,
            actual: raw.len(),
        });
    }
    Ok(Zeroizing::new(raw.to_vec()))
}

/// Key bytes from hex (wiped on drop).
pub(crate) fn hex_bytes(hex: &str) -> Result<Zeroizing<Vec<u8>>, Error> {
    Ok(Zeroizing::new(
        hex::decode(hex.trim()).map_err(|_| Error::InvalidHex)?,
    ))
}

/// `len` fresh random key bytes.
pub(crate) fn random_bytes(len: usize) -> Result<Zeroizing<Vec<u8>>, Error> {
    let mut ikm = Zeroizing::new(vec![0u8; len]);
    getrandom::fill(&mut ikm).map_err(|_| Error::Random)?;
    Ok(ikm)
}

/// Byte-exact reproduction of Tink's deterministic vectors and published
/// known answers: these need the salt and nonce prefix injected, which only
/// a unit test can do (`probe::FIXED_RANDOM`).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod vectors {
    use std::io::Write;

    use serde_json::Value;
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::probe::FIXED_RANDOM;
    use crate::{CipherWriter, Provider, StreamKey};

    fn field<'a>(v: &'a Value, name: &str) -> &'a str {
        v[name].as_str().unwrap()
    }

    fn num(v: &Value, name: &str) -> usize {
        match &v[name] {
            Value::String(t) => t.parse().unwrap(),
            n => usize::try_from(n.as_u64().unwrap()).unwrap(),
        }
    }

    /// Encrypts `plaintext` with the salt and prefix injected, writing it
    /// in `chunk`-byte pieces.
    fn encrypt<K: StreamKey>(
        key: &K,
        aad: &[u8],
        fixed: Vec<u8>,
        plaintext: &[u8],
        (chunk, provider): (usize, Provider),
    ) -> Vec<u8> {
        FIXED_RANDOM.with(|f| *f.borrow_mut() = Some(fixed));
        let mut w = CipherWriter::builder(key)
            .associated_data(aad)
            .provider(provider)
            .build(Vec::new());
        for piece in plaintext.chunks(chunk) {
            w.write_all(piece).unwrap();
        }
        let out = w.finish().unwrap();
        FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
        out
    }

    #[test]
    fn deterministic_vectors_and_kats_are_reproduced_byte_for_byte() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tink_vectors.json");
        // The published package holds no tests directory (the 2 MB of
        // vectors stay in the repository, which always has them).
        let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
        if !std::path::Path::new(tests).exists() {
            eprintln!("skipped: the published package has no {tests}");
            return;
        }
        let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let (mut checked, mut ctr) = (0, 0);
        for group in ["deterministic_vectors", "tink_source_kats"] {
            let cases = all[group].as_array().unwrap();
            assert!(!cases.is_empty());
            for case in cases {
                let id = field(case, "id");
                let p = if case["params"].is_object() {
                    &case["params"]
                } else {
                    &all["param_sets"][field(case, "param_set")]
                };
                let hash = |f| HkdfHash::from_name(field(p, f)).unwrap();
                let (dks, css) = (
                    num(p, "derived_key_size"),
                    num(p, "ciphertext_segment_size"),
                );
                // The key of the case's type, and its plaintext segment.
                let key: Box<dyn StreamKey> = if field(p, "alg") == "AES_CTR_HMAC_STREAMING" {
                    ctr += 1;
                    let params = AesCtrHmacParams::new(
                        dks,
                        css,
                        hash("hkdf_hash"),
                        HmacHash::from_name(field(p, "hmac_hash")).unwrap(),
                        num(p, "tag_size"),
                    )
                    .unwrap();
                    Box::new(AesCtrHmacKey::from_hex(params, field(case, "key")).unwrap())
                } else {
                    let params = AesGcmHkdfParams::new(dks, css, hash("hkdf_hash")).unwrap();
                    Box::new(AesGcmHkdfKey::from_hex(params, field(case, "key")).unwrap())
                };
                let tag = if field(p, "alg") == "AES_CTR_HMAC_STREAMING" {
                    num(p, "tag_size")
                } else {
                    TAG_LEN
                };
                let aad = hex::decode(field(case, "aad")).unwrap();
                let mut fixed = hex::decode(field(case, "salt")).unwrap();
                fixed.extend(hex::decode(field(case, "nonce_prefix")).unwrap());
                let plaintext = match case["plaintext"].as_str() {
                    Some(h) => hex::decode(h).unwrap(),
                    None => (0..num(case, "plaintext_len"))
                        .map(|i| u8::try_from(i % 251).unwrap())
                        .collect(),
                };
                // Every provider reproduces Tink's bytes (the ways of
                // writing cycle through the providers).
                let ways = [usize::MAX, 1, 1000, css - tag];
                for (i, &chunk) in ways.iter().enumerate() {
                    let provider = Provider::ALL[i % Provider::ALL.len()];
                    let how = (chunk.max(1), provider);
                    let ct = encrypt(&key, &aad, fixed.clone(), &plaintext, how);
                    assert_eq!(ct.len(), num(case, "ciphertext_len"), "{id}");
                    match case["ciphertext"].as_str() {
                        Some(want) => assert!(
                            hex::encode(&ct) == want,
                            "{id} (chunk {chunk}, {provider:?})"
                        ),
                        None => assert_eq!(
                            hex::encode(Sha256::digest(&ct)),
                            field(case, "ciphertext_sha256"),
                            "{id} (chunk {chunk}, {provider:?})"
                        ),
                    }
                }
                checked += 1;
            }
        }
        // AES-GCM-HKDF: 104 + 8 known answers; AES-CTR-HMAC: 70 + 6.
        assert_eq!((checked - ctr, ctr), (104 + 8, 70 + 6));
    }
}
