//! Segment sizes and offset arithmetic of a stream.
//!
//! A stream is a header of `header` bytes, then segments: segment 0 holds
//! up to `first` plaintext bytes, every later one up to `rest`, each sealed
//! with a `tag`-byte tag. Every segment but the last is full. A profile
//! decides the numbers (the native format: `first == rest`; Tink's: the
//! first segment is shorter by the header); the engine and the fronts
//! compute everything else from them.

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
    /// Whether an empty final segment may follow full ones (Tink readers
    /// accept it; the native format has one encoding per plaintext).
    pub(crate) empty_final: bool,
}

// The offset arithmetic is for random access (seeking, positional reads),
// which builds on it; today only its tests call it.
#[allow(dead_code)]
impl Layout {
    /// Plaintext capacity of segment `index`.
    pub(crate) fn plain(&self, index: u64) -> usize {
        if index == 0 { self.first } else { self.rest }
    }

    /// Sealed (ciphertext + tag) length of a full segment `index`.
    pub(crate) fn sealed(&self, index: u64) -> usize {
        self.plain(index) + self.tag
    }

    /// The largest sealed segment of the stream.
    pub(crate) fn max_sealed(&self) -> usize {
        self.first.max(self.rest) + self.tag
    }

    /// Offset in the stream (header included) where segment `index` starts.
    pub(crate) fn segment_offset(&self, index: u64) -> u64 {
        let (header, first, rest) = (self.header as u64, self.first as u64, self.rest as u64);
        match index {
            0 => header,
            i => header + first + self.tag as u64 + (i - 1) * (rest + self.tag as u64),
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
        empty_final: false,
    };
    const TINK: Layout = Layout {
        header: 24,
        first: 100 - 24 - 16,
        rest: 100 - 16,
        tag: 16,
        empty_final: true,
    };

    /// The arithmetic against a stream built segment by segment.
    #[test]
    fn offsets_agree_with_a_walk_over_the_segments() {
        for l in [NATIVE, TINK] {
            let mut offset = l.header as u64;
            let mut plain = 0u64;
            for i in 0..50u64 {
                assert_eq!(l.segment_offset(i), offset, "{l:?} segment {i}");
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
            assert_eq!(l.plaintext_len(3), None);
        }
    }
}
