//! A ring of units opened ahead of the caller: the caller reads each
//! unit's input into a slot, the pool threads open the units in order as
//! soon as they are published, and the caller hands out each unit's output
//! as it is ready, between its own calls. Nothing is scoped to one call:
//! the slots' buffers are owned by the ring, and a pool thread works on
//! them while the caller is away (handing out the units before).
//!
//! The rules it owns:
//! - **Units are opened once, by whoever claims them**: a shared counter
//!   hands each published unit out once, in order, to a pool thread or to
//!   the caller. The caller never waits for a unit no thread has claimed:
//!   it claims it and opens it itself.
//! - **Output only from a unit that opened**: a slot's output is handed
//!   out only once its job returned `Ok`; a failed unit stops the ring
//!   there (the caller hands out what came before it, then unwinds).
//! - **A halt is final**: [`Ring::halt`] stops every claim and waits for
//!   the units in flight, so that the caller may take every slot back.
//! - **Waits park**: the caller parks while the unit it needs is being
//!   opened by a pool thread (woken when it is done); a pool thread with
//!   nothing to claim parks for a short while, then its job ends (the
//!   caller posts another when it publishes more).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use super::pool::Workers;
use crate::Error;
use crate::probe::Tally;

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

/// One unit's buffers.
struct Slot {
    input: Vec<u8>,
    /// Input bytes read so far.
    filled: usize,
    /// Plaintext: wiped before the slot takes another unit and on drop.
    output: Vec<u8>,
    /// Output bytes of the unit that opened here.
    len: usize,
    /// How the unit's job went.
    result: Result<(), Error>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.output.zeroize();
    }
}

/// What the caller and the pool threads share.
struct Shared {
    slots: Box<[Mutex<Slot>]>,
    /// Each slot's state: [`PENDING`], [`OPENED`], [`FAILED`].
    state: Box<[AtomicU8]>,
    open: Box<Open>,
    /// Units below this may be claimed.
    published: AtomicU64,
    /// The next unit to claim.
    claimed: AtomicU64,
    /// No unit is claimed any more.
    halted: AtomicBool,
    /// Pool threads inside a claim (from before they look to after the
    /// unit they claimed is done).
    in_flight: AtomicUsize,
    /// A pool job is running, or posted and not yet started.
    live: AtomicBool,
    /// The caller waits: a pool thread that finishes a unit wakes it.
    caller_waits: AtomicBool,
    caller: Thread,
    /// The pool thread parked for lack of work, woken when the caller
    /// publishes.
    idle: Mutex<Option<Thread>>,
    /// A job panicked.
    panicked: AtomicBool,
    /// Units opened, and those of them the pool threads opened (tests).
    opened: Tally,
    pool_opened: Tally,
    /// Times the caller parked (tests).
    parks: Tally,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Claims the next published unit, unless the ring halted.
    fn claim(&self) -> Option<u64> {
        let mut c = self.claimed.load(Ordering::SeqCst);
        loop {
            if self.halted.load(Ordering::SeqCst) || c >= self.published.load(Ordering::SeqCst) {
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

    /// Opens claimed unit `seq` in its slot and says how it went.
    fn run(&self, seq: u64) {
        let i = slot_of(seq, self.slots.len());
        self.opened.add(1);
        let ok = {
            let mut guard = lock(&self.slots[i]);
            let slot = &mut *guard;
            let r = catch_unwind(AssertUnwindSafe(|| {
                (self.open)(seq, &slot.input[..slot.filled], &mut slot.output)
            }));
            slot.result = match r {
                Ok(Ok(len)) => {
                    slot.len = len;
                    Ok(())
                }
                Ok(Err(e)) => Err(e),
                Err(_) => {
                    self.panicked.store(true, Ordering::SeqCst);
                    Err(Error::WorkerPanicked)
                }
            };
            if slot.result.is_err() {
                slot.output.zeroize();
                slot.len = 0;
            }
            slot.result.is_ok()
        };
        self.state[i].store(if ok { OPENED } else { FAILED }, Ordering::SeqCst);
    }

    /// A pool thread's job: claims and opens units until none is left for
    /// [`LINGER`], or the ring halts.
    fn work(&self) {
        let mut idle_since: Option<Instant> = None;
        loop {
            self.in_flight.fetch_add(1, Ordering::SeqCst);
            let claimed = self.claim();
            if let Some(seq) = claimed {
                self.run(seq);
                self.pool_opened.add(1);
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
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
                let more = !self.halted.load(Ordering::SeqCst)
                    && self.claimed.load(Ordering::SeqCst) < self.published.load(Ordering::SeqCst);
                if more
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
            if self.claimed.load(Ordering::SeqCst) < self.published.load(Ordering::SeqCst)
                || self.halted.load(Ordering::SeqCst)
            {
                lock(&self.idle).take();
                continue;
            }
            std::thread::park_timeout(left);
            lock(&self.idle).take();
        }
    }

    fn wake_caller(&self) {
        if self.caller_waits.load(Ordering::SeqCst) {
            self.caller.unpark();
        }
    }

    /// The caller waits until `done` holds, parked (woken by the pool
    /// thread that finishes a unit).
    fn wait_until(&self, done: impl Fn() -> bool) {
        while !done() {
            self.caller_waits.store(true, Ordering::SeqCst);
            if !done() {
                self.parks.add(1);
                std::thread::park_timeout(NAP);
            }
            self.caller_waits.store(false, Ordering::SeqCst);
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
    /// The unit being handed out (or next to be).
    front: u64,
    /// Output bytes of the front unit handed out.
    handed: usize,
    /// The unit whose input is being read (its slot free).
    fill: u64,
    /// Each unit's input length: every unit's but maybe the last.
    unit: usize,
}

impl Ring {
    /// A ring of `slots` slots for units of up to `input` input bytes and
    /// `output` output bytes each, opened by `open`.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when the slots cannot be allocated.
    pub(crate) fn new(
        slots: usize,
        input: usize,
        output: usize,
        open: Box<Open>,
        (opened, pool_opened): (Tally, Tally),
    ) -> Result<Ring, Error> {
        let slots = slots.max(2);
        let mut made = Vec::new();
        made.try_reserve_exact(slots)
            .map_err(|_| Error::Allocation(slots))?;
        for _ in 0..slots {
            made.push(Mutex::new(Slot {
                input: zeroed(input)?,
                filled: 0,
                output: zeroed(output)?,
                len: 0,
                result: Ok(()),
            }));
        }
        let shared = Shared {
            slots: made.into_boxed_slice(),
            state: (0..slots).map(|_| AtomicU8::new(PENDING)).collect(),
            open,
            published: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            halted: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            live: AtomicBool::new(false),
            caller_waits: AtomicBool::new(false),
            caller: std::thread::current(),
            idle: Mutex::new(None),
            panicked: AtomicBool::new(false),
            opened,
            pool_opened,
            parks: Tally::default(),
        };
        Ok(Ring {
            shared: Arc::new(shared),
            front: 0,
            handed: 0,
            fill: 0,
            unit: input,
        })
    }

    fn slots(&self) -> u64 {
        self.shared.slots.len() as u64
    }

    /// The unit being handed out, counted from the ring's first.
    pub(crate) fn front(&self) -> u64 {
        self.front
    }

    /// What the front unit is.
    pub(crate) fn front_state(&self) -> Front {
        let s = &*self.shared;
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

    /// Published units no thread has claimed yet.
    pub(crate) fn waiting(&self) -> u64 {
        let s = &*self.shared;
        s.published
            .load(Ordering::SeqCst)
            .saturating_sub(s.claimed.load(Ordering::SeqCst))
    }

    /// Reads into the slot of the unit being read: `read` is given the
    /// rest of its input (`want` bytes in all: the unit's length) and
    /// returns what it brought (`None`: nothing). A unit read whole moves
    /// the reading on to the next slot. Returns what `read` returned;
    /// `None` without a free slot too.
    pub(crate) fn read_into(
        &mut self,
        want: usize,
        read: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Option<usize> {
        if !self.has_room() {
            return None;
        }
        let i = slot_of(self.fill, self.shared.slots.len());
        let n = {
            let mut slot = lock(&self.shared.slots[i]);
            if slot.filled == 0 {
                self.shared.state[i].store(PENDING, Ordering::SeqCst);
            }
            let want = want.min(slot.input.len());
            let from = slot.filled;
            let n = read(&mut slot.input[from..want])?;
            slot.filled += n;
            if slot.filled == want && want > 0 {
                self.fill += 1;
            }
            n
        };
        Some(n)
    }

    /// Publishes every unit whose input is whole and followed by more
    /// input, and wakes or posts a pool thread to open them.
    pub(crate) fn publish(&mut self, workers: &mut Workers) {
        let started = {
            let i = slot_of(self.fill, self.shared.slots.len());
            self.has_room() && lock(&self.shared.slots[i]).filled > 0
        };
        let upto = if started {
            self.fill
        } else {
            self.fill.saturating_sub(1)
        };
        let s = &self.shared;
        if upto <= s.published.load(Ordering::SeqCst) {
            return;
        }
        s.published.store(upto, Ordering::SeqCst);
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

    /// The caller claims the next published unit and opens it; whether
    /// there was one.
    pub(crate) fn open_own(&mut self) -> bool {
        match self.shared.claim() {
            Some(seq) => {
                self.shared.run(seq);
                true
            }
            None => false,
        }
    }

    /// Waits, parked, until the front unit is no longer being opened.
    pub(crate) fn wait_front(&self) {
        let i = slot_of(self.front, self.shared.slots.len());
        let s = &*self.shared;
        s.wait_until(|| s.state[i].load(Ordering::SeqCst) != PENDING);
    }

    /// Copies the front unit's output from where the last copy stopped
    /// into `buf` (the front must be [`Front::Opened`]); a unit handed out
    /// whole frees its slot. Returns the bytes copied.
    pub(crate) fn hand_out(&mut self, buf: &mut [u8]) -> usize {
        let i = slot_of(self.front, self.shared.slots.len());
        let mut slot = lock(&self.shared.slots[i]);
        debug_assert!(slot.result.is_ok());
        let n = buf.len().min(slot.len - self.handed);
        buf[..n].copy_from_slice(&slot.output[self.handed..self.handed + n]);
        self.handed += n;
        if self.handed == slot.len {
            let len = slot.len;
            slot.output[..len].zeroize();
            slot.filled = 0;
            slot.len = 0;
            drop(slot);
            self.front += 1;
            self.handed = 0;
        }
        n
    }

    /// Whether a job panicked.
    pub(crate) fn panicked(&self) -> bool {
        self.shared.panicked.load(Ordering::SeqCst)
    }

    /// Stops every claim and waits for the units in flight: from now on
    /// only the caller touches the slots.
    pub(crate) fn halt(&mut self) {
        let s = &*self.shared;
        s.halted.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&s.idle).take() {
            t.unpark();
        }
        s.wait_until(|| s.in_flight.load(Ordering::SeqCst) == 0);
    }

    /// After [`halt`](Self::halt): the front unit's output if it opened
    /// (all of it, and how much of it was handed out), then each later
    /// unit's input as read (opened or not), in order, given to `input`;
    /// stops at the first error either returns.
    ///
    /// # Errors
    ///
    /// The first error of `front` or `input`.
    pub(crate) fn drain(
        &mut self,
        front: impl FnOnce(&[u8], usize) -> Result<(), Error>,
        mut input: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        debug_assert!(self.shared.halted.load(Ordering::SeqCst));
        let k = self.shared.slots.len();
        let mut seq = self.front;
        let opened = self.front < self.shared.claimed.load(Ordering::SeqCst)
            && self.shared.state[slot_of(seq, k)].load(Ordering::SeqCst) == OPENED;
        if opened {
            let slot = lock(&self.shared.slots[slot_of(seq, k)]);
            front(&slot.output[..slot.len], self.handed)?;
            seq += 1;
        }
        while seq <= self.fill && seq < self.front + self.slots() {
            let slot = lock(&self.shared.slots[slot_of(seq, k)]);
            if slot.filled > 0 {
                input(&slot.input[..slot.filled])?;
            }
            seq += 1;
        }
        Ok(())
    }

    /// Input bytes read and not yet handed out as output (the front's
    /// included).
    pub(crate) fn read_ahead(&self) -> usize {
        let k = self.shared.slots.len();
        (self.front..=self.fill)
            .take_while(|&seq| seq < self.front + self.slots())
            .map(|seq| lock(&self.shared.slots[slot_of(seq, k)]).filled)
            .sum()
    }

    /// Whether the front unit is partly handed out.
    pub(crate) fn handing(&self) -> bool {
        self.handed > 0
    }

    /// The input length of a whole unit.
    pub(crate) fn unit(&self) -> usize {
        self.unit
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.shared.halted.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&self.shared.idle).take() {
            t.unpark();
        }
    }
}

/// `len` zero bytes, or [`Error::Allocation`].
fn zeroed(len: usize) -> Result<Vec<u8>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::Allocation(len))?;
    v.resize(len, 0);
    Ok(v)
}

impl Workers {
    /// Posts `job` to the pool, to run on a pool thread on its own time
    /// (not scoped to the caller's call); starts the pool if needed.
    /// `false` when there is no pool (one CPU, or the system refused
    /// threads): the job is not run.
    pub(crate) fn post(&mut self, job: impl FnOnce() + Send + 'static) -> bool {
        // Lingering jobs end first: the job runs at once.
        self.starting();
        match self.pool() {
            Some(pool) => {
                pool.spawn(job);
                true
            }
            None => false,
        }
    }
}
