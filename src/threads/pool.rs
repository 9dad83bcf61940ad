//! The pool of one stream's threads: started on the first run (a stream
//! that stays small spawns nothing), kept awake for a while after each
//! run ([`Workers::linger`]), and joined when the stream drops its
//! [`Workers`], so that no thread outlives its stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::pace::Pace;
use super::wait;

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
    /// Bumped when a run starts or the workers end: a pool thread kept
    /// awake after a run ([`linger`](Self::linger)) stops waiting then.
    pub(super) generation: std::sync::Arc<AtomicUsize>,
    /// Pool threads kept awake after a run: at most one less than the
    /// machine's CPUs (more would spin on cores the others need).
    pub(super) lingering: usize,
    /// Pool threads kept awake so far (tests that runs linger).
    #[cfg(test)]
    pub(crate) lingered: usize,
    /// Make jobs panic (tests of the panic path): on the pool threads in
    /// [`run`](Self::run), on every thread in [`pipeline`](Self::pipeline).
    #[cfg(test)]
    pub(crate) inject_panic: bool,
    /// Pool threads running (tests that none outlives the workers).
    #[cfg(test)]
    pub(super) alive: std::sync::Arc<AtomicUsize>,
}

#[cfg(test)]
thread_local! {
    /// Workers made on this thread panic in their pool threads' jobs
    /// (tests of the panic path through the fronts).
    pub(crate) static INJECT_PANIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
            generation: std::sync::Arc::default(),
            lingering: 0,
            #[cfg(test)]
            lingered: 0,
            #[cfg(test)]
            inject_panic: INJECT_PANIC.with(std::cell::Cell::get),
            #[cfg(test)]
            alive: std::sync::Arc::default(),
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
            #[cfg(test)]
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
                    #[cfg(test)]
                    let alive = std::sync::Arc::clone(alive);
                    handles.push(b.spawn(move || {
                        #[cfg(test)]
                        alive.fetch_add(1, Ordering::SeqCst);
                        thread.run();
                        #[cfg(test)]
                        alive.fetch_sub(1, Ordering::SeqCst);
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
        #[cfg(test)]
        {
            self.lingered += self.lingering;
        }
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
