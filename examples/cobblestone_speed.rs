//! Times Cobblestone-128 through cipherio on one thread in large calls:
//! the cipherio side of `interop/cobblestone_speed.py`, which runs it
//! beside pyca/cryptography's streaming API.
//!
//! ```text
//! cargo run --release --example cobblestone_speed -- UPDATE_BYTES UPDATES
//! ```
//!
//! Encrypts `UPDATES` writes of `UPDATE_BYTES` each into a
//! `CipherWriter<Vec<u8>>`, then decrypts that stream with `read` calls
//! of `UPDATE_BYTES` into one buffer. Both outputs are allocated and
//! written once before the clock starts, so that the kernel's first touch
//! of their pages is not timed as the cipher's work. Prints one line:
//! `encrypt_s decrypt_s` (seconds, wall clock). Built with
//! `--features aws-lc`, it seals and opens with AWS-LC.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::{CipherReader, CipherWriter, Provider};

/// AWS-LC when built with `--features aws-lc`, else RustCrypto.
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// AWS-LC when built with `--features aws-lc`, else RustCrypto.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

fn main() -> ExitCode {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let [update, updates] = args[..] else {
        eprintln!("usage: cobblestone_speed UPDATE_BYTES UPDATES");
        return ExitCode::from(2);
    };
    let key = CobblestoneKey::generate(Instantiation::Cobblestone128);
    let piece = vec![0x5au8; update];
    let total = update * updates;
    let sealed_len = 56 + total + (total / CHUNK_SIZE + 1) * 16;

    // Pages touched before the clock starts (see above).
    let mut collected = vec![1u8; sealed_len];
    collected.clear();
    let t = Instant::now();
    let mut w = CipherWriter::builder(&key)
        .provider(PROVIDER)
        .build(collected);
    for _ in 0..updates {
        w.write_all(&piece).expect("write to a Vec");
    }
    let sealed = w.finish().expect("finish to a Vec");
    let encrypt = t.elapsed().as_secs_f64();

    let mut out = vec![1u8; update];
    let t = Instant::now();
    let mut r = CipherReader::builder(&key)
        .provider(PROVIDER)
        .build(&sealed[..]);
    let mut opened = 0;
    loop {
        match r.read(&mut out).expect("the stream opens") {
            0 => break,
            n => opened += n,
        }
    }
    let decrypt = t.elapsed().as_secs_f64();
    assert_eq!(opened, total, "every byte opened");
    println!("{encrypt} {decrypt}");
    ExitCode::SUCCESS
}
