//! The command line against the library, both ways: streams written by
//! `CipherWriter` decrypt with the command line, and files it encrypts
//! read with `CipherReader` (also at random offsets). Native keys and Tink
//! keys, the latter through a keyset file written here.

mod common;

use std::fs;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};

use base64::Engine;
use cipherio::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
use common::*;
use predicates::prelude::*;

fn algorithm(name: &str) -> Algorithm {
    match name {
        "aes128gcm" => Algorithm::Aes128Gcm,
        "aes256gcm" => Algorithm::Aes256Gcm,
        "chacha20poly1305" => Algorithm::ChaCha20Poly1305,
        other => panic!("unknown algorithm {other}"),
    }
}

fn library_key(s: &Scratch) -> Key {
    let (alg, hex) = key_parts(&s.key());
    Key::from_hex(algorithm(&alg), &hex).expect("the key file's key")
}

#[test]
fn library_streams_decrypt_with_the_command_line() {
    for alg in ["aes128gcm", "aes256gcm", "chacha20poly1305"] {
        let s = Scratch::with_algorithm(alg);
        let key = library_key(&s);
        let p = data(150_000, 1);
        for (capacity, threads, framed) in [(4096, 1, false), (100_000, 2, false), (8192, 1, true)]
        {
            let mut b = CipherWriter::builder(&key)
                .capacity(capacity)
                .threads(threads)
                .threads_after(0)
                .associated_data(b"lib");
            if framed {
                b = b.framed();
            }
            let mut w = b.build(Vec::new());
            for chunk in p.chunks(7000) {
                w.write_all(chunk).expect("write");
                if framed {
                    w.flush().expect("flush");
                }
            }
            let ct = s.write("ct", &w.finish().expect("finish"));
            cipherio()
                .args(["decrypt", "--ad", "lib", "-k"])
                .arg(s.key())
                .arg(&ct)
                .assert()
                .code(OK)
                .stdout(predicate::eq(p.clone()));
            let format = if framed { "cipherio v2" } else { "cipherio v1" };
            cipherio()
                .args(["inspect"])
                .arg(&ct)
                .assert()
                .code(OK)
                .stdout(predicate::str::contains(format));
        }
    }
}

#[test]
fn command_line_files_read_with_the_library() {
    let s = Scratch::with_algorithm("chacha20poly1305");
    let key = library_key(&s);
    let p = data(1 << 20, 2);
    let ct = s.encrypt(&p, "ct", &["--ad", "cli", "--segment-size", "16K"]);
    let mut r = CipherReader::builder(&key)
        .associated_data(b"cli")
        .build(fs::File::open(&ct).expect("ct"));
    assert_eq!(r.plaintext_len().expect("length"), p.len() as u64);
    r.seek(SeekFrom::Start(500_000)).expect("seek");
    let mut some = vec![0u8; 40_000];
    r.read_exact(&mut some).expect("read");
    assert!(some[..] == p[500_000..540_000]);
    r.seek(SeekFrom::Start(0)).expect("seek");
    let mut all = Vec::new();
    r.read_to_end(&mut all).expect("read all");
    assert!(all == p);
    // Without the associated data it does not open.
    let mut r = CipherReader::new(&key, fs::File::open(&ct).expect("ct"));
    let err = r
        .read_to_end(&mut Vec::new())
        .expect_err("no associated data");
    assert_eq!(
        cipherio::Error::from_io(&err),
        Some(&cipherio::Error::Authentication)
    );
}

// A Tink keyset file written here from known key bytes: the serialized key
// (protobuf) inside Tink's JSON keyset format.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_bytes(out: &mut Vec<u8>, num: u64, bytes: &[u8]) {
    varint(out, num << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn field_int(out: &mut Vec<u8>, num: u64, v: u64) {
    varint(out, num << 3);
    varint(out, v);
}

/// `(type name, serialized key)` of a Tink streaming key; `hmac` is
/// `(hash type, tag size)` for an AES-CTR-HMAC key.
fn tink_key_proto(
    raw: &[u8],
    dks: u64,
    css: u64,
    hmac: Option<(u64, u64)>,
) -> (&'static str, Vec<u8>) {
    let mut params = Vec::new();
    field_int(&mut params, 1, css);
    field_int(&mut params, 2, dks);
    field_int(&mut params, 3, 3); // SHA256
    if let Some((hash, tag)) = hmac {
        let mut h = Vec::new();
        field_int(&mut h, 1, hash);
        field_int(&mut h, 2, tag);
        field_bytes(&mut params, 4, &h);
    }
    let mut key = Vec::new();
    field_bytes(&mut key, 2, &params);
    field_bytes(&mut key, 3, raw);
    let name = if hmac.is_some() {
        "AesCtrHmacStreamingKey"
    } else {
        "AesGcmHkdfStreamingKey"
    };
    (name, key)
}

fn keyset_json(primary: u32, keys: &[(u32, &str, Vec<u8>)]) -> String {
    let entries: Vec<String> = keys
        .iter()
        .map(|(id, name, proto)| {
            format!(
                r#"{{"keyData": {{"typeUrl": "type.googleapis.com/google.crypto.tink.{name}",
                   "value": "{}", "keyMaterialType": "SYMMETRIC"}},
                   "status": "ENABLED", "keyId": {id}, "outputPrefixType": "RAW"}}"#,
                base64::engine::general_purpose::STANDARD.encode(proto)
            )
        })
        .collect();
    format!(
        r#"{{"primaryKeyId": {primary}, "key": [{}]}}"#,
        entries.join(",")
    )
}

#[test]
fn tink_keysets_work_both_ways_with_the_library() {
    let s = Scratch::new();
    let gcm_raw = data(16, 5);
    let ctr_raw = data(32, 6);
    let gcm = AesGcmHkdfKey::new(
        AesGcmHkdfParams::new(16, 4096, HkdfHash::Sha256).expect("params"),
        &gcm_raw,
    )
    .expect("key");
    let ctr = AesCtrHmacKey::new(
        AesCtrHmacParams::new(32, 8192, HkdfHash::Sha256, HmacHash::Sha256, 32).expect("params"),
        &ctr_raw,
    )
    .expect("key");
    let (gname, gproto) = tink_key_proto(&gcm_raw, 16, 4096, None);
    let (cname, cproto) = tink_key_proto(&ctr_raw, 32, 8192, Some((3, 32)));
    // The CTR-HMAC key is primary; the GCM key is still there for reading.
    let keyset = s.write(
        "keyset.json",
        keyset_json(
            77,
            &[(5, gname, gproto.clone()), (77, cname, cproto.clone())],
        )
        .as_bytes(),
    );
    let p = data(50_000, 7);

    // Library -> command line, with either key of the set.
    let mut w = CipherWriter::builder(&gcm)
        .associated_data(b"t")
        .build(Vec::new());
    w.write_all(&p).expect("write");
    let by_gcm = s.write("gcm.ct", &w.finish().expect("finish"));
    let mut w = CipherWriter::builder(&ctr)
        .associated_data(b"t")
        .build(Vec::new());
    w.write_all(&p).expect("write");
    let by_ctr = s.write("ctr.ct", &w.finish().expect("finish"));
    for ct in [&by_gcm, &by_ctr] {
        cipherio()
            .args(["decrypt", "--ad", "t", "--tink-keyset"])
            .arg(&keyset)
            .arg(ct)
            .assert()
            .code(OK)
            .stdout(predicate::eq(p.clone()));
        cipherio()
            .args([
                "cat",
                "--range",
                "40000..40010",
                "--ad",
                "t",
                "--tink-keyset",
            ])
            .arg(&keyset)
            .arg(ct)
            .assert()
            .code(OK)
            .stdout(predicate::eq(p[40_000..40_010].to_vec()));
        cipherio()
            .args(["decrypt", "--ad", "u", "--tink-keyset"])
            .arg(&keyset)
            .arg(ct)
            .assert()
            .code(UNAUTHENTIC);
    }
    // A keyset with only the GCM key does not read the CTR-HMAC stream.
    let only_gcm = s.write("gcm.json", keyset_json(5, &[(5, gname, gproto)]).as_bytes());
    cipherio()
        .args(["decrypt", "--ad", "t", "--tink-keyset"])
        .arg(&only_gcm)
        .arg(&by_ctr)
        .assert()
        .code(UNAUTHENTIC);

    // Command line -> library: the primary (CTR-HMAC) key encrypts.
    let out = cipherio()
        .args(["encrypt", "--ad", "t", "--tink-keyset"])
        .arg(&keyset)
        .write_stdin(p.clone())
        .assert()
        .code(OK)
        .get_output()
        .stdout
        .clone();
    let mut r = CipherReader::builder(&ctr)
        .associated_data(b"t")
        .build(Cursor::new(out));
    let mut back = Vec::new();
    r.read_to_end(&mut back).expect("the library reads it");
    assert!(back == p);
    cipherio()
        .args(["encrypt", "--segment-size", "4096", "--tink-keyset"])
        .arg(&keyset)
        .write_stdin("x")
        .assert()
        .code(USAGE);
}
