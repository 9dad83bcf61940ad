//! Waiting for another thread without a lock: spinning, yielding the
//! core, parking until woken. Which one when is a trade between the
//! microseconds a wake-up costs and the core a waiting thread holds.

use std::time::{Duration, Instant};

use crate::probe::Tally;

/// How a stream's threads waited, counted across them (tests of the
/// bounds below).
#[derive(Clone, Default)]
pub(crate) struct Waits {
    /// Spin-loop hints.
    pub(crate) spins: Tally,
    /// Times a thread yielded its core.
    pub(crate) yields: Tally,
    /// Times a thread slept: parked in a pipeline, or a batch run's caller
    /// that stopped spinning with a pool thread still in its job (the
    /// scope's end then sleeps).
    pub(crate) sleeps: Tally,
    /// Waits that paused at least once.
    pub(crate) waits: Tally,
    /// Jobs of a batch run or a pipeline that a pool thread started after
    /// every share or unit was claimed: the caller waited for them to
    /// start, for nothing.
    pub(crate) late: Tally,
}

/// How long the caller of a batch run waits awake for a pool thread
/// inside its job before it lets the scope put it to sleep: 1024
/// spin-loop hints. A spin pays for itself only while it is shorter than
/// the wake-up it saves: on the 2-core development machine a spin-loop
/// hint takes 27–100 ns and a sleeping thread runs 5–7 µs (median; 19 µs
/// at the 90th percentile) after it is woken, so 1024 hints (about
/// 30–100 µs) cover a wake-up several times over and then give the core
/// away (a spinning caller holds a core an oversubscribed worker may
/// need; 4096 hints held it up to 0.4 ms).
pub(super) const SPIN: usize = 1 << 10;

/// Spins while `busy` holds, at most [`SPIN`] hints: the caller of a
/// batch run waiting awake for the pool threads inside their jobs. It
/// spins only while one is: a share no pool thread has started is never
/// waited for (the caller claims it), and once none runs the caller goes
/// on at once. If `busy` still holds after [`SPIN`] hints, the caller
/// sleeps (counted in `waits`) until the pool threads are done.
#[inline]
pub(super) fn spin_while(busy: impl Fn() -> bool, waits: &Waits) {
    for spun in 0..SPIN {
        if !busy() {
            if spun > 0 {
                waits.spins.add(spun);
                waits.waits.add(1);
            }
            return;
        }
        std::hint::spin_loop();
    }
    waits.spins.add(SPIN);
    waits.waits.add(1);
    waits.sleeps.add(1);
}

/// Stays awake while `wanted` holds (it bounds the wait: a lingering pool
/// thread's says until when): 256 spin-loop hints, then yielding the core
/// (a lingering pool thread, waiting for the next run without holding a
/// core another thread needs).
pub(super) fn awake_while(wanted: impl Fn() -> bool) {
    let mut spins = 0u32;
    while wanted() {
        if spins < 256 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Waiting for another thread of a pipeline, [`pause`](Self::pause)
/// after `pause`: spin-loop hints first (a share is often microseconds
/// from done), then yielding the core (an oversubscribed pool may need it
/// to finish the unit waited for) for up to [`YIELD`], then sleeping until
/// woken (the thread waited for unparks this one), so that a thread
/// waiting a whole 1 MiB segment, or for a slow inner writer, does not
/// hold a core, and one waiting for a 64 KiB share does not pay for a
/// wake-up. A timeout bounds every sleep, doubling from [`NAP`] to
/// [`NAP_MAX`]: the wake-up comes from the thread waited for, and a
/// thread that waits long (for a descheduled one) wakes a few times, not
/// every [`NAP`].
pub(super) struct Wait<'w> {
    spins: u32,
    since: Option<Instant>,
    nap: Duration,
    waits: &'w Waits,
}

/// How long a waiting thread yields before it sleeps: about what sealing
/// 64 KiB takes with the slower ciphers here.
const YIELD: Duration = Duration::from_micros(100);

/// A waiting thread's first sleep at most: about what a wake-up costs here
/// several times over.
const NAP: Duration = Duration::from_micros(200);

/// A waiting thread's longest sleep between looks, if nobody wakes it.
const NAP_MAX: Duration = Duration::from_millis(5);

/// Spin-loop hints a [`Wait`] gives before it yields.
pub(super) const WAIT_SPINS: u32 = 64;

impl<'w> Wait<'w> {
    /// A new wait, counted in `waits`.
    pub(super) fn new(waits: &'w Waits) -> Wait<'w> {
        Wait {
            spins: 0,
            since: None,
            nap: NAP,
            waits,
        }
    }

    /// One pause of the wait (a spin, a yield, or a sleep that doubles
    /// each time), where the sleep happens only if `still` says the wait
    /// goes on: called just before, it lets the waiting
    /// thread say where it sleeps, then look once more, so that a wake-up
    /// sent after that look is not lost.
    pub(super) fn pause_unless(&mut self, still: impl FnOnce() -> bool) {
        if self.spins < WAIT_SPINS {
            if self.spins == 0 {
                self.waits.waits.add(1);
            }
            self.spins += 1;
            self.waits.spins.add(1);
            std::hint::spin_loop();
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < YIELD {
            self.waits.yields.add(1);
            std::thread::yield_now();
        } else if still() {
            self.waits.sleeps.add(1);
            std::thread::park_timeout(self.nap);
            self.nap = (self.nap * 2).min(NAP_MAX);
        }
    }
}

/// When the last pool thread left a run or a pipeline: what the caller
/// waited for at its end, whatever it did meanwhile (asleep in the
/// scope's end, or, on a thread of another pool, running that pool's jobs
/// while it waited, which are not the run's).
pub(super) struct Left {
    base: Instant,
    /// Nanoseconds from `base` to the last leave; 0 while none left.
    nanos: std::sync::atomic::AtomicU64,
}

impl Left {
    /// None left yet; times are taken from now.
    pub(super) fn new() -> Left {
        Left {
            base: Instant::now(),
            nanos: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A pool thread leaves its job now.
    pub(super) fn now(&self) {
        self.nanos.fetch_max(
            nanos(self.base.elapsed()),
            std::sync::atomic::Ordering::AcqRel,
        );
    }

    /// How long after `at` the last pool thread left (zero if every one
    /// left before it, or none was there).
    pub(super) fn after(&self, at: Instant) -> Duration {
        let last =
            self.base + Duration::from_nanos(self.nanos.load(std::sync::atomic::Ordering::Acquire));
        last.saturating_duration_since(at)
    }
}

/// `d` in nanoseconds, as an atomic holds a time (saturating).
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
