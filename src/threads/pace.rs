//! The caller's share of a pipeline's units, from its measured times.

use std::time::Duration;

/// How long the calling thread takes to work on one unit of a pipeline
/// and to deliver one (averaged over the stream's pipelines so far), and
/// from that how many units of a pipeline it should work on: it delivers
/// every unit, so with `n` threads and `u` units, working on `c` takes it
/// `c·work + u·deliver` while the others take `(u − c)·work / (n − 1)`;
/// the `c` that makes the longer of the two shortest is its quota.
#[derive(Default)]
pub(crate) struct Pace {
    pub(super) work: Option<f64>,
    pub(super) deliver: Option<f64>,
}

impl Pace {
    pub(super) fn note(avg: &mut Option<f64>, t: Duration) {
        let t = t.as_secs_f64();
        *avg = Some(avg.map_or(t, |a| 0.75 * a + 0.25 * t));
    }

    /// The caller's quota of `units` units with `threads` threads taking
    /// them (all of them until it has measured both times).
    // The estimate is clamped to `0..=units` before it is truncated.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub(super) fn quota(&self, units: usize, threads: usize) -> usize {
        let (Some(work), Some(deliver)) = (self.work, self.deliver) else {
            return units;
        };
        if threads < 2 || work <= 0.0 {
            return units;
        }
        let others = (threads - 1) as f64;
        let span = |c: usize| {
            let own = c as f64 * work + units as f64 * deliver;
            let rest = (units - c) as f64 * work / others;
            own.max(rest)
        };
        let best = (units as f64 * (work - others * deliver) / (threads as f64 * work))
            .clamp(0.0, units as f64);
        let lo = best.floor() as usize;
        let hi = (lo + 1).min(units);
        if span(hi) < span(lo) { hi } else { lo }
    }
}
