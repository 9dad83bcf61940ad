//! The sealing core: the only code in the crate that touches an AEAD.
//!
//! A [`SegmentCipher`] holds one stream's derived key and nonce prefix and
//! seals or opens segment after segment with STREAM nonces
//! (prefix ‖ BE32(counter) ‖ last-flag). It knows nothing about headers,
//! buffers or I/O: the format module builds it, the reader and writer feed
//! it slices.

use aead::consts::{U12, U16};
use aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::Hkdf;
use inout::InOutBuf;
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use zeroize::Zeroizing;

use crate::tink::HkdfHash;
use crate::{Algorithm, Error, Provider};

/// Bytes of authentication tag after each segment's ciphertext.
pub const TAG_LEN: usize = 16;
/// Bytes of random nonce prefix per stream.
pub const NONCE_PREFIX_LEN: usize = 7;
const NONCE_LEN: usize = 12;

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
    // a key length, at most 32.
    let done = match hash {
        HkdfHash::Sha1 => Hkdf::<Sha1>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
        HkdfHash::Sha256 => Hkdf::<Sha256>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
        HkdfHash::Sha512 => Hkdf::<Sha512>::new(Some(salt), ikm).expand_multi_info(info, &mut okm),
    };
    done.unwrap_or_else(|_| unreachable!("HKDF output of at most 32 bytes"));
    okm
}

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
    plaintext: &[u8],
    body: &mut [u8],
    tag: &mut [u8],
) -> Result<(), Error> {
    let buf = InOutBuf::new(plaintext, body).map_err(|_| Error::StreamTooLong)?;
    let t = a
        .encrypt_inout_detached(nonce.into(), &[], buf)
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
    a.decrypt_inout_detached(nonce.into(), &[], buf, tag.into())
        .is_ok()
}

#[cfg(test)]
thread_local! {
    /// Segments sealed or opened (failed trials not counted) on this
    /// thread, by provider (index in
    /// [`Provider::ALL`]): tests that the chosen provider does the work.
    pub(crate) static USED: std::cell::RefCell<Vec<u64>> =
        std::cell::RefCell::new(vec![0; Provider::ALL.len()]);
}

impl SegmentAead {
    #[cfg(test)]
    fn count(&self) {
        let p = match self {
            SegmentAead::Aes128(_) | SegmentAead::Aes256(_) | SegmentAead::ChaCha(_) => {
                Provider::RustCrypto
            }
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(_) => Provider::AwsLc,
        };
        let i = Provider::ALL.iter().position(|&q| q == p).unwrap_or(0);
        USED.with(|u| u.borrow_mut()[i] += 1);
    }
}

/// Seals or opens the segments of one stream, in order.
pub(crate) struct SegmentCipher {
    aead: SegmentAead,
    prefix: [u8; NONCE_PREFIX_LEN],
    /// Index of the next segment to seal or open.
    index: u64,
}

impl SegmentCipher {
    /// A cipher for one stream from its derived key and nonce prefix.
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
        SegmentCipher {
            aead,
            prefix,
            index: 0,
        }
    }

    /// Index of the next segment.
    pub(crate) fn index(&self) -> u64 {
        self.index
    }

    /// Whether a segment after the next one can still be numbered, i.e.
    /// whether the next segment may be sealed as non-final.
    pub(crate) fn can_continue(&self) -> bool {
        self.index < u64::from(u32::MAX)
    }

    /// Moves to segment `index` (tests of the counter's end).
    #[cfg(test)]
    pub(crate) fn set_index(&mut self, index: u64) {
        self.index = index;
    }

    fn nonce(&self, last: bool) -> Option<[u8; NONCE_LEN]> {
        let counter = u32::try_from(self.index).ok()?;
        let mut n = [0u8; NONCE_LEN];
        n[..NONCE_PREFIX_LEN].copy_from_slice(&self.prefix);
        n[NONCE_PREFIX_LEN..NONCE_LEN - 1].copy_from_slice(&counter.to_be_bytes());
        n[NONCE_LEN - 1] = u8::from(last);
        Some(n)
    }

    /// Seals the next segment from `plaintext` into `out`, which must be
    /// exactly `plaintext.len() + TAG_LEN` bytes: ciphertext, then tag.
    pub(crate) fn seal(
        &mut self,
        plaintext: &[u8],
        out: &mut [u8],
        last: bool,
    ) -> Result<(), Error> {
        debug_assert_eq!(out.len(), plaintext.len() + TAG_LEN);
        let nonce = self.nonce(last).ok_or(Error::StreamTooLong)?;
        let (body, tag) = out.split_at_mut(plaintext.len());
        #[cfg(test)]
        self.aead.count();
        match &self.aead {
            SegmentAead::Aes128(a) => rc_seal(&**a, &nonce, plaintext, body, tag)?,
            SegmentAead::Aes256(a) => rc_seal(&**a, &nonce, plaintext, body, tag)?,
            SegmentAead::ChaCha(a) => rc_seal(&**a, &nonce, plaintext, body, tag)?,
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(k) => {
                use aws_lc_rs::aead::{Aad, Nonce};
                // Out of place, no copy: plaintext -> body, tag -> tag.
                k.seal_out_of_place_scatter(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::empty(),
                    plaintext,
                    body,
                    &[],
                    tag,
                )
                // Only wrong lengths (ruled out above) or a message over
                // the AEAD's limit fail.
                .map_err(|_| Error::StreamTooLong)?;
            }
        }
        self.index += 1;
        Ok(())
    }

    /// Opens the next segment: `sealed` is its ciphertext and tag, `out`
    /// exactly `sealed.len() - TAG_LEN` bytes. On success the segment index
    /// advances. On failure `out` is zeroed (no unverified byte is left in
    /// it) and the index stays, so the caller may try the other `last` flag.
    pub(crate) fn open(&mut self, sealed: &[u8], out: &mut [u8], last: bool) -> Result<(), Error> {
        let Some(body_len) = sealed.len().checked_sub(TAG_LEN) else {
            return Err(Error::Truncated);
        };
        debug_assert_eq!(out.len(), body_len);
        let nonce = self.nonce(last).ok_or(Error::TooManySegments)?;
        let (body, tag) = sealed.split_at(body_len);
        let ok = match &self.aead {
            SegmentAead::Aes128(a) => rc_open(&**a, &nonce, body, tag, out),
            SegmentAead::Aes256(a) => rc_open(&**a, &nonce, body, tag, out),
            SegmentAead::ChaCha(a) => rc_open(&**a, &nonce, body, tag, out),
            #[cfg(feature = "aws-lc")]
            SegmentAead::AwsLc(k) => {
                use aws_lc_rs::aead::{Aad, Nonce};
                // Out of place with the tag apart, no copy. AWS-LC
                // decrypts as it authenticates, into `out`, and zeroes
                // `out` itself when the tag fails (EVP_AEAD_CTX_open_gather);
                // the wipe below does not rely on that.
                k.open_separate_gather(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::empty(),
                    body,
                    tag,
                    out,
                )
                .is_ok()
            }
        };
        if ok {
            #[cfg(test)]
            self.aead.count();
            self.index += 1;
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

    fn cipher_with(provider: Provider, alg: Algorithm) -> SegmentCipher {
        SegmentCipher::new(
            provider,
            alg,
            &vec![7u8; alg.key_len()],
            [1; NONCE_PREFIX_LEN],
        )
    }

    fn cipher(alg: Algorithm) -> SegmentCipher {
        cipher_with(Provider::default(), alg)
    }

    #[test]
    fn nonce_layout_is_prefix_counter_flag() {
        let mut c = cipher(Algorithm::Aes128Gcm);
        c.index = 0x0102_0304;
        assert_eq!(c.nonce(true), Some([1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 1]));
        assert_eq!(c.nonce(false), Some([1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 0]));
    }

    #[test]
    fn counter_overflow_is_an_error_not_a_wrap() {
        for (&p, alg) in Provider::ALL
            .iter()
            .flat_map(|p| Algorithm::ALL.map(|a| (p, a)))
        {
            let cipher = |alg| cipher_with(p, alg);
            let mut c = cipher(alg);
            c.index = u64::from(u32::MAX) - 1;
            let mut out = [0u8; 1 + TAG_LEN];
            assert!(c.can_continue());
            assert!(c.seal(b"x", &mut out, false).is_ok());
            assert!(!c.can_continue(), "segment 2^32-1 can only be the last");
            assert!(
                c.seal(b"x", &mut out, true).is_ok(),
                "segment 2^32-1 is valid"
            );
            assert_eq!(c.seal(b"x", &mut out, true), Err(Error::StreamTooLong));
            let mut opener = cipher(alg);
            opener.index = u64::from(u32::MAX) + 1;
            let mut pt = [0u8; 1];
            assert_eq!(
                opener.open(&out, &mut pt, true),
                Err(Error::TooManySegments)
            );
        }
    }

    #[test]
    fn failed_open_wipes_output_and_keeps_index() {
        // AWS-LC writes plaintext before it checks the tag (and clears it
        // itself on failure); either way no byte may be left.
        for (&p, alg) in Provider::ALL
            .iter()
            .flat_map(|p| Algorithm::ALL.map(|a| (p, a)))
        {
            let cipher = |alg| cipher_with(p, alg);
            let mut s = cipher(alg);
            let mut sealed = [0u8; 5 + TAG_LEN];
            s.seal(b"hello", &mut sealed, false).expect("seal");
            let mut o = cipher(alg);
            let mut out = [0xAAu8; 5];
            assert_eq!(o.open(&sealed, &mut out, true), Err(Error::Authentication));
            assert_eq!(out, [0; 5]);
            assert_eq!(o.index(), 0);
            o.open(&sealed, &mut out, false).expect("open");
            assert_eq!(&out, b"hello");
            assert_eq!(o.index(), 1);
        }
    }

    /// Every provider seals the same bytes and opens every other's.
    #[test]
    fn providers_agree() {
        for alg in Algorithm::ALL {
            for len in [0usize, 1, 15, 16, 17, 255, 4096, 65_537] {
                let pt: Vec<u8> = (0..len).map(|i| i.to_le_bytes()[0] ^ 0x5a).collect();
                let sealed: Vec<Vec<u8>> = Provider::ALL
                    .iter()
                    .map(|&p| {
                        let mut c = cipher_with(p, alg);
                        let mut out = vec![0u8; len + TAG_LEN];
                        c.seal(&pt, &mut out, len % 2 == 0).expect("seal");
                        out
                    })
                    .collect();
                for (i, s) in sealed.iter().enumerate() {
                    assert_eq!(s, &sealed[0], "{alg:?} {len}: provider {i} differs");
                    for &p in Provider::ALL {
                        let mut out = vec![0u8; len];
                        cipher_with(p, alg)
                            .open(s, &mut out, len % 2 == 0)
                            .expect("open");
                        assert_eq!(out, pt);
                    }
                }
            }
        }
    }
}
