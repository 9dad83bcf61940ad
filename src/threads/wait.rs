//! Waiting for another thread without a lock: spinning, yielding the
//! core, parking until woken. Which one when is a trade between the
//! microseconds a wake-up costs and the core a waiting thread holds.

use std::time::{Duration, Instant};

/// How long the caller waits awake for the other shares of a run before
/// it lets the scope put it to sleep: 4096 spin-loop hints, tens to a
/// couple of hundred microseconds (short, since a spinning caller holds a
/// core that an oversubscribed worker may need). Measured with 16384
/// (encrypting 64 MiB into `io::sink()`, 64 KiB segments, 2 threads, 9
/// interleaved rounds): AES-128-GCM 1.31× → 1.57× of one thread,
/// ChaCha20-Poly1305 1.65× → 1.75×; no change at 1 MiB segments, whose
/// shares are long enough to hide the wake-up.
pub(super) const SPIN: usize = 1 << 12;

/// Spins (at most [`SPIN`] hints) until `done` holds: the caller of a
/// batch run waiting awake for the other shares.
#[inline]
pub(super) fn spin_until(done: impl Fn() -> bool) {
    for _ in 0..SPIN {
        if done() {
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
