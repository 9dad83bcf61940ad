//! With threads and prefetch, reads smaller than a segment and `BufRead`
//! go through a [`Ring`]: the caller's thread reads each segment's sealed
//! bytes into a slot of its own, the pool threads open the segments in
//! order while the caller takes the ones before (between its calls, not
//! only inside them), and once the plaintext buffer is empty the segment
//! at the front is handed over to it whole (the two trade allocations:
//! nothing is copied), where the calls take it as any segment opened
//! there. A run would leave the pool idle while its plaintext is handed
//! out; the ring keeps it opening.
//!
//! The rules it owns:
//! - **Only segments that more input follows**: a segment is opened in
//!   the ring only whole and with at least one byte read after it, so it
//!   can only be non-final, and opens as such; everything else (the final
//!   segment, a segment that fails, a cut) is left to the usual path.
//! - **Unwinding restores the usual state**: the ring stops claiming
//!   (a segment a pool thread is still opening is not waited for), and
//!   puts the sealed bytes of every segment not handed over back into the
//!   read-ahead, in order (one that opened but was not handed over is
//!   opened again the usual way); the segment handed over last is in the
//!   plaintext buffer already, where the caller left it. The stream then
//!   goes on as if the ring had never been. A seek, a length query, a
//!   read as large as a segment, the input's end, a failed read beside
//!   and a failed segment unwind it.
//! - **The caller reads only while it has nothing to hand over**: while
//!   the front segment is being opened, or while the pool is at work and
//!   no thread has claimed the front yet, it reads sealed bytes (fewer
//!   than [`WAITING`] segments waiting to be opened), else opens the next
//!   one itself, else waits (parked) for the front, and takes it over if the
//!   pool thread has not finished it in twice the caller's own time to
//!   open one. With nothing being opened it reads only what the front
//!   segment needs to be opened: its own bytes, then the first byte
//!   after it (as prefetch allows: this may wait on `inner` with the
//!   plaintext before it handed out).

use super::*;
use crate::core::seek::Landing;
use crate::threads::{Front, Open, Ring, RingCounts};

/// Plaintext a ring's slots hold in all, about: segments of 64 KiB get 8
/// slots (at most [`WAITING`] read and waiting, the front, those being
/// opened, the one being read).
const RING_BYTES: usize = 512 * 1024;

/// The fewest and the most slots a ring has (the most: a prefetching
/// reader's read-ahead of segments of [`MIN_SEGMENT`], and two more).
const SLOTS: (usize, usize) = (4, 72);

/// Segments smaller than this go through runs: a ring hands segments out
/// one at a time, at a cost per segment.
const MIN_SEGMENT: usize = 8 * 1024;

/// Segments larger than this go through runs: a ring's input slots are
/// allocated whole when it starts (at least four sealed segments), and
/// its output slots (as many plaintext ones) as it first opens into
/// each, where a run's buffers grow as bytes arrive.
const MAX_SEGMENT: usize = 256 * 1024;

/// Segments read and waiting to be opened, at most, before the caller
/// opens one itself instead of reading more.
const WAITING: u64 = 4;

/// A ring in use and where it stands in the stream.
pub(super) struct Ringed {
    ring: Ring,
    /// The index of the ring's first segment.
    base: u64,
    /// No more reads into the ring: the input ended, or a read beside
    /// brought nothing.
    stopped: bool,
    /// A read brought 0 bytes: the inner reader is at its end.
    ended: bool,
}

/// Segments a stream reads the usual way after a call of another kind
/// unwound its ring, before a small read may start one again.
const AFTER_OTHER_CALLS: u64 = 16;

/// Where a ring may start again after one stopped at a segment it could
/// not hand over (a failure, the input's end, a read beside that brought
/// nothing): only past that segment, once the usual path has settled it.
/// Starting one there again would stop at the same segment, for ever.
#[derive(Default)]
pub(super) struct Restart(u64);

impl Opener {
    /// Whether a small read may start a ring now, the next segment being
    /// complete in the read-ahead: threads with prefetch and a read
    /// beside, fixed-size segments of at least [`MIN_SEGMENT`] bytes after
    /// one authenticated, no seek or length query under way, no inner
    /// buffer, and the input going on.
    fn ring_fits(&self, side: bool) -> bool {
        side && self.prefetch
            && self.ring.is_none()
            && self.next >= self.ring_restart.0
            && self.workers.as_ref().is_some_and(Workers::may_post)
            && matches!(self.stage, Stage::Body)
            && self.next > 0
            && self.ahead.proven()
            && !self.ahead.looks_ended()
            && !self.in_place.is_on()
            && self.position.pending().is_none()
            && self.position.landing() == Landing::Steady
            && !self.position.skips()
            && !self.position.querying()
            && matches!(self.units(), Some(Units::Fixed(l)) if (MIN_SEGMENT..=MAX_SEGMENT).contains(&l.rest))
    }

    /// Starts a ring with what the read-ahead holds, if it may
    /// ([`ring_fits`](Self::ring_fits)) and its slots can be allocated;
    /// whether it did.
    pub(super) fn start_ring(&mut self, side: bool) -> bool {
        if !self.ring_fits(side) {
            return false;
        }
        let (Some(Setup { suite, units }), Some(workers)) = (&mut self.stream, &mut self.workers)
        else {
            return false;
        };
        let layout = *units.layout();
        let (unit, plain) = (layout.sealed(self.next), layout.plain(self.next));
        // What is read ahead goes into the slots, with two to spare.
        let held = self.ahead.available().div_ceil(unit);
        let slots = (RING_BYTES / plain.max(1)).max(held + 2);
        if slots > SLOTS.1 {
            return false;
        }
        let slots = slots.max(SLOTS.0);
        let (suite, base, tag) = (suite.share(), self.next, layout.tag);
        let inject = workers.inject_panic.armed().is_some();
        let open: Box<Open> = Box::new(move |seq, input, output| {
            assert!(!inject, "injected worker panic");
            let len = input.len().checked_sub(tag).ok_or(Error::Truncated)?;
            let index = base.checked_add(seq).ok_or(Error::TooManySegments)?;
            suite.open_at(index, false, &[], input, &mut output[..len])?;
            Ok(len)
        });
        let counts = RingCounts {
            opened: self.counts.ring_opened.clone(),
            pool_opened: self.counts.ring_pool.clone(),
            taken: self.counts.ring_taken.clone(),
            delay: workers.pool_delay.armed(),
            slow_handout: workers.slow_handout.armed(),
        };
        // The plaintext buffer trades allocations with the slots (each
        // unit handed over to it whole): it starts with one as long as
        // theirs, the larger one the usual path may have grown freed.
        let made = Ring::new(slots, unit, plain, open, counts).and_then(|ring| {
            self.plain = Plain::new();
            self.plain.open_into(plain)?;
            Ok(ring)
        });
        // Without the slots the usual path goes on, as without a ring, for
        // a while before it tries again.
        let Ok(mut ring) = made else {
            self.ring_restart = Restart(self.next.saturating_add(AFTER_OTHER_CALLS));
            return false;
        };
        let data = self.ahead.data();
        let mut at = 0;
        while at < data.len() {
            let read = ring.read_into(|room| {
                let n = room.len().min(data.len() - at);
                room[..n].copy_from_slice(&data[at..at + n]);
                Some(n)
            });
            at += read.unwrap_or_else(|| unreachable!("the slots hold what is read ahead"));
        }
        self.ahead.consume(at);
        // The ring holds what is read ahead: the read-ahead's buffers are
        // freed meanwhile (they grow again if the ring unwinds), so the
        // reader holds no more than with runs.
        self.ahead.release();
        ring.publish(workers);
        self.counts.rings.add(1);
        self.ring = Some(Ringed {
            ring,
            base,
            stopped: false,
            ended: false,
        });
        true
    }

    /// With the plaintext buffer empty, a step of a small read or of
    /// `BufRead` through the ring: the front segment, once open, is handed
    /// over to the plaintext buffer whole (its allocation traded, nothing
    /// copied), where the call takes it as any opened segment; or the
    /// ring is unwound (the call goes on the usual way).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky); [`Error::Allocation`] (sticky)
    /// when unwinding cannot grow the read-ahead.
    pub(super) fn ring_step(
        &mut self,
        mut side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<(), Error> {
        // A segment is handed over only to an empty plaintext buffer:
        // the one there is not taken yet.
        if !self.plain.is_empty() {
            return Ok(());
        }
        let (Some(r), Some(workers)) = (&mut self.ring, &mut self.workers) else {
            return Ok(());
        };
        loop {
            if workers.panicked() {
                // A ring's job panicked on a pool thread: unwinding says so.
                break;
            }
            let reads = !r.stopped && side.is_some();
            match r.ring.front_state() {
                Front::Opened => {
                    let (plain, index) = (&mut self.plain, r.base + r.ring.front());
                    r.ring.hand_over(workers, |bytes, len| {
                        let held = Held {
                            index,
                            len,
                            last: false,
                        };
                        plain.adopt(bytes, held);
                    });
                    return Ok(());
                }
                Front::Failed => break,
                // With the pool at work, a unit no thread has claimed yet
                // is left to it while the caller has reading to do: taking
                // each unit as soon as it is published, the caller would
                // leave none for a pool thread, which wakes later.
                Front::Claimable
                    if reads
                        && r.ring.pooled()
                        && r.ring.may_read()
                        && r.ring.waiting() < WAITING =>
                {
                    read_into_ring(r, &mut side, &mut self.position, workers);
                }
                Front::Claimable => r.ring.open_own(workers),
                Front::Unread if reads && r.ring.has_room() => {
                    read_into_ring(r, &mut side, &mut self.position, workers);
                }
                Front::Unread => break,
                Front::Busy => {
                    if reads && r.ring.may_read() && r.ring.waiting() < WAITING {
                        read_into_ring(r, &mut side, &mut self.position, workers);
                    } else if r.ring.waiting() > 0 {
                        r.ring.open_own(workers);
                    } else {
                        r.ring.wait_or_take();
                    }
                }
            }
        }
        let stopped_at = r.base + r.ring.front();
        self.unwind_ring()?;
        self.ring_restart = Restart(stopped_at + 1);
        Ok(())
    }

    /// Unwinds the ring, if one is in use (see the module docs).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky) when a job on the ring
    /// panicked (a unit's, or a pool thread's job around them); [`Error::Allocation`] (sticky) when the read-ahead cannot
    /// grow to take the ring's sealed bytes back.
    pub(super) fn unwind_ring(&mut self) -> Result<bool, Error> {
        let Some(mut r) = self.ring.take() else {
            return Ok(false);
        };
        r.ring.halt();
        if r.ring.panicked() || self.workers.as_ref().is_some_and(Workers::panicked) {
            return Err(self.fail(Error::WorkerPanicked));
        }
        self.next = r.base + r.ring.front();
        let ahead = &mut self.ahead;
        // Room for all of it at once, not grown slot by slot.
        let drained = ahead
            .reserve_back(r.ring.read_ahead())
            .and_then(|()| r.ring.drain(|input| ahead.put_back(input, false)));
        if let Err(e) = drained.and_then(|()| ahead.put_back(&[], r.ended)) {
            return Err(self.fail(e));
        }
        Ok(true)
    }

    /// Unwinds the ring for a call of another kind (a read of a segment
    /// or more): a stream that mixes calls does not start a ring again for
    /// [`AFTER_OTHER_CALLS`] segments, so that calls that alternate do not
    /// start one and unwind it each time.
    ///
    /// # Errors
    ///
    /// As [`unwind_ring`](Self::unwind_ring).
    pub(super) fn leave_ring(&mut self) -> Result<(), Error> {
        if self.unwind_ring()? {
            self.ring_restart = Restart(self.next.saturating_add(AFTER_OTHER_CALLS));
        }
        Ok(())
    }

    /// A seek moves the stream: a ring may start wherever it lands.
    pub(super) fn ring_anywhere(&mut self) {
        self.ring_restart = Restart::default();
    }

    /// Sealed bytes held by the ring, of segments not handed over yet.
    pub(super) fn ring_read_ahead(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.ring.read_ahead())
    }

    /// Whether a ring is in use and a read of `len` bytes goes through
    /// it (smaller than its segments; a larger one unwinds it and reads
    /// the usual way, straight into the caller's buffer).
    pub(super) fn ring_takes(&self, len: usize) -> bool {
        self.ring.as_ref().is_some_and(|r| len < r.ring.output())
    }

    /// Whether a ring is in use.
    pub(super) fn ringed(&self) -> bool {
        self.ring.is_some()
    }
}

/// Reads the next sealed bytes into the ring through the read beside,
/// and publishes what that completes. A read that brings nothing stops
/// the ring's reading (0: the input's end).
fn read_into_ring(
    r: &mut Ringed,
    side: &mut Option<&mut (dyn Beside + '_)>,
    position: &mut Position,
    workers: &mut Workers,
) {
    let Some(side) = side.as_deref_mut() else {
        r.stopped = true;
        return;
    };
    match r.ring.read_into(|room| side.read_beside(room)) {
        Some(0) => {
            r.stopped = true;
            r.ended = true;
        }
        Some(n) => {
            position.inner_read(n);
            r.ring.publish(workers);
        }
        None => r.stopped = true,
    }
}
