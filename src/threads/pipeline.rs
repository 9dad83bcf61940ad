//! The writer's pipeline: units taken in order by whichever thread is
//! free, each into one of a few reused slots, delivered in order by the
//! calling thread as soon as they are ready ([`Workers::pipeline`]).

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::line::{Delivered, Line, Slot};
use super::pool::{Workers, caught};
use super::wait::Left;
use crate::Error;
use crate::probe::Job;

impl Workers {
    /// Runs `job(u, slot)` for the units `0..units` on the threads, in
    /// order of their numbers, each into one of `slots` (unit `u` into
    /// slot `u % slots.len()`, which the job fills from its start and
    /// returns the length of), and hands every unit's bytes, in order, to
    /// `deliver` on the calling thread as soon as they are ready: the
    /// caller moves unit `u` out while the pool threads work on the next
    /// ones, and works on one itself only when unit `u` is not ready yet
    /// (while runs on the pool do not pay, [`Gain`](super::gain::Gain),
    /// it works on all of them alone, and until a pool thread is seen
    /// awake to join it, too).
    /// A slot is reused once its unit is delivered (and a late thread,
    /// below, has left it), so unit `u` starts only once unit
    /// `u - slots.len()` has been delivered, a rule callers may rely on
    /// (the writer's last job clears the buffer its first units read).
    /// No hand-over per batch: each thread takes the next unit when it is
    /// done with one.
    ///
    /// A job may run twice, and a unit delivered may still be running:
    /// the caller does the unit it delivers next itself, outside its
    /// slot, when the pool thread that took it is late (on a busy
    /// machine, descheduled), and that thread's outcome is then dropped.
    /// So a job must give the same bytes and the same success whenever it
    /// runs, and one that changes what others read must leave the same
    /// state when run again; a late run of an earlier unit may find that
    /// state changed, and must then fail rather than work on it (the
    /// writer's shares refuse a buffer the tail has replaced). The caller
    /// may still wait for a late thread: for a lock the late job holds
    /// (the tail's, behind a share reading the buffer), when no spare
    /// buffer can be allocated, and at the pipeline's end, which joins
    /// every thread.
    ///
    /// `deliver` returns how many of the bytes it took; 0 stops the run:
    /// no unit is started after that, those started are finished, and
    /// their undelivered bytes come back in [`Piped::pending`]. A job
    /// that fails or panics stops the run too ([`Piped::error`]; a panic
    /// is [`Error::WorkerPanicked`]); nothing after the unit before it is
    /// delivered.
    pub(crate) fn pipeline(
        &mut self,
        units: usize,
        slots: Vec<&mut [u8]>,
        job: impl Fn(usize, &mut [u8]) -> Result<usize, Error> + Sync,
        deliver: impl FnMut(&[u8]) -> usize,
    ) -> Piped {
        let inject = self.inject_panic.armed().is_some();
        let mut line = Line {
            ready: slots.iter().map(|_| AtomicUsize::new(0)).collect(),
            taken: slots.iter().map(|_| AtomicUsize::new(0)).collect(),
            slot_lens: slots.iter().map(|s| s.len()).collect(),
            slots: slots
                .into_iter()
                .map(|bytes| {
                    Mutex::new(Slot {
                        bytes,
                        len: 0,
                        result: Ok(()),
                    })
                })
                .collect(),
            units,
            next: AtomicUsize::new(0),
            drained: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            caller: std::thread::current(),
            workers: Mutex::new(Vec::new()),
            delay: None,
            claim_delay: None,
            waits: self.waits.clone(),
        };
        let threads = self.threads;
        let Some(judged) = self.begin() else {
            let t = Instant::now();
            let delivered = line.deliver_all(&job, deliver, inject, &mut self.pace, || 0);
            if delivered.units == units && delivered.error.is_none() {
                self.gain.alone(units, t.elapsed());
            }
            return self.finish(line, delivered);
        };
        if self.awake.running() == 0 {
            self.wake();
        }
        let (Some(pool), pace) = (&self.pool, &mut self.pace) else {
            unreachable!("started by begin")
        };
        let t = Instant::now();
        let spawn = threads.min(units).saturating_sub(1);
        line.delay = self.pool_delay.armed();
        line.claim_delay = self.claim_delay.armed();
        let (line_ref, job) = (&line, &job);
        let (awake, generation) = (&*self.awake, &*self.generation);
        let (panicked, fault) = (&*self.panicked, self.job_panic);
        let left = Left::new();
        let left_ref = &left;
        let (delivered, done) = pool.in_place_scope(|scope| {
            // As in a batch run, the pool threads join only while they
            // are seen awake: now, or between two of the caller's steps.
            let join = || {
                awake.hand_over(generation, spawn, line_ref.left(), || {
                    scope.spawn(move |_| {
                        caught(panicked, fault, Job::Unit, || line_ref.work(job, inject));
                        left_ref.now();
                    });
                })
            };
            let delivered = line_ref.deliver_all(job, deliver, inject, pace, join);
            (delivered, Instant::now())
        });
        // The caller alone would have done every unit and delivered it.
        if let (Some(work), Some(deliver)) = (pace.work, pace.deliver) {
            self.gain.alone(1, Duration::from_secs_f64(work + deliver));
        }
        // A run of one unit is the caller's alone whatever the verdict: it
        // says nothing of what the pool gives. A pipeline's time includes
        // the inner writer's, which may wait for its peer: it is never
        // taken for a stall. How long after every unit was delivered the
        // last pool thread left is the pool's alone: a thread still in a
        // unit then was late.
        let work = Duration::from_secs_f64(pace.work.unwrap_or(0.0));
        if judged
            && spawn > 0
            && delivered.units == units
            && delivered.error.is_none()
            && !self.gain.waited_at_end(left.after(done), work)
        {
            self.gain.judge(units, t.elapsed(), false);
        }
        self.linger();
        self.finish(line, delivered)
    }

    /// What a pipeline left ([`Line::finish`]), failed with
    /// [`Error::WorkerPanicked`] after the units delivered if a pool
    /// thread's job panicked.
    fn finish(&self, line: Line<'_>, mut delivered: Delivered) -> Piped {
        if self.panicked() {
            delivered.error.get_or_insert(Error::WorkerPanicked);
        }
        line.finish(delivered)
    }
}

/// How a [`Workers::pipeline`] ended.
pub(crate) struct Piped {
    /// Units whose job ran to its end: `0..started` (when a job failed,
    /// those delivered whole before it: the rest are dropped).
    pub(crate) started: usize,
    /// Where the bytes of units sealed but not delivered lie, in order:
    /// slot and range in it (empty unless `deliver` stopped the run).
    /// They stay in the slots; [`gather`] moves them to the front.
    pub(crate) pending: Vec<(usize, Range<usize>)>,
    /// The first failing job's error (in unit order), if any.
    pub(crate) error: Option<Error>,
    /// A panic of `deliver`, to resume once the caller has settled its
    /// state from the rest.
    pub(crate) panic: Option<Box<dyn std::any::Any + Send>>,
}

/// Moves the undelivered bytes of a stopped run ([`Piped::pending`]) to
/// the start of `buf`, in order, in place, and returns their length.
/// `buf` starts with the run's `k` slots of `slot` bytes each (slot `i`
/// at `i · slot`); the pending units are in consecutive slots, wrapping
/// after the last.
pub(crate) fn gather(
    buf: &mut [u8],
    slot: usize,
    k: usize,
    pending: &[(usize, Range<usize>)],
) -> usize {
    let Some((first, _)) = pending.first() else {
        return 0;
    };
    debug_assert!(
        pending
            .iter()
            .enumerate()
            .all(|(i, (s, _))| *s == (first + i) % k),
        "pending units in consecutive slots"
    );
    // Wrapped: put the slots in unit order first.
    let base = if first + pending.len() > k {
        buf[..slot * k].rotate_left(first * slot);
        0
    } else {
        *first
    };
    let mut at = 0;
    for (i, (_, r)) in pending.iter().enumerate() {
        // Every move is towards the front, over bytes already moved.
        let from = (base + i) * slot;
        buf.copy_within(from + r.start..from + r.end, at);
        at += r.len();
    }
    at
}

impl Line<'_> {
    /// What a run left once every thread is out of it (the scope joined
    /// the pool threads, so `next` counts every unit started, and each is
    /// done): the units started, and the sealed bytes of those not
    /// delivered, in order.
    fn finish(self, delivered: Delivered) -> Piped {
        let Delivered {
            units: d,
            offset,
            mut error,
            panic,
            spare,
        } = delivered;
        let k = self.slots.len();
        if let Some((spare, len)) = spare {
            // The caller stopped in a unit it did outside its slot: the
            // slot takes its bytes (every thread is out of it now).
            let mut slot = super::lock(&self.slots[d % k]);
            slot.bytes[..len].copy_from_slice(&spare[..len]);
            (slot.len, slot.result) = (len, Ok(()));
            self.ready[d % k].store(d + 1, Ordering::Release);
        }
        let started = self.next.load(Ordering::Acquire).min(self.units);
        let mut pending = Vec::new();
        if error.is_some() {
            return Piped {
                started: d,
                pending,
                error,
                panic,
            };
        }
        for u in d..started {
            debug_assert_eq!(self.ready[u % k].load(Ordering::Acquire), u + 1);
            let slot = super::lock(&self.slots[u % k]);
            if let Err(e) = &slot.result {
                // Sealed after the stop, then failed: the run ends with
                // what was delivered (the stream fails).
                error = Some(e.clone());
                return Piped {
                    started: d,
                    pending: Vec::new(),
                    error,
                    panic,
                };
            }
            let from = if u == d { offset } else { 0 };
            pending.push((u % k, from..slot.len));
        }
        Piped {
            started,
            pending,
            error,
            panic,
        }
    }
}
