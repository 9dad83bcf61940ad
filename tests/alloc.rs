//! Bytes allocated, counted (DESIGN.md §12): a hostile header makes the
//! reader allocate nothing for its segments, and once a stream is set up
//! neither adapter allocates per segment, whatever the caller's chunking.
//! Every check runs once per provider in [`Provider::ALL`], named through
//! the builders' `.provider(p)` (not left to the default, which follows the
//! `aws-lc` feature), and its messages name the provider.
//!
//! The counting allocator sees every thread, so this file runs without the
//! test harness (`harness = false` in Cargo.toml): a plain `main`, with no
//! harness thread allocating while it measures.
//!
//! # What the counter cannot see
//!
//! It counts Rust's global allocator only. AWS-LC ([`Provider::AwsLc`])
//! allocates its AEAD context — the expanded key schedule and the GHASH
//! table — with `OPENSSL_malloc`, that is libc `malloc`, which never
//! passes through it. So under that provider the counts cover cipherio's
//! own Rust allocations alone (the key copy, the header, the derived stream
//! key, the buffers), one allocation fewer per stream than under
//! RustCrypto, whose AEAD state is a Rust `Box`; how much AWS-LC allocates,
//! and when, is not checked here. Nor is wiping: AWS-LC cleanses its
//! allocations when it frees them (`OPENSSL_free`, aws-lc `crypto/mem.c`),
//! but copies the GHASH key into an uncleared stack context on every seal
//! and open, and neither is visible to a Rust allocator (see
//! `tests/wipe.rs`).
#![allow(clippy::unwrap_used)]

use std::alloc::System;
use std::io::{self, Read, Write};

use cipherio::format::{HEADER_LEN, Header};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, Stats, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn main() {
    for &p in Provider::ALL {
        hostile_headers_allocate_no_segment_buffer(p);
        for alg in Algorithm::ALL {
            writer_allocates_once_per_stream(p, alg);
            reader_allocates_once_per_stream(p, alg);
            large_reads_allocate_no_plaintext_buffer(p, alg);
            buf_read_allocates_no_more_than_build(p, alg);
        }
    }
    let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
    println!(
        "alloc: hostile headers, per-segment, zero-copy and build_from_buf_read allocation checks passed for {}",
        names.join(", ")
    );
}

/// What a stream's keys cost in Rust allocations, as (allocations, bytes):
/// the key copy the builder takes, the derived stream key, and the keyed
/// AEAD state where Rust holds it. RustCrypto boxes its AEAD (one
/// allocation of the AEAD type's size); AWS-LC's context is in libc
/// `malloc`, out of this counter's sight, so under it the count is one
/// fewer and the bytes are the two keys alone.
fn keys(p: Provider, alg: Algorithm) -> (usize, usize) {
    let k = alg.key_len();
    let aead = match p {
        Provider::RustCrypto => match alg {
            Algorithm::Aes128Gcm => size_of::<aes_gcm::Aes128Gcm>(),
            Algorithm::Aes256Gcm => size_of::<aes_gcm::Aes256Gcm>(),
            Algorithm::ChaCha20Poly1305 => size_of::<chacha20poly1305::ChaCha20Poly1305>(),
            _ => unreachable!("an algorithm this test does not know: {alg}"),
        },
        #[cfg(feature = "aws-lc")]
        Provider::AwsLc => return (2, 2 * k),
        _ => unreachable!("a provider this test does not know: {p:?}"),
    };
    (3, 2 * k + aead)
}

/// Adds `(allocations, bytes)` to [`keys`].
fn plus(p: Provider, alg: Algorithm, allocations: usize, bytes: usize) -> (usize, usize) {
    let (a, b) = keys(p, alg);
    (a + allocations, b + bytes)
}

fn hostile_headers_allocate_no_segment_buffer(p: Provider) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for size in [16 << 20 | 1, u32::MAX] {
        let header = Header {
            algorithm: Algorithm::Aes256Gcm,
            segment_size: size,
            salt: [1; 32],
            nonce_prefix: [2; 7],
        };
        let mut input = header.to_bytes().to_vec();
        input.resize(HEADER_LEN + 64 * KIB, 0x55);

        let region = Region::new(GLOBAL);
        let mut r = CipherReader::builder(&key).provider(p).build(&input[..]);
        assert_eq!(r.provider(), p, "a reader built for {p:?}");
        let err = r.read(&mut [0u8; 4096]).unwrap_err();
        let stats = region.change();
        drop(r);
        assert_eq!(
            Error::from_io(&err),
            Some(&Error::SegmentTooLarge {
                size: u64::from(size),
                limit: 16 * MIB as u64
            }),
            "{p:?}"
        );
        // The 8 KiB read-ahead, the key copy, the error: nothing sized by
        // the header.
        assert!(
            stats.bytes_allocated < 16 * KIB,
            "{p:?}: segment size {size}: {stats:?}"
        );
    }
}

fn writer_allocates_once_per_stream(p: Provider, alg: Algorithm) {
    let key = Key::generate(alg);
    let cap = 64 * KIB;
    let data = vec![0x42u8; 4 * MIB + 123];

    let whole = Region::new(GLOBAL);
    let mut w = CipherWriter::builder(&key)
        .capacity(cap)
        .provider(p)
        .build(io::sink());
    w.write_all(&data[..1000]).unwrap();
    let steady = Region::new(GLOBAL);
    // Every path: small writes through the buffer, held-back segments,
    // large writes sealed straight from the slice.
    let mut rest = &data[1000..];
    for chunk in [1, 7, 8 * KIB, cap, cap + 1, 3 * cap + 5, MIB]
        .iter()
        .cycle()
    {
        if rest.is_empty() {
            break;
        }
        let n = (*chunk).min(rest.len());
        w.write_all(&rest[..n]).unwrap();
        rest = &rest[n..];
    }
    assert_eq!(w.provider(), p, "a writer built for {p:?}");
    w.flush().unwrap();
    w.finish().unwrap();
    let per_segment = steady.change();
    let total = whole.change();

    assert_eq!(
        (per_segment.allocations, per_segment.reallocations),
        (0, 0),
        "{p:?} {alg}: the writer allocated after its setup: {per_segment:?}"
    );
    // One plaintext segment, one sealed segment (with the header), the key
    // schedule and the key copy.
    assert!(
        total.bytes_allocated < 2 * cap + 8 * KIB,
        "{p:?} {alg}: {total:?}"
    );
    // Exactly: the keys, the header, the plaintext segment, the sealed
    // segment (header, segment, tag); nothing reallocated.
    assert_eq!(
        (
            (total.allocations, total.bytes_allocated),
            total.reallocations
        ),
        (
            plus(p, alg, 3, HEADER_LEN + cap + (HEADER_LEN + cap + 16)),
            0
        ),
        "{p:?} {alg}: the writer's allocations: {total:?}"
    );
}

/// `len` bytes of `byte`, and their stream in `seg`-byte segments sealed
/// by `p`.
fn sealed_stream(key: &Key, p: Provider, seg: usize, byte: u8, len: usize) -> (Vec<u8>, Vec<u8>) {
    let data = vec![byte; len];
    let mut w = CipherWriter::builder(key)
        .capacity(seg)
        .provider(p)
        .build(Vec::new());
    w.write_all(&data).unwrap();
    (data, w.finish().unwrap())
}

fn reader_allocates_once_per_stream(p: Provider, alg: Algorithm) {
    let key = Key::generate(alg);
    let seg = 16 * KIB;
    let cap = 64 * KIB;
    let (data, ct) = sealed_stream(&key, p, seg, 0x17, 4 * MIB + 123);
    let mut out = vec![0u8; data.len()];

    let whole = Region::new(GLOBAL);
    let mut r = CipherReader::builder(&key)
        .capacity(cap)
        .provider(p)
        .build(&ct[..]);
    assert_eq!(r.provider(), p, "a reader built for {p:?}");
    // A small read sets up the header, the read-ahead and the plaintext
    // buffer; then every path: small reads from the buffer, reads of a
    // segment or more decrypted straight into `out`.
    let mut got = r.read(&mut out[..100]).unwrap();
    let steady = Region::new(GLOBAL);
    for chunk in [1, 100, seg - 1, seg, seg + 1, cap, MIB].iter().cycle() {
        let end = (got + chunk).min(out.len());
        let n = r.read(&mut out[got..end]).unwrap();
        if n == 0 {
            break;
        }
        got += n;
    }
    assert_eq!(r.read(&mut [0u8; 10]).unwrap(), 0);
    let per_segment = steady.change();
    drop(r);
    let total = whole.change();

    assert_eq!(got, data.len(), "{p:?} {alg}");
    assert!(out == data, "{p:?} {alg}");
    assert_eq!(
        (per_segment.allocations, per_segment.reallocations),
        (0, 0),
        "{p:?} {alg}: the reader allocated after its setup: {per_segment:?}"
    );
    // The first read-ahead buffer (before the header says how long a
    // segment is), its growth to read-ahead + one sealed segment, one
    // plaintext segment, the key schedule.
    assert!(
        total.bytes_allocated < cap + (cap + seg) + seg + 8 * KIB,
        "{p:?} {alg}: {total:?}"
    );
    // Exactly: the keys, the read-ahead (allocated for the header and a
    // read-ahead, then grown once to a sealed segment and a read-ahead),
    // the plaintext segment.
    assert_eq!(
        (
            (total.allocations, total.bytes_allocated),
            total.reallocations
        ),
        (plus(p, alg, 2, (cap + seg + 16) + seg), 1),
        "{p:?} {alg}: the reader's allocations: {total:?}"
    );
}

/// Principle 7, counted: reads of at least a segment decrypt straight into
/// the caller's buffer, so a reader that only ever gets such reads never
/// allocates its internal plaintext segment.
fn large_reads_allocate_no_plaintext_buffer(p: Provider, alg: Algorithm) {
    let key = Key::generate(alg);
    let seg = 256 * KIB;
    let (data, ct) = sealed_stream(&key, p, seg, 0x5a, 4 * seg + 7);
    // Room for a whole segment at every read, the short final one included.
    let mut out = vec![0u8; data.len() + seg];

    let region = Region::new(GLOBAL);
    let mut r = CipherReader::builder(&key).provider(p).build(&ct[..]);
    assert_eq!(r.provider(), p, "a reader built for {p:?}");
    let mut got = 0;
    loop {
        let n = r.read(&mut out[got..]).unwrap();
        if n == 0 {
            break;
        }
        got += n;
    }
    let stats = region.change();
    drop(r);
    assert!(out[..got] == data[..], "{p:?} {alg}");
    // The read-ahead (8 KiB, grown by one sealed segment) and the key
    // schedule; a plaintext segment would add another 256 KiB.
    assert!(
        stats.bytes_allocated < 8 * KIB + (seg + 16) + 16 * KIB,
        "{p:?} {alg}: large reads allocated a plaintext buffer: {stats:?}"
    );
    // Exactly: the keys and the read-ahead (8 KiB and the header, grown
    // once to 8 KiB and a sealed segment); no plaintext segment.
    assert_eq!(
        (
            (stats.allocations, stats.bytes_allocated),
            stats.reallocations
        ),
        (plus(p, alg, 1, 8 * KIB + seg + 16), 1),
        "{p:?} {alg}: large reads: {stats:?}"
    );
}

/// Reads all of `ct` with reads of `chunk` bytes, through `build` or
/// `build_from_buf_read` over the slice; returns what the reader
/// allocated, from its construction to its drop.
fn read_all(
    key: &Key,
    p: Provider,
    cap: usize,
    ct: &[u8],
    out: &mut [u8],
    chunk: usize,
    from_buf_read: bool,
) -> (usize, Stats, Stats) {
    let whole = Region::new(GLOBAL);
    let b = CipherReader::builder(key).capacity(cap).provider(p);
    let mut r = if from_buf_read {
        b.build_from_buf_read(ct)
    } else {
        b.build(ct)
    };
    assert_eq!(r.provider(), p, "a reader built for {p:?}");
    // The first read sets the stream up; the rest must not allocate.
    let mut got = r.read(&mut out[..chunk]).unwrap();
    let steady = Region::new(GLOBAL);
    loop {
        let end = (got + chunk).min(out.len());
        let n = r.read(&mut out[got..end]).unwrap();
        if n == 0 {
            break;
        }
        got += n;
    }
    let per_segment = steady.change();
    drop(r);
    (got, whole.change(), per_segment)
}

/// `build_from_buf_read` over a `&[u8]` opens segments where they lie in
/// the slice: with reads of at least a segment it allocates no more than
/// `build` does (the same, exactly: the read-ahead is still sized for the
/// header and one segment, and nothing is added), and with small reads it
/// adds one plaintext segment, once.
fn buf_read_allocates_no_more_than_build(p: Provider, alg: Algorithm) {
    let key = Key::generate(alg);
    let seg = 32 * KIB;
    let cap = 8 * KIB;
    // 20 segments, the last one short.
    let (data, ct) = sealed_stream(&key, p, seg, 0x3c, 19 * seg + 99);
    let mut out = vec![0u8; data.len() + seg];

    let mut run = |chunk, from_buf_read| {
        out.fill(0);
        let (got, total, per_segment) = read_all(&key, p, cap, &ct, &mut out, chunk, from_buf_read);
        let how = if from_buf_read {
            "build_from_buf_read"
        } else {
            "build"
        };
        assert!(
            got == data.len() && out[..got] == data[..],
            "{p:?} {alg} {how}, reads of {chunk}: wrong plaintext"
        );
        assert_eq!(
            (per_segment.allocations, per_segment.reallocations),
            (0, 0),
            "{p:?} {alg} {how}, reads of {chunk}: allocated after the first read: {per_segment:?}"
        );
        total
    };
    let build = run(seg, false);
    let large = run(seg, true);
    let small = run(1000, true);

    // Exactly: the keys and the read-ahead (the header and a read-ahead,
    // grown once to a sealed segment and a read-ahead).
    assert_eq!(
        (
            (build.allocations, build.bytes_allocated),
            build.reallocations
        ),
        (plus(p, alg, 1, cap + seg + 16), 1),
        "{p:?} {alg}: build, reads of a segment: {build:?}"
    );
    assert_eq!(
        (
            large.allocations,
            large.reallocations,
            large.bytes_allocated
        ),
        (
            build.allocations,
            build.reallocations,
            build.bytes_allocated
        ),
        "{p:?} {alg}: build_from_buf_read with reads of a segment allocated otherwise than build: {large:?}, build: {build:?}"
    );
    assert_eq!(
        (
            small.allocations,
            small.reallocations,
            small.bytes_allocated
        ),
        (
            large.allocations + 1,
            large.reallocations,
            large.bytes_allocated + seg
        ),
        "{p:?} {alg}: build_from_buf_read with small reads: one plaintext segment more, once: {small:?}, large reads: {large:?}"
    );
}
