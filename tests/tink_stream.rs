//! The Tink-compatible profile (`cipherio::tink`) as the native format is
//! tested: round trips over parameter sets, lengths at segment boundaries
//! and write/read chunkings (exact ciphertext length checked); an
//! independent decoder and encoder written from the format description
//! (hkdf, sha1/sha2 and aes-gcm directly); exhaustive tampering and
//! truncation of small multi-segment streams; Tink's edge cases (an extra
//! empty final segment is accepted, bytes after the final segment are
//! not); misbehaving inner I/O; and the API's edges.
//!
//! Every damaged stream is read with several read patterns and read-ahead /
//! inner-read sizes, and every read must end in a sticky error (never a
//! clean end), having released only a prefix of the plaintext that ends on
//! a segment boundary before the damaged segment.
//! Every tampered, truncated or reordered stream is sealed by each
//! provider in `Provider::ALL` and read by each (all four pairs with the
//! `aws-lc` feature).
//!
//! The layout here is computed from the format description, not from
//! `TinkParams`: header H = 1 + derived key size + 7; segment 0 holds
//! `css − H − 16` plaintext bytes, later ones `css − 16`.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::ops::Deref;

use aes_gcm::aead::{AeadCore, AeadInOut, KeyInit, Nonce, Tag};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use cipherio::format::{HEADER_LEN, Header};
use cipherio::tink::{HkdfHash, MAX_CIPHERTEXT_SEGMENT_SIZE, TinkKey, TinkParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key, Provider};
use hkdf::Hkdf;
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use common::{
    Front, Layout, ReadMode, ScriptReader, ScriptWriter, TAMPER_CONFIGS as CONFIGS, Tamper, Upto,
    Want, WriteMode, assert_sticky, crate_error, decrypt_ok, read_injecting_at_every_call,
    read_retrying, read_watching_key, write_in, write_retrying,
};

const TAG: usize = common::TAG;
const PREFIX: usize = common::PREFIX;
const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------
// The layout, from the format description.
// ---------------------------------------------------------------------

/// A Tink key's sizes and hash, and the layout they make
/// ([`common::Layout`], from the format description).
#[derive(Clone, Copy, Debug)]
struct Lay {
    dks: usize,
    css: usize,
    hash: HkdfHash,
    /// Header length.
    h: usize,
    layout: Layout,
}

impl Deref for Lay {
    type Target = Layout;

    fn deref(&self) -> &Layout {
        &self.layout
    }
}

impl Lay {
    fn new(dks: usize, css: usize, hash: HkdfHash) -> Lay {
        let layout = Layout::tink(dks, css);
        Lay {
            dks,
            css,
            hash,
            h: layout.header,
            layout,
        }
    }

    fn params(&self) -> TinkParams {
        TinkParams::new(self.dks, self.css, self.hash).unwrap()
    }

    fn ct_len(&self, len: usize) -> usize {
        self.stream_len(len)
    }

    /// 0, 1, first ± 1, first + k·rest ± 1 for k = 1, 2, and several
    /// segments with a short final one.
    fn lengths(&self) -> Vec<usize> {
        let extra = self.first + 3 * self.rest + 7;
        self.lengths_around(&[1, 2, 3], &[extra])
    }
}

/// [`common::data`]: never 0x00 nor 0xAA, so leaks show.
fn plaintext(len: usize, seed: usize) -> Vec<u8> {
    common::data(len, seed as u64)
}

fn raw_key(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i).unwrap().wrapping_mul(37) ^ seed)
        .collect()
}

fn tink_key(lay: &Lay, raw: &[u8]) -> TinkKey {
    TinkKey::new(lay.params(), raw).unwrap()
}

// ---------------------------------------------------------------------
// Independent decoder/encoder from the format description.
// ---------------------------------------------------------------------

/// key = HKDF(hash, salt, ikm = raw key, info = associated data, L = dks).
fn spec_derive(hash: HkdfHash, dks: usize, raw: &[u8], salt: &[u8], aad: &[u8]) -> Vec<u8> {
    let mut okm = vec![0u8; dks];
    match hash {
        HkdfHash::Sha1 => Hkdf::<Sha1>::new(Some(salt), raw)
            .expand(aad, &mut okm)
            .unwrap(),
        HkdfHash::Sha256 => Hkdf::<Sha256>::new(Some(salt), raw)
            .expand(aad, &mut okm)
            .unwrap(),
        HkdfHash::Sha512 => Hkdf::<Sha512>::new(Some(salt), raw)
            .expand(aad, &mut okm)
            .unwrap(),
    }
    okm
}

/// `nonce_i = prefix (7) ‖ BE32(i) ‖ last`.
fn spec_nonce(prefix: &[u8], i: usize, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..PREFIX].copy_from_slice(prefix);
    n[PREFIX..11].copy_from_slice(&u32::try_from(i).unwrap().to_be_bytes());
    n[11] = u8::from(last);
    n
}

fn gcm_seal<A: AeadInOut>(a: &A, nonce: &[u8; 12], pt: &[u8]) -> Vec<u8> {
    let nonce = Nonce::<A>::try_from(&nonce[..]).unwrap();
    let mut out = pt.to_vec();
    let tag = a
        .encrypt_inout_detached(&nonce, &[], out.as_mut_slice().into())
        .unwrap();
    out.extend_from_slice(&tag);
    out
}

fn gcm_open<A: AeadInOut + AeadCore>(a: &A, nonce: &[u8; 12], sealed: &[u8]) -> Option<Vec<u8>> {
    let nonce = Nonce::<A>::try_from(&nonce[..]).unwrap();
    let body = sealed.len().checked_sub(TAG)?;
    let tag = Tag::<A>::try_from(&sealed[body..]).unwrap();
    let mut out = sealed[..body].to_vec();
    a.decrypt_inout_detached(&nonce, &[], out.as_mut_slice().into(), &tag)
        .ok()?;
    Some(out)
}

/// AES-GCM keyed with a derived key: AES-128 for 16 bytes, AES-256 for 32.
enum Gcm {
    A128(Box<Aes128Gcm>),
    A256(Box<Aes256Gcm>),
}

/// One stream's segment sealer from the spec: derived key and prefix.
struct Spec {
    gcm: Gcm,
    prefix: Vec<u8>,
}

impl Spec {
    fn new(hash: HkdfHash, dks: usize, raw: &[u8], aad: &[u8], salt: &[u8], prefix: &[u8]) -> Spec {
        let k = spec_derive(hash, dks, raw, salt, aad);
        let gcm = match dks {
            16 => Gcm::A128(Box::new(Aes128Gcm::new_from_slice(&k).unwrap())),
            32 => Gcm::A256(Box::new(Aes256Gcm::new_from_slice(&k).unwrap())),
            _ => panic!("no AES-GCM with {dks}-byte keys"),
        };
        Spec {
            gcm,
            prefix: prefix.to_vec(),
        }
    }

    /// The sealer of the Tink stream whose header is `header`.
    fn tink(lay: &Lay, raw: &[u8], aad: &[u8], header: &[u8]) -> Spec {
        let salt = &header[1..=lay.dks];
        let prefix = &header[1 + lay.dks..lay.h];
        Spec::new(lay.hash, lay.dks, raw, aad, salt, prefix)
    }

    fn seal(&self, i: usize, last: bool, pt: &[u8]) -> Vec<u8> {
        let n = spec_nonce(&self.prefix, i, last);
        match &self.gcm {
            Gcm::A128(a) => gcm_seal(&**a, &n, pt),
            Gcm::A256(a) => gcm_seal(&**a, &n, pt),
        }
    }

    fn open(&self, i: usize, last: bool, sealed: &[u8]) -> Option<Vec<u8>> {
        let n = spec_nonce(&self.prefix, i, last);
        match &self.gcm {
            Gcm::A128(a) => gcm_open(&**a, &n, sealed),
            Gcm::A256(a) => gcm_open(&**a, &n, sealed),
        }
    }
}

/// The Tink header: H ‖ salt ‖ prefix.
fn spec_header(lay: &Lay, salt: &[u8], prefix: &[u8]) -> Vec<u8> {
    assert_eq!((salt.len(), prefix.len()), (lay.dks, PREFIX));
    let mut h = vec![u8::try_from(lay.h).unwrap()];
    h.extend_from_slice(salt);
    h.extend_from_slice(prefix);
    h
}

/// `header` followed by each `(plaintext, last)` segment, sealed by the spec.
fn spec_build(lay: &Lay, raw: &[u8], aad: &[u8], header: &[u8], segs: &[(&[u8], bool)]) -> Vec<u8> {
    let spec = Spec::tink(lay, raw, aad, header);
    let mut out = header.to_vec();
    for (i, (pt, last)) in segs.iter().enumerate() {
        out.extend_from_slice(&spec.seal(i, *last, pt));
    }
    out
}

/// The stream Tink writes for `pt` with this salt and prefix.
fn spec_encode(
    lay: &Lay,
    raw: &[u8],
    aad: &[u8],
    salt: &[u8],
    prefix: &[u8],
    pt: &[u8],
) -> Vec<u8> {
    let segs = lay.plain_segments(pt);
    let n = segs.len();
    let flagged: Vec<(&[u8], bool)> = segs
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, i == n - 1))
        .collect();
    spec_build(lay, raw, aad, &spec_header(lay, salt, prefix), &flagged)
}

/// Decodes a stream strictly by the description (one encoding per
/// plaintext: the final segment is empty only in the empty stream).
/// Returns the plaintext of each segment.
fn spec_decode(lay: &Lay, raw: &[u8], aad: &[u8], ct: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    if ct.len() < lay.h {
        return Err("shorter than the header".into());
    }
    if usize::from(ct[0]) != lay.h {
        return Err(format!("header length byte {} not {}", ct[0], lay.h));
    }
    let spec = Spec::tink(lay, raw, aad, &ct[..lay.h]);
    let mut pos = lay.h;
    let mut segs = Vec::new();
    for i in 0.. {
        let left = ct.len() - pos;
        let full = lay.sealed(i);
        let last = left <= full;
        let take = left.min(full);
        let pt = spec
            .open(i, last, &ct[pos..pos + take])
            .ok_or_else(|| format!("segment {i} (last {last}, {take} bytes) does not open"))?;
        if !last && spec.open(i, true, &ct[pos..pos + take]).is_some() {
            return Err(format!("segment {i} also opens as final"));
        }
        pos += take;
        if last && pt.is_empty() && i > 0 {
            return Err("empty final segment after full ones".into());
        }
        segs.push(pt);
        if last {
            break;
        }
    }
    Ok(segs)
}

// ---------------------------------------------------------------------
// Parameter sets.
// ---------------------------------------------------------------------

/// (layout, raw key length) for the round trips: minimal segments for
/// both key sizes, odd sizes, 4 KiB, every hash, raw keys longer than the
/// derived key.
fn roundtrip_sets() -> Vec<(Lay, usize)> {
    vec![
        (Lay::new(16, 41, HkdfHash::Sha256), 16),
        (Lay::new(32, 57, HkdfHash::Sha256), 32),
        (Lay::new(16, 4113, HkdfHash::Sha1), 16),
        (Lay::new(32, 100, HkdfHash::Sha512), 32),
        (Lay::new(16, 4096, HkdfHash::Sha256), 16),
        (Lay::new(32, 4096, HkdfHash::Sha1), 32),
        (Lay::new(16, 100, HkdfHash::Sha512), 32),
        (Lay::new(16, 4096, HkdfHash::Sha256), 32),
        (Lay::new(32, 4113, HkdfHash::Sha256), 48),
    ]
}

/// Small layouts for the exhaustive tampering: (16-byte key, 8 + 32-byte
/// segments), (32-byte key, 8 + 48), and the minimal one (1 + 25).
fn tamper_sets() -> [Lay; 3] {
    [
        Lay::new(16, 48, HkdfHash::Sha256),
        Lay::new(32, 64, HkdfHash::Sha512),
        Lay::new(16, 41, HkdfHash::Sha1),
    ]
}

/// Tampering lengths: several segments with a short final one, several
/// with a full final one, one full segment, one short, empty.
fn tamper_lengths(lay: &Lay) -> [usize; 5] {
    [
        lay.first + 2 * lay.rest + 5,
        lay.first + 2 * lay.rest,
        lay.first,
        lay.first.div_ceil(2),
        0,
    ]
}

// ---------------------------------------------------------------------
// Writing and reading.
// ---------------------------------------------------------------------

/// The round trips' write chunkings: 1, 7, 13 and 4099 bytes, all at
/// once, and sizes that straddle segment 0 and the later segments
/// (alternating the buffered and direct-seal paths) with an empty write
/// before every third.
fn write_modes(lay: &Lay) -> [WriteMode; 6] {
    [
        WriteMode::Fixed(1),
        WriteMode::Fixed(7),
        WriteMode::Fixed(13),
        WriteMode::Fixed(4099),
        WriteMode::AllAtOnce,
        straddle(lay),
    ]
}

fn straddle(lay: &Lay) -> WriteMode {
    WriteMode::Cycle {
        sizes: vec![
            lay.first + 1,
            lay.rest - 1,
            lay.rest + 1,
            2 * lay.rest + 3,
            1,
            lay.rest,
            lay.first,
        ],
        empty_every: 3,
    }
}

/// The stream of `pt` written in `mode` through `front`, sealed by
/// provider `wp`: a Tink writer's default capacity is the key's segment,
/// the length is exactly the layout's and the header length byte is H.
fn seal(
    front: Front,
    wp: Provider,
    key: &TinkKey,
    lay: &Lay,
    aad: &[u8],
    pt: &[u8],
    mode: &WriteMode,
) -> Vec<u8> {
    let builder = CipherWriter::builder(key).provider(wp).associated_data(aad);
    let mut w = front.build_writer(builder, Vec::new());
    assert_eq!(w.capacity(), lay.rest, "a Tink writer's default capacity");
    write_in(&mut w, pt, mode);
    let ct = w.finish().unwrap();
    assert_eq!(
        ct.len(),
        lay.ct_len(pt.len()),
        "{lay:?}: ciphertext length for {} bytes, {front:?}, {mode:?}",
        pt.len()
    );
    assert_eq!(usize::from(ct[0]), lay.h, "header length byte");
    ct
}

fn encrypt_aad(key: &TinkKey, lay: &Lay, aad: &[u8], pt: &[u8], mode: &WriteMode) -> Vec<u8> {
    seal(Front::Std, Provider::default(), key, lay, aad, pt, mode)
}

fn encrypt(key: &TinkKey, lay: &Lay, pt: &[u8]) -> Vec<u8> {
    encrypt_aad(key, lay, b"", pt, &WriteMode::Fixed(7))
}

fn encrypt_by(wp: Provider, key: &TinkKey, lay: &Lay, pt: &[u8]) -> Vec<u8> {
    seal(Front::Std, wp, key, lay, b"", pt, &WriteMode::Fixed(7))
}

/// The round trips' read patterns for a `len`-byte plaintext: reads of 1,
/// 7, one segment of each size, several segments (the zero-copy path
/// coalesces) and 1 MiB; `read_to_end`; `fill_buf` consuming 3 bytes and
/// everything in turn; `read_exact` of straddling sizes.
fn read_modes(lay: &Lay, len: usize) -> [ReadMode; 9] {
    [
        ReadMode::Chunks(1),
        ReadMode::Chunks(7),
        ReadMode::Chunks(lay.first),
        ReadMode::Chunks(lay.rest),
        ReadMode::Chunks(3 * lay.css + 5),
        ReadMode::Chunks(MIB),
        ReadMode::ToEnd,
        ReadMode::FillBuf(3),
        ReadMode::Exact {
            sizes: vec![11, lay.first + 1, lay.rest, 2 * lay.rest + 1],
            len,
        },
    ]
}

const READ_CAPS: [usize; 4] = [1, 7, 8 * 1024, MIB];

/// `ct` read through `front` with reader capacity `cap` in `mode` is `pt`,
/// with a stable end.
#[allow(clippy::too_many_arguments)]
fn decrypts_to(
    ctx: &str,
    front: Front,
    key: &TinkKey,
    aad: &[u8],
    cap: usize,
    ct: &[u8],
    pt: &[u8],
    mode: &ReadMode,
) {
    let builder = CipherReader::builder(key)
        .associated_data(aad)
        .capacity(cap);
    decrypt_ok(&format!("{ctx} cap {cap}"), front, builder, ct, pt, mode);
}

// ---------------------------------------------------------------------
// Round trips.
// ---------------------------------------------------------------------

#[test]
fn round_trip_every_parameter_set_length_and_write_chunking() {
    for (si, (lay, raw_len)) in roundtrip_sets().into_iter().enumerate() {
        let raw = raw_key(raw_len, u8::try_from(si).unwrap());
        let key = tink_key(&lay, &raw);
        for len in lay.lengths() {
            let pt = plaintext(len, si);
            let modes = read_modes(&lay, len);
            for (wi, wmode) in write_modes(&lay).iter().enumerate() {
                for &front in Front::ALL {
                    let ctx = format!("{lay:?} raw {raw_len} len {len} {wmode:?} {front:?}");
                    let ct = seal(front, Provider::default(), &key, &lay, b"", &pt, wmode);
                    // The independent decoder agrees, segment by segment.
                    let segs =
                        spec_decode(&lay, &raw, b"", &ct).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert_eq!(segs.len(), lay.segments(len), "{ctx}");
                    assert_eq!(segs, lay.plain_segments(&pt), "{ctx}");
                    // And the reader, in a rotating read mode and capacity.
                    let rmode = &modes[(wi + si + len) % modes.len()];
                    let cap = READ_CAPS[(wi + len) % READ_CAPS.len()];
                    decrypts_to(&ctx, front, &key, b"", cap, &ct, &pt, rmode);
                }
            }
        }
    }
}

#[test]
fn round_trip_every_read_pattern_and_reader_capacity() {
    for (si, (lay, raw_len)) in roundtrip_sets().into_iter().enumerate() {
        let raw = raw_key(raw_len, 0x40 ^ u8::try_from(si).unwrap());
        let key = tink_key(&lay, &raw);
        for len in lay.lengths() {
            let pt = plaintext(len, si + 1);
            let ct = encrypt(&key, &lay, &pt);
            for &front in Front::ALL {
                for mode in &read_modes(&lay, len) {
                    for cap in READ_CAPS {
                        let ctx = format!("{lay:?} len {len}");
                        decrypts_to(&ctx, front, &key, b"", cap, &ct, &pt, mode);
                    }
                }
            }
        }
    }
}

#[test]
fn associated_data_round_trips_and_binds_the_key() {
    let lay = Lay::new(32, 100, HkdfHash::Sha1);
    let raw = raw_key(32, 9);
    let key = tink_key(&lay, &raw);
    for aad in [&b""[..], b"x", b"object/name.bin", &[0u8; 300][..]] {
        let pt = plaintext(3 * lay.rest, aad.len());
        for &front in Front::ALL {
            let ct = seal(
                front,
                Provider::default(),
                &key,
                &lay,
                aad,
                &pt,
                &straddle(&lay),
            );
            let segs = spec_decode(&lay, &raw, aad, &ct).unwrap();
            assert_eq!(segs.concat(), pt);
            for cap in [1, DEFAULT_CAPACITY] {
                let ctx = format!("aad {} bytes, {front:?}", aad.len());
                decrypts_to(&ctx, front, &key, aad, cap, &ct, &pt, &ReadMode::ToEnd);
            }
        }
    }
}

/// The writer's output, opened by the spec decoder: header byte, salt and
/// prefix in place, key from HKDF with the right hash, nonces with the
/// counter and last flag, the first segment shorter by the header.
#[test]
fn writer_output_matches_the_format_description() {
    for (si, (lay, raw_len)) in roundtrip_sets().into_iter().enumerate() {
        let raw = raw_key(raw_len, 0x11 ^ u8::try_from(si).unwrap());
        let key = tink_key(&lay, &raw);
        let pt = plaintext(lay.first + 2 * lay.rest + 3, si);
        let ct = encrypt_aad(&key, &lay, b"ad", &pt, &WriteMode::AllAtOnce);
        let ctx = format!("{lay:?}");
        assert_eq!(
            spec_decode(&lay, &raw, b"ad", &ct).unwrap().concat(),
            pt,
            "{ctx}"
        );
        // Segment by segment at the described offsets, with the right flag
        // only.
        let spec = Spec::tink(&lay, &raw, b"ad", &ct[..lay.h]);
        let n = lay.segments(pt.len());
        assert_eq!(n, 4, "{ctx}");
        for i in 0..n {
            let s = &ct[lay.seg_range(ct.len(), i)];
            let last = i == n - 1;
            let want = &pt[lay.plain_before(i)..(lay.plain_before(i) + lay.plain(i)).min(pt.len())];
            assert_eq!(
                spec.open(i, last, s).as_deref(),
                Some(want),
                "{ctx}: segment {i}"
            );
            assert_eq!(
                spec.open(i, !last, s),
                None,
                "{ctx}: segment {i}, other flag"
            );
        }
        // Another hash gives another key.
        for other in [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512] {
            if other != lay.hash {
                let wrong = Lay { hash: other, ..lay };
                assert!(
                    spec_decode(&wrong, &raw, b"ad", &ct).is_err(),
                    "{ctx}: {other}"
                );
            }
        }
        // Two streams never share salt or prefix.
        let ct2 = encrypt_aad(&key, &lay, b"ad", &pt, &WriteMode::AllAtOnce);
        assert_ne!(ct[1..=lay.dks], ct2[1..=lay.dks], "{ctx}: salt repeated");
        assert_ne!(
            ct[1 + lay.dks..lay.h],
            ct2[1 + lay.dks..lay.h],
            "{ctx}: prefix repeated"
        );
    }
}

#[test]
fn empty_plaintext_is_header_and_one_tag() {
    for (lay, raw_len) in roundtrip_sets() {
        let raw = raw_key(raw_len, 3);
        let key = tink_key(&lay, &raw);
        let ct = CipherWriter::new(&key, Vec::new()).finish().unwrap();
        assert_eq!(ct.len(), lay.h + TAG, "{lay:?}");
        let segs = spec_decode(&lay, &raw, b"", &ct).unwrap();
        assert_eq!(segs, vec![Vec::<u8>::new()]);
        let spec = Spec::tink(&lay, &raw, b"", &ct[..lay.h]);
        assert_eq!(spec.open(0, true, &ct[lay.h..]), Some(vec![]));
        for &front in Front::ALL {
            for mode in &read_modes(&lay, 0) {
                decrypts_to(&format!("{lay:?}"), front, &key, b"", 7, &ct, &[], mode);
            }
        }
    }
}

/// The other direction: streams built by the spec encoder (chosen salt and
/// prefix) read back in every pattern.
#[test]
fn spec_encoded_streams_read_back() {
    for (si, (lay, raw_len)) in roundtrip_sets().into_iter().enumerate() {
        let raw = raw_key(raw_len, 0x77);
        let key = tink_key(&lay, &raw);
        let salt: Vec<u8> = (0..lay.dks)
            .map(|i| u8::try_from(i * 3 + si).unwrap())
            .collect();
        let prefix = [
            0xc3,
            0x01,
            0x7f,
            0x00,
            0xff,
            0x10,
            u8::try_from(si).unwrap(),
        ];
        for len in lay.lengths() {
            let pt = plaintext(len, si + 5);
            let ct = spec_encode(&lay, &raw, b"aad", &salt, &prefix, &pt);
            assert_eq!(ct.len(), lay.ct_len(len));
            for (mi, mode) in read_modes(&lay, len).iter().enumerate() {
                let cap = READ_CAPS[mi % READ_CAPS.len()];
                for &front in Front::ALL {
                    let ctx = format!("{lay:?} len {len}");
                    decrypts_to(&ctx, front, &key, b"aad", cap, &ct, &pt, mode);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// Tampering: harness.
// ---------------------------------------------------------------------

/// A stream to damage, read through [`common::Tamper`] (every front,
/// every provider).
struct Case<'a> {
    ctx: &'a str,
    key: &'a TinkKey,
    aad: &'a [u8],
    lay: &'a Lay,
    pt: &'a [u8],
}

impl Case<'_> {
    fn with<T>(&self, f: impl FnOnce(&Tamper<'_>) -> T) -> T {
        let builder = CipherReader::builder(self.key).associated_data(self.aad);
        f(&Tamper {
            ctx: self.ctx,
            builder: &builder,
            layout: self.lay,
            pt: self.pt,
        })
    }

    /// Reads `stream` in `configs` × `pats` and checks the failure.
    fn fail_in(
        &self,
        configs: &[(usize, usize)],
        pats: &[ReadMode],
        stream: &[u8],
        want: &Want,
        upto: Upto,
    ) {
        self.with(|t| t.fail_in(configs, pats, stream, want, upto));
    }

    fn fail(&self, stream: &[u8], want: &Want, upto: Upto) {
        self.with(|t| t.fail(stream, want, upto));
    }

    /// `stream` reads back to the plaintext in every configuration.
    fn clean(&self, stream: &[u8]) {
        self.with(|t| t.clean(stream));
    }
}

/// (layout, raw key, key, plaintext, stream, the provider that sealed it).
type TamperStream = (Lay, Vec<u8>, TinkKey, Vec<u8>, Vec<u8>, Provider);

/// A stream for every tamper layout and length, sealed by every provider.
fn tamper_streams() -> Vec<TamperStream> {
    let mut v = Vec::new();
    for (si, lay) in tamper_sets().into_iter().enumerate() {
        let raw = raw_key(lay.dks, u8::try_from(si).unwrap() + 1);
        let key = tink_key(&lay, &raw);
        for len in tamper_lengths(&lay) {
            let pt = plaintext(len, si);
            for &wp in Provider::ALL {
                let ct = encrypt_by(wp, &key, &lay, &pt);
                v.push((lay, raw.clone(), key.clone(), pt.clone(), ct, wp));
            }
        }
    }
    v
}

// ---------------------------------------------------------------------
// Tampering: tests.
// ---------------------------------------------------------------------

#[test]
fn tamper_baseline_streams_read_back_in_every_pattern() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        let ctx = format!("{lay:?} by {wp:?} len {}", pt.len());
        Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        }
        .clean(&ct);
    }
}

#[test]
fn every_single_byte_flip_fails_before_the_damaged_segment() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        for pos in 0..ct.len() {
            for mask in [0x01u8, 0x80] {
                let mut bad = ct.clone();
                bad[pos] ^= mask;
                let (err, delivered) = if pos == 0 {
                    let e = Error::HeaderLength {
                        expected: u8::try_from(lay.h).unwrap(),
                        found: ct[0] ^ mask,
                    };
                    (e, 0)
                } else if pos < lay.h {
                    // Salt or nonce prefix: another key or other nonces.
                    (Error::Authentication, 0)
                } else {
                    (Error::Authentication, lay.plain_before(lay.seg_of(pos)))
                };
                let ctx = format!(
                    "{lay:?} by {wp:?} len {}: byte {pos} ^ {mask:#04x}",
                    pt.len()
                );
                let case = Case {
                    ctx: &ctx,
                    key: &key,
                    aad: b"",
                    lay: &lay,
                    pt: &pt,
                };
                case.fail(&bad, &Want::Is(err), Upto::Exactly(delivered));
            }
        }
    }
}

#[test]
fn every_truncation_fails() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        for cut in 0..ct.len() {
            let (err, delivered) = if cut < lay.h {
                (Error::Truncated, 0)
            } else {
                let i = lay.seg_of(cut);
                let into = cut - lay.seg_start(i);
                // At a boundary, or less than a tag of a segment: the
                // stream ended early. Otherwise the partial segment is
                // opened as the final one and fails to authenticate.
                let err = if into < TAG {
                    Error::Truncated
                } else {
                    Error::Authentication
                };
                (err, lay.plain_before(i))
            };
            let ctx = format!(
                "{lay:?} by {wp:?} len {}: cut at {cut} of {}",
                pt.len(),
                ct.len()
            );
            let case = Case {
                ctx: &ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            };
            // The exact error is this reader's choice; the brief's rule
            // (never Ok, Truncated or Authentication) is checked first.
            case.fail_in(
                &CONFIGS[..1],
                &[ReadMode::ToEnd],
                &ct[..cut],
                &Want::CutOrAuth,
                Upto::Exactly(delivered),
            );
            case.fail(&ct[..cut], &Want::Is(err), Upto::Exactly(delivered));
        }
    }
}

#[test]
fn dropped_segment() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        let (header, segs) = lay.split(&ct);
        let n = segs.len();
        for i in 0..n {
            let mut s = segs.clone();
            s.remove(i);
            let bad = [header.clone(), s.concat()].concat();
            let err = if i == n - 1 {
                // Without its final segment the stream ends at a boundary.
                Error::Truncated
            } else {
                Error::Authentication
            };
            let ctx = format!(
                "{lay:?} by {wp:?} len {}: segment {i} of {n} dropped",
                pt.len()
            );
            let case = Case {
                ctx: &ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            };
            case.fail(&bad, &Want::Is(err), Upto::Exactly(lay.plain_before(i)));
        }
    }
}

#[test]
fn swapped_segments() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        let (header, segs) = lay.split(&ct);
        for i in 0..segs.len() {
            for j in i + 1..segs.len() {
                let mut s = segs.clone();
                s.swap(i, j);
                let bad = [header.clone(), s.concat()].concat();
                let ctx = format!(
                    "{lay:?} by {wp:?} len {}: segments {i}, {j} swapped",
                    pt.len()
                );
                let case = Case {
                    ctx: &ctx,
                    key: &key,
                    aad: b"",
                    lay: &lay,
                    pt: &pt,
                };
                case.fail(
                    &bad,
                    &Want::Is(Error::Authentication),
                    Upto::Exactly(lay.plain_before(i)),
                );
            }
        }
    }
}

#[test]
fn duplicated_segment() {
    for (lay, _, key, pt, ct, wp) in tamper_streams() {
        let (header, segs) = lay.split(&ct);
        // Every segment, the final one too (a repeated final is junk after it).
        for i in 0..segs.len() {
            let mut s = segs.clone();
            s.insert(i + 1, segs[i].clone());
            let bad = [header.clone(), s.concat()].concat();
            let ctx = format!("{lay:?} by {wp:?} len {}: segment {i} duplicated", pt.len());
            let case = Case {
                ctx: &ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            };
            if i + 1 < segs.len() {
                case.fail(
                    &bad,
                    &Want::Is(Error::Authentication),
                    Upto::Exactly(lay.plain_before(i + 1)),
                );
            } else {
                expect_bytes_after_final(&case, &bad);
            }
        }
    }
}

/// A stream with bytes after its final segment. A full-length final
/// segment authenticates and may be released before the bytes after it
/// are seen, then `TrailingData`; a short one reads together with what
/// follows as a segment that does not authenticate.
fn expect_bytes_after_final(case: &Case<'_>, bad: &[u8]) {
    let (lay, len) = (case.lay, case.pt.len());
    let before_last = lay.plain_before(lay.segments(len) - 1);
    if lay.full_final(len) {
        case.fail(
            bad,
            &Want::Is(Error::TrailingData),
            Upto::Between(before_last, len),
        );
    } else {
        case.fail(
            bad,
            &Want::Is(Error::Authentication),
            Upto::Exactly(before_last),
        );
    }
}

#[test]
fn trailing_bytes_after_the_final_segment_are_refused() {
    for (lay, raw, key, pt, ct, wp) in tamper_streams() {
        let n = lay.segments(pt.len());
        // A correctly sealed empty final segment after the real final one.
        let empty_after = Spec::tink(&lay, &raw, b"", &ct[..lay.h]).seal(n, true, &[]);
        let whole = ct[lay.seg_range(ct.len(), 0)].to_vec();
        let other = encrypt_by(wp, &key, &lay, &pt);
        let other_final = other[lay.seg_range(other.len(), n - 1)].to_vec();
        let trailers: [(&str, Vec<u8>); 6] = [
            ("1 zero byte", vec![0]),
            ("1 byte", vec![0x5c]),
            ("16 bytes", vec![0x5c; 16]),
            ("a copy of segment 0", whole),
            ("a valid empty final segment", empty_after),
            ("another stream's final segment", other_final),
        ];
        for (what, extra) in trailers {
            let bad = [ct.clone(), extra].concat();
            let ctx = format!(
                "{lay:?} by {wp:?} len {}: {what} after the final segment",
                pt.len()
            );
            let case = Case {
                ctx: &ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            };
            expect_bytes_after_final(&case, &bad);
        }
    }
}

/// The stream's own plaintext segments with the last one's flag cleared:
/// a full last segment sealed as non-final (what an unfinished Tink
/// writer would leave), optionally followed by an empty final segment.
fn resealed(lay: &Lay, raw: &[u8], ct: &[u8], pt: &[u8], empty_final: bool) -> Vec<u8> {
    let mut segs: Vec<(&[u8], bool)> = lay
        .plain_segments(pt)
        .into_iter()
        .map(|s| (s, false))
        .collect();
    if empty_final {
        segs.push((&[], true));
    }
    spec_build(lay, raw, b"", &ct[..lay.h], &segs)
}

#[test]
fn full_last_segment_sealed_as_non_final_is_truncated() {
    for (lay, raw, key, pt, ct, wp) in tamper_streams() {
        if !lay.full_final(pt.len()) {
            continue;
        }
        let bad = resealed(&lay, &raw, &ct, &pt, false);
        assert_eq!(bad.len(), ct.len());
        let ctx = format!("{lay:?} by {wp:?} len {}: last segment non-final", pt.len());
        let case = Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        };
        // Every segment authenticates and may be released; the end of the
        // stream then says it was cut.
        let before_last = lay.plain_before(lay.segments(pt.len()) - 1);
        case.fail(
            &bad,
            &Want::Is(Error::Truncated),
            Upto::Between(before_last, pt.len()),
        );
    }
}

/// Tink accepts an empty final segment after full ones (and never writes
/// one); so does this reader, with a Tink key.
#[test]
fn extra_empty_final_segment_after_full_ones_is_accepted() {
    let mut checked = 0;
    for (lay, raw, key, pt, ct, wp) in tamper_streams() {
        if !lay.full_final(pt.len()) {
            continue;
        }
        let odd = resealed(&lay, &raw, &ct, &pt, true);
        assert_eq!(odd.len(), ct.len() + TAG);
        // Not the one encoding the writer makes...
        assert!(spec_decode(&lay, &raw, b"", &odd).is_err());
        // ...but read back exactly, in every pattern.
        let ctx = format!(
            "{lay:?} by {wp:?} len {}: extra empty final segment",
            pt.len()
        );
        Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        }
        .clean(&odd);
        // Junk after it is still refused.
        let ctx = format!("{ctx}, then 1 byte");
        let case = Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        };
        let bad = [odd.clone(), vec![0x5c]].concat();
        case.fail(
            &bad,
            &Want::Is(Error::Authentication),
            Upto::Exactly(pt.len()),
        );
        // An empty segment sealed as non-final is no end.
        let mut segs: Vec<(&[u8], bool)> = lay
            .plain_segments(&pt)
            .into_iter()
            .map(|s| (s, false))
            .collect();
        segs.push((&[], false));
        let bad = spec_build(&lay, &raw, b"", &ct[..lay.h], &segs);
        let ctx = format!(
            "{lay:?} by {wp:?} len {}: extra empty non-final segment",
            pt.len()
        );
        let case = Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        };
        case.fail(
            &bad,
            &Want::Is(Error::Authentication),
            Upto::Exactly(pt.len()),
        );
        checked += 1;
    }
    assert!(checked >= 6, "{checked} streams with a full final segment");
}

/// The native format keeps one encoding per plaintext: the same
/// construction (last full segment re-sealed as non-final, empty final
/// after it) is `EmptyFinalSegment` there.
#[test]
fn native_format_still_refuses_an_empty_final_segment() {
    const S: usize = 16;
    let raw = [0x24u8; 16];
    let key = Key::new(Algorithm::Aes128Gcm, &raw).unwrap();
    let pt = plaintext(3 * S, 1);
    let mut w = CipherWriter::with_capacity(S, &key, Vec::new());
    w.write_all(&pt).unwrap();
    let ct = w.finish().unwrap();
    assert_eq!(ct.len(), HEADER_LEN + 3 * (S + TAG));
    let header = Header::parse(&ct).unwrap();
    // Native key: HKDF-SHA256(salt, key, info = the 53 header bytes ‖ aad).
    let mut okm = [0u8; 16];
    Hkdf::<Sha256>::new(Some(&header.salt), &raw)
        .expand(&ct[..HEADER_LEN], &mut okm)
        .unwrap();
    let gcm = Aes128Gcm::new_from_slice(&okm).unwrap();
    let build = |with_empty: bool| {
        let mut v = ct[..HEADER_LEN].to_vec();
        for (i, s) in pt.chunks(S).enumerate() {
            v.extend_from_slice(&gcm_seal(
                &gcm,
                &spec_nonce(&header.nonce_prefix, i, false),
                s,
            ));
        }
        if with_empty {
            v.extend_from_slice(&gcm_seal(
                &gcm,
                &spec_nonce(&header.nonce_prefix, 3, true),
                &[],
            ));
        }
        v
    };
    // The construction is right: without the empty final segment it is a
    // stream cut at a boundary.
    for (with_empty, want) in [(false, Error::Truncated), (true, Error::EmptyFinalSegment)] {
        let stream = build(with_empty);
        for (&rp, cap) in Provider::ALL
            .iter()
            .flat_map(|p| [1, DEFAULT_CAPACITY].map(|c| (p, c)))
        {
            for (chunk, &front) in [1, usize::MAX]
                .into_iter()
                .flat_map(|c| Front::ALL.iter().map(move |f| (c, f)))
            {
                let ctx = format!(
                    "native, empty final {with_empty}, {front:?} read by {rp:?}, cap {cap}, chunk {chunk}"
                );
                let builder = CipherReader::builder(&key).provider(rp).capacity(cap);
                let inner = ScriptReader::new(&stream).max_per_call(chunk);
                let mut r = front.build_reader(builder, inner);
                let mut got = Vec::new();
                let e = r.read_to_end(&mut got).unwrap_err();
                assert_eq!(crate_error(&ctx, &e), want, "{ctx}");
                assert!(got.len() <= pt.len() && got == pt[..got.len()], "{ctx}");
                assert_sticky(&ctx, &mut r, &want);
            }
        }
    }
}

#[test]
fn unfinished_writer_is_truncated() {
    for (si, lay) in tamper_sets().into_iter().enumerate() {
        let key = tink_key(&lay, &raw_key(lay.dks, 0x33));
        let mut lens = vec![
            1,
            lay.first,
            lay.first + 1,
            lay.first + lay.rest,
            lay.first + lay.rest + 1,
        ];
        lens.push(lay.first + 2 * lay.rest + lay.rest / 2);
        for len in lens {
            let pt = plaintext(len, si);
            for (&wp, bytewise) in Provider::ALL
                .iter()
                .flat_map(|p| [false, true].map(|b| (p, b)))
            {
                let mut w = CipherWriter::builder(&key).provider(wp).build(Vec::new());
                if bytewise {
                    for b in &pt {
                        w.write_all(std::slice::from_ref(b)).unwrap();
                    }
                } else {
                    w.write_all(&pt).unwrap();
                }
                w.flush().unwrap();
                let out = w.get_ref().clone();
                drop(w);
                // Segments followed by more data are sealed and out; the
                // last (possibly full) one waits for finish.
                let sealed = if len <= lay.first {
                    0
                } else {
                    1 + (len - lay.first - 1) / lay.rest
                };
                let want_len = if sealed == 0 {
                    0
                } else {
                    lay.h + lay.plain_before(sealed) + sealed * TAG
                };
                let ctx = format!(
                    "{lay:?} by {wp:?}: unfinished after {len} bytes (bytewise {bytewise})"
                );
                assert_eq!(out.len(), want_len, "{ctx}");
                let case = Case {
                    ctx: &ctx,
                    key: &key,
                    aad: b"",
                    lay: &lay,
                    pt: &pt,
                };
                case.fail(
                    &out,
                    &Want::Is(Error::Truncated),
                    Upto::Exactly(lay.plain_before(sealed)),
                );
            }
        }
    }
}

#[test]
fn short_inputs_and_header_length_byte() {
    for (&wp, lay) in Provider::ALL
        .iter()
        .flat_map(|p| tamper_sets().map(|l| (p, l)))
    {
        let key = tink_key(&lay, &raw_key(lay.dks, 1));
        let pt = plaintext(lay.first + lay.rest + 3, 0);
        let ct = encrypt_by(wp, &key, &lay, &pt);
        let case = |ctx: &str, stream: &[u8], want: Error| {
            Case {
                ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            }
            .fail(stream, &Want::Is(want), Upto::Exactly(0));
        };
        case(
            &format!("{lay:?} by {wp:?}: empty input"),
            &[],
            Error::Truncated,
        );
        for extra in [0, 1, 15] {
            let ctx = format!("{lay:?} by {wp:?}: header + {extra}");
            case(&ctx, &ct[..lay.h + extra], Error::Truncated);
        }
        let expected = u8::try_from(lay.h).unwrap();
        for found in [0u8, 1, 24, 40, 41, 0xff] {
            if found == expected {
                continue;
            }
            let ctx = format!("{lay:?} by {wp:?}: header length byte {found}");
            let mut bad = ct.clone();
            bad[0] = found;
            case(&ctx, &bad, Error::HeaderLength { expected, found });
            // Decided on the first byte alone.
            case(&ctx, &bad[..1], Error::HeaderLength { expected, found });
        }
    }
}

#[test]
fn spliced_header_or_segment_from_another_stream() {
    for (lay, _, key, pt, a, wp) in tamper_streams() {
        let b = encrypt_by(wp, &key, &lay, &pt);
        let bad = [&a[..lay.h], &b[lay.h..]].concat();
        let ctx = format!(
            "{lay:?} by {wp:?} len {}: header of A, segments of B",
            pt.len()
        );
        let case = Case {
            ctx: &ctx,
            key: &key,
            aad: b"",
            lay: &lay,
            pt: &pt,
        };
        case.fail(&bad, &Want::Is(Error::Authentication), Upto::Exactly(0));
        let (ha, sa) = lay.split(&a);
        let (_, sb) = lay.split(&b);
        for i in 0..sa.len() {
            let mut s = sa.clone();
            s[i] = sb[i].clone();
            let bad = [ha.clone(), s.concat()].concat();
            let ctx = format!("{lay:?} by {wp:?} len {}: segment {i} of B in A", pt.len());
            let case = Case {
                ctx: &ctx,
                key: &key,
                aad: b"",
                lay: &lay,
                pt: &pt,
            };
            case.fail(
                &bad,
                &Want::Is(Error::Authentication),
                Upto::Exactly(lay.plain_before(i)),
            );
        }
    }
}

#[test]
fn wrong_key_aad_or_parameters_fail() {
    for &wp in Provider::ALL {
        wrong_key_aad_or_parameters_fail_by(wp);
    }
}

/// Sealed by `wp`; every `Case` reads with every provider.
fn wrong_key_aad_or_parameters_fail_by(wp: Provider) {
    let lay = Lay::new(16, 48, HkdfHash::Sha256);
    let raw = raw_key(32, 5);
    let key = tink_key(&lay, &raw);
    let pt = plaintext(lay.first + 2 * lay.rest + 5, 2);
    let ct = seal(
        Front::Std,
        wp,
        &key,
        &lay,
        b"context-A",
        &pt,
        &WriteMode::Fixed(7),
    );
    let auth = Want::Is(Error::Authentication);
    Case {
        ctx: &format!("right key, sealed by {wp:?}"),
        key: &key,
        aad: b"context-A",
        lay: &lay,
        pt: &pt,
    }
    .clean(&ct);
    // Associated data.
    for (what, aad) in [
        ("wrong aad", &b"context-B"[..]),
        ("aad one short", b"context-"),
        ("no aad", b""),
    ] {
        Case {
            ctx: &format!("{what}, sealed by {wp:?}"),
            key: &key,
            aad,
            lay: &lay,
            pt: &pt,
        }
        .fail(&ct, &auth, Upto::Exactly(0));
    }
    let plain = encrypt_by(wp, &key, &lay, &pt);
    Case {
        ctx: &format!("unexpected aad, sealed by {wp:?}"),
        key: &key,
        aad: b"x",
        lay: &lay,
        pt: &pt,
    }
    .fail(&plain, &auth, Upto::Exactly(0));
    // Raw key: another one, and the same one cut to the derived key size
    // (the whole raw key is HKDF's input).
    let mut other = raw.clone();
    other[31] ^= 1;
    for (what, raw) in [
        ("wrong raw key", other),
        ("raw key cut to 16", raw[..16].to_vec()),
    ] {
        let k = tink_key(&lay, &raw);
        Case {
            ctx: &format!("{what}, sealed by {wp:?}"),
            key: &k,
            aad: b"context-A",
            lay: &lay,
            pt: &pt,
        }
        .fail(&ct, &auth, Upto::Exactly(0));
    }
    // Parameters, which the header does not name: segment size ± 1 moves
    // the first segment boundary, another hash gives another key.
    for (what, wrong) in [
        ("segment size - 1", Lay::new(16, 47, HkdfHash::Sha256)),
        ("segment size + 1", Lay::new(16, 49, HkdfHash::Sha256)),
        ("SHA1", Lay::new(16, 48, HkdfHash::Sha1)),
        ("SHA512", Lay::new(16, 48, HkdfHash::Sha512)),
    ] {
        let k = tink_key(&wrong, &raw);
        Case {
            ctx: &format!("{what}, sealed by {wp:?}"),
            key: &k,
            aad: b"context-A",
            lay: &wrong,
            pt: &pt,
        }
        .fail(&ct, &auth, Upto::Exactly(0));
    }
    // Another derived key size: another header length.
    for css in [57, 64] {
        let wrong = Lay::new(32, css, HkdfHash::Sha256);
        let k = tink_key(&wrong, &raw);
        let want = Want::Is(Error::HeaderLength {
            expected: 40,
            found: 24,
        });
        Case {
            ctx: &format!("32-byte derived key, sealed by {wp:?}"),
            key: &k,
            aad: b"context-A",
            lay: &wrong,
            pt: &pt,
        }
        .fail(&ct, &want, Upto::Exactly(0));
    }
    // And the other way round.
    let lay32 = Lay::new(32, 64, HkdfHash::Sha256);
    let k32 = tink_key(&lay32, &raw);
    let ct32 = encrypt_by(wp, &k32, &lay32, &pt);
    let k16 = tink_key(&Lay::new(16, 64, HkdfHash::Sha256), &raw);
    let want = Want::Is(Error::HeaderLength {
        expected: 24,
        found: 40,
    });
    Case {
        ctx: &format!("16-byte derived key, sealed by {wp:?}"),
        key: &k16,
        aad: b"",
        lay: &lay32,
        pt: &pt,
    }
    .fail(&ct32, &want, Upto::Exactly(0));
    // A native key does not read a Tink stream.
    let native = Key::new(Algorithm::Aes128Gcm, &raw[..16]).unwrap();
    let mut out = Vec::new();
    let e = CipherReader::new(&native, &ct[..])
        .read_to_end(&mut out)
        .unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::BadMagic));
    assert!(out.is_empty());
}

/// A failed read leaves no plaintext in the caller's buffer, for small
/// and zero-copy reads: segment `i` with a bad tag or body releases exactly
/// the segments before it.
#[test]
fn failed_read_leaves_no_plaintext_in_callers_buffer() {
    for &wp in Provider::ALL {
        failed_read_leaves_no_plaintext_in_callers_buffer_by(wp);
    }
}

/// Sealed by `wp`; [`read_watching_key`] reads with every provider.
fn failed_read_leaves_no_plaintext_in_callers_buffer_by(wp: Provider) {
    let lay = Lay::new(16, 64, HkdfHash::Sha256);
    let key = tink_key(&lay, &raw_key(16, 8));
    let buf_lens = [
        lay.first,
        lay.rest,
        4 * lay.rest + 1,
        lay.first - 1,
        lay.rest - 1,
    ];
    let pt = plaintext(lay.first + 2 * lay.rest + 5, 3);
    let ct = encrypt_by(wp, &key, &lay, &pt);
    for i in 0..lay.segments(pt.len()) {
        let r = lay.seg_range(ct.len(), i);
        for (what, pos) in [("tag", r.end - 1), ("body", r.start)] {
            let mut bad = ct.clone();
            bad[pos] ^= 0x01;
            for buf_len in buf_lens {
                let ctx = format!("{what} of segment {i} flipped, reads of {buf_len}");
                let (delivered, e) = read_watching_key(&ctx, &key, &bad, &pt, buf_len);
                assert_eq!(e, Error::Authentication, "{ctx}");
                assert_eq!(delivered, lay.plain_before(i), "{ctx}");
            }
        }
    }
    // A full-length final segment that authenticates, followed by a byte
    // the reader already holds: its plaintext is released (it
    // authenticated, and one reader releases it whatever its read-ahead
    // held), then the stream is refused; no plaintext of it is left in
    // the caller's buffer past what was returned.
    for len in [lay.first, lay.first + 2 * lay.rest] {
        let pt = plaintext(len, 4);
        let bad = [encrypt_by(wp, &key, &lay, &pt), vec![0x5c]].concat();
        for buf_len in buf_lens {
            let ctx = format!("len {len}: trailing byte, reads of {buf_len}");
            let (delivered, e) = read_watching_key(&ctx, &key, &bad, &pt, buf_len);
            assert_eq!(e, Error::TrailingData, "{ctx}");
            assert_eq!(delivered, len, "{ctx}");
        }
    }
}

// ---------------------------------------------------------------------
// Misbehaving inner I/O.
// ---------------------------------------------------------------------

/// An 80-byte segment layout: 40 plaintext bytes in segment 0, 64 later.
fn io_lay() -> Lay {
    Lay::new(16, 80, HkdfHash::Sha256)
}

fn io_lengths(lay: &Lay) -> Vec<usize> {
    vec![
        0,
        1,
        lay.first,
        lay.first + 1,
        lay.first + lay.rest,
        lay.first + 4 * lay.rest + 17,
    ]
}

fn spec_plain(lay: &Lay, raw: &[u8], ct: &[u8]) -> Vec<u8> {
    spec_decode(lay, raw, b"", ct).unwrap().concat()
}

#[test]
fn writer_over_one_byte_per_call_writer() {
    for &front in Front::ALL {
        for lay in [io_lay(), Lay::new(32, 57, HkdfHash::Sha512)] {
            let raw = raw_key(lay.dks, 4);
            let key = tink_key(&lay, &raw);
            for len in io_lengths(&lay) {
                let pt = plaintext(len, 1);
                for chunk in [1, 7, lay.first, lay.rest + 1, usize::MAX] {
                    let mut w = front.writer(&key, script_writer(1, None));
                    assert!(write_retrying(&mut w, &pt, chunk).is_empty());
                    let inner = w.finish().unwrap();
                    let ctx = format!("{front:?} {lay:?} len {len} chunk {chunk}");
                    assert_eq!(inner.out.len(), lay.ct_len(len), "{ctx}");
                    assert_eq!(inner.calls, inner.out.len(), "{ctx}: one byte per call");
                    assert_eq!(spec_plain(&lay, &raw, &inner.out), pt, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn writer_makes_one_inner_write_per_segment_header_with_the_first() {
    for &front in Front::ALL {
        let lay = io_lay();
        let key = tink_key(&lay, &raw_key(16, 4));
        for len in io_lengths(&lay) {
            let pt = plaintext(len, 2);
            let mut w = front.writer(&key, script_writer(usize::MAX, None));
            w.write_all(&pt).unwrap();
            let inner = w.finish().unwrap();
            assert_eq!(inner.calls, lay.segments(len), "len {len}");
            assert_eq!(inner.out.len(), lay.ct_len(len), "len {len}");
        }
    }
}

fn writer_inject_at_every_position(kind: ErrorKind, surfaces: bool) {
    for &front in Front::ALL {
        let lay = io_lay();
        let raw = raw_key(16, 6);
        let key = tink_key(&lay, &raw);
        let len = lay.first + 4 * lay.rest + 17;
        let pt = plaintext(len, 3);
        for max_per_call in [usize::MAX, 50, 7] {
            for chunk in [10, lay.first, lay.rest + 1, usize::MAX] {
                let mut w = front.writer(&key, script_writer(max_per_call, None));
                assert!(write_retrying(&mut w, &pt, chunk).is_empty());
                let clean_calls = w.get_ref().calls;
                assert!(clean_calls >= lay.segments(len));
                for k in 0..clean_calls {
                    let ctx = format!(
                        "{front:?}: {kind:?} at call {k}, max {max_per_call}, chunk {chunk}"
                    );
                    let mut w = front.writer(&key, script_writer(max_per_call, Some((k, kind))));
                    let errors = write_retrying(&mut w, &pt, chunk);
                    assert!(errors.iter().all(|&e| e == kind), "{ctx}: {errors:?}");
                    if surfaces {
                        assert!(errors.len() <= 1, "{ctx}: {errors:?}");
                    } else {
                        assert!(errors.is_empty(), "{ctx}: retried inside: {errors:?}");
                    }
                    let inner = w.finish().unwrap();
                    assert_eq!(inner.calls, clean_calls + 1, "{ctx}");
                    assert_eq!(inner.out.len(), lay.ct_len(len), "{ctx}");
                    assert_eq!(spec_plain(&lay, &raw, &inner.out), pt, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn writer_resumes_after_would_block_at_every_call_position() {
    writer_inject_at_every_position(ErrorKind::WouldBlock, true);
}

#[test]
fn writer_retries_interrupted_at_every_call_position() {
    writer_inject_at_every_position(ErrorKind::Interrupted, false);
}

fn script_writer(max_per_call: usize, fail: Option<(usize, ErrorKind)>) -> ScriptWriter {
    let mut w = ScriptWriter::new().max_per_call(max_per_call);
    w.fail = fail;
    w
}

#[test]
fn reader_over_one_byte_per_call_reader() {
    for &front in Front::ALL {
        for lay in [io_lay(), Lay::new(32, 57, HkdfHash::Sha1)] {
            let key = tink_key(&lay, &raw_key(lay.dks, 7));
            for len in io_lengths(&lay) {
                let pt = plaintext(len, 4);
                let ct = encrypt(&key, &lay, &pt);
                for cap in [1, 16, DEFAULT_CAPACITY] {
                    for bufsize in [1, 7, lay.first, lay.rest, 4096] {
                        let mut r = front.reader_with_capacity(
                            cap,
                            &key,
                            ScriptReader::new(&ct).max_per_call(1),
                        );
                        let (out, errors) = read_retrying(&mut r, bufsize);
                        let ctx = format!("{front:?} {lay:?} len {len} cap {cap} buf {bufsize}");
                        assert!(errors.is_empty(), "{ctx}");
                        assert!(out == pt, "{ctx}");
                        // One byte per call, and the call that reports the end.
                        assert_eq!(r.get_ref().calls, ct.len() + 1, "{ctx}");
                    }
                }
            }
        }
    }
}

fn reader_inject_at_every_position(kind: ErrorKind, exactly_once: bool) {
    for &front in Front::ALL {
        let lay = io_lay();
        let key = tink_key(&lay, &raw_key(16, 8));
        for len in [lay.first + 4 * lay.rest + 17, lay.first + 3 * lay.rest] {
            let pt = plaintext(len, 5);
            let ct = encrypt(&key, &lay, &pt);
            for max_per_call in [usize::MAX, 50, 1] {
                for (cap, bufsize) in [
                    (DEFAULT_CAPACITY, 5),
                    (DEFAULT_CAPACITY, 4096),
                    (16, lay.rest),
                    (100, 1000),
                ] {
                    let ctx = format!(
                        "{front:?}: len {len}, max {max_per_call}, cap {cap}, buf {bufsize}"
                    );
                    read_injecting_at_every_call(
                        &ctx,
                        &ct,
                        &pt,
                        max_per_call,
                        bufsize,
                        kind,
                        exactly_once,
                        |inner| front.reader_with_capacity(cap, &key, inner),
                    );
                }
            }
        }
    }
}

#[test]
fn reader_passes_would_block_through_at_every_call_position() {
    reader_inject_at_every_position(ErrorKind::WouldBlock, true);
}

#[test]
fn reader_after_interrupted_at_every_call_position() {
    reader_inject_at_every_position(ErrorKind::Interrupted, false);
}

// ---------------------------------------------------------------------
// API edges.
// ---------------------------------------------------------------------

#[test]
fn writer_capacity_other_than_the_keys_segment_is_invalid() {
    let lay = Lay::new(16, 4096, HkdfHash::Sha256);
    let key = tink_key(&lay, &raw_key(16, 1));
    let p = key.params();
    assert_eq!(CipherWriter::new(&key, Vec::new()).capacity(), lay.rest);
    for cap in [
        0,
        1,
        lay.first,
        lay.rest - 1,
        lay.rest + 1,
        lay.css,
        DEFAULT_CAPACITY,
    ] {
        let mut w = CipherWriter::with_capacity(cap, &key, Vec::new());
        for _ in 0..2 {
            let e = w.write(b"abc").unwrap_err();
            assert_eq!(
                Error::from_io(&e),
                Some(&Error::CapacityForKey {
                    capacity: cap,
                    required: lay.rest
                }),
                "cap {cap}"
            );
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
        }
        let e = w.try_finish().unwrap_err();
        assert_eq!(
            Error::from_io(&e),
            Some(&Error::CapacityForKey {
                capacity: cap,
                required: lay.rest
            }),
            "cap {cap}"
        );
        assert!(w.get_ref().is_empty(), "cap {cap}: nothing written");
        // Finishing without a write fails too.
        let e = CipherWriter::builder(&key)
            .capacity(cap)
            .build(Vec::new())
            .finish()
            .unwrap_err();
        assert_eq!(
            Error::from_io(&e),
            Some(&Error::CapacityForKey {
                capacity: cap,
                required: lay.rest
            }),
            "cap {cap}"
        );
    }
    let pt = plaintext(3 * lay.rest + 1, 0);
    let mut w = CipherWriter::with_capacity(p.segment_plaintext(), &key, Vec::new());
    w.write_all(&pt).unwrap();
    let ct = w.finish().unwrap();
    assert_eq!(ct.len(), lay.ct_len(pt.len()));
    let mut w = CipherWriter::builder(&key)
        .capacity(lay.rest)
        .associated_data(b"a")
        .build(Vec::new());
    w.write_all(&pt).unwrap();
    let ct_aad = w.finish().unwrap();
    assert_eq!(ct_aad.len(), lay.ct_len(pt.len()));
    for &front in Front::ALL {
        decrypts_to("no aad", front, &key, b"", 1, &ct, &pt, &ReadMode::ToEnd);
        decrypts_to("aad", front, &key, b"a", 1, &ct_aad, &pt, &ReadMode::ToEnd);
    }
}

#[test]
fn params_are_checked_as_tink_checks_them() {
    let invalid = |dks, css, hash| {
        assert!(
            matches!(
                TinkParams::new(dks, css, hash),
                Err(Error::InvalidParameters(_))
            ),
            "dks {dks} css {css} {hash} accepted"
        );
    };
    for hash in [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512] {
        for dks in [0, 1, 15, 17, 24, 31, 33, 64] {
            invalid(dks, 4096, hash);
        }
        for dks in [16, 32] {
            let h = 1 + dks + PREFIX;
            invalid(dks, 0, hash);
            invalid(dks, h + TAG, hash);
            let p = TinkParams::new(dks, h + TAG + 1, hash).unwrap();
            assert_eq!(p.first_segment_plaintext(), 1);
            let p = TinkParams::new(dks, usize::try_from(i32::MAX).unwrap(), hash).unwrap();
            assert_eq!(p.ciphertext_segment_size(), MAX_CIPHERTEXT_SEGMENT_SIZE);
            invalid(dks, usize::try_from(i32::MAX).unwrap() + 1, hash);
            invalid(dks, usize::MAX, hash);
        }
    }
    assert_eq!(MAX_CIPHERTEXT_SEGMENT_SIZE, (1 << 31) - 1);
    // The accessors agree with the format description.
    for (lay, _) in roundtrip_sets() {
        let p = lay.params();
        assert_eq!(p.derived_key_size(), lay.dks);
        assert_eq!(p.ciphertext_segment_size(), lay.css);
        assert_eq!(p.hkdf_hash(), lay.hash);
        assert_eq!(p.header_len(), lay.h);
        assert_eq!(p.first_segment_plaintext(), lay.first);
        assert_eq!(p.segment_plaintext(), lay.rest);
        let alg = if lay.dks == 16 {
            Algorithm::Aes128Gcm
        } else {
            Algorithm::Aes256Gcm
        };
        assert_eq!(p.algorithm(), alg);
    }
    // Tink's templates.
    for (p, dks, css) in [
        (TinkParams::AES128_GCM_HKDF_4KB, 16, 4096),
        (TinkParams::AES128_GCM_HKDF_1MB, 16, MIB),
        (TinkParams::AES256_GCM_HKDF_4KB, 32, 4096),
        (TinkParams::AES256_GCM_HKDF_1MB, 32, MIB),
    ] {
        assert_eq!(p, TinkParams::new(dks, css, HkdfHash::Sha256).unwrap());
    }
}

#[test]
fn keys_need_at_least_the_derived_key_size() {
    for dks in [16, 32] {
        let p = TinkParams::new(dks, 4096, HkdfHash::Sha256).unwrap();
        for len in [0, 1, dks - 1] {
            assert_eq!(
                TinkKey::new(p, &vec![7; len]).unwrap_err(),
                Error::KeyTooShort {
                    minimum: dks,
                    actual: len
                }
            );
        }
        for len in [dks, dks + 1, 64] {
            let k = TinkKey::new(p, &raw_key(len, 2)).unwrap();
            assert_eq!(k.as_bytes(), &raw_key(len, 2)[..]);
            assert_eq!(k.params(), &p);
        }
        let hex: String = raw_key(dks, 2).iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            TinkKey::from_hex(p, &hex).unwrap().as_bytes(),
            &raw_key(dks, 2)[..]
        );
        assert_eq!(
            TinkKey::from_hex(p, &hex[2..]).unwrap_err(),
            Error::KeyTooShort {
                minimum: dks,
                actual: dks - 1
            }
        );
        assert_eq!(TinkKey::from_hex(p, "zz").unwrap_err(), Error::InvalidHex);
    }
}

#[test]
fn debug_prints_no_key_bytes() {
    let p = TinkParams::new(32, 4096, HkdfHash::Sha512).unwrap();
    let raw = [0xC7u8; 40];
    let key = TinkKey::new(p, &raw).unwrap();
    let shown = [
        format!("{key:?}"),
        format!("{key:#?}"),
        format!("{:?}", CipherWriter::builder(&key)),
        format!("{:?}", CipherReader::builder(&key)),
    ];
    for s in shown {
        let l = s.to_ascii_lowercase();
        assert!(!l.contains("199") && !l.contains("c7"), "key bytes in {s}");
        assert!(
            s.contains("4096") && s.contains("Sha512"),
            "parameters missing from {s}"
        );
    }
}

#[test]
fn max_segment_size_does_not_apply_to_tink_keys() {
    let p = TinkParams::AES128_GCM_HKDF_1MB;
    let lay = Lay::new(16, MIB, HkdfHash::Sha256);
    let raw = raw_key(16, 0x5a);
    let key = TinkKey::new(p, &raw).unwrap();
    let pt = plaintext(lay.first + 100, 9);
    let ct = encrypt_aad(&key, &lay, b"", &pt, &WriteMode::AllAtOnce);
    assert_eq!(lay.segments(pt.len()), 2);
    for limit in [1, 1024] {
        for cap in [1000, DEFAULT_CAPACITY] {
            let mut r = CipherReader::builder(&key)
                .max_segment_size(limit)
                .capacity(cap)
                .build(&ct[..]);
            let mut out = Vec::new();
            r.read_to_end(&mut out)
                .unwrap_or_else(|e| panic!("limit {limit} cap {cap}: {e}"));
            assert!(out == pt, "limit {limit} cap {cap}");
        }
    }
}

#[test]
fn hkdf_hash_names() {
    for (h, name) in [
        (HkdfHash::Sha1, "SHA1"),
        (HkdfHash::Sha256, "SHA256"),
        (HkdfHash::Sha512, "SHA512"),
    ] {
        assert_eq!(h.name(), name);
        assert_eq!(h.to_string(), name);
        assert_eq!(HkdfHash::from_name(name), Some(h));
        assert_eq!(HkdfHash::from_name(&name.to_ascii_lowercase()), Some(h));
        assert_eq!(HkdfHash::from_name(&name.replace("SHA", "Sha-")), Some(h));
    }
    for bad in ["", "SHA", "SHA384", "SHA-224", "MD5", "SHA3-256", "SHA2"] {
        assert_eq!(HkdfHash::from_name(bad), None, "{bad:?}");
    }
}
