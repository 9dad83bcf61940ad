//! The scripted inner reader and writer every test drives the fronts over.
//! One of each: short transfers, a fixed per-call plan, one injected error,
//! `Ok(0)`; each counts its calls and what it was asked for. Each panics
//! when called without end, so a front that loops fails its test instead of
//! hanging it.

use std::io::{self, ErrorKind, Read, Write};
use std::ops::Range;

/// An inner reader over `data`. Call `k` hands out at most
/// `min(max_per_call, plan[k])` bytes (`plan` beyond its end: no limit) and
/// fails with `fail.1` if `k == fail.0`.
#[derive(Debug)]
pub struct ScriptReader<'a> {
    data: &'a [u8],
    /// Bytes handed out so far.
    pub pos: usize,
    /// Calls so far (the failing one included).
    pub calls: usize,
    /// Bytes asked for, over all calls.
    pub requested: usize,
    /// The smallest buffer asked to fill.
    pub min_request: usize,
    /// Each call: (stream offset it reads at, bytes asked for).
    pub asks: Vec<(usize, usize)>,
    pub max_per_call: usize,
    pub plan: Vec<usize>,
    pub fail: Option<(usize, ErrorKind)>,
    /// Call number this many panics.
    pub panic_at: Option<usize>,
}

impl<'a> ScriptReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        ScriptReader {
            data,
            pos: 0,
            calls: 0,
            requested: 0,
            min_request: usize::MAX,
            asks: Vec::new(),
            max_per_call: usize::MAX,
            plan: Vec::new(),
            fail: None,
            panic_at: None,
        }
    }

    /// At most `n` bytes per call.
    pub fn max_per_call(mut self, n: usize) -> Self {
        self.max_per_call = n;
        self
    }

    /// Call `k` hands out at most `plan[k]` bytes.
    pub fn plan(mut self, plan: Vec<usize>) -> Self {
        self.plan = plan;
        self
    }

    /// Call number `call` fails with `kind`.
    pub fn fail_at(mut self, call: usize, kind: ErrorKind) -> Self {
        self.fail = Some((call, kind));
        self
    }
}

impl Read for ScriptReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let call = self.calls;
        self.calls += 1;
        assert!(self.calls < 1_000_000, "runaway inner reads");
        self.requested += buf.len();
        self.min_request = self.min_request.min(buf.len());
        self.asks.push((self.pos, buf.len()));
        assert!(self.panic_at != Some(call), "scripted inner reader panic");
        if let Some((at, kind)) = self.fail
            && at == call
        {
            return Err(io::Error::new(kind, "scripted inner read error"));
        }
        let limit = self.plan.get(call).copied().unwrap_or(usize::MAX);
        let n = buf
            .len()
            .min(self.max_per_call)
            .min(limit)
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// An inner reader over `data` that hands out at most `max` bytes per
/// call and records nothing: no allocation, for tests that watch the
/// heap, and a segment boundary can fall at the end of a call (the reader
/// must then ask again before it knows what follows).
pub struct Trickle<'a> {
    data: &'a [u8],
    max: usize,
}

impl<'a> Trickle<'a> {
    pub fn new(data: &'a [u8], max: usize) -> Self {
        Trickle { data, max }
    }
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.max).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// A connected pair of TCP streams on localhost, (client, accepted), both
/// with read and write timeouts of `timeout` and no Nagle delay.
pub fn tcp_pair(timeout: std::time::Duration) -> (std::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    for s in [&client, &server] {
        s.set_read_timeout(Some(timeout)).unwrap();
        s.set_write_timeout(Some(timeout)).unwrap();
        s.set_nodelay(true).unwrap();
    }
    (client, server)
}

/// An inner writer into `out`: at most `max_per_call` bytes per call, one
/// error of `fail.1` at write call number `fail.0`, `Ok(0)` while `zero` is
/// set or for the calls in `zero_calls`. It records the size of every call
/// and counts flushes, and panics past `call_limit` calls, on an empty
/// write, and on a second call within one front call after an `Ok(0)` (the
/// front must report `WriteZero` instead; the test clears `after_zero`
/// after each front call where it scripts `Ok(0)`).
#[derive(Debug)]
pub struct ScriptWriter {
    pub out: Vec<u8>,
    pub calls: usize,
    /// Bytes offered by each call.
    pub sizes: Vec<usize>,
    pub flushes: usize,
    pub max_per_call: usize,
    pub fail: Option<(usize, ErrorKind)>,
    pub zero: bool,
    pub zero_calls: Range<usize>,
    pub after_zero: bool,
    pub call_limit: usize,
    /// The call (counted from 0) that panics, as a buggy writer may.
    pub panic_at: Option<usize>,
    /// When recording ([`recording`](Self::recording)), what each call
    /// was offered, taken or not, at its offset in `out`.
    pub offered: Option<Vec<(usize, Vec<u8>)>>,
}

impl Default for ScriptWriter {
    fn default() -> Self {
        ScriptWriter::new()
    }
}

impl ScriptWriter {
    pub fn new() -> Self {
        ScriptWriter {
            out: Vec::new(),
            calls: 0,
            sizes: Vec::new(),
            flushes: 0,
            max_per_call: usize::MAX,
            fail: None,
            zero: false,
            zero_calls: 0..0,
            after_zero: false,
            call_limit: 1_000_000,
            panic_at: None,
            offered: None,
        }
    }

    /// Records what each call is offered (see [`Seals`](super::seals::Seals)).
    pub fn recording(mut self) -> Self {
        self.offered = Some(Vec::new());
        self
    }

    pub fn max_per_call(mut self, n: usize) -> Self {
        self.max_per_call = n;
        self
    }

    pub fn fail_at(mut self, call: usize, kind: ErrorKind) -> Self {
        self.fail = Some((call, kind));
        self
    }
}

impl Write for ScriptWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let call = self.calls;
        self.calls += 1;
        assert!(
            self.calls <= self.call_limit,
            "{} inner write calls: the front loops on a misbehaving writer",
            self.calls
        );
        assert!(
            !buf.is_empty(),
            "the front asked the inner writer to write nothing"
        );
        assert!(
            !self.after_zero,
            "the front called the inner writer again after it returned Ok(0)"
        );
        self.sizes.push(buf.len());
        if let Some(offered) = &mut self.offered {
            offered.push((self.out.len(), buf.to_vec()));
        }
        assert!(self.panic_at != Some(call), "scripted inner writer panic");
        if self.zero || self.zero_calls.contains(&call) {
            self.after_zero = true;
            return Ok(0);
        }
        if let Some((at, kind)) = self.fail
            && at == call
        {
            return Err(io::Error::new(kind, "scripted inner write error"));
        }
        let n = buf.len().min(self.max_per_call);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

/// Any inner reader, its `read` calls counted (for real I/O, where a
/// [`ScriptReader`] cannot stand in).
#[derive(Debug)]
pub struct Counted<R> {
    pub inner: R,
    pub calls: usize,
}

impl<R> Counted<R> {
    pub fn new(inner: R) -> Self {
        Counted { inner, calls: 0 }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        self.inner.read(buf)
    }
}

/// A source of `len` bytes: `head`, then zeros, readable positionally and
/// as a seekable reader. A hand-written double: no real file can be as
/// long as the counters' ends (petabytes) for the length checks to see.
#[derive(Debug)]
pub struct Sparse {
    pub head: Vec<u8>,
    pub len: u64,
    pub pos: u64,
}

impl Sparse {
    pub fn new(head: &[u8], len: u64) -> Self {
        Sparse {
            head: head.to_vec(),
            len,
            pos: 0,
        }
    }
}

impl cipherio::ReadAt for Sparse {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = buf
            .len()
            .min(usize::try_from(self.len.saturating_sub(offset)).unwrap_or(usize::MAX));
        for (at, b) in (offset..).zip(&mut buf[..n]) {
            *b = usize::try_from(at)
                .ok()
                .and_then(|i| self.head.get(i))
                .copied()
                .unwrap_or(0);
        }
        Ok(n)
    }

    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len)
    }
}

impl Read for Sparse {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = cipherio::ReadAt::read_at(&*self, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::Seek for Sparse {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let pos = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| io::Error::from(ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}
