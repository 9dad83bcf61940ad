//! The `roundtrip` target: write, check against the spec, read back, then
//! damage the ciphertext once and read again.

use std::io::Write;

use arbitrary::Arbitrary;
use cipherio::tink::{HkdfHash, TinkKey, TinkParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, StreamKey};

use crate::drive::{self, SCRATCH_LEN};
use crate::oracle::{self, HEADER_LEN, TAG_LEN};
use crate::oracle_tink;

/// Largest plaintext, so that every input runs in well under a millisecond
/// or so even with one-byte segments.
const MAX_PLAINTEXT: usize = 4096;

/// One `roundtrip` input: a native key and segment size, and the rest.
#[derive(Arbitrary, Debug)]
pub struct Input {
    alg: u8,
    key: [u8; 32],
    /// Writer capacity (segment size) is `1 + v % 300`.
    writer_capacity: u16,
    run: Run,
}

/// One `roundtrip_tink` input: Tink parameters and key, and the rest.
#[derive(Arbitrary, Debug)]
pub struct TinkInput {
    /// Bit 0: key size 16 or 32; `(v >> 1) % 3`: HKDF hash.
    params: u8,
    /// Ciphertext segment size above its minimum, mod 512.
    segment: u16,
    /// Raw key: `key_size + extra % 17` bytes of it.
    key: [u8; 48],
    extra: u8,
    run: Run,
}

/// What both round trips share: associated data, the caller's chunking on
/// both sides, the damage, the plaintext.
#[derive(Arbitrary, Debug)]
pub struct Run {
    aad: Vec<u8>,
    /// Reader capacity is `1 + v % 2048`; bit 14 picks the writer's
    /// provider and bit 15 the reader's (`Provider::ALL`).
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

/// Where the segments are: the sealed span of segment 0 (with the header)
/// and of later ones, and their plaintext lengths.
struct Segments {
    span: [usize; 2],
    plain: [usize; 2],
}

impl Segments {
    /// Index of the segment holding byte `at` (the header is part of
    /// segment 0: both formats bind it to the first segment's tag).
    fn of_byte(&self, at: usize) -> usize {
        match at.checked_sub(self.span[0]) {
            None => 0,
            Some(d) => 1 + d / self.span[1],
        }
    }

    /// Plaintext bytes before segment `k`.
    fn boundary(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.plain[0] + (k - 1) * self.plain[1]
        }
    }
}

/// Writes `run`'s plaintext with its write sizes and flushes.
fn write<K: StreamKey>(key: &K, capacity: Option<usize>, run: &Run) -> Vec<u8> {
    let mut b = CipherWriter::builder(key)
        .associated_data(&run.aad)
        .provider(run.provider(14));
    if let Some(c) = capacity {
        b = b.capacity(c);
    }
    let mut w = b.build(Vec::new());
    let mut rest = run.plaintext();
    let sizes = if run.writes.iter().any(Option::is_some) {
        &run.writes[..]
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
    w.finish().expect("finish into a Vec")
}

impl Input {
    /// The writer's and the reader's provider.
    pub fn providers(&self) -> (Provider, Provider) {
        (self.run.provider(14), self.run.provider(15))
    }
}

impl TinkInput {
    /// The writer's and the reader's provider.
    pub fn providers(&self) -> (Provider, Provider) {
        (self.run.provider(14), self.run.provider(15))
    }
}

impl Run {
    /// The provider that `reader_capacity`'s bit `bit` picks.
    fn provider(&self, bit: u32) -> Provider {
        let i = usize::from((self.reader_capacity >> bit) & 1);
        Provider::ALL[i % Provider::ALL.len()]
    }

    fn plaintext(&self) -> &[u8] {
        &self.plaintext[..self.plaintext.len().min(MAX_PLAINTEXT)]
    }

    /// Reads `ct` with this run's reader capacity and read ops.
    fn read<K: StreamKey>(&self, key: &K, ct: &[u8]) -> (Vec<u8>, Result<(), cipherio::Error>) {
        let mut scratch = vec![0u8; SCRATCH_LEN];
        let mut out = Vec::new();
        let mut r = CipherReader::builder(key)
            .capacity(1 + usize::from(self.reader_capacity) % 2048)
            .associated_data(&self.aad)
            // Far above any native segment written here; a damaged header
            // asking for more is refused without a large zeroed allocation
            // per input. (Tink streams ignore it.)
            .max_segment_size(4096)
            .provider(self.provider(15))
            .build(ct);
        let end = drive::drive(&mut r, &self.reads, &mut scratch, &mut out);
        drive::check_after(&mut r, &end, &mut scratch);
        (out, end)
    }

    /// Reads `ct` back, then damages it once and reads it again.
    fn read_back_and_damage<K: StreamKey>(&self, key: &K, ct: &[u8], segs: &Segments) {
        let pt = self.plaintext();
        let (out, end) = self.read(key, ct);
        assert_eq!(end, Ok(()));
        assert!(out == pt, "read back differs");

        let bad = self.mutation.apply(ct);
        let Some(first) = ct.iter().zip(&bad).position(|(a, b)| a != b).or_else(|| {
            // Equal up to the shorter one: damage starts where it ends.
            (ct.len() != bad.len()).then_some(ct.len().min(bad.len()))
        }) else {
            return;
        };
        let (out, end) = self.read(key, &bad);
        assert!(end.is_err(), "damaged at byte {first}, read to the end");
        let damaged = segs.of_byte(first);
        assert!(
            (0..=damaged).any(|k| segs.boundary(k) == out.len()) && pt.starts_with(&out),
            "released {} bytes; damage at byte {first} (segment {damaged})",
            out.len()
        );
    }
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
    let run = &input.run;
    let ct = write(&key, Some(seg), run);
    let spec = oracle::encrypt(
        alg,
        key.as_bytes(),
        &run.aad,
        u32::try_from(seg).expect("small"),
        &ct[14..46],
        &ct[46..53],
        run.plaintext(),
    );
    assert!(ct == spec, "the writer's stream differs from the spec's");
    let segs = Segments {
        span: [HEADER_LEN + seg + TAG_LEN, seg + TAG_LEN],
        plain: [seg; 2],
    };
    run.read_back_and_damage(&key, &ct, &segs);
}

/// The same as [`check`] for a Tink key (the writer at its default
/// capacity, the key's segment size), against the Tink oracle.
///
/// # Panics
///
/// On any of those failing.
pub fn check_tink(input: &TinkInput) {
    let key_size = if input.params & 1 == 0 { 16 } else { 32 };
    let p = oracle_tink::Params {
        key_size,
        segment: 1 + key_size + 7 + 17 + usize::from(input.segment % 512),
        hash: [1, 256, 512][usize::from(input.params >> 1) % 3],
    };
    let hash = match p.hash {
        1 => HkdfHash::Sha1,
        256 => HkdfHash::Sha256,
        _ => HkdfHash::Sha512,
    };
    let params = TinkParams::new(p.key_size, p.segment, hash).expect("valid parameters");
    let raw = &input.key[..key_size + usize::from(input.extra % 17)];
    let key = TinkKey::new(params, raw).expect("long enough");
    let run = &input.run;
    let ct = write(&key, None, run);
    let h = p.header_len();
    let spec = oracle_tink::encrypt(
        &p,
        raw,
        &run.aad,
        &ct[1..1 + key_size],
        &ct[1 + key_size..h],
        run.plaintext(),
    );
    assert!(ct == spec, "the writer's stream differs from Tink's");
    let segs = Segments {
        span: [p.segment; 2],
        plain: p.plain(),
    };
    run.read_back_and_damage(&key, &ct, &segs);
}
