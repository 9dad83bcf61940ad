//! A one-shot model of the native v1 format, written from the byte diagram
//! in the crate documentation (src/lib.rs) with the AEAD, HKDF and SHA-256
//! crates, and nothing of cipherio's but the `Algorithm` names.
//!
//! `encrypt` builds the one valid stream for a plaintext, salt and nonce
//! prefix; `decrypt` says what a reader may release from any input: the
//! plaintext of every segment that authenticates in order, and whether the
//! whole input is a valid stream.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use cipherio::Algorithm;
use hkdf::Hkdf;
use sha2::Sha256;

/// Header length: magic 8, version 1, algorithm 1, segment size 4, salt 32,
/// nonce prefix 7.
pub const HEADER_LEN: usize = 53;
/// Tag after each segment's ciphertext.
pub const TAG_LEN: usize = 16;
const MAGIC: &[u8; 8] = b"cipherio";
const VERSION: u8 = 1;

/// The documented identifier byte of an algorithm.
pub fn spec_id(alg: Algorithm) -> u8 {
    match alg {
        Algorithm::Aes128Gcm => 1,
        Algorithm::Aes256Gcm => 2,
        Algorithm::ChaCha20Poly1305 => 3,
        _ => unreachable!("not in the v1 format description"),
    }
}

/// The documented key length (caller's and derived) for an identifier byte.
pub fn spec_key_len(id: u8) -> Option<usize> {
    match id {
        1 => Some(16),
        2 | 3 => Some(32),
        _ => None,
    }
}

/// One stream's AEAD under its derived key.
#[allow(clippy::large_enum_variant)] // one per input, on the stack
enum StreamAead {
    Aes128(Aes128Gcm),
    Aes256(Aes256Gcm),
    ChaCha(ChaCha20Poly1305),
}

impl StreamAead {
    /// `K = HKDF-SHA256(salt = header salt, ikm = key, info = header ‖ aad)`.
    fn derive(header: &[u8; HEADER_LEN], key: &[u8], aad: &[u8]) -> Option<StreamAead> {
        let id = header[9];
        let len = spec_key_len(id)?;
        if key.len() != len {
            return None;
        }
        let mut info = header.to_vec();
        info.extend_from_slice(aad);
        let mut k = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&header[14..46]), key)
            .expand(&info, &mut k[..len])
            .ok()?;
        let k = &k[..len];
        Some(match id {
            1 => StreamAead::Aes128(Aes128Gcm::new_from_slice(k).ok()?),
            2 => StreamAead::Aes256(Aes256Gcm::new_from_slice(k).ok()?),
            _ => StreamAead::ChaCha(ChaCha20Poly1305::new_from_slice(k).ok()?),
        })
    }

    /// `ciphertext ‖ tag` of one segment (segment AAD is empty).
    fn seal(&self, nonce: &[u8; 12], pt: &[u8]) -> Vec<u8> {
        let p = Payload { msg: pt, aad: &[] };
        let r = match self {
            StreamAead::Aes128(a) => a.encrypt(nonce.into(), p),
            StreamAead::Aes256(a) => a.encrypt(nonce.into(), p),
            StreamAead::ChaCha(a) => a.encrypt(nonce.into(), p),
        };
        r.unwrap_or_else(|_| unreachable!("sealing a small segment cannot fail"))
    }

    /// The plaintext of one sealed segment, if it authenticates.
    fn open(&self, nonce: &[u8; 12], sealed: &[u8]) -> Option<Vec<u8>> {
        let p = Payload {
            msg: sealed,
            aad: &[],
        };
        match self {
            StreamAead::Aes128(a) => a.decrypt(nonce.into(), p),
            StreamAead::Aes256(a) => a.decrypt(nonce.into(), p),
            StreamAead::ChaCha(a) => a.decrypt(nonce.into(), p),
        }
        .ok()
    }
}

/// `nonce_i = prefix (7) ‖ BE32(i) ‖ last`.
fn nonce(prefix: &[u8], i: u32, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..7].copy_from_slice(prefix);
    n[7..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

/// `magic ‖ version ‖ algorithm ‖ BE32(segment_size) ‖ salt ‖ prefix`.
pub fn header(alg: Algorithm, segment_size: u32, salt: &[u8], prefix: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8] = VERSION;
    h[9] = spec_id(alg);
    h[10..14].copy_from_slice(&segment_size.to_be_bytes());
    h[14..46].copy_from_slice(salt);
    h[46..53].copy_from_slice(prefix);
    h
}

/// The valid stream for `plaintext`: full segments of `segment_size`, then
/// a final one of 0..=segment_size bytes (0 only when the plaintext is
/// empty). `salt` is 32 bytes and `prefix` 7.
///
/// # Panics
///
/// If `key` is not `alg`'s length or `segment_size` is zero.
pub fn encrypt(
    alg: Algorithm,
    key: &[u8],
    aad: &[u8],
    segment_size: u32,
    salt: &[u8],
    prefix: &[u8],
    plaintext: &[u8],
) -> Vec<u8> {
    let h = header(alg, segment_size, salt, prefix);
    let aead = StreamAead::derive(&h, key, aad).expect("key of the algorithm's length");
    let chunks: Vec<&[u8]> = if plaintext.is_empty() {
        vec![&[]]
    } else {
        plaintext.chunks(segment_size as usize).collect()
    };
    let mut out = h.to_vec();
    for (i, pt) in chunks.iter().enumerate() {
        let i32 = u32::try_from(i).expect("fewer than 2^32 segments");
        out.extend_from_slice(&aead.seal(&nonce(prefix, i32, i + 1 == chunks.len()), pt));
    }
    out
}

/// What a reader may do with an input.
#[derive(Debug, PartialEq, Eq)]
pub struct Decrypted {
    /// The plaintext of the segments that authenticate, in order, up to
    /// the first that does not: nothing else may ever be released.
    pub released: Vec<u8>,
    /// Whether the input is a valid stream: then `released` is all of its
    /// plaintext, and a reader must end with `Ok(0)`; otherwise a reader
    /// must end with an error.
    pub valid: bool,
    /// The header's segment size, if the header is well formed.
    pub segment_size: Option<u32>,
}

/// Reads `input` as a whole with `key` and `aad`. A segment whose sealed
/// length fits exactly in what is left is tried as final and then as
/// non-final (a reader cannot know yet that the input ends there); a
/// shorter one is final; a longer one is not.
pub fn decrypt(key: &[u8], aad: &[u8], input: &[u8]) -> Decrypted {
    let mut d = Decrypted {
        released: Vec::new(),
        valid: false,
        segment_size: None,
    };
    let Some(h) = input.get(..HEADER_LEN) else {
        return d;
    };
    let h: [u8; HEADER_LEN] = h.try_into().expect("53 bytes");
    let size = u32::from_be_bytes([h[10], h[11], h[12], h[13]]);
    if h[..8] != MAGIC[..] || h[8] != VERSION || spec_key_len(h[9]).is_none() || size == 0 {
        return d;
    }
    d.segment_size = Some(size);
    let Some(aead) = StreamAead::derive(&h, key, aad) else {
        return d;
    };
    let full = size as usize + TAG_LEN;
    let mut rest = &input[HEADER_LEN..];
    let mut i: u32 = 0;
    loop {
        let n = |last| nonce(&h[46..], i, last);
        if rest.len() > full {
            let Some(pt) = aead.open(&n(false), &rest[..full]) else {
                return d;
            };
            d.released.extend_from_slice(&pt);
            rest = &rest[full..];
        } else if rest.len() < TAG_LEN {
            return d;
        } else if let Some(pt) = aead.open(&n(true), rest) {
            // The empty final segment is only the empty stream's.
            d.valid = !(pt.is_empty() && i > 0);
            if d.valid {
                d.released.extend_from_slice(&pt);
            }
            return d;
        } else {
            // Not final: a full-length one may still authenticate as a
            // middle segment, and then the input ends without its final.
            if rest.len() == full
                && let Some(pt) = aead.open(&n(false), rest)
            {
                d.released.extend_from_slice(&pt);
            }
            return d;
        }
        let Some(next) = i.checked_add(1) else {
            return d;
        };
        i = next;
    }
}
