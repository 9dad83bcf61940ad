//! The pool of one stream's threads: started on the first run (a stream
//! that stays small spawns nothing), kept awake for a while after each
//! run ([`Workers::linger`]), and joined when the stream drops its
//! [`Workers`], so that no thread outlives its stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::gain::Gain;
use super::pace::Pace;
use super::wait::{self, Waits};
use crate::probe::{self, Alive, Count, Fault};

/// How long a pool thread stays awake after a run, for the next one
/// ([`Workers::linger`]).
const LINGER: Duration = Duration::from_micros(100);

/// The threads of one stream: the caller plus `threads - 1` pool threads,
/// started on the first [`run`](Self::run).
pub(crate) struct Workers {
    pub(super) threads: usize,
    pub(super) pool: Option<rayon_core::ThreadPool>,
    pub(super) handles: Vec<JoinHandle<()>>,
    /// The caller's times in pipelines.
    pub(super) pace: Pace,
    /// Whether runs on the pool pay, and while they do not, the runs the
    /// caller does alone.
    pub(super) gain: Gain,
    /// Runs done by the caller alone because the pool did not pay (tests
    /// of the backing off).
    pub(crate) solo_runs: Count,
    /// Pool threads sleep this long once they have claimed a share or a
    /// unit (tests: a thread descheduled in the middle of its share).
    pub(crate) pool_delay: Fault<Duration>,
    /// Bumped when a run starts or the workers end: a pool thread kept
    /// awake after a run ([`linger`](Self::linger)) stops waiting then.
    pub(super) generation: std::sync::Arc<AtomicUsize>,
    /// Pool threads kept awake after a run: at most one less than the
    /// machine's CPUs (more would spin on cores the others need).
    pub(super) lingering: usize,
    /// Pool threads kept awake so far (tests that runs linger).
    pub(crate) lingered: Count,
    /// Shares of batch runs the caller's thread claimed so far (tests
    /// that the caller takes the shares no pool thread started).
    pub(crate) caller_shares: Count,
    /// Make jobs panic (tests of the panic path): on the pool threads in
    /// [`run`](Self::run) (each as it starts), on every thread in [`pipeline`](Self::pipeline).
    pub(crate) inject_panic: Fault,
    /// Pool threads running (tests that none outlives the workers).
    pub(super) alive: Alive,
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
            handles: Vec::new(),
            pace: Pace::default(),
            gain: Gain::default(),
            solo_runs: Count::default(),
            pool_delay: Fault::default(),
            generation: std::sync::Arc::default(),
            lingering: 0,
            lingered: Count::default(),
            caller_shares: Count::default(),
            inject_panic: probe::worker_panic(),
            alive: Alive::default(),
            waits: Waits::default(),
        }
    }

    /// The thread count, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Starts the pool threads if they are not running; `None` when the
    /// system refuses threads (the caller then does all the work itself:
    /// the bytes are the same).
    pub(super) fn pool(&mut self) -> Option<&rayon_core::ThreadPool> {
        if self.pool.is_none() {
            let handles = &mut self.handles;
            let alive = &self.alive;
            let built = rayon_core::ThreadPoolBuilder::new()
                .num_threads(self.threads - 1)
                .thread_name(|i| format!("cipherio-{i}"))
                .spawn_handler(|thread| {
                    let mut b = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        b = b.name(name.to_owned());
                    }
                    if let Some(size) = thread.stack_size() {
                        b = b.stack_size(size);
                    }
                    let alive = alive.clone();
                    handles.push(b.spawn(move || {
                        alive.enter();
                        thread.run();
                        alive.leave();
                    })?);
                    Ok(())
                })
                .build();
            match built {
                Ok(pool) => {
                    self.pool = Some(pool);
                    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
                    self.lingering = self.threads.min(cpus) - 1;
                }
                Err(_) => {
                    // The threads that did start end with the pool that
                    // was never returned; wait for them.
                    self.join();
                    return None;
                }
            }
        }
        self.pool.as_ref()
    }

    /// A run starts: pool threads kept awake after the last one stop
    /// waiting, and take its jobs at once.
    pub(super) fn starting(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Begins a run: `None` when the caller does it alone (while the pool
    /// does not pay, counted, or when the system refuses threads), else
    /// whether the run is judged (the run that starts the pool pays for the
    /// threads' start and is not).
    pub(super) fn begin(&mut self) -> Option<bool> {
        self.starting();
        if !self.gain.threaded() {
            self.solo_runs.add(1);
            return None;
        }
        let fresh = self.pool.is_none();
        self.pool()?;
        Some(!fresh)
    }

    /// A run ended: each pool thread stays awake for [`LINGER`] (or until
    /// the next run starts), so that the next run, often microseconds
    /// away (a small write's copy into the buffer), does not wait for a
    /// sleeping thread to wake (tens of microseconds here, against a
    /// share's tens of microseconds of sealing).
    pub(super) fn linger(&mut self) {
        let Some(pool) = &self.pool else {
            return;
        };
        let g = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.lingered.add(self.lingering);
        for _ in 0..self.lingering {
            let generation = std::sync::Arc::clone(&self.generation);
            pool.spawn(move || {
                wait::awake_while(|| generation.load(Ordering::Acquire) == g, LINGER)
            });
        }
    }

    /// Ends the pool and waits for its threads.
    fn join(&mut self) {
        self.starting();
        // Dropping the pool tells its threads to stop once idle.
        drop(self.pool.take());
        for h in self.handles.drain(..) {
            // A thread that panicked outside a job has nothing to report.
            let _ = h.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.join();
    }
}
