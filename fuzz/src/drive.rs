//! Driving a reader the way callers do: reads of many sizes (empty, small,
//! around a segment, many segments), `fill_buf`/`consume`, over an inner
//! reader that returns short reads and injected, retryable errors.

use std::fmt;
use std::io::{self, BufRead, Read};

use cipherio::Error;

/// The largest caller buffer a read op uses.
pub const SCRATCH_LEN: usize = 4096 + 63 * 1024;

/// The error an [`Inner`] reader injects: not cipherio's, so the reader
/// must pass it through and stay usable.
#[derive(Debug)]
pub struct Injected;

impl fmt::Display for Injected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("injected inner reader error")
    }
}

impl std::error::Error for Injected {}

pub(crate) fn is_injected(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|e| e.is::<Injected>())
}

/// An in-memory inner reader with a pattern of short reads and, if asked,
/// an injected error every `period`-th call. It checks the reader's side of
/// the contract: every `read` asks for at least `min_ask` bytes (the
/// reader's capacity), the calls for the header included, except that a
/// call may ask for less to complete a segment begun by an earlier read (so
/// that later reads end on segment boundaries): at most once after the
/// header's read and once after each short or failed call.
///
/// It is also a `BufRead` (for `build_from_buf_read`): a `fill_buf` with
/// nothing buffered refills with the next of the same sizes (0: all the
/// rest), and `read` then serves what is buffered before it reads on. Every
/// `period`-th `fill_buf` fails too (counted apart from the `read` calls,
/// so that a reader alternating the two cannot meet only failing reads);
/// the ask-size checks apply to `read` calls only.
pub struct Inner<'a> {
    data: &'a [u8],
    /// `data[..buffered]` is the current refill.
    buffered: usize,
    refills: usize,
    /// `fill_buf` calls.
    fills: usize,
    /// Bytes handed out through `consume`.
    consumed: usize,
    sizes: [u8; 4],
    period: Option<usize>,
    min_ask: usize,
    header_len: usize,
    delivered: usize,
    calls: usize,
    /// Calls in the body that asked for less than `min_ask`.
    small_asks: usize,
    /// Calls that delivered less than asked, or failed.
    shorts: usize,
}

impl<'a> Inner<'a> {
    /// Reads `data` in chunks of `sizes` in turn (0: as much as asked),
    /// failing every `period`-th call (`None`: never).
    pub fn new(
        data: &'a [u8],
        sizes: [u8; 4],
        period: Option<usize>,
        min_ask: usize,
        header_len: usize,
    ) -> Self {
        Inner {
            data,
            buffered: 0,
            refills: 0,
            fills: 0,
            consumed: 0,
            sizes,
            period,
            min_ask,
            header_len,
            delivered: 0,
            calls: 0,
            small_asks: 0,
            shorts: 0,
        }
    }

    /// Bytes handed out through `BufRead::consume` so far.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// What the reader did with it: `read` calls, bytes delivered, short
    /// or failed calls, calls under the capacity, refills, bytes consumed.
    pub fn counts(&self) -> [usize; 6] {
        [
            self.calls,
            self.delivered,
            self.shorts,
            self.small_asks,
            self.refills,
            self.consumed,
        ]
    }

    /// The injected error for call number `n` of its kind (`read` or
    /// `fill_buf`): every `period`-th one fails.
    fn inject(&self, n: usize) -> Option<io::Error> {
        let p = self.period?;
        if !n.is_multiple_of(p) {
            return None;
        }
        let kinds = [
            io::ErrorKind::Interrupted,
            io::ErrorKind::WouldBlock,
            io::ErrorKind::Other,
        ];
        Some(io::Error::new(kinds[(n / p) % 3], Injected))
    }

    fn advance(&mut self, n: usize) {
        self.data = &self.data[n..];
        self.delivered += n;
    }
}

impl Read for Inner<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let header_rest = self.header_len.saturating_sub(self.delivered);
        assert!(
            !buf.is_empty(),
            "the reader asked its inner reader for 0 bytes"
        );
        if header_rest > 0 {
            assert!(
                buf.len() >= self.min_ask,
                "the reader asked its inner reader for {} bytes, under its capacity {}, \
                 before the header was complete ({} bytes delivered)",
                buf.len(),
                self.min_ask,
                self.delivered
            );
        } else if buf.len() < self.min_ask {
            self.small_asks += 1;
            assert!(
                self.small_asks <= 1 + self.shorts,
                "{} inner reads under the capacity {} with only {} short or failed ones \
                 before them ({} bytes delivered)",
                self.small_asks,
                self.min_ask,
                self.shorts,
                self.delivered
            );
        }
        self.calls += 1;
        if let Some(e) = self.inject(self.calls) {
            self.shorts += 1;
            return Err(e);
        }
        let n = if self.buffered > 0 {
            // What the last refill brought comes first, as from a
            // `BufReader`.
            let n = self.buffered.min(buf.len());
            self.buffered -= n;
            n
        } else {
            let size = usize::from(self.sizes[self.calls % 4]);
            let n = if size == 0 {
                buf.len()
            } else {
                size.min(buf.len())
            };
            n.min(self.data.len())
        };
        if n < buf.len() {
            self.shorts += 1;
        }
        buf[..n].copy_from_slice(&self.data[..n]);
        self.advance(n);
        Ok(n)
    }
}

impl BufRead for Inner<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.fills += 1;
        if let Some(e) = self.inject(self.fills) {
            return Err(e);
        }
        if self.buffered == 0 {
            let size = usize::from(self.sizes[self.refills % 4]);
            self.refills += 1;
            self.buffered = if size == 0 {
                self.data.len()
            } else {
                size.min(self.data.len())
            };
        }
        Ok(&self.data[..self.buffered])
    }

    fn consume(&mut self, amt: usize) {
        assert!(
            amt <= self.buffered,
            "consumed {amt} bytes of a {}-byte refill",
            self.buffered
        );
        self.buffered -= amt;
        self.consumed += amt;
        self.advance(amt);
    }
}

/// Reads `r` to its end (`Ok`) or its first error of cipherio's (`Err`),
/// applying `ops` in turn and appending the plaintext to `out`. Injected
/// errors are retried. Each op byte is `kind << 6 | n`:
///
/// - 0: `read` into `n` bytes (`n = 0`: an empty read, which must not
///   call the inner reader, then a 1-byte read);
/// - 1: `read` into `(n + 1) * 64` bytes;
/// - 2: `fill_buf`, then `consume` up to `n + 1` bytes;
/// - 3: `read` into `4096 + n * 1024` bytes (many segments at once).
///
/// # Panics
///
/// If the reader breaks the `Read`/`BufRead` contract or returns an error
/// that is neither cipherio's nor injected.
pub fn drive<R: BufRead>(
    r: &mut R,
    ops: &[u8],
    scratch: &mut [u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let ops = if ops.is_empty() { &[0x41][..] } else { ops };
    for &op in ops.iter().cycle() {
        let n = usize::from(op & 63);
        let len = match op >> 6 {
            0 if n == 0 => {
                // No inner I/O; it may report an error that an earlier
                // read met after releasing what authenticated before it.
                match r.read(&mut []) {
                    Ok(0) => {}
                    Ok(k) => panic!("an empty read returned {k}"),
                    Err(e) if is_injected(&e) => panic!("an empty read called the inner reader"),
                    Err(e) => settle(&e)?,
                }
                1
            }
            0 => n,
            1 => (n + 1) * 64,
            2 => {
                let res = match r.fill_buf() {
                    Ok([]) => return Ok(()),
                    Ok(buf) => {
                        let k = buf.len().min(n + 1);
                        out.extend_from_slice(&buf[..k]);
                        Ok(k)
                    }
                    Err(e) => Err(e),
                };
                match res {
                    Ok(k) => r.consume(k),
                    Err(e) => settle(&e)?,
                }
                continue;
            }
            _ => 4096 + n * 1024,
        };
        let buf = &mut scratch[..len];
        match r.read(buf) {
            Ok(0) => return Ok(()),
            Ok(k) => {
                assert!(k <= len, "read returned {k} for a {len}-byte buffer");
                out.extend_from_slice(&buf[..k]);
            }
            Err(e) => settle(&e)?,
        }
    }
    unreachable!("the ops cycle forever")
}

/// `Ok` to retry an injected error, else cipherio's error.
pub(crate) fn settle(e: &io::Error) -> Result<(), Error> {
    if is_injected(e) {
        return Ok(());
    }
    match Error::from_io(e) {
        Some(err) => {
            assert_eq!(e.kind(), err.kind(), "io kind of {err:?}");
            Err(err.clone())
        }
        None => panic!("an error that is neither cipherio's nor injected: {e:?}"),
    }
}

/// After `drive` ended: an end stays an end (`Ok(0)`, empty `fill_buf`),
/// and an error is sticky: every later call returns it again, the empty
/// read included, never `Ok(0)`.
///
/// # Panics
///
/// If it is not so.
pub fn check_after<R: BufRead>(r: &mut R, end: &Result<(), Error>, scratch: &mut [u8]) {
    type Call<R> = dyn Fn(&mut R, &mut [u8]) -> io::Result<usize>;
    let calls: [&Call<R>; 4] = [
        &|r, _| r.read(&mut []),
        &|r, s| r.read(&mut s[..1]),
        &|r, s| r.read(s),
        &|r, _| r.fill_buf().map(<[u8]>::len),
    ];
    for (i, call) in calls.iter().enumerate() {
        for _ in 0..2 {
            let got = call(r, scratch);
            match (end, got) {
                (Ok(()), Ok(0)) => {}
                (Err(want), Err(e)) if !is_injected(&e) => {
                    assert_eq!(Error::from_io(&e), Some(want), "call {i} after the error");
                }
                (end, got) => panic!("call {i} after {end:?} returned {got:?}"),
            }
        }
    }
}
