//! Round trips through `CipherWriter` and `CipherReader` across algorithms,
//! writer capacities (segment sizes), reader capacities, plaintext lengths
//! around segment boundaries, and the ways a caller can chunk writes and
//! reads. Every ciphertext's length is checked against the format:
//! 53 + plaintext + 16 × max(1, ceil(len / segment)).

#![allow(clippy::unwrap_used)]

use std::io::{self, BufRead, Read, Write};

use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key};

const HEADER: usize = 53;
const TAG: usize = 16;
const MIB: usize = 1 << 20;

/// The ciphertext length the format dictates for `len` plaintext bytes
/// in segments of `seg` bytes: one segment for the empty stream, no empty
/// final segment after full ones.
fn expected_ct_len(len: usize, seg: usize) -> usize {
    let segments = len.div_ceil(seg).max(1);
    HEADER + len + TAG * segments
}

/// Deterministic, non-repeating-looking plaintext (so a swapped or
/// duplicated segment would not decrypt to the same bytes).
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum WriteMode {
    OneByte,
    Fixed(usize),
    AllAtOnce,
    /// Sizes that alternate between the buffered path and the direct-seal
    /// path (writes longer than a segment arriving on an empty buffer),
    /// with a full segment held back in between, and empty writes.
    Mixed,
}

const WRITE_MODES: [WriteMode; 6] = [
    WriteMode::OneByte,
    WriteMode::Fixed(7),
    WriteMode::Fixed(13),
    WriteMode::Fixed(4099),
    WriteMode::AllAtOnce,
    WriteMode::Mixed,
];

fn mixed_sizes(seg: usize) -> [usize; 7] {
    [
        2 * seg + 1,
        1,
        seg.saturating_sub(1).max(1),
        seg,
        seg + 1,
        3,
        seg * 5 / 2 + 1,
    ]
}

fn encrypt_with<W: Write>(mut w: CipherWriter<W>, pt: &[u8], mode: WriteMode) -> W {
    let seg = w.capacity();
    match mode {
        WriteMode::AllAtOnce => w.write_all(pt).unwrap(),
        _ => {
            let mixed = mixed_sizes(seg);
            let mut pos = 0;
            let mut i = 0;
            while pos < pt.len() {
                let size = match mode {
                    WriteMode::OneByte => 1,
                    WriteMode::Fixed(n) => n,
                    WriteMode::Mixed => {
                        if i % 3 == 1 {
                            assert_eq!(w.write(&[]).unwrap(), 0, "empty write");
                        }
                        mixed[i % mixed.len()]
                    }
                    WriteMode::AllAtOnce => unreachable!(),
                };
                let n = size.min(pt.len() - pos);
                w.write_all(&pt[pos..pos + n]).unwrap();
                pos += n;
                i += 1;
            }
        }
    }
    w.finish().unwrap()
}

fn encrypt(key: &Key, wcap: usize, pt: &[u8], mode: WriteMode) -> Vec<u8> {
    let ct = encrypt_with(CipherWriter::with_capacity(wcap, key, Vec::new()), pt, mode);
    assert_eq!(
        ct.len(),
        expected_ct_len(pt.len(), wcap),
        "ciphertext length: len {} seg {wcap} {mode:?}",
        pt.len()
    );
    let size = u32::try_from(wcap).unwrap().to_be_bytes();
    assert_eq!(&ct[10..14], &size, "segment size field in the header");
    ct
}

#[derive(Clone, Copy, Debug)]
enum ReadMode {
    OneByte,
    Fixed(usize),
    /// Buffers of exactly one segment (the smallest zero-copy read).
    ExactSeg,
    /// Buffers of several segments (zero-copy, many segments per call).
    MultiSeg,
    ToEnd,
    BufRead,
    ReadExact,
}

const READ_MODES: [ReadMode; 8] = [
    ReadMode::OneByte,
    ReadMode::Fixed(7),
    ReadMode::Fixed(4099),
    ReadMode::ExactSeg,
    ReadMode::MultiSeg,
    ReadMode::ToEnd,
    ReadMode::BufRead,
    ReadMode::ReadExact,
];

/// Reads `r` to its end in `mode` and checks the end is stable.
fn read_all<R: Read>(r: &mut CipherReader<R>, seg: usize, len: usize, mode: ReadMode) -> Vec<u8> {
    let mut out = Vec::new();
    let chunk = match mode {
        ReadMode::OneByte => Some(1),
        ReadMode::Fixed(n) => Some(n),
        ReadMode::ExactSeg => Some(seg),
        ReadMode::MultiSeg => Some(3 * seg + 5),
        _ => None,
    };
    if let Some(chunk) = chunk {
        let mut buf = vec![0u8; chunk];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
    } else {
        match mode {
            ReadMode::ToEnd => {
                r.read_to_end(&mut out).unwrap();
            }
            ReadMode::BufRead => {
                let mut i = 0;
                loop {
                    let avail = r.fill_buf().unwrap();
                    if avail.is_empty() {
                        break;
                    }
                    let take = if i % 2 == 0 {
                        avail.len().min(3)
                    } else {
                        avail.len()
                    };
                    out.extend_from_slice(&avail[..take]);
                    r.consume(take);
                    i += 1;
                }
            }
            ReadMode::ReadExact => {
                let sizes = [11, seg, 2 * seg + 1];
                let mut i = 0;
                while out.len() < len {
                    let n = sizes[i % sizes.len()].min(len - out.len());
                    let mut buf = vec![0u8; n];
                    r.read_exact(&mut buf).unwrap();
                    out.extend_from_slice(&buf);
                    i += 1;
                }
            }
            _ => unreachable!(),
        }
    }
    // The end is the end: asking again (with either API) still says so.
    assert_eq!(r.read(&mut [0u8; 64]).unwrap(), 0, "read after the end");
    assert!(r.fill_buf().unwrap().is_empty(), "fill_buf after the end");
    out
}

fn decrypt(key: &Key, rcap: usize, ct: &[u8], seg: usize, len: usize, mode: ReadMode) -> Vec<u8> {
    let mut r = CipherReader::with_capacity(rcap, key, ct);
    read_all(&mut r, seg, len, mode)
}

/// 0, 1, seg−1, seg, seg+1, k·seg−1, k·seg, k·seg+1 (deduplicated).
fn lengths(seg: usize, k: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        seg - 1,
        seg,
        seg + 1,
        k * seg - 1,
        k * seg,
        k * seg + 1,
    ];
    v.sort_unstable();
    v.dedup();
    v
}

const READ_CAPS: [usize; 4] = [1, 7, DEFAULT_CAPACITY, MIB + 3];

/// For every (algorithm, length): every write mode, each read back in a
/// rotating read mode and reader capacity, and one ciphertext read back in
/// every read mode with every reader capacity.
fn sweep(wcap: usize, k: usize) {
    let pairs: Vec<(ReadMode, usize)> = READ_MODES
        .into_iter()
        .flat_map(|m| READ_CAPS.into_iter().map(move |c| (m, c)))
        .collect();
    let mut rot = 0usize;
    let mut next_pair = || {
        // Step through the pairs with a stride coprime to their number,
        // so consecutive uses differ in both mode and capacity.
        let p = pairs[(rot * 5) % pairs.len()];
        rot += 1;
        p
    };
    for (ai, alg) in Algorithm::ALL.into_iter().enumerate() {
        let key = Key::generate(alg);
        for len in lengths(wcap, k) {
            let pt = data(len, (ai * 1000 + len) as u64);
            let check = |ct: &[u8], rmode: ReadMode, rcap: usize, what: &str| {
                let out = decrypt(&key, rcap, ct, wcap, len, rmode);
                assert!(
                    out == pt,
                    "{alg} wcap {wcap} len {len} {what} read {rmode:?} rcap {rcap}"
                );
            };
            let mut first_ct = None;
            for wmode in WRITE_MODES {
                let ct = encrypt(&key, wcap, &pt, wmode);
                let (rmode, rcap) = next_pair();
                check(&ct, rmode, rcap, &format!("{wmode:?}"));
                first_ct.get_or_insert(ct);
            }
            let ct = first_ct.unwrap();
            for &(rmode, rcap) in &pairs {
                check(&ct, rmode, rcap, "");
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
    // (Capacities 1..17 against every reader capacity are in the sweeps;
    // here, per-segment cost keeps the segments at least 100 bytes.)
    for wcap in [100, 1000, DEFAULT_CAPACITY, 30_000, 50_000, 60_000] {
        let ct = encrypt(&key, wcap, &pt, WriteMode::Fixed(4099));
        for rcap in [1, 2, 53, 54, 99, 117, 1000, 4096, 65_536, 200_000] {
            let mut r = CipherReader::with_capacity(rcap, &key, &ct[..]);
            assert_eq!(r.capacity(), rcap);
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert!(out == pt, "wcap {wcap} rcap {rcap}");
        }
        // Default constructors on both sides of the capacity question.
        let mut out = Vec::new();
        CipherReader::new(&key, &ct[..])
            .read_to_end(&mut out)
            .unwrap();
        assert!(out == pt, "wcap {wcap} default reader");
    }
    let w = CipherWriter::new(&key, Vec::new());
    assert_eq!(w.capacity(), DEFAULT_CAPACITY);
    let ct = encrypt_with(w, &pt, WriteMode::Mixed);
    assert_eq!(ct.len(), expected_ct_len(pt.len(), DEFAULT_CAPACITY));
    for rcap in [1, 7, 100_000] {
        let out = decrypt(&key, rcap, &ct, DEFAULT_CAPACITY, pt.len(), ReadMode::ToEnd);
        assert!(out == pt, "default writer, rcap {rcap}");
    }
}

#[test]
fn io_copy_round_trip() {
    for alg in Algorithm::ALL {
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
    for alg in Algorithm::ALL {
        let key = Key::generate(alg);
        for (len, wcap) in [(0, 10), (10, 10), (25, 10), (20_000, DEFAULT_CAPACITY)] {
            let pt = data(len, 11);
            let w = CipherWriter::builder(&key)
                .capacity(wcap)
                .associated_data(aad)
                .build(Vec::new());
            assert_eq!(w.capacity(), wcap);
            let ct = encrypt_with(w, &pt, WriteMode::Fixed(7));
            // The associated data is bound, not stored.
            assert_eq!(ct.len(), expected_ct_len(len, wcap), "{alg} len {len}");

            for rcap in [1, 100, DEFAULT_CAPACITY] {
                let mut r = CipherReader::builder(&key)
                    .capacity(rcap)
                    .associated_data(aad)
                    .build(&ct[..]);
                let out = read_all(&mut r, wcap, len, ReadMode::Fixed(7));
                assert!(out == pt, "{alg} len {len} rcap {rcap}");
            }

            // The same stream without, or with other, associated data
            // fails to authenticate at the first segment.
            let wrong: [&[u8]; 3] = [b"", b"backup-2026-11-30.ta", b"backup-2026-11-30.tar\0"];
            for other in wrong {
                let mut r = CipherReader::builder(&key)
                    .associated_data(other)
                    .build(&ct[..]);
                let mut out = Vec::new();
                let e = r.read_to_end(&mut out).unwrap_err();
                assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
                assert_eq!(e.kind(), io::ErrorKind::InvalidData);
                assert!(out.is_empty(), "no plaintext before the tag");
            }
        }
        // And a stream written without associated data needs none.
        let ct = encrypt(&key, 10, b"no associated data", WriteMode::AllAtOnce);
        let mut r = CipherReader::builder(&key)
            .associated_data(aad)
            .build(&ct[..]);
        let e = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(Error::from_io(&e), Some(&Error::Authentication));
        let mut out = Vec::new();
        CipherReader::builder(&key)
            .associated_data(b"")
            .build(&ct[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"no associated data");
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
    for alg in Algorithm::ALL {
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
            let ct = encrypt(&key, 64, &pt, WriteMode::Fixed(13));
            let out = decrypt(&parsed, 100, &ct, 64, pt.len(), ReadMode::ToEnd);
            assert!(out == pt, "{alg} parsed key reads original");
            let ct = encrypt(&parsed, 64, &pt, WriteMode::Fixed(13));
            let out = decrypt(&key, 100, &ct, 64, pt.len(), ReadMode::ToEnd);
            assert!(out == pt, "{alg} original key reads parsed");
        }
        // A different key (one bit flipped) does not read the stream.
        let mut other = key.as_bytes().to_vec();
        other[0] ^= 1;
        let other = Key::from_hex(alg, &to_hex(&other, false)).unwrap();
        let ct = encrypt(&key, 64, b"secret", WriteMode::AllAtOnce);
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
    for alg in Algorithm::ALL {
        let key = Key::generate(alg);
        let path = temp_path(&format!("{}", alg.id()));
        let file = std::fs::File::create(&path.0).unwrap();
        let w = CipherWriter::with_capacity(MIB, &key, file);
        let file = encrypt_with(w, &pt, WriteMode::Fixed(64 * 1024 + 1));
        file.sync_all().unwrap();
        drop(file);
        let on_disk = std::fs::metadata(&path.0).unwrap().len();
        assert_eq!(on_disk, expected_ct_len(len, MIB) as u64, "{alg}");

        for (rcap, mode) in [
            (DEFAULT_CAPACITY, ReadMode::ToEnd),
            (MIB, ReadMode::MultiSeg),
        ] {
            let file = std::fs::File::open(&path.0).unwrap();
            let mut r = CipherReader::with_capacity(rcap, &key, file);
            let out = read_all(&mut r, MIB, len, mode);
            assert!(out == pt, "{alg} rcap {rcap} {mode:?}");
        }
    }
}
