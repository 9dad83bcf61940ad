//! `cipherio`: streaming authenticated encryption of files and pipes.
#![forbid(unsafe_code)]

mod atomic;
mod files;
mod inspect;
mod keyfile;
mod keyset;
mod progress;

use std::io::{self, Cursor, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cipherio::{CipherReader, CipherWriter, Provider};
use clap::{Args, CommandFactory, Parser, Subcommand};
use clap_complete::Shell;

use files::{Contents, Input, Output, Refused};
use keyfile::{AlgorithmName, Candidate, Format, KeySource, Keys, plain};
use progress::Progress;

/// Exit status: the stream did not verify (authentication failure,
/// truncation, trailing data, a header that is not a stream for this key).
const EXIT_UNAUTHENTIC: u8 = 3;
/// Exit status: the command line is wrong, or the command is refused.
const EXIT_USAGE: u8 = 2;

/// The exit statuses, for every command's help.
const EXIT_STATUSES: &str = "Exit status: 0 ok, 1 error, 2 usage or refused, 3 the input did \
    not authenticate (tampered, truncated, or not sealed with this key).";

/// Bytes moved per read and write call, and the decrypting reader's
/// read-ahead: small enough that what one call brings from the kernel is
/// still in the core's L2 cache (256 KiB and more on current x86-64 and
/// aarch64 cores) when it is sealed or opened, and large enough that the
/// calls themselves cost next to nothing (8 per MiB).
const CHUNK: usize = 128 << 10;
/// Default plaintext bytes per segment.
const DEFAULT_SEGMENT: usize = 64 << 10;

/// The fastest AEAD implementation in this build: AWS-LC (the default
/// `aws-lc` feature), otherwise RustCrypto. Both read and write the same
/// bytes.
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

#[derive(Parser)]
#[command(
    name = "cipherio",
    version,
    about = "Streaming authenticated encryption of files and pipes",
    long_about = "Streaming authenticated encryption of files and pipes.\n\n\
        Files are sealed in segments (AES-GCM or ChaCha20-Poly1305) with a key from \
        `cipherio keygen` (cipherio's format, or C2SP chunked encryption with a \
        Cobblestone key) or a Tink keyset; decryption writes only authenticated bytes, \
        and a file output appears only once the whole stream has authenticated.",
    after_help = EXIT_STATUSES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make a new key file (never overwrites one)
    #[command(after_help = EXIT_STATUSES)]
    Keygen(KeygenArgs),
    /// Encrypt a file or standard input
    #[command(after_help = EXIT_STATUSES)]
    Encrypt(EncryptArgs),
    /// Decrypt a file or standard input, writing only authenticated bytes
    #[command(after_help = EXIT_STATUSES)]
    Decrypt(DecryptArgs),
    /// Authenticate a whole stream and write nothing
    #[command(after_help = EXIT_STATUSES)]
    Verify(VerifyArgs),
    /// Show what a stream's header says (no key needed; nothing is authenticated;
    /// a Cobblestone stream has no header to show)
    #[command(after_help = EXIT_STATUSES)]
    Inspect(InspectArgs),
    /// Write plaintext bytes A..B of an encrypted file, opening only their segments
    #[command(after_help = EXIT_STATUSES)]
    Cat(CatArgs),
    /// Print a shell completion script
    #[command(after_help = EXIT_STATUSES)]
    Completions {
        /// The shell
        shell: Shell,
    },
}

#[derive(Args)]
struct KeygenArgs {
    /// Write the key to FILE (created with mode 0600; never overwritten)
    /// instead of standard output
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The algorithm the key is for
    #[arg(short, long, value_enum, default_value_t = AlgorithmName::Aes256gcm)]
    algorithm: AlgorithmName,
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct KeyArgs {
    /// Read the key from a key file
    #[arg(short = 'k', long = "key", value_name = "KEYFILE")]
    key_file: Option<PathBuf>,
    /// Read the key (the key file's text) from an environment variable
    #[arg(long, value_name = "VAR")]
    key_env: Option<String>,
    /// Read the key (the key file's text) from an open file descriptor
    #[arg(long, value_name = "N")]
    key_fd: Option<String>,
    /// Use a Tink keyset (cleartext JSON or binary, as tinkey writes it)
    /// with streaming AEAD keys: Tink's format, readable by Tink in any
    /// language
    #[arg(long, value_name = "FILE")]
    tink_keyset: Option<PathBuf>,
}

impl KeyArgs {
    fn source(&self) -> KeySource {
        match (
            &self.key_file,
            &self.key_env,
            &self.key_fd,
            &self.tink_keyset,
        ) {
            (Some(p), ..) => KeySource::File(p.clone()),
            (_, Some(v), ..) => KeySource::Env(v.clone()),
            (_, _, Some(fd), _) => KeySource::Fd(fd.clone()),
            (.., Some(p)) => KeySource::TinkKeyset(p.clone()),
            _ => unreachable!("clap requires one key source"),
        }
    }
}

#[derive(Args)]
struct StreamArgs {
    /// Associated data: authenticated with the stream, not stored in it;
    /// decryption needs the same
    #[arg(long, value_name = "TEXT")]
    ad: Option<String>,
    /// Associated data given as hex
    #[arg(long, value_name = "HEX", conflicts_with = "ad")]
    ad_hex: Option<String>,
    /// Threads sealing or opening segments (at most the CPUs this command
    /// may run on; more would only hold more segments in memory)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
}

impl StreamArgs {
    /// The threads asked for, but no more than can run at once: each holds
    /// a segment of up to 16 MiB, and those beyond the CPUs add only memory.
    fn threads(&self) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        usize::from(self.threads).min(cpus)
    }

    fn associated_data(&self) -> Result<Vec<u8>> {
        match (&self.ad, &self.ad_hex) {
            (Some(t), _) => Ok(t.as_bytes().to_vec()),
            (_, Some(h)) => decode_hex(h)
                .ok_or_else(|| anyhow::Error::new(Refused("--ad-hex: not valid hex".to_string()))),
            _ => Ok(Vec::new()),
        }
    }
}

#[derive(Args)]
struct IoArgs {
    /// The input file (default: standard input)
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,
    /// Write to FILE (atomically: it appears only when complete; new
    /// plaintext files are readable by their owner only) instead of
    /// standard output. A device, a FIFO or /dev/stdout is written
    /// directly; a symbolic link is written through
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace an existing output file, keeping its owner, group and mode
    /// (encrypting: also write ciphertext to a terminal)
    #[arg(short, long)]
    force: bool,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct EncryptArgs {
    #[command(flatten)]
    key: KeyArgs,
    #[command(flatten)]
    io: IoArgs,
    #[command(flatten)]
    stream: StreamArgs,
    /// Plaintext bytes per segment, e.g. 65536, 64K, 1M (native format;
    /// at most 16M). A Tink key sets its own; a Cobblestone key's chunks
    /// are 16 KiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_segment_size)]
    segment_size: Option<usize>,
}

#[derive(Args)]
struct DecryptArgs {
    #[command(flatten)]
    key: KeyArgs,
    #[command(flatten)]
    io: IoArgs,
    #[command(flatten)]
    stream: StreamArgs,
}

#[derive(Args)]
struct VerifyArgs {
    #[command(flatten)]
    key: KeyArgs,
    /// The input file (default: standard input)
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,
    #[command(flatten)]
    stream: StreamArgs,
    /// No progress bar, and no report when the stream is authentic
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct InspectArgs {
    /// The input file (default: standard input)
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,
    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CatArgs {
    #[command(flatten)]
    key: KeyArgs,
    /// The plaintext byte range: A..B (B excluded), A.., ..B; A and B are
    /// byte offsets, with an optional K, M or G suffix (1024, 1024², 1024³)
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    range: (Option<u64>, Option<u64>),
    /// The encrypted file (seekable: a file, or `-` for standard input
    /// redirected from one)
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// Associated data: authenticated with the stream, not stored in it
    #[arg(long, value_name = "TEXT")]
    ad: Option<String>,
    /// Associated data given as hex
    #[arg(long, value_name = "HEX", conflicts_with = "ad")]
    ad_hex: Option<String>,
}

fn main() -> ExitCode {
    let parsed = Cli::try_parse().or_else(|e| match e.kind() {
        // Help and version are the command's output: written as any
        // other, a failure to write them is an error. Styled for a
        // terminal unless NO_COLOR is set.
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
            let plain = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let text = if io::stdout().is_terminal() && !plain {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            Err(files::write_stdout(text.as_bytes()))
        }
        _ => e.exit(),
    });
    let result = match parsed {
        Ok(cli) => run(cli),
        Err(Ok(())) => return ExitCode::SUCCESS,
        Err(Err(e)) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = exit_code(&e);
            if let Some(msg) = message(&e) {
                say(format_args!("cipherio: {msg}"));
            }
            ExitCode::from(code)
        }
    }
}

/// Writes a line to standard error. One that cannot be written (a full
/// device, a reader gone) is lost, never a panic: the exit status still
/// says how the command went.
fn say(line: std::fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// The error's chain on one line, without the library's own prefix; `None`
/// for a broken pipe on standard output (the reader went away: say nothing).
fn message(e: &anyhow::Error) -> Option<String> {
    if is_broken_pipe(e) {
        return None;
    }
    let parts: Vec<String> = e.chain().map(|c| plain(c).replace('\n', " ")).collect();
    Some(parts.join(": "))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe && cipher_error(io).is_none())
    })
}

fn cipher_error(e: &io::Error) -> Option<&cipherio::Error> {
    cipherio::Error::from_io(e)
}

/// 3 for a stream that did not verify, 2 for a refusal, 1 for the rest.
fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if cause.downcast_ref::<Refused>().is_some() {
            return EXIT_USAGE;
        }
        let lib = cause
            .downcast_ref::<io::Error>()
            .and_then(cipher_error)
            .or_else(|| cause.downcast_ref::<cipherio::Error>());
        if let Some(lib) = lib {
            return if unauthentic(lib) {
                EXIT_UNAUTHENTIC
            } else {
                1
            };
        }
    }
    1
}

/// Whether the library's error says the input is not a stream sealed with
/// this key (rather than that the machine or the configuration failed).
fn unauthentic(e: &cipherio::Error) -> bool {
    matches!(
        e,
        cipherio::Error::Authentication
            | cipherio::Error::Truncated
            | cipherio::Error::TrailingData
            | cipherio::Error::EmptyFinalSegment
            | cipherio::Error::TooManySegments
            | cipherio::Error::BadMagic
            | cipherio::Error::HeaderLength { .. }
            | cipherio::Error::UnsupportedVersion(_)
            | cipherio::Error::UnknownAlgorithm(_)
            | cipherio::Error::AlgorithmMismatch { .. }
            | cipherio::Error::ZeroSegmentSize
            | cipherio::Error::SegmentTooLarge { .. }
    )
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Keygen(a) => keygen(&a),
        Command::Encrypt(a) => encrypt(&a),
        Command::Decrypt(a) => decrypt(&a),
        Command::Verify(a) => verify(&a),
        Command::Inspect(a) => inspect::run(Input::open(a.input.as_deref())?, a.json),
        Command::Cat(a) => cat(&a),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "cipherio", &mut script);
            files::write_stdout(&script)
        }
    }
}

fn keygen(a: &KeygenArgs) -> Result<()> {
    let text = keyfile::new_key_text(a.algorithm)?;
    match &a.output {
        Some(path) => {
            atomic::handle_signals()?;
            keyfile::write_new_key_file(path, &text)
        }
        None => files::write_stdout(text.as_bytes()),
    }
}

fn encrypt(a: &EncryptArgs) -> Result<()> {
    let keys = keyfile::load(&a.key.source())?;
    let key = keys.primary();
    let refuse = |why: &str| {
        Err(anyhow::Error::new(Refused(format!(
            "--segment-size: {why}"
        ))))
    };
    let capacity = match (a.segment_size, key.format) {
        (Some(_), Format::Tink) => return refuse("a Tink key sets its own segment size"),
        (Some(_), Format::Cobblestone) => {
            return refuse("a Cobblestone key's chunks are 16 KiB, fixed by the format");
        }
        (s, Format::Native) => Some(s.unwrap_or(DEFAULT_SEGMENT)),
        (None, _) => None,
    };
    let aad = a.stream.associated_data()?;
    let (mut src, mut out, in_name, out_name, _) = a.io.open(Contents::Ciphertext)?;
    let mut builder = CipherWriter::builder(&key.key)
        .provider(PROVIDER)
        .associated_data(&aad)
        .threads(a.stream.threads());
    if let Some(c) = capacity {
        builder = builder.capacity(c);
    }
    let mut w = builder.build(out.file());
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow::Error::new(e).context(format!("{in_name}: cannot read"))),
        };
        w.write_all(&buf[..n])
            .map_err(|e| write_error(e, &out_name))?;
    }
    w.finish().map_err(|e| write_error(e, &out_name))?;
    drop(src);
    out.commit()
}

/// A writer's error: the library's own (a bad segment size, ...) or the
/// output's.
fn write_error(e: io::Error, out: &str) -> anyhow::Error {
    if let Some(lib) = cipher_error(&e) {
        if matches!(
            lib,
            cipherio::Error::InvalidCapacity(_) | cipherio::Error::CapacityForKey { .. }
        ) {
            return anyhow::Error::new(Refused(format!("--segment-size: {}", plain(lib))));
        }
        return anyhow::Error::new(e).context("encryption failed");
    }
    anyhow::Error::new(e).context(format!("{out}: cannot write"))
}

/// Which of the keys seals the stream that starts with `prefix` (the whole
/// stream if it is shorter than the largest first segment). One key is
/// taken as it is; of several, the first whose first segment opens.
fn choose_key<'k>(keys: &'k Keys, prefix: &[u8], aad: &[u8]) -> Result<&'k Candidate, io::Error> {
    if keys.candidates.len() == 1 {
        return Ok(keys.primary());
    }
    let mut first_err = None;
    for c in &keys.candidates {
        let mut r = CipherReader::builder(&c.key)
            .provider(PROVIDER)
            .associated_data(aad)
            .build(Cursor::new(prefix));
        let mut one = [0u8; 1];
        // Any answer but an error (a byte, or the end of an empty stream)
        // means the first segment opened with this key.
        match r.read(&mut one) {
            Ok(_n) => return Ok(c),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| io::Error::other("no key")))
}

/// Reads up to `n` bytes (fewer only at the end of the input).
fn read_prefix(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// Opens the stream on `src` on `threads` threads and copies its
/// authenticated plaintext to `out` (or drops it, for `verify`). From a
/// regular file (`regular`), which never waits for this side, the next
/// run is read while the threads open one (prefetch); from a pipe or a
/// terminal it is not, so that what has arrived is written out before
/// the next read waits.
fn open_stream(
    keys: &Keys,
    src: impl Read,
    in_name: &str,
    aad: &[u8],
    (threads, regular): (usize, bool),
    mut out: Option<(&mut dyn Write, &str)>,
) -> Result<(u64, String)> {
    let mut src = src;
    let probe = keys
        .candidates
        .iter()
        .map(|c| c.first_segment)
        .max()
        .unwrap_or(0);
    let prefix = if keys.candidates.len() > 1 {
        read_prefix(&mut src, probe).with_context(|| format!("{in_name}: cannot read"))?
    } else {
        Vec::new()
    };
    let key = choose_key(keys, &prefix, aad).map_err(|e| stream_error(e, in_name))?;
    let mut r = CipherReader::builder(&key.key)
        .provider(PROVIDER)
        .associated_data(aad)
        .threads(threads)
        .prefetch(regular)
        .capacity(CHUNK)
        .build(Cursor::new(prefix).chain(src));
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok((total, key.label.clone())),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(stream_error(e, in_name)),
        };
        if let Some((w, name)) = out.as_mut() {
            w.write_all(&buf[..n])
                .with_context(|| format!("{name}: cannot write"))?;
        }
        total += n as u64;
    }
}

/// A reader's error, named after the input and said plainly.
fn stream_error(e: io::Error, in_name: &str) -> anyhow::Error {
    let what = match cipher_error(&e) {
        Some(cipherio::Error::Authentication) => format!(
            "{in_name}: not authentic (wrong key or associated data, or the data was changed)"
        ),
        Some(cipherio::Error::Truncated) => format!("{in_name}: truncated"),
        Some(lib) if unauthentic(lib) => format!("{in_name}: not a valid stream for this key"),
        // Memory, threads: the file is not to blame.
        Some(_) => format!("{in_name}: cannot decrypt"),
        None => format!("{in_name}: cannot read"),
    };
    anyhow::Error::new(e).context(what)
}

/// What [`IoArgs::open`] opened: the input behind its progress bar, the
/// output, their names, and whether the input is a regular file.
type Opened = (Progress<std::fs::File>, Output, String, String, bool);

impl IoArgs {
    /// Opens the input and the output for `contents` (after the signal
    /// handlers that remove a temporary output), with the progress bar on
    /// the input: the source, the output, their names for messages, and
    /// whether the input is a regular file.
    fn open(&self, contents: Contents) -> Result<Opened> {
        atomic::handle_signals()?;
        let input = Input::open(self.input.as_deref())?;
        let out = Output::open(self.output.as_deref(), &input, contents, self.force)?;
        let in_name = input.name.clone();
        let out_name = out.name().to_string();
        let regular = input.len.is_some();
        Ok((
            Progress::new(input.file, input.len, self.quiet),
            out,
            in_name,
            out_name,
            regular,
        ))
    }
}

fn decrypt(a: &DecryptArgs) -> Result<()> {
    let keys = keyfile::load(&a.key.source())?;
    let aad = a.stream.associated_data()?;
    let (src, mut out, in_name, out_name, regular) = a.io.open(Contents::Plaintext)?;
    open_stream(
        &keys,
        src,
        &in_name,
        &aad,
        (a.stream.threads(), regular),
        Some((out.file(), &out_name)),
    )?;
    // Only now, with the final segment authenticated, does the file appear.
    out.commit()
}

fn verify(a: &VerifyArgs) -> Result<()> {
    let keys = keyfile::load(&a.key.source())?;
    let aad = a.stream.associated_data()?;
    let input = Input::open(a.input.as_deref())?;
    let in_name = input.name.clone();
    let regular = input.len.is_some();
    let src = Progress::new(input.file, input.len, a.quiet);
    let threads = (a.stream.threads(), regular);
    let (len, label) = open_stream(&keys, src, &in_name, &aad, threads, None)?;
    if !a.quiet {
        say(format_args!(
            "{in_name}: authentic: {len} bytes of plaintext, sealed with the {label}"
        ));
    }
    Ok(())
}

fn cat(a: &CatArgs) -> Result<()> {
    let keys = keyfile::load(&a.key.source())?;
    let aad = StreamArgs {
        ad: a.ad.clone(),
        ad_hex: a.ad_hex.clone(),
        threads: 1,
    }
    .associated_data()?;
    let input = Input::open(Some(&a.input))?;
    let mut out = Output::open(None, &input, Contents::Plaintext, false)?;
    let Input { mut file, name, .. } = input;
    file.stream_position()
        .with_context(|| format!("{name}: cannot seek: cat reads a file (decrypt reads a pipe)"))?;
    let key = if keys.candidates.len() > 1 {
        let probe = keys
            .candidates
            .iter()
            .map(|c| c.first_segment)
            .max()
            .unwrap_or(0);
        let prefix =
            read_prefix(&mut file, probe).with_context(|| format!("{name}: cannot read"))?;
        file.seek(SeekFrom::Start(0))
            .with_context(|| format!("{name}: cannot seek"))?;
        choose_key(&keys, &prefix, &aad).map_err(|e| stream_error(e, &name))?
    } else {
        keys.primary()
    };
    let mut r = CipherReader::builder(&key.key)
        .provider(PROVIDER)
        .associated_data(&aad)
        .build(file);
    let len = r.plaintext_len().map_err(|e| stream_error(e, &name))?;
    let start = a.range.0.unwrap_or(0);
    let end = a.range.1.unwrap_or(len);
    if start > len {
        bail!("{name}: the range starts at {start}, past the plaintext's {len} bytes");
    }
    if end > len {
        bail!("{name}: the range ends at {end}, past the plaintext's {len} bytes");
    }
    if start > end {
        return Err(anyhow::Error::new(Refused(format!(
            "--range: {start}..{end} is backwards"
        ))));
    }
    r.seek(SeekFrom::Start(start))
        .map_err(|e| stream_error(e, &name))?;
    let mut left = end - start;
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let want = usize::try_from(left.min(CHUNK as u64)).unwrap_or(CHUNK);
        let n = r
            .read(&mut buf[..want])
            .map_err(|e| stream_error(e, &name))?;
        if n == 0 {
            return Err(stream_error(cipherio::Error::Truncated.into(), &name));
        }
        out.file()
            .write_all(&buf[..n])
            .context("<stdout>: cannot write")?;
        left -= n as u64;
    }
    Ok(())
}

/// `A..B`, `A..`, `..B` (decimal byte offsets).
fn parse_range(s: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not A..B"))?;
    let num = |t: &str| -> Result<Option<u64>, String> {
        if t.is_empty() {
            Ok(None)
        } else {
            parse_size(t).map(|v| Some(v as u64))
        }
    };
    Ok((num(a)?, num(b)?))
}

/// A byte count: digits with an optional K, M or G (powers of 1024; `KiB`
/// and `k` too).
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &t[digits.len()..];
    let mult: usize = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (K, M or G)")),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
}

/// A segment size: a byte count from 1 to the largest a writer takes,
/// refused with the command line, before any input is read.
fn parse_segment_size(s: &str) -> Result<usize, String> {
    let max = cipherio::format::MAX_WRITER_CAPACITY;
    match parse_size(s)? {
        n @ 1.. if n <= max => Ok(n),
        _ => Err(format!("`{s}`: from 1 byte to {}M", max >> 20)),
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
