//! Regressions found by the fuzz targets (fuzz/README.md), one test each,
//! so that they are checked by `cargo test` too and not only by a fuzzer
//! that happens to find them again.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, StreamKey};
use common::{Front, Layout, ScriptReader};

/// Reads `ct` on every front and provider with every capacity and inner
/// reads of at most `step` bytes, and checks that each inner read made
/// before the header was complete asked for at least the capacity, as
/// `CipherReader`'s docs promise.
fn header_reads_ask_for_capacity<K: StreamKey>(key: &K, ct: &[u8], header_len: usize, pt: &[u8]) {
    for &front in Front::ALL {
        for &p in Provider::ALL {
            for capacity in [1, 3, header_len - 1, header_len, 100, 4096] {
                for step in [1, 3, 50] {
                    let builder = CipherReader::builder(key).capacity(capacity).provider(p);
                    let inner = ScriptReader::new(ct).max_per_call(step);
                    let mut r = front.build_reader(builder, inner);
                    let mut out = Vec::new();
                    r.read_to_end(&mut out).unwrap();
                    assert!(out == pt);
                    for &(before, ask) in &r.get_ref().asks {
                        if before < header_len {
                            assert!(
                                ask >= capacity,
                                "{front:?}, {p:?}, capacity {capacity}, {step}-byte inner \
                                 reads: asked for {ask} bytes with {before} of the header read"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The `open` target's inner reader found that, while the header was
/// incomplete, the reader asked for less than its capacity after a short
/// read (capacity 100, 3-byte reads: it asked for 97). Fixed in d6d6374.
#[test]
fn native_header_reads_ask_for_the_capacity() {
    let pt: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        let mut w = CipherWriter::with_capacity(64, &key, Vec::new());
        w.write_all(&pt).unwrap();
        let ct = w.finish().unwrap();
        header_reads_ask_for_capacity(&key, &ct, Layout::native(64).header, &pt);
    }
}

/// The same with a Tink key (a 24-byte header for AES-128).
#[test]
fn tink_header_reads_ask_for_the_capacity() {
    let pt: Vec<u8> = (0..=255u8).rev().cycle().take(1000).collect();
    let params = AesGcmHkdfParams::AES128_GCM_HKDF_4KB;
    let key = AesGcmHkdfKey::new(params, &[0x42; 16]).unwrap();
    let mut w = CipherWriter::new(&key, Vec::new());
    w.write_all(&pt).unwrap();
    let ct = w.finish().unwrap();
    header_reads_ask_for_capacity(&key, &ct, Layout::of_tink(&params).header, &pt);
}
