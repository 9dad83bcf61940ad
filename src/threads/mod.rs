//! Several threads sealing or opening the segments of one stream.
//!
//! Segment *i* is sealed and opened from the stream key and *i* alone
//! ([`Suite::seal_at`](crate::core::suite::Suite::seal_at) /
//! [`open_at`](crate::core::suite::Suite::open_at) take the index), so
//! consecutive segments are independent work. The sealer and the opener
//! cut a run of them into [`Piece`]s, each with its own index, plaintext
//! and output slice (never a nonce carried from one piece to the next),
//! and [`Workers::run`] hands the pieces out in whole batches: one
//! contiguous share per thread, the calling thread working on the first.
//! The engine then reads the results in order, so the stream's rules
//! (release in order, the final segment last, the first failure wins)
//! stay where they were.
//!
//! A writer's large writes go through [`Workers::pipeline`] instead: the
//! shares are taken one after the other by whichever thread is free, each
//! sealed into one of `n + 1` slots, and the caller moves each one out to
//! the inner writer (in order, as soon as it is ready) while the others
//! seal the next. The `Write` contract makes that copy the caller's, and
//! done after each batch it left the other threads waiting: the pipeline
//! overlaps it with their sealing, with no hand-over per batch. The caller
//! seals shares too, as many as its measured times say leave it no later
//! than the others ([`Pace`]).
//!
//! The threads are a [`rayon_core`] pool owned by the stream: its
//! scoped jobs seal straight from the caller's slice and open straight
//! into the caller's buffer, with no copy and no `unsafe` here, and its
//! threads wait for work without being spawned per batch (awake for a
//! while after each run, [`Workers::linger`], then asleep). The pool is
//! built on the first batch (a stream that stays small spawns nothing)
//! and its threads are joined when the stream is dropped: no worker
//! outlives its stream. A panic in a job is caught where it happens and
//! becomes [`Error::WorkerPanicked`].

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::Error;

#[cfg(test)]
mod stream_tests;

/// Plaintext bytes one thread takes per batch at least: runs of smaller
/// segments go to a thread several at a time, so that each hand-over
/// carries about this much work (a wake-up costs microseconds; sealing
/// 64 KiB takes tens of them).
pub(crate) const SHARE: usize = 64 * 1024;

/// How long the caller waits awake for the other shares of a run before
/// it lets the scope put it to sleep: 4096 spin-loop hints, tens to a
/// couple of hundred microseconds (short, since a spinning caller holds a
/// core that an oversubscribed worker may need). Measured with 16384
/// (encrypting 64 MiB into `io::sink()`, 64 KiB segments, 2 threads, 9
/// interleaved rounds): AES-128-GCM 1.31× → 1.57× of one thread,
/// ChaCha20-Poly1305 1.65× → 1.75×; no change at 1 MiB segments, whose
/// shares are long enough to hide the wake-up.
const SPIN: usize = 1 << 12;

/// How long a pool thread stays awake after a run, for the next one
/// ([`Workers::linger`]).
const LINGER: Duration = Duration::from_micros(100);

/// The most segments in one thread's share (tiny segments: the list of
/// pieces stays small).
const SHARE_SEGMENTS: usize = 64;

/// The segments in a batch for `threads` threads and segments of `seg`
/// plaintext bytes: one share per thread, each of at least [`SHARE`]
/// bytes (at least one segment, at most [`SHARE_SEGMENTS`]).
pub(crate) fn batch_segments(threads: usize, seg: usize) -> usize {
    let per = SHARE.div_ceil(seg.max(1)).clamp(1, SHARE_SEGMENTS);
    threads.saturating_mul(per)
}

/// One segment of a run: what to seal or open, where the result goes, and
/// how it went.
pub(crate) struct Piece<'a> {
    /// The segment's index in the stream (its nonce's counter).
    pub(crate) index: u64,
    /// Whether it is sealed or opened as the final segment.
    pub(crate) last: bool,
    /// Plaintext to seal, or sealed bytes to open.
    pub(crate) input: &'a [u8],
    /// Where its sealed bytes or plaintext go.
    pub(crate) output: &'a mut [u8],
    /// The outcome; `Ok` until the job says otherwise.
    pub(crate) result: Result<(), Error>,
}

/// The threads of one stream: the caller plus `threads - 1` pool threads,
/// started on the first [`run`](Self::run).
pub(crate) struct Workers {
    threads: usize,
    pool: Option<rayon_core::ThreadPool>,
    handles: Vec<JoinHandle<()>>,
    /// The caller's times in pipelines.
    pace: Pace,
    /// Bumped when a run starts or the workers end: a pool thread kept
    /// awake after a run ([`linger`](Self::linger)) stops waiting then.
    generation: std::sync::Arc<AtomicUsize>,
    /// Pool threads kept awake after a run: at most one less than the
    /// machine's CPUs (more would spin on cores the others need).
    lingering: usize,
    /// Pool threads kept awake so far (tests that runs linger).
    #[cfg(test)]
    pub(crate) lingered: usize,
    /// Make jobs panic (tests of the panic path): on the pool threads in
    /// [`run`](Self::run), on every thread in [`pipeline`](Self::pipeline).
    #[cfg(test)]
    pub(crate) inject_panic: bool,
    /// Pool threads running (tests that none outlives the workers).
    #[cfg(test)]
    alive: std::sync::Arc<AtomicUsize>,
}

#[cfg(test)]
thread_local! {
    /// Workers made on this thread panic in their pool threads' jobs
    /// (tests of the panic path through the fronts).
    pub(crate) static INJECT_PANIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Workers {
    /// Workers for `threads` threads (2 or more; the caller is one of them).
    /// Spawns nothing yet.
    pub(crate) fn new(threads: usize) -> Workers {
        debug_assert!(threads > 1, "one thread needs no workers");
        Workers {
            threads,
            pool: None,
            handles: Vec::new(),
            pace: Pace::default(),
            generation: std::sync::Arc::default(),
            lingering: 0,
            #[cfg(test)]
            lingered: 0,
            #[cfg(test)]
            inject_panic: INJECT_PANIC.with(std::cell::Cell::get),
            #[cfg(test)]
            alive: std::sync::Arc::default(),
        }
    }

    /// The thread count, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Starts the pool threads if they are not running; `None` when the
    /// system refuses threads (the caller then does all the work itself:
    /// the bytes are the same).
    fn pool(&mut self) -> Option<&rayon_core::ThreadPool> {
        if self.pool.is_none() {
            let handles = &mut self.handles;
            #[cfg(test)]
            let alive = &self.alive;
            let built = rayon_core::ThreadPoolBuilder::new()
                .num_threads(self.threads - 1)
                .thread_name(|i| format!("cipherio-{i}"))
                .spawn_handler(|thread| {
                    let mut b = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        b = b.name(name.to_owned());
                    }
                    if let Some(size) = thread.stack_size() {
                        b = b.stack_size(size);
                    }
                    #[cfg(test)]
                    let alive = std::sync::Arc::clone(alive);
                    handles.push(b.spawn(move || {
                        #[cfg(test)]
                        alive.fetch_add(1, Ordering::SeqCst);
                        thread.run();
                        #[cfg(test)]
                        alive.fetch_sub(1, Ordering::SeqCst);
                    })?);
                    Ok(())
                })
                .build();
            match built {
                Ok(pool) => {
                    self.pool = Some(pool);
                    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
                    self.lingering = self.threads.min(cpus) - 1;
                }
                Err(_) => {
                    // The threads that did start end with the pool that
                    // was never returned; wait for them.
                    self.join();
                    return None;
                }
            }
        }
        self.pool.as_ref()
    }

    /// Runs `job` on every piece, in `threads` contiguous shares, the
    /// caller's thread taking the first; returns once all are done. A job
    /// reports its outcome in [`Piece::result`].
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] when a job panicked (every other job has
    /// still run to its end).
    pub(crate) fn run(
        &mut self,
        pieces: &mut [Piece<'_>],
        job: impl Fn(&mut Piece<'_>) + Sync,
    ) -> Result<(), Error> {
        let threads = self.threads;
        #[cfg(test)]
        let inject = self.inject_panic;
        self.starting();
        let Some(pool) = self.pool() else {
            pieces.iter_mut().for_each(&job);
            return Ok(());
        };
        let per = pieces.len().div_ceil(threads).max(1);
        let mut shares = pieces.chunks_mut(per);
        let own = shares.next();
        let panicked = AtomicBool::new(false);
        let done = AtomicUsize::new(0);
        let (job, panicked_ref, done_ref) = (&job, &panicked, &done);
        let guarded = move |share: &mut [Piece<'_>], _on_pool: bool| {
            let r = catch_unwind(AssertUnwindSafe(|| {
                #[cfg(test)]
                if _on_pool && inject {
                    panic!("injected worker panic");
                }
                share.iter_mut().for_each(job);
            }));
            if r.is_err() {
                panicked_ref.store(true, Ordering::Relaxed);
            }
            done_ref.fetch_add(1, Ordering::Release);
        };
        pool.in_place_scope(|scope| {
            let mut spawned = 0;
            for share in shares {
                scope.spawn(move |_| guarded(share, true));
                spawned += 1;
            }
            if let Some(share) = own {
                guarded(share, false);
            }
            // The other shares are usually a few microseconds from done:
            // wait for them awake (the scope would sleep, and waking costs
            // more than the wait), a bounded while.
            for _ in 0..SPIN {
                if done_ref.load(Ordering::Acquire) > spawned {
                    break;
                }
                std::hint::spin_loop();
            }
        });
        self.linger();
        if panicked.into_inner() {
            return Err(Error::WorkerPanicked);
        }
        Ok(())
    }

    /// Runs `job(u, slot)` for the units `0..units` on the threads, in
    /// order of their numbers, each into one of `slots` (unit `u` into
    /// slot `u % slots.len()`, which the job fills from its start and
    /// returns the length of), and hands every unit's bytes, in order, to
    /// `deliver` on the calling thread as soon as they are ready: the
    /// caller moves unit `u` out while the pool threads work on the next
    /// ones, and works on one itself only when unit `u` is not ready yet.
    /// A slot is reused once its unit is delivered, so at most
    /// `slots.len()` units are in flight: unit `u` starts only once unit
    /// `u - slots.len()` has been delivered (and so was done), a rule
    /// callers may rely on (the writer's last job clears the buffer its
    /// first units read). No hand-over per batch: each thread takes the
    /// next unit when it is done with one.
    ///
    /// `deliver` returns how many of the bytes it took; 0 stops the run:
    /// no unit is started after that, those started are finished, and
    /// their undelivered bytes come back in [`Piped::pending`]. A job
    /// that fails or panics stops the run too ([`Piped::error`]; a panic
    /// is [`Error::WorkerPanicked`]); nothing after the unit before it is
    /// delivered.
    pub(crate) fn pipeline(
        &mut self,
        units: usize,
        slots: Vec<&mut [u8]>,
        job: impl Fn(usize, &mut [u8]) -> Result<usize, Error> + Sync,
        deliver: impl FnMut(&[u8]) -> usize,
    ) -> Piped {
        #[cfg(test)]
        let inject = self.inject_panic;
        #[cfg(not(test))]
        let inject = false;
        let mut line = Line {
            ready: slots.iter().map(|_| AtomicUsize::new(0)).collect(),
            slots: slots
                .into_iter()
                .map(|bytes| {
                    Mutex::new(Slot {
                        bytes,
                        len: 0,
                        result: Ok(()),
                    })
                })
                .collect(),
            units,
            threads: 1,
            next: AtomicUsize::new(0),
            drained: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            caller: std::thread::current(),
            workers: Mutex::new(Vec::new()),
        };
        let threads = self.threads;
        self.starting();
        if self.pool().is_none() {
            let delivered = line.deliver_all(&job, deliver, inject, &mut self.pace);
            return line.finish(delivered);
        }
        let (Some(pool), pace) = (&self.pool, &mut self.pace) else {
            unreachable!("started above")
        };
        let spawn = threads.min(units).saturating_sub(1);
        line.threads = spawn + 1;
        let (line_ref, job) = (&line, &job);
        let delivered = pool.in_place_scope(|scope| {
            for _ in 0..spawn {
                scope.spawn(move |_| line_ref.work(job, inject));
            }
            line_ref.deliver_all(job, deliver, inject, pace)
        });
        self.linger();
        line.finish(delivered)
    }

    /// A run starts: pool threads kept awake after the last one stop
    /// waiting, and take its jobs at once.
    fn starting(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// A run ended: each pool thread stays awake for [`LINGER`] (or until
    /// the next run starts), so that the next run, often microseconds
    /// away (a small write's copy into the buffer), does not wait for a
    /// sleeping thread to wake (tens of microseconds here, against a
    /// share's tens of microseconds of sealing).
    fn linger(&mut self) {
        let Some(pool) = &self.pool else {
            return;
        };
        let g = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        #[cfg(test)]
        {
            self.lingered += self.lingering;
        }
        for _ in 0..self.lingering {
            let generation = std::sync::Arc::clone(&self.generation);
            pool.spawn(move || {
                let since = Instant::now();
                let mut spins = 0u32;
                while generation.load(Ordering::Acquire) == g && since.elapsed() < LINGER {
                    if spins < 256 {
                        spins += 1;
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
            });
        }
    }

    /// Ends the pool and waits for its threads.
    fn join(&mut self) {
        self.starting();
        // Dropping the pool tells its threads to stop once idle.
        drop(self.pool.take());
        for h in self.handles.drain(..) {
            // A thread that panicked outside a job has nothing to report.
            let _ = h.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.join();
    }
}

/// How a [`Workers::pipeline`] ended.
pub(crate) struct Piped {
    /// Units whose job ran to its end: `0..started` (when a job failed,
    /// those delivered whole before it: the rest are dropped).
    pub(crate) started: usize,
    /// Where the bytes of units sealed but not delivered lie, in order:
    /// slot and range in it (empty unless `deliver` stopped the run).
    /// They stay in the slots; [`gather`] moves them to the front.
    pub(crate) pending: Vec<(usize, Range<usize>)>,
    /// The first failing job's error (in unit order), if any.
    pub(crate) error: Option<Error>,
    /// A panic of `deliver`, to resume once the caller has settled its
    /// state from the rest.
    pub(crate) panic: Option<Box<dyn std::any::Any + Send>>,
}

/// Moves the undelivered bytes of a stopped run ([`Piped::pending`]) to
/// the start of `buf`, in order, in place, and returns their length.
/// `buf` starts with the run's `k` slots of `slot` bytes each (slot `i`
/// at `i · slot`); the pending units are in consecutive slots, wrapping
/// after the last.
pub(crate) fn gather(
    buf: &mut [u8],
    slot: usize,
    k: usize,
    pending: &[(usize, Range<usize>)],
) -> usize {
    let Some((first, _)) = pending.first() else {
        return 0;
    };
    debug_assert!(
        pending
            .iter()
            .enumerate()
            .all(|(i, (s, _))| *s == (first + i) % k),
        "pending units in consecutive slots"
    );
    // Wrapped: put the slots in unit order first.
    let base = if first + pending.len() > k {
        buf[..slot * k].rotate_left(first * slot);
        0
    } else {
        *first
    };
    let mut at = 0;
    for (i, (_, r)) in pending.iter().enumerate() {
        // Every move is towards the front, over bytes already moved.
        let from = (base + i) * slot;
        buf.copy_within(from + r.start..from + r.end, at);
        at += r.len();
    }
    at
}

/// One output slot of a pipeline: the unit sealed into it last.
struct Slot<'a> {
    bytes: &'a mut [u8],
    len: usize,
    result: Result<(), Error>,
}

/// What the threads of one pipeline share.
struct Line<'a> {
    slots: Vec<Mutex<Slot<'a>>>,
    /// `u + 1` once unit `u` is done in slot `u % slots.len()`.
    ready: Vec<AtomicUsize>,
    units: usize,
    /// Threads taking units, the caller's included.
    threads: usize,
    /// The next unit to start.
    next: AtomicUsize,
    /// Units delivered: their slots may take later units.
    drained: AtomicUsize,
    /// No unit is started any more.
    stop: AtomicBool,
    /// The calling thread, woken when a unit is ready.
    caller: Thread,
    /// The pool threads in the run, woken when a slot is free.
    workers: Mutex<Vec<Thread>>,
}

/// Stops a pipeline and wakes its pool threads when dropped: the caller
/// leaving [`Line::deliver_all`], by a panic in the inner writer too (the
/// scope waits for the pool threads before the panic goes on, and they
/// would wait for slots the caller no longer frees).
struct StopOnDrop<'l, 'a>(&'l Line<'a>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Release);
        self.0.wake_workers();
    }
}

/// What [`Line::claim`] found.
enum Claim {
    /// Unit to run.
    Unit(usize),
    /// The next unit's slot still holds an undelivered unit.
    Busy,
    /// Every unit is started, or the run stopped.
    Done,
}

impl Line<'_> {
    /// Takes the next unit if its slot is free.
    fn claim(&self) -> Claim {
        let k = self.slots.len();
        let mut i = self.next.load(Ordering::Acquire);
        loop {
            if i >= self.units || self.stop.load(Ordering::Acquire) {
                return Claim::Done;
            }
            if i >= self.drained.load(Ordering::Acquire) + k {
                return Claim::Busy;
            }
            match self
                .next
                .compare_exchange_weak(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Claim::Unit(i),
                Err(now) => i = now,
            }
        }
    }

    /// Runs unit `u` into its slot and marks it ready; a failure or a
    /// panic (caught here, so the slot's lock is not poisoned) stops the
    /// run. Returns the bytes it put in the slot (0 when it failed).
    fn run<F>(&self, u: usize, job: &F, inject: bool) -> usize
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let mut guard = self.slots[u % k]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = &mut *guard;
        let r = catch_unwind(AssertUnwindSafe(|| {
            assert!(!inject, "injected worker panic");
            job(u, slot.bytes)
        }));
        slot.result = match r {
            Ok(Ok(len)) => {
                slot.len = len;
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::WorkerPanicked),
        };
        let failed = slot.result.is_err();
        let len = if failed { 0 } else { slot.len };
        drop(guard);
        if failed {
            self.stop.store(true, Ordering::Release);
        }
        self.ready[u % k].store(u + 1, Ordering::Release);
        self.caller.unpark();
        len
    }

    /// Wakes the pool threads waiting for a slot or for the end.
    fn wake_workers(&self) {
        let workers = self
            .workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        workers.iter().for_each(Thread::unpark);
    }

    /// A pool thread: takes units until none is left; while the next
    /// unit's slot is busy (the caller has not moved it out yet), waits,
    /// asleep after a short while, for the caller to wake it.
    fn work<F>(&self, job: &F, inject: bool)
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        self.workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(std::thread::current());
        let mut waited = Wait::default();
        loop {
            match self.claim() {
                Claim::Unit(u) => {
                    self.run(u, job, inject);
                    waited = Wait::default();
                }
                Claim::Done => return,
                Claim::Busy => {
                    waited.pause();
                }
            }
        }
    }

    /// The calling thread: delivers the units in order, working on one
    /// itself while the next to deliver is not ready.
    fn deliver_all<F>(
        &self,
        job: &F,
        mut deliver: impl FnMut(&[u8]) -> usize,
        inject: bool,
        pace: &mut Pace,
    ) -> Delivered
    where
        F: Fn(usize, &mut [u8]) -> Result<usize, Error>,
    {
        let k = self.slots.len();
        let (mut d, mut offset, mut waited) = (0, 0, Wait::default());
        let (mut error, mut panic) = (None, None);
        // However this ends (a panic of `deliver` included), the pool
        // threads stop waiting for slots and leave.
        let _stop = StopOnDrop(self);
        let quota = pace.quota(self.units, self.threads);
        let mut taken = 0;
        while d < self.units {
            if self.ready[d % k].load(Ordering::Acquire) == d + 1 {
                let slot = self.slots[d % k]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Err(e) = &slot.result {
                    error = Some(e.clone());
                    break;
                }
                let bytes = &slot.bytes[..slot.len];
                let t = Instant::now();
                while offset < bytes.len() {
                    // A panic of the inner writer takes nothing: the run
                    // stops, the stream's state is settled (what was
                    // sealed is counted and kept as output, as one thread
                    // keeps it), then the panic goes on.
                    match catch_unwind(AssertUnwindSafe(|| deliver(&bytes[offset..]))) {
                        Ok(0) => break,
                        Ok(n) => offset += n.min(bytes.len() - offset),
                        Err(p) => {
                            panic = Some(p);
                            break;
                        }
                    }
                }
                if offset < bytes.len() {
                    break;
                }
                // A unit with no output (a writer's copy into its buffer)
                // says nothing of what delivering one costs.
                if !bytes.is_empty() {
                    Pace::note(&mut pace.deliver, t.elapsed());
                }
                drop(slot);
                (d, offset, waited) = (d + 1, 0, Wait::default());
                self.drained.store(d, Ordering::Release);
                self.wake_workers();
                continue;
            }
            // Unit `d` is being worked on by another thread (or nobody
            // took it yet). Take one only while the others keep slots to
            // go on with (k − threads units ahead at most: a unit worked
            // on here holds up the delivery of all the others), and only
            // the caller's share of them: it also delivers every unit.
            let next = self.next.load(Ordering::Acquire);
            let ahead = next - d;
            if ahead > 0 && (ahead > k.saturating_sub(self.threads) || taken >= quota) {
                waited.pause();
                continue;
            }
            match self.claim() {
                Claim::Unit(u) => {
                    let t = Instant::now();
                    if self.run(u, job, inject) > 0 {
                        Pace::note(&mut pace.work, t.elapsed());
                    }
                    taken += 1;
                    waited = Wait::default();
                }
                // Unit `d` is being worked on by another thread.
                Claim::Busy | Claim::Done => {
                    waited.pause();
                }
            }
        }
        // `_stop` ends the run for the pool threads as this returns.
        Delivered {
            units: d,
            offset,
            error,
            panic,
        }
    }

    /// What a run left once every thread is out of it (the scope joined
    /// the pool threads, so `next` counts every unit started, and each is
    /// done): the units started, and the sealed bytes of those not
    /// delivered, in order.
    fn finish(self, delivered: Delivered) -> Piped {
        let Delivered {
            units: d,
            offset,
            mut error,
            panic,
        } = delivered;
        let k = self.slots.len();
        let started = self.next.load(Ordering::Acquire).min(self.units);
        let mut pending = Vec::new();
        if error.is_some() {
            return Piped {
                started: d,
                pending,
                error,
                panic,
            };
        }
        for u in d..started {
            debug_assert_eq!(self.ready[u % k].load(Ordering::Acquire), u + 1);
            let slot = self.slots[u % k]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(e) = &slot.result {
                // Sealed after the stop, then failed: the run ends with
                // what was delivered (the stream fails).
                error = Some(e.clone());
                return Piped {
                    started: d,
                    pending: Vec::new(),
                    error,
                    panic,
                };
            }
            let from = if u == d { offset } else { 0 };
            pending.push((u % k, from..slot.len));
        }
        Piped {
            started,
            pending,
            error,
            panic,
        }
    }
}

/// Where the calling thread left a run: units delivered whole, bytes of
/// the next one delivered, the first failure, a panic of `deliver`.
struct Delivered {
    units: usize,
    offset: usize,
    error: Option<Error>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// How long the calling thread takes to work on one unit of a pipeline
/// and to deliver one (averaged over the stream's pipelines so far), and
/// from that how many units of a pipeline it should work on: it delivers
/// every unit, so with `n` threads and `u` units, working on `c` takes it
/// `c·work + u·deliver` while the others take `(u − c)·work / (n − 1)`;
/// the `c` that makes the longer of the two shortest is its quota.
#[derive(Default)]
pub(crate) struct Pace {
    work: Option<f64>,
    deliver: Option<f64>,
}

impl Pace {
    fn note(avg: &mut Option<f64>, t: Duration) {
        let t = t.as_secs_f64();
        *avg = Some(avg.map_or(t, |a| 0.75 * a + 0.25 * t));
    }

    /// The caller's quota of `units` units with `threads` threads taking
    /// them (all of them until it has measured both times).
    // The estimate is clamped to `0..=units` before it is truncated.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn quota(&self, units: usize, threads: usize) -> usize {
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

/// Waiting for another thread of a pipeline, [`pause`](Self::pause)
/// after `pause`: spin-loop hints first (a share is often microseconds
/// from done), then yielding the core (an oversubscribed pool may need it
/// to finish the unit waited for) for up to [`YIELD`], then sleeping until
/// woken (the thread waited for unparks this one; a timeout bounds every
/// sleep), so that a thread waiting a whole 1 MiB segment, or for a slow
/// inner writer, does not hold a core, and one waiting for a 64 KiB share
/// does not pay for a wake-up.
#[derive(Default)]
struct Wait {
    spins: u32,
    since: Option<Instant>,
}

/// How long a waiting thread yields before it sleeps: about what sealing
/// 64 KiB takes with the slower ciphers here.
const YIELD: Duration = Duration::from_micros(100);

impl Wait {
    fn pause(&mut self) {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn pieces<'a>(inputs: &'a [Vec<u8>], outputs: &'a mut [Vec<u8>]) -> Vec<Piece<'a>> {
        inputs
            .iter()
            .zip(outputs.iter_mut())
            .enumerate()
            .map(|(i, (input, output))| Piece {
                index: i as u64,
                last: false,
                input,
                output,
                result: Ok(()),
            })
            .collect()
    }

    /// Every piece is done once, on more than one thread, and the pool
    /// threads are gone once the workers are dropped.
    #[test]
    fn runs_every_piece_and_joins_its_threads() {
        let inputs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
        let mut outputs = vec![vec![0u8; 3]; 9];
        let seen = Mutex::new(std::collections::HashSet::new());
        let mut w = Workers::new(3);
        let mut p = pieces(&inputs, &mut outputs);
        w.run(&mut p, |piece| {
            seen.lock().unwrap().insert(std::thread::current().id());
            for (o, i) in piece.output.iter_mut().zip(piece.input) {
                *o = i.wrapping_add(piece.index as u8);
            }
        })
        .unwrap();
        drop(p);
        for (i, o) in outputs.iter().enumerate() {
            assert_eq!(o, &vec![2 * i as u8; 3]);
        }
        assert!(
            seen.lock().unwrap().len() > 1,
            "the pool threads took shares"
        );
        assert_eq!(w.handles.len(), 2);
        let alive = std::sync::Arc::clone(&w.alive);
        assert!(alive.load(Ordering::SeqCst) > 0);
        drop(w);
        // Joined in drop: every pool thread has ended.
        assert_eq!(alive.load(Ordering::SeqCst), 0);
    }

    /// A panic in a job is an error, not a hang and not an unwind into
    /// the caller; the workers still end.
    #[test]
    fn a_panic_in_a_job_is_an_error() {
        let inputs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 2]).collect();
        let mut outputs = vec![vec![0u8; 2]; 4];
        let mut w = Workers::new(2);
        w.inject_panic = true;
        let mut p = pieces(&inputs, &mut outputs);
        assert_eq!(w.run(&mut p, |_| {}), Err(Error::WorkerPanicked));
        w.inject_panic = false;
        assert_eq!(w.run(&mut p, |_| {}), Ok(()));
    }

    /// A job for the pipeline tests: unit `u` is `u + 1` bytes of value
    /// `u`, after a short sleep (so that the pool threads take units too);
    /// it records the thread.
    fn unit_job(
        seen: &Mutex<std::collections::HashSet<std::thread::ThreadId>>,
    ) -> impl Fn(usize, &mut [u8]) -> Result<usize, Error> + Sync + '_ {
        move |u, slot| {
            seen.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_micros(500));
            slot[..=u].fill(u as u8);
            Ok(u + 1)
        }
    }

    fn expected(units: usize) -> Vec<u8> {
        (0..units).flat_map(|u| vec![u as u8; u + 1]).collect()
    }

    /// Every unit is delivered once, in order, through 3 reused slots,
    /// whatever thread worked on it; the pool threads took some; the
    /// deliveries may be partial.
    #[test]
    fn a_pipeline_delivers_every_unit_in_order() {
        for threads in [2, 3, 8] {
            for take in [usize::MAX, 1, 7] {
                let units = 40;
                let mut buf = vec![0u8; 3 * units];
                let slots = buf.chunks_mut(units).collect();
                let seen = Mutex::new(std::collections::HashSet::new());
                let mut got = Vec::new();
                let mut w = Workers::new(threads);
                let piped = w.pipeline(units, slots, unit_job(&seen), |b: &[u8]| {
                    let n = b.len().min(take);
                    got.extend_from_slice(&b[..n]);
                    n
                });
                assert!(piped.error.is_none());
                assert_eq!(piped.started, units);
                assert!(piped.pending.is_empty());
                assert_eq!(got, expected(units), "threads {threads} take {take}");
                assert!(seen.lock().unwrap().len() > 1, "the pool took units");
            }
        }
    }

    /// After each run the pool threads stay awake for the next one (as
    /// many as the machine has CPUs besides the caller's), and dropping
    /// the workers still joins every thread at once: the lingering ends
    /// when they end.
    #[test]
    fn pool_threads_linger_after_each_run_and_end_with_the_workers() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        for threads in [2, 3, 8] {
            let mut w = Workers::new(threads);
            let seen = Mutex::new(std::collections::HashSet::new());
            for runs in 1..=4 {
                let mut buf = [0u8; 3 * 8];
                let slots = buf.chunks_mut(8).collect();
                let piped = w.pipeline(8, slots, unit_job(&seen), |b: &[u8]| b.len());
                assert!(piped.error.is_none());
                assert_eq!(
                    w.lingered,
                    runs * (threads.min(cpus) - 1),
                    "threads {threads}"
                );
            }
            let inputs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
            let mut outputs = vec![vec![0u8; 3]; 9];
            let mut p = pieces(&inputs, &mut outputs);
            w.run(&mut p, |_| {}).unwrap();
            drop(p);
            assert_eq!(
                w.lingered,
                5 * (threads.min(cpus) - 1),
                "threads {threads}: run"
            );
            if cpus > 1 {
                assert!(w.lingered > 0);
            }
            let alive = std::sync::Arc::clone(&w.alive);
            drop(w);
            assert_eq!(alive.load(Ordering::SeqCst), 0, "threads {threads}");
        }
    }

    #[test]
    fn gather_moves_the_pending_bytes_to_the_front_in_order() {
        // Three slots of four bytes; units in slots 2, 0, 1 (wrapped),
        // the first one partly delivered.
        let mut buf: Vec<u8> = (0..12).collect();
        let n = gather(&mut buf, 4, 3, &[(2, 1..4), (0, 0..2), (1, 0..3)]);
        assert_eq!(&buf[..n], &[9, 10, 11, 0, 1, 4, 5, 6]);
        // Not wrapped.
        let mut buf: Vec<u8> = (0..12).collect();
        let n = gather(&mut buf, 4, 3, &[(1, 2..4), (2, 0..4)]);
        assert_eq!(&buf[..n], &[6, 7, 8, 9, 10, 11]);
        assert_eq!(gather(&mut buf, 4, 3, &[]), 0);
    }

    /// A consumer that stops: the units started are finished, nothing
    /// after them is started, and what was not delivered comes back in
    /// order; nothing is lost or repeated.
    #[test]
    fn a_stopped_pipeline_returns_what_it_did_not_deliver() {
        for stop_at in [0, 1, 5, 17, 30] {
            let units = 30;
            let mut buf = vec![0u8; 3 * units];
            let slots = buf.chunks_mut(units).collect();
            let seen = Mutex::new(std::collections::HashSet::new());
            let mut got = Vec::new();
            let mut w = Workers::new(2);
            let piped = w.pipeline(units, slots, unit_job(&seen), |b: &[u8]| {
                if got.len() >= stop_at {
                    return 0;
                }
                // Partial, to stop inside a unit.
                let n = b.len().min(stop_at - got.len()).min(3);
                got.extend_from_slice(&b[..n]);
                n
            });
            assert!(piped.error.is_none());
            let all = expected(units);
            let n = gather(&mut buf, units, 3, &piped.pending);
            got.extend_from_slice(&buf[..n]);
            let sealed = expected(piped.started);
            assert_eq!(got, sealed, "stop at {stop_at}");
            assert!(got.len() >= stop_at.min(all.len()));
            assert!(piped.started <= units);
            if stop_at < all.len() {
                // At most the slots' worth of units past the one stopped in.
                assert!(sealed.len() < all.len(), "stop at {stop_at}: all sealed");
            }
        }
    }

    /// A failing job stops the run at its unit: the units before it are
    /// delivered, nothing of it or after it; a panicking one is
    /// `WorkerPanicked`.
    #[test]
    fn a_failing_job_stops_a_pipeline() {
        for bad in [0, 1, 9] {
            let units = 20;
            let mut buf = vec![0u8; 3 * units];
            let slots = buf.chunks_mut(units).collect();
            let mut got = Vec::new();
            let mut w = Workers::new(2);
            let piped = w.pipeline(
                units,
                slots,
                |u, slot| {
                    if u == bad {
                        return Err(Error::StreamTooLong);
                    }
                    slot[..=u].fill(u as u8);
                    Ok(u + 1)
                },
                |b: &[u8]| {
                    got.extend_from_slice(b);
                    b.len()
                },
            );
            assert_eq!(piped.error, Some(Error::StreamTooLong));
            assert_eq!(piped.started, bad);
            assert_eq!(got, expected(bad));
        }
        let mut buf = [0u8; 60];
        let mut w = Workers::new(2);
        w.inject_panic = true;
        let piped = w.pipeline(
            20,
            buf.chunks_mut(20).collect(),
            |_, _| Ok(1),
            |b: &[u8]| b.len(),
        );
        assert_eq!(piped.error, Some(Error::WorkerPanicked));
        assert_eq!(piped.started, 0);
    }

    /// The caller's quota: all units until it has measured; with nothing
    /// to deliver, its fair share; fewer the longer delivering takes; none
    /// once delivering alone takes as long as the others' sealing.
    #[test]
    fn the_callers_quota_follows_its_times() {
        let pace = |work: f64, deliver: f64| Pace {
            work: Some(work),
            deliver: Some(deliver),
        };
        assert_eq!(Pace::default().quota(10, 2), 10);
        assert_eq!(pace(1.0, 0.0).quota(10, 2), 5);
        assert_eq!(pace(1.0, 0.0).quota(4, 2), 2);
        assert_eq!(pace(1.0, 0.0).quota(12, 4), 3);
        assert_eq!(pace(355.0, 135.0).quota(4, 2), 1);
        assert_eq!(pace(1.0, 0.25).quota(16, 2), 6);
        assert_eq!(pace(1.0, 1.0).quota(10, 2), 0);
    }

    /// Units with no output (a writer's copy into its buffer) are left
    /// out of the caller's times: they would make sealing and delivering
    /// look cheaper than they are, and its quota larger.
    #[test]
    fn units_without_output_are_not_timed() {
        let mut buf = [0u8; 3 * 8];
        let mut w = Workers::new(2);
        let piped = w.pipeline(
            8,
            buf.chunks_mut(8).collect(),
            |_, _| {
                std::thread::sleep(Duration::from_micros(200));
                Ok(0)
            },
            |b: &[u8]| b.len(),
        );
        assert!(piped.error.is_none());
        assert_eq!(piped.started, 8);
        assert_eq!((w.pace.work, w.pace.deliver), (None, None));
        // The same run with output is timed.
        let piped = w.pipeline(
            8,
            buf.chunks_mut(8).collect(),
            |_, slot| {
                std::thread::sleep(Duration::from_micros(200));
                slot[0] = 1;
                Ok(1)
            },
            |b: &[u8]| b.len(),
        );
        assert!(piped.error.is_none());
        assert!(w.pace.work.is_some() && w.pace.deliver.is_some());
    }

    #[test]
    fn batches_carry_a_share_per_thread() {
        assert_eq!(batch_segments(2, 64 * 1024), 2);
        assert_eq!(batch_segments(2, 1 << 20), 2);
        assert_eq!(batch_segments(2, 8 * 1024), 16);
        assert_eq!(batch_segments(3, 100 * 1024), 3);
        assert_eq!(batch_segments(2, 1), 2 * SHARE_SEGMENTS);
    }
}
