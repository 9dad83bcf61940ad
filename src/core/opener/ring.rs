//! With threads, segments open on the workers in one of two ways. A
//! read large enough opens in place, as a run: the whole segments the
//! read-ahead holds go straight into the caller's buffer, in shares the
//! threads claim (`open_run`). Small reads with prefetch go through a
//! [`Ring`]: the caller moves units (a few whole segments each) of sealed
//! bytes from the read-ahead into the ring, in order; whichever thread is
//! free opens one; and once the plaintext buffer is empty the front
//! unit's plaintext is traded into it whole, where the calls take it as
//! any segments opened there.
//!
//! The rules it owns:
//! - **Only segments that more input follows**: a run or a unit holds
//!   only whole segments with at least one byte read after them (records
//!   whose header says they are not final), so each can only be
//!   non-final, and opens as such; everything else (the final segment, a
//!   cut) is left to the one-thread path, once those before it are
//!   delivered.
//! - **A unit that fails unwinds the ring**: the sealed bytes of every
//!   unit not delivered go back in front of the read-ahead, in order, and
//!   the one-thread path opens them again, releasing the same segments
//!   and giving the same error as one thread; no ring starts again. A
//!   seek and a length query unwind it the same way (a ring may start
//!   again after them). A run releases the segments before its first
//!   failure; the one-thread path settles that one.
//! - **Runs in place**: what the read-ahead holds opens as one run, into
//!   the caller's buffer (a read of a unit or more) or, without prefetch,
//!   into the plaintext buffer (smaller reads), with no copy into a ring.
//!   So does a read from the inner reader's buffer.
//! - **Reads beside**: with prefetch, the caller reads the inner reader
//!   while the pool threads work: beside a run, the next run's input,
//!   into a second read-ahead that takes the first one's place after the
//!   run; beside the ring, a unit at a time while the front unit is not
//!   done and the ring has room for the unit the read completes
//!   (prefetch lets a read call the inner reader with plaintext about to
//!   be ready).

use std::collections::VecDeque;

use super::*;
use crate::core::layout::{RECORD_HEADER_LEN, record_at};
use crate::core::seek::Landing;
use crate::core::suite::Suite;
use crate::core::unit;
use crate::core::window::Window;
use crate::threads::{Ring, Work, Workers};

/// Sealed bytes a run takes at least, when a read brings them: a run
/// pays once for waking the pool and for the end of its scope (tens of
/// microseconds each), a small part of opening this much.
const RUN: usize = 1024 * 1024;

/// A stream's ring and the units in it.
pub(super) struct Ringed {
    ring: Ring,
    /// Each unit in the ring, in order: its first segment's index and
    /// plaintext length, and its sealed bytes.
    units: VecDeque<(u64, usize, usize)>,
    /// The next unit's sealed bytes, traded into the ring.
    spare: Window,
    /// The most whole segments in a unit.
    per_unit: usize,
    /// The next run's input, read beside a run (with prefetch).
    behind: Window,
}

impl Ringed {
    /// A ring on `threads` threads for the stream `setup`.
    pub(super) fn new(threads: usize, setup: &mut Setup) -> Ringed {
        let (suite, units) = (setup.suite.share(), setup.units);
        let work: Box<Work> =
            Box::new(move |first, _, input, out| open_unit(&suite, &units, first, input, out));
        Ringed {
            ring: Ring::new(Workers::new(threads), work),
            units: VecDeque::new(),
            spare: Window::public(),
            per_unit: crate::threads::unit_segments(units.layout().rest),
            behind: Window::public(),
        }
    }

    /// The threads runs go to, and the segments of a run's share (a
    /// unit's).
    pub(super) fn workers(&mut self) -> (&mut Workers, usize) {
        (self.ring.workers(), self.per_unit)
    }

    /// The sealed bytes of a whole unit.
    pub(super) fn unit_sealed(&self, layout: &crate::core::layout::Layout) -> usize {
        layout.max_sealed().saturating_mul(self.per_unit)
    }

    /// The sealed bytes the read-ahead may grow to take in one read: a
    /// unit for each thread and one more, so that a read gives every
    /// thread a unit (the last, cut by the read's end, waits for the
    /// next), and at least [`RUN`].
    pub(super) fn read_ahead(&self, layout: &crate::core::layout::Layout) -> usize {
        self.unit_sealed(layout)
            .saturating_mul(self.ring.threads() + 1)
            .max(RUN)
    }
}

/// Opens the unit of whole non-final segments `input`, from index
/// `first`, into `out`.
fn open_unit(
    suite: &Suite,
    units: &Units,
    first: u64,
    input: &[u8],
    out: &mut Window,
) -> Result<(), Error> {
    out.clear();
    out.grow(input.len())?;
    let buf = out.whole_mut();
    let (mut at, mut n, mut index) = (0, 0, first);
    while at < input.len() {
        let (len, sealed) = match units {
            Units::Fixed(l) => {
                let (len, sealed) = (l.plain(index), l.sealed(index));
                let data = input.get(at..at + sealed).ok_or(Error::Truncated)?;
                suite.open_at(index, false, &[], data, &mut buf[n..n + len])?;
                (len, sealed)
            }
            Units::Framed(l) => {
                let (opened, sealed) =
                    unit::open_record(suite, l.tag, index, &input[at..], &mut buf[n..])?;
                (opened.len, sealed)
            }
        };
        (at, n, index) = (at + sealed, n + len, index + 1);
    }
    out.set(0, n);
    Ok(())
}

/// One segment of a run: its index, its sealed bytes, where its
/// plaintext goes, and how its opening went.
struct Piece<'a> {
    index: u64,
    input: &'a [u8],
    output: &'a mut [u8],
    result: Result<(), Error>,
}

/// What [`open_run`] did: segments tried, those opened before the first
/// failure, their sealed bytes (from the start of the input) and their
/// plaintext bytes (from the start of the output).
#[derive(Default)]
pub(super) struct Run {
    pub(super) tried: usize,
    pub(super) opened: usize,
    pub(super) used: usize,
    pub(super) plain: usize,
}

/// The plaintext length and sealed length of segment `index` at the start
/// of `rest`, if only a non-final one can be there: a fixed-size segment
/// that more input follows (or, `ends`, that ends `rest`: then tried as
/// non-final, as one thread tries it first), a whole record whose header
/// says it is not final.
fn non_final(units: &Units, index: u64, rest: &[u8], ends: bool) -> Option<(usize, usize)> {
    match units {
        Units::Fixed(l) => {
            let (len, sealed) = (l.plain(index), l.sealed(index));
            (rest.len() > sealed || rest.len() == sealed && ends).then_some((len, sealed))
        }
        Units::Framed(l) => match record_at(rest) {
            Some((_, len, false)) if len <= l.rest => {
                let sealed = RECORD_HEADER_LEN + len + l.tag;
                (rest.len() >= sealed).then_some((len, sealed))
            }
            _ => None,
        },
    }
}

/// Opens on the workers, straight into `out`, the segments from `next` at
/// the start of `data` that [`non_final`] allows and that fit in `out`,
/// each from its own index; what opened after the first failure is wiped
/// (not released before it). Fewer than two: nothing is done.
///
/// # Errors
///
/// [`Error::WorkerPanicked`], with `out` wiped.
pub(super) fn open_run(
    (workers, per_share): (&mut Workers, usize),
    setup: &Setup,
    next: u64,
    data: &[u8],
    out: &mut [u8],
    ends: bool,
    beside: impl FnOnce(&[u8]),
) -> Result<Run, Error> {
    let (units, suite) = (&setup.units, &setup.suite);
    let (mut pieces, mut at, mut room) = (Vec::new(), 0, &mut *out);
    while let Some((len, sealed)) = non_final(units, next + pieces.len() as u64, &data[at..], ends)
        && room.len() >= len
    {
        let (output, rest) = std::mem::take(&mut room).split_at_mut(len);
        let index = next + pieces.len() as u64;
        let input = &data[at..at + sealed];
        pieces.push(Piece {
            index,
            input,
            output,
            result: Ok(()),
        });
        (room, at) = (rest, at + sealed);
    }
    if pieces.len() < 2 {
        return Ok(Run::default());
    }
    let written: usize = pieces.iter().map(|p| p.output.len()).sum();
    let work = |p: &mut Piece<'_>| {
        p.result = match units {
            Units::Fixed(_) => suite.open_at(p.index, false, &[], p.input, p.output),
            Units::Framed(l) => {
                unit::open_record(suite, l.tag, p.index, p.input, p.output).map(|_| ())
            }
        };
    };
    let ok = workers.run(&mut pieces, per_share, work, || beside(&data[at..]));
    let good = pieces.iter().take_while(|p| p.result.is_ok());
    let tried = pieces.len();
    let run = good.fold(Run::default(), |r, p| Run {
        tried,
        opened: r.opened + 1,
        used: r.used + p.input.len(),
        plain: r.plain + p.output.len(),
    });
    drop(pieces);
    if !ok {
        zeroize::Zeroize::zeroize(&mut out[..written]);
        return Err(Error::WorkerPanicked);
    }
    zeroize::Zeroize::zeroize(&mut out[run.plain..written]);
    Ok(run)
}

impl Opener {
    /// Whether the ring may take units now: in the body, after a segment
    /// authenticated, when the caller may read beside.
    fn ring_fits(&self) -> bool {
        self.ring.is_some()
            && !self.ring_off
            && matches!(self.stage, Stage::Body)
            && self.ahead.proven()
            && self.reads_beside()
    }

    /// Whether the caller may read the inner reader beside the threads'
    /// work: with prefetch, and no seek or length query under way (nor
    /// the inner reader's move that one left: reads beside come after
    /// it).
    fn reads_beside(&self) -> bool {
        self.prefetch
            && self.position.pending().is_none()
            && self.position.landing() == Landing::Steady
            && !self.position.skips()
            && !self.position.moves_inner()
            && !self.position.querying()
    }

    /// The whole segments at the start of the read-ahead that can only
    /// be non-final, up to a unit: their count, their sealed bytes and
    /// the first one's plaintext length.
    fn next_ring_unit(&self, per_unit: usize) -> (usize, usize, usize) {
        let units = self.units().expect("in the body");
        let data = self.ahead.data();
        let (mut count, mut at, mut first) = (0, 0, 0);
        while count < per_unit {
            let index = self.next + count as u64;
            let Some((len, sealed)) = non_final(&units, index, &data[at..], false) else {
                break;
            };
            if count == 0 {
                first = len;
            }
            (count, at) = (count + 1, at + sealed);
        }
        (count, at, first)
    }

    /// Moves the read-ahead's whole units into the ring while it has room.
    fn post_units(&mut self) {
        loop {
            let Some(r) = &self.ring else { return };
            let (count, sealed, first_len) = self.next_ring_unit(r.per_unit);
            let Some(r) = &mut self.ring else { return };
            if count == 0 || r.ring.is_full() {
                return;
            }
            r.spare.clear();
            if r.spare.grow(sealed).is_err() {
                // The one-thread path opens it.
                return;
            }
            r.spare.extend(&self.ahead.data()[..sealed]);
            r.ring.post(&mut r.spare, self.next);
            r.units.push_back((self.next, first_len, sealed));
            self.ahead.consume(sealed);
            self.next += count as u64;
            self.counts.ring_units.add(1);
        }
    }

    /// With the plaintext buffer empty, a step through the ring: the front
    /// unit's plaintext is put in the plaintext buffer (`true`), or the
    /// ring has nothing to deliver and the one-thread path goes on
    /// (`false`: it reads or opens the next segment).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky); [`Error::Allocation`] (sticky)
    /// when unwinding cannot grow the read-ahead.
    pub(super) fn ring_step(
        &mut self,
        mut side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<bool, Error> {
        if !self.ring_fits() {
            return Ok(false);
        }
        loop {
            self.post_units();
            let Some(r) = &mut self.ring else {
                return Ok(false);
            };
            // With prefetch, the caller reads while the front is not done
            // and the ring has room for the unit the read completes.
            // (With room in the ring, no whole unit waits in the read-ahead:
            // `post_units` stops short of a full ring only for want of one.)
            let reads = !r.ring.front_done() && !r.ring.is_full();
            if reads
                && self.prefetch
                && !self.ahead.at_end()
                && let Some(s) = side.as_deref_mut()
            {
                match s.read_beside(self.room()?) {
                    Some(n) => self.filled(n),
                    // An error the front keeps for the next call that
                    // needs input: no more reads beside in this call.
                    None => side = None,
                }
                continue;
            }
            let Some(r) = &mut self.ring else {
                return Ok(false);
            };
            let Some(&(first, len, _)) = r.units.front() else {
                return Ok(false);
            };
            let held = Held {
                index: first,
                len,
                last: false,
            };
            let ring = &mut r.ring;
            match self
                .plain
                .fill_from(held, |out| ring.deliver(out, None).unwrap_or(Ok(())))
            {
                Ok(()) => {
                    r.units.pop_front();
                    self.authenticated();
                    return Ok(true);
                }
                Err(Error::WorkerPanicked) => return Err(self.fail(Error::WorkerPanicked)),
                Err(_) => {
                    // The one-thread path settles it.
                    self.unwind_ring()?;
                    self.ring_off = true;
                    return Ok(false);
                }
            }
        }
    }

    /// Puts every unit not delivered back in front of the read-ahead, in
    /// order (see the module docs).
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] (sticky) when the read-ahead cannot grow to
    /// take them.
    pub(super) fn unwind_ring(&mut self) -> Result<(), Error> {
        let Some(r) = &mut self.ring else {
            return Ok(());
        };
        let Some(&(first, ..)) = r.units.front() else {
            return Ok(());
        };
        let mut back = Vec::with_capacity(r.units.iter().map(|u| u.2).sum());
        r.ring.drain(|input| back.extend_from_slice(input));
        r.units.clear();
        self.next = first;
        let put = self.ahead.put_front(&back);
        put.map_err(|e| self.fail(e))
    }

    /// Units of the ring the pool threads opened (tests).
    #[cfg(test)]
    pub(crate) fn ring_pooled(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.ring.pooled())
    }

    /// Units of the ring the caller took over from a late pool thread
    /// (tests).
    #[cfg(test)]
    pub(crate) fn ring_taken_over(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.ring.taken_over)
    }

    /// Whether a read of `len` bytes opens in place (see the module
    /// docs): no unit in the ring, and room for a unit and two segments
    /// at least (a run pays for its start once).
    pub(super) fn opens_in_place(&self, len: usize) -> bool {
        self.ring_read_ahead() == 0 && self.run_pays(len)
    }

    /// Whether a run into `len` bytes may pay: threads, and room for a
    /// unit and two segments at least (a run pays for its start once).
    pub(super) fn run_pays(&self, len: usize) -> bool {
        let (Some(r), Some(u)) = (&self.ring, self.units()) else {
            return false;
        };
        len >= u.layout().rest.saturating_mul(r.per_unit.max(2))
    }

    /// With threads, opens the whole segments at the start of the
    /// read-ahead that fit in `out` as one run on the workers: the
    /// plaintext bytes, released up to the first failure (which the
    /// one-thread path then settles).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] (sticky).
    pub(super) fn run_ahead(
        &mut self,
        out: &mut [u8],
        side: Option<&mut (dyn Beside + '_)>,
    ) -> Result<usize, Error> {
        // With prefetch, the caller reads the next run's input while the
        // pool threads open this one: into `behind`, after the bytes this
        // run leaves, as far as the read-ahead's rule allows.
        let beside = self.reads_beside() && !self.ahead.at_end();
        let mut side = side.filter(|_| beside);
        let (Some(r), Some(s), Stage::Body) = (&mut self.ring, &self.stream, &self.stage) else {
            return Ok(0);
        };
        let ends = !self.ahead.looks_ended();
        let (ahead, behind, mut read) = (&self.ahead, &mut r.behind, None);
        let run = open_run(
            (r.ring.workers(), r.per_unit),
            s,
            self.next,
            self.ahead.data(),
            out,
            ends,
            |rest| {
                if let Some(side) = side.take()
                    && let Some(end) = ahead.behind_end(rest.len())
                    && behind.grow(end).is_ok()
                {
                    behind.clear();
                    behind.extend(rest);
                    let room = behind.spare_to(end);
                    let offered = room.len();
                    read = side.read_beside(room).map(|n| (n, offered));
                    if let Some((n @ 1.., _)) = read {
                        behind.commit(n);
                    }
                }
            },
        );
        self.counts
            .runs
            .add(usize::from(run.as_ref().map_or(true, |r| r.tried > 0)));
        let run = run.map_err(|e| self.fail(e))?;
        match read {
            Some((n, offered)) => {
                self.counts.runs_read_beside.add(1);
                let r = self.ring.as_mut().expect("a run is on the ring's workers");
                self.position.inner_read(n);
                let took = self.ahead.take_behind(run.used, &mut r.behind, n, offered);
                took.map_err(|e| self.fail(e))?;
            }
            None => self.ahead.consume(run.used),
        }
        self.next += run.opened as u64;
        self.counts.opens.add(run.tried);
        if run.opened > 0 {
            self.authenticated();
        }
        Ok(run.plain)
    }

    /// Sealed bytes held by the ring, of units not delivered yet.
    pub(super) fn ring_read_ahead(&self) -> usize {
        self.ring
            .as_ref()
            .map_or(0, |r| r.units.iter().map(|u| u.2).sum())
    }
}
