//! The `seek` target: random access (`Seek for CipherReader`,
//! `plaintext_len`) driven by the input against the plaintext as oracle.
//!
//! Input, decoded by hand (missing bytes read as 0):
//!
//! | bytes | meaning |
//! |---|---|
//! | 0 | bit 7: Tink, else native. Native: algorithm `b % 3`. Tink: bit 0 key size 16/32, `(b >> 1) % 3` HKDF hash (SHA-1/256/512) |
//! | 1–2 | segment (LE): native segment size `1 + v % 300`; Tink ciphertext segment size its minimum + `v % 512` |
//! | 3–4 | reader (LE): capacity `1 + v % 2048`; bit 12 `build_from_buf_read`; bit 13 the stream starts after 7 unrelated bytes in the source; bit 14 the writer's provider, bit 15 the reader's (`Provider::ALL`) |
//! | 5 | mutation: `% 8` = 5 flip bit `b10 % 8` of byte `v % len`; 6 truncate to `v % len`; 7 append `1 + b10 % 40` bytes of `v` (LE, repeated); else none |
//! | 6–9 | mutation value `v` (LE) |
//! | 10 | mutation byte `b10` |
//! | 11 | number of ops (at most 64) |
//! | 12.. | ops, 5 bytes each: kind, then a u32 `x` (LE) |
//! | then | the plaintext (at most 4 KiB) |
//!
//! Op kinds (`% 9`): 0 `Start(x % (len + 1))`; 1 `Start(x)` (past the end);
//! 2 `Current(x as i32)`; 3 `End(x as i32)`; 4 `read` of `x % 9000` bytes;
//! 5 `read_exact` of `x % 9000`; 6 `fill_buf` then `consume(x % (n + 1))`;
//! 7 `plaintext_len`; 8 `Start(x << 24 | x)`, far past the end (up to 2^56).
//!
//! Faults: when bit 7 of byte 11 is set, the number of ops is its low 6
//! bits, op kinds are taken `% 12` (also 9 `Current(-(x % 2048))`, capped
//! at the position; 10 `stream_position`, on the async front a
//! `seek(Current(0))`; 11 `read` of `x % 300` bytes), and 8 more bytes
//! follow the ops, before the plaintext:
//!
//! | bytes | meaning |
//! |---|---|
//! | +0 | fault pattern: source call `k` (every `read`, `fill_buf`, `seek`, `poll_read`, `poll_complete`, numbered from 0) faults when bit `k % len` is set |
//! | +1 | bits 0–3: the pattern's `len` (`% 9`, 0: none); bits 4–5: its first fault kind, then the kinds in turn (`Pending`, `WouldBlock`, `Interrupted`, `Other`; `Pending` is `WouldBlock` on the std front); bit 6: the async front (`build_async`, polled by hand with a no-op waker; `build_from_buf_read` does not apply) |
//! | +2 | one more faulting call, by number |
//! | +3 | its kind `% 5`: 0 none, else the kinds above from 1 |
//! | +4 | drop pattern: after the async reader's `k`-th `Pending` the op's future is dropped when bit `k % len` is set, else polled again |
//! | +5 | bits 0–3: the drop pattern's `len` (`% 9`); bits 4–5: `threads(1 + v)`; bits 6–7: with `build_from_buf_read`, nonzero puts a `BufReader` between the reader and the source |
//! | +6–7 | that `BufReader`'s capacity, `1 + v % 4096` (LE) |
//!
//! The 3 source calls after a fault go through. Without bit 7 of byte 11 (values
//! up to 64 ops, as before the faults) an input means what it meant
//! before: no faults, one thread, the std front.
//!
//! Checks: those of the model in `src/seek_model.rs` (see its module
//! doc). Unmutated stream: every op succeeds or fails only with an
//! injected error (passed through) or a refused seek, and matches the
//! model (the plaintext and a position): seeks return the model's target
//! (negative ones fail with `InvalidInput` and move nothing), reads return
//! `pt[pos..]` (at least one byte before the end, `Ok(0)` at or past it),
//! `read_exact` fails only past the end (`UnexpectedEof`, then at the end),
//! `fill_buf` shows `pt[pos..]`, `plaintext_len` is the length,
//! `stream_position` is the model's after every op (std front); an
//! injected error or a dropped future moves nothing the caller did not see
//! move; then the rest reads to a clean end, the length is right and the
//! whole plaintext reads again from the start. Mutated stream: every
//! successful read, `read_exact` and `fill_buf` gives bytes equal to the
//! plaintext at the model position (never wrong data), `Ok(0)` only at or
//! past the end; a successful `plaintext_len` (and `SeekFrom::End`) uses
//! the true length; after the first stream error (a `cipherio::Error`
//! other than a refused call, as `InvalidSeek`) every op fails with that same error (or
//! an injected one); a stream cut short or extended never reads to a clean
//! end.

use std::io::{SeekFrom, Write};

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, ReaderBuilder};

use crate::seek_model::{self, Case, Faults, Inner, KINDS, Pattern};
pub use crate::seek_model::{Op, Run};

/// Largest plaintext.
const MAX_PLAINTEXT: usize = 4096;
/// Most ops per input.
const MAX_OPS: usize = 64;
/// Bytes before the ops.
const FIXED: usize = 12;
/// Unrelated bytes before the stream (reader bit 13).
const PREFIX: usize = 7;
/// Bytes of the faults block (byte 11, bit 7).
const FAULTS_LEN: usize = 8;

/// The ciphertext's one change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    None,
    Flip { at: usize, bit: u8 },
    Truncate { len: usize },
    Append(Vec<u8>),
}

/// The faults block, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultCfg {
    /// Which source calls fault.
    pub faults: Faults,
    /// Read through the async front.
    pub asynchronous: bool,
    /// Which `Pending`s drop the op's future (async front).
    pub drops: Pattern,
    /// `threads(n)`.
    pub threads: usize,
    /// With `build_from_buf_read`: a `BufReader` of this capacity between
    /// the reader and the source.
    pub buf_reader: Option<usize>,
}

impl FaultCfg {
    /// The block at `at` in `data` (missing bytes read as 0).
    fn decode(data: &[u8], at: usize) -> FaultCfg {
        let b = |i: usize| data.get(at + i).copied().unwrap_or(0);
        let one = match b(3) % 5 {
            0 => Vec::new(),
            k => vec![(usize::from(b(2)), KINDS[usize::from(k - 1)])],
        };
        FaultCfg {
            faults: Faults {
                at: one,
                every: Pattern {
                    bits: b(0),
                    len: (b(1) & 0x0F) % 9,
                },
                kind: (b(1) >> 4) & 3,
            },
            asynchronous: b(1) & 0x40 != 0,
            drops: Pattern {
                bits: b(4),
                len: (b(5) & 0x0F) % 9,
            },
            threads: 1 + usize::from((b(5) >> 4) & 3),
            buf_reader: (b(5) >> 6 != 0)
                .then(|| 1 + usize::from(u16::from_le_bytes([b(6), b(7)])) % 4096),
        }
    }
}

/// A decoded input.
#[derive(Clone, Debug)]
pub struct Input {
    pub tink: Option<AesGcmHkdfParams>,
    pub alg: Algorithm,
    pub segment: usize,
    pub capacity: usize,
    pub buf_read: bool,
    pub prefix: bool,
    pub writer: Provider,
    pub reader: Provider,
    mutation: (u8, u32, u8),
    /// (kind, x) pairs; mapped onto the plaintext's length by [`Input::ops`].
    ops: Vec<(u8, u32)>,
    /// The faults block, if the input has one.
    pub faults: Option<FaultCfg>,
    pub plaintext: Vec<u8>,
}

fn provider(bit: bool) -> Provider {
    Provider::ALL[usize::from(bit) % Provider::ALL.len()]
}

impl Input {
    pub fn decode(data: &[u8]) -> Input {
        let b = |i: usize| data.get(i).copied().unwrap_or(0);
        let u16_at = |i: usize| u16::from_le_bytes([b(i), b(i + 1)]);
        let u32_at = |i: usize| u32::from_le_bytes([b(i), b(i + 1), b(i + 2), b(i + 3)]);
        let f = b(0);
        let seg = usize::from(u16_at(1));
        let tink = (f & 0x80 != 0).then(|| {
            let dks = if f & 1 == 0 { 16 } else { 32 };
            let hash =
                [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512][usize::from(f >> 1) % 3];
            let min = 1 + dks + 7 + 16 + 1;
            AesGcmHkdfParams::new(dks, min + seg % 512, hash).expect("valid Tink parameters")
        });
        let r = u16_at(3);
        let faulty = b(11) & 0x80 != 0;
        let n = if faulty {
            usize::from(b(11) & 63)
        } else {
            usize::from(b(11)).min(MAX_OPS)
        };
        let ops = (0..n)
            .map(|k| (b(FIXED + 5 * k), u32_at(FIXED + 5 * k + 1)))
            .collect();
        let mut rest = FIXED + 5 * n;
        let faults = faulty.then(|| {
            let c = FaultCfg::decode(data, rest);
            rest += FAULTS_LEN;
            c
        });
        let pt = data.get(rest.min(data.len())..).unwrap_or(&[]);
        Input {
            tink,
            alg: Algorithm::ALL[usize::from(f) % 3],
            segment: 1 + seg % 300,
            capacity: 1 + usize::from(r) % 2048,
            buf_read: r & 1 << 12 != 0,
            prefix: r & 1 << 13 != 0,
            writer: provider(r & 1 << 14 != 0),
            reader: provider(r & 1 << 15 != 0),
            mutation: (b(5), u32_at(6), b(10)),
            ops,
            faults,
            plaintext: pt[..pt.len().min(MAX_PLAINTEXT)].to_vec(),
        }
    }

    /// The mutation, positions wrapped onto a stream of `ct_len` bytes.
    pub fn mutation(&self, ct_len: usize) -> Mutation {
        let (k, v, b) = self.mutation;
        let v = v as usize;
        match k % 8 {
            5 => Mutation::Flip {
                at: v % ct_len,
                bit: b % 8,
            },
            6 => Mutation::Truncate { len: v % ct_len },
            7 => {
                let bytes = (v as u32).to_le_bytes();
                Mutation::Append((0..1 + usize::from(b) % 40).map(|i| bytes[i % 4]).collect())
            }
            _ => Mutation::None,
        }
    }

    pub fn ops(&self) -> Vec<Op> {
        let len = self.plaintext.len() as u64;
        let kinds = if self.faults.is_some() { 12 } else { 9 };
        self.ops
            .iter()
            .map(|&(kind, x)| {
                let x64 = u64::from(x);
                // The sign-extended value, for `Current` and `End`.
                let d = i64::from(x.cast_signed());
                match kind % kinds {
                    0 => Op::Seek(SeekFrom::Start(x64 % (len + 1))),
                    1 => Op::Seek(SeekFrom::Start(x64)),
                    2 => Op::Seek(SeekFrom::Current(d)),
                    3 => Op::Seek(SeekFrom::End(d)),
                    4 => Op::Read(x as usize % 9000),
                    5 => Op::ReadExact(x as usize % 9000),
                    6 => Op::Fill(x as usize),
                    7 => Op::Len,
                    8 => Op::Seek(SeekFrom::Start(x64 << 24 | x64)),
                    9 => Op::SeekBack(x64 % 2048),
                    10 => Op::Pos,
                    _ => Op::Read(x as usize % 300),
                }
            })
            .collect()
    }
}

/// A key of the input's format (fixed bytes: the oracle is the plaintext).
enum AnyKey {
    Native(Key, usize),
    Tink(AesGcmHkdfKey),
}

impl AnyKey {
    fn of(input: &Input) -> AnyKey {
        let raw: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0x5C).collect();
        match input.tink {
            Some(p) => {
                AnyKey::Tink(AesGcmHkdfKey::new(p, &raw[..p.derived_key_size()]).expect("key"))
            }
            None => AnyKey::Native(
                Key::new(input.alg, &raw[..input.alg.key_len()]).expect("key"),
                input.segment,
            ),
        }
    }

    fn seal(&self, pt: &[u8], p: Provider) -> Vec<u8> {
        let sealed = match self {
            AnyKey::Native(k, s) => {
                let mut w = CipherWriter::builder(k)
                    .capacity(*s)
                    .provider(p)
                    .build(Vec::new());
                w.write_all(pt).expect("write into a Vec");
                w.finish()
            }
            AnyKey::Tink(k) => {
                let mut w = CipherWriter::builder(k).provider(p).build(Vec::new());
                w.write_all(pt).expect("write into a Vec");
                w.finish()
            }
        };
        sealed.expect("finish into a Vec")
    }

    fn reader(&self, p: Provider, capacity: usize) -> ReaderBuilder {
        match self {
            AnyKey::Native(k, _) => CipherReader::builder(k),
            AnyKey::Tink(k) => CipherReader::builder(k),
        }
        .provider(p)
        .capacity(capacity)
    }
}

/// Runs the input's checks (panics on a violation).
pub fn check(data: &[u8]) {
    check_run(data);
}

/// [`check`], returning what happened.
pub fn check_run(data: &[u8]) -> Run {
    let input = Input::decode(data);
    let key = AnyKey::of(&input);
    let pt = &input.plaintext;
    let ct = key.seal(pt, input.writer);
    let m = input.mutation(ct.len());
    let mut damaged = ct;
    match &m {
        Mutation::None => {}
        Mutation::Flip { at, bit } => damaged[*at] ^= 1 << bit,
        Mutation::Truncate { len } => damaged.truncate(*len),
        Mutation::Append(bytes) => damaged.extend_from_slice(bytes),
    }
    let mut source = if input.prefix {
        vec![0xC3; PREFIX]
    } else {
        Vec::new()
    };
    let start = source.len() as u64;
    source.extend_from_slice(&damaged);
    let fc = input.faults.clone().unwrap_or(FaultCfg {
        threads: 1,
        ..FaultCfg::default()
    });
    let case = Case {
        pt,
        source,
        start,
        mutated: m != Mutation::None,
        shape: matches!(m, Mutation::Truncate { .. } | Mutation::Append(_)),
        ops: input.ops(),
        faults: fc.faults.clone(),
    };
    let b = key
        .reader(input.reader, input.capacity)
        .threads(fc.threads)
        .threads_after(0);
    if fc.asynchronous {
        let mut f = crate::seek_model_async::AsyncFront::new(&case, b, fc.drops, None);
        return seek_model::drive(&mut f, &case);
    }
    let inner = match (input.buf_read, fc.buf_reader) {
        (false, _) => Inner::Plain,
        (true, None) => Inner::BufRead,
        (true, Some(cap)) => Inner::BufReader(cap),
    };
    seek_model::drive(&mut *seek_model::std_front(&case, b, inner), &case)
}
