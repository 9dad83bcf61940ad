//! `--layouts`: how fast two threads can decrypt one stream for a caller
//! that reads 8 KiB at a time (`io::copy`), by the way the work is laid
//! out between them, with nothing of cipherio in the way: the raw AEADs,
//! 64 KiB segments, `memcpy` for the inner reader and the hand-out.
//!
//! Each segment costs three steps: its sealed bytes read into a buffer
//! (a copy from the source), the opening into a plaintext buffer, and the
//! hand-out in 8 KiB copies. One thread does the three in turn; the
//! ceiling is two such streams at once, sharing nothing. The two-thread
//! layouts keep every read of the inner reader and every hand-out on the
//! calling thread (cipherio's `Read` does not ask `R: Send`) except the
//! last, and differ in when the second thread may open:
//!
//! - *runs of 8*: the caller reads 8 segments, both threads open them
//!   (each takes the next unopened one), the caller waits for the last
//!   and hands the 8 out while the other thread has nothing to do
//!   (cipherio's `threads(2)` reader: runs of 512 KiB);
//! - *…, prefetch*: the caller reads the next run while the other thread
//!   opens this one (cipherio's with prefetch), in runs of 8 or 16;
//! - *…, prefetch, posted*: besides, the other thread opens the next run
//!   while the caller hands this one out (runs that outlive their call),
//!   in runs of 8 or 16;
//! - *pipeline*: no runs: the caller hands each segment out as soon as it
//!   is open; when the next one is not, it reads sealed bytes while fewer
//!   than 4 read segments wait to be opened, else opens the next one
//!   itself, else reads further (32 segments at most in flight); waits
//!   park (no spin) and the side that makes work wakes the other;
//! - *pipeline, spinning waits*: the same, every wait a spin (no wake-up
//!   costs);
//! - *pipeline, each thread reads its own*: each thread reads the sealed
//!   bytes of the segments it opens (in order), so only the plaintext of
//!   the other thread's segments crosses cores (what `R: Send` would
//!   allow); its waits spin.
//!
//! The run layouts wait by spinning: what they give with waits that cost
//! nothing. The ring's buffers are allocated once, outside the timing (a
//! one-thread stream's two are allocated in it), and the counters both
//! threads touch sit on cache lines of their own. Every round runs each
//! layout once, in an order shuffled anew each round and each run; a
//! layout's ÷ ceiling is taken in each round against that round's
//! ceiling, then its median over the rounds.

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use aead::consts::{U12, U16};
use aead::{AeadInOut, KeyInit, inout::InOutBuf};

use crate::busy::shuffled;
use crate::report::{cell, loadavg, pattern, stats};

const SEG: usize = 64 * 1024;
const TAG: usize = 16;
const SEALED: usize = SEG + TAG;
/// Bytes per hand-out, as `io::copy` asks.
const CALL: usize = 8 * 1024;
/// Segments in flight at most (buffers in the ring).
const RING: usize = 32;
/// Read segments the pipeline's caller keeps ahead of the openings.
const AHEAD: usize = 4;

/// What the command line asked for.
pub struct Args {
    /// Plaintext length in 64 KiB segments.
    segments: usize,
    rounds: usize,
    smoke: bool,
    /// Where this run's shuffled orders start (from the clock): each run
    /// draws its own.
    seed: usize,
}

/// `--layouts [--smoke] [--rounds N] [--mib N]`.
pub fn parse() -> Result<Args, String> {
    let usage = "usage: threads_bench --layouts [--smoke] [--rounds N] [--mib N]";
    let mut a = Args {
        segments: 32 * 16,
        rounds: 30,
        smoke: false,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as usize),
    };
    let mut it = std::env::args().skip(1).filter(|a| a != "--layouts");
    while let Some(arg) = it.next() {
        match arg.as_str() {
            // A length no run size divides, over a ring it wraps: the
            // smoke check covers slot reuse and a short last run.
            "--smoke" => (a.segments, a.rounds, a.smoke) = (83, 1, true),
            "--rounds" | "--mib" => {
                let v: usize = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&v| v > 0)
                    .ok_or_else(|| format!("{arg} needs a positive number"))?;
                if arg == "--rounds" {
                    a.rounds = v;
                } else {
                    a.segments = v.saturating_mul(16);
                }
            }
            "-h" | "--help" => return Err(usage.into()),
            other => return Err(format!("unknown argument {other:?}\n{usage}")),
        }
    }
    Ok(a)
}

/// An AEAD as the segments use it.
trait Seg: AeadInOut<NonceSize = U12, TagSize = U16> + KeyInit + Sync {}
impl<A: AeadInOut<NonceSize = U12, TagSize = U16> + KeyInit + Sync> Seg for A {}

fn nonce(i: usize) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&(i as u64).to_be_bytes());
    n
}

fn seal<A: Seg>(a: &A, plain: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; plain.len() / SEG * SEALED];
    for (i, (p, c)) in plain.chunks(SEG).zip(out.chunks_mut(SEALED)).enumerate() {
        let (body, tag) = c.split_at_mut(SEG);
        let t = a
            .encrypt_inout_detached((&nonce(i)).into(), b"", InOutBuf::new(p, body).unwrap())
            .expect("a segment within the AEAD's limit");
        tag.copy_from_slice(&t);
    }
    out
}

fn open<A: Seg>(a: &A, i: usize, sealed: &[u8], plain: &mut [u8]) {
    let (body, tag) = sealed.split_at(SEG);
    let tag: &[u8; TAG] = tag.try_into().unwrap();
    a.decrypt_inout_detached(
        (&nonce(i)).into(),
        b"",
        InOutBuf::new(body, plain).unwrap(),
        tag.into(),
    )
    .expect("a segment this run sealed opens");
}

/// Where the hand-out goes: an 8 KiB buffer overwritten call after call
/// (`io::copy`'s), or, in a smoke run, everything, to be compared with the
/// plaintext.
struct Sink {
    call: [u8; CALL],
    all: Option<Vec<u8>>,
}

impl Sink {
    fn new(keep: bool) -> Sink {
        Sink {
            call: [0; CALL],
            all: keep.then(Vec::new),
        }
    }

    fn hand_out(&mut self, plain: &[u8]) {
        for c in plain.chunks(CALL) {
            self.call[..c.len()].copy_from_slice(c);
            black_box(&self.call);
            if let Some(all) = &mut self.all {
                all.extend_from_slice(c);
            }
        }
    }
}

fn sealed(src: &[u8], i: usize) -> &[u8] {
    &src[i * SEALED..(i + 1) * SEALED]
}

/// One thread: read, open, hand out, segment after segment.
fn one<A: Seg>(a: &A, src: &[u8], sink: &mut Sink) {
    let mut buf = vec![0u8; SEALED];
    let mut plain = vec![0u8; SEG];
    for i in 0..src.len() / SEALED {
        buf.copy_from_slice(sealed(src, i));
        open(a, i, &buf, &mut plain);
        sink.hand_out(&plain);
    }
}

/// A side that waits: spins, or parks until the other side wakes it.
struct Bell {
    parks: bool,
    asleep: AtomicBool,
}

impl Bell {
    fn new(parks: bool) -> Bell {
        Bell {
            parks,
            asleep: AtomicBool::new(false),
        }
    }

    fn wait(&self, ready: impl Fn() -> bool) {
        if !self.parks {
            while !ready() {
                std::hint::spin_loop();
            }
            return;
        }
        self.asleep.store(true, Ordering::SeqCst);
        // The flag is set before the check, as `wake` publishes before it
        // looks at the flag: one of the two sides sees the other.
        std::sync::atomic::fence(Ordering::SeqCst);
        while !ready() {
            thread::park_timeout(Duration::from_millis(1));
        }
        self.asleep.store(false, Ordering::SeqCst);
    }

    /// Wakes the side that waits on this bell, if it sleeps; called after
    /// the work it waits for is published (the fence orders that store
    /// before this load).
    fn wake(&self, t: &Thread) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) {
            t.unpark();
        }
    }
}

/// A value on a cache line (two, for the adjacent-line prefetcher) of its
/// own: one thread's writes to it do not slow the other's reads of its
/// neighbours.
#[repr(align(128))]
#[derive(Default)]
struct Line<T>(T);

impl<T> std::ops::Deref for Line<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The ring's buffers, allocated once for every pass of a layout.
pub struct Slots {
    sealed: Vec<Mutex<Vec<u8>>>,
    plain: Vec<Mutex<Vec<u8>>>,
}

impl Slots {
    fn new() -> Slots {
        Slots {
            sealed: (0..RING).map(|_| Mutex::new(vec![1; SEALED])).collect(),
            plain: (0..RING).map(|_| Mutex::new(vec![1; SEG])).collect(),
        }
    }
}

/// The ring both threads share, and where each segment is.
struct Ring<'s> {
    sealed: &'s [Mutex<Vec<u8>>],
    plain: &'s [Mutex<Vec<u8>>],
    segments: usize,
    /// Segments whose sealed bytes are in the ring.
    read: Line<AtomicUsize>,
    /// The segments below it may be opened (the run layouts' gate).
    gate: Line<AtomicUsize>,
    /// The next segment to open.
    next: Line<AtomicUsize>,
    /// Slot i % RING holds i + 1 once segment i is open.
    opened: Vec<Line<AtomicUsize>>,
    /// Segments handed out.
    out: Line<AtomicUsize>,
    done: Line<AtomicBool>,
}

impl<'s> Ring<'s> {
    fn new(slots: &'s Slots, segments: usize) -> Ring<'s> {
        Ring {
            sealed: &slots.sealed,
            plain: &slots.plain,
            segments,
            read: Line::default(),
            gate: Line::default(),
            next: Line::default(),
            opened: (0..RING).map(|_| Line::default()).collect(),
            out: Line::default(),
            done: Line::default(),
        }
    }

    fn slot<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads segment i's sealed bytes into its slot.
    fn read(&self, src: &[u8], i: usize) {
        Self::slot(&self.sealed[i % RING]).copy_from_slice(sealed(src, i));
        self.read.store(i + 1, Ordering::Release);
    }

    /// The segments below it may be opened now: those below the gate, or
    /// with `own_reads` those the ring has room for.
    fn limit(&self, own_reads: bool) -> usize {
        if own_reads {
            (self.out.load(Ordering::Acquire) + RING).min(self.segments)
        } else {
            self.gate.load(Ordering::Acquire)
        }
    }

    /// The next segment to open, claimed, if one may be opened now.
    fn claim(&self, own_reads: bool) -> Option<usize> {
        let i = self.next.load(Ordering::Acquire);
        (i < self.limit(own_reads))
            .then(|| {
                self.next
                    .compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            })
            .and_then(Result::ok)
    }

    /// Opens claimed segment i; with `own_reads` reads it first, in turn.
    fn open<A: Seg>(&self, a: &A, src: &[u8], i: usize, own_reads: bool) {
        if own_reads {
            while self.read.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            self.read(src, i);
        }
        let s = Self::slot(&self.sealed[i % RING]);
        open(a, i, &s, &mut Self::slot(&self.plain[i % RING]));
        self.opened[i % RING].store(i + 1, Ordering::Release);
    }

    fn is_open(&self, i: usize) -> bool {
        self.opened[i % RING].load(Ordering::Acquire) == i + 1
    }

    fn hand_out(&self, i: usize, sink: &mut Sink) {
        sink.hand_out(&Self::slot(&self.plain[i % RING]));
        self.out.store(i + 1, Ordering::Release);
    }
}

/// The other thread of every two-thread layout: opens what it may until
/// the caller is done.
fn helper<A: Seg>(
    a: &A,
    src: &[u8],
    r: &Ring,
    own_reads: bool,
    me: &Bell,
    caller: &Thread,
    bell: &Bell,
) {
    while !r.done.load(Ordering::Acquire) {
        match r.claim(own_reads) {
            Some(i) => {
                r.open(a, src, i, own_reads);
                bell.wake(caller);
            }
            None => me.wait(|| {
                r.done.load(Ordering::Acquire)
                    || r.next.load(Ordering::Acquire) < r.limit(own_reads)
            }),
        }
    }
}

/// The run layouts: `prefetch` reads the next run while this one opens,
/// `posted` lets the other thread open the next run during the hand-out.
fn runs<A: Seg>(
    a: &A,
    src: &[u8],
    slots: &Slots,
    sink: &mut Sink,
    run: usize,
    prefetch: bool,
    posted: bool,
) {
    // The next run is read ahead only with prefetch, so only then may it
    // be opened ahead; two runs must fit in the ring.
    assert!(!posted || prefetch);
    assert!(2 * run <= RING);
    let n = src.len() / SEALED;
    let r = Ring::new(slots, n);
    let (spin, spin2) = (Bell::new(false), Bell::new(false));
    let caller = thread::current();
    thread::scope(|s| {
        s.spawn(|| helper(a, src, &r, false, &spin, &caller, &spin2));
        let read = |from: usize, to: usize| (from..to.min(n)).for_each(|i| r.read(src, i));
        if prefetch {
            read(0, run);
        }
        let mut start = 0;
        while start < n {
            let end = (start + run).min(n);
            if !prefetch {
                read(start, end);
            }
            r.gate.fetch_max(end, Ordering::AcqRel);
            if prefetch {
                read(end, end + run);
            }
            while let Some(i) = r.claim(false) {
                r.open(a, src, i, false);
            }
            (start..end).for_each(|i| spin.wait(|| r.is_open(i)));
            if posted {
                r.gate.fetch_max((end + run).min(n), Ordering::AcqRel);
            }
            (start..end).for_each(|i| r.hand_out(i, sink));
            start = end;
        }
        r.done.store(true, Ordering::Release);
    });
}

/// The pipeline layouts.
fn pipeline<A: Seg>(
    a: &A,
    src: &[u8],
    slots: &Slots,
    sink: &mut Sink,
    parks: bool,
    own_reads: bool,
) {
    // With its own reads, nothing wakes the other thread when the
    // hand-out frees a slot: its waits must spin.
    assert!(!(parks && own_reads));
    let n = src.len() / SEALED;
    let r = Ring::new(slots, n);
    let (mine, theirs) = (Bell::new(parks), Bell::new(parks));
    let caller = thread::current();
    thread::scope(|s| {
        let h = s.spawn(|| helper(a, src, &r, own_reads, &theirs, &caller, &mine));
        let helper_thread = h.thread().clone();
        // Reads segment i and lets the other thread open it.
        let read_one = |i: usize| {
            r.read(src, i);
            r.gate.store(i + 1, Ordering::Release);
            theirs.wake(&helper_thread);
        };
        let mut out = 0;
        while out < n {
            if r.is_open(out) {
                r.hand_out(out, sink);
                out += 1;
                continue;
            }
            if !own_reads {
                // Reads first while the other thread has few to open, then
                // opens, then reads further.
                let read = r.read.load(Ordering::Acquire);
                let room = read < n && read < out + RING;
                if room && read - r.next.load(Ordering::Acquire) < AHEAD {
                    read_one(read);
                    continue;
                }
                if let Some(i) = r.claim(false) {
                    r.open(a, src, i, false);
                    continue;
                }
                if room {
                    read_one(read);
                    continue;
                }
            } else if let Some(i) = r.claim(true) {
                r.open(a, src, i, true);
                continue;
            }
            mine.wait(|| r.is_open(out));
        }
        r.done.store(true, Ordering::Release);
        helper_thread.unpark();
    });
}

const LAYOUTS: [&str; 10] = [
    "one thread",
    "ceiling (two one-thread streams)",
    "runs of 8",
    "runs of 8, prefetch",
    "runs of 8, prefetch, posted",
    "runs of 16, prefetch",
    "runs of 16, prefetch, posted",
    "pipeline",
    "pipeline, spinning waits",
    "pipeline, each thread reads its own",
];

fn layout<A: Seg>(v: usize, a: &A, src: &[u8], src2: &[u8], slots: &Slots, sink: &mut Sink) {
    match v {
        0 => one(a, src, sink),
        1 => thread::scope(|s| {
            s.spawn(|| one(a, src2, &mut Sink::new(false)));
            one(a, src, sink);
        }),
        2 => runs(a, src, slots, sink, 8, false, false),
        3 => runs(a, src, slots, sink, 8, true, false),
        4 => runs(a, src, slots, sink, 8, true, true),
        5 => runs(a, src, slots, sink, 16, true, false),
        6 => runs(a, src, slots, sink, 16, true, true),
        7 => pipeline(a, src, slots, sink, true, false),
        8 => pipeline(a, src, slots, sink, false, false),
        _ => pipeline(a, src, slots, sink, false, true),
    }
}

/// `salt` tells the algorithms' shuffled orders apart.
fn algorithm<A: Seg>(name: &str, salt: usize, args: &Args, out: &mut String) -> io::Result<()> {
    let a = A::new(&Default::default());
    let plain = pattern(args.segments * SEG);
    let src = seal(&a, &plain);
    let src2 = src.clone();
    let slots = Slots::new();
    let layouts = LAYOUTS.len();
    let mut mbs = vec![Vec::new(); layouts];
    let mut ratio = vec![Vec::new(); layouts];
    for r in 0..args.rounds {
        let mut round = vec![0.0; layouts];
        for v in shuffled(layouts, args.seed.wrapping_add(salt * args.rounds + r)) {
            let mut sink = Sink::new(args.smoke);
            let t = Instant::now();
            layout(v, &a, &src, &src2, &slots, &mut sink);
            let secs = t.elapsed().as_secs_f64();
            if args.smoke && sink.all.as_deref() != Some(&plain[..]) {
                return Err(io::Error::other(format!(
                    "{name}, {}: the hand-out is not the plaintext",
                    LAYOUTS[v]
                )));
            }
            let streams = if v == 1 { 2.0 } else { 1.0 };
            round[v] = streams * plain.len() as f64 / secs / 1e6;
        }
        for v in 0..layouts {
            mbs[v].push(round[v]);
            ratio[v].push(round[v] / round[1]);
        }
    }
    use std::fmt::Write as _;
    let _ = writeln!(out, "\n### {name}\n");
    let _ = writeln!(
        out,
        "| layout | MB/s | ÷ one thread | ÷ ceiling (per round) |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    let one = stats(&mbs[0]).0;
    for v in 0..layouts {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {} |",
            LAYOUTS[v],
            cell(&mbs[v], 0),
            stats(&mbs[v]).0 / one,
            cell(&ratio[v], 2)
        );
    }
    Ok(())
}

/// Two layouts of the raw AEADs measured beside cipherio's streams in the
/// same rounds (`--busy`), so that a ratio between them is paired by round
/// and moves with the machine's state much less than a ratio to the
/// ceiling.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bound {
    /// Runs of 8 with prefetch: the layout of cipherio's `threads(2)`
    /// reader with prefetch, for 8 KiB reads.
    Runs8Prefetch,
    /// The pipeline, waits parked.
    Pipeline,
}

impl Bound {
    /// Both, in table order.
    pub const ALL: [Bound; 2] = [Bound::Runs8Prefetch, Bound::Pipeline];
}

/// The plaintext sealed with the raw AEADs (zero keys, counter nonces),
/// for [`Bound`]s.
pub struct Bounds {
    chacha: Vec<u8>,
    aes: Vec<u8>,
    slots: Slots,
}

impl Bounds {
    /// Seals `plain`'s whole 64 KiB segments with both algorithms.
    pub fn new(plain: &[u8]) -> Bounds {
        let plain = &plain[..plain.len() / SEG * SEG];
        Bounds {
            chacha: seal(
                &chacha20poly1305::ChaCha20Poly1305::new(&Default::default()),
                plain,
            ),
            aes: seal(&aes_gcm::Aes128Gcm::new(&Default::default()), plain),
            slots: Slots::new(),
        }
    }

    /// One pass of `bound` for ChaCha20-Poly1305 (`chacha`) or
    /// AES-128-GCM: its wall time.
    pub fn pass(&self, chacha: bool, bound: Bound) -> Duration {
        fn go<A: Seg>(src: &[u8], slots: &Slots, bound: Bound) -> Duration {
            let a = A::new(&Default::default());
            let mut sink = Sink::new(false);
            let t = Instant::now();
            match bound {
                Bound::Runs8Prefetch => runs(&a, src, slots, &mut sink, 8, true, false),
                Bound::Pipeline => pipeline(&a, src, slots, &mut sink, true, false),
            }
            t.elapsed()
        }
        if chacha {
            go::<chacha20poly1305::ChaCha20Poly1305>(&self.chacha, &self.slots, bound)
        } else {
            go::<aes_gcm::Aes128Gcm>(&self.aes, &self.slots, bound)
        }
    }
}

/// Runs every layout for both algorithms and prints the tables.
pub fn run(args: &Args) -> io::Result<()> {
    let mut out = format!(
        "## Layouts of two threads decrypting one stream for 8 KiB reads\n\n{} segments of 64 KiB, {} rounds, each layout once per round, in an order shuffled anew each round; medians (min–max). Load average before: {}.\n",
        args.segments,
        args.rounds,
        loadavg()
    );
    if args.smoke {
        out.push_str("\n(--smoke: every layout's hand-out checked against the plaintext; the timings below mean nothing.)\n");
    }
    algorithm::<chacha20poly1305::ChaCha20Poly1305>("ChaCha20-Poly1305", 0, args, &mut out)?;
    algorithm::<aes_gcm::Aes128Gcm>("AES-128-GCM", 1, args, &mut out)?;
    print!("{out}");
    Ok(())
}
