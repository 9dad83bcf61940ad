//! One model of where the segments of a stream lie, written from the format
//! descriptions (the byte diagram in the crate docs; Tink's layout in
//! `src/tink.rs`'s docs), not from the crate's own layout code:
//!
//! - native v1: a 53-byte header (magic 8, version 1, algorithm 1, segment
//!   size 4, salt 32, nonce prefix 7), then segments of `segment_size`
//!   plaintext bytes, each followed by a 16-byte tag;
//! - Tink AES-GCM-HKDF: a header of 1 + derived key size + 7 bytes (length
//!   byte, salt, nonce prefix); every ciphertext segment is
//!   `ciphertext_segment_size` bytes with its tag, the first shorter by the
//!   header.
//!
//! Tink AES-CTR-HMAC: as AES-GCM-HKDF with the key's tag size.
//!
//! All: the empty stream is one (empty) final segment; no empty final
//! segment follows full ones.

use std::ops::Range;

use cipherio::tink::AesGcmHkdfParams;

/// Tag bytes after every segment.
pub const TAG: usize = 16;
/// Native header: 8 + 1 + 1 + 4 + 32 + 7.
pub const NATIVE_HEADER: usize = 53;
/// Nonce prefix bytes in both headers.
pub const PREFIX: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Header bytes.
    pub header: usize,
    /// Plaintext bytes of segment 0.
    pub first: usize,
    /// Plaintext bytes of every later segment.
    pub rest: usize,
    /// Tag bytes after every segment's ciphertext.
    pub tag: usize,
}

impl Layout {
    /// The native format with `segment_size`-byte segments.
    pub fn native(segment_size: usize) -> Layout {
        Layout {
            header: NATIVE_HEADER,
            first: segment_size,
            rest: segment_size,
            tag: TAG,
        }
    }

    /// The Tink format: derived key size, ciphertext segment size.
    pub fn tink(derived_key_size: usize, ciphertext_segment_size: usize) -> Layout {
        Layout::tink_with_tag(derived_key_size, ciphertext_segment_size, TAG)
    }

    /// The Tink layout with `tag`-byte tags (AES-CTR-HMAC keys truncate
    /// theirs).
    pub fn tink_with_tag(
        derived_key_size: usize,
        ciphertext_segment_size: usize,
        tag: usize,
    ) -> Layout {
        let header = 1 + derived_key_size + PREFIX;
        Layout {
            header,
            first: ciphertext_segment_size - header - tag,
            rest: ciphertext_segment_size - tag,
            tag,
        }
    }

    /// The Tink layout of a key's parameters (only the two sizes are taken
    /// from them).
    pub fn of_tink(p: &AesGcmHkdfParams) -> Layout {
        Layout::tink(p.derived_key_size(), p.ciphertext_segment_size())
    }

    /// Segments of a stream of `len` plaintext bytes.
    pub fn segments(&self, len: usize) -> usize {
        if len <= self.first {
            1
        } else {
            1 + (len - self.first).div_ceil(self.rest)
        }
    }

    /// The exact length of the stream of `len` plaintext bytes: anything
    /// longer was sealed or sent twice.
    pub fn stream_len(&self, len: usize) -> usize {
        self.header + len + self.tag * self.segments(len)
    }

    /// Plaintext capacity of segment `i`.
    pub fn plain(&self, i: usize) -> usize {
        if i == 0 { self.first } else { self.rest }
    }

    /// Sealed length of a full segment `i`.
    pub fn sealed(&self, i: usize) -> usize {
        self.plain(i) + self.tag
    }

    /// Plaintext offset where segment `i` begins.
    pub fn plain_before(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.first + (i - 1) * self.rest
        }
    }

    /// Stream offset where segment `i` begins.
    pub fn seg_start(&self, i: usize) -> usize {
        self.header + self.plain_before(i) + i * self.tag
    }

    /// Byte range of segment `i` in a stream of `stream_len` bytes.
    pub fn seg_range(&self, stream_len: usize, i: usize) -> Range<usize> {
        let s = self.seg_start(i);
        s..(s + self.sealed(i)).min(stream_len)
    }

    /// The segment holding stream byte `pos` (a header byte counts as
    /// segment 0's: damage there fails segment 0).
    pub fn seg_of(&self, pos: usize) -> usize {
        let second = self.seg_start(1);
        if pos < second {
            0
        } else {
            1 + (pos - second) / (self.rest + self.tag)
        }
    }

    /// The header and the sealed segments of a stream.
    pub fn split(&self, ct: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut segs = Vec::new();
        let mut i = 0;
        while self.seg_start(i) < ct.len() {
            segs.push(ct[self.seg_range(ct.len(), i)].to_vec());
            i += 1;
        }
        (ct[..self.header.min(ct.len())].to_vec(), segs)
    }

    /// The plaintext cut into its segments (one empty one if empty).
    pub fn plain_segments<'a>(&self, pt: &'a [u8]) -> Vec<&'a [u8]> {
        let (a, mut b) = pt.split_at(pt.len().min(self.first));
        let mut v = vec![a];
        while !b.is_empty() {
            let (x, y) = b.split_at(b.len().min(self.rest));
            v.push(x);
            b = y;
        }
        v
    }

    /// Plaintext lengths that may be released before an error: the
    /// segment boundaries and the whole plaintext.
    pub fn boundaries(&self, len: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.segments(len))
            .map(|i| self.plain_before(i))
            .collect();
        v.push(len);
        v
    }

    /// Whether `released` plaintext bytes end on a segment boundary.
    pub fn on_boundary(&self, released: usize) -> bool {
        released == 0
            || (released >= self.first && (released - self.first).is_multiple_of(self.rest))
    }

    /// Whether the stream of `len` bytes ends with a full-length segment.
    pub fn full_final(&self, len: usize) -> bool {
        let n = self.segments(len);
        len > 0 && len - self.plain_before(n - 1) == self.plain(n - 1)
    }

    /// Plaintext lengths around segment boundaries: 0, 1, and one less,
    /// at and one more than the start of each segment in `segs`, with
    /// `extra` (sorted, deduplicated).
    pub fn lengths_around(&self, segs: &[usize], extra: &[usize]) -> Vec<usize> {
        let mut v = vec![0, 1];
        for &i in segs {
            let b = self.plain_before(i);
            v.extend([b - 1, b, b + 1]);
        }
        v.extend_from_slice(extra);
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The header followed by `segs`.
pub fn join(header: &[u8], segs: &[Vec<u8>]) -> Vec<u8> {
    let mut v = header.to_vec();
    for s in segs {
        v.extend_from_slice(s);
    }
    v
}
