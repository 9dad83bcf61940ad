//! The benchmark driver: runs the criterion sweep (`benches/sweep.rs`) once
//! per backend build, each in its own target directory, and writes a
//! report with a table, a plot and a verdict on the default buffer size.
//!
//! ```text
//! cargo run --release --example bench -- [--smoke | --quick] [--backend NAME,...] [--rounds N]
//! ```
//!
//! - `--quick`: every build this machine can run, 5 buffer sizes, 4 caller
//!   chunks, 4 MiB per iteration, short timing, 2 rounds (the README's main
//!   command);
//! - no mode: the full sweep, 512 B … 1 MiB and caller chunks 64 B … 1 MiB,
//!   4 MiB per iteration, 3 rounds;
//! - `--smoke`: the default build only, 2 sizes, a tiny payload, 1 round
//!   (CI runs it so that the driver cannot rot).
//!
//! Builds (`--backend` picks some): `default` (runtime CPU detection),
//! `native` (`-C target-cpu=native`), `chacha20-avx512` (`--cfg
//! chacha20_avx512`, ChaCha20-Poly1305 only, skipped without AVX-512) and
//! `soft` (the portable software backends of aes, polyval, chacha20 and
//! poly1305). Each lives in `target/bench-<name>/`; the backends a build
//! really ran are what that bench binary reports from its own cfg flags and
//! CPU detection (`cipherio::backend`), not the label asked for.
//!
//! Speeds are compared as ratios measured side by side: for every
//! criterion sample of the stream, the bench runs the raw AEAD for as many
//! iterations, interleaved one by one with the stream's, and writes each
//! sample's times and median ratio to
//! `target/bench-<name>/pairs-<round>.txt`. The rounds go through the
//! builds in turn; the report gives each point's median paired ratio,
//! median over rounds, with the spread (min–max over rounds). Stream
//! throughput is criterion's fastest sample
//! (`<target>/criterion/<group>/stream/<size>/new/sample.json`).
//!
//! Output: `target/bench-report/report.md` (also printed),
//! `target/bench-report/throughput.svg`, and each round's criterion log in
//! `target/bench-<name>/round-<r>.log`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const DEFAULT_BUFFER: usize = cipherio::DEFAULT_CAPACITY;

/// One backend build.
struct Build {
    name: &'static str,
    rustflags: &'static str,
    /// Cargo features of cipherio it turns on.
    features: &'static str,
    /// CPU features it needs to run at all.
    needs: &'static [&'static str],
    /// Algorithms it changes (the others would repeat `default`).
    algs: &'static [Alg],
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Alg {
    Aes128,
    Aes256,
    ChaCha,
}

impl Alg {
    const ALL: [Alg; 3] = [Alg::Aes128, Alg::Aes256, Alg::ChaCha];

    /// The name in the bench's group names.
    fn id(self) -> &'static str {
        match self {
            Alg::Aes128 => "aes128gcm",
            Alg::Aes256 => "aes256gcm",
            Alg::ChaCha => "chacha20poly1305",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Alg::Aes128 => "AES-128-GCM",
            Alg::Aes256 => "AES-256-GCM",
            Alg::ChaCha => "ChaCha20-Poly1305",
        }
    }
}

/// Directions of the buffer sweep: `decrypt` reads through `Read` (the
/// ciphertext is copied out of the `&[u8]`), `decrypt-bufread` through
/// `build_from_buf_read` (segments opened where they lie).
const DIRS: [&str; 3] = ["encrypt", "decrypt", "decrypt-bufread"];
/// The async fronts' directions of the buffer sweep (the bench is built
/// with `--features tokio`): `encrypt-async` and `decrypt-async` are
/// paired with the std front doing the same work (reference `std`) as well
/// as with the raw AEAD; `roundtrip-duplex` (encrypt into a
/// `tokio::io::duplex`, decrypt from its other end) with the two async
/// fronts run without a pipe (reference `async`) and the raw AEAD.
const ASYNC_DIRS: [&str; 3] = ["encrypt-async", "decrypt-async", "roundtrip-duplex"];
/// The std direction each async direction is compared with.
const ASYNC_VS: [(&str, &str); 2] = [("encrypt-async", "encrypt"), ("decrypt-async", "decrypt")];
/// Every direction of the buffer sweep.
fn buffer_dirs() -> impl Iterator<Item = &'static str> {
    DIRS.into_iter().chain(ASYNC_DIRS)
}
/// Directions of the caller-granularity sweep.
const CHUNK_DIRS: [&str; 2] = ["encrypt", "decrypt"];

const BUILDS: [Build; 5] = [
    Build {
        name: "default",
        rustflags: "",
        features: "",
        needs: &[],
        algs: &Alg::ALL,
    },
    Build {
        name: "native",
        rustflags: "-C target-cpu=native",
        features: "",
        needs: &[],
        algs: &Alg::ALL,
    },
    Build {
        name: "chacha20-avx512",
        rustflags: "--cfg chacha20_avx512",
        features: "",
        needs: &["avx512f", "avx512vl"],
        algs: &[Alg::ChaCha],
    },
    Build {
        name: "soft",
        rustflags: "--cfg aes_backend=\"soft\" --cfg polyval_backend=\"soft\" \
                    --cfg chacha20_backend=\"soft\" --cfg poly1305_backend=\"soft\"",
        features: "",
        needs: &[],
        algs: &Alg::ALL,
    },
    Build {
        name: "aws-lc",
        rustflags: "",
        features: "aws-lc",
        needs: &[],
        algs: &Alg::ALL,
    },
];

/// What one run measures.
struct Mode {
    name: &'static str,
    sizes: Vec<usize>,
    chunks: Vec<usize>,
    payload: usize,
    warm_up_ms: u64,
    measure_ms: u64,
    samples: usize,
    rounds: usize,
}

impl Mode {
    fn smoke() -> Mode {
        Mode {
            name: "smoke",
            sizes: vec![8 * KIB, 64 * KIB],
            chunks: vec![KIB],
            payload: 256 * KIB,
            warm_up_ms: 20,
            measure_ms: 50,
            samples: 10,
            rounds: 1,
        }
    }

    fn quick() -> Mode {
        Mode {
            name: "quick",
            sizes: vec![512, 4 * KIB, 8 * KIB, 64 * KIB, MIB],
            chunks: vec![64, KIB, 8 * KIB, 64 * KIB],
            payload: 4 * MIB,
            warm_up_ms: 100,
            measure_ms: 250,
            samples: 10,
            rounds: 2,
        }
    }

    fn full() -> Mode {
        let powers = |from: usize, to: usize| {
            std::iter::successors(Some(from), |&s| Some(s * 2))
                .take_while(|&s| s <= to)
                .collect::<Vec<_>>()
        };
        Mode {
            name: "full",
            sizes: powers(512, MIB),
            chunks: powers(64, MIB),
            payload: 4 * MIB,
            warm_up_ms: 200,
            measure_ms: 600,
            samples: 20,
            rounds: 3,
        }
    }
}

struct Args {
    mode: Mode,
    backends: Option<Vec<String>>,
}

fn parse_args() -> Result<Args, String> {
    let mut mode = None;
    let mut backends = None;
    let mut rounds = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => mode = Some(Mode::smoke()),
            "--quick" => mode = Some(Mode::quick()),
            "--full" => mode = Some(Mode::full()),
            "--backend" | "--backends" => {
                let v = it.next().ok_or("--backend needs a value")?;
                let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                for n in &names {
                    if !BUILDS.iter().any(|b| b.name == n) {
                        let known: Vec<&str> = BUILDS.iter().map(|b| b.name).collect();
                        return Err(format!(
                            "unknown backend {n:?}; known: {}",
                            known.join(", ")
                        ));
                    }
                }
                backends = Some(names);
            }
            "--rounds" => {
                let v = it.next().ok_or("--rounds needs a value")?;
                let n: usize = v.parse().map_err(|_| format!("bad --rounds {v}"))?;
                rounds = Some(n.max(1));
            }
            "--bench" => {} // passed by `cargo bench`-style runners; ignored
            "-h" | "--help" => {
                return Err("usage: bench [--smoke | --quick | --full] [--backend default,native,chacha20-avx512,soft,aws-lc] [--rounds N]".into());
            }
            _ => return Err(format!("unknown argument {a:?} (try --help)")),
        }
    }
    let mut mode = mode.unwrap_or_else(Mode::full);
    if let Some(r) = rounds {
        mode.rounds = r;
    }
    if mode.name == "smoke" && backends.is_none() {
        backends = Some(vec!["default".to_string()]);
    }
    Ok(Args { mode, backends })
}

/// The backends one build reported (`key=value` lines from the bench).
type Reported = BTreeMap<String, String>;

fn read_reported(path: &Path) -> Result<Reported, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// The fastest sample's time per iteration, in ns, from criterion's
/// `sample.json` (`{"iters":[…],"times":[…]}`). Other work on a shared
/// machine only ever slows a sample down, so the fastest one is the
/// steadiest estimate of what the code can do; criterion's own median is
/// in `estimates.json` beside it.
fn fastest_ns(path: &Path) -> Result<f64, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = || format!("{}: no iters/times arrays", path.display());
    let array = |key: &str| -> Result<Vec<f64>, String> {
        let at = text.find(&format!("\"{key}\":[")).ok_or_else(bad)? + key.len() + 4;
        let end = text[at..].find(']').ok_or_else(bad)? + at;
        text[at..end]
            .split(',')
            .map(|v| v.trim().parse::<f64>().map_err(|_| bad()))
            .collect()
    };
    let (iters, times) = (array("iters")?, array("times")?);
    let best = iters
        .iter()
        .zip(&times)
        .filter(|(n, _)| **n > 0.0)
        .map(|(n, t)| t / n)
        .fold(f64::INFINITY, f64::min);
    if iters.len() == times.len() && best.is_finite() && best > 0.0 {
        Ok(best)
    } else {
        Err(bad())
    }
}

/// Which sweep a point belongs to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Sweep {
    /// Buffer size (writer and reader capacity).
    Buffer,
    /// Caller chunk at the default buffer.
    Chunk,
}

/// One round's figures for one point.
#[derive(Clone, Debug)]
struct Round {
    /// The stream's fastest criterion sample, ns per iteration.
    stream_ns: f64,
    /// The raw AEAD's fastest paired sample, ns per iteration.
    raw_ns: f64,
    /// Per criterion sample, the median over its iterations of raw ÷ stream
    /// time (= stream ÷ raw throughput) of neighbouring iterations.
    ratios: Vec<f64>,
    /// The same for the other references of the point (`std`, `async`).
    vs: BTreeMap<String, Vec<f64>>,
}

/// (build, algorithm, direction, sweep, size) → one entry per round.
type Results = BTreeMap<(String, Alg, &'static str, Sweep, usize), Vec<Round>>;

/// The paired samples of one round: (group, x, reference) → (iterations,
/// stream ns, reference ns, median per-iteration reference ÷ stream time)
/// per criterion sample. The reference is `raw` (the raw AEAD; rows with
/// no 7th column), or `std`/`async` for the async directions.
type PairRows = BTreeMap<(String, usize, String), Vec<[f64; 4]>>;

fn read_pairs(path: &Path) -> Result<PairRows, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows = PairRows::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || format!("{}: bad line {line:?}", path.display());
        if f.len() != 6 && f.len() != 7 {
            return Err(bad());
        }
        let reference = f.get(6).map_or("raw", |r| r.trim()).to_string();
        let x: usize = f[1].parse().map_err(|_| bad())?;
        let mut n = [0f64; 4];
        for (v, t) in n.iter_mut().zip(&f[2..6]) {
            *v = t.parse().map_err(|_| bad())?;
        }
        if n.iter().all(|v| v.is_finite() && *v > 0.0) {
            rows.entry((f[0].to_string(), x, reference))
                .or_default()
                .push(n);
        }
    }
    Ok(rows)
}

struct Driver {
    root: PathBuf,
    cargo: String,
    mode: Mode,
}

impl Driver {
    fn target(&self, b: &Build) -> PathBuf {
        self.root.join("target").join(format!("bench-{}", b.name))
    }

    fn command(&self, b: &Build, round: usize) -> Command {
        let dir = self.target(b);
        let m = &self.mode;
        let join = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let algs: Vec<&str> = b.algs.iter().map(|a| a.id()).collect();
        let mut c = Command::new(&self.cargo);
        c.current_dir(&self.root)
            .args(["bench", "--bench", "sweep"])
            // Every build runs the async directions too.
            .args([
                "--features",
                &if b.features.is_empty() {
                    "tokio".to_string()
                } else {
                    format!("{},tokio", b.features)
                },
            ])
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env("RUSTFLAGS", b.rustflags)
            .env("CARGO_TARGET_DIR", &dir)
            .env("CRITERION_HOME", dir.join("criterion"))
            .env("CARGO_TERM_COLOR", "never")
            .env("CIPHERIO_BENCH_QUICK", "0")
            .env("CIPHERIO_BENCH_SIZES", join(&m.sizes))
            .env("CIPHERIO_BENCH_CHUNKS", join(&m.chunks))
            .env("CIPHERIO_BENCH_ALGS", algs.join(","))
            .env("CIPHERIO_BENCH_PAYLOAD", m.payload.to_string())
            .env("CIPHERIO_BENCH_WARMUP_MS", m.warm_up_ms.to_string())
            .env("CIPHERIO_BENCH_MEASURE_MS", m.measure_ms.to_string())
            .env("CIPHERIO_BENCH_SAMPLES", m.samples.to_string())
            .env("CIPHERIO_BENCH_ROUND", round.to_string())
            .env("CIPHERIO_BENCH_BACKEND_OUT", dir.join("backends.txt"))
            .env(
                "CIPHERIO_BENCH_PAIRS_OUT",
                dir.join(format!("pairs-{round}.txt")),
            );
        c
    }

    /// Compiles one build's bench binary; output to its build log.
    fn build(&self, b: &Build) -> Result<f64, String> {
        let dir = self.target(b);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let log = dir.join("build.log");
        let t = Instant::now();
        let mut c = self.command(b, 0);
        c.arg("--no-run");
        run_logged(c, &log)?;
        Ok(t.elapsed().as_secs_f64())
    }

    /// Runs one round of one build and collects its estimates.
    fn round(&self, b: &Build, round: usize, results: &mut Results) -> Result<Reported, String> {
        let dir = self.target(b);
        let crit = dir.join("criterion");
        if crit.exists() {
            // Stale estimates must not pass for this round's.
            fs::remove_dir_all(&crit).map_err(|e| format!("{}: {e}", crit.display()))?;
        }
        run_logged(
            self.command(b, round),
            &dir.join(format!("round-{round}.log")),
        )?;
        let reported = read_reported(&dir.join("backends.txt"))?;
        let pairs = read_pairs(&dir.join(format!("pairs-{round}.txt")))?;
        let point = |group: &str, x: usize| -> Result<Round, String> {
            let est = crit.join(group).join("stream").join(x.to_string());
            let stream_ns = fastest_ns(&est.join("new/sample.json"))?;
            let rows = pairs
                .get(&(group.to_string(), x, "raw".to_string()))
                .ok_or_else(|| format!("no paired samples for {group}/{x}"))?;
            let vs = pairs
                .iter()
                .filter(|((g, s, r), _)| g == group && *s == x && r != "raw")
                .map(|((_, _, r), rows)| (r.clone(), rows.iter().map(|r| r[3]).collect()))
                .collect();
            let raw = rows
                .iter()
                .map(|r| r[2] / r[0])
                .fold(f64::INFINITY, f64::min);
            Ok(Round {
                stream_ns,
                raw_ns: raw,
                ratios: rows.iter().map(|r| r[3]).collect(),
                vs,
            })
        };
        for &alg in b.algs {
            for dir_name in buffer_dirs() {
                let group = format!("{}-{dir_name}", alg.id());
                for &s in &self.mode.sizes {
                    let key = (b.name.to_string(), alg, dir_name, Sweep::Buffer, s);
                    results.entry(key).or_default().push(point(&group, s)?);
                }
            }
            for dir_name in CHUNK_DIRS {
                let group = format!("{}-{dir_name}-chunk", alg.id());
                for &c in &self.mode.chunks {
                    let key = (b.name.to_string(), alg, dir_name, Sweep::Chunk, c);
                    results.entry(key).or_default().push(point(&group, c)?);
                }
            }
        }
        Ok(reported)
    }
}

fn run_logged(mut c: Command, log: &Path) -> Result<(), String> {
    let file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    c.stdin(Stdio::null()).stdout(file).stderr(err);
    let status = c.status().map_err(|e| format!("running cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        let text = fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "cargo bench failed ({status}); last lines of {}:\n{}",
            log.display(),
            tail.join("\n")
        ))
    }
}

/// Median and (min, max) of `v` (not empty).
fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (median, s[0], s[n - 1])
}

/// One cell: stream GB/s (median over rounds), raw GB/s, and the
/// stream/raw ratio: the median over rounds of each round's median paired
/// ratio, with the spread (min–max over rounds; with one round, the
/// 25th–75th percentile of its paired samples).
#[derive(Clone, Copy)]
struct Cell {
    gbps: f64,
    raw_gbps: f64,
    ratio: (f64, f64, f64),
}

fn cell(
    results: &Results,
    payload: usize,
    key: &(String, Alg, &'static str, Sweep, usize),
) -> Option<Cell> {
    let v = results.get(key)?;
    let gb = |ns: f64| payload as f64 / ns; // bytes per ns = GB/s
    let gbps = stats(&v.iter().map(|r| gb(r.stream_ns)).collect::<Vec<_>>()).0;
    let raw_gbps = stats(&v.iter().map(|r| gb(r.raw_ns)).collect::<Vec<_>>()).0;
    let ratio = round_stats(&v.iter().map(|r| &r.ratios[..]).collect::<Vec<_>>())?;
    Some(Cell {
        gbps,
        raw_gbps,
        ratio,
    })
}

/// A ratio over rounds from each round's per-sample medians: the median
/// over rounds of each round's median, with the min–max over rounds (with
/// one round: the median and 25th–75th percentile of its samples).
fn round_stats(rounds: &[&[f64]]) -> Option<(f64, f64, f64)> {
    if rounds.iter().any(|r| r.is_empty()) || rounds.is_empty() {
        return None;
    }
    Some(if rounds.len() > 1 {
        stats(&rounds.iter().map(|r| stats(r).0).collect::<Vec<_>>())
    } else {
        let mut all = rounds[0].to_vec();
        all.sort_by(f64::total_cmp);
        let q = |quarters: usize| all[(all.len() - 1) * quarters / 4];
        (stats(&all).0, q(1), q(3))
    })
}

/// A point's stream ÷ `reference` ratio (`std`, `async`), as [`cell`]
/// gives it for the raw AEAD.
fn vs_ratio(
    results: &Results,
    key: &(String, Alg, &'static str, Sweep, usize),
    reference: &str,
) -> Option<(f64, f64, f64)> {
    let v = results.get(key)?;
    let per: Option<Vec<&[f64]>> = v
        .iter()
        .map(|r| r.vs.get(reference).map(|x| &x[..]))
        .collect();
    round_stats(&per?)
}

fn size_label(s: usize) -> String {
    if s >= MIB && s / MIB * MIB == s {
        format!("{} MiB", s / MIB)
    } else if s >= KIB && s / KIB * KIB == s {
        format!("{} KiB", s / KIB)
    } else {
        format!("{s} B")
    }
}

fn pct(r: f64) -> String {
    format!("{:.0} %", r * 100.0)
}

fn spread(r: (f64, f64, f64), _rounds: usize) -> String {
    format!("{} ({:.0}–{:.0})", pct(r.0), r.1 * 100.0, r.2 * 100.0)
}

/// A UTC date and time from the system clock, without a date crate.
fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

struct Ran<'a> {
    build: &'a Build,
    reported: Reported,
    build_secs: f64,
}

fn report(
    mode: &Mode,
    ran: &[Ran<'_>],
    skipped: &[(String, String)],
    results: &Results,
    secs: f64,
) -> String {
    let mut o = String::new();
    let cpu: Vec<String> = cipherio::backend::cpu_features()
        .into_iter()
        .map(|(n, on)| format!("{n} {}", if on { "yes" } else { "no" }))
        .collect();
    let _ = writeln!(o, "# cipherio: throughput by buffer size\n");
    let _ = writeln!(
        o,
        "{} · `{}` mode · {} · {} logical CPUs · {} per iteration · {} round(s) · took {:.0} s\n",
        now_utc(),
        mode.name,
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        size_label(mode.payload),
        mode.rounds,
        secs
    );
    let _ = writeln!(o, "CPU features: {}\n", cpu.join(", "));
    let _ = writeln!(
        o,
        "GB/s: 10⁹ bytes of plaintext per second through the adapter, from the fastest of \
         criterion's samples (other work on a shared machine only slows samples down, so the \
         fastest is the steadiest figure), median over rounds. %: stream ÷ raw AEAD, the same crate's one-shot AEAD over the same \
         bytes in messages of the buffer's size. They are measured in pairs: for every criterion \
         sample of the stream the raw AEAD runs as many iterations, interleaved one by one and \
         each timed, so noise from other work on the machine hits both alike; a round's ratio \
         is the median over its samples of each sample's median ratio of neighbours, and the cell shows the median over rounds with the \
         min–max over rounds in brackets (with one round: the 25th–75th percentile of the \
         pairs). The buffer is the capacity of both `CipherWriter` (= segment size) and \
         `CipherReader`; in the buffer sweep the caller writes the whole payload with one \
         `write_all` and reads into one reused buffer of the buffer's size (the raw AEAD opens \
         into one such buffer too); every iteration is a new stream \
         (key derivation and buffer allocation included).\n"
    );

    let _ = writeln!(o, "## Builds and the backends they ran\n");
    let _ = writeln!(
        o,
        "| build | RUSTFLAGS; cargo features | AES | GHASH | ChaCha20 | Poly1305 | target features compiled in | build time |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for r in ran {
        let g = |k: &str| r.reported.get(k).map_or("?", String::as_str);
        let compiled = match g("compiled") {
            "" => "(none: runtime detection)",
            c => c,
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} s |",
            r.build.name,
            match (r.build.rustflags, r.build.features) {
                ("", "") => "(none)".to_string(),
                ("", f) => format!("(none); `--features {f}`"),
                (fl, "") => format!("`{fl}`"),
                (fl, f) => format!("`{fl}`; `--features {f}`"),
            },
            g("aes"),
            g("ghash"),
            g("chacha20"),
            g("poly1305"),
            compiled,
            r.build_secs
        );
    }
    for (name, why) in skipped {
        let _ = writeln!(o, "| {name} | skipped: {why} | | | | | | |");
    }
    let _ = writeln!(o);

    // The issue's targets, on the default build.
    if ran.iter().any(|r| r.build.name == "default") {
        let _ = writeln!(o, "## Targets (default build, stream ÷ raw)\n");
        let _ = writeln!(
            o,
            "| algorithm | direction | at 64 KiB (target ≥ 95 %) | at 8 KiB (target ≥ 90 %) |"
        );
        let _ = writeln!(o, "|---|---|---|---|");
        for alg in Alg::ALL {
            for d in DIRS {
                let mut cells = Vec::new();
                for (s, target) in [(64 * KIB, 0.95), (8 * KIB, 0.90)] {
                    let key = ("default".to_string(), alg, d, Sweep::Buffer, s);
                    cells.push(match cell(results, mode.payload, &key) {
                        Some(c) => format!(
                            "{} {}",
                            spread(c.ratio, mode.rounds),
                            if c.ratio.0 >= target { "✅" } else { "❌" }
                        ),
                        None => "not measured".to_string(),
                    });
                }
                let _ = writeln!(o, "| {} | {d} | {} | {} |", alg.title(), cells[0], cells[1]);
            }
        }
        let _ = writeln!(
            o,
            "\nDecrypt carries a copy the raw AEAD does not make: a `Read` adapter must copy the \
             ciphertext out of its source (`read` on a `&[u8]` is a memcpy, on a `File` a copy from \
             the page cache), while the raw AEAD opens the messages in place where they lie. With a \
             fast AES-GCM and a stream larger than the caches that copy is a memory-bound pass of \
             its own. `decrypt-bufread` reads the same `&[u8]` through \
             `ReaderBuilder::build_from_buf_read`, which opens whole segments where they lie in \
             the source's buffer: that copy is gone."
        );
        let _ = writeln!(o);
    }

    // Issue 6's targets: AES-128-GCM with the aws-lc provider against
    // aws-lc-rs's own one-shot AEAD.
    if ran.iter().any(|r| r.build.name == "aws-lc") {
        let _ = writeln!(
            o,
            "## Targets (aws-lc build, AES-128-GCM, stream ÷ aws-lc-rs one-shot)\n"
        );
        let _ = writeln!(
            o,
            "| direction | at 64 KiB (target ≥ 85 %) | at 8 KiB (target ≥ 75 %) | aws-lc-rs one-shot at 64 KiB |"
        );
        let _ = writeln!(o, "|---|---|---|---|");
        for d in DIRS {
            let mut cells = Vec::new();
            for (s, target) in [(64 * KIB, 0.85), (8 * KIB, 0.75)] {
                let key = ("aws-lc".to_string(), Alg::Aes128, d, Sweep::Buffer, s);
                cells.push(match cell(results, mode.payload, &key) {
                    Some(c) => format!(
                        "{:.2} GB/s · {} {}",
                        c.gbps,
                        spread(c.ratio, mode.rounds),
                        if c.ratio.0 >= target { "✅" } else { "❌" }
                    ),
                    None => "not measured".to_string(),
                });
            }
            let key = (
                "aws-lc".to_string(),
                Alg::Aes128,
                d,
                Sweep::Buffer,
                64 * KIB,
            );
            let raw = cell(results, mode.payload, &key)
                .map_or("–".to_string(), |c| format!("{:.2} GB/s", c.raw_gbps));
            let _ = writeln!(o, "| {d} | {} | {} | {raw} |", cells[0], cells[1]);
        }
        let _ = writeln!(o);
    }

    // Issue 11: the async fronts against the std fronts, per build.
    for r in ran {
        let name = r.build.name;
        let _ = writeln!(o, "## Async fronts ÷ std fronts: `{name}` build\n");
        let _ = writeln!(
            o,
            "`AsyncCipherWriter`/`AsyncCipherReader` driven with `block_on` on a current-thread \
             tokio runtime, over in-memory ends without a pipe (an `AsyncWrite` that discards, \
             like `io::sink()`; a `&[u8]`), timed interleaved with `CipherWriter<io::Sink>`/\
             `CipherReader<&[u8]>` doing the same work: async ÷ std throughput, median over \
             rounds of the paired ratio (min–max over rounds). Target at 64 KiB: ≥ 90 %.\n"
        );
        let _ = writeln!(
            o,
            "| algorithm | direction | at 8 KiB | at 64 KiB (target ≥ 90 %) | async GB/s at 64 KiB |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|");
        for &alg in r.build.algs {
            for (d, std_dir) in ASYNC_VS {
                let mut cells = Vec::new();
                for s in [8 * KIB, 64 * KIB] {
                    let key = (name.to_string(), alg, d, Sweep::Buffer, s);
                    cells.push(match vs_ratio(results, &key, "std") {
                        Some(x) if s == 64 * KIB => format!(
                            "{} {}",
                            spread(x, mode.rounds),
                            if x.0 >= 0.90 { "✅" } else { "❌" }
                        ),
                        Some(x) => spread(x, mode.rounds),
                        None => "not measured".to_string(),
                    });
                }
                let key = (name.to_string(), alg, d, Sweep::Buffer, 64 * KIB);
                let g = cell(results, mode.payload, &key)
                    .map_or("–".to_string(), |c| format!("{:.2} GB/s", c.gbps));
                let _ = writeln!(
                    o,
                    "| {} | {d} ÷ {std_dir} | {} | {} | {g} |",
                    alg.title(),
                    cells[0],
                    cells[1]
                );
            }
        }
        let _ = writeln!(
            o,
            "\nThrough a pipe (`roundtrip-duplex`): a spawned task encrypts into a \
             `tokio::io::duplex` of 64 KiB and shuts it down, the `block_on` task decrypts from \
             the other end (GB/s of plaintext through the round trip), against the same two \
             async fronts run one after the other without a pipe (duplex ÷ no pipe) and \
             against the raw AEAD sealing and opening the payload:\n"
        );
        let _ = writeln!(
            o,
            "| algorithm | buffer | duplex GB/s | duplex ÷ no pipe | duplex ÷ raw |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|");
        for &alg in r.build.algs {
            for s in [8 * KIB, 64 * KIB] {
                let key = (name.to_string(), alg, "roundtrip-duplex", Sweep::Buffer, s);
                let (g, raw) = cell(results, mode.payload, &key)
                    .map_or(("–".to_string(), "–".to_string()), |c| {
                        (format!("{:.2}", c.gbps), spread(c.ratio, mode.rounds))
                    });
                let nopipe = vs_ratio(results, &key, "async")
                    .map_or("–".to_string(), |x| spread(x, mode.rounds));
                let _ = writeln!(
                    o,
                    "| {} | {} | {g} | {nopipe} | {raw} |",
                    alg.title(),
                    size_label(s)
                );
            }
        }
        let _ = writeln!(
            o,
            "\nWhat the pipe adds: every sealed byte is copied into the duplex's buffer and out \
             again (the no-pipe reader copies once, out of its `&[u8]`), each side takes the \
             pipe's lock on every poll, and whenever the 64 KiB pipe is full or empty a task \
             parks and the other is woken and scheduled; both tasks share one thread, so the \
             round trip runs encrypt and decrypt in turn, never at once.\n"
        );
    }

    for r in ran {
        let name = r.build.name;
        let cols: Vec<(Alg, &str)> = buffer_dirs()
            .flat_map(|d| r.build.algs.iter().map(move |&a| (a, d)))
            .collect();
        let header = |o: &mut String, first: &str| {
            let _ = write!(o, "| {first} |");
            for (a, d) in &cols {
                let _ = write!(o, " {} {d} |", a.title());
            }
            let _ = writeln!(o);
            let _ = writeln!(o, "|---|{}", "---|".repeat(cols.len()));
        };
        let _ = writeln!(o, "## Buffer size: `{name}` build\n");
        header(&mut o, "buffer");
        let mut above = 0;
        for &s in &mode.sizes {
            let _ = write!(o, "| {} |", size_label(s));
            for &(a, d) in &cols {
                let key = (name.to_string(), a, d, Sweep::Buffer, s);
                let _ = match cell(results, mode.payload, &key) {
                    Some(c) => {
                        // Above the ceiling even at the worst round.
                        if c.ratio.1 > 1.05 {
                            above += 1;
                        }
                        write!(
                            o,
                            " {:.2} GB/s · {} |",
                            c.gbps,
                            spread(c.ratio, mode.rounds)
                        )
                    }
                    None => write!(o, " – |"),
                };
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
        if above > 0 {
            let _ = writeln!(
                o,
                "{above} point(s) above 105 % in every round: there the raw AEAD, compiled in the \
                 bench crate, runs slower than the same AEAD compiled inside cipherio. The two \
                 are separate instantiations of the generic aes-gcm code and can be inlined \
                 differently (seen with `-C target-cpu=native`, where `perf` shows ghash's \
                 `proc_par_blocks` left out of line in the bench crate only); the ceiling is \
                 then not a ceiling, so read those rows by GB/s.\n"
            );
        }
        if !mode.chunks.is_empty() {
            let _ = writeln!(
                o,
                "Caller granularity at the {} default (`write_all`/`read` of this many bytes; % of raw at {}):\n",
                size_label(DEFAULT_BUFFER),
                size_label(DEFAULT_BUFFER)
            );
            let cols: Vec<(Alg, &str)> = cols
                .iter()
                .copied()
                .filter(|(_, d)| CHUNK_DIRS.contains(d))
                .collect();
            let _ = write!(o, "| chunk |");
            for (a, d) in &cols {
                let _ = write!(o, " {} {d} |", a.title());
            }
            let _ = writeln!(o);
            let _ = writeln!(o, "|---|{}", "---|".repeat(cols.len()));
            for &c in &mode.chunks {
                let _ = write!(o, "| {} |", size_label(c));
                for &(a, d) in &cols {
                    let key = (name.to_string(), a, d, Sweep::Chunk, c);
                    let _ = match cell(results, mode.payload, &key) {
                        Some(x) => write!(
                            o,
                            " {:.2} GB/s · {} |",
                            x.gbps,
                            spread(x.ratio, mode.rounds)
                        ),
                        None => write!(o, " – |"),
                    };
                }
                let _ = writeln!(o);
            }
            let _ = writeln!(o);
        }
    }

    // Best buffer size per build, and the verdict on the default.
    let _ = writeln!(o, "## Best buffer size\n");
    let _ = writeln!(
        o,
        "Per build: the size with the highest stream throughput for each algorithm and \
         direction, and the size with the best geometric mean over all of them \
         (each throughput taken relative to that column's best).\n"
    );
    let _ = writeln!(
        o,
        "| build | best overall | 8 KiB reaches (of each column's best) | per algorithm and direction |"
    );
    let _ = writeln!(o, "|---|---|---|---|");
    let mut verdict = String::new();
    for r in ran {
        let name = r.build.name;
        let mut per = Vec::new();
        let mut rel: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        let mut at_default = Vec::new();
        for &a in r.build.algs {
            for d in DIRS {
                let row: Vec<(usize, f64, f64)> = mode
                    .sizes
                    .iter()
                    .filter_map(|&s| {
                        let key = (name.to_string(), a, d, Sweep::Buffer, s);
                        cell(results, mode.payload, &key).map(|c| (s, c.gbps, c.raw_gbps))
                    })
                    .collect();
                let Some(&(best, top, raw_top)) = row.iter().max_by(|x, y| x.1.total_cmp(&y.1))
                else {
                    continue;
                };
                per.push(format!(
                    "{} {d}: {} ({top:.2} GB/s)",
                    a.title(),
                    size_label(best)
                ));
                for &(s, g, _) in &row {
                    rel.entry(s).or_default().push(g / top);
                }
                if let Some(&(_, g, raw)) = row.iter().find(|x| x.0 == DEFAULT_BUFFER) {
                    at_default.push((a, d, g / top, best, top, g, raw / raw_top));
                }
            }
        }
        let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
        let best_overall = rel
            .iter()
            .map(|(&s, v)| (s, geo(v)))
            .max_by(|x, y| x.1.total_cmp(&y.1));
        let reach = if at_default.is_empty() {
            "not measured".to_string()
        } else {
            let worst = at_default.iter().map(|x| x.2).fold(f64::INFINITY, f64::min);
            let mean = geo(&at_default.iter().map(|x| x.2).collect::<Vec<_>>());
            format!("{} on average, {} at worst", pct(mean), pct(worst))
        };
        let _ = writeln!(
            o,
            "| {name} | {} | {reach} | {} |",
            best_overall.map_or("–".to_string(), |(s, g)| format!(
                "{} ({} of each best on average)",
                size_label(s),
                pct(g)
            )),
            per.join("; ")
        );
        if name == "default" && !at_default.is_empty() {
            let worst = at_default
                .iter()
                .min_by(|x, y| x.2.total_cmp(&y.2))
                .copied();
            let good = at_default.iter().all(|x| x.2 >= 0.90);
            let _ = writeln!(verdict, "## Is 8 KiB a good default?\n");
            let figures: Vec<String> = at_default
                .iter()
                .map(|(a, d, rel, best, top, g, raw_rel)| {
                    format!(
                        "{} {d}: {g:.2} GB/s at 8 KiB vs {top:.2} GB/s at {} ({}; the raw AEAD \
                         alone in 8 KiB messages: {} of its rate at {})",
                        a.title(),
                        size_label(*best),
                        pct(*rel),
                        pct(*raw_rel),
                        size_label(*best),
                    )
                })
                .collect();
            if good {
                let _ = writeln!(
                    verdict,
                    "**Yes, on this machine**: with the default build, 8 KiB reaches at least 90 % \
                     of the best buffer's throughput for every algorithm and direction."
                );
            } else if let Some((a, d, rel, best, _, _, _)) = worst {
                let _ = writeln!(
                    verdict,
                    "**Not quite, on this machine**: with the default build, 8 KiB falls below 90 % \
                     of the best buffer's throughput (worst: {} {d} at {} of the best, which is {}). \
                     Below, per column, how much of that the raw AEAD itself loses at 8 KiB (its \
                     per-message cost) and so how much is the adapters'; 8 KiB keeps memory per \
                     stream small.",
                    a.title(),
                    pct(rel),
                    size_label(best)
                );
            }
            let _ = writeln!(verdict, "\n- {}\n", figures.join("\n- "));
        }
    }
    let _ = writeln!(o);
    o.push_str(&verdict);
    let _ = writeln!(o, "![throughput against buffer size](throughput.svg)");
    o
}

/// A hand-written SVG: one panel per algorithm, throughput against buffer
/// size (log2), one line per build and direction.
fn plot(mode: &Mode, ran: &[Ran<'_>], results: &Results) -> String {
    const COLORS: [&str; 6] = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    ];
    let (pw, ph, ml, mt, mb, gap) = (340.0, 260.0, 50.0, 40.0, 75.0, 30.0);
    let width = ml + 3.0 * (pw + gap);
    let height = mt + ph + mb + 20.0 * (ran.len() + 1) as f64;
    let mut ymax: f64 = 0.0;
    for (k, _) in results.iter().filter(|(k, _)| k.3 == Sweep::Buffer) {
        if let Some(c) = cell(results, mode.payload, k) {
            ymax = ymax.max(c.gbps).max(c.raw_gbps);
        }
    }
    let ymax = if ymax > 0.0 { (ymax * 1.1).ceil() } else { 1.0 };
    let (lo, hi) = (
        mode.sizes.iter().copied().min().unwrap_or(512),
        mode.sizes.iter().copied().max().unwrap_or(MIB),
    );
    let (llo, lhi) = (
        (lo as f64).log2(),
        (hi as f64).log2().max((lo as f64).log2() + 1.0),
    );
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="18" font-size="14" text-anchor="middle">cipherio stream throughput (GB/s) against buffer size — {} mode</text>"#,
        width / 2.0,
        mode.name
    );
    for (i, alg) in Alg::ALL.iter().enumerate() {
        let x0 = ml + i as f64 * (pw + gap);
        let xs = |v: usize| x0 + ((v as f64).log2() - llo) / (lhi - llo) * pw;
        let ys = |g: f64| mt + ph - g / ymax * ph;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
            x0 + pw / 2.0,
            mt - 6.0,
            alg.title()
        );
        let _ = writeln!(
            s,
            r##"<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        for t in 0..=4 {
            let g = ymax * f64::from(t) / 4.0;
            let y = ys(g);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" x2="{}" y1="{y}" y2="{y}" stroke="#eee"/>"##,
                x0 + pw
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{g:.1}</text>"#,
                x0 - 4.0,
                y + 4.0
            );
        }
        for &v in &mode.sizes {
            let x = xs(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x}" x2="{x}" y1="{mt}" y2="{}" stroke="#eee"/>"##,
                mt + ph
            );
            let _ = writeln!(
                s,
                r#"<text x="{x}" y="{}" text-anchor="end" transform="rotate(-45 {x} {})">{}</text>"#,
                mt + ph + 14.0,
                mt + ph + 14.0,
                size_label(v)
            );
        }
        // The raw AEAD of the first build, thin and grey, as the ceiling.
        let lines = ran.iter().enumerate().flat_map(|(bi, r)| {
            // aws-lc's ceiling is its own one-shot AEAD: drawn too.
            let raw = (bi == 0 || r.build.features == "aws-lc").then_some((r, true, "#999", 1.0));
            std::iter::once((r, false, COLORS[bi % COLORS.len()], 2.0)).chain(raw)
        });
        for (r, raw, color, width) in lines {
            for d in DIRS {
                let pts: Vec<String> = mode
                    .sizes
                    .iter()
                    .filter_map(|&v| {
                        let key = (r.build.name.to_string(), *alg, d, Sweep::Buffer, v);
                        cell(results, mode.payload, &key).map(|c| {
                            let g = if raw { c.raw_gbps } else { c.gbps };
                            format!("{:.1},{:.1}", xs(v), ys(g))
                        })
                    })
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let dash = match d {
                    "decrypt" => r#" stroke-dasharray="6 4""#,
                    "decrypt-bufread" => r#" stroke-dasharray="2 3""#,
                    _ => "",
                };
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>"#,
                    pts.join(" "),
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">GB/s</text>"#,
        mt + ph / 2.0,
        mt + ph / 2.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">buffer size (capacity of writer and reader), log scale</text>"#,
        width / 2.0,
        mt + ph + 62.0
    );
    let ly = mt + ph + mb;
    let mut legend: Vec<(&str, String)> = ran
        .iter()
        .enumerate()
        .map(|(bi, r)| {
            let label = format!(
                "{} build: encrypt (solid), decrypt via Read (dashed), via BufRead (dotted)",
                r.build.name
            );
            (COLORS[bi % COLORS.len()], label)
        })
        .collect();
    let ceilings: Vec<&str> = ran
        .iter()
        .enumerate()
        .filter(|(bi, r)| *bi == 0 || r.build.features == "aws-lc")
        .map(|(_, r)| r.build.name)
        .collect();
    if !ceilings.is_empty() {
        let label = format!(
            "raw AEAD, {} build(s) (the ceilings)",
            ceilings.join(" and ")
        );
        legend.push(("#999", label));
    }
    for (i, (c, label)) in legend.iter().enumerate() {
        let y = ly + 20.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{ml}" x2="{}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2"/>"#,
            ml + 30.0
        );
        let _ = writeln!(
            s,
            r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2" stroke-dasharray="6 4"/>"#,
            ml + 36.0,
            ml + 66.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{label}</text>"#,
            ml + 74.0,
            y + 4.0
        );
    }
    let _ = writeln!(s, "</svg>");
    s
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let start = Instant::now();
    let driver = Driver {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        cargo: std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()),
        mode: args.mode,
    };
    let cpu = cipherio::backend::cpu_features();
    let on: Vec<&str> = cpu.iter().filter(|f| f.1).map(|f| f.0).collect();
    let off: Vec<&str> = cpu.iter().filter(|f| !f.1).map(|f| f.0).collect();
    println!("CPU: {}", cpu_model());
    println!(
        "AES-related features: present: {}; absent: {}",
        on.join(" "),
        if off.is_empty() {
            "none".to_string()
        } else {
            off.join(" ")
        }
    );

    let mut chosen = Vec::new();
    let mut skipped = Vec::new();
    for b in &BUILDS {
        let wanted = |names: &Vec<String>| names.iter().any(|n| n == b.name);
        if !args.backends.as_ref().is_none_or(wanted) {
            continue;
        }
        let missing: Vec<&str> = b
            .needs
            .iter()
            .copied()
            .filter(|n| !on.contains(n))
            .collect();
        if missing.is_empty() {
            chosen.push(b);
        } else {
            let why = format!("this CPU lacks {}", missing.join(", "));
            println!("skipping build {}: {why}", b.name);
            skipped.push((b.name.to_string(), why));
        }
    }
    if chosen.is_empty() {
        return Err("no build to run".into());
    }

    let mut ran = Vec::new();
    for b in chosen {
        println!(
            "building {} (RUSTFLAGS=\"{}\") in {} …",
            b.name,
            b.rustflags,
            driver.target(b).display()
        );
        let secs = match driver.build(b) {
            Ok(secs) => secs,
            // A build with cargo features needs what they need (aws-lc: a
            // C compiler): report it and go on with the others.
            Err(e) if !b.features.is_empty() => {
                println!("skipping build {}: {e}", b.name);
                skipped.push((b.name.to_string(), format!("build failed: {e}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        ran.push(Ran {
            build: b,
            reported: Reported::new(),
            build_secs: secs,
        });
    }

    let mut results = Results::new();
    let m = &driver.mode;
    for round in 1..=m.rounds {
        for r in &mut ran {
            let t = Instant::now();
            r.reported = driver.round(r.build, round, &mut results)?;
            let g = |k: &str| r.reported.get(k).cloned().unwrap_or_default();
            println!(
                "round {round}/{}: {:<16} {:>5.0} s  AES {} · GHASH {} · ChaCha20 {} · Poly1305 {}",
                m.rounds,
                r.build.name,
                t.elapsed().as_secs_f64(),
                g("aes"),
                g("ghash"),
                g("chacha20"),
                g("poly1305")
            );
        }
    }

    let out = driver.root.join("target/bench-report");
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let text = report(m, &ran, &skipped, &results, secs);
    let svg = plot(m, &ran, &results);
    fs::write(out.join("report.md"), &text).map_err(|e| format!("report.md: {e}"))?;
    fs::write(out.join("throughput.svg"), svg).map_err(|e| format!("throughput.svg: {e}"))?;
    println!("\n{text}");
    println!(
        "written: {} and throughput.svg ({:.0} s in all)",
        out.join("report.md").display(),
        secs
    );
    Ok(())
}
