//! Encrypts or decrypts files in the native format (FORMAT.md) with the
//! caller's choice of algorithm, capacity, associated data, fixed or framed
//! records and flush points: the cipherio side of the second
//! implementation's checks (`interop/native_interop.py`).
//!
//! ```text
//! cargo run --release --example native_format -- (encrypt|decrypt) \
//!     --algorithm (AES-128-GCM|AES-256-GCM|ChaCha20-Poly1305) --key HEX [--aad HEX] \
//!     [--capacity N] [--framed] [--flush-at N,N,...] [--chunk N] IN_FILE OUT_FILE
//! cargo run --release --example native_format -- batch JOBS.json
//! ```
//!
//! `encrypt` writes `IN_FILE` in `write_all` calls of `--chunk` bytes
//! (default: all at once), flushing after each plaintext offset of
//! `--flush-at` (framed records: a flush seals what is buffered), then
//! finishes. `decrypt` reads the whole stream; `OUT_FILE` is written only
//! once every byte has authenticated and the stream has ended cleanly.
//!
//! A failure prints one line on stderr (`decrypt`: the error as JSON,
//! `{"error": VARIANT, "error_fields": {...}, "io_error_kind": KIND}`, the
//! fields of `tests/data/format_vectors.json`) and exits with 1; a usage
//! error exits with 2.
//!
//! `batch` runs a JSON array of jobs, objects with the options' names as
//! keys (`"op"`, `"algorithm"`, `"key"`, `"aad"`, `"capacity"`, `"framed"`,
//! `"flush_at"`, `"chunk"`, `"input"`, `"output"`, and an `"id"` echoed
//! back), and prints one JSON line per job: `{"id": ..., "ok": true}` or
//! the error as above with the id. One process for many files.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};

/// The provider this example seals and opens with: AWS-LC when it is built
/// with `--features aws-lc` (cargo features never change the default).
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// The provider this example seals and opens with: the default, RustCrypto.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

use serde_json::{Value, json};

const USAGE: &str = "usage: native_format (encrypt|decrypt) --algorithm NAME --key HEX [--aad HEX] \
                     [--capacity N] [--framed] [--flush-at N,N,...] [--chunk N] IN_FILE OUT_FILE\n       \
                     native_format batch JOBS.json";

/// One encryption or decryption.
struct Job {
    encrypt: bool,
    key: Key,
    aad: Vec<u8>,
    capacity: Option<usize>,
    framed: bool,
    flush_at: Vec<usize>,
    chunk: usize,
    input: String,
    output: String,
}

fn algorithm(name: &str) -> Result<Algorithm, String> {
    Algorithm::ALL
        .iter()
        .copied()
        .find(|a| a.to_string().eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("unknown algorithm {name:?}"))
}

fn number(v: &str, name: &str) -> Result<usize, String> {
    v.parse()
        .map_err(|_| format!("{name} must be a number, got {v:?}"))
}

fn parse(args: &[String]) -> Result<Job, String> {
    let (mut mode, mut alg, mut key, mut aad) = (None, None, None, String::new());
    let (mut capacity, mut framed, mut flush_at, mut chunk) = (None, false, Vec::new(), usize::MAX);
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--algorithm" => alg = Some(algorithm(value(a)?)?),
            "--key" => key = Some(value(a)?.clone()),
            "--aad" => aad.clone_from(value(a)?),
            "--capacity" => capacity = Some(number(value(a)?, a)?),
            "--framed" => framed = true,
            "--flush-at" => {
                flush_at = value(a)?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| number(s, a))
                    .collect::<Result<_, _>>()?;
            }
            "--chunk" => chunk = number(value(a)?, a)?,
            "encrypt" | "decrypt" if mode.is_none() => mode = Some(a == "encrypt"),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => files.push(a.clone()),
        }
    }
    let [input, output] = <[String; 2]>::try_from(files)
        .map_err(|f| format!("expected IN_FILE and OUT_FILE, got {} file names", f.len()))?;
    let alg = alg.ok_or("missing --algorithm")?;
    Ok(Job {
        encrypt: mode.ok_or("missing mode: encrypt or decrypt")?,
        key: Key::from_hex(alg, &key.ok_or("missing --key")?).map_err(|e| e.to_string())?,
        aad: hex::decode(aad).map_err(|_| "--aad is not valid hex")?,
        capacity,
        framed,
        flush_at,
        chunk: chunk.max(1),
        input,
        output,
    })
}

/// A job of a batch file.
fn job_of(v: &Value) -> Result<Job, String> {
    let s = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
    let n = |name: &str| v[name].as_u64().and_then(|x| usize::try_from(x).ok());
    let alg = algorithm(&s("algorithm"))?;
    let encrypt = match s("op").as_str() {
        "encrypt" => true,
        "decrypt" => false,
        op => return Err(format!("op must be encrypt or decrypt, got {op:?}")),
    };
    Ok(Job {
        encrypt,
        key: Key::from_hex(alg, &s("key")).map_err(|e| e.to_string())?,
        aad: hex::decode(s("aad")).map_err(|_| "aad is not valid hex")?,
        capacity: n("capacity"),
        framed: v["framed"].as_bool().unwrap_or(false),
        flush_at: v["flush_at"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_u64().and_then(|x| usize::try_from(x).ok()))
                    .collect()
            })
            .unwrap_or_default(),
        chunk: n("chunk").unwrap_or(usize::MAX).max(1),
        input: s("input"),
        output: s("output"),
    })
}

/// The error as the vector file names it.
fn error_json(e: &io::Error) -> Value {
    let Some(err) = Error::from_io(e) else {
        return json!({"error": "Io", "error_fields": {"message": e.to_string()},
                      "io_error_kind": format!("{:?}", e.kind())});
    };
    let (variant, fields) = match err {
        Error::Authentication => ("Authentication", json!({})),
        Error::BadMagic => ("BadMagic", json!({})),
        Error::Truncated => ("Truncated", json!({})),
        Error::TrailingData => ("TrailingData", json!({})),
        Error::EmptyFinalSegment => ("EmptyFinalSegment", json!({})),
        Error::ZeroSegmentSize => ("ZeroSegmentSize", json!({})),
        Error::TooManySegments => ("TooManySegments", json!({})),
        Error::UnsupportedVersion(v) => ("UnsupportedVersion", json!({"version": v})),
        Error::UnknownAlgorithm(id) => ("UnknownAlgorithm", json!({"id": id})),
        Error::SegmentTooLarge { size, limit, .. } => {
            ("SegmentTooLarge", json!({"size": size, "limit": limit}))
        }
        Error::AlgorithmMismatch { stream, key, .. } => (
            "AlgorithmMismatch",
            json!({"stream": stream.to_string(), "key": key.to_string()}),
        ),
        other => {
            return json!({"error": format!("{other:?}"), "error_fields": {},
                               "io_error_kind": format!("{:?}", e.kind())});
        }
    };
    json!({"error": variant, "error_fields": fields, "io_error_kind": format!("{:?}", e.kind())})
}

/// Runs a job: the output file is written only when it succeeded (one
/// left by an earlier run is removed when it failed).
fn run(job: &Job) -> io::Result<()> {
    let r = transform(job);
    if r.is_err() {
        let _ = std::fs::remove_file(&job.output);
    }
    r
}

fn transform(job: &Job) -> io::Result<()> {
    let input = std::fs::read(&job.input)?;
    let output = if job.encrypt {
        let mut b = CipherWriter::builder(&job.key)
            .provider(PROVIDER)
            .associated_data(&job.aad);
        if let Some(c) = job.capacity {
            b = b.capacity(c);
        }
        if job.framed {
            b = b.framed();
        }
        let mut w = b.build(Vec::new());
        let mut from = 0;
        for &at in &job.flush_at {
            let at = at.clamp(from, input.len());
            for c in input[from..at].chunks(job.chunk) {
                w.write_all(c)?;
            }
            w.flush()?;
            from = at;
        }
        for c in input[from..].chunks(job.chunk) {
            w.write_all(c)?;
        }
        w.finish()?
    } else {
        let mut out = Vec::new();
        CipherReader::builder(&job.key)
            .provider(PROVIDER)
            .associated_data(&job.aad)
            .build(&input[..])
            .read_to_end(&mut out)?;
        out
    };
    std::fs::write(&job.output, output)
}

fn batch(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let jobs: Vec<Value> = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for v in &jobs {
        let id = v["id"].clone();
        let line = match job_of(v) {
            Err(why) => json!({"id": id, "error": "Usage", "error_fields": {"message": why}}),
            Ok(job) => match run(&job) {
                Ok(()) => json!({"id": id, "ok": true}),
                Err(e) => {
                    let mut j = error_json(&e);
                    j["id"] = id;
                    j
                }
            },
        };
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.first().is_some_and(|a| a == "batch") {
        let [_, path] = &args[..] else {
            eprintln!("native_format: batch takes one file\n{USAGE}");
            return ExitCode::from(2);
        };
        return match batch(path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                eprintln!("native_format: {why}");
                ExitCode::from(1)
            }
        };
    }
    let job = match parse(&args) {
        Ok(j) => j,
        Err(why) => {
            eprintln!("native_format: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&job) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if job.encrypt => {
            eprintln!("native_format: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("{}", error_json(&e));
            ExitCode::from(1)
        }
    }
}
