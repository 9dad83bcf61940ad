//! The reader's state machine, over byte slices: ciphertext in,
//! authenticated plaintext out. It never calls I/O: each step says what it
//! needs ([`Step`]), and a front — std `Read`, tokio `AsyncRead`, a
//! `BufRead` whose buffer it may open in place — supplies it.
//!
//! The rules it owns:
//! - **No plaintext before its tag**: plaintext reaches the caller's buffer
//!   or the internal one only from a segment that authenticated.
//! - **Read-ahead**: each inner read is offered at least `capacity` bytes
//!   of room, ending on a segment boundary where one is far enough, so a
//!   full read leaves no partial segment to move later; only the rest of a
//!   segment begun may be asked for with less.
//! - **Only the first segment may wait**: a step asks for input only while
//!   the segment it works on is incomplete; every complete segment already
//!   read ahead is opened without asking again.
//! - **The final flag**: a short segment is final; a full-length one is
//!   tried with the likelier flag first, then the other; a final segment
//!   must end the input (trailing data is an error), and an input that ends
//!   without one is truncated.
//! - **Sticky errors**: once a step fails, every later step fails the same.
//! - **Threads open runs**: with `threads(n)`, n > 1, the read-ahead holds
//!   a batch of segments, and every run of two or more complete segments
//!   that more input follows (so each can only be non-final) is opened on
//!   [`Workers`], each from its own index. The run is released up to its
//!   first failure; that segment then goes through the one-thread path,
//!   which gives the error (or the final segment) one thread would.

use crate::core::layout::{RECORD_HEADER_LEN, record_at};
use crate::core::plain::{Held, Plain};
use crate::core::sealer::THREADS_ZERO;
use crate::core::unit::{self, Place};
use crate::core::window::Window;
use crate::profile::{self, Profile, Stream};
use crate::threads::{self as parallel, Piece, Workers};
use crate::{Error, Provider};

/// What a front must do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Hand this many bytes to the caller (0: the end of the stream, or an
    /// empty read).
    Done(usize),
    /// Read from the inner reader into [`Opener::room`] and report the
    /// count with [`Opener::filled`] (0: the inner reader is at its end).
    Read,
    /// Show the inner reader's buffered bytes to [`Opener::open_window`]
    /// (only asked of a front built with an inner buffer).
    Window,
    /// Move the inner reader to this offset from the stream's start, then
    /// report it with [`Opener::sought`] (only after a seek or a length
    /// query, which only a seekable front starts).
    Seek(u64),
    /// Tell [`Opener::set_raw_len`] how long the inner source is, from the
    /// stream's start (the length query of a seekable front).
    Length,
}

/// Where the reader is in the stream.
pub(super) enum Stage {
    /// The header has not been read yet.
    Start { key: Profile, aad: Vec<u8> },
    /// Segments are being opened.
    Body,
    /// A full-length final segment has authenticated; the inner reader must
    /// still confirm that nothing follows it.
    Final,
    /// The final segment authenticated and the inner reader is at its end.
    Done,
    /// A fatal error: every later call returns it.
    Failed(Error),
}

/// What [`Opener::open_next`] found.
enum Opened {
    /// A segment of this many plaintext bytes; more follow.
    More(usize),
    /// The final segment, of this many plaintext bytes.
    Last(usize),
}

/// The I/O-free core of a reader.
pub(crate) struct Opener {
    pub(super) stage: Stage,
    /// The stream's suite and layout, once its header is read; kept after
    /// the end, so that a seek can go back.
    pub(super) stream: Option<Stream>,
    /// Index of the next segment to open.
    pub(super) next: u64,
    /// The caller's plaintext position (what `read`/`consume` delivered,
    /// or where a seek put it).
    pub(super) pos: u64,
    /// Where the inner reader is, from the stream's start (its bytes read,
    /// shown and consumed, or where a [`Step::Seek`] put it).
    pub(super) inner_at: u64,
    /// A seek not carried out yet: the plaintext position to go to.
    pub(super) pending: Option<u64>,
    /// The position before that seek (restored if the stream refuses it).
    pub(super) before_seek: u64,
    /// Before the next inner read, move the inner reader here.
    pub(super) seek_inner: Option<u64>,
    /// Plaintext bytes to drop from the next segment opened (a seek into
    /// the middle of a segment).
    pub(super) skip: usize,
    /// A seek moved the reader and no segment has opened since.
    pub(super) repositioned: bool,
    /// A read after a seek found the input's end where a segment should
    /// start: the authenticated length decides whether that is the end.
    pub(super) ending: bool,
    /// The authenticated plaintext length, once known.
    pub(super) auth_len: Option<u64>,
    /// The length a full-length final segment gives, until the input's end
    /// confirms that nothing follows it.
    pub(super) final_len: Option<u64>,
    /// The length query in progress.
    pub(super) query: crate::core::seek::Query,
    /// Ciphertext read ahead from the inner reader.
    pub(super) input: Window,
    /// The inner reader has reported its end.
    pub(super) eof: bool,
    /// The last inner read brought fewer bytes than it was offered: the
    /// input may be at its end (a hint for which flag to try first, never
    /// trusted).
    pub(super) short: bool,
    /// Room offered by the last [`room`](Self::room).
    offered: usize,
    /// Bytes the unit in hand (header or segment) needs from the window's
    /// start.
    pub(super) need: usize,
    /// The read-ahead's full size: header + `capacity` before the header
    /// is read, then one sealed segment + `capacity`, and with threads a
    /// batch of segments + `capacity` once a segment has authenticated
    /// (before that, the header that names the segment size is not). It
    /// grows there with the ciphertext that arrives, not when a header
    /// asks.
    target: usize,
    /// A segment of this stream has authenticated, and with it the header.
    proven: bool,
    /// One opened segment (with threads, a run) for small reads and
    /// `BufRead`, and which segment it is.
    pub(super) plain: Plain,
    capacity: usize,
    max_segment: usize,
    provider: Provider,
    /// The front can show its inner buffer ([`Step::Window`]).
    windowed: bool,
    /// The segment that failed to open in the inner buffer: it is left to
    /// the copying path, not tried there again.
    pub(super) failed_in_place: Option<u64>,
    /// Threads opening runs of segments (`threads(n)`, n > 1); made with
    /// the header.
    threads: usize,
    workers: Option<Workers>,
    /// What the tests count.
    #[cfg(test)]
    pub(crate) counts: Counts,
}

/// What an [`Opener`] did, for the tests (aligned reads, opens per
/// segment, runs on the workers).
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Counts {
    /// Ciphertext bytes moved to the front of the read-ahead.
    pub(crate) moved: usize,
    /// Segment opens tried, failed trials included.
    pub(crate) opens: usize,
    /// Runs of segments opened on the workers.
    pub(crate) runs: usize,
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
            Stage::Failed(Error::InvalidParameters(THREADS_ZERO))
        } else {
            Stage::Start { key, aad }
        };
        Opener {
            stage,
            stream: None,
            next: 0,
            pos: 0,
            inner_at: 0,
            pending: None,
            before_seek: 0,
            seek_inner: None,
            skip: 0,
            repositioned: false,
            ending: false,
            auth_len: None,
            final_len: None,
            query: crate::core::seek::Query::Idle,
            input: Window::public(),
            eof: false,
            short: false,
            offered: 0,
            need: 0,
            target: 0,
            proven: false,
            plain: Plain::new(),
            capacity,
            max_segment,
            provider,
            windowed,
            failed_in_place: None,
            threads,
            workers: None,
            #[cfg(test)]
            counts: Counts::default(),
        }
    }

    /// The configured read-ahead.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
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
            Stage::Final => "final",
            Stage::Done => "done",
            Stage::Failed(_) => "failed",
        }
    }

    /// Ciphertext read ahead, not opened yet.
    pub(crate) fn read_ahead(&self) -> usize {
        self.input.available()
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
        self.pos += n as u64;
    }

    /// Records a fatal error and returns it.
    pub(super) fn fail(&mut self, e: Error) -> Error {
        self.stage = Stage::Failed(e.clone());
        e
    }

    /// One step of a `read` into `buf`. `fresh`: the first step of a
    /// caller's call (the inner buffer is shown at most once per call,
    /// before any inner read).
    ///
    /// # Errors
    ///
    /// The stream's typed errors, sticky.
    pub(crate) fn read(&mut self, buf: &mut [u8], fresh: bool) -> Result<Step, Error> {
        loop {
            if let Some(step) = self.seek_step()? {
                return Ok(step);
            }
            if !self.plain.is_empty() {
                let n = buf.len().min(self.plain.available());
                buf[..n].copy_from_slice(&self.plain.data()[..n]);
                self.plain.consume(n);
                self.pos += n as u64;
                return Ok(Step::Done(n));
            }
            if buf.is_empty() {
                // No inner I/O for an empty read: only a sticky error.
                return match &self.stage {
                    Stage::Failed(e) => Err(e.clone()),
                    _ => Ok(Step::Done(0)),
                };
            }
            if let Some(step) = self.settle()? {
                return Ok(step);
            }
            if fresh && self.window_wanted() {
                return Ok(Step::Window);
            }
            let Some(cap) = self.fill_segment()? else {
                if self.ending {
                    continue;
                }
                return Ok(self.input_step());
            };
            if buf.len() < cap || self.skip > 0 {
                // Small read: through the internal buffer. (An empty final
                // segment leaves it empty; the loop then reports the end.)
                self.fill_plain(cap)?;
                continue;
            }
            // Zero-copy: decrypt straight into the caller's buffer, every
            // complete segment that is already read ahead and fits.
            let mut n = 0;
            loop {
                // With threads: first every run of segments they can open.
                match self.open_run(&mut buf[n..]) {
                    Ok(k) => n += k,
                    Err(e) if n == 0 => return Err(e),
                    Err(_) => break,
                }
                if n > 0 && !self.next_fits(buf.len() - n) {
                    break;
                }
                let r = self.open_next(&mut buf[n..]);
                match self.after_open(r) {
                    Ok(k) => n += k,
                    Err(e) if n == 0 => return Err(e),
                    // Earlier segments authenticated: deliver them; the
                    // sticky error comes with the next call.
                    Err(_) => {
                        self.pos += n as u64;
                        return Ok(Step::Done(n));
                    }
                }
                if !self.next_fits(buf.len() - n) {
                    break;
                }
            }
            if n == 0 {
                // Only an empty final segment; report the end properly.
                continue;
            }
            self.pos += n as u64;
            return Ok(Step::Done(n));
        }
    }

    /// One step of `BufRead::fill_buf`: `Done(n)` when
    /// [`buffered`](Self::buffered) holds `n` bytes (0: the end).
    ///
    /// # Errors
    ///
    /// The stream's typed errors, sticky.
    pub(crate) fn fill(&mut self, fresh: bool) -> Result<Step, Error> {
        loop {
            if let Some(step) = self.seek_step()? {
                return Ok(step);
            }
            if !self.plain.is_empty() {
                return Ok(Step::Done(self.plain.available()));
            }
            if let Some(step) = self.settle()? {
                return Ok(step);
            }
            if fresh && self.window_wanted() {
                return Ok(Step::Window);
            }
            let Some(cap) = self.fill_segment()? else {
                if self.ending {
                    continue;
                }
                return Ok(self.input_step());
            };
            self.fill_plain(cap)?;
        }
    }

    /// The step that brings more input: a read, or first the move of the
    /// inner reader that a seek left.
    #[inline]
    fn input_step(&self) -> Step {
        match self.seek_inner {
            Some(offset) => Step::Seek(offset),
            None => Step::Read,
        }
    }

    /// Settles every stage but `Body`: `Some(step)` if there is nothing to
    /// open (the end of the stream, a read to confirm it, or an error),
    /// `None` to go on opening.
    #[inline]
    fn settle(&mut self) -> Result<Option<Step>, Error> {
        match &self.stage {
            Stage::Failed(e) => Err(e.clone()),
            Stage::Done => Ok(Some(Step::Done(0))),
            Stage::Final => {
                // The final segment was full-length: only now ask the inner
                // reader whether anything follows it.
                if self.input.is_empty() && !self.eof {
                    self.need = 1;
                    return Ok(Some(self.input_step()));
                }
                if !self.input.is_empty() {
                    return Err(self.fail(Error::TrailingData));
                }
                self.stage = Stage::Done;
                self.auth_len = self.auth_len.or(self.final_len);
                Ok(Some(Step::Done(0)))
            }
            Stage::Start { .. } | Stage::Body => Ok(None),
        }
    }

    /// The room for the next inner read, after moving what is read ahead
    /// to the front when it must. The room is at least `capacity` bytes
    /// and ends on a segment boundary where one is far enough: then a full
    /// read leaves no partial segment behind to be moved later, so each
    /// ciphertext byte is copied once, by the inner reader. Only to
    /// complete segments already begun may it be less (once after the
    /// header, and after short reads). The unit in hand always fits.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] (sticky) when the read-ahead cannot grow.
    pub(crate) fn room(&mut self) -> Result<&mut [u8], Error> {
        if self.input.is_empty() {
            self.input.clear();
        }
        // Memory follows the ciphertext that arrived: grow only when, moved
        // to the front, what is held would leave less than `capacity` bytes
        // of room (then double), or once the unit in hand fits: then go
        // straight to the full read-ahead (at most about twice what arrived,
        // plus `capacity`), where every read is at least `capacity` bytes
        // and ends on a segment boundary again.
        let held = self.input.available();
        let len = self.input.len();
        let framed = self.stream.as_ref().is_some_and(|s| s.layout.framed);
        if len < self.target && (len - held < self.capacity || (self.need <= len && !framed)) {
            let mut grown = (held + self.capacity).max(len.saturating_mul(2));
            if grown >= self.need {
                grown = if self.stream.as_ref().is_some_and(|s| s.layout.framed) {
                    // A record is as long as its header says, not as the
                    // stream's largest: room for it and a read-ahead, not
                    // for the largest record the header allows.
                    grown
                        .min(self.need.saturating_add(self.capacity))
                        .max(held + self.capacity)
                } else {
                    self.target
                };
            }
            if let Err(e) = self.input.grow(grown.min(self.target)) {
                return Err(self.fail(e));
            }
        }
        let (pos, end, len) = (self.input.pos(), self.input.end(), self.input.len());
        let far_enough = self
            .aligned_limit(pos)
            .is_some_and(|l| l >= end + self.capacity);
        if !far_enough && (len - end < self.capacity || pos + self.need > len) {
            let moved = self.input.compact();
            #[cfg(test)]
            {
                self.counts.moved += moved;
            }
            let _ = moved;
        }
        let (pos, end) = (self.input.pos(), self.input.end());
        let mut limit = match self.aligned_limit(pos) {
            Some(l) if l > end => l,
            _ => len,
        };
        if self.windowed && pos < end && matches!(self.stage, Stage::Body) {
            // With an inner buffer, ask only for the rest of the segment
            // begun (as the reader may: with none begun it asks for its
            // capacity): the read-ahead then empties on a segment boundary,
            // and so does what is left in the inner buffer, where the next
            // segments open in place. (A whole read-ahead would end inside
            // a segment of the inner buffer's refill, and every later
            // segment would be copied too.)
            limit = limit.min(pos + self.need);
        }
        self.offered = limit - end;
        Ok(self.input.spare_to(limit))
    }

    /// The inner reader put `n` bytes into the last [`room`](Self::room)
    /// (0: it is at its end).
    pub(crate) fn filled(&mut self, n: usize) {
        if n == 0 {
            self.eof = true;
        } else {
            self.short = n < self.offered;
            self.input.commit(n);
            self.inner_at += n as u64;
        }
    }

    /// With segments starting at `from`, the end of the last whole segment
    /// that fits in the read-ahead; `None` before the header is read or if
    /// not even the next segment fits.
    fn aligned_limit(&self, from: usize) -> Option<usize> {
        let (Stage::Body, Some(Stream { layout, .. })) = (&self.stage, &self.stream) else {
            return None;
        };
        let (unit, rest) = if layout.framed {
            // Records have no fixed size: the one in hand is what its header
            // says (once read), the ones after it are taken to be full, as
            // in bulk transfers; a shorter one costs a compaction later,
            // nothing else.
            let full = layout.max_sealed();
            (self.next_unit().map_or(full, |(_, sealed)| sealed), full)
        } else {
            (
                layout.sealed(self.next),
                layout.sealed(self.next.saturating_add(1)),
            )
        };
        let len = self.input.len();
        let first = from.checked_add(unit)?;
        (first <= len).then(|| first + (len - first) / rest * rest)
    }

    /// Checks the header once it is complete, then sets the stream up:
    /// `Ok(false)` while more input is needed.
    pub(super) fn read_header(&mut self) -> Result<bool, Error> {
        if self.capacity == 0 {
            return Err(self.fail(Error::InvalidCapacity(0)));
        }
        let Stage::Start { key, aad } = &self.stage else {
            unreachable!("header is read at the start")
        };
        let header_len = key.header_len();
        // Room for the header plus a full read-ahead, so that every inner
        // call asks for at least `capacity` bytes even while the header is
        // still incomplete.
        self.target = self.capacity.saturating_add(header_len);
        if let Err(e) = self.input.grow(self.target) {
            return Err(self.fail(e));
        }
        let begun =
            profile::begin_read(key, aad, self.input.data(), self.max_segment, self.provider);
        let (header_len, stream) = match begun {
            Ok(Some(begun)) => begun,
            Ok(None) if !self.eof => {
                self.need = header_len;
                return Ok(false);
            }
            Ok(None) => return Err(self.fail(Error::Truncated)),
            Err(e) => return Err(self.fail(e)),
        };
        self.input.consume(header_len);
        // Room for one whole sealed segment plus a read-ahead of
        // `capacity`, never less than what is already buffered — reached as
        // the segment's bytes arrive (`room`), not now: a header is not
        // authenticated until its first segment opens. With threads, the
        // batch comes once one has (`authenticated`).
        if self.threads > 1 {
            self.workers = Some(Workers::new(self.threads));
        }
        self.target = self
            .capacity
            .saturating_add(stream.layout.max_sealed())
            .max(self.input.len());
        self.stream = Some(stream);
        self.next = 0;
        self.stage = Stage::Body;
        Ok(true)
    }

    /// Whether the next segment is complete in the read-ahead (or the
    /// inner reader is at its end): `Some(its plaintext capacity)`, or
    /// `None` when more input is needed first.
    fn fill_segment(&mut self) -> Result<Option<usize>, Error> {
        if let Stage::Start { .. } = self.stage
            && !self.read_header()?
        {
            return Ok(None);
        }
        let Some(Stream { layout, .. }) = &self.stream else {
            unreachable!("called while in the body")
        };
        if layout.framed {
            return self.fill_record();
        }
        let (plain, sealed) = (layout.plain(self.next), layout.sealed(self.next));
        if self.input.available() < sealed && !self.eof {
            self.need = sealed;
            return Ok(None);
        }
        if self.eof && self.input.is_empty() && self.repositioned && self.next > 0 {
            // A seek landed where the input ends: past the end, or the
            // stream is cut there. Only the authenticated length can say.
            self.ending = true;
            return Ok(None);
        }
        Ok(Some(plain))
    }

    /// Opens the segment at the start of the read-ahead into `out` (at
    /// least the segment's plaintext capacity long). On error `out` holds
    /// no plaintext.
    fn open_next(&mut self, out: &mut [u8]) -> Result<Opened, Error> {
        if self.stream.as_ref().is_some_and(|s| s.layout.framed) {
            return self.open_record(out);
        }
        let Some(Stream { suite, layout }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let index = self.next;
        let full = layout.sealed(index);
        let avail = self.input.available();
        let (sealed, place) = if avail >= full {
            // A full-length segment is final or not: try the likely flag
            // first, then the other (as age does). It is likely the last
            // when nothing follows it and the input is at (or, after a
            // short read, probably at) its end; trying that first saves a
            // failed pass over the stream's last segment. (Or when it
            // already failed as non-final in the inner buffer.)
            let likely_last =
                avail == full && (self.eof || self.short) || self.failed_in_place == Some(index);
            (full, Place::Either { likely_last })
        } else {
            debug_assert!(self.eof, "fill_segment stops short only at the end");
            (avail, Place::Ends)
        };
        let mut tries = 0;
        let r = unit::open_segment(
            suite,
            layout,
            index,
            &self.input.data()[..sealed],
            out,
            place,
            &mut tries,
        );
        #[cfg(test)]
        {
            self.counts.opens += tries;
        }
        let opened = r?;
        self.next += 1;
        self.input.consume(sealed);
        Ok(if opened.last {
            Opened::Last(opened.len)
        } else {
            Opened::More(opened.len)
        })
    }

    /// Whether the next segment is complete in the read-ahead (at its full
    /// length) and its plaintext fits in `room` bytes, the stream going on.
    #[inline]
    fn next_fits(&self, room: usize) -> bool {
        if !matches!(self.stage, Stage::Body) {
            return false;
        }
        self.next_unit()
            .is_some_and(|(plain, sealed)| self.input.available() >= sealed && room >= plain)
    }

    /// With threads: opens, on the workers, the run of segments at the
    /// start of the read-ahead that are complete, fit in `out` and are
    /// each followed by more input (or, framed, say they are not final):
    /// at most a batch, as non-final segments, each from its own index.
    /// Returns the plaintext bytes of the run up to its first failure,
    /// which stays in the read-ahead for the one-thread path to settle.
    /// 0 without threads, or when fewer than two segments qualify (the
    /// one-thread path is as fast for one).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky), with nothing released.
    fn open_run(&mut self, out: &mut [u8]) -> Result<usize, Error> {
        let (Some(workers), Stage::Body, Some(stream)) =
            (&mut self.workers, &self.stage, &self.stream)
        else {
            return Ok(0);
        };
        let batch = parallel::batch_segments(workers.threads(), stream.layout.rest);
        // A fixed-size segment that ends the read-ahead may be final.
        // Unless the input looks at its end (then it is likely final,
        // and left to the one-thread path), the one-thread path would
        // try it as non-final first too: so does the run, and if that
        // fails it is left to the one-thread path, which tries both.
        let ends = !self.eof && !self.short;
        let data = self.input.data();
        let r = open_pieces(workers, stream, self.next, data, out, batch, ends);
        #[cfg(test)]
        if let Ok(run) = &r {
            self.counts.opens += run.tried;
            self.counts.runs += usize::from(run.tried > 0);
        }
        let run = r.map_err(|e| self.fail(e))?;
        self.next += run.opened as u64;
        self.input.consume(run.used);
        if run.opened > 0 {
            self.authenticated();
        }
        Ok(run.plain)
    }

    /// Moves the stage on after a segment opened, or records the error.
    #[inline]
    fn after_open(&mut self, r: Result<Opened, Error>) -> Result<usize, Error> {
        match r {
            Ok(Opened::More(n)) => {
                self.authenticated();
                Ok(n)
            }
            Ok(Opened::Last(n)) => {
                self.authenticated();
                // The length is proven only once nothing follows the final
                // segment: now if the input is at its end, else when
                // `settle` confirms it (or finds bytes after it: then the
                // next call fails with `TrailingData`, after this segment's
                // plaintext, however much the read-ahead already held).
                let len = self
                    .stream
                    .as_ref()
                    .map(|s| s.layout.plain_offset(self.next - 1) + n as u64);
                if self.eof && self.input.is_empty() {
                    self.auth_len = len;
                    self.stage = Stage::Done;
                } else {
                    self.final_len = len;
                    self.stage = Stage::Final;
                }
                Ok(n)
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// A segment opened at the reader's position: a seek's reposition is
    /// carried out, and the header that named the segment size is proven,
    /// so with threads the read-ahead may now grow to a batch of segments
    /// (before, to one: a forged header must not make the reader allocate
    /// more than about twice what arrived).
    fn authenticated(&mut self) {
        self.repositioned = false;
        if self.proven {
            return;
        }
        self.proven = true;
        if let (Some(w), Some(stream)) = (&self.workers, &self.stream) {
            let batch = parallel::batch_segments(w.threads(), stream.layout.rest);
            self.target = self
                .capacity
                .saturating_add(stream.layout.max_sealed().saturating_mul(batch))
                .max(self.target);
        }
    }

    /// Opens the next segment, which [`fill_segment`](Self::fill_segment)
    /// found complete and to hold up to `cap` plaintext bytes, into the
    /// internal plaintext buffer (with threads, the run of segments that
    /// starts with it, if the read-ahead holds one).
    fn fill_plain(&mut self, cap: usize) -> Result<(), Error> {
        // Only as much as this segment holds (a short final one, less).
        let Some(Stream { layout, .. }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let layout = *layout;
        let avail = self.input.available();
        let holds = if layout.framed || avail >= layout.sealed(self.next) {
            cap
        } else {
            avail.saturating_sub(layout.tag).min(cap)
        };
        let index = self.next;
        let mut plain = std::mem::replace(&mut self.plain, Plain::new());
        if let Some(w) = &self.workers {
            // A run's plaintext is shorter than its ciphertext: room for
            // what the read-ahead holds, never for more than arrived.
            let batch = parallel::batch_segments(w.threads(), layout.rest) as u64;
            let room = layout.run_len(index, batch, avail);
            let r = match plain.open_into(room) {
                Ok(out) => self.open_run(out),
                Err(e) => Err(self.fail(e)),
            };
            if let Ok(n @ 1..) = r {
                let first = Held {
                    index,
                    len: layout.plain(index),
                    last: false,
                };
                plain.opened(first, n, std::mem::take(&mut self.skip));
            }
            if r.as_ref().map_or(true, |&n| n > 0) {
                self.plain = plain;
                return r.map(|_| ());
            }
        }
        let r = match plain.open_into(holds) {
            Ok(out) => self.open_next(out),
            Err(e) => Err(e),
        };
        let last = matches!(r, Ok(Opened::Last(_)));
        let r = self.after_open(r);
        if let Ok(len) = r {
            // A seek into this segment: its first bytes are not the caller's.
            let held = Held { index, len, last };
            plain.opened(held, len, std::mem::take(&mut self.skip));
        }
        self.plain = plain;
        r.map(|_| ())
    }

    /// The next unit's plaintext capacity and sealed length: a fixed
    /// segment's from the layout, a record's from its header once that is
    /// read ahead (`None` before).
    #[inline]
    fn next_unit(&self) -> Option<(usize, usize)> {
        let Stream { layout, .. } = self.stream.as_ref()?;
        if !layout.framed {
            return Some((layout.plain(self.next), layout.sealed(self.next)));
        }
        let (_, len, _) = record_at(self.input.data())?;
        if len > layout.rest {
            // Left to `fill_record`, which refuses it.
            return None;
        }
        Some((len, RECORD_HEADER_LEN + len + layout.tag))
    }

    /// [`fill_segment`](Self::fill_segment) for a framed stream: the record
    /// header first (a length over the stream's record size is refused
    /// before anything is allocated for it), then the whole record. A cut
    /// anywhere before the final record is [`Error::Truncated`].
    fn fill_record(&mut self) -> Result<Option<usize>, Error> {
        let Some(Stream { layout, .. }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let (limit, tag) = (layout.rest, layout.tag);
        let avail = self.input.available();
        if avail < RECORD_HEADER_LEN {
            if !self.eof {
                self.need = RECORD_HEADER_LEN;
                return Ok(None);
            }
            return Err(self.fail(Error::Truncated));
        }
        let (_, size, _) =
            record_at(self.input.data()).unwrap_or_else(|| unreachable!("checked above"));
        if size > limit {
            return Err(self.fail(Error::SegmentTooLarge {
                size: size as u64,
                limit: limit as u64,
            }));
        }
        let total = RECORD_HEADER_LEN + size + tag;
        if avail < total {
            if !self.eof {
                self.need = total;
                return Ok(None);
            }
            return Err(self.fail(Error::Truncated));
        }
        Ok(Some(size))
    }

    /// [`open_next`](Self::open_next) for a framed stream: the record at
    /// the start of the read-ahead (made complete by
    /// [`fill_record`](Self::fill_record)), its header as the AAD and its
    /// final flag in the nonce. A final record must end the input.
    fn open_record(&mut self, out: &mut [u8]) -> Result<Opened, Error> {
        let Some(Stream { suite, layout }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let data = self.input.data();
        let (h, len, last) =
            record_at(data).unwrap_or_else(|| unreachable!("a whole record is read ahead"));
        let total = RECORD_HEADER_LEN + len + layout.tag;
        #[cfg(test)]
        {
            self.counts.opens += 1;
        }
        suite.open_at(
            self.next,
            last,
            &h,
            &data[RECORD_HEADER_LEN..total],
            &mut out[..len],
        )?;
        self.next += 1;
        self.input.consume(total);
        if !last {
            return Ok(Opened::More(len));
        }
        Ok(Opened::Last(len))
    }

    /// Whether to look into the inner reader's buffer now (built with one;
    /// between segments, with nothing read ahead or buffered; not at a
    /// segment that already failed there).
    #[inline]
    fn window_wanted(&self) -> bool {
        if !self.windowed || !self.input.is_empty() || self.eof || !self.plain.is_empty() {
            return false;
        }
        matches!(self.stage, Stage::Body)
            && !self.stream.as_ref().is_some_and(|s| s.layout.framed)
            && self.failed_in_place != Some(self.next)
            && self.seek_inner.is_none()
            && self.skip == 0
    }

    /// Opens whole segments where they lie in `window`, the inner reader's
    /// buffered bytes (after [`Step::Window`]): every full-length segment
    /// there that fits in `buf` is opened as non-final straight into `buf`
    /// (with threads, as one run on the workers);
    /// if `buf` cannot hold the next one, that one segment goes into the
    /// internal plaintext buffer instead. Returns the bytes of `window`
    /// used (for the inner reader's `consume`) and the bytes put in `buf`.
    /// Nothing opened: the copying path takes over, and it also settles a
    /// segment that failed here (the final one, or a damaged one), with
    /// the full rules (final flag, trailing data).
    pub(crate) fn open_window(&mut self, window: &[u8], buf: &mut [u8]) -> (usize, usize) {
        let (Stage::Body, Some(stream)) = (&self.stage, &self.stream) else {
            return (0, 0);
        };
        let into_plain = buf.len() < stream.layout.plain(self.next);
        if let (Some(workers), false) = (&mut self.workers, into_plain) {
            // Every whole segment of the window that fits in `buf`, on the
            // workers (the one that ends the window too, as below).
            let r = open_pieces(workers, stream, self.next, window, buf, usize::MAX, true);
            match r {
                Ok(run) if run.tried > 0 => {
                    #[cfg(test)]
                    {
                        self.counts.opens += run.tried;
                        self.counts.runs += 1;
                    }
                    if run.opened < run.tried {
                        self.failed_in_place = Some(self.next + run.opened as u64);
                    }
                    self.next += run.opened as u64;
                    if run.opened > 0 {
                        self.authenticated();
                    }
                    self.inner_at += run.used as u64;
                    self.pos += run.plain as u64;
                    return (run.used, run.plain);
                }
                Ok(_) => {}
                Err(e) => {
                    // The copying path reports it (sticky).
                    self.fail(e);
                    return (0, 0);
                }
            }
        }
        let (Stage::Body, Some(Stream { suite, layout })) = (&self.stage, &self.stream) else {
            return (0, 0);
        };
        let next = &mut self.next;
        let (mut used, mut n) = (0, 0);
        loop {
            let index = *next;
            let (plain, sealed) = (layout.plain(index), layout.sealed(index));
            // A segment that ends the window is tried too (as non-final:
            // only a non-final one opens so). Left to the copying path, it
            // would be copied, and, the read being short, tried as final
            // first: a wasted pass per window. The cost instead: one
            // failed pass per stream whose final segment is full-length.
            if window.len() - used < sealed {
                break;
            }
            let ciphertext = &window[used..used + sealed];
            let opened = if into_plain {
                let Ok(out) = self.plain.open_into(plain) else {
                    // Left to the copying path, which reports the failure.
                    break;
                };
                suite.open_at(index, false, &[], ciphertext, &mut out[..plain])
            } else if buf.len() - n >= plain {
                suite.open_at(index, false, &[], ciphertext, &mut buf[n..n + plain])
            } else {
                break;
            };
            #[cfg(test)]
            {
                self.counts.opens += 1;
            }
            if opened.is_err() {
                self.failed_in_place = Some(index);
                break;
            }
            *next += 1;
            used += sealed;
            if into_plain {
                let held = Held {
                    index,
                    len: plain,
                    last: false,
                };
                self.plain.opened(held, plain, 0);
                break;
            }
            n += plain;
        }
        if used > 0 {
            self.authenticated();
        }
        self.inner_at += used as u64;
        self.pos += n as u64;
        (used, n)
    }
}

/// What [`open_pieces`] did.
struct Run {
    /// Segments tried (0: fewer than two qualified; nothing was done).
    tried: usize,
    /// Segments that opened before the first failure.
    opened: usize,
    /// Their sealed bytes (from the start of the input).
    used: usize,
    /// Their plaintext bytes (from the start of `out`).
    plain: usize,
}

/// Opens on `workers` the run of segments at the start of `data`, from
/// segment `next` on: at most `max`, each whole in `data`, fitting in
/// `out`, and, fixed-size, followed by more input (or ending `data`, when
/// `ends`: then tried as non-final, as one thread tries it first); framed,
/// records whose header says they are not final. All are opened as
/// non-final, each from its own index, straight into `out`; what opened
/// after the first failure is wiped (it is not released before it).
/// Fewer than two qualifying segments: nothing is done.
///
/// # Errors
///
/// [`Error::WorkerPanicked`], with `out` wiped.
fn open_pieces(
    workers: &mut Workers,
    stream: &Stream,
    next: u64,
    data: &[u8],
    out: &mut [u8],
    max: usize,
    ends: bool,
) -> Result<Run, Error> {
    let Stream { suite, layout } = stream;
    let (framed, tag) = (layout.framed, layout.tag);
    let mut pieces = Vec::new();
    let (mut at, mut written) = (0, 0);
    let mut room = &mut *out;
    while pieces.len() < max {
        let index = next + pieces.len() as u64;
        let (plain, sealed) = if framed {
            match record_at(&data[at..]) {
                Some((_, len, false)) if len <= layout.rest => (len, RECORD_HEADER_LEN + len + tag),
                _ => break,
            }
        } else {
            (layout.plain(index), layout.sealed(index))
        };
        let left = data.len() - at;
        let complete = if framed {
            left >= sealed
        } else {
            left > sealed || left == sealed && ends
        };
        if !complete || room.len() < plain {
            break;
        }
        let (o, r) = std::mem::take(&mut room).split_at_mut(plain);
        pieces.push(Piece {
            index,
            last: false,
            input: &data[at..at + sealed],
            output: o,
            result: Ok(()),
        });
        (room, at, written) = (r, at + sealed, written + plain);
    }
    let tried = pieces.len();
    if tried < 2 {
        return Ok(Run {
            tried: 0,
            opened: 0,
            used: 0,
            plain: 0,
        });
    }
    let ran = workers.run(&mut pieces, |p| {
        p.result = if framed {
            let (h, body) = p.input.split_at(RECORD_HEADER_LEN);
            suite.open_at(p.index, false, h, body, p.output)
        } else {
            suite.open_at(p.index, false, &[], p.input, p.output)
        };
    });
    let good = pieces.iter().take_while(|p| p.result.is_ok());
    let (opened, used, plain) = good.fold((0, 0, 0), |(k, s, n), p| {
        (k + 1, s + p.input.len(), n + p.output.len())
    });
    drop(pieces);
    if let Err(e) = ran {
        zeroize::Zeroize::zeroize(&mut out[..written]);
        return Err(e);
    }
    zeroize::Zeroize::zeroize(&mut out[plain..written]);
    Ok(Run {
        tried,
        opened,
        used,
        plain,
    })
}
