//! Tink's AES-CTR-HMAC streaming key type (`AesCtrHmacStreamingKey`).

use std::fmt;

use zeroize::Zeroizing;

use super::{HkdfHash, MAX_CIPHERTEXT_SEGMENT_SIZE};
use crate::Error;
use crate::core::suite::NONCE_PREFIX_LEN;

/// The hash of a Tink AES-CTR-HMAC key's HMAC (Tink's `hmac_hash_type`).
///
/// The same three hashes as [`HkdfHash`] today, but its own type: what
/// Tink allows for one need not stay what it allows for the other.
/// `#[non_exhaustive]`: a `match` needs a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HmacHash {
    /// HMAC-SHA1 (Tink allows it).
    Sha1,
    /// HMAC-SHA256 (Tink's templates).
    Sha256,
    /// HMAC-SHA512.
    Sha512,
}

impl HmacHash {
    /// The name Tink uses: `SHA1`, `SHA256` or `SHA512`.
    pub const fn name(self) -> &'static str {
        match self {
            HmacHash::Sha1 => "SHA1",
            HmacHash::Sha256 => "SHA256",
            HmacHash::Sha512 => "SHA512",
        }
    }

    /// The hash named `name` (`SHA1`, `SHA256`, `SHA512`, any case, an
    /// optional `-` after `SHA`), if there is one.
    pub fn from_name(name: &str) -> Option<HmacHash> {
        match name.to_ascii_uppercase().replace('-', "").as_str() {
            "SHA1" => Some(HmacHash::Sha1),
            "SHA256" => Some(HmacHash::Sha256),
            "SHA512" => Some(HmacHash::Sha512),
            _ => None,
        }
    }

    /// Bytes of output, the largest tag it gives.
    pub const fn output_len(self) -> usize {
        match self {
            HmacHash::Sha1 => 20,
            HmacHash::Sha256 => 32,
            HmacHash::Sha512 => 64,
        }
    }
}

impl fmt::Display for HmacHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Smallest tag Tink accepts.
pub const MIN_TAG_SIZE: usize = 10;

/// The parameters of a Tink `AesCtrHmacStreamingKey`, checked as Tink
/// checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AesCtrHmacParams {
    derived_key_size: usize,
    ciphertext_segment_size: usize,
    hkdf_hash: HkdfHash,
    hmac_hash: HmacHash,
    tag_size: usize,
}

impl AesCtrHmacParams {
    /// Tink's `AES128_CTR_HMAC_SHA256_4KB` template.
    pub const AES128_CTR_HMAC_SHA256_4KB: AesCtrHmacParams = AesCtrHmacParams::known(16, 4096);
    /// Tink's `AES128_CTR_HMAC_SHA256_1MB` template.
    pub const AES128_CTR_HMAC_SHA256_1MB: AesCtrHmacParams = AesCtrHmacParams::known(16, 1 << 20);
    /// Tink's `AES256_CTR_HMAC_SHA256_4KB` template.
    pub const AES256_CTR_HMAC_SHA256_4KB: AesCtrHmacParams = AesCtrHmacParams::known(32, 4096);
    /// Tink's `AES256_CTR_HMAC_SHA256_1MB` template.
    pub const AES256_CTR_HMAC_SHA256_1MB: AesCtrHmacParams = AesCtrHmacParams::known(32, 1 << 20);

    const fn known(derived_key_size: usize, ciphertext_segment_size: usize) -> AesCtrHmacParams {
        AesCtrHmacParams {
            derived_key_size,
            ciphertext_segment_size,
            hkdf_hash: HkdfHash::Sha256,
            hmac_hash: HmacHash::Sha256,
            tag_size: 32,
        }
    }

    /// Parameters as Tink accepts them: `derived_key_size` 16 (AES-128-CTR)
    /// or 32 (AES-256-CTR); `tag_size` from 10 up to the HMAC hash's output
    /// (20 for SHA1, 32 for SHA256, 64 for SHA512);
    /// `ciphertext_segment_size` above `derived_key_size + tag_size + 8`
    /// (the header length plus the tag: one plaintext byte fits in the
    /// first segment) and below 2^31.
    ///
    /// # Errors
    ///
    /// [`Error::DerivedKeySize`], [`Error::TagSize`] or
    /// [`Error::CiphertextSegmentSize`] for the parameter out of range.
    pub fn new(
        derived_key_size: usize,
        ciphertext_segment_size: usize,
        hkdf_hash: HkdfHash,
        hmac_hash: HmacHash,
        tag_size: usize,
    ) -> Result<AesCtrHmacParams, Error> {
        if derived_key_size != 16 && derived_key_size != 32 {
            return Err(Error::DerivedKeySize {
                size: derived_key_size,
            });
        }
        if !(MIN_TAG_SIZE..=hmac_hash.output_len()).contains(&tag_size) {
            return Err(Error::TagSize {
                size: tag_size,
                min: MIN_TAG_SIZE,
                max: hmac_hash.output_len(),
            });
        }
        let p = AesCtrHmacParams {
            derived_key_size,
            ciphertext_segment_size,
            hkdf_hash,
            hmac_hash,
            tag_size,
        };
        let min = derived_key_size + tag_size + 9;
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

    /// The HMAC hash.
    pub fn hmac_hash(&self) -> HmacHash {
        self.hmac_hash
    }

    /// Bytes of HMAC tag after each segment's ciphertext.
    pub fn tag_size(&self) -> usize {
        self.tag_size
    }

    /// Bytes of stream header: 1 + derived key size + 7.
    pub fn header_len(&self) -> usize {
        1 + self.derived_key_size + NONCE_PREFIX_LEN
    }

    /// Plaintext bytes in the first segment (which shares its ciphertext
    /// segment with the header).
    pub fn first_segment_plaintext(&self) -> usize {
        self.ciphertext_segment_size - self.header_len() - self.tag_size
    }

    /// Plaintext bytes in every later segment.
    pub fn segment_plaintext(&self) -> usize {
        self.ciphertext_segment_size - self.tag_size
    }
}

/// A Tink AES-CTR-HMAC streaming key: the raw key bytes (HKDF's input key
/// material, at least the derived key size) and the parameters. Give it to
/// a writer or reader where a [`Key`](crate::Key) or a
/// [`AesGcmHkdfKey`](super::AesGcmHkdfKey) would go. The bytes are wiped on drop;
/// `Debug` prints only the parameters.
#[derive(Clone)]
pub struct AesCtrHmacKey {
    params: AesCtrHmacParams,
    ikm: Zeroizing<Vec<u8>>,
}

impl AesCtrHmacKey {
    /// A key from Tink's `key_value` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooShort`] if `raw` is shorter than the derived key
    /// size (Tink's rule).
    pub fn new(params: AesCtrHmacParams, raw: &[u8]) -> Result<AesCtrHmacKey, Error> {
        let ikm = super::key_bytes(raw, params.derived_key_size)?;
        Ok(AesCtrHmacKey { params, ikm })
    }

    /// A key from the hex encoding of Tink's `key_value` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHex`] if `hex` is not valid hex, and
    /// [`Error::KeyTooShort`] if it is too short.
    pub fn from_hex(params: AesCtrHmacParams, hex: &str) -> Result<AesCtrHmacKey, Error> {
        AesCtrHmacKey::new(params, &super::hex_bytes(hex)?)
    }

    /// A fresh random key of the derived key size (what Tink's key manager
    /// makes), from the operating system's generator.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails, as
    /// [`Key::generate`](crate::Key::generate) does. Use
    /// [`try_generate`](Self::try_generate) to get the error instead.
    pub fn generate(params: AesCtrHmacParams) -> AesCtrHmacKey {
        AesCtrHmacKey::try_generate(params).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh random key of the derived key size, or [`Error::Random`] if
    /// the operating system's generator fails.
    ///
    /// # Errors
    ///
    /// [`Error::Random`] if the operating system's generator fails.
    pub fn try_generate(params: AesCtrHmacParams) -> Result<AesCtrHmacKey, Error> {
        let ikm = super::random_bytes(params.derived_key_size)?;
        Ok(AesCtrHmacKey { params, ikm })
    }

    /// The key's parameters.
    pub fn params(&self) -> &AesCtrHmacParams {
        &self.params
    }

    /// The raw key bytes (for storing the key; handle with care).
    pub fn as_bytes(&self) -> &[u8] {
        &self.ikm
    }
}

impl fmt::Debug for AesCtrHmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesCtrHmacKey")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_as_tink_checks_them() {
        use HmacHash::{Sha1, Sha256, Sha512};
        let new = |d, s, h, t| AesCtrHmacParams::new(d, s, HkdfHash::Sha256, h, t);
        let ok = |d, s, h, t| new(d, s, h, t).is_ok();
        assert!(
            ok(16, 41, Sha256, 16),
            "the smallest segment for a 16-byte tag"
        );
        assert!(!ok(16, 40, Sha256, 16));
        assert!(ok(32, 32 + 32 + 9, Sha256, 32));
        assert!(!ok(32, 32 + 32 + 8, Sha256, 32));
        assert!(!ok(24, 4096, Sha256, 32));
        for (h, max) in [(Sha1, 20), (Sha256, 32), (Sha512, 64)] {
            assert!(ok(16, 4096, h, 10) && ok(16, 4096, h, max));
            assert!(!ok(16, 4096, h, 9) && !ok(16, 4096, h, max + 1));
        }
        assert!(ok(16, MAX_CIPHERTEXT_SEGMENT_SIZE, Sha256, 32));
        assert!(!ok(16, MAX_CIPHERTEXT_SEGMENT_SIZE + 1, Sha256, 32));
        // Each rule has its own error, with the numbers a caller needs.
        assert!(matches!(
            new(24, 4096, Sha256, 32),
            Err(Error::DerivedKeySize { size: 24, .. })
        ));
        assert!(matches!(
            new(16, 4096, Sha1, 21),
            Err(Error::TagSize {
                size: 21,
                min: 10,
                max: 20,
                ..
            })
        ));
        assert!(matches!(
            new(16, 40, Sha256, 16),
            Err(Error::CiphertextSegmentSize {
                size: 40,
                min: 41,
                max: MAX_CIPHERTEXT_SEGMENT_SIZE,
                ..
            })
        ));
        assert!(matches!(
            new(16, MAX_CIPHERTEXT_SEGMENT_SIZE + 1, Sha256, 32),
            Err(Error::CiphertextSegmentSize { min: 57, .. })
        ));
        for t in [
            AesCtrHmacParams::AES128_CTR_HMAC_SHA256_4KB,
            AesCtrHmacParams::AES128_CTR_HMAC_SHA256_1MB,
            AesCtrHmacParams::AES256_CTR_HMAC_SHA256_4KB,
            AesCtrHmacParams::AES256_CTR_HMAC_SHA256_1MB,
        ] {
            let again = AesCtrHmacParams::new(
                t.derived_key_size(),
                t.ciphertext_segment_size(),
                t.hkdf_hash(),
                t.hmac_hash(),
                t.tag_size(),
            );
            assert_eq!(again.ok(), Some(t));
        }
        let p = AesCtrHmacParams::AES128_CTR_HMAC_SHA256_4KB;
        assert_eq!(
            (
                p.header_len(),
                p.first_segment_plaintext(),
                p.segment_plaintext()
            ),
            (24, 4040, 4064)
        );
        assert!(AesCtrHmacKey::new(p, &[0; 15]).is_err());
        assert!(AesCtrHmacKey::new(p, &[0; 16]).is_ok());
        let k = AesCtrHmacKey::generate(p);
        assert!(!format!("{k:?}").contains("as_bytes"));
    }
}
