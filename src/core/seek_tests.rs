//! The position's invariants: a refused seek, a landing at the input's
//! end, the length query's steps.

use super::*;
use crate::core::layout::{Ends, Layout};

const LAYOUT: Layout = Layout {
    header: 4,
    first: 10,
    rest: 10,
    tag: 2,
    ends: Ends::Flag,
    framed: false,
};

/// [`LAYOUT`] as the fixed-size units it is.
fn fixed() -> Fixed {
    let units = LAYOUT.units();
    *units.fixed().unwrap_or_else(|| unreachable!("not framed"))
}

#[test]
fn a_refused_seek_restores_the_position_before_the_first_of_them() {
    let mut p = Position::new();
    p.delivered(7);
    p.seek_to(20);
    p.seek_to(30);
    assert_eq!(p.pending().map(|s| s.to), Some(30));
    p.take_pending(false);
    assert_eq!((p.pos(), p.pending()), (7, None));
    p.seek_to(7);
    assert_eq!(p.pending(), None, "a seek to where it is costs nothing");
}

#[test]
fn only_a_seek_makes_an_end_of_input_wait_for_the_length() {
    let fixed = fixed();
    let mut p = Position::new();
    assert!(!p.ends_here(3), "no seek: the input's end is the opener's");
    let landed = p.land(25, &fixed, &mut Plain::new(), 0, None);
    assert_eq!(
        landed,
        Landed::From {
            next: 2,
            from: fixed.segment_offset(2),
            final_len: None
        }
    );
    assert_eq!((p.input_step(), p.skips()), (Step::Seek(28), true));
    assert!(!p.ends_here(0), "at the first segment the stream is cut");
    assert!(p.ends_here(2));
    assert_eq!(p.landing(), Landing::Ending);
    p.confirm_len(20);
    assert!(p.settle_ending());
    assert_eq!(p.landing(), Landing::Repositioned);
    p.opened();
    assert_eq!(p.landing(), Landing::Steady);
}

#[test]
fn a_length_query_reads_the_last_segment_then_proves_the_length() {
    let fixed = fixed();
    let mut p = Position::new();
    p.inner_read(4);
    assert_eq!(p.query_step(|_| true), QueryStep::Ask(Step::Length));
    assert!(p.querying() && p.moves_inner());
    assert_eq!(p.measured(3, &fixed), Err(Error::Truncated));
    assert_eq!(p.measured(4 + 12 + 7, &fixed), Ok(16));
    assert_eq!(p.query_step(|_| true), QueryStep::Ask(Step::Seek(16)));
    p.sought(16);
    assert_eq!(p.query_step(|_| true), QueryStep::Ask(Step::Read));
    let open = QueryStep::Open {
        index: 1,
        sealed: 7,
    };
    assert_eq!(p.query_step(|_| false), open);
    assert!(!p.querying());
    p.proven(15);
    assert_eq!(p.auth_len(), Some(15));
    assert_eq!(
        p.pending().map(|s| s.to),
        Some(0),
        "the next read repositions"
    );
}
