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
//! a window of [`WINDOW`] threaded runs that took longer than the caller
//! takes alone for the same units is a loss (a window, not a run: on a
//! quiet machine a run now and then loses to a thread's slow wake-up
//! while the stream gains), and the runs after it stay on the caller for
//! a while, a while that doubles after each loss (up to [`MAX_SOLO`]) and
//! is at least [`SOLO_PER_LOSS`] times what the loss cost, so that what
//! the stream spends finding out whether the pool pays again is a small
//! part of its time; a window that pays ends the backing off.
//!
//! A run handed to a pool thread that took a millisecond more than the
//! caller alone would have is a stall: the thread was stopped in the
//! middle of its share, so the machine's cores are taken by other work.
//! A writer's pipeline, whose time includes the inner writer's, is judged
//! by its end instead: a pool thread that left it more than a millisecond
//! (and two units' work) after every unit was delivered was stopped in a
//! unit the caller did itself, and that is a stall.
//! The stream backs off at once, and so does every stream of the process
//! ([`Machine`]): a stream made later would otherwise pay for a stall of
//! its own to find that out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use super::wait::nanos;
use crate::probe;

/// How much faster per unit than the caller alone a threaded run must
/// be to pay: a run that gains less is counted a loss.
const PAYS: f64 = 0.95;

/// The runs after a loss stay on the caller for at least this many times
/// the time the loss cost: a window that waited a time slice for a
/// descheduled thread is then at most a thirty-second part of the time.
const SOLO_PER_LOSS: u32 = 32;

/// The longest the runs stay on the caller before the pool is tried
/// again.
const MAX_SOLO: Duration = Duration::from_millis(500);

/// Threaded runs judged together.
const WINDOW: usize = 8;

/// A run handed to the pool that took this much longer than the caller
/// alone would have stalled: a share takes tens of microseconds, and the
/// system stops a thread that shares its core for a time slice
/// (milliseconds).
const STALL: Duration = Duration::from_millis(1);

/// What the streams of a process learned of the machine: until when every
/// stream's runs stay on their callers after a stall, and how long the
/// last such backing off was (doubled on the next stall; a window that
/// pays, in any stream, ends the doubling).
#[derive(Debug)]
pub(super) struct Machine {
    base: Instant,
    /// Nanoseconds since `base`.
    until: AtomicU64,
    /// Nanoseconds.
    solo_for: AtomicU64,
}

/// The process's [`Machine`], shared by every stream's [`Gain`].
static MACHINE: LazyLock<Arc<Machine>> = LazyLock::new(|| Arc::new(Machine::new()));

impl Machine {
    fn new() -> Machine {
        Machine {
            base: Instant::now(),
            until: AtomicU64::new(0),
            solo_for: AtomicU64::new(0),
        }
    }

    /// A run stalled: every stream's runs stay on their callers for twice
    /// the last backing off, and at least `at_least` (at most
    /// [`MAX_SOLO`]). Returns how long.
    fn stalled(&self, at_least: Duration) -> Duration {
        let last = Duration::from_nanos(self.solo_for.load(Ordering::Relaxed));
        let d = (last * 2).max(at_least).min(MAX_SOLO);
        self.solo_for.store(nanos(d), Ordering::Relaxed);
        let until = nanos(self.base.elapsed() + d);
        self.until.fetch_max(until, Ordering::Relaxed);
        d
    }

    /// A window paid: the next stall backs off from the start.
    fn paid(&self) {
        self.solo_for.store(0, Ordering::Relaxed);
    }

    /// Whether runs stay on their callers now.
    pub(super) fn solo(&self) -> bool {
        nanos(self.base.elapsed()) < self.until.load(Ordering::Relaxed)
    }
}

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
    /// The window being filled: threaded runs, their time, and the
    /// caller's time alone for the same units (seconds).
    window: (usize, f64, f64),
    /// The pool ran the last run: its threads are awake or lingering. The
    /// first run after runs alone wakes threads that slept (on a virtual
    /// machine, a core that idled may take milliseconds to come back) and
    /// is not judged: what it costs is not what the pool costs.
    warm: bool,
    /// What the process's streams learned of the machine (the tests give
    /// each stream its own, unless a test shares one).
    pub(super) machine: Arc<Machine>,
    /// How many times what a loss cost the runs after it stay on the
    /// caller at least ([`SOLO_PER_LOSS`], sized for a thread stopped in
    /// the middle of its share; 1 for the whole way, whose losses are
    /// steady costs, not stalls).
    per_loss: u32,
}

impl Default for Gain {
    fn default() -> Self {
        Gain {
            checked: probe::gain_checked(),
            alone: None,
            solo_until: None,
            solo_for: Duration::ZERO,
            window: (0, 0.0, 0.0),
            warm: true,
            machine: if cfg!(test) {
                Arc::new(Machine::new())
            } else {
                Arc::clone(&MACHINE)
            },
            per_loss: SOLO_PER_LOSS,
        }
    }
}

impl Gain {
    /// A verdict on the whole way of the units through the stream (see
    /// [`probe::way_checked`]).
    ///
    /// Its first window is not judged (the pool's threads are new, and
    /// the buffers they write fresh), and a loss keeps the units on the
    /// caller for at least a window's time alone, doubling while the
    /// losses go on.
    pub(super) fn for_way() -> Gain {
        Gain {
            checked: probe::way_checked(),
            warm: false,
            per_loss: 1,
            ..Gain::default()
        }
    }

    /// Whether the next run goes to the pool.
    pub(super) fn threaded(&mut self) -> bool {
        if self.checked && self.solo_until.is_none() && self.machine.solo() {
            self.warm = false;
            return false;
        }
        match self.solo_until {
            Some(until) if Instant::now() < until => {
                self.warm = false;
                false
            }
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

    /// Whether the last verdict was a loss (tests).
    #[cfg(test)]
    pub(super) fn backed_off(&self) -> bool {
        self.solo_for > Duration::ZERO
    }

    /// `units` units went their whole way through the stream in `t`
    /// (`alone`: with the pool left out): measured as the time alone, or
    /// judged against it (never a stall: the way's losses are steady
    /// costs). Once the time alone is known, `t` counts for at most four
    /// times it: a way that took longer met something else (a pause of the
    /// caller's between its calls, other work of the stream), not the
    /// pool's cost.
    pub(super) fn way(&mut self, units: usize, t: Duration, alone: bool) {
        let t = match self.alone {
            Some(a) => t.min(Duration::from_secs_f64(4.0 * a * units as f64)),
            None => t,
        };
        if alone {
            self.alone(units, t);
        } else {
            self.judge(units, t, false);
        }
    }

    /// Whether the caller's time alone was measured.
    pub(super) fn measured(&self) -> bool {
        self.alone.is_some()
    }

    /// Whether the caller's time alone is known (or nothing is judged).
    pub(super) fn knows_alone(&self) -> bool {
        !self.checked || self.measured()
    }

    /// The runs go to the caller alone for now, for a reason of the
    /// caller's: the first threaded window after it is not judged, as
    /// after a backing off.
    pub(super) fn rest(&mut self) {
        self.warm = false;
    }

    /// A run stalled, losing `lost`: the stream backs off at once, for at
    /// least [`SOLO_PER_LOSS`] times that and twice its last backing off,
    /// and so does every stream of the process.
    fn stall(&mut self, lost: Duration) {
        self.window = (0, 0.0, 0.0);
        self.solo_for = self
            .machine
            .stalled((self.solo_for * 2).max(lost * SOLO_PER_LOSS));
        self.solo_until = Some(Instant::now() + self.solo_for);
    }

    /// A threaded run of `units` units took `t` (`helped`: a pool thread
    /// took part). Every [`WINDOW`] runs, the window is a loss when its
    /// runs were not faster than the caller alone, and the runs that
    /// follow stay on the caller for a while; a run that stalled backs
    /// off every stream at once.
    pub(super) fn judge(&mut self, units: usize, t: Duration, helped: bool) {
        let Some(alone) = self.alone else {
            return;
        };
        if !self.checked || units == 0 || !std::mem::replace(&mut self.warm, true) {
            return;
        }
        let (took, solo) = (t.as_secs_f64(), alone * units as f64);
        if helped && took > solo + STALL.as_secs_f64() {
            self.stall(Duration::from_secs_f64(took - solo));
            return;
        }
        let w = &mut self.window;
        *w = (w.0 + 1, w.1 + t.as_secs_f64(), w.2 + alone * units as f64);
        if w.0 < WINDOW {
            return;
        }
        let (_, took, solo) = std::mem::take(w);
        if took < PAYS * solo {
            self.solo_for = Duration::ZERO;
            self.machine.paid();
            return;
        }
        let lost = Duration::from_secs_f64(took - solo.min(took));
        self.solo_for = (self.solo_for * 2)
            .max(lost * self.per_loss)
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

    /// A window of threaded runs of `units` units, each taking `t`.
    fn window(g: &mut Gain, units: usize, t: Duration) {
        for _ in 0..WINDOW {
            g.judge(units, t, false);
        }
    }

    /// Runs that pay keep the pool; nothing is judged before the caller's
    /// own time is known, nor before a window is full.
    #[test]
    fn runs_that_pay_keep_the_pool() {
        let mut g = checked();
        window(&mut g, 4, 1000 * US);
        assert!(g.threaded(), "no measure yet: no verdict");
        g.alone(2, 100 * US);
        for _ in 0..10 {
            window(&mut g, 4, 120 * US);
            assert!(g.threaded());
        }
        for _ in 0..WINDOW - 1 {
            g.judge(4, 1000 * US, false);
        }
        assert!(g.threaded(), "the window is not full");
        g.judge(4, 1000 * US, false);
        assert!(!g.threaded(), "a full window that lost");
    }

    /// The first run after runs alone is not judged: it wakes threads
    /// that slept.
    #[test]
    fn the_first_run_after_runs_alone_is_not_judged() {
        let mut g = checked();
        g.alone(1, 50 * US);
        window(&mut g, 2, 1000 * US);
        assert!(!g.threaded());
        g.solo_until = None;
        assert!(g.threaded());
        g.judge(2, 100_000 * US, false);
        window(&mut g, 2, 60 * US);
        assert_eq!(g.solo_for, Duration::ZERO, "the slow first run left out");
    }

    /// A run that loses now and then, in a window that gains, keeps the
    /// pool (a thread's slow wake-up on a quiet machine).
    #[test]
    fn a_run_that_loses_in_a_window_that_gains_keeps_the_pool() {
        let mut g = checked();
        g.alone(1, 50 * US);
        for r in 0..WINDOW {
            g.judge(2, if r == 3 { 140 * US } else { 60 * US }, false);
        }
        assert!(g.threaded());
        assert_eq!(g.solo_for, Duration::ZERO);
    }

    /// A losing window sends the next runs to the caller for a time that
    /// grows with what the loss cost and doubles with each loss; a window
    /// that pays ends it.
    #[test]
    fn a_loss_backs_off_and_a_gain_ends_it() {
        let mut g = checked();
        g.alone(1, 50 * US);
        // 4 units alone: 200 µs a run; one run waited 3 ms for a thread.
        for r in 0..WINDOW {
            g.judge(4, if r == 0 { 3200 * US } else { 200 * US }, false);
        }
        assert!(!g.threaded(), "after a loss, the caller alone");
        assert_eq!(g.solo_for, 3000 * US * SOLO_PER_LOSS);
        g.solo_until = None;
        assert!(g.threaded());
        // A small loss after it (the first run after the backing off
        // left out): the backing off doubles.
        g.judge(4, 200 * US, false);
        window(&mut g, 4, 200 * US);
        assert_eq!(g.solo_for, 2 * 3000 * US * SOLO_PER_LOSS);
        for _ in 0..2 {
            window(&mut g, 4, 200 * US);
        }
        assert_eq!(g.solo_for, MAX_SOLO, "bounded");
        g.solo_until = None;
        window(&mut g, 4, 100 * US);
        assert_eq!(g.solo_for, Duration::ZERO, "a window that paid");
        assert!(g.threaded());
    }

    /// A window that gains less than the margin is a loss too, and the
    /// shortest backing off is the window's time alone.
    #[test]
    fn a_window_that_barely_gains_is_a_loss() {
        let mut g = checked();
        g.alone(1, 100 * US);
        window(&mut g, 2, 195 * US);
        assert!(!g.threaded());
        assert_eq!(g.solo_for, 200 * US * u32::try_from(WINDOW).unwrap_or(0));
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
        window(&mut g, 4, 1000 * US);
        assert!(g.threaded());
    }

    /// A run a pool thread took part in that took a millisecond more than
    /// the caller alone stalled: the stream backs off at once, without
    /// waiting for its window, and so does every stream sharing its
    /// machine, a stream made later included; each stall after it doubles
    /// the backing off, and a window that pays in any stream ends that.
    #[test]
    fn a_stall_backs_off_every_stream_at_once() {
        let mut g = checked();
        let mut later = Gain {
            machine: Arc::clone(&g.machine),
            ..checked()
        };
        g.alone(1, 50 * US);
        g.judge(4, 200 * US + 2 * STALL, false);
        assert!(g.threaded(), "a run without the pool's help: no stall");
        g.judge(4, 200 * US + 2 * STALL, true);
        assert!(!g.threaded(), "one stalled run, not a window");
        assert_eq!(g.solo_for, 2 * STALL * SOLO_PER_LOSS);
        assert!(!later.threaded(), "the other stream backs off too");
        let alone = Gain::default();
        assert!(!Arc::ptr_eq(&alone.machine, &g.machine));
        // The next stall, in the other stream, backs off twice as long.
        g.machine.until.store(0, Ordering::Relaxed);
        later.solo_until = None;
        assert!(later.threaded());
        later.alone(1, 50 * US);
        // (The first run after runs alone is not judged.)
        later.judge(4, 200 * US, true);
        later.judge(4, 200 * US + 2 * STALL, true);
        assert_eq!(later.solo_for, 4 * STALL * SOLO_PER_LOSS);
        // A window that pays ends the doubling.
        g.machine.until.store(0, Ordering::Relaxed);
        g.solo_until = None;
        assert!(g.threaded());
        g.judge(4, 100 * US, true);
        window(&mut g, 4, 100 * US);
        assert_eq!(g.machine.solo_for.load(Ordering::Relaxed), 0);
    }
}
