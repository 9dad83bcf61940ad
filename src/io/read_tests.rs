//! The std reader's costs, counted inside the engine: bytes moved in the
//! read-ahead, segment opens per read and per seek.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};

use crate::{Algorithm, CipherWriter, Key};

use super::*;
use crate::format::TAG_LEN;

/// `plain` sealed with `key` in segments of `capacity` bytes.
fn seal(key: &Key, capacity: usize, plain: &[u8]) -> Vec<u8> {
    let mut w = CipherWriter::with_capacity(capacity, key, Vec::new());
    w.write_all(plain).unwrap();
    w.finish().unwrap()
}

/// Over a source that fills every read (a slice, a file), the
/// read-ahead moves at most the part of one segment that the header's
/// read brought: every later read ends on a segment boundary, so the
/// ciphertext is copied once, by the inner reader, not again by
/// compaction.
#[test]
fn full_reads_end_on_segment_boundaries() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let plain: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    for seg in [4096, 8192, 65536, 1 << 20] {
        let ct = seal(&key, seg, &plain);
        for cap in [4096, 8192, 65536, 1 << 20] {
            for buf in [100, 8192, 1 << 21] {
                let mut r = CipherReader::with_capacity(cap, &key, &ct[..]);
                let mut out = Vec::new();
                let mut b = vec![0; buf];
                loop {
                    let n = r.read(&mut b).unwrap();
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&b[..n]);
                }
                assert!(out == plain);
                assert!(
                    r.engine.counts.moved.get() <= seg + TAG_LEN,
                    "seg {seg} cap {cap} buf {buf}: {} bytes moved",
                    r.engine.counts.moved.get()
                );
            }
        }
    }
}

/// A stream whose final segment is full-length costs one open per
/// segment when the input's end is already known (a slice read whole),
/// not a failed non-final trial on top: that trial is a full GHASH pass.
#[test]
fn a_full_final_segment_is_opened_once_when_the_end_is_known() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for segments in [1, 2, 5] {
        let plain = vec![7u8; segments * 4096];
        let ct = seal(&key, 4096, &plain);
        let mut r = CipherReader::with_capacity(1 << 20, &key, &ct[..]);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, plain);
        assert_eq!(r.engine.counts.opens.get(), segments, "{segments} segments");
    }
}

/// Behind a `BufReader` whose buffer holds k sealed segments, every
/// segment opens in place once: the segment that ends each window is
/// not left to the copying path (which tried it as final first after
/// the short read, a failed pass per window: 241 opens for 129
/// segments at k = 1).
#[test]
fn segments_ending_the_inner_window_open_once() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let plain = vec![3u8; 128 * 8192 + 1];
    let ct = seal(&key, 8192, &plain);
    for k in 1..=8 {
        let inner = io::BufReader::with_capacity(k * (8192 + TAG_LEN), &ct[..]);
        let mut r = CipherReader::builder(&key)
            .capacity(65536)
            .build_from_buf_read(inner);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert!(out == plain, "k {k}");
        assert!(
            r.engine.counts.opens.get() <= 129 + 1,
            "k {k}: {} opens for 129 segments",
            r.engine.counts.opens.get()
        );
    }
}

/// Over a slice, a stream whose final segment is full-length costs one
/// failed pass on top of one open per segment: that segment is tried
/// in place as non-final once, then settled by the copying path, not
/// tried in place again after the segments before it were delivered.
#[test]
fn a_full_final_segment_fails_in_place_at_most_once() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    for segments in [1, 2, 5] {
        let plain = vec![7u8; segments * 4096];
        let ct = seal(&key, 4096, &plain);
        for buf in [4096, 3 * 4096, 1 << 20] {
            let mut r = CipherReader::builder(&key)
                .capacity(4096)
                .build_from_buf_read(&ct[..]);
            let mut out = Vec::new();
            let mut b = vec![0u8; buf];
            loop {
                match r.read(&mut b).unwrap() {
                    0 => break,
                    n => out.extend_from_slice(&b[..n]),
                }
            }
            assert_eq!(out, plain);
            assert!(
                r.engine.counts.opens.get() <= segments + 1,
                "{segments} segments, reads of {buf}: {} opens",
                r.engine.counts.opens.get()
            );
        }
    }
}

/// Random access, counted: a read after a seek opens exactly the
/// segment holding the position (two when it crosses into the next),
/// the length query opens the final segment once, and a read in the
/// final segment after `SeekFrom::End` opens nothing more.
#[test]
fn seeks_open_exactly_the_segments_they_need() {
    use std::io::{Cursor, Seek, SeekFrom};
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 4096;
    let plain: Vec<u8> = (0..20 * seg + 100)
        .map(|i| u8::try_from(i % 251).unwrap())
        .collect();
    let ct = seal(&key, seg, &plain);
    for cap in [1024, 8192, 1 << 20] {
        let mut r = CipherReader::with_capacity(cap, &key, Cursor::new(ct.clone()));
        let mut b = [0u8; 100];
        for (at, opens) in [(5 * seg + 7, 1), (2 * seg - 50, 2), (17 * seg, 1), (3, 1)] {
            let before = r.engine.counts.opens.get();
            r.seek(SeekFrom::Start(at as u64)).unwrap();
            assert_eq!(
                r.engine.counts.opens.get(),
                before,
                "a seek alone opens nothing"
            );
            r.read_exact(&mut b).unwrap();
            assert_eq!(&b[..], &plain[at..at + 100], "cap {cap} at {at}");
            assert_eq!(
                r.engine.counts.opens.get() - before,
                opens,
                "cap {cap}: read at {at}"
            );
            assert_eq!(r.stream_position().unwrap(), at as u64 + 100);
        }
        let before = r.engine.counts.opens.get();
        assert_eq!(r.plaintext_len().unwrap(), plain.len() as u64);
        assert_eq!(r.plaintext_len().unwrap(), plain.len() as u64);
        assert_eq!(
            r.engine.counts.opens.get() - before,
            1,
            "cap {cap}: the length query, once"
        );
        let end = r.seek(SeekFrom::End(-60)).unwrap();
        r.read_exact(&mut b[..60]).unwrap();
        assert_eq!(&b[..60], &plain[usize::try_from(end).unwrap()..]);
        assert_eq!(
            r.engine.counts.opens.get() - before,
            1,
            "cap {cap}: the tail came from the opened final segment"
        );
        assert_eq!(r.read(&mut b).unwrap(), 0);
        r.seek(SeekFrom::Start(1 << 40)).unwrap();
        assert_eq!(r.read(&mut b).unwrap(), 0, "past the authenticated end");
    }
}
