//! The ring on its own: work on the pool, in order, taken over, drained.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use super::{Ring, Work, Workers};
use crate::Error;
use crate::core::window::Window;

/// Work that copies a unit's input behind `head`, prefixed by its first
/// index, and notes which thread did it, taking `takes` for each;
/// fails on input `b"bad"`.
fn copying(threads: Arc<Mutex<Vec<ThreadId>>>, takes: Duration) -> Box<Work> {
    Box::new(move |first, head, input, out| {
        threads.lock().unwrap().push(std::thread::current().id());
        std::thread::sleep(takes);
        if input == b"bad" {
            return Err(Error::Authentication);
        }
        out.clear();
        out.grow(head.len() + 1 + input.len())?;
        out.extend(head);
        out.extend(&[first as u8]);
        out.extend(input);
        Ok(())
    })
}

fn unit(bytes: &[u8]) -> Window {
    let mut w = Window::public();
    w.grow(bytes.len()).unwrap();
    w.extend(bytes);
    w
}

fn deliver(ring: &mut Ring) -> Result<Vec<u8>, Error> {
    let mut out = Window::public();
    ring.deliver(&mut out, None).expect("a unit")?;
    Ok(out.data().to_vec())
}

#[test]
fn units_are_delivered_in_order_and_the_pool_works_some_of_them() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let work = copying(Arc::clone(&seen), Duration::from_micros(200));
    let mut ring = Ring::new(Workers::new(2), work);
    let mut got = Vec::new();
    for i in 0..200u8 {
        if ring.is_full() {
            got.push(deliver(&mut ring).unwrap());
        }
        let mut w = unit(&[i; 3]);
        ring.post(&mut w, u64::from(i));
        assert!(w.is_empty(), "the buffer traded back is empty");
    }
    while ring.len() > 0 {
        got.push(deliver(&mut ring).unwrap());
    }
    let want: Vec<Vec<u8>> = (0..200u8).map(|i| vec![i, i, i, i]).collect();
    assert_eq!(got, want);
    let me = std::thread::current().id();
    let seen = seen.lock().unwrap();
    if super::cpus() > 1 {
        assert!(seen.iter().any(|&t| t != me), "no unit worked on the pool");
    }
}

#[test]
fn a_late_pool_thread_is_taken_over_and_its_copy_dropped() {
    crate::probe::STALL_POOL.with(|c| c.set(Some(Duration::from_millis(50))));
    let workers = Workers::new(2);
    crate::probe::STALL_POOL.with(|c| c.set(None));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ring = Ring::new(workers, copying(Arc::clone(&seen), Duration::ZERO));
    let mut got = Vec::new();
    for i in 0..8u8 {
        ring.post(&mut unit(&[i]), u64::from(i));
        // The pool thread has claimed the unit and sleeps on it.
        std::thread::sleep(Duration::from_millis(5));
        got.push(deliver(&mut ring).unwrap());
    }
    assert_eq!(got, (0..8u8).map(|i| vec![i, i]).collect::<Vec<_>>());
    if super::cpus() > 1 {
        assert!(ring.taken_over > 0, "no unit was taken over");
    }
}

#[test]
fn the_caller_works_units_behind_the_one_it_waits_for() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let work = copying(Arc::clone(&seen), Duration::from_millis(20));
    let mut ring = Ring::new(Workers::new(2), work);
    // Delivered at once, worked by the caller: a unit's usual time.
    ring.post(&mut unit(b"w"), 9);
    assert_eq!(deliver(&mut ring).unwrap(), b"\x09w");
    seen.lock().unwrap().clear();
    ring.post(&mut unit(b"a"), 0);
    // The pool thread claims it meanwhile.
    std::thread::sleep(Duration::from_millis(5));
    ring.post(&mut unit(b"b"), 1);
    ring.post(&mut unit(b"c"), 2);
    assert_eq!(deliver(&mut ring).unwrap(), b"\0a");
    let me = std::thread::current().id();
    if super::cpus() > 1 {
        let mine = seen.lock().unwrap().iter().filter(|&&t| t == me).count();
        assert_eq!(mine, 1, "the caller worked {mine} units while it waited");
    }
    assert_eq!(deliver(&mut ring).unwrap(), b"\x01b");
    assert_eq!(deliver(&mut ring).unwrap(), b"\x02c");
}

#[test]
fn a_failed_unit_stays_at_the_front_and_drains_back_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ring = Ring::new(Workers::new(2), copying(seen, Duration::ZERO));
    for (i, u) in [&b"ok"[..], b"bad", b"x", b"y"].iter().enumerate() {
        ring.post(&mut unit(u), i as u64);
    }
    assert_eq!(deliver(&mut ring).unwrap(), b"\0ok");
    assert_eq!(deliver(&mut ring), Err(Error::Authentication));
    assert_eq!(deliver(&mut ring), Err(Error::Authentication), "it stays");
    let mut back = Vec::new();
    ring.drain(|input| back.push(input.to_vec()));
    assert_eq!(back, [&b"bad"[..], b"x", b"y"]);
    assert_eq!(ring.len(), 0);
}

#[test]
fn a_panicking_unit_is_worker_panicked_on_any_thread() {
    for posted in [1, 6] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut ring = Ring::new(Workers::new(2), copying(seen, Duration::ZERO));
        ring.inject_panic();
        for i in 0..posted {
            ring.post(&mut unit(b"u"), i);
        }
        assert_eq!(deliver(&mut ring), Err(Error::WorkerPanicked));
    }
}

#[test]
fn a_panicking_pool_job_leaves_its_unit_to_the_caller() {
    crate::probe::PANIC_JOB.with(|c| c.set(true));
    let workers = Workers::new(2);
    crate::probe::PANIC_JOB.with(|c| c.set(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ring = Ring::new(workers, copying(Arc::clone(&seen), Duration::ZERO));
    for i in 0..4u8 {
        ring.post(&mut unit(&[i]), u64::from(i));
    }
    std::thread::sleep(Duration::from_millis(20));
    for i in 0..4u8 {
        assert_eq!(deliver(&mut ring).unwrap(), [i, i]);
    }
    let me = std::thread::current().id();
    assert!(seen.lock().unwrap().iter().all(|&t| t == me));
}

#[test]
fn a_header_goes_in_front_of_a_unit_on_every_path() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ring = Ring::new(Workers::new(2), copying(seen, Duration::ZERO));
    ring.post(&mut unit(b"p"), 7);
    std::thread::sleep(Duration::from_millis(20));
    ring.post(&mut unit(b"q"), 8);
    let mut out = Window::public();
    ring.deliver(&mut out, Some(b"HDR".to_vec()))
        .unwrap()
        .unwrap();
    assert_eq!(out.data(), b"HDR\x07p");
    let mut out = Window::public();
    ring.deliver(&mut out, Some(b"H".to_vec()))
        .unwrap()
        .unwrap();
    assert_eq!(out.data(), b"H\x08q");
}

#[test]
fn a_ring_inside_another_pools_job_posts_nothing() {
    let other = rayon_core::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let posted = AtomicUsize::new(0);
    other.install(|| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut ring = Ring::new(Workers::new(2), copying(Arc::clone(&seen), Duration::ZERO));
        for i in 0..6u8 {
            ring.post(&mut unit(&[i]), u64::from(i));
        }
        for i in 0..6u8 {
            assert_eq!(deliver(&mut ring).unwrap(), [i, i]);
        }
        let me = std::thread::current().id();
        let all_here = seen.lock().unwrap().iter().all(|&t| t == me);
        posted.store(usize::from(!all_here), Ordering::SeqCst);
    });
    assert_eq!(
        posted.load(Ordering::SeqCst),
        0,
        "a unit ran on a pool thread"
    );
}

/// A run on the pool that takes longer than the caller alone would (its
/// pool thread stalled in the middle of a share) sends the next run to
/// the caller alone; every piece is worked once either way.
#[test]
fn a_run_that_loses_against_the_caller_alone_backs_off() {
    crate::probe::STALL_POOL.with(|c| c.set(Some(Duration::from_millis(30))));
    let mut w = Workers::new(2);
    crate::probe::STALL_POOL.with(|c| c.set(None));
    let me = std::thread::current().id();
    let mut pieces = vec![0u32; 64];
    let elsewhere = AtomicUsize::new(0);
    let work = |p: &mut u32| {
        std::thread::sleep(Duration::from_micros(50));
        if std::thread::current().id() != me {
            elsewhere.fetch_add(1, Ordering::Relaxed);
        }
        *p += 1;
    };
    assert!(w.run(&mut pieces, 4, work, || ()));
    if super::cpus() > 1 {
        assert_eq!(w.lost_runs, 1, "a stalled pool thread lost the run");
    }
    elsewhere.store(0, Ordering::Relaxed);
    assert!(w.run(&mut pieces, 4, work, || ()));
    assert_eq!(
        elsewhere.load(Ordering::Relaxed),
        0,
        "the next run is the caller's alone"
    );
    assert!(
        pieces.iter().all(|&p| p == 2),
        "each piece worked once per run"
    );
}
