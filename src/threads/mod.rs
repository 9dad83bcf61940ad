//! Several threads sealing or opening the segments of one stream.
//!
//! Segment *i* is sealed and opened from the stream key and *i* alone
//! ([`Suite::seal_at`](crate::core::suite::Suite::seal_at) /
//! [`open_at`](crate::core::suite::Suite::open_at) take the index), so
//! consecutive segments are independent work. The sealer and the opener
//! cut a run of them into [`Piece`]s, each with its own index, plaintext
//! and output slice (never a nonce carried from one piece to the next),
//! and a run (`Workers::run_beside`) hands the pieces out in whole batches: contiguous
//! shares of about 64 KiB (at least one per thread), each claimed from a
//! shared counter by whichever thread is free, the calling thread
//! included. A pool thread gets a job only while it is seen awake (a
//! job handed to a thread the system has not scheduled would hold the run
//! until it starts): the caller never waits for a thread that is not
//! running.
//! The engine then reads the results in order, so the stream's rules
//! (release in order, the final segment last, the first failure wins)
//! stay where they were.
//!
//! A prefetching reader's small reads and `BufRead` go through a [`Ring`]
//! instead: its slots are owned by the ring (shared with a pool job posted
//! with `'static` data, not scoped to one call), so a pool thread opens the
//! next segments while the caller hands out earlier ones between its
//! calls; the caller reads, opens what no pool thread claimed, takes a
//! unit over from a pool thread that does not finish it in time, and takes
//! each opened unit's buffer whole, in trade for one of its own.
//!
//! A writer's units go through a ring of its own
//! (`crate::core::sealer`'s `Ring`), posted to the pool the same way
//! ([`Workers::post`]).
//!
//! The threads are one [`rayon_core`] pool per process, shared by every
//! stream (one thread per CPU beside the caller's, whatever the streams
//! alive; a stream owns no thread): its scoped jobs seal straight from
//! the caller's slice and open straight into the caller's buffer, with no
//! copy and no `unsafe` here, and its threads wait for work without being
//! spawned per batch (awake for a while after each run,
//! [`Workers::linger`], then asleep). The engine makes its [`Workers`]
//! only once a stream is far enough in for them to pay (a short stream
//! starts no thread); the pool is built by the first batch of any stream
//! and lives as long as the process. A panic in a job is caught where it
//! happens and becomes [`Error::WorkerPanicked`].
//!
//! | module | owns |
//! |---|---|
//! | `pool` | [`Workers`]: the process's pool, started once; a stream's pool threads kept awake after a run or woken for one, seen awake ([`Awake`](pool::Awake)) |
//! | `run` | batch runs of [`Piece`]s, shares claimed by whichever thread runs (`Workers::run_beside`), and their size ([`batch_segments`], a reader's [`open_batch_segments`]) |
//! | `ring` | a reader's ring ([`Ring`]): units read into slots it owns and opened in order by a pool thread posted to work between the caller's calls (`Workers::post`), or by the caller; taken over from a pool thread that does not finish in time; halted and drained |
//! | `gain` | whether runs on the pool pay against the caller alone (their own time, and their units' whole way through the stream against the way on one thread), and backing off to the caller alone while they do not ([`Gain`](gain::Gain)) |
//! | `wait` | spinning, yielding, parking: how a thread waits for another; when the last pool thread left a run ([`Left`](wait::Left)), which ends the run for its verdicts |
//!
//! The engine (`crate::core`) calls [`Workers`]' runs and posts with jobs
//! of its own: nothing here knows what a segment, a key or a stream
//! format is.

#[cfg(test)]
mod alone_tests;
mod feed;
mod gain;
mod pool;
mod ring;
mod run;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
mod wait;

/// Locks `m` whether or not a thread panicked holding it: every job's
/// panic is caught where it happens and reported as
/// [`Error::WorkerPanicked`](crate::Error::WorkerPanicked), so what a
/// panicking holder left is never taken for a result.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The machine's CPUs (1 when the system does not say), asked of the
/// system once per process: on Linux the answer reads several cgroup
/// files, tens of microseconds that every stream built with `threads`
/// would pay again (as much as sealing a 256 KiB stream with AES-NI).
pub(crate) fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// The threads a stream asked for `n` of runs on: `n`, at most the
/// machine's CPUs (the caller and one pool thread per other CPU; more
/// could not run beside them). Every buffer a stream holds for its
/// threads is sized by this count, never by `n`. 0 stays 0 (refused).
pub(crate) fn clamp(n: usize) -> usize {
    n.min(cpus())
}

pub(crate) use feed::{Fed, Places, Plan};
pub(crate) use pool::Workers;
pub(crate) use ring::{Front, Open, Ring, RingCounts};
pub(crate) use run::{Piece, batch_segments, fed_batch_segments, open_batch_segments};
