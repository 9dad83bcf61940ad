//! Waiting for another thread without a lock: spinning, yielding the
//! core, parking until woken. Which one when is a trade between the
//! microseconds a wake-up costs and the core a waiting thread holds.

use std::time::{Duration, Instant};

/// How long the caller of a batch run waits awake for a share a pool
/// thread is running before it lets the scope put it to sleep: 1024
/// spin-loop hints. A spin pays for itself only while it is shorter than
/// the wake-up it saves: on the 2-core development machine a spin-loop
/// hint takes 27–100 ns and a sleeping thread runs 5–7 µs (median; 19 µs
/// at the 90th percentile) after it is woken, so 1024 hints (about
/// 30–100 µs) cover a wake-up several times over and then give the core
/// away (a spinning caller holds a core an oversubscribed worker may
/// need; 4096 hints held it up to 0.4 ms).
pub(super) const SPIN: usize = 1 << 10;

/// Spins while `busy` holds, at most [`SPIN`] hints: the caller of a
/// batch run waiting awake for the shares pool threads are running. It
/// spins only while one is: a share no pool thread has started is never
/// waited for (the caller claims it), and once none runs the caller
/// goes on at once.
#[inline]
pub(super) fn spin_while(busy: impl Fn() -> bool) {
    for _ in 0..SPIN {
        if !busy() {
            break;
        }
        std::hint::spin_loop();
    }
}

/// Stays awake while `wanted` holds, for at most `limit`: 256 spin-loop
/// hints, then yielding the core (a lingering pool thread, waiting for
/// the next run without holding a core another thread needs).
pub(super) fn awake_while(wanted: impl Fn() -> bool, limit: Duration) {
    let since = Instant::now();
    let mut spins = 0u32;
    while wanted() && since.elapsed() < limit {
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
/// woken (the thread waited for unparks this one; a timeout bounds every
/// sleep), so that a thread waiting a whole 1 MiB segment, or for a slow
/// inner writer, does not hold a core, and one waiting for a 64 KiB share
/// does not pay for a wake-up.
#[derive(Default)]
pub(super) struct Wait {
    spins: u32,
    since: Option<Instant>,
}

/// How long a waiting thread yields before it sleeps: about what sealing
/// 64 KiB takes with the slower ciphers here.
const YIELD: Duration = Duration::from_micros(100);

impl Wait {
    pub(super) fn pause(&mut self) {
        if self.spins < 64 {
            self.spins += 1;
            std::hint::spin_loop();
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < YIELD {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(Duration::from_micros(200));
        }
    }
}
