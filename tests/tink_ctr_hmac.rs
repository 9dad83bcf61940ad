//! Tink's AES-CTR-HMAC streaming keys (`cipherio::tink::AesCtrHmacKey`):
//! round trips over both fronts and every provider pair, checked against
//! the format's one oracle (`fuzz/src/oracle_tink_ctr.rs` through
//! `common::oracles`: hkdf, ctr, aes and hmac directly, no crate code); the key's capacity rule.
//! Tampering is in the tamper suite (`tests/tamper.rs`), with every other
//! format; Tink's own output is in `tink_vectors.rs`.
//!
//! The format: header = H ‖ salt (derived key size) ‖ nonce prefix (7),
//! H = 1 + derived key size + 7; HKDF(hkdf hash, salt, ikm, info = AAD,
//! L = derived key size + 32) = AES key ‖ HMAC key; segment i = AES-CTR
//! with IV prefix ‖ BE32(i) ‖ last ‖ 0^4, then HMAC(IV ‖ ciphertext)
//! truncated to the tag size; segment 0 holds css − H − tag plaintext
//! bytes, later ones css − tag.

#![allow(clippy::unwrap_used)]

mod common;

use cipherio::tink::{AesCtrHmacKey, AesCtrHmacParams, HkdfHash, HmacHash};
use cipherio::{CipherReader, CipherWriter, Error};

use common::format::{hash_id, hmac_id};
use common::oracles::oracle_tink_ctr;
use common::{Front, Layout, ReadMode, WriteMode, data, pairs, write_in};

// ---------------------------------------------------------------------
// The format's one oracle (`common::oracles::oracle_tink_ctr`, the fuzz
// crate's file), written from the format description.
// ---------------------------------------------------------------------

/// One key's sizes and hashes.
#[derive(Clone, Copy, Debug)]
struct Spec {
    dks: usize,
    css: usize,
    hkdf: HkdfHash,
    hmac: HmacHash,
    tag: usize,
}

impl Spec {
    fn first(&self) -> usize {
        self.layout().first
    }
    fn rest(&self) -> usize {
        self.layout().rest
    }
    fn layout(&self) -> Layout {
        Layout::tink_with_tag(self.dks, self.css, self.tag)
    }
    fn params(&self) -> AesCtrHmacParams {
        AesCtrHmacParams::new(self.dks, self.css, self.hkdf, self.hmac, self.tag).unwrap()
    }
    fn oracle(&self) -> oracle_tink_ctr::Params {
        oracle_tink_ctr::Params {
            key_size: self.dks,
            segment: self.css,
            hkdf: hash_id(self.hkdf),
            hmac: hmac_id(self.hmac),
            tag: self.tag,
        }
    }

    /// The stream of `pt` with this salt and nonce prefix.
    fn encrypt(&self, ikm: &[u8], aad: &[u8], salt: &[u8], prefix: &[u8], pt: &[u8]) -> Vec<u8> {
        oracle_tink_ctr::encrypt(&self.oracle(), ikm, aad, salt, prefix, pt)
    }

    /// The stream of `pt` under the salt and nonce prefix of `ct`'s header.
    fn encrypt_like(&self, ikm: &[u8], aad: &[u8], ct: &[u8], pt: &[u8]) -> Vec<u8> {
        let (salt, prefix) = ct[1..self.layout().header].split_at(self.dks);
        self.encrypt(ikm, aad, salt, prefix, pt)
    }

    /// The plaintext of a valid stream, or `None`.
    fn decrypt(&self, ikm: &[u8], aad: &[u8], stream: &[u8]) -> Option<Vec<u8>> {
        let d = oracle_tink_ctr::decrypt(&self.oracle(), ikm, aad, stream);
        d.valid.then_some(d.released)
    }
}

/// Tink's templates, the oracle's odd sets, and small segments with every
/// hash and both ends of the tag range.
fn specs() -> Vec<Spec> {
    use HkdfHash::{Sha1, Sha256, Sha512};
    // The HMAC hash by the same name as the HKDF one.
    let s = |dks, css, hkdf, hmac: HkdfHash, tag| Spec {
        dks,
        css,
        hkdf,
        hmac: HmacHash::from_name(hmac.name()).unwrap(),
        tag,
    };
    vec![
        s(16, 4096, Sha256, Sha256, 32),
        s(32, 4096, Sha256, Sha256, 32),
        s(16, 4113, Sha512, Sha512, 64),
        s(32, 4096, Sha1, Sha1, 20),
        s(16, 41, Sha256, Sha256, 16),
        s(16, 64, Sha1, Sha256, 32),
        s(32, 80, Sha512, Sha1, 10),
        s(32, 200, Sha256, Sha512, 64),
    ]
}

fn ikm(spec: &Spec) -> Vec<u8> {
    (0..spec.dks + 3)
        .map(|i| u8::try_from(i * 7 % 256).unwrap())
        .collect()
}

/// Plaintext lengths around the first segment boundaries.
fn lengths(spec: &Spec) -> Vec<usize> {
    let l = spec.layout();
    let mut v = vec![0, 1];
    for b in [l.first, l.first + l.rest, l.first + 2 * l.rest] {
        v.extend([b - 1, b, b + 1]);
    }
    v
}

#[test]
fn round_trips_on_every_front_and_provider_pair_agree_with_the_oracle() {
    let aad = b"tink ctr-hmac";
    for spec in specs() {
        let key = AesCtrHmacKey::new(spec.params(), &ikm(&spec)).unwrap();
        for len in lengths(&spec) {
            let pt = data(len, 7);
            for &front in Front::ALL {
                for (wp, rp) in pairs() {
                    let ctx = format!("{spec:?} len {len} {front:?} {wp:?}->{rp:?}");
                    let builder = CipherWriter::builder(&key)
                        .associated_data(aad)
                        .provider(wp);
                    let mut w = front.build_writer(builder, Vec::new());
                    write_in(&mut w, &pt, &WriteMode::Fixed(spec.first().max(3) - 2));
                    let ct = w.finish().unwrap();
                    assert_eq!(ct.len(), spec.layout().stream_len(len), "{ctx}");
                    assert!(
                        ct == spec.encrypt_like(&ikm(&spec), aad, &ct, &pt),
                        "{ctx}: the oracle's stream, byte for byte"
                    );
                    assert_eq!(
                        spec.decrypt(&ikm(&spec), aad, &ct).as_deref(),
                        Some(&pt[..]),
                        "{ctx}: the oracle reads the crate's stream"
                    );
                    let salt = data(spec.dks, len as u64);
                    let ours = spec.encrypt(&ikm(&spec), aad, &salt, b"noncepf", &pt);
                    for (which, stream) in [("crate", &ct), ("oracle", &ours)] {
                        let builder = CipherReader::builder(&key)
                            .associated_data(aad)
                            .provider(rp);
                        common::decrypt_ok(
                            &format!("{ctx} ({which}'s stream)"),
                            front,
                            builder,
                            stream,
                            &pt,
                            &ReadMode::Chunks(spec.rest() + 1),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_writer_capacity_is_the_keys_segment() {
    let p = AesCtrHmacParams::AES128_CTR_HMAC_SHA256_4KB;
    let key = AesCtrHmacKey::generate(p);
    assert_eq!(CipherWriter::new(&key, Vec::new()).capacity(), 4064);
    let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
    let e = std::io::Write::write(&mut w, b"x").unwrap_err();
    assert!(
        matches!(
            Error::from_io(&e),
            Some(&Error::CapacityForKey {
                capacity: 4096,
                required: 4064,
                ..
            })
        ),
        "{e}"
    );
}
