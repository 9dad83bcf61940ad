//! A one-shot model of Tink's AES-CTR-HMAC streaming format, written from
//! Tink's format description with the primitives directly (`aes`
//! and `ctr` for AES-CTR, `hmac`, `hkdf`, `sha1`, `sha2`):
//!
//! - header: `H = 1 + key_size + 7` ‖ salt (`key_size` bytes) ‖ nonce
//!   prefix (7 bytes), and the segments' layout, as for AES-GCM-HKDF keys
//!   (`oracle_tink`'s framing: only the crypto is this module's);
//! - keys: `HKDF(hkdf hash, salt, ikm = key, info = aad, L = key_size +
//!   32)`, the AES key first, then a 32-byte HMAC key;
//! - segment `i`: `IV = prefix ‖ BE32(i) ‖ last ‖ 00 00 00 00`,
//!   ciphertext = AES-CTR(IV, plaintext), then the HMAC (hmac hash) of
//!   `IV ‖ ciphertext` truncated to `tag` bytes; a reader checks the tag
//!   before decrypting;
//! - segment 0 holds `segment - H - tag` plaintext bytes, later ones
//!   `segment - tag`, the last one (possibly full, or the only and empty
//!   one) sealed with `last = 1`.

use aes::cipher::{KeyIvInit, StreamCipher};
use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use super::oracle::{Decrypted, last_flags};
use super::oracle_tink::{chunks, framed, read};

/// The HMAC key's length, whatever the hash.
const MAC_KEY_LEN: usize = 32;

/// Tink AES-CTR-HMAC parameters as plain numbers.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// AES key size of each stream: 16 or 32.
    pub key_size: usize,
    /// Sealed bytes per segment (ciphertext and tag); the first also holds
    /// the header.
    pub segment: usize,
    /// HKDF hash: 1, 256 or 512 (SHA-1, SHA-256, SHA-512).
    pub hkdf: u16,
    /// HMAC hash, as `hkdf`.
    pub hmac: u16,
    /// Bytes of truncated HMAC after each segment's ciphertext.
    pub tag: usize,
}

/// Bytes of output of hash `h` (1, 256 or 512).
pub fn hash_len(h: u16) -> usize {
    match h {
        1 => 20,
        256 => 32,
        _ => 64,
    }
}

/// One stream's keys.
struct Keys {
    aes: Vec<u8>,
    mac: [u8; MAC_KEY_LEN],
}

impl Params {
    /// `1 + key_size + 7`.
    pub fn header_len(&self) -> usize {
        1 + self.key_size + 7
    }

    /// Plaintext bytes of segment 0 and of later segments.
    pub fn plain(&self) -> [usize; 2] {
        [
            self.segment - self.header_len() - self.tag,
            self.segment - self.tag,
        ]
    }

    fn keys(&self, key: &[u8], salt: &[u8], aad: &[u8]) -> Keys {
        let mut okm = vec![0u8; self.key_size + MAC_KEY_LEN];
        let ok = match self.hkdf {
            1 => Hkdf::<Sha1>::new(Some(salt), key).expand(aad, &mut okm),
            256 => Hkdf::<Sha256>::new(Some(salt), key).expand(aad, &mut okm),
            _ => Hkdf::<Sha512>::new(Some(salt), key).expand(aad, &mut okm),
        };
        assert!(ok.is_ok(), "HKDF output of 48 or 64 bytes");
        let (aes, mac) = okm.split_at(self.key_size);
        Keys {
            aes: aes.to_vec(),
            mac: mac.try_into().expect("32 bytes"),
        }
    }

    /// The HMAC of `iv ‖ ct`, truncated to the tag size.
    fn tag(&self, k: &Keys, iv: &[u8; 16], ct: &[u8]) -> Vec<u8> {
        fn mac<M: Mac + KeyInit>(key: &[u8], iv: &[u8], ct: &[u8]) -> Vec<u8> {
            let mut m = <M as KeyInit>::new_from_slice(key).expect("any HMAC key length");
            m.update(iv);
            m.update(ct);
            m.finalize().into_bytes().to_vec()
        }
        let mut t = match self.hmac {
            1 => mac::<Hmac<Sha1>>(&k.mac, iv, ct),
            256 => mac::<Hmac<Sha256>>(&k.mac, iv, ct),
            _ => mac::<Hmac<Sha512>>(&k.mac, iv, ct),
        };
        t.truncate(self.tag);
        t
    }
}

/// AES-CTR with a 128-bit big-endian counter from `iv` over `data`.
fn ctr(k: &Keys, iv: &[u8; 16], data: &mut [u8]) {
    if k.aes.len() == 16 {
        let mut c = ctr::Ctr128BE::<aes::Aes128>::new_from_slices(&k.aes, iv).expect("16-byte key");
        c.apply_keystream(data);
    } else {
        let mut c = ctr::Ctr128BE::<aes::Aes256>::new_from_slices(&k.aes, iv).expect("32-byte key");
        c.apply_keystream(data);
    }
}

/// `prefix (7) ‖ BE32(i) ‖ last ‖ 00 00 00 00`.
fn iv(prefix: &[u8], i: u32, last: bool) -> [u8; 16] {
    let mut n = [0u8; 16];
    n[..7].copy_from_slice(prefix);
    n[7..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

/// The stream a Tink writer produces for `pt` (see the module docs).
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
    let segs = last_flags(&chunks(pt, p.plain()));
    seal_flagged(p, key, aad, salt, prefix, &segs)
}

/// The header, then segment `i` of `segs` sealed with counter `i` and the
/// last flag it comes with, whatever the flags say.
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
    let k = p.keys(key, salt, aad);
    framed(salt, prefix, segs, |i, last, c| {
        let iv = iv(prefix, i, last);
        let mut sealed = c.to_vec();
        ctr(&k, &iv, &mut sealed);
        let tag = p.tag(&k, &iv, &sealed);
        sealed.extend_from_slice(&tag);
        sealed
    })
}

/// What a reader may release from `input` (see [`Decrypted`]); a first
/// byte other than the header length makes it invalid. `segment_size` is
/// always `None` (the segment size is the key's).
pub fn decrypt(p: &Params, key: &[u8], aad: &[u8], input: &[u8]) -> Decrypted {
    read(input, p.key_size, p.segment, p.tag, |salt, prefix| {
        let k = p.keys(key, salt, aad);
        let prefix = prefix.to_vec();
        move |i, last, sealed: &[u8]| {
            let (ct, tag) = sealed.split_at(sealed.len().checked_sub(p.tag)?);
            let iv = iv(&prefix, i, last);
            if p.tag(&k, &iv, ct) != tag {
                return None;
            }
            let mut pt = ct.to_vec();
            ctr(&k, &iv, &mut pt);
            Some(pt)
        }
    })
}
