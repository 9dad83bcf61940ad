//! Several threads sealing or opening the segments of one stream.
//!
//! Segment *i* is sealed and opened from the stream key and *i* alone
//! ([`Suite::seal_at`](crate::core::suite::Suite::seal_at) /
//! [`open_at`](crate::core::suite::Suite::open_at) take the index), so
//! consecutive segments are independent work. The sealer and the opener
//! cut a run of them into [`Piece`]s, each with its own index, plaintext
//! and output slice (never a nonce carried from one piece to the next),
//! and [`Workers::run`] hands the pieces out in whole batches: one
//! contiguous share per thread, the calling thread working on the first.
//! The engine then reads the results in order, so the stream's rules
//! (release in order, the final segment last, the first failure wins)
//! stay where they were.
//!
//! The threads are a [`rayon_core`] pool owned by the stream: its
//! scoped jobs seal straight from the caller's slice and open straight
//! into the caller's buffer, with no copy and no `unsafe` here, and its
//! threads wait for work without being spawned per batch. The pool is
//! built on the first batch (a stream that stays small spawns nothing)
//! and its threads are joined when the stream is dropped: no worker
//! outlives its stream. A panic in a job is caught where it happens and
//! becomes [`Error::WorkerPanicked`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use crate::Error;

/// Plaintext bytes one thread takes per batch at least: runs of smaller
/// segments go to a thread several at a time, so that each hand-over
/// carries about this much work (a wake-up costs microseconds; sealing
/// 64 KiB takes tens of them).
pub(crate) const SHARE: usize = 64 * 1024;

/// How long the caller waits awake for the other shares of a run before
/// it lets the scope put it to sleep: 4096 spin-loop hints, tens to a
/// couple of hundred microseconds (short, since a spinning caller holds a
/// core that an oversubscribed worker may need). Measured with 16384
/// (encrypting 64 MiB into `io::sink()`, 64 KiB segments, 2 threads, 9
/// interleaved rounds): AES-128-GCM 1.31× → 1.57× of one thread,
/// ChaCha20-Poly1305 1.65× → 1.75×; no change at 1 MiB segments, whose
/// shares are long enough to hide the wake-up.
const SPIN: usize = 1 << 12;

/// The most segments in one thread's share (tiny segments: the list of
/// pieces stays small).
const SHARE_SEGMENTS: usize = 64;

/// The segments in a batch for `threads` threads and segments of `seg`
/// plaintext bytes: one share per thread, each of at least [`SHARE`]
/// bytes (at least one segment, at most [`SHARE_SEGMENTS`]).
pub(crate) fn batch_segments(threads: usize, seg: usize) -> usize {
    let per = SHARE.div_ceil(seg.max(1)).clamp(1, SHARE_SEGMENTS);
    threads.saturating_mul(per)
}

/// One segment of a run: what to seal or open, where the result goes, and
/// how it went.
pub(crate) struct Piece<'a> {
    /// The segment's index in the stream (its nonce's counter).
    pub(crate) index: u64,
    /// Whether it is sealed or opened as the final segment.
    pub(crate) last: bool,
    /// Plaintext to seal, or sealed bytes to open.
    pub(crate) input: &'a [u8],
    /// Where its sealed bytes or plaintext go.
    pub(crate) output: &'a mut [u8],
    /// The outcome; `Ok` until the job says otherwise.
    pub(crate) result: Result<(), Error>,
}

/// The threads of one stream: the caller plus `threads - 1` pool threads,
/// started on the first [`run`](Self::run).
pub(crate) struct Workers {
    threads: usize,
    pool: Option<rayon_core::ThreadPool>,
    handles: Vec<JoinHandle<()>>,
    /// Make a job on a pool thread panic (tests of the panic path).
    #[cfg(test)]
    pub(crate) inject_panic: bool,
    /// Pool threads running (tests that none outlives the workers).
    #[cfg(test)]
    alive: std::sync::Arc<std::sync::atomic::AtomicUsize>,
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
    fn pool(&mut self) -> Option<&rayon_core::ThreadPool> {
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
                        alive.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        thread.run();
                        #[cfg(test)]
                        alive.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    })?);
                    Ok(())
                })
                .build();
            match built {
                Ok(pool) => self.pool = Some(pool),
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

    /// Runs `job` on every piece, in `threads` contiguous shares, the
    /// caller's thread taking the first; returns once all are done. A job
    /// reports its outcome in [`Piece::result`].
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] when a job panicked (every other job has
    /// still run to its end).
    pub(crate) fn run(
        &mut self,
        pieces: &mut [Piece<'_>],
        job: impl Fn(&mut Piece<'_>) + Sync,
    ) -> Result<(), Error> {
        let threads = self.threads;
        #[cfg(test)]
        let inject = self.inject_panic;
        let Some(pool) = self.pool() else {
            pieces.iter_mut().for_each(&job);
            return Ok(());
        };
        let per = pieces.len().div_ceil(threads).max(1);
        let mut shares = pieces.chunks_mut(per);
        let own = shares.next();
        let panicked = std::sync::atomic::AtomicBool::new(false);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let (job, panicked_ref, done_ref) = (&job, &panicked, &done);
        let guarded = move |share: &mut [Piece<'_>], _on_pool: bool| {
            let r = catch_unwind(AssertUnwindSafe(|| {
                #[cfg(test)]
                if _on_pool && inject {
                    panic!("injected worker panic");
                }
                share.iter_mut().for_each(job);
            }));
            if r.is_err() {
                panicked_ref.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            done_ref.fetch_add(1, std::sync::atomic::Ordering::Release);
        };
        pool.in_place_scope(|scope| {
            let mut spawned = 0;
            for share in shares {
                scope.spawn(move |_| guarded(share, true));
                spawned += 1;
            }
            if let Some(share) = own {
                guarded(share, false);
            }
            // The other shares are usually a few microseconds from done:
            // wait for them awake (the scope would sleep, and waking costs
            // more than the wait), a bounded while.
            for _ in 0..SPIN {
                if done_ref.load(std::sync::atomic::Ordering::Acquire) > spawned {
                    break;
                }
                std::hint::spin_loop();
            }
        });
        if panicked.into_inner() {
            return Err(Error::WorkerPanicked);
        }
        Ok(())
    }

    /// Ends the pool and waits for its threads.
    fn join(&mut self) {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn pieces<'a>(inputs: &'a [Vec<u8>], outputs: &'a mut [Vec<u8>]) -> Vec<Piece<'a>> {
        inputs
            .iter()
            .zip(outputs.iter_mut())
            .enumerate()
            .map(|(i, (input, output))| Piece {
                index: i as u64,
                last: false,
                input,
                output,
                result: Ok(()),
            })
            .collect()
    }

    /// Every piece is done once, on more than one thread, and the pool
    /// threads are gone once the workers are dropped.
    #[test]
    fn runs_every_piece_and_joins_its_threads() {
        let inputs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
        let mut outputs = vec![vec![0u8; 3]; 9];
        let seen = std::sync::Mutex::new(std::collections::HashSet::new());
        let mut w = Workers::new(3);
        let mut p = pieces(&inputs, &mut outputs);
        w.run(&mut p, |piece| {
            seen.lock().unwrap().insert(std::thread::current().id());
            for (o, i) in piece.output.iter_mut().zip(piece.input) {
                *o = i.wrapping_add(piece.index as u8);
            }
        })
        .unwrap();
        drop(p);
        for (i, o) in outputs.iter().enumerate() {
            assert_eq!(o, &vec![2 * i as u8; 3]);
        }
        assert!(
            seen.lock().unwrap().len() > 1,
            "the pool threads took shares"
        );
        assert_eq!(w.handles.len(), 2);
        let alive = std::sync::Arc::clone(&w.alive);
        assert!(alive.load(std::sync::atomic::Ordering::SeqCst) > 0);
        drop(w);
        // Joined in drop: every pool thread has ended.
        assert_eq!(alive.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    /// A panic in a job is an error, not a hang and not an unwind into
    /// the caller; the workers still end.
    #[test]
    fn a_panic_in_a_job_is_an_error() {
        let inputs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 2]).collect();
        let mut outputs = vec![vec![0u8; 2]; 4];
        let mut w = Workers::new(2);
        w.inject_panic = true;
        let mut p = pieces(&inputs, &mut outputs);
        assert_eq!(w.run(&mut p, |_| {}), Err(Error::WorkerPanicked));
        w.inject_panic = false;
        assert_eq!(w.run(&mut p, |_| {}), Ok(()));
    }

    #[test]
    fn batches_carry_a_share_per_thread() {
        assert_eq!(batch_segments(2, 64 * 1024), 2);
        assert_eq!(batch_segments(2, 1 << 20), 2);
        assert_eq!(batch_segments(2, 8 * 1024), 16);
        assert_eq!(batch_segments(3, 100 * 1024), 3);
        assert_eq!(batch_segments(2, 1), 2 * SHARE_SEGMENTS);
    }
}
