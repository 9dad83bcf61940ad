//! Threaded streams, measured: `CipherWriter` and `CipherReader`
//! with `.threads(n)` against one thread, and ChaCha20-Poly1305 against
//! age's stream, on the same plaintext in the same run.
//!
//! ```text
//! cargo run --release --manifest-path threads-bench/Cargo.toml -- [--quick | --smoke] [--rounds N] [--mib N] [--chunk-mib N]
//! ```
//!
//! Variants: threads 1, 2 and `available_parallelism()` (deduplicated) ×
//! algorithm (ChaCha20-Poly1305, AES-128-GCM, AES-256-GCM) × segment size
//! (64 KiB and 1 MiB for the speed-up table; 8 KiB and 16 KiB too, for the
//! synchronization cost) × provider (RustCrypto, AWS-LC) × direction, and
//! age encrypt and decrypt (X25519 recipient; STREAM: ChaCha20-Poly1305 in
//! 64 KiB chunks). Beside each threaded row, its ceiling: `n` one-thread
//! streams at once, each on its own thread over 1/`n` of the plaintext
//! into its own output, which is what this machine gives `n`-fold work
//! that shares nothing (a virtual machine's two CPUs may give far less
//! than 2×), so that a speed-up short of the target can be told apart
//! from a machine that cannot reach it.
//!
//! - Encrypt: the plaintext goes through the writer in 4 MiB `write_all`
//!   calls (`--chunk-mib N`; more with over 4 threads: a batch's length at
//!   1 MiB segments) into a `Vec<u8>` allocated once and cleared before
//!   each pass, then `finish`.
//! - Decrypt: a stream sealed once before the timed loops is read from a
//!   `&[u8]` into a reused buffer of the same length.
//!
//! A pass covers the whole stream: building it (key derivation, header,
//! the stream's own worker threads) through `finish` or end of stream.
//! Every variant is first checked once: what it writes reads back to the
//! plaintext, what it reads is the plaintext. Then all variants run in one
//! process, round by round, in an order shuffled anew each round (a
//! rotation would keep each variant behind the same other one); a round's
//! value for a variant is the fastest of a few passes (one descheduled
//! pass should not count). Tables give the median and min–max over the rounds;
//! ratios are paired by round (both variants ran in the same round).
//!
//! `--quick`: 8 MiB, 5 rounds of 2 passes. `--smoke`: 1 MiB, one round of
//! one pass: the correctness check of every variant, with timings too
//! short to mean anything (CI runs it).
//!
//! `--busy` (with `--quick`, `--smoke`, `--rounds N`, `--mib N`,
//! `--unpinned`): the same streams beside 0, 1 and 2 CPU-bound processes
//! this executable starts and ends, for each way a caller moves bytes
//! (`busy.rs`).
//!
//! `--idle`: the CPU a threaded stream burns after its caller's last call,
//! while it is alive, in its first 1, 10 and 100 ms (`idle.rs`; Linux).
//!
//! `--short` (with `--smoke`, `--passes N`, `--kib K,…`): threads 2 against one thread
//! on streams of 256 KiB to 32 MiB, as built and with the threads from the
//! first byte (`short.rs`).
//!
//! `--layouts` (with `--smoke`, `--rounds N`, `--mib N`): how fast two
//! threads can decrypt one stream for 8 KiB reads by how the work is laid
//! out between them, with the raw AEADs and nothing of cipherio
//! (`layouts.rs`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::iter;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, backend};

mod busy;
mod idle;
mod layouts;
#[path = "../../bench-common/report.rs"]
mod report;
mod short;
use report::{cell, loadavg, pattern, stats};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// Bytes per `write_all` when encrypting and per `read` when decrypting
/// (`--chunk-mib`), at the least a batch (threads × segment, 2 MiB for 2
/// threads and 1 MiB segments): a call of several segments lets the
/// threaded writer seal straight from the caller's slice (all but the
/// segment it ends in) and the reader open straight into the caller's
/// buffer; a shorter one goes through their buffers, a copy.
const CHUNK: usize = 4 * MIB;
/// Segment sizes of the speed-up table.
const LARGE_SEGMENTS: [usize; 2] = [64 * KIB, MIB];
/// Segment sizes measured only for the synchronization cost.
const SMALL_SEGMENTS: [usize; 2] = [8 * KIB, 16 * KIB];
/// Bytes per write and read of the small-call rows (through the streams'
/// buffers: the batch fills first).
const SMALL_CALL: usize = KIB;
/// Algorithms in table order.
const ALGORITHMS: [Algorithm; 3] = [
    Algorithm::ChaCha20Poly1305,
    Algorithm::Aes128Gcm,
    Algorithm::Aes256Gcm,
];
/// Providers in table order: the default build's first.
const PROVIDERS: [Provider; 2] = [Provider::RustCrypto, Provider::AwsLc];

/// What the command line asked for.
struct Args {
    /// Plaintext length in MiB.
    mib: usize,
    /// Rounds over every variant.
    rounds: usize,
    /// Passes per variant and round; the fastest counts.
    passes: usize,
    /// `--smoke`: say that the timings mean nothing.
    smoke: bool,
    /// The mode's name for the report.
    mode: &'static str,
    /// Bytes per write and read of the large calls.
    chunk: usize,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: threads_bench [--quick | --smoke] [--rounds N] [--mib N] [--chunk-mib N]";
    let mut mode = "full";
    let (mut rounds, mut mib, mut chunk) = (None, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" if mode == "full" => mode = "quick",
            "--smoke" if mode == "full" => mode = "smoke",
            "--rounds" | "--mib" | "--chunk-mib" => {
                let v: usize = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&v| v > 0)
                    .ok_or_else(|| format!("{a} needs a positive number"))?;
                match a.as_str() {
                    "--rounds" => rounds = Some(v),
                    "--mib" => mib = Some(v),
                    _ => chunk = Some(v.saturating_mul(MIB)),
                }
            }
            "-h" | "--help" => return Err(usage.into()),
            other => return Err(format!("unknown or repeated argument {other:?}\n{usage}")),
        }
    }
    let (default_mib, default_rounds, passes) = match mode {
        "quick" => (8, 5, 2),
        "smoke" => (1, 1, 1),
        _ => (64, 7, 3),
    };
    Ok(Args {
        mib: mib.unwrap_or(default_mib),
        rounds: rounds.unwrap_or(default_rounds),
        passes,
        smoke: mode == "smoke",
        mode,
        chunk: chunk.unwrap_or(CHUNK),
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A CPU-bound process of `--busy`, started by this executable.
    if let [flag, secs] = &args[..]
        && flag == "--spin"
    {
        busy::spin(secs.parse().unwrap_or(1));
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--idle") {
        return match idle::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("threads_bench --idle: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.iter().any(|a| a == "--layouts") {
        return report::main_with("threads_bench --layouts", layouts::parse, layouts::run);
    }
    if args.iter().any(|a| a == "--busy") {
        return report::main_with("threads_bench --busy", parse_busy, busy::run);
    }
    if args.iter().any(|a| a == "--short") {
        return report::main_with("threads_bench --short", parse_short, short::run);
    }
    report::main_with("threads_bench", parse_args, run)
}

/// `--busy [--quick | --smoke] [--rounds N] [--mib N] [--unpinned] [--loads L,…] [--threads N,…]`.
fn parse_busy() -> Result<busy::Busy, String> {
    let a = std::env::args()
        .filter(|a| a != "--busy")
        .collect::<Vec<_>>();
    let mut b = busy::Busy {
        mib: 32,
        rounds: 5,
        passes: 2,
        smoke: false,
        unpinned: false,
        loads: vec![0, 1, 2],
        threads: busy::COUNTS.to_vec(),
    };
    let mut it = a.iter().skip(1);
    while let Some(x) = it.next() {
        let mut num = || -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0)
                .ok_or_else(|| format!("{x} needs a positive number"))
        };
        match x.as_str() {
            "--quick" => (b.mib, b.rounds, b.passes) = (8, 3, 2),
            "--smoke" => (b.mib, b.rounds, b.passes, b.smoke) = (1, 1, 1, true),
            "--rounds" => b.rounds = num()?,
            "--mib" => b.mib = num()?,
            "--unpinned" => b.unpinned = true,
            "--loads" => {
                b.loads = list(it.next(), &[0, 1, 2])
                    .ok_or("--loads needs a list of 0, 1 and 2 (e.g. 0,2)")?;
            }
            "--threads" => {
                b.threads = list(it.next(), &busy::COUNTS)
                    .ok_or("--threads needs a list of 2, 3 and 8 (e.g. 2)")?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: threads_bench --busy [--quick | --smoke] [--rounds N] [--mib N] [--unpinned] [--loads L,…] [--threads N,…]"
                ));
            }
        }
    }
    Ok(b)
}

/// `--short [--smoke] [--passes N] [--kib K,…]`.
fn parse_short() -> Result<short::Short, String> {
    let mut s = short::Short {
        kib: vec![256, 1024, 2048, 4096, 8192, 32768],
        passes: 40,
        smoke: false,
    };
    let a = std::env::args()
        .skip(1)
        .filter(|a| a != "--short")
        .collect::<Vec<_>>();
    let mut it = a.iter();
    while let Some(x) = it.next() {
        match x.as_str() {
            "--smoke" => (s.kib, s.passes, s.smoke) = (vec![256, 3072], 1, true),
            "--kib" => {
                s.kib = it
                    .next()
                    .and_then(|v| {
                        v.split(',')
                            .map(|k| k.parse().ok())
                            .collect::<Option<Vec<usize>>>()
                    })
                    .filter(|l| !l.is_empty() && !l.contains(&0))
                    .ok_or("--kib needs a list of stream lengths in KiB (e.g. 1024,4096)")?;
            }
            "--passes" => {
                s.passes = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&v| v > 0)
                    .ok_or("--passes needs a positive number")?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: threads_bench --short [--smoke] [--passes N] [--kib K,…]"
                ));
            }
        }
    }
    Ok(s)
}

/// A comma-separated list of numbers each in `allowed`, sorted, without
/// repeats; `None` when it is missing, empty or has any other word.
fn list(arg: Option<&String>, allowed: &[usize]) -> Option<Vec<usize>> {
    let mut l = arg?
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<usize>, _>>()
        .ok()
        .filter(|l| !l.is_empty() && l.iter().all(|n| allowed.contains(n)))?;
    l.sort_unstable();
    l.dedup();
    Some(l)
}

/// User + system CPU time of this process so far, in seconds (Linux:
/// `/proc/self/stat`, clock ticks at the usual 100 per second).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is the
    // first, utime the 12th, stime the 13th.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The `age` version this crate was built against, from its Cargo.lock.
fn age_version() -> &'static str {
    let lock = include_str!("../Cargo.lock");
    lock.split("[[package]]")
        .find(|p| p.contains("\nname = \"age\"\n"))
        .and_then(|p| p.split("\nversion = \"").nth(1))
        .and_then(|v| v.split('"').next())
        .unwrap_or("?")
}

/// `a ÷ b` as the ratio of the medians, with the min–max of the per-round
/// ratios (the rounds pair the two samples).
fn ratio(a: &[f64], b: &[f64]) -> String {
    let per_round: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    let (_, lo, hi) = stats(&per_round);
    format!("{:.2}× ({lo:.2}–{hi:.2})", stats(a).0 / stats(b).0)
}

fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::ChaCha20Poly1305 => "ChaCha20-Poly1305",
        Algorithm::Aes128Gcm => "AES-128-GCM",
        Algorithm::Aes256Gcm => "AES-256-GCM",
        _ => "other",
    }
}

fn size_name(bytes: usize) -> String {
    if bytes >= MIB {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} KiB", bytes / KIB)
    }
}

fn direction(decrypt: bool) -> &'static str {
    if decrypt { "decrypt" } else { "encrypt" }
}

/// A cipherio stream's settings.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Stream {
    provider: Provider,
    alg: Algorithm,
    segment: usize,
    threads: usize,
}

/// What a variant runs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Subject {
    /// A cipherio stream.
    Stream(Stream),
    /// age's stream, X25519 recipient.
    Age,
    /// The machine's ceiling for a stream on `threads` threads: that many
    /// one-thread streams at once, each on its own thread (the caller's
    /// one of them) over its own 1/`threads` of the plaintext, each with
    /// its own output. No ordering, no hand-over, the copies into the
    /// outputs spread over every thread: what the cores, caches and
    /// memory of this machine give `threads`-fold work when nothing has to
    /// be shared.
    Split(Stream),
}

/// One measured variant: a subject and a direction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Variant {
    subject: Subject,
    decrypt: bool,
    /// Writes and reads of [`SMALL_CALL`] bytes instead of the large ones.
    small: bool,
}

/// The inputs every pass reads and the buffers it reuses.
struct Bench {
    data: Vec<u8>,
    keys: HashMap<Algorithm, Key>,
    /// One sealed stream per (algorithm, segment size), by one thread.
    sealed: HashMap<(Algorithm, usize), Vec<u8>>,
    age_identity: age::x25519::Identity,
    age_sealed: Vec<u8>,
    /// The split variants' parts, one stream sealed per part by one
    /// thread: `(algorithm, segment, parts)`.
    split_sealed: HashMap<(Algorithm, usize, usize), Vec<Vec<u8>>>,
    /// The encrypt passes' output, allocated once.
    out: Vec<u8>,
    /// The split encrypt passes' outputs, one per part, allocated once.
    split_out: Vec<Vec<u8>>,
    /// The decrypt passes' read buffer; its length is also the encrypt
    /// passes' write length.
    buf: Vec<u8>,
}

/// Writes `data` through a cipherio writer into `out` (cleared first).
fn stream_encrypt(
    key: &Key,
    provider: Provider,
    segment: usize,
    threads: usize,
    data: &[u8],
    chunk: usize,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    out.clear();
    let mut w = CipherWriter::builder(key)
        .provider(provider)
        .capacity(segment)
        .threads(threads)
        .build(&mut *out);
    for c in data.chunks(chunk) {
        w.write_all(c)?;
    }
    w.finish()?;
    Ok(())
}

/// A cipherio reader over `sealed`, through `build_from_buf_read` (a
/// slice is a `BufRead`): segments open where they lie, with no copy into
/// the reader's read-ahead (as age's `Decryptor::new_buffered` reads).
fn stream_reader<'a>(
    key: &Key,
    provider: Provider,
    threads: usize,
    sealed: &'a [u8],
) -> CipherReader<&'a [u8]> {
    CipherReader::builder(key)
        .provider(provider)
        .threads(threads)
        .build_from_buf_read(sealed)
}

/// Writes `data` through age's writer into `out` (cleared first).
fn age_encrypt(
    identity: &age::x25519::Identity,
    data: &[u8],
    chunk: usize,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    out.clear();
    let recipient = identity.to_public();
    let encryptor = age::Encryptor::with_recipients(iter::once(&recipient as &dyn age::Recipient))
        .map_err(io::Error::other)?;
    let mut w = encryptor.wrap_output(&mut *out)?;
    for c in data.chunks(chunk) {
        w.write_all(c)?;
    }
    w.finish()?;
    Ok(())
}

/// age's reader over `sealed`, after its header is parsed and unwrapped.
fn age_reader<'a>(
    identity: &age::x25519::Identity,
    sealed: &'a [u8],
) -> io::Result<impl Read + 'a> {
    age::Decryptor::new_buffered(sealed)
        .and_then(|d| d.decrypt(iter::once(identity as &dyn age::Identity)))
        .map_err(io::Error::other)
}

/// `data` cut into `n` parts of (nearly) equal length, in order.
fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.chunks(data.len().div_ceil(n).max(1)).collect()
}

/// Runs `job` on every item at once: the first on the calling thread, each
/// other on a thread of its own (spawned and joined within the call); the
/// first error, if any.
fn on_threads<I, F>(items: I, job: F) -> io::Result<()>
where
    I: IntoIterator,
    I::Item: Send,
    F: Fn(I::Item) -> io::Result<()> + Sync,
{
    on_threads_collect(items, job).map(drop)
}

/// [`on_threads`], keeping every job's value, in the items' order.
fn on_threads_collect<I, T, F>(items: I, job: F) -> io::Result<Vec<T>>
where
    I: IntoIterator,
    I::Item: Send,
    T: Send,
    F: Fn(I::Item) -> io::Result<T> + Sync,
{
    let mut items = items.into_iter();
    let Some(first) = items.next() else {
        return Ok(Vec::new());
    };
    let job = &job;
    std::thread::scope(|scope| {
        let others: Vec<_> = items.map(|it| scope.spawn(move || job(it))).collect();
        let mut all = vec![job(first)];
        for h in others {
            all.push(
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a part panicked"))),
            );
        }
        all.into_iter().collect()
    })
}

/// Reads `r` to its end through `buf`; the number of bytes read.
fn drain(mut r: impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut total = 0;
    loop {
        match r.read(buf)? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

impl Bench {
    /// The plaintext, keys and sealed streams (at the large segment sizes
    /// the split variants' too, in `parts` parts); calls of `chunk` bytes.
    fn new(len: usize, segments: &[usize], chunk: usize, parts: &[usize]) -> io::Result<Bench> {
        let data = pattern(len);
        let keys: HashMap<Algorithm, Key> =
            ALGORITHMS.iter().map(|&a| (a, Key::generate(a))).collect();
        let mut sealed = HashMap::new();
        let mut out = Vec::with_capacity(len + len / 64 + 4096);
        for &alg in &ALGORITHMS {
            for &segment in segments {
                stream_encrypt(
                    &keys[&alg],
                    Provider::RustCrypto,
                    segment,
                    1,
                    &data,
                    chunk,
                    &mut out,
                )?;
                sealed.insert((alg, segment), out.clone());
            }
        }
        let mut split_sealed = HashMap::new();
        let max_parts = parts.iter().copied().max().unwrap_or(1);
        for &alg in &ALGORITHMS {
            for &segment in &LARGE_SEGMENTS {
                for &n in parts {
                    let mut sealed_parts = Vec::with_capacity(n);
                    for part in split(&data, n) {
                        stream_encrypt(
                            &keys[&alg],
                            Provider::RustCrypto,
                            segment,
                            1,
                            part,
                            chunk,
                            &mut out,
                        )?;
                        sealed_parts.push(out.clone());
                    }
                    split_sealed.insert((alg, segment, n), sealed_parts);
                }
            }
        }
        let age_identity = age::x25519::Identity::generate();
        age_encrypt(&age_identity, &data, chunk, &mut out)?;
        let age_sealed = out.clone();
        let split_out = (0..max_parts)
            .map(|_| Vec::with_capacity(out.capacity().div_ceil(max_parts) + 4096))
            .collect();
        Ok(Bench {
            data,
            keys,
            sealed,
            age_identity,
            age_sealed,
            split_sealed,
            out,
            split_out,
            buf: vec![0; chunk],
        })
    }

    /// Seals the plaintext as `subject` into `self.out` (a split subject:
    /// its parts into `self.split_out`).
    fn seal(&mut self, subject: Subject, chunk: usize) -> io::Result<()> {
        match subject {
            Subject::Age => age_encrypt(&self.age_identity, &self.data, chunk, &mut self.out),
            Subject::Split(c) => {
                let key = &self.keys[&c.alg];
                let parts = split(&self.data, c.threads);
                let outs = &mut self.split_out[..c.threads];
                on_threads(parts.into_iter().zip(outs.iter_mut()), |(part, out)| {
                    stream_encrypt(key, c.provider, c.segment, 1, part, chunk, out)
                })
            }
            Subject::Stream(c) => {
                let key = &self.keys[&c.alg];
                let data = &self.data;
                stream_encrypt(
                    key,
                    c.provider,
                    c.segment,
                    c.threads,
                    data,
                    chunk,
                    &mut self.out,
                )
            }
        }
    }

    /// A reader as `subject` over `sealed`, or over the stream sealed for
    /// it before the timed loops.
    fn open<'a>(
        &'a self,
        subject: Subject,
        sealed: Option<&'a [u8]>,
    ) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match subject {
            Subject::Age => Box::new(age_reader(
                &self.age_identity,
                sealed.unwrap_or(&self.age_sealed),
            )?),
            Subject::Split(_) => unreachable!("split subjects read through read_split"),
            Subject::Stream(c) => {
                let sealed = sealed.unwrap_or(&self.sealed[&(c.alg, c.segment)]);
                Box::new(stream_reader(
                    &self.keys[&c.alg],
                    c.provider,
                    c.threads,
                    sealed,
                ))
            }
        })
    }

    /// Reads the parts of a split subject at once, each through a
    /// one-thread reader on its own thread into its own buffer of `chunk`
    /// bytes (`keep`: and keeps the plaintext, in order); the bytes read.
    fn read_split(&self, c: Stream, chunk: usize, keep: bool) -> io::Result<(usize, Vec<u8>)> {
        let key = &self.keys[&c.alg];
        let parts = &self.split_sealed[&(c.alg, c.segment, c.threads)];
        let got = on_threads_collect(parts.iter(), |sealed| {
            let r = stream_reader(key, c.provider, 1, sealed);
            if keep {
                let mut plain = Vec::new();
                let mut r = r;
                r.read_to_end(&mut plain)?;
                Ok((plain.len(), plain))
            } else {
                Ok((drain(r, &mut vec![0; chunk])?, Vec::new()))
            }
        })?;
        Ok(got
            .into_iter()
            .fold((0, Vec::new()), |(n, mut all), (k, plain)| {
                all.extend_from_slice(&plain);
                (n + k, all)
            }))
    }

    /// One timed pass of `v`.
    fn pass(&mut self, v: Variant) -> io::Result<Duration> {
        let chunk = if v.small { SMALL_CALL } else { self.buf.len() };
        let t = Instant::now();
        let n = if let (true, Subject::Split(c)) = (v.decrypt, v.subject) {
            self.read_split(c, chunk, false)?.0
        } else if v.decrypt {
            let mut buf = std::mem::take(&mut self.buf);
            let n = drain(self.open(v.subject, None)?, &mut buf[..chunk]);
            self.buf = buf;
            n?
        } else {
            self.seal(v.subject, chunk)?;
            self.data.len()
        };
        let d = t.elapsed();
        if n != self.data.len() {
            return Err(io::Error::other(format!(
                "{v:?}: {n} bytes, not {}",
                self.data.len()
            )));
        }
        Ok(d)
    }

    /// Checks `v` once, untimed: what it writes reads back to the
    /// plaintext (through a one-thread reader of the same provider), what
    /// it reads is the plaintext.
    fn check(&mut self, v: Variant) -> io::Result<()> {
        let mut plain = Vec::with_capacity(self.data.len());
        if let Subject::Split(c) = v.subject {
            if v.decrypt {
                plain = self.read_split(c, self.buf.len(), true)?.1;
            } else {
                self.seal(v.subject, self.buf.len())?;
                for (i, out) in self.split_out[..c.threads].iter().enumerate() {
                    let one = Stream { threads: 1, ..c };
                    let part = &self.split_sealed[&(c.alg, c.segment, c.threads)][i];
                    // Not the same bytes as the stored part (a fresh salt
                    // per stream), but the same length, and it reads back.
                    if out.len() != part.len() {
                        return Err(io::Error::other(format!("{v:?}: part {i} length")));
                    }
                    self.open(Subject::Stream(one), Some(out))?
                        .read_to_end(&mut plain)?;
                }
            }
        } else if v.decrypt {
            self.open(v.subject, None)?.read_to_end(&mut plain)?;
        } else {
            self.seal(v.subject, self.buf.len())?;
            let one = match v.subject {
                Subject::Stream(c) => Subject::Stream(Stream { threads: 1, ..c }),
                other => other,
            };
            self.open(one, Some(&self.out))?.read_to_end(&mut plain)?;
        }
        if plain != self.data {
            return Err(io::Error::other(format!(
                "{v:?} does not give the plaintext back"
            )));
        }
        Ok(())
    }
}

fn run(args: &Args) -> io::Result<()> {
    let load_start = loadavg();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = vec![1, 2, cpus];
    threads.sort_unstable();
    threads.dedup();
    let len = args.mib * MIB;
    let segments: Vec<usize> = SMALL_SEGMENTS
        .iter()
        .chain(&LARGE_SEGMENTS)
        .copied()
        .collect();

    let mut variants = Vec::new();
    for (provider, alg, segment, decrypt) in rows(&ALGORITHMS, &segments) {
        for &t in &threads {
            variants.push(Variant {
                subject: stream(provider, alg, segment, t),
                decrypt,
                small: false,
            });
        }
    }
    for (provider, alg, segment, decrypt) in rows(&ALGORITHMS, &LARGE_SEGMENTS) {
        for &t in &threads[1..] {
            variants.push(Variant {
                subject: Subject::Split(Stream {
                    provider,
                    alg,
                    segment,
                    threads: t,
                }),
                decrypt,
                small: false,
            });
        }
    }
    for decrypt in [false, true] {
        variants.push(Variant {
            subject: Subject::Age,
            decrypt,
            small: false,
        });
    }
    for (_, alg, segment, decrypt) in small_rows() {
        for &t in &threads {
            variants.push(Variant {
                subject: stream(Provider::RustCrypto, alg, segment, t),
                decrypt,
                small: true,
            });
        }
    }

    let chunk = args
        .chunk
        .max(threads[threads.len() - 1] * LARGE_SEGMENTS[1]);
    println!("# threads_bench\n");
    println!(
        "{} MiB plaintext; {} round(s) of {} pass(es) per variant ({}); {cpus} CPUs \
         (available_parallelism); threads {threads:?}; RustCrypto backends {:?}; age {}; \
         {} writes and reads; load average (1/5/15 min) at start: {load_start}\n",
        args.mib,
        args.rounds,
        args.passes,
        args.mode,
        backend::detect(),
        age_version(),
        size_name(chunk),
    );

    let mut bench = Bench::new(len, &segments, chunk, &threads[1..])?;
    for &v in &variants {
        bench.check(v)?;
    }
    println!(
        "All {} variants checked: each encrypt reads back to the plaintext, each decrypt gives it.\n",
        variants.len()
    );

    let (cpu_start, wall_start) = (cpu_seconds(), Instant::now());
    // [variant][round]
    let mut gbs = vec![Vec::with_capacity(args.rounds); variants.len()];
    let mut secs = vec![Vec::with_capacity(args.rounds); variants.len()];
    // [variant]: (CPU seconds, wall seconds) over all its passes.
    let mut busy = vec![(0.0, 0.0); variants.len()];
    for round in 0..args.rounds {
        for i in busy::shuffled(variants.len(), round) {
            let mut best = Duration::MAX;
            let cpu_before = cpu_seconds();
            let t = Instant::now();
            for _ in 0..args.passes {
                best = best.min(bench.pass(variants[i])?);
            }
            if let (Some(after), Some(before)) = (cpu_seconds(), cpu_before) {
                busy[i].0 += after - before;
                busy[i].1 += t.elapsed().as_secs_f64();
            }
            secs[i].push(best.as_secs_f64());
            gbs[i].push(len as f64 / best.as_secs_f64() / 1e9);
        }
    }
    let cpu = cpu_seconds().zip(cpu_start).map(|(end, start)| end - start);
    let wall = wall_start.elapsed().as_secs_f64();
    let results = Results {
        chunk,
        index: variants.iter().enumerate().map(|(i, &v)| (v, i)).collect(),
        gbs,
        secs,
        busy,
        passes: args.rounds * args.passes,
    };
    let mut out = String::new();
    if args.smoke {
        let _ = writeln!(
            out,
            "(--smoke: one pass of 1 MiB; the timings below mean nothing.)\n"
        );
    }
    speedup_table(&mut out, &results, &threads);
    age_table(&mut out, &results, &threads);
    small_table(&mut out, &results, &threads);
    cost_table(&mut out, &results, &threads, &segments, len);
    print!("{out}");
    if let Some(cpu) = cpu {
        println!(
            "\nThe timed rounds took {wall:.1} s and this process {cpu:.1} s of CPU (user + \
             system, /proc/self/stat at 100 ticks/s): {:.2} of the {cpus} CPUs on average. On an \
             idle machine this lies between 1 and 2 (the rounds mix one- and two-thread \
             variants); far under 1, other jobs had the cores, and every figure above is low \
             and noisy.",
            cpu / wall
        );
    }
    println!(
        "\nLoad average (1/5/15 min): {load_start} at start, {} at the end; {cpus} CPUs.",
        loadavg()
    );
    Ok(())
}

/// Per-round values of every variant.
struct Results {
    index: HashMap<Variant, usize>,
    /// Bytes per write and per read.
    chunk: usize,
    /// GB/s, `[variant][round]`.
    gbs: Vec<Vec<f64>>,
    /// Seconds, `[variant][round]`.
    secs: Vec<Vec<f64>>,
    /// CPU and wall seconds over all passes, `[variant]`.
    busy: Vec<(f64, f64)>,
    /// Passes per variant in all (rounds × passes per round).
    passes: usize,
}

impl Results {
    fn at(&self, subject: Subject, decrypt: bool) -> usize {
        self.index[&Variant {
            subject,
            decrypt,
            small: false,
        }]
    }

    /// GB/s per round of a small-call variant.
    fn small_gbs(&self, subject: Subject, decrypt: bool) -> &[f64] {
        let v = Variant {
            subject,
            decrypt,
            small: true,
        };
        &self.gbs[self.index[&v]]
    }

    /// GB/s per round of a variant.
    fn gbs(&self, subject: Subject, decrypt: bool) -> &[f64] {
        &self.gbs[self.at(subject, decrypt)]
    }

    /// CPU ÷ wall over all passes of a variant: how many CPUs it kept
    /// busy.
    fn busy(&self, subject: Subject, decrypt: bool) -> String {
        let (cpu, wall) = self.busy[self.at(subject, decrypt)];
        if wall > 0.0 {
            format!("{:.2}", cpu / wall)
        } else {
            "n/a".to_owned()
        }
    }

    /// CPU seconds per pass of a variant, over all its passes.
    fn cpu_per_pass(&self, subject: Subject, decrypt: bool) -> f64 {
        self.busy[self.at(subject, decrypt)].0 / self.passes as f64
    }

    /// Seconds per round of a variant.
    fn secs(&self, subject: Subject, decrypt: bool) -> &[f64] {
        &self.secs[self.at(subject, decrypt)]
    }
}

/// A cipherio stream's subject.
fn stream(provider: Provider, alg: Algorithm, segment: usize, threads: usize) -> Subject {
    Subject::Stream(Stream {
        provider,
        alg,
        segment,
        threads,
    })
}

/// The rows of a table, in order: provider × algorithm × segment ×
/// direction.
fn rows(algs: &[Algorithm], segments: &[usize]) -> Vec<(Provider, Algorithm, usize, bool)> {
    let mut v = Vec::new();
    for &provider in &PROVIDERS {
        for &alg in algs {
            for &segment in segments {
                for decrypt in [false, true] {
                    v.push((provider, alg, segment, decrypt));
                }
            }
        }
    }
    v
}

/// A table's head: the columns named, text ones left-aligned.
fn table_head(out: &mut String, columns: &[String]) {
    let rule: Vec<&str> = columns
        .iter()
        .map(|c| match c.as_str() {
            "provider" | "algorithm" | "direction" => "---",
            _ => "---:",
        })
        .collect();
    let _ = writeln!(out, "| {} |\n|{}|", columns.join(" | "), rule.join("|"));
}

/// The first cells of a row.
fn row_start(provider: Provider, alg: Option<Algorithm>, segment: usize, decrypt: bool) -> String {
    let alg = alg.map_or(String::new(), |a| format!(" {} |", alg_name(a)));
    format!(
        "| {} |{alg} {} | {} |",
        provider.name(),
        size_name(segment),
        direction(decrypt)
    )
}

/// Column names: `fixed`, then `per(t)` for each thread count.
fn columns(fixed: &[&str], threads: &[usize], per: impl Fn(usize) -> Vec<String>) -> Vec<String> {
    let mut c: Vec<String> = fixed.iter().map(|&s| s.to_owned()).collect();
    for &t in threads {
        c.extend(per(t));
    }
    c
}

/// Threads against one thread, at the large segment sizes.
fn speedup_table(out: &mut String, r: &Results, threads: &[usize]) {
    let _ = writeln!(out, "## Threads against one thread\n");
    let _ = writeln!(
        out,
        "GB/s (10⁹ B/s) of plaintext, median (min–max) over the rounds; × = ratio of the \
         medians against threads 1 (min–max of the per-round ratios). Encrypt: {0} writes \
         into a cleared Vec, then finish; decrypt: {0} reads through build_from_buf_read over a \
         &[u8] (segments open in place). Target (\
         2 cores): ≥ 1.8× for RustCrypto ChaCha20-Poly1305 and AES-GCM, both directions. CPUs = \
         the process's CPU time ÷ wall time over all passes of the variant (/proc/self/stat, \
         10 ms ticks): about n when n threads all ran; about 1 with n > 1, the other threads \
         did not get a core (other load) or had no work. Ceiling n = n one-thread streams at \
         once, each on its own thread over 1/n of the plaintext into its own output (no order \
         to keep, nothing handed over, the copies spread over every thread): what this \
         machine gives n-fold independent work of this kind; × = its ratio against threads 1, \
         the most a stream on n threads could reach here; ÷ ceiling = threads n against it, \
         per round (1.00: nothing lost to the stream's own synchronization and ordering).\n",
        size_name(r.chunk)
    );
    let fixed = [
        "provider",
        "algorithm",
        "segment",
        "direction",
        "threads 1 GB/s",
        "CPUs",
    ];
    let per = |t| {
        vec![
            format!("threads {t} GB/s"),
            "CPUs".to_owned(),
            "× vs 1".to_owned(),
            format!("ceiling {t} ×"),
            format!("threads {t} ÷ ceiling"),
        ]
    };
    table_head(out, &columns(&fixed, &threads[1..], per));
    for (provider, alg, segment, decrypt) in rows(&ALGORITHMS, &LARGE_SEGMENTS) {
        let subject = |t| stream(provider, alg, segment, t);
        let one = r.gbs(subject(1), decrypt);
        let mut row = row_start(provider, Some(alg), segment, decrypt);
        let _ = write!(row, " {} | {} |", cell(one, 2), r.busy(subject(1), decrypt));
        for &t in &threads[1..] {
            let many = r.gbs(subject(t), decrypt);
            let cpus = r.busy(subject(t), decrypt);
            let ceiling = r.gbs(
                Subject::Split(Stream {
                    provider,
                    alg,
                    segment,
                    threads: t,
                }),
                decrypt,
            );
            let _ = write!(
                row,
                " {} | {cpus} | {} | {} | {} |",
                cell(many, 2),
                ratio(many, one),
                ratio(ceiling, one),
                ratio(many, ceiling)
            );
        }
        let _ = writeln!(out, "{row}");
    }
}

/// The small-call rows: RustCrypto, 64 KiB segments, both directions.
fn small_rows() -> Vec<(Provider, Algorithm, usize, bool)> {
    let algs = [Algorithm::ChaCha20Poly1305, Algorithm::Aes128Gcm];
    let mut v = rows(&algs, &[LARGE_SEGMENTS[0]]);
    v.retain(|r| r.0 == Provider::RustCrypto);
    v
}

/// Small writes and reads: a threaded stream must not be slower than one
/// thread, its batch filling through the buffer first.
fn small_table(out: &mut String, r: &Results, threads: &[usize]) {
    let _ = writeln!(out, "\n## Small calls\n");
    let _ = writeln!(
        out,
        "{} writes and reads (through the streams' buffers), otherwise as the first table. \
         Target: threads n not slower than threads 1 by more than the noise.\n",
        size_name(SMALL_CALL)
    );
    let fixed = [
        "provider",
        "algorithm",
        "segment",
        "direction",
        "threads 1 GB/s",
    ];
    let per = |t| vec![format!("threads {t} GB/s"), "× vs 1".to_owned()];
    table_head(out, &columns(&fixed, &threads[1..], per));
    for (provider, alg, segment, decrypt) in small_rows() {
        let subject = |t| stream(provider, alg, segment, t);
        let one = r.small_gbs(subject(1), decrypt);
        let mut row = row_start(provider, Some(alg), segment, decrypt);
        let _ = write!(row, " {} |", cell(one, 2));
        for &t in &threads[1..] {
            let many = r.small_gbs(subject(t), decrypt);
            let _ = write!(row, " {} | {} |", cell(many, 2), ratio(many, one));
        }
        let _ = writeln!(out, "{row}");
    }
}

/// ChaCha20-Poly1305 at every thread count against age's stream.
fn age_table(out: &mut String, r: &Results, threads: &[usize]) {
    let _ = writeln!(out, "\n## ChaCha20-Poly1305 against age\n");
    let _ = writeln!(
        out,
        "age {}: `Encryptor::with_recipients` (one `x25519::Identity::generate()` recipient) + \
         `wrap_output`, {1} writes, `finish`; `Decryptor::new_buffered` + `decrypt`, {1} \
         reads. Its STREAM is ChaCha20-Poly1305 in 64 KiB chunks, on one thread. Each pass \
         includes the header (age: an X25519 exchange and HKDF/HMAC; cipherio: HKDF), tens of \
         microseconds against milliseconds for the payload: negligible at this size, not at \
         small ones. × age = ratio of the medians (min–max of the per-round ratios). Target: \
         threads 2 RustCrypto ≥ 1.6× age.\n",
        age_version(),
        size_name(r.chunk)
    );
    let fixed = ["provider", "segment", "direction", "age GB/s"];
    let per = |t| vec![format!("threads {t} GB/s"), "× age".to_owned()];
    table_head(out, &columns(&fixed, threads, per));
    let chacha = Algorithm::ChaCha20Poly1305;
    for (provider, _, segment, decrypt) in rows(&[chacha], &LARGE_SEGMENTS) {
        let age = r.gbs(Subject::Age, decrypt);
        let mut row = row_start(provider, None, segment, decrypt);
        let _ = write!(row, " {} |", cell(age, 2));
        for &t in threads {
            let ours = r.gbs(stream(provider, chacha, segment, t), decrypt);
            let _ = write!(row, " {} | {} |", cell(ours, 2), ratio(ours, age));
        }
        let _ = writeln!(out, "{row}");
    }
}

/// What threads add per segment, at every segment size.
fn cost_table(out: &mut String, r: &Results, threads: &[usize], segments: &[usize], len: usize) {
    let _ = writeln!(out, "\n## What threads cost per segment\n");
    let _ = writeln!(
        out,
        "Overhead per segment with n threads = (wall(n) × n − wall(1)) ÷ segments, in ns, \
         computed per round from that round's two values (median, min–max over the rounds). \
         wall(n) × n counts every thread busy for the whole pass, waits included, so this is \
         the CPU time threads add per segment: handing batches out and joining them, idle \
         threads waiting for the slowest, the copy into the batch, the pool's start per \
         stream, and whatever other load took the cores (0 = a perfect n-fold speed-up; \
         negative = better than that, or noise). Segments under 64 KiB travel several to a \
         thread's 64 KiB share of a batch. For scale, wall(1) ÷ segments is one thread's \
         whole cost per segment. When other jobs hold a core, wall(n) × n overstates the cost \
         (a thread waiting for a core counts as busy); the CPU column measures instead: \
         (CPU(n) − CPU(1)) ÷ segments, with CPU the process's user + system time per pass \
         (all passes of all rounds, 10 ms ticks: one value, no range), which leaves out time \
         spent asleep but keeps spinning, waking and copying.\n"
    );
    let fixed = [
        "provider",
        "algorithm",
        "segment",
        "direction",
        "threads 1 ns/segment",
    ];
    let per = |t| {
        vec![
            format!("wall overhead with {t} threads, ns/segment"),
            format!("CPU overhead with {t} threads, ns/segment"),
        ]
    };
    table_head(out, &columns(&fixed, &threads[1..], per));
    for (provider, alg, segment, decrypt) in rows(&ALGORITHMS, segments) {
        let count = len.div_ceil(segment) as f64;
        let one = r.secs(stream(provider, alg, segment, 1), decrypt);
        let per: Vec<f64> = one.iter().map(|s| s * 1e9 / count).collect();
        let mut row = row_start(provider, Some(alg), segment, decrypt);
        let _ = write!(row, " {} |", cell(&per, 0));
        for &t in &threads[1..] {
            let many = r.secs(stream(provider, alg, segment, t), decrypt);
            let over: Vec<f64> = many
                .iter()
                .zip(one)
                .map(|(m, o)| (m * t as f64 - o) * 1e9 / count)
                .collect();
            let cpu = r.cpu_per_pass(stream(provider, alg, segment, t), decrypt)
                - r.cpu_per_pass(stream(provider, alg, segment, 1), decrypt);
            let _ = write!(row, " {} | {:.0} |", cell(&over, 0), cpu * 1e9 / count);
        }
        let _ = writeln!(out, "{row}");
    }
}
