//! The pool, batch runs and the pipeline, on jobs of their own.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::pace::Pace;
use super::run::SHARE_SEGMENTS;
use super::{Piece, Workers, batch_segments, gather, open_batch_segments};
use crate::Error;
use crate::probe::{Fault, Job};

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

/// Every piece is done once, on more than one thread.
#[test]
fn runs_every_piece() {
    let mut w = Workers::new(3);
    let seen = Mutex::new(std::collections::HashSet::new());
    // A run hands shares to the pool threads once one is awake (woken
    // by the run, or lingering after the last): runs whose shares take
    // long enough for that, until one did (a bound in case none does).
    for _ in 0..100 {
        let inputs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
        let mut outputs = vec![vec![0u8; 3]; 9];
        let mut p = pieces(&inputs, &mut outputs);
        w.run(&mut p, |piece| {
            seen.lock().unwrap().insert(std::thread::current().id());
            busy_for(Duration::from_micros(300));
            for (o, i) in piece.output.iter_mut().zip(piece.input) {
                *o = i.wrapping_add(piece.index as u8);
            }
        })
        .unwrap();
        drop(p);
        for (i, o) in outputs.iter().enumerate() {
            assert_eq!(o, &vec![2 * i as u8; 3]);
        }
        if seen.lock().unwrap().len() > 1 {
            break;
        }
    }
    assert!(
        seen.lock().unwrap().len() > 1,
        "the pool threads took shares"
    );
}

/// A panic in a job is an error, not a hang and not an unwind into
/// the caller; the workers still end.
#[test]
fn a_panic_in_a_job_is_an_error() {
    let inputs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 2]).collect();
    let mut outputs = vec![vec![0u8; 2]; 4];
    let mut w = Workers::new(2);
    w.inject_panic.arm(());
    let mut p = pieces(&inputs, &mut outputs);
    assert_eq!(w.run(&mut p, |_| {}), Err(Error::WorkerPanicked));
    w.inject_panic = Fault::default();
    assert_eq!(w.run(&mut p, |_| {}), Ok(()));
}

/// A panic anywhere in a job a pool thread runs (outside what the job
/// catches itself) is `WorkerPanicked`, for every kind of job: a run's
/// share and a pipeline's unit (the run or pipeline a pool thread joined
/// fails, never unwinding into the caller), a lingering job and a posted
/// one (a ring's: the next run fails). Before, a posted job's panic
/// aborted the process and a scoped one's unwound into the caller.
#[test]
fn a_panic_in_any_pool_job_is_an_error() {
    if Workers::new(2).pool().is_none() {
        return; // One CPU: no pool thread runs any job.
    }
    let inputs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 2]).collect();
    let run = |w: &mut Workers| {
        let mut outputs = vec![vec![0u8; 2]; 8];
        let mut p = pieces(&inputs, &mut outputs);
        w.run(&mut p, |_| busy_for(Duration::from_micros(300)))
    };
    // Posted jobs: one more, posted after the panicking ones, runs after
    // them on the pool's one thread and says so.
    let after_posted = |w: &mut Workers| {
        let (done, is_done) = std::sync::mpsc::channel();
        assert!(w.spawn(Job::Share, move || done.send(()).unwrap()));
        is_done.recv().unwrap();
    };
    for kind in [Job::Linger, Job::Posted] {
        let mut w = Workers::new(2);
        w.job_panic.arm(kind);
        if kind == Job::Posted {
            // On the process's pool, whose threads other tests share:
            // another job posted after it may run first.
            assert!(w.post(|| ()));
            while !w.panicked() {
                std::thread::yield_now();
            }
        } else {
            // It wakes its pool threads, and they linger after it (the
            // run fails if they panicked before its end).
            let _ = run(&mut w);
        }
        if kind != Job::Posted {
            after_posted(&mut w);
        }
        assert!(w.panicked(), "{kind:?}");
        assert_eq!(run(&mut w), Err(Error::WorkerPanicked), "{kind:?}");
    }
    // Scoped jobs exist only in runs a pool thread joined: runs until one
    // did (a bound in case none does).
    let mut w = Workers::new(2);
    w.job_panic.arm(Job::Share);
    let runs = (0..100).map(|_| run(&mut w)).position(|r| r.is_err());
    assert!(runs.is_some(), "a pool thread joined a run");
    assert_eq!(run(&mut w), Err(Error::WorkerPanicked), "sticky");
    let mut w = Workers::new(2);
    w.job_panic.arm(Job::Unit);
    let failed = (0..100).find_map(|_| {
        let mut buf = [0u8; 8 * 20];
        let piped = w.pipeline(
            20,
            buf.chunks_mut(20).collect(),
            |u, slot| {
                busy_for(Duration::from_micros(300));
                slot[..=u % 20].fill(u as u8);
                Ok(u % 20 + 1)
            },
            |b: &[u8]| b.len(),
        );
        piped.error
    });
    assert_eq!(failed, Some(Error::WorkerPanicked), "a pool thread joined");
}

/// A pool thread that is not running takes no share: the caller claims
/// every share itself rather than wait for one nobody started, and the
/// run ends once the pool thread, free again, finds none left.
#[test]
fn the_caller_takes_the_shares_no_pool_thread_started() {
    let mut w = Workers::new(2);
    let (hold, held) = std::sync::mpsc::channel::<()>();
    let (up, is_up) = std::sync::mpsc::channel::<()>();
    // The pool's one thread is busy elsewhere until every piece is done
    // (a bound in case they never are).
    w.pool().unwrap().spawn(move || {
        up.send(()).unwrap();
        let _ = held.recv_timeout(Duration::from_secs(5));
    });
    is_up.recv().unwrap();
    let inputs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 2]).collect();
    let mut outputs = vec![vec![0u8; 2]; 4];
    let mut p = pieces(&inputs, &mut outputs);
    let caller = std::thread::current().id();
    let (done, by_caller) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let hold = Mutex::new(Some(hold));
    w.run(&mut p, |_| {
        if std::thread::current().id() == caller {
            by_caller.fetch_add(1, Ordering::SeqCst);
        }
        if done.fetch_add(1, Ordering::SeqCst) + 1 == 4 {
            drop(hold.lock().unwrap().take());
        }
    })
    .unwrap();
    assert_eq!(by_caller.into_inner(), 4, "the caller did every piece");
    assert_eq!(w.caller_shares.get(), 2, "both shares, in two claims");
    assert_eq!(w.waits.spins.get(), 0, "no spin for a thread not started");
    assert_eq!(w.waits.sleeps.get(), 0);
}

/// One run of `n` pieces of `len` bytes on `w`, each copied, the caller's
/// busy for `caller_work` first; checks the copies, returns the pieces
/// pool threads did.
fn copy_run(w: &mut Workers, n: usize, len: usize, caller_work: Duration) -> usize {
    let caller = std::thread::current().id();
    let inputs: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; len]).collect();
    let mut outputs = vec![vec![0u8; len]; n];
    let on_pool = AtomicUsize::new(0);
    let mut p = pieces(&inputs, &mut outputs);
    w.run(&mut p, |piece| {
        if std::thread::current().id() == caller {
            busy_for(caller_work);
        } else {
            on_pool.fetch_add(1, Ordering::SeqCst);
        }
        piece.output.copy_from_slice(piece.input);
    })
    .unwrap();
    drop(p);
    assert_eq!(outputs, inputs);
    on_pool.into_inner()
}

/// A run hands no share to a pool thread that is not running: a pool
/// thread that takes 20 ms to get going after each wake-up (as one
/// waiting for a core on a busy machine) gets no job, and the caller does
/// every share without waiting for it, run after run. Woken in time, the
/// same thread takes shares.
#[test]
fn a_run_hands_no_share_to_a_pool_thread_not_running() {
    let mut w = Workers::new(2);
    w.wake_delay.arm(Duration::from_millis(20));
    // Runs of 32 pieces of 8 KiB: four shares, the caller busy for a
    // while in each piece it does.
    let run = |w: &mut Workers| copy_run(w, 32, 8 << 10, Duration::from_micros(100));
    let runs = 10;
    for _ in 0..runs {
        assert_eq!(run(&mut w), 0, "a share went to a thread not running");
    }
    assert_eq!(w.caller_shares.get(), runs * 4, "every share of every run");
    assert_eq!(w.waits.late.get(), 0, "no wait for a thread not running");
    assert_eq!(w.waits.spins.get(), 0);
    assert_eq!(w.waits.sleeps.get(), 0);
    // The same pool thread, woken in time (once the late wake-ups queued
    // before have passed: 200 ms at most), takes shares.
    w.wake_delay = Fault::default();
    assert!(
        (0..1000).any(|_| run(&mut w) > 0),
        "an awake pool thread took shares"
    );
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
            let seen = Mutex::new(std::collections::HashSet::new());
            let mut w = Workers::new(threads);
            // Pool threads join a pipeline once seen awake: pipelines until
            // they did (a bound in case they never do).
            for _ in 0..100 {
                let mut buf = vec![0u8; 3 * units];
                let slots = buf.chunks_mut(units).collect();
                let mut got = Vec::new();
                let piped = w.pipeline(units, slots, unit_job(&seen), |b: &[u8]| {
                    let n = b.len().min(take);
                    got.extend_from_slice(&b[..n]);
                    n
                });
                assert!(piped.error.is_none());
                assert_eq!(piped.started, units);
                assert!(piped.pending.is_empty());
                assert_eq!(got, expected(units), "threads {threads} take {take}");
                if seen.lock().unwrap().len() > 1 {
                    break;
                }
            }
            assert!(seen.lock().unwrap().len() > 1, "the pool took units");
        }
    }
}

/// The same for a pipeline: a pool thread that takes 20 ms to get going
/// after each wake-up gets no unit, and the caller seals and delivers
/// every unit itself without waiting for it; woken in time, the same
/// thread takes units.
#[test]
fn a_pipeline_hands_no_unit_to_a_pool_thread_not_running() {
    let mut w = Workers::new(2);
    w.wake_delay.arm(Duration::from_millis(20));
    for _ in 0..10 {
        assert_eq!(
            one_pipeline(&mut w, 16, Duration::from_micros(200)),
            0,
            "a unit went to a thread not running"
        );
    }
    assert_eq!(w.waits.late.get(), 0, "no wait for a thread not running");
    assert_eq!(w.waits.sleeps.get(), 0);
    w.wake_delay = Fault::default();
    assert!(
        (0..1000).any(|_| one_pipeline(&mut w, 16, Duration::from_micros(200)) > 0),
        "an awake pool thread took units"
    );
}

/// After each run the pool threads stay awake for the next one (as
/// many as the machine has CPUs besides the caller's).
#[test]
fn pool_threads_linger_after_each_run() {
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
                w.lingered.get(),
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
            w.lingered.get(),
            5 * (threads.min(cpus) - 1),
            "threads {threads}: run"
        );
        if cpus > 1 {
            assert!(w.lingered.get() > 0);
        }
    }
}

/// `runs` runs of four pieces, back to back, on fresh two-thread workers,
/// the caller doing `slow` in each piece it takes (the pool thread's are
/// instant): the workers, for their counts.
fn back_to_back_runs(runs: usize, slow: impl Fn() + Sync) -> Workers {
    let caller = std::thread::current().id();
    let inputs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 3]).collect();
    let mut w = Workers::new(2);
    for _ in 0..runs {
        let mut outputs = vec![vec![0u8; 3]; 4];
        let mut p = pieces(&inputs, &mut outputs);
        w.run(&mut p, |_| {
            if std::thread::current().id() == caller {
                slow();
            }
        })
        .unwrap();
    }
    w
}

/// A pool thread that runs out of shares while the caller still works on
/// its own stays awake for the next run: of twelve back-to-back runs whose
/// caller's share is slow (2 ms) and the pool's fast, few start with no
/// pool thread awake (the first, which starts the pool, and any that the
/// system kept the pool thread from running). Asleep by the run's end, it
/// would be woken by the lingering that follows only after the next run
/// looked for it, and nearly every run would start without it (11 or 12 of
/// 12 here, quiet or busy). The twelve runs are tried up to twenty times,
/// with fresh workers: beside other tests that take the cores, a pool
/// thread can be kept from running through a whole try.
#[test]
fn a_pool_thread_that_ran_out_of_shares_is_awake_for_the_next_run() {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return;
    }
    let runs = 12;
    let try_once = || {
        back_to_back_runs(runs, || std::thread::sleep(Duration::from_millis(1)))
            .cold_runs
            .get()
    };
    if let Err(colds) = tried(try_once, |&c| c <= runs / 3) {
        panic!(
            "runs (of {runs}) that found no pool thread awake at their hand-over, try by try: {colds:?}"
        );
    }
}

/// Tries `once` up to twenty times, with a pause between, until `good`
/// holds: `Err` of every try's outcome if it never did (beside other
/// tests that take the cores, a pool thread can be kept from running
/// through a whole try).
fn tried<T>(once: impl Fn() -> T, good: impl Fn(&T) -> bool) -> Result<(), Vec<T>> {
    let mut tries = Vec::new();
    for _ in 0..20 {
        let t = once();
        if good(&t) {
            return Ok(());
        }
        tries.push(t);
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(tries)
}

/// A pool thread lingering when a run ends goes on lingering for the
/// next run, never ended and posted anew: between its two jobs it is not
/// seen awake, and a run that starts then (at once, back to back) hands
/// it nothing until the caller has done a share alone. Of fifty
/// back-to-back runs whose pool thread is done before the caller (whose
/// share is slow), at most ten start with it asleep, and each run begins
/// one lingering job (the one that keeps it awake after its share), not
/// two. Ended and posted anew at each run's end, 2–35 runs of 50 started
/// cold and about a hundred lingering jobs began, in every try. The
/// runs are tried up to twenty times, with fresh workers: beside other
/// tests that take the cores, a pool thread can be kept from running.
#[test]
fn a_pool_thread_lingering_at_a_run_end_goes_on_lingering() {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return;
    }
    let runs = 50;
    let try_once = || {
        let w = back_to_back_runs(runs, || busy_for(Duration::from_micros(200)));
        (w.cold_runs.get(), w.awake.begun.get())
    };
    if let Err(tries) = tried(try_once, |&(cold, begun)| {
        cold <= runs / 5 && begun <= runs + runs / 5
    }) {
        panic!(
            "back-to-back runs (of {runs}) found cold, and lingering jobs begun, try by try: {tries:?}"
        );
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

/// A consumer that stops inside a unit the caller did outside its slot
/// (the slot held by a stalled pool thread, with an earlier unit): what
/// was not delivered still comes back in order from the slots.
#[test]
fn a_pipeline_stopped_in_a_unit_done_outside_its_slot_returns_its_rest() {
    let units = 96;
    let mut w = Workers::new(2);
    w.pool_delay.arm(Duration::from_millis(2));
    let spared = w.waits.spared.clone();
    let mut seen = 0;
    for _ in 0..500 {
        let mut buf = vec![0u8; 3 * units];
        let slots = buf.chunks_mut(units).collect();
        let mut got = Vec::new();
        let mut stopped = false;
        let on_pool = AtomicUsize::new(0);
        let piped = w.pipeline(
            units,
            slots,
            busy_job(Duration::from_micros(100), &on_pool, None),
            |b: &[u8]| {
                // The unit the caller claimed outside its slot just now:
                // the next of the stalled thread's slot, whose own unit
                // the caller took over.
                let fresh = spared.get() > seen;
                seen = spared.get();
                if stopped || fresh && b.len() > 1 {
                    let n = usize::from(!stopped);
                    got.extend_from_slice(&b[..n]);
                    stopped = true;
                    return n;
                }
                got.extend_from_slice(b);
                b.len()
            },
        );
        assert!(piped.error.is_none());
        let n = gather(&mut buf, units, 3, &piped.pending);
        got.extend_from_slice(&buf[..n]);
        assert_eq!(got, expected(piped.started));
        if stopped {
            return;
        }
    }
    panic!("no unit done outside its slot in 500 pipelines");
}

/// Pipelines whose pool thread stalls 2 ms in each unit it claims (as a
/// thread descheduled on a busy machine does; a pipeline of 96 units of
/// 100 µs goes on long after a stall ends): the caller does the unit
/// it delivers next itself, outside its slot, rather than wait for the
/// stalled thread, and the units after it whose slot that thread still
/// holds too; every unit is still delivered once, in order. Returns the
/// units the pool threads took and the units the caller took over.
fn stalled_pipelines(job_fails_late: bool) -> (usize, usize) {
    let mut w = Workers::new(2);
    w.pool_delay.arm(Duration::from_millis(2));
    // Pool threads join a pipeline once seen awake: pipelines until one
    // took a unit (a bound in case none does).
    let mut on_pool = 0;
    for _ in 0..500 {
        if on_pool > 0 {
            break;
        }
        on_pool += checked_pipeline(&mut w, 96, Duration::from_micros(100), job_fails_late);
    }
    (on_pool, w.waits.taken.get())
}

#[test]
fn a_pipelines_caller_takes_over_a_unit_a_stalled_thread_holds() {
    let (pool_units, taken) = stalled_pipelines(false);
    eprintln!(
        "{pool_units} units on the pool thread, {taken} done by the caller outside their slots"
    );
    assert!(pool_units > 0, "the pool thread took no unit");
    // Each unit the pool thread takes stalls 2 ms: the caller takes it
    // over after twice its own 100 µs.
    assert!(taken > 0, "the caller waited for a stalled thread");
}

/// A pool thread that loses its core while it claims a unit, holding the
/// unit's slot (here it sleeps 2 ms there before each claim): the caller,
/// whose next unit that is, waits for it as for a unit being worked on,
/// then claims the unit itself and does it outside the slot; the thread's
/// claim then fails. Every unit is delivered once, in order.
#[test]
fn a_pipelines_caller_claims_its_next_unit_past_a_stalled_claim() {
    let mut w = Workers::new(2);
    w.claim_delay.arm(Duration::from_millis(2));
    let mut on_pool = 0;
    for _ in 0..500 {
        if w.waits.spared.get() > 0 {
            break;
        }
        on_pool += checked_pipeline(&mut w, 96, Duration::from_micros(100), false);
    }
    let (spared, taken) = (w.waits.spared.get(), w.waits.taken.get());
    eprintln!(
        "{on_pool} units on the pool thread, {spared} claimed past a stalled claim, {taken} taken over"
    );
    // A claim the pool thread wins took it 2 ms, which the caller, its
    // next unit in that slot, would have waited for.
    assert!(
        spared > 0 && on_pool < spared,
        "the caller waited for stalled claims"
    );
}

/// A late thread's failure (its job failing because the run went on
/// without it) neither stops the run nor reaches the caller.
#[test]
fn a_late_threads_failure_changes_nothing() {
    let (pool_units, taken) = stalled_pipelines(true);
    eprintln!(
        "{pool_units} units on the pool thread, {taken} done by the caller outside their slots"
    );
    assert!(pool_units > 0 && taken > 0, "no unit ran late");
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
    w.inject_panic.arm(());
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

#[test]
fn a_readers_runs_open_half_a_mebibyte_at_least() {
    assert_eq!(open_batch_segments(2, 64 * 1024), 8);
    assert_eq!(open_batch_segments(3, 64 * 1024), 9);
    assert_eq!(open_batch_segments(8, 64 * 1024), 8);
    assert_eq!(open_batch_segments(2, 1 << 20), 2);
    assert_eq!(open_batch_segments(2, 1), 2 * SHARE_SEGMENTS);
}

/// Keeps the thread busy for `d` (a job's work, not a sleep: the
/// caller alone must be faster than a run that waits for a thread).
fn busy_for(d: Duration) {
    let since = std::time::Instant::now();
    while since.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Workers that judge whether their pool pays, as outside the tests,
/// with pool threads that stall 3 ms in the middle of each share they
/// claim (as a thread descheduled on a busy machine does; on a loaded
/// test machine they may also start too late to claim any: the runs do
/// not pay either way).
fn stalling_workers(threads: usize) -> Workers {
    judged_workers(threads, Duration::from_millis(3))
}

/// Workers that judge whether their pool pays, as outside the tests,
/// with pool threads that sleep `delay` in each share or unit they claim.
fn judged_workers(threads: usize, delay: Duration) -> Workers {
    crate::probe::CHECK_GAIN.with(|c| c.set(true));
    let mut w = Workers::new(threads);
    crate::probe::CHECK_GAIN.with(|c| c.set(false));
    w.pool_delay.arm(delay);
    w
}

/// Many of `runs` runs were done by the caller alone, and the pool
/// threads worked in at most half of them (`pool_runs`).
fn assert_mostly_alone(w: &Workers, runs: usize, pool_runs: usize, threads: usize) {
    let alone = w.solo_runs.get();
    eprintln!("threads {threads}: {alone} runs alone, the pool in {pool_runs}");
    // The runs that start the pool, fill the windows judged and follow a
    // backing off are on the pool: about half when the pool does not pay
    // but does not stall either (the backing off then doubles from one
    // window's time), nearly none after a stall (32 times what it cost).
    assert!(alone >= runs / 3, "threads {threads}: {alone} runs alone");
    assert!(
        pool_runs <= runs / 2,
        "threads {threads}: the pool worked in {pool_runs} runs"
    );
}

/// Batch runs whose pool threads stall: after the first run judged (the
/// one that starts the pool is not), the caller does the runs alone
/// rather than wait for a stalled thread in each; every piece is still
/// done once.
#[test]
fn batch_runs_go_to_the_caller_alone_while_the_pool_stalls() {
    for threads in [2, 3, 8] {
        let mut w = stalling_workers(threads);
        let caller = std::thread::current().id();
        let runs = 40;
        let mut pool_runs = 0;
        for _ in 0..runs {
            // Four pieces a thread: a share takes long enough for a pool
            // thread to claim one.
            let inputs: Vec<Vec<u8>> = (0..4 * threads as u8).map(|i| vec![i; 3]).collect();
            let mut outputs = vec![vec![0u8; 3]; 4 * threads];
            let on_pool = AtomicUsize::new(0);
            let mut p = pieces(&inputs, &mut outputs);
            w.run(&mut p, |piece| {
                if std::thread::current().id() != caller {
                    on_pool.fetch_add(1, Ordering::SeqCst);
                }
                busy_for(Duration::from_micros(50));
                piece.output.copy_from_slice(piece.input);
            })
            .unwrap();
            drop(p);
            assert_eq!(outputs, inputs, "threads {threads}");
            pool_runs += usize::from(on_pool.into_inner() > 0);
        }
        assert_mostly_alone(&w, runs, pool_runs, threads);
    }
}

/// One pipeline of `units` units on `w` (each busy for `work`), checked
/// to deliver every unit in order; returns the units pool threads took.
fn one_pipeline(w: &mut Workers, units: usize, work: Duration) -> usize {
    checked_pipeline(w, units, work, false)
}

/// A job for the pipeline tests on a caller's thread: unit `u` is `u + 1`
/// bytes of value `u`, after being busy for `work`; it counts the units
/// pool threads took in `on_pool`, and, given `moved` (the bytes
/// delivered so far), fails for a unit already delivered.
fn busy_job<'a>(
    work: Duration,
    on_pool: &'a AtomicUsize,
    moved: Option<&'a AtomicUsize>,
) -> impl Fn(usize, &mut [u8]) -> Result<usize, Error> + Sync + 'a {
    let caller = std::thread::current().id();
    move |u, slot| {
        if std::thread::current().id() != caller {
            on_pool.fetch_add(1, Ordering::SeqCst);
        }
        if moved.is_some_and(|m| m.load(Ordering::SeqCst) >= expected(u + 1).len()) {
            return Err(Error::StreamTooLong);
        }
        busy_for(work);
        slot[..=u].fill(u as u8);
        Ok(u + 1)
    }
}

/// [`one_pipeline`], where a job that finds its unit already delivered
/// fails if `fails_late` (a job whose input changed once its unit was
/// delivered, as the writer's buffer does, run late).
fn checked_pipeline(w: &mut Workers, units: usize, work: Duration, fails_late: bool) -> usize {
    let mut buf = vec![0u8; (w.threads() + 1) * units];
    let slots = buf.chunks_mut(units).collect();
    let on_pool = AtomicUsize::new(0);
    let moved = AtomicUsize::new(0);
    let mut got = Vec::new();
    let piped = w.pipeline(
        units,
        slots,
        busy_job(work, &on_pool, fails_late.then_some(&moved)),
        |b: &[u8]| {
            got.extend_from_slice(b);
            moved.fetch_add(b.len(), Ordering::SeqCst);
            b.len()
        },
    );
    assert!(piped.error.is_none(), "{:?}", piped.error);
    assert_eq!(piped.started, units);
    assert_eq!(got, expected(units), "threads {}", w.threads());
    on_pool.into_inner()
}

/// The same for the writer's pipeline: while the pool threads stall, the
/// caller seals and delivers every unit alone, in order.
#[test]
fn pipelines_go_to_the_caller_alone_while_the_pool_stalls() {
    for threads in [2, 3, 8] {
        let mut w = stalling_workers(threads);
        let runs = 40;
        let mut pool_runs = 0;
        for _ in 0..runs {
            pool_runs += usize::from(one_pipeline(&mut w, 6, Duration::from_micros(50)) > 0);
        }
        assert_mostly_alone(&w, runs, pool_runs, threads);
    }
}

/// A pipeline whose pool thread stalls in the middle of a unit (3 ms, as
/// a thread descheduled on a busy machine does) delivers that unit
/// without it, then waits at its end for the thread to leave: that wait
/// is a stall. Every stream of the machine backs off at once, without a
/// window of pipelines to judge, and a stream made later does its first
/// pipeline alone, without starting its pool.
#[test]
fn a_pipeline_that_waits_at_its_end_for_a_stalled_thread_backs_off_every_stream() {
    for threads in [2, 3, 8] {
        let mut w = stalling_workers(threads);
        // Pipelines until one waited at its end (a bound in case none
        // does: on a loaded test machine the pool thread may not be seen
        // awake to join for a while). The stream's own backing off, after
        // a window that did not pay, is not what is tested: it is ended.
        let since = std::time::Instant::now();
        let mut stalled = false;
        while !stalled && since.elapsed() < Duration::from_secs(20) {
            w.gain.end_backing_off();
            one_pipeline(&mut w, 6, Duration::from_micros(50));
            stalled = w.gain.machine.solo();
        }
        assert!(
            stalled,
            "threads {threads}: no pipeline was taken for a stall"
        );
        let mut later = stalling_workers(threads);
        later.gain.machine = std::sync::Arc::clone(&w.gain.machine);
        assert_eq!(one_pipeline(&mut later, 6, Duration::from_micros(50)), 0);
        assert_eq!(
            later.solo_runs.get(),
            1,
            "threads {threads}: the later stream's pipeline on the pool"
        );
    }
}

/// A batch run's caller waits awake for a pool thread inside its job
/// (for one that has not started it does not spin at all: see above) for
/// at most [`SPIN`](super::wait::SPIN) hints: for one stalled in a share
/// it stops spinning and sleeps until the scope ends.
#[test]
fn a_batch_runs_caller_spins_only_for_a_running_pool_thread_and_not_for_long() {
    use super::wait::SPIN;
    // A pool thread that stalls 20 ms in each share it claims.
    let mut w = Workers::new(2);
    w.pool_delay.arm(Duration::from_millis(20));
    let runs = 10;
    let mut pool_runs = 0;
    for _ in 0..runs {
        // The caller's shares take long enough for the pool thread to
        // be seen awake and claim one.
        pool_runs += usize::from(copy_run(&mut w, 32, 8 << 10, Duration::from_micros(250)) > 0);
    }
    let (spins, sleeps, waits) = (
        w.waits.spins.get(),
        w.waits.sleeps.get(),
        w.waits.waits.get(),
    );
    eprintln!(
        "{pool_runs} runs with a stalled share: {spins} hints in {waits} waits, {sleeps} sleeps"
    );
    assert!(
        waits <= runs && spins <= SPIN * waits,
        "at most {SPIN} hints a run"
    );
    if pool_runs > 0 {
        assert!(
            sleeps > 0,
            "the caller stopped spinning for a stalled thread"
        );
    }
}

/// A pipeline's pool thread, waiting 20 ms for a slot while the caller
/// is stuck in a slow inner writer, spins a few hints, yields a while,
/// then sleeps: never more than [`WAIT_SPINS`](super::wait::WAIT_SPINS)
/// hints a wait, and sleeps that grow longer, so that a 20 ms wait wakes
/// the waiting thread a few times, not every 200 µs.
#[test]
fn a_pipeline_thread_waiting_for_a_stalled_unit_sleeps() {
    use super::wait::WAIT_SPINS;
    let mut w = Workers::new(2);
    let units = 12;
    let (mut pool_units, mut stuck) = (0, 0);
    // Pool threads join a pipeline once seen awake: pipelines until three
    // had one (a bound in case none does).
    for _ in 0..500 {
        if stuck == 3 {
            break;
        }
        let mut buf = vec![0u8; 3 * units];
        let slots = buf.chunks_mut(units).collect();
        let on_pool = AtomicUsize::new(0);
        let mut got = Vec::new();
        let piped = w.pipeline(
            units,
            slots,
            busy_job(Duration::from_micros(100), &on_pool, None),
            |b: &[u8]| {
                // Stuck once the pool thread is in: it fills the slots
                // and waits for one.
                if got.len() == expected(units / 2).len() && on_pool.load(Ordering::SeqCst) > 0 {
                    std::thread::sleep(Duration::from_millis(20));
                    stuck += 1;
                }
                got.extend_from_slice(b);
                b.len()
            },
        );
        assert!(piped.error.is_none());
        assert_eq!(got, expected(units));
        pool_units += on_pool.into_inner();
    }
    let waits = &w.waits;
    let (spins, yields, sleeps, n) = (
        waits.spins.get(),
        waits.yields.get(),
        waits.sleeps.get(),
        waits.waits.get(),
    );
    eprintln!(
        "{pool_units} stalled units: {n} waits, {spins} hints, {yields} yields, {sleeps} sleeps"
    );
    assert!(
        spins <= WAIT_SPINS as usize * n,
        "at most {WAIT_SPINS} hints a wait"
    );
    assert!(stuck > 0, "the pool thread took no unit");
    assert!(sleeps > 0, "a thread waiting 20 ms sleeps");
    // 200 µs, doubling to 5 ms: about 7 sleeps a 20 ms wait (a sleep
    // every 200 µs would be 100).
    assert!(sleeps <= 16 * n, "{sleeps} sleeps in {n} waits");
}

/// Runs whose whole way through the stream (from one run's end to the
/// next) is slower with the pool than the way alone go to the caller
/// alone, whatever each run's own time: a verdict every eight runs the
/// pool took part in (the first of them not judged: the pool's threads are
/// new). Here the way alone is 100 µs a piece, and with the pool 250 µs
/// (as where the cores pass each other's data slowly); with the pool
/// taking no time at all the runs stay on the pool. The way, not the
/// runs, is timed here: sleeps between the runs' ends, the first run's
/// end starting the clock.
#[test]
fn runs_slower_on_their_whole_way_than_alone_go_to_the_caller_alone() {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        // One CPU: no pool threads, every run the caller's.
        return;
    }
    for (per_piece, loses) in [(250, true), (0, false)] {
        crate::probe::CHECK_WAY.with(|c| c.set(true));
        let mut w = Workers::new(2);
        crate::probe::CHECK_WAY.with(|c| c.set(false));
        w.way_alone(16, Duration::from_micros(1600));
        w.way(8, true);
        for _ in 0..9 {
            std::thread::sleep(Duration::from_micros(8 * per_piece));
            w.way(8, false);
        }
        assert_eq!(w.run_way_lost(), loses, "{per_piece} µs a piece");
        assert_eq!(
            w.begin().is_none(),
            loses,
            "{per_piece} µs a piece: the next run is the caller's alone"
        );
    }
}
