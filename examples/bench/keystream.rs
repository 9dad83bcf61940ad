//! The keystream adapters' rows (`cipherio::hazmat`, the sweep built with
//! `--features hazmat`): which runs measure them, and their table.

use std::fmt::Write as _;

use super::{Alg, KIB, Mode, Results, Run, Sweep, cell, size_label, spread, vs_ratio};

/// The adapters' buffer sizes in every mode: the two.
pub const SIZES: [usize; 2] = [8 * KIB, 64 * KIB];
/// Their directions, as the sweep names its groups.
pub const DIRS: [&str; 3] = ["write", "read", "read-bufread"];
/// The target, stream ÷ raw, at every size.
const TARGET: f64 = 0.95;

/// The keystream ciphers a run measures, with the algorithm that stands
/// for each in the results: the RustCrypto builds only (the adapters
/// never use AWS-LC), AES-128-CTR where the build covers AES-128 (its AES
/// backend) and ChaCha20 where it covers ChaCha20-Poly1305.
pub fn runs_ciphers(r: &Run<'_>) -> Vec<(Alg, &'static str)> {
    if r.tier.is_some() || !r.build.features.is_empty() {
        return Vec::new();
    }
    [(Alg::Aes128, "aes128ctr"), (Alg::ChaCha, "chacha20")]
        .into_iter()
        .filter(|(a, _)| r.algs.contains(a))
        .collect()
}

/// `CIPHERIO_BENCH_KEYSTREAM_CIPHERS` for a run.
pub fn ciphers(r: &Run<'_>) -> Vec<&'static str> {
    runs_ciphers(r).into_iter().map(|(_, c)| c).collect()
}

/// `CIPHERIO_BENCH_KEYSTREAM` for a run: none without a cipher.
pub fn sizes(mode: &Mode, r: &Run<'_>) -> Vec<usize> {
    if runs_ciphers(r).is_empty() {
        Vec::new()
    } else {
        mode.keystream.clone()
    }
}

/// The points a run's keystream rows add to a round.
pub fn points(mode: &Mode, r: &Run<'_>) -> usize {
    runs_ciphers(r).len() * DIRS.len() * sizes(mode, r).len()
}

/// The table: per run, cipher and direction, adapter ÷ raw at each size.
pub fn report(o: &mut String, mode: &Mode, ran: &[Run<'_>], results: &Results) {
    for r in ran.iter().filter(|r| !runs_ciphers(r).is_empty()) {
        let name = r.name.as_str();
        let _ = writeln!(
            o,
            "## Keystream adapters ÷ raw `apply_keystream`: `{name}` build\n"
        );
        let _ = writeln!(
            o,
            "`cipherio::hazmat::KeystreamWriter<_, io::Sink>` (one `write_all` of the payload, \
             then `finish`) and `KeystreamReader<_, &[u8]>` (`read` into one reused buffer of \
             the adapter's size until 0), a fresh adapter and cipher per iteration, timed \
             interleaved with the raw cipher, also fresh, over the same bytes in pieces of the \
             buffer's size: `raw` is `apply_keystream` in place, `b2b` is \
             `apply_keystream_b2b` from the payload into one reused buffer (no in-place pass \
             is open to a writer over the caller's `&[u8]`). % of raw: median of the paired \
             ratios (spread as above). `read` also copies the ciphertext out of its \
             source (`Read::read` on a `&[u8]`) and then applies the keystream over the copy, \
             which neither reference does; `read-bufread` is the same reader built with \
             `KeystreamReader::from_buf_read`, which applies it from the source's buffer \
             straight into the caller's. Target ≥ {:.0} %.\n",
            TARGET * 100.0
        );
        let mut head = String::from("| cipher | direction |");
        let mut rule = String::from("|---|---|");
        for &s in &mode.keystream {
            let _ = write!(head, " ÷ raw at {} |", size_label(s));
            rule.push_str("---|");
        }
        for &s in &mode.keystream {
            let _ = write!(head, " ÷ b2b at {} |", size_label(s));
            rule.push_str("---|");
        }
        head.push_str(" adapter GB/s (raw GB/s) at each size |");
        rule.push_str("---|");
        let _ = writeln!(o, "{head}\n{rule}");
        for (alg, cipher) in runs_ciphers(r) {
            let title = if cipher == "aes128ctr" {
                "AES-128-CTR"
            } else {
                "ChaCha20"
            };
            for dir in DIRS {
                let key = |s| (name.to_string(), alg, dir, Sweep::Keystream, s);
                let _ = write!(o, "| {title} | {dir} |");
                for &s in &mode.keystream {
                    let _ = match cell(results, mode.payload, &key(s)) {
                        Some(c) => write!(
                            o,
                            " {} {} |",
                            spread(c.ratio, mode.rounds),
                            if c.ratio.0 >= TARGET { "✅" } else { "❌" }
                        ),
                        None => write!(o, " not measured |"),
                    };
                }
                for &s in &mode.keystream {
                    let _ = match vs_ratio(results, &key(s), "b2b") {
                        Some(x) => write!(o, " {} |", spread(x, mode.rounds)),
                        None => write!(o, " – |"),
                    };
                }
                let speeds: Vec<String> = mode
                    .keystream
                    .iter()
                    .filter_map(|&s| cell(results, mode.payload, &key(s)))
                    .map(|c| format!("{:.2} ({:.2})", c.gbps, c.raw_gbps))
                    .collect();
                let _ = writeln!(o, " {} |", speeds.join(" · "));
            }
        }
        let _ = writeln!(o);
    }
}
