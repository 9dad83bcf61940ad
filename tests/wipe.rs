//! Secrets are wiped before their memory goes back to the allocator
//! (keys, derived keys and plaintext buffers), and a buffer that cannot be
//! allocated is an error, not an abort (a hostile header must not abort the
//! process). A global allocator scans every block
//! freed while a needle is armed, and can refuse large allocations. Every
//! check runs once per provider in [`Provider::ALL`], named through the
//! builders' `.provider(p)` (not left to the default, which follows the
//! `aws-lc` feature), and its messages name the provider. (The scan
//! cannot tell which provider sealed: that the chosen one did is counted
//! by `tests/alloc.rs`, whose exact counts include RustCrypto's boxed
//! AEAD, and by the unit tests in `src/provider.rs`.)
//!
//! This needs `unsafe` (a `GlobalAlloc`): the one place in the package
//! that has any; the library forbids it. It runs without the test harness
//! (`harness = false`), so no other thread allocates while it scans.
//!
//! # What the scanner cannot see
//!
//! It is Rust's global allocator, so it sees only memory allocated through
//! Rust. AWS-LC ([`Provider::AwsLc`]) allocates its AEAD context — the
//! expanded key schedule and the GHASH table — with `OPENSSL_malloc`, that
//! is libc `malloc`, which never passes through it. Under that provider the
//! scan therefore covers cipherio's own Rust allocations alone: the key
//! copies, the derived stream key (computed in Rust, then handed to AWS-LC
//! and dropped, wiped, by cipherio), and the plaintext and ciphertext
//! buffers. AWS-LC cleanses its allocations when it frees them
//! (`OPENSSL_free` runs `OPENSSL_cleanse` over the block, aws-lc
//! `crypto/mem.c`), but on every seal and open it copies the GHASH key into
//! a `GCM128_CONTEXT` on the stack that it does not clear; this test can
//! check neither. (Under RustCrypto every key schedule is a Rust `Box`,
//! scanned here.)
#![allow(unsafe_code, clippy::unwrap_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};

use cipherio::format::{HEADER_LEN, Header};
use cipherio::segments::{SegmentOpener, SegmentSealer};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use common::Trickle;
use hkdf::Hkdf;
use sha2::Sha256;

const MAX_NEEDLE: usize = 32;
static NEEDLE: [AtomicU8; MAX_NEEDLE] = [const { AtomicU8::new(0) }; MAX_NEEDLE];
static NEEDLE_LEN: AtomicUsize = AtomicUsize::new(0);
static HITS: AtomicUsize = AtomicUsize::new(0);
/// Allocations above this many bytes fail (0: no limit).
static LIMIT: AtomicUsize = AtomicUsize::new(0);

struct Scanner;

unsafe impl GlobalAlloc for Scanner {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let limit = LIMIT.load(SeqCst);
        if limit != 0 && l.size() > limit {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let n = NEEDLE_LEN.load(SeqCst);
        if n > 0 && l.size() >= n {
            let mut needle = [0u8; MAX_NEEDLE];
            for (d, s) in needle.iter_mut().zip(&NEEDLE) {
                *d = s.load(SeqCst);
            }
            // Volatile reads: the block may hold never-written bytes.
            let byte = |i: usize| unsafe { std::ptr::read_volatile(p.add(i)) };
            let found = (0..=l.size() - n).any(|i| (0..n).all(|j| byte(i + j) == needle[j]));
            if found {
                HITS.fetch_add(1, SeqCst);
            }
        }
        unsafe { System.dealloc(p, l) }
    }
    // `realloc` is the default (alloc, copy, dealloc): the old block is
    // scanned too, and the limit applies to growth.
}

#[global_allocator]
static GLOBAL: Scanner = Scanner;

/// Runs `f` with `needle` armed; returns how many freed blocks held it.
fn freed_blocks_holding(needle: &[u8], f: impl FnOnce()) -> usize {
    for (d, &s) in NEEDLE.iter().zip(needle) {
        d.store(s, SeqCst);
    }
    HITS.store(0, SeqCst);
    NEEDLE_LEN.store(needle.len(), SeqCst);
    f();
    NEEDLE_LEN.store(0, SeqCst);
    HITS.load(SeqCst)
}

const KEY: [u8; 32] = *b"k3y-bytes:never-in-freed-memory!";
const MARK: [u8; 16] = *b"PLAINTEXT-MARK-!";

fn plaintext() -> [u8; 160] {
    std::array::from_fn(|i| MARK[i % 16])
}

fn seal(key: &Key, p: Provider, pt: &[u8]) -> Vec<u8> {
    let mut w = CipherWriter::builder(key)
        .capacity(64)
        .associated_data(b"ad")
        .provider(p)
        .build(Vec::new());
    assert_eq!(w.provider(), p, "a writer built for {p:?}");
    for c in pt.chunks(7) {
        w.write_all(c).unwrap();
    }
    w.finish().unwrap()
}

/// Reads byte by byte (through the reader's plaintext buffer) into a stack
/// array, so that the test itself frees no plaintext.
fn open_bytewise(key: &Key, p: Provider, ct: &[u8]) -> [u8; 160] {
    let mut r = CipherReader::builder(key)
        .associated_data(b"ad")
        .provider(p)
        .build(ct);
    assert_eq!(r.provider(), p, "a reader built for {p:?}");
    let mut out = [0u8; 160];
    for b in out.iter_mut() {
        r.read_exact(std::slice::from_mut(b)).unwrap();
    }
    assert_eq!(r.read(&mut [0u8; 1]).unwrap(), 0);
    out
}

/// One run: the allocator's state is global, so nothing may run beside it.
fn main() {
    // The scanner itself: an unwiped copy of a needle, freed, is found.
    let hits = freed_blocks_holding(&MARK, || drop(std::hint::black_box(MARK.to_vec())));
    assert_eq!(hits, 1, "the scanner missed a freed, unwiped needle");

    for &p in Provider::ALL {
        secrets_are_wiped(p);
        allocation_failure_is_an_error(p);
    }
    #[cfg(feature = "hazmat")]
    keystream_reader_plaintext_is_wiped();
    let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
    println!(
        "wipe: no key, derived key or plaintext in Rust-freed memory; allocation failure is an error; for {}",
        names.join(", ")
    );
}

fn secrets_are_wiped(p: Provider) {
    let pt = plaintext();
    for &alg in Algorithm::ALL {
        let kb = &KEY[..alg.key_len()];
        // The caller's key, and every copy a writer and reader make of it.
        let hits = freed_blocks_holding(kb, || {
            let key = Key::new(alg, kb).unwrap();
            let ct = seal(&key, p, &pt);
            assert!(open_bytewise(&key.clone(), p, &ct) == pt, "{p:?} {alg}");
        });
        assert_eq!(hits, 0, "{p:?} {alg}: key bytes left in freed memory");

        let key = Key::new(alg, kb).unwrap();
        // Plaintext buffered by the writer, and by the reader.
        let hits = freed_blocks_holding(&MARK, || drop(seal(&key, p, &pt)));
        assert_eq!(
            hits, 0,
            "{p:?} {alg}: writer left plaintext in freed memory"
        );
        let ct = seal(&key, p, &pt);
        let hits = freed_blocks_holding(&MARK, || {
            assert!(open_bytewise(&key, p, &ct) == pt, "{p:?} {alg}");
        });
        assert_eq!(
            hits, 0,
            "{p:?} {alg}: reader left plaintext in freed memory"
        );
    }

    // The derived stream key, recomputed from the header as the format
    // describes: ChaCha20-Poly1305 (RustCrypto) keeps it as raw bytes in
    // its boxed state, and an AES key schedule starts with it; under
    // AWS-LC only cipherio's own copy of it is in Rust memory.
    for &alg in Algorithm::ALL {
        let kb = &KEY[..alg.key_len()];
        let key = Key::new(alg, kb).unwrap();
        let ct = seal(&key, p, &pt);
        let header = Header::parse(&ct).unwrap();
        let mut derived = [0u8; 32];
        let derived = &mut derived[..alg.key_len()];
        Hkdf::<Sha256>::new(Some(&header.salt), kb)
            .expand_multi_info(&[&ct[..HEADER_LEN], b"ad"], derived)
            .unwrap();
        let hits = freed_blocks_holding(derived, || {
            assert!(open_bytewise(&key, p, &ct) == pt, "{p:?} {alg}");
        });
        assert_eq!(hits, 0, "{p:?} {alg}: derived key left in freed memory");

        // Segments by index: the stream key a sealer and an opener share
        // (and their clones) is wiped with the last of them.
        let hits = freed_blocks_holding(derived, || {
            let sealer = SegmentSealer::from_header_with(&key, &ct, b"ad", p).unwrap();
            let opener = SegmentOpener::new_with(&key, &ct, b"ad", p).unwrap();
            let (mut again, mut out) = (Vec::new(), Vec::new());
            sealer
                .clone()
                .seal_segments(0, &pt[..64], false, &mut again)
                .unwrap();
            opener
                .clone()
                .open_segments(0, &again, false, &mut out)
                .unwrap();
            assert!(out[..] == pt[..64], "{p:?} {alg}");
            drop((sealer, opener));
        });
        assert_eq!(
            hits, 0,
            "{p:?} {alg}: segments left the derived key in freed memory"
        );
    }
}

/// A read-ahead that cannot be allocated, and one that can be allocated
/// but not grown by one segment: an error, not an abort (both reservations
/// must be fallible), naming the size that failed.
fn allocation_failure_is_an_error(p: Provider) {
    let key = Key::new(Algorithm::ChaCha20Poly1305, &KEY).unwrap();
    let ct = seal(&key, p, &plaintext());
    let cap = 32 << 20;
    // The header and a read-ahead first; then one sealed 64-byte segment
    // and a read-ahead.
    let (first, grown) = (cap + HEADER_LEN, cap + 64 + 16);
    // The read-ahead grows only as ciphertext arrives: the second case
    // trickles it in a byte at a time, so that the header completes and
    // the growth is needed before the first segment is whole.
    for (limit, failed) in [(cap + 40, first), (first, grown)] {
        LIMIT.store(limit, SeqCst);
        let mut r = CipherReader::builder(&key)
            .capacity(cap)
            .associated_data(b"ad")
            .provider(p)
            .build(Trickle::new(&ct[..], 1));
        let err = r.read(&mut [0u8; 1]);
        LIMIT.store(0, SeqCst);
        assert_eq!(r.provider(), p, "a reader built for {p:?}");
        let err = err.unwrap_err();
        assert_eq!(
            Error::from_io(&err),
            Some(&Error::Allocation(failed)),
            "{p:?}, allocations over {limit} bytes refused: {err}"
        );
    }
}

/// `KeystreamReader` (feature `hazmat`) holds plaintext in its buffer
/// (allocated on the first small read): wiped when the reader is dropped,
/// with and without `from_buf_read`.
#[cfg(feature = "hazmat")]
fn keystream_reader_plaintext_is_wiped() {
    use cipher::{KeyIvInit, StreamCipher};
    use cipherio::hazmat::KeystreamReader;

    type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;
    let cipher = || Aes128Ctr::new(&[5; 16].into(), &[6; 16].into());
    let mut ct = plaintext().to_vec();
    cipher().apply_keystream(&mut ct);
    for buf_read in [false, true] {
        let hits = freed_blocks_holding(&MARK, || {
            let mut r = if buf_read {
                KeystreamReader::from_buf_read_with_capacity(64, cipher(), &ct[..])
            } else {
                KeystreamReader::with_capacity(64, cipher(), &ct[..])
            };
            let mut out = [0u8; 160];
            for b in out.iter_mut() {
                r.read_exact(std::slice::from_mut(b)).unwrap();
            }
            assert_eq!(out, plaintext());
        });
        assert_eq!(
            hits, 0,
            "keystream reader (buf_read {buf_read}): plaintext left in freed memory"
        );
    }
}
