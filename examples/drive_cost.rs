//! Encrypts and decrypts a payload in memory through the std fronts and
//! through the tokio fronts, for instruction counts under callgrind: no
//! files, no sockets, no threads, so that two builds can be compared.
//!
//! ```text
//! cargo build --release --features tokio --example drive_cost
//! valgrind --tool=callgrind target/release/examples/drive_cost [MIB] [std|tokio|both]
//! ```
//!
//! The payload (64 MiB by default) is written in 64 KiB chunks into a
//! `Vec` and read back in 64 KiB reads from a slice; the result is checked
//! byte for byte.

use std::io::{Read, Write};

use cipherio::tokio::{AsyncCipherReader, AsyncCipherWriter};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHUNK: usize = 64 * 1024;

fn payload(mib: usize) -> Vec<u8> {
    (0..mib << 20)
        .map(|i| u8::try_from(i % 251).unwrap_or(0))
        .collect()
}

fn through_std(key: &Key, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut w = CipherWriter::new(key, Vec::new());
    for chunk in data.chunks(CHUNK) {
        w.write_all(chunk)?;
    }
    let sealed = w.finish()?;
    let mut r = CipherReader::new(key, &sealed[..]);
    let mut out = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; CHUNK];
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

async fn through_tokio(key: &Key, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut w = AsyncCipherWriter::new(key, Vec::new());
    for chunk in data.chunks(CHUNK) {
        w.write_all(chunk).await?;
    }
    w.shutdown().await?;
    let sealed = w.get_ref().clone();
    let mut r = AsyncCipherReader::new(key, &sealed[..]);
    let mut out = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; CHUNK];
    loop {
        match r.read(&mut buf).await? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().map_or(Ok(64), |a| a.parse())?;
    let which = args.next().unwrap_or_else(|| "both".into());
    let key = Key::from_hex(
        Algorithm::Aes256Gcm,
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
    )?;
    let data = payload(mib);
    if which != "tokio" {
        assert!(through_std(&key, &data)? == data, "std round trip");
    }
    if which != "std" {
        let rt = tokio::runtime::Builder::new_current_thread().build()?;
        assert!(
            rt.block_on(through_tokio(&key, &data))? == data,
            "tokio round trip"
        );
    }
    println!("{mib} MiB through {which}: ok");
    Ok(())
}
