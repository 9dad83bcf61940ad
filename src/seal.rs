//! The sealing core: the only code in the crate that touches an AEAD.
//!
//! A [`SegmentCipher`] holds one stream's derived key and nonce prefix and
//! seals or opens segment after segment with STREAM nonces
//! (prefix ‖ BE32(counter) ‖ last-flag). It knows nothing about headers,
//! buffers or I/O: the format module builds it, the reader and writer feed
//! it slices.

use aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::Hkdf;
use inout::InOutBuf;
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use zeroize::Zeroizing;

use crate::tink::HkdfHash;
use crate::{Algorithm, Error};

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
/// Each wrapped type wipes its key schedule on drop (`zeroize` feature).
enum SegmentAead {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

macro_rules! with_aead {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            SegmentAead::Aes128($a) => $body,
            SegmentAead::Aes256($a) => $body,
            SegmentAead::ChaCha($a) => $body,
        }
    };
}

fn keyed<A: KeyInit>(key: &[u8]) -> Box<A> {
    let a = A::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("derived key length matches the algorithm"));
    Box::new(a)
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
    pub(crate) fn new(alg: Algorithm, derived: &[u8], prefix: [u8; NONCE_PREFIX_LEN]) -> Self {
        let aead = match alg {
            Algorithm::Aes128Gcm => SegmentAead::Aes128(keyed(derived)),
            Algorithm::Aes256Gcm => SegmentAead::Aes256(keyed(derived)),
            Algorithm::ChaCha20Poly1305 => SegmentAead::ChaCha(keyed(derived)),
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
        let (body, tag_out) = out.split_at_mut(plaintext.len());
        let buf = InOutBuf::new(plaintext, body).map_err(|_| Error::Authentication)?;
        let tag = with_aead!(&self.aead, a => a
            .encrypt_inout_detached(&nonce.into(), &[], buf)
            .map(|t| t.into()));
        // The AEADs refuse only messages above their length limit (2^36
        // bytes for GCM), far beyond any segment.
        let tag: [u8; TAG_LEN] = tag.map_err(|_| Error::StreamTooLong)?;
        tag_out.copy_from_slice(&tag);
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
        let tag: [u8; TAG_LEN] = tag.try_into().map_err(|_| Error::Authentication)?;
        let buf = InOutBuf::new(body, out).map_err(|_| Error::Authentication)?;
        let ok = with_aead!(&self.aead, a => a
            .decrypt_inout_detached(&nonce.into(), &[], buf, &tag.into())
            .is_ok());
        if ok {
            self.index += 1;
            Ok(())
        } else {
            // The RustCrypto AEADs verify before they decrypt, but a
            // backend is free not to: never leave unverified bytes behind.
            zeroize::Zeroize::zeroize(out);
            Err(Error::Authentication)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(alg: Algorithm) -> SegmentCipher {
        SegmentCipher::new(alg, &vec![7u8; alg.key_len()], [1; NONCE_PREFIX_LEN])
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
        for alg in Algorithm::ALL {
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
        for alg in Algorithm::ALL {
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
}
