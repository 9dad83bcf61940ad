//! `--idle`: what a threaded stream costs in CPU once its caller stops
//! calling it, while it is still alive (its pool threads linger for the
//! next run, then sleep).
//!
//! For each direction and thread count it moves 16 MiB through a stream,
//! then, without dropping it, reads the CPU time of every other thread of
//! this process (`/proc/self/task/*/schedstat`, nanoseconds) and again
//! 1 ms, 10 ms and 100 ms later: what the pool threads burn in those
//! windows while the caller sleeps. Linux only.

use std::io::{self, Read, Write};
use std::time::Duration;

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider};

use crate::report::pattern;

/// CPU time of every thread of this process but the calling one so far,
/// nanoseconds (the caller's own count is brought up to date only when it
/// is next scheduled, so it would count its last call's work as well).
fn cpu_ns() -> io::Result<u64> {
    let me = std::fs::read_link("/proc/thread-self")?;
    let me = me.file_name().map(ToOwned::to_owned);
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?;
        if Some(task.file_name()) == me {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("schedstat"))?;
        total += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(total)
}

/// The CPU the process burns from now until each of `marks` after now.
fn burnt(marks: &[Duration]) -> io::Result<Vec<u64>> {
    let start = cpu_ns()?;
    let mut slept = Duration::ZERO;
    let mut out = Vec::new();
    for &m in marks {
        std::thread::sleep(m - slept);
        slept = m;
        out.push(cpu_ns()? - start);
    }
    Ok(out)
}

/// Prints the table.
pub fn run() -> io::Result<()> {
    let marks = [
        Duration::from_millis(1),
        Duration::from_millis(10),
        Duration::from_millis(100),
    ];
    let key = Key::new(Algorithm::ChaCha20Poly1305, &[7; 32]).expect("a 32-byte key");
    let data = pattern(16 << 20);
    let mut sealed = Vec::new();
    {
        let mut w = CipherWriter::builder(&key)
            .capacity(64 << 10)
            .build(&mut sealed);
        w.write_all(&data)?;
        w.finish()?;
    }
    println!("# CPU a threaded stream burns after its last call, while alive\n");
    println!(
        "16 MiB, 64 KiB segments, ChaCha20-Poly1305, RustCrypto; every thread but the caller's, the caller asleep\n"
    );
    println!(
        "| stream | threads | first 1 ms | first 10 ms | first 100 ms |\n|---|---:|---:|---:|---:|"
    );
    for threads in [1, 2, 3, 8] {
        for writer in [true, false] {
            let used = if writer {
                let mut w = CipherWriter::builder(&key)
                    .capacity(64 << 10)
                    .threads(threads)
                    .provider(Provider::RustCrypto)
                    .build(Vec::with_capacity(sealed.len()));
                w.write_all(&data)?;
                let used = burnt(&marks)?;
                w.finish()?;
                used
            } else {
                let mut r = CipherReader::builder(&key)
                    .threads(threads)
                    .provider(Provider::RustCrypto)
                    .build(&sealed[..]);
                let mut buf = vec![0; 1 << 20];
                // All but the last bytes: the stream stays open.
                let mut left = data.len() - 1;
                while left > 0 {
                    let n = r.read(&mut buf[..left.min(1 << 20)])?;
                    left -= n;
                }
                burnt(&marks)?
            };
            let us = |ns: u64| format!("{:.0} µs", ns as f64 / 1000.0);
            println!(
                "| {} | {threads} | {} | {} | {} |",
                if writer { "writer" } else { "reader" },
                us(used[0]),
                us(used[1]),
                us(used[2])
            );
        }
    }
    Ok(())
}
