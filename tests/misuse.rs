//! A careless caller (issue "Hardening", items 3 and 4): `consume` beyond
//! what `fill_buf` showed, and a bad capacity, whose error must come from
//! every call, the first one included. Each runs over every front and
//! provider.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, ErrorKind};

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider};
use common::front::Front;

fn sealed(key: &Key, provider: Provider, plain: &[u8]) -> Vec<u8> {
    let mut w = Front::Std.build_writer(
        CipherWriter::builder(key).capacity(4).provider(provider),
        Vec::new(),
    );
    w.write_all(plain).expect("write");
    w.finish().expect("finish")
}

/// `fill_buf(); consume(5); consume(usize::MAX)` used to overflow the
/// position (a panic in debug builds, a wrapped position and a byte
/// delivered twice in release): the position now stops at the end of the
/// buffered bytes, and the next bytes are the next plaintext.
#[test]
fn consume_past_the_buffer_clamps_and_never_repeats_a_byte() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let plain: Vec<u8> = (0u8..=20).collect();
    for &front in Front::ALL {
        for &p in Provider::ALL {
            let ct = sealed(&key, p, &plain);
            let mut r = front.build_reader(CipherReader::builder(&key).provider(p), &ct[..]);
            assert_eq!(r.fill_buf().expect("fill").len(), 4, "{front:?} {p:?}");
            r.consume(3);
            r.consume(usize::MAX);
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).expect("read");
            assert_eq!(rest, plain[4..], "{front:?} {p:?}: a byte repeated or lost");
            r.consume(usize::MAX);
            assert!(r.fill_buf().expect("end").is_empty());
        }
    }
}

fn invalid_capacity(e: &io::Error, cap: usize) {
    let named = match Error::from_io(e) {
        // A Tink key's error names the one capacity the key takes.
        Some(&Error::CapacityForKey {
            capacity, required, ..
        }) => cap == 4096 && capacity == 4096 && required == 4080,
        Some(&Error::InvalidCapacity(c)) => cap != 4096 && c == cap,
        _ => false,
    };
    assert!(named, "{e}");
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    if cap == 4096 {
        assert!(e.to_string().contains("use 4080"), "{e}");
    }
}

/// A writer with a capacity the format refuses fails on every call — a
/// `flush` before any write too (it used to return `Ok(())`) — and writes
/// nothing.
#[test]
fn a_bad_writer_capacity_fails_the_first_call_whatever_it_is() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let tink = AesGcmHkdfKey::generate(AesGcmHkdfParams::AES128_GCM_HKDF_4KB);
    for &front in Front::ALL {
        for &p in Provider::ALL {
            let cases: Vec<(cipherio::WriterBuilder, usize)> = vec![
                (CipherWriter::builder(&key), 0),
                (
                    CipherWriter::builder(&key),
                    cipherio::format::MAX_WRITER_CAPACITY + 1,
                ),
                (CipherWriter::builder(&tink), 4096),
            ];
            for (b, cap) in cases {
                let what = format!("{front:?} {p:?} capacity {cap}");
                let mut w = front.build_writer(b.capacity(cap).provider(p), Vec::new());
                invalid_capacity(&w.flush().expect_err(&what), cap);
                invalid_capacity(&w.write(b"x").expect_err(&what), cap);
                invalid_capacity(&w.flush().expect_err(&what), cap);
                invalid_capacity(&w.try_finish().expect_err(&what), cap);
                assert!(w.get_ref().is_empty(), "{what}: wrote something");
            }
        }
    }
}

/// A reader with a zero read-ahead fails on every call, an empty read
/// included, and never reads its inner reader.
#[test]
fn a_zero_reader_capacity_fails_the_first_call_even_an_empty_read() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for &front in Front::ALL {
        for &p in Provider::ALL {
            let ct = sealed(&key, p, b"abc");
            let mut r =
                front.build_reader(CipherReader::builder(&key).capacity(0).provider(p), &ct[..]);
            invalid_capacity(&r.read(&mut []).expect_err("empty read"), 0);
            invalid_capacity(&r.read(&mut [0u8; 8]).expect_err("read"), 0);
            invalid_capacity(&r.fill_buf().expect_err("fill_buf"), 0);
            assert_eq!(
                r.get_ref().len(),
                ct.len(),
                "{front:?}: the inner reader was read"
            );
        }
    }
}
