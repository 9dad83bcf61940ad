//! Batch runs: the pieces of a run cut into shares that whichever thread
//! is running claims from a shared counter, the caller's thread included,
//! all done when [`Workers::run`] returns.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::feed::Gate;
use super::pool::{Workers, caught};
use super::wait::{self, Left};
use crate::Error;
use crate::probe::Job;

/// Plaintext bytes one thread takes per batch at least: runs of smaller
/// segments go to a thread several at a time, so that each hand-over
/// carries about this much work (a wake-up costs microseconds; sealing
/// 64 KiB takes tens of them).
pub(crate) const SHARE: usize = 64 * 1024;

/// The most segments in one thread's share (tiny segments: the list of
/// pieces stays small).
pub(super) const SHARE_SEGMENTS: usize = 64;

/// The segments in a batch for `threads` threads and segments of `seg`
/// plaintext bytes: one share per thread, each of at least [`SHARE`]
/// bytes (at least one segment, at most [`SHARE_SEGMENTS`]).
pub(crate) fn batch_segments(threads: usize, seg: usize) -> usize {
    threads.saturating_mul(share_segments(SHARE, seg))
}

/// The segments of `seg` bytes in a share of `bytes` bytes: at least one,
/// at most [`SHARE_SEGMENTS`].
fn share_segments(bytes: usize, seg: usize) -> usize {
    bytes.div_ceil(seg.max(1)).clamp(1, SHARE_SEGMENTS)
}

/// Plaintext bytes a reader's run opens at least, with any thread count:
/// a run pays for waking the pool and for the end of its scope once, and a
/// reader's runs are as large as its read-ahead lets them be (a writer's
/// are as large as the caller's writes), so they are made large enough
/// that those costs are a small part of them.
pub(crate) const OPEN_RUN: usize = 512 * 1024;

/// Plaintext bytes a reader's fed run opened in place takes at most (as
/// much of it as the caller's buffer holds): its sealed bytes go where it
/// opens, so the read-ahead does not grow for it, and a run this long
/// makes its end (one thread's last segment while the others are done) a
/// small part of it.
pub(crate) const FED_RUN: usize = 1024 * 1024;

/// The segments a fed run opened in place takes at most, for `threads`
/// threads and segments of `seg` plaintext bytes: an
/// [`open_batch_segments`] batch, with shares of at least [`FED_RUN`] ÷
/// `threads` bytes each.
pub(crate) fn fed_batch_segments(threads: usize, seg: usize) -> usize {
    let share = SHARE.max(FED_RUN.div_ceil(threads.max(1)));
    threads.saturating_mul(share_segments(share, seg))
}

/// The segments in a reader's run for `threads` threads and segments of
/// `seg` plaintext bytes: a [`batch_segments`] batch, with shares of at
/// least [`OPEN_RUN`] ÷ `threads` bytes each.
pub(crate) fn open_batch_segments(threads: usize, seg: usize) -> usize {
    let share = SHARE.max(OPEN_RUN.div_ceil(threads.max(1)));
    threads.saturating_mul(share_segments(share, seg))
}

/// One segment of a run: what to seal or open, where the result goes, and
/// how it went.
pub(crate) struct Piece<'a> {
    /// The segment's index in the stream (its nonce's counter).
    pub(crate) index: u64,
    /// Plaintext to seal, or sealed bytes to open.
    pub(crate) input: &'a [u8],
    /// Where its sealed bytes or plaintext go.
    pub(crate) output: &'a mut [u8],
    /// The outcome; `Ok` until the job says otherwise.
    pub(crate) result: Result<(), Error>,
}

/// What the threads of one batch run share: its shares, the next one
/// unclaimed, and how the claimed ones went.
pub(super) struct Claims<'s, 'a> {
    /// The shares; each is locked once, by the thread that claimed it
    /// (never contended: the counter hands each index out once), and, in
    /// a fed run, by the caller before that, to give its pieces their
    /// input.
    pub(super) shares: Vec<Mutex<&'s mut [Piece<'a>]>>,
    /// Pieces a share (the last may have fewer).
    pub(super) per: usize,
    /// A fed run: which pieces have their input.
    pub(super) gate: Option<Gate>,
    /// The index of the next unclaimed share.
    next: AtomicUsize,
    /// Pool threads inside their job: started, not yet returned.
    active: AtomicUsize,
    /// A job panicked.
    panicked: AtomicBool,
    /// Pool threads sleep this long once they have claimed a share (tests).
    delay: Option<Duration>,
}

impl<'a> Claims<'_, 'a> {
    /// Claims the next share and runs `job` on its pieces; the number of
    /// its pieces, or `None` when every share is claimed.
    fn take_one(&self, job: &(impl Fn(&mut Piece<'_>) + Sync), on_pool: bool) -> Option<usize> {
        let (i, ready) = self.claim()?;
        if let (true, Some(delay)) = (on_pool, self.delay) {
            std::thread::sleep(delay);
        }
        let mut share = self.shares[i].lock().unwrap_or_else(|e| e.into_inner());
        let ready = ready.min(share.len());
        self.guarded(|| share[..ready].iter_mut().for_each(job));
        Some(ready)
    }

    /// Claims the next share: its index and how many of its pieces are to
    /// be done. In a fed run a share is claimed only once its pieces have
    /// their input (or the feeding ended: then the ones that have it, and
    /// none once a share has none), waiting unclaimed until then: a
    /// thread that is descheduled while it waits holds up no share the
    /// caller could take.
    fn claim(&self) -> Option<(usize, usize)> {
        let Some(gate) = &self.gate else {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            return (i < self.shares.len()).then_some((i, usize::MAX));
        };
        loop {
            let i = self.next.load(Ordering::Acquire);
            if i >= self.shares.len() {
                return None;
            }
            let first = i * self.per;
            let ready = gate.wait(first + self.per).checked_sub(first)?;
            if ready == 0 {
                return None;
            }
            if self
                .next
                .compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some((i, ready));
            }
        }
    }

    /// Claims shares one after the other until none is left; how many it
    /// took.
    fn take_all(&self, job: &(impl Fn(&mut Piece<'_>) + Sync), on_pool: bool) -> usize {
        let mut taken = 0;
        while self.take_one(job, on_pool).is_some() {
            taken += 1;
        }
        taken
    }

    /// Whether a share is left unclaimed.
    fn left(&self) -> bool {
        self.next.load(Ordering::Acquire) < self.shares.len()
    }

    /// Runs `f`; a panic in it is recorded, not unwound.
    fn guarded(&self, f: impl FnOnce()) {
        if catch_unwind(AssertUnwindSafe(f)).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
    }
}

impl Workers {
    /// Runs `job` on every piece, returning once all are done. The pieces
    /// are cut into contiguous shares of about [`SHARE`] bytes (at least
    /// one per thread); the caller's thread and up to `threads - 1` pool
    /// threads claim them from a shared counter as each gets to run. A
    /// pool thread is handed a job only while it is awake (lingering after
    /// the last run, or woken by this one and found running between two of
    /// the caller's shares): one the system has not scheduled gets none,
    /// and the caller, doing every share itself, never waits for it. While
    /// runs on the pool do not pay ([`Gain`](super::gain::Gain)), the
    /// caller does them alone. A job reports its outcome in
    /// [`Piece::result`].
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] when a job panicked (every other job has
    /// still run to its end), or a pool thread's job did, in this run or
    /// before it.
    #[cfg(test)]
    pub(crate) fn run(
        &mut self,
        pieces: &mut [Piece<'_>],
        job: impl Fn(&mut Piece<'_>) + Sync,
    ) -> Result<(), Error> {
        self.run_beside(pieces, job, || ())
    }

    /// [`run`](Self::run), with `beside` done on the caller's thread once
    /// the pool threads awake have their jobs and before the caller takes
    /// a share: work of its own (a read of the next run's input) that the
    /// pool's shares overlap. Its time is left out of the run's timing.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub(crate) fn run_beside(
        &mut self,
        pieces: &mut [Piece<'_>],
        job: impl Fn(&mut Piece<'_>) + Sync,
        beside: impl FnOnce(),
    ) -> Result<(), Error> {
        self.run_with(pieces, job, None, |_, _| beside())
    }

    /// [`run_beside`](Self::run_beside), where `beside` is given the
    /// run's claims (a fed run's feeding hands its pieces their input
    /// through them; `gate` says which have it) and a hand-over to call
    /// as it goes (shares for pool threads found awake, when none was at
    /// the start).
    pub(super) fn run_with<'a>(
        &mut self,
        pieces: &mut [Piece<'a>],
        job: impl Fn(&mut Piece<'_>) + Sync,
        gate: Option<Gate>,
        beside: impl FnOnce(&Claims<'_, 'a>, &mut dyn FnMut()),
    ) -> Result<(), Error> {
        let threads = self.threads;
        let inject = self.inject_panic.armed().is_some();
        let delay = self.pool_delay.armed();
        let total = pieces.len();
        // Shares of about [`SHARE`] bytes (at least one a thread), claimed
        // one at a time: a run longer than a share a thread is balanced by
        // whichever thread is faster taking more, never by waiting for a
        // slow one's long share.
        let size = match &gate {
            // A fed run's pieces get their places as the run goes.
            Some(gate) => gate.unit,
            None => pieces
                .first()
                .map_or(1, |p| p.output.len().max(p.input.len())),
        };
        let per = share_segments(SHARE, size).min(total.div_ceil(threads).max(1));
        let claims = Claims {
            shares: pieces.chunks_mut(per).map(Mutex::new).collect(),
            per,
            gate,
            next: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            delay,
        };
        let (Some(judged), Some(pool)) = (self.begin(), &self.pool) else {
            beside(&claims, &mut || ());
            let t = Instant::now();
            let mut own = 0;
            while let Some(n) = claims.take_one(&job, false) {
                own += n;
            }
            self.gain.alone(own, t.elapsed());
            self.way(total, true);
            if claims.panicked.into_inner() || self.panicked() {
                return Err(Error::WorkerPanicked);
            }
            return Ok(());
        };
        let t = Instant::now();
        let helpers = claims.shares.len().saturating_sub(1).min(threads - 1);
        if self.awake.running() == 0 {
            self.wake();
        }
        let (claims_ref, job, waits) = (&claims, &job, &self.waits);
        let (awake, generation) = (&*self.awake, &*self.generation);
        let (panicked, fault) = (&*self.panicked, self.job_panic);
        let this = &*self;
        let left = Left::new();
        let left_ref = &left;
        let (taken, own, alone, spawned, side, cold, done) = pool.in_place_scope(|scope| {
            // Shares go to a pool thread only while it runs: a job handed
            // to a thread that has not started holds the scope until it
            // has (on a busy machine, a scheduler's time slice), even if
            // the caller took every share meanwhile. So helpers are
            // spawned for the pool threads awake now, or, if none is, the
            // first time the caller finds one awake after a share of its
            // own.
            // A pool thread handed a job stays awake once it has done its
            // part, until the run's end, and lingers on after it: back
            // asleep while the caller finishes its last share, it would be
            // woken only after the next run has looked for it, and that
            // run would start without it.
            let hand_over = || {
                let handed = awake.hand_over(generation, helpers, claims_ref.left(), || {
                    scope.spawn(move |_| {
                        claims_ref.active.fetch_add(1, Ordering::AcqRel);
                        caught(panicked, fault, Job::Share, || {
                            if inject {
                                claims_ref.guarded(|| panic!("injected worker panic"));
                            }
                            if claims_ref.take_all(job, true) == 0 {
                                waits.late.add(1);
                            }
                        });
                        left_ref.now();
                        claims_ref.active.fetch_sub(1, Ordering::AcqRel);
                    });
                });
                this.stay_awake(handed);
                handed
            };
            let mut spawned = hand_over();
            let cold = spawned == 0;
            let side = Instant::now();
            beside(claims_ref, &mut || {
                if spawned == 0 {
                    spawned = hand_over();
                }
            });
            let side = side.elapsed();
            if spawned == 0 {
                spawned = hand_over();
            }
            let t = Instant::now();
            if inject {
                claims_ref.guarded(|| panic!("injected worker panic"));
            }
            let (mut taken, mut own) = (0, 0);
            while let Some(pieces) = claims_ref.take_one(job, false) {
                (taken, own) = (taken + 1, own + pieces);
                if spawned == 0 {
                    spawned = hand_over();
                }
            }
            let done = Instant::now();
            let alone = done - t;
            // Every share is claimed. The scope ends once every pool
            // thread's job has returned, asleep until then: wait awake
            // while a pool thread is inside its job (running a share, or
            // about to return: then the scope's end finds it done and does
            // not sleep), never for one that has not started.
            wait::spin_while(|| claims_ref.active.load(Ordering::Acquire) > 0, waits);
            (taken, own, alone, spawned, side, cold, done)
        });
        self.cold_runs.add(usize::from(cold && helpers > 0));
        self.gain.alone(own, alone);
        // A run of one share is the caller's alone whatever the verdict:
        // it says nothing of what the pool gives. A run the pool was woken
        // for but never joined is judged: it gained nothing, and a stream
        // whose pool threads do not get to run (the machine's cores are
        // taken) stops waking them for a while. One a pool thread joined
        // may have stalled. The run ends when its last thread left it:
        // what the caller did after that (waking from the scope's sleep,
        // or, on a thread of another pool, that pool's jobs) is not the
        // run's.
        if judged && helpers > 0 {
            let end = done + left.after(done);
            let took = end.saturating_duration_since(t).saturating_sub(side);
            self.gain.judge(total, took, spawned > 0);
        }
        // Alone when the caller took every share.
        self.way(total, taken == claims.shares.len());
        self.ran(taken);
        if claims.panicked.into_inner() || self.panicked() {
            return Err(Error::WorkerPanicked);
        }
        Ok(())
    }

    /// A run of `pieces` pieces ended (`alone`: no pool thread took part):
    /// the time since the last run ended is its pieces' whole way through
    /// the stream (the last run's output handed out, this run's input
    /// read, this run), measured as the way alone or judged against it.
    /// A run's own time ([`Gain::judge`](super::gain::Gain::judge)) does
    /// not show what the pool costs on the rest of that way: where the
    /// cores pass each other's data slowly (on a virtual machine, it
    /// depends on where the host runs its CPUs), the caller's reads into a
    /// read-ahead a pool thread read and its copies out of plaintext a pool
    /// thread wrote take several times longer, and runs on the pool are
    /// slower than the caller alone. Judged only in a reader whose way
    /// alone was measured on the one-thread path before its workers were
    /// made ([`way_alone`](Self::way_alone)), and then measured again in
    /// runs the caller does alone; each way cut to four times the way
    /// alone (a pause between the caller's calls is not the pool's cost).
    /// (The time between two runs includes the caller's own, between its
    /// calls, as much with the pool as without it.)
    pub(super) fn way(&mut self, pieces: usize, alone: bool) {
        let now = Instant::now();
        let (gain, last) = &mut self.run_way;
        let Some(last) = last.replace(now) else {
            return;
        };
        if gain.measured() {
            gain.way(pieces, now.saturating_duration_since(last), alone);
        }
    }

    /// A run ended: the pool threads linger for the next one; tests count
    /// the shares the caller took.
    fn ran(&mut self, taken: usize) {
        self.caller_shares.add(taken);
        self.linger();
    }
}
