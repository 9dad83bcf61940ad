//! Async I/O doubles for the tokio fronts: a scripted inner reader and a
//! scripted inner writer that deliver in scripted sizes, return `Pending`
//! (after waking the waker, so a runtime polls again) or an injected error
//! at scripted poll positions, and count every poll.
//!
//! The reader also implements `std::io::Read` with the same script
//! (`Pending` becomes `WouldBlock`), so that the std and the async fronts
//! can be driven over the same delivery and their inner calls compared.
//!
//! Poll positions count from 0 and include every poll, whatever it
//! returned. Each scripted event fires once, at its position.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{self, ErrorKind, Read};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The message of every error a double injects.
pub const INJECTED: &str = "injected by the test double";

/// True if `e` is an error injected by a double (passed through unchanged).
pub fn is_injected(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.to_string() == INJECTED)
}

fn injected(kind: ErrorKind) -> io::Error {
    io::Error::new(kind, INJECTED)
}

/// What a scripted poll does instead of its normal work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Pending,
    Error(ErrorKind),
    /// Writer only: `Ready(Ok(0))` from `poll_write`, a writer that
    /// accepted nothing.
    Zero,
}

/// The events of a script, by poll position.
#[derive(Clone, Debug, Default)]
struct Script {
    at: Vec<(usize, Event)>,
    /// `Pending` on every `n`-th poll (positions n-1, 2n-1, ...).
    pending_every: Option<usize>,
}

impl Script {
    fn event(&self, poll: usize) -> Option<Event> {
        if let Some((_, e)) = self.at.iter().find(|(p, _)| *p == poll) {
            return Some(*e);
        }
        match self.pending_every {
            Some(n) if n > 0 && (poll + 1).is_multiple_of(n) => Some(Event::Pending),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// reader

/// An inner reader over a fixed byte string (the ciphertext).
///
/// Each data-delivering call gives at most `chunks[i]` bytes for the i-th
/// such call (then `max_per_call`), and never more than asked for.
#[derive(Debug)]
pub struct ScriptedReader {
    data: Vec<u8>,
    pos: usize,
    script: Script,
    chunks: Vec<usize>,
    max_per_call: usize,
    /// Every `poll_read` (or `read`), whatever it returned.
    pub polls: usize,
    /// Calls that returned `Ready(Ok(..))` (data or end of stream).
    pub ready: usize,
    /// Calls that returned `Pending`.
    pub pendings: usize,
    /// For each ready call: (offset it read at, bytes asked for, bytes given).
    pub asks: Vec<(usize, usize, usize)>,
}

impl ScriptedReader {
    pub fn new(data: impl Into<Vec<u8>>) -> Self {
        ScriptedReader {
            data: data.into(),
            pos: 0,
            script: Script::default(),
            chunks: Vec::new(),
            max_per_call: usize::MAX,
            polls: 0,
            ready: 0,
            pendings: 0,
            asks: Vec::new(),
        }
    }

    /// Every data-delivering call gives at most `n` bytes.
    pub fn max_per_call(mut self, n: usize) -> Self {
        assert!(n > 0);
        self.max_per_call = n;
        self
    }

    /// The i-th data-delivering call gives at most `chunks[i]` bytes.
    pub fn chunks(mut self, chunks: Vec<usize>) -> Self {
        self.chunks = chunks;
        self
    }

    /// `Pending` (waking the waker) at each of these poll positions.
    pub fn pending_at(mut self, polls: impl IntoIterator<Item = usize>) -> Self {
        self.script
            .at
            .extend(polls.into_iter().map(|p| (p, Event::Pending)));
        self
    }

    /// `Pending` on every `n`-th poll.
    pub fn pending_every(mut self, n: usize) -> Self {
        self.script.pending_every = Some(n);
        self
    }

    /// An error of `kind` (message [`INJECTED`]) at poll position `poll`.
    pub fn error_at(mut self, poll: usize, kind: ErrorKind) -> Self {
        self.script.at.push((poll, Event::Error(kind)));
        self
    }

    /// Bytes delivered so far.
    pub fn delivered(&self) -> usize {
        self.pos
    }

    /// One call, as the script says; `None` means `Pending`.
    fn step(&mut self, dst: &mut [u8]) -> Option<io::Result<usize>> {
        let poll = self.polls;
        self.polls += 1;
        assert!(self.polls < 10_000_000, "runaway inner polls");
        match self.script.event(poll) {
            Some(Event::Pending) => {
                self.pendings += 1;
                return None;
            }
            Some(Event::Error(kind)) => return Some(Err(injected(kind))),
            Some(Event::Zero) | None => {}
        }
        let limit = self
            .chunks
            .get(self.ready)
            .copied()
            .unwrap_or(self.max_per_call);
        let n = dst.len().min(limit).min(self.data.len() - self.pos);
        dst[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.asks.push((self.pos, dst.len(), n));
        self.pos += n;
        self.ready += 1;
        Some(Ok(n))
    }
}

impl AsyncRead for ScriptedReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let dst = buf.initialize_unfilled();
        match this.step(dst) {
            None => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Err(e)) => Poll::Ready(Err(e)),
            Some(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// The same script through `std::io::Read`: `Pending` is `WouldBlock`.
impl Read for ScriptedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.step(buf) {
            None => Err(io::Error::new(ErrorKind::WouldBlock, "scripted pending")),
            Some(r) => r,
        }
    }
}

// ---------------------------------------------------------------------------
// writer

/// An inner writer collecting into a shared buffer (readable after the
/// writer over it is dropped), taking at most `max_per_call` bytes per
/// `poll_write` (short writes), with scripted `Pending`s, errors and
/// `Ok(0)`s shared by one poll counter over `poll_write`, `poll_flush` and
/// `poll_shutdown`. After a successful shutdown every write is an error.
#[derive(Debug)]
pub struct ScriptedWriter {
    out: Arc<Mutex<Vec<u8>>>,
    script: Script,
    max_per_call: usize,
    /// Every poll of any kind.
    pub polls: usize,
    /// `poll_write` calls that accepted bytes.
    pub writes: usize,
    /// `poll_write` calls, whatever they returned.
    pub write_polls: usize,
    /// `poll_flush` calls that returned `Ready(Ok(()))`.
    pub flushes: usize,
    /// `poll_shutdown` calls that returned `Ready(Ok(()))`.
    pub shutdowns: usize,
    /// Bytes written when the first shutdown completed.
    pub shut_at: Option<usize>,
    /// Bytes written when each flush completed.
    pub flushed_at: Vec<usize>,
    /// What each poll was, by position: `'w'` write, `'f'` flush, `'s'`
    /// shutdown.
    pub kinds: Vec<char>,
}

impl Default for ScriptedWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedWriter {
    pub fn new() -> Self {
        ScriptedWriter {
            out: Arc::new(Mutex::new(Vec::new())),
            script: Script::default(),
            max_per_call: usize::MAX,
            polls: 0,
            writes: 0,
            write_polls: 0,
            flushes: 0,
            shutdowns: 0,
            shut_at: None,
            flushed_at: Vec::new(),
            kinds: Vec::new(),
        }
    }

    /// Each `poll_write` takes at most `n` bytes.
    pub fn max_per_call(mut self, n: usize) -> Self {
        assert!(n > 0);
        self.max_per_call = n;
        self
    }

    /// `Pending` (waking the waker) at each of these poll positions.
    pub fn pending_at(mut self, polls: impl IntoIterator<Item = usize>) -> Self {
        self.script
            .at
            .extend(polls.into_iter().map(|p| (p, Event::Pending)));
        self
    }

    /// `Pending` on every `n`-th poll.
    pub fn pending_every(mut self, n: usize) -> Self {
        self.script.pending_every = Some(n);
        self
    }

    /// An error of `kind` (message [`INJECTED`]) at poll position `poll`.
    pub fn error_at(mut self, poll: usize, kind: ErrorKind) -> Self {
        self.script.at.push((poll, Event::Error(kind)));
        self
    }

    /// From now on (through `get_mut`), also `Pending` at these positions.
    pub fn add_pending_at(&mut self, polls: impl IntoIterator<Item = usize>) {
        self.script
            .at
            .extend(polls.into_iter().map(|p| (p, Event::Pending)));
    }

    /// From now on (through `get_mut`), at most `n` bytes per call.
    pub fn set_max_per_call(&mut self, n: usize) {
        assert!(n > 0);
        self.max_per_call = n;
    }

    /// `poll_write` returns `Ready(Ok(0))` at poll position `poll` (a
    /// flush or shutdown there proceeds normally).
    pub fn zero_at(mut self, poll: usize) -> Self {
        self.script.at.push((poll, Event::Zero));
        self
    }

    /// The shared output, readable after the writer is gone.
    pub fn handle(&self) -> Arc<Mutex<Vec<u8>>> {
        Arc::clone(&self.out)
    }

    /// A copy of everything written so far.
    pub fn output(&self) -> Vec<u8> {
        self.out.lock().unwrap().clone()
    }

    pub fn len(&self) -> usize {
        self.out.lock().unwrap().len()
    }

    fn next(&mut self, cx: &mut Context<'_>, kind: char) -> Option<Event> {
        self.kinds.push(kind);
        let poll = self.polls;
        self.polls += 1;
        assert!(self.polls < 10_000_000, "runaway inner polls");
        let e = self.script.event(poll);
        if e == Some(Event::Pending) {
            cx.waker().wake_by_ref();
        }
        e
    }
}

impl AsyncWrite for ScriptedWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.write_polls += 1;
        match this.next(cx, 'w') {
            Some(Event::Pending) => return Poll::Pending,
            Some(Event::Error(kind)) => return Poll::Ready(Err(injected(kind))),
            Some(Event::Zero) => return Poll::Ready(Ok(0)),
            None => {}
        }
        if this.shut_at.is_some() {
            return Poll::Ready(Err(io::Error::new(
                ErrorKind::BrokenPipe,
                "write after shutdown",
            )));
        }
        let n = buf.len().min(this.max_per_call);
        this.out.lock().unwrap().extend_from_slice(&buf[..n]);
        if n > 0 {
            this.writes += 1;
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.next(cx, 'f') {
            Some(Event::Pending) => return Poll::Pending,
            Some(Event::Error(kind)) => return Poll::Ready(Err(injected(kind))),
            Some(Event::Zero) | None => {}
        }
        this.flushes += 1;
        let len = this.len();
        this.flushed_at.push(len);
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.next(cx, 's') {
            Some(Event::Pending) => return Poll::Pending,
            Some(Event::Error(kind)) => return Poll::Ready(Err(injected(kind))),
            Some(Event::Zero) | None => {}
        }
        this.shutdowns += 1;
        if this.shut_at.is_none() {
            this.shut_at = Some(this.len());
        }
        Poll::Ready(Ok(()))
    }
}
