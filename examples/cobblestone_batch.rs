//! Encrypts and decrypts files in Cobblestone (C2SP chunked encryption):
//! the cipherio side of `interop/cobblestone_interop.py`, which checks
//! cipherio against pyca/cryptography in both directions.
//!
//! ```text
//! cargo run --release --example cobblestone_batch -- JOBS.json
//! ```
//!
//! `JOBS.json` is an array of jobs: `{"id", "op": "encrypt"|"decrypt",
//! "instantiation": 128|256, "key": HEX, "context": HEX, "input", "output",
//! "writes": [N, ...], "threads": N}`. `encrypt` writes the input in
//! `write_all` calls of the sizes of `writes` in turn (empty or absent: all
//! at once), on `threads` threads (default 1), then finishes; `decrypt`
//! reads the whole stream on `threads` threads. One JSON line per job:
//! `{"id", "ok": true}`, or `{"id", "ok": false, "error": "..."}` (the
//! crate error's `Debug` form); the output file is written only on success.
//! Built with `--features aws-lc`, it seals and opens with AWS-LC.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use cipherio::cobblestone::{CobblestoneKey, Instantiation};
use cipherio::{CipherReader, CipherWriter, Error, Provider};
use serde_json::{Value, json};

/// AWS-LC when built with `--features aws-lc`, else RustCrypto.
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// AWS-LC when built with `--features aws-lc`, else RustCrypto.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

fn run(v: &Value) -> Result<(), String> {
    let s = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
    let inst = match v["instantiation"].as_u64() {
        Some(128) => Instantiation::Cobblestone128,
        Some(256) => Instantiation::Cobblestone256,
        other => return Err(format!("instantiation must be 128 or 256, got {other:?}")),
    };
    let key = CobblestoneKey::from_hex(inst, &s("key")).map_err(|e| e.to_string())?;
    let context = hex::decode(s("context")).map_err(|_| "context is not valid hex")?;
    let threads = v["threads"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(1);
    let writes: Vec<usize> = v["writes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64().and_then(|x| usize::try_from(x).ok()))
                .filter(|&n| n > 0)
                .collect()
        })
        .unwrap_or_default();
    let input = std::fs::read(s("input")).map_err(|e| e.to_string())?;
    let output = match s("op").as_str() {
        "encrypt" => encrypt(&key, &context, threads, &writes, &input),
        "decrypt" => decrypt(&key, &context, threads, &input),
        op => return Err(format!("op must be encrypt or decrypt, got {op:?}")),
    }
    .map_err(|e| Error::from_io(&e).map_or_else(|| e.to_string(), |c| format!("{c:?}")))?;
    std::fs::write(s("output"), output).map_err(|e| e.to_string())
}

fn encrypt(
    key: &CobblestoneKey,
    context: &[u8],
    threads: usize,
    writes: &[usize],
    input: &[u8],
) -> io::Result<Vec<u8>> {
    let mut w = CipherWriter::builder(key)
        .provider(PROVIDER)
        .associated_data(context)
        .threads(threads)
        .threads_after(0)
        .build(Vec::new());
    let (mut sizes, mut rest) = (writes.iter().cycle(), input);
    while !rest.is_empty() {
        let n = sizes.next().map_or(rest.len(), |&n| n.min(rest.len()));
        let (now, later) = rest.split_at(n);
        w.write_all(now)?;
        rest = later;
    }
    w.finish()
}

fn decrypt(
    key: &CobblestoneKey,
    context: &[u8],
    threads: usize,
    input: &[u8],
) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    CipherReader::builder(key)
        .provider(PROVIDER)
        .associated_data(context)
        .threads(threads)
        .threads_after(0)
        .build(input)
        .read_to_end(&mut out)?;
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = &args[..] else {
        eprintln!("usage: cobblestone_batch JOBS.json");
        return ExitCode::from(2);
    };
    let jobs: Vec<Value> = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(jobs) => jobs,
        Err(e) => {
            eprintln!("cobblestone_batch: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    for v in &jobs {
        let line = match run(v) {
            Ok(()) => json!({"id": v["id"], "ok": true}),
            Err(e) => json!({"id": v["id"], "ok": false, "error": e}),
        };
        if writeln!(out, "{line}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
