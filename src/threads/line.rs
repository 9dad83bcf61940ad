//! What the threads of one pipeline share, and what each of them does:
//! the pool threads take units ([`Line::work`]), the calling thread
//! delivers them in order and takes some itself ([`Line::deliver_all`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// `u + 1` once unit `u` is done in slot `u % slots.len()`.
    pub(super) ready: Vec<AtomicUsize>,
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
    /// How the threads waited (tests).
    pub(super) waits: super::wait::Waits,
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
enum Claim {
    /// Unit to run.
    Unit(usize),
    /// The next unit's slot still holds an undelivered unit.
    Busy,
    /// Every unit is started, or the run stopped.
    Done,
}

impl Line<'_> {
    /// Takes the next unit if its slot is free.
    fn claim(&self) -> Claim {
        let k = self.slots.len();
        let mut i = self.next.load(Ordering::Acquire);
        loop {
            if i >= self.units || self.stop.load(Ordering::Acquire) {
                return Claim::Done;
            }
            if i >= self.drained.load(Ordering::Acquire) + k {
                return Claim::Busy;
            }
            match self
                .next
                .compare_exchange_weak(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Claim::Unit(i),
                Err(now) => i = now,
            }
        }
    }

    /// Runs unit `u` into its slot and marks it ready; a failure or a
    /// panic (caught here, so the slot's lock is not poisoned) stops the
    /// run. Returns the bytes it put in the slot (0 when it failed).
    fn run<F>(&self, u: usize, job: &F, inject: bool) -> usize
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let mut guard = super::lock(&self.slots[u % k]);
        let slot = &mut *guard;
        let r = catch_unwind(AssertUnwindSafe(|| {
            assert!(!inject, "injected worker panic");
            job(u, slot.bytes)
        }));
        slot.result = match r {
            Ok(Ok(len)) => {
                slot.len = len;
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::WorkerPanicked),
        };
        let failed = slot.result.is_err();
        let len = if failed { 0 } else { slot.len };
        drop(guard);
        if failed {
            self.stop.store(true, Ordering::Release);
        }
        self.ready[u % k].store(u + 1, Ordering::Release);
        self.caller.unpark();
        len
    }

    /// Wakes the pool threads waiting for a slot or for the end.
    fn wake_workers(&self) {
        let workers = super::lock(&self.workers);
        workers.iter().for_each(Thread::unpark);
    }

    /// A pool thread: takes units until none is left; while the next
    /// unit's slot is busy (the caller has not moved it out yet), waits,
    /// asleep after a short while, for the caller to wake it. One that
    /// finds every unit started is counted late (tests).
    pub(super) fn work<F>(&self, job: &F, inject: bool)
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        super::lock(&self.workers).push(std::thread::current());
        let (mut waited, mut took) = (Wait::new(&self.waits), false);
        loop {
            match self.claim() {
                Claim::Unit(u) => {
                    took = true;
                    if let Some(delay) = self.delay {
                        std::thread::sleep(delay);
                    }
                    self.run(u, job, inject);
                    waited = Wait::new(&self.waits);
                }
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

    /// Whether a unit is left to start.
    pub(super) fn left(&self) -> bool {
        self.next.load(Ordering::Acquire) < self.units && !self.stop.load(Ordering::Acquire)
    }

    /// The calling thread: delivers the units in order, working on one
    /// itself while the next to deliver is not ready. Until pool threads
    /// join (`join`, asked between steps, returns how many it started), it
    /// works on every unit itself.
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
            if self.ready[d % k].load(Ordering::Acquire) == d + 1 {
                match self.hand_over(d, &mut offset, &mut deliver, pace) {
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
                self.drained.store(d, Ordering::Release);
                self.wake_workers();
                continue;
            }
            if self.help(d, taken >= quota, threads, job, inject, pace) {
                taken += 1;
                waited = Wait::new(&self.waits);
            } else {
                waited.pause();
            }
        }
        // `_stop` ends the run for the pool threads as this returns.
        Delivered {
            units: d,
            offset,
            error,
            panic,
        }
    }

    /// Moves unit `d`, ready, out through `deliver` from `offset` on (which
    /// it advances): whole, or stopped (by `deliver` taking nothing or
    /// panicking), or the unit's job failed.
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
        let bytes = &slot.bytes[..slot.len];
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

    /// The calling thread, while unit `d` is being worked on by another
    /// thread (or nobody took it yet): takes a unit only while the others
    /// keep slots to go on with (`k − threads` units ahead at most: a unit
    /// worked on here holds up the delivery of all the others), and only
    /// within its share (`spent` once it has taken it): it also delivers
    /// every unit. Returns whether it ran one.
    fn help<F>(
        &self,
        d: usize,
        spent: bool,
        threads: usize,
        job: &F,
        inject: bool,
        pace: &mut Pace,
    ) -> bool
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let ahead = self.next.load(Ordering::Acquire) - d;
        if ahead > 0 && (ahead > k.saturating_sub(threads) || spent) {
            return false;
        }
        match self.claim() {
            Claim::Unit(u) => {
                let t = Instant::now();
                if self.run(u, job, inject) > 0 {
                    Pace::note(&mut pace.work, t.elapsed());
                }
                true
            }
            // Unit `d` is being worked on by another thread.
            Claim::Busy | Claim::Done => false,
        }
    }
}

/// Where the calling thread left a run: units delivered whole, bytes of
/// the next one delivered, the first failure, a panic of `deliver`.
pub(super) struct Delivered {
    pub(super) units: usize,
    pub(super) offset: usize,
    pub(super) error: Option<Error>,
    pub(super) panic: Option<Box<dyn std::any::Any + Send>>,
}
