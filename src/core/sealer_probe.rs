//! What the tests see of a [`Sealer`] and inject into it: one probe type
//! ([`Counts`], zero-sized outside the tests) and a few hooks that exist
//! only in the tests.

#[cfg(test)]
use super::{Sealer, Stage};
use crate::probe::Count;

/// What a [`Sealer`] did, for the tests (segments sealed, bytes
/// copied).
#[derive(Default)]
pub(crate) struct Counts {
    /// Segments sealed so far.
    pub(crate) sealed: Count,
    /// Plaintext bytes copied into `plain`.
    pub(crate) copied: Count,
    /// Units posted to the ring.
    pub(crate) posted: Count,
}

#[cfg(test)]
impl Sealer {
    /// Makes every seal of the ring's units panic from now on (tests of
    /// the panic path; the ring must be made).
    pub(crate) fn inject_panic(&mut self) {
        if let Some(r) = &mut self.ring {
            r.inject_panic();
        }
    }

    /// Moves segment numbering to `index` (tests of the counter's end).
    pub(crate) fn set_next(&mut self, index: u64) {
        if let Stage::Open(open) = &mut self.stage {
            open.set_next(index);
        }
    }
}
