//! What the tests see of a [`Sealer`] and inject into it: one probe type
//! ([`Counts`], zero-sized outside the tests) and a few hooks that exist
//! only in the tests.

#[cfg(test)]
use super::{Sealer, Stage};
use crate::probe::{Count, Fault};

/// What a [`Sealer`] did, for the tests (zero-copy paths, runs on the
/// workers), and the failure they can inject.
#[derive(Default)]
pub(crate) struct Counts {
    /// Segments sealed so far.
    pub(crate) sealed: Count,
    /// Plaintext bytes copied into `plain`.
    pub(crate) copied: Count,
    /// Runs of segments sealed on the workers.
    pub(crate) runs: Count,
    /// Of those, the pipelined ones.
    pub(crate) pipelines: Count,
    /// Of those, the ones whose last job copied the write's tail into the
    /// buffer.
    pub(crate) tails: Count,
    /// The tail job's allocation fails (tests of the fallback).
    pub(crate) fail_tail_alloc: Fault,
    /// The job of this unit of a pipelined run panics (tests of a failure
    /// partway through a run).
    pub(crate) fail_unit: Fault<usize>,
}

#[cfg(test)]
impl Sealer {
    /// Makes every job of the workers panic from now on (tests of the
    /// panic path through a pipeline; the stream must have started).
    pub(crate) fn inject_panic(&mut self) {
        if let Some(w) = &mut self.workers {
            w.inject_panic.arm(());
        }
    }

    /// The output buffer's allocated length (tests of its growth).
    pub(crate) fn out_allocated(&self) -> usize {
        self.out.len()
    }

    /// Moves segment numbering to `index` (tests of the counter's end).
    pub(crate) fn set_next(&mut self, index: u64) {
        if let Stage::Open(open) = &mut self.stage {
            open.set_next(index);
        }
    }
}
