//! Segment sizes and offset arithmetic of a stream, and its units as a
//! type: [`Units::Fixed`] segments have offsets ([`Fixed`] alone has the
//! arithmetic), [`Units::Framed`] records do not.
//!
//! A stream is a header of `header` bytes, then segments: segment 0 holds
//! up to `first` plaintext bytes, every later one up to `rest`, each sealed
//! with a `tag`-byte tag. Every segment but the last is full. A profile
//! decides the numbers (the native format: `first == rest`; Tink's: the
//! first segment is shorter by the header); the engine and the fronts
//! compute everything else from them.

use crate::Error;

/// The segment layout of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Header bytes before segment 0.
    pub(crate) header: usize,
    /// Plaintext bytes of a full segment 0.
    pub(crate) first: usize,
    /// Plaintext bytes of every later full segment.
    pub(crate) rest: usize,
    /// Tag bytes after each segment's ciphertext.
    pub(crate) tag: usize,
    /// How the final segment is told from the others.
    pub(crate) ends: Ends,
    /// Records instead of fixed-size segments: each is a
    /// [`RECORD_HEADER_LEN`]-byte record header (final flag and plaintext
    /// length, authenticated as the segment's AAD), then the sealed
    /// plaintext, of any length up to `rest`. No offset arithmetic holds.
    pub(crate) framed: bool,
}

/// The unit rule of a layout: how a stream's final segment is told from
/// the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ends {
    /// By the last flag in its nonce, and it is never empty after full
    /// segments (the native format: one encoding per plaintext).
    Flag,
    /// By the last flag, and it may be empty after full segments (Tink's
    /// readers accept that).
    FlagOrEmpty,
    /// By its length: it is shorter than a full segment (possibly empty),
    /// every other is full, and the nonce has no flag. A full segment is
    /// sealed as soon as it is full and released as soon as it opens; a
    /// stream that ends after one is cut. (Cobblestone.)
    Short,
}

impl Ends {
    /// Plaintext bytes that must follow a full segment before it can be
    /// sealed: one where a full segment may yet be the final one, none
    /// where it never is.
    pub(crate) fn hold_back(self) -> usize {
        usize::from(self != Ends::Short)
    }
}

/// Bytes of record header before each record of a framed stream: a
/// big-endian u32 whose top bit is the final flag and whose other 31 bits
/// are the record's plaintext length.
pub(crate) const RECORD_HEADER_LEN: usize = 4;

/// The record header of a record of `len` plaintext bytes.
pub(crate) fn record_header(len: usize, last: bool) -> [u8; RECORD_HEADER_LEN] {
    let len = u32::try_from(len).unwrap_or_else(|_| unreachable!("a record is at most 16 MiB"));
    (len | if last { 1 << 31 } else { 0 }).to_be_bytes()
}

/// The plaintext length and final flag a record header says.
pub(crate) fn parse_record_header(h: [u8; RECORD_HEADER_LEN]) -> (u32, bool) {
    let v = u32::from_be_bytes(h);
    (v & !(1 << 31), v >> 31 == 1)
}

/// The record header at the start of `data`, once it is all there: its
/// bytes (the record's AAD), the plaintext length it says (`usize::MAX`
/// where that does not fit a `usize`: over any record size) and its final
/// flag.
pub(crate) fn record_at(data: &[u8]) -> Option<([u8; RECORD_HEADER_LEN], usize, bool)> {
    let h: [u8; RECORD_HEADER_LEN] = data.get(..RECORD_HEADER_LEN)?.try_into().ok()?;
    let (len, last) = parse_record_header(h);
    Some((h, usize::try_from(len).unwrap_or(usize::MAX), last))
}

impl Layout {
    /// Plaintext capacity of segment `index`.
    pub(crate) fn plain(&self, index: u64) -> usize {
        if index == 0 { self.first } else { self.rest }
    }

    /// Sealed (ciphertext + tag) length of a full segment `index`.
    pub(crate) fn sealed(&self, index: u64) -> usize {
        self.plain(index) + self.tag
    }

    /// The largest sealed segment of the stream (a framed record with its
    /// record header).
    pub(crate) fn max_sealed(&self) -> usize {
        let record = if self.framed { RECORD_HEADER_LEN } else { 0 };
        record + self.first.max(self.rest) + self.tag
    }

    /// Plaintext bytes of the longest run of whole segments from segment
    /// `next` on, at most `count` of them, that fits in `max` bytes.
    pub(crate) fn run_len(&self, next: u64, count: u64, max: usize) -> usize {
        let (mut total, mut count) = (0usize, count);
        if next == 0 && count > 0 {
            if self.first > max {
                return 0;
            }
            (total, count) = (self.first, count - 1);
        }
        let whole = ((max - total) / self.rest.max(1)) as u64;
        total + usize::try_from(count.min(whole)).unwrap_or(0) * self.rest
    }

    /// The kind of units this layout has.
    pub(crate) fn units(self) -> Units {
        if self.framed {
            Units::Framed(Framed(self))
        } else {
            Units::Fixed(Fixed(self))
        }
    }
}

/// The refusal of random access (seeking, the length query, positional
/// reads) on a framed stream, whose records have no computable offsets.
pub(crate) const NO_RANDOM_ACCESS: Error = Error::NoRandomAccess;

/// A stream's units, of one of two kinds: fixed-size segments, whose
/// offsets follow from their index, or framed records, whose lengths only
/// their own headers say. Offset arithmetic (seeking, the length query,
/// positional reads) exists only on [`Fixed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Units {
    /// Fixed-size segments.
    Fixed(Fixed),
    /// Records of any length up to the layout's `rest`.
    Framed(Framed),
}

impl Units {
    /// The layout, whichever the kind.
    #[inline]
    pub(crate) fn layout(&self) -> &Layout {
        match self {
            Units::Fixed(Fixed(l)) | Units::Framed(Framed(l)) => l,
        }
    }

    /// The fixed-size layout, if the units are segments.
    #[inline]
    pub(crate) fn fixed(&self) -> Option<&Fixed> {
        match self {
            Units::Fixed(f) => Some(f),
            Units::Framed(_) => None,
        }
    }
}

/// A layout of fixed-size segments (made only by [`Layout::units`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fixed(Layout);

/// A layout of framed records (made only by [`Layout::units`]): no offset
/// arithmetic holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Framed(Layout);

impl std::ops::Deref for Fixed {
    type Target = Layout;
    fn deref(&self) -> &Layout {
        &self.0
    }
}

impl std::ops::Deref for Framed {
    type Target = Layout;
    fn deref(&self) -> &Layout {
        &self.0
    }
}

impl Fixed {
    /// Offset in the stream (header included) where segment `index`
    /// starts; `None` past 2^64 (a position no source can hold).
    pub(crate) fn segment_offset(&self, index: u64) -> Option<u64> {
        let (header, first, rest) = (self.header as u64, self.first as u64, self.rest as u64);
        let tag = self.tag as u64;
        match index {
            0 => Some(header),
            i => (i - 1)
                .checked_mul(rest + tag)?
                .checked_add(header + first + tag),
        }
    }

    /// The segment that holds plaintext offset `p`, and the offset of `p`
    /// within that segment's plaintext.
    pub(crate) fn segment_of(&self, p: u64) -> (u64, usize) {
        let (first, rest) = (self.first as u64, self.rest as u64);
        let within =
            |x: u64| usize::try_from(x).unwrap_or_else(|_| unreachable!("below a segment size"));
        if p < first {
            return (0, within(p));
        }
        let q = p - first;
        (1 + q / rest, within(q % rest))
    }

    /// Plaintext offset where segment `index` starts.
    pub(crate) fn plain_offset(&self, index: u64) -> u64 {
        match index {
            0 => 0,
            i => self.first as u64 + (i - 1) * self.rest as u64,
        }
    }

    /// The last segment of a stream of `len` bytes: its index and sealed
    /// length, or `None` when no stream of this layout has that length.
    pub(crate) fn last_segment(&self, len: u64) -> Option<(u64, usize)> {
        let sized =
            |x: u64| usize::try_from(x).unwrap_or_else(|_| unreachable!("a sealed segment"));
        let (tag, first, rest) = (self.tag as u64, self.first as u64, self.rest as u64);
        let body = len.checked_sub(self.header as u64)?;
        if body < tag {
            return None;
        }
        if body <= first + tag {
            return Some((0, sized(body)));
        }
        let after = body - first - tag;
        let (full, partial) = (after / (rest + tag), after % (rest + tag));
        match partial {
            0 => Some((full, sized(rest + tag))),
            p if p >= tag => Some((full + 1, sized(p))),
            _ => None,
        }
    }

    /// The plaintext length of a well-formed stream of `len` bytes, or
    /// `None` when no stream of this layout has that length. (A length
    /// alone is never trusted: only an opened final segment proves one.)
    /// The tests check [`last_segment`](Self::last_segment) against it.
    #[cfg(test)]
    pub(crate) fn plaintext_len(&self, len: u64) -> Option<u64> {
        let (tag, first, rest) = (self.tag as u64, self.first as u64, self.rest as u64);
        let body = len.checked_sub(self.header as u64)?;
        if body < tag {
            return None;
        }
        if body <= first + tag {
            return Some(body - tag);
        }
        let after = body - first - tag;
        let (full, partial) = (after / (rest + tag), after % (rest + tag));
        match partial {
            0 => Some(first + full * rest),
            p if p >= tag => Some(first + full * rest + p - tag),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NATIVE: Layout = Layout {
        header: 53,
        first: 10,
        rest: 10,
        tag: 16,
        ends: Ends::Flag,
        framed: false,
    };
    const TINK: Layout = Layout {
        header: 24,
        first: 100 - 24 - 16,
        rest: 100 - 16,
        tag: 16,
        ends: Ends::FlagOrEmpty,
        framed: false,
    };

    /// The arithmetic against a stream built segment by segment.
    #[test]
    fn offsets_agree_with_a_walk_over_the_segments() {
        for l in [NATIVE, TINK].map(Fixed) {
            let mut offset = l.header as u64;
            let mut plain = 0u64;
            for i in 0..50u64 {
                assert_eq!(l.segment_offset(i), Some(offset), "{l:?} segment {i}");
                assert_eq!(l.plain_offset(i), plain, "{l:?} segment {i}");
                for k in 0..l.plain(i) {
                    assert_eq!(l.segment_of(plain + k as u64), (i, k));
                }
                // A stream whose last segment is `i`, holding 0..=full bytes.
                for k in 0..=l.plain(i) {
                    let len = offset + (k + l.tag) as u64;
                    if k == 0 && i > 0 {
                        continue; // (a native writer never ends on an empty segment)
                    }
                    assert_eq!(l.plaintext_len(len), Some(plain + k as u64), "{l:?} {len}");
                    assert_eq!(l.last_segment(len), Some((i, k + l.tag)), "{l:?} {len}");
                }
                offset += l.sealed(i) as u64;
                plain += l.plain(i) as u64;
            }
            assert_eq!(l.plaintext_len(l.header as u64 + 15), None);
            assert_eq!(l.last_segment(l.header as u64 + 15), None);
            assert_eq!(l.segment_offset(u64::MAX), None);
            assert_eq!(l.plaintext_len(3), None);
        }
    }
}
