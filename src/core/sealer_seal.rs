//! An open stream's sealing state ([`Open`]): sealing segments into the
//! output ([`seal_segments`], on the caller's thread or a ring's); the
//! stream header goes out ahead of the first sealed bytes.

use crate::Error;
use crate::core::layout::{Layout, RECORD_HEADER_LEN, record_header};
use crate::core::suite::Suite;
use crate::core::window::Window;
use std::sync::Arc;

use crate::core::unit::Keyed;

/// What a stream seals with once its header is made: the key, the
/// segment sizes, the header until it goes out, the next index. It keeps
/// two rules: every index is sealed once (`next` moves past each segment
/// sealed, and only then), and the header goes out once, ahead of the
/// first sealed bytes, in the same inner write. An error of a seal is
/// fatal: the [`Sealer`](super::Sealer) fails the stream.
pub(super) struct Open {
    suite: Keyed,
    layout: Layout,
    /// Held until it can go out in one inner write with the first segment.
    header: Option<Vec<u8>>,
    /// Index of the next segment to seal.
    next: u64,
}

impl Open {
    /// A stream whose `header` has not gone out and nothing is sealed.
    pub(super) fn new(suite: Suite, layout: Layout, header: Vec<u8>) -> Open {
        Open {
            suite: Keyed::Own(suite),
            layout,
            header: Some(header),
            next: 0,
        }
    }

    #[cfg(test)]
    pub(super) fn suite(&self) -> &Suite {
        &self.suite
    }

    /// The suite, shared with a ring's pool jobs (moved into an `Arc`
    /// the first time).
    pub(super) fn share_suite(&mut self) -> Arc<Suite> {
        self.suite.share()
    }

    pub(super) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Index of the next segment to seal.
    pub(super) fn next(&self) -> u64 {
        self.next
    }

    /// The stream header, while it has not gone out (empty after).
    #[cfg(test)]
    pub(super) fn header(&self) -> &[u8] {
        self.header.as_deref().unwrap_or_default()
    }

    /// Whether the next index is the last the counter can number: the
    /// segment there can only be the final one.
    pub(super) fn at_last_index(&self) -> bool {
        self.next >= u64::from(u32::MAX)
    }

    /// The header went out with a unit the ring sealed; `segments` more
    /// are numbered (posted to the ring, sealed there or by the caller).
    pub(super) fn advance(&mut self, segments: u64) {
        self.next += segments;
    }

    /// Takes the header not written yet (it goes out ahead of the next
    /// sealed bytes).
    pub(super) fn take_header(&mut self) -> Option<Vec<u8>> {
        self.header.take()
    }

    /// Moves segment numbering to `index` (tests of the counter's end).
    #[cfg(test)]
    pub(super) fn set_next(&mut self, index: u64) {
        self.next = index;
    }

    /// Seals `plain` (one segment, or whole segments and perhaps a short
    /// last one) as the stream's next segments into the drained `out`,
    /// behind the header if it has not gone out yet; the last one final
    /// when `last`. Returns how many were sealed.
    pub(super) fn seal(
        &mut self,
        out: &mut Window,
        plain: &[u8],
        last: bool,
    ) -> Result<u64, Error> {
        let head = self.header.take();
        let r = seal_segments(
            &self.suite,
            &self.layout,
            self.next,
            last,
            head.as_deref().unwrap_or_default(),
            plain,
            out,
        );
        if r.is_err() {
            self.header = head;
        }
        let n = r?;
        self.next += n;
        Ok(n)
    }
}

/// Seals `plain` as segments from index `first` on (each of the layout's
/// size, the last perhaps shorter; an empty `plain` is one empty segment)
/// into the drained `out` behind `head`, the last one final when `last`;
/// returns how many. Every thread seals with it: the same bytes wherever
/// a segment is sealed.
pub(super) fn seal_segments(
    suite: &Suite,
    layout: &Layout,
    first: u64,
    last: bool,
    head: &[u8],
    plain: &[u8],
    out: &mut Window,
) -> Result<u64, Error> {
    let extra = suite.tag_len() + if layout.framed { RECORD_HEADER_LEN } else { 0 };
    // The length of segment `i` of the run, starting at `at`.
    let piece = |at: usize, i: usize| (plain.len() - at).min(layout.plain(first + i as u64));
    let (mut count, mut at) = (0usize, 0);
    while at < plain.len() || count == 0 {
        at += piece(at, count);
        count += 1;
    }
    let need = head.len() + plain.len() + count * extra;
    out.grow(need)?;
    out.clear();
    let output = out.whole_mut();
    output[..head.len()].copy_from_slice(head);
    let (mut to, mut at) = (head.len(), 0);
    for i in 0..count {
        let n = piece(at, i);
        let o = &mut output[to..to + n + extra];
        let last = last && i + 1 == count;
        let index = first + i as u64;
        seal_piece(suite, layout.framed, index, last, &plain[at..at + n], o)?;
        (at, to) = (at + n, to + o.len());
    }
    out.set(0, need);
    Ok(count as u64)
}

/// Seals segment `index` of `plain` into `output` (exactly its sealed
/// length): in the framed variant first the record header, which is also
/// the segment's AAD.
fn seal_piece(
    suite: &Suite,
    framed: bool,
    index: u64,
    last: bool,
    plain: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    if !framed {
        return suite.seal_at(index, last, &[], plain, output);
    }
    let rh = record_header(plain.len(), last);
    let (h, body) = output.split_at_mut(RECORD_HEADER_LEN);
    h.copy_from_slice(&rh);
    suite.seal_at(index, last, &rh, plain, body)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "sealer_seal_tests.rs"]
mod tests;
