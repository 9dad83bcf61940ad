//! Exhaustive tampering of small multi-segment streams, for every algorithm.
//!
//! Every damaged stream is read with several read patterns (`read_to_end`,
//! 1-byte reads, reads of exactly one segment, large reads that make the
//! zero-copy path coalesce segments, `BufRead`) and several read-ahead /
//! inner-read sizes, and every read must:
//!
//! * end in an error, never a clean end of stream;
//! * carry a `cipherio::Error` whose kind is `InvalidData` or `UnexpectedEof`
//!   (and the expected variant where the format fixes it);
//! * have returned only a prefix of the plaintext that ends on a segment
//!   boundary before the damaged segment (no byte of the damaged segment or
//!   any later one);
//! * stay failed: three more reads (of 0, 1 and many bytes) and a `fill_buf`
//!   all return the same error, never `Ok`.
//!
//! Every stream is sealed by each provider in `Provider::ALL` and every
//! damaged stream read by each (so with the `aws-lc` feature all four
//! pairs; without it RustCrypto alone).
//!
//! Streams use tiny segments (16 bytes, 32 for some cases) so that looping
//! over every byte stays cheap.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Read, Write};

use cipherio::format::{DEFAULT_MAX_SEGMENT_SIZE, HEADER_LEN, Header, SALT_LEN, TAG_LEN};
use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key, Provider};
use common::{
    Front, Layout, ReadMode, ScriptReader, TAMPER_CONFIGS as CONFIGS, Tamper, Upto, Want,
    WriteMode, assert_sticky, crate_error, join, read_watching_key, tamper_patterns,
};

const H: usize = HEADER_LEN;
const T: usize = TAG_LEN;
/// Writer capacity (plaintext bytes per segment) of most streams here.
const S: usize = 16;

/// Plaintext that never holds 0x00 (what a wipe leaves) nor 0xAA (what
/// the caller's buffer is filled with), so a leak is detectable.
fn plaintext(len: usize) -> Vec<u8> {
    common::data(len, 97)
}

fn seal_with(wp: Provider, key: &Key, seg: usize, aad: &[u8], pt: &[u8]) -> Vec<u8> {
    let builder = CipherWriter::builder(key)
        .provider(wp)
        .capacity(seg)
        .associated_data(aad);
    common::encrypt(Front::Std, builder, pt, &WriteMode::Fixed(7))
}

fn seal(wp: Provider, key: &Key, seg: usize, pt: &[u8]) -> Vec<u8> {
    seal_with(wp, key, seg, b"", pt)
}

/// Number of segments of a stream of `pt_len` plaintext bytes.
fn segment_count(pt_len: usize, seg: usize) -> usize {
    Layout::native(seg).segments(pt_len)
}

/// A stream cut into its header and its sealed segments.
fn split(ct: &[u8], seg: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    Layout::native(seg).split(ct)
}

fn patterns(seg: usize) -> Vec<ReadMode> {
    tamper_patterns(&Layout::native(seg))
}

/// Reads `stream` in each of `configs` and `pats`, on every front and with
/// every provider, and checks the failure (see the module docs).
#[allow(clippy::too_many_arguments)]
fn expect_failure_in(
    configs: &[(usize, usize)],
    pats: &[ReadMode],
    ctx: &str,
    key: &Key,
    aad: &[u8],
    stream: &[u8],
    seg: usize,
    pt: &[u8],
    want: &Want,
    upto: Upto,
) {
    let builder = CipherReader::builder(key).associated_data(aad);
    let layout = Layout::native(seg);
    let tamper = Tamper {
        ctx,
        builder: &builder,
        layout: &layout,
        pt,
    };
    tamper.fail_in(configs, pats, stream, want, upto);
}

/// [`expect_failure_in`] over every configuration and pattern.
#[allow(clippy::too_many_arguments)]
fn expect_failure_aad(
    ctx: &str,
    key: &Key,
    aad: &[u8],
    stream: &[u8],
    seg: usize,
    pt: &[u8],
    want: &Want,
    upto: Upto,
) {
    expect_failure_in(
        &CONFIGS,
        &patterns(seg),
        ctx,
        key,
        aad,
        stream,
        seg,
        pt,
        want,
        upto,
    );
}

fn expect_failure(
    ctx: &str,
    key: &Key,
    stream: &[u8],
    seg: usize,
    pt: &[u8],
    want: &Want,
    upto: Upto,
) {
    expect_failure_aad(ctx, key, b"", stream, seg, pt, want, upto);
}

/// The untampered stream reads back in every configuration and pattern
/// (so a failure elsewhere is the tampering's doing, not the harness's).
fn expect_clean(ctx: &str, key: &Key, aad: &[u8], stream: &[u8], seg: usize, pt: &[u8]) {
    let builder = CipherReader::builder(key).associated_data(aad);
    let layout = Layout::native(seg);
    let tamper = Tamper {
        ctx,
        builder: &builder,
        layout: &layout,
        pt,
    };
    tamper.clean(stream);
}

/// A fresh key for every algorithm.
fn algs() -> impl Iterator<Item = (Algorithm, Key)> {
    Algorithm::ALL.into_iter().map(|a| (a, Key::generate(a)))
}

/// A fresh key for every algorithm, with every provider to seal with
/// (every reader in this file then opens with every provider too).
fn keys() -> impl Iterator<Item = (Algorithm, Key, Provider)> {
    algs().flat_map(|(a, k)| Provider::ALL.iter().map(move |&p| (a, k.clone(), p)))
}

/// Plaintext lengths: 3 full segments plus a partial one; 3 full segments
/// (full-length final segment); the empty stream.
const LENGTHS: [usize; 3] = [3 * S + 5, 3 * S, 0];

#[test]
fn stream_untampered_reads_back_in_every_pattern() {
    for (alg, key, wp) in keys() {
        for len in LENGTHS {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            assert_eq!(
                ct.len(),
                H + len + segment_count(len, S) * T,
                "{alg}: layout"
            );
            expect_clean(
                &format!("{alg} by {wp:?} len {len}"),
                &key,
                b"",
                &ct,
                S,
                &pt,
            );
        }
    }
}

/// What a flip of `ct[pos]` by `mask` must produce, and how much plaintext
/// may come out first (every segment before the damaged one).
fn flip_expectation(alg: Algorithm, ct: &[u8], pos: usize, mask: u8) -> (Error, usize) {
    let v = ct[pos] ^ mask;
    let err = match pos {
        0..8 => Error::BadMagic,
        8 => Error::UnsupportedVersion(v),
        9 => match Algorithm::from_id(v) {
            Some(stream) => Error::AlgorithmMismatch { stream, key: alg },
            None => Error::UnknownAlgorithm(v),
        },
        10..14 => {
            let mut b = [ct[10], ct[11], ct[12], ct[13]];
            b[pos - 10] = v;
            let size = u32::from_be_bytes(b);
            if size == 0 {
                Error::ZeroSegmentSize
            } else if usize::try_from(size).unwrap() > DEFAULT_MAX_SEGMENT_SIZE {
                Error::SegmentTooLarge {
                    size: u64::from(size),
                    limit: u64::try_from(DEFAULT_MAX_SEGMENT_SIZE).unwrap(),
                }
            } else {
                // A different segment size changes the derived key.
                Error::Authentication
            }
        }
        _ => Error::Authentication,
    };
    let delivered = if pos < H { 0 } else { (pos - H) / (S + T) * S };
    (err, delivered)
}

#[test]
fn stream_every_single_byte_flip_fails_before_the_damaged_segment() {
    for (alg, key, wp) in keys() {
        for len in LENGTHS {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            for pos in 0..ct.len() {
                for mask in [0x01u8, 0x80] {
                    let mut bad = ct.clone();
                    bad[pos] ^= mask;
                    let (err, delivered) = flip_expectation(alg, &ct, pos, mask);
                    // A flip in the segment-size field can ask for a segment
                    // of megabytes, under the limit: the reader then sets up
                    // (and wipes) megabyte buffers on every run, so those
                    // few cases run a reduced matrix to keep the test fast.
                    let size = u32::from_be_bytes(bad[10..14].try_into().unwrap());
                    let all = patterns(S);
                    let (configs, pats) = if size >= 1 << 20 {
                        (&CONFIGS[..1], &[ReadMode::ToEnd, ReadMode::Chunks(1)][..])
                    } else {
                        (&CONFIGS[..], &all[..])
                    };
                    expect_failure_in(
                        configs,
                        pats,
                        &format!("{alg} by {wp:?} len {len}: byte {pos} ^ {mask:#04x}"),
                        &key,
                        b"",
                        &bad,
                        S,
                        &pt,
                        &Want::Is(err),
                        Upto::Exactly(delivered),
                    );
                }
            }
        }
    }
}

#[test]
fn stream_every_truncation_fails() {
    for (alg, key, wp) in keys() {
        for len in LENGTHS {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            for cut in 0..ct.len() {
                let (err, delivered) = if cut < H {
                    (Error::Truncated, 0)
                } else {
                    let (k, rest) = ((cut - H) / (S + T), (cut - H) % (S + T));
                    // At a boundary or with less than a tag left: the stream
                    // ended early. Otherwise the partial segment is opened as
                    // the final one and fails to authenticate.
                    let err = if rest < T {
                        Error::Truncated
                    } else {
                        Error::Authentication
                    };
                    (err, k * S)
                };
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: cut at {cut} of {}", ct.len()),
                    &key,
                    &ct[..cut],
                    S,
                    &pt,
                    &Want::Is(err),
                    Upto::Exactly(delivered),
                );
            }
        }
    }
}

fn bad_tag(segment: usize) {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            let r = Layout::native(S).seg_range(ct.len(), segment);
            for pos in [r.end - T, r.end - 1] {
                let mut bad = ct.clone();
                bad[pos] ^= 0x10;
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: tag of segment {segment}, byte {pos}"),
                    &key,
                    &bad,
                    S,
                    &pt,
                    &Want::Is(Error::Authentication),
                    Upto::Exactly(segment * S),
                );
            }
        }
    }
}

#[test]
fn stream_bad_tag_in_first_segment() {
    bad_tag(0);
}

#[test]
fn stream_bad_tag_in_later_segment() {
    bad_tag(2);
}

/// The bytes an unfinished writer left in its `Vec` after `pt` was written
/// (as one `write_all` or byte by byte, with or without `flush`).
fn unfinished(
    front: Front,
    wp: Provider,
    key: &Key,
    pt: &[u8],
    bytewise: bool,
    flush: bool,
) -> Vec<u8> {
    let builder = CipherWriter::builder(key).provider(wp).capacity(S);
    let mut w = front.build_writer(builder, Vec::new());
    if bytewise {
        for b in pt {
            w.write_all(std::slice::from_ref(b)).unwrap();
        }
    } else {
        w.write_all(pt).unwrap();
    }
    if flush {
        w.flush().unwrap();
    }
    let out = w.get_ref().clone();
    drop(w);
    out
}

fn check_unfinished(len: usize, sealed_segments: usize) {
    for (alg, key, wp) in keys() {
        let pt = plaintext(len);
        for bytewise in [false, true] {
            for (flush, &front) in [false, true]
                .into_iter()
                .flat_map(|f| Front::ALL.iter().map(move |fr| (f, fr)))
            {
                let ct = unfinished(front, wp, &key, &pt, bytewise, flush);
                let ctx = format!(
                    "{alg} {front:?}: unfinished after {len} bytes (bytewise {bytewise}, flush {flush})"
                );
                let expected_len = if sealed_segments == 0 {
                    0
                } else {
                    H + sealed_segments * (S + T)
                };
                assert_eq!(ct.len(), expected_len, "{ctx}: whole segments only");
                expect_failure(
                    &ctx,
                    &key,
                    &ct,
                    S,
                    &pt,
                    &Want::Is(Error::Truncated),
                    Upto::Exactly(sealed_segments * S),
                );
            }
        }
    }
}

#[test]
fn stream_unfinished_writer_at_segment_boundary_is_truncated() {
    // k·seg + 1 bytes: k full segments are sealed, one byte stays buffered,
    // so the output ends exactly at a segment boundary (k = 0: no output).
    for k in 0..=3 {
        check_unfinished(k * S + 1, k);
    }
}

#[test]
fn stream_unfinished_writer_mid_segment_is_truncated() {
    // Half a segment buffered, or a full segment held back as a possible
    // final one: the output still ends at a boundary without a final segment.
    for k in 0..=3 {
        check_unfinished(k * S + S / 2, k);
    }
    for k in 1..=3 {
        check_unfinished(k * S, k - 1);
    }
}

#[test]
fn stream_dropped_segment() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let (header, segs) = split(&seal(wp, &key, S, &pt), S);
            let n = segs.len();
            for i in 0..n {
                let mut s = segs.clone();
                s.remove(i);
                let err = if i == n - 1 {
                    // Dropping the final segment leaves a stream that ends at
                    // a boundary.
                    Error::Truncated
                } else {
                    Error::Authentication
                };
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: segment {i} dropped"),
                    &key,
                    &join(&header, &s),
                    S,
                    &pt,
                    &Want::Is(err),
                    Upto::Exactly(i * S),
                );
            }
        }
    }
}

#[test]
fn stream_swapped_segments() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let (header, segs) = split(&seal(wp, &key, S, &pt), S);
            for i in 0..segs.len() {
                for j in i + 1..segs.len() {
                    let mut s = segs.clone();
                    s.swap(i, j);
                    expect_failure(
                        &format!("{alg} by {wp:?} len {len}: segments {i} and {j} swapped"),
                        &key,
                        &join(&header, &s),
                        S,
                        &pt,
                        &Want::Is(Error::Authentication),
                        Upto::Exactly(i * S),
                    );
                }
            }
        }
    }
}

#[test]
fn stream_duplicated_segment() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let (header, segs) = split(&seal(wp, &key, S, &pt), S);
            // Non-final segments (a repeated final one is the next test).
            for i in 0..segs.len() - 1 {
                let mut s = segs.clone();
                s.insert(i + 1, segs[i].clone());
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: segment {i} duplicated"),
                    &key,
                    &join(&header, &s),
                    S,
                    &pt,
                    &Want::Is(Error::Authentication),
                    Upto::Exactly((i + 1) * S),
                );
            }
        }
    }
}

#[test]
fn stream_two_final_segments() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S, S] {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            let other = seal(wp, &key, S, &pt);
            let n = segment_count(len, S);
            let own_final = ct[Layout::native(S).seg_range(ct.len(), n - 1)].to_vec();
            let other_final = other[Layout::native(S).seg_range(other.len(), n - 1)].to_vec();
            for (what, extra) in [
                ("its own final", own_final),
                ("another stream's final", other_final),
            ] {
                let mut bad = ct.clone();
                bad.extend_from_slice(&extra);
                let ctx = format!("{alg} by {wp:?} len {len}: {what} segment appended");
                expect_bytes_after_final(&ctx, &key, &bad, &pt);
            }
        }
    }
}

/// A stream of `pt` (in `S`-byte segments) with bytes appended after its
/// final segment. A full-length final segment authenticates as final and
/// may be released before the bytes after it are seen, then `TrailingData`;
/// a short one plus what follows reads as a segment that does not
/// authenticate, and only the segments before it are released.
fn expect_bytes_after_final(ctx: &str, key: &Key, bad: &[u8], pt: &[u8]) {
    let n = segment_count(pt.len(), S);
    if !pt.is_empty() && pt.len().is_multiple_of(S) {
        let (want, upto) = (
            Want::Is(Error::TrailingData),
            Upto::Between((n - 1) * S, n * S),
        );
        expect_failure(ctx, key, bad, S, pt, &want, upto);
    } else {
        let upto = Upto::Exactly((n - 1) * S);
        expect_failure(ctx, key, bad, S, pt, &Want::InvalidData, upto);
    }
}

#[test]
fn stream_trailing_bytes_after_final_segment() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S, S, 0] {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            let whole = ct[Layout::native(S).seg_range(ct.len(), 0)].to_vec();
            let trailers: [(&str, Vec<u8>); 4] = [
                ("1 zero byte", vec![0]),
                ("1 byte", vec![0x5c]),
                ("16 bytes", vec![0x5c; 16]),
                ("a whole extra segment", whole),
            ];
            for (what, extra) in trailers {
                let mut bad = ct.clone();
                bad.extend_from_slice(&extra);
                let ctx = format!("{alg} by {wp:?} len {len}: {what} after the final segment");
                expect_bytes_after_final(&ctx, &key, &bad, &pt);
            }
        }
    }
}

#[test]
fn stream_spliced_header_from_another_stream() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let a = seal(wp, &key, S, &pt);
            let b = seal(wp, &key, S, &pt);
            let mut bad = a[..H].to_vec();
            bad.extend_from_slice(&b[H..]);
            expect_failure(
                &format!("{alg} by {wp:?} len {len}: header of A, segments of B"),
                &key,
                &bad,
                S,
                &pt,
                &Want::Is(Error::Authentication),
                Upto::Exactly(0),
            );
        }
    }
}

#[test]
fn stream_spliced_segment_from_another_stream() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let (ha, sa) = split(&seal(wp, &key, S, &pt), S);
            let (_, sb) = split(&seal(wp, &key, S, &pt), S);
            for i in 0..sa.len() {
                let mut s = sa.clone();
                s[i] = sb[i].clone();
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: segment {i} of B in A"),
                    &key,
                    &join(&ha, &s),
                    S,
                    &pt,
                    &Want::Is(Error::Authentication),
                    Upto::Exactly(i * S),
                );
            }
        }
    }
}

#[test]
fn stream_wrong_key_same_algorithm() {
    for (alg, key, wp) in keys() {
        let pt = plaintext(3 * S + 5);
        let ct = seal(wp, &key, S, &pt);
        let wrong = Key::generate(alg);
        expect_failure(
            &format!("{alg} by {wp:?}: wrong key"),
            &wrong,
            &ct,
            S,
            &pt,
            &Want::Is(Error::Authentication),
            Upto::Exactly(0),
        );
        // A key of another algorithm is refused by the header's algorithm
        // byte before any segment is tried.
        for other in Algorithm::ALL.into_iter().filter(|&o| o != alg) {
            expect_failure(
                &format!("{alg} by {wp:?}: key for {other}"),
                &Key::generate(other),
                &ct,
                S,
                &pt,
                &Want::Is(Error::AlgorithmMismatch {
                    stream: alg,
                    key: other,
                }),
                Upto::Exactly(0),
            );
        }
    }
}

#[test]
fn stream_key_of_another_algorithm_with_the_same_bytes() {
    let bytes = [0x42u8; 32];
    let k256 = Key::new(Algorithm::Aes256Gcm, &bytes).unwrap();
    let kcha = Key::new(Algorithm::ChaCha20Poly1305, &bytes).unwrap();
    let pt = plaintext(2 * S + 1);
    for (sealer, opener, wp) in [(&k256, &kcha), (&kcha, &k256)]
        .into_iter()
        .flat_map(|(s, o)| Provider::ALL.iter().map(move |&p| (s, o, p)))
    {
        let ct = seal(wp, sealer, S, &pt);
        expect_failure(
            &format!(
                "{} stream by {wp:?}, {} key",
                sealer.algorithm(),
                opener.algorithm()
            ),
            opener,
            &ct,
            S,
            &pt,
            &Want::Is(Error::AlgorithmMismatch {
                stream: sealer.algorithm(),
                key: opener.algorithm(),
            }),
            Upto::Exactly(0),
        );
    }
}

#[test]
fn stream_wrong_or_missing_associated_data() {
    for (alg, key, wp) in keys() {
        let pt = plaintext(3 * S + 5);
        let with = seal_with(wp, &key, S, b"context-A", &pt);
        let without = seal(wp, &key, S, &pt);
        expect_clean(
            &format!("{alg} by {wp:?}: right aad"),
            &key,
            b"context-A",
            &with,
            S,
            &pt,
        );
        for (what, stream, aad) in [
            ("wrong aad", &with, &b"context-B"[..]),
            ("aad one byte short", &with, &b"context-"[..]),
            ("missing aad", &with, &b""[..]),
            ("unexpected aad", &without, &b"context-A"[..]),
        ] {
            expect_failure_aad(
                &format!("{alg} by {wp:?}: {what}"),
                &key,
                aad,
                stream,
                S,
                &pt,
                &Want::Is(Error::Authentication),
                Upto::Exactly(0),
            );
        }
    }
}

#[test]
fn stream_segment_size_above_limit_is_refused_before_allocating() {
    let requests = |src: &ScriptReader<'_>| src.asks.iter().map(|a| a.1).collect::<Vec<_>>();
    // 16 MiB + 1 first: a reader without the check fails here cheaply,
    // before the u32::MAX case would make it allocate 4 GiB.
    let sizes = [
        u32::try_from(DEFAULT_MAX_SEGMENT_SIZE).unwrap() + 1,
        u32::MAX,
    ];
    for (alg, key) in algs() {
        for size in sizes {
            let header = Header::new(alg, size, [7; SALT_LEN], [9; 7]).to_bytes();
            let mut input = header.to_vec();
            input.extend(std::iter::repeat_n(0x5c, 64 * 1024));
            for (&rp, cap, chunk) in Provider::ALL.iter().flat_map(|p| {
                [1, 64, DEFAULT_CAPACITY]
                    .into_iter()
                    .flat_map(move |c| [usize::MAX, 1].map(|k| (p, c, k)))
            }) {
                for &front in Front::ALL {
                    let ctx = format!(
                        "{alg} {front:?} read by {rp:?}: segment size {size}, cap {cap}, chunk {chunk}"
                    );
                    let builder = CipherReader::builder(&key).provider(rp).capacity(cap);
                    let inner = ScriptReader::new(&input).max_per_call(chunk);
                    let mut r = front.build_reader(builder, inner);
                    let mut buf = vec![0u8; 4096];
                    let e = r.read(&mut buf).unwrap_err();
                    let ce = crate_error(&ctx, &e);
                    assert_eq!(
                        ce,
                        Error::SegmentTooLarge {
                            size: u64::from(size),
                            limit: u64::try_from(DEFAULT_MAX_SEGMENT_SIZE).unwrap(),
                        },
                        "{ctx}"
                    );
                    assert_eq!(e.kind(), ErrorKind::InvalidData, "{ctx}");
                    // Only the initial buffer was ever offered to the inner
                    // reader: nothing sized by the header was set up to read
                    // into, and no segment byte beyond that buffer was read.
                    let bound = cap + H;
                    let src = r.get_ref();
                    assert!(!requests(src).is_empty(), "{ctx}");
                    assert!(
                        requests(src).iter().all(|&n| n <= bound),
                        "{ctx}: inner reads asked for {:?}, more than the {bound}-byte initial buffer (capacity + header)",
                        requests(src)
                    );
                    assert!(src.pos <= bound, "{ctx}: consumed {} bytes", src.pos);
                    let calls = src.calls;
                    assert_sticky(&ctx, &mut r, &ce);
                    assert_eq!(
                        r.get_ref().calls,
                        calls,
                        "{ctx}: inner reads after the refusal"
                    );
                }
            }
        }
    }
}

#[test]
fn stream_custom_max_segment_size() {
    const SEG: usize = 2048;
    for (alg, key, wp) in keys() {
        for &front in Front::ALL {
            let pt = plaintext(2 * SEG + 7);
            let ct = seal(wp, &key, SEG, &pt);
            for limit in [1024, SEG - 1] {
                for (&rp, cap) in Provider::ALL
                    .iter()
                    .flat_map(|p| [64, DEFAULT_CAPACITY].map(|c| (p, c)))
                {
                    let ctx = format!(
                        "{alg} by {wp:?}, {front:?} read by {rp:?}: limit {limit}, cap {cap}"
                    );
                    let builder = CipherReader::builder(&key)
                        .provider(rp)
                        .capacity(cap)
                        .max_segment_size(limit);
                    let mut r = front.build_reader(builder, ScriptReader::new(&ct));
                    let mut out = Vec::new();
                    let e = r.read_to_end(&mut out).unwrap_err();
                    let ce = crate_error(&ctx, &e);
                    assert_eq!(
                        ce,
                        Error::SegmentTooLarge {
                            size: 2048,
                            limit: u64::try_from(limit).unwrap(),
                        },
                        "{ctx}"
                    );
                    assert!(out.is_empty(), "{ctx}");
                    let bound = cap + H;
                    assert!(
                        r.get_ref().asks.iter().all(|&(_, n)| n <= bound),
                        "{ctx}: inner reads asked for {:?}",
                        r.get_ref().asks
                    );
                    assert_sticky(&ctx, &mut r, &ce);
                }
            }
            for limit in [SEG, 4096] {
                for (&rp, cap) in Provider::ALL
                    .iter()
                    .flat_map(|p| [64, DEFAULT_CAPACITY].map(|c| (p, c)))
                {
                    let ctx = format!(
                        "{alg} by {wp:?}, {front:?} read by {rp:?}: limit {limit}, cap {cap}"
                    );
                    let builder = CipherReader::builder(&key)
                        .provider(rp)
                        .capacity(cap)
                        .max_segment_size(limit);
                    let mut r = front.build_reader(builder, &ct[..]);
                    let mut out = Vec::new();
                    r.read_to_end(&mut out)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert_eq!(out, pt, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn stream_short_non_final_segment() {
    for (alg, key, wp) in keys() {
        for len in [3 * S + 5, 3 * S] {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            for i in [1, 2] {
                for cut in [1, 5, S / 2, S] {
                    let r = Layout::native(S).seg_range(ct.len(), i);
                    let mid = r.start + (S - cut) / 2;
                    let mut bad = ct.clone();
                    bad.drain(mid..mid + cut);
                    expect_failure(
                        &format!("{alg} by {wp:?} len {len}: {cut} bytes cut from segment {i}"),
                        &key,
                        &bad,
                        S,
                        &pt,
                        &Want::Is(Error::Authentication),
                        Upto::Exactly(i * S),
                    );
                }
            }
        }
    }
}

/// Replaces header bytes of an otherwise valid stream and expects `err`
/// before any plaintext.
fn header_patch(patch: impl Fn(&mut [u8]), err: impl Fn(Algorithm) -> Error, what: &str) {
    for (alg, key, wp) in keys() {
        let pt = plaintext(3 * S + 5);
        let mut bad = seal(wp, &key, S, &pt);
        patch(&mut bad[..H]);
        expect_failure(
            &format!("{alg} by {wp:?}: {what}"),
            &key,
            &bad,
            S,
            &pt,
            &Want::Is(err(alg)),
            Upto::Exactly(0),
        );
    }
}

#[test]
fn stream_bad_magic() {
    header_patch(|h| h[0] = b'C', |_| Error::BadMagic, "magic Cipherio");
    header_patch(|h| h[7] = b'0', |_| Error::BadMagic, "magic cipheri0");
    header_patch(|h| h[..8].fill(0), |_| Error::BadMagic, "zero magic");
}

#[test]
fn stream_unsupported_version() {
    for v in [0u8, 3, 0xff] {
        header_patch(
            |h| h[8] = v,
            |_| Error::UnsupportedVersion(v),
            &format!("version {v}"),
        );
    }
}

/// Version 2 is the framed variant: a fixed-size stream relabelled as
/// framed (or the reverse) is never read as the other, since the version
/// byte is bound into the key: it fails, releasing nothing.
#[test]
fn stream_switched_between_fixed_and_framed_fails() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for framed in [false, true] {
        let mut b = CipherWriter::builder(&key).capacity(64);
        if framed {
            b = b.framed();
        }
        let mut w = b.build(Vec::new());
        w.write_all(&[5u8; 300]).unwrap();
        let mut ct = w.finish().unwrap();
        assert_eq!(ct[8], if framed { 2 } else { 1 });
        ct[8] = if framed { 1 } else { 2 };
        let mut r = CipherReader::new(&key, &ct[..]);
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).unwrap_err();
        assert!(
            out.is_empty(),
            "framed {framed}: released {} bytes",
            out.len()
        );
        assert!(Error::from_io(&e).is_some(), "framed {framed}: {e}");
        assert!(r.read(&mut [0u8; 8]).is_err(), "sticky");
    }
}

#[test]
fn stream_unknown_algorithm() {
    for id in [0u8, 4, 0x81, 0xff] {
        header_patch(
            |h| h[9] = id,
            |_| Error::UnknownAlgorithm(id),
            &format!("algorithm id {id}"),
        );
    }
}

#[test]
fn stream_zero_segment_size() {
    header_patch(
        |h| h[10..14].fill(0),
        |_| Error::ZeroSegmentSize,
        "segment size 0",
    );
}

#[test]
fn stream_empty_input() {
    for (alg, key) in algs() {
        expect_failure(
            &format!("{alg}: empty input"),
            &key,
            &[],
            S,
            &[],
            &Want::Is(Error::Truncated),
            Upto::Exactly(0),
        );
    }
}

#[test]
fn stream_header_only_and_header_plus_15_bytes() {
    for (alg, key, wp) in keys() {
        for len in [0, 3 * S + 5] {
            let pt = plaintext(len);
            let ct = seal(wp, &key, S, &pt);
            for extra in [0, 1, 15] {
                expect_failure(
                    &format!("{alg} by {wp:?} len {len}: header + {extra} bytes"),
                    &key,
                    &ct[..H + extra],
                    S,
                    &pt,
                    &Want::Is(Error::Truncated),
                    Upto::Exactly(0),
                );
            }
        }
    }
}

#[test]
fn stream_failed_read_leaves_no_plaintext_in_callers_buffer() {
    const SEG: usize = 32;
    for (alg, key, wp) in keys() {
        let pt = plaintext(3 * SEG + 5);
        let ct = seal(wp, &key, SEG, &pt);
        for i in 0..segment_count(pt.len(), SEG) {
            let r = Layout::native(SEG).seg_range(ct.len(), i);
            // A bad tag leaves the ciphertext intact: a reader that
            // decrypted before verifying would hold this segment's exact
            // plaintext.
            for (what, pos) in [("tag", r.end - 1), ("body", r.start)] {
                let mut bad = ct.clone();
                bad[pos] ^= 0x01;
                // Zero-copy (at least a segment) and small reads.
                for buf_len in [SEG, 4 * SEG + 1, SEG - 1] {
                    let ctx = format!(
                        "{alg} by {wp:?}: {what} of segment {i} flipped, reads of {buf_len}"
                    );
                    let (delivered, e) = read_watching_key(&ctx, &key, &bad, &pt, buf_len);
                    assert_eq!(e, Error::Authentication, "{ctx}");
                    assert_eq!(delivered, i * SEG, "{ctx}");
                }
            }
        }
        // A full-length final segment that authenticates but is followed by
        // bytes the reader already holds: its plaintext is released (it
        // authenticated; what the read-ahead held does not change what is
        // released), then the stream is refused, and no plaintext is left
        // in the caller's buffer past what was returned.
        for len in [SEG, 3 * SEG] {
            let pt = plaintext(len);
            let mut bad = seal(wp, &key, SEG, &pt);
            bad.push(0x5c);
            for buf_len in [SEG, 4 * SEG + 1, SEG - 1] {
                let ctx = format!("{alg} by {wp:?} len {len}: trailing byte, reads of {buf_len}");
                let (delivered, e) = read_watching_key(&ctx, &key, &bad, &pt, buf_len);
                assert_eq!(e, Error::TrailingData, "{ctx}");
                assert_eq!(delivered, len, "{ctx}");
            }
        }
    }
}
