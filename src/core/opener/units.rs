//! Opening the unit at the start of the read-ahead — a fixed-size segment
//! by [`unit::open_segment`]'s rules, or a framed record — into the
//! caller's buffer or the plaintext buffer; and the length query's open of the last segment.

use super::*;
use crate::core::layout::{Framed, RECORD_HEADER_LEN, record_at};
use crate::core::unit::{self, Place};

impl Opener {
    /// Whether the next unit is complete in the read-ahead (or the inner
    /// reader is at its end): `Some(its plaintext capacity)`, or `None`
    /// when more input is needed first.
    pub(super) fn fill_segment(&mut self) -> Result<Option<usize>, Error> {
        if let Stage::Start { .. } = self.stage
            && !self.read_header()?
        {
            return Ok(None);
        }
        let layout = match self.units() {
            Some(Units::Fixed(layout)) => layout,
            Some(Units::Framed(layout)) => return self.fill_record(&layout),
            None => unreachable!("called while in the body"),
        };
        let (plain, sealed) = (layout.plain(self.next), layout.sealed(self.next));
        if self.ahead.wants(sealed) {
            return Ok(None);
        }
        if self.ahead.at_end() && self.ahead.is_empty() && self.position.ends_here(self.next) {
            // A seek landed where the input ends: past the end, or the
            // stream is cut there. Only the authenticated length can say.
            return Ok(None);
        }
        Ok(Some(plain))
    }

    /// Opens the unit at the start of the read-ahead into `out` (at least
    /// the unit's plaintext capacity long). On error `out` holds no
    /// plaintext.
    pub(super) fn open_next(&mut self, out: &mut [u8]) -> Result<Opened, Error> {
        let Some(Setup { suite, units }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let Units::Fixed(layout) = *units else {
            return self.open_record(out);
        };
        let index = self.next;
        let full = layout.sealed(index);
        let avail = self.ahead.available();
        let (sealed, place) = if avail >= full {
            // A full-length segment is final or not: try the likely flag
            // first, then the other (as age does). It is likely the last
            // when nothing follows it and the input is at (or, after a
            // short read, probably at) its end; trying that first saves a
            // failed pass over the stream's last segment. (Or when it
            // already failed as non-final in the inner buffer.)
            let likely_last =
                avail == full && self.ahead.looks_ended() || self.in_place.failed_at(index);
            (full, Place::Either { likely_last })
        } else {
            debug_assert!(
                self.ahead.at_end(),
                "fill_segment stops short only at the end"
            );
            (avail, Place::Ends)
        };
        let mut tries = 0;
        let data = &self.ahead.data()[..sealed];
        let r = unit::open_segment(suite, &layout, index, data, out, place, &mut tries);
        self.counts.opens.add(tries);
        let opened = r?;
        self.next += 1;
        self.ahead.consume(sealed);
        Ok(if opened.last {
            Opened::Last(opened.len)
        } else {
            Opened::More(opened.len)
        })
    }

    /// Whether the next unit is complete in the read-ahead (at its full
    /// length) and its plaintext fits in `room` bytes, the stream going on.
    #[inline]
    pub(super) fn next_fits(&self, room: usize) -> bool {
        if !matches!(self.stage, Stage::Body) {
            return false;
        }
        self.next_unit()
            .is_some_and(|(plain, sealed)| self.ahead.available() >= sealed && room >= plain)
    }

    /// Moves the stage on after a unit opened, or records the error.
    #[inline]
    pub(super) fn after_open(&mut self, r: Result<Opened, Error>) -> Result<usize, Error> {
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
                // Only fixed-size segments give a length.
                let units = self.units();
                let fixed = units.as_ref().and_then(Units::fixed);
                let len = fixed.map(|l| l.plain_offset(self.next - 1) + n as u64);
                if self.ahead.at_end() && self.ahead.is_empty() {
                    self.position.set_auth_len(len);
                    self.stage = Stage::Done;
                } else {
                    self.stage = Stage::Final(len);
                }
                Ok(n)
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// A unit opened at the reader's position: a seek's reposition is
    /// carried out, and the header that named the segment size is proven,
    /// so with threads the read-ahead may now grow to a batch of segments.
    pub(super) fn authenticated(&mut self) {
        self.position.opened();
        let (ring, stream) = (&self.ring, &self.stream);
        self.ahead
            .prove(|| Some(ring.as_ref()?.read_ahead(stream.as_ref()?.units.layout())));
    }

    /// Opens the next unit, which [`fill_segment`](Self::fill_segment)
    /// found complete and to hold up to `cap` plaintext bytes, into the
    /// internal plaintext buffer.
    pub(super) fn fill_plain(&mut self, cap: usize) -> Result<(), Error> {
        let Some(units) = self.units() else {
            unreachable!("called while in the body")
        };
        // Only as much as this segment holds (a short final one, less).
        let avail = self.ahead.available();
        let holds = match units {
            Units::Fixed(l) if avail < l.sealed(self.next) => avail.saturating_sub(l.tag).min(cap),
            _ => cap,
        };
        let index = self.next;
        let mut plain = std::mem::replace(&mut self.plain, Plain::new());
        if let Some(r) = self.fill_run(&mut plain, avail) {
            self.plain = plain;
            return r;
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
            plain.opened(held, len, self.position.take_skip());
        }
        self.plain = plain;
        r.map(|_| ())
    }

    /// [`fill_plain`](Self::fill_plain) with threads and no prefetch: the
    /// whole segments the read-ahead (`avail` bytes) holds, as one run on
    /// the workers into `plain`. `None`: no run opened (the one-thread
    /// path goes on).
    fn fill_run(&mut self, plain: &mut Plain, avail: usize) -> Option<Result<(), Error>> {
        if self.prefetch || !self.run_pays(avail) {
            return None;
        }
        let (index, (len, _)) = (self.next, self.next_unit()?);
        // Plaintext is shorter than its ciphertext: room for what arrived.
        let r = match plain.open_into(avail) {
            Ok(out) => self.run_ahead(out, None),
            Err(e) => Err(self.fail(e)),
        };
        if let Ok(n @ 1..) = r {
            let first = Held {
                index,
                len,
                last: false,
            };
            plain.opened(first, n, self.position.take_skip());
        }
        r.as_ref().map_or(true, |&n| n > 0).then(|| r.map(|_| ()))
    }

    /// The next unit's plaintext capacity and sealed length: a fixed
    /// segment's from the layout, a record's from its header once that is
    /// read ahead (`None` before).
    #[inline]
    pub(super) fn next_unit(&self) -> Option<(usize, usize)> {
        match self.units()? {
            Units::Fixed(l) => Some((l.plain(self.next), l.sealed(self.next))),
            Units::Framed(l) => {
                let (_, len, _) = record_at(self.ahead.data())?;
                // Over the stream's record size: left to `fill_record`,
                // which refuses it.
                (len <= l.rest).then_some((len, RECORD_HEADER_LEN + len + l.tag))
            }
        }
    }

    /// [`fill_segment`](Self::fill_segment) for a framed stream: the record
    /// header first (a length over the stream's record size is refused
    /// before anything is allocated for it), then the whole record. A cut
    /// anywhere before the final record is [`Error::Truncated`].
    fn fill_record(&mut self, layout: &Framed) -> Result<Option<usize>, Error> {
        if self.ahead.wants(RECORD_HEADER_LEN) {
            return Ok(None);
        }
        let Some((_, size, _)) = record_at(self.ahead.data()) else {
            return Err(self.fail(Error::Truncated));
        };
        if size > layout.rest {
            return Err(self.fail(Error::SegmentTooLarge {
                size: size as u64,
                limit: layout.rest as u64,
            }));
        }
        let total = RECORD_HEADER_LEN + size + layout.tag;
        if self.ahead.wants(total) {
            return Ok(None);
        }
        if self.ahead.available() < total {
            return Err(self.fail(Error::Truncated));
        }
        Ok(Some(size))
    }

    /// [`open_next`](Self::open_next) for a framed stream: the record at
    /// the start of the read-ahead (made complete by
    /// [`fill_record`](Self::fill_record)), its header as the AAD and its
    /// final flag in the nonce. A final record must end the input.
    fn open_record(&mut self, out: &mut [u8]) -> Result<Opened, Error> {
        let Some(Setup { suite, units }) = &self.stream else {
            unreachable!("called while in the body")
        };
        let tag = units.layout().tag;
        self.counts.opens.add(1);
        let data = self.ahead.data();
        let (opened, total) = unit::open_record(suite, tag, self.next, data, out)?;
        self.next += 1;
        self.ahead.consume(total);
        if !opened.last {
            return Ok(Opened::More(opened.len));
        }
        Ok(Opened::Last(opened.len))
    }

    /// The length query's last segment: opens segment `index`, `sealed`
    /// bytes at the end of the source and whole in the read-ahead, as the
    /// final one into the plaintext buffer (by the rules of a segment that
    /// ends the source), and records the length.
    pub(super) fn open_last(
        &mut self,
        layout: &Fixed,
        index: u64,
        sealed: usize,
    ) -> Result<(), Error> {
        if self.ahead.available() != sealed {
            // The source changed length while it was read.
            return Err(self.fail(Error::Truncated));
        }
        let Some(Setup { suite, .. }) = &self.stream else {
            unreachable!("the length is asked after the header")
        };
        let out = match self.plain.open_into(sealed.saturating_sub(layout.tag)) {
            Ok(out) => out,
            Err(e) => return Err(self.fail(e)),
        };
        let mut tries = 0;
        let data = self.ahead.data();
        let r = unit::open_segment(suite, layout, index, data, out, Place::Ends, &mut tries);
        self.counts.opens.add(tries);
        let opened = r.map_err(|e| self.fail(e))?;
        self.ahead.clear();
        let held = Held {
            index,
            len: opened.len,
            last: true,
        };
        self.plain.opened(held, opened.len, opened.len);
        self.position
            .proven(layout.plain_offset(index) + opened.len as u64);
        Ok(())
    }
}
