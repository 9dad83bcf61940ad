//! One stream's ring ([`Ring`]): a bounded queue of units in stream
//! order, each in a slot that owns its input and its output. The caller
//! posts a unit's input (trading buffers with a delivered slot: nothing
//! is copied) and a job on the process's pool works it on whichever
//! thread is free, claiming it first. The caller delivers units in order:
//! one done already is traded whole into the caller's buffer; one no
//! thread claimed it works itself; while it waits for one a pool thread
//! holds, it works a unit no thread claimed behind it; and one a pool
//! thread holds longer than twice a unit's usual time it takes over,
//! working the same input itself, and that thread's copy is dropped,
//! never delivered. A panic in the work, on any thread, is
//! [`Error::WorkerPanicked`].
//!
//! The work is the engine's (sealing a writer's plaintext, opening a
//! reader's ciphertext): nothing here knows what a segment or a key is.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::lock;
use super::pool::Workers;
use crate::Error;
use crate::core::window::Window;

/// The work on one unit: from its first index, its input (behind `head`,
/// bytes the caller may put in front of its output) into its output.
pub(crate) type Work = dyn Fn(u64, &[u8], &[u8], &mut Window) -> Result<(), Error> + Send + Sync;

/// A slot's unit is posted and no thread has claimed it.
const POSTED: u8 = 0;
/// A pool thread (or the caller, for a unit behind the one it waits
/// for) is working it.
const CLAIMED: u8 = 1;
/// Done: its output is in the slot.
const DONE: u8 = 2;
/// Its work failed or panicked: the error is in the slot.
const FAILED: u8 = 3;
/// The caller works it into its own buffer (claimed first, or taken over
/// from a late pool thread, whose copy is dropped).
const TAKEN: u8 = 4;

/// A unit's place in the ring.
struct Slot {
    state: AtomicU8,
    /// Index of the unit's first segment.
    first: Mutex<u64>,
    /// When a thread claimed it, and how long its work took.
    claimed: Mutex<Option<Instant>>,
    took: Mutex<Option<Duration>>,
    input: RwLock<Window>,
    out: Mutex<Window>,
    error: Mutex<Option<Error>>,
    /// The caller, parked until the unit is done.
    waiter: Mutex<Option<Thread>>,
}

impl Slot {
    /// An empty slot; its buffers (plaintext on one side or the other)
    /// are wiped on drop, wherever trades take them.
    fn new() -> Slot {
        let window = Window::secret;
        Slot {
            state: AtomicU8::new(TAKEN),
            first: Mutex::new(0),
            claimed: Mutex::new(None),
            took: Mutex::new(None),
            input: RwLock::new(window()),
            out: Mutex::new(window()),
            error: Mutex::new(None),
            waiter: Mutex::new(None),
        }
    }

    /// Claims the unit if no thread did, works it into the slot, and
    /// wakes the caller. A copy done after the caller took the unit over
    /// is dropped. Whether it claimed the unit.
    fn run(&self, job: &Job) -> bool {
        if self
            .state
            .compare_exchange(POSTED, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let start = Instant::now();
        *lock(&self.claimed) = Some(start);
        if let Some(d) = job.delay {
            std::thread::sleep(d);
        }
        let first = *lock(&self.first);
        let r = {
            let input = self.input.read().unwrap_or_else(|e| e.into_inner());
            let mut out = lock(&self.out);
            job.work(first, &[], input.data(), &mut out)
        };
        *lock(&self.took) = Some(start.elapsed());
        let state = match r {
            Ok(()) => DONE,
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
        true
    }
}

/// What every thread works a unit with.
struct Job {
    work: Box<Work>,
    /// Every unit's work panics (tests of the panic path).
    panic: AtomicBool,
    /// Pool threads sleep this long once they claimed a unit (tests: a
    /// thread descheduled in the middle of a unit).
    delay: Option<Duration>,
    /// Units the pool threads claimed.
    pooled: AtomicUsize,
}

impl Job {
    /// Works a unit; a panic is [`Error::WorkerPanicked`] (and the output
    /// is wiped of whatever the work left there).
    fn work(&self, first: u64, head: &[u8], input: &[u8], out: &mut Window) -> Result<(), Error> {
        let r = catch_unwind(AssertUnwindSafe(|| {
            assert!(
                !self.panic.load(Ordering::Relaxed),
                "injected panic in a unit's work"
            );
            (self.work)(first, head, input, out)
        }));
        r.unwrap_or_else(|_| {
            out.renew(0).ok();
            Err(Error::WorkerPanicked)
        })
    }
}

/// A stream's ring on the process's pool.
pub(crate) struct Ring {
    workers: Workers,
    job: Arc<Job>,
    /// Units posted and not delivered, in stream order.
    queue: VecDeque<Arc<Slot>>,
    /// Slots delivered, to reuse.
    free: Vec<Arc<Slot>>,
    /// Slots whose unit the caller took over while a late pool thread
    /// still reads them: reused once that thread let go.
    late: Vec<Arc<Slot>>,
    /// The most units posted at once.
    slots: usize,
    /// How long a unit took, last measured on any thread.
    unit_time: Option<Duration>,
    /// Units the caller took over from a late pool thread.
    pub(crate) taken_over: usize,
}

impl Ring {
    /// A ring of about twice the threads' units, doing `work`.
    pub(crate) fn new(workers: Workers, work: Box<Work>) -> Ring {
        let slots = 2 * workers.threads();
        let job = Job {
            work,
            panic: AtomicBool::new(workers.inject_panic.armed().is_some()),
            delay: workers.pool_delay.armed(),
            pooled: AtomicUsize::new(0),
        };
        Ring {
            workers,
            job: Arc::new(job),
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
    pub(crate) fn is_full(&mut self) -> bool {
        let (back, late) = self.late.drain(..).partition(|s| Arc::strong_count(s) == 1);
        self.late = late;
        self.free.extend::<Vec<_>>(back);
        !self.queue.is_empty() && self.queue.len() + self.late.len() >= self.slots
    }

    /// The stream's threads, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.workers.threads()
    }

    /// Units posted and not delivered.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether the oldest unit is done (or failed) on the pool.
    pub(crate) fn front_done(&self) -> bool {
        let front = self.queue.front();
        front.is_some_and(|s| matches!(s.state.load(Ordering::Acquire), DONE | FAILED))
    }

    /// Whether the oldest unit is to be delivered now, without waiting
    /// for a pool thread: done, or still unclaimed with a unit more
    /// posted behind it (the pool did not start it while the caller
    /// prepared a unit: the caller works it).
    pub(crate) fn front_due(&self) -> bool {
        self.front_done()
            || self.queue.len() >= 2 && self.queue[0].state.load(Ordering::Acquire) == POSTED
    }

    /// The stream's workers, for a run that borrows the caller's buffers.
    pub(crate) fn workers(&mut self) -> &mut Workers {
        &mut self.workers
    }

    /// Units the pool threads claimed so far (tests).
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.job.pooled.load(Ordering::Relaxed)
    }

    /// Makes every later unit's work panic (tests).
    #[cfg(test)]
    pub(crate) fn inject_panic(&mut self) {
        self.job.panic.store(true, Ordering::Relaxed);
    }

    /// Posts the unit in `input` (from index `first`) and leaves `input`
    /// an empty buffer of a delivered slot. On a thread of another
    /// `rayon` pool nothing is posted (waiting for a posted job there
    /// could mean running that pool's jobs): the caller works the unit
    /// when it delivers it.
    pub(crate) fn post(&mut self, input: &mut Window, first: u64) {
        let slot = self.free.pop().unwrap_or_else(|| Arc::new(Slot::new()));
        {
            let mut held = slot.input.write().unwrap_or_else(|e| e.into_inner());
            held.clear();
            std::mem::swap(&mut *held, input);
        }
        *lock(&slot.first) = first;
        *lock(&slot.claimed) = None;
        slot.state.store(POSTED, Ordering::Release);
        self.queue.push_back(Arc::clone(&slot));
        if rayon_core::current_thread_index().is_none() {
            // The job holds neither the slot nor the work past the ring: a
            // job the pool runs after the stream is gone does nothing.
            let (slot, job) = (Arc::downgrade(&slot), Arc::downgrade(&self.job));
            self.workers.post(move || {
                if let (Some(slot), Some(job)) = (slot.upgrade(), job.upgrade())
                    && slot.run(&job)
                {
                    job.pooled.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    }

    /// Delivers the oldest unit into `out`, behind `head` (bytes to go in
    /// front of it, taken): traded whole when a thread did it, else done
    /// here. Waits for a pool thread that works it (working a unit no
    /// thread claimed behind it meanwhile, then yielding its CPU a
    /// while, then parked) until it is late. `None` when the ring is
    /// empty. A unit whose work failed stays at the front, for
    /// [`drain`](Self::drain).
    pub(crate) fn deliver(
        &mut self,
        out: &mut Window,
        head: Option<Vec<u8>>,
    ) -> Option<Result<(), Error>> {
        let slot = Arc::clone(self.queue.front()?);
        let mut spins = 0;
        let r = loop {
            match slot.state.load(Ordering::Acquire) {
                POSTED => {
                    if slot
                        .state
                        .compare_exchange(POSTED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        break self.work_here(&slot, out, head.as_deref());
                    }
                }
                DONE => {
                    self.unit_time = lock(&slot.took).or(self.unit_time);
                    let mut done = lock(&slot.out);
                    match head.as_deref() {
                        Some(h) => {
                            let bytes = done.data();
                            let r = out.grow(h.len() + bytes.len());
                            if r.is_ok() {
                                out.clear();
                                out.extend(h);
                                out.extend(bytes);
                            }
                            break r;
                        }
                        None => {
                            std::mem::swap(out, &mut *done);
                            break Ok(());
                        }
                    }
                }
                FAILED => {
                    let e = lock(&slot.error).clone();
                    return Some(Err(e.unwrap_or(Error::WorkerPanicked)));
                }
                _ if self.late(&slot) => {
                    if slot
                        .state
                        .compare_exchange(CLAIMED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        self.taken_over += 1;
                        let r = self.work_here(&slot, out, head.as_deref());
                        // The late thread still reads this slot: it is
                        // reused once that thread let go.
                        return Some(self.delivered(r, true));
                    }
                }
                _ if self.help() => {}
                _ if spins < super::SPIN => {
                    spins += 1;
                    std::thread::yield_now();
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
        Some(self.delivered(r, false))
    }

    /// The front unit was delivered (`r`): its slot is freed (or, `late`,
    /// kept until the late thread lets go). A failure keeps it at the
    /// front, failed.
    fn delivered(&mut self, r: Result<(), Error>, late: bool) -> Result<(), Error> {
        let Some(slot) = self.queue.front() else {
            return r;
        };
        if let Err(e) = &r {
            *lock(&slot.error) = Some(e.clone());
            slot.state.store(FAILED, Ordering::Release);
            return r;
        }
        let slot = self.queue.pop_front().expect("the front");
        if late {
            self.late.push(slot);
        } else {
            self.free.push(slot);
        }
        r
    }

    /// Works on the caller's thread the first unit behind the front that
    /// no thread claimed, into its slot; whether there was one.
    fn help(&mut self) -> bool {
        let Some(slot) = self
            .queue
            .iter()
            .skip(1)
            .find(|s| s.state.load(Ordering::Acquire) == POSTED)
        else {
            return false;
        };
        let slot = Arc::clone(slot);
        slot.run(&self.job);
        true
    }

    /// Takes every unit not delivered back, in stream order: each one's
    /// input is handed to `back`; none is worked any more (a pool thread
    /// working one now has its copy dropped).
    pub(crate) fn drain(&mut self, mut back: impl FnMut(&[u8])) {
        while let Some(slot) = self.queue.pop_front() {
            slot.state.swap(TAKEN, Ordering::AcqRel);
            back(slot.input.read().unwrap_or_else(|e| e.into_inner()).data());
            self.late.push(slot);
        }
    }

    /// Works `slot`'s unit on the caller's thread, timing it.
    fn work_here(
        &mut self,
        slot: &Slot,
        out: &mut Window,
        head: Option<&[u8]>,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let first = *lock(&slot.first);
        let input = slot.input.read().unwrap_or_else(|e| e.into_inner());
        let r = self
            .job
            .work(first, head.unwrap_or_default(), input.data(), out);
        self.unit_time = Some(start.elapsed());
        r
    }

    /// How long a unit usually takes: the last one measured (a
    /// millisecond before any).
    fn usual(&self) -> Duration {
        self.unit_time.unwrap_or(Duration::from_millis(1))
    }

    /// Whether the pool thread working `slot` has held it more than twice
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
