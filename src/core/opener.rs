//! The reader's state machine, over byte slices: ciphertext in,
//! authenticated plaintext out. It never calls I/O: each step says what it
//! needs ([`Step`]), and a front — std `Read`, tokio `AsyncRead`, a
//! `BufRead` whose buffer it may open in place — supplies it.
//!
//! Its state is owned parts, each keeping its own invariants: the
//! ciphertext read-ahead ([`ReadAhead`]: its sizing and aligned reads),
//! the plaintext buffer ([`Plain`]: which segment it holds), the position
//! and its seek and length query ([`Position`]), the in-place state
//! ([`InPlace`]); the opener holds the stage and the unit index, and
//! moves between them.
//!
//! The rules it owns:
//! - **No plaintext before its tag**: plaintext reaches the caller's buffer
//!   or the internal one only from a segment that authenticated.
//! - **Only the first segment may wait**: a step asks for input only while
//!   the segment it works on is incomplete; every complete segment already
//!   read ahead is opened without asking again. The one exception is the
//!   front's to ask for: with prefetch, the caller's thread reads more
//!   input while the ring has room (`ring`).
//! - **The final flag**: a short segment is final; a full-length one is
//!   tried with the likelier flag first, then the other; a final segment
//!   must end the input (trailing data is an error), and an input that ends
//!   without one is truncated.
//! - **Sticky errors**: once a step fails, every later step fails the same.
//! - **Threads open non-final segments only**: with `threads(n)`, n > 1,
//!   once a stream is far enough in, whole segments that more input
//!   follows (so each can only be non-final) open on several threads,
//!   each from its own index (`ring`): a large read's as one run, in
//!   place; small prefetching reads' as units of a ring, handed to the
//!   plaintext buffer whole, in order. What fails there goes back to the
//!   one-thread path, which gives the error (or the final segment) one
//!   thread would.

pub(crate) use crate::core::ahead::Beside;

use crate::core::ahead::{ReadAhead, Shape};
use crate::core::layout::{Fixed, Units};
use crate::core::plain::{Held, Plain};
use crate::core::seek::{Landing, Position};
use crate::core::step::Step;
use crate::core::unit::{Keyed, Setup};
use crate::probe::Count;
use crate::profile::{self, Profile, Stream};
use crate::{Error, Provider};

mod in_place;
mod random;
mod ring;
mod units;

use in_place::InPlace;
use ring::Ringed;

/// Where the reader is in the stream.
pub(super) enum Stage {
    /// The header has not been read yet.
    Start { key: Profile, aad: Vec<u8> },
    /// Segments are being opened.
    Body,
    /// A full-length final segment has authenticated, giving the stream
    /// this length (fixed-size segments; records give none); the inner
    /// reader must still confirm that nothing follows it.
    Final(Option<u64>),
    /// The final segment authenticated and the inner reader is at its end.
    Done,
    /// A fatal error: every later call returns it.
    Failed(Error),
}

/// What [`Opener::open_next`] found.
pub(super) enum Opened {
    /// A segment of this many plaintext bytes; more follow.
    More(usize),
    /// The final segment, of this many plaintext bytes.
    Last(usize),
}

/// How far into a stream (plaintext bytes delivered) a reader with
/// threads opens alone before its ring is made. Starting the pool,
/// filling a ring's larger buffers (new pages, unless the
/// allocator keeps them) and joining the pool at the end cost a reader up
/// to 1–2 ms here, which only the threads' share of several MiB pays
/// back: read at two threads from its first byte, a 1 MiB stream took up
/// to 3.5 times as long as on one thread, a 2 MiB one up to 2.5 times.
pub(crate) const READER_ALONE: u64 = 2 << 20;

/// The I/O-free core of a reader.
pub(crate) struct Opener {
    stage: Stage,
    /// What the header set up, once it is read; kept after the end, so
    /// that a seek can go back.
    stream: Option<Setup>,
    /// Index of the next segment to open.
    next: u64,
    /// Ciphertext read ahead from the inner reader.
    ahead: ReadAhead,
    /// One opened segment (with threads, a unit of them) for small reads
    /// and `BufRead`, and which segment it holds first.
    plain: Plain,
    /// The caller's and the inner reader's positions, a seek and a length
    /// query.
    position: Position,
    /// Whether the front shows its inner buffer, and where that failed.
    in_place: InPlace,
    max_segment: usize,
    provider: Provider,
    /// Threads opening units (`threads(n)`, n > 1); the ring is made once
    /// `alone` bytes were delivered.
    threads: usize,
    /// The plaintext bytes the caller delivers before the ring is made
    /// (opening alone): a short stream does not pay for the pool.
    alone: u64,
    /// With threads, the ring units are opened on.
    ring: Option<Ringed>,
    /// A unit failed in the ring: the one-thread path settles the rest.
    ring_off: bool,
    /// With threads, the caller's thread reads more input while the
    /// threads open what it read, if the front offers such a read.
    prefetch: bool,
    /// The call under way opens in place (runs into the caller's
    /// buffer): its inner reads are not cut to a ring's unit.
    in_place_call: bool,
    /// What the tests count (zero-sized outside them).
    pub(crate) counts: Counts,
}

/// What an [`Opener`] did, for the tests (aligned reads, opens per
/// segment, units through the ring).
#[derive(Default)]
pub(crate) struct Counts {
    /// Ciphertext bytes moved to the front of the read-ahead.
    pub(crate) moved: Count,
    /// Segment opens tried, failed trials included.
    pub(crate) opens: Count,
    /// Units posted to the ring.
    pub(crate) ring_units: Count,
    /// Runs opened in place on the workers (large reads).
    pub(crate) runs: Count,
    /// Runs the caller read the next input beside (with prefetch).
    pub(crate) runs_read_beside: Count,
}

impl Opener {
    /// An opener for `key`'s profile. Allocates nothing and cannot fail:
    /// the first step does. `windowed`: the front will answer
    /// [`Step::Window`].
    pub(crate) fn new(
        key: Profile,
        aad: Vec<u8>,
        capacity: usize,
        max_segment: usize,
        provider: Provider,
        windowed: bool,
        threads: usize,
    ) -> Opener {
        // A zero read-ahead fails every call, the first one included (an
        // empty read too).
        let stage = if capacity == 0 {
            Stage::Failed(Error::InvalidCapacity(0))
        } else if threads == 0 {
            Stage::Failed(Error::ZeroThreads)
        } else {
            Stage::Start { key, aad }
        };
        Opener {
            stage,
            stream: None,
            next: 0,
            ahead: ReadAhead::new(capacity),
            plain: Plain::new(),
            position: Position::new(),
            in_place: InPlace::new(windowed),
            max_segment,
            provider,
            threads,
            alone: READER_ALONE,
            ring: None,
            ring_off: false,
            prefetch: false,
            in_place_call: false,
            counts: Counts::default(),
        }
    }

    /// With threads, whether more input is read while the ring has room
    /// (see [`Beside`]); off by default, and with an inner buffer (whose
    /// segments open in place, with nothing copied to overlap).
    pub(crate) fn with_prefetch(mut self, on: bool) -> Opener {
        self.prefetch = on && !self.in_place.is_on();
        self
    }

    /// With threads, the plaintext bytes the caller delivers (opening
    /// alone) before the ring is made (default
    /// [`READER_ALONE`]).
    pub(crate) fn with_threads_after(mut self, bytes: u64) -> Opener {
        self.alone = bytes;
        self
    }

    /// The plaintext bytes left to deliver alone before the ring is made;
    /// `None` when there is none to make (one thread, or made).
    pub(super) fn alone_left(&self) -> Option<u64> {
        (self.threads > 1 && self.ring.is_none())
            .then(|| self.alone.saturating_sub(self.position.handed_out()))
    }

    /// Makes the ring once the stream has delivered enough for it to be
    /// likely to pay (the read-ahead and the plaintext buffer are the
    /// one-thread path's until then, and grow to a ring's only after).
    pub(super) fn workers_due(&mut self) {
        if matches!(self.stage, Stage::Body)
            && self.alone_left() == Some(0)
            && let Some(s) = &mut self.stream
        {
            let ring = Ringed::new(self.threads, s);
            self.ahead.size_for_run(ring.read_ahead(s.units.layout()));
            self.ring = Some(ring);
        }
    }

    /// The configured read-ahead.
    pub(crate) fn capacity(&self) -> usize {
        self.ahead.capacity()
    }

    /// Which library opens the segments.
    pub(crate) fn provider(&self) -> Provider {
        self.provider
    }

    /// A short name of the stage (`Debug`).
    pub(crate) fn stage_name(&self) -> &'static str {
        match &self.stage {
            Stage::Start { .. } => "start",
            Stage::Body => "body",
            Stage::Final(_) => "final",
            Stage::Done => "done",
            Stage::Failed(_) => "failed",
        }
    }

    /// Ciphertext read ahead, not opened yet.
    pub(crate) fn read_ahead(&self) -> usize {
        self.ahead.available() + self.ring_read_ahead()
    }

    /// Authenticated plaintext held for the caller (what
    /// [`fill`](Self::fill) made available).
    pub(crate) fn buffered(&self) -> &[u8] {
        self.plain.data()
    }

    /// The caller took `n` bytes of [`buffered`](Self::buffered) (clamped:
    /// never past what is buffered).
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.plain.available());
        self.plain.consume(n);
        self.position.delivered(n);
    }

    /// Whether the ring is made (tests: a short stream starts none).
    #[cfg(test)]
    pub(crate) fn threaded(&self) -> bool {
        self.ring.is_some()
    }

    /// Records a fatal error and returns it.
    fn fail(&mut self, e: Error) -> Error {
        self.stage = Stage::Failed(e.clone());
        e
    }

    /// The stream's units, once its header is read.
    #[inline]
    fn units(&self) -> Option<Units> {
        self.stream.as_ref().map(|s| s.units)
    }

    /// One step of a `read` into `buf`. `fresh`: the first step of a
    /// caller's call (the inner buffer is shown at most once per call,
    /// before any inner read). `side`: the front's read beside the threads.
    ///
    /// # Errors
    ///
    /// The stream's typed errors, sticky.
    pub(crate) fn read(
        &mut self,
        buf: &mut [u8],
        fresh: bool,
        mut side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<Step, Error> {
        loop {
            if let Some(step) = self.seek_step()? {
                return Ok(step);
            }
            if !self.plain.is_empty() {
                let n = buf.len().min(self.plain.available());
                buf[..n].copy_from_slice(&self.plain.data()[..n]);
                self.consume(n);
                return Ok(Step::Done(n));
            }
            if buf.is_empty() {
                // No inner I/O for an empty read: only a sticky error.
                return match &self.stage {
                    Stage::Failed(e) => Err(e.clone()),
                    _ => Ok(Step::Done(0)),
                };
            }
            self.in_place_call = self.opens_in_place(buf.len());
            if !self.in_place_call && self.ring_step(side.as_deref_mut())? {
                // The front unit's plaintext is buffered now.
                continue;
            }
            let cap = match self.ready(fresh)? {
                Ready::Step(step) => return Ok(step),
                Ready::Again => continue,
                Ready::Unit(cap) => cap,
            };
            // (With threads, a read too small for a run of its own takes
            // its segments from a run into the internal buffer.)
            let small = !self.run_pays(buf.len()) && self.run_pays(self.ahead.available());
            if buf.len() < cap || self.position.skips() || small {
                // Small read: through the internal buffer. (An empty
                // final segment leaves it empty; the loop then reports
                // the end.)
                self.fill_plain(cap)?;
                continue;
            }
            if let Some(n) = self.read_direct(buf, side.as_deref_mut())? {
                return Ok(Step::Done(n));
            }
            // Only an empty final segment; report the end properly.
        }
    }

    /// Zero-copy: decrypts straight into `buf` every complete segment that
    /// is already read ahead and fits (with threads, as runs on the
    /// workers). `None`: nothing was delivered (an empty final segment
    /// opened).
    fn read_direct(
        &mut self,
        buf: &mut [u8],
        mut side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<Option<usize>, Error> {
        let (mut n, runs) = (0, self.run_pays(buf.len()));
        loop {
            let ran = if runs {
                self.run_ahead(&mut buf[n..], side.as_deref_mut())
            } else {
                Ok(0)
            };
            let run = match ran {
                Ok(k) => k,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            };
            n += run;
            if run > 0 {
                if !self.next_fits(buf.len() - n) {
                    break;
                }
                continue;
            }
            let r = self.open_next(&mut buf[n..]);
            match self.after_open(r) {
                Ok(k) => n += k,
                Err(e) if n == 0 => return Err(e),
                // Earlier segments authenticated: deliver them; the sticky
                // error comes with the next call.
                Err(_) => break,
            }
            if !self.next_fits(buf.len() - n) {
                break;
            }
        }
        if n == 0 {
            return Ok(None);
        }
        self.position.delivered(n);
        Ok(Some(n))
    }

    /// One step of `BufRead::fill_buf`: `Done(n)` when
    /// [`buffered`](Self::buffered) holds `n` bytes (0: the end).
    ///
    /// # Errors
    ///
    /// The stream's typed errors, sticky.
    pub(crate) fn fill(
        &mut self,
        fresh: bool,
        mut side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<Step, Error> {
        loop {
            if let Some(step) = self.seek_step()? {
                return Ok(step);
            }
            if !self.plain.is_empty() {
                return Ok(Step::Done(self.plain.available()));
            }
            self.in_place_call = false;
            if self.ring_step(side.as_deref_mut())? {
                continue;
            }
            match self.ready(fresh)? {
                Ready::Step(step) => return Ok(step),
                Ready::Again => {}
                Ready::Unit(cap) => self.fill_plain(cap)?,
            }
        }
    }

    /// Whether the next unit can be opened: its plaintext capacity once it
    /// is complete in the read-ahead, else the step to hand to the front
    /// (the end, an inner read or seek, the inner buffer), or `Again` when
    /// a seek's landing must settle first.
    #[inline]
    fn ready(&mut self, fresh: bool) -> Result<Ready, Error> {
        if let Some(step) = self.settle()? {
            return Ok(Ready::Step(step));
        }
        // Before the inner buffer's window too: segments opened there
        // count towards the bytes read alone.
        self.workers_due();
        if fresh && self.window_wanted() {
            return Ok(Ready::Step(Step::Window));
        }
        Ok(match self.fill_segment()? {
            Some(cap) => Ready::Unit(cap),
            None if self.position.landing() == Landing::Ending => Ready::Again,
            None => Ready::Step(self.position.input_step()),
        })
    }

    /// Settles every stage but `Body`: `Some(step)` if there is nothing to
    /// open (the end of the stream, a read to confirm it, or an error),
    /// `None` to go on opening.
    #[inline]
    fn settle(&mut self) -> Result<Option<Step>, Error> {
        match &self.stage {
            Stage::Failed(e) => Err(e.clone()),
            Stage::Done => Ok(Some(Step::Done(0))),
            &Stage::Final(len) => {
                // The final segment was full-length: only now ask the inner
                // reader whether anything follows it.
                if self.ahead.wants(1) {
                    return Ok(Some(self.position.input_step()));
                }
                if !self.ahead.is_empty() {
                    return Err(self.fail(Error::TrailingData));
                }
                self.stage = Stage::Done;
                if let Some(len) = len {
                    self.position.confirm_len(len);
                }
                Ok(Some(Step::Done(0)))
            }
            Stage::Start { .. } | Stage::Body => Ok(None),
        }
    }

    /// The room for the next inner read (the read-ahead's rules: at least
    /// `capacity` bytes, ending on a unit boundary where one is far
    /// enough; the unit in hand always fits).
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] (sticky) when the read-ahead cannot grow.
    pub(crate) fn room(&mut self) -> Result<&mut [u8], Error> {
        let shape = self.shape();
        let moved = match self.ahead.make_room(&shape) {
            Ok(moved) => moved,
            Err(e) => return Err(self.fail(e)),
        };
        self.counts.moved.add(moved);
        if self.prefetch
            && !self.ring_off
            && !self.in_place_call
            && let (Some(r), Some(u)) = (&self.ring, self.units())
        {
            // With prefetch, a unit at a time: the pool opens each as
            // soon as the read after it arrived, while the caller reads
            // the next.
            self.ahead.offer_at_most(r.unit_sealed(u.layout()));
        }
        Ok(self.ahead.spare())
    }

    /// How the units lie in the read-ahead, for its next read.
    fn shape(&self) -> Shape {
        let units = self.units();
        let body = matches!(self.stage, Stage::Body);
        // With threads, reads fill their room wherever it ends: the last
        // segment read is then followed by a byte of the next (it can only
        // be non-final) and goes to the threads too. (Not with an inner
        // buffer, whose window opens the segments in place.)
        let aligned = body && (self.ring.is_none() || self.ring_off || self.in_place.is_on());
        let grid = match units {
            Some(Units::Fixed(l)) if aligned => {
                Some((l.sealed(self.next), l.sealed(self.next.saturating_add(1))))
            }
            // Records have no fixed size: the one in hand is what its header
            // says (once read), the ones after it are taken to be full, as
            // in bulk transfers; a shorter one costs a compaction later,
            // nothing else.
            Some(Units::Framed(l)) if aligned => {
                let full = l.max_sealed();
                Some((self.next_unit().map_or(full, |(_, sealed)| sealed), full))
            }
            _ => None,
        };
        Shape {
            grid,
            // (A ring's read-ahead grows to its target as a fixed one does.)
            framed: matches!(units, Some(Units::Framed(_))) && (aligned || !body),
            // With an inner buffer, ask only for the rest of the segment
            // begun (as the reader may: with none begun it asks for its
            // capacity): the read-ahead then empties on a segment boundary,
            // and so does what is left in the inner buffer, where the next
            // segments open in place. (A whole read-ahead would end inside
            // a segment of the inner buffer's refill, and every later
            // segment would be copied too.)
            exact: self.in_place.is_on() && body,
        }
    }

    /// The inner reader put `n` bytes into the last [`room`](Self::room)
    /// (0: it is at its end).
    pub(crate) fn filled(&mut self, n: usize) {
        self.ahead.filled(n);
        self.position.inner_read(n);
    }

    /// Checks the header once it is complete, then sets the stream up:
    /// `Ok(false)` while more input is needed.
    fn read_header(&mut self) -> Result<bool, Error> {
        if self.ahead.capacity() == 0 {
            return Err(self.fail(Error::InvalidCapacity(0)));
        }
        let Stage::Start { key, aad } = &self.stage else {
            unreachable!("header is read at the start")
        };
        let header_len = key.header_len();
        if let Err(e) = self.ahead.size_for_header(header_len) {
            return Err(self.fail(e));
        }
        let begun =
            profile::begin_read(key, aad, self.ahead.data(), self.max_segment, self.provider);
        let (header_len, Stream { suite, layout }) = match begun {
            Ok(Some(begun)) => begun,
            Ok(None) if !self.ahead.at_end() => {
                self.ahead.expect(header_len);
                return Ok(false);
            }
            Ok(None) => return Err(self.fail(Error::Truncated)),
            Err(e) => return Err(self.fail(e)),
        };
        self.ahead.consume(header_len);
        // Not authenticated until its first segment opens: room for one.
        self.ahead.size_for_unit(layout.max_sealed());
        self.stream = Some(Setup {
            suite: Keyed::Own(suite),
            units: layout.units(),
        });
        self.next = 0;
        self.stage = Stage::Body;
        self.workers_due();
        Ok(true)
    }
}

/// What [`Opener::ready`] found.
enum Ready {
    /// Hand this step to the front.
    Step(Step),
    /// A seek's landing must settle first: loop.
    Again,
    /// The next unit is complete, of up to this many plaintext bytes.
    Unit(usize),
}
