//! Cobblestone-128 (C2SP chunked encryption, 16 KiB chunks fixed by the
//! format) through `CipherWriter`/`CipherReader` on one thread, against
//! the AES-128-GCM it is made of and against the `cobblestone` crate.
//!
//! Groups `cobblestone128-encrypt/stream/16384` (one `write_all` of the
//! payload into `CipherWriter<io::Sink>`, then `finish`) and
//! `cobblestone128-decrypt/stream/16384` (`CipherReader<&[u8]>`, `read`
//! into one reused 16 KiB buffer until 0; `-decrypt-bufread` the same
//! reader built with `build_from_buf_read`, which opens the chunks where
//! they lie in the `&[u8]`), a fresh stream per iteration,
//! each timed in pairs (see `Pairs`) with three references over the same
//! payload:
//!
//! - `raw`: this build's one-shot AES-128-GCM (RustCrypto, or aws-lc-rs
//!   with `--features aws-lc`) sealing and opening 16 KiB messages, as
//!   the AES-128-GCM rows do;
//! - `crate`: the `cobblestone` crate's `EncryptWriter<io::Sink>` and
//!   `DecryptReader<&[u8]>` doing the same calls;
//! - `threads2`: the same cipherio stream with `threads(2)` from the
//!   first byte;
//! - `raw-read` (decrypt groups): the raw AES-128-GCM opening each message
//!   after copying it out of the payload into a reused buffer, as every
//!   `Read` hands a reader its bytes: the least a reader through `Read`
//!   does (`decrypt` pays that copy, `decrypt-bufread` does not).
//!
//! `CIPHERIO_BENCH_COBBLESTONE=0` (or empty) leaves the groups out.

use std::hint::black_box;
use std::io::{self, Read, Write};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
use criterion::{BenchmarkId, Criterion};

use super::{Config, PROVIDER, Pairs, Raw, TAG, group, payload, var};

/// Encrypts `plain` through a fresh cipherio writer on `threads` threads.
fn encrypt(key: &CobblestoneKey, threads: usize, plain: &[u8]) {
    let mut w = CipherWriter::builder(key)
        .provider(PROVIDER)
        .threads(threads)
        .threads_after(0)
        .build(io::sink());
    w.write_all(plain).expect("write to a sink");
    w.finish().expect("finish to a sink");
}

/// Reads `r` into `out` (one chunk, reused) until it ends; returns the
/// plaintext length.
fn drain(mut r: impl Read, out: &mut [u8]) -> usize {
    let mut total = 0;
    loop {
        match r.read(out).expect("stream opens") {
            0 => break,
            n => total += n,
        }
        black_box(&out[..]);
    }
    total
}

/// Decrypts `sealed` through a fresh cipherio reader on `threads`
/// threads (built with `build_from_buf_read` if `from_buf`).
fn decrypt(
    key: &CobblestoneKey,
    threads: usize,
    from_buf: bool,
    sealed: &[u8],
    out: &mut [u8],
) -> usize {
    let b = CipherReader::builder(key)
        .provider(PROVIDER)
        .threads(threads)
        .threads_after(0);
    if from_buf {
        drain(b.build_from_buf_read(sealed), out)
    } else {
        drain(b.build(sealed), out)
    }
}

/// The groups, unless `CIPHERIO_BENCH_COBBLESTONE` turns them off.
pub fn sweep(c: &mut Criterion, cfg: &Config, pairs: &mut Pairs, flip: &mut bool) {
    if var("CIPHERIO_BENCH_COBBLESTONE").is_some_and(|v| v.trim().is_empty() || v.trim() == "0") {
        return;
    }
    let s = CHUNK_SIZE;
    let plain = payload(cfg.payload);
    let key = CobblestoneKey::generate(Instantiation::Cobblestone128);
    let theirs = cobblestone::Key::try_from(key.as_bytes()).expect("a 16-byte key");
    let raw = Raw::new(&Key::new(Algorithm::Aes128Gcm, key.as_bytes()).expect("a 16-byte key"));

    let group_name = "cobblestone128-encrypt";
    let mut g = group(c, cfg, group_name.into());
    let mut msg_out = vec![0u8; s + TAG];
    g.bench_function(BenchmarkId::new("stream", s), |b| {
        b.iter_custom(|iters| {
            pairs.measure_with(
                group_name,
                s,
                iters,
                flip,
                &mut || encrypt(&key, 1, &plain),
                &mut [
                    ("raw", &mut || raw.seal_into(&plain, s, &mut msg_out)),
                    ("crate", &mut || {
                        let mut w = cobblestone::EncryptWriter::new(&theirs, b"", io::sink());
                        w.write_all(&plain).expect("write to a sink");
                        w.finish().expect("finish to a sink");
                    }),
                    ("threads2", &mut || encrypt(&key, 2, &plain)),
                ],
            )
        });
    });
    g.finish();

    let mut sealed = CipherWriter::builder(&key).build(Vec::new());
    sealed.write_all(&plain).expect("write to a Vec");
    let sealed = sealed.finish().expect("finish to a Vec");
    let raw_sealed = raw.seal_all(&plain, s);
    let (mut out, mut raw_out) = (vec![0u8; s], vec![0u8; s]);
    let mut crate_out = vec![0u8; s];
    let (mut raw_copy, mut read_out) = (vec![0u8; s + TAG], vec![0u8; s]);
    let mut threads_out = vec![0u8; s];
    let n = drain(
        cobblestone::DecryptReader::new(&theirs, b"", &sealed[..]),
        &mut out,
    );
    assert_eq!(
        n,
        plain.len(),
        "the cobblestone crate opens cipherio's stream"
    );
    for (group_name, from_buf) in [
        ("cobblestone128-decrypt", false),
        ("cobblestone128-decrypt-bufread", true),
    ] {
        for threads in [1, 2] {
            let n = decrypt(&key, threads, from_buf, &sealed, &mut out);
            assert_eq!(n, plain.len(), "{group_name} on {threads} thread(s)");
        }
        let mut g = group(c, cfg, group_name.into());
        g.bench_function(BenchmarkId::new("stream", s), |b| {
            b.iter_custom(|iters| {
                pairs.measure_with(
                    group_name,
                    s,
                    iters,
                    flip,
                    &mut || {
                        decrypt(&key, 1, from_buf, &sealed, &mut out);
                    },
                    &mut [
                        ("raw", &mut || raw.open_each(&raw_sealed, s, &mut raw_out)),
                        ("raw-read", &mut || {
                            raw.open_each_read(&raw_sealed, s, &mut raw_copy, &mut read_out);
                        }),
                        ("crate", &mut || {
                            let r = cobblestone::DecryptReader::new(&theirs, b"", &sealed[..]);
                            drain(r, &mut crate_out);
                        }),
                        ("threads2", &mut || {
                            decrypt(&key, 2, from_buf, &sealed, &mut threads_out);
                        }),
                    ],
                )
            });
        });
        g.finish();
    }
}
