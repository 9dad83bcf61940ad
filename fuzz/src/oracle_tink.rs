//! A one-shot model of Tink's AES-GCM-HKDF streaming format, written from
//! the format description in src/tink.rs, with the primitives directly.

use hkdf::Hkdf;
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use super::oracle::{Decrypted, StreamAead, TAG_LEN, last_flags, nonce, open_segments};

/// Tink parameters as plain numbers: derived key size (16 or 32),
/// ciphertext segment size, and the HKDF hash (1, 256 or 512).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// AES key size of each stream: 16 or 32.
    pub key_size: usize,
    /// Sealed bytes per segment; the first also holds the header.
    pub segment: usize,
    /// 1, 256 or 512: SHA-1, SHA-256 or SHA-512.
    pub hash: u16,
}

impl Params {
    /// `1 + key_size + 7`.
    pub fn header_len(&self) -> usize {
        1 + self.key_size + 7
    }

    /// Plaintext bytes of segment 0 and of later segments.
    pub fn plain(&self) -> [usize; 2] {
        [
            self.segment - self.header_len() - TAG_LEN,
            self.segment - TAG_LEN,
        ]
    }

    /// `HKDF(hash, salt, ikm = key, info = aad, L = key_size)`, as AES-GCM.
    fn aead(&self, key: &[u8], salt: &[u8], aad: &[u8]) -> StreamAead {
        let mut k = [0u8; 32];
        let k = &mut k[..self.key_size];
        let ok = match self.hash {
            1 => Hkdf::<Sha1>::new(Some(salt), key).expand(aad, k).is_ok(),
            256 => Hkdf::<Sha256>::new(Some(salt), key).expand(aad, k).is_ok(),
            _ => Hkdf::<Sha512>::new(Some(salt), key).expand(aad, k).is_ok(),
        };
        assert!(ok, "HKDF output of 16 or 32 bytes");
        let id = if self.key_size == 16 { 1 } else { 2 };
        StreamAead::new(id, k).expect("AES key of 16 or 32 bytes")
    }
}

/// The stream a Tink writer produces: header `H ‖ salt ‖ prefix`, segment
/// 0 with up to `plain()[0]` bytes, later ones `plain()[1]`, the last one
/// (possibly full, or the only and empty one) sealed as final.
///
/// # Panics
///
/// If `salt` is not `key_size` bytes or `prefix` not 7.
pub fn encrypt(
    p: &Params,
    key: &[u8],
    aad: &[u8],
    salt: &[u8],
    prefix: &[u8],
    pt: &[u8],
) -> Vec<u8> {
    seal(p, key, aad, salt, prefix, &chunks(pt, p.plain()))
}

/// `pt` cut as a Tink writer cuts it, whatever the key type: segment 0
/// with up to `first` bytes, later ones `rest`; at least one chunk (an
/// empty one for an empty `pt`).
pub(crate) fn chunks(pt: &[u8], [first, rest]: [usize; 2]) -> Vec<&[u8]> {
    let mut chunks = vec![&pt[..first.min(pt.len())]];
    if pt.len() > first {
        chunks.extend(pt[first..].chunks(rest));
    }
    chunks
}

/// Tink's stream, whatever the key type: the header `H ‖ salt ‖ prefix`
/// (`H` its length), then `seal(i, last, chunk)` of each chunk with the
/// last flag it comes with.
pub(crate) fn framed(
    salt: &[u8],
    prefix: &[u8],
    segs: &[(&[u8], bool)],
    mut seal: impl FnMut(u32, bool, &[u8]) -> Vec<u8>,
) -> Vec<u8> {
    let mut out = vec![u8::try_from(1 + salt.len() + prefix.len()).expect("at most 40")];
    out.extend_from_slice(salt);
    out.extend_from_slice(prefix);
    for (i, &(c, last)) in segs.iter().enumerate() {
        let i32 = u32::try_from(i).expect("fewer than 2^32 segments");
        out.extend_from_slice(&seal(i32, last, c));
    }
    out
}

/// What a reader may release from a Tink stream, whatever the key type:
/// the header (`key_size`-byte salt, 7-byte prefix) must start with its
/// length; `opener(salt, prefix)` gives the segment opener of
/// [`open_segments`]; segments are `segment` bytes sealed (the first
/// shares them with the header), each ending in a `tag_len`-byte tag; an
/// empty final segment after full ones is accepted.
pub(crate) fn read<O: Fn(u32, bool, &[u8]) -> Option<Vec<u8>>>(
    input: &[u8],
    key_size: usize,
    segment: usize,
    tag_len: usize,
    opener: impl FnOnce(&[u8], &[u8]) -> O,
) -> Decrypted {
    let h = 1 + key_size + 7;
    let mut d = Decrypted {
        released: Vec::new(),
        valid: false,
        segment_size: None,
        final_then_trailing: Vec::new(),
    };
    let Some(header) = input.get(..h) else {
        return d;
    };
    if usize::from(header[0]) != h {
        return d;
    }
    let (salt, prefix) = header[1..].split_at(key_size);
    (d.released, d.valid, d.final_then_trailing) = open_segments(
        opener(salt, prefix),
        tag_len,
        &input[h..],
        [segment - h, segment],
        true,
    );
    d
}

/// The header, then each chunk sealed as a segment, the last one as the
/// final segment (an empty final segment after full ones included, which
/// Tink readers accept though no writer makes it).
///
/// # Panics
///
/// If `salt` is not `key_size` bytes or `prefix` not 7.
pub fn seal(
    p: &Params,
    key: &[u8],
    aad: &[u8],
    salt: &[u8],
    prefix: &[u8],
    chunks: &[&[u8]],
) -> Vec<u8> {
    seal_flagged(p, key, aad, salt, prefix, &last_flags(chunks))
}

/// The header, then segment `i` of `segs` sealed with counter `i` and the
/// last flag it comes with, whatever the flags say (a full last segment
/// sealed as non-final, an empty final one after the final one).
///
/// # Panics
///
/// If `salt` is not `key_size` bytes or `prefix` not 7.
pub fn seal_flagged(
    p: &Params,
    key: &[u8],
    aad: &[u8],
    salt: &[u8],
    prefix: &[u8],
    segs: &[(&[u8], bool)],
) -> Vec<u8> {
    assert_eq!((salt.len(), prefix.len()), (p.key_size, 7));
    let aead = p.aead(key, salt, aad);
    framed(salt, prefix, segs, |i, last, c| {
        aead.seal(&nonce(prefix, i, last), c)
    })
}

/// What a reader may release from `input` (see [`Decrypted`]); a first
/// byte other than the header length makes it invalid. `segment_size` is
/// always `None` (the segment size is the key's).
pub fn decrypt(p: &Params, key: &[u8], aad: &[u8], input: &[u8]) -> Decrypted {
    read(input, p.key_size, p.segment, TAG_LEN, |salt, prefix| {
        let aead = p.aead(key, salt, aad);
        let prefix = prefix.to_vec();
        move |i, last, s: &[u8]| aead.open(&nonce(&prefix, i, last), s)
    })
}
