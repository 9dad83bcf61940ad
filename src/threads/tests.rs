//! The pool and batch runs, on jobs of their own.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::run::SHARE_SEGMENTS;
use super::{Piece, Workers, batch_segments, open_batch_segments};
use crate::Error;
use crate::probe::{Fault, Job};

fn pieces<'a>(inputs: &'a [Vec<u8>], outputs: &'a mut [Vec<u8>]) -> Vec<Piece<'a>> {
    inputs
        .iter()
        .zip(outputs.iter_mut())
        .enumerate()
        .map(|(i, (input, output))| Piece {
            index: i as u64,
            input,
            output,
            result: Ok(()),
        })
        .collect()
}

/// Every piece is done once, on more than one thread.
/// A panic anywhere in a job a pool thread runs (outside what the job
/// catches itself) is `WorkerPanicked`, for every kind of job: a run's
/// share (the run a pool thread joined fails, never unwinding into the caller), a lingering job and a posted
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
}

/// After each run the pool threads stay awake for the next one (as
/// many as the machine has CPUs besides the caller's).
#[test]
fn pool_threads_linger_after_each_run() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    for threads in [2, 3, 8] {
        let mut w = Workers::new(threads);
        let inputs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
        for runs in 1..=4 {
            let mut outputs = vec![vec![0u8; 3]; 9];
            let mut p = pieces(&inputs, &mut outputs);
            w.run(&mut p, |_| {}).unwrap();
            assert_eq!(
                w.lingered.get(),
                runs * (threads.min(cpus) - 1),
                "threads {threads}"
            );
        }
        if cpus > 1 {
            assert!(w.lingered.get() > 0);
        }
    }
}

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
