//! Cobblestone keys (C2SP chunked encryption) through the command line:
//! key files and keygen, round trips, files shared with the library's
//! `CobblestoneKey` both ways, wrong keys and contexts, ranged reads, and
//! the options that do not apply.

mod common;

use std::fs;
use std::io::{Read, Write};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::{CipherReader, CipherWriter};
use common::*;
use predicates::prelude::*;
use predicates::str::contains;

const INSTANTIATIONS: [(&str, Instantiation, &str); 2] = [
    (
        "cobblestone128",
        Instantiation::Cobblestone128,
        "Cobblestone-128",
    ),
    (
        "cobblestone256",
        Instantiation::Cobblestone256,
        "Cobblestone-256",
    ),
];

/// Salt (24 bytes) and key commitment (32) before the chunks.
const PREFIX: usize = 24 + 32;
/// The AES-GCM tag after each chunk.
const TAG: usize = 16;

/// The scratch key file's key, as the library reads it.
fn library_key(s: &Scratch, inst: Instantiation) -> CobblestoneKey {
    let (_, hex) = key_parts(&s.key());
    CobblestoneKey::from_hex(inst, &hex).expect("the key file's key")
}

/// A Cobblestone stream's length for `n` plaintext bytes: every chunk full
/// but the last, which is always shorter (possibly empty).
fn sealed_len(n: usize) -> usize {
    PREFIX + n + (n / CHUNK_SIZE + 1) * TAG
}

#[test]
fn keygen_writes_a_loadable_cobblestone_key() {
    for (name, inst, _) in INSTANTIATIONS {
        let s = Scratch::with_algorithm(name);
        assert_eq!(mode(&s.key()), 0o600);
        let (alg, hex) = key_parts(&s.key());
        assert_eq!(alg, name);
        assert_eq!(hex.len(), 2 * inst.key_len());
        library_key(&s, inst);
        // To standard output, the same format.
        let out = cipherio()
            .args(["keygen", "--algorithm", name])
            .assert()
            .code(OK)
            .get_output()
            .stdout
            .clone();
        let line = format!("cipherio-key-v1 {name} ");
        assert!(String::from_utf8_lossy(&out).contains(&line));
    }
}

#[test]
fn cobblestone_round_trips_through_the_binary() {
    for (name, _, label) in INSTANTIATIONS {
        let s = Scratch::with_algorithm(name);
        for n in [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, 3 * CHUNK_SIZE + 5] {
            let p = data(n, n as u64);
            let ct = s.encrypt(&p, "ct", &["--ad", "app/context", "-f"]);
            assert_eq!(
                fs::read(&ct).expect("ct").len(),
                sealed_len(n),
                "{name} {n}"
            );
            for threads in ["1", "2"] {
                cipherio()
                    .args(["decrypt", "--ad", "app/context", "-j", threads, "-k"])
                    .arg(s.key())
                    .arg(&ct)
                    .assert()
                    .code(OK)
                    .stdout(predicate::eq(p.clone()));
            }
            cipherio()
                .args(["verify", "--ad-hex", "6170702f636f6e74657874", "-k"])
                .arg(s.key())
                .arg(&ct)
                .assert()
                .code(OK)
                .stderr(contains(format!("{n} bytes of plaintext")).and(contains(label)));
        }
    }
}

#[test]
fn cobblestone_files_are_shared_with_the_library_both_ways() {
    for (name, inst, _) in INSTANTIATIONS {
        let s = Scratch::with_algorithm(name);
        let key = library_key(&s, inst);
        let p = data(5 * CHUNK_SIZE + 321, 7);

        // Written by the command line, read by the library.
        let ct = s.encrypt(&p, "cli", &["--ad", "ctx", "-j", "2"]);
        let mut back = Vec::new();
        CipherReader::builder(&key)
            .associated_data(b"ctx")
            .build(fs::File::open(&ct).expect("open"))
            .read_to_end(&mut back)
            .expect("the library opens the command line's file");
        assert_eq!(back, p);

        // Written by the library, read by the command line.
        let mut w = CipherWriter::builder(&key)
            .associated_data(b"ctx")
            .build(Vec::new());
        for piece in p.chunks(7000) {
            w.write_all(piece).expect("write");
        }
        let lib = s.write("lib", &w.finish().expect("finish"));
        cipherio()
            .args(["decrypt", "--ad", "ctx", "-k"])
            .arg(s.key())
            .arg(&lib)
            .assert()
            .code(OK)
            .stdout(predicate::eq(p.clone()));
    }
}

#[test]
fn a_wrong_key_or_context_is_unauthentic_and_writes_nothing() {
    let s = Scratch::with_algorithm("cobblestone128");
    let p = data(2 * CHUNK_SIZE + 9, 3);
    let ct = s.encrypt(&p, "ct", &["--ad", "ctx"]);
    let other = Scratch::with_algorithm("cobblestone128");
    let native = Scratch::with_algorithm("aes128gcm");
    let wider = Scratch::with_algorithm("cobblestone256");
    for (key, ad) in [
        (s.key(), "other"),
        (s.key(), ""),
        (other.key(), "ctx"),
        (native.key(), "ctx"),
        (wider.key(), "ctx"),
    ] {
        for command in ["decrypt", "verify"] {
            let mut c = cipherio();
            c.args([command, "--ad", ad, "-k"]).arg(&key).arg(&ct);
            if command == "decrypt" {
                c.arg("-o").arg(s.path("out"));
            }
            c.assert()
                .code(UNAUTHENTIC)
                .stdout(predicate::str::is_empty());
            assert_eq!(s.names(), ["ct", "key"], "{command} --ad {ad:?}");
        }
    }
}

#[test]
fn cat_reads_a_range_of_a_multi_chunk_cobblestone_file() {
    for (name, _, _) in INSTANTIATIONS {
        let s = Scratch::with_algorithm(name);
        let p = data(4 * CHUNK_SIZE + 100, 11);
        let ct = s.encrypt(&p, "ct", &["--ad", "ctx"]);
        let c = CHUNK_SIZE;
        for (a, b) in [
            (0, p.len()),
            (c - 3, c + 3),
            (c, 2 * c),
            (2 * c + 1, 4 * c + 50),
            (4 * c + 100, 4 * c + 100),
        ] {
            cipherio()
                .args(["cat", "--ad", "ctx", "--range", &format!("{a}..{b}"), "-k"])
                .arg(s.key())
                .arg(&ct)
                .assert()
                .code(OK)
                .stdout(predicate::eq(p[a..b].to_vec()));
        }
        cipherio()
            .args(["cat", "--ad", "nope", "--range", "0..10", "-k"])
            .arg(s.key())
            .arg(&ct)
            .assert()
            .code(UNAUTHENTIC)
            .stdout(predicate::str::is_empty());
    }
}

#[test]
fn a_segment_size_is_refused_with_a_cobblestone_key() {
    let s = Scratch::with_algorithm("cobblestone256");
    cipherio()
        .args(["encrypt", "--segment-size", "16K", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(s.path("ct"))
        .write_stdin("hello")
        .assert()
        .code(USAGE)
        .stderr(contains("--segment-size").and(contains("Cobblestone")));
    assert_eq!(s.names(), ["key"]);
}

#[test]
fn inspect_says_a_cobblestone_stream_has_no_magic_bytes() {
    let s = Scratch::with_algorithm("cobblestone128");
    let ct = s.encrypt(&data(100, 5), "ct", &[]);
    let mut ct = fs::read(ct).expect("ct");
    // Its first byte is random: one that looks like a Tink header length
    // is named as a possible Cobblestone stream too.
    for first in [0, 24] {
        ct[0] = first;
        let out = cipherio()
            .args(["inspect"])
            .write_stdin(ct.clone())
            .output()
            .expect("run");
        let said = [out.stdout, out.stderr].concat();
        assert!(
            String::from_utf8_lossy(&said).contains("Cobblestone stream"),
            "first byte {first}"
        );
    }
}
