//! The per-segment AEAD of each provider: the only code in the crate that
//! touches an AEAD.
//!
//! A [`Suite`] holds one stream's derived key and nonces and seals or
//! opens segment *i* with the STREAM nonce prefix ‖ BE32(*i*) ‖ last-flag
//! (or, for Cobblestone, base nonce XOR *i*) and a per-segment AAD, from the key and *i* alone: it keeps no counter, so
//! segments can be sealed in any order or on any thread (`&self`). It knows
//! nothing about headers, buffers or I/O: a profile builds it, the sealer
//! and opener say which segment.
//!
//! Besides the AEADs, a suite can hold Tink's AES-CTR-HMAC segment cipher
//! ([`CtrHmac`]): its tag length is the key's (10 to 64 bytes, not 16), its
//! IV the STREAM nonce followed by four zero bytes, and it takes no
//! per-segment AAD (Tink's segments have none).

use aead::consts::{U12, U16};
use aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use inout::InOutBuf;

use crate::core::ctr_hmac::{CTR_IV_LEN, CtrHmac};
use crate::tink::HmacHash;
use crate::{Algorithm, Error, Provider, probe};

/// Bytes of authentication tag after each segment's ciphertext.
pub const TAG_LEN: usize = 16;
/// Bytes of random nonce prefix per stream.
pub const NONCE_PREFIX_LEN: usize = 7;
pub(crate) const NONCE_LEN: usize = 12;

/// One algorithm's AEAD instance, keyed with a derived stream key.
/// Each RustCrypto type wipes its key schedule on drop (`zeroize`
/// feature); AWS-LC cleanses its context when it frees it
/// (`OPENSSL_free`).
enum SegmentAead {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
    #[cfg(feature = "aws-lc")]
    AwsLc(aws_lc_rs::aead::LessSafeKey),
    /// Tink's AES-CTR-HMAC (either provider inside).
    CtrHmac(Box<CtrHmac>),
}

fn keyed<A: KeyInit>(key: &[u8]) -> Box<A> {
    let a = A::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("derived key length matches the algorithm"));
    Box::new(a)
}

#[cfg(feature = "aws-lc")]
fn aws_lc_key(alg: Algorithm, key: &[u8]) -> aws_lc_rs::aead::LessSafeKey {
    use aws_lc_rs::aead;
    let a = match alg {
        Algorithm::Aes128Gcm => &aead::AES_128_GCM,
        Algorithm::Aes256Gcm => &aead::AES_256_GCM,
        Algorithm::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
    };
    // Fails only for a wrong key length (ruled out) or when AWS-LC cannot
    // allocate its context: out of memory, as `Box::new` aborts for the
    // RustCrypto AEADs.
    let k = aead::UnboundKey::new(a, key)
        .unwrap_or_else(|_| panic!("AWS-LC could not set up an AEAD context (out of memory?)"));
    aead::LessSafeKey::new(k)
}

/// Seals `plaintext` into `body` (same length) and `tag` with a RustCrypto
/// AEAD, out of place.
fn rc_seal<A: AeadInOut<NonceSize = U12, TagSize = U16>>(
    a: &A,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    plaintext: &[u8],
    body: &mut [u8],
    tag: &mut [u8],
) -> Result<(), Error> {
    let buf = InOutBuf::new(plaintext, body).map_err(|_| Error::StreamTooLong)?;
    let t = a
        .encrypt_inout_detached(nonce.into(), aad, buf)
        // The AEADs refuse only messages above their length limit (2^36
        // bytes for GCM), far beyond any segment.
        .map_err(|_| Error::StreamTooLong)?;
    tag.copy_from_slice(&t);
    Ok(())
}

/// Opens `body` (ciphertext) and `tag` into `out` (same length) with a
/// RustCrypto AEAD, out of place.
fn rc_open<A: AeadInOut<NonceSize = U12, TagSize = U16>>(
    a: &A,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    body: &[u8],
    tag: &[u8],
    out: &mut [u8],
) -> bool {
    let Ok(tag) = <&[u8; TAG_LEN]>::try_from(tag) else {
        return false;
    };
    let Ok(buf) = InOutBuf::new(body, out) else {
        return false;
    };
    a.decrypt_inout_detached(nonce.into(), aad, buf, tag.into())
        .is_ok()
}

impl SegmentAead {
    /// The provider whose code this is.
    #[inline]
    fn provider(&self) -> Provider {
        match self {
            SegmentAead::Aes128(_) | SegmentAead::Aes256(_) | SegmentAead::ChaCha(_) => {
                Provider::RustCrypto
            }
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(_) => Provider::AwsLc,
            #[cfg(feature = "aws-lc")]
            SegmentAead::CtrHmac(c) if c.is_aws_lc() => Provider::AwsLc,
            SegmentAead::CtrHmac(_) => Provider::RustCrypto,
        }
    }
}

/// How a suite makes segment *i*'s nonce.
#[derive(Clone, Copy)]
enum Nonces {
    /// STREAM: prefix ‖ BE32(*i*) ‖ last-flag; *i* < 2^32.
    Stream([u8; NONCE_PREFIX_LEN]),
    /// Base nonce XOR BE96(*i*), no last flag (the final unit is told by
    /// its length); *i* < 2^38.
    Xor([u8; NONCE_LEN]),
}

/// Segments a base-nonce XOR counter numbers: 2^38.
pub(crate) const XOR_SEGMENTS: u64 = 1 << 38;

/// One stream's per-segment AEAD: derived key, nonces, provider.
pub(crate) struct Suite {
    aead: SegmentAead,
    nonces: Nonces,
}

impl Suite {
    /// The suite of one stream from its derived key and nonce prefix.
    pub(crate) fn new(
        provider: Provider,
        alg: Algorithm,
        derived: &[u8],
        prefix: [u8; NONCE_PREFIX_LEN],
    ) -> Self {
        let aead = match (provider, alg) {
            (Provider::RustCrypto, Algorithm::Aes128Gcm) => SegmentAead::Aes128(keyed(derived)),
            (Provider::RustCrypto, Algorithm::Aes256Gcm) => SegmentAead::Aes256(keyed(derived)),
            (Provider::RustCrypto, Algorithm::ChaCha20Poly1305) => {
                SegmentAead::ChaCha(keyed(derived))
            }
            #[cfg(feature = "aws-lc")]
            (Provider::AwsLc, alg) => SegmentAead::AwsLc(aws_lc_key(alg, derived)),
        };
        Suite {
            aead,
            nonces: Nonces::Stream(prefix),
        }
    }

    /// The suite of a stream whose nonces are `base` XOR the big-endian
    /// segment index, with no last flag.
    pub(crate) fn xor(
        provider: Provider,
        alg: Algorithm,
        derived: &[u8],
        base: [u8; NONCE_LEN],
    ) -> Self {
        let mut s = Suite::new(provider, alg, derived, [0; NONCE_PREFIX_LEN]);
        s.nonces = Nonces::Xor(base);
        s
    }

    /// The AES-CTR-HMAC suite of one Tink stream: `aes_key` (16 or 32
    /// bytes) and `hmac_key` (32) from its HKDF output, HMAC over `hash`
    /// truncated to `tag_len` bytes.
    pub(crate) fn ctr_hmac(
        provider: Provider,
        aes_key: &[u8],
        hmac_key: &[u8],
        hash: HmacHash,
        tag_len: usize,
        prefix: [u8; NONCE_PREFIX_LEN],
    ) -> Self {
        let c = CtrHmac::new(provider, aes_key, hmac_key, hash, tag_len);
        Suite {
            aead: SegmentAead::CtrHmac(Box::new(c)),
            nonces: Nonces::Stream(prefix),
        }
    }

    /// Bytes of tag after each segment's ciphertext.
    pub(crate) fn tag_len(&self) -> usize {
        match &self.aead {
            SegmentAead::CtrHmac(c) => c.tag_len(),
            _ => TAG_LEN,
        }
    }

    /// The AES-CTR IV of segment `index`: its STREAM nonce, then four zero
    /// bytes where the block counter starts.
    fn ctr_iv(&self, index: u64, last: bool) -> Option<[u8; CTR_IV_LEN]> {
        let mut iv = [0u8; CTR_IV_LEN];
        iv[..NONCE_LEN].copy_from_slice(&self.nonce(index, last)?);
        Some(iv)
    }

    /// The nonce of segment `index`: STREAM's (`None` past segment
    /// 2^32 − 1), or the XOR of the base nonce and `index` (`None` past
    /// segment 2^38 − 1; `last` plays no part).
    fn nonce(&self, index: u64, last: bool) -> Option<[u8; NONCE_LEN]> {
        match self.nonces {
            Nonces::Stream(prefix) => {
                let counter = u32::try_from(index).ok()?;
                let mut n = [0u8; NONCE_LEN];
                n[..NONCE_PREFIX_LEN].copy_from_slice(&prefix);
                n[NONCE_PREFIX_LEN..NONCE_LEN - 1].copy_from_slice(&counter.to_be_bytes());
                n[NONCE_LEN - 1] = u8::from(last);
                Some(n)
            }
            Nonces::Xor(mut n) => {
                if index >= XOR_SEGMENTS {
                    return None;
                }
                for (b, c) in n[NONCE_LEN - 8..].iter_mut().zip(index.to_be_bytes()) {
                    *b ^= c;
                }
                Some(n)
            }
        }
    }

    /// Seals segment `index` from `plaintext` into `out`, which must be
    /// exactly `plaintext.len() + tag_len()` bytes: ciphertext, then tag.
    /// [`Error::StreamTooLong`] past segment 2^32 − 1.
    pub(crate) fn seal_at(
        &self,
        index: u64,
        last: bool,
        aad: &[u8],
        plaintext: &[u8],
        out: &mut [u8],
    ) -> Result<(), Error> {
        debug_assert_eq!(out.len(), plaintext.len() + self.tag_len());
        let nonce = self.nonce(index, last).ok_or(Error::StreamTooLong)?;
        let (body, tag) = out.split_at_mut(plaintext.len());
        probe::used(self.aead.provider());
        match &self.aead {
            SegmentAead::Aes128(a) => rc_seal(&**a, &nonce, aad, plaintext, body, tag)?,
            SegmentAead::Aes256(a) => rc_seal(&**a, &nonce, aad, plaintext, body, tag)?,
            SegmentAead::ChaCha(a) => rc_seal(&**a, &nonce, aad, plaintext, body, tag)?,
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(k) => {
                use aws_lc_rs::aead::{Aad, Nonce};
                // Out of place, no copy: plaintext -> body, tag -> tag.
                k.seal_out_of_place_scatter(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    plaintext,
                    body,
                    &[],
                    tag,
                )
                // Only wrong lengths (ruled out above) or a message over
                // the AEAD's limit fail.
                .map_err(|_| Error::StreamTooLong)?;
            }
            SegmentAead::CtrHmac(c) => {
                debug_assert!(aad.is_empty(), "Tink segments have no AAD");
                let iv = self.ctr_iv(index, last).ok_or(Error::StreamTooLong)?;
                // Only wrong lengths fail (ruled out above).
                if !c.seal(&iv, plaintext, body, tag) {
                    return Err(Error::StreamTooLong);
                }
            }
        }
        Ok(())
    }

    /// Opens segment `index`: `sealed` is its ciphertext and tag, `out`
    /// exactly `sealed.len() - tag_len()` bytes. On failure `out` is zeroed
    /// (no unverified byte is left in it), so the caller may try the other
    /// `last` flag. [`Error::TooManySegments`] past segment 2^32 − 1.
    pub(crate) fn open_at(
        &self,
        index: u64,
        last: bool,
        aad: &[u8],
        sealed: &[u8],
        out: &mut [u8],
    ) -> Result<(), Error> {
        let Some(body_len) = sealed.len().checked_sub(self.tag_len()) else {
            return Err(Error::Truncated);
        };
        debug_assert_eq!(out.len(), body_len);
        let nonce = self.nonce(index, last).ok_or(Error::TooManySegments)?;
        let (body, tag) = sealed.split_at(body_len);
        let ok = match &self.aead {
            SegmentAead::Aes128(a) => rc_open(&**a, &nonce, aad, body, tag, out),
            SegmentAead::Aes256(a) => rc_open(&**a, &nonce, aad, body, tag, out),
            SegmentAead::ChaCha(a) => rc_open(&**a, &nonce, aad, body, tag, out),
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(k) => {
                use aws_lc_rs::aead::{Aad, Nonce};
                // Out of place with the tag apart, no copy. AWS-LC
                // decrypts as it authenticates, into `out`, and zeroes
                // `out` itself when the tag fails (EVP_AEAD_CTX_open_gather);
                // the wipe below does not rely on that.
                k.open_separate_gather(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    body,
                    tag,
                    out,
                )
                .is_ok()
            }
            SegmentAead::CtrHmac(c) => {
                // The tag is checked (in constant time) before a byte is
                // decrypted; the AAD is part of no Tink segment.
                let iv = self.ctr_iv(index, last).ok_or(Error::TooManySegments)?;
                aad.is_empty() && c.open(&iv, body, tag, out)
            }
        };
        if ok {
            probe::used(self.aead.provider());
            Ok(())
        } else {
            // The RustCrypto AEADs verify before they decrypt; AWS-LC
            // decrypts first and clears its output on failure. Whatever a
            // provider (or a later version of it) does: never leave
            // unverified bytes behind.
            zeroize::Zeroize::zeroize(out);
            Err(Error::Authentication)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_with(provider: Provider, alg: Algorithm) -> Suite {
        Suite::new(
            provider,
            alg,
            &vec![7u8; alg.key_len()],
            [1; NONCE_PREFIX_LEN],
        )
    }

    fn all() -> impl Iterator<Item = (Provider, Algorithm)> {
        Provider::ALL
            .iter()
            .flat_map(|&p| Algorithm::ALL.iter().map(move |&a| (p, a)))
    }

    #[test]
    fn nonce_layout_is_prefix_counter_flag() {
        let c = suite_with(Provider::default(), Algorithm::Aes128Gcm);
        assert_eq!(
            c.nonce(0x0102_0304, true),
            Some([1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 1])
        );
        assert_eq!(
            c.nonce(0x0102_0304, false),
            Some([1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 0])
        );
        assert_eq!(c.nonce(1 << 32, false), None);
    }

    #[test]
    fn xor_nonce_is_base_xor_index_up_to_2_pow_38() {
        let base = [0xF0; NONCE_LEN];
        let c = Suite::xor(Provider::default(), Algorithm::Aes128Gcm, &[7; 16], base);
        let mut want = base;
        want[7..].copy_from_slice(&[
            0xF0 ^ 0x3F,
            0xF0 ^ 0x01,
            0xF0 ^ 0x02,
            0xF0 ^ 0x03,
            0xF0 ^ 0x04,
        ]);
        assert_eq!(c.nonce(0x3F_0102_0304, true), Some(want));
        assert_eq!(c.nonce(0x3F_0102_0304, false), Some(want));
        assert_eq!(c.nonce(0, false), Some(base));
        assert_eq!(c.nonce(XOR_SEGMENTS, false), None);
        let mut out = [0u8; TAG_LEN];
        assert!(
            c.seal_at(XOR_SEGMENTS - 1, true, &[], b"", &mut out)
                .is_ok()
        );
        assert_eq!(
            c.seal_at(XOR_SEGMENTS, true, &[], b"", &mut out),
            Err(Error::StreamTooLong)
        );
    }

    #[test]
    fn counter_overflow_is_an_error_not_a_wrap() {
        for (p, alg) in all() {
            let c = suite_with(p, alg);
            let mut out = [0u8; 1 + TAG_LEN];
            let last = u64::from(u32::MAX);
            assert!(c.seal_at(last - 1, false, &[], b"x", &mut out).is_ok());
            assert!(
                c.seal_at(last, true, &[], b"x", &mut out).is_ok(),
                "segment 2^32-1 is valid"
            );
            assert_eq!(
                c.seal_at(last + 1, true, &[], b"x", &mut out),
                Err(Error::StreamTooLong)
            );
            let mut pt = [0u8; 1];
            assert_eq!(c.open_at(last, true, &[], &out, &mut pt), Ok(()));
            assert_eq!(
                c.open_at(last + 1, true, &[], &out, &mut pt),
                Err(Error::TooManySegments)
            );
        }
    }

    #[test]
    fn failed_open_wipes_output() {
        // AWS-LC writes plaintext before it checks the tag (and clears it
        // itself on failure); either way no byte may be left.
        for (p, alg) in all() {
            let s = suite_with(p, alg);
            let mut sealed = [0u8; 5 + TAG_LEN];
            s.seal_at(0, false, &[], b"hello", &mut sealed)
                .expect("seal");
            let mut out = [0xAAu8; 5];
            for (index, last, aad) in [(0, true, &b""[..]), (1, false, b""), (0, false, b"x")] {
                assert_eq!(
                    s.open_at(index, last, aad, &sealed, &mut out),
                    Err(Error::Authentication),
                    "{p:?} {alg:?} {index} {last}"
                );
                assert_eq!(out, [0; 5]);
            }
            s.open_at(0, false, &[], &sealed, &mut out).expect("open");
            assert_eq!(&out, b"hello");
        }
    }

    #[test]
    fn the_segment_aad_is_authenticated() {
        for (p, alg) in all() {
            let s = suite_with(p, alg);
            let mut sealed = [0u8; 3 + TAG_LEN];
            s.seal_at(9, true, b"record header", b"abc", &mut sealed)
                .expect("seal");
            let mut out = [0u8; 3];
            assert!(
                s.open_at(9, true, b"record headeR", &sealed, &mut out)
                    .is_err()
            );
            s.open_at(9, true, b"record header", &sealed, &mut out)
                .expect("open");
            assert_eq!(&out, b"abc");
        }
    }

    /// Every provider seals the same bytes and opens every other's.
    #[test]
    fn providers_agree() {
        for &alg in Algorithm::ALL {
            for len in [0usize, 1, 15, 16, 17, 255, 4096, 65_537] {
                let pt: Vec<u8> = (0..len).map(|i| i.to_le_bytes()[0] ^ 0x5a).collect();
                let last = len % 2 == 0;
                let sealed: Vec<Vec<u8>> = Provider::ALL
                    .iter()
                    .map(|&p| {
                        let mut out = vec![0u8; len + TAG_LEN];
                        suite_with(p, alg)
                            .seal_at(3, last, b"ad", &pt, &mut out)
                            .expect("seal");
                        out
                    })
                    .collect();
                for (i, s) in sealed.iter().enumerate() {
                    assert_eq!(s, &sealed[0], "{alg:?} {len}: provider {i} differs");
                    for &p in Provider::ALL {
                        let mut out = vec![0u8; len];
                        suite_with(p, alg)
                            .open_at(3, last, b"ad", s, &mut out)
                            .expect("open");
                        assert_eq!(out, pt);
                    }
                }
            }
        }
    }
}
