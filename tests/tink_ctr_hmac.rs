//! Tink's AES-CTR-HMAC streaming keys (`cipherio::tink::AesCtrHmacKey`):
//! round trips over both fronts and every provider pair, checked against
//! an independent encoder and decoder written from the format (hkdf, ctr,
//! aes and hmac directly, no crate code); tampering with every byte of a
//! small multi-segment stream, truncation at every length, the tag alone;
//! the key's capacity rule. Tink's own output is in `tink_vectors.rs`.
//!
//! The format: header = H ‖ salt (derived key size) ‖ nonce prefix (7),
//! H = 1 + derived key size + 7; HKDF(hkdf hash, salt, ikm, info = AAD,
//! L = derived key size + 32) = AES key ‖ HMAC key; segment i = AES-CTR
//! with IV prefix ‖ BE32(i) ‖ last ‖ 0^4, then HMAC(IV ‖ ciphertext)
//! truncated to the tag size; segment 0 holds css − H − tag plaintext
//! bytes, later ones css − tag.

#![allow(clippy::unwrap_used)]

mod common;

use aes::{Aes128, Aes256};
use cipherio::tink::{AesCtrHmacKey, AesCtrHmacParams, HkdfHash, HmacHash};
use cipherio::{CipherReader, CipherWriter, Error};
use ctr::Ctr128BE;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use common::{Front, Layout, ReadMode, Tamper, Upto, Want, WriteMode, data, pairs, write_in};

// ---------------------------------------------------------------------
// The oracle, from the format description.
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
    fn header(&self) -> usize {
        1 + self.dks + 7
    }
    fn first(&self) -> usize {
        self.css - self.header() - self.tag
    }
    fn rest(&self) -> usize {
        self.css - self.tag
    }
    fn layout(&self) -> Layout {
        Layout {
            header: self.header(),
            first: self.first(),
            rest: self.rest(),
        }
    }
    fn params(&self) -> AesCtrHmacParams {
        AesCtrHmacParams::new(self.dks, self.css, self.hkdf, self.hmac, self.tag).unwrap()
    }
    /// Length of the stream of `len` plaintext bytes.
    fn stream_len(&self, len: usize) -> usize {
        self.header() + len + self.tag * self.layout().segments(len)
    }

    fn keys(&self, ikm: &[u8], salt: &[u8], aad: &[u8]) -> Vec<u8> {
        let mut okm = vec![0u8; self.dks + 32];
        match self.hkdf {
            HkdfHash::Sha1 => Hkdf::<Sha1>::new(Some(salt), ikm).expand(aad, &mut okm),
            HkdfHash::Sha256 => Hkdf::<Sha256>::new(Some(salt), ikm).expand(aad, &mut okm),
            HkdfHash::Sha512 => Hkdf::<Sha512>::new(Some(salt), ikm).expand(aad, &mut okm),
        }
        .unwrap();
        okm
    }

    fn ctr(&self, key: &[u8], iv: &[u8; 16], buf: &mut [u8]) {
        if key.len() == 16 {
            Ctr128BE::<Aes128>::new_from_slices(key, iv)
                .unwrap()
                .apply_keystream(buf);
        } else {
            Ctr128BE::<Aes256>::new_from_slices(key, iv)
                .unwrap()
                .apply_keystream(buf);
        }
    }

    fn mac(&self, key: &[u8], iv: &[u8; 16], ct: &[u8]) -> Vec<u8> {
        fn go<M: Mac + KeyInit>(key: &[u8], iv: &[u8], ct: &[u8]) -> Vec<u8> {
            let mut m = <M as KeyInit>::new_from_slice(key).unwrap();
            m.update(iv);
            m.update(ct);
            m.finalize().as_bytes().to_vec()
        }
        let full = match self.hmac {
            HkdfHash::Sha1 => go::<Hmac<Sha1>>(key, iv, ct),
            HkdfHash::Sha256 => go::<Hmac<Sha256>>(key, iv, ct),
            HkdfHash::Sha512 => go::<Hmac<Sha512>>(key, iv, ct),
        };
        full[..self.tag].to_vec()
    }

    fn iv(prefix: &[u8], i: usize, last: bool) -> [u8; 16] {
        let mut iv = [0u8; 16];
        iv[..7].copy_from_slice(prefix);
        iv[7..11].copy_from_slice(&u32::try_from(i).unwrap().to_be_bytes());
        iv[11] = u8::from(last);
        iv
    }

    /// The stream of `pt` with this salt and nonce prefix.
    fn encrypt(&self, ikm: &[u8], aad: &[u8], salt: &[u8], prefix: &[u8], pt: &[u8]) -> Vec<u8> {
        let okm = self.keys(ikm, salt, aad);
        let (ak, hk) = okm.split_at(self.dks);
        let mut out = vec![u8::try_from(self.header()).unwrap()];
        out.extend_from_slice(salt);
        out.extend_from_slice(prefix);
        let segs = self.layout().plain_segments(pt);
        for (i, seg) in segs.iter().enumerate() {
            let iv = Spec::iv(prefix, i, i + 1 == segs.len());
            let mut ct = seg.to_vec();
            self.ctr(ak, &iv, &mut ct);
            let tag = self.mac(hk, &iv, &ct);
            out.extend_from_slice(&ct);
            out.extend_from_slice(&tag);
        }
        out
    }

    /// The plaintext of a stream, or `None` if anything fails.
    fn decrypt(&self, ikm: &[u8], aad: &[u8], stream: &[u8]) -> Option<Vec<u8>> {
        let h = self.header();
        if stream.len() < h || usize::from(stream[0]) != h {
            return None;
        }
        let (salt, prefix) = stream[1..h].split_at(self.dks);
        let okm = self.keys(ikm, salt, aad);
        let (ak, hk) = okm.split_at(self.dks);
        let mut body = &stream[h..];
        let mut pt = Vec::new();
        for i in 0.. {
            let full = self.layout().plain(i) + self.tag;
            let last = body.len() <= full;
            let take = body.len().min(full);
            let seg = &body[..take];
            let cut = seg.len().checked_sub(self.tag)?;
            let (ct, tag) = seg.split_at(cut);
            let iv = Spec::iv(prefix, i, last);
            if self.mac(hk, &iv, ct) != tag {
                return None;
            }
            let mut p = ct.to_vec();
            self.ctr(ak, &iv, &mut p);
            pt.extend(p);
            body = &body[take..];
            if last {
                return Some(pt);
            }
        }
        None
    }
}

/// Tink's templates, the oracle's odd sets, and small segments with every
/// hash and both ends of the tag range.
fn specs() -> Vec<Spec> {
    use HkdfHash::{Sha1, Sha256, Sha512};
    let s = |dks, css, hkdf, hmac, tag| Spec {
        dks,
        css,
        hkdf,
        hmac,
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
                    assert_eq!(ct.len(), spec.stream_len(len), "{ctx}");
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
fn every_damaged_byte_and_every_cut_fails_releasing_only_authenticated_segments() {
    use HkdfHash::{Sha1, Sha256};
    // Three segments of 20, 44 and 36 bytes; 16-byte tags; and a 10-byte
    // truncated SHA1 tag.
    for spec in [
        Spec {
            dks: 16,
            css: 60,
            hkdf: Sha256,
            hmac: Sha256,
            tag: 16,
        },
        Spec {
            dks: 16,
            css: 54,
            hkdf: Sha1,
            hmac: Sha1,
            tag: 10,
        },
    ] {
        let key = AesCtrHmacKey::new(spec.params(), &ikm(&spec)).unwrap();
        let l = spec.layout();
        let pt = data(l.first + l.rest + 30, 3);
        let ct = spec.encrypt(&ikm(&spec), b"", &data(spec.dks, 1), b"prefix!", &pt);
        let builder = CipherReader::builder(&key);
        let ctx = format!("{spec:?}");
        let t = Tamper {
            ctx: &ctx,
            builder: &builder,
            layout: &l,
            pt: &pt,
        };
        t.clean(&ct);
        let pats = [ReadMode::ToEnd, ReadMode::Chunks(1), ReadMode::FillBuf(7)];
        let configs = [(l.rest, usize::MAX), (1, 1)];
        // The start of each segment in the stream, and its plaintext.
        let starts = [
            spec.header(),
            spec.header() + l.first + spec.tag,
            spec.header() + l.first + l.rest + 2 * spec.tag,
        ];
        let before = [0, l.first, l.first + l.rest];
        for pos in 0..ct.len() {
            let mut bad = ct.clone();
            bad[pos] ^= 0x01;
            let seg = starts.iter().rposition(|&s| pos >= s).unwrap_or(0);
            let want = if pos == 0 {
                Want::Is(Error::HeaderLength {
                    expected: u8::try_from(spec.header()).unwrap(),
                    found: bad[0],
                })
            } else {
                Want::Is(Error::Authentication)
            };
            t.fail_in(&configs, &pats, &bad, &want, Upto::Between(0, before[seg]));
        }
        for cut in 0..ct.len() {
            // Only whole segments before the cut can open (a whole one at
            // the cut opens as non-final, and the stream then ends early).
            let whole = starts[1..].iter().filter(|&&end| end <= cut).count();
            t.fail_in(
                &configs,
                &pats,
                &ct[..cut],
                &Want::Damaged,
                Upto::Between(0, before[whole]),
            );
        }
        // Trailing data after the final segment.
        let mut long = ct.clone();
        long.push(0);
        t.fail_in(
            &configs,
            &pats,
            &long,
            &Want::InvalidData,
            Upto::Between(0, pt.len()),
        );
    }
}

#[test]
fn wrong_aad_or_key_and_a_tag_alone_are_refused() {
    let spec = specs()[0];
    let key = AesCtrHmacKey::new(spec.params(), &ikm(&spec)).unwrap();
    let other = AesCtrHmacKey::new(spec.params(), &[9; 16]).unwrap();
    let pt = data(5000, 1);
    let ct = spec.encrypt(&ikm(&spec), b"a", &[1; 16], &[2; 7], &pt);
    for &front in Front::ALL {
        for (k, aad) in [(&key, &b"b"[..]), (&key, b""), (&other, b"a")] {
            let builder = CipherReader::builder(k).associated_data(aad);
            let e = common::decrypt(front, builder, &ct).unwrap_err();
            assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
        }
        // The tag of another segment, the right length: refused.
        let empty = spec.encrypt(&ikm(&spec), b"a", &[1; 16], &[2; 7], b"");
        let mut swapped = empty.clone();
        let n = swapped.len();
        swapped[n - spec.tag..].copy_from_slice(&ct[ct.len() - spec.tag..]);
        let builder = CipherReader::builder(&key).associated_data(b"a");
        assert!(common::decrypt(front, builder.clone(), &swapped).is_err());
        assert_eq!(common::decrypt(front, builder, &empty).unwrap(), b"");
    }
}

#[test]
fn the_writer_capacity_is_the_keys_segment() {
    let p = AesCtrHmacParams::AES128_CTR_HMAC_SHA256_4KB;
    let key = AesCtrHmacKey::generate(p).unwrap();
    assert_eq!(CipherWriter::new(&key, Vec::new()).capacity(), 4064);
    let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
    let e = std::io::Write::write(&mut w, b"x").unwrap_err();
    assert_eq!(
        Error::from_io(&e),
        Some(&Error::CapacityForKey {
            capacity: 4096,
            required: 4064
        })
    );
}
