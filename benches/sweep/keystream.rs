//! The keystream adapters (feature `hazmat`): `KeystreamWriter` and
//! `KeystreamReader` with AES-128-CTR (`ctr::Ctr128BE<aes::Aes128>`) and
//! ChaCha20, against the raw cipher over the same bytes.
//!
//! Groups `<cipher>-keystream-<dir>/stream/<s>`, `s` the adapter's
//! buffer (`CIPHERIO_BENCH_KEYSTREAM`, default 8 and 64 KiB), each
//! iteration a fresh adapter and cipher over the whole payload:
//!
//! - `write`: `KeystreamWriter<_, io::Sink>`, one `write_all` of the
//!   payload, then `finish`;
//! - `read`: `KeystreamReader<_, &[u8]>` over the payload's ciphertext,
//!   `read` into one reused `s`-byte buffer until it returns 0;
//! - `read-bufread`: the same reader built with `from_buf_read`, which
//!   applies the keystream from the `&[u8]` straight into that buffer.
//!
//! Each is timed in pairs (see `Pairs`) with two references, a fresh
//! cipher each, all three over the same payload buffer:
//!
//! - `raw`: `apply_keystream` in place over the payload in `s`-byte
//!   pieces: the cipher alone, no copy;
//! - `b2b`: `apply_keystream_b2b` from the payload's `s`-byte pieces into
//!   one reused `s`-byte buffer: the cipher reading the bytes where they
//!   lie and writing them elsewhere, the least a writer over an immutable
//!   slice can do.
//!
//! `read` also copies the bytes out of the `&[u8]` (its `Read::read`)
//! before applying the keystream over the copy: neither reference has that
//! copy, and `read-bufread` does not make it.

use std::cell::RefCell;
use std::hint::black_box;
use std::io::{self, Read, Write};

use cipher::{KeyIvInit, StreamCipher};
use cipherio::hazmat::{KeystreamReader, KeystreamWriter};
use criterion::{BenchmarkId, Criterion};

use super::{Config, KIB, Pairs, group, list, payload, var};

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;

/// The ciphers, by the names of `CIPHERIO_BENCH_KEYSTREAM_CIPHERS`.
pub const CIPHERS: [&str; 2] = ["aes128ctr", "chacha20"];

fn aes128ctr() -> Aes128Ctr {
    Aes128Ctr::new(&[0x42; 16].into(), &[0x24; 16].into())
}

fn chacha20() -> chacha20::ChaCha20 {
    chacha20::ChaCha20::new(&[0x17; 32].into(), &[0x5a; 12].into())
}

/// The settings: buffer sizes (`CIPHERIO_BENCH_KEYSTREAM`, comma-separated;
/// empty: none) and ciphers (`CIPHERIO_BENCH_KEYSTREAM_CIPHERS`).
struct Settings {
    sizes: Vec<usize>,
    ciphers: Vec<String>,
}

impl Settings {
    fn from_env() -> Settings {
        let ciphers = match var("CIPHERIO_BENCH_KEYSTREAM_CIPHERS") {
            None => CIPHERS.iter().map(|c| c.to_string()).collect(),
            Some(v) => v
                .split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .inspect(|c| {
                    assert!(
                        CIPHERS.contains(&c.as_str()),
                        "CIPHERIO_BENCH_KEYSTREAM_CIPHERS: unknown {c:?}"
                    );
                })
                .collect(),
        };
        Settings {
            sizes: list("CIPHERIO_BENCH_KEYSTREAM", vec![8 * KIB, 64 * KIB]),
            ciphers,
        }
    }
}

/// Encrypts `plain` through a fresh writer with an `s`-byte buffer.
fn write<C: StreamCipher>(cipher: C, s: usize, plain: &[u8]) {
    let mut w = KeystreamWriter::with_capacity(s, cipher, io::sink());
    w.write_all(plain).expect("write to a sink");
    w.finish().expect("finish to a sink");
}

/// Decrypts `sealed` through a fresh reader with an `s`-byte buffer
/// (`from_buf_read` if `buf_read`), reading into `out` (`s` bytes,
/// reused).
fn read<C: StreamCipher>(
    cipher: C,
    s: usize,
    sealed: &[u8],
    out: &mut [u8],
    buf_read: bool,
) -> usize {
    let mut r = if buf_read {
        KeystreamReader::from_buf_read_with_capacity(s, cipher, sealed)
    } else {
        KeystreamReader::with_capacity(s, cipher, sealed)
    };
    let mut total = 0;
    loop {
        match r.read(out).expect("read from a slice") {
            0 => break,
            n => total += n,
        }
        black_box(&out[..]);
    }
    total
}

/// The `raw` reference: the keystream in place over `data`, `s` bytes at
/// a time.
fn in_place<C: StreamCipher>(mut cipher: C, s: usize, data: &mut [u8]) {
    for piece in data.chunks_mut(s) {
        cipher.apply_keystream(piece);
    }
    black_box(&data[..]);
}

/// The `b2b` reference: the keystream from `data`, `s` bytes at a time,
/// into `out` (`s` bytes, reused).
fn b2b<C: StreamCipher>(mut cipher: C, s: usize, data: &[u8], out: &mut [u8]) {
    for piece in data.chunks(s) {
        let out = &mut out[..piece.len()];
        cipher.apply_keystream_b2b(piece, out);
        black_box(&out[..]);
    }
}

/// One cipher's write and read groups.
fn cipher_groups<C: StreamCipher>(
    c: &mut Criterion,
    cfg: &Config,
    pairs: &mut Pairs,
    flip: &mut bool,
    (name, make): (&str, fn() -> C),
    sizes: &[usize],
) {
    // One buffer for the adapter and both references: each iteration of
    // each reads the same bytes, so none finds them in a cache another
    // left them in while the others' were evicted (with a source per
    // variant, the payload times three outgrows L2). The in-place
    // reference turns them over: the adapters' data alternates between
    // plaintext and ciphertext, which changes nothing of their work.
    let bytes = RefCell::new(payload(cfg.payload));
    let len = cfg.payload;
    for dir in ["write", "read", "read-bufread"] {
        let group_name = format!("{name}-keystream-{dir}");
        let mut g = group(c, cfg, group_name.clone());
        for &s in sizes {
            let mut out = vec![0u8; s];
            let mut ref_out = vec![0u8; s];
            let buf_read = dir == "read-bufread";
            let n = read(make(), s, &bytes.borrow(), &mut out, buf_read);
            assert_eq!(n, len, "keystream read at {s}");
            g.bench_function(BenchmarkId::new("stream", s), |b| {
                b.iter_custom(|iters| {
                    let mut stream = || match dir {
                        "write" => write(make(), s, &bytes.borrow()),
                        _ => {
                            read(make(), s, &bytes.borrow(), &mut out, buf_read);
                        }
                    };
                    pairs.measure_with(
                        &group_name,
                        s,
                        iters,
                        flip,
                        &mut stream,
                        &mut [
                            ("raw", &mut || in_place(make(), s, &mut bytes.borrow_mut())),
                            ("b2b", &mut || b2b(make(), s, &bytes.borrow(), &mut ref_out)),
                        ],
                    )
                });
            });
        }
        g.finish();
    }
}

/// The keystream groups of the sweep.
pub fn sweep(c: &mut Criterion, cfg: &Config, pairs: &mut Pairs, flip: &mut bool) {
    let s = Settings::from_env();
    if s.sizes.is_empty() {
        return;
    }
    for name in &s.ciphers {
        match name.as_str() {
            "aes128ctr" => cipher_groups(c, cfg, pairs, flip, ("aes128ctr", aes128ctr), &s.sizes),
            _ => cipher_groups(c, cfg, pairs, flip, ("chacha20", chacha20), &s.sizes),
        }
    }
}
