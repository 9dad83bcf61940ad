//! A threaded writer's ring ([`Ring`]): a bounded queue of units (a few
//! whole segments each, all non-final), in stream order, each in a slot
//! that owns its plaintext and its sealed bytes. The sealer posts a full
//! unit (one its hold-back released) and gets back the slot's emptied
//! plaintext buffer; a job on the process's pool seals it, on whichever
//! thread is free, claiming it first. The caller delivers units in order:
//! one sealed already is traded whole into the output; one no thread
//! claimed it seals itself; one a pool thread holds longer than twice a
//! unit's usual time it takes over, sealing the same plaintext under the
//! same indices itself, and that thread's copy is dropped, never written.
//! A panic while sealing, on any thread, is [`Error::WorkerPanicked`].

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::held::Held;
use super::seal::seal_segments;
use crate::Error;
use crate::core::layout::Layout;
use crate::core::suite::Suite;
use crate::core::window::Window;
use crate::threads::Workers;

/// A slot's unit is posted and no thread has claimed it.
const POSTED: u8 = 0;
/// A pool thread is sealing it.
const CLAIMED: u8 = 1;
/// Sealed by a pool thread: its bytes are in the slot.
const SEALED: u8 = 2;
/// A pool thread's seal failed or panicked: its error is in the slot.
const FAILED: u8 = 3;
/// The caller sealed it (claimed first, or taken over from a late pool
/// thread, whose copy is dropped).
const TAKEN: u8 = 4;

/// How many times a waiting caller checks a unit before it parks.
const SPIN: u32 = 200;

/// A unit's place in the ring.
struct Slot {
    state: AtomicU8,
    /// Index of the unit's first segment.
    first: Mutex<u64>,
    /// When a pool thread claimed it, and how long it took to seal.
    claimed: Mutex<Option<Instant>>,
    took: Mutex<Option<Duration>>,
    plain: RwLock<Held>,
    out: Mutex<Window>,
    error: Mutex<Option<Error>>,
    /// The caller, parked until the unit is sealed.
    waiter: Mutex<Option<Thread>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    fn new() -> Slot {
        Slot {
            state: AtomicU8::new(TAKEN),
            first: Mutex::new(0),
            claimed: Mutex::new(None),
            took: Mutex::new(None),
            plain: RwLock::new(Held::new()),
            out: Mutex::new(Window::public()),
            error: Mutex::new(None),
            waiter: Mutex::new(None),
        }
    }

    /// The pool's job: claims the unit if no thread did, seals it into
    /// the slot, and wakes the caller. A copy sealed after the caller took
    /// the unit over is dropped.
    fn run(&self, seal: &Sealing) {
        if self
            .state
            .compare_exchange(POSTED, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let start = Instant::now();
        *lock(&self.claimed) = Some(start);
        if let Some(d) = seal.delay {
            std::thread::sleep(d);
        }
        let first = *lock(&self.first);
        let r = {
            let plain = self.plain.read().unwrap_or_else(PoisonError::into_inner);
            let mut out = lock(&self.out);
            seal.unit(first, &[], plain.data(), &mut out)
        };
        *lock(&self.took) = Some(start.elapsed());
        let state = match r {
            Ok(()) => SEALED,
            Err(e) => {
                *lock(&self.error) = Some(e);
                FAILED
            }
        };
        let _ = self
            .state
            .compare_exchange(CLAIMED, state, Ordering::AcqRel, Ordering::Acquire);
        if let Some(t) = lock(&self.waiter).take() {
            t.unpark();
        }
    }
}

/// What every thread seals a unit with.
struct Sealing {
    suite: Arc<Suite>,
    layout: Layout,
    /// Every seal panics (tests of the panic path).
    panic: bool,
    /// Pool threads sleep this long once they claimed a unit (tests: a
    /// thread descheduled in the middle of a unit).
    delay: Option<Duration>,
}

impl Sealing {
    /// Seals `plain`, whole non-final segments from index `first`, into
    /// `out` behind `head`; a panic is [`Error::WorkerPanicked`].
    fn unit(&self, first: u64, head: &[u8], plain: &[u8], out: &mut Window) -> Result<(), Error> {
        catch_unwind(AssertUnwindSafe(|| {
            assert!(!self.panic, "injected panic in a seal");
            seal_segments(&self.suite, &self.layout, first, false, head, plain, out).map(|_| ())
        }))
        .unwrap_or(Err(Error::WorkerPanicked))
    }
}

/// A writer's ring on the process's pool.
pub(super) struct Ring {
    workers: Workers,
    sealing: Arc<Sealing>,
    /// Units posted and not delivered, in stream order.
    queue: VecDeque<Arc<Slot>>,
    /// Slots delivered, to reuse.
    free: Vec<Arc<Slot>>,
    /// Slots whose unit the caller took over while a late pool thread
    /// still reads them: reused once that thread let go.
    late: Vec<Arc<Slot>>,
    /// The most units posted at once.
    slots: usize,
    /// How long a unit took to seal, last measured on any thread.
    unit_time: Option<Duration>,
    /// Units the caller took over from a late pool thread.
    pub(super) taken_over: usize,
}

impl Ring {
    /// A ring of about twice the threads' units.
    pub(super) fn new(workers: Workers, suite: Arc<Suite>, layout: Layout) -> Ring {
        let slots = 2 * workers.threads();
        let panic = workers.inject_panic.armed().is_some();
        let delay = workers.pool_delay.armed();
        Ring {
            workers,
            sealing: Arc::new(Sealing {
                suite,
                layout,
                panic,
                delay,
            }),
            queue: VecDeque::new(),
            free: Vec::new(),
            late: Vec::new(),
            slots,
            unit_time: None,
            taken_over: 0,
        }
    }

    /// Every slot holds a unit not delivered (or one a late pool thread
    /// still reads): the next post must wait for a delivery, and the ring
    /// holds no more than its slots.
    pub(super) fn is_full(&mut self) -> bool {
        let (back, late) = self.late.drain(..).partition(|s| Arc::strong_count(s) == 1);
        self.late = late;
        self.free.extend::<Vec<_>>(back);
        !self.queue.is_empty() && self.queue.len() + self.late.len() >= self.slots
    }

    /// Whether no unit waits for delivery.
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether the oldest unit is done: sealed (or failed) on the pool.
    pub(super) fn front_sealed(&self) -> bool {
        self.queue
            .front()
            .is_some_and(|s| matches!(s.state.load(Ordering::Acquire), SEALED | FAILED))
    }

    /// Whether the oldest unit is to be delivered now, without waiting
    /// for a pool thread: done, or still unclaimed with a unit more
    /// posted behind it (the pool did not start it while the caller
    /// filled a unit: the caller seals it).
    pub(super) fn front_due(&self) -> bool {
        self.front_sealed()
            || self.queue.len() >= 2 && self.queue[0].state.load(Ordering::Acquire) == POSTED
    }

    /// Makes every later seal panic (tests).
    #[cfg(test)]
    pub(super) fn inject_panic(&mut self) {
        if let Some(s) = Arc::get_mut(&mut self.sealing) {
            s.panic = true;
        } else {
            self.sealing = Arc::new(Sealing {
                suite: Arc::clone(&self.sealing.suite),
                layout: self.sealing.layout,
                panic: true,
                delay: self.sealing.delay,
            });
        }
    }

    /// Posts the unit in `plain` (whole segments from index `first`) and
    /// leaves `plain` an empty buffer of a delivered slot. On a thread of
    /// another `rayon` pool nothing is posted (waiting for a posted job
    /// there could mean running that pool's jobs): the caller seals the
    /// unit when it delivers it.
    pub(super) fn post(&mut self, plain: &mut Held, first: u64) {
        let slot = self.free.pop().unwrap_or_else(|| Arc::new(Slot::new()));
        {
            let mut held = slot.plain.write().unwrap_or_else(PoisonError::into_inner);
            held.clear();
            std::mem::swap(&mut *held, plain);
        }
        *lock(&slot.first) = first;
        *lock(&slot.claimed) = None;
        slot.state.store(POSTED, Ordering::Release);
        self.queue.push_back(Arc::clone(&slot));
        if rayon_core::current_thread_index().is_none() {
            // The job holds neither the slot nor the key past the ring: a
            // job the pool runs after the stream is gone does nothing.
            let (slot, sealing) = (Arc::downgrade(&slot), Arc::downgrade(&self.sealing));
            self.workers.post(move || {
                if let (Some(slot), Some(sealing)) = (slot.upgrade(), sealing.upgrade()) {
                    slot.run(&sealing);
                }
            });
        }
    }

    /// Delivers the oldest unit into the drained `out`, behind `head` (the
    /// stream header not written yet, taken): traded whole when a pool
    /// thread sealed it, else sealed here. Waits for a pool thread that
    /// seals it (a short spin, then parked) until it is late. `None` when
    /// the ring is empty.
    pub(super) fn deliver(
        &mut self,
        out: &mut Window,
        head: Option<Vec<u8>>,
    ) -> Option<Result<(), Error>> {
        let slot = self.queue.pop_front()?;
        let mut spins = 0;
        let r = loop {
            match slot.state.load(Ordering::Acquire) {
                POSTED => {
                    if slot
                        .state
                        .compare_exchange(POSTED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        break self.seal_here(&slot, out, head.as_deref());
                    }
                }
                SEALED => {
                    self.unit_time = lock(&slot.took).or(self.unit_time);
                    let mut sealed = lock(&slot.out);
                    match head.as_deref() {
                        Some(h) => {
                            let bytes = sealed.data();
                            let r = out.grow(h.len() + bytes.len());
                            if r.is_ok() {
                                out.clear();
                                out.extend(h);
                                out.extend(bytes);
                            }
                            break r;
                        }
                        None => {
                            std::mem::swap(out, &mut *sealed);
                            break Ok(());
                        }
                    }
                }
                FAILED => {
                    break Err(lock(&slot.error).take().unwrap_or(Error::WorkerPanicked));
                }
                _ if self.late(&slot) => {
                    if slot
                        .state
                        .compare_exchange(CLAIMED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        self.taken_over += 1;
                        let r = self.seal_here(&slot, out, head.as_deref());
                        // The late thread still reads this slot: it is
                        // reused once that thread let go.
                        self.late.push(slot);
                        return Some(r);
                    }
                }
                _ if spins < SPIN => {
                    spins += 1;
                    std::hint::spin_loop();
                }
                _ => {
                    *lock(&slot.waiter) = Some(std::thread::current());
                    if slot.state.load(Ordering::Acquire) == CLAIMED {
                        std::thread::park_timeout(self.patience(&slot));
                    }
                    lock(&slot.waiter).take();
                }
            }
        };
        self.free.push(slot);
        Some(r)
    }

    /// Seals `slot`'s unit on the caller's thread, timing it.
    fn seal_here(
        &mut self,
        slot: &Slot,
        out: &mut Window,
        head: Option<&[u8]>,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let first = *lock(&slot.first);
        let plain = slot.plain.read().unwrap_or_else(PoisonError::into_inner);
        let r = self
            .sealing
            .unit(first, head.unwrap_or_default(), plain.data(), out);
        self.unit_time = Some(start.elapsed());
        r
    }

    /// How long a unit usually takes: the last one measured (a
    /// millisecond before any).
    fn usual(&self) -> Duration {
        self.unit_time.unwrap_or(Duration::from_millis(1))
    }

    /// Whether the pool thread sealing `slot` has held it more than twice
    /// a unit's usual time.
    fn late(&self, slot: &Slot) -> bool {
        lock(&slot.claimed).is_some_and(|t| t.elapsed() > 2 * self.usual())
    }

    /// How long the caller parks for `slot` at most: until it is late.
    fn patience(&self, slot: &Slot) -> Duration {
        let since = lock(&slot.claimed).map_or(Duration::ZERO, |t| t.elapsed());
        (2 * self.usual())
            .saturating_sub(since)
            .max(Duration::from_micros(20))
    }
}
