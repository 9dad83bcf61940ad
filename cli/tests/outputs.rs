//! Where output goes and what it looks like there, run as the tests' own
//! user through a shell with umask 022: the modes of new and replaced
//! files, names of descriptors written directly, symbolic links written
//! through, failures found before any input is read, key files that
//! appear whole, standard output closed or failing.

mod common;

use std::fs::{self, File, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

use common::*;
use predicates::prelude::*;
use predicates::str::contains;

/// Runs the binary with `args` in `dir`, its standard output on `stdout`.
fn run_into(dir: &std::path::Path, args: &[&str], stdout: impl Into<Stdio>) -> Output {
    Command::new(bin_path())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("run")
}

#[test]
fn new_plaintext_is_private_and_a_replaced_file_keeps_its_mode() {
    let s = Scratch::new();
    let p = data(100_000, 11);
    s.encrypt(&p, "ct", &[]);
    let dir = s.dir.path();
    sh(dir, r#"exec "$0" decrypt -k key -o new ct"#)
        .assert()
        .code(OK);
    assert_eq!(mode(&s.path("new")), 0o600, "decrypted: owner only");
    sh(dir, r#"exec "$0" encrypt -k key -o new.cio new"#)
        .assert()
        .code(OK);
    assert_eq!(
        mode(&s.path("new.cio")),
        0o644,
        "encrypted: 0666 less the umask"
    );
    sh(
        dir,
        r#"umask 077; exec "$0" encrypt -k key -o private.cio new"#,
    )
    .assert()
    .code(OK);
    assert_eq!(
        mode(&s.path("private.cio")),
        0o600,
        "never more than the umask allows"
    );
    for m in [0o600, 0o640, 0o604, 0o664] {
        let out = s.write("out", b"old");
        fs::set_permissions(&out, Permissions::from_mode(m)).expect("chmod");
        sh(dir, r#"exec "$0" decrypt -k key -f -o out ct"#)
            .assert()
            .code(OK);
        assert_eq!(mode(&out), m, "the replaced file's mode {m:o}");
        assert!(s.read("out") == p);
    }
}

#[test]
fn descriptor_names_are_written_through_never_replaced() {
    let s = Scratch::new();
    let p = data(70_000, 12);
    s.encrypt(&p, "ct", &[]);
    let dir = s.dir.path();
    for (name, redirect) in [
        ("/dev/stdout", ">>"),
        ("/proc/self/fd/1", ">>"),
        ("/dev/fd/1", ">>"),
        ("/dev/stderr", "2>>"),
    ] {
        for force in ["", "-f"] {
            s.write("out", b"before\n");
            let script = format!(r#"exec "$0" decrypt -k key {force} -o {name} ct {redirect} out"#);
            sh(dir, &script).assert().code(OK);
            // Appended at the descriptor's own offset, as a shell's
            // redirection would.
            let mut want = b"before\n".to_vec();
            want.extend_from_slice(&p);
            assert!(s.read("out") == want, "{script}");
            assert_eq!(s.names(), ["ct", "key", "out"], "{script}");
            assert!(
                fs::symlink_metadata("/dev/stdout")
                    .expect("/dev/stdout")
                    .file_type()
                    .is_symlink(),
                "{script}: /dev/stdout is left alone"
            );
        }
    }
}

#[test]
fn a_symbolic_link_is_written_through_and_keeps_pointing_at_its_target() {
    let s = Scratch::new();
    let p = data(50_000, 13);
    s.encrypt(&p, "ct", &[]);
    let dir = s.dir.path();
    fs::create_dir(s.path("sub")).expect("mkdir");
    let target = s.path("sub/target");
    fs::write(&target, b"old").expect("target");
    fs::set_permissions(&target, Permissions::from_mode(0o640)).expect("chmod");
    std::os::unix::fs::symlink("sub/target", s.path("link")).expect("symlink");
    // The target exists: replacing it needs --force, like any file.
    sh(dir, r#"exec "$0" decrypt -k key -o link ct"#)
        .assert()
        .code(USAGE)
        .stderr(contains("already exists"));
    sh(dir, r#"exec "$0" decrypt -k key -f -o link ct"#)
        .assert()
        .code(OK);
    let link = fs::symlink_metadata(s.path("link")).expect("link");
    assert!(link.file_type().is_symlink(), "the link stays a link");
    assert!(fs::read(&target).expect("target") == p);
    assert_eq!(mode(&target), 0o640);
    assert_eq!(names_in(&s.path("sub")), ["target"]);
}

#[test]
fn outputs_that_cannot_be_made_fail_before_the_input_is_read() {
    // The input is empty: a command that read it first would fail with
    // status 3 (truncated) instead.
    let s = Scratch::new();
    let dir = s.dir.path();
    s.write("file", b"");
    std::os::unix::fs::symlink("nowhere/at/all", s.path("dangling")).expect("symlink");
    for (out, says) in [
        ("dangling", "symbolic link to nothing"),
        ("nosuch/", "ends with /"),
        ("file/", "ends with /"),
        ("file/x", "Not a directory"),
        (&"n".repeat(256), "too long"),
    ] {
        cipherio()
            .current_dir(dir)
            .args(["decrypt", "-k", "key", "-o", out])
            .write_stdin("")
            .assert()
            .code(ERROR)
            .stderr(contains(says));
    }
    // A name as long as a name can be works, however long its temporary
    // name would be.
    let p = data(1000, 14);
    let ct = s.encrypt(&p, "ct", &[]);
    let long = "l".repeat(255);
    cipherio()
        .current_dir(dir)
        .args(["decrypt", "-k", "key", "-o", &long])
        .arg(&ct)
        .assert()
        .code(OK);
    assert!(s.read(&long) == p);
    assert_eq!(s.names(), ["ct", "dangling", "file", "key", long.as_str()]);
}

#[test]
fn keygen_that_cannot_write_leaves_no_key_file() {
    let s = Scratch::new();
    let dir = s.dir.path();
    // Every write fails (EFBIG, the signal it would raise ignored), as on
    // a full disk.
    sh(
        dir,
        r#"trap '' XFSZ; ulimit -f 0; exec "$0" keygen -o new.key"#,
    )
    .assert()
    .code(ERROR)
    .stderr(contains("new.key").and(contains("cannot write the key file")));
    assert_eq!(s.names(), ["key"], "no empty key file");
    sh(dir, r#"exec "$0" keygen -o new.key"#).assert().code(OK);
    assert_eq!(mode(&s.path("new.key")), 0o600);
    key_parts(&s.path("new.key"));
}

#[test]
fn a_closed_standard_output_is_an_error() {
    let s = Scratch::new();
    s.encrypt(&data(1000, 15), "ct", &[]);
    let dir = s.dir.path();
    for command in [
        "decrypt -k key ct",
        "encrypt -k key key",
        "cat -k key --range 0..10 ct",
        "inspect ct",
        "keygen",
        "completions bash",
    ] {
        sh(dir, &format!(r#"exec "$0" {command} >&-"#))
            .assert()
            .code(ERROR)
            .stderr(contains("standard output is closed"));
        // Written to /dev/null on purpose, it is not.
        sh(dir, &format!(r#"exec "$0" {command} >/dev/null"#))
            .assert()
            .code(OK);
    }
}

#[test]
fn help_and_version_that_cannot_be_written_are_errors() {
    let s = Scratch::new();
    let dir = s.dir.path();
    for args in ["--help", "--version", "decrypt --help", "help cat", "-V"] {
        let full = run_into(
            dir,
            &args.split(' ').collect::<Vec<_>>(),
            File::create("/dev/full").expect("/dev/full"),
        );
        assert_eq!(full.status.code(), Some(ERROR), "{args}");
        assert!(String::from_utf8_lossy(&full.stderr).contains("<stdout>: cannot write"));
        sh(dir, &format!(r#"exec "$0" {args} >&-"#))
            .assert()
            .code(ERROR)
            .stderr(contains("standard output is closed"));
        sh(dir, &format!(r#"exec "$0" {args}"#))
            .assert()
            .code(OK)
            .stdout(contains("cipherio"));
    }
}

#[test]
fn a_closed_standard_input_is_an_error() {
    let s = Scratch::new();
    let dir = s.dir.path();
    for command in [
        "encrypt -k key",
        "decrypt -k key",
        "verify -k key",
        "inspect",
        "cat -k key --range 0.. -",
    ] {
        // Not an empty input: encrypting it would seal nothing and
        // succeed, decrypting it would call it truncated (status 3).
        sh(dir, &format!(r#"exec "$0" {command} <&- >/dev/null"#))
            .assert()
            .code(ERROR)
            .stderr(contains("standard input is closed"));
    }
    // An empty input given on purpose is one.
    sh(dir, r#"exec "$0" encrypt -k key </dev/null >/dev/null"#)
        .assert()
        .code(OK);
}

#[test]
fn output_errors_end_with_status_1_never_a_panic() {
    let s = Scratch::new();
    s.encrypt(&data(1000, 16), "ct", &[]);
    let dir = s.dir.path();
    let commands: [&[&str]; 5] = [
        &["inspect", "ct"],
        &["completions", "bash"],
        &["keygen"],
        &["cat", "-k", "key", "--range", "0..10", "ct"],
        &["decrypt", "-k", "key", "ct"],
    ];
    for args in commands {
        let full = run_into(dir, args, File::create("/dev/full").expect("/dev/full"));
        let err = String::from_utf8_lossy(&full.stderr);
        assert_eq!(full.status.code(), Some(ERROR), "{args:?}: {err}");
        assert!(err.contains("<stdout>: cannot write"), "{args:?}: {err}");
        assert!(!err.contains("panic"), "{args:?}: {err}");
        // A reader that went away: quietly.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let gone = run_into(dir, args, writer);
        assert_eq!(gone.status.code(), Some(ERROR), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&gone.stderr), "", "{args:?}");
    }
}

#[test]
fn a_failing_standard_error_never_panics() {
    let s = Scratch::new();
    s.encrypt(&data(1000, 17), "ct", &[]);
    s.write("open.key", &fs::read(s.key()).expect("key"));
    fs::set_permissions(s.path("open.key"), Permissions::from_mode(0o644)).expect("chmod");
    let dir = s.dir.path();
    // What the command has to say (a result, a warning, an error) is lost
    // on a full device; the status is still the command's own.
    let commands: [(&[&str], i32); 3] = [
        (&["verify", "-k", "key", "ct"], OK),
        (&["decrypt", "-k", "open.key", "-o", "/dev/null", "ct"], OK),
        (&["decrypt", "-k", "no-such-key", "ct"], ERROR),
    ];
    for (args, code) in commands {
        let out = Command::new(bin_path())
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create("/dev/full").expect("/dev/full"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}

/// The groups the tests' user may give its files: its own, and with it
/// any other it is a member of (every group, as root).
fn own_groups() -> Vec<u32> {
    let out = Command::new("id").arg("-G").output().expect("id -G");
    let mut groups: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|g| g.parse().ok())
        .collect();
    if fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0) {
        groups.push(65534);
    }
    groups
}

#[test]
fn a_replaced_file_keeps_its_owner_and_group() {
    use std::os::unix::fs::MetadataExt;
    let groups = own_groups();
    let root = fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
    let [primary, other, ..] = groups[..] else {
        eprintln!("skipped: the tests' user is in one group only, so no file can change group");
        return;
    };
    let s = Scratch::new();
    let p = data(30_000, 18);
    s.encrypt(&p, "ct", &[]);
    let dir = s.dir.path();
    // A file of the user's other group, readable by that group: a new
    // file would be of the primary group, whose members must not gain
    // the plaintext through the kept mode.
    let out = s.write("out", b"old");
    // As root, of another owner too: root replacing a user's file leaves
    // it the user's.
    let owner = root.then_some(65534);
    std::os::unix::fs::chown(&out, owner, Some(other)).expect("chown");
    let uid = fs::metadata(&out).expect("out").uid();
    fs::set_permissions(&out, Permissions::from_mode(0o640)).expect("chmod");
    assert_ne!(primary, other);
    sh(dir, r#"exec "$0" decrypt -k key -f -o out ct"#)
        .assert()
        .code(OK);
    let meta = fs::metadata(&out).expect("out");
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o777),
        (uid, other, 0o640)
    );
    assert!(s.read("out") == p);
}
