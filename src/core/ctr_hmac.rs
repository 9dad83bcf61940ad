//! Tink's AES-CTR-HMAC segment cipher: AES-CTR, then a truncated HMAC over
//! the 16-byte segment IV and the ciphertext (encrypt-then-MAC), checked in
//! constant time before anything is decrypted.
//!
//! [`suite`](super::suite) drives it like its AEADs: segment *i* from the
//! keys and *i* alone. Both providers implement it; they write the same
//! bytes.

use aes::{Aes128, Aes256};
use ctr::cipher::{InnerIvInit, KeyInit, StreamCipher};
use ctr::{Ctr128BE, CtrCore};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use crate::Provider;
use crate::tink::HmacHash;

/// Bytes of the AES-CTR IV: nonce prefix ‖ BE32(i) ‖ last flag ‖ BE32(0).
pub(crate) const CTR_IV_LEN: usize = 16;
/// Bytes of HMAC key after the AES key in the HKDF output (whatever the
/// HMAC hash).
pub(crate) const HMAC_KEY_LEN: usize = 32;

/// The expanded AES key. (AWS-LC's key is held inline: one per stream,
/// so its size against the boxed variants does not matter.)
#[allow(clippy::large_enum_variant)]
enum CtrKey {
    Aes128(Box<Aes128>),
    Aes256(Box<Aes256>),
    #[cfg(feature = "aws-lc")]
    AwsLc(aws_lc_rs::cipher::EncryptingKey),
}

/// The keyed HMAC state, cloned for each segment.
#[allow(clippy::large_enum_variant)]
enum MacKey {
    Sha1(Box<Hmac<Sha1>>),
    Sha256(Box<Hmac<Sha256>>),
    Sha512(Box<Hmac<Sha512>>),
    #[cfg(feature = "aws-lc")]
    AwsLc(aws_lc_rs::hmac::Key),
}

/// One stream's AES-CTR key and HMAC key, and the tag length.
pub(crate) struct CtrHmac {
    ctr: CtrKey,
    mac: MacKey,
    tag_len: usize,
}

fn keyed<A: KeyInit>(key: &[u8]) -> Box<A> {
    Box::new(
        A::new_from_slice(key).unwrap_or_else(|_| unreachable!("derived key of the right length")),
    )
}

impl CtrHmac {
    /// The segment cipher from the HKDF output: `aes_key` (16 or 32 bytes)
    /// and the 32-byte `hmac_key`; tags of `tag_len` bytes (at most the
    /// hash's output).
    pub(crate) fn new(
        provider: Provider,
        aes_key: &[u8],
        hmac_key: &[u8],
        hash: HmacHash,
        tag_len: usize,
    ) -> CtrHmac {
        let (ctr, mac) = match provider {
            Provider::RustCrypto => {
                let ctr = if aes_key.len() == 16 {
                    CtrKey::Aes128(keyed(aes_key))
                } else {
                    CtrKey::Aes256(keyed(aes_key))
                };
                let mac = match hash {
                    HmacHash::Sha1 => MacKey::Sha1(keyed(hmac_key)),
                    HmacHash::Sha256 => MacKey::Sha256(keyed(hmac_key)),
                    HmacHash::Sha512 => MacKey::Sha512(keyed(hmac_key)),
                };
                (ctr, mac)
            }
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => {
                use aws_lc_rs::{cipher, hmac};
                let alg = if aes_key.len() == 16 {
                    &cipher::AES_128
                } else {
                    &cipher::AES_256
                };
                // Fails only for a wrong key length (ruled out) or when
                // AWS-LC cannot allocate: out of memory, as `Box::new`
                // aborts for RustCrypto.
                let ctr = cipher::UnboundCipherKey::new(alg, aes_key)
                    .and_then(cipher::EncryptingKey::ctr)
                    .unwrap_or_else(|_| panic!("AWS-LC could not set up AES-CTR (out of memory?)"));
                let alg = match hash {
                    HmacHash::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
                    HmacHash::Sha256 => hmac::HMAC_SHA256,
                    HmacHash::Sha512 => hmac::HMAC_SHA512,
                };
                (
                    CtrKey::AwsLc(ctr),
                    MacKey::AwsLc(hmac::Key::new(alg, hmac_key)),
                )
            }
        };
        CtrHmac { ctr, mac, tag_len }
    }

    /// Bytes of tag after each segment.
    pub(crate) fn tag_len(&self) -> usize {
        self.tag_len
    }

    /// Whether AWS-LC does the work (the tests count it).
    #[cfg(feature = "aws-lc")]
    pub(crate) fn is_aws_lc(&self) -> bool {
        matches!(self.ctr, CtrKey::AwsLc(_))
    }

    /// Applies the keystream of `iv` to `input` into `output` (same
    /// length); `false` only if the lengths differ.
    fn apply(&self, iv: &[u8; CTR_IV_LEN], input: &[u8], output: &mut [u8]) -> bool {
        match &self.ctr {
            CtrKey::Aes128(k) => Ctr128BE::from_core(CtrCore::inner_iv_init(&**k, iv.into()))
                .try_apply_keystream_b2b(input, output)
                .is_ok(),
            CtrKey::Aes256(k) => Ctr128BE::from_core(CtrCore::inner_iv_init(&**k, iv.into()))
                .try_apply_keystream_b2b(input, output)
                .is_ok(),
            #[cfg(feature = "aws-lc")]
            CtrKey::AwsLc(k) => {
                use aws_lc_rs::cipher::EncryptionContext;
                use aws_lc_rs::iv::FixedLength;
                if input.len() != output.len() {
                    return false;
                }
                let out = output;
                out.copy_from_slice(input);
                // AES-CTR in place; encrypting and decrypting are the same.
                k.less_safe_encrypt(out, EncryptionContext::Iv128(FixedLength::from(*iv)))
                    .is_ok()
            }
        }
    }

    /// The full HMAC of `iv ‖ body` into `out` (64 bytes, the largest
    /// hash); returns its length.
    fn mac(&self, iv: &[u8; CTR_IV_LEN], body: &[u8], out: &mut [u8; 64]) -> usize {
        fn rc<M: Mac + Clone>(m: &M, iv: &[u8], body: &[u8], out: &mut [u8]) -> usize {
            let tag = m.clone().chain_update(iv).chain_update(body).finalize();
            let tag = tag.as_bytes();
            out[..tag.len()].copy_from_slice(tag);
            tag.len()
        }
        match &self.mac {
            MacKey::Sha1(m) => rc(&**m, iv, body, out),
            MacKey::Sha256(m) => rc(&**m, iv, body, out),
            MacKey::Sha512(m) => rc(&**m, iv, body, out),
            #[cfg(feature = "aws-lc")]
            MacKey::AwsLc(k) => {
                let mut c = aws_lc_rs::hmac::Context::with_key(k);
                c.update(iv);
                c.update(body);
                let tag = c.sign();
                let tag = tag.as_ref();
                out[..tag.len()].copy_from_slice(tag);
                tag.len()
            }
        }
    }

    /// Encrypts `plaintext` into `body` and writes the truncated tag into
    /// `tag`; `false` only for wrong lengths.
    pub(crate) fn seal(
        &self,
        iv: &[u8; CTR_IV_LEN],
        plaintext: &[u8],
        body: &mut [u8],
        tag: &mut [u8],
    ) -> bool {
        if tag.len() != self.tag_len || !self.apply(iv, plaintext, body) {
            return false;
        }
        let mut full = zeroize::Zeroizing::new([0u8; 64]);
        let n = self.mac(iv, body, &mut full);
        debug_assert!(n >= self.tag_len);
        tag.copy_from_slice(&full[..self.tag_len]);
        true
    }

    /// Checks `tag` against `body` in constant time, then (only if it
    /// matches) decrypts `body` into `out`. `false` leaves `out` untouched.
    pub(crate) fn open(
        &self,
        iv: &[u8; CTR_IV_LEN],
        body: &[u8],
        tag: &[u8],
        out: &mut [u8],
    ) -> bool {
        if tag.len() != self.tag_len || body.len() != out.len() {
            return false;
        }
        let ok = match &self.mac {
            // `verify_truncated_left` compares the left `tag.len()` bytes
            // of the HMAC in constant time.
            MacKey::Sha1(m) => verify(&**m, iv, body, tag),
            MacKey::Sha256(m) => verify(&**m, iv, body, tag),
            MacKey::Sha512(m) => verify(&**m, iv, body, tag),
            #[cfg(feature = "aws-lc")]
            MacKey::AwsLc(_) => {
                let mut full = zeroize::Zeroizing::new([0u8; 64]);
                self.mac(iv, body, &mut full);
                // CRYPTO_memcmp.
                aws_lc_rs::constant_time::verify_slices_are_equal(&full[..self.tag_len], tag)
                    .is_ok()
            }
        };
        ok && self.apply(iv, body, out)
    }
}

fn verify<M: Mac + Clone>(m: &M, iv: &[u8], body: &[u8], tag: &[u8]) -> bool {
    m.clone()
        .chain_update(iv)
        .chain_update(body)
        .verify_truncated_left(tag)
        .is_ok()
}
