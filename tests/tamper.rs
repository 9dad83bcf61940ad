//! One tamper suite for every format: the native fixed-size format, its
//! framed variant, and Tink's AES-GCM-HKDF and AES-CTR-HMAC streaming
//! formats ([`common::format`] describes each: how its streams are sealed,
//! where their segments lie, the error each attack must give there).
//!
//! Every stream is sealed by each provider in `Provider::ALL`, and every
//! damaged stream is read on every front (std, tokio) with every provider,
//! in several read patterns (`read_to_end`, 1-byte reads, reads of exactly
//! one segment, large reads that make the zero-copy path coalesce
//! segments, `BufRead`), several read-ahead / inner-read sizes, and into
//! watched buffers; every read must:
//!
//! * end in an error, never a clean end of stream;
//! * carry a `cipherio::Error` whose kind is `InvalidData` or `UnexpectedEof`
//!   (and the variant the format fixes for that attack);
//! * have returned only a prefix of the plaintext that ends on a segment
//!   boundary before the damaged segment (no byte of the damaged segment or
//!   any later one), and left none in the caller's buffers;
//! * stay failed: three more reads (of 0, 1 and many bytes) and a `fill_buf`
//!   all return the same error, never `Ok`.
//!
//! Streams use tiny segments so that looping over every byte stays cheap.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::ErrorKind;

use cipherio::format::{DEFAULT_MAX_SEGMENT_SIZE, HEADER_LEN, Header, SALT_LEN};
use cipherio::{Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key, Provider};
use common::format::{Format, Sealed};
use common::{
    Front, ReadMode, ScriptReader, Upto, Want, assert_sticky, crate_error, read_watching_everywhere,
};

const H: usize = HEADER_LEN;

/// Plaintext that never holds 0x00 (what a wipe leaves) nor 0xAA (what
/// the caller's buffer is filled with), so a leak is detectable.
fn plaintext(len: usize) -> Vec<u8> {
    common::data(len, 97)
}

/// Runs `case` on a stream of every format and length, sealed by every
/// provider.
fn each_stream(formats: &[Format], mut case: impl FnMut(&Sealed<'_>)) {
    for f in formats {
        for &len in &f.lengths {
            for &wp in Provider::ALL {
                case(&f.seal(wp, &plaintext(len)));
            }
        }
    }
}

/// [`each_stream`] over every format.
fn each(case: impl FnMut(&Sealed<'_>)) {
    each_stream(&Format::all(), case);
}

#[test]
fn untampered_streams_read_back_in_every_pattern() {
    each(|s| s.clean("untampered", &s.ct));
}

#[test]
fn every_single_byte_flip_fails_before_the_damaged_segment() {
    each(|s| {
        for pos in 0..s.ct.len() {
            // The format's masks, and every bit in turn along the stream.
            let mut masks = s.f.masks().to_vec();
            if !masks.contains(&(1 << (pos % 8))) {
                masks.push(1 << (pos % 8));
            }
            for mask in masks {
                let mut bad = s.ct.clone();
                bad[pos] ^= mask;
                let (want, upto) = s.flip_want(&bad, pos, mask);
                s.fail(&format!("byte {pos} ^ {mask:#04x}"), &bad, &want, upto);
            }
        }
    });
}

/// Every cut (at every byte, at and inside every segment boundary) ends
/// the stream early: exactly the segments wholly before the cut come out.
#[test]
fn every_truncation_fails() {
    each(|s| {
        for cut in 0..s.ct.len() {
            let whole = s.segs.iter().take_while(|r| r.end <= cut).count();
            let err = match s.segs.get(whole) {
                Some(r) if cut >= r.start => s.f.cut_error(cut - r.start),
                _ => Error::Truncated,
            };
            let what = format!("cut at {cut} of {}", s.ct.len());
            s.fail_is(&what, &s.ct[..cut], err, Upto::Exactly(s.before[whole]));
        }
    });
}

/// Empty input, the header alone and the header with 1 or 15 bytes:
/// truncated (a partial segment of at least a tag is opened as the final
/// one and fails to authenticate).
#[test]
fn short_inputs_fail() {
    each(|s| {
        s.fail_is("empty input", &[], Error::Truncated, Upto::Exactly(0));
        let h = s.header().len();
        for extra in [0, 1, 15].into_iter().filter(|e| h + e < s.ct.len()) {
            let what = format!("header + {extra} bytes");
            let err = s.f.cut_error(extra);
            s.fail_is(&what, &s.ct[..h + extra], err, Upto::Exactly(0));
        }
    });
}

fn bad_tag(segment: usize) {
    each(|s| {
        if s.n() <= segment {
            return;
        }
        let r = s.segs[segment].clone();
        for pos in [r.end - s.f.layout.tag, r.end - 1] {
            let mut bad = s.ct.clone();
            bad[pos] ^= 0x10;
            let what = format!("tag of segment {segment}, byte {pos}");
            let upto = Upto::Exactly(s.before[segment]);
            s.fail_is(&what, &bad, Error::Authentication, upto);
        }
    });
}

#[test]
fn bad_tag_in_first_segment() {
    bad_tag(0);
}

#[test]
fn bad_tag_in_later_segment() {
    bad_tag(2);
}

#[test]
fn dropped_segment() {
    each(|s| {
        let n = s.n();
        for i in 0..n {
            let mut segs = s.seg_bytes();
            segs.remove(i);
            // Without its final segment the stream ends at a boundary.
            let err = if i == n - 1 {
                Error::Truncated
            } else {
                Error::Authentication
            };
            let what = format!("segment {i} of {n} dropped");
            s.fail_is(&what, &s.join(&segs), err, Upto::Exactly(s.before[i]));
        }
    });
}

#[test]
fn swapped_segments() {
    each(|s| {
        for i in 0..s.n() {
            for j in i + 1..s.n() {
                let mut segs = s.seg_bytes();
                segs.swap(i, j);
                let what = format!("segments {i} and {j} swapped");
                let upto = Upto::Exactly(s.before[i]);
                s.fail_is(&what, &s.join(&segs), Error::Authentication, upto);
            }
        }
    });
}

#[test]
fn duplicated_segment() {
    each(|s| {
        // Every segment, the final one too (a repeated final is bytes
        // after it).
        for i in 0..s.n() {
            let mut segs = s.seg_bytes();
            segs.insert(i + 1, segs[i].clone());
            let bad = s.join(&segs);
            let what = format!("segment {i} duplicated");
            if i + 1 < s.n() {
                let upto = Upto::Exactly(s.before[i + 1]);
                s.fail_is(&what, &bad, Error::Authentication, upto);
            } else {
                s.fail_after_final(&what, &bad);
            }
        }
    });
}

/// Bytes after the final segment: junk, a copy of segment 0, the final
/// segment again (two final segments), another stream's final segment,
/// a well-sealed empty final segment (the fixed-size formats, sealed by
/// the oracle) or an empty final record's header (the framed variant).
#[test]
fn bytes_after_the_final_segment_are_refused() {
    each(|s| {
        let n = s.n();
        let other = s.f.seal(s.wp, &s.pt);
        let mut trailers: Vec<(&str, Vec<u8>)> = vec![
            ("1 zero byte", vec![0]),
            ("1 byte", vec![0x5c]),
            ("16 bytes", vec![0x5c; 16]),
            ("a copy of segment 0", s.seg(0).to_vec()),
            ("its own final segment", s.seg(n - 1).to_vec()),
            ("another stream's final segment", other.seg(n - 1).to_vec()),
        ];
        if s.f.is_framed() {
            let header = common::oracles::oracle_framed::record_header(0, true);
            trailers.push(("an empty final record's header", header.to_vec()));
        } else {
            let mut segs: Vec<(&[u8], bool)> = s
                .plain_segments()
                .into_iter()
                .enumerate()
                .map(|(i, p)| (p, i + 1 == n))
                .collect();
            segs.push((&[], true));
            let resealed = s.f.reseal(&s.ct, &s.aad, &segs);
            assert_eq!(resealed[..s.ct.len()], s.ct[..], "the oracle's stream");
            let empty = resealed[s.ct.len()..].to_vec();
            trailers.push(("a valid empty final segment", empty));
        }
        for (what, extra) in trailers {
            let bad = [s.ct.clone(), extra].concat();
            s.fail_after_final(&format!("{what} after the final segment"), &bad);
        }
    });
}

#[test]
fn spliced_header_or_segment_from_another_stream() {
    each(|s| {
        let b = s.f.seal(s.wp, &s.pt);
        let bad = s.join(&b.seg_bytes());
        let auth = Error::Authentication;
        s.fail_is(
            "header of A, segments of B",
            &bad,
            auth.clone(),
            Upto::Exactly(0),
        );
        for i in 0..s.n() {
            let mut segs = s.seg_bytes();
            segs[i] = b.seg(i).to_vec();
            let what = format!("segment {i} of B in A");
            let upto = Upto::Exactly(s.before[i]);
            s.fail_is(&what, &s.join(&segs), auth.clone(), upto);
        }
    });
}

/// A segment's tag replaced by another segment's (a real tag of this key,
/// of the right length): that segment fails to authenticate.
#[test]
fn tag_of_another_segment_is_refused() {
    each(|s| {
        let tag = s.f.layout.tag;
        for i in 0..s.n() {
            let j = (i + 1) % s.n();
            if j == i {
                continue;
            }
            let (ri, rj) = (s.segs[i].clone(), s.segs[j].clone());
            let mut bad = s.ct.clone();
            bad[ri.end - tag..ri.end].copy_from_slice(&s.ct[rj.end - tag..rj.end]);
            let what = format!("tag of segment {j} on segment {i}");
            let upto = Upto::Exactly(s.before[i]);
            s.fail_is(&what, &bad, Error::Authentication, upto);
        }
    });
}

/// Cuts of 1, 5, half a segment and a whole segment's plaintext length
/// from the middle of a non-final segment: it fails to authenticate.
#[test]
fn short_non_final_segment() {
    each_stream(&Format::fixed(), |s| {
        let plain = s.f.layout.rest;
        // Segments 1 and 2 where they are full (the final one too).
        for i in [1, 2] {
            if s.segs
                .get(i)
                .is_none_or(|r| r.len() < plain + s.f.layout.tag)
            {
                continue;
            }
            for cut in [1, 5, plain / 2, plain] {
                let r = s.segs[i].clone();
                let mid = r.start + (plain - cut) / 2;
                let mut bad = s.ct.clone();
                bad.drain(mid..mid + cut);
                let what = format!("{cut} bytes cut from segment {i}");
                let upto = Upto::Exactly(s.before[i]);
                s.fail_is(&what, &bad, Error::Authentication, upto);
            }
        }
    });
}

/// Header fields the format fixes, changed: refused before any plaintext
/// (a Tink header's length byte on that byte alone).
#[test]
fn changed_header_fields_are_refused() {
    each(|s| {
        for (what, at, bytes, want) in s.f.header_patches() {
            let mut bad = s.ct.clone();
            bad[at..at + bytes.len()].copy_from_slice(&bytes);
            s.fail(&what, &bad, &want, Upto::Exactly(0));
            if s.f.is_tink() {
                s.fail(
                    &format!("{what}, alone"),
                    &bad[..1],
                    &want,
                    Upto::Exactly(0),
                );
            }
        }
    });
}

/// Another key, a key of another algorithm, other Tink parameters: refused
/// before any plaintext, in a stream of several segments (a segment size
/// one off moves the first boundary).
#[test]
fn wrong_key_or_parameters_fail() {
    for f in Format::all() {
        for &wp in Provider::ALL {
            let s = f.seal(wp, &plaintext(f.lengths[0]));
            for (what, reader, want) in f.wrong_readers() {
                s.fail_with(&what, &reader, &s.aad, &s.ct, &want, Upto::Exactly(0));
            }
        }
    }
}

#[test]
fn wrong_or_missing_associated_data() {
    for f in Format::all() {
        for &wp in Provider::ALL {
            let pt = plaintext(f.lengths[0]);
            let with = f.seal_aad(wp, b"context-A", &pt);
            let without = f.seal_aad(wp, b"", &pt);
            with.clean_aad("right aad", b"context-A", &with.ct);
            let auth = Want::Is(Error::Authentication);
            for (what, s, aad) in [
                ("wrong aad", &with, &b"context-B"[..]),
                ("aad one byte short", &with, &b"context-"[..]),
                ("missing aad", &with, &b""[..]),
                ("unexpected aad", &without, &b"context-A"[..]),
            ] {
                s.fail_with(what, &f, aad, &s.ct, &auth, Upto::Exactly(0));
            }
        }
    }
}

/// The bytes an unfinished writer of a fixed-size format left in its
/// `Vec` after `pt` was written (as one `write_all` or byte by byte, with
/// or without `flush`): the segments followed by more data are sealed
/// and out, the last (possibly full) one waits for `finish`. Read, they
/// end early, after those segments.
#[test]
fn unfinished_writer_is_truncated() {
    for f in Format::fixed() {
        let l = f.layout;
        // One more than each boundary, half a segment, a full segment
        // held back as a possible final one.
        let mut lens: Vec<usize> = (0..=3).map(|k| l.plain_before(k) + 1).collect();
        lens.extend((0..=3).map(|k| l.plain_before(k) + l.plain(k) / 2));
        lens.extend((1..=3).map(|k| l.plain_before(k)));
        for len in lens {
            let pt = plaintext(len);
            let sealed = l.segments(len) - 1;
            for (&wp, bytewise, flush, &front) in Provider::ALL.iter().flat_map(|p| {
                [false, true].into_iter().flat_map(move |b| {
                    [false, true]
                        .into_iter()
                        .flat_map(move |fl| Front::ALL.iter().map(move |fr| (p, b, fl, fr)))
                })
            }) {
                let builder = f.writer(wp, b"");
                let mut w = front.build_writer(builder, Vec::new());
                if bytewise {
                    for b in &pt {
                        w.write_all(std::slice::from_ref(b)).unwrap();
                    }
                } else {
                    w.write_all(&pt).unwrap();
                }
                if flush {
                    w.flush().unwrap();
                }
                let out = w.get_ref().clone();
                drop(w);
                let what = format!(
                    "{front:?} unfinished after {len} bytes (bytewise {bytewise}, flush {flush})"
                );
                let want_len = if sealed == 0 { 0 } else { l.seg_start(sealed) };
                assert_eq!(
                    out.len(),
                    want_len,
                    "{}: {what}: whole segments only",
                    f.name
                );
                let s = f.sealed(wp, b"", &pt, f.seal(wp, &pt).ct);
                let upto = Upto::Exactly(l.plain_before(sealed));
                s.fail_is(&what, &out, Error::Truncated, upto);
            }
        }
    }
}

/// The stream's own segments resealed by the oracle with the last one's
/// flag cleared (what an unfinished writer of a full last segment would
/// leave): every segment authenticates and may be released; the end then
/// says it was cut. Followed by an empty final segment: the native format
/// refuses it (one encoding per plaintext); Tink readers accept it
/// (Tink writers never make it), but not junk after it nor an empty
/// segment sealed as non-final.
#[test]
fn full_last_segment_sealed_as_non_final() {
    let mut accepted = 0;
    each_stream(&Format::fixed(), |s| {
        if !s.f.layout.full_final(s.pt.len()) {
            return;
        }
        let mut segs: Vec<(&[u8], bool)> =
            s.plain_segments().into_iter().map(|p| (p, false)).collect();
        let upto = Upto::Either(s.before_last(), s.pt.len());
        let bad = s.f.reseal(&s.ct, &s.aad, &segs);
        assert_eq!(bad.len(), s.ct.len());
        s.fail_is("last segment non-final", &bad, Error::Truncated, upto);
        segs.push((&[], true));
        let odd = s.f.reseal(&s.ct, &s.aad, &segs);
        let what = "extra empty final segment";
        match s.f.empty_final_after_full() {
            Some(err) => s.fail_is(what, &odd, err, upto),
            None => {
                s.clean(what, &odd);
                let bad = [odd.clone(), vec![0x5c]].concat();
                let all = Upto::Exactly(s.pt.len());
                s.fail_is(
                    &format!("{what}, then 1 byte"),
                    &bad,
                    Error::Authentication,
                    all,
                );
                segs.last_mut().unwrap().1 = false;
                let bad = s.f.reseal(&s.ct, &s.aad, &segs);
                s.fail_is(
                    "extra empty non-final segment",
                    &bad,
                    Error::Authentication,
                    all,
                );
                accepted += 1;
            }
        }
    });
    assert!(
        accepted >= 6,
        "{accepted} Tink streams with a full final segment"
    );
}

/// A failed read leaves no plaintext in the caller's buffer, for small
/// and zero-copy reads: segment `i` with a bad tag or body releases
/// exactly the segments before it (a provider may decrypt a segment into
/// the caller's buffer before it checks the tag: only the wipe after a
/// failed open keeps it from the caller). A full-length final segment
/// that authenticates, followed by a byte the reader already holds, is
/// released (it authenticated; what the read-ahead held does not change
/// what is released), then the stream is refused.
#[test]
fn failed_read_leaves_no_plaintext_in_callers_buffer() {
    let mut formats = Format::fixed();
    // Segments of 64 bytes; Tink segments of 40 + 64.
    formats.extend(
        Algorithm::ALL
            .iter()
            .map(|&alg| Format::native_with_segment(alg, 0x40, 64)),
    );
    let p =
        cipherio::tink::AesGcmHkdfParams::new(16, 80, cipherio::tink::HkdfHash::Sha256).unwrap();
    formats.push(Format::tink(p, 3));
    for f in formats {
        let l = f.layout;
        let mut buf_lens = vec![
            l.first,
            l.rest,
            2 * l.rest + 1,
            4 * l.rest,
            4 * l.rest + 1,
            8 * l.rest,
            l.first - 1,
            l.rest - 1,
        ];
        buf_lens.retain(|&n| n > 0);
        buf_lens.sort_unstable();
        buf_lens.dedup();
        let reader = f.reader(b"");
        for &wp in Provider::ALL {
            let s = f.seal(wp, &plaintext(l.first + 2 * l.rest + 5));
            for i in 0..s.n() {
                let r = s.segs[i].clone();
                // A bad tag leaves the ciphertext intact: a reader that
                // decrypted before verifying would hold this segment's
                // exact plaintext.
                let places = [
                    ("tag end", r.end - 1),
                    ("tag start", r.end - l.tag),
                    ("body", r.start),
                ];
                for ((what, pos), mask) in places
                    .into_iter()
                    .flat_map(|p| [0x01u8, 0x04].map(|m| (p, m)))
                {
                    let mut bad = s.ct.clone();
                    bad[pos] ^= mask;
                    for &buf_len in &buf_lens {
                        let ctx = s.ctx(&format!(
                            "{what} of segment {i} ^ {mask:#04x}, reads of {buf_len}"
                        ));
                        let (got, e) =
                            read_watching_everywhere(&ctx, &reader, &bad, &s.pt, buf_len);
                        assert_eq!(e, Error::Authentication, "{ctx}");
                        assert_eq!(got, s.before[i], "{ctx}");
                    }
                }
            }
            for len in [l.first, l.first + 2 * l.rest] {
                let s = f.seal(wp, &plaintext(len));
                let bad = [s.ct.clone(), vec![0x5c]].concat();
                for &buf_len in &buf_lens {
                    let ctx = s.ctx(&format!("trailing byte, reads of {buf_len}"));
                    let (got, e) = read_watching_everywhere(&ctx, &reader, &bad, &s.pt, buf_len);
                    assert_eq!(e, Error::TrailingData, "{ctx}");
                    assert_eq!(got, len, "{ctx}");
                }
            }
        }
    }
}

/// Positions to damage in a large stream: the header, both ends of every
/// segment's body, every tag byte, and a pseudo-random sample.
fn sampled_positions(s: &Sealed<'_>) -> Vec<usize> {
    let mut v: Vec<usize> = (0..s.header().len()).collect();
    for r in &s.segs {
        let body_end = r.end - s.f.layout.tag;
        v.extend(r.start..(r.start + 3).min(body_end));
        v.extend(body_end.saturating_sub(3).max(r.start)..body_end);
        v.extend(body_end..r.end);
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(usize::try_from(x % u64::try_from(s.ct.len()).unwrap()).unwrap());
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Streams of 4 KiB segments, flipped at sampled positions (header bytes
/// by 0x01, segment bytes every bit in turn), each read in one pattern
/// chosen in turn and `read_to_end`: the same errors and releases as the
/// small streams' every-byte flips.
#[test]
fn sampled_flips_in_large_segments_fail() {
    let mut formats: Vec<Format> = Algorithm::ALL
        .iter()
        .map(|&alg| Format::native_with_segment(alg, 0x50, 4096))
        .collect();
    formats.push(Format::tink(
        cipherio::tink::AesGcmHkdfParams::AES128_GCM_HKDF_4KB,
        0x72,
    ));
    let modes = [
        ReadMode::ToEnd,
        ReadMode::Chunks(2 << 20),
        ReadMode::Chunks(7),
        ReadMode::FillBuf(5),
    ];
    for f in formats {
        let l = f.layout;
        for len in [l.first + 2 * l.rest + 5, l.first + l.rest, 0] {
            for &wp in Provider::ALL {
                let s = f.seal(wp, &plaintext(len));
                for (k, pos) in sampled_positions(&s).into_iter().enumerate() {
                    let mask = if pos < s.header().len() {
                        0x01
                    } else {
                        1u8 << (pos % 8)
                    };
                    let mut bad = s.ct.clone();
                    bad[pos] ^= mask;
                    let (want, upto) = s.flip_want(&bad, pos, mask);
                    let mut pats = vec![modes[k % modes.len()].clone()];
                    if pats[0] != ReadMode::ToEnd {
                        pats.push(ReadMode::ToEnd);
                    }
                    let what = format!("byte {pos} ^ {mask:#04x}");
                    let configs = [(DEFAULT_CAPACITY, usize::MAX)];
                    s.fail_in(&what, &configs, &pats, &bad, &want, upto);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// The native header's segment size against the reader's limit.
// ---------------------------------------------------------------------

/// A fresh key for every algorithm.
fn algs() -> impl Iterator<Item = (Algorithm, Key)> {
    Algorithm::ALL.iter().map(|&a| (a, Key::generate(a)))
}

/// A fresh key for every algorithm, with every provider to seal with.
fn keys() -> impl Iterator<Item = (Algorithm, Key, Provider)> {
    algs().flat_map(|(a, k)| Provider::ALL.iter().map(move |&p| (a, k.clone(), p)))
}

fn seal(wp: Provider, key: &Key, seg: usize, pt: &[u8]) -> Vec<u8> {
    let builder = CipherWriter::builder(key).provider(wp).capacity(seg);
    common::encrypt(Front::Std, builder, pt, &common::WriteMode::Fixed(7))
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
                    assert!(
                        matches!(ce, Error::SegmentTooLarge { size: s, limit, .. }
                            if s == u64::from(size)
                                && limit == u64::try_from(DEFAULT_MAX_SEGMENT_SIZE).unwrap()),
                        "{ctx}: {ce:?}"
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

/// A reader limit below the header's segment size refuses the stream
/// before any plaintext, having asked the inner reader for no more than
/// its initial buffer; a limit at or above it reads the stream back.
#[test]
fn stream_custom_max_segment_size() {
    const SEG: usize = 2048;
    for (alg, key, wp) in keys() {
        let pt = plaintext(2 * SEG + 7);
        let ct = seal(wp, &key, SEG, &pt);
        for (&front, &rp, cap, limit) in Front::ALL.iter().flat_map(|f| {
            Provider::ALL.iter().flat_map(move |p| {
                [64, DEFAULT_CAPACITY]
                    .into_iter()
                    .flat_map(move |c| [1024, SEG - 1, SEG, 4096].map(|l| (f, p, c, l)))
            })
        }) {
            let ctx =
                format!("{alg} by {wp:?}, {front:?} read by {rp:?}: limit {limit}, cap {cap}");
            let builder = CipherReader::builder(&key)
                .provider(rp)
                .capacity(cap)
                .max_segment_size(limit);
            let mut r = front.build_reader(builder, ScriptReader::new(&ct));
            let mut out = Vec::new();
            let res = r.read_to_end(&mut out);
            if limit >= SEG {
                res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(out, pt, "{ctx}");
                continue;
            }
            let ce = crate_error(&ctx, &res.unwrap_err());
            let limit = u64::try_from(limit).unwrap();
            assert!(
                matches!(ce, Error::SegmentTooLarge { size: 2048, limit: l, .. } if l == limit),
                "{ctx}: {ce:?}"
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
}
