//! Round trips through `CipherWriter` and `CipherReader` across algorithms,
//! writer capacities (segment sizes), reader capacities, plaintext lengths
//! around segment boundaries, and the ways a caller can chunk writes and
//! reads. Every ciphertext's length is checked against the format:
//! 53 + plaintext + 16 × max(1, ceil(len / segment)).

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, Read, Write};

use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key};
use common::{
    Front, FrontWriter, Layout, MIB, ReadMode, WriteMode, assert_end_is_stable, data, decrypt_ok,
    read_in, write_in,
};

/// The ciphertext length the format dictates for `len` plaintext bytes
/// in segments of `seg` bytes: one segment for the empty stream, no empty
/// final segment after full ones.
fn expected_ct_len(len: usize, seg: usize) -> usize {
    Layout::native(seg).stream_len(len)
}

/// Byte by byte, 7, 13 and 4099 bytes, all at once, and [`mixed`].
fn write_modes(seg: usize) -> [WriteMode; 6] {
    [
        WriteMode::Fixed(1),
        WriteMode::Fixed(7),
        WriteMode::Fixed(13),
        WriteMode::Fixed(4099),
        WriteMode::AllAtOnce,
        mixed(seg),
    ]
}

/// Sizes that alternate between the buffered path and the direct-seal
/// path (writes longer than a segment arriving on an empty buffer), with
/// a full segment held back in between, and empty writes.
fn mixed(seg: usize) -> WriteMode {
    WriteMode::Cycle {
        sizes: vec![
            2 * seg + 1,
            1,
            seg.saturating_sub(1).max(1),
            seg,
            seg + 1,
            3,
            seg * 5 / 2 + 1,
        ],
        empty_every: 3,
    }
}

/// Writes `pt` through `w` (whose capacity is its segment size) in `mode`
/// and finishes it.
fn encrypt_with<W: Write + Unpin>(mut w: FrontWriter<W>, pt: &[u8], mode: &WriteMode) -> W {
    write_in(&mut w, pt, mode);
    w.finish().unwrap()
}

fn encrypt(front: Front, key: &Key, wcap: usize, pt: &[u8], mode: &WriteMode) -> Vec<u8> {
    let w = front.writer_with_capacity(wcap, key, Vec::new());
    let ct = encrypt_with(w, pt, mode);
    assert_eq!(
        ct.len(),
        expected_ct_len(pt.len(), wcap),
        "ciphertext length: len {} seg {wcap} {front:?} {mode:?}",
        pt.len()
    );
    let size = u32::try_from(wcap).unwrap().to_be_bytes();
    assert_eq!(&ct[10..14], &size, "segment size field in the header");
    ct
}

/// Byte by byte, 7 and 4099 bytes, buffers of exactly one segment (the
/// smallest zero-copy read) and of several (many segments per call),
/// `read_to_end`, `fill_buf` consuming 3 bytes and all in turn,
/// `read_exact` of sizes around the segment (up to `len`).
fn read_modes(seg: usize, len: usize) -> [ReadMode; 8] {
    [
        ReadMode::Chunks(1),
        ReadMode::Chunks(7),
        ReadMode::Chunks(4099),
        ReadMode::Chunks(seg),
        ReadMode::Chunks(3 * seg + 5),
        ReadMode::ToEnd,
        ReadMode::FillBuf(3),
        ReadMode::Exact {
            sizes: vec![11, seg, 2 * seg + 1],
            len,
        },
    ]
}

/// `ct` read through `front` with reader capacity `rcap` in `mode` is
/// `pt`, and the end is stable.
fn decrypts_to(
    ctx: &str,
    front: Front,
    key: &Key,
    rcap: usize,
    ct: &[u8],
    pt: &[u8],
    mode: &ReadMode,
) {
    let builder = CipherReader::builder(key).capacity(rcap);
    decrypt_ok(&format!("{ctx} rcap {rcap}"), front, builder, ct, pt, mode);
}

/// 0, 1, seg−1, seg, seg+1, k·seg−1, k·seg, k·seg+1 (deduplicated).
fn lengths(seg: usize, k: usize) -> Vec<usize> {
    Layout::native(seg).lengths_around(&[1, k], &[])
}

const READ_CAPS: [usize; 4] = [1, 7, DEFAULT_CAPACITY, MIB + 3];

/// For every (algorithm, length): every write mode on every front, each
/// read back on that front in a rotating read mode and reader capacity,
/// and one ciphertext read back on every front in every read mode with
/// every reader capacity.
fn sweep(wcap: usize, k: usize) {
    let mut rot = 0usize;
    for (ai, alg) in Algorithm::ALL.iter().copied().enumerate() {
        let key = Key::generate(alg);
        for len in lengths(wcap, k) {
            let pt = data(len, (ai * 1000 + len) as u64);
            let pairs: Vec<(ReadMode, usize)> = read_modes(wcap, len)
                .into_iter()
                .flat_map(|m| READ_CAPS.into_iter().map(move |c| (m.clone(), c)))
                .collect();
            let mut first_ct = None;
            for wmode in write_modes(wcap) {
                for &front in Front::ALL {
                    let ct = encrypt(front, &key, wcap, &pt, &wmode);
                    // Step through the pairs with a stride coprime to
                    // their number, so consecutive uses differ in both
                    // mode and capacity.
                    let (rmode, rcap) = &pairs[(rot * 5) % pairs.len()];
                    rot += 1;
                    let ctx = format!("{alg} wcap {wcap} len {len} {wmode:?}");
                    decrypts_to(&ctx, front, &key, *rcap, &ct, &pt, rmode);
                    first_ct.get_or_insert(ct);
                }
            }
            let ct = first_ct.unwrap();
            for &front in Front::ALL {
                for (rmode, rcap) in &pairs {
                    let ctx = format!("{alg} wcap {wcap} len {len}");
                    decrypts_to(&ctx, front, &key, *rcap, &ct, &pt, rmode);
                }
            }
        }
    }
}

#[test]
fn tiny_segments_round_trip() {
    for wcap in [1, 2, 3, 17] {
        sweep(wcap, 10);
    }
}

#[test]
fn default_segments_round_trip() {
    sweep(DEFAULT_CAPACITY, 3);
}

#[test]
fn odd_segments_round_trip() {
    // Segment sizes that are not a power of two and straddle the odd
    // chunk sizes (7, 13, 4099) used above.
    for wcap in [6, 4098, 4100] {
        sweep(wcap, 2);
    }
}

#[test]
fn one_mib_segments_round_trip() {
    sweep(MIB, 2);
}

#[test]
fn readers_of_any_capacity_read_any_writer() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let pt = data(50_000, 7);
    for &front in Front::ALL {
        // (Capacities 1..17 against every reader capacity are in the
        // sweeps; here, per-segment cost keeps the segments at least 100
        // bytes.)
        for wcap in [100, 1000, DEFAULT_CAPACITY, 30_000, 50_000, 60_000] {
            let ct = encrypt(front, &key, wcap, &pt, &WriteMode::Fixed(4099));
            for rcap in [1, 2, 53, 54, 99, 117, 1000, 4096, 65_536, 200_000] {
                let mut r = front.reader_with_capacity(rcap, &key, &ct[..]);
                assert_eq!(r.capacity(), rcap);
                let mut out = Vec::new();
                r.read_to_end(&mut out).unwrap();
                assert!(out == pt, "{front:?} wcap {wcap} rcap {rcap}");
            }
            // Default constructors on both sides of the capacity question.
            let mut out = Vec::new();
            front.reader(&key, &ct[..]).read_to_end(&mut out).unwrap();
            assert!(out == pt, "{front:?} wcap {wcap} default reader");
        }
        let w = front.writer(&key, Vec::new());
        assert_eq!(w.capacity(), DEFAULT_CAPACITY);
        let ct = encrypt_with(w, &pt, &mixed(DEFAULT_CAPACITY));
        assert_eq!(ct.len(), expected_ct_len(pt.len(), DEFAULT_CAPACITY));
        for rcap in [1, 7, 100_000] {
            let ctx = format!("{front:?} default writer");
            decrypts_to(&ctx, front, &key, rcap, &ct, &pt, &ReadMode::ToEnd);
        }
    }
}

#[test]
fn io_copy_round_trip() {
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        for (len, wcap) in [
            (0, 64),
            (64, 64),
            (100_000, 1000),
            (300_001, DEFAULT_CAPACITY),
        ] {
            let pt = data(len, 3);
            let mut w = CipherWriter::with_capacity(wcap, &key, Vec::new());
            let copied = io::copy(&mut &pt[..], &mut w).unwrap();
            assert_eq!(copied, len as u64);
            let ct = w.finish().unwrap();
            assert_eq!(ct.len(), expected_ct_len(len, wcap));
            let mut r = CipherReader::with_capacity(333, &key, &ct[..]);
            let mut out = Vec::new();
            let copied = io::copy(&mut r, &mut out).unwrap();
            assert_eq!(copied, len as u64);
            assert!(out == pt, "{alg} len {len} wcap {wcap}");
        }
    }
}

#[test]
fn associated_data_round_trip() {
    let aad: &[u8] = b"backup-2026-11-30.tar";
    for &front in Front::ALL {
        for &alg in Algorithm::ALL {
            let key = Key::generate(alg);
            for (len, wcap) in [(0, 10), (10, 10), (25, 10), (20_000, DEFAULT_CAPACITY)] {
                let pt = data(len, 11);
                let builder = CipherWriter::builder(&key)
                    .capacity(wcap)
                    .associated_data(aad);
                let w = front.build_writer(builder, Vec::new());
                assert_eq!(w.capacity(), wcap);
                let ct = encrypt_with(w, &pt, &WriteMode::Fixed(7));
                // The associated data is bound, not stored.
                assert_eq!(ct.len(), expected_ct_len(len, wcap), "{alg} len {len}");

                for rcap in [1, 100, DEFAULT_CAPACITY] {
                    let builder = CipherReader::builder(&key)
                        .capacity(rcap)
                        .associated_data(aad);
                    let ctx = format!("{alg} len {len} rcap {rcap}");
                    decrypt_ok(&ctx, front, builder, &ct, &pt, &ReadMode::Chunks(7));
                }

                // The same stream without, or with other, associated data
                // fails to authenticate at the first segment.
                let wrong: [&[u8]; 3] = [b"", b"backup-2026-11-30.ta", b"backup-2026-11-30.tar\0"];
                for other in wrong {
                    let builder = CipherReader::builder(&key).associated_data(other);
                    let mut r = front.build_reader(builder, &ct[..]);
                    let mut out = Vec::new();
                    let e = r.read_to_end(&mut out).unwrap_err();
                    assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
                    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
                    assert!(out.is_empty(), "no plaintext before the tag");
                }
            }
            // And a stream written without associated data needs none.
            let ct = encrypt(
                front,
                &key,
                10,
                b"no associated data",
                &WriteMode::AllAtOnce,
            );
            let builder = CipherReader::builder(&key).associated_data(aad);
            let e = front
                .build_reader(builder, &ct[..])
                .read_to_end(&mut Vec::new())
                .unwrap_err();
            assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
            let builder = CipherReader::builder(&key).associated_data(b"");
            let mut out = Vec::new();
            front
                .build_reader(builder, &ct[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, b"no associated data");
        }
    }
}

fn to_hex(bytes: &[u8], upper: bool) -> String {
    bytes
        .iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

#[test]
fn key_from_hex_round_trip() {
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        assert_eq!(key.algorithm(), alg);
        assert_eq!(key.as_bytes().len(), alg.key_len());
        for upper in [false, true] {
            let hex = to_hex(key.as_bytes(), upper);
            let parsed = Key::from_hex(alg, &hex).unwrap();
            assert_eq!(parsed.as_bytes(), key.as_bytes(), "{alg} upper {upper}");
            assert_eq!(parsed.algorithm(), alg);
            // A stream sealed with one decrypts with the other, both ways.
            let pt = data(1000, 5);
            let ct = encrypt(Front::Std, &key, 64, &pt, &WriteMode::Fixed(13));
            let ctx = format!("{alg} parsed key reads original");
            decrypts_to(&ctx, Front::Std, &parsed, 100, &ct, &pt, &ReadMode::ToEnd);
            let ct = encrypt(Front::Std, &parsed, 64, &pt, &WriteMode::Fixed(13));
            let ctx = format!("{alg} original key reads parsed");
            decrypts_to(&ctx, Front::Std, &key, 100, &ct, &pt, &ReadMode::ToEnd);
        }
        // A different key (one bit flipped) does not read the stream.
        let mut other = key.as_bytes().to_vec();
        other[0] ^= 1;
        let other = Key::from_hex(alg, &to_hex(&other, false)).unwrap();
        let ct = encrypt(Front::Std, &key, 64, b"secret", &WriteMode::AllAtOnce);
        let e = CipherReader::new(&other, &ct[..])
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
    }
}

/// Removes the file when dropped, even if the test panics.
struct TempPath(std::path::PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_path(tag: &str) -> TempPath {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    TempPath(std::env::temp_dir().join(format!(
        "cipherio-roundtrip-{tag}-{}-{nanos}.bin",
        std::process::id()
    )))
}

#[test]
fn file_round_trip() {
    // Several MiB in 1 MiB segments through a real file, every algorithm.
    let len = 4 * MIB + 12_345;
    let pt = data(len, 99);
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        let path = temp_path(&format!("{}", alg.id()));
        let file = std::fs::File::create(&path.0).unwrap();
        let w = Front::Std.writer_with_capacity(MIB, &key, file);
        let file = encrypt_with(w, &pt, &WriteMode::Fixed(64 * 1024 + 1));
        file.sync_all().unwrap();
        drop(file);
        let on_disk = std::fs::metadata(&path.0).unwrap().len();
        assert_eq!(on_disk, expected_ct_len(len, MIB) as u64, "{alg}");

        for (rcap, mode) in [
            (DEFAULT_CAPACITY, ReadMode::ToEnd),
            (MIB, ReadMode::Chunks(3 * MIB + 5)),
        ] {
            let file = std::fs::File::open(&path.0).unwrap();
            let mut r = Front::Std.reader_with_capacity(rcap, &key, file);
            let (out, res) = read_in(&mut r, &mode);
            res.unwrap();
            assert!(out == pt, "{alg} rcap {rcap} {mode:?}");
            assert_end_is_stable(&format!("{alg} rcap {rcap} {mode:?}"), &mut r);
        }
    }
}
