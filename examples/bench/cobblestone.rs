//! The Cobblestone-128 rows (`benches/sweep/cobblestone.rs`): which runs
//! measure them, and their table.

use std::fmt::Write as _;

use super::{Alg, Mode, Results, Run, Sweep, cell, spread, vs_ratio};

/// The format's chunk, the rows' only size.
pub const CHUNK: usize = 16 * 1024;
/// Their directions, as the sweep names its groups.
pub const DIRS: [&str; 3] = ["encrypt", "decrypt", "decrypt-bufread"];

/// Whether a run measures the rows: the builds at their best tier (no
/// capability mask) that cover AES-128-GCM.
pub fn runs(r: &Run<'_>) -> bool {
    r.mask.is_empty() && r.algs.contains(&Alg::Aes128)
}

/// The points a run's rows add to a round.
pub fn points(r: &Run<'_>) -> usize {
    if runs(r) { DIRS.len() } else { 0 }
}

/// The table: per run and direction, cipherio's Cobblestone-128 on one
/// thread against the raw AES-128-GCM, the `cobblestone` crate, and what
/// `threads(2)` adds.
pub fn report(o: &mut String, mode: &Mode, ran: &[Run<'_>], results: &Results) {
    let ran: Vec<&Run<'_>> = ran.iter().filter(|r| runs(r)).collect();
    if ran.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Cobblestone-128 (16 KiB chunks), one thread\n");
    let _ = writeln!(
        o,
        "`CipherWriter<io::Sink>` (one `write_all`, then `finish`) and `CipherReader<&[u8]>` \
         (`read` into one reused 16 KiB buffer until 0; `decrypt-bufread`: built with \
         `build_from_buf_read`, no copy out of the source) with a Cobblestone-128 key, a fresh \
         stream per iteration, timed interleaved with three references over the same payload: \
         the build's raw AES-128-GCM in 16 KiB messages (RustCrypto, or aws-lc-rs's one-shot; \
         target ≥ 95 % with RustCrypto, ≥ 85 % with AWS-LC), the `cobblestone` crate's \
         `EncryptWriter`/`DecryptReader` (target ≥ 100 %) and the same cipherio stream on \
         `threads(2)`. Each: cipherio one thread ÷ reference throughput, median of the paired \
         ratios (spread as above); `threads(2)` the other way round, as its speed-up over one \
         thread. `decrypt` also against the raw AES-128-GCM that first copies each message out \
         of the payload, as every `Read` hands a reader its bytes (`÷ raw + copy`): the most a \
         reader through `Read` can reach.\n"
    );
    let _ = writeln!(
        o,
        "| run | direction | ÷ raw AES-128-GCM | ÷ raw + copy | ÷ `cobblestone` crate | `threads(2)` ÷ one thread | GB/s (raw GB/s) |\n|---|---|---|---|---|---|---|"
    );
    for r in ran {
        let target = if r.build.features.is_empty() {
            0.95
        } else {
            0.85
        };
        for dir in DIRS {
            let key = (r.name.clone(), Alg::Aes128, dir, Sweep::Cobblestone, CHUNK);
            let mark = |x: f64, t: f64| if x >= t { "✅" } else { "❌" };
            let raw = cell(results, mode.payload, &key).map_or("not measured".into(), |c| {
                format!(
                    "{} {}",
                    spread(c.ratio, mode.rounds),
                    mark(c.ratio.0, target)
                )
            });
            let read = match dir {
                "decrypt" => vs_ratio(results, &key, "raw-read"),
                _ => None,
            };
            let read = read.map_or("–".into(), |x| spread(x, mode.rounds));
            let theirs = vs_ratio(results, &key, "crate").map_or("–".into(), |x| {
                format!("{} {}", spread(x, mode.rounds), mark(x.0, 1.0))
            });
            // Inverted: threads(2) ÷ one thread, so the spread's ends swap.
            let threads = vs_ratio(results, &key, "threads2").map_or("–".into(), |x| {
                format!("{:.2}× ({:.2}–{:.2})", 1.0 / x.0, 1.0 / x.2, 1.0 / x.1)
            });
            let speed = cell(results, mode.payload, &key).map_or("–".into(), |c| {
                format!("{:.2} ({:.2})", c.gbps, c.raw_gbps)
            });
            let _ = writeln!(
                o,
                "| {} | {dir} | {raw} | {read} | {theirs} | {threads} | {speed} |",
                r.name
            );
        }
    }
    let _ = writeln!(o);
}
