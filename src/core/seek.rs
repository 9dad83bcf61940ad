//! Random access on the opener: seeking to a plaintext position and the
//! authenticated length, as steps like every other (a seekable front
//! answers [`Step::Seek`] and [`Step::Length`] with its inner reader).
//!
//! The rules it owns:
//! - **A seek costs nothing until the next read**, which opens exactly the
//!   segment holding the new position (found by the layout's arithmetic)
//!   and drops the bytes before it.
//! - **Only an opened final segment proves a length.** The length query
//!   takes the source's raw length only to find which segment would be the
//!   last, opens it as final, and caches the result; a truncated, extended
//!   or tampered source fails it with the usual typed error. `SeekFrom::End`
//!   uses it; no position is ever computed from unauthenticated bytes.
//! - **Past the end reads `Ok(0)` only once the true end is known**: a read
//!   that finds the input's end where a segment should start asks for the
//!   authenticated length first.

use crate::Error;
use crate::core::opener::{Opener, Stage, Step};
use crate::core::plain::Held;
use crate::core::unit::{self, Place};
use crate::profile::Stream;

/// Where the length query is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    /// Not running.
    Idle,
    /// [`Step::Length`] asked; waiting for [`Opener::set_raw_len`].
    Asked,
    /// Reading the would-be final segment: its index and sealed length.
    Reading { index: u64, sealed: usize },
}

impl Opener {
    /// The caller's plaintext position.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// The authenticated plaintext length, once a final segment opened.
    pub(crate) fn auth_len(&self) -> Option<u64> {
        self.auth_len
    }

    /// Moves the caller's position to plaintext offset `p` (any value, past
    /// the end too); the next read carries it out.
    ///
    /// # Errors
    ///
    /// The sticky error of a failed stream.
    pub(crate) fn seek_to(&mut self, p: u64) -> Result<(), Error> {
        if let Stage::Failed(e) = &self.stage {
            return Err(e.clone());
        }
        self.no_random_access()?;
        if p != self.pos || self.pending.is_some() {
            if self.pending.is_none() {
                self.before_seek = self.pos;
            }
            self.pending = Some(p);
            self.pos = p;
        }
        Ok(())
    }

    /// Where a seek lands, in plaintext offsets (`End` needs the
    /// authenticated length: run [`length`](Self::length) first).
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
        .ok_or(Error::InvalidParameters(
            "seek to a negative or overflowing position",
        ))
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
            .ok_or(Error::InvalidParameters(
                "the inner reader was moved behind the stream's start",
            ))
    }

    /// The inner seek a [`Step::Seek`] or [`Step::Length`] asks of a front
    /// whose stream starts at inner offset `base`.
    ///
    /// # Errors
    ///
    /// A position past 2^64.
    pub(crate) fn inner_seek_for(
        &self,
        step: &Step,
        base: u64,
    ) -> Result<std::io::SeekFrom, Error> {
        match *step {
            Step::Seek(offset) => base
                .checked_add(offset)
                .map(std::io::SeekFrom::Start)
                .ok_or(Error::InvalidParameters("seek position past 2^64")),
            Step::Length => Ok(std::io::SeekFrom::End(0)),
            _ => unreachable!("not a seek step"),
        }
    }

    /// What the inner seek of [`inner_seek_for`](Self::inner_seek_for)
    /// gave. A position the source refuses as invalid (a `File` past its
    /// file system's largest size) is past its end, which the
    /// authenticated length decides; other errors pass through.
    ///
    /// # Errors
    ///
    /// The inner error; [`set_raw_len`](Self::set_raw_len)'s.
    pub(crate) fn inner_sought(
        &mut self,
        step: &Step,
        base: u64,
        result: std::io::Result<u64>,
    ) -> std::io::Result<()> {
        match (*step, result) {
            (Step::Seek(offset), Ok(_)) => self.sought(offset),
            (Step::Seek(_), Err(e)) if e.kind() == std::io::ErrorKind::InvalidInput => {
                self.seek_refused();
            }
            // A source that ends before the stream started is empty.
            (Step::Length, Ok(end)) => self.set_raw_len(end.saturating_sub(base))?,
            (_, Err(e)) => return Err(e),
            _ => unreachable!("not a seek step"),
        }
        Ok(())
    }

    /// The front moved the inner reader to `offset` (after
    /// [`Step::Seek`]).
    fn sought(&mut self, offset: u64) {
        self.seek_inner = None;
        self.inner_at = offset;
    }

    /// The inner reader refused to move to the offset of [`Step::Seek`]
    /// as invalid (a `File` past the largest size its file system has):
    /// no source holds that segment, so this is past its end, which only
    /// the authenticated length confirms. The inner reader did not move.
    fn seek_refused(&mut self) {
        self.seek_inner = None;
        self.input.clear();
        self.eof = true;
    }

    /// Work that a seek or a length query left for the next read:
    /// `Some(step)` to hand to the front, `None` to go on reading. A seek
    /// not carried out yet comes first: it replaces whatever the old
    /// position still had in flight (an end check, a length query's
    /// read-ahead).
    #[inline]
    pub(super) fn seek_step(&mut self) -> Result<Option<Step>, Error> {
        // A sticky error comes first (before plaintext buffered earlier: a
        // failed length query leaves it there).
        if let Stage::Failed(e) = &self.stage {
            return Err(e.clone());
        }
        if let Some(p) = self.pending {
            if let Stage::Start { .. } = self.stage {
                // The header first, from where the stream starts.
                if !self.read_header()? {
                    return Ok(Some(Step::Read));
                }
            }
            self.pending = None;
            if let Err(e) = self.no_random_access() {
                // Asked before the header said the stream is framed: the
                // position stays where the reads left it.
                self.pos = self.before_seek;
                return Err(e);
            }
            self.reposition(p);
        }
        if !self.ending {
            if self.query != Query::Idle {
                // A length query that was cut short holds the read-ahead
                // (or left the inner reader at the source's end): reading
                // goes on from the caller's position, and the query starts
                // over when asked again.
                self.reposition(self.pos);
            }
            return Ok(None);
        }
        // A read at this position found the input's end where a segment
        // should start: the authenticated length says whether it is the end.
        let step = self.length()?;
        if step != Step::Done(0) {
            return Ok(Some(step));
        }
        self.ending = false;
        if self.auth_len.is_some_and(|len| self.pos >= len) {
            self.stage = Stage::Done;
            return Ok(Some(Step::Done(0)));
        }
        // A segment that the authenticated length says exists is not
        // there (the source changed under the reader).
        Err(self.fail(Error::Truncated))
    }

    /// A framed stream's records have no computable offsets: seeking and
    /// the length query are refused (not sticky: reading goes on).
    fn no_random_access(&mut self) -> Result<(), Error> {
        if self.stream.as_ref().is_some_and(|s| s.layout.framed) {
            return Err(Error::InvalidParameters(
                "a framed stream has no random access",
            ));
        }
        Ok(())
    }

    /// Sets the reader up to deliver plaintext from offset `p`: from the
    /// plaintext buffer if it holds that segment, from the read-ahead if
    /// it starts with it, else from the segment's offset in the source.
    fn reposition(&mut self, p: u64) {
        let Some(Stream { layout, .. }) = &self.stream else {
            unreachable!("positioned after the header")
        };
        let layout = *layout;
        self.pos = p;
        self.skip = 0;
        // What the old position had in flight is void: its end check, and
        // a length query's read-ahead (the query starts over if asked again).
        self.ending = false;
        self.query = Query::Idle;
        if self.auth_len.is_some_and(|len| p >= len) {
            // At or past the authenticated end: nothing more to read.
            self.plain.hide();
            self.stage = Stage::Done;
            return;
        }
        let (index, off) = layout.segment_of(p);
        if let Some(Held { last, .. }) = self.plain.show(index, off) {
            self.next = index + 1;
            if last && self.auth_len.is_some() {
                self.stage = Stage::Done;
                return;
            }
            // A final segment whose end is not confirmed yet stays final:
            // the next reads check what follows it. Either way reading goes
            // on right after the segment held, whatever the read-ahead and
            // the inner reader were doing meanwhile (a length query).
            self.stage = if last { Stage::Final } else { Stage::Body };
            match layout.segment_offset(index + 1) {
                Some(offset) => self.restart_input(offset),
                None => {
                    self.input.clear();
                    self.eof = true;
                }
            }
            return;
        }
        self.plain.hide();
        self.skip = off;
        self.repositioned = true;
        let Some(offset) = layout.segment_offset(index) else {
            // Beyond any source: past the end, which only the
            // authenticated length can confirm.
            self.stage = Stage::Body;
            self.next = index;
            self.input.clear();
            self.eof = true;
            self.ending = true;
            return;
        };
        let in_step = self.seek_inner.is_none()
            && self.inner_at.checked_sub(self.input.available() as u64) == Some(offset);
        if matches!(self.stage, Stage::Body) && index == self.next && in_step {
            // The read-ahead starts with this segment already, and the
            // inner reader is right after it.
            return;
        }
        self.stage = Stage::Body;
        self.next = index;
        self.restart_input(offset);
    }

    /// Forgets the read-ahead; the next inner read comes from `offset`.
    fn restart_input(&mut self, offset: u64) {
        self.input.clear();
        self.eof = false;
        self.short = false;
        self.failed_in_place = None;
        self.seek_inner = Some(offset);
    }

    /// One step of the length query: `Done(0)` once
    /// [`auth_len`](Self::auth_len) is known.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] for a source whose length no stream has, or
    /// whose last segment opens only as a non-final one;
    /// [`Error::Authentication`] for one whose last segment does not open;
    /// the stream's other typed errors. All sticky.
    pub(crate) fn length(&mut self) -> Result<Step, Error> {
        loop {
            if let Stage::Failed(e) = &self.stage {
                return Err(e.clone());
            }
            if self.auth_len.is_some() {
                return Ok(Step::Done(0));
            }
            if let Stage::Start { .. } = self.stage
                && !self.read_header()?
            {
                return Ok(Step::Read);
            }
            self.no_random_access()?;
            match self.query {
                Query::Idle | Query::Asked => {
                    // The front moves the inner reader to its end; until
                    // the length comes back (the front may be interrupted
                    // in between), reads must first move it back to where
                    // the read-ahead ends.
                    self.seek_inner.get_or_insert(self.inner_at);
                    self.query = Query::Asked;
                    return Ok(Step::Length);
                }
                Query::Reading { index, sealed } => {
                    if let Some(offset) = self.seek_inner {
                        return Ok(Step::Seek(offset));
                    }
                    if self.input.available() < sealed && !self.eof {
                        self.need = sealed;
                        return Ok(Step::Read);
                    }
                    self.open_last(index, sealed)?;
                }
            }
        }
    }

    /// The source is `raw` bytes long from the stream's start (after
    /// [`Step::Length`]; the inner reader is at its end).
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] (sticky) when no stream has that length.
    fn set_raw_len(&mut self, raw: u64) -> Result<(), Error> {
        self.inner_at = raw;
        let Some(Stream { layout, .. }) = &self.stream else {
            unreachable!("the length is asked after the header")
        };
        let Some((index, sealed)) = layout.last_segment(raw) else {
            return Err(self.fail(Error::Truncated));
        };
        let offset = layout
            .segment_offset(index)
            .unwrap_or_else(|| unreachable!("the last segment of a source lies in it"));
        self.restart_input(offset);
        self.query = Query::Reading { index, sealed };
        Ok(())
    }

    /// Opens segment `index`, `sealed` bytes at the end of the source, as
    /// the final one into the plaintext buffer, and records the length.
    fn open_last(&mut self, index: u64, sealed: usize) -> Result<(), Error> {
        self.query = Query::Idle;
        if self.input.available() != sealed {
            // The source changed length while it was read.
            return Err(self.fail(Error::Truncated));
        }
        let len = sealed.saturating_sub(self.layout_tag());
        let out = match self.plain.open_into(len) {
            Ok(out) => out,
            Err(e) => return Err(self.fail(e)),
        };
        let Some(Stream { suite, layout }) = &self.stream else {
            unreachable!("the length is asked after the header")
        };
        let mut tries = 0;
        let r = unit::open_segment(
            suite,
            layout,
            index,
            self.input.data(),
            out,
            Place::Ends,
            &mut tries,
        );
        let start = layout.plain_offset(index);
        #[cfg(test)]
        {
            self.counts.opens += tries;
        }
        let opened = r.map_err(|e| self.fail(e))?;
        self.input.clear();
        let held = Held {
            index,
            len: opened.len,
            last: true,
        };
        self.plain.opened(held, opened.len, opened.len);
        self.auth_len = Some(start + opened.len as u64);
        // The read-ahead no longer follows the caller: the next read
        // repositions (from the plaintext buffer, if it lands in the
        // segment opened here).
        self.pending = Some(self.pos);
        Ok(())
    }

    /// The tag length of the stream's layout.
    fn layout_tag(&self) -> usize {
        self.stream.as_ref().map_or(0, |s| s.layout.tag)
    }
}
