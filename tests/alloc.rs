//! Bytes allocated, counted (costs are asserted by counting, never by
//! timing): a hostile header makes the
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
use std::io::{self, Read, Seek, Write};

use cipherio::format::{HEADER_LEN, Header};
use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, Stats, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn main() {
    // The exact counts of one-thread streams first, for every provider:
    // once a threaded stream has started the process's shared pool, its
    // threads may still be ending that stream's jobs (and allocating)
    // while a later region measures.
    for &p in Provider::ALL {
        framed_record_lengths_allocate_nothing_they_ask(p);
        hostile_headers_allocate_no_segment_buffer(p);
        for &alg in Algorithm::ALL {
            writer_allocates_once_per_stream(p, alg);
            reader_allocates_once_per_stream(p, alg);
            large_reads_allocate_no_plaintext_buffer(p, alg);
            buf_read_allocates_no_more_than_build(p, alg);
        }
    }
    for &p in Provider::ALL {
        memory_follows_the_bytes_that_arrived(p);
        forged_headers_cost_about_twice_what_arrived_on_every_thread_count(p);
        forged_runs_grow_nothing_beside_them(p);
        asking_for_threads_allocates_nothing_after_the_first_stream(p);
        for threads in [2, 3, 1024, usize::MAX] {
            threaded_writers_hold_their_ring_and_readers_their_read_ahead_and_run(p, threads);
            one_long_threaded_write_holds_its_ring(p, threads);
        }
        seeks_back_over_a_ring_do_not_grow_the_read_ahead(p);
    }
    #[cfg(feature = "hazmat")]
    keystream_reader_allocates_its_buffer_only_for_small_reads();
    let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
    println!(
        "alloc: hostile headers, per-segment, zero-copy and build_from_buf_read allocation checks passed for {}",
        names.join(", ")
    );
}

/// Bytes a region's allocations still hold (`stats_alloc` counts a
/// reallocation's growth in `bytes_allocated`, its shrinking in
/// `bytes_deallocated`).
fn live(s: &Stats) -> usize {
    s.bytes_allocated.saturating_sub(s.bytes_deallocated)
}

/// An inner reader that delivers `data`, then says `WouldBlock` (a peer
/// that went silent).
struct ThenSilence<'a>(&'a [u8]);

impl Read for ThenSilence<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Memory follows the bytes that arrived, not what an unauthenticated
/// header asks for, measured as the
/// bytes a reader or writer holds while it is alive:
/// - a reader fed a native header asking for 16 MiB segments (allowed by
///   the default limit), or for `u32::MAX`-byte ones under a raised limit,
///   then `WouldBlock`, or 100 KiB of such a segment and then `WouldBlock`:
///   at most twice what arrived, plus its 8 KiB read-ahead and a few KiB
///   (it held the whole segment before: 16 MiB, and 4 GiB);
/// - a writer given one byte through the largest Tink segment (2^31 − 1
///   bytes) or a 16 MiB native segment, finished: a few KiB (it reserved
///   a segment of plaintext and one of ciphertext: 4 GiB, and 32 MiB),
///   and a reader of the 41-byte Tink stream it wrote: a few KiB.
fn memory_follows_the_bytes_that_arrived(p: Provider) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let few = 4 * KIB;
    for (size, limit, arrived) in [
        (16 << 20, None, 0),
        (u32::MAX, Some(usize::MAX), 0),
        (16 << 20, None, 100 * KIB),
    ] {
        let header = Header::new(Algorithm::Aes256Gcm, size, [1; 32], [2; 7]);
        let mut input = header.to_bytes().to_vec();
        input.resize(HEADER_LEN + arrived, 0x55);
        let region = Region::new(GLOBAL);
        let mut b = CipherReader::builder(&key).provider(p);
        if let Some(l) = limit {
            b = b.max_segment_size(l);
        }
        let mut r = b.build(ThenSilence(&input));
        for _ in 0..3 {
            let err = r.read(&mut [0u8; 4096]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{p:?}");
        }
        let held = live(&region.change());
        drop(r);
        println!(
            "alloc: {p:?} reader, header asking for {size}-byte segments, {arrived} bytes of it, then WouldBlock: {held} bytes held"
        );
        assert!(
            held <= 2 * (HEADER_LEN + arrived) + 8 * KIB + few,
            "{p:?}: segment size {size}, {arrived} bytes arrived: the reader holds {held} bytes"
        );
    }

    let largest = AesGcmHkdfParams::new(32, (1 << 31) - 1, HkdfHash::Sha256).unwrap();
    let tink = AesGcmHkdfKey::generate(largest);
    let region = Region::new(GLOBAL);
    let mut w = CipherWriter::builder(&tink).provider(p).build(Vec::new());
    w.write_all(b"x").unwrap();
    w.try_finish().unwrap();
    let held = live(&region.change());
    let ct = w.finish().unwrap();
    println!(
        "alloc: {p:?} one byte through a 2^31-1-byte Tink segment: {held} bytes held by the writer"
    );
    assert_eq!(ct.len(), 40 + 1 + 16, "{p:?}");
    assert!(
        held <= 8 * KIB + few,
        "{p:?}: the Tink writer holds {held} bytes"
    );

    let region = Region::new(GLOBAL);
    let mut r = CipherReader::builder(&tink).provider(p).build(&ct[..]);
    let mut out = [0u8; 1];
    r.read_exact(&mut out).unwrap();
    let held = live(&region.change());
    drop(r);
    println!("alloc: {p:?} reading it back: {held} bytes held by the reader");
    assert_eq!(&out, b"x");
    assert!(
        held <= 8 * KIB + few,
        "{p:?}: the Tink reader holds {held} bytes"
    );

    let region = Region::new(GLOBAL);
    let mut w = CipherWriter::builder(&key)
        .capacity(16 * MIB)
        .provider(p)
        .build(Vec::new());
    w.write_all(b"x").unwrap();
    w.try_finish().unwrap();
    let held = live(&region.change());
    drop(w);
    println!(
        "alloc: {p:?} one byte through a 16 MiB native segment: {held} bytes held by the writer"
    );
    assert!(
        held <= 8 * KIB + few,
        "{p:?}: the 16 MiB writer holds {held} bytes"
    );
}

/// A forged header (no key needed) asking for 16 MiB segments, then junk:
/// whatever the thread count and the layout, the reader holds at most about
/// twice what arrived. With threads the read-ahead grows to one segment
/// until a segment authenticates, and only then to a batch (it went
/// straight to the batch: 8 threads held 134 MB for 9 MB of junk). The
/// junk is less than a segment and then silence (still growing), or more
/// than a segment and then the end (the first segment fails to open).
fn forged_headers_cost_about_twice_what_arrived_on_every_thread_count(p: Provider) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let size = 16u32 << 20;
    for framed in [false, true] {
        for (arrived, silence) in [(9 * MIB, true), (size as usize + MIB, false)] {
            let header =
                Header::new(Algorithm::Aes256Gcm, size, [5; 32], [6; 7]).with_framed(framed);
            let mut input = header.to_bytes().to_vec();
            if framed {
                // A record header asking for a whole (non-final) record.
                input.extend(size.to_be_bytes());
            }
            input.resize(HEADER_LEN + arrived, 0x5a);
            for (threads, prefetch) in [(1, false), (2, false), (2, true), (4, false), (8, true)] {
                let region = Region::new(GLOBAL);
                let b = CipherReader::builder(&key)
                    .provider(p)
                    .threads(threads)
                    .threads_after(0)
                    .prefetch(prefetch);
                let err = if silence {
                    let mut r = b.build(ThenSilence(&input));
                    let e = r.read(&mut [0u8; 4096]).unwrap_err();
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{p:?}");
                    let held = live(&region.change());
                    drop(r);
                    (held, e)
                } else {
                    let mut r = b.build(&input[..]);
                    let e = r.read(&mut [0u8; 4096]).unwrap_err();
                    assert_eq!(Error::from_io(&e), Some(&Error::Authentication), "{p:?}");
                    let held = live(&region.change());
                    drop(r);
                    (held, e)
                };
                let (held, e) = err;
                let layout = if framed { "framed" } else { "fixed" };
                println!(
                    "alloc: {p:?} {layout}, threads({threads}), prefetch {prefetch}, forged header for 16 MiB segments, {arrived} bytes of junk: {held} bytes held ({:.2}x), {e}",
                    held as f64 / input.len() as f64
                );
                assert!(
                    held <= 2 * input.len() + 8 * KIB + 64 * KIB,
                    "{p:?} {layout}, threads({threads}), prefetch {prefetch}: {held} bytes held for {} that arrived",
                    input.len()
                );
            }
        }
    }
}

/// Forged headers followed by a few forged units that would make a run (two
/// empty records that say they are not final; two 512-byte segments and
/// more): a prefetching reader grows nothing for a read beside a run before
/// a unit has authenticated, so it holds what any other reader holds.
fn forged_runs_grow_nothing_beside_them(p: Provider) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let records = {
        let header = Header::new(Algorithm::Aes256Gcm, 16 << 20, [5; 32], [6; 7]).with_framed(true);
        let mut input = header.to_bytes().to_vec();
        for _ in 0..2 {
            input.extend(0u32.to_be_bytes());
            input.extend([0x11; 16]);
        }
        input
    };
    let segments = {
        let mut input = Header::new(Algorithm::Aes256Gcm, 512, [5; 32], [6; 7])
            .to_bytes()
            .to_vec();
        input.extend([0x22u8; 2 * 528 + 10]);
        input
    };
    for (what, input) in [("framed", records), ("fixed", segments)] {
        for (threads, prefetch) in [(1, false), (2, false), (2, true), (8, true)] {
            let region = Region::new(GLOBAL);
            let mut r = CipherReader::builder(&key)
                .provider(p)
                .threads(threads)
                .threads_after(0)
                .prefetch(prefetch)
                .build(ThenSilence(&input));
            let e = r.read(&mut [0u8; 4096]).unwrap_err();
            let held = live(&region.change());
            drop(r);
            assert_eq!(Error::from_io(&e), Some(&Error::Authentication), "{p:?}");
            println!(
                "alloc: {p:?} {what}, threads({threads}), prefetch {prefetch}, forged header and units, {} bytes arrived: {held} bytes held",
                input.len()
            );
            assert!(
                held <= 2 * input.len() + 8 * KIB + 64 * KIB,
                "{p:?} {what}, threads({threads}), prefetch {prefetch}: {held} bytes held for {} that arrived",
                input.len()
            );
        }
    }
}

/// The framed variant: a record header asking for more than
/// the stream's record size is refused before anything is allocated for
/// it, and one within it (16 MiB) followed by silence pins only what
/// arrived, as for fixed-size segments.
fn framed_record_lengths_allocate_nothing_they_ask(p: Provider) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for (size, record_len) in [(8u32, 0x7fff_ffffu32), (16 << 20, 16 << 20)] {
        let header = Header::new(Algorithm::Aes256Gcm, size, [3; 32], [4; 7]).with_framed(true);
        let mut input = header.to_bytes().to_vec();
        input.extend(record_len.to_be_bytes());
        input.extend([0x77; 1000]);
        let region = Region::new(GLOBAL);
        let mut r = CipherReader::builder(&key)
            .provider(p)
            .build(ThenSilence(&input));
        let err = r.read(&mut [0u8; 4096]).unwrap_err();
        let held = live(&region.change());
        drop(r);
        println!(
            "alloc: {p:?} framed, record size {size}, a record header asking {record_len} bytes: {held} bytes held, {err}"
        );
        if record_len > size {
            assert!(
                matches!(
                    Error::from_io(&err),
                    Some(&Error::SegmentTooLarge { size: s, limit, .. })
                        if s == u64::from(record_len) && limit == u64::from(size)
                ),
                "{p:?}: {err}"
            );
        } else {
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{p:?}");
        }
        // The read-ahead (8 KiB + header) at most doubles before the record
        // is whole: twice it and what arrived, whatever the record asks.
        assert!(
            held <= 2 * (8 * KIB + input.len()) + 4 * KIB,
            "{p:?}: {held} bytes held"
        );
    }
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
        let header = Header::new(Algorithm::Aes256Gcm, size, [1; 32], [2; 7]);
        let mut input = header.to_bytes().to_vec();
        input.resize(HEADER_LEN + 64 * KIB, 0x55);

        let region = Region::new(GLOBAL);
        let mut r = CipherReader::builder(&key).provider(p).build(&input[..]);
        assert_eq!(r.provider(), p, "a reader built for {p:?}");
        let err = r.read(&mut [0u8; 4096]).unwrap_err();
        let stats = region.change();
        drop(r);
        assert!(
            matches!(
                Error::from_io(&err),
                Some(&Error::SegmentTooLarge { size: s, limit, .. })
                    if s == u64::from(size) && limit == 16 * MIB as u64
            ),
            "{p:?}: {err}"
        );
        // The 8 KiB read-ahead, the key copy, the error: nothing sized by
        // the header.
        assert!(
            stats.bytes_allocated < 16 * KIB,
            "{p:?}: segment size {size}: {stats:?}"
        );
    }
}

/// The machine's CPU count, which `threads(n)` clamps to, is asked of
/// the system once per process: on Linux that reads cgroup files (and
/// allocates for them), a cost no stream after the first may pay again.
fn asking_for_threads_allocates_nothing_after_the_first_stream(p: Provider) {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let _first = CipherWriter::builder(&key).provider(p).threads(2);
    for n in [1, 2, usize::MAX] {
        let (w, r) = (CipherWriter::builder(&key), CipherReader::builder(&key));
        let (w, r) = (w.provider(p), r.provider(p));
        let region = Region::new(GLOBAL);
        let built = (w.threads(n), r.threads(n));
        let asked = region.change();
        drop(built);
        assert_eq!(
            (asked.allocations, asked.reallocations),
            (0, 0),
            "{p:?}: threads({n}) on a writer's and a reader's builder: {asked:?}"
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
    // The first segment: its buffers grow with the data (a plaintext
    // buffer of 8 KiB for the first 1000 bytes, then of one segment; the
    // sealed segment when the first segment is sealed).
    w.write_all(&data[..1000]).unwrap();
    w.write_all(&data[1000..=cap]).unwrap();
    let steady = Region::new(GLOBAL);
    // Every path: small writes through the buffer, held-back segments,
    // large writes sealed straight from the slice.
    let mut rest = &data[cap + 1..];
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
    // One plaintext segment (and the 8 KiB it grew from), one sealed
    // segment (with the header), the key schedule and the key copy.
    assert!(
        total.bytes_allocated < 2 * cap + 16 * KIB,
        "{p:?} {alg}: {total:?}"
    );
    // Exactly: the keys, the header, the first plaintext buffer (8 KiB)
    // and the one it grew to (a segment), the sealed segment (header,
    // segment, tag); nothing reallocated in place.
    assert_eq!(
        (
            (total.allocations, total.bytes_allocated),
            total.reallocations
        ),
        (
            plus(
                p,
                alg,
                4,
                HEADER_LEN + 8 * KIB + cap + (HEADER_LEN + cap + 16)
            ),
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
    // The read-ahead grows when the ciphertext that arrived fills it (here
    // at the second inner read), not when the header asks: read past it.
    r.read_exact(&mut out[got..cap + seg]).unwrap();
    got = cap + seg;
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
    // read-ahead, then grown once to a sealed segment and a read-ahead when
    // that much ciphertext had arrived), the plaintext segment.
    assert_eq!(
        (
            (total.allocations, total.bytes_allocated),
            total.reallocations
        ),
        (plus(p, alg, 2, (cap + seg + 16) + seg), 1),
        "{p:?} {alg}: the reader's allocations: {total:?}"
    );
}

/// Zero copies on the hot path, counted: reads of at least a segment decrypt straight into
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
    // Exactly: the keys and the read-ahead (8 KiB and the header, grown as
    // the first segment's ciphertext arrived — doubled four times, then to
    // 8 KiB and a sealed segment once that segment fitted); no plaintext
    // segment. (Before the read-ahead grew with the data: one
    // reallocation, straight to its full size, when the header was read.)
    assert_eq!(
        (
            (stats.allocations, stats.bytes_allocated),
            stats.reallocations
        ),
        (plus(p, alg, 1, 8 * KIB + seg + 16), 5),
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
    // doubled once as the first segment arrived, then grown to a sealed
    // segment and a read-ahead once it fitted; before the read-ahead grew
    // with the data: grown once, when the header was read).
    assert_eq!(
        (
            (build.allocations, build.bytes_allocated),
            build.reallocations
        ),
        (plus(p, alg, 1, cap + seg + 16), 2),
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

/// `threads(n)`: a writer holds at most its ring, whatever the caller's
/// chunking: 2n units (here a segment each) of plaintext and their
/// sealed bytes, the unit being filled (grown from 8 KiB) and the one
/// going out: 4n + 2 segments. A reader holds its read-ahead
/// (capacity + n + 1 units of sealed segments, and at least 1 MiB of
/// them, so that a run's fixed costs stay small beside it) and, for
/// small reads, a run of plaintext, or with prefetch its ring. Measured as the bytes the stream
/// holds after every call (the counter sees every thread, so the pool's
/// own allocations are in it: its registry and per-thread queues, about
/// 13 KB measured, given a margin of 24 KiB). Threaded streams allocate
/// per batch, not per segment: the list of pieces and the pool's jobs,
/// freed by the end of the call (counted, bounded per batch). `n` is the
/// count asked for clamped to the CPUs: `threads(1024)` holds what
/// `threads(cpus)` holds (it held the whole 8 MiB stream on both sides).
fn threaded_writers_hold_their_ring_and_readers_their_read_ahead_and_run(
    p: Provider,
    asked: usize,
) {
    let threads = clamped(asked);
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * KIB;
    let sealed = seg + 16;
    let data = vec![0x42u8; 8 * MIB + 123];

    let whole = Region::new(GLOBAL);
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .provider(p)
        .threads(asked)
        .threads_after(0)
        .build(io::sink());
    let (mut most, mut rest) = (0, &data[..]);
    let mut batches = 0;
    for chunk in [1, 7, 8 * KIB, seg, seg + 1, 3 * seg + 5, MIB]
        .iter()
        .cycle()
    {
        if rest.is_empty() {
            break;
        }
        let n = (*chunk).min(rest.len());
        w.write_all(&rest[..n]).unwrap();
        rest = &rest[n..];
        most = most.max(live(&whole.change()));
        batches += 1;
    }
    w.finish().unwrap();
    let bound = (4 * threads + 2) * sealed + HEADER_LEN + POOL;
    println!(
        "alloc: {p:?} writer on {threads} threads (asked {asked}) held at most {most} bytes ({bound} allowed)"
    );
    assert!(
        most <= bound,
        "{p:?} threads {threads}: the writer held {most} bytes, more than 4n + 2 segments ({bound})"
    );
    assert!(batches > 10, "the writer saw many calls");

    let (_, stream) = sealed_stream(&key, p, seg, 0x42, 8 * MIB);
    for (read, prefetch) in [100, 8 * KIB, MIB]
        .into_iter()
        .flat_map(|r| [(r, false), (r, true)])
    {
        let whole = Region::new(GLOBAL);
        let mut r = CipherReader::builder(&key)
            .provider(p)
            .threads(asked)
            .threads_after(0)
            .prefetch(prefetch)
            .build(&stream[..]);
        let mut buf = vec![0u8; read];
        let before = live(&whole.change());
        let mut most = 0;
        loop {
            let n = r.read(&mut buf).unwrap();
            // The writer's pool jobs end on the process's pool after it
            // was dropped, freeing what they held inside this region.
            most = most.max(live(&whole.change()).saturating_sub(before));
            if n == 0 {
                break;
            }
        }
        // The read-ahead: the capacity and n + 1 units (a segment each
        // here), 1 MiB at least; without prefetch a run's plaintext beside
        // it (as much); with prefetch, for small reads the ring (2n units
        // sealed and opened, and one more a late pool thread may still
        // hold, the unit being moved in and the one handed out), for large
        // ones the next run's input read beside a run (a read-ahead
        // more). (A stream that mixes both holds both.)
        let ahead = read_ahead(8 * KIB, threads, sealed);
        let held = match (prefetch, read >= MIB) {
            (true, false) => reader_ring(threads, sealed),
            _ => ahead,
        };
        let bound = ahead + held + POOL;
        println!(
            "alloc: {p:?} reader on {threads} threads (asked {asked}), prefetch {prefetch}, {read}-byte reads, held at most {most} bytes ({bound} allowed)"
        );
        assert!(
            most <= bound,
            "{p:?} threads {threads} prefetch {prefetch} reads of {read}: the reader held {most} bytes, more than its read-ahead and its run or ring ({bound})"
        );
    }
}

/// A prefetching threaded reader whose calls go round large reads (runs
/// with the next run's input read beside), a small read (units posted to
/// the ring) and a seek back to the start (the ring's units put back in
/// front of the read-ahead) holds what one round holds, not more each
/// round: the bytes put back once raised the read-ahead's size for good,
/// by about its capacity a round (55 MiB after 100 rounds of a reader of
/// 1 MiB capacity). Bound: the read-ahead (the capacity and the units
/// put back past its size, plus a read-ahead held beside a run) and the
/// ring, as in the test above.
fn seeks_back_over_a_ring_do_not_grow_the_read_ahead(p: Provider) {
    let threads = clamped(2);
    let key = Key::generate(Algorithm::Aes128Gcm);
    let (seg, cap) = (64 * KIB, MIB);
    let sealed = seg + 16;
    let (data, stream) = sealed_stream(&key, p, seg, 0x24, 40 * MIB);
    let whole = Region::new(GLOBAL);
    let mut r = CipherReader::builder(&key)
        .provider(p)
        .capacity(cap)
        .threads(threads)
        .threads_after(0)
        .prefetch(true)
        .build(io::Cursor::new(&stream[..]));
    let (mut big, mut small) = (vec![0u8; 4 * MIB], [0u8; 100]);
    let before = live(&whole.change());
    let mut most = 0;
    for _ in 0..12 {
        for _ in 0..4 {
            assert!(r.read(&mut big).unwrap() > 0, "the stream is longer");
        }
        let n = r.read(&mut small).unwrap();
        assert!(n > 0 && small[..n].iter().all(|&b| b == data[0]));
        r.seek(io::SeekFrom::Start(0)).unwrap();
        most = most.max(live(&whole.change()).saturating_sub(before));
    }
    let ahead = read_ahead(cap, threads, sealed);
    let bound = 3 * ahead + cap + reader_ring(threads, sealed) + 2 * threads * sealed + POOL;
    println!(
        "alloc: {p:?} reader on {threads} threads, prefetch, seeking back over its ring, held at most {most} bytes ({bound} allowed)"
    );
    assert!(
        most <= bound,
        "{p:?}: the reader held {most} bytes after rounds of seeking back over its ring, more than its read-ahead and ring ({bound})"
    );
}

/// What the process's pool allocates for itself, counted with a threaded
/// stream's bytes (its registry and per-thread queues: about 13 KB
/// measured).
const POOL: usize = 24 * KIB;

/// A threaded reader's read-ahead: its `capacity` and the header, and
/// `threads + 1` units of `sealed` bytes, 1 MiB at least.
fn read_ahead(capacity: usize, threads: usize, sealed: usize) -> usize {
    capacity + HEADER_LEN + ((threads + 1) * sealed).max(MIB)
}

/// A prefetching reader's ring of `sealed`-byte units: 2n units sealed
/// and opened, one more a late pool thread may still hold, the unit
/// being moved in and the one handed out.
fn reader_ring(threads: usize, sealed: usize) -> usize {
    (4 * threads + 4) * sealed
}

/// The threads a stream asked for `asked` runs on: at most the CPUs.
fn clamped(asked: usize) -> usize {
    asked.min(std::thread::available_parallelism().map_or(1, usize::from))
}

/// An inner writer that takes everything and notes, at each call, the
/// most bytes the region's allocations held: what a threaded writer holds
/// *during* one long write (it hands each sealed share to the inner
/// writer as it goes), not only after it.
struct Sampling<'r> {
    region: &'r Region<'static, System>,
    most: usize,
    calls: usize,
}

impl Write for Sampling<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.most = self.most.max(live(&self.region.change()));
        self.calls += 1;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One `write_all` of 16 MiB through a threaded writer holds its ring
/// all along (4n + 2 units of `max(capacity, 64 KiB)`, as documented),
/// not memory that grows with the write, even with 100-byte segments.
fn one_long_threaded_write_holds_its_ring(p: Provider, asked: usize) {
    let threads = clamped(asked);
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let data = vec![0x42u8; 16 * MIB];
    for cap in [100, 8 * KIB, 64 * KIB] {
        let region = Region::new(GLOBAL);
        let mut w = CipherWriter::builder(&key)
            .capacity(cap)
            .provider(p)
            .threads(asked)
            .threads_after(0)
            .build(Sampling {
                region: &region,
                most: 0,
                calls: 0,
            });
        w.write_all(&data).unwrap();
        let inner = w.finish().unwrap();
        let per_segment = cap.max(64 * KIB) + 16 + 4;
        let bound = (4 * threads + 2) * per_segment + HEADER_LEN + POOL;
        println!(
            "alloc: {p:?} writer on {threads} threads (asked {asked}), capacity {cap}, one 16 MiB write: held at most {} bytes while writing ({bound} allowed, {} inner writes)",
            inner.most, inner.calls
        );
        assert!(inner.calls > 2, "sampled during the write");
        assert!(
            inner.most <= bound,
            "{p:?} threads {threads} capacity {cap}: one long write held {} bytes, more than 4n + 2 units ({bound})",
            inner.most
        );
    }
}

/// `KeystreamReader` (feature `hazmat`): reads at least its capacity go
/// straight into the caller's buffer, so a reader that only takes such
/// reads allocates nothing (its buffer is allocated, and wiped, only once
/// something goes through it); the first small read allocates the
/// capacity, once.
#[cfg(feature = "hazmat")]
fn keystream_reader_allocates_its_buffer_only_for_small_reads() {
    use cipher::{KeyIvInit, StreamCipher};
    use cipherio::hazmat::KeystreamReader;

    type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;
    let cipher = || Aes128Ctr::new(&[3; 16].into(), &[4; 16].into());
    let plaintext = vec![0x3c; 256 * KIB];
    let mut ct = plaintext.clone();
    cipher().apply_keystream(&mut ct);
    let mut out = vec![0u8; 64 * KIB];
    for buf_read in [false, true] {
        let region = Region::new(GLOBAL);
        let mut r = if buf_read {
            KeystreamReader::from_buf_read_with_capacity(64 * KIB, cipher(), &ct[..])
        } else {
            KeystreamReader::with_capacity(64 * KIB, cipher(), &ct[..])
        };
        let mut got = 0;
        while r.read(&mut out).unwrap() == out.len() {
            assert!(out[..] == plaintext[got..got + out.len()]);
            got += out.len();
        }
        let large = region.change();
        assert_eq!(got, plaintext.len());
        assert_eq!(
            (large.allocations, large.bytes_allocated),
            (0, 0),
            "buf_read {buf_read}: large reads allocated: {large:?}"
        );
        drop(r);
    }

    let region = Region::new(GLOBAL);
    let mut r = KeystreamReader::with_capacity(64 * KIB, cipher(), &ct[..]);
    let mut byte = [0u8; 1];
    for _ in 0..1000 {
        r.read_exact(&mut byte).unwrap();
    }
    let small = region.change();
    assert_eq!(byte, [0x3c]);
    assert_eq!(
        (small.allocations, small.bytes_allocated),
        (1, 64 * KIB),
        "small reads: {small:?}"
    );
    drop(r);
}
