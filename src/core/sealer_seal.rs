//! An open stream's sealing state ([`Open`]): sealing into the output one
//! segment, or a run of them on the workers, or one share of a pipelined
//! run; the stream header goes out ahead of the first sealed bytes.

use crate::Error;
use crate::core::layout::{Layout, RECORD_HEADER_LEN, record_header};
use crate::core::suite::Suite;
use crate::core::window::Window;
use crate::threads::{Piece, Workers};

/// What a stream seals with once its header is made: the key, the
/// segment sizes, the header until it goes out, the next index. It keeps
/// two rules: every index is sealed once (`next` moves past each segment
/// sealed, and only then), and the header goes out once, ahead of the
/// first sealed bytes, in the same inner write. An error of a seal is
/// fatal: the [`Sealer`](super::Sealer) fails the stream.
pub(super) struct Open {
    suite: Suite,
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
            suite,
            layout,
            header: Some(header),
            next: 0,
        }
    }

    pub(super) fn suite(&self) -> &Suite {
        &self.suite
    }

    pub(super) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Index of the next segment to seal.
    pub(super) fn next(&self) -> u64 {
        self.next
    }

    /// The stream header, while it has not gone out (empty after).
    pub(super) fn header(&self) -> &[u8] {
        self.header.as_deref().unwrap_or_default()
    }

    /// Whether the next index is the last the counter can number: the
    /// segment there can only be the final one.
    pub(super) fn at_last_index(&self) -> bool {
        self.next >= u64::from(u32::MAX)
    }

    /// A pipelined run sealed `segments` segments from [`next`](Self::next)
    /// on, the header at the head of the first when `header_sent`.
    pub(super) fn advance(&mut self, segments: usize, header_sent: bool) {
        if header_sent {
            self.header = None;
        }
        self.next += segments as u64;
    }

    /// Moves segment numbering to `index` (tests of the counter's end).
    #[cfg(test)]
    pub(super) fn set_next(&mut self, index: u64) {
        self.next = index;
    }

    /// Seals `plain` as the stream's next segment into the drained `out`,
    /// behind the header if it has not gone out yet.
    pub(super) fn seal(&mut self, out: &mut Window, plain: &[u8], last: bool) -> Result<(), Error> {
        let record = if self.layout.framed {
            RECORD_HEADER_LEN
        } else {
            0
        };
        let body = record + plain.len() + self.suite.tag_len();
        let start = self.behind_header(out, body)?;
        let end = start + body;
        let output = &mut out.whole_mut()[start..end];
        seal_piece(
            &self.suite,
            self.layout.framed,
            self.next,
            last,
            plain,
            output,
        )?;
        self.next += 1;
        out.set(0, end);
        Ok(())
    }

    /// Seals `plain`, more than one segment, as the stream's next segments
    /// into the drained `out` (behind the header if it has not gone out
    /// yet), on the workers: each from its own index, the last one final
    /// when `last`. Returns how many were sealed. A panic is an error.
    pub(super) fn seal_parallel(
        &mut self,
        out: &mut Window,
        plain: &[u8],
        last: bool,
        workers: &mut Workers,
    ) -> Result<u64, Error> {
        let (record, tag) = (
            if self.layout.framed {
                RECORD_HEADER_LEN
            } else {
                0
            },
            self.suite.tag_len(),
        );
        // The pieces: whole segments from `next` on; the last may be short
        // (the final segment, or a framed record sealed by a flush).
        let mut sizes = Vec::new();
        let mut left = plain.len();
        while left > 0 {
            let n = left.min(self.layout.plain(self.next + sizes.len() as u64));
            sizes.push(n);
            left -= n;
        }
        let body = sizes.iter().map(|n| record + n + tag).sum();
        let head = self.behind_header(out, body)?;
        let need = head + body;
        let mut pieces = Vec::with_capacity(sizes.len());
        let (mut input, mut output) = (plain, &mut out.whole_mut()[head..need]);
        for (i, &n) in sizes.iter().enumerate() {
            let (p, rest_in) = input.split_at(n);
            let (o, rest_out) = output.split_at_mut(record + n + tag);
            pieces.push(Piece {
                index: self.next + i as u64,
                last: last && i + 1 == sizes.len(),
                input: p,
                output: o,
                result: Ok(()),
            });
            (input, output) = (rest_in, rest_out);
        }
        let (suite, framed) = (&self.suite, self.layout.framed);
        let ran = workers.run(&mut pieces, |p| {
            p.result = seal_piece(suite, framed, p.index, p.last, p.input, p.output);
        });
        ran.and_then(|()| pieces.iter().try_for_each(|p| p.result.clone()))?;
        drop(pieces);
        self.next += sizes.len() as u64;
        out.set(0, need);
        Ok(sizes.len() as u64)
    }

    /// Readies the drained `out` for `body` sealed bytes behind the stream
    /// header not written yet (copied in, and so gone from `header`): grows
    /// it and returns where the body starts.
    fn behind_header(&mut self, out: &mut Window, body: usize) -> Result<usize, Error> {
        let head = self.header().len();
        out.grow(head + body)?;
        out.clear();
        if let Some(h) = self.header.take() {
            out.whole_mut()[..head].copy_from_slice(&h);
        }
        Ok(head)
    }
}

/// Seals segment `index` of `plain` into `output` (exactly its sealed
/// length): in the framed variant first the record header, which is also
/// the segment's AAD. What the one-thread and the threaded paths share.
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

/// Seals the segments of one share of a pipelined write, non-final, from
/// segment `first` on, into `output` behind `head` (the stream header, in
/// the first share only), each `extra` bytes longer sealed; returns the
/// bytes written.
pub(super) fn seal_share(
    suite: &Suite,
    layout: &Layout,
    first: u64,
    extra: usize,
    head: &[u8],
    mut input: &[u8],
    output: &mut [u8],
) -> Result<usize, Error> {
    output[..head.len()].copy_from_slice(head);
    let (mut at, mut index) = (head.len(), first);
    while !input.is_empty() {
        let (p, rest) = input.split_at(layout.plain(index));
        let o = &mut output[at..at + p.len() + extra];
        seal_piece(suite, layout.framed, index, false, p, o)?;
        (input, at, index) = (rest, at + o.len(), index + 1);
    }
    Ok(at)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "sealer_seal_tests.rs"]
mod tests;
