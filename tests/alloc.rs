//! Bytes allocated, counted (DESIGN.md §12): a hostile header makes the
//! reader allocate nothing for its segments, and once a stream is set up
//! neither adapter allocates per segment, whatever the caller's chunking.
//!
//! The counting allocator sees every thread, so this file runs without the
//! test harness (`harness = false` in Cargo.toml): a plain `main`, with no
//! harness thread allocating while it measures.
#![allow(clippy::unwrap_used)]

use std::alloc::System;
use std::io::{self, Read, Write};

use cipherio::format::{HEADER_LEN, Header};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn main() {
    hostile_headers_allocate_no_segment_buffer();
    for alg in Algorithm::ALL {
        writer_allocates_once_per_stream(alg);
        reader_allocates_once_per_stream(alg);
        large_reads_allocate_no_plaintext_buffer(alg);
    }
    println!("alloc: hostile headers, per-segment and zero-copy allocation checks passed");
}

fn hostile_headers_allocate_no_segment_buffer() {
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
        let mut r = CipherReader::new(&key, &input[..]);
        let err = r.read(&mut [0u8; 4096]).unwrap_err();
        let stats = region.change();
        drop(r);
        assert_eq!(
            Error::from_io(&err),
            Some(&Error::SegmentTooLarge {
                size: u64::from(size),
                limit: 16 * MIB as u64
            })
        );
        // The 8 KiB read-ahead, the key copy, the error: nothing sized by
        // the header.
        assert!(
            stats.bytes_allocated < 16 * KIB,
            "segment size {size}: {stats:?}"
        );
    }
}

fn writer_allocates_once_per_stream(alg: Algorithm) {
    let key = Key::generate(alg);
    let cap = 64 * KIB;
    let data = vec![0x42u8; 4 * MIB + 123];

    let whole = Region::new(GLOBAL);
    let mut w = CipherWriter::with_capacity(cap, &key, io::sink());
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
    w.flush().unwrap();
    w.finish().unwrap();
    let per_segment = steady.change();
    let total = whole.change();

    assert_eq!(
        (per_segment.allocations, per_segment.reallocations),
        (0, 0),
        "{alg}: the writer allocated after its setup: {per_segment:?}"
    );
    // One plaintext segment, one sealed segment (with the header), the key
    // schedule and the key copy.
    assert!(
        total.bytes_allocated < 2 * cap + 8 * KIB,
        "{alg}: {total:?}"
    );
}

fn reader_allocates_once_per_stream(alg: Algorithm) {
    let key = Key::generate(alg);
    let seg = 16 * KIB;
    let cap = 64 * KIB;
    let data = vec![0x17u8; 4 * MIB + 123];
    let mut w = CipherWriter::with_capacity(seg, &key, Vec::new());
    w.write_all(&data).unwrap();
    let ct = w.finish().unwrap();
    let mut out = vec![0u8; data.len()];

    let whole = Region::new(GLOBAL);
    let mut r = CipherReader::with_capacity(cap, &key, &ct[..]);
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

    assert_eq!(got, data.len(), "{alg}");
    assert!(out == data, "{alg}");
    assert_eq!(
        (per_segment.allocations, per_segment.reallocations),
        (0, 0),
        "{alg}: the reader allocated after its setup: {per_segment:?}"
    );
    // The first read-ahead buffer (before the header says how long a
    // segment is), its growth to read-ahead + one sealed segment, one
    // plaintext segment, the key schedule.
    assert!(
        total.bytes_allocated < cap + (cap + seg) + seg + 8 * KIB,
        "{alg}: {total:?}"
    );
}

/// Principle 7, counted: reads of at least a segment decrypt straight into
/// the caller's buffer, so a reader that only ever gets such reads never
/// allocates its internal plaintext segment.
fn large_reads_allocate_no_plaintext_buffer(alg: Algorithm) {
    let key = Key::generate(alg);
    let seg = 256 * KIB;
    let data = vec![0x5au8; 4 * seg + 7];
    let mut w = CipherWriter::with_capacity(seg, &key, Vec::new());
    w.write_all(&data).unwrap();
    let ct = w.finish().unwrap();
    // Room for a whole segment at every read, the short final one included.
    let mut out = vec![0u8; data.len() + seg];

    let region = Region::new(GLOBAL);
    let mut r = CipherReader::new(&key, &ct[..]);
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
    assert!(out[..got] == data[..], "{alg}");
    // The read-ahead (8 KiB, grown by one sealed segment) and the key
    // schedule; a plaintext segment would add another 256 KiB.
    assert!(
        stats.bytes_allocated < 8 * KIB + (seg + 16) + 16 * KIB,
        "{alg}: large reads allocated a plaintext buffer: {stats:?}"
    );
}
