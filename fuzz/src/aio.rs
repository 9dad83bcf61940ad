//! The async mode of the targets that drive the std fronts: scripted tokio
//! doubles that return `Poll::Pending` where the input says, and drivers
//! that poll `AsyncCipherReader`/`AsyncCipherWriter` by hand with a no-op
//! waker (no runtime: the fuzz loop stays fast and deterministic).
//!
//! A double's polls are numbered (from 0, `Pending` ones included), and
//! poll `n` pends when its script has position `n`, but never more than
//! [`MAX_PENDING`] polls in a row, so every drive ends. The drivers re-poll after a `Pending`
//! or, where the input says so, drop the operation (a dropped future) and
//! go on with the next one: another caller buffer, another chunk, a flush.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use cipherio::Error;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};

use crate::drive::{Inner, is_injected, settle};

/// The most `Pending`s a double returns in a row.
pub const MAX_PENDING: usize = 3;

/// Positions taken from the input: position `k` is set when bit
/// `k % len` of `bits` is (`len` 0: none is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// The pattern, low bit first.
    pub bits: u8,
    /// Its period, 0 to 8.
    pub len: u8,
}

impl Script {
    /// A script of the low `len` bits of `bits`.
    pub fn new(bits: u8, len: u8) -> Script {
        debug_assert!(len <= 8);
        Script { bits, len }
    }

    /// Whether position `k` is set.
    pub fn at(self, k: usize) -> bool {
        self.len > 0 && (self.bits >> (k % usize::from(self.len))) & 1 == 1
    }
}

/// A context whose waker does nothing: the drivers poll again themselves.
pub fn cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

/// What an async drive saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `Pending`s the double under the front returned.
    pub inner_pendings: usize,
    /// `Pending`s the front returned to the driver.
    pub pendings: usize,
    /// Operations the driver dropped after a `Pending` (a dropped future).
    pub dropped: usize,
}

/// [`Inner`] (the same chunking, injected errors and ask-size checks) as
/// a tokio `AsyncRead`: poll `n` (from 0, `Pending`s included) returns
/// `Pending` when `pending.at(n)`, unless the last [`MAX_PENDING`] did.
/// `Pending` polls never reach [`Inner`], so its script and counts are
/// those of the std double.
pub struct AsyncInner<'a> {
    /// The std double that serves the polls that go through.
    pub inner: Inner<'a>,
    pending: Script,
    /// Polls so far.
    polls: usize,
    /// `Pending`s in a row just before.
    pended: usize,
    /// `Pending`s returned.
    pub pendings: usize,
}

impl<'a> AsyncInner<'a> {
    /// `inner` behind `pending`.
    pub fn new(inner: Inner<'a>, pending: Script) -> Self {
        AsyncInner {
            inner,
            pending,
            polls: 0,
            pended: 0,
            pendings: 0,
        }
    }
}

/// Whether poll number `*polls` pends (and counts it).
fn pend(script: Script, polls: &mut usize, pended: &mut usize, cx: &Context<'_>) -> bool {
    let n = *polls;
    *polls += 1;
    if *pended < MAX_PENDING && script.at(n) {
        *pended += 1;
        cx.waker().wake_by_ref();
        return true;
    }
    *pended = 0;
    false
}

impl AsyncRead for AsyncInner<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if pend(this.pending, &mut this.polls, &mut this.pended, cx) {
            this.pendings += 1;
            return Poll::Pending;
        }
        let n = std::io::Read::read(&mut this.inner, buf.initialize_unfilled())?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// A tokio `AsyncWrite` into a `Vec` with short writes and `Pending`s:
/// the `i`-th write that goes through takes at most `sizes[i % 2]` bytes
/// (0: all); write (flush, shutdown) poll `n`, counted apart for each
/// kind from 0, `Pending`s included, returns `Pending` when that kind's
/// script has position `n`, unless the last [`MAX_PENDING`] polls did.
/// It checks the front's side: no empty writes, nothing after the
/// shutdown, one shutdown.
#[derive(Debug)]
pub struct ScriptWriter {
    /// Everything written.
    pub data: Vec<u8>,
    sizes: [u8; 2],
    write_pending: Script,
    flush_pending: Script,
    shutdown_pending: Script,
    /// Writes that went through.
    writes: usize,
    /// Polls of each kind: write, flush, shutdown.
    kind_polls: [usize; 3],
    pended: usize,
    /// `data.len()` at the last completed flush or shutdown.
    pub flushed: usize,
    /// Completed shutdowns.
    pub shutdowns: usize,
    /// `Pending`s returned.
    pub pendings: usize,
    /// Polls of any kind (write, flush, shutdown), `Pending` included.
    pub polls: usize,
}

impl ScriptWriter {
    /// A writer taking `sizes` in turn and pending as the scripts say.
    pub fn new(sizes: [u8; 2], write: Script, flush: Script, shutdown: Script) -> Self {
        ScriptWriter {
            data: Vec::new(),
            sizes,
            write_pending: write,
            flush_pending: flush,
            shutdown_pending: shutdown,
            writes: 0,
            kind_polls: [0; 3],
            pended: 0,
            flushed: 0,
            shutdowns: 0,
            pendings: 0,
            polls: 0,
        }
    }

    /// Whether this poll of `kind` pends.
    fn pend(&mut self, kind: usize, cx: &mut Context<'_>) -> bool {
        self.polls += 1;
        assert_eq!(
            self.shutdowns, 0,
            "the inner writer was polled after its shutdown"
        );
        let script = [
            self.write_pending,
            self.flush_pending,
            self.shutdown_pending,
        ][kind];
        let p = pend(script, &mut self.kind_polls[kind], &mut self.pended, cx);
        self.pendings += usize::from(p);
        p
    }
}

impl AsyncWrite for ScriptWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        assert!(!buf.is_empty(), "an empty write reached the inner writer");
        if this.pend(0, cx) {
            return Poll::Pending;
        }
        let size = usize::from(this.sizes[this.writes % 2]);
        this.writes += 1;
        let n = if size == 0 {
            buf.len()
        } else {
            size.min(buf.len())
        };
        this.data.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pend(1, cx) {
            return Poll::Pending;
        }
        this.flushed = this.data.len();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pend(2, cx) {
            return Poll::Pending;
        }
        this.shutdowns += 1;
        this.flushed = this.data.len();
        Poll::Ready(Ok(()))
    }
}

/// [`drive::drive`](crate::drive::drive) for an async reader: the same
/// ops, each polled until it is ready; after the reader's `k`-th
/// `Pending` the op is dropped (the driver goes on with the next op, so
/// another caller buffer) when `drop_after.at(k)`, else polled again with the
/// same buffer. A `Pending` read leaves the caller's buffer untouched, an
/// empty read is ready at once. Injected errors are retried.
///
/// # Panics
///
/// If the reader breaks the `AsyncRead`/`AsyncBufRead` contract or returns
/// an error that is neither cipherio's nor injected.
pub fn drive<R: AsyncBufRead + Unpin>(
    r: &mut R,
    ops: &[u8],
    drop_after: Script,
    scratch: &mut [u8],
    out: &mut Vec<u8>,
    stats: &mut Stats,
) -> Result<(), Error> {
    let mut cx = cx();
    let ops = if ops.is_empty() { &[0x41][..] } else { ops };
    // After a `Pending`: whether to drop the op.
    let dropping = |stats: &mut Stats| {
        let k = stats.pendings;
        stats.pendings += 1;
        let d = drop_after.at(k);
        stats.dropped += usize::from(d);
        d
    };
    for &op in ops.iter().cycle() {
        let n = usize::from(op & 63);
        let len = match op >> 6 {
            0 if n == 0 => {
                let mut rb = ReadBuf::new(&mut []);
                match Pin::new(&mut *r).poll_read(&mut cx, &mut rb) {
                    Poll::Pending => panic!("an empty read returned Pending"),
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(e)) if is_injected(&e) => {
                        panic!("an empty read polled the inner reader")
                    }
                    Poll::Ready(Err(e)) => settle(&e)?,
                }
                1
            }
            0 => n,
            1 => (n + 1) * 64,
            2 => {
                loop {
                    let res = match Pin::new(&mut *r).poll_fill_buf(&mut cx) {
                        Poll::Pending => {
                            if dropping(stats) {
                                break;
                            }
                            continue;
                        }
                        Poll::Ready(Ok([])) => return Ok(()),
                        Poll::Ready(Ok(buf)) => {
                            let k = buf.len().min(n + 1);
                            out.extend_from_slice(&buf[..k]);
                            Ok(k)
                        }
                        Poll::Ready(Err(e)) => Err(e),
                    };
                    match res {
                        Ok(k) => Pin::new(&mut *r).consume(k),
                        Err(e) => settle(&e)?,
                    }
                    break;
                }
                continue;
            }
            _ => 4096 + n * 1024,
        };
        let buf = &mut scratch[..len];
        loop {
            // What was in the buffer before a poll that pends must still
            // be there (its head, checked cheaply).
            let head: [u8; 16] = std::array::from_fn(|i| buf.get(i).copied().unwrap_or(0));
            let mut rb = ReadBuf::new(buf);
            match Pin::new(&mut *r).poll_read(&mut cx, &mut rb) {
                Poll::Pending => {
                    assert!(rb.filled().is_empty(), "a Pending read filled the buffer");
                    let now: [u8; 16] = std::array::from_fn(|i| buf.get(i).copied().unwrap_or(0));
                    assert_eq!(head, now, "a Pending read wrote into the caller's buffer");
                    if dropping(stats) {
                        break;
                    }
                }
                Poll::Ready(Ok(())) => {
                    let got = rb.filled();
                    if got.is_empty() {
                        return Ok(());
                    }
                    out.extend_from_slice(got);
                    break;
                }
                Poll::Ready(Err(e)) => {
                    settle(&e)?;
                    break;
                }
            }
        }
    }
    unreachable!("the ops cycle forever")
}

/// [`drive::check_after`](crate::drive::check_after) for an async reader:
/// after the end or an error every poll is ready at once (the end and the
/// sticky error need no inner I/O) and says the same again.
///
/// # Panics
///
/// If it is not so.
pub fn check_after<R: AsyncBufRead + Unpin>(
    r: &mut R,
    end: &Result<(), Error>,
    scratch: &mut [u8],
) {
    let mut cx = cx();
    for i in 0..4 {
        for _ in 0..2 {
            let got = match i {
                0..=2 => {
                    let len = [0, 1, scratch.len()][i];
                    let mut rb = ReadBuf::new(&mut scratch[..len]);
                    match Pin::new(&mut *r).poll_read(&mut cx, &mut rb) {
                        Poll::Ready(res) => res.map(|()| rb.filled().len()),
                        Poll::Pending => panic!("call {i} after {end:?} returned Pending"),
                    }
                }
                _ => match Pin::new(&mut *r).poll_fill_buf(&mut cx) {
                    Poll::Ready(res) => res.map(<[u8]>::len),
                    Poll::Pending => panic!("fill_buf after {end:?} returned Pending"),
                },
            };
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
