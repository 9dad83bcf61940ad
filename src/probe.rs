//! What the tests count inside the engine, and the faults they inject,
//! behind types that are zero-sized and do nothing outside the tests.
//!
//! Production code calls them unconditionally: a [`Count`] is added to, a
//! [`Fault`] asked whether it is armed, [`fixed_random`] and [`used`] are
//! called, with no `#[cfg(test)]` at the call site. Outside the tests a
//! `Count` holds nothing, a `Fault` is never armed and the functions return
//! at once, so the compiler removes every probe; only the tests can read a
//! count, arm a fault or fix the randomness.

#[cfg(test)]
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use crate::Provider;

/// A count the tests read (bytes copied, segments opened, runs on the
/// workers): zero-sized outside the tests.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Count {
    #[cfg(test)]
    n: usize,
}

impl Count {
    /// Adds `n` to the count.
    #[inline(always)]
    pub(crate) fn add(&mut self, n: usize) {
        #[cfg(test)]
        {
            self.n += n;
        }
        let _ = n;
    }

    /// The count so far.
    #[cfg(test)]
    pub(crate) fn get(self) -> usize {
        self.n
    }
}

/// A fault the tests arm (an allocation that fails, the job of one unit
/// that panics), with what it names: never armed outside the tests, where
/// it is zero-sized.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fault<T: Copy = ()> {
    #[cfg(test)]
    armed: Option<T>,
    kind: PhantomData<T>,
}

impl<T: Copy> Default for Fault<T> {
    fn default() -> Self {
        Fault {
            #[cfg(test)]
            armed: None,
            kind: PhantomData,
        }
    }
}

impl<T: Copy> Fault<T> {
    /// What the armed fault names; `None` when it is not armed (always,
    /// outside the tests).
    #[inline(always)]
    pub(crate) fn armed(&self) -> Option<T> {
        #[cfg(test)]
        {
            self.armed
        }
        #[cfg(not(test))]
        {
            None
        }
    }

    /// Arms the fault with `what`.
    #[cfg(test)]
    pub(crate) fn arm(&mut self, what: T) {
        self.armed = Some(what);
    }
}

/// The fault that makes jobs on the workers panic, armed for workers
/// made on this thread while a test sets [`INJECT_PANIC`].
#[inline(always)]
pub(crate) fn worker_panic() -> Fault {
    #[allow(unused_mut)]
    let mut fault = Fault::default();
    #[cfg(test)]
    if INJECT_PANIC.with(Cell::get) {
        fault.arm(());
    }
    fault
}

/// The fault that makes posted pool jobs panic as they start, outside
/// the unit's work, armed for workers made on this thread while a test
/// sets [`PANIC_JOB`].
#[inline(always)]
pub(crate) fn job_panic() -> Fault {
    #[allow(unused_mut)]
    let mut fault = Fault::default();
    #[cfg(test)]
    if PANIC_JOB.with(Cell::get) {
        fault.arm(());
    }
    fault
}

#[cfg(test)]
thread_local! {
    /// Workers made on this thread panic in their pool threads' jobs
    /// (tests of the panic path through the fronts).
    pub(crate) static INJECT_PANIC: Cell<bool> = const { Cell::new(false) };

    /// Workers made on this thread have posted jobs that panic as they
    /// start (tests that no pool job's panic aborts the process).
    pub(crate) static PANIC_JOB: Cell<bool> = const { Cell::new(false) };

    /// Workers made on this thread have pool threads that sleep this
    /// long once they have claimed a unit (tests of a pool thread
    /// descheduled in the middle of its unit, through the fronts).
    pub(crate) static STALL_POOL: Cell<Option<std::time::Duration>> = const { Cell::new(None) };

    /// Bytes that replace the next streams' random salt and nonce prefix
    /// on this thread (tests that reproduce known ciphertexts).
    pub(crate) static FIXED_RANDOM: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };

    /// Segments sealed or opened (failed trials not counted) on this
    /// thread, by provider (index in [`Provider::ALL`]): tests that the
    /// chosen provider does the work.
    pub(crate) static USED: RefCell<Vec<u64>> = RefCell::new(vec![0; Provider::ALL.len()]);
}

/// The fault that makes pool threads sleep after each claim, armed for
/// workers made on this thread while a test sets [`STALL_POOL`].
#[inline(always)]
pub(crate) fn pool_stall() -> Fault<std::time::Duration> {
    #[allow(unused_mut)]
    let mut fault = Fault::default();
    #[cfg(test)]
    if let Some(d) = STALL_POOL.with(Cell::get) {
        fault.arm(d);
    }
    fault
}

/// Fills `buf` with the bytes a test fixed in place of fresh randomness
/// on this thread, and says whether it did (never, outside the tests).
#[inline(always)]
pub(crate) fn fixed_random(buf: &mut [u8]) -> bool {
    #[cfg(test)]
    if let Some(fixed) = FIXED_RANDOM.with(|f| f.borrow().clone()) {
        buf.copy_from_slice(&fixed[..buf.len()]);
        return true;
    }
    let _ = buf;
    false
}

/// Counts one segment sealed or opened on this thread by `provider`.
#[inline(always)]
pub(crate) fn used(provider: Provider) {
    #[cfg(test)]
    {
        let i = Provider::ALL.iter().position(|&q| q == provider);
        USED.with(|u| u.borrow_mut()[i.unwrap_or(0)] += 1);
    }
    let _ = provider;
}
