//! A stream's threads on the process's one pool: the pool starts with
//! the first unit any stream posts (a process whose streams stay small
//! spawns nothing) and is shared by every stream after, one thread per
//! CPU beside the caller's, so a process's threads do not grow with its
//! streams. A stream posts jobs, or runs a batch on it that borrows the
//! caller's buffers; it owns no thread.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::probe::{self, Fault};

/// How long a pool thread stays awake after a run, for the next: waking
/// one takes tens of microseconds here, as much as a share of a fast
/// cipher's run, and the next run (the caller's next read) is often that
/// close.
const LINGER: Duration = Duration::from_micros(100);

/// The runs the caller does alone after a run on the pool lost, at
/// first and at most (a loss costs up to a scheduler's time slice, and
/// a machine whose cores are taken stays so for a while).
const ALONE: (u32, u32) = (16, 256);

/// The threads of one stream: the caller plus the process's pool, which
/// gets a ring's units (about `2 * threads` at once) or `threads - 1`
/// helpers of a run.
pub(crate) struct Workers {
    threads: usize,
    /// The process's pool, once the stream used it.
    pool: Option<Arc<rayon_core::ThreadPool>>,
    /// Pool threads sleep this long once they have claimed a unit (tests:
    /// a thread descheduled in the middle of its unit).
    pub(crate) pool_delay: Fault<Duration>,
    /// Make every unit's work panic (tests of the panic path).
    pub(crate) inject_panic: Fault,
    /// Make posted jobs panic as they start, outside the unit's work
    /// (tests that no job's panic aborts the process).
    job_panic: Fault,
    /// Runs left for the caller alone, and how many the last loss gave.
    alone: (u32, u32),
    /// Runs on the pool that lost against the caller alone (tests).
    pub(crate) lost_runs: usize,
    /// Bumped when a run starts: the pool threads kept awake after the
    /// last one stop waiting and take its shares at once.
    runs: Arc<AtomicUsize>,
}

impl Workers {
    /// Workers for `threads` threads (2 or more; the caller is one of them).
    /// Spawns nothing yet.
    pub(crate) fn new(threads: usize) -> Workers {
        debug_assert!(threads > 1, "one thread needs no workers");
        Workers {
            threads,
            pool: None,
            pool_delay: probe::pool_stall(),
            inject_panic: probe::worker_panic(),
            job_panic: probe::job_panic(),
            alone: (0, 0),
            lost_runs: 0,
            runs: Arc::default(),
        }
    }

    /// The thread count, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// The process's pool, started by the first stream that needs it and
    /// shared by every stream after: one thread per CPU beside the
    /// caller's, whatever the streams alive. `None` on a machine of one
    /// CPU, when the system refuses threads (the caller then does all the
    /// work itself: the bytes are the same), and on a thread of another
    /// `rayon` pool (waiting for work there could mean running that
    /// pool's jobs).
    fn pool(&mut self) -> Option<&rayon_core::ThreadPool> {
        static POOL: OnceLock<Option<Arc<rayon_core::ThreadPool>>> = OnceLock::new();
        if super::cpus() < 2 || rayon_core::current_thread_index().is_some() {
            return None;
        }
        let build = |threads| {
            let b = rayon_core::ThreadPoolBuilder::new().num_threads(threads);
            b.thread_name(|i| format!("cipherio-{i}"))
                .build()
                .ok()
                .map(Arc::new)
        };
        if self.pool.is_none() {
            // The unit tests count what one stream's pool threads do: each
            // stream has a pool of its own there, not one that the tests
            // running beside it keep busy.
            self.pool = if cfg!(test) {
                build(self.threads.min(super::cpus()) - 1)
            } else {
                POOL.get_or_init(|| build(super::cpus() - 1)).clone()
            };
        }
        self.pool.as_deref()
    }

    /// Keeps `helpers` pool threads awake for [`LINGER`] after a run, or
    /// until the next run starts (a short spin, yielding, then they go
    /// back to the pool).
    fn linger(&mut self, helpers: usize) {
        for _ in 0..helpers {
            let (runs, seen) = (Arc::clone(&self.runs), self.runs.load(Ordering::Acquire));
            self.post(move || {
                let start = Instant::now();
                while runs.load(Ordering::Acquire) == seen && start.elapsed() < LINGER {
                    std::thread::yield_now();
                }
            });
        }
    }

    /// Posts `job` to the process's pool, to run on a pool thread on its
    /// own time (not scoped to the caller's call); nothing runs without a
    /// pool (see [`pool`](Self::pool)). A panic in `job` is caught where
    /// it happens, never unwound into the pool (where it would abort the
    /// process).
    pub(crate) fn post(&mut self, job: impl FnOnce() + Send + 'static) {
        let fault = self.job_panic;
        if let Some(pool) = self.pool() {
            pool.spawn(move || {
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    assert!(fault.armed().is_none(), "injected panic in a pool job");
                    job();
                }));
            });
        }
    }

    /// Runs `work` on every piece, in shares of `per_share` pieces claimed
    /// by whichever thread is free, the caller's included (it claims until
    /// none is left, then waits for the shares the pool threads claimed):
    /// for work that borrows the caller's buffers. Whether no `work`
    /// panicked (a panic is caught where it happens). Shares of a ring's
    /// unit: a thread that starts late or ends last holds the others up
    /// by one unit's work at most.
    ///
    /// `beside` is the caller's first: what it does while the pool
    /// threads take the first shares (a read of the next run's input),
    /// before it claims shares too.
    ///
    /// A run on the pool that took longer than the caller's own shares
    /// say it would have taken alone (on a busy machine a pool thread may
    /// wait milliseconds for a core, and the caller for it) is a loss:
    /// the next runs are the caller's alone, as many as after the last
    /// loss and twice as many (see [`ALONE`]), then the pool is tried
    /// again.
    pub(crate) fn run<P: Send>(
        &mut self,
        pieces: &mut [P],
        per_share: usize,
        work: impl Fn(&mut P) + Sync,
        beside: impl FnOnce(),
    ) -> bool {
        let per = per_share.max(1);
        let helpers = (self.threads - 1).min(pieces.len().div_ceil(per).saturating_sub(1));
        let shares: Vec<Mutex<&mut [P]>> = pieces.chunks_mut(per).map(Mutex::new).collect();
        let (next, panicked) = (AtomicUsize::new(0), AtomicBool::new(false));
        // Helpers spawned and not yet returned: the caller waits for them
        // before the scope ends, spinning first (the scope's own wait
        // sleeps, and waking from it costs as much as a share).
        let out = AtomicUsize::new(helpers);
        let (delay, inject) = (self.pool_delay.armed(), self.inject_panic.armed().is_some());
        let claim = |on_pool: bool| {
            let mut own = 0usize;
            while let Some(share) = shares.get(next.fetch_add(1, Ordering::AcqRel))
                && !panicked.load(Ordering::Acquire)
            {
                if let (true, Some(d)) = (on_pool, delay) {
                    std::thread::sleep(d);
                }
                let mut share = super::lock(share);
                let r = catch_unwind(AssertUnwindSafe(|| {
                    assert!(!inject, "injected panic in a run");
                    share.iter_mut().for_each(&work);
                }));
                if r.is_err() {
                    panicked.store(true, Ordering::Release);
                }
                own += 1;
            }
            own
        };
        let alone = self.alone.0 > 0;
        self.alone.0 = self.alone.0.saturating_sub(1);
        // Pool threads kept awake after the last run take this one's
        // shares now.
        self.runs.fetch_add(1, Ordering::AcqRel);
        match self.pool().filter(|_| helpers > 0 && !alone) {
            Some(pool) => {
                let start = Instant::now();
                let (mut own, mut own_time, mut beside_time) = (0, Duration::ZERO, Duration::ZERO);
                pool.in_place_scope(|s| {
                    for _ in 0..helpers {
                        s.spawn(|_| {
                            claim(true);
                            out.fetch_sub(1, Ordering::AcqRel);
                        });
                    }
                    beside();
                    beside_time = start.elapsed();
                    own = claim(false);
                    own_time = start.elapsed() - beside_time;
                    for _ in 0..super::SPIN {
                        if out.load(Ordering::Acquire) == 0 {
                            break;
                        }
                        std::thread::yield_now();
                    }
                });
                // The caller's time for `beside` and all the shares, had
                // it done them alone (none: the pool did every share while
                // the caller was busy beside, a gain).
                let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).max(1);
                let by_caller = beside_time + own_time * count(shares.len()) / count(own);
                if own > 0 && start.elapsed() > by_caller {
                    self.alone.1 = (self.alone.1 * 2).clamp(ALONE.0, ALONE.1);
                    self.alone.0 = self.alone.1;
                    self.lost_runs += 1;
                } else {
                    self.alone.1 /= 2;
                }
                self.linger(helpers);
            }
            None => {
                beside();
                claim(false);
            }
        }
        !panicked.load(Ordering::Acquire)
    }
}
