//! Reading key files: what a message about a bad key may say, a warning
//! for a key others may read, and the text editors' byte order mark.

mod common;

use std::fs::{self, Permissions};
use std::os::unix::fs::PermissionsExt;

use common::*;
use predicates::prelude::*;
use predicates::str::contains;

#[test]
fn no_message_about_a_bad_key_line_shows_the_key() {
    let s = Scratch::new();
    let ct = s.encrypt(b"secret", "ct", &[]);
    let (alg, hex) = key_parts(&s.key());
    for line in [
        format!("cipherio-key-v1 {hex} {alg}"),
        format!("cipherio-key-v1 {alg} {hex} {alg}"),
        format!("cipherio-key-v1 {alg} {hex}z"),
        format!("cipherio-key-v1 {alg} {}", &hex[2..]),
        format!("cipherio-key-v2 {alg} {hex}"),
        format!("{hex} {alg} cipherio-key-v1"),
        format!("{hex}\n{hex}"),
    ] {
        s.write_private("bad.key", line.as_bytes());
        for source in [vec!["-k", "bad.key"], vec!["--key-env", "KEY"]] {
            let out = cipherio()
                .current_dir(s.dir.path())
                .args(["decrypt"])
                .args(&source)
                .arg(&ct)
                .env("KEY", &line)
                .assert()
                .code(ERROR)
                .get_output()
                .clone();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("bad key"), "{line}: {err}");
            // Not the key, nor any 8 hex digits of it.
            assert!(!shows_some_of(&err, &hex), "{line}: {err}");
        }
    }
}

/// Whether `err` holds 8 hex digits in a row of `hex`.
fn shows_some_of(err: &str, hex: &str) -> bool {
    hex.as_bytes()
        .windows(8)
        .any(|part| err.contains(std::str::from_utf8(part).expect("hex")))
}

#[test]
fn a_key_given_where_its_name_belongs_is_not_shown() {
    // `--key-env "$KEY"` for `--key-env KEY`, `-k "$(cat my.key)"`: the
    // name the message would quote is the key.
    let s = Scratch::new();
    let ct = s.encrypt(b"secret", "ct", &[]);
    let (alg, hex) = key_parts(&s.key());
    let line = format!("cipherio-key-v1 {alg} {hex}");
    let text = fs::read_to_string(s.key()).expect("key");
    let digits: String = hex.chars().filter(char::is_ascii_digit).collect();
    for value in [line.as_str(), text.as_str(), hex.as_str()] {
        for (option, code) in [
            ("--key-env", ERROR),
            ("-k", ERROR),
            ("--tink-keyset", ERROR),
            ("--key-fd", USAGE),
        ] {
            let out = cipherio()
                .args(["decrypt", option, value])
                .arg(&ct)
                .assert()
                .code(code)
                .get_output()
                .clone();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!shows_some_of(&err, &hex), "{option}: {err}");
        }
    }
    // A descriptor number made of the key's digits alone.
    let out = cipherio()
        .args(["decrypt", "--key-fd", &digits])
        .arg(&ct)
        .assert()
        .code(USAGE)
        .get_output()
        .clone();
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&digits[..8]));
}

#[test]
fn a_key_file_others_may_read_is_used_with_a_warning() {
    let s = Scratch::new();
    let ct = s.encrypt(b"secret", "ct", &[]);
    for m in [0o600, 0o644, 0o640, 0o604] {
        fs::set_permissions(s.key(), Permissions::from_mode(m)).expect("chmod");
        let warned = contains("warning")
            .and(contains(format!("mode {m:04o}")))
            .and(contains("chmod 600"));
        let stderr = if m == 0o600 {
            predicate::str::is_empty().boxed()
        } else {
            warned.boxed()
        };
        cipherio()
            .args(["decrypt", "-k"])
            .arg(s.key())
            .arg(&ct)
            .assert()
            .code(OK)
            .stdout("secret")
            .stderr(stderr);
    }
}

#[test]
fn a_byte_order_mark_before_the_key_is_ignored() {
    let s = Scratch::new();
    let ct = s.encrypt(b"secret", "ct", &[]);
    let mut text = "\u{feff}".as_bytes().to_vec();
    text.extend(fs::read(s.key()).expect("key"));
    let bom = s.write_private("bom.key", &text);
    cipherio()
        .args(["decrypt", "-k"])
        .arg(&bom)
        .arg(&ct)
        .assert()
        .code(OK)
        .stdout("secret");
}
