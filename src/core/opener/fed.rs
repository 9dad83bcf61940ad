//! Large reads as fed runs: with threads, a read whose buffer holds two
//! segments or more, made when the next segment has not arrived yet,
//! reads the run's sealed bytes while the workers open them (see the
//! threads' fed runs), instead of reading the whole run first and then
//! opening it.

use super::*;
use crate::core::runs::{FedInto, open_fed};
use crate::core::window::zeroed;

/// A fed run to make: how many segments, their sealed bytes, and whether
/// in place.
pub(super) struct FedPlan {
    count: usize,
    sealed: usize,
    in_place: bool,
}

/// What a fed run gave.
pub(super) enum FedRead {
    /// Plaintext delivered into the caller's buffer.
    Delivered(usize),
    /// Nothing opened, but input arrived or its end was seen: the usual
    /// path goes on from there.
    Moved,
    /// Nothing read (the front keeps an error for its own read, or was
    /// interrupted): the front reads as usual.
    Nothing,
}

impl Opener {
    /// The fed run a read into `room` bytes would make: with threads and
    /// prefetch (a fed run reads past the first segment, so only a reader
    /// that may read ahead makes one), fixed-size segments in the body,
    /// the header proven, the inner reader going on and read here (not in
    /// place, not moved by a seek), the next segment not complete in the
    /// read-ahead, and room for two whole segments or more. `None`: no
    /// fed run.
    ///
    /// Opened in place, each inner read is one segment's sealed bytes at
    /// most, and the last segment's tag lands after it in the caller's
    /// buffer: only for segments no shorter than the read-ahead (every
    /// read is then offered as much as the read-ahead would offer), with
    /// room for that tag, and at most a fed batch. Otherwise the run goes
    /// into the read-ahead, at most a batch, and only with at least the
    /// read-ahead's capacity still to read (the usual path reads less in
    /// one call).
    pub(super) fn fed_plan(&self, room: usize) -> Option<FedPlan> {
        let (Some(workers), Some(Setup { units, suite }), Stage::Body) =
            (&self.workers, &self.stream, &self.stage)
        else {
            return None;
        };
        let Units::Fixed(layout) = units else {
            return None;
        };
        if !self.prefetch
            || !self.ahead.proven()
            || self.ahead.at_end()
            || self.in_place.is_on()
            || self.position.moves_inner()
            || self.position.skips()
            || !self.plain.is_empty()
            || self.ahead.available() >= layout.sealed(self.next)
        {
            return None;
        }
        let shortest = layout.sealed(self.next).min(layout.rest + layout.tag);
        let in_place = suite.opens_in_place() && self.ahead.capacity() <= shortest;
        let (batch, mut left) = if in_place {
            let batch = parallel::fed_batch_segments(workers.threads(), layout.rest);
            (batch, room.saturating_sub(layout.tag))
        } else {
            let batch = parallel::open_batch_segments(workers.threads(), layout.rest);
            (batch, room)
        };
        let mut count = 0;
        while count < batch {
            let Some(l) = left.checked_sub(layout.plain(self.next + count as u64)) else {
                break;
            };
            (left, count) = (l, count + 1);
        }
        let sealed = (0..count as u64)
            .map(|i| layout.sealed(self.next + i))
            .sum::<usize>();
        // Read into the read-ahead, a run asks for at least its capacity
        // at a time: one with less than that still to read is read the
        // usual way, in one call.
        let small =
            !in_place && sealed.saturating_sub(self.ahead.available()) < self.ahead.capacity();
        (count >= 2 && !small).then_some(FedPlan {
            count,
            sealed,
            in_place,
        })
    }

    /// Opens the fed run `plan` (from [`fed_plan`](Self::fed_plan)) into
    /// `buf`, reading its input through `side`.
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky), with nothing released;
    /// [`Error::Allocation`] when the read-ahead cannot grow to the run.
    pub(super) fn read_fed(
        &mut self,
        buf: &mut [u8],
        plan: FedPlan,
        side: &mut dyn Beside,
    ) -> Result<FedRead, Error> {
        let (Some(workers), Some(stream)) = (&mut self.workers, &self.stream) else {
            unreachable!("fed_plan said yes")
        };
        let layout = *stream.units.layout();
        let FedPlan {
            count,
            sealed,
            in_place,
        } = plan;
        let capacity = self.ahead.capacity();
        let mut read = |room: &mut [u8]| side.read_beside(room);
        // Opened where the plaintext goes, the segments' ciphertext is read
        // into `buf`, the tags beside it.
        let tags_len = if in_place { count * layout.tag } else { 0 };
        let mut tags = match zeroed(tags_len) {
            Ok(t) => t,
            Err(e) => return Err(self.fail(e)),
        };
        let into = if in_place {
            FedInto::InPlace {
                tags: &mut tags,
                held: self.ahead.data(),
            }
        } else {
            match self.ahead.region(sealed) {
                Ok((region, held)) => FedInto::Apart { region, held },
                Err(e) => return Err(self.fail(e)),
            }
        };
        let r = open_fed(
            workers,
            stream,
            &layout,
            (self.next, count),
            into,
            buf,
            &mut read,
            capacity,
        );
        let (run, fed, back) = r.map_err(|e| self.fail(e))?;
        self.counts.opens.add(run.tried);
        self.counts.runs.add(usize::from(run.tried > 0));
        self.counts.fed.add(usize::from(fed.read > 0));
        self.counts
            .fed_in_place
            .add(usize::from(fed.read > 0 && in_place));
        self.position.inner_read(fed.read);
        if in_place {
            // What was held went into the run; what the run did not
            // release comes back.
            self.ahead.clear();
            if let Err(e) = self.ahead.put_back(&back, false) {
                return Err(self.fail(e));
            }
            self.ahead.fed(0, fed.last);
        } else {
            self.ahead.fed(fed.read, fed.last);
            self.ahead.consume(run.used);
        }
        self.next += run.opened as u64;
        if run.opened > 0 {
            self.authenticated();
            self.position.delivered(run.plain);
            return Ok(FedRead::Delivered(run.plain));
        }
        // Bytes arrived (a whole segment may be held now) or the end was
        // seen: the usual path goes on from there before the front's own
        // read (which returns a kept error first).
        Ok(if fed.read > 0 || fed.last.is_some() {
            FedRead::Moved
        } else {
            FedRead::Nothing
        })
    }
}
