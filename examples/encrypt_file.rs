//! Encrypts a file with each algorithm, decrypts it back, checks the result
//! byte for byte, and prints sizes, throughput and the backends in use.
//!
//! ```text
//! cargo run --release --example encrypt_file -- [FILE] [--capacity BYTES] [--mib N] [--threads N]
//! ```
//!
//! Without FILE it generates an N MiB payload (default 256) under
//! `target/cipherio-demo/`. Encryption goes File → `CipherWriter<File>` and
//! decryption `CipherReader<File>` → File, both through `std::io::copy`,
//! as an application would write it. `--threads N` seals and opens on N
//! threads (`threads(n)` on both builders; the bytes are the same).

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, backend};

/// The provider this example seals and opens with: AWS-LC when it is built
/// with `--features aws-lc` (cargo features never change the default).
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// The provider this example seals and opens with: the default, RustCrypto.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

struct Args {
    input: Option<PathBuf>,
    capacity: usize,
    mib: u64,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        input: None,
        capacity: cipherio::DEFAULT_CAPACITY,
        threads: 1,
        mib: 256,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--capacity" => {
                let v = value("--capacity")?;
                args.capacity = v.parse().map_err(|_| format!("bad --capacity {v}"))?;
            }
            "--threads" => {
                let v = value("--threads")?;
                args.threads = v.parse().map_err(|_| format!("bad --threads {v}"))?;
            }
            "--mib" => {
                let v = value("--mib")?;
                args.mib = v.parse().map_err(|_| format!("bad --mib {v}"))?;
            }
            "-h" | "--help" => {
                return Err(
                    "usage: encrypt_file [FILE] [--capacity BYTES] [--mib N (generated payload)] [--threads N]"
                        .into(),
                );
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}")),
            _ => args.input = Some(PathBuf::from(a)),
        }
    }
    Ok(args)
}

/// Writes `mib` MiB of incompressible pseudo-random bytes (xorshift64*).
fn generate(path: &Path, mib: u64) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mib {
        for chunk in block.chunks_exact_mut(8) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            chunk.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        out.write_all(&block)?;
    }
    out.flush()
}

/// True if the two files hold the same bytes.
fn same_contents(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let dir = PathBuf::from("target/cipherio-demo");
    fs::create_dir_all(&dir)?;
    let input = match &args.input {
        Some(p) => p.clone(),
        None => {
            let p = dir.join("payload.bin");
            let want = args.mib << 20;
            if fs::metadata(&p).map(|m| m.len()).ok() != Some(want) {
                println!("generating {} MiB payload at {}", args.mib, p.display());
                generate(&p, args.mib)?;
            }
            p
        }
    };
    let plain_len = fs::metadata(&input)?.len();
    let b = backend::detect();
    let features: Vec<String> = backend::cpu_features()
        .into_iter()
        .map(|(n, on)| format!("{}{n}", if on { "+" } else { "-" }))
        .collect();
    println!("input      {} ({plain_len} bytes)", input.display());
    println!("cpu        {}", features.join(" "));
    let provider = PROVIDER;
    if provider == Provider::RustCrypto {
        println!(
            "backends   RustCrypto: AES {} | GHASH {} | ChaCha20 {} | Poly1305 {}",
            b.aes, b.ghash, b.chacha20, b.poly1305
        );
    } else {
        println!("backends   {} (the aws-lc feature)", provider.name());
    }
    println!("capacity   {} bytes per segment", args.capacity);
    println!("threads    {}", args.threads);
    println!();
    println!(
        "{:<18} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9}  verified",
        "", "", "", "file", "file", "memory", "memory"
    );
    println!(
        "{:<18} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "algorithm", "ciphertext", "overhead", "enc GB/s", "dec GB/s", "enc GB/s", "dec GB/s"
    );
    let payload = fs::read(&input)?;

    let sealed = dir.join("sealed.cio");
    let opened = dir.join("opened.bin");
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);

        let t = Instant::now();
        let mut w = CipherWriter::builder(&key)
            .provider(PROVIDER)
            .capacity(args.capacity)
            .threads(args.threads)
            .build(File::create(&sealed)?);
        io::copy(&mut File::open(&input)?, &mut w)?;
        w.finish()?.sync_data()?;
        let enc = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut r = CipherReader::builder(&key)
            .provider(PROVIDER)
            .threads(args.threads)
            .build(File::open(&sealed)?);
        let mut out = File::create(&opened)?;
        io::copy(&mut r, &mut out)?;
        out.sync_data()?;
        let dec = t.elapsed().as_secs_f64();

        let ct_len = fs::metadata(&sealed)?.len();
        let mut ok = same_contents(&input, &opened)?;

        // The same through memory: the adapters and the cipher alone, into
        // buffers touched beforehand so that page faults are not timed.
        let mut sealed_mem = vec![0xA5u8; usize::try_from(ct_len)?];
        let mut back = vec![0xA5u8; payload.len()];
        let t = Instant::now();
        let mut w = CipherWriter::builder(&key)
            .provider(PROVIDER)
            .capacity(args.capacity)
            .threads(args.threads)
            .build(&mut sealed_mem[..]);
        w.write_all(&payload)?;
        let unused = w.finish()?.len();
        let mem_enc = t.elapsed().as_secs_f64();
        ok &= unused == 0;
        let t = Instant::now();
        // In memory, segments open where they lie (no copy of the ciphertext).
        let mut r = CipherReader::builder(&key)
            .provider(PROVIDER)
            .capacity(args.capacity)
            .threads(args.threads)
            .build_from_buf_read(&sealed_mem[..]);
        r.read_exact(&mut back)?;
        ok &= r.read(&mut [0u8; 1])? == 0;
        let mem_dec = t.elapsed().as_secs_f64();
        ok &= back == payload;

        println!(
            "{:<18} {:>12} {:>8.3}% {:>9.2} {:>9.2} {:>9.2} {:>9.2}  {}",
            alg.to_string(),
            ct_len,
            (ct_len - plain_len) as f64 * 100.0 / plain_len.max(1) as f64,
            gbps(plain_len, enc),
            gbps(plain_len, dec),
            gbps(plain_len, mem_enc),
            gbps(plain_len, mem_dec),
            if ok { "yes" } else { "NO" }
        );
        if !ok {
            return Err(format!("{alg}: decrypted file differs from the input").into());
        }
    }
    fs::remove_file(&sealed)?;
    fs::remove_file(&opened)?;
    println!();
    println!(
        "file:   File -> CipherWriter<File> -> fsync, CipherReader<File> -> File -> fsync (io::copy)"
    );
    println!(
        "memory: one write_all of the payload into a &mut [u8], read_exact back through \
         build_from_buf_read (pages pre-touched)"
    );
    println!("one run each, so noisy: the benchmarks compare the adapters with the raw AEAD");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("encrypt_file: {e}");
            ExitCode::FAILURE
        }
    }
}
