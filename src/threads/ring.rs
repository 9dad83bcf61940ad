//! A ring of units opened ahead of the caller: the caller reads each
//! unit's input into a slot, the pool threads open the units in order as
//! soon as they are published, and the caller takes each unit's output
//! over as it is ready (trading buffers, no copy), between its own calls.
//! Nothing is scoped to one call: the slots' buffers are owned by the
//! ring, and a pool thread works on them while the caller is away (handing
//! out the units before).
//!
//! The rules it owns:
//! - **Units are claimed once, in order**: a shared counter hands each
//!   published unit out once, to a pool thread or to the caller. The
//!   caller never waits for a unit no thread has claimed: it claims it and
//!   opens it itself; nor long for one a pool thread claimed: it takes it
//!   over, and that thread's outcome is dropped.
//! - **Output only from a unit that opened**: a slot's output is handed
//!   over only once its job returned `Ok`; a failed unit stops the ring
//!   there (the caller hands out what came before it, then unwinds).
//! - **The pool must pay**: the time the caller spends opening and
//!   waiting per unit is judged against its time to open one alone, and
//!   a unit's whole way through the ring (from one hand-over to the next)
//!   against the same way on one thread; while the pool does not pay (a
//!   busy machine, or cores that pass each other's data slowly) the
//!   caller opens every unit. With the pool at work, the caller leaves a
//!   unit no thread has claimed to it while it has reading to do.
//! - **A halt is final**: [`Ring::halt`] stops every claim; a unit a pool
//!   thread is still opening is not waited for (the caller takes its
//!   input back, not its output).
//! - **A slot is one unit's**: each slot says which unit it holds, and a
//!   pool thread that ran late (the caller took its unit over and has
//!   gone round the ring since) leaves the slot's new unit alone.
//! - **Waits park**: the caller parks while the unit it needs is being
//!   opened by a pool thread (woken when it is done); a pool thread with
//!   nothing to claim parks for a short while, then its job ends (the
//!   caller posts another when it publishes more).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::Thread;
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use super::lock;
use super::pool::Workers;
use crate::Error;
use crate::core::window::{wipe, zeroed};
use crate::probe::{Job, Tally};

/// Opens unit `seq` (counted from the ring's first unit) from its input
/// into its output (as long as the ring's output slots); returns its
/// output length.
pub(crate) type Open = dyn Fn(u64, &[u8], &mut [u8]) -> Result<usize, Error> + Send + Sync;

/// How long a pool thread with nothing to claim waits for the caller to
/// publish more before its job ends: about what the caller takes to hand
/// out one unit and read the next.
const LINGER: Duration = Duration::from_micros(200);

/// How long the caller sleeps at most between looks while it waits (the
/// thread it waits for wakes it sooner).
const NAP: Duration = Duration::from_millis(1);

/// A slot's unit waits to be opened (or is being opened).
const PENDING: u8 = 0;
/// A slot's unit opened: its output is ready.
const OPENED: u8 = 1;
/// A slot's unit failed to open (or its job panicked).
const FAILED: u8 = 2;
/// A slot's unit was taken over by the caller from the pool thread
/// opening it: its result is the caller's.
const TAKEN: u8 = 3;

/// How long the caller waits for a pool thread to finish the front unit
/// before it opens it itself, at least and at most (twice what opening a
/// unit took the caller, within these).
const TAKE_AFTER: (Duration, Duration) = (Duration::from_micros(20), Duration::from_millis(2));

/// One unit's input: written by the caller before the unit is published,
/// read by whoever opens it (the caller may open a unit a pool thread is
/// still opening: both read it).
struct Input {
    bytes: Vec<u8>,
    /// Bytes read so far.
    filled: usize,
}

/// One unit's output, written by whoever opened it from its slot.
struct Output {
    /// Plaintext: overwritten by the slot's next unit (as the reader's
    /// plaintext buffer is by its next segment), wiped on drop.
    bytes: Vec<u8>,
    /// Bytes of the unit that opened here (0 for one that failed: the
    /// slot's state says which).
    len: usize,
}

impl Drop for Output {
    fn drop(&mut self) {
        wipe(&mut self.bytes);
    }
}

/// One unit's buffers.
struct Slot {
    input: RwLock<Input>,
    output: Mutex<Output>,
    /// The unit the slot holds, plus one (0: none yet): set under the
    /// input's write lock when the caller begins a unit here, so a pool
    /// thread that claimed an earlier unit of this slot and ran late (the
    /// caller took that unit over and has gone round the ring since)
    /// finds it is not its unit any more and leaves the slot alone.
    holds: AtomicU64,
    /// A pool thread is opening the slot's unit: while it has other work,
    /// the caller does not begin another one here until it is done (it
    /// would wait for the input's lock, held by a thread that may have
    /// lost its core). It may still wait there when it has nothing else to
    /// do, or in the moment between that thread's lock and this flag.
    opening: AtomicBool,
    /// The slot's unit was opened by a pool thread (set with its state).
    by_pool: AtomicBool,
}

/// What the caller and the pool threads share.
struct Shared {
    slots: Box<[Slot]>,
    /// Each slot's state: [`PENDING`], [`OPENED`], [`FAILED`], [`TAKEN`].
    state: Box<[AtomicU8]>,
    open: Box<Open>,
    /// Units below this may be claimed.
    published: AtomicU64,
    /// The next unit to claim.
    claimed: AtomicU64,
    /// No unit is claimed any more.
    halted: AtomicBool,
    /// Units the pool threads opened.
    pool_units: AtomicU64,
    /// The units go to the caller alone: pool threads claim none.
    solo: AtomicBool,
    /// A pool job is running, or posted and not yet started.
    live: AtomicBool,
    /// The caller waits: a pool thread that finishes a unit wakes it.
    caller_waits: AtomicBool,
    /// The thread that waits (a reader may move between threads).
    caller: Mutex<Option<Thread>>,
    /// The pool thread parked for lack of work, woken when the caller
    /// publishes.
    idle: Mutex<Option<Thread>>,
    /// A job panicked.
    panicked: AtomicBool,
    /// Units opened (each once: a unit taken over counts as the caller's),
    /// and those of them the pool threads opened (tests).
    opened: Tally,
    pool_opened: Tally,
    /// Units the caller took over from a pool thread (tests).
    taken: Tally,
    /// Pool threads sleep this long once they have claimed a unit (tests:
    /// a thread descheduled in the middle of its unit).
    delay: Option<Duration>,
    /// Output bytes of a whole unit.
    output: usize,
}

/// What a ring counts, for the tests, and its test fault.
#[derive(Default)]
pub(crate) struct RingCounts {
    /// Units opened (failed ones included).
    pub(crate) opened: Tally,
    /// Units the pool threads opened.
    pub(crate) pool_opened: Tally,
    /// Units the caller took over from a pool thread.
    pub(crate) taken: Tally,
    /// Pool threads sleep this long once they have claimed a unit.
    pub(crate) delay: Option<Duration>,
    /// The caller sleeps this long when it takes a unit a pool thread
    /// opened.
    pub(crate) slow_handout: Option<Duration>,
}

fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `open` on unit `seq`'s input into `out`, a panic caught: the
/// output length, or the error (`out` then wiped).
fn open_into(open: &Open, seq: u64, input: &Input, out: &mut [u8]) -> Result<usize, Error> {
    let r = catch_unwind(AssertUnwindSafe(|| {
        open(seq, &input.bytes[..input.filled], out)
    }));
    let r = r.unwrap_or(Err(Error::WorkerPanicked));
    if r.is_err() {
        out.zeroize();
    }
    r
}

impl Shared {
    /// Claims the next published unit, unless the ring halted (or, for a
    /// pool thread, while the units go to the caller alone).
    fn claim(&self, pool: bool) -> Option<u64> {
        let mut c = self.claimed.load(Ordering::SeqCst);
        loop {
            if self.halted.load(Ordering::SeqCst)
                || c >= self.published.load(Ordering::SeqCst)
                || pool && self.solo.load(Ordering::SeqCst)
            {
                return None;
            }
            match self
                .claimed
                .compare_exchange_weak(c, c + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(c),
                Err(now) => c = now,
            }
        }
    }

    /// Opens claimed unit `seq` in its slot and says how it went, unless
    /// the caller took the unit over meanwhile (its result is then the
    /// caller's). The state is set while the input is still read-locked:
    /// the caller cannot reuse the slot before.
    ///
    /// Returns whether its outcome stands (not taken over, the slot not
    /// reused). `pool`: a pool thread opens it.
    fn run(&self, seq: u64, pool: bool) -> bool {
        let i = slot_of(seq, self.slots.len());
        let slot = &self.slots[i];
        let input = read(&slot.input);
        if slot.holds.load(Ordering::SeqCst) != seq + 1 {
            // Taken over by the caller, and the slot reused since.
            return false;
        }
        slot.opening.store(true, Ordering::SeqCst);
        let mut guard = lock(&slot.output);
        let out = &mut *guard;
        // A slot's output is allocated by the first open into it (every
        // trade gives back one as long); if that fails, the unit fails,
        // and the usual path opens it again.
        let r = if out.bytes.is_empty() {
            zeroed(self.output).map(|b| out.bytes = b)
        } else {
            Ok(())
        };
        let r = r.and_then(|()| open_into(&*self.open, seq, &input, &mut out.bytes));
        out.len = *r.as_ref().unwrap_or(&0);
        let state = if r.is_ok() { OPENED } else { FAILED };
        slot.by_pool.store(pool, Ordering::SeqCst);
        let stands = self.state[i]
            .compare_exchange(PENDING, state, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        // A panic counts only in a unit whose outcome stands (one the
        // caller took over is opened again, by the caller).
        if stands && r == Err(Error::WorkerPanicked) {
            self.panicked.store(true, Ordering::SeqCst);
        }
        if stands {
            self.opened.add(1);
        }
        drop(guard);
        slot.opening.store(false, Ordering::SeqCst);
        drop(input);
        stands
    }

    /// A pool thread's job: claims and opens units until none is left for
    /// [`LINGER`], or the ring halts.
    fn work(&self) {
        let mut idle_since: Option<Instant> = None;
        loop {
            let claimed = self.claim(true);
            if let Some(seq) = claimed {
                if let Some(d) = self.delay {
                    std::thread::sleep(d);
                }
                if self.run(seq, true) {
                    self.pool_units.fetch_add(1, Ordering::Relaxed);
                    self.pool_opened.add(1);
                }
            }
            if claimed.is_some() {
                idle_since = None;
                self.wake_caller();
                continue;
            }
            if self.halted.load(Ordering::SeqCst) {
                self.wake_caller();
                break;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            let Some(left) = LINGER.checked_sub(since.elapsed()) else {
                // Leaving: a publish from now on posts a new job. One
                // that came before `live` fell is taken here.
                self.live.store(false, Ordering::SeqCst);
                if self.for_pool()
                    && self
                        .live
                        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    idle_since = None;
                    continue;
                }
                break;
            };
            *lock(&self.idle) = Some(std::thread::current());
            if self.for_pool() || self.halted.load(Ordering::SeqCst) {
                lock(&self.idle).take();
                continue;
            }
            std::thread::park_timeout(left);
            lock(&self.idle).take();
        }
    }

    /// Whether a pool thread may claim a unit now.
    fn for_pool(&self) -> bool {
        !self.halted.load(Ordering::SeqCst)
            && !self.solo.load(Ordering::SeqCst)
            && self.claimed.load(Ordering::SeqCst) < self.published.load(Ordering::SeqCst)
    }

    fn wake_caller(&self) {
        if self.caller_waits.load(Ordering::SeqCst)
            && let Some(t) = &*lock(&self.caller)
        {
            t.unpark();
        }
    }

    /// The caller waits until `done` holds or `until` passes, parked
    /// (woken by the pool thread that finishes a unit).
    fn wait_until(&self, done: impl Fn() -> bool, until: Instant) {
        if done() {
            return;
        }
        *lock(&self.caller) = Some(std::thread::current());
        loop {
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                return;
            };
            self.caller_waits.store(true, Ordering::SeqCst);
            if !done() {
                std::thread::park_timeout(left.min(NAP));
            }
            self.caller_waits.store(false, Ordering::SeqCst);
            if done() {
                return;
            }
        }
    }
}

fn slot_of(seq: u64, slots: usize) -> usize {
    // The remainder is below `slots`, a `usize`.
    usize::try_from(seq % slots as u64).unwrap_or_else(|_| unreachable!("below a usize"))
}

/// What the unit at the front of the ring is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Front {
    /// Opened: its output is ready to hand out.
    Opened,
    /// It failed to open (or its job panicked).
    Failed,
    /// A pool thread is opening it.
    Busy,
    /// Published, not claimed: the caller may open it.
    Claimable,
    /// Not published: its input is incomplete, or no input follows it yet.
    Unread,
}

/// The caller's side of a ring. Units are numbered from 0 (the ring's
/// first); the caller's own state says which slot holds what.
pub(crate) struct Ring {
    shared: Arc<Shared>,
    /// The next unit to hand over.
    front: u64,
    /// The unit whose input is being read (its slot free).
    fill: u64,
    /// Whether the first read into `fill`'s slot was made (before, the
    /// slot may still hold an earlier unit's bytes).
    begun: bool,
    /// The front unit, taken over from a pool thread that did not finish
    /// it in time: opened into `spare`, with this outcome.
    taken: Option<Result<usize, Error>>,
    /// Where a unit taken over opens (plaintext: wiped on drop).
    spare: Vec<u8>,
    /// How long the caller's last open of a unit took.
    own: Duration,
    /// Whether the pool pays: the time the caller spent opening and
    /// waiting since the last verdict, the units handed over since,
    /// and the units the pool had opened then.
    window: (Duration, usize, u64),
    /// When the last unit was handed over.
    handed_at: Option<Instant>,
    /// The caller sleeps this long when it takes a unit a pool thread
    /// opened (tests).
    slow_handout: Option<Duration>,
    /// The units' whole way through the ring since the last measure or
    /// verdict: the time from one hand-over to the next, summed, the
    /// units it covers, whether they went to the caller alone, and
    /// whether a pool thread opened any of them (a window that mixes the
    /// two ways, or where a pool thread opened units published before the
    /// pool was left out, is dropped).
    way: (Duration, usize, bool, bool),
}

/// Units handed over per verdict on whether the ring's pool thread pays.
const JUDGED: usize = 8;

/// Units a ring hands over before the way of its units alone is measured
/// (with the pool left out, if no earlier ring of the stream measured
/// it): by then each slot has its buffers, allocated and touched, as
/// with the pool.
const WARM: u64 = 16;

impl Ring {
    /// A ring of `slots` slots for units of up to `input` input bytes and
    /// `output` output bytes each, opened by `open`, counted in `counts`.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when the slots cannot be allocated.
    pub(crate) fn new(
        slots: usize,
        input: usize,
        output: usize,
        open: Box<Open>,
        counts: RingCounts,
    ) -> Result<Ring, Error> {
        let slots = slots.max(2);
        let mut made = Vec::new();
        made.try_reserve_exact(slots)
            .map_err(|_| Error::Allocation(slots))?;
        for _ in 0..slots {
            made.push(Slot {
                input: RwLock::new(Input {
                    bytes: zeroed(input)?,
                    filled: 0,
                }),
                // Allocated by the first thread to open a unit here: the
                // pool thread, mostly, off the caller's path.
                output: Mutex::new(Output {
                    bytes: Vec::new(),
                    len: 0,
                }),
                holds: AtomicU64::new(0),
                opening: AtomicBool::new(false),
                by_pool: AtomicBool::new(false),
            });
        }
        let shared = Shared {
            slots: made.into_boxed_slice(),
            state: (0..slots).map(|_| AtomicU8::new(PENDING)).collect(),
            open,
            published: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            halted: AtomicBool::new(false),
            pool_units: AtomicU64::new(0),
            solo: AtomicBool::new(false),
            live: AtomicBool::new(false),
            caller_waits: AtomicBool::new(false),
            caller: Mutex::new(None),
            idle: Mutex::new(None),
            panicked: AtomicBool::new(false),
            opened: counts.opened,
            pool_opened: counts.pool_opened,
            taken: counts.taken,
            delay: counts.delay,
            output,
        };
        Ok(Ring {
            shared: Arc::new(shared),
            front: 0,
            fill: 0,
            begun: false,
            taken: None,
            spare: zeroed(output)?,
            own: Duration::ZERO,
            window: (Duration::ZERO, 0, 0),
            handed_at: None,
            slow_handout: counts.slow_handout,
            way: (Duration::ZERO, 0, false, false),
        })
    }

    fn slots(&self) -> u64 {
        self.shared.slots.len() as u64
    }

    fn slot(&self, seq: u64) -> &Slot {
        &self.shared.slots[slot_of(seq, self.shared.slots.len())]
    }

    /// The next unit to hand over, counted from the ring's first.
    pub(crate) fn front(&self) -> u64 {
        self.front
    }

    /// What the front unit is.
    pub(crate) fn front_state(&self) -> Front {
        let s = &*self.shared;
        if let Some(taken) = &self.taken {
            return if taken.is_ok() {
                Front::Opened
            } else {
                Front::Failed
            };
        }
        if self.front >= s.published.load(Ordering::SeqCst) {
            return Front::Unread;
        }
        if self.front >= s.claimed.load(Ordering::SeqCst) {
            return Front::Claimable;
        }
        match s.state[slot_of(self.front, s.slots.len())].load(Ordering::SeqCst) {
            OPENED => Front::Opened,
            FAILED => Front::Failed,
            _ => Front::Busy,
        }
    }

    /// Whether a slot is free to read the next unit's input into.
    pub(crate) fn has_room(&self) -> bool {
        self.fill < self.front + self.slots()
    }

    /// Whether a slot is free and the caller may begin reading into it at
    /// once: not while a pool thread that ran late still opens the unit
    /// it held before (the read would wait for that thread).
    pub(crate) fn may_read(&self) -> bool {
        self.has_room() && (self.begun || !self.slot(self.fill).opening.load(Ordering::SeqCst))
    }

    /// Whether pool threads claim units now (not while the units go to
    /// the caller alone).
    pub(crate) fn pooled(&self) -> bool {
        !self.shared.solo.load(Ordering::SeqCst)
    }

    /// Published units no thread has claimed yet.
    pub(crate) fn waiting(&self) -> u64 {
        let s = &*self.shared;
        s.published
            .load(Ordering::SeqCst)
            .saturating_sub(s.claimed.load(Ordering::SeqCst))
    }

    /// Reads into the slot of the unit being read: `read` is given the
    /// rest of its input (a whole unit's input in all: every unit of a
    /// ring is whole) and returns what it brought (`None`: nothing). A
    /// unit read whole moves the reading on to the next slot. Returns what
    /// `read` returned; `None` without a free slot too.
    pub(crate) fn read_into(
        &mut self,
        read: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Option<usize> {
        if !self.has_room() {
            return None;
        }
        let i = slot_of(self.fill, self.shared.slots.len());
        // Waits for a pool thread still opening the unit this slot held
        // before, if the caller took it over: rare (the ring has gone
        // round since), and the slot cannot take new input before.
        let mut input = write(&self.shared.slots[i].input);
        if !self.begun {
            input.filled = 0;
            self.shared.slots[i]
                .holds
                .store(self.fill + 1, Ordering::SeqCst);
            self.shared.state[i].store(PENDING, Ordering::SeqCst);
            self.begun = true;
        }
        let (want, from) = (input.bytes.len(), input.filled);
        // Never more than the room offered, whatever `read` says.
        let n = read(&mut input.bytes[from..want])?.min(want - from);
        input.filled += n;
        if input.filled == want && want > 0 {
            self.fill += 1;
            self.begun = false;
        }
        Some(n)
    }

    /// Publishes every unit whose input is whole and followed by more
    /// input, and wakes or posts a pool thread to open them.
    pub(crate) fn publish(&mut self, workers: &mut Workers) {
        let started = self.begun && read(&self.slot(self.fill).input).filled > 0;
        let upto = if started {
            self.fill
        } else {
            self.fill.saturating_sub(1)
        };
        let s = &self.shared;
        if upto <= s.published.load(Ordering::SeqCst) {
            return;
        }
        let solo = !workers.ring_threaded(self.front >= WARM);
        s.solo.store(solo, Ordering::SeqCst);
        s.published.store(upto, Ordering::SeqCst);
        if solo {
            // The pool does not pay: the caller opens them.
            return;
        }
        if s.live
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let shared = Arc::clone(s);
            if !workers.post(move || shared.work()) {
                s.live.store(false, Ordering::SeqCst);
            }
        } else if let Some(t) = lock(&s.idle).take() {
            t.unpark();
        }
    }

    /// The caller claims the next published unit, if one is left, and
    /// opens it.
    ///
    /// Its time counts as the caller's time to open a unit alone, and as
    /// time the pool did not take off the caller.
    pub(crate) fn open_own(&mut self, workers: &mut Workers) {
        let t = Instant::now();
        if let Some(seq) = self.shared.claim(false) {
            self.shared.run(seq, false);
            self.own = t.elapsed();
            workers.ring_alone(self.own);
        }
        self.window.0 += t.elapsed();
    }

    /// The front unit is being opened by a pool thread and the caller has
    /// nothing else to do: waits, parked, for as long as opening a unit
    /// takes the caller twice over; if the pool thread has not finished it
    /// by then (on a busy machine, it may have lost its core for a
    /// scheduler's time slice), the caller opens it itself, and the pool
    /// thread's result is dropped. The caller never waits longer for a
    /// thread that is not running.
    pub(crate) fn wait_or_take(&mut self) {
        let t = Instant::now();
        self.take_when_late();
        self.window.0 += t.elapsed();
    }

    /// [`wait_or_take`](Self::wait_or_take), untimed.
    fn take_when_late(&mut self) {
        let i = slot_of(self.front, self.shared.slots.len());
        let s = &*self.shared;
        let limit = (self.own * 2).clamp(TAKE_AFTER.0, TAKE_AFTER.1);
        let until = Instant::now() + limit;
        s.wait_until(|| s.state[i].load(Ordering::SeqCst) != PENDING, until);
        if s.state[i]
            .compare_exchange(PENDING, TAKEN, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        s.taken.add(1);
        s.opened.add(1);
        let input = read(&s.slots[i].input);
        let r = open_into(&*s.open, self.front, &input, &mut self.spare);
        if r == Err(Error::WorkerPanicked) {
            s.panicked.store(true, Ordering::SeqCst);
        }
        self.taken = Some(r);
    }

    /// Hands the front unit's output over (the front must be
    /// [`Front::Opened`]): `take` is given the buffer it opened into and
    /// its length, and trades that buffer for one of its own, as long (it
    /// takes the output without a copy; the slot, or the spare, opens into
    /// the buffer given back). The slot is then free.
    pub(crate) fn hand_over(
        &mut self,
        workers: &mut Workers,
        take: impl FnOnce(&mut Vec<u8>, usize),
    ) {
        let output = self.shared.output;
        let by_pool = self.taken.is_none() && self.slot(self.front).by_pool.load(Ordering::SeqCst);
        if let (true, Some(d)) = (by_pool, self.slow_handout) {
            std::thread::sleep(d);
        }
        if let Some(Ok(len)) = self.taken {
            self.taken = None;
            take(&mut self.spare, len);
            debug_assert!(self.spare.len() >= output);
        } else {
            let mut out = lock(&self.slot(self.front).output);
            let len = std::mem::take(&mut out.len);
            take(&mut out.bytes, len);
            debug_assert!(out.bytes.len() >= output);
        }
        self.front += 1;
        self.judge(workers);
        self.judge_way(workers, by_pool);
    }

    /// A unit was handed over: the time since the last hand-over (the
    /// last unit's output handed out to the caller's calls, this one read
    /// and opened or waited for) is a unit's whole way through the ring.
    /// Every [`JUDGED`] units it is measured as the time alone, when they
    /// went to the caller alone, or judged against that time, when the
    /// pool took part. The caller's time opening and waiting
    /// ([`judge`](Self::judge)) does not show what the pool costs on the
    /// rest of the way: where the cores pass each other's data slowly
    /// (on a virtual machine, it depends on where the host runs its
    /// CPUs), the caller's reads into slots a pool thread read and the
    /// pool's writes into plaintext the caller copied out take several
    /// times longer, and the ring with the pool is slower than without
    /// it. (The time between two hand-overs includes the caller's own,
    /// between its calls, as much with the pool as without it.)
    fn judge_way(&mut self, workers: &mut Workers, by_pool: bool) {
        let now = Instant::now();
        let Some(last) = self.handed_at.replace(now) else {
            return;
        };
        let solo = self.shared.solo.load(Ordering::SeqCst);
        let (took, n, alone, helped) = &mut self.way;
        if *n == 0 || *alone != solo {
            (*took, *n, *alone, *helped) = (Duration::ZERO, 0, solo, false);
        }
        *took += now.saturating_duration_since(last);
        *helped |= by_pool;
        *n += 1;
        if *n < JUDGED {
            return;
        }
        let took = std::mem::take(took);
        *n = 0;
        // Units a pool thread opened before the pool was left out.
        if !(solo && *helped) {
            workers.ring_way.way(JUDGED, took, solo);
        }
    }

    /// A unit was handed over: every [`JUDGED`] units, the time the
    /// caller spent opening and waiting for them is judged against its
    /// time to open as many alone (reading and handing out cost it the
    /// same either way), and while the pool does not pay the units go to
    /// the caller alone (the pool is neither posted to nor woken).
    fn judge(&mut self, workers: &mut Workers) {
        let (took, n, pool) = &mut self.window;
        *n += 1;
        if *n == JUDGED {
            let now = self.shared.pool_units.load(Ordering::Relaxed);
            workers.ring_judge(JUDGED, std::mem::take(took), now > *pool);
            (*n, *pool) = (0, now);
        }
    }

    /// Whether a job panicked.
    pub(crate) fn panicked(&self) -> bool {
        self.shared.panicked.load(Ordering::SeqCst)
    }

    /// Stops every claim. A pool thread still opening a unit finishes
    /// it on its own (not waited for: it may have lost its core); the
    /// caller then only reads the slots' inputs.
    pub(crate) fn halt(&mut self) {
        let s = &*self.shared;
        s.halted.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&s.idle).take() {
            t.unpark();
        }
    }

    /// After [`halt`](Self::halt): each unit's input as read from the
    /// front on (opened or not: an output not handed over is dropped),
    /// in order, given to `input`; stops at the first error it returns.
    ///
    /// # Errors
    ///
    /// The first error of `input`.
    pub(crate) fn drain(
        &mut self,
        mut input: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        debug_assert!(self.shared.halted.load(Ordering::SeqCst));
        for seq in self.front..self.read_end() {
            let slot = read(&self.slot(seq).input);
            if slot.filled > 0 {
                input(&slot.bytes[..slot.filled])?;
            }
        }
        Ok(())
    }

    /// Input bytes read of the units not handed over yet.
    pub(crate) fn read_ahead(&self) -> usize {
        (self.front..self.read_end())
            .map(|seq| read(&self.slot(seq).input).filled)
            .sum()
    }

    /// The units from the front up to this one hold input: the last of
    /// them is the one being read, if its first read was made.
    fn read_end(&self) -> u64 {
        self.fill + u64::from(self.begun)
    }

    /// Output bytes of a whole unit.
    pub(crate) fn output(&self) -> usize {
        self.shared.output
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        wipe(&mut self.spare);
        self.shared.halted.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&self.shared.idle).take() {
            t.unpark();
        }
    }
}

impl Workers {
    /// Whether the workers have pool threads to post to (none on a
    /// machine of one CPU).
    pub(crate) fn may_post(&self) -> bool {
        self.pool_threads > 0
    }

    /// Whether a ring's segments go to the pool now (not while the pool
    /// does not pay: see [`Gain`](super::gain::Gain)).
    pub(crate) fn ring_threaded(&mut self, warm: bool) -> bool {
        // Once the ring is warm, a unit's way through it alone is
        // measured, with the pool left out, before the pool is judged
        // against it.
        let threaded = !self.ring_solo.count_down()
            && self.gain.threaded()
            && self.ring_way.threaded()
            && (!warm || self.ring_way.knows_alone());
        if !threaded {
            self.gain.rest();
            self.ring_way.rest();
            self.solo_runs.add(1);
        }
        threaded
    }

    /// The stream's one-thread path took `t` for `units` segments, each
    /// from its open to the next: the way alone that a ring's way with
    /// the pool ([`Ring::judge_way`]) and runs' way on the pool are judged
    /// against (from a window's worth of segments on).
    pub(crate) fn way_alone(&mut self, units: usize, t: Duration) {
        if units >= JUDGED {
            self.ring_way.alone(units, t);
            self.run_way.0.alone(units, t);
        }
    }

    /// Whether a ring's way alone is known (tests).
    #[cfg(test)]
    pub(crate) fn ring_way_known(&self) -> bool {
        self.ring_way.knows_alone()
    }

    /// The caller opened one of a ring's units alone in `t`.
    pub(crate) fn ring_alone(&mut self, t: Duration) {
        self.gain.alone(1, t);
    }

    /// The caller spent `t` opening and waiting while `units` units were
    /// handed over (`helped`: a pool thread opened some of them): judged
    /// against the caller's time to open as many alone.
    pub(crate) fn ring_judge(&mut self, units: usize, t: Duration, helped: bool) {
        self.gain.judge(units, t, helped);
    }

    /// Posts `job` to the pool, to run on a pool thread on its own time
    /// (not scoped to the caller's call); starts the pool if needed.
    /// `false` when there is no pool (one CPU, or the system refused
    /// threads): the job is not run.
    pub(crate) fn post(&mut self, job: impl FnOnce() + Send + 'static) -> bool {
        // The runs' way, if runs come after the ring, starts again.
        self.run_way.1 = None;
        // Lingering jobs end first: the job runs at once.
        self.starting();
        self.pool().is_some() && self.spawn(Job::Posted, job)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A ring's output slots are allocated by the thread that first opens
    /// a unit into each (a pool thread, mostly), not by the caller when
    /// the ring starts: on fresh pages that start cost the caller the
    /// page faults of every slot.
    #[test]
    fn output_slots_are_allocated_by_the_first_thread_to_open_into_them() {
        let open: Box<Open> = Box::new(|_, input, out| {
            out[..input.len()].copy_from_slice(input);
            Ok(input.len())
        });
        let mut ring = Ring::new(4, 8, 8, open, RingCounts::default()).unwrap();
        let allocated = |ring: &Ring| -> Vec<usize> {
            let slots = ring.shared.slots.iter();
            slots.map(|s| lock(&s.output).bytes.len()).collect()
        };
        assert_eq!(allocated(&ring), [0, 0, 0, 0]);
        ring.read_into(|room| {
            room.fill(7);
            Some(room.len())
        });
        ring.shared.published.store(1, Ordering::SeqCst);
        let seq = ring.shared.claim(true).unwrap();
        assert!(ring.shared.run(seq, true));
        assert_eq!(allocated(&ring), [8, 0, 0, 0]);
        assert_eq!(ring.front_state(), Front::Opened);
    }
}
