//! The frozen native format's vector file, `tests/data/format_vectors.json`
//! (see FORMAT.md), and the generator that made it.
//!
//! - Every case goes through `CipherReader` with each provider and several
//!   fronts (a slice, a one-byte-at-a-time reader, a `BufRead` opened in
//!   place, threads): a positive case must give its plaintext and end
//!   cleanly, a negative one exactly its error (variant, fields and
//!   `io::ErrorKind`), sticky.
//! - `CipherWriter` writes exactly what FORMAT.md gives for a positive
//!   case's plaintext, capacity and flushes, for the salt and nonce prefix
//!   it drew: the public API cannot inject them, so its output is compared
//!   with the generator's encoder run on its own salt and prefix, and that
//!   encoder is the one that made the file's ciphertexts.
//! - The file is what the generator makes. `CIPHERIO_REGENERATE_VECTORS=1
//!   cargo test --test format_vectors` rewrites it (the file is frozen: a
//!   change to it is a change of the format, or a fix of a vector).
//!
//! The generator is written from FORMAT.md, sealing with the format's one
//! oracle per variant (the fuzz crate's files, through `common::oracles`:
//! the AEAD, HKDF and SHA-256 crates and none of cipherio's internals); every expected error is the one
//! FORMAT.md's reading rules give, stated here by hand, never taken from
//! the reader.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{self, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};

use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use common::Trickle;
use common::oracles::{oracle, oracle_framed};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/format_vectors.json"
);
const REGENERATE: &str = "CIPHERIO_REGENERATE_VECTORS";

// ---------------------------------------------------------------------
// The encoder, from FORMAT.md: the header's fields here, the sealing by
// each variant's one oracle.
// ---------------------------------------------------------------------

const MAGIC: &[u8; 8] = b"cipherio";
const HEADER_LEN: usize = 53;
const FIXED: u8 = 0x01;
const FRAMED: u8 = 0x02;
/// cipherio's default reader limit on the header's segment size.
const READER_LIMIT: u64 = 16 << 20;

fn alg_id(alg: Algorithm) -> u8 {
    match alg {
        Algorithm::Aes128Gcm => 0x01,
        Algorithm::Aes256Gcm => 0x02,
        Algorithm::ChaCha20Poly1305 => 0x03,
        _ => panic!("{alg} is not in FORMAT.md"),
    }
}

fn alg_of_id(id: u8) -> Algorithm {
    match id {
        0x01 => Algorithm::Aes128Gcm,
        0x02 => Algorithm::Aes256Gcm,
        0x03 => Algorithm::ChaCha20Poly1305,
        _ => panic!("no algorithm {id}"),
    }
}

fn key_len(alg: Algorithm) -> usize {
    if alg == Algorithm::Aes128Gcm { 16 } else { 32 }
}

/// The header's fields.
#[derive(Clone)]
struct Head {
    version: u8,
    alg: u8,
    segment_size: u32,
    salt: [u8; 32],
    prefix: [u8; 7],
}

impl Head {
    fn bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8] = self.version;
        h[9] = self.alg;
        h[10..14].copy_from_slice(&self.segment_size.to_be_bytes());
        h[14..46].copy_from_slice(&self.salt);
        h[46..].copy_from_slice(&self.prefix);
        h
    }

    fn framed(&self) -> bool {
        self.version == FRAMED
    }
}

/// One segment (or record) as sealed: any index, flag and length, so that
/// streams the format refuses can be built too.
#[derive(Clone)]
struct Unit {
    index: u32,
    last: bool,
    pt: Vec<u8>,
}

/// The units as a writer numbers them: 0, 1, …, the last one final.
fn numbered(pts: Vec<Vec<u8>>) -> Vec<Unit> {
    let n = pts.len();
    pts.into_iter()
        .enumerate()
        .map(|(i, pt)| Unit {
            index: u32::try_from(i).unwrap(),
            last: i + 1 == n,
            pt,
        })
        .collect()
}

/// Each unit sealed on its own (a record with its record header first).
fn seal_each(head: &Head, key: &[u8], aad: &[u8], units: &[Unit]) -> Vec<Vec<u8>> {
    units
        .iter()
        .map(|u| seal(head, key, aad, std::slice::from_ref(u))[HEADER_LEN..].to_vec())
        .collect()
}

/// The header followed by the units, sealed by the variant's oracle
/// (`common::oracles`, written from FORMAT.md).
fn seal(head: &Head, key: &[u8], aad: &[u8], units: &[Unit]) -> Vec<u8> {
    let h = head.bytes();
    if head.framed() {
        let recs: Vec<oracle_framed::Rec> = units
            .iter()
            .map(|u| oracle_framed::Rec {
                counter: u.index,
                last: u.last,
                pt: &u.pt,
            })
            .collect();
        oracle_framed::seal(&h, key, aad, &recs)
    } else {
        let segs: Vec<oracle::Seg> = units
            .iter()
            .map(|u| oracle::Seg {
                counter: u.index,
                last: u.last,
                pt: &u.pt,
            })
            .collect();
        oracle::seal_segments(&h, key, aad, &segs)
    }
}

/// The fixed variant's segments for a plaintext (FORMAT.md 6.1).
fn fixed_units(pt: &[u8], s: u32) -> Vec<Unit> {
    if pt.is_empty() {
        return numbered(vec![Vec::new()]);
    }
    numbered(pt.chunks(s as usize).map(<[u8]>::to_vec).collect())
}

/// The records cipherio's writer makes (FORMAT.md, Appendix A.2): `pt` written with
/// a flush after each offset of `flush_at`, then finished.
fn framed_units(pt: &[u8], s: u32, flush_at: &[usize]) -> Vec<Unit> {
    let mut pts = Vec::new();
    let mut from = 0;
    for &at in flush_at {
        // A flush seals what is buffered (records of at most s bytes),
        // nothing when nothing is.
        pts.extend(pt[from..at].chunks(s as usize).map(<[u8]>::to_vec));
        from = at;
    }
    let rest = &pt[from..];
    if rest.is_empty() {
        pts.push(Vec::new());
    } else {
        pts.extend(rest.chunks(s as usize).map(<[u8]>::to_vec));
    }
    numbered(pts)
}

// ---------------------------------------------------------------------
// The generator.
// ---------------------------------------------------------------------

/// Deterministic bytes for a label.
fn bytes(label: &str, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut counter = 0u32;
    while out.len() < len {
        let mut h = Sha256::new();
        h.update(label.as_bytes());
        h.update(counter.to_be_bytes());
        out.extend_from_slice(&h.finalize());
        counter += 1;
    }
    out.truncate(len);
    out
}

fn key_for(alg: Algorithm) -> Vec<u8> {
    bytes(&format!("cipherio format vectors: key {alg}"), key_len(alg))
}

fn short(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::Aes128Gcm => "aes128gcm",
        Algorithm::Aes256Gcm => "aes256gcm",
        _ => "chacha20poly1305",
    }
}

const AAD: &[u8] = b"cipherio format vectors";

/// A stream's header for a case: salt and prefix from its id.
fn head(version: u8, alg: Algorithm, s: u32, id: &str) -> Head {
    Head {
        version,
        alg: alg_id(alg),
        segment_size: s,
        salt: bytes(&format!("{id}: salt"), 32).try_into().unwrap(),
        prefix: bytes(&format!("{id}: nonce prefix"), 7).try_into().unwrap(),
    }
}

fn error(variant: &str, fields: Value) -> (String, Value) {
    (variant.to_owned(), fields)
}

fn plain_error(variant: &str) -> (String, Value) {
    error(variant, json!({}))
}

fn kind_of(variant: &str) -> &'static str {
    if variant == "Truncated" {
        "UnexpectedEof"
    } else {
        "InvalidData"
    }
}

struct Gen {
    cases: Vec<Value>,
}

impl Gen {
    #[allow(clippy::too_many_arguments)]
    fn positive(
        &mut self,
        id: String,
        alg: Algorithm,
        key: &[u8],
        aad: &[u8],
        head: &Head,
        pt: &[u8],
        units: &[Unit],
        flush_at: Option<&[usize]>,
        note: &str,
    ) -> &mut Value {
        let ct = seal(head, key, aad, units);
        let mut case = json!({
            "id": id,
            "kind": "positive",
            "variant": if head.framed() { "framed" } else { "fixed" },
            "algorithm": alg.to_string(),
            "key": hex::encode(key),
            "aad": hex::encode(aad),
            "header": {
                "version": head.version,
                "algorithm": head.alg,
                "segment_size": head.segment_size,
                "salt": hex::encode(head.salt),
                "nonce_prefix": hex::encode(head.prefix),
            },
            "plaintext": hex::encode(pt),
            "ciphertext": hex::encode(&ct),
            "writer": flush_at.is_some() || !head.framed(),
            "note": note,
        });
        if head.framed() {
            case["records"] = units
                .iter()
                .map(|u| json!({"len": u.pt.len(), "final": u.last}))
                .collect();
            if let Some(f) = flush_at {
                case["flush_at"] = json!(f);
            }
        }
        self.cases.push(case);
        self.cases.last_mut().unwrap()
    }

    #[allow(clippy::too_many_arguments)]
    fn negative(
        &mut self,
        id: String,
        key_alg: Algorithm,
        key: &[u8],
        aad: &[u8],
        variant: &str,
        ct: &[u8],
        (err, fields): (String, Value),
        released: &[u8],
        note: &str,
    ) -> &mut Value {
        self.cases.push(json!({
            "id": id,
            "kind": "negative",
            "variant": variant,
            "algorithm": key_alg.to_string(),
            "key": hex::encode(key),
            "aad": hex::encode(aad),
            "ciphertext": hex::encode(ct),
            "error": err,
            "error_fields": fields,
            "io_error_kind": kind_of(&err),
            "released": hex::encode(released),
            "note": note,
        }));
        self.cases.last_mut().unwrap()
    }
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn flipped(ct: &[u8], at: usize, mask: u8) -> Vec<u8> {
    let mut v = ct.to_vec();
    v[at] ^= mask;
    v
}

fn generate() -> Value {
    let mut g = Gen { cases: Vec::new() };
    documented(&mut g);
    for &alg in Algorithm::ALL {
        positives(&mut g, alg);
        fixed_negatives(&mut g, alg);
        framed_negatives(&mut g, alg);
        header_negatives(&mut g, alg);
        changed_header_negatives(&mut g, alg);
        limit_cases(&mut g, alg);
        index_cases(&mut g, alg);
    }
    json!({
        "format": "cipherio native format v1 (FORMAT.md), fixed-size segments (version byte 1) and framed records (version byte 2)",
        "generator": "tests/format_vectors.rs (CIPHERIO_REGENERATE_VECTORS=1 cargo test --test format_vectors)",
        "reader_max_segment_size": READER_LIMIT,
        "fields": {
            "key": "the caller's key (hex), for `algorithm`",
            "aad": "the associated data given to the writer and the reader (hex)",
            "ciphertext": "the whole input (hex)",
            "plaintext": "positive cases: what a reader must return, ending cleanly (hex)",
            "header": "positive cases: the header's fields, for a writer with its salt and nonce prefix injected",
            "writer": "positive cases: whether cipherio's writer makes exactly this ciphertext (fixed: with capacity = segment_size; framed: flushing after each offset of flush_at)",
            "records": "framed positive cases: each record's plaintext length and final flag",
            "error": "negative cases: the cipherio::Error variant the reader must give",
            "error_fields": "the variant's fields (algorithms by name)",
            "io_error_kind": "the io::ErrorKind it travels in",
            "released": "negative cases: the longest plaintext a streaming reader may release before the error (hex)",
            "reader_max_segment_size": "optional: the reader's limit on the header's segment size for this case (default: the file's)",
            "first_index": "optional: the index of the body's first segment, where the reader starts counting (default 0)"
        },
        "cases": g.cases,
    })
}

/// The two worked examples of FORMAT.md (and of the crate documentation).
fn documented(g: &mut Gen) {
    let alg = Algorithm::ChaCha20Poly1305;
    let key: Vec<u8> = (0..32).collect();
    let kat = |version| Head {
        version,
        alg: 0x03,
        segment_size: 8,
        salt: std::array::from_fn(|i| 0x20 + u8::try_from(i).unwrap()),
        prefix: std::array::from_fn(|i| 0xa0 + u8::try_from(i).unwrap()),
    };
    let pt = b"The quick brown fox!";
    g.positive(
        "documented/fixed".into(),
        alg,
        &key,
        b"cipherio kat",
        &kat(FIXED),
        pt,
        &fixed_units(pt, 8),
        None,
        "FORMAT.md's worked example: segments of 8, 8 and 4 bytes",
    );
    let pt = b"hello world!";
    g.positive(
        "documented/framed".into(),
        alg,
        &key,
        b"cipherio framed kat",
        &kat(FRAMED),
        pt,
        &framed_units(pt, 8, &[5]),
        Some(&[5]),
        "FORMAT.md's framed example: \"hello\" flushed, then \" world!\" and finish",
    );
}

fn positives(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    // (name, segment size, plaintext length, with aad, note)
    let fixed: &[(&str, u32, usize, bool, &str)] = &[
        (
            "empty",
            8,
            0,
            false,
            "the empty stream: one empty final segment (index 0)",
        ),
        (
            "empty-aad",
            8,
            0,
            true,
            "the empty stream, with associated data",
        ),
        ("one-byte", 8, 1, false, "one byte: one short final segment"),
        ("segment-minus-1", 8, 7, true, "one short final segment"),
        (
            "one-full-segment",
            8,
            8,
            true,
            "exactly one segment: a full-length final segment, no empty one after it",
        ),
        (
            "segment-plus-1",
            8,
            9,
            true,
            "a full segment, then a 1-byte final one",
        ),
        (
            "two-full-segments",
            8,
            16,
            true,
            "an exact multiple: the final segment is full-length",
        ),
        ("three-segments", 8, 20, true, "8 + 8 + 4"),
        (
            "five-full-segments",
            8,
            40,
            false,
            "an exact multiple of five segments",
        ),
        ("segment-size-1", 1, 5, true, "1-byte segments"),
        (
            "segment-size-13",
            13,
            100,
            true,
            "an odd segment size: 7 full segments and 9 bytes",
        ),
        (
            "segment-size-4096",
            4096,
            8193,
            true,
            "4 KiB segments: 4096 + 4096 + 1",
        ),
        (
            "default-capacity-exact",
            8192,
            8192,
            false,
            "the writer's default capacity, one full-length final segment",
        ),
    ];
    for &(name, s, len, with_aad, note) in fixed {
        let id = format!("{a}/fixed/{name}");
        let pt = bytes(&format!("{id}: plaintext"), len);
        let aad = if with_aad { AAD } else { b"" };
        let h = head(FIXED, alg, s, &id);
        g.positive(
            id,
            alg,
            &key,
            aad,
            &h,
            &pt,
            &fixed_units(&pt, s),
            None,
            note,
        );
    }
    {
        let id = format!("{a}/fixed/long-aad");
        let pt = bytes(&format!("{id}: plaintext"), 30);
        let aad = bytes(&format!("{id}: aad"), 300);
        let h = head(FIXED, alg, 8, &id);
        let note = "300 bytes of associated data (in the HKDF info after the header)";
        g.positive(
            id,
            alg,
            &key,
            &aad,
            &h,
            &pt,
            &fixed_units(&pt, 8),
            None,
            note,
        );
    }
    // (name, segment size, plaintext length, flushes, note)
    let framed: &[(&str, u32, usize, &[usize], &str)] = &[
        (
            "empty",
            8,
            0,
            &[],
            "the empty framed stream: one empty final record",
        ),
        ("one-record", 8, 5, &[], "one final record"),
        (
            "flush-then-finish",
            8,
            12,
            &[5],
            "a flush seals record 0 (5 bytes); finish the final record (7)",
        ),
        (
            "flush-then-empty-final",
            8,
            5,
            &[5],
            "a flush, then finish with nothing buffered: an empty final record after a non-empty one, valid when framed",
        ),
        (
            "split-at-capacity",
            8,
            20,
            &[],
            "records of the capacity: 8 + 8 + 4 (final)",
        ),
        ("exact-multiple", 8, 16, &[], "8 + 8 (final, full-length)"),
        (
            "full-record-flushed",
            8,
            8,
            &[8],
            "a full record sealed by a flush, then an empty final record",
        ),
        (
            "several-flushes",
            8,
            30,
            &[3, 3, 19, 27],
            "flushes at 3, 3 (nothing buffered: no record), 19 (16 bytes: two records), 27; then 3 bytes final",
        ),
        ("segment-size-1", 1, 4, &[2], "1-byte records"),
        (
            "segment-size-4096",
            4096,
            5000,
            &[100],
            "a flush after 100 bytes; then 4096 and 804 (final)",
        ),
    ];
    for &(name, s, len, flush_at, note) in framed {
        let id = format!("{a}/framed/{name}");
        let pt = bytes(&format!("{id}: plaintext"), len);
        let h = head(FRAMED, alg, s, &id);
        let units = framed_units(&pt, s, flush_at);
        g.positive(id, alg, &key, AAD, &h, &pt, &units, Some(flush_at), note);
    }
    {
        let id = format!("{a}/framed/no-aad");
        let pt = bytes(&format!("{id}: plaintext"), 12);
        let h = head(FRAMED, alg, 8, &id);
        let units = framed_units(&pt, 8, &[5]);
        let note = "a flush after 5 bytes, then 7 final, with empty associated data";
        g.positive(id, alg, &key, b"", &h, &pt, &units, Some(&[5]), note);
    }
    {
        // Records cipherio's writer never makes, which a reader accepts.
        let id = format!("{a}/framed/empty-non-final-records");
        let pt = bytes(&format!("{id}: plaintext"), 9);
        let h = head(FRAMED, alg, 8, &id);
        let units = numbered(vec![
            Vec::new(),
            pt[..4].to_vec(),
            Vec::new(),
            pt[4..].to_vec(),
        ]);
        let note = "empty non-final records (records 0 and 2): valid, a reader delivers nothing for them; cipherio's writer never makes one";
        g.positive(id, alg, &key, AAD, &h, &pt, &units, None, note);
    }
}

fn fixed_negatives(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    let v = "fixed";
    // The base stream: 8 + 8 + 4 bytes; sealed segments of 24, 24, 20.
    let id = format!("{a}/fixed/base");
    let h = head(FIXED, alg, 8, &id);
    let pt = bytes(&format!("{id}: plaintext"), 20);
    let segs = seal_each(&h, k, AAD, &fixed_units(&pt, 8));
    let hb = h.bytes();
    let base = cat(&[&hb, &segs[0], &segs[1], &segs[2]]);
    let (s0, s1) = (HEADER_LEN, HEADER_LEN + 24);
    let s2 = s1 + 24;
    // An exact multiple: 8 + 8, the final segment full-length.
    let idx = format!("{a}/fixed/exact");
    let hx = head(FIXED, alg, 8, &idx);
    let ptx = bytes(&format!("{idx}: plaintext"), 16);
    let sx = seal_each(&hx, k, AAD, &fixed_units(&ptx, 8));
    let exact = cat(&[&hx.bytes(), &sx[0], &sx[1]]);
    // The empty stream.
    let idz = format!("{a}/fixed/empty");
    let hz = head(FIXED, alg, 8, &idz);
    let empty = seal(&hz, k, AAD, &fixed_units(&[], 8));

    let auth = || plain_error("Authentication");
    let trunc = || plain_error("Truncated");
    let mut neg = |name: &str, ct: &[u8], e: (String, Value), released: &[u8], note: &str| {
        g.negative(
            format!("{a}/fixed/{name}"),
            alg,
            k,
            AAD,
            v,
            ct,
            e,
            released,
            note,
        );
    };

    // Truncation.
    neg(
        "truncated-to-nothing",
        b"",
        trunc(),
        &[],
        "the empty input (H1)",
    );
    neg(
        "truncated-in-magic",
        &base[..5],
        trunc(),
        &[],
        "5 bytes, a prefix of the magic (H1)",
    );
    neg(
        "truncated-in-header",
        &base[..40],
        trunc(),
        &[],
        "40 bytes of the header (H3)",
    );
    neg(
        "header-only",
        &base[..HEADER_LEN],
        trunc(),
        &[],
        "the header and no segment",
    );
    neg(
        "truncated-after-segment-0",
        &base[..s1],
        trunc(),
        &pt[..8],
        "cut at a segment boundary, after non-final segment 0",
    );
    neg(
        "truncated-after-segment-1",
        &base[..s2],
        trunc(),
        &pt[..16],
        "cut at a segment boundary, after non-final segment 1",
    );
    neg(
        "truncated-in-segment-15-left",
        &base[..s1 + 15],
        trunc(),
        &pt[..8],
        "cut 15 bytes into segment 1: fewer than 16 bytes left",
    );
    neg(
        "truncated-in-segment-16-left",
        &base[..s1 + 16],
        auth(),
        &pt[..8],
        "cut 16 bytes into segment 1: opened as a final segment, fails",
    );
    neg(
        "truncated-in-segment-20-left",
        &base[..s1 + 20],
        auth(),
        &pt[..8],
        "cut 20 bytes into segment 1: opened as a final segment, fails",
    );
    neg(
        "truncated-final-by-1",
        &base[..base.len() - 1],
        auth(),
        &pt[..16],
        "the final segment's last byte missing",
    );
    neg(
        "truncated-final-15-left",
        &base[..s2 + 15],
        trunc(),
        &pt[..16],
        "15 bytes of the final segment",
    );
    neg(
        "exact-truncated-after-segment-0",
        &exact[..s1],
        trunc(),
        &ptx[..8],
        "an exact multiple cut after its first segment, which is not final",
    );
    neg(
        "empty-stream-truncated-tag",
        &empty[..empty.len() - 1],
        trunc(),
        &[],
        "the empty stream missing its tag's last byte: 15 bytes left",
    );

    // Order.
    neg(
        "reordered",
        &cat(&[&hb, &segs[1], &segs[0], &segs[2]]),
        auth(),
        &[],
        "segments 0 and 1 swapped",
    );
    neg(
        "duplicated",
        &cat(&[&hb, &segs[0], &segs[0], &segs[1], &segs[2]]),
        auth(),
        &pt[..8],
        "segment 0 twice",
    );
    neg(
        "dropped-middle",
        &cat(&[&hb, &segs[0], &segs[2]]),
        auth(),
        &pt[..8],
        "segment 1 dropped",
    );
    neg(
        "duplicated-full-final",
        &cat(&[&exact, &sx[1]]),
        plain_error("TrailingData"),
        &ptx,
        "an exact multiple with its full-length final segment twice: the first copy opens as final, then input follows",
    );
    neg(
        "duplicated-short-final",
        &cat(&[&base, &segs[2]]),
        auth(),
        &pt[..16],
        "the short final segment twice: the reader takes the first 24 bytes of the two as one segment",
    );
    let other = head(FIXED, alg, 8, &format!("{a}/fixed/other"));
    let osegs = seal_each(&other, k, AAD, &fixed_units(&pt, 8));
    neg(
        "spliced",
        &cat(&[&hb, &segs[0], &osegs[1], &segs[2]]),
        auth(),
        &pt[..8],
        "segment 1 taken from another stream of the same key (another salt)",
    );

    // The header.
    neg(
        "flipped-magic",
        &flipped(&base, 0, 0x01),
        plain_error("BadMagic"),
        &[],
        "bit 0 of the magic's first byte (H2)",
    );
    neg(
        "bad-magic-short",
        b"ciphX",
        plain_error("BadMagic"),
        &[],
        "5 bytes that are not a prefix of the magic (H2)",
    );
    neg(
        "not-cipherio",
        &bytes("not cipherio", 100),
        plain_error("BadMagic"),
        &[],
        "100 bytes of something else (H2)",
    );
    neg(
        "flipped-version",
        &flipped(&base, 8, 0x01),
        error("UnsupportedVersion", json!({"version": 0})),
        &[],
        "version byte 0x00 (H4)",
    );
    neg(
        "version-3",
        &flipped(&base, 8, 0x02),
        error("UnsupportedVersion", json!({"version": 3})),
        &[],
        "version byte 0x03 (H4)",
    );
    {
        let mut t = base[..20].to_vec();
        t[8] = 0x09;
        neg(
            "bad-version-truncated",
            &t,
            trunc(),
            &[],
            "20 bytes with version byte 0x09: the header is incomplete, so H3 comes first",
        );
    }
    {
        // Read as framed: segment 0's first 4 bytes are a record header.
        let ct = flipped(&base, 8, 0x03);
        let v32 = u32::from_be_bytes(base[s0..s0 + 4].try_into().unwrap());
        let len = v32 & 0x7fff_ffff;
        assert!(
            len > 8,
            "choose another salt: the record length must exceed 8"
        );
        let e = error("SegmentTooLarge", json!({"size": len, "limit": 8}));
        neg(
            "version-changed-to-framed",
            &ct,
            e,
            &[],
            "version byte 0x02: read as framed, segment 0's first 4 bytes are taken as a record header whose length exceeds the segment size",
        );
    }
    neg(
        "algorithm-unknown",
        &flipped(&base, 9, 0x04),
        error("UnknownAlgorithm", json!({"id": alg_id(alg) ^ 0x04})),
        &[],
        "algorithm byte with bit 2 flipped (H5)",
    );
    {
        let id = if alg_id(alg) == 0x02 { 0x03 } else { 0x02 };
        let mut ct = base.clone();
        ct[9] = id;
        let e = error(
            "AlgorithmMismatch",
            json!({"stream": alg_of_id(id).to_string(), "key": alg.to_string()}),
        );
        neg(
            "algorithm-changed",
            &ct,
            e,
            &[],
            "the algorithm byte names another known algorithm (H8)",
        );
    }
    neg(
        "flipped-segment-size",
        &flipped(&base, 13, 0x01),
        auth(),
        &[],
        "segment size 9: another stream key, segment 0 fails",
    );
    {
        let mut ct = base.clone();
        ct[10..14].copy_from_slice(&[0; 4]);
        neg(
            "segment-size-zero",
            &ct,
            plain_error("ZeroSegmentSize"),
            &[],
            "segment size 0 (H6)",
        );
        let over = u32::try_from(READER_LIMIT + 1).unwrap();
        ct[10..14].copy_from_slice(&over.to_be_bytes());
        let e = error(
            "SegmentTooLarge",
            json!({"size": READER_LIMIT + 1, "limit": READER_LIMIT}),
        );
        neg(
            "segment-size-over-limit",
            &ct,
            e,
            &[],
            "segment size 16 MiB + 1, above the default reader limit (H7)",
        );
        let at = u32::try_from(READER_LIMIT).unwrap();
        ct[10..14].copy_from_slice(&at.to_be_bytes());
        neg(
            "segment-size-at-limit",
            &ct,
            auth(),
            &[],
            "segment size 16 MiB, at the limit: accepted, but another stream key (the body is opened as one short final segment)",
        );
    }
    neg(
        "flipped-salt",
        &flipped(&base, 14, 0x80),
        auth(),
        &[],
        "a salt bit",
    );
    neg(
        "flipped-nonce-prefix",
        &flipped(&base, 52, 0x01),
        auth(),
        &[],
        "a nonce prefix bit",
    );

    // Body and tags.
    neg(
        "flipped-body",
        &flipped(&base, s1, 0x01),
        auth(),
        &pt[..8],
        "the first ciphertext bit of segment 1",
    );
    neg(
        "flipped-tag-segment-0",
        &flipped(&base, s1 - 1, 0x80),
        auth(),
        &[],
        "the last byte of segment 0's tag",
    );
    neg(
        "flipped-tag-final",
        &flipped(&base, base.len() - 1, 0x01),
        auth(),
        &pt[..16],
        "the final segment's last tag byte",
    );
    neg(
        "empty-stream-flipped-tag",
        &flipped(&empty, HEADER_LEN, 0x01),
        auth(),
        &[],
        "the empty stream's tag",
    );

    // Segments sealed against the rules.
    let units = |spec: &[(u32, bool, usize)]| -> Vec<Unit> {
        spec.iter()
            .map(|&(index, last, n)| Unit {
                index,
                last,
                pt: pt[..n].to_vec(),
            })
            .collect()
    };
    let sealed = |spec: &[(u32, bool, usize)]| seal(&h, k, AAD, &units(spec));
    neg(
        "empty-final-after-full",
        &sealed(&[(0, false, 8), (1, false, 8), (2, true, 0)]),
        plain_error("EmptyFinalSegment"),
        &cat(&[&pt[..8], &pt[..8]]),
        "two full segments, then an empty final segment (well sealed): refused, one encoding per plaintext",
    );
    {
        let ct = sealed(&[(0, false, 8), (1, true, 0)]);
        neg(
            "empty-final-after-full-flipped",
            &flipped(&ct, ct.len() - 1, 0x01),
            auth(),
            &pt[..8],
            "an empty final segment after a full one, its tag damaged: authentication comes first",
        );
    }
    neg(
        "last-segment-not-final",
        &sealed(&[(0, false, 8), (1, false, 8)]),
        trunc(),
        &cat(&[&pt[..8], &pt[..8]]),
        "two full segments, neither final: a writer that never finished",
    );
    neg(
        "short-segment-not-final",
        &sealed(&[(0, false, 8), (1, false, 4)]),
        auth(),
        &pt[..8],
        "a short last segment sealed as non-final",
    );
    neg(
        "final-flag-on-segment-0",
        &sealed(&[(0, true, 8), (1, true, 8)]),
        plain_error("TrailingData"),
        &pt[..8],
        "segment 0 full-length and sealed as final, more follows",
    );
    neg(
        "short-segment-in-the-middle",
        &sealed(&[(0, false, 4), (1, true, 8)]),
        auth(),
        &[],
        "a short non-final segment 0: the reader takes 24 bytes as segment 0",
    );
    neg(
        "counter-from-1",
        &sealed(&[(1, false, 8), (2, false, 8), (3, true, 4)]),
        auth(),
        &[],
        "segments numbered from 1",
    );
    neg(
        "empty-stream-not-final",
        &sealed(&[(0, false, 0)]),
        auth(),
        &[],
        "an empty segment 0 sealed as non-final",
    );

    // Trailing bytes.
    neg(
        "trailing-byte-after-full-final",
        &cat(&[&exact, &[0]]),
        plain_error("TrailingData"),
        &ptx,
        "one byte after a full-length final segment",
    );
    neg(
        "trailing-byte-after-short-final",
        &cat(&[&base, &[0]]),
        auth(),
        &pt[..16],
        "one byte after a short final segment: the final segment is taken to be one byte longer and fails",
    );
    neg(
        "trailing-bytes-after-short-final",
        &cat(&[&base, &[0; 10]]),
        auth(),
        &pt[..16],
        "ten bytes after a short final segment: the reader takes 24 bytes as a full segment, which fails as both",
    );
    neg(
        "empty-stream-trailing-byte",
        &cat(&[&empty, &[0]]),
        auth(),
        &[],
        "one byte after the empty stream's segment",
    );

    // Keys and associated data.
    let mut neg_with = |name: &str, key_alg: Algorithm, key: &[u8], aad: &[u8], e, note: &str| {
        g.negative(
            format!("{a}/fixed/{name}"),
            key_alg,
            key,
            aad,
            v,
            &base,
            e,
            &[],
            note,
        );
    };
    neg_with(
        "wrong-aad",
        alg,
        k,
        b"cipherio format vectorz",
        auth(),
        "other associated data",
    );
    neg_with("missing-aad", alg, k, b"", auth(), "no associated data");
    let wrong = bytes(&format!("{a}: wrong key"), key_len(alg));
    neg_with(
        "wrong-key",
        alg,
        &wrong,
        AAD,
        auth(),
        "another key of the same algorithm",
    );
    let other_alg = if alg == Algorithm::ChaCha20Poly1305 {
        Algorithm::Aes128Gcm
    } else {
        Algorithm::ChaCha20Poly1305
    };
    let e = error(
        "AlgorithmMismatch",
        json!({"stream": alg.to_string(), "key": other_alg.to_string()}),
    );
    neg_with(
        "key-of-another-algorithm",
        other_alg,
        &key_for(other_alg),
        AAD,
        e,
        "a key of another algorithm (H8)",
    );
}

fn framed_negatives(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    let v = "framed";
    // F: "hello"-sized record 0 flushed, then 7 bytes final: records of
    // 4 + 5 + 16 = 25 and 4 + 7 + 16 = 27 bytes.
    let id = format!("{a}/framed/base");
    let h = head(FRAMED, alg, 8, &id);
    let pt = bytes(&format!("{id}: plaintext"), 20);
    let recs = seal_each(&h, k, AAD, &framed_units(&pt[..12], 8, &[5]));
    let hb = h.bytes();
    let base = cat(&[&hb, &recs[0], &recs[1]]);
    let r1 = HEADER_LEN + 25;
    // G: 8 + 8 + 4 (final), no flush.
    let idg = format!("{a}/framed/three");
    let hg = head(FRAMED, alg, 8, &idg);
    let gr = seal_each(&hg, k, AAD, &framed_units(&pt, 8, &[]));
    let hgb = hg.bytes();
    let three = cat(&[&hgb, &gr[0], &gr[1], &gr[2]]);
    let idz = format!("{a}/framed/empty");
    let hz = head(FRAMED, alg, 8, &idz);
    let empty = seal(&hz, k, AAD, &framed_units(&[], 8, &[]));

    let auth = || plain_error("Authentication");
    let trunc = || plain_error("Truncated");
    let mut neg = |name: &str, ct: &[u8], e: (String, Value), released: &[u8], note: &str| {
        g.negative(
            format!("{a}/framed/{name}"),
            alg,
            k,
            AAD,
            v,
            ct,
            e,
            released,
            note,
        );
    };

    neg(
        "header-only",
        &base[..HEADER_LEN],
        trunc(),
        &[],
        "the header and no record",
    );
    neg(
        "truncated-in-record-header",
        &base[..HEADER_LEN + 2],
        trunc(),
        &[],
        "2 bytes of record 0's header",
    );
    neg(
        "truncated-after-record-0",
        &base[..r1],
        trunc(),
        &pt[..5],
        "cut at a record boundary, after non-final record 0",
    );
    neg(
        "truncated-in-record-body",
        &base[..r1 + 4 + 3],
        trunc(),
        &pt[..5],
        "cut inside record 1's ciphertext",
    );
    neg(
        "truncated-in-record-20-left",
        &base[..r1 + 20],
        trunc(),
        &pt[..5],
        "cut 20 bytes into record 1 (27 bytes): lengths are explicit, so never Authentication",
    );
    neg(
        "truncated-final-by-1",
        &base[..base.len() - 1],
        trunc(),
        &pt[..5],
        "the final record's last byte missing",
    );
    neg(
        "empty-stream-truncated",
        &empty[..empty.len() - 1],
        trunc(),
        &[],
        "the empty framed stream missing its tag's last byte",
    );
    {
        let mut ct = hb.to_vec();
        ct.extend_from_slice(&0x8000_0000u32.to_be_bytes());
        neg(
            "final-record-header-only",
            &ct,
            trunc(),
            &[],
            "an empty final record's header and no tag",
        );
    }

    neg(
        "reordered",
        &cat(&[&hgb, &gr[1], &gr[0], &gr[2]]),
        auth(),
        &[],
        "records 0 and 1 swapped",
    );
    neg(
        "duplicated",
        &cat(&[&hgb, &gr[0], &gr[0], &gr[1], &gr[2]]),
        auth(),
        &pt[..8],
        "record 0 twice",
    );
    neg(
        "dropped-middle",
        &cat(&[&hgb, &gr[0], &gr[2]]),
        auth(),
        &pt[..8],
        "record 1 dropped",
    );
    neg(
        "duplicated-final",
        &cat(&[&three, &gr[2]]),
        plain_error("TrailingData"),
        &pt,
        "the final record twice",
    );
    let other = head(FRAMED, alg, 8, &format!("{a}/framed/other"));
    let orecs = seal_each(&other, k, AAD, &framed_units(&pt, 8, &[]));
    neg(
        "spliced",
        &cat(&[&hgb, &gr[0], &orecs[1], &gr[2]]),
        auth(),
        &pt[..8],
        "record 1 taken from another stream of the same key",
    );

    {
        // Record headers changed.
        let mut ct = base.clone();
        ct[HEADER_LEN + 3] = 9;
        let e = error("SegmentTooLarge", json!({"size": 9, "limit": 8}));
        neg(
            "record-length-over-segment-size",
            &ct,
            e,
            &[],
            "record 0's length changed to 9, above the segment size 8",
        );
        ct[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        let e = error(
            "SegmentTooLarge",
            json!({"size": 0x7fff_ffffu32, "limit": 8}),
        );
        neg(
            "record-length-max",
            &ct,
            e,
            &[],
            "record 0's length 2^31 - 1",
        );
        let mut ct = base.clone();
        ct[HEADER_LEN + 3] = 4;
        neg(
            "record-length-shortened",
            &ct,
            auth(),
            &[],
            "record 0's length 5 changed to 4",
        );
    }
    neg(
        "final-flag-set-on-record-0",
        &flipped(&base, HEADER_LEN, 0x80),
        auth(),
        &[],
        "record 0's final bit set",
    );
    neg(
        "final-flag-cleared",
        &flipped(&base, r1, 0x80),
        auth(),
        &pt[..5],
        "the final record's final bit cleared",
    );
    neg(
        "flipped-body",
        &flipped(&base, HEADER_LEN + 4, 0x01),
        auth(),
        &[],
        "record 0's first ciphertext bit",
    );
    neg(
        "flipped-tag",
        &flipped(&base, base.len() - 1, 0x01),
        auth(),
        &pt[..5],
        "the final record's last tag byte",
    );
    neg(
        "flipped-salt",
        &flipped(&base, 20, 0x01),
        auth(),
        &[],
        "a salt bit",
    );
    neg(
        "flipped-segment-size",
        &flipped(&base, 13, 0x01),
        auth(),
        &[],
        "segment size 9: another stream key",
    );
    {
        // Read as fixed: 52 bytes of body, segments of 24.
        let ct = flipped(&base, 8, 0x03);
        neg(
            "version-changed-to-fixed",
            &ct,
            auth(),
            &[],
            "version byte 0x01: read as fixed-size segments under another stream key",
        );
    }

    let units = |spec: &[(u32, bool, usize)]| -> Vec<Unit> {
        let mut from = 0;
        spec.iter()
            .map(|&(index, last, n)| {
                let u = Unit {
                    index,
                    last,
                    pt: pt[from..from + n].to_vec(),
                };
                from += n;
                u
            })
            .collect()
    };
    let sealed = |spec: &[(u32, bool, usize)]| seal(&h, k, AAD, &units(spec));
    neg(
        "no-final-record",
        &sealed(&[(0, false, 5), (1, false, 7)]),
        trunc(),
        &pt[..12],
        "two records, neither final: a writer that never finished",
    );
    neg(
        "two-final-records",
        &sealed(&[(0, true, 5), (1, true, 7)]),
        plain_error("TrailingData"),
        &pt[..5],
        "record 0 final too: input follows it",
    );
    neg(
        "counter-from-1",
        &sealed(&[(1, false, 5), (2, true, 7)]),
        auth(),
        &[],
        "records numbered from 1",
    );
    neg(
        "trailing-byte",
        &cat(&[&base, &[0]]),
        plain_error("TrailingData"),
        &pt[..12],
        "one byte after the final record",
    );
    neg(
        "empty-stream-trailing-record",
        &cat(&[&empty, &recs[1]]),
        plain_error("TrailingData"),
        &[],
        "a record after the empty stream's final record",
    );

    let mut neg_with = |name: &str, key: &[u8], aad: &[u8], note: &str| {
        g.negative(
            format!("{a}/framed/{name}"),
            alg,
            key,
            aad,
            v,
            &base,
            auth(),
            &[],
            note,
        );
    };
    neg_with("wrong-aad", k, b"", "no associated data");
    let wrong = bytes(&format!("{a}: wrong key"), key_len(alg));
    neg_with(
        "wrong-key",
        &wrong,
        AAD,
        "another key of the same algorithm",
    );
}

/// An algorithm id other than `alg`'s that names a known algorithm.
fn other_known(alg: Algorithm) -> u8 {
    if alg_id(alg) == 0x02 { 0x03 } else { 0x02 }
}

/// A header field broken against one of the rules H4–H8: the rule, what
/// is written where, and the error it alone gives.
struct Breach {
    rule: &'static str,
    at: usize,
    bytes: Vec<u8>,
    error: (String, Value),
}

fn breaches(alg: Algorithm, framed: bool) -> Vec<Breach> {
    let (version, unknown) = if framed { (0xff, 0xff) } else { (0x00, 0x00) };
    let over = u32::try_from(READER_LIMIT + 1).unwrap();
    let other = other_known(alg);
    vec![
        Breach {
            rule: "H4",
            at: 8,
            bytes: vec![version],
            error: error("UnsupportedVersion", json!({"version": version})),
        },
        Breach {
            rule: "H5",
            at: 9,
            bytes: vec![unknown],
            error: error("UnknownAlgorithm", json!({"id": unknown})),
        },
        Breach {
            rule: "H6",
            at: 10,
            bytes: vec![0; 4],
            error: plain_error("ZeroSegmentSize"),
        },
        Breach {
            rule: "H7",
            at: 10,
            bytes: over.to_be_bytes().to_vec(),
            error: error(
                "SegmentTooLarge",
                json!({"size": over, "limit": READER_LIMIT}),
            ),
        },
        Breach {
            rule: "H8",
            at: 9,
            bytes: vec![other],
            error: error(
                "AlgorithmMismatch",
                json!({"stream": alg_of_id(other).to_string(), "key": alg.to_string()}),
            ),
        },
    ]
}

fn broken(ct: &[u8], b: &Breach) -> Vec<u8> {
    let mut v = ct.to_vec();
    v[b.at..b.at + b.bytes.len()].copy_from_slice(&b.bytes);
    v
}

/// The header rules on both variants: each of H4–H8 alone, every pair of
/// them broken at once (the earlier rule's error), each of them in a
/// header cut short (H3 first), and bad magic in inputs of 8 to 52 bytes
/// (H2 before H3).
fn header_negatives(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    for framed in [false, true] {
        let v = if framed { "framed" } else { "fixed" };
        let id = format!("{a}/{v}/header-base");
        let h = head(if framed { FRAMED } else { FIXED }, alg, 8, &id);
        let pt = bytes(&format!("{id}: plaintext"), 12);
        let units = if framed {
            framed_units(&pt, 8, &[5])
        } else {
            fixed_units(&pt, 8)
        };
        let base = seal(&h, k, AAD, &units);
        let mut neg = |name: String, ct: &[u8], e: (String, Value), note: String| {
            g.negative(format!("{a}/{v}/{name}"), alg, k, AAD, v, ct, e, &[], &note);
        };
        let all = breaches(alg, framed);
        for b in &all {
            let ct = broken(&base, b);
            let name = b.rule.to_lowercase();
            let note = format!("{} broken alone", b.rule);
            neg(format!("{name}-alone"), &ct, b.error.clone(), note);
            let note = format!(
                "{} broken in a header cut to 20 bytes: H3 comes first",
                b.rule
            );
            neg(
                format!("{name}-in-short-header"),
                &ct[..20],
                plain_error("Truncated"),
                note,
            );
        }
        for (i, first) in all.iter().enumerate() {
            for second in &all[i + 1..] {
                if first.at == second.at {
                    // One field cannot break two rules at once.
                    continue;
                }
                let ct = broken(&broken(&base, first), second);
                let (r1, r2) = (first.rule, second.rule);
                let name = format!("{}-and-{}", r1.to_lowercase(), r2.to_lowercase());
                let note = format!("{r1} and {r2} broken: {r1} comes first");
                neg(name, &ct, first.error.clone(), note);
            }
        }
        for (n, at) in [(8, 0), (8, 7), (9, 0), (20, 3), (52, 0)] {
            let ct = flipped(&base[..n], at, 0x01);
            let note = format!("{n} bytes, magic byte {at} changed: H2 comes before H3");
            neg(
                format!("bad-magic-{n}-bytes-at-{at}"),
                &ct,
                plain_error("BadMagic"),
                note,
            );
        }
        let note = "7 bytes, a prefix of the magic (H1)".to_owned();
        neg(
            "magic-prefix-7-bytes".into(),
            &base[..7],
            plain_error("Truncated"),
            note,
        );
    }
}

/// Streams whose changed header passes H1–H8 and fails in the body before
/// any segment opens, on a rule that does not need the stream key.
fn changed_header_negatives(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    // Framed, records of 5 and 7 bytes; segment size 8 changed to 4.
    let id = format!("{a}/framed/shrunk");
    let h = head(FRAMED, alg, 8, &id);
    let pt = bytes(&format!("{id}: plaintext"), 12);
    let mut ct = seal(&h, k, AAD, &framed_units(&pt, 8, &[5]));
    ct[10..14].copy_from_slice(&4u32.to_be_bytes());
    let e = error("SegmentTooLarge", json!({"size": 5, "limit": 4}));
    let note =
        "segment size 8 changed to 4: record 0's 5 bytes exceed it before any record is opened";
    g.negative(
        format!("{a}/framed/segment-size-below-record-0"),
        alg,
        k,
        AAD,
        "framed",
        &ct,
        e,
        &[],
        note,
    );
    // Fixed, 16 MiB segments, 20 bytes; version byte set to 2: read as
    // framed, segment 0's first 4 bytes name a record longer than the input.
    let limit = u32::try_from(READER_LIMIT).unwrap();
    let pt = bytes(&format!("{a}/fixed/16mib: plaintext"), 20);
    let ct = (0..)
        .map(|n| {
            let h = head(FIXED, alg, limit, &format!("{a}/fixed/16mib/{n}"));
            let mut ct = seal(&h, k, AAD, &fixed_units(&pt, limit));
            ct[8] = FRAMED;
            ct
        })
        .find(|ct| {
            let v = u32::from_be_bytes(ct[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap());
            let len = v & 0x7fff_ffff;
            len <= limit && (len as usize) + 20 > ct.len() - HEADER_LEN
        })
        .unwrap();
    let note = "16 MiB segments, version byte changed to 2: read as framed, segment 0's first 4 bytes name a record of at most 16 MiB that the input does not hold";
    g.negative(
        format!("{a}/fixed/16mib-version-changed-to-framed"),
        alg,
        k,
        AAD,
        "fixed",
        &ct,
        plain_error("Truncated"),
        &[],
        note,
    );
}

/// Reader limits other than the default: 8 bytes (a header at it is read,
/// one above it refused), and 2^32 − 1, under which a framed header's
/// segment size is still capped at 2^31 − 1 by the record length field.
fn limit_cases(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    let max = u64::from(u32::MAX);
    let record_max = (1u32 << 31) - 1;
    // (variant, segment size, reader limit, error, note)
    let mib16 = u32::try_from(READER_LIMIT).unwrap();
    let cases = [
        (
            FIXED,
            mib16,
            READER_LIMIT,
            None,
            "segment size 16 MiB, which every reader must accept",
        ),
        (
            FRAMED,
            mib16,
            READER_LIMIT,
            None,
            "segment size 16 MiB, which every reader must accept",
        ),
        (
            FIXED,
            8,
            8,
            None,
            "segment size 8 under a reader limit of 8: accepted",
        ),
        (
            FIXED,
            9,
            8,
            Some(error("SegmentTooLarge", json!({"size": 9, "limit": 8}))),
            "segment size 9 under a reader limit of 8 (H7), the stream otherwise sound",
        ),
        (
            FRAMED,
            8,
            8,
            None,
            "segment size 8 under a reader limit of 8: accepted",
        ),
        (
            FRAMED,
            9,
            8,
            Some(error("SegmentTooLarge", json!({"size": 9, "limit": 8}))),
            "segment size 9 under a reader limit of 8 (H7), the stream otherwise sound",
        ),
        (
            FRAMED,
            record_max,
            max,
            None,
            "segment size 2^31 - 1, the largest a framed header may have, under a reader limit of 2^32 - 1",
        ),
        (
            FRAMED,
            1 << 31,
            max,
            Some(error(
                "SegmentTooLarge",
                json!({"size": 1u64 << 31, "limit": record_max}),
            )),
            "framed segment size 2^31 under a reader limit of 2^32 - 1: over the framed cap 2^31 - 1 (H7)",
        ),
        (
            FIXED,
            1 << 31,
            max,
            None,
            "fixed segment size 2^31 under a reader limit of 2^32 - 1: fixed segments have no cap below the limit",
        ),
    ];
    for (version, s, limit, err, note) in cases {
        let v = if version == FRAMED { "framed" } else { "fixed" };
        let id = format!("{a}/{v}/segment-size-{s}-limit-{limit}");
        let h = head(version, alg, s, &id);
        let pt = bytes(&format!("{id}: plaintext"), 12);
        let units = if version == FRAMED {
            framed_units(&pt, s, &[5])
        } else {
            fixed_units(&pt, s)
        };
        let case = match err {
            None if version == FRAMED => {
                g.positive(id, alg, k, AAD, &h, &pt, &units, Some(&[5]), note)
            }
            None => g.positive(id, alg, k, AAD, &h, &pt, &units, None, note),
            Some(e) => {
                let ct = seal(&h, k, AAD, &units);
                g.negative(id, alg, k, AAD, v, &ct, e, &[], note)
            }
        };
        case["reader_max_segment_size"] = json!(limit);
        if u64::from(s) > READER_LIMIT {
            case["writer"] = json!(false);
        }
    }
}

/// The segment index limit: streams read from a segment index near 2^32
/// on (`first_index`), as a reader sees them after a seek.
fn index_cases(g: &mut Gen, alg: Algorithm) {
    let a = short(alg);
    let key = key_for(alg);
    let k = &key[..];
    let id = format!("{a}/fixed/index-limit");
    let h = head(FIXED, alg, 8, &id);
    let pt = bytes(&format!("{id}: plaintext"), 12);
    let top = u32::MAX;
    let unit = |index, last, range: std::ops::Range<usize>| Unit {
        index,
        last,
        pt: pt[range].to_vec(),
    };
    let case = g.positive(
        format!("{a}/fixed/last-index"),
        alg,
        k,
        AAD,
        &h,
        &pt,
        &[unit(top - 1, false, 0..8), unit(top, true, 8..12)],
        None,
        "segments 2^32 - 2 and 2^32 - 1 (final): the last index a stream may use",
    );
    case["first_index"] = json!(top - 1);
    case["writer"] = json!(false);
    let last_full = seal(&h, k, AAD, &[unit(top, false, 0..8)]);
    // What follows segment 2^32 - 1: bytes sealed as a segment 0 (final),
    // which a reader whose counter wrapped around would accept.
    let wrapped_full = &seal_each(&h, k, AAD, &[unit(0, true, 0..8)])[0];
    let wrapped_short = &seal_each(&h, k, AAD, &[unit(0, true, 8..12)])[0];
    let cases: [(&str, &[u8], &str, &str); 3] = [
        (
            "past-last-index-full",
            wrapped_full,
            "TooManySegments",
            "segment 2^32 - 1 (not final), then a full-length segment at index 2^32",
        ),
        (
            "past-last-index-short",
            wrapped_short,
            "TooManySegments",
            "segment 2^32 - 1 (not final), then a short segment at index 2^32",
        ),
        (
            "past-last-index-under-16",
            &wrapped_short[..10],
            "Truncated",
            "segment 2^32 - 1 (not final), then 10 bytes: fewer than 16 left comes before the index",
        ),
    ];
    for (name, tail, err, note) in cases {
        let ct = cat(&[&last_full, tail]);
        let case = g.negative(
            format!("{a}/fixed/{name}"),
            alg,
            k,
            AAD,
            "fixed",
            &ct,
            plain_error(err),
            &pt[..8],
            note,
        );
        case["first_index"] = json!(top);
    }
}

// ---------------------------------------------------------------------
// Reading the file.
// ---------------------------------------------------------------------

fn load() -> Value {
    let text = std::fs::read_to_string(FILE).unwrap_or_else(|e| panic!("{FILE}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn field<'a>(case: &'a Value, name: &str) -> &'a str {
    case[name]
        .as_str()
        .unwrap_or_else(|| panic!("{name} missing in {case:.120}"))
}

fn unhex(case: &Value, name: &str) -> Vec<u8> {
    hex::decode(field(case, name)).unwrap()
}

fn algorithm(name: &str) -> Algorithm {
    Algorithm::ALL
        .iter()
        .copied()
        .find(|a| a.to_string() == name)
        .unwrap_or_else(|| panic!("no algorithm {name}"))
}

fn u64_field(v: &Value, name: &str) -> u64 {
    v[name].as_u64().unwrap_or_else(|| panic!("{name} in {v}"))
}

fn u8_field(v: &Value, name: &str) -> u8 {
    u8::try_from(u64_field(v, name)).unwrap()
}

/// The error a negative case names, in its `Debug` form: struct-like
/// variants are `#[non_exhaustive]`, so a test cannot build one to compare.
fn expected_error(case: &Value) -> String {
    let f = &case["error_fields"];
    match field(case, "error") {
        name @ ("Authentication" | "BadMagic" | "Truncated" | "TrailingData"
        | "EmptyFinalSegment" | "ZeroSegmentSize" | "TooManySegments") => name.to_string(),
        "UnsupportedVersion" => format!("UnsupportedVersion({})", u8_field(f, "version")),
        "UnknownAlgorithm" => format!("UnknownAlgorithm({})", u8_field(f, "id")),
        "SegmentTooLarge" => format!(
            "SegmentTooLarge {{ size: {}, limit: {} }}",
            u64_field(f, "size"),
            u64_field(f, "limit")
        ),
        "AlgorithmMismatch" => format!(
            "AlgorithmMismatch {{ stream: {:?}, key: {:?} }}",
            algorithm(field(f, "stream")),
            algorithm(field(f, "key"))
        ),
        other => panic!("unknown error {other}"),
    }
}

fn io_kind(name: &str) -> ErrorKind {
    match name {
        "InvalidData" => ErrorKind::InvalidData,
        "UnexpectedEof" => ErrorKind::UnexpectedEof,
        other => panic!("unexpected io::ErrorKind {other}"),
    }
}

/// The ways the test reads a case.
#[derive(Clone, Copy, Debug)]
enum Front {
    /// A slice, `read_to_end`.
    Slice,
    /// One byte per inner read, 7-byte reads, a 16-byte read-ahead.
    Trickle,
    /// A `BufReader` whose buffer the reader opens in place.
    BufRead,
    /// Two threads opening runs of segments.
    Threads,
}

const FRONTS: [Front; 4] = [Front::Slice, Front::Trickle, Front::BufRead, Front::Threads];

/// Reads until the end or an error: the plaintext delivered, and the
/// error with the one a second read gave.
fn drive(mut r: impl Read, chunk: usize) -> (Vec<u8>, Option<(io::Error, io::Error)>) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => {
                let again = r.read(&mut buf).expect_err("errors are sticky");
                return (out, Some((e, again)));
            }
        }
    }
}

/// What a reader is told for a case: its limit (the case's, else the
/// file's) and the index of the body's first segment (0 but for the cases
/// that start near 2^32).
#[derive(Clone, Copy)]
struct Reading {
    limit: usize,
    first_index: u64,
}

fn reading(file: &Value, case: &Value) -> Reading {
    let limit = case
        .get("reader_max_segment_size")
        .unwrap_or(&file["reader_max_segment_size"]);
    Reading {
        limit: usize::try_from(limit.as_u64().unwrap()).unwrap(),
        first_index: case.get("first_index").map_or(0, |v| v.as_u64().unwrap()),
    }
}

fn read_case(
    front: Front,
    p: Provider,
    key: &Key,
    aad: &[u8],
    ct: &[u8],
    how: Reading,
) -> (Vec<u8>, Option<(io::Error, io::Error)>) {
    let b = CipherReader::builder(key)
        .associated_data(aad)
        .provider(p)
        .max_segment_size(how.limit);
    if how.first_index > 0 {
        // A reader starts counting at a segment other than 0 only after a
        // seek: the body is placed where that segment of a long stream is.
        let s = u64::from(u32::from_be_bytes(ct[10..14].try_into().unwrap()));
        let mut r = b.build(FromIndex::new(ct, how.first_index * (s + 16)));
        r.seek(SeekFrom::Start(how.first_index * s)).unwrap();
        return drive(r, 64 << 10);
    }
    match front {
        Front::Slice => drive(b.build(ct), 64 << 10),
        Front::Trickle => drive(b.capacity(16).build(Trickle::new(ct, 1)), 7),
        Front::BufRead => drive(b.build_from_buf_read(BufReader::with_capacity(100, ct)), 50),
        Front::Threads => drive(b.threads(2).threads_after(0).build(ct), 64 << 10),
    }
}

/// A stream's header, then `gap` bytes standing for the segments before
/// the body (zeros, which a reader that seeks past them never reads), then
/// the body. A hand-written source: no real file can hold 2^32 segments at
/// a test's cost.
struct FromIndex<'a> {
    ct: &'a [u8],
    gap: u64,
    pos: u64,
}

impl<'a> FromIndex<'a> {
    fn new(ct: &'a [u8], gap: u64) -> Self {
        FromIndex { ct, gap, pos: 0 }
    }

    fn len(&self) -> u64 {
        self.ct.len() as u64 + self.gap
    }
}

impl Read for FromIndex<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let head = HEADER_LEN as u64;
        let (from, end): (&[u8], u64) = if self.pos < head {
            (
                &self.ct[usize::try_from(self.pos).unwrap()..HEADER_LEN],
                head,
            )
        } else if self.pos < head + self.gap {
            (&[0u8; 64][..], head + self.gap)
        } else {
            let at = usize::try_from(self.pos - self.gap).unwrap();
            (&self.ct[at.min(self.ct.len())..], self.len())
        };
        let n = buf
            .len()
            .min(from.len())
            .min(usize::try_from(end - self.pos).unwrap_or(usize::MAX));
        buf[..n].copy_from_slice(&from[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FromIndex<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len().checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::from(ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}

fn case_key(case: &Value) -> Key {
    Key::new(algorithm(field(case, "algorithm")), &unhex(case, "key")).unwrap()
}

fn cases(v: &Value) -> &Vec<Value> {
    v["cases"].as_array().unwrap()
}

// ---------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------

/// The file is what the generator makes (or, with the environment
/// variable set, becomes it).
#[test]
fn vector_file_is_what_the_generator_makes() {
    let made = generate();
    if std::env::var_os(REGENERATE).is_some() {
        let mut text = serde_json::to_string_pretty(&made).unwrap();
        text.push('\n');
        std::fs::write(FILE, text).unwrap();
        let mut counts = std::collections::BTreeMap::new();
        for c in cases(&made) {
            let k = format!(
                "{} {} {}",
                field(c, "kind"),
                field(c, "variant"),
                c["error"].as_str().unwrap_or("")
            );
            *counts.entry(k).or_insert(0) += 1;
        }
        eprintln!("wrote {FILE}: {} cases", cases(&made).len());
        for (k, n) in counts {
            eprintln!("  {n:4} {k}");
        }
        return;
    }
    let file = load();
    let (want, got) = (cases(&made), cases(&file));
    for (m, f) in want.iter().zip(got) {
        assert_eq!(
            m,
            f,
            "case {} differs from the generator's (regenerate with {REGENERATE}=1)",
            field(m, "id")
        );
    }
    assert_eq!(want.len(), got.len(), "number of cases");
    assert_eq!(made, file);
}

/// Every case through `CipherReader`: each provider, each front.
#[test]
fn every_case_reads_as_the_file_says() {
    let file = load();
    let mut failures = Vec::new();
    for case in cases(&file) {
        let id = field(case, "id");
        let key = case_key(case);
        let aad = unhex(case, "aad");
        let ct = unhex(case, "ciphertext");
        let how = reading(&file, case);
        for &p in Provider::ALL {
            for front in FRONTS {
                let (out, err) = read_case(front, p, &key, &aad, &ct, how);
                let at = format!("{id} ({p:?}, {front:?})");
                match (field(case, "kind"), err) {
                    ("positive", None) => {
                        if out != unhex(case, "plaintext") {
                            failures.push(format!("{at}: wrong plaintext"));
                        }
                    }
                    ("positive", Some((e, _))) => failures.push(format!("{at}: {e}")),
                    ("negative", None) => failures.push(format!("{at}: accepted")),
                    ("negative", Some((e, again))) => {
                        if !unhex(case, "released").starts_with(&out) {
                            failures.push(format!("{at}: released more than its segments"));
                        }
                        let want = expected_error(case);
                        let kind = io_kind(field(case, "io_error_kind"));
                        let got = Error::from_io(&e);
                        if got.map(|g| format!("{g:?}")).as_ref() != Some(&want) || e.kind() != kind
                        {
                            failures.push(format!(
                                "{at}: got {got:?} ({:?}), want {want:?} ({kind:?})",
                                e.kind()
                            ));
                        }
                        if Error::from_io(&again) != got || again.kind() != e.kind() {
                            failures.push(format!("{at}: not sticky: then {again}"));
                        }
                        if let Some(g) = got.filter(|g| g.kind() != kind) {
                            failures.push(format!("{at}: {g:?} travels as {:?}", g.kind()));
                        }
                    }
                    (k, _) => panic!("{id}: unknown kind {k}"),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The header fields a positive case gives.
fn case_head(case: &Value) -> Head {
    let h = &case["header"];
    Head {
        version: u8_field(h, "version"),
        alg: u8_field(h, "algorithm"),
        segment_size: u32::try_from(u64_field(h, "segment_size")).unwrap(),
        salt: hex::decode(field(h, "salt")).unwrap().try_into().unwrap(),
        prefix: hex::decode(field(h, "nonce_prefix"))
            .unwrap()
            .try_into()
            .unwrap(),
    }
}

fn flush_points(case: &Value) -> Vec<usize> {
    case["flush_at"].as_array().map_or_else(Vec::new, |a| {
        a.iter()
            .map(|x| usize::try_from(x.as_u64().unwrap()).unwrap())
            .collect()
    })
}

/// `CipherWriter` writes what the encoder gives for each positive case it
/// can make, with the salt and prefix it drew; the encoder gives the
/// file's ciphertext for the file's salt and prefix.
#[test]
fn writer_makes_the_positive_cases() {
    let file = load();
    let mut checked = 0;
    for case in cases(&file) {
        if field(case, "kind") != "positive" {
            continue;
        }
        let id = field(case, "id");
        let key = case_key(case);
        let (kb, aad, pt) = (
            unhex(case, "key"),
            unhex(case, "aad"),
            unhex(case, "plaintext"),
        );
        let head = case_head(case);
        let s = head.segment_size;
        let flush_at = flush_points(case);
        let mut units = if head.framed() {
            let recs = case["records"].as_array().unwrap();
            let mut from = 0;
            let units: Vec<Unit> = recs
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let n = usize::try_from(u64_field(r, "len")).unwrap();
                    from += n;
                    Unit {
                        index: u32::try_from(i).unwrap(),
                        last: r["final"].as_bool().unwrap(),
                        pt: pt[from - n..from].to_vec(),
                    }
                })
                .collect();
            assert_eq!(from, pt.len(), "{id}: records cover the plaintext");
            units
        } else {
            fixed_units(&pt, s)
        };
        let first = case.get("first_index").map_or(0, |v| v.as_u64().unwrap());
        for u in &mut units {
            u.index += u32::try_from(first).unwrap();
        }
        assert!(
            seal(&head, &kb, &aad, &units) == unhex(case, "ciphertext"),
            "{id}: the encoder does not give the file's ciphertext"
        );
        if !case["writer"].as_bool().unwrap() {
            continue;
        }
        if head.framed() {
            assert!(
                framed_units(&pt, s, &flush_at)
                    .iter()
                    .zip(&units)
                    .all(|(a, b)| a.pt == b.pt && a.last == b.last),
                "{id}: the records are not the writer's"
            );
        }
        for &p in Provider::ALL {
            for chunk in [usize::MAX, 1, 5] {
                let mut b = CipherWriter::builder(&key)
                    .associated_data(&aad)
                    .capacity(s as usize)
                    .provider(p);
                if head.framed() {
                    b = b.framed();
                }
                let mut w = b.build(Vec::new());
                let mut from = 0;
                for &at in &flush_at {
                    for c in pt[from..at].chunks(chunk) {
                        w.write_all(c).unwrap();
                    }
                    w.flush().unwrap();
                    from = at;
                }
                for c in pt[from..].chunks(chunk) {
                    w.write_all(c).unwrap();
                }
                let ct = w.finish().unwrap();
                let drawn = Head {
                    salt: ct[14..46].try_into().unwrap(),
                    prefix: ct[46..53].try_into().unwrap(),
                    ..head.clone()
                };
                assert!(
                    ct == seal(&drawn, &kb, &aad, &units),
                    "{id} ({p:?}, chunks of {chunk}): the writer's stream is not the case's encoding"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} positive cases checked");
}

/// The file covers what FORMAT.md promises: every algorithm in both
/// variants, and every reader error the format has.
#[test]
fn vector_file_covers_every_rule() {
    let file = load();
    let mut seen = std::collections::BTreeSet::new();
    for c in cases(&file) {
        seen.insert(format!("{} {}", field(c, "algorithm"), field(c, "variant")));
        if let Some(e) = c["error"].as_str() {
            seen.insert(e.to_owned());
        }
    }
    for &alg in Algorithm::ALL {
        for v in ["fixed", "framed"] {
            assert!(seen.contains(&format!("{alg} {v}")), "{alg} {v}");
        }
    }
    for e in [
        "Authentication",
        "BadMagic",
        "Truncated",
        "TrailingData",
        "EmptyFinalSegment",
        "ZeroSegmentSize",
        "UnsupportedVersion",
        "UnknownAlgorithm",
        "SegmentTooLarge",
        "AlgorithmMismatch",
        "TooManySegments",
    ] {
        assert!(seen.contains(e), "no case for {e}");
    }
}
