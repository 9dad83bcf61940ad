//! Segments sealed and opened by index (`cipherio::segments`) against the
//! streaming writer and reader: the same bytes, the same errors.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::io::{Read, Write};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::segments::{Layout, PartLimits, SegmentOpener, SegmentSealer};
use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use common::c2sp::their_decrypt;
use common::{crate_error, data};

const AAD: &[u8] = b"bucket/object";

fn key(alg: Algorithm) -> Key {
    Key::new(alg, &vec![0x42; alg.key_len()]).unwrap()
}

/// A stream written by `CipherWriter` with `size`-byte segments.
fn written(key: &Key, size: usize, pt: &[u8], provider: Provider) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .capacity(size)
        .associated_data(AAD)
        .provider(provider)
        .build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// What `CipherReader` makes of `stream`: the plaintext, or its error.
fn read(key: &Key, stream: &[u8], provider: Provider) -> Result<Vec<u8>, Error> {
    let mut r = CipherReader::builder(key)
        .associated_data(AAD)
        .provider(provider)
        .build(stream);
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| crate_error("read", &e))
}

/// Cuts `0..count` segments into runs at `cuts`, in the order given.
fn runs(count: usize, cuts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut at: Vec<usize> = cuts
        .iter()
        .copied()
        .filter(|&c| c > 0 && c < count)
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut bounds = vec![0];
    bounds.extend(at);
    bounds.push(count);
    bounds.windows(2).map(|w| w[0]..w[1]).collect()
}

const SIZES: [usize; 3] = [1, 17, 4096];

fn lengths(size: usize) -> Vec<usize> {
    vec![0, 1, size - 1, size, size + 1, 3 * size, 3 * size + 5]
        .into_iter()
        .filter(|&n| n > 0 || size > 0)
        .collect()
}

#[test]
fn runs_sealed_in_any_order_are_the_writers_bytes() {
    for provider in Provider::ALL.iter().copied() {
        for alg in Algorithm::ALL.iter().copied() {
            let key = key(alg);
            for size in SIZES {
                for len in lengths(size) {
                    let pt = data(len, len as u64);
                    let stream = written(&key, size, &pt, provider);
                    let header = &stream[..53];
                    let sealer =
                        SegmentSealer::from_header_with(&key, header, AAD, provider).unwrap();
                    let layout = sealer.layout();
                    let count = layout.segment_count(len as u64) as usize;
                    for cuts in [vec![], vec![1], vec![1, 2], vec![count - 1]] {
                        let mut parts: Vec<(usize, Vec<u8>)> = runs(count, &cuts)
                            .into_iter()
                            .rev() // sealed last run first
                            .map(|r| {
                                let last = r.end == count;
                                let from = r.start * size;
                                let to = if last { len } else { r.end * size };
                                let mut out = vec![0xEE]; // appended to, kept
                                sealer
                                    .seal_segments(r.start as u32, &pt[from..to], last, &mut out)
                                    .unwrap();
                                assert_eq!(out[0], 0xEE);
                                (r.start, out[1..].to_vec())
                            })
                            .collect();
                        parts.sort();
                        let mut joined = sealer.header().to_vec();
                        parts.iter().for_each(|(_, p)| joined.extend_from_slice(p));
                        let ctx = format!("{provider:?} {alg:?} size {size} len {len} {cuts:?}");
                        assert_eq!(joined, stream, "{ctx}");
                        assert_eq!(read(&key, &joined, provider).unwrap(), pt, "{ctx}");
                        assert_eq!(layout.ciphertext_len(len as u64), stream.len() as u64);
                        assert_eq!(layout.plaintext_len(stream.len() as u64), Some(len as u64));
                    }
                }
            }
        }
    }
}

#[test]
fn every_segment_range_opens_to_its_plaintext() {
    for provider in Provider::ALL.iter().copied() {
        let key = key(Algorithm::ChaCha20Poly1305);
        for size in [17, 64] {
            for len in lengths(size) {
                let pt = data(len, 7);
                let stream = written(&key, size, &pt, provider);
                let opener = SegmentOpener::new_with(&key, &stream, AAD, provider).unwrap();
                let layout = opener.layout();
                let count = layout.segment_count(len as u64) as u32;
                for i in 0..count {
                    for j in i + 1..=count {
                        let c = layout.ciphertext_range(i..j);
                        let end = (c.end as usize).min(stream.len());
                        let p = layout.plaintext_range(i..j);
                        let want = &pt[p.start as usize..(p.end as usize).min(len)];
                        for ends in [j == count, false] {
                            let mut out = b"kept".to_vec();
                            let o = opener
                                .open_segments(i, &stream[c.start as usize..end], ends, &mut out)
                                .unwrap();
                            assert_eq!(&out[..4], b"kept");
                            assert_eq!(&out[4..], want, "{provider:?} {size} {len} {i}..{j}");
                            assert_eq!(o.segments, j - i);
                            assert_eq!(o.ends_stream, j == count);
                        }
                    }
                }
                // A plaintext range maps to the segments that hold it.
                for (a, b) in [(0, len), (len / 2, len), (1.min(len), len / 3 + 1)] {
                    let (a, b) = (a.min(len), b.min(len).max(a.min(len)));
                    let seg = layout.segments_for(a as u64..b as u64);
                    let p = layout.plaintext_range(seg.clone());
                    assert!(p.start <= a as u64 && (b == a || p.end >= b as u64));
                }
            }
        }
    }
}

/// Segment `i` of a stream's body (fixed segments of `size`).
fn segment(stream: &[u8], size: usize, i: usize) -> &[u8] {
    let full = size + 16;
    let start = 53 + i * full;
    &stream[start..(start + full).min(stream.len())]
}

#[test]
fn attacks_on_an_assembled_stream_fail_as_the_reader_fails() {
    let size = 32;
    for provider in Provider::ALL.iter().copied() {
        for alg in Algorithm::ALL.iter().copied() {
            let key = key(alg);
            let pt = data(4 * size + 9, 3); // segments 0..=4, the last short
            let stream = written(&key, size, &pt, provider);
            let other = written(&key, size, &data(4 * size + 9, 4), provider);
            let s = |i| segment(&stream, size, i);
            let h = &stream[..53];
            let cases: Vec<(&str, Vec<u8>)> = vec![
                ("reordered", [h, s(0), s(2), s(1), s(3), s(4)].concat()),
                ("middle dropped", [h, s(0), s(1), s(3), s(4)].concat()),
                ("last dropped", [h, s(0), s(1), s(2), s(3)].concat()),
                (
                    "duplicated",
                    [h, s(0), s(1), s(1), s(2), s(3), s(4)].concat(),
                ),
                (
                    "from another stream",
                    [h, s(0), segment(&other, size, 1), s(2), s(3), s(4)].concat(),
                ),
                ("cut inside the last", stream[..stream.len() - 3].to_vec()),
                ("trailing bytes", [&stream[..], b"x"].concat()),
            ];
            for (what, bytes) in cases {
                let ctx = format!("{provider:?} {alg:?} {what}");
                let want = read(&key, &bytes, provider).unwrap_err();
                let opener = SegmentOpener::new_with(&key, &bytes, AAD, provider).unwrap();
                let mut out = vec![1, 2, 3];
                let got = opener.open_segments(0, &bytes[53..], true, &mut out);
                assert_eq!(got.unwrap_err(), want, "{ctx}");
                assert_eq!(out, [1, 2, 3], "{ctx}: nothing released");
            }
            // The header edited, or the stream read under another name.
            let mut edited = stream.clone();
            edited[20] ^= 1;
            let opener = SegmentOpener::new_with(&key, &edited, AAD, provider).unwrap();
            let got = opener.open_segments(0, &edited[53..], true, &mut Vec::new());
            let got = got.unwrap_err();
            assert_eq!(got, read(&key, &edited, provider).unwrap_err());
            assert_eq!(got, Error::Authentication);
            let moved = SegmentOpener::new_with(&key, &stream, b"bucket/other", provider).unwrap();
            let got = moved.open_segments(0, &stream[53..], true, &mut Vec::new());
            assert_eq!(got.unwrap_err(), Error::Authentication);
        }
    }
}

#[test]
fn a_run_that_should_end_the_stream_but_does_not_is_truncated() {
    let key = key(Algorithm::Aes128Gcm);
    let pt = data(96, 1);
    let stream = written(&key, 32, &pt, Provider::RustCrypto);
    let opener = SegmentOpener::new(&key, &stream, AAD).unwrap();
    let two = &stream[53..53 + 2 * 48];
    assert_eq!(
        opener.open_segments(0, two, true, &mut Vec::new()),
        Err(Error::Truncated)
    );
    let o = opener
        .open_segments(0, two, false, &mut Vec::new())
        .unwrap();
    assert!(!o.ends_stream);
    assert_eq!(
        opener.open_segments(0, &[], true, &mut Vec::new()),
        Err(Error::Truncated)
    );
    // The wrong index: every segment's nonce names its place.
    assert_eq!(
        opener.open_segments(1, two, false, &mut Vec::new()),
        Err(Error::Authentication)
    );
}

#[test]
fn bad_runs_are_refused_and_leave_out_unchanged() {
    let key = key(Algorithm::Aes256Gcm);
    let sealer = SegmentSealer::new(&key, 16, AAD).unwrap();
    let mut out = vec![9];
    let cases = [
        sealer.seal_segments(0, &[0; 17], false, &mut out),
        sealer.seal_segments(2, &[], true, &mut out),
        sealer.seal_segments(u32::MAX, &[0; 17], true, &mut out),
    ];
    assert_eq!(cases[0], Err(Error::PartialSegment));
    assert_eq!(cases[1], Err(Error::EmptyFinalSegment));
    assert_eq!(cases[2], Err(Error::StreamTooLong));
    assert_eq!(out, [9]);
    // The last index a stream has is sealable.
    sealer
        .seal_segments(u32::MAX, &[0; 16], true, &mut out)
        .unwrap();
    // Framed streams have no index arithmetic.
    let framed = CipherWriter::builder(&key)
        .framed()
        .build(Vec::new())
        .finish()
        .unwrap();
    assert!(matches!(
        SegmentOpener::new(&key, &framed, b""),
        Err(Error::NoRandomAccess)
    ));
    assert!(matches!(
        SegmentSealer::new(&key, 0, AAD),
        Err(Error::InvalidCapacity(0))
    ));
    // Two coordinators never share a header.
    let again = SegmentSealer::new(&key, 16, AAD).unwrap();
    assert_ne!(sealer.header(), again.header());
}

#[test]
fn planned_parts_sealed_apart_make_the_writers_stream() {
    let key = key(Algorithm::ChaCha20Poly1305);
    let size = 1000;
    let limits = PartLimits::new(3000, 5000, 100);
    for len in [0, 1, 999, 1000, 1001, 10_000, 23_456] {
        let pt = data(len, 11);
        let stream = written(&key, size, &pt, Provider::RustCrypto);
        let sealer = SegmentSealer::from_header(&key, &stream, AAD).unwrap();
        let layout: Layout = sealer.layout();
        let plan = layout.plan_parts(len as u64, 4000, &limits).unwrap();
        let mut parts: Vec<Vec<u8>> = plan
            .iter()
            .rev()
            .map(|p| {
                let mut out = Vec::new();
                let slice = &pt[p.plaintext.start as usize..p.plaintext.end as usize];
                sealer.seal_part(p, slice, &mut out).unwrap();
                assert_eq!(out.len() as u64, p.ciphertext.end - p.ciphertext.start);
                out
            })
            .collect();
        parts.reverse();
        assert_eq!(parts.concat(), stream, "len {len}");
        // A part given other bytes than its own length is refused, and
        // nothing is appended.
        if let Some(p) = plan.first().filter(|p| p.plaintext.end > 0) {
            let short = &pt[..p.plaintext.end as usize - 1];
            let mut out = vec![7];
            let e = sealer.seal_part(p, short, &mut out).unwrap_err();
            assert!(
                matches!(e, Error::PartLength { expected, actual, .. }
                    if expected == p.plaintext.end && actual == expected - 1),
                "{e:?}"
            );
            assert_eq!(out, [7]);
        }
    }
}

/// Cobblestone keys of both instantiations.
fn cobblestone_keys() -> Vec<CobblestoneKey> {
    Instantiation::ALL
        .iter()
        .map(|&i| CobblestoneKey::new(i, &vec![0x5c; i.key_len()]).unwrap())
        .collect()
}

const C: usize = CHUNK_SIZE;
/// Salt and key commitment.
const C_HEADER: usize = 56;

/// A Cobblestone stream written by `CipherWriter`.
fn cobblestone_written(key: &CobblestoneKey, pt: &[u8]) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .associated_data(AAD)
        .build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// What `CipherReader` makes of a Cobblestone stream.
fn cobblestone_read(key: &CobblestoneKey, stream: &[u8]) -> Result<Vec<u8>, Error> {
    let mut r = CipherReader::builder(key)
        .associated_data(AAD)
        .build(stream);
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| crate_error("read", &e))
}

/// Seals `pt` as runs of chunks cut at `cuts`, last run first, and
/// assembles them after the header in index order.
fn cobblestone_sealed(sealer: &SegmentSealer, pt: &[u8], cuts: &[usize]) -> Vec<u8> {
    let count = sealer.layout().segment_count(pt.len() as u64) as usize;
    let mut parts = Vec::new();
    for r in runs(count, cuts).into_iter().rev() {
        let plain = &pt[(r.start * C).min(pt.len())..(r.end * C).min(pt.len())];
        let mut out = Vec::new();
        sealer
            .seal_segments(r.start as u32, plain, r.end == count, &mut out)
            .unwrap();
        parts.push(out);
    }
    parts.push(sealer.header().to_vec());
    parts.reverse();
    parts.concat()
}

#[test]
fn cobblestone_chunks_sealed_in_any_order_are_the_writers_bytes() {
    for key in cobblestone_keys() {
        for len in [0, 1, C - 1, C, C + 1, 3 * C, 3 * C + 5] {
            let pt = data(len, len as u64);
            let stream = cobblestone_written(&key, &pt);
            let sealer = SegmentSealer::from_header(&key, &stream, AAD).unwrap();
            assert_eq!(sealer.header(), &stream[..C_HEADER]);
            let layout = sealer.layout();
            // A plaintext of whole chunks ends with an empty one.
            assert_eq!(layout.segment_count(len as u64) as usize, len / C + 1);
            assert_eq!(layout.ciphertext_len(len as u64), stream.len() as u64);
            assert_eq!(layout.plaintext_len(stream.len() as u64), Some(len as u64));
            let count = len / C + 1;
            for cuts in [vec![], vec![1], vec![1, 2], vec![count - 1]] {
                let ctx = format!("{:?} {len} {cuts:?}", key.instantiation());
                assert_eq!(cobblestone_sealed(&sealer, &pt, &cuts), stream, "{ctx}");
            }
            let opener = SegmentOpener::new(&key, &stream, AAD).unwrap();
            let mut out = Vec::new();
            let opened = opener
                .open_segments(0, &stream[C_HEADER..], true, &mut out)
                .unwrap();
            assert_eq!(
                (opened.segments as usize, opened.ends_stream),
                (count, true)
            );
            assert_eq!(out, pt);
        }
    }
}

#[test]
fn a_new_cobblestone_stream_sealed_by_index_opens_with_both_readers() {
    for key in cobblestone_keys() {
        for len in [0, C, 2 * C + 3] {
            let pt = data(len, 7);
            let sealer = SegmentSealer::new(&key, C as u32, AAD).unwrap();
            assert_eq!(sealer.header().len(), C_HEADER);
            let stream = cobblestone_sealed(&sealer, &pt, &[1]);
            assert_eq!(cobblestone_read(&key, &stream).unwrap(), pt, "{len}");
            assert_eq!(their_decrypt(&key, AAD, &stream).unwrap(), pt, "{len}");
        }
        // The chunk size is the format's.
        assert!(matches!(
            SegmentSealer::new(&key, 4096, AAD),
            Err(Error::CapacityForKey {
                capacity: 4096,
                required: C,
                ..
            })
        ));
    }
}

#[test]
fn wrong_size_cobblestone_chunks_are_refused() {
    let key = &cobblestone_keys()[0];
    let pt = data(2 * C, 1);
    let stream = cobblestone_written(key, &pt);
    let sealer = SegmentSealer::from_header(key, &stream, AAD).unwrap();
    let mut out = vec![9];
    // A chunk that is not the last is full.
    assert_eq!(
        sealer.seal_segments(0, &pt[..C + 1], false, &mut out),
        Err(Error::PartialSegment)
    );
    assert_eq!(
        sealer.seal_segments(1, &pt[..C - 1], false, &mut out),
        Err(Error::PartialSegment)
    );
    assert_eq!(out, [9]);
    // A stream that ends on a full chunk is cut: its empty final chunk
    // dropped, it opens neither as a run nor with the reader.
    let cut = &stream[..stream.len() - 16];
    let opener = SegmentOpener::new(key, &stream, AAD).unwrap();
    assert_eq!(
        opener.open_segments(0, &cut[C_HEADER..], true, &mut out),
        Err(Error::Truncated)
    );
    assert_eq!(out, [9]);
    assert_eq!(cobblestone_read(key, cut), Err(Error::Truncated));
    assert_eq!(opener.layout().plaintext_len(cut.len() as u64), None);
    // The same full chunks, not ending the stream, open.
    let opened = opener
        .open_segments(0, &cut[C_HEADER..], false, &mut out)
        .unwrap();
    assert_eq!((opened.segments, opened.ends_stream), (2, false));
    assert_eq!(out[1..], pt[..]);
}

#[test]
fn a_wrong_cobblestone_commitment_is_refused_before_any_chunk() {
    let keys = cobblestone_keys();
    let key = &keys[0];
    let stream = cobblestone_written(key, &data(C + 5, 2));
    let other = CobblestoneKey::new(key.instantiation(), &[0x11; 16]).unwrap();
    let mut edited = stream.clone();
    edited[C_HEADER - 1] ^= 1;
    let cases: [(&CobblestoneKey, &[u8], &[u8]); 4] = [
        (&other, &stream, AAD),
        (key, &stream, b"another name"),
        (key, &edited, AAD),
        // Cobblestone-256 derives another commitment from its 32 bytes.
        (&keys[1], &stream, AAD),
    ];
    for (n, (k, bytes, aad)) in cases.into_iter().enumerate() {
        assert_eq!(
            SegmentOpener::new(k, bytes, aad).unwrap_err(),
            Error::Authentication,
            "{n}"
        );
        assert_eq!(
            SegmentSealer::from_header(k, bytes, aad).unwrap_err(),
            Error::Authentication,
            "{n}"
        );
    }
    // A header cut short is no header.
    assert_eq!(
        SegmentOpener::new(key, &stream[..C_HEADER - 1], AAD).unwrap_err(),
        Error::Truncated
    );
}

#[test]
fn tink_keys_have_no_segments_by_index() {
    let key = AesGcmHkdfKey::generate(AesGcmHkdfParams::AES128_GCM_HKDF_4KB);
    let stream = CipherWriter::builder(&key)
        .build(Vec::new())
        .finish()
        .unwrap();
    assert_eq!(
        SegmentOpener::new(&key, &stream, b"").unwrap_err(),
        Error::UnevenSegments
    );
    assert_eq!(
        SegmentSealer::from_header(&key, &stream, b"").unwrap_err(),
        Error::UnevenSegments
    );
}
