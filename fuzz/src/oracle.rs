//! A one-shot model of the native v1 format, written from the byte diagram
//! in the crate documentation (src/lib.rs) with the AEAD, HKDF and SHA-256
//! crates, and nothing of cipherio's but the `Algorithm` names.
//!
//! `encrypt` builds the one valid stream for a plaintext, salt and nonce
//! prefix; `decrypt` says what a reader may release from any input: the
//! plaintext of every segment that authenticates in order, and whether the
//! whole input is a valid stream.

use aes_gcm::aead::{AeadCore, AeadInOut, KeyInit, Nonce, Tag};
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
pub(crate) enum StreamAead {
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
        StreamAead::new(id, &k[..len])
    }

    /// The AEAD of identifier byte `id` keyed with `k`.
    pub(crate) fn new(id: u8, k: &[u8]) -> Option<StreamAead> {
        Some(match id {
            1 => StreamAead::Aes128(Aes128Gcm::new_from_slice(k).ok()?),
            2 => StreamAead::Aes256(Aes256Gcm::new_from_slice(k).ok()?),
            3 => StreamAead::ChaCha(ChaCha20Poly1305::new_from_slice(k).ok()?),
            _ => return None,
        })
    }

    /// `ciphertext ‖ tag` of one segment (segment AAD is empty).
    pub(crate) fn seal(&self, nonce: &[u8; 12], pt: &[u8]) -> Vec<u8> {
        match self {
            StreamAead::Aes128(a) => seal_with(a, nonce, pt),
            StreamAead::Aes256(a) => seal_with(a, nonce, pt),
            StreamAead::ChaCha(a) => seal_with(a, nonce, pt),
        }
    }

    /// The plaintext of one sealed segment, if it authenticates.
    pub(crate) fn open(&self, nonce: &[u8; 12], sealed: &[u8]) -> Option<Vec<u8>> {
        match self {
            StreamAead::Aes128(a) => open_with(a, nonce, sealed),
            StreamAead::Aes256(a) => open_with(a, nonce, sealed),
            StreamAead::ChaCha(a) => open_with(a, nonce, sealed),
        }
    }
}

/// `ciphertext ‖ tag` of `pt` under `a` (empty AAD; detached, so that no
/// `alloc` feature of the AEAD crates is needed where this file is built).
fn seal_with<A: AeadInOut>(a: &A, nonce: &[u8; 12], pt: &[u8]) -> Vec<u8> {
    let nonce = Nonce::<A>::try_from(&nonce[..]).expect("12-byte nonce");
    let mut out = pt.to_vec();
    let tag = a
        .encrypt_inout_detached(&nonce, &[], out.as_mut_slice().into())
        .unwrap_or_else(|_| unreachable!("sealing a small segment cannot fail"));
    out.extend_from_slice(&tag);
    out
}

/// The plaintext of `ciphertext ‖ tag`, if it authenticates.
fn open_with<A: AeadInOut + AeadCore>(a: &A, nonce: &[u8; 12], sealed: &[u8]) -> Option<Vec<u8>> {
    let split = sealed.len().checked_sub(TAG_LEN)?;
    let (ct, tag) = sealed.split_at(split);
    let nonce = Nonce::<A>::try_from(&nonce[..]).ok()?;
    let tag = Tag::<A>::try_from(tag).ok()?;
    let mut out = ct.to_vec();
    a.decrypt_inout_detached(&nonce, &[], out.as_mut_slice().into(), &tag)
        .ok()?;
    Some(out)
}

/// `nonce_i = prefix (7) ‖ BE32(i) ‖ last`.
pub(crate) fn nonce(prefix: &[u8], i: u32, last: bool) -> [u8; 12] {
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
/// a final one of `0..=segment_size` bytes (0 only when the plaintext is
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
    let chunks: Vec<&[u8]> = if plaintext.is_empty() {
        vec![&[]]
    } else {
        plaintext.chunks(segment_size as usize).collect()
    };
    seal(alg, key, aad, segment_size, salt, prefix, &chunks)
}

/// The header, then each chunk sealed as a segment, the last one as the
/// final segment: for valid streams as [`encrypt`] makes them, and for
/// well-sealed invalid ones (an empty final segment after full ones).
///
/// # Panics
///
/// If `key` is not `alg`'s length.
pub fn seal(
    alg: Algorithm,
    key: &[u8],
    aad: &[u8],
    segment_size: u32,
    salt: &[u8],
    prefix: &[u8],
    chunks: &[&[u8]],
) -> Vec<u8> {
    let segs: Vec<(&[u8], bool)> = last_flags(chunks);
    seal_flagged(alg, key, aad, segment_size, salt, prefix, &segs)
}

/// Each chunk with its last flag: set on the last one alone.
pub(crate) fn last_flags<'a>(chunks: &[&'a [u8]]) -> Vec<(&'a [u8], bool)> {
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i + 1 == n))
        .collect()
}

/// The header, then segment `i` of `segs` sealed with counter `i` and
/// the last flag it comes with, whatever the flags say (a full last
/// segment sealed as non-final, a final segment in the middle, an empty
/// one after full ones).
///
/// # Panics
///
/// If `key` is not `alg`'s length.
pub fn seal_flagged(
    alg: Algorithm,
    key: &[u8],
    aad: &[u8],
    segment_size: u32,
    salt: &[u8],
    prefix: &[u8],
    segs: &[(&[u8], bool)],
) -> Vec<u8> {
    let h = header(alg, segment_size, salt, prefix);
    let segs: Vec<Seg> = segs
        .iter()
        .enumerate()
        .map(|(i, &(pt, last))| Seg {
            counter: u32::try_from(i).expect("fewer than 2^32 segments"),
            last,
            pt,
        })
        .collect();
    seal_segments(&h, key, aad, &segs)
}

/// One segment as sealed on the wire: any counter, any last flag, any
/// length, so that invalid streams can be built too.
pub struct Seg<'a> {
    pub counter: u32,
    pub last: bool,
    pub pt: &'a [u8],
}

/// `header` as it is, then each of `segs` sealed under the key it derives
/// (its salt and nonce prefix, the whole header bound in).
///
/// # Panics
///
/// If the header names no algorithm of the format or `key` is not its
/// length.
pub fn seal_segments(header: &[u8; HEADER_LEN], key: &[u8], aad: &[u8], segs: &[Seg]) -> Vec<u8> {
    let aead = StreamAead::derive(header, key, aad).expect("a known algorithm and its key length");
    let mut out = header.to_vec();
    for s in segs {
        out.extend_from_slice(&aead.seal(&nonce(&header[46..], s.counter, s.last), s.pt));
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
    /// The plaintext of a full-length segment right after `released` that
    /// authenticates as the *final* one although bytes follow it. A reader
    /// releases it (its tag and last flag check out) and then fails with
    /// `TrailingData`.
    pub final_then_trailing: Vec<u8>,
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
        final_then_trailing: Vec::new(),
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
    let open = |i, last, s: &[u8]| aead.open(&nonce(&h[46..], i, last), s);
    (d.released, d.valid, d.final_then_trailing) =
        open_segments(open, TAG_LEN, &input[HEADER_LEN..], [full; 2], false);
    d
}

/// Opens the segments in `body` (everything after the header): segment 0
/// is `sealed[0]` bytes when full, later ones `sealed[1]`, each ending in
/// a `tag_len`-byte tag; `open(i, last, sealed)` is segment `i`'s
/// plaintext if it authenticates with that last flag. Returns the
/// plaintext of the segments that authenticate in order, and whether
/// `body` is a valid sequence of segments, and the plaintext of a
/// full-length final segment followed by more bytes (see
/// [`Decrypted::final_then_trailing`]). `empty_final` allows an empty
/// final segment after full ones.
pub(crate) fn open_segments(
    open: impl Fn(u32, bool, &[u8]) -> Option<Vec<u8>>,
    tag_len: usize,
    body: &[u8],
    sealed: [usize; 2],
    empty_final: bool,
) -> (Vec<u8>, bool, Vec<u8>) {
    let mut released = Vec::new();
    let mut rest = body;
    let mut i: u32 = 0;
    loop {
        let full = sealed[usize::from(i > 0)];
        let open = |last, s: &[u8]| open(i, last, s);
        if rest.len() > full {
            let Some(pt) = open(false, &rest[..full]) else {
                let last = open(true, &rest[..full]).unwrap_or_default();
                return (released, false, last);
            };
            released.extend_from_slice(&pt);
            rest = &rest[full..];
        } else if rest.len() < tag_len {
            return (released, false, Vec::new());
        } else if let Some(pt) = open(true, rest) {
            // Natively the empty final segment is only the empty stream's.
            let valid = !pt.is_empty() || i == 0 || empty_final;
            if valid {
                released.extend_from_slice(&pt);
            }
            return (released, valid, Vec::new());
        } else {
            // Not final: a full-length one may still authenticate as a
            // middle segment, and then the input ends without its final.
            if rest.len() == full
                && let Some(pt) = open(false, rest)
            {
                released.extend_from_slice(&pt);
            }
            return (released, false, Vec::new());
        }
        let Some(next) = i.checked_add(1) else {
            return (released, false, Vec::new());
        };
        i = next;
    }
}
