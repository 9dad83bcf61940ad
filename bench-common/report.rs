//! What the benchmark crates outside cipherio's own build (`tls-bench/`,
//! `threads-bench/`) share: the entry point, the load average, median and
//! range of a sample, and the plaintext they seal. Each includes this file
//! with `#[path = "../../bench-common/report.rs"] mod report;`.

use std::fs;
use std::io;
use std::process::ExitCode;

/// Parses the arguments and runs: a usage error or a failed run is printed
/// (the latter after `name: `) and ends the process with a failure code.
pub fn main_with<A>(
    name: &str,
    parse: fn() -> Result<A, String>,
    run: fn(&A) -> io::Result<()>,
) -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them
/// (`n/a` where there is none).
pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

/// Median and extremes of a sample (not empty).
pub fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let med = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (med, s[0], s[n - 1])
}

/// `median (min–max)` of a sample, with `digits` decimals.
pub fn cell(v: &[f64], digits: usize) -> String {
    let (m, lo, hi) = stats(v);
    format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})")
}

/// `len` deterministic bytes that do not compress (xorshift).
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.to_le_bytes()[0]
        })
        .collect()
}
