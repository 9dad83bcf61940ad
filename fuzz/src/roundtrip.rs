//! The `roundtrip` target: write, check against the spec, read back, then
//! damage the ciphertext once and read again.

use std::io::Write;

use arbitrary::Arbitrary;
use cipherio::{Algorithm, CipherReader, CipherWriter, Key};

use crate::drive::{self, SCRATCH_LEN};
use crate::oracle::{self, HEADER_LEN, TAG_LEN};

/// Largest plaintext, so that every input runs in well under a millisecond
/// or so even with one-byte segments.
const MAX_PLAINTEXT: usize = 4096;

/// One fuzz input.
#[derive(Arbitrary, Debug)]
pub struct Input {
    alg: u8,
    key: [u8; 32],
    aad: Vec<u8>,
    /// Writer capacity (segment size) is `1 + v % 300`.
    writer_capacity: u16,
    /// Reader capacity is `1 + v % 2048`.
    reader_capacity: u16,
    /// Write sizes, in turn; `None` is a `flush`.
    writes: Vec<Option<u16>>,
    /// Read ops, in turn (see `drive::drive`).
    reads: Vec<u8>,
    mutation: Mutation,
    plaintext: Vec<u8>,
}

/// One change to the ciphertext. Positions wrap around its length.
#[derive(Arbitrary, Debug)]
pub enum Mutation {
    /// Flip bit `bit % 8` of byte `at`.
    Flip { at: u32, bit: u8 },
    /// Keep only the first `len` bytes.
    Truncate { len: u32 },
    /// Insert bytes before byte `at` (or at the end).
    Insert { at: u32, bytes: Vec<u8> },
    /// Remove `len` bytes from `at`.
    Delete { at: u32, len: u16 },
    /// Overwrite byte `at`.
    Set { at: u32, byte: u8 },
}

impl Mutation {
    fn apply(&self, ct: &[u8]) -> Vec<u8> {
        let wrap = |at: u32, n: usize| at as usize % n.max(1);
        let mut m = ct.to_vec();
        match self {
            Mutation::Flip { at, bit } => m[wrap(*at, ct.len())] ^= 1 << (bit % 8),
            Mutation::Truncate { len } => m.truncate(wrap(*len, ct.len())),
            Mutation::Insert { at, bytes } => {
                let at = wrap(*at, ct.len() + 1);
                m.splice(at..at, bytes.iter().copied());
            }
            Mutation::Delete { at, len } => {
                let at = wrap(*at, ct.len());
                let end = (at + usize::from(*len).max(1)).min(ct.len());
                m.drain(at..end);
            }
            Mutation::Set { at, byte } => m[wrap(*at, ct.len())] = *byte,
        }
        m
    }
}

/// Reads `ct` with a reader configured as in `input`.
fn read_all(input: &Input, key: &Key, ct: &[u8]) -> (Vec<u8>, Result<(), cipherio::Error>) {
    let mut scratch = vec![0u8; SCRATCH_LEN];
    let mut out = Vec::new();
    let mut r = CipherReader::builder(key)
        .capacity(1 + usize::from(input.reader_capacity) % 2048)
        // Far above any segment written here; a damaged header asking for
        // more is refused without a large zeroed allocation per input.
        .max_segment_size(4096)
        .associated_data(&input.aad)
        .build(ct);
    let end = drive::drive(&mut r, &input.reads, &mut scratch, &mut out);
    drive::check_after(&mut r, &end, &mut scratch);
    (out, end)
}

/// - The writer's output, whatever the write sizes and flushes, is exactly
///   the spec oracle's stream for the plaintext, with the header's salt and
///   nonce prefix and the writer's capacity as the segment size.
/// - The reader, whatever its capacity and read sizes, returns the
///   plaintext and then `Ok(0)`.
/// - After one mutation that changes the bytes, the reader errors, and what
///   it returned before is a prefix of the plaintext made of whole segments,
///   none of them from the first damaged one on.
///
/// # Panics
///
/// On any of those failing.
pub fn check(input: &Input) {
    let alg = Algorithm::ALL[usize::from(input.alg) % 3];
    let key = Key::new(alg, &input.key[..alg.key_len()]).expect("right length");
    let seg = 1 + usize::from(input.writer_capacity) % 300;
    let pt = &input.plaintext[..input.plaintext.len().min(MAX_PLAINTEXT)];

    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .associated_data(&input.aad)
        .build(Vec::new());
    let mut rest = pt;
    let sizes = if input.writes.iter().any(Option::is_some) {
        &input.writes[..]
    } else {
        &[Some(64)][..]
    };
    for op in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let Some(n) = op else {
            w.flush().expect("flush into a Vec");
            continue;
        };
        let n = usize::from(*n).clamp(1, rest.len());
        let k = w.write(&rest[..n]).expect("write into a Vec");
        assert!(k <= n && k > 0, "write of {n} returned {k}");
        rest = &rest[k..];
    }
    let ct = w.finish().expect("finish into a Vec");

    let spec = oracle::encrypt(
        alg,
        key.as_bytes(),
        &input.aad,
        u32::try_from(seg).expect("small"),
        &ct[14..46],
        &ct[46..53],
        pt,
    );
    assert!(ct == spec, "the writer's stream differs from the spec's");

    let (out, end) = read_all(input, &key, &ct);
    assert_eq!(end, Ok(()));
    assert!(out == pt, "read back differs");

    let bad = input.mutation.apply(&ct);
    let Some(first) = ct.iter().zip(&bad).position(|(a, b)| a != b).or_else(|| {
        // Equal up to the shorter one: damage starts where it ends.
        (ct.len() != bad.len()).then_some(ct.len().min(bad.len()))
    }) else {
        return;
    };
    let (out, end) = read_all(input, &key, &bad);
    assert!(end.is_err(), "damaged at byte {first}, read to the end");
    // Segment index holding the first damaged byte (the header counts as
    // part of segment 0: it is bound into the key).
    let damaged = first.saturating_sub(HEADER_LEN) / (seg + TAG_LEN);
    assert!(
        out.len() % seg == 0 && out.len() <= damaged * seg && pt.starts_with(&out),
        "released {} bytes; damage at byte {first} (segment {damaged} of {seg} bytes)",
        out.len()
    );
}
