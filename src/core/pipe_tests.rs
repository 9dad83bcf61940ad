//! The plan of a pipelined write, from plain numbers.

#![allow(clippy::unwrap_used)]

use super::{MAX_PIPE_UNITS, PipeInput, PipePlan, plan};
use crate::core::layout::{Ends, Layout};

const SEG: usize = 64 * 1024;

fn layout(first: usize, rest: usize, framed: bool) -> Layout {
    Layout {
        header: 24,
        first,
        rest,
        tag: 16,
        ends: Ends::Flag,
        framed,
    }
}

fn input(next: u64, held: usize, rest: usize, threads: usize) -> PipeInput {
    PipeInput {
        layout: layout(SEG - 24, SEG, false),
        next,
        held,
        rest,
        threads,
        head: 0,
        tag: 16,
    }
}

/// The shares tile the run: consecutive segments, the buffered ones from
/// the buffer's start, the write's from the slice's start, none across
/// the buffer's end; the tail is what the run leaves of the write.
fn check_tiling(i: PipeInput, p: &PipePlan) {
    let (mut seg, mut buf, mut own) = (0, 0, 0);
    for (n, u) in p.units.iter().enumerate() {
        assert_eq!(u.first, seg, "unit {n}");
        assert!(
            u.end > u.first
                && u.end - u.first <= 1.max(crate::threads::batch_segments(1, i.layout.rest))
        );
        let len: usize = (u.first..u.end)
            .map(|s| i.layout.plain(i.next + s as u64))
            .sum();
        assert_eq!(u.len, len);
        assert_eq!(u.buffered, n < p.buffered_units);
        if u.buffered {
            assert_eq!(u.start, buf);
            buf += len;
        } else {
            assert_eq!(u.start, own);
            own += len;
        }
        seg = u.end;
    }
    assert_eq!(buf, i.held, "every buffered byte in a share");
    assert_eq!(p.tail, own);
    assert!(p.tail < i.rest, "a byte after the run (the hold-back)");
}

#[test]
fn a_write_is_cut_into_shares_of_whole_segments() {
    // From the stream's start (a shorter first segment), nothing buffered.
    let i = input(0, 0, 10 * SEG + 5, 2);
    let p = plan(i).unwrap();
    check_tiling(i, &p);
    assert_eq!(p.units.len(), 10);
    assert_eq!(p.buffered_units, 0);
    assert_eq!(p.slots, 3);
    assert_eq!(p.tail, (SEG - 24) + 9 * SEG);
    // Small segments: several per share.
    let mut i = input(5, 0, 100 * 1024 + 1, 2);
    i.layout = layout(1000, 1024, false);
    let p = plan(i).unwrap();
    check_tiling(i, &p);
    assert_eq!(p.units.len(), 2);
    assert_eq!((p.units[0].end, p.units[1].end), (64, 100));
}

#[test]
fn buffered_shares_come_first_and_end_at_the_buffer() {
    let batch = 2 * SEG;
    let i = input(3, batch, 8 * SEG + 1, 2);
    let p = plan(i).unwrap();
    check_tiling(i, &p);
    assert_eq!(p.buffered_units, 2);
    assert_eq!(p.batch, batch);
}

#[test]
fn what_the_pipeline_does_not_take() {
    // Nothing of the write.
    assert_eq!(plan(input(3, 0, 0, 2)), None);
    // A buffer holding part of a segment.
    assert_eq!(plan(input(3, 100, 8 * SEG, 2)), None);
    // One segment only.
    assert_eq!(plan(input(3, 0, SEG + 1, 2)), None);
    assert_eq!(plan(input(3, 0, 2 * SEG, 2)), None);
    // A buffer of whole segments, not full, and nothing of the write
    // sealed with it (its next segment is not whole).
    assert_eq!(plan(input(3, SEG, 10, 3)), None);
    // A full batch with a byte after it: sealed alone.
    let p = plan(input(3, 2 * SEG, 1, 2)).unwrap();
    assert_eq!((p.units.len(), p.buffered_units, p.tail), (2, 2, 0));
}

#[test]
fn a_run_is_capped_in_shares_and_by_the_counter() {
    let i = input(1, 0, 1000 * SEG, 2);
    let p = plan(i).unwrap();
    check_tiling(i, &p);
    assert_eq!(p.units.len(), MAX_PIPE_UNITS);
    // Many threads: twice the threads and one.
    let i = input(1, 0, 1000 * SEG, 200);
    assert_eq!(plan(i).unwrap().units.len(), 401);
    // Never past the last index a non-final segment can have.
    let next = u64::from(u32::MAX) - 3;
    let i = input(next, 0, 10 * SEG, 2);
    let p = plan(i).unwrap();
    check_tiling(i, &p);
    assert_eq!(p.units.last().unwrap().end, 3);
    assert_eq!(plan(input(u64::from(u32::MAX) - 1, 0, 10 * SEG, 2)), None);
}

#[test]
fn a_slot_holds_the_largest_sealed_share_and_the_header() {
    let mut i = input(0, 0, 10 * SEG + 1, 2);
    i.head = 24;
    i.layout = layout(SEG - 24, SEG, true);
    let p = plan(i).unwrap();
    assert_eq!(p.extra, 4 + 16);
    // Every share is one segment; the first is 24 bytes shorter and
    // carries the 24-byte header.
    assert_eq!(p.slot, SEG + 20);
    let mut i = input(0, 0, 10 * SEG + 1, 2);
    i.head = 100;
    assert_eq!(plan(i).unwrap().slot, SEG - 24 + 16 + 100);
}

/// The tail job clears the buffer the buffered shares are sealed from:
/// whenever the plan has one, the unit whose delivery lets it start
/// (`tail_job - slots`) comes at or after the last buffered share, and
/// it is the last unit; without buffered shares any tail one copy takes
/// has a job.
#[test]
fn the_tail_job_starts_only_after_the_buffered_shares() {
    let mut with_buffer = 0;
    for threads in [2, 3, 4, 8] {
        let batch = threads * SEG;
        for held in [0, batch] {
            for segs in 0..40 {
                for extra in [1, 5, SEG - 1, SEG, SEG + 1] {
                    let i = input(7, held, segs * SEG + extra, threads);
                    let Some(p) = plan(i) else { continue };
                    check_tiling(i, &p);
                    let tail = i.rest - p.tail;
                    match p.tail_job {
                        Some(t) => {
                            assert_eq!(t, p.units.len());
                            assert!(tail <= SEG);
                            if p.buffered_units > 0 {
                                assert!(t >= p.buffered_units - 1 + p.slots, "{i:?}");
                                with_buffer += 1;
                            }
                        }
                        None if p.buffered_units == 0 => assert!(tail > SEG, "{i:?}"),
                        None => {
                            assert!(p.units.len() < p.buffered_units - 1 + p.slots, "{i:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(
        with_buffer > 0,
        "a full buffer and a long write have a tail job"
    );
}
