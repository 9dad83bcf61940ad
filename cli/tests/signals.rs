//! Signals during a command that writes a file, run as the tests' own user
//! through a shell with umask 022: the output file being written has no
//! name yet, and plaintext is readable by its owner only; any signal, SIGKILL
//! included, leaves neither the output nor a temporary file, and the
//! process dies of the signal; a signal the command was started with
//! ignored stays ignored.

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::*;

/// The file that `child` is writing in the scratch directory, once it
/// holds some bytes (the command is then in the middle of its stream), as
/// `/proc/PID/fd/N`: found by its descriptor, since it may have no name.
/// Panics after a minute: a guard against hanging, not a measure of speed.
fn wait_for_partial_output(s: &Scratch, child: &mut Child) -> PathBuf {
    let start = Instant::now();
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    loop {
        for entry in fs::read_dir(&fds).into_iter().flatten().flatten() {
            let fd = entry.path();
            let into_scratch = fs::read_link(&fd).is_ok_and(|t| t.starts_with(s.dir.path()));
            let info = fds.with_file_name("fdinfo").join(entry.file_name());
            // The flags are octal; 1 and 2 are the modes that write.
            let writing = fs::read_to_string(info).is_ok_and(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("flags:"))
                    .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                    .is_some_and(|f| f & 3 != 0)
            });
            if into_scratch && writing && fs::metadata(&fd).is_ok_and(|m| m.len() > 0) {
                return fd;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the command ended early: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no partial output appeared"
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

/// A command under way, fed through a pipe that stays open.
struct HalfWay {
    child: Child,
    stdin: ChildStdin,
    /// Whether its output is an unnamed file (`O_TMPFILE`, where the
    /// filesystem makes them); if not, it is a hidden temporary file.
    unnamed: bool,
}

/// Starts `command` (with `-k key -o out` added) through the shell, after
/// `setup` (shell commands), fed the first half of `input` on a pipe that
/// stays open, and waits until its output is under way. The output is
/// checked meanwhile: plaintext is readable by its owner only, and no new
/// name is in the directory but, where the filesystem makes no unnamed
/// files, a hidden temporary one.
fn start_half_way(s: &Scratch, setup: &str, command: &str, input: &[u8]) -> HalfWay {
    let before = s.names();
    let script = format!(r#"{setup} exec "$0" {command} -k key -o out"#);
    let mut child = sh_std(s.dir.path(), &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&input[..input.len() / 2])
        .expect("first half");
    let output = wait_for_partial_output(s, &mut child);
    if command.starts_with("decrypt") {
        assert_eq!(mode(&output) & 0o077, 0, "{command}: private while written");
    }
    // An unnamed file shows as `DIR/#INODE (deleted)`.
    let target = fs::read_link(&output).expect("the output's name");
    let unnamed = target.to_string_lossy().ends_with(" (deleted)");
    let mut names = s.names();
    if !unnamed {
        let file_name = target.file_name().expect("a name").to_string_lossy();
        assert!(file_name.starts_with(".out.") && file_name.ends_with(".cipherio-tmp"));
        names.retain(|n| *n != file_name);
    }
    assert_eq!(names, before, "{command}: no name before it is complete");
    HalfWay {
        child,
        stdin,
        unnamed,
    }
}

/// Interrupts `command` half-way with `sig` and checks that it died of
/// the signal and left the directory as it was (SIGKILL, which no process
/// can act on, only where the output had no name).
fn interrupt(s: &Scratch, command: &str, input: &[u8], sig: (&str, i32)) {
    let before = s.names();
    let run = start_half_way(s, "", command, input);
    signal(&run.child, sig.0);
    let out = run.child.wait_with_output().expect("wait");
    drop(run.stdin);
    assert_eq!(
        out.status.signal(),
        Some(sig.1),
        "{command}: {:?}",
        out.status
    );
    if run.unnamed || sig.0 != "KILL" {
        assert_eq!(s.names(), before, "{command}: nothing left by SIG{}", sig.0);
    }
}

#[test]
fn ctrl_c_during_decrypt_leaves_no_output() {
    let s = Scratch::new();
    let p = data(4 << 20, 1);
    let ct = s.encrypt(&p, "ct", &[]);
    let sealed = fs::read(&ct).expect("ct");
    interrupt(&s, "decrypt", &sealed, ("INT", 2));
    interrupt(&s, "decrypt --threads 2", &sealed, ("TERM", 15));
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
    interrupt(&s, "encrypt", &p, ("INT", 2));
    interrupt(&s, "encrypt", &p, ("HUP", 1));
}

#[test]
fn any_signal_even_sigkill_leaves_no_plaintext_behind() {
    let s = Scratch::new();
    let p = data(4 << 20, 3);
    let sealed = fs::read(s.encrypt(&p, "ct", &[])).expect("ct");
    for sig in [
        ("KILL", 9),
        ("QUIT", 3),
        ("USR1", 10),
        ("ALRM", 14),
        ("XCPU", 24),
    ] {
        interrupt(&s, "decrypt", &sealed, sig);
    }
}

#[test]
fn signals_ignored_at_the_start_stay_ignored() {
    let s = Scratch::new();
    let p = data(4 << 20, 4);
    let sealed = fs::read(s.encrypt(&p, "ct", &[])).expect("ct");
    // As `nohup` and a script's background jobs start a command.
    let mut run = start_half_way(&s, "trap '' HUP INT TERM;", "decrypt", &sealed);
    for sig in ["HUP", "INT", "TERM"] {
        signal(&run.child, sig);
    }
    run.stdin
        .write_all(&sealed[sealed.len() / 2..])
        .expect("second half");
    drop(run.stdin);
    let out = run.child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{:?}", out.status);
    assert!(s.read("out") == p);
}
