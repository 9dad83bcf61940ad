//! The opener's side of random access: it hands seeks and the length query
//! to its [`Position`] and carries out on its other parts (stage, unit
//! index, read-ahead, plaintext buffer) where a reposition lands. Only
//! fixed-size segments have offsets; a framed stream refuses both, not
//! sticky.

use super::*;
use crate::core::layout::NO_RANDOM_ACCESS;
use crate::core::seek::{Landed, QueryStep};

impl Opener {
    /// The caller's plaintext position.
    pub(crate) fn position(&self) -> u64 {
        self.position.pos()
    }

    /// The authenticated plaintext length, once a final segment opened.
    pub(crate) fn auth_len(&self) -> Option<u64> {
        self.position.auth_len()
    }

    /// Moves the caller's position to plaintext offset `p` (any value, past
    /// the end too); the next read carries it out.
    ///
    /// # Errors
    ///
    /// The sticky error of a failed stream; a framed stream's refusal.
    pub(crate) fn seek_to(&mut self, p: u64) -> Result<(), Error> {
        if let Stage::Failed(e) = &self.stage {
            return Err(e.clone());
        }
        if let Some(Units::Framed(_)) = self.units() {
            return Err(NO_RANDOM_ACCESS);
        }
        if p != self.position.pos() {
            self.unwind_ring()?;
        }
        self.position.seek_to(p);
        Ok(())
    }

    /// Where a seek lands, in plaintext offsets (`End` needs the
    /// authenticated length: run [`length`](Self::length) first).
    ///
    /// # Errors
    ///
    /// A negative or overflowing position.
    pub(crate) fn seek_target(&self, pos: std::io::SeekFrom) -> Result<u64, Error> {
        self.position.seek_target(pos)
    }

    /// Where the stream starts in the inner source, from the inner
    /// reader's position now.
    ///
    /// # Errors
    ///
    /// The inner reader was moved behind the stream's start.
    pub(crate) fn stream_base(&self, inner_pos: u64) -> Result<u64, Error> {
        self.position.stream_base(inner_pos)
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
                .ok_or(Error::InvalidSeek),
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
    /// The inner error; [`Error::Truncated`] (sticky) for a source whose
    /// length no stream has.
    pub(crate) fn inner_sought(
        &mut self,
        step: &Step,
        base: u64,
        result: std::io::Result<u64>,
    ) -> std::io::Result<()> {
        match (*step, result) {
            (Step::Seek(offset), Ok(_)) => self.position.sought(offset),
            (Step::Seek(_), Err(e)) if e.kind() == std::io::ErrorKind::InvalidInput => {
                // No source holds that segment: the inner reader did not
                // move, and the input is at its end there.
                self.position.seek_refused();
                self.ahead.end_here();
            }
            // A source that ends before the stream started is empty.
            (Step::Length, Ok(end)) => {
                let layout = self.fixed()?;
                let measured = self.position.measured(end.saturating_sub(base), &layout);
                match measured {
                    Ok(_) => self.restart_input(),
                    Err(e) => return Err(self.fail(e).into()),
                }
            }
            (_, Err(e)) => return Err(e),
            _ => unreachable!("not a seek step"),
        }
        Ok(())
    }

    /// The fixed-size layout that random access needs, once the header is
    /// read.
    ///
    /// # Errors
    ///
    /// A framed stream's refusal (not sticky: reading goes on).
    fn fixed(&self) -> Result<Fixed, Error> {
        match self.units() {
            Some(Units::Fixed(layout)) => Ok(layout),
            Some(Units::Framed(_)) => Err(NO_RANDOM_ACCESS),
            None => unreachable!("random access is carried out after the header"),
        }
    }

    /// The inner reader moves (the position says where): the read-ahead
    /// and the in-place state start over.
    fn restart_input(&mut self) {
        self.ahead.restart();
        self.in_place.reset();
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
        if let Some(pending) = self.position.pending() {
            if let Stage::Start { .. } = self.stage
                && !self.read_header()?
            {
                // The header first, from where the stream starts.
                return Ok(Some(Step::Read));
            }
            // Asked before the header said the stream is framed: refused,
            // and the position stays where the reads left it.
            let layout = self.fixed();
            self.position.take_pending(layout.is_ok());
            self.reposition(&layout?, pending.to);
        }
        if self.position.landing() != Landing::Ending {
            if self.position.querying() {
                // A length query that was cut short holds the read-ahead
                // (or left the inner reader at the source's end): reading
                // goes on from the caller's position, and the query starts
                // over when asked again.
                self.reposition(&self.fixed()?, self.position.pos());
            }
            return Ok(None);
        }
        // A read at this position found the input's end where a segment
        // should start: the authenticated length says whether it is the end.
        let step = self.length()?;
        if step != Step::Done(0) {
            return Ok(Some(step));
        }
        if self.position.settle_ending() {
            self.stage = Stage::Done;
            return Ok(Some(Step::Done(0)));
        }
        // A segment that the authenticated length says exists is not
        // there (the source changed under the reader).
        Err(self.fail(Error::Truncated))
    }

    /// Sets the reader up to deliver plaintext from offset `p` (see
    /// [`Position::land`]) and carries out where it lands.
    fn reposition(&mut self, layout: &Fixed, p: u64) {
        let next = matches!(self.stage, Stage::Body).then_some(self.next);
        let held_ahead = self.ahead.available();
        match self
            .position
            .land(p, layout, &mut self.plain, held_ahead, next)
        {
            Landed::End(next) => {
                self.next = next.unwrap_or(self.next);
                self.stage = Stage::Done;
            }
            Landed::Stay => {}
            Landed::From {
                next,
                from,
                final_len,
            } => {
                self.next = next;
                self.stage = match final_len {
                    Some(len) => Stage::Final(Some(len)),
                    None => Stage::Body,
                };
                match from {
                    Some(_) => self.restart_input(),
                    None => self.ahead.end_here(),
                }
            }
        }
    }

    /// One step of the length query: `Done(0)` once
    /// [`auth_len`](Self::auth_len) is known.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] for a source whose length no stream has, or
    /// whose last segment opens only as a non-final one;
    /// [`Error::Authentication`] for one whose last segment does not open;
    /// the stream's other typed errors. All sticky; a framed stream's
    /// refusal, not sticky.
    pub(crate) fn length(&mut self) -> Result<Step, Error> {
        if self.position.auth_len().is_none() {
            self.unwind_ring()?;
        }
        loop {
            if let Stage::Failed(e) = &self.stage {
                return Err(e.clone());
            }
            if self.position.auth_len().is_some() {
                return Ok(Step::Done(0));
            }
            if let Stage::Start { .. } = self.stage
                && !self.read_header()?
            {
                return Ok(Step::Read);
            }
            let layout = self.fixed()?;
            let ahead = &mut self.ahead;
            match self.position.query_step(|sealed| ahead.wants(sealed)) {
                QueryStep::Ask(step) => return Ok(step),
                QueryStep::Open { index, sealed } => self.open_last(&layout, index, sealed)?,
            }
        }
    }
}
