//! The Tink-compatible profile (`cipherio::tink`) as the native format is
//! tested: round trips over parameter sets, lengths at segment boundaries
//! and write/read chunkings (exact ciphertext length checked) against the
//! format's one oracle (`fuzz/src/oracle_tink.rs`, through
//! `common::oracles`: hkdf, sha1/sha2 and aes-gcm directly, written from
//! the format description); misbehaving inner I/O; and the
//! API's edges. Tampering, truncation and Tink's edge cases (an extra empty
//! final segment is accepted, bytes after the final segment are not) are
//! in the tamper suite (`tests/tamper.rs`), with every other format.
//!
//! The layout here is computed from the format description, not from
//! `AesGcmHkdfParams`: header H = 1 + derived key size + 7; segment 0 holds
//! `css − H − 16` plaintext bytes, later ones `css − 16`.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::ops::Deref;

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, MAX_CIPHERTEXT_SEGMENT_SIZE};
use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Provider};

use common::oracles::oracle_tink;
use common::{
    Front, Layout, ReadMode, ScriptWriter, WriteMode, decrypt_ok, write_in, write_retrying,
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

    fn params(&self) -> AesGcmHkdfParams {
        AesGcmHkdfParams::new(self.dks, self.css, self.hash).unwrap()
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

fn tink_key(lay: &Lay, raw: &[u8]) -> AesGcmHkdfKey {
    AesGcmHkdfKey::new(lay.params(), raw).unwrap()
}

// ---------------------------------------------------------------------
// The format's one oracle (`common::oracles::oracle_tink`, the fuzz
// crate's file), written from the format description.
// ---------------------------------------------------------------------

/// The oracle's parameters of a layout.
fn oracle_params(lay: &Lay) -> oracle_tink::Params {
    oracle_tink::Params {
        key_size: lay.dks,
        segment: lay.css,
        hash: match lay.hash {
            HkdfHash::Sha1 => 1,
            HkdfHash::Sha256 => 256,
            _ => 512,
        },
    }
}

/// The stream the format describes for `pt` under the salt and nonce
/// prefix of `ct`'s header: byte for byte what a writer must produce.
fn oracle_stream(lay: &Lay, raw: &[u8], aad: &[u8], ct: &[u8], pt: &[u8]) -> Vec<u8> {
    let (salt, prefix) = ct[1..lay.h].split_at(lay.dks);
    oracle_tink::encrypt(&oracle_params(lay), raw, aad, salt, prefix, pt)
}

/// The plaintext of `ct` if the oracle finds it a valid stream.
fn oracle_plain(lay: &Lay, raw: &[u8], aad: &[u8], ct: &[u8]) -> Option<Vec<u8>> {
    let d = oracle_tink::decrypt(&oracle_params(lay), raw, aad, ct);
    d.valid.then_some(d.released)
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
    key: &AesGcmHkdfKey,
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

fn encrypt_aad(key: &AesGcmHkdfKey, lay: &Lay, aad: &[u8], pt: &[u8], mode: &WriteMode) -> Vec<u8> {
    seal(Front::Std, Provider::default(), key, lay, aad, pt, mode)
}

fn encrypt(key: &AesGcmHkdfKey, lay: &Lay, pt: &[u8]) -> Vec<u8> {
    encrypt_aad(key, lay, b"", pt, &WriteMode::Fixed(7))
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
    key: &AesGcmHkdfKey,
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
                    // The independent encoder agrees, byte for byte.
                    let want = oracle_stream(&lay, &raw, b"", &ct, &pt);
                    assert!(ct == want, "{ctx}: differs from the oracle's stream");
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
            assert!(ct == oracle_stream(&lay, &raw, aad, &ct, &pt));
            assert_eq!(oracle_plain(&lay, &raw, aad, &ct), Some(pt.clone()));
            for cap in [1, DEFAULT_CAPACITY] {
                let ctx = format!("aad {} bytes, {front:?}", aad.len());
                decrypts_to(&ctx, front, &key, aad, cap, &ct, &pt, &ReadMode::ToEnd);
            }
        }
    }
}

/// The writer's output is the oracle's stream: header byte, salt and
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
        assert_eq!(lay.segments(pt.len()), 4, "{ctx}");
        assert!(ct == oracle_stream(&lay, &raw, b"ad", &ct, &pt), "{ctx}");
        assert_eq!(
            oracle_plain(&lay, &raw, b"ad", &ct),
            Some(pt.clone()),
            "{ctx}"
        );
        // Another hash gives another key.
        for other in [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512] {
            if other != lay.hash {
                let wrong = Lay { hash: other, ..lay };
                assert!(
                    oracle_plain(&wrong, &raw, b"ad", &ct).is_none(),
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
        assert!(ct == oracle_stream(&lay, &raw, b"", &ct, b""), "{lay:?}");
        assert_eq!(oracle_plain(&lay, &raw, b"", &ct), Some(Vec::new()));
        for &front in Front::ALL {
            for mode in &read_modes(&lay, 0) {
                decrypts_to(&format!("{lay:?}"), front, &key, b"", 7, &ct, &[], mode);
            }
        }
    }
}

/// The other direction: streams built by the oracle (chosen salt and
/// prefix) read back in every pattern.
#[test]
fn oracle_streams_read_back() {
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
            let ct = oracle_tink::encrypt(&oracle_params(&lay), &raw, b"aad", &salt, &prefix, &pt);
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
// Misbehaving inner I/O: the writer (the reader's cases run over every
// format in `tests/misbehaving_io.rs`).
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

/// The plaintext of a valid stream, as the oracle reads it.
fn oracle_plain_of(lay: &Lay, raw: &[u8], ct: &[u8]) -> Vec<u8> {
    oracle_plain(lay, raw, b"", ct).expect("a valid stream")
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
                    assert_eq!(oracle_plain_of(&lay, &raw, &inner.out), pt, "{ctx}");
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
                    assert_eq!(oracle_plain_of(&lay, &raw, &inner.out), pt, "{ctx}");
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

// ---------------------------------------------------------------------
// API edges.
// ---------------------------------------------------------------------

/// Whether `e` is `CapacityForKey` for this capacity and required size.
fn for_key(e: &std::io::Error, cap: usize, rest: usize) -> bool {
    matches!(Error::from_io(e), Some(&Error::CapacityForKey { capacity, required, .. })
        if capacity == cap && required == rest)
}

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
            assert!(for_key(&e, cap, lay.rest), "cap {cap}: {e}");
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
        }
        let e = w.try_finish().unwrap_err();
        assert!(for_key(&e, cap, lay.rest), "cap {cap}: {e}");
        assert!(w.get_ref().is_empty(), "cap {cap}: nothing written");
        // Finishing without a write fails too.
        let e = CipherWriter::builder(&key)
            .capacity(cap)
            .build(Vec::new())
            .finish()
            .unwrap_err();
        assert!(for_key(&e, cap, lay.rest), "cap {cap}: {e}");
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
    // Each refusal names the parameter: the key size first, then the
    // segment size, with the range the key size allows.
    let invalid = |dks: usize, css: usize, hash| {
        let got = AesGcmHkdfParams::new(dks, css, hash);
        let named = if dks == 16 || dks == 32 {
            matches!(got, Err(Error::CiphertextSegmentSize { size, min, max, .. })
                if size == css && min == dks + 8 + TAG + 1 && max == MAX_CIPHERTEXT_SEGMENT_SIZE)
        } else {
            matches!(got, Err(Error::DerivedKeySize { size, .. }) if size == dks)
        };
        assert!(named, "dks {dks} css {css} {hash}: {got:?}");
    };
    for hash in [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512] {
        for dks in [0, 1, 15, 17, 24, 31, 33, 64] {
            invalid(dks, 4096, hash);
        }
        for dks in [16, 32] {
            let h = 1 + dks + PREFIX;
            invalid(dks, 0, hash);
            invalid(dks, h + TAG, hash);
            let p = AesGcmHkdfParams::new(dks, h + TAG + 1, hash).unwrap();
            assert_eq!(p.first_segment_plaintext(), 1);
            let p = AesGcmHkdfParams::new(dks, usize::try_from(i32::MAX).unwrap(), hash).unwrap();
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
        (AesGcmHkdfParams::AES128_GCM_HKDF_4KB, 16, 4096),
        (AesGcmHkdfParams::AES128_GCM_HKDF_1MB, 16, MIB),
        (AesGcmHkdfParams::AES256_GCM_HKDF_4KB, 32, 4096),
        (AesGcmHkdfParams::AES256_GCM_HKDF_1MB, 32, MIB),
    ] {
        assert_eq!(
            p,
            AesGcmHkdfParams::new(dks, css, HkdfHash::Sha256).unwrap()
        );
    }
}

#[test]
fn keys_need_at_least_the_derived_key_size() {
    for dks in [16, 32] {
        let p = AesGcmHkdfParams::new(dks, 4096, HkdfHash::Sha256).unwrap();
        for len in [0, 1, dks - 1] {
            let e = AesGcmHkdfKey::new(p, &vec![7; len]).unwrap_err();
            assert!(
                matches!(e, Error::KeyTooShort { minimum, actual, .. }
                    if minimum == dks && actual == len),
                "{e:?}"
            );
        }
        for len in [dks, dks + 1, 64] {
            let k = AesGcmHkdfKey::new(p, &raw_key(len, 2)).unwrap();
            assert_eq!(k.as_bytes(), &raw_key(len, 2)[..]);
            assert_eq!(k.params(), &p);
        }
        let hex: String = raw_key(dks, 2).iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            AesGcmHkdfKey::from_hex(p, &hex).unwrap().as_bytes(),
            &raw_key(dks, 2)[..]
        );
        let e = AesGcmHkdfKey::from_hex(p, &hex[2..]).unwrap_err();
        assert!(
            matches!(e, Error::KeyTooShort { minimum, actual, .. }
                if minimum == dks && actual == dks - 1),
            "{e:?}"
        );
        assert_eq!(
            AesGcmHkdfKey::from_hex(p, "zz").unwrap_err(),
            Error::InvalidHex
        );
    }
}

#[test]
fn debug_prints_no_key_bytes() {
    let p = AesGcmHkdfParams::new(32, 4096, HkdfHash::Sha512).unwrap();
    let raw = [0xC7u8; 40];
    let key = AesGcmHkdfKey::new(p, &raw).unwrap();
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
    let p = AesGcmHkdfParams::AES128_GCM_HKDF_1MB;
    let lay = Lay::new(16, MIB, HkdfHash::Sha256);
    let raw = raw_key(16, 0x5a);
    let key = AesGcmHkdfKey::new(p, &raw).unwrap();
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
