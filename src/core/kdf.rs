//! Per-stream key derivation: HKDF over the hash a profile names.

use std::fmt;

use hkdf::Hkdf;
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use zeroize::Zeroizing;

/// The hash function of the HKDF that derives each stream's key.
///
/// `#[non_exhaustive]`: Tink may allow another hash; a `match` needs a
/// wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HkdfHash {
    /// HKDF-SHA1 (Tink allows it; Tink's own test vectors use it).
    Sha1,
    /// HKDF-SHA256 (Tink's templates).
    Sha256,
    /// HKDF-SHA512.
    Sha512,
}

impl HkdfHash {
    /// The name Tink uses: `SHA1`, `SHA256` or `SHA512`.
    pub const fn name(self) -> &'static str {
        match self {
            HkdfHash::Sha1 => "SHA1",
            HkdfHash::Sha256 => "SHA256",
            HkdfHash::Sha512 => "SHA512",
        }
    }

    /// The hash named `name` (`SHA1`, `SHA256`, `SHA512`, any case, an
    /// optional `-` after `SHA`), if there is one.
    pub fn from_name(name: &str) -> Option<HkdfHash> {
        match name.to_ascii_uppercase().replace('-', "").as_str() {
            "SHA1" => Some(HkdfHash::Sha1),
            "SHA256" => Some(HkdfHash::Sha256),
            "SHA512" => Some(HkdfHash::Sha512),
            _ => None,
        }
    }
}

impl fmt::Display for HkdfHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Derives a per-stream key of `len` bytes with HKDF over `hash`: `ikm`
/// is the caller's key, `salt` the stream's random salt, and `info` the
/// concatenation of `info`.
pub(crate) fn derive_key(
    hash: HkdfHash,
    len: usize,
    ikm: &[u8],
    salt: &[u8],
    info: &[&[u8]],
) -> Zeroizing<Vec<u8>> {
    let mut okm = Zeroizing::new(vec![0u8; len]);
    // HKDF expands up to 255 hash blocks (5100 bytes for SHA-1); `len` is
    // a key length, at most 64.
    let done = match hash {
        HkdfHash::Sha1 => Hkdf::<Sha1>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
        HkdfHash::Sha256 => Hkdf::<Sha256>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
        HkdfHash::Sha512 => Hkdf::<Sha512>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
    };
    done.unwrap_or_else(|_| unreachable!("HKDF output of at most a few key lengths"));
    okm
}
