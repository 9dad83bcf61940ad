//! [`Position`]: where the reader is, in plaintext and in the inner
//! source, and the sub-machine of random access on it: seeking to a
//! plaintext position and the authenticated length query, as steps like
//! every other (a seekable front answers [`Step::Seek`] and
//! [`Step::Length`] with its inner reader). Only a fixed-size layout
//! ([`Fixed`]) has the offsets these need.
//!
//! The rules it owns:
//! - **A seek costs nothing until the next read**, which opens exactly the
//!   segment holding the new position (found by the layout's arithmetic)
//!   and drops the bytes before it.
//! - **Only an opened final segment proves a length.** The length query
//!   takes the source's raw length only to find which segment would be the
//!   last, which the opener then opens as final; the result is cached. A
//!   truncated, extended or tampered source fails it with the usual typed
//!   error. `SeekFrom::End` uses it; no position is ever computed from
//!   unauthenticated bytes.
//! - **Past the end reads `Ok(0)` only once the true end is known**: a read
//!   that finds the input's end where a segment should start asks for the
//!   authenticated length first.

use crate::Error;
use crate::core::layout::Fixed;
use crate::core::plain::{Held, Plain};
use crate::core::step::Step;

/// Where the length query is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Query {
    /// Not running.
    Idle,
    /// [`Step::Length`] asked; waiting for the source's raw length.
    Asked,
    /// Reading the would-be final segment: its index and sealed length.
    Reading { index: u64, sealed: usize },
}

/// What the last seek left to settle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landing {
    /// No seek, or a segment opened since the last one.
    Steady,
    /// A seek moved the reader and no segment has opened since.
    Repositioned,
    /// After a seek, a read found the input's end where a segment should
    /// start: the authenticated length decides whether that is the end.
    Ending,
}

/// A seek not carried out yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The plaintext position to go to.
    pub(crate) to: u64,
    /// The position before the seek (restored if the stream refuses it).
    before: u64,
}

/// Where a reposition put the reader, for the opener to carry out on its
/// stage, its segment index and its read-ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landed {
    /// Nothing more to read (the index of the next segment, when the
    /// plaintext buffer holds the one before it).
    End(Option<u64>),
    /// The read-ahead starts with the segment already, and the inner
    /// reader is right after it.
    Stay,
    /// Reading goes on from segment `next`, after the inner reader moved
    /// to it (`from`; `None`: no source holds it, the input is at its
    /// end). `final_len`: the segment held before it is the final one,
    /// giving this length once nothing follows it.
    From {
        next: u64,
        from: Option<u64>,
        final_len: Option<u64>,
    },
}

/// What the length query needs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueryStep {
    /// Hand this step to the front.
    Ask(Step),
    /// The segment `index`, `sealed` bytes long, ends the source and is
    /// whole in the read-ahead: open it as the final one.
    Open { index: u64, sealed: usize },
}

/// The caller's position, the inner reader's, and the seek and length
/// query in progress.
pub(crate) struct Position {
    /// The caller's plaintext position (what `read`/`consume` delivered,
    /// or where a seek put it).
    pos: u64,
    /// Plaintext bytes delivered in all, wherever seeks put them.
    handed: u64,
    /// Where the inner reader is, from the stream's start (its bytes read,
    /// shown and consumed, or where a [`Step::Seek`] put it).
    inner_at: u64,
    /// Before the next inner read, move the inner reader here.
    move_inner: Option<u64>,
    pending: Option<Pending>,
    /// Plaintext bytes to drop from the next segment opened (a seek into
    /// the middle of a segment).
    skip: usize,
    landing: Landing,
    /// The authenticated plaintext length, once known.
    auth_len: Option<u64>,
    query: Query,
}

impl Position {
    /// At the stream's start, nothing known.
    pub(crate) const fn new() -> Position {
        Position {
            pos: 0,
            handed: 0,
            inner_at: 0,
            move_inner: None,
            pending: None,
            skip: 0,
            landing: Landing::Steady,
            auth_len: None,
            query: Query::Idle,
        }
    }

    /// The caller's plaintext position.
    #[inline]
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Plaintext bytes delivered so far, wherever seeks put them.
    #[inline]
    pub(crate) fn handed_out(&self) -> u64 {
        self.handed
    }

    /// The authenticated plaintext length, once a final segment opened.
    #[inline]
    pub(crate) fn auth_len(&self) -> Option<u64> {
        self.auth_len
    }

    /// What the last seek left to settle.
    #[inline]
    pub(crate) fn landing(&self) -> Landing {
        self.landing
    }

    /// The caller took `n` plaintext bytes.
    #[inline]
    pub(crate) fn delivered(&mut self, n: usize) {
        self.pos += n as u64;
        self.handed = self.handed.saturating_add(n as u64);
    }

    /// The inner reader gave `n` bytes (read, or used in its buffer).
    #[inline]
    pub(crate) fn inner_read(&mut self, n: usize) {
        self.inner_at += n as u64;
    }

    /// A segment opened at the reader's position: a seek's reposition is
    /// carried out.
    #[inline]
    pub(crate) fn opened(&mut self) {
        self.landing = Landing::Steady;
    }

    /// The plaintext bytes before the position in the next segment opened
    /// (taken: the segment after it starts at its start).
    #[inline]
    pub(crate) fn take_skip(&mut self) -> usize {
        std::mem::take(&mut self.skip)
    }

    /// Whether the next segment opened starts before the position.
    #[inline]
    pub(crate) fn skips(&self) -> bool {
        self.skip > 0
    }

    /// The inner reader must move before its next read.
    #[inline]
    pub(crate) fn moves_inner(&self) -> bool {
        self.move_inner.is_some()
    }

    /// The step that brings more input: a read, or first the move of the
    /// inner reader that a seek left.
    #[inline]
    pub(crate) fn input_step(&self) -> Step {
        match self.move_inner {
            Some(offset) => Step::Seek(offset),
            None => Step::Read,
        }
    }

    /// A read after a seek found the input's end where segment `next`
    /// should start: `true` (and the authenticated length decides) unless
    /// no seek is in play or that is the first segment.
    pub(crate) fn ends_here(&mut self, next: u64) -> bool {
        if self.landing == Landing::Steady || next == 0 {
            return false;
        }
        self.landing = Landing::Ending;
        true
    }

    /// The length query has come back for an [`Ending`](Landing::Ending):
    /// whether the position is at or past the authenticated end (else a
    /// segment that the length says exists is not there).
    pub(crate) fn settle_ending(&mut self) -> bool {
        self.landing = Landing::Repositioned;
        self.auth_len.is_some_and(|len| self.pos >= len)
    }

    /// A full-length final segment proved the stream `len` bytes long
    /// (nothing follows it), unless a length is known already.
    pub(crate) fn confirm_len(&mut self, len: u64) {
        self.auth_len = self.auth_len.or(Some(len));
    }

    /// The final segment opened with the input at its end: the stream is
    /// `len` bytes long.
    pub(crate) fn set_auth_len(&mut self, len: Option<u64>) {
        self.auth_len = len;
    }

    /// Moves the caller's position to plaintext offset `p` (any value, past
    /// the end too); the next read carries it out.
    pub(crate) fn seek_to(&mut self, p: u64) {
        if p != self.pos || self.pending.is_some() {
            let before = self.pending.map_or(self.pos, |s| s.before);
            self.pending = Some(Pending { to: p, before });
            self.pos = p;
        }
    }

    /// The seek not carried out yet.
    #[inline]
    pub(crate) fn pending(&self) -> Option<Pending> {
        self.pending
    }

    /// The pending seek is carried out now (`Ok`) or refused (`Err`: the
    /// position goes back to where the reads left it).
    pub(crate) fn take_pending(&mut self, carried: bool) {
        if let (Some(s), false) = (self.pending.take(), carried) {
            self.pos = s.before;
        }
    }

    /// Whether a length query is under way (cut short by a read, it is
    /// dropped and starts over when asked again).
    #[inline]
    pub(crate) fn querying(&self) -> bool {
        self.query != Query::Idle
    }

    /// Where a seek lands, in plaintext offsets (`End` needs the
    /// authenticated length).
    ///
    /// # Errors
    ///
    /// A negative or overflowing position.
    pub(crate) fn seek_target(&self, pos: std::io::SeekFrom) -> Result<u64, Error> {
        use std::io::SeekFrom;
        match pos {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.auth_len.and_then(|l| l.checked_add_signed(d)),
        }
        .ok_or(Error::InvalidSeek)
    }

    /// Where the stream starts in the inner source, from the inner
    /// reader's position now.
    ///
    /// # Errors
    ///
    /// The inner reader was moved behind the stream's start.
    pub(crate) fn stream_base(&self, inner_pos: u64) -> Result<u64, Error> {
        inner_pos
            .checked_sub(self.inner_at)
            .ok_or(Error::SourceMovedBack)
    }

    /// The front moved the inner reader to `offset` (after
    /// [`Step::Seek`]).
    pub(crate) fn sought(&mut self, offset: u64) {
        self.move_inner = None;
        self.inner_at = offset;
    }

    /// The inner reader refused to move to the offset of [`Step::Seek`]
    /// as invalid: it did not move (the caller takes the input to be at
    /// its end).
    pub(crate) fn seek_refused(&mut self) {
        self.move_inner = None;
    }

    /// Sets the position to plaintext offset `p`: from the plaintext
    /// buffer if it holds that segment, from the read-ahead if it starts
    /// with it (`held_ahead` bytes are read ahead; `next`: the segment they
    /// start with, in the body), else from the segment's offset in the
    /// source. Whatever the old position had in flight is void: its end
    /// check, and a length query's read-ahead.
    pub(crate) fn land(
        &mut self,
        p: u64,
        layout: &Fixed,
        plain: &mut Plain,
        held_ahead: usize,
        next: Option<u64>,
    ) -> Landed {
        self.pos = p;
        self.skip = 0;
        if self.landing == Landing::Ending {
            self.landing = Landing::Repositioned;
        }
        self.query = Query::Idle;
        if self.auth_len.is_some_and(|len| p >= len) {
            // At or past the authenticated end: nothing more to read.
            plain.hide();
            return Landed::End(None);
        }
        let (index, off) = layout.segment_of(p);
        if let Some(held) = plain.show(index, off) {
            return self.land_held(held, layout);
        }
        plain.hide();
        self.skip = off;
        self.landing = Landing::Repositioned;
        let Some(offset) = layout.segment_offset(index) else {
            // Beyond any source: past the end, which only the
            // authenticated length can confirm.
            self.landing = Landing::Ending;
            return Landed::From {
                next: index,
                from: None,
                final_len: None,
            };
        };
        let in_step = self.move_inner.is_none()
            && self.inner_at.checked_sub(held_ahead as u64) == Some(offset);
        if next == Some(index) && in_step {
            return Landed::Stay;
        }
        self.move_inner = Some(offset);
        Landed::From {
            next: index,
            from: Some(offset),
            final_len: None,
        }
    }

    /// [`land`](Self::land) in the segment `held` by the plaintext buffer.
    fn land_held(&mut self, held: Held, layout: &Fixed) -> Landed {
        let Held { index, len, last } = held;
        if last && self.auth_len.is_some() {
            return Landed::End(Some(index + 1));
        }
        // A final segment whose end is not confirmed yet stays final: the
        // next reads check what follows it. Either way reading goes on
        // right after the segment held, whatever the read-ahead and the
        // inner reader were doing meanwhile (a length query).
        let final_len = last.then(|| layout.plain_offset(index) + len as u64);
        let from = layout.segment_offset(index + 1);
        self.move_inner = from.or(self.move_inner);
        Landed::From {
            next: index + 1,
            from,
            final_len,
        }
    }

    /// One step of the length query, once the header is read: what to ask
    /// of the front, or the segment to open as the final one.
    pub(crate) fn query_step(&mut self, missing: impl FnOnce(usize) -> bool) -> QueryStep {
        match self.query {
            Query::Idle | Query::Asked => {
                // The front moves the inner reader to its end; until the
                // length comes back (the front may be interrupted in
                // between), reads must first move it back to where the
                // read-ahead ends.
                self.move_inner.get_or_insert(self.inner_at);
                self.query = Query::Asked;
                QueryStep::Ask(Step::Length)
            }
            Query::Reading { index, sealed } => {
                if let Some(offset) = self.move_inner {
                    return QueryStep::Ask(Step::Seek(offset));
                }
                if missing(sealed) {
                    return QueryStep::Ask(Step::Read);
                }
                self.query = Query::Idle;
                QueryStep::Open { index, sealed }
            }
        }
    }

    /// The source is `raw` bytes long from the stream's start (after
    /// [`Step::Length`]; the inner reader is at its end): the offset of
    /// the segment that would be the last, which the next reads bring.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] when no stream has that length.
    pub(crate) fn measured(&mut self, raw: u64, layout: &Fixed) -> Result<u64, Error> {
        self.inner_at = raw;
        let (index, sealed) = layout.last_segment(raw).ok_or(Error::Truncated)?;
        let offset = layout
            .segment_offset(index)
            .unwrap_or_else(|| unreachable!("the last segment of a source lies in it"));
        self.move_inner = Some(offset);
        self.query = Query::Reading { index, sealed };
        Ok(offset)
    }

    /// The final segment opened: the stream is `len` bytes long. The
    /// read-ahead no longer follows the caller: the next read repositions
    /// (from the plaintext buffer, if it lands in the segment opened).
    pub(crate) fn proven(&mut self, len: u64) {
        self.auth_len = Some(len);
        self.pending = Some(Pending {
            to: self.pos,
            before: self.pos,
        });
    }
}

#[cfg(test)]
#[path = "seek_tests.rs"]
mod tests;
