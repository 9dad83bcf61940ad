//! End-to-end tests of every command on the built binary: files and pipes,
//! exit statuses, damaged inputs and the refusals.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use common::*;
use predicates::prelude::*;
use predicates::str::contains;

const SEG: usize = 64 << 10;
const HEADER: usize = 53;
const TAG: usize = 16;

fn flip(bytes: &mut [u8], at: usize) {
    bytes[at] ^= 0x40;
}

#[test]
fn keygen_creates_a_private_key_file_and_never_overwrites_it() {
    let s = Scratch::new();
    let meta = fs::metadata(s.key()).expect("the key file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let before = fs::read(s.key()).expect("key");
    cipherio()
        .args(["keygen", "-o"])
        .arg(s.key())
        .assert()
        .code(ERROR)
        .stderr(contains("key").and(contains("never overwritten")));
    assert_eq!(fs::read(s.key()).expect("key"), before);

    for (alg, hex_len) in [
        ("aes128gcm", 32),
        ("aes256gcm", 64),
        ("chacha20poly1305", 64),
    ] {
        let out = cipherio()
            .args(["keygen", "--algorithm", alg])
            .assert()
            .code(OK)
            .get_output()
            .stdout
            .clone();
        let p = s.write(&format!("{alg}.key"), &out);
        let (a, hex) = key_parts(&p);
        assert_eq!(a, alg);
        assert_eq!(hex.len(), hex_len);
    }
    let a = key_parts(&s.key()).1;
    let b = key_parts(&Scratch::new().key()).1;
    assert_ne!(a, b, "two keys are different");
}

#[test]
fn files_round_trip_with_every_algorithm_and_length() {
    for alg in ["aes128gcm", "aes256gcm", "chacha20poly1305"] {
        let s = Scratch::with_algorithm(alg);
        for (i, len) in [0, 1, SEG - 1, SEG, SEG + 1, 3 * SEG + 17]
            .into_iter()
            .enumerate()
        {
            let p = data(len, i as u64);
            let input = s.write("plain", &p);
            let ct = s.path("ct");
            let _ = fs::remove_file(&ct);
            cipherio()
                .args(["encrypt", "-k"])
                .arg(s.key())
                .arg("-o")
                .arg(&ct)
                .arg(&input)
                .assert()
                .code(OK)
                .stdout("");
            let sealed = fs::read(&ct).expect("ciphertext");
            let segments = len.div_ceil(SEG).max(1);
            assert_eq!(sealed.len(), HEADER + len + segments * TAG, "{alg} {len}");
            let out = s.path("out");
            let _ = fs::remove_file(&out);
            cipherio()
                .args(["decrypt", "-k"])
                .arg(s.key())
                .arg("-o")
                .arg(&out)
                .arg(&ct)
                .assert()
                .code(OK);
            assert!(fs::read(&out).expect("plaintext") == p, "{alg} {len}");
        }
        let rest: Vec<String> = s.names();
        assert_eq!(
            rest,
            ["ct", "key", "out", "plain"],
            "no temporary file left"
        );
    }
}

#[test]
fn pipes_round_trip_through_stdin_and_stdout() {
    let s = Scratch::new();
    let p = data(200_000, 7);
    let ct = cipherio()
        .args(["encrypt", "-k"])
        .arg(s.key())
        .write_stdin(p.clone())
        .assert()
        .code(OK)
        .get_output()
        .stdout
        .clone();
    assert!(ct.starts_with(b"cipherio"));
    // "-" names standard input and output too.
    cipherio()
        .args(["decrypt", "-o", "-", "-k"])
        .arg(s.key())
        .arg("-")
        .write_stdin(ct)
        .assert()
        .code(OK)
        .stdout(predicate::eq(p));
}

#[test]
fn the_key_comes_from_a_file_an_environment_variable_or_a_descriptor() {
    let s = Scratch::new();
    let p = data(100_000, 3);
    let ct = s.encrypt(&p, "ct", &[]);
    let text = fs::read_to_string(s.key()).expect("key");
    cipherio()
        .args(["decrypt", "--key-env", "MY_KEY"])
        .arg(&ct)
        .env("MY_KEY", &text)
        .assert()
        .code(OK)
        .stdout(predicate::eq(p.clone()));
    // The key line alone is enough.
    let line = text.lines().last().expect("line").to_string();
    cipherio()
        .args(["decrypt", "--key-env", "MY_KEY"])
        .arg(&ct)
        .env("MY_KEY", line)
        .assert()
        .code(OK);
    let script = format!(
        "exec \"$0\" decrypt --key-fd 3 '{}' 3< '{}'",
        ct.display(),
        s.key().display()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(bin_path())
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == p);

    cipherio()
        .args(["decrypt", "--key-env", "NOT_SET_ANYWHERE"])
        .arg(&ct)
        .env_remove("NOT_SET_ANYWHERE")
        .assert()
        .code(ERROR)
        .stderr(contains("NOT_SET_ANYWHERE"));
    cipherio()
        .args(["decrypt", "--key-fd", "9"])
        .arg(&ct)
        .assert()
        .code(ERROR)
        .stderr(contains("file descriptor 9"));
    // One key source, exactly.
    cipherio().args(["decrypt"]).arg(&ct).assert().code(USAGE);
    cipherio()
        .args(["decrypt", "--key-env", "A", "-k"])
        .arg(s.key())
        .arg(&ct)
        .assert()
        .code(USAGE);
}

#[test]
fn bad_or_missing_keys_and_inputs_exit_1_naming_the_file() {
    let s = Scratch::new();
    let ct = s.encrypt(b"hello", "ct", &[]);
    cipherio()
        .args(["decrypt", "-k"])
        .arg(s.path("no-such-key"))
        .arg(&ct)
        .assert()
        .code(ERROR)
        .stderr(contains("no-such-key").and(contains("cannot read the key file")));
    let bad = s.write_private("bad.key", b"cipherio-key-v1 aes256gcm 0011\n");
    cipherio()
        .args(["decrypt", "-k"])
        .arg(&bad)
        .arg(&ct)
        .assert()
        .code(ERROR)
        .stderr(contains("bad.key").and(contains("32 bytes")));
    cipherio()
        .args(["decrypt", "-k"])
        .arg(s.key())
        .arg(s.path("missing.cio"))
        .assert()
        .code(ERROR)
        .stderr(contains("missing.cio").and(contains("cannot open")));
    cipherio()
        .args(["encrypt", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(s.path("no-dir/out"))
        .write_stdin("x")
        .assert()
        .code(ERROR)
        .stderr(contains("no-dir"));
    // Every message is one line.
    let out = cipherio()
        .args(["decrypt", "-k"])
        .arg(&bad)
        .arg(&ct)
        .output()
        .expect("run");
    assert_eq!(out.stderr.iter().filter(|&&b| b == b'\n').count(), 1);
}

#[test]
fn a_bad_segment_size_is_refused_before_the_input_is_read() {
    use std::io::Seek;
    let s = Scratch::new();
    let input = s.write("in", &data(300_000, 19));
    for bad in ["0", "17M", "16777217"] {
        // Standard input shares its offset with this file: what the
        // command read from it moved the offset.
        let mut stdin = std::fs::File::open(&input).expect("in");
        let out = std::process::Command::new(bin_path())
            .args(["encrypt", "--segment-size", bad, "-k"])
            .arg(s.key())
            .stdin(stdin.try_clone().expect("dup"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(USAGE), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--segment-size"));
        assert_eq!(stdin.stream_position().expect("offset"), 0, "{bad}");
    }
}

#[test]
fn usage_errors_exit_2() {
    cipherio().assert().code(USAGE);
    cipherio().args(["frobnicate"]).assert().code(USAGE);
    cipherio().args(["encrypt", "--bogus"]).assert().code(USAGE);
    cipherio()
        .args(["keygen", "--algorithm", "rot13"])
        .assert()
        .code(USAGE);
    let s = Scratch::new();
    for bad in ["0", "17M", "12X"] {
        cipherio()
            .args(["encrypt", "--segment-size", bad, "-k"])
            .arg(s.key())
            .write_stdin("x")
            .assert()
            .code(USAGE)
            .stdout("");
    }
    cipherio()
        .args(["encrypt", "--threads", "0", "-k"])
        .arg(s.key())
        .write_stdin("x")
        .assert()
        .code(USAGE);
    cipherio()
        .args(["encrypt", "--ad-hex", "abc", "-k"])
        .arg(s.key())
        .write_stdin("x")
        .assert()
        .code(USAGE);
    cipherio()
        .args(["--help"])
        .assert()
        .code(OK)
        .stdout(contains("Exit status"));
    cipherio()
        .args(["--version"])
        .assert()
        .code(OK)
        .stdout(contains("cipherio"));
}

#[test]
fn segment_size_and_threads_shape_the_stream_not_the_plaintext() {
    let s = Scratch::with_algorithm("chacha20poly1305");
    let p = data(5 * 4096 + 3, 11);
    let ct = s.encrypt(&p, "ct", &["--segment-size", "4K", "--threads", "2"]);
    let sealed = fs::read(&ct).expect("ct");
    assert_eq!(sealed.len(), HEADER + p.len() + 6 * TAG);
    cipherio()
        .args(["inspect"])
        .arg(&ct)
        .assert()
        .code(OK)
        .stdout(contains("4096 bytes of plaintext").and(contains("ChaCha20-Poly1305")));
    let decrypt = |threads: &str| {
        let mut c = cipherio();
        c.args(["decrypt", "--threads", threads, "-k"]).arg(s.key());
        c
    };
    for threads in ["1", "2", "3"] {
        let mut c = decrypt(threads);
        c.arg(&ct)
            .assert()
            .code(OK)
            .stdout(predicate::eq(p.clone()));
    }
    // Several runs of segments: from a file the threads read each run while
    // they open the one before (prefetch); from standard input they do not.
    let long = data(3 << 20, 12);
    let ct = s.encrypt(&long, "long", &["--segment-size", "4K"]);
    for threads in ["2", "3"] {
        let mut c = decrypt(threads);
        c.arg(&ct)
            .assert()
            .code(OK)
            .stdout(predicate::eq(long.clone()));
        let mut c = decrypt(threads);
        c.write_stdin(fs::read(&ct).expect("ct"))
            .assert()
            .code(OK)
            .stdout(predicate::eq(long.clone()));
    }
}

#[test]
fn associated_data_must_match() {
    let s = Scratch::new();
    let p = data(70_000, 5);
    let ct = s.encrypt(&p, "ct", &["--ad", "name=report.pdf"]);
    let dec = |args: &[&str]| {
        let mut c = cipherio();
        c.args(["decrypt", "-k"]).arg(s.key()).args(args).arg(&ct);
        c
    };
    dec(&[]).assert().code(UNAUTHENTIC).stdout("");
    dec(&["--ad", "name=other.pdf"]).assert().code(UNAUTHENTIC);
    dec(&["--ad", "name=report.pdf"])
        .assert()
        .code(OK)
        .stdout(predicate::eq(p.clone()));
    let hex: String = b"name=report.pdf"
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dec(&["--ad-hex", &hex])
        .assert()
        .code(OK)
        .stdout(predicate::eq(p));
}

/// Damaged inputs: status 3, and no output file or temporary file left.
#[test]
fn tampered_truncated_or_extended_files_exit_3_and_leave_no_output() {
    let s = Scratch::new();
    let p = data(3 * SEG + 100, 9);
    let ct = s.encrypt(&p, "ct", &[]);
    let good = fs::read(&ct).expect("ct");
    let full = SEG + TAG;
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    for at in [0, 9, 20, HEADER + 5, HEADER + full + 7, good.len() - 1] {
        let mut b = good.clone();
        flip(&mut b, at);
        cases.push(("flipped", b));
    }
    cases.push((
        "cut at a segment boundary",
        good[..HEADER + 2 * full].to_vec(),
    ));
    cases.push((
        "cut inside a segment",
        good[..HEADER + full + 1000].to_vec(),
    ));
    cases.push(("cut inside the header", good[..30].to_vec()));
    cases.push(("last segment dropped", good[..good.len() - 116].to_vec()));
    let mut longer = good.clone();
    longer.extend_from_slice(b"junk");
    cases.push(("trailing bytes", longer));
    cases.push(("empty", Vec::new()));
    cases.push(("plaintext", p[..1000].to_vec()));
    for (what, bytes) in cases {
        let bad = s.write("bad", &bytes);
        cipherio()
            .args(["decrypt", "-k"])
            .arg(s.key())
            .arg("-o")
            .arg(s.path("out"))
            .arg(&bad)
            .assert()
            .code(UNAUTHENTIC)
            .stderr(contains("bad").and(contains("\n").count(1)));
        assert_eq!(
            s.names(),
            ["bad", "ct", "key"],
            "{what}: nothing left behind"
        );
        cipherio()
            .args(["verify", "-k"])
            .arg(s.key())
            .arg(&bad)
            .assert()
            .code(UNAUTHENTIC)
            .stdout("");
        // The same through a pipe.
        cipherio()
            .args(["decrypt", "-k"])
            .arg(s.key())
            .write_stdin(bytes)
            .assert()
            .code(UNAUTHENTIC)
            .stderr(contains("<stdin>"));
    }
    // A stream cut at a segment boundary is named as such.
    let cut = s.write("cut", &good[..HEADER + 2 * full]);
    cipherio()
        .args(["verify", "-k"])
        .arg(s.key())
        .arg(&cut)
        .assert()
        .code(UNAUTHENTIC)
        .stderr(contains("truncated"));
}

#[test]
fn a_wrong_key_exits_3() {
    let s = Scratch::new();
    let other = Scratch::new();
    let chacha = Scratch::with_algorithm("chacha20poly1305");
    let ct = s.encrypt(b"secret", "ct", &[]);
    for k in [other.key(), chacha.key()] {
        cipherio()
            .args(["decrypt", "-k"])
            .arg(k)
            .arg(&ct)
            .assert()
            .code(UNAUTHENTIC)
            .stdout("");
    }
}

/// To a pipe, plaintext is released segment by segment as each one
/// authenticates: a stream damaged in its third segment gives exactly the
/// first two, then status 3.
#[test]
fn to_a_pipe_only_authenticated_segments_are_written() {
    let s = Scratch::new();
    let p = data(4 * SEG, 13);
    let ct = s.encrypt(&p, "ct", &[]);
    let mut b = fs::read(&ct).expect("ct");
    flip(&mut b, HEADER + 2 * (SEG + TAG) + 10);
    let out = cipherio()
        .args(["decrypt", "-k"])
        .arg(s.key())
        .write_stdin(b)
        .assert()
        .code(UNAUTHENTIC)
        .get_output()
        .stdout
        .clone();
    assert_eq!(out.len(), 2 * SEG);
    assert!(out[..] == p[..2 * SEG]);
}

#[test]
fn an_existing_output_is_kept_unless_forced() {
    let s = Scratch::new();
    let ct = s.encrypt(b"new contents", "ct", &[]);
    let out = s.write("out", b"old contents");
    cipherio()
        .args(["decrypt", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(&out)
        .arg(&ct)
        .assert()
        .code(USAGE)
        .stderr(contains("out").and(contains("already exists")));
    assert_eq!(s.read("out"), b"old contents");
    cipherio()
        .args(["encrypt", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(&out)
        .write_stdin("x")
        .assert()
        .code(USAGE);
    assert_eq!(s.read("out"), b"old contents");
    cipherio()
        .args(["decrypt", "--force", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(&out)
        .arg(&ct)
        .assert()
        .code(OK);
    assert_eq!(s.read("out"), b"new contents");
    // A damaged stream does not replace it even with --force.
    let mut bad = fs::read(&ct).expect("ct");
    flip(&mut bad, HEADER + 2);
    let bad = s.write("bad", &bad);
    cipherio()
        .args(["decrypt", "-f", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(&out)
        .arg(&bad)
        .assert()
        .code(UNAUTHENTIC);
    assert_eq!(s.read("out"), b"new contents");
    assert_eq!(s.names(), ["bad", "ct", "key", "out"]);
    // Devices are written, not replaced: no --force for /dev/null.
    cipherio()
        .args(["decrypt", "-o", "/dev/null", "-k"])
        .arg(s.key())
        .arg(&ct)
        .assert()
        .code(OK);
    cipherio()
        .args(["encrypt", "-o", "/dev/null", "-k"])
        .arg(s.key())
        .write_stdin("x")
        .assert()
        .code(OK);
}

#[test]
fn the_input_is_never_the_output() {
    let s = Scratch::new();
    let p = s.write("plain", b"precious");
    for force in [false, true] {
        let mut c = cipherio();
        c.args(["encrypt", "-k"])
            .arg(s.key())
            .arg("-o")
            .arg(&p)
            .arg(&p);
        if force {
            c.arg("--force");
        }
        c.assert().code(USAGE).stderr(contains("input file"));
        assert_eq!(s.read("plain"), b"precious");
    }
    // The same file through another name (a hard link).
    fs::hard_link(&p, s.path("link")).expect("link");
    cipherio()
        .args(["encrypt", "-f", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(s.path("link"))
        .arg(&p)
        .assert()
        .code(USAGE);
    // Standard output redirected onto the input file.
    let f = fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .expect("open for append");
    let out = std::process::Command::new(bin_path())
        .args(["encrypt", "-k"])
        .arg(s.key())
        .arg(&p)
        .stdout(Stdio::from(f))
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(USAGE));
    assert!(String::from_utf8_lossy(&out.stderr).contains("input file"));
    assert_eq!(s.read("plain"), b"precious");
    // cat's and inspect's standard output appended to the stream read.
    let ct = fs::read(s.encrypt(b"precious", "ct", &[])).expect("ct");
    for command in ["cat -k key --range 0.. ct", "inspect ct", "inspect"] {
        sh(s.dir.path(), &format!(r#"exec "$0" {command} < ct >> ct"#))
            .assert()
            .code(USAGE)
            .stderr(contains("input file"));
        assert!(s.read("ct") == ct, "{command}");
    }
}

#[test]
fn verify_authenticates_and_writes_nothing() {
    let s = Scratch::new();
    let p = data(300_000, 21);
    let ct = s.encrypt(&p, "ct", &[]);
    cipherio()
        .args(["verify", "-k"])
        .arg(s.key())
        .arg(&ct)
        .assert()
        .code(OK)
        .stdout("")
        .stderr(contains("authentic").and(contains("300000 bytes")));
    cipherio()
        .args(["verify", "-q", "-k"])
        .arg(s.key())
        .write_stdin(fs::read(&ct).expect("ct"))
        .assert()
        .code(OK)
        .stdout("")
        .stderr("");
    assert_eq!(s.names(), ["ct", "key"]);
}

/// What a command that succeeds prints, as JSON.
fn json_of(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    let out = cmd.assert().code(OK).get_output().stdout.clone();
    serde_json::from_slice(&out).expect("JSON")
}

#[test]
fn inspect_reads_the_header_without_a_key() {
    let s = Scratch::with_algorithm("aes128gcm");
    let p = data(2 * SEG + 5, 1);
    let ct = s.encrypt(&p, "ct", &[]);
    let len = fs::read(&ct).expect("ct").len();
    cipherio()
        .args(["inspect"])
        .arg(&ct)
        .assert()
        .code(OK)
        .stdout(
            contains("cipherio v1")
                .and(contains("AES-128-GCM"))
                .and(contains("65536 bytes of plaintext"))
                .and(contains(format!("{len} bytes")))
                .and(contains(format!(
                    "{} bytes (implied by the layout, unauthenticated)",
                    p.len()
                )))
                .and(contains("segments:       3")),
        );
    let v = json_of(cipherio().args(["inspect", "--json"]).arg(&ct));
    assert_eq!(v["plaintext_len"], p.len());
    assert_eq!(v["ciphertext_len"], len);
    assert_eq!(v["segment_size"], SEG);
    assert_eq!(v["authenticated"], false);
    // From a pipe: no length.
    cipherio()
        .args(["inspect"])
        .write_stdin(fs::read(&ct).expect("ct"))
        .assert()
        .code(OK)
        .stdout(contains("AES-128-GCM").and(contains("plaintext len").not()));
    // A length no stream has.
    let cut = s.write("cut", &fs::read(&ct).expect("ct")[..HEADER + SEG + TAG + 3]);
    cipherio()
        .args(["inspect"])
        .arg(&cut)
        .assert()
        .code(OK)
        .stdout(contains("no stream has this length"));
    // Not a stream at all; a Tink-looking one.
    cipherio()
        .args(["inspect"])
        .write_stdin("hello, world")
        .assert()
        .code(UNAUTHENTIC)
        .stderr(contains("<stdin>"));
    let mut tinkish = vec![24u8];
    tinkish.extend(data(100, 2));
    cipherio()
        .args(["inspect"])
        .write_stdin(tinkish)
        .assert()
        .code(OK)
        .stdout(contains("Tink"));
    let mut v9 = fs::read(&ct).expect("ct");
    v9[8] = 9;
    cipherio()
        .args(["inspect"])
        .write_stdin(v9)
        .assert()
        .code(UNAUTHENTIC)
        .stderr(contains("version 9"));
}

#[test]
fn standard_input_is_measured_from_where_it_stands() {
    // A stream after 5 bytes of something else, standard input moved past
    // them by the shell before the command starts: its length is what
    // is left.
    let s = Scratch::new();
    let p = data(SEG + 7, 20);
    let ct = fs::read(s.encrypt(&p, "ct", &[])).expect("ct");
    let mut after = b"JUNK!".to_vec();
    after.extend_from_slice(&ct);
    s.write("after", &after);
    let v = json_of(&mut sh(
        s.dir.path(),
        r#"{ dd bs=5 count=1 of=/dev/null status=none; exec "$0" inspect --json; } < after"#,
    ));
    assert_eq!(v["ciphertext_len"], ct.len());
    assert_eq!(v["plaintext_len"], p.len());
}

#[test]
fn cat_writes_a_range_and_opens_only_its_segments() {
    let s = Scratch::new();
    let p = data(5 * SEG + 321, 17);
    let ct = s.encrypt(&p, "ct", &[]);
    let cat = |range: &str, file: &std::path::Path| {
        let mut c = cipherio();
        c.args(["cat", "--range", range, "-k"])
            .arg(s.key())
            .arg(file);
        c
    };
    let n = p.len();
    for (range, a, b) in [
        ("0..10".to_string(), 0, 10),
        (format!("{}..{}", SEG - 3, SEG + 3), SEG - 3, SEG + 3),
        (format!("{}..", n - 5), n - 5, n),
        ("..7".to_string(), 0, 7),
        ("100..100".to_string(), 100, 100),
        ("..".to_string(), 0, n),
        ("64K..65539".to_string(), SEG, SEG + 3),
    ] {
        cat(&range, &ct)
            .assert()
            .code(OK)
            .stdout(predicate::eq(p[a..b].to_vec()));
    }
    cat(&format!("0..{}", n + 1), &ct)
        .assert()
        .code(ERROR)
        .stderr(contains("past the plaintext"));
    cat("10..5", &ct).assert().code(USAGE);
    cat("ten..", &ct).assert().code(USAGE);
    // Segment 2 damaged: ranges in segments 0, 1 and the last still read,
    // a range that touches segment 2 does not.
    let mut b = fs::read(&ct).expect("ct");
    flip(&mut b, HEADER + 2 * (SEG + TAG) + 100);
    let bad = s.write("bad", &b);
    cat("0..100", &bad)
        .assert()
        .code(OK)
        .stdout(predicate::eq(p[..100].to_vec()));
    cat(&format!("{}..{}", SEG + 1, 2 * SEG), &bad)
        .assert()
        .code(OK);
    cat(&format!("{}..{}", 5 * SEG, n), &bad).assert().code(OK);
    cat(&format!("{}..{}", 2 * SEG, 2 * SEG + 1), &bad)
        .assert()
        .code(UNAUTHENTIC)
        .stdout("");
    // A truncated file fails even for a range at its start: the length
    // comes from the authenticated final segment.
    let cut = s.write(
        "cut",
        &fs::read(&ct).expect("ct")[..HEADER + 3 * (SEG + TAG)],
    );
    cat("0..10", &cut).assert().code(UNAUTHENTIC);
}

#[test]
fn a_range_past_the_end_is_an_error_wherever_it_starts() {
    let s = Scratch::new();
    let p = data(300_000, 18);
    let ct = s.encrypt(&p, "ct", &[]);
    for range in ["300001..", "300001..300002", "0..300001", "1M.."] {
        cipherio()
            .args(["cat", "--range", range, "-k"])
            .arg(s.key())
            .arg(&ct)
            .assert()
            .code(ERROR)
            .stdout("")
            .stderr(contains("past the plaintext's 300000 bytes"));
    }
    cipherio()
        .args(["cat", "--range", "300000..", "-k"])
        .arg(s.key())
        .arg(&ct)
        .assert()
        .code(OK)
        .stdout("");
}

#[test]
fn cat_reads_standard_input_redirected_from_a_file_not_a_pipe() {
    let s = Scratch::new();
    let p = data(100_000, 19);
    let ct = s.encrypt(&p, "ct", &[]);
    sh(
        s.dir.path(),
        r#"exec "$0" cat --range 10..20 -k key - < ct"#,
    )
    .assert()
    .code(OK)
    .stdout(predicate::eq(p[10..20].to_vec()));
    cipherio()
        .args(["cat", "--range", "10..20", "-k"])
        .arg(s.key())
        .arg("-")
        .write_stdin(fs::read(&ct).expect("ct"))
        .assert()
        .code(ERROR)
        .stdout("")
        .stderr(contains("<stdin>: cannot seek").and(contains("decrypt reads a pipe")));
}

#[test]
fn every_command_s_help_gives_the_exit_statuses() {
    for command in [
        "keygen",
        "encrypt",
        "decrypt",
        "verify",
        "inspect",
        "cat",
        "completions",
    ] {
        cipherio()
            .args([command, "--help"])
            .assert()
            .code(OK)
            .stdout(contains(
                "Exit status: 0 ok, 1 error, 2 usage or refused, 3",
            ));
    }
    cipherio()
        .args(["cat", "--help"])
        .assert()
        .code(OK)
        .stdout(contains("K, M or G"));
}

#[test]
fn threads_beyond_the_cpus_hold_no_more_memory() {
    // Two 16 MiB segments, opened with 256 threads asked for on one CPU
    // (the first this process may use) under a data limit of 400 MB: one
    // thread's buffers fit in it (about 40 MB), 256 threads' do not.
    let s = Scratch::new();
    let p = data(20 << 20, 20);
    s.encrypt(&p, "ct", &["--segment-size", "16M"]);
    sh(
        s.dir.path(),
        r#"cpu=$(taskset -cp $$ | sed 's/.*: //; s/[-,].*//'); ulimit -d 400000;
           exec taskset -c "$cpu" "$0" decrypt -j 256 -k key -o out ct"#,
    )
    .assert()
    .code(OK);
    assert!(s.read("out") == p);
    // Under a limit that no 16 MiB segment fits in, the message blames the
    // memory, not the file.
    sh(
        s.dir.path(),
        r#"ulimit -d 16000; exec "$0" decrypt -k key -o out2 ct"#,
    )
    .assert()
    .code(ERROR)
    .stderr(
        contains("ct: cannot decrypt: cannot allocate").and(contains("not a valid stream").not()),
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        cipherio()
            .args(["completions", shell])
            .assert()
            .code(OK)
            .stdout(contains("cipherio").and(contains("decrypt")));
    }
    cipherio()
        .args(["completions", "tcsh"])
        .assert()
        .code(USAGE);
}

#[test]
fn without_a_terminal_no_progress_bar_is_drawn() {
    let s = Scratch::new();
    let p = data(3 << 20, 4);
    cipherio()
        .env("CIPHERIO_PROGRESS_DELAY_MS", "0")
        .args(["encrypt", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(s.path("ct"))
        .write_stdin(p)
        .assert()
        .code(OK)
        .stderr("");
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let s = Scratch::new();
    let p = data(8 << 20, 23);
    let ct = s.encrypt(&p, "ct", &[]);
    let script = format!(
        "\"$0\" decrypt -k '{}' '{}' 2>'{}' | head -c 10 >/dev/null",
        s.key().display(),
        ct.display(),
        s.path("stderr").display()
    );
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(bin_path())
        .status()
        .expect("sh");
    assert!(status.success());
    assert_eq!(s.read("stderr"), b"", "no message for a broken pipe");
}
