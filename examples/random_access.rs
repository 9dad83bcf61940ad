//! Random access, measured: random 4 KiB reads from an encrypted file (64 KiB
//! segments) next to the same reads from the plaintext file with `pread`,
//! and the cost of `SeekFrom::End(-4096)` + reading the last 4 KiB.
//!
//! ```text
//! cargo run --release --example random_access -- [--gib N | --mib N] [--reads N] [--rounds N]
//!                                                  [--alg aes128|aes256|chacha] [--capacity BYTES]
//! ```
//!
//! It writes an N GiB plaintext file (default 1) and its encryption with
//! `CipherWriter::with_capacity(65536, ..)` to a temporary directory (both
//! removed at the end, also on an error or a panic; not on a signal), then,
//! in one run, round by round (the order of the variants rotates each
//! round), reads 4 KiB at the same uniformly random offsets (fixed-seed
//! PRNG) through:
//!
//! - `pread`: the plaintext `File` with `FileExt::read_at`;
//! - `CipherReaderAt`: `read_at` over the encrypted `File`;
//! - `CipherReader` + `Seek`: `seek(SeekFrom::Start)` then `read_exact`
//!   over the encrypted `File` (read-ahead `--capacity`, default 8 KiB).
//!
//! Every source goes through a counting wrapper, so the counts come from
//! outside the crate: calls into the source, bytes read, and *segments
//! opened*, counted as the sealed segments (65552 bytes) read completely
//! by one `read_at` call, or by the reads since the last seek. A segment
//! is opened exactly when all its bytes are in hand, so this is the number
//! of opens as long as the read-ahead holds less than one extra segment
//! (true at the default capacity; the column of bytes read ÷ 65552 shows
//! it). Without `--reads`, a short calibration picks the number of reads
//! per variant and round for about 10 s of random reads in all.
//!
//! The files were just written, so they are in the page cache: this
//! measures the CPU cost of random access (syscalls, decryption), not the
//! disk. Nothing drops the caches.

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    imp::main()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("random_access compares with pread (std::os::unix::fs::FileExt): unix only");
}

#[cfg(unix)]
mod imp {
    use std::fmt::Write as _;
    use std::fs::{self, File};
    use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;
    use std::process::ExitCode;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::{Duration, Instant};

    use cipherio::format::{HEADER_LEN, TAG_LEN};
    use cipherio::{Algorithm, CipherReader, CipherWriter, Key, ReadAt, backend};

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;
    /// Plaintext bytes per segment.
    const SEGMENT: usize = 64 * 1024;
    /// Bytes per random read.
    const READ: usize = 4096;
    /// Repetitions of the end test per round.
    const END_REPS: usize = 100;
    /// Seconds of random reads in all, without `--reads`.
    const TARGET_SECONDS: f64 = 10.0;
    const SEED: u64 = 0x5eed_cafe_f00d_0013;

    struct Args {
        bytes: u64,
        reads: Option<usize>,
        rounds: usize,
        alg: Algorithm,
        capacity: usize,
    }

    fn parse_args() -> Result<Args, String> {
        let mut args = Args {
            bytes: GIB,
            reads: None,
            rounds: 5,
            alg: Algorithm::Aes128Gcm,
            capacity: cipherio::DEFAULT_CAPACITY,
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
            let mut number = |name: &str| -> Result<u64, String> {
                let v = value(name)?;
                v.parse().map_err(|_| format!("bad {name} {v}"))
            };
            match a.as_str() {
                "--gib" => args.bytes = number("--gib")? * GIB,
                "--mib" => args.bytes = number("--mib")? * MIB,
                "--reads" => args.reads = Some(to_usize(number("--reads")?)),
                "--rounds" => args.rounds = to_usize(number("--rounds")?),
                "--capacity" => args.capacity = to_usize(number("--capacity")?),
                "--alg" => {
                    args.alg = match value("--alg")?.as_str() {
                        "aes128" => Algorithm::Aes128Gcm,
                        "aes256" => Algorithm::Aes256Gcm,
                        "chacha" => Algorithm::ChaCha20Poly1305,
                        other => return Err(format!("unknown --alg {other}")),
                    }
                }
                "-h" | "--help" => {
                    return Err("usage: random_access [--gib N | --mib N] [--reads N] \
                                [--rounds N] [--alg aes128|aes256|chacha] [--capacity BYTES]"
                        .into());
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if args.bytes < 2 * READ as u64 {
            return Err("the file must hold at least 8 KiB".into());
        }
        if args.rounds == 0 || args.reads == Some(0) {
            return Err("--rounds and --reads must be positive".into());
        }
        Ok(args)
    }

    fn to_usize(x: u64) -> usize {
        usize::try_from(x).unwrap_or(usize::MAX)
    }

    /// `SplitMix64`: a fixed-seed generator, the same offsets for every
    /// variant.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn fill(&mut self, buf: &mut [u8]) {
            for chunk in buf.chunks_mut(8) {
                let x = self.next().to_le_bytes();
                chunk.copy_from_slice(&x[..chunk.len()]);
            }
        }
    }

    /// The temporary directory, removed when dropped (also on an error or
    /// a panic).
    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            match fs::remove_dir_all(&self.0) {
                Ok(()) => eprintln!("removed {}", self.0.display()),
                Err(e) => eprintln!("could not remove {}: {e}", self.0.display()),
            }
        }
    }

    /// The encrypted file's segment geometry, to count from outside which
    /// segments a read covered.
    #[derive(Clone, Copy)]
    struct Geometry {
        /// Length of the encrypted file.
        len: u64,
    }

    impl Geometry {
        const SEALED: u64 = (SEGMENT + TAG_LEN) as u64;
        const HEADER: u64 = HEADER_LEN as u64;

        /// Segments that end in `(pos, pos + n]` and start at or after
        /// `run_start`: read completely by the reads since `run_start`.
        fn complete(self, run_start: u64, pos: u64, n: u64) -> u64 {
            let end = pos + n;
            if n == 0 || end <= Self::HEADER {
                return 0;
            }
            let mut i = pos.saturating_sub(Self::HEADER) / Self::SEALED;
            let mut count = 0;
            loop {
                let start = Self::HEADER + i * Self::SEALED;
                if start >= self.len {
                    break;
                }
                let seg_end = (start + Self::SEALED).min(self.len);
                if seg_end > end {
                    break;
                }
                if seg_end > pos && start >= run_start {
                    count += 1;
                }
                i += 1;
            }
            count
        }
    }

    /// What a counting wrapper saw.
    #[derive(Default)]
    struct Counts {
        calls: AtomicU64,
        bytes: AtomicU64,
        segments: AtomicU64,
        seeks: AtomicU64,
    }

    #[derive(Clone, Copy, Default, Debug)]
    struct Snapshot {
        calls: u64,
        bytes: u64,
        segments: u64,
        seeks: u64,
    }

    impl Counts {
        fn snapshot(&self) -> Snapshot {
            Snapshot {
                calls: self.calls.load(Relaxed),
                bytes: self.bytes.load(Relaxed),
                segments: self.segments.load(Relaxed),
                seeks: self.seeks.load(Relaxed),
            }
        }
    }

    impl std::ops::Sub for Snapshot {
        type Output = Snapshot;
        fn sub(self, o: Snapshot) -> Snapshot {
            Snapshot {
                calls: self.calls - o.calls,
                bytes: self.bytes - o.bytes,
                segments: self.segments - o.segments,
                seeks: self.seeks - o.seeks,
            }
        }
    }

    /// A positional source that counts: each call is its own run.
    struct CountAt<'a> {
        file: &'a File,
        geo: Geometry,
        counts: &'a Counts,
    }

    impl ReadAt for CountAt<'_> {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let n = FileExt::read_at(self.file, buf, offset)?;
            self.counts.calls.fetch_add(1, Relaxed);
            self.counts.bytes.fetch_add(n as u64, Relaxed);
            self.counts
                .segments
                .fetch_add(self.geo.complete(offset, offset, n as u64), Relaxed);
            Ok(n)
        }

        fn source_len(&self) -> io::Result<u64> {
            Ok(self.file.metadata()?.len())
        }
    }

    /// A `Read + Seek` source that counts: a run starts at each seek.
    struct CountSeq<'a> {
        file: &'a File,
        geo: Geometry,
        counts: &'a Counts,
        pos: u64,
        run_start: u64,
    }

    impl<'a> CountSeq<'a> {
        /// Over `file`, rewound to its start.
        fn new(mut file: &'a File, geo: Geometry, counts: &'a Counts) -> io::Result<Self> {
            file.rewind()?;
            Ok(CountSeq {
                file,
                geo,
                counts,
                pos: 0,
                run_start: 0,
            })
        }
    }

    impl Read for CountSeq<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.file.read(buf)?;
            self.counts.calls.fetch_add(1, Relaxed);
            self.counts.bytes.fetch_add(n as u64, Relaxed);
            self.counts.segments.fetch_add(
                self.geo.complete(self.run_start, self.pos, n as u64),
                Relaxed,
            );
            self.pos += n as u64;
            Ok(n)
        }
    }

    impl Seek for CountSeq<'_> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            let at = self.file.seek(pos)?;
            self.counts.seeks.fetch_add(1, Relaxed);
            self.pos = at;
            self.run_start = at;
            Ok(at)
        }

        fn stream_position(&mut self) -> io::Result<u64> {
            Ok(self.pos)
        }
    }

    /// A cheap fold of what was read, compared between the variants (and
    /// keeping the reads from being optimised away).
    fn fold(sum: u64, buf: &[u8]) -> u64 {
        let mut head = [0u8; 8];
        head.copy_from_slice(&buf[..8]);
        let mut tail = [0u8; 8];
        tail.copy_from_slice(&buf[buf.len() - 8..]);
        sum.wrapping_mul(31)
            .wrapping_add(u64::from_le_bytes(head) ^ u64::from_le_bytes(tail))
    }

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Variant {
        Pread,
        ReaderAt,
        ReaderSeek,
    }

    impl Variant {
        const ALL: [Variant; 3] = [Variant::Pread, Variant::ReaderAt, Variant::ReaderSeek];

        fn label(self) -> &'static str {
            match self {
                Variant::Pread => "plaintext `File`, `pread`",
                Variant::ReaderAt => "`CipherReaderAt::read_at`",
                Variant::ReaderSeek => "`CipherReader`: `seek` + `read_exact`",
            }
        }
    }

    /// The sources and readers the variants share.
    struct Bench<'a> {
        plain: CountAt<'a>,
        at: cipherio::CipherReaderAt<CountAt<'a>>,
        seq: CipherReader<CountSeq<'a>>,
        counts: [&'a Counts; 3],
    }

    impl Bench<'_> {
        /// Reads 4 KiB at each offset; the time, the fold and what the
        /// source saw.
        fn run(&mut self, v: Variant, offsets: &[u64]) -> io::Result<(Duration, u64, Snapshot)> {
            let mut buf = [0u8; READ];
            let mut sum = 0u64;
            let counts = self.counts[v as usize];
            let before = counts.snapshot();
            let t = Instant::now();
            match v {
                Variant::Pread => {
                    for &o in offsets {
                        let n = self.plain.read_at(&mut buf, o)?;
                        if n != READ {
                            return Err(io::Error::other(format!("short pread at {o}: {n}")));
                        }
                        sum = fold(sum, &buf);
                    }
                }
                Variant::ReaderAt => {
                    for &o in offsets {
                        let n = self.at.read_at(&mut buf, o)?;
                        if n != READ {
                            return Err(io::Error::other(format!("short read_at at {o}: {n}")));
                        }
                        sum = fold(sum, &buf);
                    }
                }
                Variant::ReaderSeek => {
                    for &o in offsets {
                        self.seq.seek(SeekFrom::Start(o))?;
                        self.seq.read_exact(&mut buf)?;
                        sum = fold(sum, &buf);
                    }
                }
            }
            let elapsed = t.elapsed();
            Ok((elapsed, sum, counts.snapshot() - before))
        }
    }

    /// Median and range of a sample.
    fn stats(xs: &[f64]) -> (f64, f64, f64) {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 {
            v[mid]
        } else {
            f64::midpoint(v[mid - 1], v[mid])
        };
        (median, v[0], v[v.len() - 1])
    }

    fn loadavg() -> String {
        fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "n/a".into())
    }

    fn human(bytes: u64) -> String {
        if bytes.is_multiple_of(GIB) {
            format!("{} GiB", bytes / GIB)
        } else {
            format!("{} MiB", bytes / MIB)
        }
    }

    pub fn main() -> ExitCode {
        let args = match parse_args() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        match run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("random_access: {e}");
                ExitCode::FAILURE
            }
        }
    }

    /// Writes the plaintext and its encryption.
    fn make_files(args: &Args, key: &Key, dir: &TempDir) -> io::Result<(PathBuf, PathBuf)> {
        let plain_path = dir.0.join("plain.bin");
        let sealed_path = dir.0.join("sealed.cio");
        let mut plain = BufWriter::with_capacity(1 << 20, File::create(&plain_path)?);
        let mut w = CipherWriter::with_capacity(SEGMENT, key, File::create(&sealed_path)?);
        let mut rng = Rng(SEED ^ 0xda7a);
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = args.bytes;
        while left > 0 {
            let n = to_usize(left.min(chunk.len() as u64));
            rng.fill(&mut chunk[..n]);
            plain.write_all(&chunk[..n])?;
            w.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        plain.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        w.finish()?.sync_all()?;
        Ok((plain_path, sealed_path))
    }

    fn run(args: &Args) -> io::Result<()> {
        let load_start = loadavg();
        let dir = TempDir(
            std::env::temp_dir().join(format!("cipherio-random-access-{}", std::process::id())),
        );
        fs::create_dir_all(&dir.0)?;
        let key = Key::generate(args.alg);

        let t = Instant::now();
        let (plain_path, sealed_path) = make_files(args, &key, &dir)?;
        let plain_file = File::open(&plain_path)?;
        let sealed_file = File::open(&sealed_path)?;
        let sealed_len = sealed_file.metadata()?.len();
        let geo = Geometry { len: sealed_len };
        let segments = args.bytes.div_ceil(SEGMENT as u64);
        eprintln!(
            "wrote {} of plaintext and {} bytes sealed ({segments} segments) in {:.1} s, in {}",
            human(args.bytes),
            sealed_len,
            t.elapsed().as_secs_f64(),
            dir.0.display()
        );

        let counts: [Counts; 3] = Default::default();
        let end_counts = [Counts::default(), Counts::default()];
        let at = CipherReader::builder(&key).build_at(CountAt {
            file: &sealed_file,
            geo,
            counts: &counts[1],
        })?;
        if at.plaintext_len() != args.bytes {
            return Err(io::Error::other("CipherReaderAt: wrong plaintext length"));
        }
        let seq = CipherReader::builder(&key)
            .capacity(args.capacity)
            .build(CountSeq::new(&sealed_file, geo, &counts[2])?);
        let mut bench = Bench {
            plain: CountAt {
                file: &plain_file,
                geo,
                counts: &counts[0],
            },
            at,
            seq,
            counts: [&counts[0], &counts[1], &counts[2]],
        };

        // The offsets: uniform over every 4 KiB window of the plaintext.
        let span = args.bytes - READ as u64 + 1;
        let mut rng = Rng(SEED);
        let mut offsets_for = |n: usize| (0..n).map(|_| rng.next() % span).collect::<Vec<_>>();

        // Check the three against each other (full buffers), which also
        // warms up, then calibrate.
        let check = offsets_for(2000);
        {
            let mut a = [0u8; READ];
            let mut b = [0u8; READ];
            let mut c = [0u8; READ];
            for &o in &check {
                bench.plain.read_at(&mut a, o)?;
                bench.at.read_at(&mut b, o)?;
                bench.seq.seek(SeekFrom::Start(o))?;
                bench.seq.read_exact(&mut c)?;
                if a != b || a != c {
                    return Err(io::Error::other(format!("the variants differ at {o}")));
                }
            }
        }
        let reads = match args.reads {
            Some(n) => n,
            None => {
                let probe = offsets_for(500);
                let mut per_read = 0.0;
                for v in Variant::ALL {
                    let (d, _, _) = bench.run(v, &probe)?;
                    per_read += d.as_secs_f64() / probe.len() as f64;
                }
                let n = TARGET_SECONDS / (args.rounds as f64 * per_read);
                // Truncation intended: a count of reads.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = n.clamp(1000.0, 5_000_000.0) as usize;
                n
            }
        };
        let offsets = offsets_for(reads);
        eprintln!(
            "{reads} random 4 KiB reads per variant and round, {} rounds; load average before: {load_start}",
            args.rounds
        );

        // Random reads, round by round, the order rotating.
        let mut rates: [Vec<f64>; 3] = Default::default();
        let mut seen: [Snapshot; 3] = Default::default();
        let mut sums: [Option<u64>; 3] = [None; 3];
        let mut loads = Vec::new();
        let mut end_times: [Vec<f64>; 2] = Default::default();
        let mut end_seen: [Snapshot; 2] = Default::default();
        let mut tail_expected = [0u8; READ];
        FileExt::read_exact_at(&plain_file, &mut tail_expected, args.bytes - READ as u64)?;
        for round in 0..args.rounds {
            for k in 0..3 {
                let v = Variant::ALL[(round + k) % 3];
                let (d, sum, s) = bench.run(v, &offsets)?;
                let i = v as usize;
                rates[i].push(reads as f64 / d.as_secs_f64());
                seen[i] = s;
                if *sums[i].get_or_insert(sum) != sum {
                    return Err(io::Error::other("a variant read different bytes"));
                }
            }
            let (t_end, s_end) = end_seq(&key, &sealed_file, geo, &end_counts[0], &tail_expected)?;
            end_times[0].push(t_end);
            end_seen[0] = s_end;
            let (t_end, s_end) = end_at(&key, &sealed_file, geo, &end_counts[1], &tail_expected)?;
            end_times[1].push(t_end);
            end_seen[1] = s_end;
            let load = loadavg();
            eprintln!(
                "round {}: {} | load {load}",
                round + 1,
                Variant::ALL
                    .iter()
                    .map(|&v| format!("{:.0}/s", rates[v as usize][round]))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            loads.push(load);
        }
        if sums[0] != sums[1] || sums[0] != sums[2] {
            return Err(io::Error::other("the variants read different bytes"));
        }

        // The report.
        let b = backend::detect();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} plaintext, {} in {} KiB segments ({} sealed bytes each); {reads} random 4 KiB \
             reads per variant and round at uniform offsets (fixed seed), {} rounds, variants \
             interleaved; `CipherReader` read-ahead {} B; AES {}, GHASH {}, ChaCha20 {}; \
             files in the page cache.",
            human(args.bytes),
            args.alg,
            SEGMENT / 1024,
            Geometry::SEALED,
            args.rounds,
            args.capacity,
            b.aes,
            b.ghash,
            b.chacha20,
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| random 4 KiB reads | reads/s, median (min–max) | × pread | segments opened / read | \
             bytes read / read (÷ 65552) | source calls / read |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        let (pread_median, _, _) = stats(&rates[0]);
        for v in Variant::ALL {
            let i = v as usize;
            let (med, lo, hi) = stats(&rates[i]);
            let s = seen[i];
            let per = |x: u64| x as f64 / reads as f64;
            let segs = if v == Variant::Pread {
                "–".to_string()
            } else {
                format!("{:.4}", per(s.segments))
            };
            let _ = writeln!(
                out,
                "| {} | {:.0} ({:.0}–{:.0}) | {:.3} | {segs} | {:.0} ({:.3}) | {:.2}{} |",
                v.label(),
                med,
                lo,
                hi,
                med / pread_median,
                per(s.bytes),
                per(s.bytes) / Geometry::SEALED as f64,
                per(s.calls),
                if s.seeks > 0 {
                    format!(" + {:.2} seek", per(s.seeks))
                } else {
                    String::new()
                },
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| last 4 KiB, fresh reader ({END_REPS} per round) | µs per op, median (min–max) | \
             segments opened | bytes read | source calls |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        let end_labels = [
            "`CipherReader::new` + `seek(End(-4096))` + `read_exact`",
            "`build_at` + `read_at(len - 4096)`",
        ];
        for i in 0..2 {
            let (med, lo, hi) = stats(&end_times[i]);
            let s = end_seen[i];
            let _ = writeln!(
                out,
                "| {} | {:.1} ({:.1}–{:.1}) | {} | {} | {}{} |",
                end_labels[i],
                med,
                lo,
                hi,
                s.segments,
                s.bytes,
                s.calls,
                if s.seeks > 0 {
                    format!(" + {} seeks", s.seeks)
                } else {
                    String::new()
                },
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Load average (1, 5, 15 min) before: {load_start}; after each round: {}.",
            loads.join(" | ")
        );
        println!("{out}");
        Ok(())
    }

    /// `SeekFrom::End(-4096)` + the last 4 KiB through a fresh
    /// `CipherReader`, `END_REPS` times: the mean µs per op, and what one
    /// op read.
    fn end_seq(
        key: &Key,
        file: &File,
        geo: Geometry,
        counts: &Counts,
        expected: &[u8; READ],
    ) -> io::Result<(f64, Snapshot)> {
        let mut buf = [0u8; READ];
        let mut total = Duration::ZERO;
        let mut one = Snapshot::default();
        for _ in 0..END_REPS {
            let source = CountSeq::new(file, geo, counts)?;
            let before = counts.snapshot();
            let t = Instant::now();
            let mut r = CipherReader::new(key, source);
            r.seek(SeekFrom::End(-(READ as i64)))?;
            r.read_exact(&mut buf)?;
            total += t.elapsed();
            one = counts.snapshot() - before;
            if &buf != expected {
                return Err(io::Error::other("wrong tail (CipherReader)"));
            }
        }
        Ok((total.as_secs_f64() * 1e6 / END_REPS as f64, one))
    }

    /// The same with `build_at` + `read_at`.
    fn end_at(
        key: &Key,
        file: &File,
        geo: Geometry,
        counts: &Counts,
        expected: &[u8; READ],
    ) -> io::Result<(f64, Snapshot)> {
        let mut buf = [0u8; READ];
        let mut total = Duration::ZERO;
        let mut one = Snapshot::default();
        for _ in 0..END_REPS {
            let before = counts.snapshot();
            let t = Instant::now();
            let r = CipherReader::builder(key).build_at(CountAt { file, geo, counts })?;
            let n = r.read_at(&mut buf, r.plaintext_len() - READ as u64)?;
            total += t.elapsed();
            one = counts.snapshot() - before;
            if n != READ || &buf != expected {
                return Err(io::Error::other("wrong tail (CipherReaderAt)"));
            }
        }
        Ok((total.as_secs_f64() * 1e6 / END_REPS as f64, one))
    }
}
