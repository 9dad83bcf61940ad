//! Planning a pipelined write: how the write is cut into shares of
//! segments, how large the output slots are, and whether the run's last
//! job copies the write's tail into the buffer. A function of plain
//! numbers ([`plan`]); the sealer makes it a job that the drive loop runs
//! on the threads.

use crate::core::layout::{Layout, RECORD_HEADER_LEN};
use crate::threads;

/// The most shares in one pipelined run (more with many threads: twice
/// the threads and one): a longer write is sealed in several runs, so
/// that the run's list of shares is bounded (a few KiB), not as long as
/// the write.
pub(crate) const MAX_PIPE_UNITS: usize = 256;

/// What a pipelined write starts from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PipeInput {
    /// The stream's segment sizes.
    pub(crate) layout: Layout,
    /// Index of the next segment to seal.
    pub(crate) next: u64,
    /// Plaintext bytes buffered.
    pub(crate) held: usize,
    /// Bytes of the write (the caller's slice), more than 0.
    pub(crate) rest: usize,
    /// Threads, the caller's included (2 or more).
    pub(crate) threads: usize,
    /// Bytes of the stream header not written yet (0 once written).
    pub(crate) head: usize,
    /// Tag bytes per segment.
    pub(crate) tag: usize,
}

/// A share of a pipelined write: segments `first..end` of the run, whose
/// plaintext is `len` bytes from `start` in the buffer or in the caller's
/// slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) first: usize,
    pub(crate) end: usize,
    pub(crate) buffered: bool,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// How a pipelined write runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PipePlan {
    /// The shares, in order: the buffered ones, then those of the write.
    pub(crate) units: Vec<Unit>,
    /// How many of them are buffered.
    pub(crate) buffered_units: usize,
    /// Bytes each sealed segment adds to its plaintext (record header, tag).
    pub(crate) extra: usize,
    /// Bytes of one output slot: the largest sealed share (the first one
    /// with the header).
    pub(crate) slot: usize,
    /// Output slots: one more than threads.
    pub(crate) slots: usize,
    /// The plaintext bytes of a batch: the most the buffer grows to.
    pub(crate) batch: usize,
    /// Where the write's tail (the bytes after its last share) starts.
    pub(crate) tail: usize,
    /// The unit number of the job that copies the tail into the buffer,
    /// when one does (the last, after every share).
    pub(crate) tail_job: Option<usize>,
}

/// Plans a pipelined write, or `None` when it does not apply: the buffer
/// must hold whole segments only (none, or a full batch), and the run
/// seal more than one segment, some of the write's unless the buffer is
/// a full batch. The run is at most [`MAX_PIPE_UNITS`] shares (or twice
/// the threads and one) of whole segments with a byte after them (the
/// hold-back), never past the last index a non-final segment can have;
/// shares never cross the buffer's end.
pub(crate) fn plan(input: PipeInput) -> Option<PipePlan> {
    let PipeInput {
        layout,
        next,
        held,
        rest,
        threads,
        head,
        tag,
    } = input;
    if rest == 0 {
        return None;
    }
    let limit = u64::from(u32::MAX).saturating_sub(next);
    if layout.run_len(next, limit, held) != held {
        return None;
    }
    let per = threads::batch_segments(1, layout.rest);
    let batch = layout.run_len(
        next,
        threads::batch_segments(threads, layout.rest) as u64,
        usize::MAX,
    );
    let max_units = MAX_PIPE_UNITS.max(2 * threads + 1);
    let cap = limit.min((max_units * per) as u64);
    let total = layout.run_len(next, cap, held + rest - layout.ends.hold_back());
    if total <= layout.plain(next) || !(total > held || held == batch) {
        // One segment, or a buffer not full with nothing of the write.
        return None;
    }
    let (units, tail) = shares(&layout, next, held, total, per);
    let extra = if layout.framed { RECORD_HEADER_LEN } else { 0 } + tag;
    let slot = units
        .iter()
        .enumerate()
        .map(|(i, u)| u.len + (u.end - u.first) * extra + if i == 0 { head } else { 0 })
        .max()
        .unwrap_or(0);
    // One slot more than threads: with the caller delivering one, every
    // thread has one to seal into.
    let slots = threads + 1;
    let buffered_units = units.iter().filter(|u| u.buffered).count();
    // The tail job clears the buffer the buffered shares are sealed from,
    // so it may start only once the last of them is delivered (and so
    // sealed). Unit `u` starts only once unit `u - slots` is delivered:
    // with at least `slots - 1` shares of the write between the last
    // buffered share and the tail job, it does. Otherwise the caller
    // copies the tail after the run. Only a tail one copy would take.
    let tail_job = (rest - tail <= layout.rest
        && (buffered_units == 0 || units.len() - buffered_units + 1 >= slots))
        .then_some(units.len());
    Some(PipePlan {
        units,
        buffered_units,
        extra,
        slot,
        slots,
        batch,
        tail,
        tail_job,
    })
}

/// Cuts `total` plaintext bytes of whole segments from `next` on, the
/// first `held` of them buffered, into shares of `per` segments, never
/// across the buffer's end; returns them and the bytes of the write they
/// take.
fn shares(layout: &Layout, next: u64, held: usize, total: usize, per: usize) -> (Vec<Unit>, usize) {
    let mut units = Vec::new();
    let (mut segs, mut sum, mut from_rest) = (0, 0, 0);
    while sum < total {
        let buffered = sum < held;
        let end = if buffered { held } else { total };
        let (first, start) = (segs, if buffered { sum } else { from_rest });
        let mut len = 0;
        while segs - first < per && sum < end {
            let n = layout.plain(next + segs as u64);
            (segs, sum, len) = (segs + 1, sum + n, len + n);
        }
        if !buffered {
            from_rest += len;
        }
        units.push(Unit {
            first,
            end: segs,
            buffered,
            start,
            len,
        });
    }
    (units, from_rest)
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
