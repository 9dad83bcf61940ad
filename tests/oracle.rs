//! The native v1 format against its one-shot oracle (`fuzz/src/oracle.rs`,
//! shared with the fuzz crate through `common::oracles`), written only from
//! the byte diagram in the crate documentation, using the AEAD, HKDF and
//! SHA-256 crates directly and none of cipherio's internals.
//!
//! The writer's output must be exactly what the oracle builds from the
//! same salt and nonce prefix, the oracle must decrypt it, and the reader
//! must decrypt what the oracle builds, whatever the chunking on either
//! side. Hand-built invalid streams must be refused with the right error.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, BufRead, Read, Write};

use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key};
use common::Trickle;
use common::oracles::oracle::{self, HEADER_LEN, Seg, TAG_LEN, spec_id, spec_key_len};
use proptest::prelude::*;

// ---------------------------------------------------------------------
// The oracle: the native format's one oracle (`common::oracles::oracle`,
// the fuzz crate's file), written from the documentation alone.
// ---------------------------------------------------------------------

/// The plaintext of a valid stream, or `Err` for anything a reader must
/// refuse.
fn oracle_decrypt(key: &[u8], aad: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, ()> {
    let d = oracle::decrypt(key, aad, ciphertext);
    if d.valid { Ok(d.released) } else { Err(()) }
}

// ---------------------------------------------------------------------
// Driving the crate.
// ---------------------------------------------------------------------

fn key_for(alg: Algorithm, seed: &[u8; 32]) -> (Key, Vec<u8>) {
    let bytes = seed[..spec_key_len(spec_id(alg)).unwrap()].to_vec();
    (Key::new(alg, &bytes).unwrap(), bytes)
}

fn write_chunked(key: &Key, aad: &[u8], wcap: usize, pt: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .capacity(wcap)
        .associated_data(aad)
        .build(Vec::new());
    let mut pos = 0;
    for &size in sizes.iter().cycle() {
        if pos == pt.len() {
            break;
        }
        let n = size.min(pt.len() - pos);
        w.write_all(&pt[pos..pos + n]).unwrap();
        pos += n;
    }
    w.finish().unwrap()
}

/// Reads the whole stream with the given read sizes (cycled), through
/// `read` or through `fill_buf`/`consume`.
fn read_chunked(
    key: &Key,
    aad: &[u8],
    rcap: usize,
    ct: &[u8],
    sizes: &[usize],
    bufread: bool,
) -> io::Result<Vec<u8>> {
    let mut r = CipherReader::builder(key)
        .capacity(rcap)
        .associated_data(aad)
        .build(ct);
    let mut out = Vec::new();
    for &size in sizes.iter().cycle() {
        if bufread {
            let avail = r.fill_buf()?;
            if avail.is_empty() {
                break;
            }
            let n = size.min(avail.len());
            out.extend_from_slice(&avail[..n]);
            r.consume(n);
        } else {
            let mut buf = vec![0u8; size];
            let n = r.read(&mut buf)?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
    Ok(out)
}

fn alg_strategy() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// CipherWriter's output, whatever the write chunking, is the one
    /// stream the format allows for its salt and prefix; the oracle and
    /// CipherReader (any capacity, any read sizes) decrypt it.
    #[test]
    fn writer_output_is_the_documented_stream(
        alg in alg_strategy(),
        seed in any::<[u8; 32]>(),
        aad in prop::collection::vec(any::<u8>(), 0..24),
        pt in prop::collection::vec(any::<u8>(), 0..5000),
        wcap in 1usize..600,
        shape in 0u8..3,
        wsizes in prop::collection::vec(1usize..1300, 1..8),
        rcap in 1usize..2000,
        rsizes in prop::collection::vec(1usize..1300, 1..8),
        bufread in any::<bool>(),
    ) {
        // Lengths that are exact multiples of the segment size (and one
        // short of them) are rare at random; make a third of each.
        let mut pt = pt;
        let whole = pt.len() / wcap * wcap;
        match shape {
            1 => pt.truncate(whole),
            2 => pt.truncate(whole.saturating_sub(1)),
            _ => {}
        }
        let (key, key_bytes) = key_for(alg, &seed);
        let ct = write_chunked(&key, &aad, wcap, &pt, &wsizes);

        prop_assert_eq!(oracle_decrypt(&key_bytes, &aad, &ct), Ok(pt.clone()));

        let salt: [u8; 32] = ct[14..46].try_into().unwrap();
        let prefix: [u8; 7] = ct[46..53].try_into().unwrap();
        let seg = u32::try_from(wcap).unwrap();
        let expected = oracle::encrypt(alg, &key_bytes, &aad, seg, &salt, &prefix, &pt);
        prop_assert!(expected == ct, "writer output differs from the oracle's stream");

        let out = read_chunked(&key, &aad, rcap, &ct, &rsizes, bufread).unwrap();
        prop_assert!(out == pt, "reader output differs from the plaintext");
    }

    /// CipherReader decrypts any stream built from the format description,
    /// whatever salt, prefix and segment size it has, with any capacity and
    /// read sizes.
    #[test]
    fn reader_decrypts_oracle_streams(
        alg in alg_strategy(),
        seed in any::<[u8; 32]>(),
        aad in prop::collection::vec(any::<u8>(), 0..24),
        pt in prop::collection::vec(any::<u8>(), 0..5000),
        seg in 1u32..600,
        exact in any::<bool>(),
        salt in any::<[u8; 32]>(),
        prefix in any::<[u8; 7]>(),
        rcap in 1usize..2000,
        rsizes in prop::collection::vec(1usize..1300, 1..8),
        bufread in any::<bool>(),
    ) {
        let mut pt = pt;
        if exact {
            pt.truncate(pt.len() / seg as usize * seg as usize);
        }
        let (key, key_bytes) = key_for(alg, &seed);
        let ct = oracle::encrypt(alg, &key_bytes, &aad, seg, &salt, &prefix, &pt);
        let segments = pt.len().div_ceil(seg as usize).max(1);
        prop_assert_eq!(ct.len(), HEADER_LEN + pt.len() + TAG_LEN * segments);
        prop_assert_eq!(oracle_decrypt(&key_bytes, &aad, &ct), Ok(pt.clone()));

        let out = read_chunked(&key, &aad, rcap, &ct, &rsizes, bufread).unwrap();
        prop_assert!(out == pt, "reader output differs from the plaintext");
    }
}

// ---------------------------------------------------------------------
// Fixed vectors.
// ---------------------------------------------------------------------

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn kat_salt() -> [u8; 32] {
    std::array::from_fn(|i| u8::try_from(0x20 + i).unwrap())
}

fn kat_prefix() -> [u8; 7] {
    std::array::from_fn(|i| u8::try_from(0xa0 + i).unwrap())
}

/// Vectors computed from the documented format with an independent
/// implementation (Python, pyca/cryptography: HKDF-SHA256, AESGCM,
/// ChaCha20Poly1305), not with this crate or the oracle above. Key bytes
/// are 00 01 02 ..., salt 20 21 ... 3f, nonce prefix a0 ... a6.
struct Kat {
    alg: Algorithm,
    aad: &'static [u8],
    segment_size: u32,
    plaintext: &'static [u8],
    ciphertext: &'static str,
}

const KATS: [Kat; 3] = [
    // Three segments (8, 8, 4), with associated data.
    Kat {
        alg: Algorithm::ChaCha20Poly1305,
        aad: b"cipherio kat",
        segment_size: 8,
        plaintext: b"The quick brown fox!",
        ciphertext: "636970686572696f010300000008202122232425262728292a2b2c2d2e2f303132\
                     333435363738393a3b3c3d3e3fa0a1a2a3a4a5a6001d9a045476429cd3cb7b74e4\
                     7af30d666421170a797c9d7db8bd85e7daf3d331792b623d4bdc0db3dc6411272c\
                     5acad559f169b6fadec8aac718414484fca4a4520ad6",
    },
    // Two full segments: the final one is full, no empty segment follows.
    Kat {
        alg: Algorithm::Aes128Gcm,
        aad: b"",
        segment_size: 5,
        plaintext: b"0123456789",
        ciphertext: "636970686572696f010100000005202122232425262728292a2b2c2d2e2f303132\
                     333435363738393a3b3c3d3e3fa0a1a2a3a4a5a605d8760a019911db7cc3b176ac\
                     81d019612dcb3c0818bb114bee723a79ec01a2ebb3c2f69de70e9345a0",
    },
    // The empty stream: one empty final segment.
    Kat {
        alg: Algorithm::Aes256Gcm,
        aad: b"x",
        segment_size: 8192,
        plaintext: b"",
        ciphertext: "636970686572696f010200002000202122232425262728292a2b2c2d2e2f303132\
                     333435363738393a3b3c3d3e3fa0a1a2a3a4a5a6bded8a78757a9b67d9c16fef8e\
                     c66c0c",
    },
];

fn kat_key(alg: Algorithm) -> (Key, Vec<u8>) {
    key_for(alg, &std::array::from_fn(|i| u8::try_from(i).unwrap()))
}

#[test]
fn known_answers_match_oracle_and_reader() {
    for kat in &KATS {
        let (key, key_bytes) = kat_key(kat.alg);
        let ct = unhex(kat.ciphertext);
        let built = oracle::encrypt(
            kat.alg,
            &key_bytes,
            kat.aad,
            kat.segment_size,
            &kat_salt(),
            &kat_prefix(),
            kat.plaintext,
        );
        assert!(built == ct, "{}: oracle differs from the vector", kat.alg);
        assert_eq!(
            oracle_decrypt(&key_bytes, kat.aad, &ct).as_deref(),
            Ok(kat.plaintext)
        );
        for rcap in [1, 21, 8192] {
            for sizes in [&[1usize][..], &[3, 8, 100], &[10_000]] {
                for bufread in [false, true] {
                    let out = read_chunked(&key, kat.aad, rcap, &ct, sizes, bufread).unwrap();
                    assert_eq!(out, kat.plaintext, "{} rcap {rcap} {sizes:?}", kat.alg);
                }
            }
        }
        // The writer, with the same key, segment size and associated data,
        // produces a stream of the same length and layout (its salt and
        // prefix are random), which the oracle reproduces exactly.
        let wct = write_chunked(
            &key,
            kat.aad,
            kat.segment_size as usize,
            kat.plaintext,
            &[3],
        );
        assert_eq!(wct.len(), ct.len());
        assert_eq!(
            &wct[..14],
            &ct[..14],
            "magic, version, algorithm, segment size"
        );
        let again = oracle::encrypt(
            kat.alg,
            &key_bytes,
            kat.aad,
            kat.segment_size,
            &wct[14..46],
            &wct[46..53],
            kat.plaintext,
        );
        assert!(again == wct, "{}: writer differs from the oracle", kat.alg);
    }
}

// ---------------------------------------------------------------------
// Invalid streams built by hand.
// ---------------------------------------------------------------------

/// One way of reading a stream: reader capacity, most bytes per inner
/// read, caller's read sizes (cycled), and `read` or `fill_buf`.
type Way = (usize, usize, &'static [usize], bool);

/// Reads `ct` to the end in several ways; every way must fail with
/// `expected`, having released no more than `max_released` plaintext
/// bytes, all of them a prefix of `authentic`, and must keep failing.
fn assert_refused(
    what: &str,
    key: &Key,
    aad: &[u8],
    ct: &[u8],
    expected: &Error,
    max_released: usize,
    authentic: &[u8],
) {
    const WAYS: [Way; 9] = [
        (1, usize::MAX, &[1], false),
        (7, usize::MAX, &[5], false),
        (8192, usize::MAX, &[8192], false),
        (1, usize::MAX, &[4], false),
        (13, usize::MAX, &[2, 9], true),
        (8192, usize::MAX, &[1], true),
        (8192, 1, &[3], false),
        (8192, 20, &[8192], false),
        (64, 9, &[4], true),
    ];
    for (rcap, max, sizes, bufread) in WAYS {
        let mut r = CipherReader::builder(key)
            .capacity(rcap)
            .associated_data(aad)
            .build(Trickle::new(ct, max));
        let how = format!("rcap {rcap}, inner reads <= {max}, reads {sizes:?}, bufread {bufread}");
        let mut out = Vec::new();
        let err = loop {
            if bufread {
                match r.fill_buf() {
                    Ok([]) => panic!("{what}: stream accepted ({how})"),
                    Ok(avail) => {
                        let n = sizes[out.len() % sizes.len()].min(avail.len());
                        out.extend_from_slice(&avail[..n]);
                        r.consume(n);
                    }
                    Err(e) => break e,
                }
            } else {
                let mut buf = vec![0u8; sizes[out.len() % sizes.len()]];
                match r.read(&mut buf) {
                    Ok(0) => panic!("{what}: stream accepted ({how})"),
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                    Err(e) => break e,
                }
            }
        };
        assert_eq!(Error::from_io(&err), Some(expected), "{what}: {how}: {err}");
        assert_eq!(err.kind(), expected.kind(), "{what}");
        assert!(
            out.len() <= max_released && authentic.starts_with(&out),
            "{what}: {how}: released {} bytes (at most {max_released} authentic ones allowed)",
            out.len()
        );
        // And the error stays.
        let again = r.read(&mut [0u8; 16]).unwrap_err();
        assert_eq!(
            Error::from_io(&again),
            Some(expected),
            "{what}: {how}: not sticky"
        );
    }
    let mut all = Vec::new();
    let err = CipherReader::builder(key)
        .associated_data(aad)
        .build(ct)
        .read_to_end(&mut all)
        .unwrap_err();
    assert_eq!(Error::from_io(&err), Some(expected), "{what}: read_to_end");
}

#[test]
fn hand_built_invalid_streams_are_refused() {
    let aad: &[u8] = b"ctx";
    let pt: &[u8] = b"abcdefghij"; // segments of 4: "abcd" "efgh" "ij"
    let (a, b, c) = (&pt[..4], &pt[4..8], &pt[8..]);
    let seg = |counter, last, pt| Seg { counter, last, pt };
    for &alg in Algorithm::ALL {
        let (key, key_bytes) = key_for(alg, &[0x42; 32]);
        let header = oracle::header(alg, 4, &kat_salt(), &kat_prefix());
        let build = |segs: &[Seg]| oracle::seal_segments(&header, &key_bytes, aad, segs);

        // The valid stream, to be sure the cases below differ only in
        // what they name.
        let valid = build(&[seg(0, false, a), seg(1, false, b), seg(2, true, c)]);
        assert_eq!(
            valid,
            oracle::encrypt(alg, &key_bytes, aad, 4, &kat_salt(), &kat_prefix(), pt)
        );
        let out = read_chunked(&key, aad, 1, &valid, &[1], false).unwrap();
        assert_eq!(out, pt);

        let last_segment_cases = [
            "non-final flag on the short last segment",
            "non-final flag on the full last segment (no final segment)",
            "empty final segment after a full one",
        ];
        let cases: Vec<(&str, Vec<u8>, Error, usize)> = vec![
            (
                "non-final flag on the short last segment",
                build(&[seg(0, false, a), seg(1, false, b), seg(2, false, c)]),
                Error::Authentication,
                8,
            ),
            (
                "non-final flag on the full last segment (no final segment)",
                build(&[seg(0, false, a), seg(1, false, b)]),
                Error::Truncated,
                8,
            ),
            (
                "counter starts at 1",
                build(&[seg(1, false, a), seg(2, false, b), seg(3, true, c)]),
                Error::Authentication,
                0,
            ),
            (
                "counter skips a segment",
                build(&[seg(0, false, a), seg(2, false, b), seg(3, true, c)]),
                Error::Authentication,
                4,
            ),
            (
                "segments swapped",
                build(&[seg(1, false, b), seg(0, false, a), seg(2, true, c)]),
                Error::Authentication,
                0,
            ),
            (
                "segment duplicated",
                build(&[
                    seg(0, false, a),
                    seg(0, false, a),
                    seg(1, false, b),
                    seg(2, true, c),
                ]),
                Error::Authentication,
                4,
            ),
            (
                "final flag on the first segment",
                build(&[seg(0, true, a), seg(1, false, b), seg(2, true, c)]),
                Error::TrailingData,
                4,
            ),
            (
                "final flag on a middle segment",
                build(&[seg(0, false, a), seg(1, true, b), seg(2, true, c)]),
                Error::TrailingData,
                8,
            ),
            (
                "empty final segment after a full one",
                build(&[seg(0, false, a), seg(1, false, b), seg(2, true, b"")]),
                Error::EmptyFinalSegment,
                8,
            ),
            (
                "bytes after a full final segment",
                {
                    let mut v = build(&[seg(0, false, a), seg(1, true, b)]);
                    v.push(0);
                    v
                },
                Error::TrailingData,
                8,
            ),
            ("header only, no segment", build(&[]), Error::Truncated, 0),
            (
                "fewer bytes than a tag after the last full segment",
                {
                    let mut v = build(&[seg(0, false, a), seg(1, false, b)]);
                    v.extend_from_slice(&[0; TAG_LEN - 1]);
                    v
                },
                Error::Truncated,
                8,
            ),
        ];
        for (what, ct, expected, max_released) in cases {
            let what = format!("{alg}: {what}");
            assert!(
                oracle_decrypt(&key_bytes, aad, &ct).is_err(),
                "{what}: the oracle accepts it"
            );
            assert_refused(&what, &key, aad, &ct, &expected, max_released, pt);
            if last_segment_cases.iter().any(|c| what.ends_with(c)) {
                // Damage to the segment that ends the source: the length
                // query and the positional reader, which open only that
                // segment, name it as reading does.
                let mut r = CipherReader::builder(&key)
                    .associated_data(aad)
                    .build(io::Cursor::new(&ct));
                let e = r.plaintext_len().unwrap_err();
                assert_eq!(Error::from_io(&e), Some(&expected), "{what}: plaintext_len");
                let e = CipherReader::builder(&key)
                    .associated_data(aad)
                    .build_at(&ct[..])
                    .unwrap_err();
                assert_eq!(Error::from_io(&e), Some(&expected), "{what}: build_at");
            }
        }

        // The header is in the key derivation: a valid stream under a
        // header whose segment size or prefix was changed afterwards fails
        // at the first segment (the reader would otherwise accept it).
        let mut other_size = valid.clone();
        other_size[13] = 5;
        let mut other_prefix = valid.clone();
        other_prefix[52] ^= 1;
        for (what, ct) in [("segment size", other_size), ("nonce prefix", other_prefix)] {
            assert_refused(
                &format!("{alg}: header {what} changed"),
                &key,
                aad,
                &ct,
                &Error::Authentication,
                0,
                pt,
            );
        }
    }
}
