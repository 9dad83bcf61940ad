//! What the threads of one pipeline share, and what each of them does:
//! the pool threads take units ([`Line::work`]), the calling thread
//! delivers them in order and takes some itself ([`Line::deliver_all`]).
//!
//! The rules it owns:
//! - **A unit is claimed with its slot**: a thread claims the next unit
//!   only while it holds that unit's slot, so a slot is never written by
//!   two units at once.
//! - **The caller never waits long for a thread that is not running**:
//!   the unit it must deliver next, if a pool thread holds it for longer
//!   than the caller takes to do a unit twice over (that thread may have
//!   lost its core for a scheduler's time slice), it does itself, into a
//!   spare buffer of its own, and delivers that; the late thread's
//!   outcome is dropped. The later units of that slot (`k` units on,
//!   and `k` after that) go to the spare too while that thread is still
//!   in the slot. Jobs give the same bytes however often they run, so
//!   which run is delivered does not matter. Without a spare (its
//!   allocation failed) the caller waits, as it did before.
//! - **A late thread changes nothing**: its failure does not stop the
//!   run, and no unit later claims its slot before it leaves. It still
//!   costs the run's end: the scope joins every thread, so a pipeline
//!   returns once the late thread has left its dropped unit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::pace::Pace;
use super::wait::Wait;
use crate::Error;

/// One output slot of a pipeline: the unit sealed into it last.
pub(super) struct Slot<'a> {
    pub(super) bytes: &'a mut [u8],
    pub(super) len: usize,
    pub(super) result: Result<(), Error>,
}

/// What the threads of one pipeline share.
pub(super) struct Line<'a> {
    pub(super) slots: Vec<Mutex<Slot<'a>>>,
    /// `u + 1` once unit `u` is done in slot `u % slots.len()` (stored
    /// under the slot's lock, so in the order the slot's units ran).
    pub(super) ready: Vec<AtomicUsize>,
    /// `u + 1` once the caller did unit `u`, of slot `u % slots.len()`,
    /// outside the slot: taken over from the pool thread that claimed it,
    /// or claimed while a late thread held the slot (it only grows).
    pub(super) taken: Vec<AtomicUsize>,
    pub(super) units: usize,
    /// The next unit to start.
    pub(super) next: AtomicUsize,
    /// Units delivered: their slots may take later units.
    pub(super) drained: AtomicUsize,
    /// No unit is started any more.
    pub(super) stop: AtomicBool,
    /// The calling thread, woken when a unit is ready.
    pub(super) caller: Thread,
    /// The pool threads in the run, woken when a slot is free.
    pub(super) workers: Mutex<Vec<Thread>>,
    /// Pool threads sleep this long once they have claimed a unit (tests).
    pub(super) delay: Option<Duration>,
    /// Pool threads sleep this long holding a unit's slot before they
    /// claim the unit (tests).
    pub(super) claim_delay: Option<Duration>,
    /// How the threads waited (tests).
    pub(super) waits: super::wait::Waits,
    /// Bytes of each slot: a unit done outside its slot is given as many.
    pub(super) slot_lens: Vec<usize>,
}

/// Stops a pipeline and wakes its pool threads when dropped: the caller
/// leaving [`Line::deliver_all`], by a panic in the inner writer too (the
/// scope waits for the pool threads before the panic goes on, and they
/// would wait for slots the caller no longer frees).
struct StopOnDrop<'l, 'a>(&'l Line<'a>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Release);
        self.0.wake_workers();
    }
}

/// How [`Line::hand_over`] left a unit.
enum Handed {
    /// Delivered whole.
    Whole,
    /// `deliver` took nothing: the run stops.
    Stopped,
    /// The unit's job failed.
    Failed(Error),
    /// `deliver` panicked.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// What [`Line::claim`] found.
enum Claim<'l, 'a> {
    /// Unit to run, with its slot.
    Unit(usize, MutexGuard<'l, Slot<'a>>),
    /// The caller's next unit to deliver, whose slot a late thread still
    /// holds: to run outside the slot.
    Spare,
    /// The caller's next unit to deliver, whose slot another thread holds
    /// (a moment, while it claims the unit too, unless it lost its core
    /// there).
    Held,
    /// The next unit's slot still holds an undelivered unit, or a late
    /// thread is still in it.
    Busy,
    /// Every unit is started, or the run stopped.
    Done,
}

/// Runs `job(u, out)`, catching a panic (as [`Error::WorkerPanicked`]).
fn run_job<F>(job: &F, u: usize, out: &mut [u8], inject: bool) -> Result<usize, Error>
where
    F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
{
    catch_unwind(AssertUnwindSafe(|| {
        assert!(!inject, "injected worker panic");
        job(u, out)
    }))
    .unwrap_or(Err(Error::WorkerPanicked))
}

impl<'a> Line<'a> {
    /// Takes the next unit if its slot is free, with the slot. `front` is
    /// the unit the caller delivers next (`None` for a pool thread): if
    /// that is the next unit and its slot is held by a late thread (or by
    /// any thread, if `force`: the caller waited long enough), it is
    /// claimed without it.
    fn claim(&self, front: Option<usize>, force: bool) -> Claim<'_, 'a> {
        let k = self.slots.len();
        let mut i = self.next.load(Ordering::Acquire);
        loop {
            if i >= self.units || self.stop.load(Ordering::Acquire) {
                return Claim::Done;
            }
            if i >= self.drained.load(Ordering::Acquire) + k {
                return Claim::Busy;
            }
            let slot = match self.slots[i % k].try_lock() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) if front == Some(i) => {
                    if !(force || self.late_in(i)) {
                        return Claim::Held;
                    }
                    None
                }
                Err(TryLockError::WouldBlock) => return Claim::Busy,
            };
            if let (None, Some(delay)) = (front, self.claim_delay) {
                std::thread::sleep(delay);
            }
            match self
                .next
                .compare_exchange_weak(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return match slot {
                        Some(guard) => Claim::Unit(i, guard),
                        None => Claim::Spare,
                    };
                }
                Err(now) => i = now,
            }
        }
    }

    /// Whether the slot of unit `i` may be held by a late thread: the
    /// slot's previous unit was done outside it (else the slot is only
    /// held for a moment, by a thread claiming `i` too).
    fn late_in(&self, i: usize) -> bool {
        let k = self.slots.len();
        i >= k && self.taken[i % k].load(Ordering::SeqCst) > i - k
    }

    /// Runs unit `u` into its slot (held since its claim) and marks it
    /// ready; a failure or a panic (caught here, so the slot's lock is not
    /// poisoned) stops the run, unless the caller took the unit over.
    /// Returns the bytes it put in the slot (0 when it failed).
    fn run<F>(&self, u: usize, mut guard: MutexGuard<'_, Slot<'a>>, job: &F, inject: bool) -> usize
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let slot = &mut *guard;
        slot.result = run_job(job, u, slot.bytes, inject).map(|len| slot.len = len);
        let failed = slot.result.is_err();
        let len = if failed { 0 } else { slot.len };
        // A unit taken over is the caller's: this run's failure (after
        // the run went on, its input may have changed) stops nothing.
        let late = self.taken[u % k].load(Ordering::SeqCst) > u;
        if failed && !late {
            self.stop.store(true, Ordering::Release);
        }
        self.ready[u % k].store(u + 1, Ordering::Release);
        drop(guard);
        self.caller.unpark();
        // A late thread leaving frees its slot for the pool threads that
        // wait for it.
        if late {
            self.wake_workers();
        }
        len
    }

    /// Wakes the pool threads waiting for a slot or for the end.
    fn wake_workers(&self) {
        let workers = super::lock(&self.workers);
        workers.iter().for_each(Thread::unpark);
    }

    /// A pool thread: takes units until none is left; while the next
    /// unit's slot is busy (the caller has not moved it out yet, or a late
    /// thread is still in it), waits,
    /// asleep after a short while, for the caller to wake it. One that
    /// finds every unit started is counted late (tests).
    pub(super) fn work<F>(&self, job: &F, inject: bool)
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        super::lock(&self.workers).push(std::thread::current());
        let (mut waited, mut took) = (Wait::new(&self.waits), false);
        loop {
            match self.claim(None, false) {
                Claim::Unit(u, slot) => {
                    took = true;
                    if let Some(delay) = self.delay {
                        std::thread::sleep(delay);
                    }
                    self.run(u, slot, job, inject);
                    waited = Wait::new(&self.waits);
                }
                Claim::Spare | Claim::Held => unreachable!("only the caller claims a front"),
                Claim::Done => {
                    if !took {
                        self.waits.late.add(1);
                    }
                    return;
                }
                Claim::Busy => {
                    waited.pause();
                }
            }
        }
    }

    /// Whether the run stopped with unit `d` not started.
    fn stopped_before(&self, d: usize) -> bool {
        self.stop.load(Ordering::Acquire) && self.next.load(Ordering::Acquire) <= d
    }

    /// Whether a unit is left to start.
    pub(super) fn left(&self) -> bool {
        self.next.load(Ordering::Acquire) < self.units && !self.stop.load(Ordering::Acquire)
    }

    /// The calling thread: delivers the units in order, working on one
    /// itself while the next to deliver is not ready. Until pool threads
    /// join (`join`, asked between steps, returns how many it started), it
    /// works on every unit itself. The next unit to deliver, if a pool
    /// thread holds it too long, it does itself ([`Taker`]).
    pub(super) fn deliver_all<F>(
        &self,
        job: &F,
        mut deliver: impl FnMut(&[u8]) -> usize,
        inject: bool,
        pace: &mut Pace,
        mut join: impl FnMut() -> usize,
    ) -> Delivered
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let (mut d, mut offset, mut waited) = (0, 0, Wait::new(&self.waits));
        let (mut error, mut panic) = (None, None);
        let mut taker = Taker::default();
        // However this ends (a panic of `deliver` included), the pool
        // threads stop waiting for slots and leave.
        let _stop = StopOnDrop(self);
        let (mut threads, mut taken) = (1, 0);
        let mut quota = self.units;
        while d < self.units {
            if threads == 1 {
                let n = join();
                if n > 0 {
                    threads += n;
                    quota = pace.quota(self.units, threads);
                }
            }
            let handed = if taker.holds.is_some() {
                taker.hand_over(&mut offset, &mut deliver, pace)
            } else if self.ready[d % k].load(Ordering::Acquire) == d + 1 {
                self.hand_over(d, &mut offset, &mut deliver, pace)
            } else {
                let force = taker.overdue(pace);
                match self.help(d, taken >= quota, threads, job, inject, pace, force) {
                    Helped::Ran => {
                        taken += 1;
                        waited = Wait::new(&self.waits);
                        taker.stop_waiting();
                    }
                    Helped::Spare if taker.ready(self) => {
                        self.waits.spared.add(1);
                        taker.run(self, d, job, inject, pace);
                    }
                    // No spare: the unit waits for its slot.
                    Helped::Spare => {
                        let slot = super::lock(&self.slots[d % k]);
                        self.run(d, slot, job, inject);
                    }
                    // Its slot held by a thread that may have lost its
                    // core while claiming it: waited for as for a unit
                    // being worked on, then claimed outside the slot.
                    Helped::Held => {
                        taker.wait_for_claim();
                        waited.pause_within(taker.left(pace));
                    }
                    Helped::Nothing if taker.late(self, d, pace) => {
                        self.waits.taken.add(1);
                        taker.run(self, d, job, inject, pace);
                    }
                    // Stopped before the unit to deliver started: by a
                    // job that failed on a pool thread though the same
                    // job had not failed here (jobs that break their
                    // rule). The run ends rather than wait for nothing.
                    Helped::Nothing if self.stopped_before(d) => {
                        error = Some(Error::WorkerPanicked);
                        break;
                    }
                    Helped::Nothing => waited.pause_within(taker.left(pace)),
                }
                continue;
            };
            match handed {
                Handed::Whole => {}
                Handed::Stopped => break,
                Handed::Failed(e) => {
                    error = Some(e);
                    break;
                }
                Handed::Panicked(p) => {
                    panic = Some(p);
                    break;
                }
            }
            (d, offset, waited) = (d + 1, 0, Wait::new(&self.waits));
            taker.holds = None;
            taker.stop_waiting();
            self.drained.store(d, Ordering::Release);
            self.wake_workers();
        }
        // `_stop` ends the run for the pool threads as this returns.
        let spare = match taker.holds {
            Some(Ok(len)) => Some((taker.spare, len)),
            _ => None,
        };
        Delivered {
            units: d,
            offset,
            error,
            panic,
            spare,
        }
    }

    /// Moves unit `d`, ready in its slot, out through `deliver` from
    /// `offset` on (which it advances): whole, or stopped (by `deliver`
    /// taking nothing or panicking), or the unit's job failed.
    fn hand_over(
        &self,
        d: usize,
        offset: &mut usize,
        deliver: &mut impl FnMut(&[u8]) -> usize,
        pace: &mut Pace,
    ) -> Handed {
        let k = self.slots.len();
        let slot = super::lock(&self.slots[d % k]);
        if let Err(e) = &slot.result {
            return Handed::Failed(e.clone());
        }
        hand_over(&slot.bytes[..slot.len], offset, deliver, pace)
    }

    /// The calling thread, while unit `d` is being worked on by another
    /// thread (or nobody took it yet): takes a unit only while the others
    /// keep slots to go on with (`k − threads` units ahead at most: a unit
    /// worked on here holds up the delivery of all the others), and only
    /// within its share (`spent` once it has taken it): it also delivers
    /// every unit. Unit `d` itself, when nobody took it, it always takes
    /// (outside its slot if a late thread holds that, or any thread and
    /// `force`).
    #[allow(clippy::too_many_arguments)]
    fn help<F>(
        &self,
        d: usize,
        spent: bool,
        threads: usize,
        job: &F,
        inject: bool,
        pace: &mut Pace,
        force: bool,
    ) -> Helped
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let ahead = self.next.load(Ordering::Acquire) - d;
        if ahead > 0 && (ahead > k.saturating_sub(threads) || spent) {
            return Helped::Nothing;
        }
        match self.claim(Some(d), force) {
            Claim::Unit(u, slot) => {
                let t = Instant::now();
                if self.run(u, slot, job, inject) > 0 {
                    Pace::note(&mut pace.work, t.elapsed());
                }
                Helped::Ran
            }
            Claim::Spare => Helped::Spare,
            Claim::Held => Helped::Held,
            // Unit `d` is being worked on by another thread.
            Claim::Busy | Claim::Done => Helped::Nothing,
        }
    }
}

/// Moves `bytes` out through `deliver` from `offset` on (which it
/// advances): whole, or stopped by `deliver` taking nothing or panicking.
fn hand_over(
    bytes: &[u8],
    offset: &mut usize,
    deliver: &mut impl FnMut(&[u8]) -> usize,
    pace: &mut Pace,
) -> Handed {
    let t = Instant::now();
    while *offset < bytes.len() {
        // A panic of the inner writer takes nothing: the run stops,
        // the stream's state is settled (what was sealed is counted
        // and kept as output, as one thread keeps it), then the panic
        // goes on.
        match catch_unwind(AssertUnwindSafe(|| deliver(&bytes[*offset..]))) {
            Ok(0) => return Handed::Stopped,
            Ok(n) => *offset += n.min(bytes.len() - *offset),
            Err(p) => return Handed::Panicked(p),
        }
    }
    // A unit with no output (a writer's copy into its buffer) says
    // nothing of what delivering one costs.
    if !bytes.is_empty() {
        Pace::note(&mut pace.deliver, t.elapsed());
    }
    Handed::Whole
}

/// What [`Line::help`] did.
enum Helped {
    /// Ran a unit into its slot.
    Ran,
    /// Claimed the next unit to deliver, whose slot a late thread holds.
    Spare,
    /// The next unit to deliver is not claimed, and its slot is held.
    Held,
    /// Nothing to take.
    Nothing,
}

/// How long the caller waits for a pool thread to finish the unit it
/// delivers next before it does that unit itself, at least and at most
/// (twice what a unit takes the caller, within these).
const TAKE_AFTER: (Duration, Duration) = (Duration::from_micros(20), Duration::from_millis(2));

/// The caller's units done outside their slots: the next one to deliver,
/// taken over from a pool thread that held it too long, or claimed while
/// a late thread held its slot.
#[derive(Default)]
struct Taker {
    /// Where those units are done (allocated at the first).
    spare: Vec<u8>,
    /// The outcome of the next unit to deliver, done here.
    holds: Option<Result<usize, Error>>,
    /// Since when the caller waits for the next unit to deliver, which a
    /// pool thread holds.
    since: Option<Instant>,
    /// No spare could be allocated: the caller waits, as it did before
    /// it took units over.
    no_spare: bool,
    /// The wait so far was for a thread holding the unit's slot while it
    /// claimed it: once that thread has the unit, its work is timed anew.
    held: bool,
}

impl Taker {
    /// The caller has stopped waiting for the next unit to deliver (it
    /// delivered one, or did a unit itself).
    fn stop_waiting(&mut self) {
        (self.since, self.held) = (None, false);
    }

    /// The caller waits for the next unit to deliver, whose slot a thread
    /// holds while it claims it.
    fn wait_for_claim(&mut self) {
        self.since.get_or_insert_with(Instant::now);
        self.held = true;
    }

    /// Whether unit `d`, held by a pool thread and not ready, has been
    /// waited for long enough to be taken over (and a spare could be had).
    fn late(&mut self, line: &Line<'_>, d: usize, pace: &Pace) -> bool {
        if line.next.load(Ordering::Acquire) <= d {
            return false;
        }
        if std::mem::take(&mut self.held) {
            self.since = None;
        }
        self.since.get_or_insert_with(Instant::now);
        self.left(pace) == Some(Duration::ZERO) && self.ready(line)
    }

    /// Whether the caller has waited for the next unit long enough to
    /// take it (and may have a spare).
    fn overdue(&self, pace: &Pace) -> bool {
        self.left(pace) == Some(Duration::ZERO)
    }

    /// How long the caller has left to wait for the next unit before it
    /// takes it over (`None` while it is not waiting for a pool thread,
    /// or has no spare to take it into).
    fn left(&self, pace: &Pace) -> Option<Duration> {
        if self.no_spare {
            return None;
        }
        let own = pace.work.map_or(TAKE_AFTER.1, Duration::from_secs_f64);
        let limit = (own * 2).clamp(TAKE_AFTER.0, TAKE_AFTER.1);
        Some(limit.saturating_sub(self.since?.elapsed()))
    }

    /// Whether the spare buffer is there, allocated now if need be.
    fn ready(&mut self, line: &Line<'_>) -> bool {
        let len = line.slot_lens.iter().copied().max().unwrap_or(0);
        let ready = self.spare.len() >= len
            || self.spare.try_reserve_exact(len).is_ok() && {
                self.spare.resize(len, 0);
                true
            };
        self.no_spare = !ready;
        ready
    }

    /// Runs unit `d` into the spare: the next one to deliver, claimed
    /// outside its slot or taken over (marked so, first, for the late
    /// thread).
    fn run<F>(&mut self, line: &Line<'_>, d: usize, job: &F, inject: bool, pace: &mut Pace)
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = line.slots.len();
        line.taken[d % k].fetch_max(d + 1, Ordering::SeqCst);
        let t = Instant::now();
        let r = run_job(job, d, &mut self.spare[..line.slot_lens[d % k]], inject);
        match r {
            Ok(0) => {}
            Ok(_) => Pace::note(&mut pace.work, t.elapsed()),
            Err(_) => line.stop.store(true, Ordering::Release),
        }
        self.holds = Some(r);
    }

    /// Moves the unit done here out, as [`Line::hand_over`] does.
    fn hand_over(
        &mut self,
        offset: &mut usize,
        deliver: &mut impl FnMut(&[u8]) -> usize,
        pace: &mut Pace,
    ) -> Handed {
        match &self.holds {
            Some(Ok(len)) => hand_over(&self.spare[..*len], offset, deliver, pace),
            Some(Err(e)) => Handed::Failed(e.clone()),
            None => unreachable!("asked only while it holds a unit"),
        }
    }
}

/// Where the calling thread left a run: units delivered whole, bytes of
/// the next one delivered, the first failure, a panic of `deliver`, and
/// the next unit's bytes when they are in the caller's spare buffer, not
/// in its slot.
pub(super) struct Delivered {
    pub(super) units: usize,
    pub(super) offset: usize,
    pub(super) error: Option<Error>,
    pub(super) panic: Option<Box<dyn std::any::Any + Send>>,
    pub(super) spare: Option<(Vec<u8>, usize)>,
}
