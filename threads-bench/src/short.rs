//! `--short`: threads on short streams. For streams of 256 KiB to 32 MiB
//! (64 KiB segments, RustCrypto, `&[u8]` in, `Vec` out), each algorithm
//! and way of calling, three variants alternate stream by stream (the
//! order reversed every other pass): one thread; two threads as built
//! (the caller alone for a reader's first 2 MiB delivered and a writer's
//! first MiB sealed); two threads from the first byte (the crate's
//! hidden `threads_after(0)`, as before that threshold). Reported:
//! each threaded variant ÷ one thread, paired by pass, median and
//! quartiles.

use std::hint::black_box;
use std::io::{self, Read, Write};
use std::time::Instant;

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider};

use crate::report::pattern;

const SEGMENT: usize = 64 << 10;

/// How a stream is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Read1M,
    Copy,
    Write1M,
    Write1K,
}

impl Call {
    const ALL: [Call; 4] = [Call::Read1M, Call::Copy, Call::Write1M, Call::Write1K];

    fn name(self) -> &'static str {
        match self {
            Call::Read1M => "1 MiB reads, prefetch",
            Call::Copy => "io::copy, prefetch",
            Call::Write1M => "1 MiB writes",
            Call::Write1K => "1 KiB writes",
        }
    }
}

/// What `--short` runs.
pub struct Short {
    /// Stream lengths, KiB.
    pub kib: Vec<usize>,
    /// Streams per variant at 1 MiB (fewer for longer ones, more for
    /// shorter).
    pub passes: usize,
    /// `--smoke`: say that the timings mean nothing.
    pub smoke: bool,
}

/// One stream through `call` at `threads` (`after`: the hidden
/// threshold, `None` as built); its time in seconds.
fn one(
    key: &Key,
    call: Call,
    (threads, after): (usize, Option<u64>),
    plain: &[u8],
    sealed: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<f64> {
    let t = Instant::now();
    match call {
        Call::Write1M | Call::Write1K => {
            out.clear();
            let mut b = CipherWriter::builder(key)
                .capacity(SEGMENT)
                .provider(Provider::RustCrypto)
                .threads(threads);
            if let Some(a) = after {
                b = b.threads_after(a);
            }
            let mut w = b.build(&mut *out);
            let chunk = if call == Call::Write1K {
                1 << 10
            } else {
                1 << 20
            };
            for c in plain.chunks(chunk) {
                w.write_all(c)?;
            }
            w.finish()?;
            black_box(&out);
        }
        Call::Read1M | Call::Copy => {
            let mut b = CipherReader::builder(key)
                .capacity(SEGMENT)
                .provider(Provider::RustCrypto)
                .threads(threads)
                .prefetch(true);
            if let Some(a) = after {
                b = b.threads_after(a);
            }
            let mut r = b.build(sealed);
            let n = if call == Call::Copy {
                io::copy(&mut r, &mut io::sink())? as usize
            } else {
                out.resize(1 << 20, 0);
                let mut n = 0;
                loop {
                    let k = r.read(out)?;
                    if k == 0 {
                        break n;
                    }
                    n += k;
                }
            };
            if n != plain.len() {
                return Err(io::Error::other("short read"));
            }
        }
    }
    Ok(t.elapsed().as_secs_f64())
}

/// Median and quartiles of `v`.
fn quartiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

/// Prints the table.
pub fn run(s: &Short) -> io::Result<()> {
    const VARIANTS: [(usize, Option<u64>); 3] = [(1, None), (2, None), (2, Some(0))];
    println!("# Threads on short streams\n");
    if s.smoke {
        println!("(smoke run: the timings mean nothing)\n");
    }
    println!(
        "64 KiB segments, RustCrypto, `&[u8]`; threads 2 ÷ threads 1, paired by pass, median (q25–q75); the three variants alternated stream by stream\n"
    );
    println!(
        "| stream | algorithm | calls | passes | threads 2 (alone for the first MiB or two) | threads 2 from the first byte |\n|---|---|---|---:|---:|---:|"
    );
    for &kib in &s.kib {
        let plain = pattern(kib << 10);
        let passes = (s.passes * 1024 / kib.max(1)).clamp(s.passes.min(8), s.passes * 4);
        for alg in [Algorithm::Aes128Gcm, Algorithm::ChaCha20Poly1305] {
            let key =
                Key::new(alg, &vec![7; alg.key_len()]).expect("a key of the algorithm's size");
            let mut sealed = Vec::new();
            {
                let mut w = CipherWriter::builder(&key)
                    .capacity(SEGMENT)
                    .build(&mut sealed);
                w.write_all(&plain)?;
                w.finish()?;
            }
            let mut out = Vec::with_capacity(sealed.len());
            for call in Call::ALL {
                let mut times = [const { Vec::new() }; VARIANTS.len()];
                for pass in 0..passes {
                    for k in 0..VARIANTS.len() {
                        let v = if pass % 2 == 0 {
                            k
                        } else {
                            VARIANTS.len() - 1 - k
                        };
                        let t = one(&key, call, VARIANTS[v], &plain, &sealed, &mut out)?;
                        times[v].push(t);
                    }
                }
                let ratio = |v: usize| {
                    let mut r: Vec<f64> = times[0]
                        .iter()
                        .zip(&times[v])
                        .map(|(one, t)| one / t)
                        .collect();
                    let (m, lo, hi) = quartiles(&mut r);
                    format!("{m:.2} ({lo:.2}–{hi:.2})")
                };
                let len = if kib >= 1024 {
                    format!("{} MiB", kib / 1024)
                } else {
                    format!("{kib} KiB")
                };
                println!(
                    "| {len} | {alg:?} | {} | {passes} | {} | {} |",
                    call.name(),
                    ratio(1),
                    ratio(2)
                );
            }
        }
    }
    Ok(())
}
