//! A counting global allocator: live bytes, their peak, and the largest
//! single request since the last [`reset`]. A fuzz binary installs it with
//! `#[global_allocator] static A: Counting = Counting;`.
//!
//! libFuzzer runs one input at a time on one thread and allocates with the
//! C++ runtime, not through here, so between `reset` and `peak` only the
//! code under test (and the harness's own small error boxes) is counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The counting allocator (a wrapper around [`System`]).
pub struct Counting;

fn grew(size: usize) {
    let live = LIVE.fetch_add(size, Relaxed) + size;
    PEAK.fetch_max(live, Relaxed);
    LARGEST.fetch_max(size, Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`; the counters are
// only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as if old and new blocks were both live for a moment,
            // as they are when the block moves.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

/// Starts a measurement: the peak restarts from the bytes live now.
pub fn reset() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    LARGEST.store(0, Relaxed);
}

/// Bytes live now.
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// The most bytes live at once since [`reset`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// The largest single allocation (or reallocation's new size) since
/// [`reset`].
pub fn largest() -> usize {
    LARGEST.load(Relaxed)
}
