//! The size of the blocks the data moves in, counted by the kernel: the
//! read and write calls of a finished `cipherio` process, from its
//! `/proc/PID/io` before it is reaped (opened while the process runs: an
//! exited process's file belongs to root, but what was opened stays
//! readable, so the test runs as any user). A block is at most 128 KiB, so what
//! a read copied is still in the core's L2 cache when it is sealed or
//! opened, and more than 64 KiB, so the calls stay few.

mod common;

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use common::*;

const INPUT: usize = 8 << 20;
const BLOCK: usize = 128 << 10;
/// Blocks of 128 KiB in the input: the fewest calls that move it.
const BLOCKS: u64 = (INPUT / BLOCK) as u64;
/// Calls that do not move the data (the loader, the key file, the checks
/// on standard output): about 35 on Linux; with blocks of 64 KiB the data
/// alone would take this many more than `BLOCKS`.
const OTHER: u64 = BLOCKS;

/// Runs `cipherio COMMAND -q -k KEY INPUT` with standard output on a pipe
/// and returns its read and write calls (`syscr`, `syscw`), after checking
/// that it succeeded.
fn calls(command: &str, key: &Path, input: &Path) -> (u64, u64) {
    let mut child = Command::new(bin_path())
        .args([command, "-q", "-k"])
        .arg(key)
        .arg(input)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn cipherio");
    let proc = format!("/proc/{}", child.id());
    // The process cannot end before its output is read: it is running.
    let mut counts = File::open(format!("{proc}/io")).expect("its io counts");
    let mut stdout = child.stdout.take().expect("stdout");
    io::copy(&mut stdout, &mut io::sink()).expect("its output");
    // Until reaped, an exited process is a zombie whose counts stay readable.
    let mut polls = 0;
    loop {
        let stat = fs::read_to_string(format!("{proc}/stat")).expect("its stat");
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        if state == Some("Z") {
            break;
        }
        polls += 1;
        assert!(polls < 60_000, "cipherio did not finish");
        sleep(Duration::from_millis(1));
    }
    let mut io = String::new();
    counts.read_to_string(&mut io).expect("its io counts");
    let count = |field: &str| -> u64 {
        io.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().parse().ok())
            .expect("a count in /proc/PID/io")
    };
    let (reads, writes) = (count("syscr:"), count("syscw:"));
    assert!(child.wait().expect("wait").success(), "cipherio failed");
    (reads, writes)
}

fn in_blocks(calls: u64) -> bool {
    (BLOCKS..=BLOCKS + OTHER).contains(&calls)
}

#[test]
fn encrypt_reads_its_input_in_blocks_of_128_kib() {
    let s = Scratch::new();
    let plain = s.write("plain", &data(INPUT, 1));
    let (reads, _) = calls("encrypt", &s.key(), &plain);
    assert!(in_blocks(reads), "{reads} reads for {INPUT} bytes");
}

#[test]
fn decrypt_reads_and_writes_in_blocks_of_128_kib() {
    let s = Scratch::new();
    let sealed = s.encrypt(&data(INPUT, 2), "sealed", &[]);
    let (reads, writes) = calls("decrypt", &s.key(), &sealed);
    assert!(in_blocks(reads), "{reads} reads for {INPUT} bytes");
    assert!(in_blocks(writes), "{writes} writes of {INPUT} bytes");
}
