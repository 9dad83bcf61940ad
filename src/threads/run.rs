//! Batch runs: the pieces of a run cut into one contiguous share per
//! thread, the caller's thread working on the first, all done when
//! [`Workers::run`] returns.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::pool::Workers;
use super::wait;
use crate::Error;

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

impl Workers {
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
        self.starting();
        let Some(pool) = self.pool() else {
            pieces.iter_mut().for_each(&job);
            return Ok(());
        };
        let per = pieces.len().div_ceil(threads).max(1);
        let mut shares = pieces.chunks_mut(per);
        let own = shares.next();
        let panicked = AtomicBool::new(false);
        let done = AtomicUsize::new(0);
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
                panicked_ref.store(true, Ordering::Relaxed);
            }
            done_ref.fetch_add(1, Ordering::Release);
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
            wait::spin_until(|| done_ref.load(Ordering::Acquire) > spawned);
        });
        self.linger();
        if panicked.into_inner() {
            return Err(Error::WorkerPanicked);
        }
        Ok(())
    }
}
