//! The random-access model: a reader's seeks, reads and length queries
//! checked against the plaintext and a position, over a source that
//! fails or pends where a schedule says.
//!
//! One file serves the `seek` fuzz target (`src/seek.rs` decodes an input
//! into a [`Case`]) and the main crate's `tests/seek_faults.rs`, which
//! includes it with `#[path]` (so it uses only cipherio's public API, std
//! and tokio's I/O traits). The async driver is in `seek_model_async.rs`,
//! a sibling module, since the main crate's tests build it only with the
//! `tokio` feature.
//!
//! - [`Source`]: the inner reader, `Read + BufRead + Seek` (and tokio's
//!   `AsyncRead + AsyncSeek`) over the source bytes, like a `Cursor`. Its
//!   calls (`read`, `fill_buf`, `seek`, `poll_read`, `poll_complete`) are
//!   numbered from 0 and the [`Faults`] schedule may fail any of them
//!   (`WouldBlock`, `Interrupted`, `Other`, or `Pending` on the async
//!   side; `WouldBlock` on the std side); the [`GRACE`] calls after a
//!   fault go through, so that a caller who retries gets on.
//! - [`ModelFront`]: one op of the caller on a front (the std reader here,
//!   the async one polled by hand in the sibling module).
//! - [`drive`]: runs the ops and checks every outcome against the model.
//!
//! The rules, on an intact stream: every byte released is the plaintext's
//! at the model position; `Ok(0)` only at or past the end; a length is the
//! plaintext's length; a seek returns its target; the only errors are the
//! injected ones (passed through unchanged), a refused seek (before 0 or
//! past 2^64, `InvalidInput`), and `read_exact` past the end (a clean end,
//! `UnexpectedEof` without a cipherio error). An injected error or a
//! dropped future moves nothing but what the caller saw move (a
//! `read_exact` that stopped part-way, a seek that may or may not have
//! happened: then the position is asked and must be one of the two), and
//! the caller may go on with anything: retry, seek back, ask the length.
//! Whatever came before, the rest then reads to a clean end, the length
//! is right and the whole plaintext reads again from the start.
//!
//! On a damaged stream: every byte released is still the plaintext's at
//! the model position, a length given is the true one, and after the
//! first stream error (a cipherio error but a refused call: `InvalidSeek`,
//! `NoRandomAccess`, `SourceMovedBack`, `ZeroThreads`) every op
//! fails, with that error or an injected one; a stream cut or extended
//! never reads to a clean end.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, ErrorKind, Read, Seek, SeekFrom};
use std::rc::Rc;

use cipherio::Error;

/// Calls after a fault that go through, whatever the schedule says (a
/// source recovers: a reader that needs a few calls in a row to get on,
/// as a `fill_buf` then a `read`, is not starved).
pub const GRACE: usize = 3;

/// Most attempts at one op in the final checks before the model gives up
/// (a reader that never gets on).
const MAX_RETRIES: usize = 10_000;

/// The error a [`Source`] injects: not cipherio's, so the reader must pass
/// it through unchanged and stay usable.
#[derive(Debug)]
pub struct Injected;

impl fmt::Display for Injected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("injected by the seek model's source")
    }
}

impl std::error::Error for Injected {}

/// Whether `e` is an error a [`Source`] injected.
pub fn is_injected(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|e| e.is::<Injected>())
}

/// What a scheduled call does instead of its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `Poll::Pending` on the async side, `WouldBlock` on the std side.
    Pending,
    /// This error, [`Injected`].
    Error(ErrorKind),
}

/// The faults in turn of a [`Pattern`] (and of the fuzz input's kinds).
pub const KINDS: [Fault; 4] = [
    Fault::Pending,
    Fault::Error(ErrorKind::WouldBlock),
    Fault::Error(ErrorKind::Interrupted),
    Fault::Error(ErrorKind::Other),
];

/// Positions set by a repeating bit pattern: position `k` is set when bit
/// `k % len` of `bits` is (`len` 0: none is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern, low bit first.
    pub bits: u8,
    /// Its period, 0 to 8.
    pub len: u8,
}

impl Pattern {
    /// Whether position `k` is set.
    pub fn at(self, k: usize) -> bool {
        self.len > 0 && (self.bits >> (k % usize::from(self.len.min(8)))) & 1 == 1
    }
}

/// Which source calls fail, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// These calls (numbered from 0, every kind of call together).
    pub at: Vec<(usize, Fault)>,
    /// And the calls this pattern sets, with the [`KINDS`] in turn from
    /// `kind`.
    pub every: Pattern,
    /// The first of [`KINDS`] the pattern uses.
    pub kind: u8,
}

impl Faults {
    /// No call fails.
    pub fn none() -> Faults {
        Faults::default()
    }

    /// Call `k` fails with `fault`.
    pub fn one(k: usize, fault: Fault) -> Faults {
        Faults {
            at: vec![(k, fault)],
            ..Faults::default()
        }
    }

    /// The fault scheduled for call `k`, if any.
    pub fn fault(&self, k: usize) -> Option<Fault> {
        if let Some(&(_, f)) = self.at.iter().find(|(c, _)| *c == k) {
            return Some(f);
        }
        self.every.at(k).then(|| {
            let i = (k + usize::from(self.kind)) % KINDS.len();
            KINDS[i]
        })
    }
}

/// What a [`Source`] counted, shared with the driver (which cannot look
/// at the source while a future holds the reader).
#[derive(Debug, Default)]
pub struct Counters {
    /// Calls of every kind, faulted ones included.
    pub calls: Cell<usize>,
    /// Calls that returned `Pending`.
    pub pendings: Cell<usize>,
    /// Calls that returned an injected error.
    pub errors: Cell<usize>,
}

/// The inner reader: the source bytes behind a position, as a `Cursor`,
/// with the [`Faults`] on its calls. Its `BufRead` shows everything from
/// the position on (as a `Cursor`'s does).
#[derive(Debug)]
pub struct Source {
    data: Vec<u8>,
    pos: u64,
    faults: Faults,
    /// Calls still to go through after the last fault.
    grace: usize,
    /// An async seek started and not yet completed.
    pub(crate) in_flight: Option<SeekFrom>,
    /// What happened so far.
    pub counters: Rc<Counters>,
}

impl Source {
    /// `data`, read from `start` on, failing as `faults` says.
    pub fn new(data: Vec<u8>, start: u64, faults: Faults) -> Source {
        Source {
            data,
            pos: start,
            faults,
            grace: 0,
            in_flight: None,
            counters: Rc::default(),
        }
    }

    /// Numbers one call; the fault it meets, if any.
    pub(crate) fn next_fault(&mut self) -> Option<Fault> {
        let c = &self.counters;
        let k = c.calls.get();
        c.calls.set(k + 1);
        assert!(k < 1_000_000, "runaway source calls");
        let fault = self.faults.fault(k).filter(|_| self.grace == 0);
        match fault {
            Some(Fault::Pending) => c.pendings.set(c.pendings.get() + 1),
            Some(Fault::Error(_)) => c.errors.set(c.errors.get() + 1),
            None => {}
        }
        self.grace = if fault.is_some() {
            GRACE
        } else {
            self.grace.saturating_sub(1)
        };
        fault
    }

    /// A fault as the std side sees it.
    fn std_fault(&mut self) -> io::Result<()> {
        match self.next_fault() {
            None => Ok(()),
            Some(Fault::Pending) => Err(io::Error::new(ErrorKind::WouldBlock, Injected)),
            Some(Fault::Error(kind)) => Err(io::Error::new(kind, Injected)),
        }
    }

    fn rest(&self) -> &[u8] {
        let at = usize::try_from(self.pos).map_or(self.data.len(), |p| p.min(self.data.len()));
        &self.data[at..]
    }

    /// Copies what follows the position into `buf`.
    pub(crate) fn copy_out(&mut self, buf: &mut [u8]) -> usize {
        let rest = self.rest();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n as u64;
        n
    }

    /// Moves the position as `Cursor::seek` does.
    pub(crate) fn move_to(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, off) = match to {
            SeekFrom::Start(n) => {
                self.pos = n;
                return Ok(n);
            }
            SeekFrom::End(d) => (self.data.len() as u64, d),
            SeekFrom::Current(d) => (self.pos, d),
        };
        match base.checked_add_signed(off) {
            Some(n) => {
                self.pos = n;
                Ok(n)
            }
            None => Err(io::Error::new(
                ErrorKind::InvalidInput,
                "a seek before 0 or past 2^64",
            )),
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.std_fault()?;
        Ok(self.copy_out(buf))
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.std_fault()?;
        Ok(self.rest())
    }

    fn consume(&mut self, amt: usize) {
        assert!(amt <= self.rest().len(), "consumed past the source's end");
        self.pos += amt as u64;
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.std_fault()?;
        self.move_to(to)
    }
}

/// One op of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Seek(SeekFrom),
    /// `Current(-d)`, `d` capped at the position (never refused).
    SeekBack(u64),
    Read(usize),
    ReadExact(usize),
    /// `fill_buf`, then `consume` of `x % (shown + 1)` bytes.
    Fill(usize),
    /// `plaintext_len`.
    Len,
    /// `stream_position` (on the async front a `seek(Current(0))`).
    Pos,
}

/// How an op ended.
#[derive(Debug)]
pub enum Out<T> {
    Ok(T),
    Err(io::Error),
    /// The future was dropped after a `Pending` (async only).
    Dropped,
}

/// A front as the model drives it: each call is one caller op, polled by
/// hand to its end or to a dropped future on the async front.
pub trait ModelFront {
    /// `read`.
    fn read(&mut self, buf: &mut [u8]) -> Out<usize>;
    /// `read_exact`; also how many bytes it took when the front can tell
    /// (`None`: unknown, as std's after an error).
    fn read_exact(&mut self, buf: &mut [u8]) -> (Option<usize>, Out<()>);
    /// `fill_buf`, then `consume(x % (shown + 1))`: what it showed and
    /// consumed.
    fn fill(&mut self, x: usize) -> Out<(Vec<u8>, usize)>;
    fn seek(&mut self, to: SeekFrom) -> Out<u64>;
    fn len(&mut self) -> Out<u64>;
    /// The position without side effects or inner I/O, if the front has
    /// such a query (the std front's `stream_position`).
    fn position_now(&mut self) -> Option<u64>;
    /// The source's counters.
    fn counters(&self) -> Rc<Counters>;
}

/// The std front over any `Read + Seek` inner reader built on a
/// [`Source`].
pub struct StdFront<R> {
    /// The reader.
    pub r: cipherio::CipherReader<R>,
    /// Its source's counters.
    pub counters: Rc<Counters>,
}

fn out<T>(r: io::Result<T>) -> Out<T> {
    match r {
        Ok(t) => Out::Ok(t),
        Err(e) => Out::Err(e),
    }
}

impl<R: Read + Seek> ModelFront for StdFront<R> {
    fn read(&mut self, buf: &mut [u8]) -> Out<usize> {
        out(self.r.read(buf))
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> (Option<usize>, Out<()>) {
        match self.r.read_exact(buf) {
            Ok(()) => (Some(buf.len()), Out::Ok(())),
            Err(e) => (None, Out::Err(e)),
        }
    }

    fn fill(&mut self, x: usize) -> Out<(Vec<u8>, usize)> {
        match self.r.fill_buf() {
            Ok(b) => {
                let shown = b.to_vec();
                let c = x % (shown.len() + 1);
                self.r.consume(c);
                Out::Ok((shown, c))
            }
            Err(e) => Out::Err(e),
        }
    }

    fn seek(&mut self, to: SeekFrom) -> Out<u64> {
        out(self.r.seek(to))
    }

    fn len(&mut self) -> Out<u64> {
        out(self.r.plaintext_len())
    }

    fn position_now(&mut self) -> Option<u64> {
        Some(
            self.r
                .stream_position()
                .expect("stream_position does no I/O"),
        )
    }

    fn counters(&self) -> Rc<Counters> {
        Rc::clone(&self.counters)
    }
}

/// The inner reader of a std front: the source itself (its `BufRead`
/// shows all the rest) or behind a `BufReader` of this capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inner {
    /// `build` over the source.
    Plain,
    /// `build_from_buf_read` over the source.
    BufRead,
    /// `build_from_buf_read` over a `BufReader` of this capacity.
    BufReader(usize),
}

/// A stream to read and how.
pub struct Case<'a> {
    /// What the stream holds.
    pub pt: &'a [u8],
    /// The source: unrelated bytes, then the stream (intact or damaged).
    pub source: Vec<u8>,
    /// Where the stream starts in the source.
    pub start: u64,
    /// The stream was changed.
    pub mutated: bool,
    /// Its length was (cut or extended).
    pub shape: bool,
    pub ops: Vec<Op>,
    pub faults: Faults,
}

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// The stream was changed.
    pub mutated: bool,
    /// Ops that succeeded.
    pub ok: usize,
    /// The first stream error, if any.
    pub failed: bool,
    /// Seeks that succeeded.
    pub seeks: usize,
    /// Injected errors the caller saw.
    pub injected: usize,
    /// Ops dropped after a `Pending`.
    pub dropped: usize,
    /// Source calls, faulted ones included.
    pub calls: usize,
}

/// Builds the std front over `case`'s source with `builder`.
pub fn std_front(
    case: &Case<'_>,
    builder: cipherio::ReaderBuilder,
    inner: Inner,
) -> Box<dyn ModelFront> {
    let src = Source::new(case.source.clone(), case.start, case.faults.clone());
    let counters = Rc::clone(&src.counters);
    match inner {
        Inner::Plain => Box::new(StdFront {
            r: builder.build(src),
            counters,
        }),
        Inner::BufRead => Box::new(StdFront {
            r: builder.build_from_buf_read(src),
            counters,
        }),
        Inner::BufReader(cap) => Box::new(StdFront {
            r: builder.build_from_buf_read(io::BufReader::with_capacity(cap, src)),
            counters,
        }),
    }
}

/// Whether `e` is the stream's failure (sticky), not a refused call (a
/// seek to a negative position or on a framed stream, a misplaced inner
/// reader, a bad configuration).
fn stream_error(e: &io::Error) -> Option<Error> {
    match Error::from_io(e) {
        Some(
            Error::InvalidSeek
            | Error::NoRandomAccess
            | Error::SourceMovedBack
            | Error::ZeroThreads,
        )
        | None => None,
        Some(ce) => Some(ce.clone()),
    }
}

/// The model: the plaintext, the position, the first stream error.
struct Model<'a> {
    pt: &'a [u8],
    len: u64,
    pos: u64,
    mutated: bool,
    shape: bool,
    failed: Option<Error>,
    run: Run,
}

impl<'a> Model<'a> {
    fn avail(&self, pos: u64) -> &'a [u8] {
        let pt: &'a [u8] = self.pt;
        &pt[usize::try_from(pos.min(self.len)).expect("small")..]
    }

    /// An error: an injected one (passed through; `Ok` so the caller goes
    /// on), else the stream's: never on an intact stream, and the same
    /// every time after the first.
    fn on_err(&mut self, ctx: &str, e: &io::Error) {
        if is_injected(e) {
            assert_eq!(Error::from_io(e), None, "{ctx}: injected error altered");
            self.run.injected += 1;
            return;
        }
        let se = stream_error(e);
        assert!(
            self.mutated || se.is_none(),
            "{ctx}: {e:?} on an intact stream"
        );
        let Some(se) = se else {
            panic!("{ctx}: {e:?} is neither injected nor a stream error");
        };
        assert!(
            matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::UnexpectedEof),
            "{ctx}: kind {:?}",
            e.kind()
        );
        match &self.failed {
            Some(first) => assert_eq!(&se, first, "{ctx}: not sticky"),
            None => self.failed = Some(se),
        }
    }

    /// Bytes released at the model position: the plaintext's, `Ok(0)` only
    /// at or past the end (of an intact length).
    fn released(&mut self, ctx: &str, asked: usize, got: &[u8]) {
        assert!(self.failed.is_none(), "{ctx}: Ok after {:?}", self.failed);
        let want = self.avail(self.pos);
        assert!(got.len() <= asked, "{ctx}: {} bytes for {asked}", got.len());
        if asked > 0 {
            assert_eq!(
                got.is_empty(),
                want.is_empty(),
                "{ctx}: Ok({}) with {} bytes left",
                got.len(),
                want.len()
            );
            assert!(
                !(got.is_empty() && self.shape),
                "{ctx}: Ok(0) on a cut or extended stream"
            );
        }
        assert!(
            got.len() <= want.len() && got == &want[..got.len()],
            "{ctx}: wrong bytes: {} bytes at {}, first {:?}, want {:?}",
            got.len(),
            self.pos,
            &got[..got.len().min(16)],
            &want[..want.len().min(got.len()).min(16)]
        );
        self.pos += got.len() as u64;
        self.run.ok += 1;
    }

    /// Where `to` goes from the model position (`None`: refused).
    fn target(&self, to: SeekFrom) -> Option<u64> {
        match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        }
    }
}

/// Asks the front where it is after an op whose effect the caller cannot
/// tell: it must be one of `allowed`. Retries injected errors and dropped
/// futures.
fn resolve(ctx: &str, f: &mut dyn ModelFront, m: &mut Model<'_>, allowed: &[u64]) {
    let at = match f.position_now() {
        Some(p) => p,
        None => {
            let got = loop_op(ctx, m, |m| match f.seek(SeekFrom::Current(0)) {
                Out::Ok(p) => Some(Some(p)),
                Out::Err(e) => {
                    // On a damaged stream the query (on the async front, a
                    // seek) may be the call that meets the stream error
                    // deferred by a read that released segments before it:
                    // then the position is moot. (`on_err` refuses a stream
                    // error on an intact stream.)
                    m.on_err(ctx, &e);
                    m.failed.is_some().then_some(None)
                }
                Out::Dropped => None,
            });
            let Some(p) = got else {
                return;
            };
            p
        }
    };
    assert!(
        allowed.contains(&at),
        "{ctx}: position {at}, want one of {allowed:?}"
    );
    m.pos = at;
}

/// Runs `attempt` until it gives a value.
fn loop_op<T>(
    ctx: &str,
    m: &mut Model<'_>,
    mut attempt: impl FnMut(&mut Model<'_>) -> Option<T>,
) -> T {
    for _ in 0..MAX_RETRIES {
        if let Some(t) = attempt(m) {
            return t;
        }
    }
    panic!("{ctx}: no progress in {MAX_RETRIES} attempts");
}

/// Runs `case.ops` on `f`, then the final checks (see the module doc).
///
/// # Panics
///
/// On any breach of the rules.
pub fn drive(f: &mut dyn ModelFront, case: &Case<'_>) -> Run {
    let mut m = Model {
        pt: case.pt,
        len: case.pt.len() as u64,
        pos: 0,
        mutated: case.mutated,
        shape: case.shape,
        failed: None,
        run: Run {
            mutated: case.mutated,
            ..Run::default()
        },
    };
    for (k, &op) in case.ops.iter().enumerate() {
        let ctx = &format!(
            "op {k} {op:?} at {} (len {}, mutated {}, source call {})",
            m.pos,
            m.len,
            m.mutated,
            f.counters().calls.get()
        );
        step(ctx, f, &mut m, op);
        if m.failed.is_none()
            && let Some(p) = f.position_now()
        {
            assert_eq!(p, m.pos, "{ctx}: stream_position");
        }
    }
    finish(f, &mut m);
    m.run.failed = m.failed.is_some();
    m.run.calls = f.counters().calls.get();
    m.run
}

/// One op against the model.
fn step(ctx: &str, f: &mut dyn ModelFront, m: &mut Model<'_>, op: Op) {
    match op {
        Op::Seek(_) | Op::SeekBack(_) => {
            let to = match op {
                Op::SeekBack(d) => {
                    SeekFrom::Current(-i64::try_from(d.min(m.pos)).unwrap_or(i64::MAX))
                }
                Op::Seek(to) => to,
                _ => unreachable!("a seek"),
            };
            let target = m.target(to);
            let from = m.pos;
            match f.seek(to) {
                Out::Ok(p) => {
                    assert!(m.failed.is_none(), "{ctx}: Ok({p}) after {:?}", m.failed);
                    assert_eq!(Some(p), target, "{ctx}: position");
                    m.pos = p;
                    m.run.seeks += 1;
                    m.run.ok += 1;
                }
                Out::Err(e) if !is_injected(&e) && stream_error(&e).is_none() => {
                    // Refused: before 0 or past 2^64. (A length query's
                    // refusal of a damaged stream is a stream error.)
                    assert_eq!(target, None, "{ctx}: {e:?}");
                    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{ctx}");
                }
                Out::Err(e) => {
                    m.on_err(ctx, &e);
                    if m.failed.is_none() {
                        // It may have moved or not.
                        let allowed: Vec<u64> =
                            [Some(from), target].into_iter().flatten().collect();
                        resolve(ctx, f, m, &allowed);
                    }
                }
                Out::Dropped => {
                    m.run.dropped += 1;
                    // It may have moved or not; a failed stream's position
                    // is moot (the async position query fails with the
                    // sticky error).
                    if m.failed.is_none() {
                        let allowed: Vec<u64> =
                            [Some(from), target].into_iter().flatten().collect();
                        resolve(ctx, f, m, &allowed);
                    }
                }
            }
        }
        Op::Read(n) => {
            let mut b = vec![0u8; n];
            match f.read(&mut b) {
                Out::Ok(got) => {
                    assert!(got <= n, "{ctx}: Ok({got}) for {n} bytes");
                    m.released(ctx, n, &b[..got]);
                }
                Out::Err(e) => m.on_err(ctx, &e),
                Out::Dropped => m.run.dropped += 1,
            }
        }
        Op::ReadExact(n) => {
            let mut b = vec![0u8; n];
            let from = m.pos;
            match f.read_exact(&mut b) {
                (_, Out::Ok(())) => {
                    // (std's `read_exact` of nothing never calls `read`.)
                    assert!(
                        n == 0 || m.failed.is_none(),
                        "{ctx}: Ok after {:?}",
                        m.failed
                    );
                    let want = m.avail(m.pos);
                    assert!(n <= want.len(), "{ctx}: read_exact past the end");
                    assert!(b[..] == want[..n], "{ctx}: wrong bytes");
                    m.pos += n as u64;
                    m.run.ok += 1;
                }
                (took, Out::Err(e)) if Error::from_io(&e).is_none() && !is_injected(&e) => {
                    // A clean end before the buffer was full.
                    assert!(
                        m.failed.is_none(),
                        "{ctx}: a clean end after {:?}",
                        m.failed
                    );
                    assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{ctx}: {e:?}");
                    assert!(
                        from.saturating_add(n as u64) > m.len,
                        "{ctx}: a clean end before the end"
                    );
                    assert!(!m.shape, "{ctx}: a clean end on a cut or extended stream");
                    let want = m.avail(from);
                    if let Some(t) = took {
                        assert_eq!(t, want.len(), "{ctx}: bytes before the end");
                        assert!(b[..t] == want[..], "{ctx}: wrong bytes");
                    }
                    m.pos = from.max(m.len);
                }
                (took, res) => {
                    let dropped = matches!(res, Out::Dropped);
                    if let Out::Err(e) = res {
                        m.on_err(ctx, &e);
                    } else {
                        m.run.dropped += 1;
                    }
                    let want = m.avail(from);
                    match took {
                        Some(t) => {
                            assert!(
                                t <= want.len() && b[..t] == want[..t],
                                "{ctx}: wrong bytes before the error"
                            );
                            m.pos = from + t as u64;
                        }
                        None if m.failed.is_none() || dropped => {
                            let most = n.min(want.len()) as u64;
                            let allowed: Vec<u64> = (from..=from + most).collect();
                            resolve(ctx, f, m, &allowed);
                            let t = usize::try_from(m.pos - from).expect("small");
                            assert!(b[..t] == want[..t], "{ctx}: wrong bytes before the error");
                        }
                        None => {}
                    }
                }
            }
        }
        Op::Fill(x) => match f.fill(x) {
            Out::Ok((shown, c)) => {
                assert!(m.failed.is_none(), "{ctx}: Ok after {:?}", m.failed);
                let want = m.avail(m.pos);
                assert_eq!(shown.is_empty(), want.is_empty(), "{ctx}: fill_buf");
                assert!(!(shown.is_empty() && m.shape), "{ctx}: end of a cut stream");
                assert!(
                    shown.len() <= want.len() && shown == want[..shown.len()],
                    "{ctx}: wrong bytes shown: {} at {}, first {:?}",
                    shown.len(),
                    m.pos,
                    &shown[..shown.len().min(16)]
                );
                m.pos += c as u64;
                m.run.ok += 1;
            }
            Out::Err(e) => m.on_err(ctx, &e),
            Out::Dropped => m.run.dropped += 1,
        },
        Op::Len => match f.len() {
            // A length is only ever the authenticated one (after a
            // failure too, if it was known before).
            Out::Ok(n) => {
                assert_eq!(n, m.len, "{ctx}: plaintext_len");
                assert!(!m.shape, "{ctx}: a length for a cut or extended stream");
                m.run.ok += 1;
            }
            Out::Err(e) => m.on_err(ctx, &e),
            Out::Dropped => m.run.dropped += 1,
        },
        Op::Pos => {
            if m.failed.is_none() {
                let at = m.pos;
                resolve(ctx, f, m, &[at]);
            }
        }
    }
}

/// The end of a run: the rest to the end (retrying injected errors and
/// dropped futures); on a stream not failed yet, the length, and the whole
/// plaintext again from the start.
fn finish(f: &mut dyn ModelFront, m: &mut Model<'_>) {
    let from = m.pos;
    let mut rest = Vec::new();
    let mut b = vec![0u8; 1000];
    let end = loop_op("final reads", m, |m| match f.read(&mut b) {
        Out::Ok(0) => Some(None),
        Out::Ok(n) => {
            rest.extend_from_slice(&b[..n]);
            assert!(rest.len() <= m.pt.len(), "final reads: past the plaintext");
            None
        }
        Out::Err(e) if is_injected(&e) => {
            m.run.injected += 1;
            None
        }
        Out::Err(e) => Some(Some(e)),
        Out::Dropped => None,
    });
    let want = m.avail(from);
    assert!(
        rest.len() <= want.len() && rest == want[..rest.len()],
        "final reads from {from}: wrong bytes"
    );
    match end {
        None => {
            assert!(m.failed.is_none(), "a clean end after {:?}", m.failed);
            assert_eq!(rest.len(), want.len(), "a clean end before the end");
            assert!(!m.shape, "a clean end on a cut or extended stream");
        }
        Some(e) => {
            m.on_err("final reads", &e);
            return;
        }
    }
    m.pos = from.max(m.len);
    if m.mutated {
        return;
    }
    let len = loop_op("final length", m, |m| match f.len() {
        Out::Ok(n) => Some(n),
        Out::Err(e) => {
            m.on_err("final length", &e);
            None
        }
        Out::Dropped => None,
    });
    assert_eq!(len, m.len, "final length");
    let p = loop_op("final seek", m, |m| match f.seek(SeekFrom::Start(0)) {
        Out::Ok(p) => Some(p),
        Out::Err(e) => {
            m.on_err("final seek", &e);
            None
        }
        Out::Dropped => None,
    });
    assert_eq!(p, 0, "final seek");
    let mut all = Vec::new();
    loop_op("final reread", m, |m| match f.read(&mut b) {
        Out::Ok(0) => Some(()),
        Out::Ok(n) => {
            all.extend_from_slice(&b[..n]);
            assert!(all.len() <= m.pt.len(), "final reread: past the plaintext");
            None
        }
        Out::Err(e) => {
            m.on_err("final reread", &e);
            None
        }
        Out::Dropped => None,
    });
    assert!(
        all == m.pt,
        "final reread: wrong plaintext ({} bytes)",
        all.len()
    );
}
