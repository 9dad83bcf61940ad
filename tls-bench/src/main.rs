//! The framed variant, measured: against the fixed-size format in memory,
//! and against plain TCP and TLS 1.3 (rustls) in conversations over loopback.
//!
//! ```text
//! cargo run --release --manifest-path tls-bench/Cargo.toml -- [--quick] [--rounds N] [--capacity BYTES]
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
//!    A round's value for a cell is the fastest of 5 passes (3 with
//!    `--quick`): a pass takes milliseconds, and one descheduled pass should
//!    not count. The ratio column is the median over the rounds of framed ÷
//!    fixed-size within the round.
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
//! bulk in memory, 64 MiB one-way).

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
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
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        rounds: 0,
        capacity: 64 * KIB,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.quick = true,
            "--rounds" | "--capacity" => {
                let v: usize = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{a} needs a number"))?;
                if a == "--rounds" {
                    args.rounds = v;
                } else {
                    args.capacity = v;
                }
            }
            "-h" | "--help" => {
                return Err(
                    "usage: framed_bench [--quick] [--rounds N (≥ 5)] [--capacity BYTES]".into(),
                );
            }
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
    Ok(args)
}

fn main() -> ExitCode {
    report::main_with("framed_bench", parse_args, run)
}

fn run(args: &Args) -> io::Result<()> {
    let load_start = loadavg();
    if Provider::default() == Provider::RustCrypto {
        eprintln!(
            "note: built without the aws-lc feature, so cipherio seals with RustCrypto while \
             rustls uses AWS-LC; run with --features aws-lc to compare the same AEAD"
        );
    }
    let b = backend::detect();
    println!("# framed_bench\n");
    println!(
        "{} rounds{}, RustCrypto backends {b:?}; load average (1/5/15 min) at start: {load_start}\n",
        args.rounds,
        if args.quick { " (--quick)" } else { "" },
    );
    let key = Key::generate(Algorithm::Aes128Gcm);

    bulk_in_memory(args, &key)?;
    let load_mid = loadavg();
    println!("Load average after part 1: {load_mid}\n");
    conversations(args, &key)?;
    println!(
        "Load average: {load_start} at start, {load_mid} after part 1, {} at the end.",
        loadavg()
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Part 1: framed against fixed-size, in memory.

fn encrypt(key: &Key, cap: usize, framed: bool, data: &[u8]) -> io::Result<Duration> {
    let t = Instant::now();
    let mut b = CipherWriter::builder(key).capacity(cap);
    if framed {
        b = b.framed();
    }
    let mut w = b.build(io::sink());
    for c in data.chunks(cap) {
        w.write_all(c)?;
    }
    w.finish()?;
    Ok(t.elapsed())
}

fn seal_all(key: &Key, cap: usize, framed: bool, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut b = CipherWriter::builder(key).capacity(cap);
    if framed {
        b = b.framed();
    }
    let mut w = b.build(Vec::with_capacity(data.len() + data.len() / 256 + 4096));
    for c in data.chunks(cap) {
        w.write_all(c)?;
    }
    w.finish()
}

fn decrypt(key: &Key, sealed: &[u8], buf: &mut [u8], expect: usize) -> io::Result<Duration> {
    let t = Instant::now();
    let mut r = CipherReader::new(key, sealed);
    let mut total = 0;
    loop {
        let n = r.read(buf)?;
        if n == 0 {
            break;
        }
        total += n;
    }
    let d = t.elapsed();
    if total != expect {
        return Err(io::Error::other("decrypted a different length"));
    }
    Ok(d)
}

fn bulk_in_memory(args: &Args, key: &Key) -> io::Result<()> {
    let len = if args.quick { 16 * MIB } else { 64 * MIB };
    // A pass takes milliseconds: a round's value is the fastest of a few
    // passes of the cell, so that one descheduled pass does not count.
    let passes = if args.quick { 3 } else { 5 };
    let data = pattern(len);
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
            let mut out = Vec::with_capacity(len);
            CipherReader::new(key, &s[..]).read_to_end(&mut out)?;
            if out != data {
                return Err(io::Error::other("round trip differs"));
            }
        }
        sealed.push([fixed, framed]);
    }
    let mut buf = vec![0u8; CHUNK];
    // gbs[cell][round]
    let mut gbs = vec![Vec::new(); cells.len()];
    // Warm-up: one pass of every cell.
    for &(ci, framed, dec) in &cells {
        if dec {
            decrypt(key, &sealed[ci][usize::from(framed)], &mut buf, len)?;
        } else {
            encrypt(key, caps[ci], framed, &data)?;
        }
    }
    for round in 0..args.rounds {
        for k in 0..cells.len() {
            let i = (k + round) % cells.len();
            let (ci, framed, dec) = cells[i];
            let mut best = Duration::MAX;
            for _ in 0..passes {
                let d = if dec {
                    decrypt(key, &sealed[ci][usize::from(framed)], &mut buf, len)?
                } else {
                    encrypt(key, caps[ci], framed, &data)?
                };
                best = best.min(d);
            }
            gbs[i].push(len as f64 / best.as_secs_f64() / 1e9);
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## 1. Bulk in memory: framed vs fixed-size (AES-128-GCM, provider {})\n",
        Provider::default().name()
    );
    let _ = writeln!(
        out,
        "{} MiB per pass; encrypt: capacity-sized writes into `io::sink()`; decrypt: 64 KiB reads \
         from `&[u8]`. GB/s (10⁹ B/s) of plaintext; a round's value is the fastest of {passes} \
         passes; median (min–max) of {} rounds; framed ÷ fixed is the median of the per-round \
         ratios (min–max).\n",
        len / MIB,
        args.rounds
    );
    let _ = writeln!(
        out,
        "| capacity | direction | fixed-size GB/s | framed GB/s | framed ÷ fixed |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|");
    for (ci, &cap) in caps.iter().enumerate() {
        for dec in [false, true] {
            let find = |framed| {
                cells
                    .iter()
                    .position(|&c| c == (ci, framed, dec))
                    .expect("every cell is listed")
            };
            let (fx, fr) = (&gbs[find(false)], &gbs[find(true)]);
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
    Ok(())
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

fn conversations(args: &Args, key: &Key) -> io::Result<()> {
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
    let _ = writeln!(out, " cipherio ({}) ÷ rustls |", Provider::default().name());
    let _ = write!(out, "|---|");
    for _ in 0..=nv {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out);
    // The default provider's column (the last of Provider::ALL) against rustls.
    let (fi, ti) = (Provider::ALL.len(), nv - 1);
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
    }
    println!("{out}");
    Ok(())
}
