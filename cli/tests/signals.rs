//! Interrupting a command that writes a file: SIGINT (Ctrl-C) or SIGTERM
//! in the middle of the stream leaves neither the output nor its temporary
//! file, and the process dies of the signal.

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::*;

/// Waits until the directory holds a temporary output file with some bytes
/// in it (the command is then in the middle of its stream). Panics after a
/// minute: a guard against hanging, not a measure of speed.
fn wait_for_partial_output(s: &Scratch, child: &mut Child) -> String {
    let start = Instant::now();
    loop {
        for name in s.names() {
            if name.ends_with(".cipherio-tmp")
                && fs::metadata(s.path(&name)).map(|m| m.len()).unwrap_or(0) > 0
            {
                return name;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the command ended early: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no partial output appeared: {:?}",
            s.names()
        );
        sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(ok.success());
}

/// Runs `args` with the first half of `input` on a pipe that stays open,
/// interrupts it with `sig` once its output is under way, and checks that
/// it died of the signal and left only `keep` in the directory.
fn interrupt(s: &Scratch, args: &[&str], input: &[u8], sig: (&str, i32), keep: &[&str]) {
    let mut child = Command::new(bin_path())
        .args(args)
        .arg("-k")
        .arg(s.key())
        .arg("-o")
        .arg(s.path("out"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&input[..input.len() / 2])
        .expect("first half");
    let temp = wait_for_partial_output(s, &mut child);
    assert!(temp.starts_with(".out."), "{temp}");
    signal(&child, sig.0);
    let out = child.wait_with_output().expect("wait");
    drop(stdin);
    assert_eq!(out.status.signal(), Some(sig.1), "{:?}", out.status);
    assert_eq!(s.names(), keep, "no output and no temporary file left");
}

#[test]
fn ctrl_c_during_decrypt_leaves_no_output() {
    let s = Scratch::new();
    let p = data(4 << 20, 1);
    let ct = s.encrypt(&p, "ct", &[]);
    let sealed = fs::read(&ct).expect("ct");
    interrupt(&s, &["decrypt"], &sealed, ("INT", 2), &["ct", "key"]);
    interrupt(
        &s,
        &["decrypt", "--threads", "2"],
        &sealed,
        ("TERM", 15),
        &["ct", "key"],
    );
    // Left alone, the same command completes and the file appears.
    Command::new(bin_path())
        .args(["decrypt", "-q", "-k"])
        .arg(s.key())
        .arg("-o")
        .arg(s.path("out"))
        .stdin(fs::File::open(&ct).expect("ct"))
        .status()
        .expect("run")
        .success()
        .then_some(())
        .expect("decrypts");
    assert!(s.read("out") == p);
}

#[test]
fn ctrl_c_during_encrypt_leaves_no_output() {
    let s = Scratch::new();
    let p = data(4 << 20, 2);
    interrupt(&s, &["encrypt"], &p, ("INT", 2), &["key"]);
    interrupt(&s, &["encrypt"], &p, ("HUP", 1), &["key"]);
}
