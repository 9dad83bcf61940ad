//! `--busy`: threaded streams on a machine that runs something else.
//!
//! People set a thread count once, in configuration, and the machine's
//! load changes under it; a threaded stream must not turn slower than one
//! thread when the other cores are taken. This mode starts its own
//! CPU-bound processes (this executable with `--spin SECS`: a loop that
//! ends after SECS seconds even if this process dies, and is killed as
//! soon as its load level is measured; pinned one per CPU with `taskset`
//! when it is there, unless `--unpinned`) and measures, at 0, 1 and 2 of
//! them, `threads(n)` for n = 1, 2, 3 and 8 and the ceiling of `n`
//! (`n` one-thread streams at once over 1/`n` of the plaintext each), for
//! each way a caller moves bytes:
//!
//! - decrypt with 1 MiB reads, with `io::copy` (8 KiB reads into
//!   `io::sink()`), and through `BufRead` (`fill_buf`/`consume`), from a
//!   plain `Read` (the sealed bytes copied into the read-ahead), each
//!   with and without `prefetch(true)` (the prefetching calls paired with
//!   the same calls without it, round by round);
//! - decrypt with 1 MiB reads from an inner `BufRead`
//!   (`build_from_buf_read`: segments opened where the inner reader holds
//!   them, no copy before a run);
//! - encrypt with 1 MiB writes and with 1 KiB writes.
//!
//! 64 KiB segments, RustCrypto, ChaCha20-Poly1305 and AES-128-GCM. Every
//! variant of a load level runs once per round, in an order shuffled anew
//! each round (a rotation keeps each variant behind the same other one:
//! behind an eight-thread ceiling, say, every round); a round's value is
//! the fastest of its passes; ratios are paired by round. The report gives threads(n) ÷ threads(1) and threads(n) ÷
//! ceiling(n), median and min–max over the rounds.
//!
//! On the quiet machine with threads 2, two layouts of the raw AEADs
//! (`--layouts`: runs of 8 with prefetch, the reader's own layout, and a
//! pipeline) run shuffled in with the streams, and a last table pairs
//! them by round with `io::copy` with prefetch: how near the reader comes
//! to its layout with waits that cost nothing, and how far that layout is
//! from a pipeline, in ratios the machine's state moves much less than a
//! ratio to the ceiling.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::{self, BufRead, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider};

use crate::layouts::{Bound, Bounds};
use crate::report::{cell, loadavg, pattern};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const SEGMENT: usize = 64 * KIB;
/// The thread counts compared with one thread (all of them unless
/// `--threads` picks some).
pub const COUNTS: [usize; 3] = [2, 3, 8];
/// One thread and [`COUNTS`].
const THREADS: [usize; 4] = [1, COUNTS[0], COUNTS[1], COUNTS[2]];
const ALGORITHMS: [Algorithm; 2] = [Algorithm::ChaCha20Poly1305, Algorithm::Aes128Gcm];
const PROVIDER: Provider = Provider::RustCrypto;

/// How a caller moves the bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Call {
    /// `read` into a 1 MiB buffer.
    Read1M,
    /// `io::copy` into `io::sink()` (8 KiB reads).
    Copy,
    /// `read` into a 1 MiB buffer, with `prefetch(true)` (the next run
    /// read while one opens).
    Read1MPrefetch,
    /// `io::copy`, with `prefetch(true)`.
    CopyPrefetch,
    /// `fill_buf`/`consume` on the reader itself.
    BufRead,
    /// `fill_buf`/`consume`, with `prefetch(true)`.
    BufReadPrefetch,
    /// `read` into a 1 MiB buffer, from an inner `BufRead`
    /// (`build_from_buf_read` over the slice).
    Read1MInner,
    /// `write_all` of 1 MiB.
    Write1M,
    /// `write_all` of 1 KiB.
    Write1K,
}

const CALLS: [Call; 9] = [
    Call::Read1M,
    Call::Copy,
    Call::Read1MPrefetch,
    Call::CopyPrefetch,
    Call::BufRead,
    Call::BufReadPrefetch,
    Call::Read1MInner,
    Call::Write1M,
    Call::Write1K,
];

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Read1M => "decrypt, 1 MiB reads",
            Call::Copy => "decrypt, io::copy",
            Call::Read1MPrefetch => "decrypt, 1 MiB reads, prefetch",
            Call::CopyPrefetch => "decrypt, io::copy, prefetch",
            Call::BufRead => "decrypt, BufRead",
            Call::BufReadPrefetch => "decrypt, BufRead, prefetch",
            Call::Read1MInner => "decrypt, 1 MiB reads, inner BufRead",
            Call::Write1M => "encrypt, 1 MiB writes",
            Call::Write1K => "encrypt, 1 KiB writes",
        }
    }

    /// The call a prefetching one is measured against (the same reads
    /// without prefetch): its one-thread stream and ceilings are the same
    /// streams, measured once.
    fn without_prefetch(self) -> Option<Call> {
        match self {
            Call::Read1MPrefetch => Some(Call::Read1M),
            Call::CopyPrefetch => Some(Call::Copy),
            Call::BufReadPrefetch => Some(Call::BufRead),
            _ => None,
        }
    }

    fn decrypts(self) -> bool {
        matches!(
            self,
            Call::Read1M
                | Call::Copy
                | Call::Read1MPrefetch
                | Call::CopyPrefetch
                | Call::BufRead
                | Call::BufReadPrefetch
                | Call::Read1MInner
        )
    }
}

/// One measured variant: `threads` threads on one stream, or (`split`)
/// `threads` one-thread streams at once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Variant {
    alg: Algorithm,
    call: Call,
    threads: usize,
    split: bool,
}

/// What `--busy` was asked for.
pub struct Busy {
    pub mib: usize,
    pub rounds: usize,
    pub passes: usize,
    pub smoke: bool,
    /// Leave the spinners to the scheduler rather than pin them.
    pub unpinned: bool,
    /// The levels to measure: how many spinners (0, 1, 2) beside the
    /// streams.
    pub loads: Vec<usize>,
    /// The thread counts above one to measure (one thread always is):
    /// fewer variants, so more rounds in the same time.
    pub threads: Vec<usize>,
}

/// The child's side of `--spin SECS`: burn a core for at most SECS.
pub fn spin(secs: u64) {
    let end = Instant::now() + Duration::from_secs(secs);
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..100_000 {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
}

/// The CPU-bound processes of one load level, killed on drop.
struct Spinners(Vec<Child>);

/// The CPUs this process may run on, for pinning the spinners to them
/// (`Cpus_allowed_list` of `/proc/self/status`, as `0-1,4`): `None` where
/// that cannot be read or `taskset` (util-linux) is not there to pin with.
fn pinnable_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi) = (
            lo.trim().parse::<usize>().ok()?,
            hi.trim().parse::<usize>().ok()?,
        );
        cpus.extend(lo..=hi);
    }
    let taskset = Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (taskset && !cpus.is_empty()).then_some(cpus)
}

impl Spinners {
    /// `n` spinners, the `i`-th pinned to the `i`-th of the `pin` CPUs
    /// (modulo their count) when given: left to the scheduler, two
    /// spinners on two cores sometimes share one and leave the stream's
    /// thread a core of its own, and sometimes do not, so that one
    /// thread's speed itself changes twofold from round to round and no
    /// ratio to it means much. Pinned, each loaded core carries the same
    /// load in every round. Fails if a spinner has ended before the
    /// timing starts (a CPU it could not be pinned to, say): the level
    /// would be measured without its load.
    fn start(n: usize, bound: Duration, pin: Option<&[usize]>) -> io::Result<Spinners> {
        let exe = std::env::current_exe()?;
        let secs = bound.as_secs().max(1).to_string();
        let children = (0..n)
            .map(|i| {
                let mut c = match pin {
                    Some(cpus) if !cpus.is_empty() => {
                        let mut c = Command::new("taskset");
                        c.args(["-c", &cpus[i % cpus.len()].to_string()]).arg(&exe);
                        c
                    }
                    _ => Command::new(&exe),
                };
                c.args(["--spin", &secs])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .spawn()
            })
            .collect::<io::Result<Vec<_>>>()?;
        // Let them reach their loop before anything is timed.
        std::thread::sleep(Duration::from_millis(200));
        let mut spinners = Spinners(children);
        for c in &mut spinners.0 {
            if let Some(status) = c.try_wait()? {
                return Err(io::Error::other(format!(
                    "a CPU-bound process ended before the timing began ({status})"
                )));
            }
        }
        Ok(spinners)
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The split variants' sealed parts, by (algorithm, parts).
type SplitStreams = Vec<((Algorithm, usize), Vec<Vec<u8>>)>;

struct Inputs {
    data: Vec<u8>,
    keys: Vec<(Algorithm, Key)>,
    /// One sealed stream per algorithm, and per (algorithm, parts) the
    /// split variants' parts.
    sealed: Vec<(Algorithm, Vec<u8>)>,
    split: SplitStreams,
}

fn seal(key: &Key, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut w = CipherWriter::builder(key)
        .capacity(SEGMENT)
        .provider(PROVIDER)
        .build(Vec::with_capacity(data.len() + data.len() / 64 + 64));
    w.write_all(data)?;
    w.finish()
}

fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.chunks(data.len().div_ceil(n).max(1)).collect()
}

impl Inputs {
    fn new(len: usize) -> io::Result<Inputs> {
        let data = pattern(len);
        let keys: Vec<(Algorithm, Key)> = ALGORITHMS
            .iter()
            .map(|&a| {
                (
                    a,
                    Key::new(a, &vec![7; a.key_len()]).expect("a key of the right length"),
                )
            })
            .collect();
        let mut sealed = Vec::new();
        let mut split = Vec::new();
        for (alg, key) in &keys {
            sealed.push((*alg, seal(key, &data)?));
            for n in COUNTS {
                let p = parts(&data, n)
                    .into_iter()
                    .map(|p| seal(key, p))
                    .collect::<io::Result<Vec<_>>>()?;
                split.push(((*alg, n), p));
            }
        }
        Ok(Inputs {
            data,
            keys,
            sealed,
            split,
        })
    }

    fn key(&self, alg: Algorithm) -> &Key {
        &self
            .keys
            .iter()
            .find(|(a, _)| *a == alg)
            .expect("every algorithm has a key")
            .1
    }
}

/// One stream through `call`: the bytes moved (checked by the caller).
/// A writer writes into `out`, cleared first: a buffer reused from pass to
/// pass, so that it does not pay for first touching its pages inside the
/// timing (a fresh 32 MiB `Vec` is thousands of page faults, all on the
/// thread that writes it; a reader's 1 MiB read buffer is a few hundred). A reader
/// keeps what it read in `out` (cleared first) only when `keep`: for the
/// check, never in a timed pass.
fn one(
    key: &Key,
    call: Call,
    threads: usize,
    plain: &[u8],
    sealed: &[u8],
    out: &mut Vec<u8>,
    keep: bool,
) -> io::Result<usize> {
    if call.decrypts() {
        let b = CipherReader::builder(key)
            .capacity(SEGMENT)
            .threads(threads)
            .prefetch(matches!(
                call,
                Call::Read1MPrefetch | Call::CopyPrefetch | Call::BufReadPrefetch
            ))
            .provider(PROVIDER);
        // The same reader type either way: only where the sealed bytes
        // are opened from differs.
        let r = if call == Call::Read1MInner {
            b.build_from_buf_read(sealed)
        } else {
            b.build(sealed)
        };
        out.clear();
        let mut kept = keep.then_some(out);
        return match call {
            Call::Read1M | Call::Read1MPrefetch | Call::Read1MInner => read_all(r, kept),
            Call::Copy | Call::CopyPrefetch => {
                let mut r = r;
                match kept {
                    Some(o) => io::copy(&mut r, &mut Keep(o)),
                    None => io::copy(&mut r, &mut io::sink()),
                }
                .map(|n| n as usize)
            }
            _ => {
                let (mut r, mut n) = (r, 0);
                loop {
                    let got = r.fill_buf()?;
                    let k = got.len();
                    if k == 0 {
                        break Ok(n);
                    }
                    if let Some(o) = kept.as_deref_mut() {
                        o.extend_from_slice(got);
                    }
                    r.consume(k);
                    n += k;
                }
            }
        };
    }
    let chunk = if call == Call::Write1K { KIB } else { MIB };
    out.clear();
    let mut w = CipherWriter::builder(key)
        .capacity(SEGMENT)
        .threads(threads)
        .provider(PROVIDER)
        .build(out);
    for c in plain.chunks(chunk) {
        w.write_all(c)?;
    }
    Ok(w.finish()?.len())
}

/// Reads `r` to its end in 1 MiB reads: the bytes read (appended to
/// `kept` when given).
fn read_all(mut r: impl Read, mut kept: Option<&mut Vec<u8>>) -> io::Result<usize> {
    let (mut buf, mut n) = (vec![0u8; MIB], 0);
    loop {
        match r.read(&mut buf)? {
            0 => break Ok(n),
            k => {
                if let Some(o) = kept.as_deref_mut() {
                    o.extend_from_slice(&buf[..k]);
                }
                n += k;
            }
        }
    }
}

/// A writer that appends to a `Vec` without being one: `io::copy` into it
/// reads 8 KiB at a time, as into `io::sink()` (into a `Vec` itself,
/// `io::copy` reads into the vector's spare room, in larger reads).
struct Keep<'a>(&'a mut Vec<u8>);

impl Write for Keep<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One pass of a variant: its wall time.
/// `outs`: a writer's output buffer for each stream of the pass.
fn pass(inp: &Inputs, v: Variant, outs: &mut [Vec<u8>]) -> io::Result<Duration> {
    let key = inp.key(v.alg);
    let start = Instant::now();
    if v.split {
        let sealed = &inp
            .split
            .iter()
            .find(|(k, _)| *k == (v.alg, v.threads))
            .expect("split streams for every thread count")
            .1;
        let plains = parts(&inp.data, v.threads);
        std::thread::scope(|s| {
            let jobs: Vec<_> = plains
                .iter()
                .zip(sealed)
                .zip(outs.iter_mut())
                .map(|((p, c), o)| s.spawn(move || one(key, v.call, 1, p, c, o, false)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("a split stream panicked"))
                .collect::<io::Result<Vec<_>>>()
        })?;
    } else {
        let sealed = &inp
            .sealed
            .iter()
            .find(|(a, _)| *a == v.alg)
            .expect("sealed")
            .1;
        let n = one(
            key,
            v.call,
            v.threads,
            &inp.data,
            sealed,
            &mut outs[0],
            false,
        )?;
        black_box(n);
    }
    Ok(start.elapsed())
}

fn variants(counts: &[usize]) -> Vec<Variant> {
    let mut v = Vec::new();
    for alg in ALGORITHMS {
        for call in CALLS {
            for threads in THREADS
                .into_iter()
                .filter(|n| *n == 1 || counts.contains(n))
            {
                // Prefetch changes nothing on one thread, nor in a ceiling
                // of one-thread streams.
                if call.without_prefetch().is_some() && threads == 1 {
                    continue;
                }
                v.push(Variant {
                    alg,
                    call,
                    threads,
                    split: false,
                });
                if threads > 1 && call.without_prefetch().is_none() {
                    v.push(Variant {
                        alg,
                        call,
                        threads,
                        split: true,
                    });
                }
            }
        }
    }
    v
}

/// A writer's output buffer for each stream of a pass (as many as the
/// most threads), its pages touched once, before any timing. The `k`-th
/// (from 0) serves a threaded stream only when `k` is 0, and otherwise
/// the `k`-th part of a split into more than `k` parts: room for
/// 1/(`k` + 1) of the plaintext, sealed.
fn outputs(inp: &Inputs) -> Vec<Vec<u8>> {
    (0..THREADS.into_iter().max().unwrap_or(1))
        .map(|k| {
            let plain = inp.data.len().div_ceil(k + 1);
            let mut v = vec![1u8; plain + plain / 64 + 64 * KIB];
            v.clear();
            v
        })
        .collect()
}

/// Every variant moves the plaintext: what it reads is the plaintext, byte
/// for byte, whichever way it reads; what it writes reads back to it.
fn check(inp: &Inputs) -> io::Result<()> {
    let mut out = Vec::new();
    for alg in ALGORITHMS {
        let key = inp.key(alg);
        let sealed = &inp
            .sealed
            .iter()
            .find(|(a, _)| *a == alg)
            .expect("sealed")
            .1;
        for call in CALLS {
            for threads in THREADS {
                let n = one(key, call, threads, &inp.data, sealed, &mut out, true)?;
                if call.decrypts() && out != inp.data {
                    return Err(io::Error::other(format!(
                        "{alg:?} {} threads {threads}: read something else than the plaintext",
                        call.name()
                    )));
                }
                if !call.decrypts() {
                    let mut back = Vec::new();
                    CipherReader::builder(key)
                        .provider(PROVIDER)
                        .build(&out[..])
                        .read_to_end(&mut back)?;
                    if back != inp.data {
                        return Err(io::Error::other(format!(
                            "{alg:?} {} threads {threads}: wrote a stream that does not read back to the plaintext",
                            call.name()
                        )));
                    }
                }
                let want = if call.decrypts() {
                    inp.data.len()
                } else {
                    sealed.len()
                };
                if n != want {
                    return Err(io::Error::other(format!(
                        "{alg:?} {} threads {threads}: {n} bytes, not {want}",
                        call.name()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Runs every load level and prints the report.
pub fn run(b: &Busy) -> io::Result<()> {
    let inp = Inputs::new(b.mib * MIB)?;
    check(&inp)?;
    let all = variants(&b.threads);
    // The raw AEADs' layouts: sealed only when a quiet level with threads
    // 2 will run them.
    let bounds = (b.loads.contains(&0) && b.threads.contains(&2)).then(|| Bounds::new(&inp.data));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let pin = if b.unpinned { None } else { pinnable_cpus() };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# threads(n) on a busy machine\n\n{} MiB, 64 KiB segments, RustCrypto, {} rounds of {} passes, {cpus} CPUs, spinners {}; load average before: {}\n",
        b.mib,
        b.rounds,
        b.passes,
        if pin.is_some() {
            "pinned one per CPU (taskset), in the order the process may use them"
        } else {
            "left to the scheduler"
        },
        loadavg()
    );
    if b.smoke {
        out.push_str("(--smoke: the timings below mean nothing.)\n\n");
    }
    for &load in &b.loads {
        // A generous bound: the spinners end on their own if this process
        // dies; they are killed as soon as this level is measured.
        let bound = Duration::from_secs(60 + (b.rounds * b.passes * b.mib) as u64 * 4);
        let spinners = Spinners::start(load, bound, pin.as_deref())?;
        let mut secs = vec![Vec::new(); all.len()];
        let mut outs = outputs(&inp);
        // On a quiet machine with threads 2: the raw AEADs' layouts too,
        // shuffled in with the streams.
        let raw: Vec<(Algorithm, Bound)> = match &bounds {
            Some(_) if load == 0 => ALGORITHMS
                .into_iter()
                .flat_map(|a| Bound::ALL.map(|l| (a, l)))
                .collect(),
            _ => Vec::new(),
        };
        let mut raw_secs = vec![Vec::new(); raw.len()];
        for round in 0..b.rounds {
            for i in shuffled(all.len() + raw.len(), load * b.rounds + round) {
                let mut best = Duration::MAX;
                for _ in 0..b.passes {
                    best = best.min(match all.get(i) {
                        Some(&v) => pass(&inp, v, &mut outs)?,
                        None => {
                            let (alg, l) = raw[i - all.len()];
                            let bounds = bounds.as_ref().expect("raw layouts only with bounds");
                            bounds.pass(alg == Algorithm::ChaCha20Poly1305, l)
                        }
                    });
                }
                match secs.get_mut(i) {
                    Some(s) => s.push(best.as_secs_f64()),
                    None => raw_secs[i - all.len()].push(best.as_secs_f64()),
                }
            }
        }
        drop(spinners);
        table(&mut out, load, &all, &secs, b.mib * MIB);
        if !raw.is_empty() {
            bound_table(&mut out, &all, &secs, &raw, &raw_secs);
        }
    }
    let _ = writeln!(out, "load average after: {}", loadavg());
    print!("{out}");
    Ok(())
}

/// `0..len` in an order drawn from `seed` (Fisher–Yates over xorshift):
/// the same for the same seed, different from round to round.
pub fn shuffled(len: usize, seed: usize) -> Vec<usize> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64 ^ (seed as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let mut order: Vec<usize> = (0..len).collect();
    for i in (1..len).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// A table's head: the algorithm and the calls, `first` (a column, or
/// nothing), then `per` columns for each thread count in `counts` (`{n}`
/// in them is the count).
fn head(out: &mut String, first: &str, per: &[&str], counts: &[usize]) {
    let mut head = format!("| algorithm | calls |{first}");
    let mut rule = "|---|---|".to_string();
    if !first.is_empty() {
        rule.push_str("---:|");
    }
    for &n in counts {
        for column in per {
            head.push_str(&column.replace("{n}", &n.to_string()));
            rule.push_str("---:|");
        }
    }
    let _ = writeln!(out, "{head}\n{rule}");
}

/// Per-round speed of `fast` relative to `base`: `base`'s time ÷ `fast`'s.
fn speedups(base: &[f64], fast: &[f64]) -> Vec<f64> {
    base.iter().zip(fast).map(|(b, f)| b / f).collect()
}

/// The quiet machine's last table: cipherio's `threads(2)` `io::copy`
/// with prefetch against the raw AEADs laid out the same way (runs of 8,
/// prefetch), and the pipeline against that layout, per round: ratios the
/// machine's state moves much less than a ratio to the ceiling.
fn bound_table(
    out: &mut String,
    all: &[Variant],
    secs: &[Vec<f64>],
    bound: &[(Algorithm, Bound)],
    bound_secs: &[Vec<f64>],
) {
    let _ = writeln!(
        out,
        "| algorithm | threads 2, io::copy, prefetch ÷ raw AEAD, runs of 8, prefetch | raw AEAD: pipeline ÷ runs of 8, prefetch |\n|---|---:|---:|"
    );
    for alg in ALGORITHMS {
        let Some(lib) = all.iter().position(|v| {
            *v == Variant {
                alg,
                call: Call::CopyPrefetch,
                threads: 2,
                split: false,
            }
        }) else {
            continue;
        };
        let raw = |l| {
            let i = bound
                .iter()
                .position(|&b| b == (alg, l))
                .expect("every layout is measured");
            &bound_secs[i]
        };
        let runs = raw(Bound::Runs8Prefetch);
        let _ = writeln!(
            out,
            "| {alg:?} | {} | {} |",
            cell(&speedups(runs, &secs[lib]), 2),
            cell(&speedups(runs, raw(Bound::Pipeline)), 2)
        );
    }
    out.push('\n');
}

/// A load level's table: for each algorithm and call, one thread's speed
/// (its spread shows how much the machine gave one thread from round to
/// round), then threads(n) ÷ threads(1) and ÷ ceiling(n); for a
/// prefetching call, those of the same call without prefetch, and a
/// second table of threads(n) with prefetch ÷ without, round by round.
fn table(out: &mut String, load: usize, all: &[Variant], secs: &[Vec<f64>], len: usize) {
    // The thread counts measured, one thread aside.
    let counts: Vec<usize> = COUNTS
        .into_iter()
        .filter(|&n| all.iter().any(|v| v.threads == n))
        .collect();
    let counts = &counts[..];
    let _ = writeln!(
        out,
        "## {load} CPU-bound process{} beside the stream\n",
        if load == 1 { "" } else { "es" }
    );
    head(
        out,
        " threads 1, GB/s |",
        &[" threads {n} ÷ 1 |", " threads {n} ÷ ceiling |"],
        counts,
    );
    let find = |alg, call: Call, threads, split| {
        let call = match call.without_prefetch() {
            Some(base) if threads == 1 || split => base,
            _ => call,
        };
        let i = all
            .iter()
            .position(|v| {
                *v == Variant {
                    alg,
                    call,
                    threads,
                    split,
                }
            })
            .expect("every variant is measured");
        &secs[i]
    };
    for alg in ALGORITHMS {
        for call in CALLS {
            let one = find(alg, call, 1, false);
            let speeds: Vec<f64> = one.iter().map(|s| len as f64 / s / 1e9).collect();
            let mut row = format!("| {alg:?} | {} | {} |", call.name(), cell(&speeds, 2));
            for &n in counts {
                let threaded = find(alg, call, n, false);
                let ceiling = find(alg, call, n, true);
                let _ = write!(
                    row,
                    " {}× | {} |",
                    cell(&speedups(one, threaded), 2),
                    cell(&speedups(ceiling, threaded), 2)
                );
            }
            let _ = writeln!(out, "{row}");
        }
    }
    out.push('\n');
    head(out, "", &[" threads {n}, prefetch ÷ without |"], counts);
    for alg in ALGORITHMS {
        for call in CALLS {
            let Some(base) = call.without_prefetch() else {
                continue;
            };
            let mut row = format!("| {alg:?} | {} |", call.name());
            for &n in counts {
                let speedup = speedups(find(alg, base, n, false), find(alg, call, n, false));
                let _ = write!(row, " {}× |", cell(&speedup, 2));
            }
            let _ = writeln!(out, "{row}");
        }
    }
    out.push('\n');
}
