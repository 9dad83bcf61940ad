//! The benchmark driver: runs the criterion sweep (`benches/sweep.rs`) once
//! per backend build, each in its own target directory, and writes a
//! report with a table, a plot and a verdict on the default buffer size.
//!
//! ```text
//! cargo run --release --example bench -- [--smoke | --quick] [--backend NAME,...] [--rounds N]
//! ```
//!
//! - `--quick`: the `default` and `aws-lc` builds (the ones that answer
//!   "which buffer size, which tier": AWS-LC runs once per AES tier the CPU
//!   has), 4 buffer sizes, encrypt and decrypt, 1 MiB per iteration, short
//!   timing, 1 round (the README's main command); the report names the
//!   builds the full sweep adds;
//! - no mode: the full sweep, every build this machine can run, 512 B … 1
//!   MiB and caller chunks 64 B … 1 MiB, 4 MiB per iteration, 3 rounds;
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
//! The sweep is built with `--features tokio,hazmat`: the RustCrypto
//! builds also time the keystream adapters (`cipherio::hazmat`,
//! AES-128-CTR and ChaCha20 at 8 and 64 KiB) against the raw cipher, in
//! their own table (`bench/keystream.rs`). The default build and AWS-LC
//! at its best tier also time Cobblestone-128 against the raw
//! AES-128-GCM, the `cobblestone` crate and `threads(2)`
//! (`bench/cobblestone.rs`).
//!
//! Output: `target/bench-report/report.md` (also printed),
//! `target/bench-report/throughput.svg`, and each round's criterion log in
//! `target/bench-<name>/round-<r>.log`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

// Not examples/keystream.rs: cargo would take that for an example.
#[path = "bench/cobblestone.rs"]
mod cobblestone;
#[path = "bench/keystream.rs"]
mod keystream;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const DEFAULT_BUFFER: usize = cipherio::DEFAULT_CAPACITY;

/// The builds `--quick` runs when no `--backend` is given: the default
/// build (what `cargo add cipherio` gives) and AWS-LC, run once per AES
/// tier of the CPU. The others (`native`, `chacha20-avx512`, `soft`)
/// cost a full compile each and only refine the RustCrypto rows.
const QUICK_BUILDS: [&str; 2] = ["default", "aws-lc"];

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
/// The std directions a mode measures.
fn std_dirs(mode: &Mode) -> impl Iterator<Item = &'static str> + '_ {
    mode.dirs.iter().copied().filter(|d| DIRS.contains(d))
}
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
    /// Directions of the buffer sweep.
    dirs: Vec<&'static str>,
    chunks: Vec<usize>,
    payload: usize,
    warm_up_ms: u64,
    measure_ms: u64,
    samples: usize,
    rounds: usize,
    /// How long each run's `perf` probe samples its streams, ms.
    probe_ms: u64,
    /// Buffer sizes of the keystream adapters' rows (`keystream.rs`).
    keystream: Vec<usize>,
}

impl Mode {
    fn smoke() -> Mode {
        Mode {
            name: "smoke",
            sizes: vec![8 * KIB, 64 * KIB],
            dirs: buffer_dirs().collect(),
            chunks: vec![KIB],
            payload: 256 * KIB,
            warm_up_ms: 20,
            measure_ms: 50,
            samples: 10,
            rounds: 1,
            probe_ms: 300,
            keystream: keystream::SIZES.to_vec(),
        }
    }

    /// The newcomer's run: only what answers "which buffer size, which
    /// build, which tier": four sizes around the 8 KiB default (the tiers
    /// table needs 8 and 64 KiB), encrypt and decrypt, no caller-chunk
    /// sweep, 1 MiB per iteration, each build and tier once.
    fn quick() -> Mode {
        Mode {
            name: "quick",
            sizes: vec![4 * KIB, 8 * KIB, 16 * KIB, 64 * KIB],
            dirs: vec!["encrypt", "decrypt"],
            chunks: vec![],
            payload: MIB,
            warm_up_ms: 100,
            measure_ms: 200,
            samples: 10,
            rounds: 1,
            probe_ms: 600,
            keystream: keystream::SIZES.to_vec(),
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
            dirs: buffer_dirs().collect(),
            chunks: powers(64, MIB),
            payload: 4 * MIB,
            warm_up_ms: 200,
            measure_ms: 600,
            samples: 20,
            rounds: 3,
            probe_ms: 1000,
            keystream: keystream::SIZES.to_vec(),
        }
    }
}

struct Args {
    mode: Mode,
    backends: Option<Vec<String>>,
    /// `--quick` without `--backend`: the builds left out are reported as
    /// the full sweep's.
    quick_default: bool,
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
    let quick_default = mode.name == "quick" && backends.is_none();
    if quick_default {
        backends = Some(QUICK_BUILDS.iter().map(|b| b.to_string()).collect());
    }
    Ok(Args {
        mode,
        backends,
        quick_default,
    })
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
    /// The keystream adapters (`cipherio::hazmat`) by buffer size:
    /// `Alg::Aes128` stands for AES-128-CTR, `Alg::ChaCha` for ChaCha20,
    /// the direction is `write` or `read` (see `keystream.rs`).
    Keystream,
    /// Cobblestone-128 at its 16 KiB chunk (`Alg::Aes128`, direction
    /// `encrypt` or `decrypt`; see `cobblestone.rs`).
    Cobblestone,
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

/// One AES-GCM tier of AWS-LC (aws-lc-sys 0.47, x86-64), as its dispatch
/// in `crypto/fipsmodule/modes/gcm.c` (`CRYPTO_ghash_init`,
/// `crypto_gcm_avx512_enabled`) and `cipher/e_aes.c` (`hwaes_capable`,
/// `vpaes_capable`) picks it from the capability words
/// `OPENSSL_ia32cap_P[0..4]` (`crypto/fipsmodule/cpucap/internal.h`).
struct Tier {
    name: &'static str,
    /// What runs: the AES and GHASH halves.
    aes: &'static str,
    ghash: &'static str,
    /// CPU features (as `is_x86_feature_detected!` names them) the tier
    /// needs: it exists on this CPU if all are present.
    needs: &'static [&'static str],
    /// `OPENSSL_ia32cap` for the tiers below the CPU's best: `~` clears
    /// the given bits from what CPUID reported (it can only take away).
    /// The first value is words 0 (CPUID.1:EDX) and 1 (CPUID.1:ECX, bits
    /// 32–63), the second words 2 (CPUID.7:EBX) and 3 (CPUID.7:ECX):
    /// AVX = bit 60 (ECX 28), AES-NI = bit 57 (ECX 25), VAES = bit 41 and
    /// VPCLMULQDQ = bit 42 of the second value (CPUID.7:ECX 9 and 10).
    mask: &'static str,
    /// Assembly routines only this tier runs for bulk AES-GCM (the
    /// evidence looked for in the `perf` samples), and its GHASH routine
    /// when that is separate (unstitched tiers).
    routines: &'static [&'static str],
    ghash_routine: Option<&'static str>,
}

/// Best first. aws-lc-sys 0.47 has no VAES-256 (AVX2) AES-GCM: without
/// AVX-512 a VAES CPU runs the AES-NI + AVX tier.
const AWS_LC_TIERS: [Tier; 4] = [
    Tier {
        name: "vaes-avx512",
        aes: "VAES-512 + VPCLMULQDQ, stitched (aesni-gcm-avx512)",
        ghash: "VPCLMULQDQ (stitched)",
        needs: &[
            "vaes",
            "vpclmulqdq",
            "avx512f",
            "avx512dq",
            "avx512bw",
            "avx512vl",
        ],
        mask: "",
        routines: &["aes_gcm_encrypt_avx512", "aes_gcm_decrypt_avx512"],
        ghash_routine: None,
    },
    Tier {
        name: "aesni-avx",
        aes: "AES-NI + AVX, stitched (aesni-gcm-x86_64)",
        ghash: "CLMUL + AVX (stitched)",
        needs: &["aes", "pclmulqdq", "avx", "movbe"],
        // VAES and VPCLMULQDQ cleared: crypto_gcm_avx512_enabled() fails.
        mask: "~0x0:~0x60000000000",
        routines: &[
            "_aesni_ctr32_ghash_6x",
            "_aesni_ctr32_6x",
            "aesni_gcm_encrypt",
            "aesni_gcm_decrypt",
        ],
        ghash_routine: None,
    },
    Tier {
        name: "aesni-clmul",
        aes: "AES-NI, unstitched (aes_hw_ctr32)",
        ghash: "CLMUL (gcm_ghash_clmul)",
        needs: &["aes", "pclmulqdq"],
        // AVX cleared too: GHASH takes gcm_init_clmul, is_avx = 0, so no
        // stitched AES-GCM; AES-NI CTR and CLMUL GHASH run one after the
        // other (a Westmere-class CPU).
        mask: "~0x1000000000000000:~0x60000000000",
        routines: &["aes_hw_ctr32_encrypt_blocks"],
        ghash_routine: Some("gcm_ghash_clmul"),
    },
    Tier {
        name: "vpaes",
        aes: "vpaes (SSSE3 vector permutes, no AES-NI)",
        ghash: "CLMUL + AVX (gcm_ghash_avx)",
        needs: &["ssse3"],
        // AES-NI cleared (and VAES): hwaes_capable() fails, vpaes_capable()
        // holds; PCLMULQDQ and AVX stay, so GHASH is gcm_ghash_avx.
        mask: "~0x200000000000000:~0x60000000000",
        routines: &[
            "_vpaes_encrypt_core_2x",
            "_vpaes_encrypt_core",
            "vpaes_ctr32_encrypt_blocks",
        ],
        ghash_routine: Some("gcm_ghash_avx"),
    },
];

/// Whether this CPU (and OS) has a feature, by its `std::arch` name.
fn cpu_has(name: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        match name {
            "aes" => has!("aes"),
            "pclmulqdq" => has!("pclmulqdq"),
            "ssse3" => has!("ssse3"),
            "movbe" => has!("movbe"),
            "avx" => has!("avx"),
            "avx2" => has!("avx2"),
            "vaes" => has!("vaes"),
            "vpclmulqdq" => has!("vpclmulqdq"),
            "avx512f" => has!("avx512f"),
            "avx512dq" => has!("avx512dq"),
            "avx512bw" => has!("avx512bw"),
            "avx512vl" => has!("avx512vl"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = name;
        false
    }
}

/// The AWS-LC tiers this CPU has, best first.
fn tiers_here() -> Vec<&'static Tier> {
    AWS_LC_TIERS
        .iter()
        .filter(|t| t.needs.iter().all(|f| cpu_has(f)))
        .collect()
}

/// One measured run: a build, and for `aws-lc` the AES tier it was held
/// to (the CPU's best tier runs unmasked under the build's own name).
struct Run<'a> {
    build: &'a Build,
    name: String,
    tier: Option<&'static Tier>,
    /// `OPENSSL_ia32cap` for this run (empty: unset).
    mask: &'static str,
    algs: Vec<Alg>,
    exe: PathBuf,
    build_secs: f64,
    reported: Reported,
    probe: Probe,
}

/// What `perf record` sampled while a run's streams ran (its probe).
#[derive(Default)]
struct Probe {
    /// (symbol, % of samples), the crypto-looking ones, most first.
    top: Vec<(String, f64)>,
    /// Why there is no sample (no perf, …).
    error: Option<String>,
}

impl Probe {
    fn share(&self, routine: &str) -> f64 {
        self.top
            .iter()
            .filter(|(s, _)| {
                s == routine || s.ends_with(&format!("_{routine}")) && s.starts_with("aws_lc_")
            })
            .fold(0.0, |a, x| a + x.1)
    }

    /// For an AWS-LC tier: did its own routines run, and no other tier's?
    fn verdict(&self, tier: &Tier) -> (bool, String) {
        if let Some(e) = &self.error {
            return (false, format!("not sampled: {e}"));
        }
        let mine = tier.routines.iter().fold(0.0, |a, r| a + self.share(r));
        let (other, other_name) = AWS_LC_TIERS
            .iter()
            .filter(|t| t.name != tier.name)
            .map(|t| {
                (
                    t.routines.iter().fold(0.0, |a, r| a + self.share(r)),
                    t.name,
                )
            })
            .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
        let ghash = tier.ghash_routine.map_or(100.0, |g| self.share(g));
        let ok = mine >= 5.0 && mine > 3.0 * other && ghash >= 1.0;
        let mut why = format!("{mine:.0} % of samples in this tier's AES-GCM routines");
        if let Some(g) = tier.ghash_routine {
            let _ = write!(why, ", {ghash:.0} % in {g}");
        }
        if other > 0.0 {
            let _ = write!(why, "; {other:.1} % in {other_name}'s");
        }
        (ok, why)
    }
}

struct Driver {
    root: PathBuf,
    /// Cargo's target directory: every build and report goes under it.
    target: PathBuf,
    cargo: String,
    host: String,
    mode: Mode,
}

impl Driver {
    /// Where a run's reports, logs and criterion data go.
    fn out_dir(&self, run: &str) -> PathBuf {
        self.target.join(format!("bench-{}", run.replace('@', "-")))
    }

    /// One cargo target directory for every build, with `--target` given:
    /// RUSTFLAGS then reach only the target's crates, so build scripts and
    /// proc macros compile once for all builds, and builds with the same
    /// RUSTFLAGS (`default` and `aws-lc`) share their dependencies; cargo
    /// keeps builds with different RUSTFLAGS side by side (the flags are
    /// in the file names), so nothing is rebuilt when they alternate.
    fn cargo_dir(&self) -> PathBuf {
        self.target.join("bench-build")
    }

    /// Compiles one build's bench binary (output to its build log) and
    /// returns its path and the seconds it took.
    fn build(&self, b: &Build) -> Result<(PathBuf, f64), String> {
        let dir = self.out_dir(b.name);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let log = dir.join("build.log");
        let t = Instant::now();
        // tokio: the async directions; hazmat: the keystream rows.
        let features = if b.features.is_empty() {
            "tokio,hazmat".to_string()
        } else {
            format!("{},tokio,hazmat", b.features)
        };
        let mut c = Command::new(&self.cargo);
        c.current_dir(&self.root)
            .args(["bench", "--no-run", "--bench", "sweep", "--features"])
            .arg(&features)
            .args(["--target", &self.host])
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env("RUSTFLAGS", b.rustflags)
            .env("CARGO_TARGET_DIR", self.cargo_dir())
            .env("CARGO_TERM_COLOR", "never");
        run_logged(c, &log)?;
        let text = fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        // `  Executable benches/sweep.rs (target/…/deps/sweep-…)`
        let exe = text
            .lines()
            .filter(|l| l.trim_start().starts_with("Executable") && l.contains("sweep"))
            .filter_map(|l| Some(l[l.rfind('(')? + 1..l.rfind(')')?].to_string()))
            .next_back()
            .ok_or_else(|| format!("{}: no Executable line from cargo", log.display()))?;
        Ok((self.root.join(exe), t.elapsed().as_secs_f64()))
    }

    /// The bench binary of a run, with its configuration.
    fn command(&self, r: &Run<'_>, round: usize) -> Command {
        let dir = self.out_dir(&r.name);
        let m = &self.mode;
        let join = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let algs: Vec<&str> = r.algs.iter().map(|a| a.id()).collect();
        let mut c = Command::new(&r.exe);
        c.current_dir(&self.root)
            .arg("--bench")
            .env("CRITERION_HOME", dir.join("criterion"))
            .env("CIPHERIO_BENCH_QUICK", "0")
            .env("CIPHERIO_BENCH_SIZES", join(&m.sizes))
            .env("CIPHERIO_BENCH_DIRS", m.dirs.join(","))
            .env("CIPHERIO_BENCH_CHUNKS", join(&m.chunks))
            .env("CIPHERIO_BENCH_ALGS", algs.join(","))
            .env("CIPHERIO_BENCH_PAYLOAD", m.payload.to_string())
            .env("CIPHERIO_BENCH_WARMUP_MS", m.warm_up_ms.to_string())
            .env("CIPHERIO_BENCH_MEASURE_MS", m.measure_ms.to_string())
            .env("CIPHERIO_BENCH_SAMPLES", m.samples.to_string())
            .env("CIPHERIO_BENCH_ROUND", round.to_string())
            .env("CIPHERIO_BENCH_KEYSTREAM", join(&keystream::sizes(m, r)))
            .env(
                "CIPHERIO_BENCH_KEYSTREAM_CIPHERS",
                keystream::ciphers(r).join(","),
            )
            .env(
                "CIPHERIO_BENCH_COBBLESTONE",
                if cobblestone::runs(r) { "1" } else { "0" },
            )
            .env("CIPHERIO_BENCH_BACKEND_OUT", dir.join("backends.txt"))
            .env(
                "CIPHERIO_BENCH_PAIRS_OUT",
                dir.join(format!("pairs-{round}.txt")),
            );
        // Unset, never empty: AWS-LC reads an empty OPENSSL_ia32cap as a
        // value (sscanf fails, an uninitialised number is used) and its
        // capability words turn to garbage (seen here: aes_nohw ran).
        if r.mask.is_empty() {
            c.env_remove("OPENSSL_ia32cap");
        } else {
            c.env("OPENSSL_ia32cap", r.mask);
        }
        c
    }

    /// The points one round of a run measures.
    fn points(&self, r: &Run<'_>) -> usize {
        let m = &self.mode;
        r.algs.len() * (m.dirs.len() * m.sizes.len() + CHUNK_DIRS.len() * m.chunks.len())
            + keystream::points(m, r)
            + cobblestone::points(r)
    }

    /// Samples a run's streams with `perf record` (the bench's probe mode:
    /// 64 KiB buffers, encrypt and decrypt) and keeps the crypto routines
    /// that took the samples.
    fn probe(&self, r: &Run<'_>) -> Probe {
        let dir = self.out_dir(&r.name);
        if let Err(e) = fs::create_dir_all(&dir) {
            return Probe {
                top: Vec::new(),
                error: Some(format!("{}: {e}", dir.display())),
            };
        }
        let data = dir.join("perf.data");
        let mut c = Command::new("perf");
        c.args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&data)
            .arg("--")
            .args(self.command(r, 0).get_program().to_str())
            .current_dir(&self.root);
        for (k, v) in self.command(r, 0).get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let aes: Vec<&str> = r
            .algs
            .iter()
            .filter(|a| **a != Alg::ChaCha)
            .map(|a| a.id())
            .collect();
        if !aes.is_empty() {
            c.env("CIPHERIO_BENCH_ALGS", aes.join(","));
        }
        c.env("CIPHERIO_BENCH_PAYLOAD", MIB.to_string())
            .env("CIPHERIO_BENCH_PROBE_MS", self.mode.probe_ms.to_string())
            .env_remove("CIPHERIO_BENCH_BACKEND_OUT");
        let log = dir.join("perf.log");
        if let Err(e) = run_logged(c, &log) {
            let first = e.lines().last().unwrap_or("").trim().to_string();
            return Probe {
                top: Vec::new(),
                error: Some(format!("`perf record` failed ({first})")),
            };
        }
        let out = Command::new("perf")
            .args(["report", "--stdio", "-q", "--sort", "symbol", "-i"])
            .arg(&data)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let text = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => {
                return Probe {
                    top: Vec::new(),
                    error: Some("`perf report` failed".into()),
                };
            }
        };
        let _ = fs::write(dir.join("perf-report.txt"), &text);
        let crypto = [
            "aes", "gcm", "ghash", "polyval", "clmul", "chacha", "poly1305", "fixslice",
        ];
        let mut top: Vec<(String, f64)> = text
            .lines()
            .filter_map(|l| {
                let (pct, rest) = l.trim().split_once('%')?;
                let pct: f64 = pct.trim().parse().ok()?;
                // `[.] name   -   -` (perf adds IPC columns after the name)
                let sym = rest.trim().strip_prefix("[.]")?.trim();
                let sym = sym.split("  ").next()?.trim().to_string();
                let low = sym.to_lowercase();
                crypto.iter().any(|k| low.contains(k)).then_some((sym, pct))
            })
            .collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        Probe { top, error: None }
    }

    /// Runs one round of one run and collects its estimates.
    fn round(
        &self,
        r: &Run<'_>,
        round: usize,
        results: &mut Results,
        progress: &mut Progress,
    ) -> Result<Reported, String> {
        let dir = self.out_dir(&r.name);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let crit = dir.join("criterion");
        if crit.exists() {
            // Stale estimates must not pass for this round's.
            fs::remove_dir_all(&crit).map_err(|e| format!("{}: {e}", crit.display()))?;
        }
        let log = dir.join(format!("round-{round}.log"));
        let label = format!("round {round}/{} · {}", self.mode.rounds, r.name);
        run_watched(self.command(r, round), &log, |line| {
            if let Some(p) = line.strip_prefix("cipherio-bench: point ") {
                progress.step(&label, p);
            }
        })?;
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
        for &alg in &r.algs {
            for &dir_name in &self.mode.dirs {
                let group = format!("{}-{dir_name}", alg.id());
                for &s in &self.mode.sizes {
                    let key = (r.name.clone(), alg, dir_name, Sweep::Buffer, s);
                    results.entry(key).or_default().push(point(&group, s)?);
                }
            }
            for dir_name in CHUNK_DIRS {
                let group = format!("{}-{dir_name}-chunk", alg.id());
                for &c in &self.mode.chunks {
                    let key = (r.name.clone(), alg, dir_name, Sweep::Chunk, c);
                    results.entry(key).or_default().push(point(&group, c)?);
                }
            }
        }
        for (alg, cipher) in keystream::runs_ciphers(r) {
            for dir_name in keystream::DIRS {
                let group = format!("{cipher}-keystream-{dir_name}");
                for &s in &keystream::sizes(&self.mode, r) {
                    let key = (r.name.clone(), alg, dir_name, Sweep::Keystream, s);
                    results.entry(key).or_default().push(point(&group, s)?);
                }
            }
        }
        for dir_name in cobblestone::DIRS.iter().filter(|_| cobblestone::runs(r)) {
            let (group, x) = (format!("cobblestone128-{dir_name}"), cobblestone::CHUNK);
            let key = (
                r.name.clone(),
                Alg::Aes128,
                *dir_name,
                Sweep::Cobblestone,
                x,
            );
            results.entry(key).or_default().push(point(&group, x)?);
        }
        Ok(reported)
    }
}

/// One progress line per measured point: which run, which point, time
/// spent and an estimate of the time left (from the pace so far).
struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    /// Seconds per point assumed before any was measured.
    guess: f64,
}

impl Progress {
    fn step(&mut self, label: &str, point: &str) {
        self.done += 1;
        let elapsed = self.start.elapsed().as_secs_f64();
        let pace = if self.done > 1 {
            elapsed / (self.done - 1) as f64
        } else {
            self.guess
        };
        let left = pace * (self.total + 1 - self.done) as f64;
        let (group, x) = point.split_once(' ').unwrap_or((point, ""));
        let x = x.trim().parse().map_or(x.to_string(), size_label);
        println!(
            "[{:>3}/{}] {label}: {group} {x} · {} elapsed · about {} left",
            self.done,
            self.total,
            clock(elapsed),
            clock(left)
        );
    }
}

fn clock(secs: f64) -> String {
    let s = Duration::from_secs_f64(secs.max(0.0) + 0.5).as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

fn run_logged(mut c: Command, log: &Path) -> Result<(), String> {
    let file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    c.stdin(Stdio::null()).stdout(file).stderr(err);
    let status = c
        .status()
        .map_err(|e| format!("running {:?}: {e}", c.get_program()))?;
    check(status, log)
}

/// Like [`run_logged`], and hands each line the command writes to stderr
/// to `each` as it comes (they go to the log too).
fn run_watched(mut c: Command, log: &Path, mut each: impl FnMut(&str)) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Write};
    let mut file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let out = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    c.stdin(Stdio::null()).stdout(out).stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("running {:?}: {e}", c.get_program()))?;
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(file, "{line}");
            each(&line);
        }
    }
    let status = child.wait().map_err(|e| format!("waiting: {e}"))?;
    check(status, log)
}

fn check(status: std::process::ExitStatus, log: &Path) -> Result<(), String> {
    if status.success() {
        Ok(())
    } else {
        let text = fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "command failed ({status}); last lines of {}:\n{}",
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

/// The CPU summary: which AES tiers exist here, which run executed each,
/// and how that was established.
fn tiers_summary(o: &mut String, ran: &[Run<'_>]) {
    let _ = writeln!(
        o,
        "## AES tiers: which exist on this CPU, which each build ran\n"
    );
    let _ = writeln!(
        o,
        "Established from CPUID, read by `std::arch::is_x86_feature_detected!` (the bits AWS-LC's \
         `OPENSSL_cpuid_setup` and the `cpufeatures` crate under aes 0.9.4 read); AWS-LC's tiers \
         from its dispatch in aws-lc-sys 0.47 (`crypto/fipsmodule/modes/gcm.c`, \
         `cipher/e_aes.c`, `cpucap/internal.h`); what a run really executed from `perf record` \
         samples of its streams (*How each tier was verified*, below), not from the labels. \
         One `aws-lc` binary runs every AWS-LC tier: the best unmasked (row `aws-lc`), the others \
         with `OPENSSL_ia32cap` clearing capability bits (`~` can only take bits away).\n"
    );
    let _ = writeln!(o, "| provider | tier | needs | this CPU | run as |");
    let _ = writeln!(o, "|---|---|---|---|---|");
    let here = tiers_here();
    for t in &AWS_LC_TIERS {
        let has = here.iter().any(|h| h.name == t.name);
        let runs: Vec<String> = ran
            .iter()
            .filter(|r| r.tier.is_some_and(|x| x.name == t.name))
            .map(|r| format!("`{}`", r.name))
            .collect();
        let _ = writeln!(
            o,
            "| AWS-LC | {} · GHASH {} | {} | {} | {} |",
            t.aes,
            t.ghash,
            t.needs.join(", "),
            if has { "yes" } else { "no" },
            if runs.is_empty() {
                "not run".to_string()
            } else {
                runs.join(", ")
            }
        );
    }
    // aes 0.9.4 (src/lib.rs): VAES-512 if avx512f and vaes, else VAES-256
    // if vaes, else AES-NI if aes, else fixslice; no switch between them.
    let rc: [(&str, &[&str], &str); 4] = [
        ("VAES-512", &["avx512f", "vaes"], "VAES-512"),
        ("VAES-256", &["vaes"], "VAES-256"),
        ("AES-NI", &["aes"], "AES-NI"),
        ("software (fixslice)", &[], "software"),
    ];
    let mut picked = false;
    for (label, needs, reported) in rc {
        let has = needs.iter().all(|f| cpu_has(f));
        let runs: Vec<String> = ran
            .iter()
            .filter(|r| r.build.features.is_empty() && r.build.algs.contains(&Alg::Aes128))
            .filter(|r| {
                r.reported
                    .get("aes")
                    .is_some_and(|a| a.starts_with(reported))
            })
            .map(|r| format!("`{}`", r.name))
            .collect();
        let note = if !runs.is_empty() {
            runs.join(", ")
        } else if has && picked {
            "not run: aes picks the tier above on this CPU, with no switch (dependencies are not patched)".to_string()
        } else {
            "not run".to_string()
        };
        picked |= has;
        let _ = writeln!(
            o,
            "| RustCrypto aes 0.9.4 | {label} | {} | {} | {note} |",
            if needs.is_empty() {
                "—".to_string()
            } else {
                needs.join(", ")
            },
            if has { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        o,
        "\nRustCrypto elsewhere: aes 0.9.4 picks VAES-512 where the CPU has AVX-512F and VAES \
         (Ice Lake and later Xeons, Zen 4/5), VAES-256 where it has VAES without AVX-512 (Zen 3, \
         Alder Lake and later client cores), AES-NI on older x86-64, and the constant-time \
         fixslice software without AES-NI (the `soft` build forces that one: its row is what such \
         a CPU gets, with software GHASH too). GHASH (polyval 0.7.3) is CLMUL wherever PCLMULQDQ \
         and AVX are present, software otherwise.\n"
    );
}

/// The tiers table (tier × provider × direction, AES-GCM at 8 and 64 KiB)
/// and the evidence that each tier ran.
fn tiers_table(o: &mut String, mode: &Mode, ran: &[Run<'_>], results: &Results) {
    let rows: Vec<&Run<'_>> = ran
        .iter()
        .filter(|r| r.algs.contains(&Alg::Aes128))
        .collect();
    if rows.is_empty() {
        return;
    }
    let sizes = [8 * KIB, 64 * KIB];
    let _ = writeln!(o, "## AES tiers at 8 KiB and 64 KiB\n");
    let _ = writeln!(
        o,
        "Stream GB/s · % of that run's own raw one-shot AEAD (same tier, same messages), \
         median (spread) as in the tables below.\n"
    );
    let _ = write!(o, "| provider | tier (run) | direction |");
    for a in [Alg::Aes128, Alg::Aes256] {
        for &s in &sizes {
            let _ = write!(o, " {} {} |", a.title(), size_label(s));
        }
    }
    let _ = writeln!(o, "\n|---|---|---|---|---|---|---|");
    for r in &rows {
        let (provider, tier) = match r.tier {
            Some(t) => ("AWS-LC", t.aes.to_string()),
            None if r.build.features == "aws-lc" => ("AWS-LC", "its own dispatch".to_string()),
            None => (
                "RustCrypto",
                format!(
                    "{} · GHASH {}",
                    r.reported.get("aes").map_or("?", String::as_str),
                    r.reported.get("ghash").map_or("?", String::as_str)
                ),
            ),
        };
        for d in std_dirs(mode) {
            let _ = write!(o, "| {provider} | {tier} (`{}`) | {d} |", r.name);
            for a in [Alg::Aes128, Alg::Aes256] {
                for &s in &sizes {
                    let key = (r.name.clone(), a, d, Sweep::Buffer, s);
                    let _ = match cell(results, mode.payload, &key) {
                        Some(c) => write!(o, " {:.2} GB/s · {} |", c.gbps, spread(c.ratio, 1)),
                        None => write!(o, " – |"),
                    };
                }
            }
            let _ = writeln!(o);
        }
    }
    let _ = writeln!(o);

    // The tiers' figures differ: the raw one-shot at 64 KiB per run.
    let aws: Vec<&Run<'_>> = rows.iter().copied().filter(|r| r.tier.is_some()).collect();
    if aws.len() > 1 {
        let raw: Vec<(String, f64)> = aws
            .iter()
            .filter_map(|r| {
                let key = (
                    r.name.clone(),
                    Alg::Aes128,
                    "encrypt",
                    Sweep::Buffer,
                    64 * KIB,
                );
                cell(results, mode.payload, &key).map(|c| (r.name.clone(), c.raw_gbps))
            })
            .collect();
        let ordered = raw.windows(2).all(|w| w[0].1 > w[1].1 * 1.05);
        let _ = writeln!(
            o,
            "AWS-LC's raw one-shot AES-128-GCM seal at 64 KiB, per tier: {}. {}\n",
            raw.iter()
                .map(|(n, g)| format!("`{n}` {g:.2} GB/s"))
                .collect::<Vec<_>>()
                .join(", "),
            if ordered {
                "Each tier is more than 5 % slower than the one above: the masks changed the code that ran."
            } else {
                "Not every tier is more than 5 % slower than the one above (noise, or a mask that did not take: see the samples)."
            }
        );
    }

    let _ = writeln!(o, "### How each tier was verified\n");
    let _ = writeln!(
        o,
        "Each run's binary, with the run's environment (and mask), was run for {} ms in its \
         probe mode (`CIPHERIO_BENCH_PROBE_MS`: AES-GCM streams, 64 KiB buffers, encrypt and \
         decrypt) under `perf record -e cpu-clock -F 4000`; `perf report --sort symbol` gives the \
         share of samples per function. Below, the crypto routines that took the most samples \
         (data in `target/bench-<run>/perf.data`, text in `perf-report.txt`). An AWS-LC tier \
         passes if its own bulk AES-GCM routines hold at least 5 % of the samples and over 3× \
         any other tier's (and, for the unstitched tiers, its GHASH routine shows).\n",
        mode.probe_ms
    );
    let _ = writeln!(
        o,
        "| run | `OPENSSL_ia32cap` | expected | sampled (share of all samples) | verdict |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|");
    for r in &rows {
        let top: Vec<String> = r
            .probe
            .top
            .iter()
            .take(4)
            .map(|(s, p)| {
                let s: String = s.chars().take(70).collect();
                format!("`{s}` {p:.1} %")
            })
            .collect();
        let sampled = match &r.probe.error {
            Some(e) => e.clone(),
            None if top.is_empty() => "no crypto routine sampled".to_string(),
            None => top.join(", "),
        };
        let (expected, verdict) = match r.tier {
            Some(t) => {
                let (ok, why) = r.probe.verdict(t);
                let mut exp = t.routines.join(" / ");
                if let Some(g) = t.ghash_routine {
                    let _ = write!(exp, " + {g}");
                }
                (exp, format!("{} {why}", if ok { "✅" } else { "❌" }))
            }
            None => (
                format!(
                    "{} (reported by `cipherio::backend`)",
                    r.reported.get("aes").map_or("?", String::as_str)
                ),
                "shown, not checked (Rust symbols)".to_string(),
            ),
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {expected} | {sampled} | {verdict} |",
            r.name,
            if r.mask.is_empty() {
                "(unset)".to_string()
            } else {
                format!("`{}`", r.mask)
            }
        );
    }
    let _ = writeln!(o);
}

fn report(
    mode: &Mode,
    ran: &[Run<'_>],
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
    tiers_summary(&mut o, ran);
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
        "Rows `aws-lc@<tier>` are the `aws-lc` build's binary run again with \
         `OPENSSL_ia32cap` masking capability bits (the column after the flags); their AES \
         and GHASH are what AWS-LC's dispatch picks under that mask, checked by sampling \
         (see *How each tier was verified*). The RustCrypto builds' columns are \
         `cipherio::backend`'s reading of their cfg flags and the CPU.\n"
    );
    let _ = writeln!(
        o,
        "| build | RUSTFLAGS; cargo features | AES | GHASH | ChaCha20 | Poly1305 | target features compiled in | build time |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for r in ran {
        let g = |k: &str| match (k, r.tier) {
            ("aes", Some(t)) => t.aes,
            ("ghash", Some(t)) => t.ghash,
            _ => r.reported.get(k).map_or("?", String::as_str),
        };
        let compiled = match g("compiled") {
            "" => "(none: runtime detection)",
            c => c,
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} s |",
            r.name,
            match (r.build.rustflags, r.build.features) {
                ("", "") => "(none)".to_string(),
                ("", f) if r.mask.is_empty() => format!("(none); `--features {f}`"),
                ("", f) => format!("(none); `--features {f}`; `OPENSSL_ia32cap={}`", r.mask),
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
    tiers_table(&mut o, mode, ran, results);
    if ran.iter().any(|r| r.name == "default") {
        let _ = writeln!(o, "## Targets (default build, stream ÷ raw)\n");
        let _ = writeln!(
            o,
            "| algorithm | direction | at 64 KiB (target ≥ 95 %) | at 8 KiB (target ≥ 90 %) |"
        );
        let _ = writeln!(o, "|---|---|---|---|");
        for alg in Alg::ALL {
            for d in std_dirs(mode) {
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

    keystream::report(&mut o, mode, ran, results);
    cobblestone::report(&mut o, mode, ran, results);

    // The aws-lc provider's targets: AES-128-GCM with it against
    // aws-lc-rs's own one-shot AEAD.
    if ran.iter().any(|r| r.name == "aws-lc") {
        let _ = writeln!(
            o,
            "## Targets (aws-lc build, AES-128-GCM, stream ÷ aws-lc-rs one-shot)\n"
        );
        let _ = writeln!(
            o,
            "| direction | at 64 KiB (target ≥ 85 %) | at 8 KiB (target ≥ 75 %) | aws-lc-rs one-shot at 64 KiB |"
        );
        let _ = writeln!(o, "|---|---|---|---|");
        for d in std_dirs(mode) {
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

    // The async fronts against the std fronts, per build.
    for r in ran.iter().filter(|_| mode.dirs.contains(&"encrypt-async")) {
        let name = r.name.as_str();
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
        for &alg in &r.algs {
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
        for &alg in &r.algs {
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
        let name = r.name.as_str();
        let cols: Vec<(Alg, &str)> = mode
            .dirs
            .iter()
            .flat_map(|&d| r.algs.iter().map(move |&a| (a, d)))
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
        let name = r.name.as_str();
        let mut per = Vec::new();
        let mut rel: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        let mut at_default = Vec::new();
        for &a in &r.algs {
            for d in std_dirs(mode) {
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
fn plot(mode: &Mode, ran: &[Run<'_>], results: &Results) -> String {
    const COLORS: [&str; 10] = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
        "#bcbd22", "#7f7f7f",
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
            let raw = (bi == 0 || r.name == "aws-lc").then_some((r, true, "#999", 1.0));
            std::iter::once((r, false, COLORS[bi % COLORS.len()], 2.0)).chain(raw)
        });
        for (r, raw, color, width) in lines {
            for d in std_dirs(mode) {
                let pts: Vec<String> = mode
                    .sizes
                    .iter()
                    .filter_map(|&v| {
                        let key = (r.name.clone(), *alg, d, Sweep::Buffer, v);
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
            let what = match r.tier {
                Some(t) => format!(" (AWS-LC tier {})", t.aes),
                None => String::new(),
            };
            let label = format!(
                "{}{what}: encrypt (solid), decrypt via Read (dashed), via BufRead (dotted)",
                r.name
            );
            (COLORS[bi % COLORS.len()], label)
        })
        .collect();
    let ceilings: Vec<&str> = ran
        .iter()
        .enumerate()
        .filter(|(bi, r)| *bi == 0 || r.name == "aws-lc")
        .map(|(_, r)| r.name.as_str())
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
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // Everything goes under cargo's target directory: CARGO_TARGET_DIR if
    // set (relative to where cargo was run, as cargo reads it), else
    // `target/` of the crate.
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .join(d),
        _ => root.join("target"),
    };
    let driver = Driver {
        root,
        target,
        cargo: std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()),
        host: host_triple()?,
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
    let here = tiers_here();
    println!(
        "AWS-LC AES-GCM tiers on this CPU (from CPUID): {}",
        if here.is_empty() {
            "none known (not x86-64)".to_string()
        } else {
            here.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
        }
    );

    let mut chosen = Vec::new();
    let mut skipped = Vec::new();
    for b in &BUILDS {
        let wanted = |names: &Vec<String>| names.iter().any(|n| n == b.name);
        if !args.backends.as_ref().is_none_or(wanted) {
            if args.quick_default {
                let why = "not in --quick: the full sweep (no --quick) builds it".to_string();
                println!("leaving out build {}: {why}", b.name);
                skipped.push((b.name.to_string(), why));
            }
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

    let mut runs: Vec<Run<'_>> = Vec::new();
    let n_builds = chosen.len();
    for (i, b) in chosen.into_iter().enumerate() {
        println!(
            "[build {}/{n_builds}] {} (RUSTFLAGS=\"{}\"{}) in {} · {} elapsed …",
            i + 1,
            b.name,
            b.rustflags,
            if b.features.is_empty() {
                String::new()
            } else {
                format!(", --features {}", b.features)
            },
            driver.cargo_dir().display(),
            clock(start.elapsed().as_secs_f64())
        );
        let (exe, secs) = match driver.build(b) {
            Ok(x) => x,
            // A build with cargo features needs what they need (aws-lc: a
            // C compiler): report it and go on with the others.
            Err(e) if !b.features.is_empty() => {
                println!("skipping build {}: {e}", b.name);
                skipped.push((b.name.to_string(), format!("build failed: {e}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        println!(
            "[build {}/{n_builds}] {} built in {secs:.0} s",
            i + 1,
            b.name
        );
        let run = |name: String, tier, mask, algs: Vec<Alg>| Run {
            build: b,
            name,
            tier,
            mask,
            algs,
            exe: exe.clone(),
            build_secs: secs,
            reported: Reported::new(),
            probe: Probe::default(),
        };
        if b.features == "aws-lc" && !here.is_empty() {
            // The CPU's best tier unmasked, under the build's name; each
            // lower tier masked, AES-GCM only (ChaCha20 is not an AES tier).
            runs.push(run(b.name.to_string(), Some(here[0]), "", b.algs.to_vec()));
            for t in &here[1..] {
                let aes = vec![Alg::Aes128, Alg::Aes256];
                runs.push(run(format!("{}@{}", b.name, t.name), Some(*t), t.mask, aes));
            }
        } else {
            runs.push(run(b.name.to_string(), None, "", b.algs.to_vec()));
        }
    }

    // Which routines each run executes: a short sampled probe per run.
    for r in &mut runs {
        r.probe = driver.probe(r);
        let what = match (&r.probe.error, r.tier) {
            (Some(e), _) => e.clone(),
            (None, Some(t)) => {
                let (ok, why) = r.probe.verdict(t);
                format!("{} tier {}: {why}", if ok { "✅" } else { "❌" }, t.name)
            }
            (None, None) => r
                .probe
                .top
                .first()
                .map_or("no crypto routine sampled".to_string(), |(s, p)| {
                    format!("top: {s} {p:.0} %")
                }),
        };
        println!("[probe] {:<20} {what}", r.name);
    }

    let mut results = Results::new();
    let m = &driver.mode;
    let total: usize = runs.iter().map(|r| driver.points(r)).sum::<usize>() * m.rounds;
    // About: warm-up, then the measurement with the raw AEAD interleaved.
    let guess = (m.warm_up_ms + 2 * m.measure_ms) as f64 / 1000.0 + 0.1;
    println!(
        "measuring {total} points ({} run(s) × {} round(s)); about {} if the machine is idle",
        runs.len(),
        m.rounds,
        clock(guess * total as f64)
    );
    let mut progress = Progress {
        total,
        done: 0,
        start: Instant::now(),
        guess,
    };
    for round in 1..=m.rounds {
        for r in &mut runs {
            let t = Instant::now();
            r.reported = driver.round(r, round, &mut results, &mut progress)?;
            let g = |k: &str| r.reported.get(k).cloned().unwrap_or_default();
            let (aes, ghash) = match r.tier {
                Some(t) => (t.aes.to_string(), t.ghash.to_string()),
                None => (g("aes"), g("ghash")),
            };
            println!(
                "round {round}/{}: {:<20} {:>5.0} s  AES {aes} · GHASH {ghash} · ChaCha20 {} · Poly1305 {}",
                m.rounds,
                r.name,
                t.elapsed().as_secs_f64(),
                g("chacha20"),
                g("poly1305")
            );
        }
    }

    let out = driver.target.join("bench-report");
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let text = report(m, &runs, &skipped, &results, secs);
    let svg = plot(m, &runs, &results);
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

/// The host's target triple, from `rustc -vV` (for `--target`).
fn host_triple() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("running {rustc} -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .ok_or_else(|| format!("{rustc} -vV printed no host"))
}
