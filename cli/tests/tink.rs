//! Interop with real Google Tink (its Python package): keysets Tink makes,
//! files Tink encrypts decrypt with the command line, and files the command
//! line encrypts decrypt with Tink, for both streaming key types.
//!
//! Needs the virtual environment that `cli/tink-venv.sh` makes (or
//! `CIPHERIO_TINK_PYTHON` naming a Python with `tink`). Without it the
//! tests say so and pass, except under CI (`CI` set), where they fail.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use predicates::prelude::*;

fn tink_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CIPHERIO_TINK_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let p = target.join("tink-venv/bin/python");
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no Tink venv at {}: CI must run cli/tink-venv.sh first",
        p.display()
    );
    eprintln!(
        "SKIPPED: no Tink venv at {} (run cli/tink-venv.sh to make it)",
        p.display()
    );
    None
}

struct Tink(PathBuf);

impl Tink {
    fn run(&self, args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
        let mut c = Command::new(&self.0);
        c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tink_helper.py"));
        for a in args {
            c.arg(a);
        }
        c.output().expect("python runs")
    }

    fn ok(&self, args: &[&dyn AsRef<std::ffi::OsStr>]) {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tink_helper.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const AAD: &str = "tink interop";

fn aad_hex() -> String {
    AAD.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn tink_files_and_command_line_files_cross_over() {
    let Some(py) = tink_python() else { return };
    let tink = Tink(py);
    let s = Scratch::new();
    let hex = aad_hex();
    for template in [
        "AES128_GCM_HKDF_4KB",
        "AES256_GCM_HKDF_1MB",
        "AES128_CTR_HMAC_SHA256_4KB",
        "AES256_CTR_HMAC_SHA256_1MB",
    ] {
        let keyset = s.path(&format!("{template}.json"));
        tink.ok(&[&"keyset", &template, &keyset]);
        for (i, len) in [0usize, 1_500_000].into_iter().enumerate() {
            let p = data(len, i as u64);
            let plain = s.write("plain", &p);
            for f in ["by-tink", "by-cli", "out", "back"] {
                let _ = fs::remove_file(s.path(f));
            }
            // Tink -> command line.
            tink.ok(&[&"encrypt", &keyset, &hex, &plain, &s.path("by-tink")]);
            cipherio()
                .args(["decrypt", "--ad", AAD, "--tink-keyset"])
                .arg(&keyset)
                .arg("-o")
                .arg(s.path("out"))
                .arg(s.path("by-tink"))
                .assert()
                .code(OK);
            assert!(s.read("out") == p, "{template} {len}");
            cipherio()
                .args([
                    "verify",
                    "-q",
                    "--threads",
                    "2",
                    "--ad",
                    AAD,
                    "--tink-keyset",
                ])
                .arg(&keyset)
                .arg(s.path("by-tink"))
                .assert()
                .code(OK);
            if len > 0 {
                cipherio()
                    .args([
                        "cat",
                        "--range",
                        "1000000..1000100",
                        "--ad",
                        AAD,
                        "--tink-keyset",
                    ])
                    .arg(&keyset)
                    .arg(s.path("by-tink"))
                    .assert()
                    .code(OK)
                    .stdout(predicate::eq(p[1_000_000..1_000_100].to_vec()));
            }
            // Command line -> Tink.
            cipherio()
                .args(["encrypt", "--ad", AAD, "--tink-keyset"])
                .arg(&keyset)
                .arg("-o")
                .arg(s.path("by-cli"))
                .arg(&plain)
                .assert()
                .code(OK);
            tink.ok(&[
                &"decrypt",
                &keyset,
                &hex,
                &s.path("by-cli"),
                &s.path("back"),
            ]);
            assert!(s.read("back") == p, "{template} {len}");
            // Tink refuses what the command line refuses: a flipped byte.
            let mut bad = s.read("by-tink");
            let at = bad.len() / 2;
            bad[at] ^= 1;
            let bad = s.write("bad", &bad);
            cipherio()
                .args(["decrypt", "--ad", AAD, "--tink-keyset"])
                .arg(&keyset)
                .arg("-o")
                .arg(s.path("out2"))
                .arg(&bad)
                .assert()
                .code(UNAUTHENTIC);
            assert!(!s.path("out2").exists());
            let refused = tink.run(&[&"decrypt", &keyset, &hex, &bad, &s.path("out2")]);
            assert!(!refused.status.success(), "Tink accepted a flipped byte");
        }
    }
}

#[test]
fn a_rotated_tink_keyset_reads_files_of_its_older_keys() {
    let Some(py) = tink_python() else { return };
    let tink = Tink(py);
    let s = Scratch::new();
    let hex = aad_hex();
    let p = data(70_000, 9);
    let plain = s.write("plain", &p);
    let old = s.path("old.json");
    let new = s.path("new.json");
    tink.ok(&[&"keyset", &"AES128_GCM_HKDF_4KB", &old]);
    tink.ok(&[&"encrypt", &old, &hex, &plain, &s.path("old.ct")]);
    tink.ok(&[&"rotate", &old, &"AES256_CTR_HMAC_SHA256_4KB", &new]);
    // The old file through the new keyset: its second key opens it.
    cipherio()
        .args(["decrypt", "--ad", AAD, "--tink-keyset"])
        .arg(&new)
        .arg(s.path("old.ct"))
        .assert()
        .code(OK)
        .stdout(predicate::eq(p.clone()));
    // The new keyset encrypts with its new primary: the old one cannot
    // read that, Tink with the new keyset can.
    cipherio()
        .args(["encrypt", "--ad", AAD, "--tink-keyset"])
        .arg(&new)
        .arg("-o")
        .arg(s.path("new.ct"))
        .arg(&plain)
        .assert()
        .code(OK);
    cipherio()
        .args(["decrypt", "--ad", AAD, "--tink-keyset"])
        .arg(&old)
        .arg(s.path("new.ct"))
        .assert()
        .code(UNAUTHENTIC);
    tink.ok(&[&"decrypt", &new, &hex, &s.path("new.ct"), &s.path("back")]);
    assert!(s.read("back") == p);
    let refused = tink.run(&[&"decrypt", &old, &hex, &s.path("new.ct"), &s.path("back2")]);
    assert!(!refused.status.success());
}
