//! The framed variant, measured: against the fixed-size format in memory,
//! and against plain TCP and TLS 1.3 (rustls) in conversations over loopback.
//!
//! ```text
//! cargo run --release --manifest-path tls-bench/Cargo.toml -- [--quick] [--rounds N] [--capacity BYTES]
//!     [--stream BYTES] [--only bulk|conversation] [--once CELL]
//! ```
//!
//! This crate turns cipherio's `aws-lc` feature on, so cipherio and rustls
//! seal with the same AEAD, AWS-LC's AES-GCM (RustCrypto runs as a second
//! cipherio column).
//!
//! Everything runs in one process, round by round (at least 5 rounds), the
//! order of the variants rotating each round; each table gives the median
//! and the min–max over the rounds. The machine may be shared: the load
//! average is printed before and after.
//!
//! 1. Bulk, in memory, AES-128-GCM: 64 MiB written in capacity-sized writes
//!    into `io::sink()` (encrypt) and read back from a `&[u8]` with 64 KiB
//!    reads (decrypt), framed and fixed-size, at 8 KiB and 64 KiB capacity.
//!    A round takes each capacity and direction in turn and times its two
//!    formats pass by pass, alternating which goes first, so that the two
//!    sides of a ratio run within milliseconds of each other. A round's
//!    value for a cell is the fastest of 5 passes (3 with `--quick`): a pass
//!    takes milliseconds, and one descheduled pass should not count. The
//!    ratio column is the median over the rounds of framed ÷ fixed-size
//!    within the round. A 64 MiB stream does not fit in any cache, so this
//!    measures memory bandwidth as much as the format; `--stream BYTES`
//!    makes each pass that many bytes sealed (or opened) again and again
//!    (`--stream 1048576`: 64 streams of the same 1 MiB, in cache).
//! 2. Conversations over loopback TCP (`127.0.0.1`, `TCP_NODELAY` on both
//!    ends): a server thread echoes each message back; the client measures
//!    round trips per second for 64 B, 1 KiB and 16 KiB messages (write the
//!    message, flush, read exactly the reply), and one-way throughput (256
//!    MiB client → server in 64 KiB writes; the server answers one byte once
//!    it has everything). Variants: plain TCP; cipherio framed (AES-128-GCM,
//!    one `CipherWriter` built with `.framed()` and one `CipherReader` per
//!    direction, writer capacity `--capacity`, default 64 KiB; once per
//!    provider compiled in: RustCrypto, and AWS-LC with `--features aws-lc`);
//!    TLS 1.3 with
//!    rustls on its aws-lc-rs provider, `TLS13_AES_128_GCM_SHA256` only, with
//!    a self-signed certificate made at startup by rcgen. Each variant keeps
//!    one connection for the whole run: the handshake (and the cipherio
//!    header) is outside the timed loops.
//!
//! `--quick` shortens every timed loop about fourfold (5 rounds, 16 MiB
//! bulk in memory, 64 MiB one-way). `--only bulk` or `--only
//! conversation` runs one part.
//!
//! The tables are printed and written, with the load averages, to
//! `framed-bench/report.md` under cargo's target directory
//! (`tls-bench/target/`, or `CARGO_TARGET_DIR`), and part 2 is plotted
//! beside it, `framed-bench/conversation.svg`; the run prints both paths.
//!
//! Time is noisy on a shared machine; instructions are not. `--once CELL`
//! (`encrypt-fixed-8`, `decrypt-framed-64`, …) runs one untimed pass of
//! one cell of part 1 and exits, for `valgrind --tool=callgrind
//! --toggle-collect='framed_bench::decrypt'` (or `encrypt`), which then
//! counts that pass alone, not the sealing that prepares it.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider, backend};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

#[path = "../../bench-common/report.rs"]
mod report;
use report::{cell, loadavg, pattern, stats};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// Bytes per read when decrypting in memory, and per write one-way.
const CHUNK: usize = 64 * KIB;

struct Args {
    quick: bool,
    rounds: usize,
    capacity: usize,
    /// Run only part 1 (`bulk`) or part 2 (`conversation`).
    only: Option<Part>,
    /// One untimed pass of one bulk cell, then exit (`--once`).
    once: Option<Cell>,
    /// Part 1's stream length (`--stream`): a pass is that many bytes
    /// sealed or opened again and again, so the data can stay in cache.
    stream: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Bulk,
    Conversation,
}

/// A cell of the bulk table: capacity (in part 1, its index in the table),
/// framed, decrypt.
type Cell = (usize, bool, bool);

const USAGE: &str = "usage: framed_bench [--quick] [--rounds N (≥ 5)] [--capacity BYTES] \
                     [--stream BYTES] [--only bulk|conversation] \
                     [--once encrypt|decrypt-fixed|framed-8|64]";

/// A `--once` argument, `decrypt-framed-8`: direction, format, capacity in KiB.
fn parse_cell(v: &str) -> Option<Cell> {
    let mut it = v.split('-');
    let dec = match it.next()? {
        "encrypt" => false,
        "decrypt" => true,
        _ => return None,
    };
    let framed = match it.next()? {
        "fixed" => false,
        "framed" => true,
        _ => return None,
    };
    let cap = match it.next()? {
        "8" => 8 * KIB,
        "64" => 64 * KIB,
        _ => return None,
    };
    it.next().is_none().then_some((cap, framed, dec))
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        rounds: 0,
        capacity: 64 * KIB,
        only: None,
        once: None,
        stream: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.quick = true,
            "--rounds" | "--capacity" | "--stream" => {
                let v: usize = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{a} needs a number"))?;
                match a.as_str() {
                    "--rounds" => args.rounds = v,
                    "--capacity" => args.capacity = v,
                    _ => args.stream = Some(v),
                }
            }
            "--only" => {
                args.only = match it.next().as_deref() {
                    Some("bulk") => Some(Part::Bulk),
                    Some("conversation") => Some(Part::Conversation),
                    _ => return Err(format!("--only: bulk or conversation\n{USAGE}")),
                };
            }
            "--once" => {
                args.once = it.next().as_deref().and_then(parse_cell);
                if args.once.is_none() {
                    return Err(format!("--once: a cell such as decrypt-framed-8\n{USAGE}"));
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if args.rounds == 0 {
        args.rounds = if args.quick { 5 } else { 7 };
    }
    if args.rounds < 5 {
        return Err("--rounds: at least 5".into());
    }
    if args.capacity == 0 {
        return Err("--capacity: at least 1".into());
    }
    if args.stream == Some(0) {
        return Err("--stream: at least 1".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    report::main_with("framed_bench", parse_args, run)
}

fn run(args: &Args) -> io::Result<()> {
    if let Some(cell) = args.once {
        return once(args, cell);
    }
    let load_start = loadavg();
    let b = backend::detect();
    let mut report = String::from("# framed_bench\n\n");
    let _ = writeln!(
        report,
        "{} rounds{}, RustCrypto backends {b:?}; load average (1/5/15 min) at start: {load_start}\n",
        args.rounds,
        if args.quick { " (--quick)" } else { "" },
    );
    print!("{report}");
    let key = Key::generate(Algorithm::Aes128Gcm);

    if args.only != Some(Part::Conversation) {
        report.push_str(&bulk_in_memory(args, &key)?);
        let line = format!("Load average after part 1: {}\n", loadavg());
        println!("{line}");
        let _ = writeln!(report, "{line}");
    }
    let mut table = None;
    if args.only != Some(Part::Bulk) {
        let (text, t) = conversations(args, &key)?;
        report.push_str(&text);
        table = Some(t);
    }
    let line = format!(
        "Load average: {load_start} at start, {} at the end.",
        loadavg()
    );
    println!("{line}\n");
    let _ = writeln!(report, "{line}");

    // The directory holds one run: a plot left by an earlier run that had
    // part 2 would not match this report.
    let dir = out_dir()?;
    fs::create_dir_all(&dir)?;
    let svg = dir.join("conversation.svg");
    match fs::remove_file(&svg) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    if let Some(t) = &table {
        let _ = writeln!(report, "\n![the conversation table](conversation.svg)");
        fs::write(&svg, plot(t, args.rounds, &line))?;
    }
    let md = dir.join("report.md");
    fs::write(&md, &report)?;
    println!("written: {}", md.display());
    if table.is_some() {
        println!("written: {} (part 2, plotted)", svg.display());
    }
    Ok(())
}

/// Where the report and the plot go: `framed-bench/` under cargo's target
/// directory (`CARGO_TARGET_DIR`, relative to where cargo ran, as cargo
/// reads it; else `tls-bench/target/`).
fn out_dir() -> io::Result<PathBuf> {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => std::env::current_dir()?.join(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
    };
    Ok(target.join("framed-bench"))
}

// ---------------------------------------------------------------------------
// Part 1: framed against fixed-size, in memory.

/// `--once`: one untimed pass of one bulk cell (64 MiB, 16 with `--quick`),
/// for instruction counts: `valgrind --tool=callgrind
/// --toggle-collect='framed_bench::encrypt'` (or `decrypt`) counts the pass
/// alone, not the sealing that prepares a decryption.
fn once(args: &Args, (cap, framed, dec): Cell) -> io::Result<()> {
    let (stream, reps) = stream_split(args, if args.quick { 16 * MIB } else { 64 * MIB });
    let key = Key::generate(Algorithm::Aes128Gcm);
    let data = pattern(stream);
    let d = if dec {
        let sealed = seal_all(&key, cap, framed, &data)?;
        decrypt(&key, &sealed, &mut vec![0u8; CHUNK], stream, reps)?
    } else {
        encrypt(&key, cap, framed, &data, reps)?
    };
    println!(
        "one pass: {} {} {} KiB, {reps} x {} KiB, {:.3} s (provider {})",
        if dec { "decrypt" } else { "encrypt" },
        if framed { "framed" } else { "fixed-size" },
        cap / KIB,
        stream / KIB,
        d.as_secs_f64(),
        BULK.name()
    );
    Ok(())
}

/// The provider of the in-memory bulk section and of the ratio against
/// rustls: AWS-LC, the same library as rustls's provider here (named
/// explicitly: cipherio's default is RustCrypto whatever the features).
const BULK: Provider = Provider::AwsLc;

#[inline(never)]
/// `reps` streams of `data`, each into `io::sink()`; the time of all.
fn encrypt(key: &Key, cap: usize, framed: bool, data: &[u8], reps: usize) -> io::Result<Duration> {
    let t = Instant::now();
    for _ in 0..reps {
        let mut b = CipherWriter::builder(key).capacity(cap).provider(BULK);
        if framed {
            b = b.framed();
        }
        let mut w = b.build(io::sink());
        for c in data.chunks(cap) {
            w.write_all(c)?;
        }
        w.finish()?;
    }
    Ok(t.elapsed())
}

fn seal_all(key: &Key, cap: usize, framed: bool, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut b = CipherWriter::builder(key).capacity(cap).provider(BULK);
    if framed {
        b = b.framed();
    }
    let mut w = b.build(Vec::with_capacity(data.len() + data.len() / 256 + 4096));
    for c in data.chunks(cap) {
        w.write_all(c)?;
    }
    w.finish()
}

#[inline(never)]
/// `sealed` opened `reps` times, in `buf`-sized reads; the time of all.
fn decrypt(
    key: &Key,
    sealed: &[u8],
    buf: &mut [u8],
    expect: usize,
    reps: usize,
) -> io::Result<Duration> {
    let t = Instant::now();
    let mut total = 0;
    for _ in 0..reps {
        let mut r = CipherReader::builder(key).provider(BULK).build(sealed);
        loop {
            let n = r.read(buf)?;
            if n == 0 {
                break;
            }
            total += n;
        }
    }
    let d = t.elapsed();
    if total != expect * reps {
        return Err(io::Error::other("decrypted a different length"));
    }
    Ok(d)
}

/// A pass of `len` bytes as `--stream`-sized streams: the stream's length
/// and how many of them (one stream of `len` without `--stream`).
fn stream_split(args: &Args, len: usize) -> (usize, usize) {
    let stream = args.stream.map_or(len, |s| s.min(len));
    (stream, len / stream)
}

/// Part 1: prints the table and returns it.
fn bulk_in_memory(args: &Args, key: &Key) -> io::Result<String> {
    let len = if args.quick { 16 * MIB } else { 64 * MIB };
    // A pass takes milliseconds: a round's value is the fastest of a few
    // passes of the cell, so that one descheduled pass does not count.
    let passes = if args.quick { 3 } else { 5 };
    let (stream, reps) = stream_split(args, len);
    let len = stream * reps;
    let data = pattern(stream);
    let caps = [8 * KIB, 64 * KIB];
    // Cells: (capacity index, framed, decrypt).
    let mut cells = Vec::new();
    for ci in 0..caps.len() {
        for framed in [false, true] {
            for dec in [false, true] {
                cells.push((ci, framed, dec));
            }
        }
    }
    let mut sealed = Vec::new();
    for &cap in &caps {
        let fixed = seal_all(key, cap, false, &data)?;
        let framed = seal_all(key, cap, true, &data)?;
        // Check both open to the same bytes once.
        for s in [&fixed, &framed] {
            let mut out = Vec::with_capacity(stream);
            CipherReader::builder(key)
                .provider(BULK)
                .build(&s[..])
                .read_to_end(&mut out)?;
            if out != data {
                return Err(io::Error::other("round trip differs"));
            }
        }
        sealed.push([fixed, framed]);
    }
    let mut buf = vec![0u8; CHUNK];
    let mut pass = |(ci, framed, dec): Cell| {
        if dec {
            let sealed = &sealed[ci][usize::from(framed)];
            decrypt(key, sealed, &mut buf, stream, reps)
        } else {
            encrypt(key, caps[ci], framed, &data, reps)
        }
    };
    // gbs[cell][round]
    let mut gbs = vec![Vec::new(); cells.len()];
    // Warm-up: one pass of every cell.
    for &c in &cells {
        pass(c)?;
    }
    // A round takes each (capacity, direction) in turn, rotating, and times
    // its two formats pass by pass, alternating which goes first: the two
    // values a ratio is taken of are measured within milliseconds of each
    // other, under the same load.
    let pairs: Vec<(usize, bool)> = (0..caps.len())
        .flat_map(|ci| [(ci, false), (ci, true)])
        .collect();
    let index = |c: Cell| {
        cells
            .iter()
            .position(|&x| x == c)
            .expect("every cell is listed")
    };
    for round in 0..args.rounds {
        for k in 0..pairs.len() {
            let (ci, dec) = pairs[(k + round) % pairs.len()];
            let mut best = [Duration::MAX; 2];
            for p in 0..passes {
                for framed in [p % 2 == 1, p % 2 == 0] {
                    let d = pass((ci, framed, dec))?;
                    let b = &mut best[usize::from(framed)];
                    *b = (*b).min(d);
                }
            }
            for framed in [false, true] {
                let gb = len as f64 / best[usize::from(framed)].as_secs_f64() / 1e9;
                gbs[index((ci, framed, dec))].push(gb);
            }
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## 1. Bulk in memory: framed vs fixed-size (AES-128-GCM, provider {})\n",
        BULK.name()
    );
    let _ = writeln!(
        out,
        "{} MiB per pass{}; encrypt: capacity-sized writes into `io::sink()`; decrypt: 64 KiB \
         reads from `&[u8]`. GB/s (10⁹ B/s) of plaintext; a round's value is the fastest of \
         {passes} passes; median (min–max) of {} rounds; framed ÷ fixed is the median of the \
         per-round ratios (min–max).\n",
        len / MIB,
        if reps > 1 {
            format!(", as {reps} streams of the same {} KiB", stream / KIB)
        } else {
            String::new()
        },
        args.rounds
    );
    let _ = writeln!(
        out,
        "| capacity | direction | fixed-size GB/s | framed GB/s | framed ÷ fixed |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|");
    for (ci, &cap) in caps.iter().enumerate() {
        for dec in [false, true] {
            let (fx, fr) = (&gbs[index((ci, false, dec))], &gbs[index((ci, true, dec))]);
            let ratios: Vec<f64> = fr.iter().zip(fx).map(|(a, b)| 100.0 * a / b).collect();
            let (m, lo, hi) = stats(&ratios);
            let _ = writeln!(
                out,
                "| {} KiB | {} | {} | {} | {m:.1} % ({lo:.1}–{hi:.1}) |",
                cap / KIB,
                if dec { "decrypt" } else { "encrypt" },
                cell(fx, 2),
                cell(fr, 2),
            );
        }
    }
    println!("{out}");
    Ok(out)
}

// ---------------------------------------------------------------------------
// Part 2: conversations over loopback TCP.

/// What the client asks the server to do next (13 bytes: kind, a, b).
const CMD_ECHO: u8 = 0;
const CMD_SINK: u8 = 1;
const CMD_QUIT: u8 = 2;

fn send_cmd<S: Write>(s: &mut S, kind: u8, a: u64, b: u32) -> io::Result<()> {
    let mut c = [0u8; 13];
    c[0] = kind;
    c[1..9].copy_from_slice(&a.to_le_bytes());
    c[9..13].copy_from_slice(&b.to_le_bytes());
    s.write_all(&c)?;
    s.flush()
}

/// The server's loop: echo `b` messages of `a` bytes, or take `a` bytes
/// and answer one, until told to quit.
fn serve<S: Read + Write>(mut s: S) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK.max(16 * KIB)];
    loop {
        let mut c = [0u8; 13];
        s.read_exact(&mut c)?;
        let a = u64::from_le_bytes(c[1..9].try_into().expect("8 bytes"));
        let b = u32::from_le_bytes(c[9..13].try_into().expect("4 bytes"));
        match c[0] {
            CMD_ECHO => {
                let size = usize::try_from(a).map_err(io::Error::other)?;
                if buf.len() < size {
                    buf.resize(size, 0);
                }
                for _ in 0..b {
                    s.read_exact(&mut buf[..size])?;
                    s.write_all(&buf[..size])?;
                    s.flush()?;
                }
            }
            CMD_SINK => {
                let mut left = a;
                while left > 0 {
                    let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
                    let n = s.read(&mut buf[..want])?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    left -= n as u64;
                }
                s.write_all(&[1])?;
                s.flush()?;
            }
            _ => return Ok(()),
        }
    }
}

/// `count` round trips of `msg`; the time of the loop.
fn round_trips<S: Read + Write>(s: &mut S, msg: &[u8], count: u32) -> io::Result<Duration> {
    send_cmd(s, CMD_ECHO, msg.len() as u64, count)?;
    let mut reply = vec![0u8; msg.len()];
    let t = Instant::now();
    for _ in 0..count {
        s.write_all(msg)?;
        s.flush()?;
        s.read_exact(&mut reply)?;
    }
    let d = t.elapsed();
    if reply != msg {
        return Err(io::Error::other("the echo differs"));
    }
    Ok(d)
}

/// `total` bytes one way in `CHUNK` writes, then one byte back.
fn one_way<S: Read + Write>(s: &mut S, chunk: &[u8], total: usize) -> io::Result<Duration> {
    send_cmd(s, CMD_SINK, total as u64, 0)?;
    let t = Instant::now();
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        s.write_all(&chunk[..n])?;
        left -= n;
    }
    s.flush()?;
    let mut one = [0u8; 1];
    s.read_exact(&mut one)?;
    Ok(t.elapsed())
}

/// A reader and a writer as one stream.
struct Duplex<R, W> {
    r: R,
    w: W,
}

impl<R: Read, W> Read for Duplex<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.r.read(buf)
    }
}

impl<R, W: Write> Write for Duplex<R, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

type Framed = Duplex<CipherReader<TcpStream>, CipherWriter<TcpStream>>;

fn framed(key: &Key, cap: usize, provider: Provider, s: TcpStream) -> io::Result<Framed> {
    let w = CipherWriter::builder(key)
        .capacity(cap)
        .provider(provider)
        .framed()
        .build(s.try_clone()?);
    let r = CipherReader::builder(key).provider(provider).build(s);
    Ok(Duplex { r, w })
}

/// One connection: the client end, and the server thread serving the other.
struct Conn<S> {
    client: S,
    server: Option<thread::JoinHandle<io::Result<()>>>,
}

fn connect<C, S, FC, FS>(make_client: FC, make_server: FS) -> io::Result<Conn<C>>
where
    C: Read + Write,
    S: Read + Write,
    FC: FnOnce(TcpStream) -> io::Result<C>,
    FS: FnOnce(TcpStream) -> io::Result<S> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = thread::spawn(move || {
        let (sock, _) = listener.accept()?;
        sock.set_nodelay(true)?;
        serve(make_server(sock)?)
    });
    let sock = TcpStream::connect(addr)?;
    sock.set_nodelay(true)?;
    let mut client = make_client(sock)?;
    // Setup outside the timed loops: the handshake or header, and a few
    // warm-up round trips (rustls also takes in its session tickets).
    round_trips(&mut client, &[7u8; 100], 100)?;
    Ok(Conn {
        client,
        server: Some(server),
    })
}

impl<C: Read + Write> Conn<C> {
    fn close(mut self) -> io::Result<()> {
        send_cmd(&mut self.client, CMD_QUIT, 0, 0)?;
        match self.server.take().map(thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Err(io::Error::other("the server thread panicked")),
        }
    }
}

struct Tls {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
}

fn tls_configs() -> io::Result<Tls> {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .map_err(io::Error::other)?;
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.cipher_suites =
        vec![rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256];
    let provider = Arc::new(provider);
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .map_err(io::Error::other)?;
    let mut roots = RootCertStore::empty();
    roots.add(cert).map_err(io::Error::other)?;
    let client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Tls {
        client: Arc::new(client),
        server: Arc::new(server),
    })
}

type TlsClient = rustls::StreamOwned<ClientConnection, TcpStream>;

fn tls_client(cfg: Arc<ClientConfig>, mut s: TcpStream) -> io::Result<TlsClient> {
    let name = ServerName::try_from("localhost").map_err(io::Error::other)?;
    let mut c = ClientConnection::new(cfg, name).map_err(io::Error::other)?;
    while c.is_handshaking() {
        c.complete_io(&mut s)?;
    }
    let suite = c.negotiated_cipher_suite().map(|s| s.suite());
    let version = c.protocol_version();
    if suite != Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
        || version != Some(rustls::ProtocolVersion::TLSv1_3)
    {
        return Err(io::Error::other(format!(
            "negotiated {suite:?} {version:?}"
        )));
    }
    Ok(rustls::StreamOwned::new(c, s))
}

fn tls_server(
    cfg: Arc<ServerConfig>,
    mut s: TcpStream,
) -> io::Result<rustls::StreamOwned<ServerConnection, TcpStream>> {
    let mut c = ServerConnection::new(cfg).map_err(io::Error::other)?;
    while c.is_handshaking() {
        c.complete_io(&mut s)?;
    }
    Ok(rustls::StreamOwned::new(c, s))
}

/// The variants' client ends, one connection each for the whole run.
enum Client {
    Tcp(Conn<TcpStream>),
    Framed(Box<Conn<Framed>>),
    Tls(Box<Conn<TlsClient>>),
}

impl Client {
    fn round_trips(&mut self, msg: &[u8], count: u32) -> io::Result<Duration> {
        match self {
            Client::Tcp(c) => round_trips(&mut c.client, msg, count),
            Client::Framed(c) => round_trips(&mut c.client, msg, count),
            Client::Tls(c) => round_trips(&mut c.client, msg, count),
        }
    }
    fn one_way(&mut self, chunk: &[u8], total: usize) -> io::Result<Duration> {
        match self {
            Client::Tcp(c) => one_way(&mut c.client, chunk, total),
            Client::Framed(c) => one_way(&mut c.client, chunk, total),
            Client::Tls(c) => one_way(&mut c.client, chunk, total),
        }
    }
    fn close(self) -> io::Result<()> {
        match self {
            Client::Tcp(c) => c.close(),
            Client::Framed(c) => c.close(),
            Client::Tls(c) => c.close(),
        }
    }
}

/// The conversation table's measurements, for the plot.
struct Table {
    /// The variants, in column order.
    names: Vec<String>,
    /// Each row's label, and per variant the values of the rounds.
    rows: Vec<(String, Vec<Vec<f64>>)>,
}

/// Part 2: prints the table, and returns it with its measurements.
fn conversations(args: &Args, key: &Key) -> io::Result<(String, Table)> {
    let tls = tls_configs()?;
    let cap = args.capacity;
    let mut names = Vec::new();
    let mut clients = Vec::new();

    names.push("plain TCP".to_string());
    clients.push(Client::Tcp(connect(Ok, Ok)?));
    for &provider in Provider::ALL {
        names.push(format!(
            "cipherio framed ({}, capacity {} KiB)",
            provider.name(),
            cap as f64 / KIB as f64
        ));
        let (k1, k2) = (key.clone(), key.clone());
        clients.push(Client::Framed(Box::new(connect(
            move |s| framed(&k1, cap, provider, s),
            move |s| framed(&k2, cap, provider, s),
        )?)));
    }
    names.push("rustls TLS 1.3 (aws-lc-rs, AES-128-GCM)".to_string());
    {
        let (cc, sc) = (tls.client.clone(), tls.server.clone());
        clients.push(Client::Tls(Box::new(connect(
            move |s| tls_client(cc, s),
            move |s| tls_server(sc, s),
        )?)));
    }

    // Rows: message sizes with their round-trip counts, then one-way.
    let div = if args.quick { 4 } else { 1 };
    let sizes: [(usize, u32); 3] = [
        (64, 20_000 / div),
        (KIB, 20_000 / div),
        (16 * KIB, 6_000 / div),
    ];
    let total = if args.quick { 64 * MIB } else { 256 * MIB };
    let chunk = pattern(CHUNK);
    let msgs: Vec<Vec<u8>> = sizes.iter().map(|&(n, _)| pattern(n)).collect();
    // res[row][variant][round]: round trips per second, or GB/s one-way.
    let rows = sizes.len() + 1;
    let mut res = vec![vec![Vec::new(); clients.len()]; rows];
    let nv = clients.len();
    for round in 0..args.rounds {
        for row in 0..rows {
            for k in 0..nv {
                let v = (k + round + row) % nv;
                let x = if row < sizes.len() {
                    let count = sizes[row].1;
                    let d = clients[v].round_trips(&msgs[row], count)?;
                    f64::from(count) / d.as_secs_f64()
                } else {
                    let d = clients[v].one_way(&chunk, total)?;
                    total as f64 / d.as_secs_f64() / 1e9
                };
                res[row][v].push(x);
            }
        }
    }
    for c in clients {
        c.close()?;
    }

    let mut out = String::new();
    let _ = writeln!(out, "## 2. Conversations over loopback TCP\n");
    let _ = writeln!(
        out,
        "Echo server thread, client measures; `TCP_NODELAY`; one connection per variant, set up \
         outside the timed loops. Round trips per second (message out, flush, whole reply in) \
         and one-way GB/s ({} MiB in 64 KiB writes, one byte back), median (min–max) of {} \
         rounds. Round trips per round: {}.\n",
        total / MIB,
        args.rounds,
        sizes
            .iter()
            .map(|&(n, c)| format!("{c} of {n} B"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = write!(out, "| row |");
    for n in &names {
        let _ = write!(out, " {n} |");
    }
    let _ = writeln!(out, " cipherio ({}) ÷ rustls |", BULK.name());
    let _ = write!(out, "|---|");
    for _ in 0..=nv {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out);
    // The AWS-LC column (the last of Provider::ALL) against rustls.
    let (fi, ti) = (Provider::ALL.len(), nv - 1);
    let mut labels = Vec::new();
    for row in 0..rows {
        let label = if row < sizes.len() {
            let n = sizes[row].0;
            if n >= KIB {
                format!("round trips/s, {} KiB", n / KIB)
            } else {
                format!("round trips/s, {n} B")
            }
        } else {
            "one-way GB/s".to_string()
        };
        let _ = write!(out, "| {label} |");
        let digits = if row < sizes.len() { 0 } else { 2 };
        for r in &res[row] {
            let _ = write!(out, " {} |", cell(r, digits));
        }
        let ratios: Vec<f64> = res[row][fi]
            .iter()
            .zip(&res[row][ti])
            .map(|(a, b)| 100.0 * a / b)
            .collect();
        let (m, lo, hi) = stats(&ratios);
        let _ = writeln!(out, " {m:.0} % ({lo:.0}–{hi:.0}) |");
        labels.push(label);
    }
    println!("{out}");
    let rows = labels.into_iter().zip(res).collect();
    Ok((out, Table { names, rows }))
}

// ---------------------------------------------------------------------------
// The plot of part 2.

/// A step of 1, 2 or 5 × 10ⁿ that divides `0..=max` into about four.
fn tick_step(max: f64) -> f64 {
    let rough = max / 4.0;
    let p = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= rough)
        .unwrap_or(10.0 * p)
}

/// A tick label: `40k` for round trips, `1.5` for GB/s.
fn tick_label(v: f64, step: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if step >= 1000.0 {
        format!("{}k", v / 1000.0)
    } else if step >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `text` with XML's special characters escaped.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A hand-written SVG of the conversation table (no plotting dependency,
/// as `examples/bench.rs` draws its sweep): one panel per row, each with
/// its own scale from zero; per variant a bar at the median and a whisker
/// from the slowest to the fastest round.
fn plot(t: &Table, rounds: usize, caption: &str) -> String {
    const COLORS: [&str; 6] = [
        "#7f7f7f", "#ff7f0e", "#1f77b4", "#d62728", "#2ca02c", "#9467bd",
    ];
    let (pw, ph, ml, mt, gap) = (230.0, 260.0, 55.0, 50.0, 45.0);
    let n = t.rows.len().max(1) as f64;
    let width = ml + n * (pw + gap);
    let legend_y = mt + ph + 30.0;
    let height = legend_y + 18.0 * (t.names.len() + 1) as f64 + 10.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="18" font-size="14" text-anchor="middle">Conversations over loopback TCP: median (bar) and min–max (whisker) of {rounds} rounds</text>"#,
        width / 2.0
    );
    let nv = t.names.len().max(1) as f64;
    let slot = pw / nv;
    for (i, (label, per_variant)) in t.rows.iter().enumerate() {
        let x0 = ml + i as f64 * (pw + gap);
        let top = per_variant
            .iter()
            .map(|v| stats(v).2)
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        let step = tick_step(top);
        let ymax = (top / step).ceil() * step;
        let ys = |v: f64| mt + ph - v / ymax * ph;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
            x0 + pw / 2.0,
            mt - 10.0,
            xml(label)
        );
        let ticks = (ymax / step).round() as u32;
        for k in 0..=ticks {
            let v = step * f64::from(k);
            let y = ys(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/>"##,
                x0 + pw
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 4.0,
                y + 4.0,
                tick_label(v, step)
            );
        }
        for (vi, values) in per_variant.iter().enumerate() {
            if values.is_empty() {
                continue;
            }
            let (med, lo, hi) = stats(values);
            let color = COLORS[vi % COLORS.len()];
            let bx = x0 + slot * vi as f64 + slot * 0.15;
            let bw = slot * 0.7;
            let cx = bx + bw / 2.0;
            let _ = writeln!(
                s,
                r#"<rect x="{bx:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{color}"/>"#,
                ys(med),
                mt + ph - ys(med)
            );
            let _ = writeln!(
                s,
                r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/>"##,
                ys(lo),
                ys(hi)
            );
            for v in [lo, hi] {
                let _ = writeln!(
                    s,
                    r##"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#000"/>"##,
                    cx - bw / 4.0,
                    cx + bw / 4.0,
                    y = ys(v)
                );
            }
        }
        let _ = writeln!(
            s,
            r##"<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
    }
    for (vi, name) in t.names.iter().enumerate() {
        let y = legend_y + 18.0 * vi as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{ml}" y="{:.1}" width="14" height="10" fill="{}"/>"#,
            y - 9.0,
            COLORS[vi % COLORS.len()]
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{y:.1}">{}</text>"#,
            ml + 20.0,
            xml(name)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{ml}" y="{:.1}" fill="#555">{}</text>"##,
        legend_y + 18.0 * t.names.len() as f64 + 4.0,
        xml(caption)
    );
    let _ = writeln!(s, "</svg>");
    s
}
