//! Behaviour on a real terminal, through a pseudo-terminal made by
//! util-linux `script`: the refusal to write ciphertext to a terminal, and
//! the progress bar (drawn on a terminal, not with `-q`).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Runs `command` (a shell command line) with its standard streams on a
/// pseudo-terminal; returns its exit status and what the terminal showed.
/// The progress bar is drawn after its usual second of work.
fn on_terminal(command: &str, dir: &Path) -> (i32, String) {
    on_terminal_drawing_after(command, dir, None)
}

/// The same with the bar drawn after `delay_ms` (`Some("0")`: at once).
fn on_terminal_drawing_after(command: &str, dir: &Path, delay_ms: Option<&str>) -> (i32, String) {
    let mut c = Command::new("script");
    c.args(["-q", "-e", "-c", command, "/dev/null"])
        .current_dir(dir)
        .env("CIPHERIO", bin_path())
        .env_remove("CIPHERIO_PROGRESS_DELAY_MS")
        .env("TERM", "xterm");
    if let Some(ms) = delay_ms {
        c.env("CIPHERIO_PROGRESS_DELAY_MS", ms);
    }
    let out = c
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux script(1) runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn ciphertext_is_not_written_to_a_terminal_without_force() {
    let s = Scratch::new();
    s.write("plain", b"hello");
    let (code, screen) = on_terminal("\"$CIPHERIO\" encrypt -k key plain", s.dir.path());
    assert_eq!(code, USAGE, "{screen}");
    assert!(
        screen.contains("refusing to write ciphertext to a terminal"),
        "{screen}"
    );
    assert!(!screen.contains("cipherio\u{1}"), "no header was written");
    // -o naming the terminal is refused too.
    let (code, screen) = on_terminal(
        "\"$CIPHERIO\" encrypt -k key -o /dev/tty plain",
        s.dir.path(),
    );
    assert_eq!(code, USAGE, "{screen}");
    // --force writes it.
    let (code, screen) = on_terminal("\"$CIPHERIO\" encrypt -f -k key plain", s.dir.path());
    assert_eq!(code, OK, "{screen}");
    assert!(screen.starts_with("cipherio\u{1}"), "{screen:?}");
    // Plaintext may go to a terminal.
    s.encrypt(b"hello", "ct", &[]);
    let (code, screen) = on_terminal("\"$CIPHERIO\" decrypt -k key ct", s.dir.path());
    assert_eq!(code, OK, "{screen}");
    assert_eq!(screen, "hello");
}

#[test]
fn a_progress_bar_is_drawn_on_a_terminal_unless_quiet() {
    let s = Scratch::new();
    s.write("plain", &data(8 << 20, 3));
    let (code, screen) = on_terminal_drawing_after(
        "\"$CIPHERIO\" encrypt -k key -o ct plain",
        s.dir.path(),
        Some("0"),
    );
    assert_eq!(code, OK, "{screen}");
    // Bytes of the known total, a rate and a percentage.
    assert!(screen.contains("8.00 MiB"), "{screen:?}");
    assert!(screen.contains("iB/s "), "a rate: {screen:?}");
    assert!(screen.contains('%'), "{screen:?}");
    let (code, screen) = on_terminal_drawing_after(
        "\"$CIPHERIO\" decrypt -q -k key -o out ct",
        s.dir.path(),
        Some("0"),
    );
    assert_eq!(code, OK, "{screen}");
    assert_eq!(screen, "", "nothing with -q");
    let (code, screen) = on_terminal_drawing_after(
        "\"$CIPHERIO\" decrypt -k key -o out2 ct",
        s.dir.path(),
        Some("0"),
    );
    assert_eq!(code, OK, "{screen}");
    assert!(screen.contains("iB/s "), "a rate: {screen:?}");
    // The bar is gone at the end: the last thing drawn clears the line.
    assert!(screen.ends_with("\u{1b}[2K"), "{screen:?}");
    assert!(s.read("out") == s.read("plain"));
    // Short work draws nothing (the bar waits for a second of it; the
    // first and only read of this small file comes long before that).
    s.encrypt(b"small", "small.ct", &[]);
    let (code, screen) = on_terminal(
        "\"$CIPHERIO\" decrypt -k key -o out3 small.ct",
        s.dir.path(),
    );
    assert_eq!(code, OK, "{screen}");
    assert_eq!(screen, "", "{screen:?}");
}
