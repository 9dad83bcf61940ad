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
//! Checks. Unmutated stream: every op succeeds and matches the model (the
//! plaintext and a position): seeks return the model's target (negative
//! ones fail with `InvalidInput` and move nothing), reads return
//! `pt[pos..]` (at least one byte before the end, `Ok(0)` at or past it),
//! `read_exact` fails only past the end (`UnexpectedEof`, then at the end),
//! `fill_buf` shows `pt[pos..]`, `plaintext_len` is the length,
//! `stream_position` is the model's after every op; then the rest reads to
//! a clean end. Mutated stream: every successful read, `read_exact` and
//! `fill_buf` gives bytes equal to the plaintext at the model position
//! (never wrong data), `Ok(0)` only at or past the end; a successful
//! `plaintext_len` (and `SeekFrom::End`) uses the true length; after the
//! first stream error (a `cipherio::Error` other than `InvalidParameters`)
//! every read, `fill_buf` and seek fails with that same error; a stream cut
//! short or extended never reads to a clean end.

use std::io::{BufRead, Cursor, ErrorKind, Read, Seek, SeekFrom, Write};

use cipherio::tink::{HkdfHash, TinkKey, TinkParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider, ReaderBuilder};

/// Largest plaintext.
const MAX_PLAINTEXT: usize = 4096;
/// Most ops per input.
const MAX_OPS: usize = 64;
/// Bytes before the ops.
const FIXED: usize = 12;
/// Unrelated bytes before the stream (reader bit 13).
const PREFIX: usize = 7;

/// One op, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Seek(SeekFrom),
    Read(usize),
    ReadExact(usize),
    Fill(usize),
    Len,
}

/// The ciphertext's one change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    None,
    Flip { at: usize, bit: u8 },
    Truncate { len: usize },
    Append(Vec<u8>),
}

/// A decoded input.
#[derive(Clone, Debug)]
pub struct Input {
    pub tink: Option<TinkParams>,
    pub alg: Algorithm,
    pub segment: usize,
    pub capacity: usize,
    pub buf_read: bool,
    pub prefix: bool,
    pub writer: Provider,
    pub reader: Provider,
    mutation: (u8, u32, u8),
    /// (kind, x) pairs; mapped onto the plaintext's length by [`Op::of`].
    ops: Vec<(u8, u32)>,
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
            TinkParams::new(dks, min + seg % 512, hash).expect("valid Tink parameters")
        });
        let r = u16_at(3);
        let n = usize::from(b(11)).min(MAX_OPS);
        let ops_end = (FIXED + 5 * n).min(data.len().max(FIXED));
        let ops = (0..n)
            .map(|k| (b(FIXED + 5 * k), u32_at(FIXED + 5 * k + 1)))
            .collect();
        let pt = data.get(ops_end..).unwrap_or(&[]);
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
        self.ops
            .iter()
            .map(|&(kind, x)| {
                let x64 = u64::from(x);
                // The sign-extended value, for `Current` and `End`.
                let d = i64::from(x.cast_signed());
                match kind % 9 {
                    0 => Op::Seek(SeekFrom::Start(x64 % (len + 1))),
                    1 => Op::Seek(SeekFrom::Start(x64)),
                    2 => Op::Seek(SeekFrom::Current(d)),
                    3 => Op::Seek(SeekFrom::End(d)),
                    4 => Op::Read(x as usize % 9000),
                    5 => Op::ReadExact(x as usize % 9000),
                    6 => Op::Fill(x as usize),
                    7 => Op::Len,
                    _ => Op::Seek(SeekFrom::Start(x64 << 24 | x64)),
                }
            })
            .collect()
    }
}

/// A key of the input's format (fixed bytes: the oracle is the plaintext).
enum AnyKey {
    Native(Key, usize),
    Tink(TinkKey),
}

impl AnyKey {
    fn of(input: &Input) -> AnyKey {
        let raw: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0x5C).collect();
        match input.tink {
            Some(p) => AnyKey::Tink(TinkKey::new(p, &raw[..p.derived_key_size()]).expect("key")),
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

/// What one run did (for the corpus tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// The stream was changed.
    pub mutated: bool,
    /// Ops that succeeded.
    pub ok: usize,
    /// The first stream error, if any.
    pub failed: bool,
    /// Seeks that succeeded.
    pub seeks: usize,
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
    let mut damaged = ct.clone();
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
    let mut c = Cursor::new(source);
    c.set_position(start);
    let b = key.reader(input.reader, input.capacity);
    let ops = input.ops();
    let mutated = m != Mutation::None;
    let shape = matches!(m, Mutation::Truncate { .. } | Mutation::Append(_));
    if input.buf_read {
        drive(&mut b.build_from_buf_read(c), pt, &ops, mutated, shape)
    } else {
        drive(&mut b.build(c), pt, &ops, mutated, shape)
    }
}

/// Whether `e` is the stream's failure (sticky), not a refused seek.
fn stream_error(e: &std::io::Error) -> Option<Error> {
    match Error::from_io(e) {
        Some(Error::InvalidParameters(_)) | None => None,
        Some(ce) => Some(ce.clone()),
    }
}

/// Drives `ops` then reads to the end, checking against `pt`. `mutated`:
/// the stream was changed; `shape`: its length was (cut or extended).
fn drive<R: Read + Seek>(
    r: &mut CipherReader<R>,
    pt: &[u8],
    ops: &[Op],
    mutated: bool,
    shape: bool,
) -> Run {
    let len = pt.len() as u64;
    let mut pos = 0u64;
    let mut failed: Option<Error> = None;
    let mut run = Run {
        mutated,
        ..Run::default()
    };
    let avail = |pos: u64| &pt[usize::try_from(pos.min(len)).expect("small")..];
    // An error: on an intact stream never (but refused seeks); on a
    // damaged one, the first stream error is kept and every later one is
    // the same.
    let on_err = |ctx: &str, e: &std::io::Error, failed: &mut Option<Error>| {
        let se = stream_error(e);
        assert!(mutated || se.is_none(), "{ctx}: {e:?} on an intact stream");
        let Some(se) = se else {
            panic!("{ctx}: {e:?} is not a stream error");
        };
        assert!(
            matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::UnexpectedEof),
            "{ctx}: kind {:?}",
            e.kind()
        );
        match failed {
            Some(first) => assert_eq!(&se, first, "{ctx}: not sticky"),
            None => *failed = Some(se),
        }
    };
    for (k, &op) in ops.iter().enumerate() {
        let ctx = &format!("op {k} {op:?} at {pos} (len {len}, mutated {mutated})");
        match op {
            Op::Seek(to) => {
                let base = match to {
                    SeekFrom::Start(_) => Some(0),
                    SeekFrom::Current(_) => Some(pos),
                    SeekFrom::End(_) => Some(len),
                };
                let off = match to {
                    SeekFrom::Start(n) => Some(n),
                    SeekFrom::Current(d) | SeekFrom::End(d) => {
                        base.and_then(|b| b.checked_add_signed(d))
                    }
                };
                match r.seek(to) {
                    Ok(p) => {
                        assert!(failed.is_none(), "{ctx}: Ok({p}) after {failed:?}");
                        assert_eq!(Some(p), off, "{ctx}: position");
                        pos = p;
                        run.seeks += 1;
                        run.ok += 1;
                    }
                    Err(e) if stream_error(&e).is_none() => {
                        // Refused: before 0 or past 2^64.
                        assert_eq!(off, None, "{ctx}: {e:?}");
                        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{ctx}");
                    }
                    Err(e) => on_err(ctx, &e, &mut failed),
                }
            }
            Op::Read(n) => {
                let mut b = vec![0u8; n];
                match r.read(&mut b) {
                    Ok(got) => {
                        assert!(failed.is_none(), "{ctx}: Ok({got}) after {failed:?}");
                        let want = avail(pos);
                        assert!(got <= n, "{ctx}");
                        if n > 0 {
                            assert_eq!(got == 0, want.is_empty(), "{ctx}: Ok({got})");
                        }
                        if got == 0 && n > 0 {
                            assert!(!shape, "{ctx}: Ok(0) on a cut or extended stream");
                        }
                        assert!(b[..got] == want[..got], "{ctx}: wrong bytes");
                        pos += got as u64;
                        run.ok += 1;
                    }
                    Err(e) => on_err(ctx, &e, &mut failed),
                }
            }
            Op::ReadExact(n) => {
                let mut b = vec![0u8; n];
                match r.read_exact(&mut b) {
                    Ok(()) => {
                        // (std's `read_exact` of nothing never calls `read`.)
                        assert!(n == 0 || failed.is_none(), "{ctx}: Ok after {failed:?}");
                        let want = avail(pos);
                        assert!(n <= want.len(), "{ctx}: read_exact past the end");
                        assert!(b[..] == want[..n], "{ctx}: wrong bytes");
                        pos += n as u64;
                        run.ok += 1;
                    }
                    Err(e) if Error::from_io(&e).is_none() => {
                        // std's "failed to fill whole buffer": a clean end.
                        assert!(failed.is_none(), "{ctx}: a clean end after {failed:?}");
                        assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{ctx}");
                        assert!(pos + n as u64 > len, "{ctx}: a clean end before the end");
                        assert!(!shape, "{ctx}: a clean end on a cut or extended stream");
                        pos = pos.max(len);
                    }
                    Err(e) => on_err(ctx, &e, &mut failed),
                }
            }
            Op::Fill(x) => match r.fill_buf() {
                Ok(b) => {
                    assert!(failed.is_none(), "{ctx}: Ok after {failed:?}");
                    let want = avail(pos);
                    assert_eq!(b.is_empty(), want.is_empty(), "{ctx}: fill_buf");
                    assert!(!(b.is_empty() && shape), "{ctx}: end of a cut stream");
                    assert!(
                        b.len() <= want.len() && b == &want[..b.len()],
                        "{ctx}: wrong bytes"
                    );
                    let c = x % (b.len() + 1);
                    r.consume(c);
                    pos += c as u64;
                    run.ok += 1;
                }
                Err(e) => on_err(ctx, &e, &mut failed),
            },
            Op::Len => match r.plaintext_len() {
                // A length is only ever the authenticated one (after a
                // failure too, if it was known before).
                Ok(n) => {
                    assert_eq!(n, len, "{ctx}: plaintext_len");
                    assert!(!shape, "{ctx}: a length for a cut or extended stream");
                    run.ok += 1;
                }
                Err(e) => on_err(ctx, &e, &mut failed),
            },
        }
        if failed.is_none() {
            assert_eq!(
                r.stream_position().expect("position"),
                pos,
                "{ctx}: stream_position"
            );
        }
    }
    // The rest, to the end or the error.
    let mut rest = Vec::new();
    let mut b = vec![0u8; 1000];
    let end = loop {
        match r.read(&mut b) {
            Ok(0) => break None,
            Ok(n) => rest.extend_from_slice(&b[..n]),
            Err(e) => break Some(e),
        }
        assert!(rest.len() <= pt.len(), "read past the plaintext");
    };
    let want = avail(pos);
    assert!(
        rest.len() <= want.len() && rest == want[..rest.len()],
        "final reads: wrong bytes"
    );
    match end {
        None => {
            assert!(failed.is_none(), "a clean end after {failed:?}");
            assert_eq!(rest.len(), want.len(), "a clean end before the end");
            assert!(!shape, "a clean end on a cut or extended stream");
        }
        Some(e) => on_err("final reads", &e, &mut failed),
    }
    run.failed = failed.is_some();
    run
}
