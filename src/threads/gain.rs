//! Whether the pool pays: a run on the threads is judged against the time
//! the calling thread takes alone, and while the pool does not pay, the
//! runs are done by the caller alone.
//!
//! On a machine that runs other work, a pool thread may be descheduled in
//! the middle of its share, and the run then waits for it (for a
//! scheduler's time slice, milliseconds, against a share's tens of
//! microseconds): `threads(2)` was measured 2–3 times slower than one
//! thread that way. No wait can be cut short there (a share claimed is
//! the claiming thread's until it is done), so the stream stops asking:
//! a run that took longer per unit than the caller takes alone is a
//! loss, and the runs after it stay on the caller for a while, a while
//! that doubles after each loss (up to [`MAX_SOLO`]) and is at least
//! [`SOLO_PER_LOSS`] times what the loss cost, so that what the stream
//! spends finding out whether the pool pays again is a small part of its
//! time; a run that pays ends the backing off. On a quiet machine every
//! run pays and nothing changes.

use std::time::{Duration, Instant};

use crate::probe;

/// How much faster per unit than the caller alone a threaded run must
/// be to pay: a run that gains less is counted a loss.
const PAYS: f64 = 0.95;

/// The runs after a loss stay on the caller for at least this many times
/// the time the loss cost: a run that waited a time slice for a
/// descheduled thread is then at most a thirty-second part of the time.
const SOLO_PER_LOSS: u32 = 32;

/// The longest the runs stay on the caller before the pool is tried
/// again.
const MAX_SOLO: Duration = Duration::from_millis(500);

/// The verdict on a stream's threaded runs so far.
#[derive(Debug)]
pub(super) struct Gain {
    /// Off, every run on the pool (the unit tests that count what the
    /// pool threads do; see [`probe::gain_checked`]).
    checked: bool,
    /// The caller's time per unit alone, seconds (a moving average).
    alone: Option<f64>,
    /// Runs stay on the caller until then.
    solo_until: Option<Instant>,
    /// How long the last backing off lasted (doubled on the next loss).
    solo_for: Duration,
}

impl Default for Gain {
    fn default() -> Self {
        Gain {
            checked: probe::gain_checked(),
            alone: None,
            solo_until: None,
            solo_for: Duration::ZERO,
        }
    }
}

impl Gain {
    /// Whether the next run goes to the pool.
    pub(super) fn threaded(&mut self) -> bool {
        match self.solo_until {
            Some(until) if Instant::now() < until => false,
            _ => {
                self.solo_until = None;
                true
            }
        }
    }

    /// The caller did `units` units alone in `t`: the measure threaded
    /// runs are judged by.
    pub(super) fn alone(&mut self, units: usize, t: Duration) {
        if units == 0 {
            return;
        }
        let per = t.as_secs_f64() / units as f64;
        self.alone = Some(self.alone.map_or(per, |a| 0.75 * a + 0.25 * per));
    }

    /// A threaded run of `units` units took `t`: a loss when it was not
    /// faster per unit than the caller alone, and the runs that follow
    /// stay on the caller for a while.
    pub(super) fn judge(&mut self, units: usize, t: Duration) {
        let Some(alone) = self.alone else {
            return;
        };
        if !self.checked || units == 0 {
            return;
        }
        let solo = alone * units as f64;
        if t.as_secs_f64() < PAYS * solo {
            self.solo_for = Duration::ZERO;
            self.solo_until = None;
            return;
        }
        let lost = t.saturating_sub(Duration::from_secs_f64(solo));
        self.solo_for = (self.solo_for * 2)
            .max(lost * SOLO_PER_LOSS)
            .max(Duration::from_secs_f64(solo))
            .min(MAX_SOLO);
        self.solo_until = Some(Instant::now() + self.solo_for);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked() -> Gain {
        Gain {
            checked: true,
            ..Gain::default()
        }
    }

    const US: Duration = Duration::from_micros(1);

    /// Runs that pay keep the pool; nothing is judged before the caller's
    /// own time is known.
    #[test]
    fn runs_that_pay_keep_the_pool() {
        let mut g = checked();
        g.judge(4, 1000 * US);
        assert!(g.threaded(), "no measure yet: no verdict");
        g.alone(2, 100 * US);
        for _ in 0..10 {
            g.judge(4, 120 * US);
            assert!(g.threaded());
        }
    }

    /// A loss sends the next runs to the caller for a time that grows with
    /// what the loss cost and doubles with each loss; a run that pays ends
    /// it.
    #[test]
    fn a_loss_backs_off_and_a_gain_ends_it() {
        let mut g = checked();
        g.alone(1, 50 * US);
        // 4 units alone: 200 µs; the run waited 3 ms for a thread.
        g.judge(4, 3200 * US);
        assert!(!g.threaded(), "after a loss, the caller alone");
        assert_eq!(g.solo_for, 3000 * US * SOLO_PER_LOSS);
        g.solo_until = None;
        assert!(g.threaded());
        // A small loss after it: the backing off doubles.
        g.judge(4, 200 * US);
        assert_eq!(g.solo_for, 2 * 3000 * US * SOLO_PER_LOSS);
        for _ in 0..2 {
            g.judge(4, 200 * US);
        }
        assert_eq!(g.solo_for, MAX_SOLO, "bounded");
        g.judge(4, 100 * US);
        assert_eq!(g.solo_for, Duration::ZERO, "a run that paid");
        assert!(g.threaded());
    }

    /// A run that gains less than the margin is a loss too, and the
    /// shortest backing off is one run's time alone.
    #[test]
    fn a_run_that_barely_gains_is_a_loss() {
        let mut g = checked();
        g.alone(1, 100 * US);
        g.judge(2, 195 * US);
        assert!(!g.threaded());
        assert_eq!(g.solo_for, 200 * US);
    }

    /// Unchecked (the unit tests that count the pool's work), nothing
    /// is ever judged a loss.
    #[test]
    fn unchecked_every_run_is_threaded() {
        let mut g = Gain {
            checked: false,
            ..Gain::default()
        };
        g.alone(1, 10 * US);
        g.judge(4, 1000 * US);
        assert!(g.threaded());
    }
}
