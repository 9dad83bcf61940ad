//! Several threads sealing or opening the segments of one stream.
//!
//! Segment *i* is sealed and opened from the stream key and *i* alone
//! ([`Suite::seal_at`](crate::core::suite::Suite::seal_at) /
//! [`open_at`](crate::core::suite::Suite::open_at) take the index), so
//! consecutive segments are independent work. Each direction cuts its
//! stream into units of a few whole segments and puts them, in order, in
//! a [`Ring`] of about two units per thread: a writer its plaintext, a
//! reader the sealed bytes it read. Each unit posted is a job on the
//! process's pool, and whichever thread is free works it; the caller
//! delivers the units in order (trading buffers, no copy), works those no
//! thread claimed, and takes over one a pool thread is late with. The
//! engine then releases the units in order, so the stream's rules
//! (release in order, the final segment last, the first failure wins)
//! stay where they were.
//!
//! A reader's read that has nothing to overlap (no prefetch, or from the
//! inner reader's buffer) opens its segments in place instead: one run
//! (`Workers::run`) cut into shares claimed by whichever thread is free,
//! borrowing the caller's buffers within the call (no copy), with one
//! verdict per stream (a run that lost against the caller alone sends
//! the next ones to the caller alone) and pool threads kept awake a
//! moment after a run for the next.
//!
//! The threads are one [`rayon_core`] pool per process, shared by every
//! stream (one thread per CPU beside the caller's, whatever the streams
//! alive; a stream owns no thread), started by the first unit any stream
//! posts. A caller never runs another pool's jobs: on a thread of
//! another `rayon` pool a stream posts nothing and works its units
//! alone. A panic in a unit's work, on any thread, is
//! [`Error::WorkerPanicked`](crate::Error::WorkerPanicked).
//!
//! | module | owns |
//! |---|---|
//! | `pool` | [`Workers`]: the process's pool, started once; posting a job to it; a run in place, and whether runs pay |
//! | `ring` | [`Ring`]: units in slots it owns, claimed once by whichever thread is free, delivered in order, taken over from a late thread |
//!
//! The engine (`crate::core`) gives the ring its work: nothing here knows
//! what a segment, a key or a stream format is.

#[cfg(test)]
mod alone_tests;
mod pool;
mod ring;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

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

/// How many times a caller waiting for a pool thread yields its CPU
/// before it sleeps: waking from a sleep costs tens of microseconds, as
/// much as a unit of a fast cipher, and the wait is usually shorter.
const SPIN: u32 = 200;

/// Plaintext bytes in a ring's unit, about: enough that posting it and
/// trading its buffers are a small part of its work.
const UNIT: usize = 64 * 1024;

/// The whole segments of `seg` plaintext bytes in a ring's unit: about
/// [`UNIT`] bytes, at least one segment, at most 64.
pub(crate) fn unit_segments(seg: usize) -> usize {
    UNIT.div_ceil(seg.max(1)).clamp(1, 64)
}

pub(crate) use pool::Workers;
pub(crate) use ring::{Ring, Work};
