//! An oracle for the framed variant of the native format (version 2),
//! written from its description alone, with the AEAD, HKDF and SHA-256
//! crates and none of cipherio's internals: the 53-byte native header with
//! version byte 2 and the largest record's plaintext as the segment size;
//! then records: a big-endian u32 (bit 31 the final flag, bits 0..30 the
//! plaintext length), then the sealed plaintext and a 16-byte tag; record
//! i sealed with nonce prefix ‖ BE32(i) ‖ final flag and the 4-byte record
//! header as AAD; the stream key HKDF-SHA256(salt, key, header ‖ aad).
//! (`tests/framed.rs` in the main crate includes this file by `#[path]`.)
use aes_gcm::aead::{AeadCore, AeadInOut, KeyInit, Nonce, Tag};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use cipherio::Algorithm;
use hkdf::Hkdf;
use sha2::Sha256;

pub const MAGIC: &[u8; 8] = b"cipherio";
/// The framed variant's version byte.
pub const VERSION: u8 = 2;
pub const HEADER_LEN: usize = 53;
pub const TAG_LEN: usize = 16;
/// BE32: bit 31 the final flag, bits 0..30 the plaintext length.
pub const RECORD_HEADER_LEN: usize = 4;
/// Bytes a record adds to its plaintext.
pub const OVERHEAD: usize = RECORD_HEADER_LEN + TAG_LEN;

pub fn spec_id(alg: Algorithm) -> u8 {
    match alg {
        Algorithm::Aes128Gcm => 0x01,
        Algorithm::Aes256Gcm => 0x02,
        Algorithm::ChaCha20Poly1305 => 0x03,
        _ => panic!("{alg} is not in the format description"),
    }
}

fn key_len(id: u8) -> Option<usize> {
    match id {
        0x01 => Some(16),
        0x02 | 0x03 => Some(32),
        _ => None,
    }
}

enum Aead {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

fn seal_with<A: AeadInOut>(a: &A, nonce: &[u8; 12], aad: &[u8], pt: &[u8]) -> Vec<u8> {
    let nonce = Nonce::<A>::try_from(&nonce[..]).unwrap();
    let mut out = pt.to_vec();
    let tag = a
        .encrypt_inout_detached(&nonce, aad, out.as_mut_slice().into())
        .unwrap();
    out.extend_from_slice(&tag);
    out
}

fn open_with<A: AeadInOut + AeadCore>(
    a: &A,
    nonce: &[u8; 12],
    aad: &[u8],
    sealed: &[u8],
) -> Option<Vec<u8>> {
    let nonce = Nonce::<A>::try_from(&nonce[..]).unwrap();
    let body = sealed.len().checked_sub(TAG_LEN)?;
    let tag = Tag::<A>::try_from(&sealed[body..]).unwrap();
    let mut out = sealed[..body].to_vec();
    a.decrypt_inout_detached(&nonce, aad, out.as_mut_slice().into(), &tag)
        .ok()?;
    Some(out)
}

impl Aead {
    fn seal(&self, nonce: &[u8; 12], aad: &[u8], pt: &[u8]) -> Vec<u8> {
        match self {
            Aead::Aes128(a) => seal_with(&**a, nonce, aad, pt),
            Aead::Aes256(a) => seal_with(&**a, nonce, aad, pt),
            Aead::ChaCha(a) => seal_with(&**a, nonce, aad, pt),
        }
    }

    fn open(&self, nonce: &[u8; 12], aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        match self {
            Aead::Aes128(a) => open_with(&**a, nonce, aad, sealed),
            Aead::Aes256(a) => open_with(&**a, nonce, aad, sealed),
            Aead::ChaCha(a) => open_with(&**a, nonce, aad, sealed),
        }
    }
}

/// `magic ‖ 0x02 ‖ algorithm ‖ BE32(segment_size) ‖ salt ‖ prefix`.
pub fn header(alg: Algorithm, seg: u32, salt: &[u8; 32], prefix: &[u8; 7]) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.push(VERSION);
    h.push(spec_id(alg));
    h.extend_from_slice(&seg.to_be_bytes());
    h.extend_from_slice(salt);
    h.extend_from_slice(prefix);
    assert_eq!(h.len(), HEADER_LEN);
    h
}

/// HKDF-SHA256(salt, ikm = key, info = the 53 header bytes ‖ aad).
fn stream_aead(header: &[u8], key: &[u8], aad: &[u8]) -> Option<Aead> {
    let id = header[9];
    let len = key_len(id)?;
    if key.len() != len {
        return None;
    }
    let mut info = header[..HEADER_LEN].to_vec();
    info.extend_from_slice(aad);
    let mut k = vec![0u8; len];
    Hkdf::<Sha256>::new(Some(&header[14..46]), key)
        .expand(&info, &mut k)
        .unwrap();
    Some(match id {
        0x01 => Aead::Aes128(Box::new(Aes128Gcm::new_from_slice(&k).unwrap())),
        0x02 => Aead::Aes256(Box::new(Aes256Gcm::new_from_slice(&k).unwrap())),
        _ => Aead::ChaCha(Box::new(ChaCha20Poly1305::new_from_slice(&k).unwrap())),
    })
}

/// `prefix (7) ‖ BE32(i) ‖ final (1 byte)`.
fn nonce(prefix: &[u8], i: u32, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..7].copy_from_slice(prefix);
    n[7..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

/// `BE32(final << 31 | len)`.
pub fn record_header(len: usize, last: bool) -> [u8; 4] {
    let len = u32::try_from(len).unwrap();
    assert!(len < 1 << 31);
    (len | (u32::from(last) << 31)).to_be_bytes()
}

/// One record as sealed: any counter, flag and length (to build
/// invalid streams too).
pub struct Rec<'a> {
    pub counter: u32,
    pub last: bool,
    pub pt: &'a [u8],
}

/// The header followed by `recs`, each sealed by hand.
pub fn seal(header: &[u8], key: &[u8], aad: &[u8], recs: &[Rec]) -> Vec<u8> {
    let aead = stream_aead(header, key, aad).unwrap();
    let mut out = header.to_vec();
    for r in recs {
        let h = record_header(r.pt.len(), r.last);
        out.extend_from_slice(&h);
        out.extend_from_slice(&aead.seal(&nonce(&header[46..53], r.counter, r.last), &h, r.pt));
    }
    out
}

/// The records a writer of capacity `cap` makes when `pieces` are each
/// written and flushed and then `last` is written and the stream
/// finished: every piece in records of `cap` (the last one shorter),
/// an empty piece none; `last` likewise, its last record final (an
/// empty final record if `last` is empty).
pub fn split<'a>(cap: usize, pieces: &[&'a [u8]], last: &'a [u8]) -> Vec<(&'a [u8], bool)> {
    let mut out: Vec<(&[u8], bool)> = Vec::new();
    for p in pieces {
        out.extend(p.chunks(cap).map(|c| (c, false)));
    }
    if last.is_empty() {
        out.push((last, true));
    } else {
        let n = last.len().div_ceil(cap);
        out.extend(last.chunks(cap).enumerate().map(|(i, c)| (c, i + 1 == n)));
    }
    out
}

/// The stream the format defines for this split.
#[allow(clippy::too_many_arguments)]
pub fn build(
    alg: Algorithm,
    key: &[u8],
    aad: &[u8],
    cap: usize,
    salt: &[u8; 32],
    prefix: &[u8; 7],
    pieces: &[&[u8]],
    last: &[u8],
) -> Vec<u8> {
    let header = header(alg, u32::try_from(cap).unwrap(), salt, prefix);
    let recs: Vec<Rec> = split(cap, pieces, last)
        .into_iter()
        .enumerate()
        .map(|(i, (pt, last))| Rec {
            counter: u32::try_from(i).unwrap(),
            last,
            pt,
        })
        .collect();
    seal(&header, key, aad, &recs)
}

/// A record as parsed: where its record header starts, its flag and
/// plaintext.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub offset: usize,
    pub last: bool,
    pub pt: Vec<u8>,
}

impl Parsed {
    /// Where the record ends in the stream.
    pub fn end(&self) -> usize {
        self.offset + OVERHEAD + self.pt.len()
    }
}

/// Parses a whole framed stream: its header and every record, to a
/// final record that ends the input.
pub fn parse(key: &[u8], aad: &[u8], s: &[u8]) -> Result<Vec<Parsed>, String> {
    let header = s.get(..HEADER_LEN).ok_or("short header")?;
    if &header[..8] != MAGIC || header[8] != VERSION {
        return Err("magic or version".into());
    }
    let seg = u32::from_be_bytes(header[10..14].try_into().unwrap()) as usize;
    if seg == 0 {
        return Err("segment size 0".into());
    }
    let aead = stream_aead(header, key, aad).ok_or("algorithm or key")?;
    let mut pos = HEADER_LEN;
    let mut out = Vec::new();
    for i in 0u32.. {
        let h: [u8; 4] = s
            .get(pos..pos + 4)
            .ok_or(format!("cut in record {i}'s header"))?
            .try_into()
            .unwrap();
        let v = u32::from_be_bytes(h);
        let (len, last) = ((v & 0x7fff_ffff) as usize, v >> 31 == 1);
        if len > seg {
            return Err(format!("record {i}: length {len} over {seg}"));
        }
        let sealed = s
            .get(pos + 4..pos + OVERHEAD + len)
            .ok_or(format!("cut in record {i}"))?;
        let pt = aead
            .open(&nonce(&header[46..53], i, last), &h, sealed)
            .ok_or(format!("record {i} does not authenticate"))?;
        out.push(Parsed {
            offset: pos,
            last,
            pt,
        });
        pos += OVERHEAD + len;
        if last {
            if pos != s.len() {
                return Err("bytes after the final record".into());
            }
            return Ok(out);
        }
    }
    unreachable!()
}
