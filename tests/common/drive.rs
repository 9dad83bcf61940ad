//! Drivers: write a plaintext in a chunking, read a stream in a pattern,
//! and the retrying loops of a careful `std::io` caller over misbehaving
//! inner I/O. All of them run over a [`Front`].

use std::io::{self, ErrorKind, Read, Write};

use cipherio::{Error, ReaderBuilder, WriterBuilder};

use super::doubles::ScriptReader;
use super::front::{Front, FrontReader, FrontWriter};

/// How a caller chunks its writes.
#[derive(Clone, Debug)]
pub enum WriteMode {
    /// One `write_all` of the whole plaintext.
    AllAtOnce,
    /// `write_all` calls of this many bytes.
    Fixed(usize),
    /// `write_all` calls of these sizes in turn, with an empty `write`
    /// (which must return `Ok(0)`) before every call `i` with
    /// `i % empty_every == 1`.
    Cycle {
        sizes: Vec<usize>,
        empty_every: usize,
    },
}

/// Writes `pt` through `w` in `mode`.
pub fn write_in<W: Write + Unpin>(w: &mut FrontWriter<W>, pt: &[u8], mode: &WriteMode) {
    if let WriteMode::AllAtOnce = mode {
        return w.write_all(pt).unwrap();
    }
    let mut pos = 0;
    let mut i = 0;
    while pos < pt.len() {
        let size = match mode {
            WriteMode::AllAtOnce => unreachable!(),
            WriteMode::Fixed(n) => *n,
            WriteMode::Cycle { sizes, empty_every } => {
                if i % empty_every == 1 {
                    assert_eq!(w.write(&[]).unwrap(), 0, "empty write");
                }
                sizes[i % sizes.len()]
            }
        };
        let n = size.min(pt.len() - pos);
        w.write_all(&pt[pos..pos + n]).unwrap();
        pos += n;
        i += 1;
    }
}

/// The stream `builder` makes of `pt` written in `mode` through `front`.
pub fn encrypt(front: Front, builder: WriterBuilder, pt: &[u8], mode: &WriteMode) -> Vec<u8> {
    let mut w = front.build_writer(builder, Vec::new());
    write_in(&mut w, pt, mode);
    w.finish().unwrap()
}

/// How a caller reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// `read_to_end`.
    ToEnd,
    /// `read` calls into buffers of this many bytes.
    Chunks(usize),
    /// `fill_buf`, then `consume` at most this many bytes and all in turn
    /// (`usize::MAX`: all every time).
    FillBuf(usize),
    /// `read_exact` of these sizes in turn, up to `len` bytes (the
    /// plaintext's length: `read_exact` cannot see a clean end).
    Exact { sizes: Vec<usize>, len: usize },
}

/// Reads `r` in `mode` to its end or its first error; returns the
/// plaintext released and how it ended.
pub fn read_in<R: Read + Unpin>(
    r: &mut FrontReader<R>,
    mode: &ReadMode,
) -> (Vec<u8>, io::Result<()>) {
    let mut got = Vec::new();
    let res = match mode {
        ReadMode::ToEnd => r.read_to_end(&mut got).map(drop),
        ReadMode::Chunks(n) => {
            let mut b = vec![0u8; *n];
            loop {
                match r.read(&mut b) {
                    Ok(0) => break Ok(()),
                    Ok(k) => got.extend_from_slice(&b[..k]),
                    Err(e) => break Err(e),
                }
            }
        }
        ReadMode::FillBuf(n) => {
            let mut i = 0;
            loop {
                match r.fill_buf() {
                    Ok([]) => break Ok(()),
                    Ok(b) => {
                        let k = if i % 2 == 0 { b.len().min(*n) } else { b.len() };
                        got.extend_from_slice(&b[..k]);
                        r.consume(k);
                        i += 1;
                    }
                    Err(e) => break Err(e),
                }
            }
        }
        ReadMode::Exact { sizes, len } => {
            let mut i = 0;
            loop {
                if got.len() >= *len {
                    break Ok(());
                }
                let n = sizes[i % sizes.len()].min(len - got.len());
                let mut b = vec![0u8; n];
                if let Err(e) = r.read_exact(&mut b) {
                    break Err(e);
                }
                got.extend_from_slice(&b);
                i += 1;
            }
        }
    };
    (got, res)
}

/// After a clean end, the end stays the end: `read` and `fill_buf` say so
/// again.
pub fn assert_end_is_stable<R: Read + Unpin>(ctx: &str, r: &mut FrontReader<R>) {
    assert_eq!(
        r.read(&mut [0u8; 64]).unwrap(),
        0,
        "{ctx}: read after the end"
    );
    assert!(
        r.fill_buf().unwrap().is_empty(),
        "{ctx}: fill_buf after the end"
    );
}

/// Reads the stream `ct` with `builder` through `front` in `mode`: it must
/// be `pt`, and the end stable.
pub fn decrypt_ok(
    ctx: &str,
    front: Front,
    builder: ReaderBuilder,
    ct: &[u8],
    pt: &[u8],
    mode: &ReadMode,
) {
    let mut r = front.build_reader(builder, ct);
    let (got, res) = read_in(&mut r, mode);
    let ctx = format!("{ctx} [{front:?}, {mode:?}]");
    res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert!(
        got == pt,
        "{ctx}: wrong plaintext ({} bytes, want {})",
        got.len(),
        pt.len()
    );
    assert_end_is_stable(&ctx, &mut r);
}

/// The plaintext of `ct` read to its end with `builder` (default std
/// reader use, for checking what a writer wrote).
pub fn decrypt(front: Front, builder: ReaderBuilder, ct: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    front.build_reader(builder, ct).read_to_end(&mut out)?;
    Ok(out)
}

/// Writes `data` through `w` in calls of at most `chunk` bytes, then
/// completes it with `try_finish`, the way a careful caller does: after an
/// error the *same* call is retried (an `Err` consumed nothing), after
/// `Ok(n)` the caller moves on by exactly `n`. Returns the error kinds that
/// surfaced. Checks that no error carries a crate error (inner errors pass
/// through unchanged) and that `write` never returns `Ok(0)` or more than
/// it was given.
pub fn write_retrying<W: Write + Unpin>(
    w: &mut FrontWriter<W>,
    data: &[u8],
    chunk: usize,
) -> Vec<ErrorKind> {
    let mut errors = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let end = off.saturating_add(chunk).min(data.len());
        match w.write(&data[off..end]) {
            Ok(0) => panic!("write returned Ok(0) for a {}-byte buffer", end - off),
            Ok(n) => {
                assert!(n <= end - off, "write claims {n} of {} bytes", end - off);
                off += n;
            }
            Err(e) => {
                assert_eq!(Error::from_io(&e), None, "inner error altered: {e}");
                errors.push(e.kind());
            }
        }
        assert!(errors.len() < 50, "too many errors: {errors:?}");
    }
    while let Err(e) = w.try_finish() {
        assert_eq!(Error::from_io(&e), None, "inner error altered: {e}");
        errors.push(e.kind());
        assert!(errors.len() < 50, "too many errors: {errors:?}");
    }
    errors
}

/// Reads to the end in calls of `bufsize` bytes, retrying the same call
/// after any error (none of which may carry a crate error). Returns the
/// plaintext and the error kinds that surfaced.
pub fn read_retrying<R: Read + Unpin>(
    r: &mut FrontReader<R>,
    bufsize: usize,
) -> (Vec<u8>, Vec<ErrorKind>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut buf = vec![0; bufsize];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, errors),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => {
                assert_eq!(Error::from_io(&e), None, "inner error altered: {e}");
                errors.push(e.kind());
                assert!(errors.len() < 50, "{errors:?}");
            }
        }
    }
}

/// A reader over an inner reader that hands out `max_per_call` bytes a
/// call, read with [`read_retrying`] in `bufsize`-byte reads: first
/// cleanly, then with one error of `kind` injected at every call position
/// of the clean run. `open` makes the front reader over the inner one.
/// Every run gives back `pt`; the injected error surfaces only as itself,
/// exactly once if `exactly_once` (else at most once: the front may retry
/// it, as `Read::read_exact` does `Interrupted`), and, if `same_calls`,
/// the inner reader is called exactly once more than in the clean run (the
/// failed call: no call is lost or repeated). (A prefetching reader's
/// failed read beside a run is made again as an ordinary read, which may
/// ask for a different room: its calls are not counted, its bytes are.)
#[allow(clippy::too_many_arguments)]
pub fn read_injecting_at_every_call<'a>(
    ctx: &str,
    ct: &'a [u8],
    pt: &[u8],
    max_per_call: usize,
    bufsize: usize,
    kind: ErrorKind,
    (exactly_once, same_calls): (bool, bool),
    open: impl Fn(ScriptReader<'a>) -> FrontReader<ScriptReader<'a>>,
) {
    let mut r = open(ScriptReader::new(ct).max_per_call(max_per_call));
    let (out, errors) = read_retrying(&mut r, bufsize);
    assert!(errors.is_empty(), "{ctx}: clean run: {errors:?}");
    assert!(out == pt, "{ctx}: clean run: wrong plaintext");
    let clean_calls = r.get_ref().calls;
    for k in 0..clean_calls {
        let ctx = format!("{ctx}: {kind:?} at {k}/{clean_calls}");
        let mut r = open(
            ScriptReader::new(ct)
                .max_per_call(max_per_call)
                .fail_at(k, kind),
        );
        let (out, errors) = read_retrying(&mut r, bufsize);
        assert!(out == pt, "{ctx}");
        assert!(errors.iter().all(|&e| e == kind), "{ctx}: {errors:?}");
        if exactly_once {
            assert_eq!(errors.len(), 1, "{ctx}");
        } else {
            assert!(errors.len() <= 1, "{ctx}");
        }
        if same_calls {
            assert_eq!(r.get_ref().calls, clean_calls + 1, "{ctx}");
        }
    }
}
