//! The small public surface: keys, errors, Debug output, the header type.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, Read, Write};

use cipherio::format::{HEADER_LEN, Header};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key};
use common::{Front, ScriptReader};

const KEY_BYTES: [u8; 32] = [0x3c; 32];

#[test]
fn key_lengths_are_checked() {
    assert!(Key::new(Algorithm::Aes128Gcm, &KEY_BYTES[..16]).is_ok());
    assert!(matches!(
        Key::new(Algorithm::Aes128Gcm, &KEY_BYTES).unwrap_err(),
        Error::InvalidKeyLength {
            expected: 16,
            actual: 32,
            ..
        }
    ));
    for alg in [Algorithm::Aes256Gcm, Algorithm::ChaCha20Poly1305] {
        assert!(Key::new(alg, &KEY_BYTES).is_ok());
        assert!(matches!(
            Key::new(alg, &KEY_BYTES[..31]).unwrap_err(),
            Error::InvalidKeyLength {
                expected: 32,
                actual: 31,
                ..
            }
        ));
    }
    assert_eq!(Key::generate(Algorithm::Aes128Gcm).as_bytes().len(), 16);
    assert_eq!(Key::generate(Algorithm::Aes256Gcm).as_bytes().len(), 32);
}

#[test]
fn hex_keys_decode_or_say_why() {
    let hex = "000102030405060708090a0b0c0d0e0F";
    let k = Key::from_hex(Algorithm::Aes128Gcm, hex).unwrap();
    assert_eq!(k.as_bytes(), (0u8..16).collect::<Vec<_>>());
    assert_eq!(
        Key::from_hex(Algorithm::Aes128Gcm, "zz").unwrap_err(),
        Error::InvalidHex
    );
    assert!(matches!(
        Key::from_hex(Algorithm::Aes256Gcm, hex).unwrap_err(),
        Error::InvalidKeyLength {
            expected: 32,
            actual: 16,
            ..
        }
    ));
}

#[test]
fn generated_keys_differ() {
    let a = Key::generate(Algorithm::Aes256Gcm);
    let b = Key::generate(Algorithm::Aes256Gcm);
    assert_ne!(a.as_bytes(), b.as_bytes());
}

#[test]
fn debug_prints_no_key_or_plaintext_bytes() {
    let key = Key::new(Algorithm::Aes256Gcm, &KEY_BYTES).unwrap();
    let dbg = format!("{key:?}");
    assert!(dbg.contains("Aes256Gcm"), "{dbg}");
    for needle in ["3c", "60", "0x3c"] {
        assert!(!dbg.contains(needle), "{dbg}");
    }

    let secret = b"SECRETSECRETSECRET";
    let mut w = CipherWriter::new(&key, Vec::new());
    w.write_all(secret).unwrap();
    let dbg = format!("{w:?}");
    assert!(dbg.contains("buffered: 18"), "{dbg}");
    assert!(!dbg.contains("83, 69, 67"), "plaintext bytes in {dbg}");
    assert!(!dbg.contains("SECRET"), "{dbg}");
    let ct = w.finish().unwrap();

    let mut r = CipherReader::new(&key, &ct[..]);
    let mut first = [0u8; 4];
    r.read_exact(&mut first).unwrap();
    let dbg = format!("{r:?}");
    assert!(dbg.contains("buffered: 14"), "{dbg}");
    assert!(
        !dbg.contains("SECRET") && !dbg.contains("67, 82, 69"),
        "{dbg}"
    );
}

#[test]
fn errors_carry_kind_and_downcast() {
    let cases = [
        (Error::Authentication, io::ErrorKind::InvalidData),
        (Error::BadMagic, io::ErrorKind::InvalidData),
        (Error::TrailingData, io::ErrorKind::InvalidData),
        (Error::Truncated, io::ErrorKind::UnexpectedEof),
        (Error::InvalidCapacity(0), io::ErrorKind::InvalidInput),
        (Error::Finished, io::ErrorKind::InvalidInput),
    ];
    for (e, kind) in cases {
        let io_err: io::Error = e.clone().into();
        assert_eq!(io_err.kind(), kind, "{e}");
        assert_eq!(Error::from_io(&io_err), Some(&e));
        assert!(io_err.to_string().starts_with("cipherio: "), "{io_err}");
    }
    // An error that is not ours is not mistaken for one.
    let other = io::Error::new(io::ErrorKind::InvalidData, "x");
    assert_eq!(Error::from_io(&other), None);
}

#[test]
fn authentication_failure_is_opaque() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let mut w = CipherWriter::new(&key, Vec::new());
    w.write_all(b"hello").unwrap();
    let ct = w.finish().unwrap();
    let wrong = Key::generate(Algorithm::Aes128Gcm);
    let err = CipherReader::new(&wrong, &ct[..])
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert_eq!(Error::from_io(&err), Some(&Error::Authentication));
    assert_eq!(err.to_string(), "cipherio: segment failed to authenticate");
}

#[test]
fn the_stream_header_is_public_and_matches_the_writer() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let w = CipherWriter::with_capacity(1234, &key, Vec::new());
    let ct = w.finish().unwrap();
    assert_eq!(
        ct.len(),
        HEADER_LEN + 16,
        "empty stream: header and one tag"
    );
    let h = Header::parse(&ct).unwrap();
    assert_eq!(h.algorithm, Algorithm::ChaCha20Poly1305);
    assert_eq!(h.segment_size, 1234);
    assert_eq!(h.to_bytes()[..], ct[..HEADER_LEN]);

    // Salt and nonce prefix are fresh for every stream.
    let ct2 = CipherWriter::with_capacity(1234, &key, Vec::new())
        .finish()
        .unwrap();
    let h2 = Header::parse(&ct2).unwrap();
    assert_ne!(h.salt, h2.salt);
    assert_ne!(h.nonce_prefix, h2.nonce_prefix);
}

#[test]
fn algorithm_ids_round_trip() {
    for &alg in Algorithm::ALL {
        assert_eq!(Algorithm::from_id(alg.id()), Some(alg));
    }
    assert_eq!(Algorithm::from_id(0), None);
    assert_eq!(Algorithm::from_id(4), None);
}

#[test]
fn builders_debug_shows_associated_data_length_not_bytes() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let aad = b"payroll/2026-11.csv";
    let wb = CipherWriter::builder(&key).associated_data(aad);
    let rb = CipherReader::builder(&key).associated_data(aad);
    for dbg in [format!("{wb:?}"), format!("{rb:?}")] {
        assert!(dbg.contains("associated_data_len: 19"), "{dbg}");
        assert!(
            !dbg.contains("payroll") && !dbg.contains("112, 97"),
            "{dbg}"
        );
    }
}

#[test]
fn writer_capacity_is_bounded_so_default_readers_read_every_stream() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    for cap in [0, cipherio::format::MAX_WRITER_CAPACITY + 1, usize::MAX] {
        let mut w = CipherWriter::with_capacity(cap, &key, Vec::new());
        for _ in 0..2 {
            let err = w.write(b"x").unwrap_err();
            assert_eq!(Error::from_io(&err), Some(&Error::InvalidCapacity(cap)));
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        assert!(w.try_finish().is_err());
    }
    // The largest allowed capacity is read by a default reader.
    let cap = cipherio::format::MAX_WRITER_CAPACITY;
    let mut w = CipherWriter::with_capacity(cap, &key, Vec::new());
    w.write_all(&vec![9u8; cap + 1]).unwrap();
    let ct = w.finish().unwrap();
    let mut out = Vec::new();
    CipherReader::new(&key, &ct[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, vec![9u8; cap + 1]);
}

#[test]
fn an_unallocatable_reader_capacity_is_an_error_not_a_panic() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let ct = CipherWriter::new(&key, Vec::new()).finish().unwrap();
    for cap in [0, usize::MAX, usize::MAX / 2] {
        let mut r = CipherReader::with_capacity(cap, &key, &ct[..]);
        let err = r.read(&mut [0u8; 16]).unwrap_err();
        let kind = err.kind();
        assert!(
            matches!(
                Error::from_io(&err),
                Some(Error::InvalidCapacity(0) | Error::Allocation(_))
            ),
            "{err}"
        );
        assert!(matches!(
            kind,
            io::ErrorKind::InvalidInput | io::ErrorKind::OutOfMemory
        ));
        assert_eq!(r.read(&mut [0u8; 16]).unwrap_err().kind(), kind, "sticky");
    }
}

#[test]
fn an_empty_read_does_no_inner_io() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let mut w = CipherWriter::with_capacity(16, &key, Vec::new());
    w.write_all(&[5u8; 32]).unwrap(); // the final segment is full-length
    let ct = w.finish().unwrap();
    for &front in Front::ALL {
        let mut r = front.reader_with_capacity(4096, &key, ScriptReader::new(&ct));
        let mut out = [0u8; 64];
        assert_eq!(r.read(&mut out).unwrap(), 32, "{front:?}");
        // The end of the stream is not confirmed yet; an empty read must
        // not go and confirm it (on a socket it would block).
        let calls = r.get_ref().calls;
        assert_eq!(r.read(&mut []).unwrap(), 0, "{front:?}");
        assert_eq!(r.get_ref().calls, calls, "{front:?}");
        assert_eq!(r.read(&mut out).unwrap(), 0, "{front:?}");
    }
}

/// Only a byte written after a full buffer proves that the buffered
/// segment is not the final one: `flush` sends what is sealed, no more.
#[test]
fn flush_sends_sealed_segments_and_holds_the_last_full_one() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64;
    let mut w = CipherWriter::with_capacity(seg, &key, Vec::new());
    w.write_all(&[1u8; 3 * 64]).unwrap();
    w.flush().unwrap();
    assert_eq!(w.get_ref().len(), HEADER_LEN + 2 * (seg + 16));
    w.write_all(&[1u8]).unwrap();
    w.flush().unwrap();
    assert_eq!(w.get_ref().len(), HEADER_LEN + 3 * (seg + 16));
    let ct = w.finish().unwrap();
    assert_eq!(ct.len(), HEADER_LEN + 3 * (seg + 16) + 1 + 16);
}

// ---------------------------------------------------------------------------
// Added by the test review: each of these fails under a mutation the suite
// above lets through (see the review report).

/// Each unallocatable capacity gets its own error and kind, not "one of".
#[test]
fn reader_capacity_errors_are_exact() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let ct = CipherWriter::new(&key, Vec::new()).finish().unwrap();
    let mut r = CipherReader::with_capacity(0, &key, &ct[..]);
    let err = r.read(&mut [0u8; 16]).unwrap_err();
    assert_eq!(Error::from_io(&err), Some(&Error::InvalidCapacity(0)));
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    for cap in [usize::MAX, usize::MAX / 2] {
        let mut r = CipherReader::with_capacity(cap, &key, &ct[..]);
        let err = r.read(&mut [0u8; 16]).unwrap_err();
        assert!(
            matches!(Error::from_io(&err), Some(Error::Allocation(_))),
            "{err}"
        );
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
    }
}

/// An inner reader/writer whose `Debug` prints nothing, so that only the
/// adapter's own fields are inspected.
struct Opaque<T>(T);

impl<T> std::fmt::Debug for Opaque<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opaque")
    }
}

impl<T: Read> Read for Opaque<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<T: Write> Write for Opaque<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `dbg` spells no 4-byte piece of `secret` in any encoding a `Debug`
/// impl is likely to use: raw text, decimal list, hex in either case.
fn assert_no_bytes(what: &str, dbg: &str, secret: &[u8]) {
    let lower = dbg.to_ascii_lowercase();
    for w in secret.windows(4) {
        let dec = format!("{}, {}, {}, {}", w[0], w[1], w[2], w[3]);
        let hex: String = w.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!dbg.contains(&dec), "{what}: decimal bytes in {dbg}");
        assert!(!lower.contains(&hex), "{what}: hex bytes in {dbg}");
        if let Ok(s) = std::str::from_utf8(w) {
            assert!(!dbg.contains(s), "{what}: raw bytes in {dbg}");
        }
    }
}

/// `Debug` never prints a secret, for every public type that holds one, whatever the
/// encoding (the existing tests look for one uniform key byte in lower-case
/// hex and decimal only, and for associated data in decimal only).
#[test]
fn debug_never_prints_secret_bytes_in_any_encoding() {
    let key_bytes: Vec<u8> = (0u8..32).map(|i| 0x80 | i.wrapping_mul(37)).collect();
    let aad = b"payroll/2026-11.csv";
    let pt = b"SECRET-PLAINTEXT-0123456789";
    for &alg in Algorithm::ALL {
        let key = Key::new(alg, &key_bytes[..alg.key_len()]).unwrap();
        let kb = key.as_bytes();
        assert_no_bytes("Key", &format!("{key:?}"), kb);
        let wb = CipherWriter::builder(&key)
            .capacity(64)
            .associated_data(aad);
        let rb = CipherReader::builder(&key).associated_data(aad);
        for (what, dbg) in [
            ("WriterBuilder", format!("{wb:?}")),
            ("ReaderBuilder", format!("{rb:?}")),
        ] {
            assert_no_bytes(what, &dbg, kb);
            assert_no_bytes(what, &dbg, aad);
        }
        let mut w = wb.build(Opaque(Vec::new()));
        assert_no_bytes("CipherWriter before a write", &format!("{w:?}"), kb);
        w.write_all(pt).unwrap();
        let dbg = format!("{w:?}");
        assert!(dbg.contains("buffered: 27"), "{dbg}");
        for secret in [kb, &aad[..], &pt[..]] {
            assert_no_bytes("CipherWriter", &dbg, secret);
        }
        let ct = w.finish().unwrap().0;
        let mut r = rb.build(Opaque(&ct[..]));
        assert_no_bytes("CipherReader before a read", &format!("{r:?}"), kb);
        let mut first = [0u8; 3];
        r.read_exact(&mut first).unwrap();
        let dbg = format!("{r:?}");
        assert!(dbg.contains("buffered: 24"), "{dbg}");
        for secret in [kb, &aad[..], &pt[..]] {
            assert_no_bytes("CipherReader", &dbg, secret);
        }
    }
}

/// The buffer is the knob: 8 KiB is the default, for the writer's segments (in the
/// header) and the reader's read-ahead (its first inner read asks for it).
#[test]
fn the_default_buffer_is_8_kib() {
    assert_eq!(cipherio::DEFAULT_CAPACITY, 8 * 1024);
    let key = Key::generate(Algorithm::Aes128Gcm);
    let w = CipherWriter::new(&key, Vec::new());
    assert_eq!(w.capacity(), 8192);
    let ct = w.finish().unwrap();
    assert_eq!(Header::parse(&ct).unwrap().segment_size, 8192);
    struct FirstAsk<'a>(&'a [u8], Option<usize>);
    impl Read for FirstAsk<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1.get_or_insert(buf.len());
            self.0.read(buf)
        }
    }
    let mut r = CipherReader::new(&key, FirstAsk(&ct, None));
    assert_eq!(r.capacity(), 8192);
    assert_eq!(r.read(&mut [0u8; 1]).unwrap(), 0);
    // The first inner read has room for the header and a full read-ahead.
    assert_eq!(r.get_ref().1, Some(8192 + HEADER_LEN));
}

/// Keys behind references and smart pointers build writers and readers of
/// the same format as the key itself; `AesGcmHkdfKey::generate` makes fresh keys
/// of the derived key size.
#[test]
fn keys_work_through_pointers_and_tink_keys_generate() {
    use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams};
    use std::rc::Rc;
    use std::sync::Arc;

    let key = Arc::new(Key::generate(Algorithm::ChaCha20Poly1305));
    let mut w = CipherWriter::new(&key, Vec::new());
    w.write_all(b"through an Arc").unwrap();
    let ct = w.finish().unwrap();
    assert_eq!(
        Header::parse(&ct).unwrap().algorithm,
        Algorithm::ChaCha20Poly1305
    );
    let boxed = Box::new((*key).clone());
    let mut out = String::new();
    CipherReader::new(&boxed, &ct[..])
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, "through an Arc");

    for params in [
        AesGcmHkdfParams::AES128_GCM_HKDF_4KB,
        AesGcmHkdfParams::AES256_GCM_HKDF_1MB,
    ] {
        let a = AesGcmHkdfKey::generate(params);
        let b = AesGcmHkdfKey::generate(params);
        assert_eq!(a.as_bytes().len(), params.derived_key_size());
        assert_ne!(a.as_bytes(), b.as_bytes());
        let a = Rc::new(a);
        let mut w = CipherWriter::new(&&a, Vec::new());
        w.write_all(b"tink").unwrap();
        let ct = w.finish().unwrap();
        // A Tink header: its first byte is its length.
        assert_eq!(usize::from(ct[0]), params.header_len());
        let mut out = Vec::new();
        CipherReader::new(&a, &ct[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"tink");
        let e = CipherReader::new(&b, &ct[..]).read_to_end(&mut Vec::new());
        assert_eq!(
            Error::from_io(&e.unwrap_err()),
            Some(&Error::Authentication)
        );
    }
    let short = AesGcmHkdfKey::new(AesGcmHkdfParams::AES256_GCM_HKDF_4KB, &[1; 20]).unwrap_err();
    assert!(
        matches!(
            short,
            Error::KeyTooShort {
                minimum: 32,
                actual: 20,
                ..
            }
        ),
        "{short:?}"
    );
    assert!(short.to_string().contains("at least 32"), "{short}");
    assert_eq!(short.kind(), io::ErrorKind::InvalidInput);
}
