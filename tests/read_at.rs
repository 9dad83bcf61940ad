//! `CipherReaderAt`: positional reads from many threads against the
//! plaintext, native and Tink streams, every provider pair; a source that
//! is cut, extended or damaged fails where it must, never with wrong data.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Write};
use std::sync::Arc;

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, StreamKey};
use common::layout::Layout;
use common::{crate_error_of, data, pairs};

fn seal<K: StreamKey>(key: &K, cap: Option<usize>, p: cipherio::Provider, pt: &[u8]) -> Vec<u8> {
    let mut b = CipherWriter::builder(key)
        .associated_data(b"at")
        .provider(p);
    if let Some(c) = cap {
        b = b.capacity(c);
    }
    let mut w = b.build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// Offsets around every segment boundary, the ends, and beyond.
fn offsets(l: &Layout, len: usize) -> Vec<u64> {
    let mut v = vec![0, 1, len as u64, len as u64 + 1, u64::MAX];
    for b in l.boundaries(len) {
        v.extend([b.saturating_sub(1), b, b + 1].map(|x| x as u64));
    }
    v.retain(|&x| x <= len as u64 + 1 || x == u64::MAX);
    v
}

fn check_all<K: StreamKey>(key: &K, l: &Layout, cap: Option<usize>, lens: &[usize], ctx: &str) {
    for (wp, rp) in pairs() {
        for &len in lens {
            let pt = data(len, len as u64);
            let ct = seal(key, cap, wp, &pt);
            let r = CipherReader::builder(key)
                .associated_data(b"at")
                .provider(rp)
                .build_at(ct)
                .unwrap();
            let ctx = format!("{ctx} len {len} {wp:?}->{rp:?}");
            assert_eq!(r.plaintext_len(), len as u64, "{ctx}");
            for off in offsets(l, len) {
                for size in [1usize, 7, l.plain(1), 3 * l.plain(1) + 5] {
                    let mut buf = vec![0u8; size];
                    let n = r.read_at(&mut buf, off).unwrap();
                    let start = usize::try_from(off).unwrap_or(usize::MAX).min(len);
                    let want = &pt[start..(start + size).min(len)];
                    assert_eq!(&buf[..n], want, "{ctx}: read_at({size}, {off})");
                }
            }
        }
    }
}

#[test]
fn positional_reads_match_the_plaintext_native() {
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        for seg in [1usize, 17, 4096] {
            let l = Layout::native(seg);
            let lens = [
                0,
                1,
                seg - 1,
                seg,
                seg + 1,
                3 * seg,
                3 * seg + 1,
                5 * seg - 1,
            ];
            check_all(&key, &l, Some(seg), &lens, &format!("{alg} seg {seg}"));
        }
    }
}

#[test]
fn positional_reads_match_the_plaintext_tink() {
    for params in [
        AesGcmHkdfParams::AES128_GCM_HKDF_4KB,
        AesGcmHkdfParams::AES256_GCM_HKDF_4KB,
        AesGcmHkdfParams::new(16, 24 + 16 + 1, HkdfHash::Sha256).unwrap(),
        AesGcmHkdfParams::new(32, 300, HkdfHash::Sha1).unwrap(),
    ] {
        let key = AesGcmHkdfKey::generate(params);
        let l = Layout::of_tink(&params);
        let (first, rest) = (l.plain(0), l.plain(1));
        let lens = [0, 1, first, first + 1, first + rest, first + 2 * rest + 3];
        check_all(&key, &l, None, &lens, &format!("{params:?}"));
    }
}

/// Many threads at once, over one shared reader and a real file.
#[test]
fn many_threads_read_one_file_at_once() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let pt = data(300_000, 9);
    for (wp, rp) in pairs() {
        let ct = seal(&key, Some(4096), wp, &pt);
        let path =
            std::env::temp_dir().join(format!("cipherio-read-at-{}-{wp:?}", std::process::id()));
        std::fs::write(&path, &ct).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let r = Arc::new(
            CipherReader::builder(&key)
                .associated_data(b"at")
                .provider(rp)
                .build_at(file)
                .unwrap(),
        );
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (r, pt) = (Arc::clone(&r), &pt);
                s.spawn(move || {
                    let mut x = t * 7919 + 1;
                    for _ in 0..300 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let off = (x >> 33) % (pt.len() as u64 + 10);
                        let size = 1 + ((x >> 13) % 9000) as usize;
                        let mut buf = vec![0u8; size];
                        let n = r.read_at(&mut buf, off).unwrap();
                        let start = (off as usize).min(pt.len());
                        assert_eq!(&buf[..n], &pt[start..(start + size).min(pt.len())]);
                    }
                });
            }
        });
        std::fs::remove_file(&path).unwrap();
    }
}

fn build_err<K: StreamKey>(key: &K, ct: Vec<u8>) -> Error {
    let e = CipherReader::builder(key)
        .associated_data(b"at")
        .build_at(ct)
        .unwrap_err();
    crate_error_of(&e).unwrap_or_else(|| panic!("not a cipherio error: {e}"))
}

/// A source cut at any segment boundary or inside the last segment, or
/// extended, fails when the reader is built: no length is ever taken
/// from the raw size.
#[test]
fn cut_or_extended_sources_are_refused() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let l = Layout::native(100);
    let pt = data(1000, 3);
    let ct = seal(&key, Some(100), cipherio::Provider::default(), &pt);
    for i in 1..l.segments(pt.len()) {
        let cut = l.seg_start(i);
        let e = build_err(&key, ct[..cut].to_vec());
        assert_eq!(e, Error::Truncated, "cut at segment {i}");
        assert_eq!(std::io::Error::from(e).kind(), ErrorKind::UnexpectedEof);
    }
    for cut in [ct.len() - 1, ct.len() - 15, ct.len() - 17, ct.len() - 100] {
        let e = build_err(&key, ct[..cut].to_vec());
        assert!(
            matches!(e, Error::Truncated | Error::Authentication),
            "cut to {cut}: {e:?}"
        );
    }
    for extra in [1usize, 16, 116, 117] {
        let mut longer = ct.clone();
        longer.extend(std::iter::repeat_n(0u8, extra));
        let e = build_err(&key, longer);
        assert!(
            matches!(e, Error::Truncated | Error::Authentication),
            "{extra} more: {e:?}"
        );
    }
    // The last two segments swapped: the final one is not last.
    let (h, mut segs) = l.split(&ct);
    let n = segs.len();
    segs.swap(n - 2, n - 1);
    let e = build_err(&key, common::layout::join(&h, &segs));
    assert!(
        matches!(e, Error::Truncated | Error::Authentication),
        "swapped: {e:?}"
    );
}

/// A flipped byte fails exactly the reads that need its segment, and puts
/// nothing of it in the caller's buffer; the others still read.
#[test]
fn a_damaged_segment_fails_only_the_reads_that_open_it() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let l = Layout::native(64);
    let pt = data(640, 5);
    let mut ct = seal(&key, Some(64), cipherio::Provider::default(), &pt);
    ct[l.seg_start(4) + 3] ^= 1;
    let r = CipherReader::builder(&key)
        .associated_data(b"at")
        .build_at(ct)
        .unwrap();
    let mut buf = [0xAAu8; 64];
    let e = r.read_at(&mut buf, 4 * 64 + 10).unwrap_err();
    assert_eq!(crate_error_of(&e), Some(Error::Authentication));
    assert_eq!(
        buf, [0xAA; 64],
        "nothing of the damaged segment was released"
    );
    // A read that starts before it keeps what it got before the error only
    // in the buffer it was given: the call itself fails.
    assert!(r.read_at(&mut [0u8; 100], 3 * 64).is_err());
    for seg in [0usize, 1, 2, 3, 5, 9] {
        let mut b = [0u8; 64];
        assert_eq!(r.read_at(&mut b, seg as u64 * 64).unwrap(), 64);
        assert_eq!(&b[..], &pt[seg * 64..seg * 64 + 64]);
    }
}
