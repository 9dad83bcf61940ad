//! A stream's threads on the process's one pool: the pool starts with
//! the first run of any stream (a process whose streams stay small spawns
//! nothing) and is shared by every stream after, one thread per CPU
//! beside the caller's, so a process's threads do not grow with its
//! streams. A stream's pool threads are kept awake from the end of their
//! part of a run to the run's end ([`Workers::stay_awake`]) and for a
//! while after each run ([`Workers::linger`]); that ends when the stream
//! drops its [`Workers`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::gain::Gain;
use super::wait::{self, Waits};
use crate::probe::{self, Count, Fault, Job, Tally};

/// How long a pool thread stays awake after a run, for the next one
/// ([`Workers::linger`]).
const LINGER: Duration = Duration::from_micros(100);

/// How long a pool thread woken at the start of a run stays awake for it
/// at most ([`Workers::wake`]; the run's end or its hand-over ends it
/// sooner): the run hands it shares between two of the caller's own,
/// whenever it is found awake then, and a thread that slept may take a
/// millisecond to get going here (its core idled), a share a millisecond
/// to do (1 MiB segments).
const WAKE: Duration = Duration::from_millis(5);

/// A pool thread that looked for work this recently is taken to be
/// running: work handed to it now starts at once. On a machine whose
/// cores are taken, a thread that is not running waits for a core for a
/// scheduler's time slice (milliseconds); one that looked within the last
/// few microseconds holds one.
const FRESH: Duration = Duration::from_micros(50);

/// Which pool threads are awake and looking for work: the lingering
/// threads say so while they wait, so that a run hands shares only to a
/// thread that runs (a share handed to a thread that has not started
/// holds the run until it has: see [`Workers::run`]).
pub(super) struct Awake {
    /// When the times below count from.
    base: Instant,
    /// Pool threads in their lingering loop now.
    threads: AtomicUsize,
    /// When one of them last looked, in nanoseconds since `base`.
    looked: AtomicU64,
    /// When the lingering ends, in nanoseconds since `base`: moved out
    /// when work is handed over (for the rest of the run) or the pool is
    /// woken for a run, and in when a run ends (for the next one), without
    /// ending the lingering in between.
    until: AtomicU64,
    /// Lingering jobs that began to wait (tests: a thread lingering at a
    /// run's end goes on, not ended and posted anew).
    pub(super) begun: Tally,
}

impl Default for Awake {
    fn default() -> Self {
        Awake {
            base: Instant::now(),
            threads: AtomicUsize::new(0),
            looked: AtomicU64::new(0),
            until: AtomicU64::new(0),
            begun: Tally::default(),
        }
    }
}

impl Awake {
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A lingering thread looks for work: it is running now. Whether it
    /// is to go on lingering (its time is not up).
    fn look(&self) -> bool {
        let now = self.now();
        self.looked.store(now, Ordering::Release);
        now < self.until.load(Ordering::Acquire)
    }

    /// The lingering ends `limit` from now.
    fn linger_for(&self, limit: Duration) {
        let limit = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        self.until
            .store(self.now().saturating_add(limit), Ordering::Release);
    }

    /// Hands work to the pool threads awake now, if `left` (work is left
    /// to hand): calls `spawn` once for each (at most `most`) and returns
    /// how many. Handing over ends every thread's lingering (`generation`
    /// moves on), so a run or a pipeline hands over once.
    pub(super) fn hand_over(
        &self,
        generation: &AtomicUsize,
        most: usize,
        left: bool,
        mut spawn: impl FnMut(),
    ) -> usize {
        let n = self.running().min(most);
        if n == 0 || !left {
            return 0;
        }
        generation.fetch_add(1, Ordering::AcqRel);
        (0..n).for_each(|_| spawn());
        n
    }

    /// Pool threads awake now: lingering, and one of them looked within
    /// [`FRESH`].
    pub(super) fn running(&self) -> usize {
        let n = self.threads.load(Ordering::Acquire);
        if n == 0 {
            return 0;
        }
        let looked = self.looked.load(Ordering::Acquire);
        let fresh = u64::try_from(FRESH.as_nanos()).unwrap_or(u64::MAX);
        if self.now().saturating_sub(looked) < fresh {
            n
        } else {
            0
        }
    }
}

/// The threads of one stream: the caller plus `threads - 1` pool threads
/// (at most one per CPU besides the caller's), started on the first
/// [`run`](Self::run).
pub(crate) struct Workers {
    pub(super) threads: usize,
    /// The process's pool, once the stream used it.
    pub(super) pool: Option<Arc<rayon_core::ThreadPool>>,
    /// Whether runs on the pool pay, and while they do not, the runs the
    /// caller does alone.
    pub(super) gain: Gain,
    /// Whether a ring's pool thread pays for the whole way of each unit
    /// through the ring, from one hand-over to the next (see
    /// [`Ring`](super::Ring)).
    pub(super) ring_way: Gain,
    /// Whether a reader's runs on the pool pay for the whole way of their
    /// pieces, from one run's end to the next (see [`run`](Self::run)),
    /// and when the last run ended. Judged only once the way alone was
    /// measured on the one-thread path: a writer's runs are not.
    pub(super) run_way: (Gain, Option<Instant>),
    /// Runs done by the caller alone because the pool did not pay (tests
    /// of the backing off).
    pub(crate) solo_runs: Count,
    /// Pool threads sleep this long once they have claimed a share or a
    /// unit (tests: a thread descheduled in the middle of its share).
    pub(crate) pool_delay: Fault<Duration>,
    /// A ring's caller sleeps this long when it takes a unit a pool
    /// thread opened (tests: cores that pass each other's data slowly).
    pub(crate) slow_handout: Fault<Duration>,
    /// The units a ring publishes go to the caller alone this many
    /// times, as while the pool does not pay (tests).
    pub(crate) ring_solo: Fault<usize>,
    /// Bumped when work is handed to the pool, when a run ends with a pool
    /// thread not lingering (its lingering is posted anew), when runs go
    /// to the caller alone and when the workers end: a pool thread kept
    /// awake ([`linger`](Self::linger), [`wake`](Self::wake)) stops
    /// waiting then.
    pub(super) generation: Arc<AtomicUsize>,
    /// The pool's threads, each kept awake after a run: `threads - 1`, at
    /// most one less than the machine's CPUs (more would wait for cores
    /// the others hold).
    pub(super) pool_threads: usize,
    /// Pool threads kept awake so far (tests that runs linger).
    pub(crate) lingered: Count,
    /// Which pool threads are awake now.
    pub(super) awake: Arc<Awake>,
    /// Lingering jobs hold off saying they are awake this long (tests: a
    /// pool thread the system has not scheduled).
    pub(crate) wake_delay: Fault<Duration>,
    /// Shares of batch runs the caller's thread claimed so far (tests
    /// that the caller takes the shares no pool thread started).
    pub(crate) caller_shares: Count,
    /// Runs with shares for the pool whose hand-over found no pool
    /// thread awake (tests).
    pub(crate) cold_runs: Count,
    /// Make jobs panic (tests of the panic path): on every thread of a
    /// [`run`](Self::run) on the pool (each as it starts) and of a
    /// [`pipeline`](Self::pipeline).
    pub(crate) inject_panic: Fault,
    /// A pool thread's job panicked outside what the job catches itself
    /// (see [`caught`]): every later run, pipeline and ring of the stream
    /// fails with [`Error::WorkerPanicked`](crate::Error::WorkerPanicked).
    pub(super) panicked: Arc<AtomicBool>,
    /// Make pool jobs of one kind panic as they start (tests that no pool
    /// job's panic aborts the process or unwinds into the caller).
    pub(crate) job_panic: Fault<Job>,
    /// How the stream's threads waited for each other (tests).
    pub(crate) waits: Waits,
}

impl Workers {
    /// Workers for `threads` threads (2 or more; the caller is one of them).
    /// Spawns nothing yet.
    pub(crate) fn new(threads: usize) -> Workers {
        debug_assert!(threads > 1, "one thread needs no workers");
        Workers {
            threads,
            pool: None,
            gain: Gain::default(),
            ring_way: Gain::for_way(),
            run_way: (Gain::for_way(), None),
            solo_runs: Count::default(),
            pool_delay: probe::pool_stall(),
            ring_solo: Fault::default(),
            slow_handout: probe::slow_handout(),
            generation: Arc::default(),
            pool_threads: threads.min(super::cpus()) - 1,
            lingered: Count::default(),
            awake: Arc::default(),
            wake_delay: Fault::default(),
            caller_shares: Count::default(),
            cold_runs: Count::default(),
            inject_panic: probe::worker_panic(),
            panicked: Arc::default(),
            job_panic: probe::job_panic(),
            waits: Waits::default(),
        }
    }

    /// The thread count, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// The process's pool, started by the first stream that needs it
    /// and shared by every stream after: one thread per CPU beside the
    /// caller's, whatever the streams alive (a stream owns no thread).
    /// `None` on a machine of one CPU, or when the system refuses threads
    /// (the caller then does all the work itself: the bytes are the
    /// same).
    pub(super) fn pool(&mut self) -> Option<&rayon_core::ThreadPool> {
        static POOL: OnceLock<Option<Arc<rayon_core::ThreadPool>>> = OnceLock::new();
        if self.pool_threads == 0 {
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
            // The unit tests of one stream's runs count what its pool
            // threads do: each has a pool of its own there, not one that
            // the tests running beside it keep busy.
            self.pool = if cfg!(test) {
                build(self.pool_threads)
            } else {
                POOL.get_or_init(|| build(super::cpus() - 1)).clone()
            };
        }
        self.pool.as_deref()
    }

    /// Whether runs' whole way with the pool was last judged a loss
    /// against the way alone (tests).
    #[cfg(test)]
    pub(crate) fn run_way_lost(&self) -> bool {
        self.run_way.0.backed_off()
    }

    /// Work is handed to the pool (or the pool is left alone for a
    /// while): pool threads kept awake stop waiting, and take its jobs at
    /// once.
    pub(super) fn starting(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Begins a run: `None` when the caller does it alone (while the pool
    /// does not pay, counted, when the system refuses threads, or on a
    /// thread of another `rayon` pool), else whether the run is judged
    /// (the run that starts the pool pays for the threads' start and is
    /// not).
    pub(super) fn begin(&mut self) -> Option<bool> {
        // A thread of another pool that waits for a scope's end runs that
        // pool's jobs meanwhile (any job, for as long as it takes, one
        // that takes a lock the caller holds included): its runs are its
        // own. (Its other cores are that pool's anyway.)
        if rayon_core::current_thread_index().is_some() {
            return None;
        }
        if !self.gain.threaded() || !self.run_way.0.threaded() {
            self.gain.rest();
            self.run_way.0.rest();
            self.starting();
            self.solo_runs.add(1);
            return None;
        }
        let fresh = self.pool.is_none();
        self.pool()?;
        Some(!fresh)
    }

    /// A run ended: each pool thread stays awake for [`LINGER`] (or until
    /// work is handed to the pool), so that the next run, often
    /// microseconds away (a small write's copy into the buffer), does not
    /// wait for a sleeping thread to wake (tens of microseconds here,
    /// against a share's tens of microseconds of sealing).
    ///
    /// When every pool thread is still lingering from the run, their
    /// lingering goes on, now for [`LINGER`]: ended and posted anew, a
    /// thread is between two jobs for a moment, not seen awake, and a run
    /// that starts at once (the next run of one large read) hands it
    /// nothing until the caller has done a share alone.
    pub(super) fn linger(&mut self) {
        if self.pool.is_none() {
            return;
        }
        self.lingered.add(self.pool_threads);
        self.awake.linger_for(LINGER);
        if self.awake.threads.load(Ordering::Acquire) >= self.pool_threads {
            return;
        }
        self.starting();
        for _ in 0..self.pool_threads {
            self.post_linger(LINGER);
        }
    }

    /// Work was handed to `handed` pool threads: each stays awake, once
    /// it has done its part, for the rest of the run (at most [`WAKE`]);
    /// at the run's end its lingering goes on for [`LINGER`] more.
    /// (Threads handed nothing are not kept awake for a run that has no
    /// share for them.)
    pub(super) fn stay_awake(&self, handed: usize) {
        for _ in 0..handed.min(self.pool_threads) {
            self.post_linger(WAKE);
        }
    }

    /// A run starts with no pool thread awake: the lingering threads are
    /// woken, to say so when they run; the run hands them shares from
    /// then on. (A lingering job posted before a later bump of the
    /// generation ends as it starts; any other waits only until the
    /// lingering's shared end.)
    pub(super) fn wake(&self) {
        for _ in 0..self.pool_threads {
            self.post_linger(WAKE);
        }
    }

    /// Posts one lingering job: the thread that runs it waits for work,
    /// saying it is awake, for `limit` from now (every lingering thread's
    /// end is moved to that, and moved again by the next run's events: a
    /// thread lingers at most [`WAKE`] past the last of them) or until
    /// work is handed to the pool.
    fn post_linger(&self, limit: Duration) {
        if self.pool.is_none() {
            return;
        }
        self.awake.linger_for(limit);
        let g = self.generation.load(Ordering::Acquire);
        let generation = Arc::clone(&self.generation);
        let awake = Arc::clone(&self.awake);
        let delay = self.wake_delay.armed();
        self.spawn(Job::Linger, move || {
            if let Some(d) = delay {
                std::thread::sleep(d);
            }
            if generation.load(Ordering::Acquire) == g {
                awake.threads.fetch_add(1, Ordering::AcqRel);
                awake.begun.add(1);
                wait::awake_while(|| awake.look() && generation.load(Ordering::Acquire) == g);
                awake.threads.fetch_sub(1, Ordering::AcqRel);
            }
        });
    }

    /// Whether a pool thread's job panicked (see [`caught`]).
    pub(crate) fn panicked(&self) -> bool {
        self.panicked.load(Ordering::SeqCst)
    }

    /// Posts `job` to the pool, to run on a pool thread on its own time,
    /// inside [`caught`]; `false` when the pool is not running (the job
    /// is not run).
    pub(super) fn spawn(&self, kind: Job, job: impl FnOnce() + Send + 'static) -> bool {
        let Some(pool) = &self.pool else {
            return false;
        };
        let (panicked, fault) = (Arc::clone(&self.panicked), self.job_panic);
        pool.spawn(move || caught(&panicked, fault, kind, job));
        true
    }
}

/// Runs the whole of a job on a pool thread (`kind`, for the test fault
/// that makes it panic as it starts): a panic anywhere in it is caught
/// and recorded in `panicked`, never unwound into the pool, where a
/// posted job's panic aborts the process and a scoped job's unwinds into
/// the caller's call. The run, pipeline or ring that reads `panicked`
/// reports it as [`Error::WorkerPanicked`](crate::Error::WorkerPanicked).
pub(super) fn caught(panicked: &AtomicBool, fault: Fault<Job>, kind: Job, job: impl FnOnce()) {
    let r = catch_unwind(AssertUnwindSafe(|| {
        assert!(fault.armed() != Some(kind), "injected panic in a pool job");
        job();
    }));
    if r.is_err() {
        panicked.store(true, Ordering::SeqCst);
    }
}

impl Drop for Workers {
    /// The stream's lingering jobs end: its pool threads go back to the
    /// process's other streams.
    fn drop(&mut self) {
        self.starting();
    }
}
