//! The keystream adapters (`cipherio::hazmat`) against the raw cipher:
//! `apply_keystream` over the whole message, or at an offset after
//! `StreamCipherSeek::seek`, is the oracle. A byte that went through the
//! keystream twice, or was skipped, lost or repeated, differs from it.
//!
//! Every case runs for AES-128-CTR (`ctr::Ctr128BE<aes::Aes128>`) and
//! ChaCha20, over the buffer sizes 1, 7, 8 KiB and 64 KiB.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{self, BufRead, Cursor, ErrorKind, Read, Seek, SeekFrom, Write};

use cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use cipherio::hazmat::{KeystreamReader, KeystreamWriter};

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;

const CAPACITIES: [usize; 4] = [1, 7, 8 * 1024, 64 * 1024];
/// Longer than two 64 KiB buffers, not a multiple of anything.
const LEN: usize = 140_001;

fn aes_ctr() -> Aes128Ctr {
    // The IV's counter part starts near a 2^64 carry, so a wrong counter
    // increment shows too.
    let mut iv = [0xa5; 16];
    iv[8..].copy_from_slice(&(u64::MAX - 3).to_be_bytes());
    Aes128Ctr::new(&[0x42; 16].into(), &iv.into())
}

fn chacha() -> chacha20::ChaCha20 {
    chacha20::ChaCha20::new(&[0x17; 32].into(), &[0x5a; 12].into())
}

/// Runs `$body` with `$make` bound to each cipher's constructor.
macro_rules! for_each_cipher {
    ($make:ident => $body:block) => {{
        {
            let $make = aes_ctr;
            $body
        }
        {
            let $make = chacha;
            $body
        }
    }};
}

fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// The oracle: the raw cipher over `data`, starting at keystream `offset`.
fn raw_at<C: StreamCipher + StreamCipherSeek>(mut cipher: C, offset: u64, data: &[u8]) -> Vec<u8> {
    cipher.seek(offset);
    let mut out = data.to_vec();
    cipher.apply_keystream(&mut out);
    out
}

/// Chunk-size schedules: fixed sizes around every capacity, and mixed ones.
fn chunkings() -> Vec<Vec<usize>> {
    let mut plans: Vec<Vec<usize>> = [
        1, 2, 3, 7, 8, 64, 1000, 8191, 8192, 8193, 65535, 65536, 65537, 100_000, LEN,
    ]
    .iter()
    .map(|&n| vec![n])
    .collect();
    plans.push(vec![1, 8192, 3, 65536, 7, 70_000, 8191, 1]);
    plans.push(vec![5000, 5000, 100, 65536 * 2, 1]);
    plans
}

/// Cuts `len` bytes by `plan`, repeated.
fn pieces(len: usize, plan: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    for &n in plan.iter().cycle() {
        if at == len {
            break;
        }
        let end = (at + n).min(len);
        out.push(at..end);
        at = end;
    }
    out
}

// ---------------------------------------------------------------- round trips

#[test]
fn writer_equals_raw_cipher_for_every_chunking() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let expected = raw_at(make(), 0, &plaintext);
        for capacity in CAPACITIES {
            for plan in chunkings() {
                let mut w = KeystreamWriter::with_capacity(capacity, make(), Vec::new());
                for piece in pieces(LEN, &plan) {
                    w.write_all(&plaintext[piece]).unwrap();
                }
                let out = w.finish().unwrap();
                assert!(out == expected, "capacity {capacity}, chunks {plan:?}");
            }
        }
    });
}

/// The ways to build a reader over `ciphertext`: `with_capacity` over the
/// `&[u8]` (through `Read::read`), and `from_buf_read_with_capacity` over
/// it (all of it in one `fill_buf`) and over a `BufReader` that holds 1000
/// bytes at a time.
fn readers<'a, C: StreamCipher + 'a>(
    capacity: usize,
    make: fn() -> C,
    ciphertext: &'a [u8],
) -> Vec<(&'static str, Box<dyn BufRead + 'a>)> {
    let small = io::BufReader::with_capacity(1000, ciphertext);
    vec![
        (
            "read",
            Box::new(KeystreamReader::with_capacity(capacity, make(), ciphertext)),
        ),
        (
            "from_buf_read",
            Box::new(KeystreamReader::from_buf_read_with_capacity(
                capacity,
                make(),
                ciphertext,
            )),
        ),
        (
            "from_buf_read over BufReader(1000)",
            Box::new(KeystreamReader::from_buf_read_with_capacity(
                capacity,
                make(),
                small,
            )),
        ),
    ]
}

#[test]
fn reader_equals_raw_cipher_for_every_chunking() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let ciphertext = raw_at(make(), 0, &plaintext);
        for capacity in CAPACITIES {
            for plan in chunkings() {
                for (how, mut r) in readers(capacity, make, &ciphertext) {
                    let mut out = vec![0; LEN];
                    for piece in pieces(LEN, &plan) {
                        r.read_exact(&mut out[piece]).unwrap();
                    }
                    assert_eq!(r.read(&mut [0; 16]).unwrap(), 0);
                    assert!(out == plaintext, "{how}: capacity {capacity}, chunks {plan:?}");
                }
            }
        }
    });
}

#[test]
fn bufread_equals_raw_cipher() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let ciphertext = raw_at(make(), 0, &plaintext);
        for capacity in CAPACITIES {
            for plan in chunkings() {
                for (how, mut r) in readers(capacity, make, &ciphertext) {
                    let mut out = Vec::new();
                    for &n in plan.iter().cycle() {
                        let buf = r.fill_buf().unwrap();
                        if buf.is_empty() {
                            break;
                        }
                        assert!(buf.len() <= capacity);
                        let n = n.min(buf.len());
                        out.extend_from_slice(&buf[..n]);
                        r.consume(n);
                    }
                    assert!(out == plaintext, "{how}: capacity {capacity}, consume {plan:?}");
                }
            }
        }
        // read_line and read_to_end through BufRead.
        let text = b"first line\nsecond line\nno newline".to_vec();
        let sealed = raw_at(make(), 0, &text);
        let mut r = KeystreamReader::with_capacity(7, make(), &sealed[..]);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "first line\n");
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"second line\nno newline");
    });
}

// ------------------------------------------------------------------ the paths

/// Records each inner call's size.
#[derive(Default)]
struct Sizes {
    out: Vec<u8>,
    writes: Vec<usize>,
}

impl Write for Sizes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes.push(buf.len());
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn small_writes_are_buffered_large_ones_go_through_in_buffer_sized_chunks() {
    let plaintext = message(LEN);
    let mut w = KeystreamWriter::with_capacity(8192, aes_ctr(), Sizes::default());
    // Small writes: nothing reaches the inner writer until the buffer is full.
    assert_eq!(w.write(&plaintext[..100]).unwrap(), 100);
    assert_eq!(w.write(&plaintext[100..8000]).unwrap(), 7900);
    assert!(w.get_ref().writes.is_empty());
    assert_eq!(w.buffered(), 8000);
    // One that does not fit: the buffer goes out first, then the large
    // write in 8 KiB chunks, its tail buffered; all accepted in one call.
    assert_eq!(w.write(&plaintext[8000..30_000]).unwrap(), 22_000);
    assert_eq!(w.get_ref().writes, [8000, 8192, 8192]);
    assert_eq!(w.buffered(), 22_000 - 2 * 8192);
    let out = w.finish().unwrap();
    assert_eq!(out.writes, [8000, 8192, 8192, 22_000 - 2 * 8192]);
    assert!(out.out == raw_at(aes_ctr(), 0, &plaintext[..30_000]));
}

/// Records each inner read's request size.
struct Asks<'a> {
    data: &'a [u8],
    asks: Vec<usize>,
}

impl Read for Asks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.asks.push(buf.len());
        self.data.read(buf)
    }
}

#[test]
fn large_reads_go_straight_into_the_callers_buffer() {
    let plaintext = message(LEN);
    let ciphertext = raw_at(chacha(), 0, &plaintext);
    let inner = Asks {
        data: &ciphertext,
        asks: Vec::new(),
    };
    let mut r = KeystreamReader::with_capacity(8192, chacha(), inner);
    let mut out = vec![0; LEN];
    // Large, at an empty buffer: the caller's whole buffer is asked for.
    r.read_exact(&mut out[..50_000]).unwrap();
    assert_eq!(r.get_ref().asks, [50_000]);
    // Small: through the internal buffer, a capacity at a time.
    r.read_exact(&mut out[50_000..50_010]).unwrap();
    assert_eq!(r.get_ref().asks, [50_000, 8192]);
    assert_eq!(r.buffer().len(), 8182);
    // Large with bytes buffered: those first (no inner read), then straight.
    assert_eq!(r.read(&mut out[50_010..70_000]).unwrap(), 8182);
    r.read_exact(&mut out[58_192..]).unwrap();
    assert_eq!(r.get_ref().asks[..3], [50_000, 8192, LEN - 58_192]);
    assert!(out == plaintext);
}

/// A `BufRead` over `data` that hands out at most `refill` bytes per
/// `fill_buf` and counts its calls; its `read` is never to be called.
struct Held<'a> {
    data: &'a [u8],
    refill: usize,
    fills: usize,
}

impl Read for Held<'_> {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        panic!("read called on a reader built with from_buf_read");
    }
}

impl BufRead for Held<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.fills += 1;
        Ok(&self.data[..self.refill.min(self.data.len())])
    }
    fn consume(&mut self, amount: usize) {
        self.data = &self.data[amount..];
    }
}

#[test]
fn from_buf_read_takes_the_bytes_from_the_inner_buffer() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let ciphertext = raw_at(make(), 0, &plaintext);
        let inner = Held { data: &ciphertext, refill: 30_000, fills: 0 };
        let mut r = KeystreamReader::from_buf_read_with_capacity(8192, make(), inner);
        let mut out = vec![0; LEN];
        // Large, at an empty buffer: what one fill_buf holds, into the
        // caller's buffer.
        assert_eq!(r.read(&mut out[..50_000]).unwrap(), 30_000);
        assert_eq!(r.get_ref().fills, 1);
        // Small: a capacity's worth into the internal buffer.
        r.read_exact(&mut out[30_000..30_010]).unwrap();
        assert_eq!((r.get_ref().fills, r.buffer().len()), (2, 8182));
        r.read_exact(&mut out[30_010..]).unwrap();
        assert_eq!(r.read(&mut [0; 16]).unwrap(), 0);
        assert!(out == plaintext);
    });
}

// --------------------------------------------------------------------- seeking

/// Offsets around block and buffer boundaries, the end, and past it.
fn offsets(len: usize) -> Vec<u64> {
    [
        0, 1, 15, 16, 17, 63, 64, 65, 8191, 8192, 8193, 65_537, 100_000,
    ]
    .into_iter()
    .chain([len - 1, len, len + 1, len + 100_000])
    .map(|o| o as u64)
    .collect()
}

#[test]
fn reader_seek_anywhere_then_read_equals_the_raw_keystream_there() {
    // Zero ciphertext decrypts to the keystream itself.
    let zeros = vec![0u8; LEN];
    for_each_cipher!(make => {
        for capacity in CAPACITIES {
            let mut r = KeystreamReader::with_capacity(capacity, make(), Cursor::new(&zeros[..]));
            // Read a little first so that the buffer holds bytes when seeking.
            r.read_exact(&mut [0; 3]).unwrap();
            for offset in offsets(LEN) {
                for way in 0..3 {
                    let how = match way {
                        0 => SeekFrom::Start(offset),
                        1 => SeekFrom::End(offset as i64 - LEN as i64),
                        _ => SeekFrom::Current(offset as i64 - r.stream_position().unwrap() as i64),
                    };
                    assert_eq!(r.seek(how).unwrap(), offset);
                    assert_eq!(r.stream_position().unwrap(), offset);
                    let n = 3000.min(LEN.saturating_sub(offset as usize));
                    let mut got = vec![0; n];
                    r.read_exact(&mut got).unwrap();
                    assert!(
                        got == raw_at(make(), offset, &zeros[..n]),
                        "capacity {capacity}, {how:?}"
                    );
                    if n == 0 {
                        assert_eq!(r.read(&mut [0; 8]).unwrap(), 0, "past the end");
                    }
                }
            }
        }
    });
}

#[test]
fn reader_seek_current_counts_the_buffered_bytes() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let ciphertext = raw_at(make(), 0, &plaintext);
        for capacity in CAPACITIES {
            let mut r = KeystreamReader::with_capacity(capacity, make(), Cursor::new(&ciphertext));
            let mut at = 0usize;
            for (read, jump) in [(10, 5), (1, -11), (100, 0), (5, 9000), (2, -3), (70_000, -65_000)] {
                let mut got = vec![0; read];
                r.read_exact(&mut got).unwrap();
                assert!(got[..] == plaintext[at..at + read]);
                at += read;
                at = (at as i64 + jump) as usize;
                assert_eq!(r.seek(SeekFrom::Current(jump)).unwrap(), at as u64);
                let mut byte = [0];
                r.read_exact(&mut byte).unwrap();
                assert_eq!(byte[0], plaintext[at], "capacity {capacity}");
                at += 1;
                // seek_relative, inside the buffer or not.
                r.seek_relative(-1).unwrap();
                at -= 1;
                assert_eq!(r.stream_position().unwrap(), at as u64);
            }
        }
    });
}

/// A relative seek back after a read that bypassed the buffer lands where
/// `stream_position` says: the buffer no longer holds the bytes before the
/// position then, so the seek goes to the inner reader.
#[test]
fn seek_relative_after_a_read_past_the_buffer_reads_from_the_position() {
    let plaintext = message(LEN);
    for_each_cipher!(make => {
        let ciphertext = raw_at(make(), 0, &plaintext);
        for capacity in [16, 64, 4096] {
            for back in [1i64, 4, 12, capacity as i64, 2 * capacity as i64] {
                // A small read fills the buffer, a read at least as large as
                // the buffer bypasses it, then a step back by every amount.
                for (name, mut r) in seek_readers(capacity, make, &ciphertext) {
                    let mut small = [0u8; 4];
                    r.read_exact(&mut small).unwrap();
                    let mut big = vec![0u8; 2 * capacity];
                    r.read_exact(&mut big).unwrap();
                    assert!(big[..] == plaintext[4..4 + 2 * capacity]);
                    r.seek_relative(-back).unwrap();
                    let at = r.stream_position().unwrap();
                    assert_eq!(at, (4 + 2 * capacity) as u64 - back as u64, "{name}");
                    let mut got = [0u8; 8];
                    r.read_exact(&mut got).unwrap();
                    let at = at as usize;
                    assert!(
                        got[..] == plaintext[at..at + 8],
                        "{name}, capacity {capacity}, back {back}: bytes of another offset"
                    );
                }
            }
        }
    });
}

/// What the seek tests drive: a reader that seeks.
trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// The seekable ways to build a reader over `ciphertext`: `with_capacity`
/// and `from_buf_read_with_capacity`, each over a `Cursor`.
fn seek_readers<'a, C: StreamCipher + StreamCipherSeek + 'a>(
    capacity: usize,
    make: fn() -> C,
    ciphertext: &'a [u8],
) -> Vec<(&'static str, Box<dyn ReadSeek + 'a>)> {
    vec![
        (
            "read",
            Box::new(KeystreamReader::with_capacity(
                capacity,
                make(),
                Cursor::new(ciphertext),
            )),
        ),
        (
            "from_buf_read",
            Box::new(KeystreamReader::from_buf_read_with_capacity(
                capacity,
                make(),
                Cursor::new(ciphertext),
            )),
        ),
    ]
}

#[test]
fn reader_keystream_starts_where_the_inner_reader_was() {
    // A 16-byte header in clear, then data encrypted from keystream 0.
    let plaintext = message(5000);
    let mut file = b"sixteen byte hdr".to_vec();
    file.extend(raw_at(aes_ctr(), 0, &plaintext));
    let mut inner = Cursor::new(file);
    inner.seek(SeekFrom::Start(16)).unwrap();
    let mut r = KeystreamReader::with_capacity(64, aes_ctr(), inner);
    let mut head = [0; 100];
    r.read_exact(&mut head).unwrap();
    assert!(head[..] == plaintext[..100]);
    assert_eq!(r.stream_position().unwrap(), 116);
    assert_eq!(r.seek(SeekFrom::Start(16 + 4000)).unwrap(), 4016);
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert!(tail[..] == plaintext[4000..]);
    // Before the start of the keystream: refused, and nothing moves.
    r.seek(SeekFrom::Start(16 + 50)).unwrap();
    r.read_exact(&mut head[..10]).unwrap();
    let err = r.seek(SeekFrom::Start(15)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = r.seek(SeekFrom::Current(-61)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(r.stream_position().unwrap(), 16 + 60);
    r.read_exact(&mut head[..10]).unwrap();
    assert!(head[..10] == plaintext[60..70]);
}

#[test]
fn writer_seek_and_write_overwrites_exactly_those_bytes() {
    let plaintext = message(LEN);
    let patch = message(9000).iter().map(|b| !b).collect::<Vec<u8>>();
    for_each_cipher!(make => {
        let original = raw_at(make(), 0, &plaintext);
        for capacity in CAPACITIES {
            for offset in offsets(LEN) {
                let offset_usize = offset as usize;
                let mut w = KeystreamWriter::with_capacity(capacity, make(), Cursor::new(original.clone()));
                // Something pending in the buffer when seeking.
                w.write_all(&plaintext[..5]).unwrap();
                assert_eq!(w.seek(SeekFrom::Start(offset)).unwrap(), offset);
                assert_eq!(w.stream_position().unwrap(), offset);
                for piece in pieces(patch.len(), &[1000, 3, 7000]) {
                    w.write_all(&patch[piece]).unwrap();
                }
                let out = w.finish().unwrap().into_inner();

                let mut expected = plaintext.clone();
                let end = offset_usize + patch.len();
                if expected.len() < end {
                    expected.resize(end, 0);
                }
                expected[offset_usize..end].copy_from_slice(&patch);
                let mut expected = raw_at(make(), 0, &expected);
                // A gap past the old end is the inner writer's zeros, never encrypted.
                for b in expected.iter_mut().take(offset_usize).skip(LEN) {
                    *b = 0;
                }
                assert!(out == expected, "capacity {capacity}, offset {offset}");
            }
        }
    });
}

#[test]
fn writer_seek_current_and_end_and_refusals() {
    let plaintext = message(1000);
    let mut w = KeystreamWriter::with_capacity(7, chacha(), Cursor::new(Vec::new()));
    w.write_all(&plaintext).unwrap();
    assert_eq!(w.stream_position().unwrap(), 1000);
    assert_eq!(w.seek(SeekFrom::Current(-500)).unwrap(), 500);
    w.write_all(&plaintext[500..600]).unwrap();
    assert_eq!(w.seek(SeekFrom::End(-10)).unwrap(), 990);
    w.write_all(&plaintext[990..]).unwrap();
    // Before the start of the inner stream: the inner cursor refuses.
    assert!(w.seek(SeekFrom::Current(-2000)).is_err());
    assert_eq!(w.stream_position().unwrap(), 1000);
    assert!(w.finish().unwrap().into_inner() == raw_at(chacha(), 0, &plaintext));

    // A keystream that starts at inner position 4: position 3 is refused.
    let mut inner = Cursor::new(vec![0xee; 4]);
    inner.seek(SeekFrom::End(0)).unwrap();
    let mut w = KeystreamWriter::with_capacity(7, chacha(), inner);
    w.write_all(&plaintext[..20]).unwrap();
    let err = w.seek(SeekFrom::Start(3)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(w.stream_position().unwrap(), 24);
    w.write_all(&plaintext[20..30]).unwrap();
    let out = w.finish().unwrap().into_inner();
    assert_eq!(out[..4], [0xee; 4]);
    assert!(out[4..] == raw_at(chacha(), 0, &plaintext[..30]));
}

// ------------------------------------------------------------- misbehaving I/O

/// An inner reader or writer that moves at most `max` bytes per call and
/// fails call `k` with `fault(k)`.
struct Flaky<T> {
    inner: T,
    max: usize,
    fault: Box<dyn Fn(usize) -> Option<ErrorKind>>,
    calls: usize,
    faults: usize,
}

impl<T> Flaky<T> {
    fn new(inner: T, max: usize, fault: impl Fn(usize) -> Option<ErrorKind> + 'static) -> Self {
        Flaky {
            inner,
            max,
            fault: Box::new(fault),
            calls: 0,
            faults: 0,
        }
    }

    fn tick(&mut self) -> io::Result<()> {
        let call = self.calls;
        self.calls += 1;
        assert!(self.calls < 10_000_000, "runaway inner calls");
        match (self.fault)(call) {
            Some(kind) => {
                self.faults += 1;
                Err(io::Error::new(kind, "scripted"))
            }
            None => Ok(()),
        }
    }
}

impl<R: Read> Read for Flaky<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tick()?;
        let n = buf.len().min(self.max);
        self.inner.read(&mut buf[..n])
    }
}

impl<W: Write> Write for Flaky<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        assert!(!buf.is_empty(), "asked to write nothing");
        self.tick()?;
        let n = buf.len().min(self.max);
        self.inner.write(&buf[..n])
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock)
}

/// Writes `data` in `chunk`s, retrying transient errors; never accepts Ok(0).
fn write_retrying<W: Write>(w: &mut W, data: &[u8], chunk: usize) {
    let mut at = 0;
    while at < data.len() {
        let end = (at + chunk).min(data.len());
        match w.write(&data[at..end]) {
            Ok(0) => panic!("Ok(0) for {} bytes", end - at),
            Ok(n) => at += n,
            Err(e) if transient(&e) => {}
            Err(e) => panic!("{e}"),
        }
    }
    while let Err(e) = w.flush() {
        assert!(transient(&e), "{e}");
    }
}

/// Reads `len` bytes in `chunk`s, retrying transient errors, then the end.
fn read_retrying<R: Read>(r: &mut R, len: usize, chunk: usize) -> Vec<u8> {
    let mut out = vec![0; len + 1];
    let mut at = 0;
    loop {
        let end = (at + chunk).min(out.len());
        match r.read(&mut out[at..end]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if transient(&e) => {}
            Err(e) => panic!("{e}"),
        }
    }
    out.truncate(at);
    out
}

/// Fault patterns: one fault at call `k` for each `k` the clean run made,
/// and faults on every other and every third call.
fn fault_patterns(clean_calls: usize) -> Vec<Box<dyn Fn(usize) -> Option<ErrorKind>>> {
    let mut patterns: Vec<Box<dyn Fn(usize) -> Option<ErrorKind>>> = Vec::new();
    for kind in [ErrorKind::Interrupted, ErrorKind::WouldBlock] {
        for k in 0..clean_calls {
            patterns.push(Box::new(move |call| (call == k).then_some(kind)));
        }
        patterns.push(Box::new(move |call| (call % 2 == 0).then_some(kind)));
        patterns.push(Box::new(move |call| (call % 3 == 1).then_some(kind)));
    }
    patterns
}

/// Buffer sizes, inner per-call limits and caller chunk sizes; the message
/// is short where a run makes one inner call per byte, so that a fault can
/// be put at every call position of the clean run.
fn misbehaving_cases() -> Vec<(usize, usize, usize, usize)> {
    let mut cases = Vec::new();
    for capacity in [1, 7, 64, 1024] {
        for (max, chunk) in [
            (1, 1),
            (1, 3000),
            (3, 100),
            (100, 7),
            (700, 2500),
            (usize::MAX, 1500),
        ] {
            let len = if capacity.min(max) <= 7 { 300 } else { 3000 };
            cases.push((capacity, max, chunk, len));
        }
    }
    cases
}

#[test]
fn writer_over_misbehaving_io_encrypts_each_byte_exactly_once() {
    for_each_cipher!(make => {
        for (capacity, max, chunk, len) in misbehaving_cases() {
            let plaintext = message(len);
            let expected = raw_at(make(), 0, &plaintext);
            let clean = {
                let inner = Flaky::new(Vec::new(), max, |_| None);
                let mut w = KeystreamWriter::with_capacity(capacity, make(), inner);
                write_retrying(&mut w, &plaintext, chunk);
                let inner = w.finish().unwrap();
                assert!(inner.inner == expected, "clean: {capacity} {max} {chunk}");
                inner.calls
            };
            for (i, fault) in fault_patterns(clean).into_iter().enumerate() {
                let inner = Flaky { inner: Vec::new(), max, fault, calls: 0, faults: 0 };
                let mut w = KeystreamWriter::with_capacity(capacity, make(), inner);
                write_retrying(&mut w, &plaintext, chunk);
                let inner = w.finish().unwrap();
                assert!(inner.faults > 0);
                assert!(
                    inner.inner == expected,
                    "capacity {capacity}, max {max}, chunk {chunk}, pattern {i}"
                );
            }
        }
    });
}

#[test]
fn reader_over_misbehaving_io_decrypts_each_byte_exactly_once() {
    for_each_cipher!(make => {
        for (capacity, max, chunk, len) in misbehaving_cases() {
            let plaintext = message(len);
            let ciphertext = raw_at(make(), 0, &plaintext);
            let clean = {
                let inner = Flaky::new(&ciphertext[..], max, |_| None);
                let mut r = KeystreamReader::with_capacity(capacity, make(), inner);
                assert!(read_retrying(&mut r, len, chunk) == plaintext);
                r.get_ref().calls
            };
            for (i, fault) in fault_patterns(clean).into_iter().enumerate() {
                let inner = Flaky { inner: &ciphertext[..], max, fault, calls: 0, faults: 0 };
                let mut r = KeystreamReader::with_capacity(capacity, make(), inner);
                let out = read_retrying(&mut r, len, chunk);
                assert!(r.get_ref().faults > 0);
                assert!(
                    out == plaintext,
                    "capacity {capacity}, max {max}, chunk {chunk}, pattern {i}"
                );
            }
            // from_buf_read over a BufReader (holding half of what the
            // inner reader gives per call) whose fill_buf meets the same
            // errors, short reads and all.
            let held = max.clamp(2, 4096) / 2;
            let clean = {
                let flaky = Flaky::new(&ciphertext[..], max, |_| None);
                let inner = io::BufReader::with_capacity(held, flaky);
                let mut r = KeystreamReader::from_buf_read_with_capacity(capacity, make(), inner);
                assert!(read_retrying(&mut r, len, chunk) == plaintext);
                r.get_ref().get_ref().calls
            };
            for (i, fault) in fault_patterns(clean).into_iter().enumerate() {
                let flaky = Flaky { inner: &ciphertext[..], max, fault, calls: 0, faults: 0 };
                let inner = io::BufReader::with_capacity(held, flaky);
                let mut r = KeystreamReader::from_buf_read_with_capacity(capacity, make(), inner);
                let out = read_retrying(&mut r, len, chunk);
                assert!(r.get_ref().get_ref().faults > 0);
                assert!(
                    out == plaintext,
                    "from_buf_read: capacity {capacity}, max {max}, chunk {chunk}, pattern {i}"
                );
            }
        }
    });
}

/// Accepts nothing while `zero` is set.
struct Stalled {
    out: Vec<u8>,
    zero: bool,
}

impl Write for Stalled {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.zero {
            return Ok(0);
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_inner_writer_that_takes_nothing_is_write_zero_and_the_writer_resumes() {
    let plaintext = message(50_000);
    for_each_cipher!(make => {
        let mut w = KeystreamWriter::with_capacity(1024, make(), Stalled { out: Vec::new(), zero: true });
        // Accepted into the buffer (and one large write's first chunk): Ok, never Ok(0).
        assert_eq!(w.write(&plaintext[..1000]).unwrap(), 1000);
        let err = w.write(&plaintext[1000..3000]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WriteZero);
        assert_eq!(w.flush().unwrap_err().kind(), ErrorKind::WriteZero);
        w.get_mut().zero = false;
        w.write_all(&plaintext[1000..20_000]).unwrap();
        w.flush().unwrap();
        w.get_mut().zero = true;
        // A large write at an empty buffer: its first chunk is accepted.
        assert_eq!(w.write(&plaintext[20_000..]).unwrap(), 1024);
        w.get_mut().zero = false;
        w.write_all(&plaintext[21_024..]).unwrap();
        assert!(w.finish().unwrap().out == raw_at(make(), 0, &plaintext));
    });
}

// ---------------------------------------------------------- end of keystream

/// AES-CTR with a 32-bit counter, moved 40 blocks before its end: a short
/// keystream.
fn short_keystream() -> ctr::Ctr32BE<aes::Aes128> {
    let mut c = ctr::Ctr32BE::<aes::Aes128>::new(&[0x42; 16].into(), &[0x33; 16].into());
    c.seek(u64::from(u32::MAX - 40) * 16 + 5);
    c
}

/// The raw cipher over `data`, from wherever it is.
fn raw<C: StreamCipher>(mut cipher: C, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    cipher.apply_keystream(&mut out);
    out
}

/// How many bytes of keystream the raw cipher gives, byte by byte.
fn keystream_len() -> usize {
    let mut c = short_keystream();
    let mut n = 0;
    while c.try_apply_keystream(&mut [0]).is_ok() {
        n += 1;
    }
    n
}

#[test]
fn the_end_of_the_keystream_is_an_error_not_a_panic() {
    let len = keystream_len();
    assert!((600..=640).contains(&len), "{len}");
    assert!(
        short_keystream()
            .try_apply_keystream(&mut vec![0; len + 1])
            .is_err()
    );
    let plaintext = message(len + 100);
    let expected = raw(short_keystream(), &plaintext[..len]);
    for capacity in [1, 7, 64, 8192] {
        for chunk in [1, 5, 64, 1000] {
            let mut w = KeystreamWriter::with_capacity(capacity, short_keystream(), Vec::new());
            let mut at = 0;
            let err = loop {
                let end = (at + chunk).min(plaintext.len());
                match w.write(&plaintext[at..end]) {
                    Ok(n) => {
                        assert!(n > 0);
                        at += n;
                    }
                    Err(e) => break e,
                }
            };
            assert_eq!(err.kind(), ErrorKind::FileTooLarge);
            assert_eq!(at, len, "capacity {capacity}, chunk {chunk}");
            assert!(w.finish().unwrap() == expected);

            // Exactly as long as the keystream: a clean end.
            for (how, mut r) in readers(capacity, short_keystream, &expected) {
                assert!(
                    read_retrying(&mut r, len, chunk) == plaintext[..len],
                    "{how}"
                );
            }
            // One byte more: an error, never a panic.
            let longer = [&expected[..], &[0]].concat();
            for (how, mut r) in readers(capacity, short_keystream, &longer) {
                let mut out = Vec::new();
                let err = r.read_to_end(&mut out).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::FileTooLarge, "{how}");
                assert!(out == plaintext[..len], "{how}");
            }
        }
    }
}

// -------------------------------------------------------------------- the rest

#[test]
fn public_types_are_send_sync_and_debug_shows_no_bytes() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<KeystreamWriter<Aes128Ctr, std::fs::File>>();
    send_sync::<KeystreamReader<chacha20::ChaCha20, std::fs::File>>();

    let mut w = KeystreamWriter::new(aes_ctr(), Vec::<u8>::new());
    assert_eq!(w.capacity(), cipherio::DEFAULT_CAPACITY);
    w.write_all(b"secret").unwrap();
    let shown = format!("{w:?}");
    assert!(shown.contains("buffered: 6"), "{shown}");
    assert!(!shown.contains("secret"));
    let r = KeystreamReader::new(chacha(), &b""[..]);
    assert_eq!(r.capacity(), cipherio::DEFAULT_CAPACITY);
    assert!(format!("{r:?}").starts_with("KeystreamReader"));
    // Capacity 0 is taken as 1.
    assert_eq!(
        KeystreamWriter::with_capacity(0, chacha(), io::sink()).capacity(),
        1
    );
}
