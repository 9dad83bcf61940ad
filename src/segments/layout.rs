//! Where each segment of a fixed-size stream lies, and how a stream is cut
//! into the parts of a multipart upload.

use std::fmt;
use std::ops::Range;

/// Where the segments of one fixed-size stream lie: the header, then
/// segment *i* of `segment_size` plaintext bytes and a tag, every segment
/// but the last full. In the native format the final segment may be full
/// and is empty only in the empty stream; in Cobblestone it is always
/// shorter than a full one, possibly empty.
///
/// Every offset here is a byte offset in the whole stream, header
/// included; every plaintext offset counts from the stream's first
/// plaintext byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    header: u64,
    size: u64,
    tag: u64,
    /// The final segment is told by being short (Cobblestone), not by a
    /// flag.
    short_end: bool,
}

/// The most segments a stream can hold: indices are 32-bit.
const MAX_SEGMENTS: u64 = 1 << 32;

impl Layout {
    pub(crate) fn new(header: usize, segment_size: u32, tag: usize, short_end: bool) -> Layout {
        Layout {
            header: header as u64,
            size: u64::from(segment_size),
            tag: tag as u64,
            short_end,
        }
    }

    /// Plaintext bytes of a full segment.
    pub fn segment_size(&self) -> u32 {
        u32::try_from(self.size).unwrap_or_else(|_| unreachable!("built from a u32"))
    }

    /// Bytes of the stream's header, before segment 0.
    pub fn header_len(&self) -> u64 {
        self.header
    }

    /// Bytes of one full sealed segment: its plaintext size and its tag.
    pub fn sealed_segment_len(&self) -> u64 {
        self.size + self.tag
    }

    /// How many segments a stream of `plaintext_len` bytes has: at least
    /// one (the empty stream is one empty final segment). In Cobblestone a
    /// plaintext of whole segments is followed by an empty final one.
    pub fn segment_count(&self, plaintext_len: u64) -> u64 {
        if self.short_end {
            plaintext_len / self.size + 1
        } else {
            plaintext_len.div_ceil(self.size).max(1)
        }
    }

    /// The length of the whole stream (header included) that holds
    /// `plaintext_len` bytes; saturates at `u64::MAX` for lengths no stream
    /// can have (more than 2^32 segments).
    pub fn ciphertext_len(&self, plaintext_len: u64) -> u64 {
        let tags = self.segment_count(plaintext_len).saturating_mul(self.tag);
        self.header
            .saturating_add(plaintext_len)
            .saturating_add(tags)
    }

    /// The plaintext length of a stream of `ciphertext_len` bytes, or
    /// `None` when no stream of this layout is that long. A length proves
    /// nothing: only the final segment, opened, does.
    pub fn plaintext_len(&self, ciphertext_len: u64) -> Option<u64> {
        let body = ciphertext_len.checked_sub(self.header)?;
        let full = self.sealed_segment_len();
        let (whole, rest) = (body / full, body % full);
        match rest {
            // A stream ending on a full segment: complete natively, cut in
            // Cobblestone.
            0 if whole > 0 && !self.short_end => Some(whole * self.size),
            // Natively, an empty final segment only as segment 0.
            r if r == self.tag && whole > 0 && !self.short_end => None,
            r if r >= self.tag => Some(whole * self.size + r - self.tag),
            _ => None,
        }
    }

    /// The segments that hold the plaintext bytes `plaintext`: from the one
    /// holding its first byte to the one holding its last. An empty range
    /// gives the empty range at the segment its start lies in. Indices past
    /// the last a stream can have are cut at `u32::MAX`.
    pub fn segments_for(&self, plaintext: Range<u64>) -> Range<u32> {
        let index = |i: u64| u32::try_from(i).unwrap_or(u32::MAX);
        let start = plaintext.start / self.size;
        let end = if plaintext.end > plaintext.start {
            plaintext.end.div_ceil(self.size)
        } else {
            start
        };
        index(start)..index(end)
    }

    /// Where `segments` lie in the stream: from the first byte of the first
    /// to the last byte of the last, were it full. The stream's final
    /// segment may be shorter, so a range that ends with it may end past
    /// the stream's last byte (a ranged read past the end returns what is
    /// there). The header (`0..header_len()`) is not included.
    pub fn ciphertext_range(&self, segments: Range<u32>) -> Range<u64> {
        let at = |i: u32| self.header + u64::from(i) * self.sealed_segment_len();
        at(segments.start)..at(segments.end.max(segments.start))
    }

    /// The plaintext bytes `segments` hold, were the last of them full.
    pub fn plaintext_range(&self, segments: Range<u32>) -> Range<u64> {
        let at = |i: u32| u64::from(i) * self.size;
        at(segments.start)..at(segments.end.max(segments.start))
    }

    /// Cuts a stream of `plaintext_len` bytes into the parts of a multipart
    /// upload, each of whole segments (the first with the header), as
    /// close to `part_size` bytes of ciphertext as `limits` allow: every
    /// part but the last at least `limits.min_part`, every part at most
    /// `limits.max_part`, at most `limits.max_parts` parts.
    ///
    /// # Errors
    ///
    /// A [`PlanError`] naming the limit that cannot be met.
    pub fn plan_parts(
        &self,
        plaintext_len: u64,
        part_size: u64,
        limits: &PartLimits,
    ) -> Result<Vec<Part>, PlanError> {
        let count = self.segment_count(plaintext_len);
        if count > MAX_SEGMENTS {
            return Err(PlanError::StreamTooLong {
                segments: count,
                max: MAX_SEGMENTS,
            });
        }
        let per = self.segments_per_part(count, part_size, limits)?;
        let parts = count.div_ceil(per);
        let plan = (0..parts).map(|p| {
            let first = p * per;
            let end = (first + per).min(count);
            let index = |i: u64| u32::try_from(i).unwrap_or_else(|_| unreachable!("≤ 2^32"));
            let last = end == count;
            let plain_end = if last { plaintext_len } else { end * self.size };
            let cipher_start = if p == 0 {
                0
            } else {
                self.header + first * self.sealed_segment_len()
            };
            let cipher_end = if last {
                self.ciphertext_len(plaintext_len)
            } else {
                self.header + end * self.sealed_segment_len()
            };
            Part {
                number: index(p),
                first_segment: index(first),
                segments: end - first,
                plaintext: first * self.size..plain_end,
                ciphertext: cipher_start..cipher_end,
                last,
            }
        });
        Ok(plan.collect())
    }

    /// Segments per part: near `part_size`, within `limits`.
    fn segments_per_part(
        &self,
        count: u64,
        part_size: u64,
        limits: &PartLimits,
    ) -> Result<u64, PlanError> {
        let full = self.sealed_segment_len();
        // The first part is the largest whole part: it carries the header.
        let most = limits.max_part.saturating_sub(self.header) / full;
        if most == 0 {
            return Err(PlanError::SegmentOverMaxPart {
                part: self.header + full,
                max_part: limits.max_part,
            });
        }
        let fewest_for_count = count.div_ceil(u64::from(limits.max_parts.max(1)));
        if fewest_for_count > most {
            return Err(PlanError::TooManyParts {
                parts: count.div_ceil(most),
                max_parts: limits.max_parts,
            });
        }
        let fewest_for_size = limits.min_part.div_ceil(full);
        if fewest_for_size > most && count > most {
            return Err(PlanError::MinOverMax {
                min_part: limits.min_part,
                max_part: limits.max_part,
            });
        }
        let wanted = (part_size / full).max(1);
        Ok(wanted
            .max(fewest_for_size)
            .max(fewest_for_count)
            .min(most)
            .min(count))
    }
}

/// An object store's limits on the parts of a multipart upload, in bytes of
/// ciphertext.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartLimits {
    /// The smallest part but the last.
    pub min_part: u64,
    /// The largest part.
    pub max_part: u64,
    /// The most parts one upload may have.
    pub max_parts: u32,
}

impl PartLimits {
    /// Amazon S3's: parts of 5 MiB to 5 GiB (the last may be smaller), at
    /// most 10,000.
    pub const S3: PartLimits = PartLimits {
        min_part: 5 << 20,
        max_part: 5 << 30,
        max_parts: 10_000,
    };

    /// Limits of another store.
    pub fn new(min_part: u64, max_part: u64, max_parts: u32) -> PartLimits {
        PartLimits {
            min_part,
            max_part,
            max_parts,
        }
    }
}

/// One part of a planned multipart upload: whole segments, the first part
/// with the header before them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Part {
    /// The part's place in the upload, from 0.
    pub number: u32,
    /// The index of its first segment.
    pub first_segment: u32,
    /// How many segments it holds (at least one).
    pub segments: u64,
    /// The plaintext bytes it seals.
    pub plaintext: Range<u64>,
    /// Where its bytes lie in the whole stream (the first part's start at
    /// 0, with the header).
    pub ciphertext: Range<u64>,
    /// It ends with the stream's final segment.
    pub last: bool,
}

/// Why [`Layout::plan_parts`] found no plan.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// One segment, with the header, is larger than the largest part:
    /// choose smaller segments.
    #[non_exhaustive]
    SegmentOverMaxPart {
        /// Bytes of the header and one sealed segment.
        part: u64,
        /// The largest part allowed.
        max_part: u64,
    },
    /// Even parts of the largest size would be too many.
    #[non_exhaustive]
    TooManyParts {
        /// Parts needed at the largest part size.
        parts: u64,
        /// The most parts allowed.
        max_parts: u32,
    },
    /// Parts cannot be both at least the smallest and at most the largest
    /// size allowed with whole segments.
    #[non_exhaustive]
    MinOverMax {
        /// The smallest part allowed.
        min_part: u64,
        /// The largest part allowed.
        max_part: u64,
    },
    /// The plaintext needs more segments than a stream can hold.
    #[non_exhaustive]
    StreamTooLong {
        /// Segments needed.
        segments: u64,
        /// Segments a stream can hold (2^32).
        max: u64,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::SegmentOverMaxPart { part, max_part } => write!(
                f,
                "one segment with the header is {part} bytes, over the largest part ({max_part})"
            ),
            PlanError::TooManyParts { parts, max_parts } => write!(
                f,
                "the stream needs {parts} parts of the largest size, over the most parts ({max_parts})"
            ),
            PlanError::MinOverMax { min_part, max_part } => write!(
                f,
                "no whole number of segments makes a part of {min_part} to {max_part} bytes"
            ),
            PlanError::StreamTooLong { segments, max } => {
                write!(
                    f,
                    "the plaintext needs {segments} segments; a stream holds at most {max}"
                )
            }
        }
    }
}

impl std::error::Error for PlanError {}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Layout = Layout {
        header: 53,
        size: 10,
        tag: 16,
        short_end: false,
    };

    /// The arithmetic against streams laid out segment by segment.
    #[test]
    fn lengths_and_ranges_agree_with_a_walk_over_the_segments() {
        for p in 0..200u64 {
            let count = p.div_ceil(10).max(1);
            let len = 53 + p + 16 * count;
            assert_eq!(L.ciphertext_len(p), len, "{p}");
            assert_eq!(L.plaintext_len(len), Some(p), "{p}");
            assert_eq!(L.segment_count(p), count);
        }
        // Lengths no stream has: inside a header, less than a tag after a
        // full segment, an empty final segment after full ones.
        for bad in [0, 52, 53, 53 + 15, 53 + 26 + 15, 53 + 26 + 16] {
            assert_eq!(L.plaintext_len(bad), None, "{bad}");
        }
        assert_eq!(L.segments_for(0..1), 0..1);
        assert_eq!(L.segments_for(9..11), 0..2);
        assert_eq!(L.segments_for(10..20), 1..2);
        assert_eq!(L.segments_for(15..15), 1..1);
        assert_eq!(L.ciphertext_range(1..3), 53 + 26..53 + 78);
        assert_eq!(L.plaintext_range(1..3), 10..30);
        let huge = Layout::new(53, u32::MAX, 16, false);
        assert_eq!(huge.ciphertext_len(u64::MAX), u64::MAX);
        assert_eq!(huge.segments_for(0..u64::MAX).end, u32::MAX);
    }

    /// Cobblestone's end rule: the final segment is always short, so whole
    /// segments are followed by an empty one and a stream never ends on a
    /// full one.
    #[test]
    fn a_short_end_layout_counts_the_empty_final_segment() {
        let c = Layout::new(56, 10, 16, true);
        for p in 0..200u64 {
            let count = p / 10 + 1;
            let len = 56 + p + 16 * count;
            assert_eq!(c.segment_count(p), count, "{p}");
            assert_eq!(c.ciphertext_len(p), len, "{p}");
            assert_eq!(c.plaintext_len(len), Some(p), "{p}");
        }
        // Ending on a full segment, or inside a tag.
        for bad in [56 + 26, 56 + 52, 56 + 15, 56 + 26 + 15] {
            assert_eq!(c.plaintext_len(bad), None, "{bad}");
        }
    }

    fn check(plan: &[Part], l: &Layout, p: u64, limits: &PartLimits) {
        let mut at = (0u64, 0u32, 0u64);
        for (n, part) in plan.iter().enumerate() {
            assert_eq!(part.number as usize, n);
            assert_eq!(part.first_segment, at.1);
            assert_eq!(part.ciphertext.start, at.0);
            assert_eq!(part.plaintext.start, at.2);
            let size = part.ciphertext.end - part.ciphertext.start;
            assert!(size <= limits.max_part, "{part:?}");
            assert!(part.last || size >= limits.min_part, "{part:?}");
            assert_eq!(part.last, n + 1 == plan.len());
            at = (
                part.ciphertext.end,
                part.first_segment + u32::try_from(part.segments).expect("a small plan"),
                part.plaintext.end,
            );
        }
        assert!(plan.len() <= limits.max_parts as usize);
        assert_eq!(at.0, l.ciphertext_len(p));
        assert_eq!(at.2, p);
        assert_eq!(u64::from(at.1), l.segment_count(p));
    }

    #[test]
    fn plans_meet_every_limit_and_cover_the_stream() {
        let limits = PartLimits::new(100, 400, 20);
        for p in [0, 1, 10, 11, 99, 100, 101, 399, 1000, 2000] {
            for want in [0, 50, 100, 260, 10_000] {
                match L.plan_parts(p, want, &limits) {
                    Ok(plan) => check(&plan, &L, p, &limits),
                    Err(e) => {
                        assert!(
                            matches!(e, PlanError::TooManyParts { .. }),
                            "{p} {want}: {e}"
                        );
                        assert!(p > 20 * 10 * 10, "{p} {want}: {e}");
                    }
                }
            }
        }
        // S3's limits, a 1 GiB plaintext, 64 KiB segments, 8 MiB parts.
        let s3 = Layout::new(53, 64 << 10, 16, false);
        let plan = s3
            .plan_parts(1 << 30, 8 << 20, &PartLimits::S3)
            .expect("S3's limits hold a 1 GiB stream");
        check(&plan, &s3, 1 << 30, &PartLimits::S3);
        // 127 segments a part (8 MiB ÷ 65,552 bytes); 16,384 segments.
        assert_eq!(plan.len(), 130);
    }

    #[test]
    fn a_limit_that_cannot_be_met_is_named() {
        assert_eq!(
            L.plan_parts(5, 0, &PartLimits::new(0, 60, 10)),
            Err(PlanError::SegmentOverMaxPart {
                part: 79,
                max_part: 60
            })
        );
        assert_eq!(
            L.plan_parts(1000, 0, &PartLimits::new(0, 79 + 26, 10)),
            Err(PlanError::TooManyParts {
                parts: 50,
                max_parts: 10
            })
        );
        assert_eq!(
            L.plan_parts(1000, 0, &PartLimits::new(150, 160, 100)),
            Err(PlanError::MinOverMax {
                min_part: 150,
                max_part: 160
            })
        );
        assert!(matches!(
            L.plan_parts((10 << 32) + 1, 0, &PartLimits::new(0, u64::MAX, u32::MAX)),
            Err(PlanError::StreamTooLong { .. })
        ));
    }
}
