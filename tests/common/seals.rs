//! A nonce is spent once: every sealed segment a writer offered its inner
//! writer, opened by its index, maps `(header, index)` to one plaintext.
//! A second, different plaintext for one index of one header is two
//! tags under one nonce (the authentication key given away), whether or
//! not the stream reads back.
//!
//! Depends on cipherio's public API and std alone: the fuzz crate's
//! `threads` target includes this file too.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use cipherio::Key;
use cipherio::segments::SegmentOpener;

/// The plaintext digest of every segment seen, by header and index.
#[derive(Default)]
pub struct Seals(HashMap<(Vec<u8>, u32), u64>);

impl Seals {
    /// Records the finished native stream `stream` (fixed-size segments,
    /// no associated data) under `key`, and every buffer offered to the
    /// inner writer that wrote it: `(offset in the stream, bytes)`, taken
    /// or not. Each whole segment in them is opened by its index.
    ///
    /// # Panics
    ///
    /// When a segment does not open under its index, or one index of a
    /// header opens to a second plaintext.
    pub fn record(&mut self, key: &Key, stream: &[u8], offers: &[(usize, Vec<u8>)]) {
        let opener = SegmentOpener::new(key, stream, &[]).expect("a native header");
        let header = stream[..to_usize(opener.layout().header_len())].to_vec();
        self.record_at(&opener, &header, 0, stream, stream.len());
        for (at, bytes) in offers {
            self.record_at(&opener, &header, *at, bytes, stream.len());
        }
    }

    /// Opens each segment wholly inside `bytes` (at `at` in a stream of
    /// `end` bytes) and records its plaintext's digest.
    fn record_at(
        &mut self,
        opener: &SegmentOpener,
        header: &[u8],
        at: usize,
        bytes: &[u8],
        end: usize,
    ) {
        let layout = opener.layout();
        let (first, sealed) = (
            to_usize(layout.header_len()),
            to_usize(layout.sealed_segment_len()),
        );
        let mut start = first + at.saturating_sub(first).div_ceil(sealed) * sealed;
        while start < end && start >= at {
            let stop = (start + sealed).min(end);
            if stop > at + bytes.len() {
                break;
            }
            let index = u32::try_from((start - first) / sealed).expect("an index");
            let mut plain = Vec::new();
            opener
                .open_segments(index, &bytes[start - at..stop - at], false, &mut plain)
                .unwrap_or_else(|e| {
                    panic!("segment {index} offered at {start} does not open: {e}")
                });
            let mut h = DefaultHasher::new();
            plain.hash(&mut h);
            let digest = h.finish();
            let seen = *self.0.entry((header.to_vec(), index)).or_insert(digest);
            assert_eq!(
                seen, digest,
                "segment {index} of one header sealed from two plaintexts: a nonce spent twice"
            );
            start = stop;
        }
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).expect("a length in memory")
}
