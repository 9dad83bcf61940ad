//! Random access under inner faults: seeks, reads and length queries on an
//! intact stream whose source fails (`WouldBlock`, `Interrupted`, `Other`)
//! or pends at any call, and whose async futures are dropped at any
//! `Pending`, checked against the plaintext and a position by the model
//! the `seek` fuzz target uses (`fuzz/src/seek_model.rs`, included here;
//! its module doc states the rules).
//!
//! - A randomized model test (a seeded loop, deterministic): each case
//!   draws an algorithm, a segment size (100–1000 bytes), a plaintext
//!   length (empty, short, a full-length or a short final segment after
//!   full ones), a reader capacity, `threads(1..=3)`, the inner reader
//!   (`build`; `build_from_buf_read` over the source itself or over a
//!   `BufReader` of some capacity), unrelated bytes before the stream, and
//!   a sequence of ops. It runs once without faults, counting the
//!   source's calls, then once with a fault at each of those calls (the
//!   kinds in turn), then with random fault patterns; on the async front
//!   each `Pending` is either polled again or its future dropped. Every
//!   case runs on every provider.
//! - Named regressions: the smallest sequences that showed stale reader
//!   state after an inner error, a dropped future or a read past the end:
//!   a seek back after a failed in-place open, a length query cut short
//!   (then the length again, or the rest of a segment already opened), a
//!   read past the end cut short, an empty read far past the end.

#![allow(clippy::unwrap_used, dead_code)]

mod common;

#[path = "../fuzz/src/seek_model.rs"]
mod seek_model;

#[cfg(feature = "tokio")]
#[path = "../fuzz/src/seek_model_async.rs"]
mod seek_model_async;

use std::io::{ErrorKind, SeekFrom, Write};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, ReaderBuilder};

use common::{Front, Layout, data};
use seek_model::{
    Case, Fault, Faults, Inner, KINDS, ModelFront, Op, Out, Pattern, Run, drive, std_front,
};

// ---------------------------------------------------------------------
// Streams and fronts.
// ---------------------------------------------------------------------

/// The stream of `pt` under `key` in `segment`-byte segments.
fn seal(key: &Key, segment: usize, pt: &[u8], p: Provider) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .capacity(segment)
        .provider(p)
        .build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// How a case reads: the reader's options and, on the std front, its
/// inner reader; on the async front, which futures are dropped.
#[derive(Clone, Copy, Debug)]
struct How {
    front: Front,
    provider: Provider,
    capacity: usize,
    threads: usize,
    /// With threads: read the next run while one opens.
    prefetch: bool,
    inner: Inner,
    drops: Pattern,
    drop_at: Option<usize>,
}

/// The front `how` says over `case`'s source.
fn open(key: &Key, case: &Case<'_>, how: &How) -> Box<dyn ModelFront> {
    let builder: ReaderBuilder = CipherReader::builder(key)
        .provider(how.provider)
        .capacity(how.capacity)
        .threads(how.threads)
        .threads_after(0)
        .prefetch(how.prefetch);
    match how.front {
        Front::Std => std_front(case, builder, how.inner),
        #[cfg(feature = "tokio")]
        Front::Tokio => Box::new(seek_model_async::AsyncFront::new(
            case,
            builder,
            how.drops,
            how.drop_at,
        )),
    }
}

/// Runs `case` as `how` says; a breach of the model fails the test with
/// `what` (the case and the run) after the model's own message.
fn run(key: &Key, case: &Case<'_>, how: &How, what: &dyn Fn() -> String) -> Run {
    match catch_unwind(AssertUnwindSafe(|| drive(&mut *open(key, case, how), case))) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("failed: {}", what());
            resume_unwind(e)
        }
    }
}

// ---------------------------------------------------------------------
// The randomized model test.
// ---------------------------------------------------------------------

/// A small deterministic generator (xorshift64*), so that a failure
/// names a case that reruns the same.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n")
    }

    fn byte(&mut self) -> u8 {
        self.next().to_le_bytes()[0]
    }

    /// Below `n` (at most 256), as a byte.
    fn small(&mut self, n: usize) -> u8 {
        u8::try_from(self.below(n)).expect("at most 256")
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const SEGMENTS: [usize; 5] = [100, 128, 257, 500, 1000];
const CAPACITIES: [usize; 7] = [1, 64, 100, 500, 1000, 1500, 8192];
const BUF_READERS: [usize; 6] = [1, 64, 300, 1000, 1100, 4096];

/// A plaintext length for `segment`: empty, inside the first segment,
/// whole segments (the final one full-length), or whole segments and a
/// short final one.
fn length(g: &mut Rng, segment: usize) -> usize {
    match g.below(5) {
        0 => 0,
        1 => 1 + g.below(segment - 1),
        2 | 3 => segment * (1 + g.below(3)),
        _ => segment * (1 + g.below(2)) + 1 + g.below(segment - 1),
    }
}

/// A read size: empty, small, around a segment, several segments.
fn size(g: &mut Rng, segment: usize) -> usize {
    match g.below(8) {
        0 => 0,
        1 => 1 + g.below(8),
        2 => 100,
        3 => 1 + g.below(segment),
        4 => segment - 1 + g.below(3),
        5 => 2 * segment + g.below(segment),
        _ => 1 + g.below(200),
    }
}

/// One op: seeks (within, past the end, `u64::MAX`, back a little,
/// from the end either way), reads of every kind, length and position
/// queries.
fn op(g: &mut Rng, len: usize, segment: usize) -> Op {
    let end = len as u64;
    let span = len as i64 + 1;
    match g.below(16) {
        0 | 1 => Op::Seek(SeekFrom::Start(g.next() % (end + 2))),
        2 => Op::Seek(SeekFrom::Start(match g.below(3) {
            0 => u64::MAX,
            1 => end + 1 + g.next() % 5000,
            _ => 1 << 40,
        })),
        3 => Op::Seek(SeekFrom::Current(g.below(600) as i64 - 300)),
        // From the end: forward, or back by up to the whole stream.
        4 => Op::Seek(SeekFrom::End(
            g.below(len + 2) as i64 - g.below(3) as i64 * span / 2,
        )),
        5 | 6 => Op::SeekBack(g.next() % (segment as u64 + 60)),
        7..=9 => Op::Read(size(g, segment)),
        10 => Op::ReadExact(size(g, segment)),
        11 | 12 => Op::Fill(g.below(segment + 1)),
        13 | 14 => Op::Len,
        _ => Op::Pos,
    }
}

/// Sealed streams and cases, each run on every provider.
struct Model {
    key: Key,
    pt: Vec<u8>,
    ct: Vec<u8>,
    prefix: usize,
    ops: Vec<Op>,
    how: How,
    segment: usize,
}

fn draw(g: &mut Rng, front: Front) -> Model {
    let alg = g.pick(Algorithm::ALL);
    let segment = g.pick(&SEGMENTS);
    let len = length(g, segment);
    let key = Key::generate(alg);
    let pt = data(len, g.next());
    let writer = g.pick(Provider::ALL);
    let ct = seal(&key, segment, &pt, writer);
    assert_eq!(ct.len(), Layout::native(segment).stream_len(len));
    let mut ops = Vec::new();
    if g.chance(40) {
        // A caller streaming in small reads (with an odd other op), then
        // anything.
        let s = g.pick(&[7, 64, 100, segment / 3, segment - 1]);
        for _ in 0..(2 * len / s + 2).min(40) {
            ops.push(Op::Read(s));
            if g.chance(10) {
                ops.push(op(g, len, segment));
            }
        }
    }
    let n = 4 + g.below(24);
    ops.extend((0..n).map(|_| op(g, len, segment)));
    let inner = match front {
        Front::Std => match g.below(4) {
            0 => Inner::Plain,
            1 => Inner::BufRead,
            _ => Inner::BufReader(g.pick(&BUF_READERS)),
        },
        #[cfg(feature = "tokio")]
        Front::Tokio => Inner::Plain,
    };
    let threads = 1 + g.below(3);
    Model {
        key,
        pt,
        ct,
        prefix: if g.chance(25) { 7 } else { 0 },
        ops,
        how: How {
            front,
            provider: Provider::default(),
            capacity: g.pick(&CAPACITIES),
            threads,
            prefetch: threads > 1 && g.chance(50),
            inner,
            drops: Pattern::default(),
            drop_at: None,
        },
        segment,
    }
}

/// Counts of a model test, for its report.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    runs: usize,
    injected: usize,
    dropped: usize,
}

/// The source bytes of `m`: the prefix, then the stream.
fn source(m: &Model) -> (Vec<u8>, u64) {
    let mut s = vec![0xC3; m.prefix];
    s.extend_from_slice(&m.ct);
    (s, m.prefix as u64)
}

/// Runs `cases` drawn cases on `front`, each on every provider: clean,
/// with a fault at each call of the clean run (async: a `Pending` at each,
/// its future dropped on every other one), and with random patterns.
fn model_test(front: Front, seed: u64, cases: usize) -> Tally {
    let mut g = Rng(seed);
    let mut t = Tally::default();
    for i in 0..cases {
        let m = draw(&mut g, front);
        let (src, start) = source(&m);
        let mut case = Case {
            pt: &m.pt,
            source: src,
            start,
            mutated: false,
            shape: false,
            ops: m.ops.clone(),
            faults: Faults::none(),
        };
        let patterns: Vec<(Pattern, u8, Pattern)> = (0..3)
            .map(|_| {
                let every = Pattern {
                    bits: g.byte(),
                    len: 1 + g.small(8),
                };
                let drops = Pattern {
                    bits: g.byte(),
                    len: g.small(9),
                };
                (every, g.small(4), drops)
            })
            .collect();
        for &provider in Provider::ALL {
            let how = How { provider, ..m.how };
            let what = |faults: &Faults, how: &How| {
                format!(
                    "case {i} (seed {seed:#x}): {} plaintext bytes in {}-byte segments, {how:?}, \
                     prefix {}, ops {:?}, faults {faults:?}",
                    m.pt.len(),
                    m.segment,
                    m.prefix,
                    m.ops
                )
            };
            case.faults = Faults::none();
            let clean = run(&m.key, &case, &how, &|| what(&case.faults, &how));
            assert_eq!(clean.injected + clean.dropped, 0);
            t.runs += 1;
            for k in 0..clean.calls {
                let fault = match front {
                    Front::Std => KINDS[1 + k % 3],
                    #[cfg(feature = "tokio")]
                    Front::Tokio => KINDS[k % 4],
                };
                case.faults = Faults::one(k, fault);
                let how = How {
                    drop_at: (k % 2 == 0).then_some(0),
                    ..how
                };
                let r = run(&m.key, &case, &how, &|| what(&case.faults, &how));
                t.runs += 1;
                t.injected += r.injected;
                t.dropped += r.dropped;
            }
            for &(every, kind, drops) in &patterns {
                case.faults = Faults {
                    at: Vec::new(),
                    every,
                    kind,
                };
                let how = How { drops, ..how };
                let r = run(&m.key, &case, &how, &|| what(&case.faults, &how));
                t.runs += 1;
                t.injected += r.injected;
                t.dropped += r.dropped;
            }
        }
        t.cases += 1;
    }
    t
}

/// The std front: 1500 cases (each on every provider: one clean run, one
/// per source call with a fault there, three with fault patterns).
#[test]
fn model_std_reader_under_inner_faults() {
    let t = model_test(Front::Std, 0x5EE4_F417, 1500);
    eprintln!("std: {t:?}");
    assert!(t.injected > 10 * t.cases, "{t:?}: too few faults met");
}

/// The tokio front: 1500 cases, `Pending` at each source call and
/// futures dropped.
#[cfg(feature = "tokio")]
#[test]
fn model_async_reader_under_pending_faults_and_drops() {
    let t = model_test(Front::Tokio, 0xA5E4_F417, 1500);
    eprintln!("tokio: {t:?}");
    assert!(t.injected > 10 * t.cases, "{t:?}: too few faults met");
    assert!(t.dropped > t.cases, "{t:?}: too few futures dropped");
}

// ---------------------------------------------------------------------
// Named regressions.
// ---------------------------------------------------------------------

/// A stream of `len` bytes of [`data`] (no zero byte) in `segment`-byte
/// AES-128-GCM segments.
fn stream(len: usize, segment: usize) -> (Key, Vec<u8>, Vec<u8>) {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(len, len as u64);
    let ct = seal(&key, segment, &pt, Provider::default());
    (key, pt, ct)
}

fn case_of<'a>(pt: &'a [u8], ct: &[u8], faults: Faults) -> Case<'a> {
    Case {
        pt,
        source: ct.to_vec(),
        start: 0,
        mutated: false,
        shape: false,
        ops: Vec::new(),
        faults,
    }
}

/// Every way to read with `capacity` on `fronts` (each provider; on the
/// async front futures dropped at their first `Pending` when `drop`).
fn hows(fronts: &[Front], inner: Inner, capacity: usize, drop: bool) -> Vec<How> {
    fronts
        .iter()
        .flat_map(|&front| {
            Provider::ALL.iter().map(move |&provider| How {
                front,
                provider,
                capacity,
                threads: 1,
                prefetch: false,
                inner,
                drops: Pattern::default(),
                drop_at: drop.then_some(0),
            })
        })
        .collect()
}

/// The number of source calls `steps` make on a faultless source.
fn calls(key: &Key, pt: &[u8], ct: &[u8], how: &How, steps: impl Fn(&mut dyn ModelFront)) -> usize {
    let case = case_of(pt, ct, Faults::none());
    let mut f = open(key, &case, how);
    steps(&mut *f);
    f.counters().calls.get()
}

/// `Ok` bytes or an injected error (or a dropped future: `None`); a
/// cipherio error fails the test.
fn read_some(ctx: &str, f: &mut dyn ModelFront, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; n];
    match f.read(&mut b) {
        Out::Ok(got) => Some(b[..got].to_vec()),
        Out::Err(e) => {
            assert!(seek_model::is_injected(&e), "{ctx}: read: {e:?}");
            None
        }
        Out::Dropped => None,
    }
}

/// Reads to the end, retrying injected errors and dropped futures.
fn read_rest(ctx: &str, f: &mut dyn ModelFront) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..10_000 {
        match read_some(ctx, f, 777) {
            Some(b) if b.is_empty() => return out,
            Some(b) => out.extend_from_slice(&b),
            None => {}
        }
    }
    panic!("{ctx}: no end");
}

/// A seek, retried until it is done.
fn seek(ctx: &str, f: &mut dyn ModelFront, to: SeekFrom) -> u64 {
    for _ in 0..100 {
        match f.seek(to) {
            Out::Ok(p) => return p,
            Out::Err(e) => assert!(seek_model::is_injected(&e), "{ctx}: seek: {e:?}"),
            Out::Dropped => {}
        }
    }
    panic!("{ctx}: the seek never completed");
}

/// The length, retried until it is known: never a cipherio error.
fn length_of(ctx: &str, f: &mut dyn ModelFront) -> u64 {
    for _ in 0..100 {
        match f.len() {
            Out::Ok(n) => return n,
            Out::Err(e) => {
                assert!(seek_model::is_injected(&e), "{ctx}: plaintext_len: {e:?}");
            }
            Out::Dropped => {}
        }
    }
    panic!("{ctx}: the length query never completed");
}

/// `build_from_buf_read` over a seekable source, 100-byte reads of two
/// full-length segments: the second is first tried in place as a
/// non-final one and fails (it is the final one), which wipes the
/// plaintext buffer. An inner error at any later call must not leave the
/// reader taking that buffer for the first segment: a seek back into the
/// first segment reads its plaintext, not zeros.
#[test]
fn inner_error_after_a_failed_in_place_open_then_seek_back_reads_plaintext() {
    let (key, pt, ct) = stream(2000, 1000);
    let reads = |f: &mut dyn ModelFront| {
        let mut b = [0u8; 100];
        while matches!(f.read(&mut b), Out::Ok(n) if n > 0) {}
    };
    let inners = [
        Inner::BufRead,
        Inner::BufReader(1100),
        Inner::BufReader(4096),
    ];
    for (inner, capacity) in inners.into_iter().flat_map(|i| [(i, 1000), (i, 8192)]) {
        for how in hows(&[Front::Std], inner, capacity, false) {
            let n = calls(&key, &pt, &ct, &how, reads);
            for k in 0..n {
                for kind in [
                    ErrorKind::WouldBlock,
                    ErrorKind::Interrupted,
                    ErrorKind::Other,
                ] {
                    let ctx = &format!("{how:?}: {kind:?} at source call {k}");
                    let case = case_of(&pt, &ct, Faults::one(k, Fault::Error(kind)));
                    let mut f = open(&key, &case, &how);
                    let mut at = 0;
                    while let Some(b) = read_some(ctx, &mut *f, 100) {
                        assert!(b[..] == pt[at..at + b.len()], "{ctx}: wrong bytes at {at}");
                        at += b.len();
                        if b.is_empty() {
                            break;
                        }
                    }
                    assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(950)), 950, "{ctx}");
                    let back = read_some(ctx, &mut *f, 50).unwrap();
                    assert!(back[..] == pt[950..950 + back.len()], "{ctx}: {back:?}");
                    assert_eq!(back.len(), 50, "{ctx}");
                    assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(0)), 0, "{ctx}");
                    assert!(read_rest(ctx, &mut *f) == pt, "{ctx}: reread");
                }
            }
        }
    }
}

/// A length query cut short by an inner error at any call, then a read,
/// then the length again: the true length (never `Truncated` on an intact
/// stream), and the stream reads whole.
fn length_query_cut_short(fronts: &[Front], fault: Fault, drop: bool) {
    let (key, pt, ct) = stream(1050, 100);
    let steps = |f: &mut dyn ModelFront| {
        let _ = f.len();
        let _ = f.read(&mut [0u8; 10]);
        let _ = f.len();
    };
    for how in hows(fronts, Inner::Plain, 64, drop) {
        let n = calls(&key, &pt, &ct, &how, steps);
        for k in 0..n {
            let ctx = &format!("{how:?}: {fault:?} at source call {k}");
            let case = case_of(&pt, &ct, Faults::one(k, fault));
            let mut f = open(&key, &case, &how);
            match f.len() {
                Out::Ok(n) => assert_eq!(n, 1050, "{ctx}"),
                Out::Err(e) => assert!(seek_model::is_injected(&e), "{ctx}: {e:?}"),
                Out::Dropped => {}
            }
            if let Some(b) = read_some(ctx, &mut *f, 10) {
                assert!(b[..] == pt[..b.len()], "{ctx}: wrong bytes");
            }
            assert_eq!(length_of(ctx, &mut *f), 1050, "{ctx}");
            assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(0)), 0, "{ctx}");
            assert!(read_rest(ctx, &mut *f) == pt, "{ctx}: reread");
        }
    }
}

#[test]
fn length_query_cut_short_by_an_inner_error_then_read_then_length() {
    for kind in [
        ErrorKind::WouldBlock,
        ErrorKind::Interrupted,
        ErrorKind::Other,
    ] {
        length_query_cut_short(Front::ALL, Fault::Error(kind), false);
    }
}

/// The same with the async length future dropped at a `Pending`.
#[cfg(feature = "tokio")]
#[test]
fn length_query_future_dropped_then_read_then_length() {
    length_query_cut_short(&[Front::Tokio], Fault::Pending, true);
}

/// A stream of one full-length segment, read in part (the segment opened,
/// the end not yet confirmed), then a length query cut short at any call
/// (it moves the source to the final segment), and if `again` a short
/// read and a length query that completes: the rest reads to a clean end,
/// whole (never `TrailingData` from the final segment read twice, nor a
/// clean end before the end).
fn read_then_length_query_cut_short(fronts: &[Front], fault: Fault, drop: bool, again: bool) {
    let (key, pt, ct) = stream(500, 500);
    let steps = |f: &mut dyn ModelFront| {
        let _ = f.read(&mut [0u8; 110]);
        let _ = f.len();
    };
    for capacity in [64, 8192] {
        for how in hows(fronts, Inner::Plain, capacity, drop) {
            let n = calls(&key, &pt, &ct, &how, steps);
            for k in 0..n {
                let ctx = &format!("{how:?}: {fault:?} at source call {k}");
                let case = case_of(&pt, &ct, Faults::one(k, fault));
                let mut f = open(&key, &case, &how);
                let mut got = Vec::new();
                while got.len() < 110 {
                    if let Some(b) = read_some(ctx, &mut *f, 110 - got.len()) {
                        got.extend_from_slice(&b);
                    }
                }
                match f.len() {
                    Out::Ok(n) => assert_eq!(n, 500, "{ctx}"),
                    Out::Err(e) => assert!(seek_model::is_injected(&e), "{ctx}: {e:?}"),
                    Out::Dropped => {}
                }
                if again {
                    if let Some(b) = read_some(ctx, &mut *f, 7) {
                        got.extend_from_slice(&b);
                    }
                    assert_eq!(length_of(ctx, &mut *f), 500, "{ctx}");
                }
                got.extend(read_rest(ctx, &mut *f));
                assert!(got == pt, "{ctx}: wrong plaintext");
            }
        }
    }
}

#[test]
fn read_then_length_query_cut_short_by_an_inner_error_then_read_on() {
    for kind in [
        ErrorKind::WouldBlock,
        ErrorKind::Interrupted,
        ErrorKind::Other,
    ] {
        read_then_length_query_cut_short(Front::ALL, Fault::Error(kind), false, false);
    }
}

/// The same with the async length future dropped at a `Pending`.
#[cfg(feature = "tokio")]
#[test]
fn read_then_length_query_future_dropped_then_read_on() {
    read_then_length_query_cut_short(&[Front::Tokio], Fault::Pending, true, false);
}

/// The same, then a short read and a length query that completes before
/// the rest.
#[test]
fn read_then_length_query_cut_short_then_length_again_then_read_on() {
    for kind in [
        ErrorKind::WouldBlock,
        ErrorKind::Interrupted,
        ErrorKind::Other,
    ] {
        read_then_length_query_cut_short(Front::ALL, Fault::Error(kind), false, true);
    }
    #[cfg(feature = "tokio")]
    read_then_length_query_cut_short(&[Front::Tokio], Fault::Pending, true, true);
}

/// A read past the end cut short (by an inner error at any call, or its
/// dropped future), then a seek back to the start: the stream reads whole
/// (never a sticky `Truncated` on an intact stream).
fn read_past_the_end_cut_short(fronts: &[Front], fault: Fault, drop: bool) {
    let (key, pt, ct) = stream(1050, 100);
    let steps = |f: &mut dyn ModelFront| {
        let _ = f.seek(SeekFrom::Start(2000));
        let _ = f.read(&mut [0u8; 10]);
    };
    for how in hows(fronts, Inner::Plain, 64, drop) {
        let n = calls(&key, &pt, &ct, &how, steps);
        for k in 0..n {
            let ctx = &format!("{how:?}: {fault:?} at source call {k}");
            let case = case_of(&pt, &ct, Faults::one(k, fault));
            let mut f = open(&key, &case, &how);
            assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(2000)), 2000, "{ctx}");
            if let Some(b) = read_some(ctx, &mut *f, 10) {
                assert!(b.is_empty(), "{ctx}: bytes past the end");
            }
            assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(0)), 0, "{ctx}");
            assert!(read_rest(ctx, &mut *f) == pt, "{ctx}: reread");
            assert_eq!(length_of(ctx, &mut *f), 1050, "{ctx}");
        }
    }
}

#[test]
fn read_past_the_end_cut_short_by_an_inner_error_then_seek_back() {
    for kind in [
        ErrorKind::WouldBlock,
        ErrorKind::Interrupted,
        ErrorKind::Other,
    ] {
        read_past_the_end_cut_short(Front::ALL, Fault::Error(kind), false);
    }
}

/// The same with the async read future dropped at a `Pending`.
#[cfg(feature = "tokio")]
#[test]
fn read_past_the_end_future_dropped_then_seek_back() {
    read_past_the_end_cut_short(&[Front::Tokio], Fault::Pending, true);
}

/// No fault at all: an empty read at `u64::MAX` (which does not check the
/// end), then a seek back to the start: the stream reads whole.
#[test]
fn empty_read_far_past_the_end_then_seek_back() {
    for len in [0, 1050] {
        let (key, pt, ct) = stream(len, 100);
        for how in hows(Front::ALL, Inner::Plain, 64, false) {
            let ctx = &format!("{len} bytes, {how:?}");
            let case = case_of(&pt, &ct, Faults::none());
            let mut f = open(&key, &case, &how);
            assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(u64::MAX)), u64::MAX);
            assert_eq!(read_some(ctx, &mut *f, 0), Some(Vec::new()), "{ctx}");
            assert_eq!(seek(ctx, &mut *f, SeekFrom::Start(0)), 0, "{ctx}");
            assert!(read_rest(ctx, &mut *f) == pt, "{ctx}: reread");
        }
    }
}
