//! Sends a file to a tokio TCP peer encrypted and receives it back: a
//! recipe for `cipherio::tokio`.
//!
//! ```text
//! cargo run --release --features tokio --example tokio_copy -- [FILE] [--capacity BYTES]
//! ```
//!
//! Without FILE it writes an 8 MiB temporary file and removes it at the end.
//!
//! The peer (a task on 127.0.0.1, port chosen by the OS) decrypts what it
//! receives with an `AsyncCipherReader` and sends it straight back
//! re-encrypted with an `AsyncCipherWriter`. The client sends the file
//! with `tokio::io::copy` into an `AsyncCipherWriter` over the socket's
//! write half, and at the same time reads the reply with an
//! `AsyncCipherReader` over the read half; then it checks that the reply
//! is the file, byte for byte, and prints sizes and throughput.
//!
//! Two things every socket user of cipherio needs to know, both below:
//!
//! - **End the stream with `shutdown()`** (or `finish()`). A segment is
//!   sealed only when it is full and one more byte has arrived, or when
//!   the stream is completed; and the reader releases a short final
//!   segment only once its peer has shut down the sending side, because
//!   only then does it know the segment is the last one. `shutdown()` does
//!   both: it seals and writes the final segment, then shuts the socket's
//!   write half down. (`finish()` completes the stream but leaves the
//!   socket open, for protocols that go on using it.) A writer dropped
//!   without either never completes the stream: the reader gets an
//!   `UnexpectedEof` error instead of a clean end.
//! - **Send and receive concurrently** when the peer answers as it reads,
//!   as this echo does: a client that sent the whole file before reading
//!   would fill both directions' socket buffers and wait forever.

use std::error::Error;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cipherio::format::{HEADER_LEN, TAG_LEN};
use cipherio::tokio::{AsyncCipherReader, AsyncCipherWriter};
use cipherio::{Algorithm, Key};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Size of the generated file when none is given.
const GENERATED: usize = 8 << 20;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (path, capacity) = parse_args()?;
    // A temporary file when none was given, removed when `_temp` drops.
    let (path, _temp) = match path {
        Some(p) => (p, None),
        None => {
            let temp = TempFile::generate(GENERATED)?;
            (temp.0.clone(), Some(temp))
        }
    };
    // The example keeps the file in memory to check the echo against it.
    // An application streaming large files would open it with
    // `tokio::fs::File::open` (tokio's "fs" feature) and hand that to
    // `tokio::io::copy` just the same.
    let file = std::fs::read(&path)?;

    // Both sides share one key (here a fresh one; in real life it comes
    // from your key management). Each stream derives its own key from it.
    let key = Key::generate(Algorithm::Aes256Gcm);

    // The peer: accepts one connection and echoes it, decrypting and
    // re-encrypting as the bytes come.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let peer = tokio::spawn(echo_peer(listener, key.clone(), capacity));

    let start = Instant::now();
    let (rd, wr) = TcpStream::connect(addr).await?.into_split();

    let send = async {
        let mut w = AsyncCipherWriter::with_capacity(capacity, &key, wr);
        let sent = tokio::io::copy(&mut &file[..], &mut w).await?;
        // Seal and send the final segment, then shut the write half down:
        // the peer's reader needs both to end its stream cleanly.
        w.shutdown().await?;
        Ok::<u64, io::Error>(sent)
    };
    let receive = async {
        let mut r = AsyncCipherReader::with_capacity(capacity, &key, rd);
        let mut reply = Vec::with_capacity(file.len());
        // Ends with Ok only when the peer's final segment has authenticated
        // and its side is shut down; any tampering or truncation is an error.
        tokio::io::copy(&mut r, &mut reply).await?;
        Ok::<Vec<u8>, io::Error>(reply)
    };
    // Concurrently: the peer answers while we are still sending.
    let (sent, reply) = tokio::try_join!(send, receive)?;
    let elapsed = start.elapsed();
    let echoed = peer.await??;

    if reply != file {
        return Err(format!(
            "the reply differs from the file ({} bytes back for {})",
            reply.len(),
            file.len()
        )
        .into());
    }
    let len = file.len();
    let wire = ciphertext_len(len, capacity);
    let secs = elapsed.as_secs_f64();
    println!("file          {}", path.display());
    println!("plaintext     {len} bytes, sent {sent}, echoed by the peer {echoed}");
    println!(
        "ciphertext    {wire} bytes each way ({} segments of {capacity} bytes, {} bytes of overhead)",
        segments(len, capacity),
        wire - len
    );
    println!(
        "round trip    {:.3} s: {:.1} MiB/s of plaintext each way \
         (encrypt, send, decrypt, re-encrypt, send back, decrypt)",
        secs,
        len as f64 / secs / f64::from(1 << 20)
    );
    println!("check         the reply equals the file byte for byte");
    Ok(())
}

/// Accepts one connection, decrypts what arrives and sends it back
/// encrypted under a fresh stream; returns the plaintext bytes echoed.
async fn echo_peer(listener: TcpListener, key: Key, capacity: usize) -> io::Result<u64> {
    let (socket, _) = listener.accept().await?;
    socket.set_nodelay(true)?;
    let (rd, wr) = socket.into_split();
    let mut r = AsyncCipherReader::with_capacity(capacity, &key, rd);
    let mut w = AsyncCipherWriter::with_capacity(capacity, &key, wr);
    // `copy` reads authenticated plaintext as each segment arrives and
    // writes it into the writer; it fails (and so does the reply) if the
    // client's stream is damaged or cut short.
    let n = tokio::io::copy(&mut r, &mut w).await?;
    // Completes the reply stream and shuts our sending side down.
    w.shutdown().await?;
    Ok(n)
}

/// Segments of a native stream of `len` plaintext bytes (one for empty).
fn segments(len: usize, capacity: usize) -> usize {
    len.div_ceil(capacity).max(1)
}

/// Bytes on the wire for `len` plaintext bytes: the header, the plaintext
/// and one tag per segment (the native format; see the crate docs).
fn ciphertext_len(len: usize, capacity: usize) -> usize {
    HEADER_LEN + len + TAG_LEN * segments(len, capacity)
}

fn parse_args() -> Result<(Option<PathBuf>, usize), Box<dyn Error>> {
    let mut path = None;
    let mut capacity = 64 * 1024;
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--capacity") => {
                let v = args.next().ok_or("--capacity needs a value")?;
                capacity = v
                    .to_str()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--capacity takes a number of bytes")?;
            }
            Some("-h" | "--help") => {
                return Err("usage: tokio_copy [FILE] [--capacity BYTES]".into());
            }
            Some(s) if s.starts_with('-') => return Err(format!("unknown option {s}").into()),
            _ => path = Some(PathBuf::from(a)),
        }
    }
    Ok((path, capacity))
}

/// A generated file in the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    /// `len` pseudo-random (incompressible) bytes, xorshift64*.
    fn generate(len: usize) -> io::Result<TempFile> {
        let path = std::env::temp_dir().join(format!("cipherio-tokio-copy-{}", std::process::id()));
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let bytes: Vec<u8> = (0..len.div_ceil(8))
            .flat_map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes()
            })
            .take(len)
            .collect();
        write_file(&path, &bytes)?;
        Ok(TempFile(path))
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    std::fs::write(path, bytes)
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
