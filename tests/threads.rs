//! `threads(n)`: a stream sealed and opened on several threads keeps every
//! behaviour of the one-thread stream (threads are an implementation
//! detail), on each front and
//! provider, with 2, 3 and 8 threads (8: more threads than cores):
//!
//! * round trips in every chunking and read pattern, threaded and
//!   one-thread writers and readers crossed;
//! * every damaged stream ends as the one-thread reader ends it: the same
//!   typed error after the same released bytes, read in the same pattern
//!   (the one-thread reader is the oracle, and the checks of
//!   `tests/tamper.rs` hold for it);
//! * misbehaving inner I/O (`WouldBlock`, `Interrupted` at every call
//!   position, 1-byte calls): nothing lost, nothing sealed twice;
//! * `threads(0)` is refused; a count past the CPUs (`usize::MAX`) is
//!   clamped to them, and so are the buffers sized by it;
//! * threads that start in the middle of a stream (as they do once it
//!   has delivered its first MiB or two) keep all of the above; every
//!   other test here starts them with the first byte;
//! * with `prefetch(true)` (the next run read while one opens) every one
//!   of the above holds for the readers too, and an inner error met in a
//!   read beside a run comes, once, with the next call that needs input.
//! * the threads are one pool per process: forty threaded streams alive
//!   hold no more of them than the CPUs; streams made and used inside the
//!   jobs of another pool round-trip, and never run that pool's jobs.
//!
//! (That the bytes on the wire are one thread's needs an injected salt:
//! `src/threads/stream_tests.rs`. The socket case, a read that never waits
//! for a second segment, is in `tests/tcp.rs`.)

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, ErrorKind};

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{
    Algorithm, CipherReader, CipherWriter, Error, Key, Provider, ReaderBuilder, StreamKey,
};
use common::seals::Seals;
use common::{
    Front, FrontReader, KIB, Layout, MIB, ReadMode, ScriptReader, ScriptWriter, TAMPER_CONFIGS,
    WriteMode, crate_error_of, data, decrypt_ok, encrypt, read_in, read_injecting_at_every_call,
    tamper_patterns, write_retrying,
};

/// Thread counts compared with one thread.
const THREADS: &[usize] = &[2, 3, 8];

/// Segments in a batch of `threads` threads for `seg`-byte segments (as
/// the engine cuts them: a 64 KiB share per thread, at most 64 segments).
fn batch(threads: usize, seg: usize) -> usize {
    threads * (64 * KIB).div_ceil(seg).clamp(1, 64)
}

/// The prefetch settings that differ for a reader on `threads` threads.
fn prefetches(threads: usize) -> &'static [bool] {
    if threads > 1 {
        &[false, true]
    } else {
        &[false]
    }
}

fn read_modes(seg: usize, len: usize) -> Vec<ReadMode> {
    vec![
        ReadMode::ToEnd,
        ReadMode::Chunks(1000),
        ReadMode::Chunks(seg),
        ReadMode::Chunks(5 * seg + 3),
        ReadMode::FillBuf(usize::MAX),
        ReadMode::Exact {
            sizes: vec![1, seg + 1, 3 * seg],
            len,
        },
    ]
}

/// Threaded and one-thread writers and readers crossed, on every front
/// and provider (pairs of providers: tests/providers.rs), segment size, length around the batch boundaries,
/// chunking and read pattern.
#[test]
fn round_trips_on_threads() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    for seg in [17, 4 * KIB, 64 * KIB] {
        let l = Layout::native(seg);
        let b = batch(2, seg);
        let lengths = l.lengths_around(&[1, b, 2 * b + 1], &[0, 1]);
        for len in lengths {
            let pt = data(len, 5);
            for &(wt, rt) in &[(1, 2), (2, 1), (2, 2), (3, 8)] {
                for (wp, rp) in Provider::ALL.iter().map(|&p| (p, p)) {
                    let modes = [WriteMode::AllAtOnce, WriteMode::Fixed(1000)];
                    for &front in Front::ALL {
                        for mode in &modes {
                            let ctx = format!(
                                "seg {seg} len {len} threads {wt}/{rt} {wp:?}/{rp:?} {mode:?}"
                            );
                            let w = CipherWriter::builder(&key)
                                .capacity(seg)
                                .provider(wp)
                                .threads(wt)
                                .threads_after(0);
                            let ct = encrypt(front, w, &pt, mode);
                            assert_eq!(ct.len(), l.stream_len(len), "{ctx}");
                            for read in read_modes(seg, len) {
                                for &prefetch in prefetches(rt) {
                                    let r = CipherReader::builder(&key)
                                        .provider(rp)
                                        .threads(rt)
                                        .threads_after(0)
                                        .prefetch(prefetch);
                                    let ctx = format!("{ctx} prefetch {prefetch}");
                                    decrypt_ok(&ctx, front, r, &ct, &pt, &read);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// How a read of a (damaged) stream ended: the bytes released, and the
/// crate error it ended in (or `None` for a clean end; an error that
/// carries no crate error fails the test).
fn outcome(
    front: Front,
    builder: ReaderBuilder,
    stream: &[u8],
    (chunk, buffered): (usize, Option<usize>),
    mode: &ReadMode,
) -> (Vec<u8>, Option<Error>) {
    let inner = ScriptReader::new(stream).max_per_call(chunk);
    let (got, res) = match buffered {
        // `build_from_buf_read`: segments open where they lie in the
        // inner buffer (with threads, as runs).
        Some(size) => {
            let inner = io::BufReader::with_capacity(size, inner);
            let mut r = FrontReader::Std(builder.build_from_buf_read(inner));
            read_in(&mut r, mode)
        }
        None => read_in(&mut front.build_reader(builder, inner), mode),
    };
    let err = res
        .err()
        .map(|e: io::Error| crate_error_of(&e).unwrap_or_else(|| panic!("not a crate error: {e}")));
    (got, err)
}

/// A threaded reader's outcome is the one-thread reader's: the same bytes
/// released, the same error.
fn same_outcome(ctx: &str, many: &(Vec<u8>, Option<Error>), one: &(Vec<u8>, Option<Error>)) {
    assert_eq!(many.1, one.1, "{ctx}: error");
    assert!(
        many.0 == one.0,
        "{ctx}: released {} bytes, one thread {}",
        many.0.len(),
        one.0.len()
    );
}

/// Every damaged copy of `ct` made by `damage` reads, with every thread
/// count, front, provider, configuration and pattern, exactly as the
/// one-thread reader reads it: the same bytes released, the same error.
/// The threads start once `after` bytes were delivered.
fn damaged_as_on_one_thread<K: StreamKey>(
    ctx: &str,
    key: &K,
    l: &Layout,
    ct: &[u8],
    damaged: &[(String, Vec<u8>)],
    after: u64,
) {
    let mut configs: Vec<_> = [TAMPER_CONFIGS[0], TAMPER_CONFIGS[2], TAMPER_CONFIGS[3]]
        .iter()
        .map(|&(cap, chunk)| (cap, chunk, None))
        .collect();
    // Through an inner buffer of a few segments (std front).
    configs.push((8 * KIB, usize::MAX, Some(3 * l.rest + 50)));
    let mut errors = 0;
    for (what, stream) in damaged {
        for &front in Front::ALL {
            for &rp in Provider::ALL {
                for &(cap, chunk, buffered) in &configs {
                    if buffered.is_some() && front != Front::Std {
                        continue;
                    }
                    for mode in &tamper_patterns(l) {
                        let builder = |t, prefetch| {
                            CipherReader::builder(key)
                                .provider(rp)
                                .capacity(cap)
                                .threads(t)
                                .threads_after(after)
                                .prefetch(prefetch)
                        };
                        let one =
                            outcome(front, builder(1, false), stream, (chunk, buffered), mode);
                        errors += usize::from(one.1.is_some());
                        // Prefetch at two threads only: the reads beside the
                        // runs do not depend on the thread count.
                        let prefetch = [(2, true)];
                        for (t, prefetch) in THREADS.iter().map(|&t| (t, false)).chain(prefetch) {
                            let ctx = format!(
                                "{ctx} {what} [{front:?} {rp:?} cap {cap} chunk {chunk} {buffered:?} {mode:?} threads {t} prefetch {prefetch}]"
                            );
                            let b = builder(t, prefetch);
                            let many = outcome(front, b, stream, (chunk, buffered), mode);
                            same_outcome(&ctx, &many, &one);
                        }
                    }
                }
            }
        }
    }
    assert!(errors > 0, "{ctx}: no damaged copy failed on one thread");
    let _ = ct;
}

/// Damaged copies of a stream: bytes flipped at the start, middle and end
/// of sampled segments and in the header, cuts around sampled segment
/// boundaries, segments swapped, dropped and duplicated, bytes appended.
fn damaged_copies(l: &Layout, ct: &[u8], every: usize) -> Vec<(String, Vec<u8>)> {
    let (header, segs) = l.split(ct);
    let mut out = Vec::new();
    let flip = |pos: usize| {
        let mut d = ct.to_vec();
        d[pos] ^= 0x40;
        (format!("flip at {pos}"), d)
    };
    out.push(flip(0));
    out.push(flip(header.len() - 1));
    for i in (0..segs.len()).step_by(every).chain([segs.len() - 1]) {
        let r = l.seg_range(ct.len(), i);
        for pos in [r.start, r.start + (r.end - r.start) / 2, r.end - 1] {
            out.push(flip(pos));
        }
        for cut in [r.start, r.start + 1, r.end - 1] {
            out.push((format!("cut at {cut}"), ct[..cut].to_vec()));
        }
    }
    let n = segs.len();
    let with = |what: String, segs: Vec<Vec<u8>>| (what, common::join(&header, &segs));
    for i in (0..n - 1).step_by(every) {
        let mut s = segs.clone();
        s.swap(i, i + 1);
        out.push(with(format!("swap {i}"), s));
        let mut s = segs.clone();
        s.remove(i);
        out.push(with(format!("drop {i}"), s));
        let mut s = segs.clone();
        s.insert(i, segs[i].clone());
        out.push(with(format!("duplicate {i}"), s));
    }
    let mut longer = ct.to_vec();
    longer.extend_from_slice(&[1, 2, 3]);
    out.push(("3 bytes appended".into(), longer));
    out
}

#[test]
fn damaged_native_streams_fail_as_on_one_thread() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    for (seg, segments, every) in [(17, 2 * batch(2, 17) + 5, 87), (4 * KIB, 40, 20)] {
        let l = Layout::native(seg);
        let pt = data(seg * (segments - 1) + seg / 2, 9);
        let ct = encrypt(
            Front::Std,
            CipherWriter::builder(&key).capacity(seg),
            &pt,
            &WriteMode::AllAtOnce,
        );
        let damaged = damaged_copies(&l, &ct, every);
        damaged_as_on_one_thread(&format!("seg {seg}"), &key, &l, &ct, &damaged, 0);
    }
}

/// Threads that start in the middle of a stream (as they do once a
/// stream has delivered its first MiB or two: the bytes are set low here)
/// keep every behaviour: writers and readers that start them inside a
/// segment, on its boundary or a batch in round-trip on every front and
/// provider, in every chunking and read pattern, and a damaged stream
/// read so ends as on one thread.
#[test]
fn threads_that_start_in_the_middle_of_a_stream_keep_every_behaviour() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    for seg in [17, 4 * KIB] {
        let l = Layout::native(seg);
        let b = batch(2, seg);
        let len = l.plain_before(2 * b + 3) + seg / 2;
        let pt = data(len, 3);
        let afters = [1, seg - 1, seg + 1, b * seg + 3].map(|a| a as u64);
        for after in afters {
            for &p in Provider::ALL {
                for &front in Front::ALL {
                    for mode in [WriteMode::AllAtOnce, WriteMode::Fixed(1000)] {
                        let ctx = format!("seg {seg} after {after} {p:?} {mode:?}");
                        let w = CipherWriter::builder(&key)
                            .capacity(seg)
                            .provider(p)
                            .threads(2)
                            .threads_after(after);
                        let ct = encrypt(front, w, &pt, &mode);
                        assert_eq!(ct.len(), l.stream_len(len), "{ctx}");
                        for read in read_modes(seg, len) {
                            for prefetch in [false, true] {
                                let r = CipherReader::builder(&key)
                                    .provider(p)
                                    .threads(3)
                                    .threads_after(after)
                                    .prefetch(prefetch);
                                let ctx = format!("{ctx} prefetch {prefetch}");
                                decrypt_ok(&ctx, front, r, &ct, &pt, &read);
                            }
                        }
                    }
                }
            }
        }
        if seg == 17 {
            // Damaged streams of 4 KiB segments are enough to cross the
            // start of the threads.
            continue;
        }
        let ct = encrypt(
            Front::Std,
            CipherWriter::builder(&key).capacity(seg),
            &pt,
            &WriteMode::AllAtOnce,
        );
        // Segments damaged around where the threads start, and the last.
        let (header, segs) = l.split(&ct);
        let mut damaged = Vec::new();
        for i in [b - 1, b, b + 1] {
            let r = l.seg_range(ct.len(), i);
            let mut d = ct.clone();
            d[r.start + (r.end - r.start) / 2] ^= 0x40;
            damaged.push((format!("flip in {i}"), d));
            damaged.push((
                format!("cut at {}", r.start + 1),
                ct[..r.start + 1].to_vec(),
            ));
            let mut s = segs.clone();
            s.swap(i, i + 1);
            damaged.push((format!("swap {i}"), common::join(&header, &s)));
        }
        damaged.push(("cut before the last".into(), ct[..ct.len() - 1].to_vec()));
        let ctx = format!("seg {seg}, threads from byte {}", b * seg + 3);
        damaged_as_on_one_thread(&ctx, &key, &l, &ct, &damaged, (b * seg + 3) as u64);
    }
}

/// A stream longer than a prefetching reader's read-ahead, read in calls
/// smaller than a segment or through `BufRead`, goes through a ring
/// (segments opened ahead on the pool): every damaged copy ends there as
/// on one thread, a failed segment in the middle of the ring included.
/// (This test cannot see the ring; that one runs for such a stream, 16
/// KiB segments read 1000 bytes at a time or through `fill_buf`, the unit
/// tests assert, and that a failed segment inside one ends the stream as
/// here.) The std front only: the async front does not prefetch, and has
/// no ring.
#[test]
fn damaged_streams_read_through_a_ring_fail_as_on_one_thread() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 16 * KIB;
    let l = Layout::native(seg);
    // A short final segment, and a full-length one (then bytes appended
    // after it reach the ring, which must leave it to the usual path).
    let damaged: Vec<_> = [seg * 44 + seg / 3, seg * 44]
        .into_iter()
        .flat_map(|len| {
            let ct = encrypt(
                Front::Std,
                CipherWriter::builder(&key).capacity(seg),
                &data(len, 5),
                &WriteMode::AllAtOnce,
            );
            damaged_copies(&l, &ct, 7)
        })
        .collect();
    let mut errors = 0;
    for (what, stream) in &damaged {
        for &rp in Provider::ALL {
            for mode in [
                ReadMode::Chunks(1000),
                ReadMode::Chunks(8 * KIB),
                ReadMode::FillBuf(3000),
            ] {
                let builder = |t| {
                    CipherReader::builder(&key)
                        .provider(rp)
                        .threads(t)
                        .threads_after(0)
                        .prefetch(t > 1)
                };
                let chunk = (usize::MAX, None);
                let one = outcome(Front::Std, builder(1), stream, chunk, &mode);
                errors += usize::from(one.1.is_some());
                let many = outcome(Front::Std, builder(2), stream, chunk, &mode);
                same_outcome(&format!("{what} [{rp:?} {mode:?}]"), &many, &one);
            }
        }
    }
    assert!(errors > 0, "no damaged copy failed on one thread");
}

/// Bytes after a full-length final segment: every thread count releases
/// what one thread releases, all of the plaintext (the final segment
/// authenticated), then fails with `TrailingData`, however much of the
/// extra bytes the read-ahead already held (a batch held them sooner than
/// one segment: threads released one segment less).
#[test]
fn bytes_after_a_full_final_segment_fail_as_on_one_thread() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    for seg in [17, 4 * KIB] {
        let l = Layout::native(seg);
        for segments in [1, 2, batch(2, seg) + 1] {
            let pt = data(seg * segments, 10);
            let ct = encrypt(
                Front::Std,
                CipherWriter::builder(&key).capacity(seg),
                &pt,
                &WriteMode::AllAtOnce,
            );
            let damaged: Vec<_> = [1, 3, seg + 16, 3 * (seg + 16) + 5]
                .iter()
                .map(|&extra| {
                    let mut d = ct.clone();
                    d.extend(std::iter::repeat_n(7u8, extra));
                    (format!("{extra} bytes appended"), d)
                })
                .collect();
            let ctx = format!("seg {seg}, {segments} full segments");
            damaged_as_on_one_thread(&ctx, &key, &l, &ct, &damaged, 0);
            for (what, stream) in &damaged {
                for &front in Front::ALL {
                    for &rp in Provider::ALL {
                        for (t, prefetch) in
                            [(1, false), (2, false), (2, true), (8, false), (8, true)]
                        {
                            for (cap, buffered) in [(1, None), (8 * KIB, None), (1, Some(seg + 20))]
                            {
                                if buffered.is_some() && front != Front::Std {
                                    continue;
                                }
                                for mode in &tamper_patterns(&l) {
                                    let b = CipherReader::builder(&key)
                                        .provider(rp)
                                        .capacity(cap)
                                        .threads(t)
                                        .threads_after(0)
                                        .prefetch(prefetch);
                                    let (got, e) =
                                        outcome(front, b, stream, (usize::MAX, buffered), mode);
                                    let ctx = format!(
                                        "{ctx}, {what} [{front:?} {rp:?} threads {t} prefetch {prefetch} cap {cap} {buffered:?} {mode:?}]"
                                    );
                                    assert_eq!(e, Some(Error::TrailingData), "{ctx}");
                                    assert!(got == pt, "{ctx}: released {} bytes", got.len());
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn damaged_tink_streams_fail_as_on_one_thread() {
    let params = AesGcmHkdfParams::new(16, 1024, HkdfHash::Sha256).unwrap();
    let key = AesGcmHkdfKey::generate(params);
    let l = Layout::of_tink(&params);
    let pt = data(l.plain_before(30) + 100, 11);
    let ct = encrypt(
        Front::Std,
        CipherWriter::builder(&key),
        &pt,
        &WriteMode::AllAtOnce,
    );
    let damaged = damaged_copies(&l, &ct, 5);
    damaged_as_on_one_thread("tink", &key, &l, &ct, &damaged, 0);
}

/// A framed stream with records of many sizes (flushes at odd points):
/// records flipped, cut, dropped, swapped, the final flag and lengths
/// changed; each reads as on one thread.
#[test]
fn damaged_framed_streams_fail_as_on_one_thread() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let seg = 64;
    let pt = data(40 * seg, 13);
    let mut w = CipherWriter::builder(&key)
        .capacity(seg)
        .framed()
        .build(Vec::new());
    let mut at = 0;
    for (i, size) in [3usize, 64, 200, 1, 500, 64, 77].iter().cycle().enumerate() {
        if at >= pt.len() {
            break;
        }
        let end = (at + size).min(pt.len());
        io::Write::write_all(&mut w, &pt[at..end]).unwrap();
        if i % 2 == 0 {
            io::Write::flush(&mut w).unwrap();
        }
        at = end;
    }
    let ct = w.finish().unwrap();
    // Record boundaries, from the record headers.
    let mut starts = Vec::new();
    let mut p = cipherio::format::HEADER_LEN;
    while p < ct.len() {
        starts.push(p);
        let h = u32::from_be_bytes(ct[p..p + 4].try_into().unwrap());
        p += 4 + (h & 0x7fff_ffff) as usize + 16;
    }
    let mut damaged = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        for (what, pos, bit) in [
            ("flag", s, 0x80),
            ("length", s + 3, 0x01),
            ("body", s + 5, 0x01),
        ] {
            let mut d = ct.clone();
            d[pos] ^= bit;
            damaged.push((format!("record {k} {what}"), d));
        }
        damaged.push((format!("cut at record {k}"), ct[..s].to_vec()));
        damaged.push((format!("cut in record {k}"), ct[..s + 6].to_vec()));
        if k + 1 < starts.len() {
            let next = starts[k + 1];
            let mut d = ct[..s].to_vec();
            d.extend_from_slice(&ct[next..]);
            damaged.push((format!("record {k} dropped"), d));
        }
    }
    let l = Layout::native(seg);
    damaged_as_on_one_thread("framed", &key, &l, &ct, &damaged, 0);
}

/// The writer over an inner writer that refuses (`WouldBlock`,
/// `Interrupted`) at every call position, and over 1-byte calls: the
/// stream reads back whole, so nothing was lost or sealed twice (a
/// segment sealed again would be a second segment under a new index),
/// and every segment offered to the inner writer, refused or taken,
/// opens under its index to one plaintext ([`Seals`]).
#[test]
fn writers_on_threads_over_misbehaving_inner_writers() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let mut seals = Seals::default();
    let seg = 1024;
    let pt = data(3 * batch(3, seg) * seg + 100, 17);
    for &t in THREADS {
        for &front in Front::ALL {
            let builder = || {
                CipherWriter::builder(&key)
                    .capacity(seg)
                    .threads(t)
                    .threads_after(0)
            };
            // The clean run's inner calls.
            let mut w = front.build_writer(builder(), ScriptWriter::new());
            assert!(write_retrying(&mut w, &pt, 10_000).is_empty());
            let calls = w.get_ref().calls;
            for kind in [ErrorKind::WouldBlock, ErrorKind::Interrupted] {
                for k in 0..calls {
                    let ctx = format!("threads {t} {front:?} {kind:?} at {k}/{calls}");
                    let inner = ScriptWriter::new().fail_at(k, kind).recording();
                    let mut w = front.build_writer(builder(), inner);
                    write_retrying(&mut w, &pt, 10_000);
                    let out = w.get_ref().out.clone();
                    seals.record(&key, &out, w.get_ref().offered.as_deref().unwrap());
                    let back = common::decrypt(Front::Std, CipherReader::builder(&key), &out)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert!(back == pt, "{ctx}");
                }
            }
            let inner = ScriptWriter::new().max_per_call(1);
            let mut w = front.build_writer(builder(), inner);
            write_retrying(&mut w, &pt, 7_000);
            let out = w.get_ref().out.clone();
            let back = common::decrypt(Front::Std, CipherReader::builder(&key), &out).unwrap();
            assert!(back == pt, "threads {t} {front:?}: 1-byte inner writes");
        }
    }
}

/// The check of one plaintext per `(header, index)` sees a segment
/// offered twice with different plaintext (two sealers from one header).
#[test]
#[should_panic(expected = "a nonce spent twice")]
fn seals_see_one_index_sealed_from_two_plaintexts() {
    use cipherio::segments::SegmentSealer;
    let key = Key::generate(Algorithm::Aes128Gcm);
    let sealer = SegmentSealer::new(&key, 1024, &[]).unwrap();
    let header = sealer.header().to_vec();
    let seal = |pt: &[u8]| {
        let mut out = header.clone();
        sealer.seal_segments(0, pt, true, &mut out).unwrap();
        out
    };
    let (a, b) = (seal(b"retried"), seal(b"changed"));
    Seals::default().record(&key, &a, &[(header.len(), b[header.len()..].to_vec())]);
}

/// A write refused at any inner call (`WouldBlock`, `BrokenPipe`, `Ok(0)`)
/// while shares are moved out as they are sealed: the writer stops there
/// (after an `Ok(0)` the inner writer is not called again in that call),
/// reports what it took, and the stream finished afterwards holds exactly
/// those bytes, in writes of a byte, a segment, many segments and all.
#[test]
fn threaded_writers_refused_mid_write_keep_exactly_what_they_took() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 1024;
    let pt = data(3 * batch(2, seg) * seg + 100, 23);
    for &t in &[2, 3] {
        for &front in Front::ALL {
            let builder = || {
                CipherWriter::builder(&key)
                    .capacity(seg)
                    .threads(t)
                    .threads_after(0)
            };
            let mut clean = front.build_writer(builder(), ScriptWriter::new());
            assert!(write_retrying(&mut clean, &pt, usize::MAX).is_empty());
            let calls = clean.get_ref().calls;
            for kind in [
                ErrorKind::WouldBlock,
                ErrorKind::BrokenPipe,
                ErrorKind::WriteZero,
            ] {
                for k in (0..calls).step_by(calls.div_ceil(40).max(1)) {
                    for chunk in [1, seg, 40 * seg + 1, usize::MAX] {
                        let mut inner = ScriptWriter::new();
                        if kind == ErrorKind::WriteZero {
                            inner.zero_calls = k..k + 1;
                        } else {
                            inner.fail = Some((k, kind));
                        }
                        let mut w = front.build_writer(builder(), inner);
                        let mut off = 0;
                        while off < pt.len() {
                            let end = off.saturating_add(chunk).min(pt.len());
                            let r = w.write(&pt[off..end]);
                            w.get_mut().after_zero = false;
                            match r {
                                Ok(n) if n < end - off => {
                                    off += n;
                                    break;
                                }
                                Ok(n) => off += n,
                                Err(_) => break,
                            }
                        }
                        let mut tries = 0;
                        while w.try_finish().is_err() {
                            w.get_mut().after_zero = false;
                            tries += 1;
                            assert!(tries < 5);
                        }
                        let out = w.finish().unwrap().out;
                        let ctx = format!(
                            "threads {t} {front:?} {kind:?} at {k}/{calls}, chunk {chunk}, {off} taken"
                        );
                        let back = common::decrypt(Front::Std, CipherReader::builder(&key), &out)
                            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert!(back == pt[..off], "{ctx}");
                    }
                }
            }
        }
    }
}

/// An inner writer that panics while shares are moved out: the panic
/// reaches the caller (the pool threads, waiting for slots, are released
/// and the call does not hang), and the writer is left as one thread
/// leaves it: every segment sealed is counted and what the inner writer
/// did not take is still to be written, so a caller that catches the
/// panic and writes on seals no segment index twice (it did: the stream
/// then failed to open where a segment came again under an index already
/// used) and the stream opens to a prefix of what was offered, then the
/// rest.
#[test]
fn a_panicking_inner_writer_does_not_hang_a_threaded_writer() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * KIB;
    let a = data(40 * seg + 7, 5);
    let b = data(9 * seg + 3, 6);
    for &t in [1].iter().chain(THREADS) {
        for &front in Front::ALL {
            for at in [1, 2, 5] {
                let mut inner = ScriptWriter::new();
                inner.panic_at = Some(at);
                let builder = CipherWriter::builder(&key)
                    .capacity(seg)
                    .threads(t)
                    .threads_after(0);
                let mut w = front.build_writer(builder, inner);
                let ctx = format!("threads {t} {front:?} panic at call {at}");
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    w.write(&a[..2 * seg + 1])?;
                    w.write(&a[2 * seg + 1..])
                }));
                assert!(r.is_err(), "{ctx}: no panic");
                w.get_mut().panic_at = None;
                assert!(write_retrying(&mut w, &b, usize::MAX).is_empty(), "{ctx}");
                let out = w.get_ref().out.clone();
                let back = common::decrypt(Front::Std, CipherReader::builder(&key), &out)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let (head, tail) = back.split_at(back.len() - b.len());
                assert!(tail == b && a.starts_with(head), "{ctx}");
            }
        }
    }
}

/// An inner reader that panics while the pool threads work (with
/// prefetch, a read beside a run or beside the ring): the panic reaches
/// the caller instead of hanging the reader, and whatever the reader
/// gives afterwards is the plaintext where it stands, or an error. The
/// std front: the async front reads nothing beside.
#[test]
fn a_panicking_inner_reader_does_not_hang_a_threaded_reader() {
    use std::io::Read;
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 64 * KIB;
    let pt = data(40 * seg + 7, 7);
    let builder = CipherWriter::builder(&key).capacity(seg);
    let ct = encrypt(Front::Std, builder, &pt, &WriteMode::AllAtOnce);
    for &t in THREADS {
        for (prefetch, read) in [(false, MIB), (true, MIB), (true, 8 * KIB)] {
            // Large reads take a run's input at once (with prefetch, beside
            // the run before): a few calls; the ring's reads beside take a
            // unit each.
            let calls: &[usize] = if read < MIB {
                &[2, 5, 9, 20]
            } else {
                &[2, 3, 4]
            };
            for &at in calls {
                let ctx =
                    format!("threads {t} prefetch {prefetch} reads {read} panic at call {at}");
                let mut inner = ScriptReader::new(&ct);
                inner.panic_at = Some(at);
                let mut r = CipherReader::builder(&key)
                    .capacity(seg)
                    .threads(t)
                    .threads_after(0)
                    .prefetch(prefetch)
                    .build(inner);
                let mut got = Vec::new();
                let mut buf = vec![0u8; read];
                let r1 = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    loop {
                        match r.read(&mut buf) {
                            Ok(0) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                            Err(e) => panic!("{ctx}: {e}"),
                        }
                    }
                }));
                let payload = r1.expect_err(&format!("{ctx}: no panic"));
                assert_eq!(
                    payload.downcast_ref::<&str>(),
                    Some(&"scripted inner reader panic"),
                    "{ctx}: the inner reader's panic"
                );
                assert!(pt.starts_with(&got), "{ctx}: before the panic");
                r.get_mut().panic_at = None;
                while let Ok(n @ 1..) = r.read(&mut buf) {
                    got.extend_from_slice(&buf[..n]);
                    assert!(pt.starts_with(&got), "{ctx}: after the panic");
                }
            }
        }
    }
}

/// The reader over an inner reader that fails (`WouldBlock`,
/// `Interrupted`) at every call position: every run gives the plaintext
/// back, the error surfaces once as itself, and no inner call is lost.
#[test]
fn readers_on_threads_over_misbehaving_inner_readers() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 512;
    let pt = data(3 * batch(2, seg) * seg + 100, 19);
    let ct = encrypt(
        Front::Std,
        CipherWriter::builder(&key).capacity(seg),
        &pt,
        &WriteMode::AllAtOnce,
    );
    for (t, prefetch) in [(2, false), (2, true), (8, false), (8, true)] {
        for &front in Front::ALL {
            for kind in [ErrorKind::WouldBlock, ErrorKind::Interrupted] {
                for (per_call, bufsize) in [(usize::MAX, 100 * KIB), (3000, 700)] {
                    let ctx =
                        format!("threads {t} prefetch {prefetch} {front:?} {per_call}/{bufsize}");
                    read_injecting_at_every_call(
                        &ctx,
                        &ct,
                        &pt,
                        per_call,
                        bufsize,
                        kind,
                        (kind == ErrorKind::WouldBlock, !prefetch),
                        |inner| {
                            let b = CipherReader::builder(&key)
                                .threads(t)
                                .threads_after(0)
                                .prefetch(prefetch);
                            front.build_reader(b, inner)
                        },
                    );
                }
            }
        }
    }
}

/// `threads(0)` fails every call of both, the first one included.
#[test]
fn zero_threads_are_refused() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let want = Error::ZeroThreads;
    for &front in Front::ALL {
        let mut w = front.build_writer(CipherWriter::builder(&key).threads(0), Vec::new());
        let e = w.write_all(b"x").unwrap_err();
        assert_eq!(crate_error_of(&e), Some(want.clone()), "{front:?}");
        let e = w.try_finish().unwrap_err();
        assert_eq!(crate_error_of(&e), Some(want.clone()), "{front:?}");
        let ct = encrypt(
            Front::Std,
            CipherWriter::builder(&key),
            b"hello",
            &WriteMode::AllAtOnce,
        );
        let mut r = front.build_reader(CipherReader::builder(&key).threads(0), &ct[..]);
        let e = read_in(&mut r, &ReadMode::ToEnd).1.unwrap_err();
        assert_eq!(crate_error_of(&e), Some(want.clone()), "{front:?}");
    }
}

/// A thread count past the machine's CPUs (`usize::MAX`, 2^20) is
/// clamped to them: streams sealed and opened with it round-trip on every
/// front, in small and large calls, with and without prefetch.
#[test]
fn huge_thread_counts_round_trip() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 4 * KIB;
    let pt = data(3 * batch(2, seg) * seg + 100, 31);
    for &front in Front::ALL {
        for t in [usize::MAX, 1 << 20] {
            for mode in [WriteMode::Fixed(1000), WriteMode::AllAtOnce] {
                let b = CipherWriter::builder(&key).capacity(seg).threads(t);
                let ct = encrypt(front, b.threads_after(0), &pt, &mode);
                for &prefetch in &[false, true] {
                    for read in [ReadMode::Chunks(1000), ReadMode::Chunks(5 * seg + 3)] {
                        let b = CipherReader::builder(&key).threads(t).threads_after(0);
                        let ctx = format!("threads({t}), {mode:?}, prefetch {prefetch}");
                        decrypt_ok(&ctx, front, b.prefetch(prefetch), &ct, &pt, &read);
                    }
                }
            }
        }
    }
}

/// A writer asked for far more threads than the machine has CPUs holds
/// what its ring holds for the CPUs, not for the count asked: small
/// writes (1 KiB into 8 KiB segments) buffer at most two 64 KiB units per
/// CPU in the ring and the unit being filled before the first segment
/// reaches the inner writer (`threads(1024)` buffered 64 MiB before it
/// sealed anything). Two units per CPU, not one: a pool thread
/// descheduled in the middle of the first unit leaves the caller posting
/// until the ring is full, which a loaded machine does.
#[test]
fn small_writes_buffer_a_batch_for_the_cpus_not_for_the_count_asked() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 8 * KIB;
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let bound = (2 * batch(cpus, seg) + batch(1, seg)) * seg + seg;
    let chunk = [0x5au8; KIB];
    for &front in Front::ALL {
        for t in [1024, usize::MAX] {
            let b = CipherWriter::builder(&key).capacity(seg).threads(t);
            let mut w = front.build_writer(b.threads_after(0), Vec::new());
            let mut written = 0;
            // Until a segment is out (the header alone may go first), or
            // well past the bound.
            while w.get_ref().len() <= cipherio::format::HEADER_LEN && written <= 2 * bound {
                w.write_all(&chunk).unwrap();
                written += chunk.len();
            }
            assert!(
                written <= bound,
                "{front:?} threads({t}): {written} bytes buffered before the first segment went out, more than a ring for {cpus} CPUs ({bound})"
            );
        }
    }
}

/// `Drop` never finishes a threaded stream either: what was sealed reads
/// back as a prefix that ends in `Truncated`, on both fronts.
#[test]
fn dropping_a_threaded_writer_does_not_finish_it() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 4 * KIB;
    let pt = data(3 * batch(2, seg) * seg + 10, 23);
    for &front in Front::ALL {
        let mut w = front.build_writer(
            CipherWriter::builder(&key)
                .capacity(seg)
                .threads(2)
                .threads_after(0),
            ScriptWriter::new(),
        );
        w.write_all(&pt).unwrap();
        w.flush().unwrap();
        let out = w.get_ref().out.clone();
        drop(w);
        assert!(
            out.len() > 2 * batch(2, seg) * seg,
            "{front:?}: batches went out"
        );
        let mut r = front.build_reader(
            CipherReader::builder(&key).threads(2).threads_after(0),
            &out[..],
        );
        let (got, end) = read_in(&mut r, &ReadMode::ToEnd);
        assert!(got == pt[..got.len()], "{front:?}");
        let e = end.unwrap_err();
        assert_eq!(crate_error_of(&e), Some(Error::Truncated), "{front:?}");
    }
}

/// On a real tokio runtime (multi-threaded, both ends tasks): a threaded
/// writer and reader over a small duplex pipe, so every poll meets
/// `Pending` many times mid-batch; what arrives is the plaintext.
#[cfg(feature = "tokio")]
#[test]
fn threaded_streams_on_a_tokio_runtime() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let pt = data(3 * batch(2, 64 * KIB) * 64 * KIB + 777, 29);
    let back = rt.block_on(async {
        let (a, b) = tokio::io::duplex(4096);
        let writer = {
            let (key, pt) = (key.clone(), pt.clone());
            tokio::spawn(async move {
                let mut w = CipherWriter::builder(&key)
                    .capacity(64 * KIB)
                    .threads(2)
                    .threads_after(0)
                    .build_async(a);
                for chunk in pt.chunks(100_000) {
                    w.write_all(chunk).await?;
                }
                w.shutdown().await
            })
        };
        let mut r = CipherReader::builder(&key)
            .threads(3)
            .threads_after(0)
            .build_async(b);
        let mut back = Vec::new();
        r.read_to_end(&mut back).await.unwrap();
        writer.await.unwrap().unwrap();
        back
    });
    assert!(back == pt);
}

/// A seekable inner reader whose call number `fail` (from 0) fails once.
struct FailOnce {
    inner: io::Cursor<Vec<u8>>,
    calls: usize,
    fail: usize,
}

impl io::Read for FailOnce {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls - 1 == self.fail {
            return Err(io::Error::other("injected"));
        }
        self.inner.read(buf)
    }
}

impl io::Seek for FailOnce {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A prefetching reader asked for its length, or moved to where it is,
/// after any of its reads, over an inner reader that fails once at every
/// call position in turn: the error surfaces exactly once (from a read or
/// the length query, whichever needs input first, even when it was met in
/// a read beside a run or in the middle of a fed run), and the plaintext
/// is whole.
#[test]
fn an_inner_error_beside_a_run_surfaces_once_across_length_queries_and_seeks() {
    use std::io::{Read, Seek, SeekFrom};
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = KIB;
    // Four runs of 128 segments at two threads.
    let pt = data(4 * 128 * seg + 100, 23);
    let ct = encrypt(
        Front::Std,
        CipherWriter::builder(&key).capacity(seg),
        &pt,
        &WriteMode::AllAtOnce,
    );
    for prefetch in [false, true] {
        // Reads of 20 KiB; after read number `at`, the length query or a
        // seek to where the reader is. Returns the plaintext, the injected
        // errors seen, the reads and the inner calls made.
        let run = |fail: usize, at: usize, length: bool| {
            let inner = FailOnce {
                inner: io::Cursor::new(ct.clone()),
                calls: 0,
                fail,
            };
            let mut r = CipherReader::builder(&key)
                .threads(2)
                .threads_after(0)
                .prefetch(prefetch)
                .build(inner);
            let (mut out, mut errors, mut buf) = (Vec::new(), 0, vec![0u8; 20 * KIB]);
            let mut injected = |e: io::Error| {
                assert_eq!(e.to_string(), "injected", "prefetch {prefetch} fail {fail}");
                errors += 1;
            };
            let mut reads = 0;
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                    Err(e) => {
                        injected(e);
                        continue;
                    }
                }
                reads += 1;
                if reads == at {
                    let moved = if length {
                        r.plaintext_len().map(|n| assert_eq!(n, pt.len() as u64))
                    } else {
                        let here = out.len() as u64;
                        r.seek(SeekFrom::Start(here)).map(|p| assert_eq!(p, here))
                    };
                    if let Err(e) = moved {
                        injected(e);
                    }
                }
            }
            (out, errors, reads, r.get_ref().calls)
        };
        let (out, errors, reads, calls) = run(usize::MAX, 0, true);
        assert!(out == pt && errors == 0, "prefetch {prefetch}: clean run");
        for fail in 0..calls {
            for at in 1..reads {
                for length in [true, false] {
                    let (out, errors, _, _) = run(fail, at, length);
                    let ctx = format!(
                        "prefetch {prefetch}, call {fail} of {calls} fails, length {length} after read {at}"
                    );
                    assert_eq!(errors, 1, "{ctx}");
                    assert!(out == pt, "{ctx}: plaintext");
                }
            }
        }
    }
}

/// Threaded streams written and read inside the jobs of another pool of
/// threads (as in a `rayon` `par_iter`, here its core's scope: more
/// streams than that pool has threads, each job waiting on its stream's
/// threads) all round-trip: a stream's caller waits for its own work and
/// never for another pool's jobs.
#[test]
fn threaded_streams_inside_another_pools_jobs_round_trip() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 16 * KIB;
    let pool = rayon_core::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let pts: Vec<Vec<u8>> = (0..8)
        .map(|i| data(40 * seg + 100 * i, 50 + i as u64))
        .collect();
    pool.scope(|s| {
        for (i, pt) in pts.iter().enumerate() {
            let key = &key;
            s.spawn(move |_| {
                let b = CipherWriter::builder(key).capacity(seg).threads(2);
                let mode = WriteMode::Fixed(if i % 2 == 0 { 1000 } else { 5 * seg });
                let ct = encrypt(Front::Std, b.threads_after(0), pt, &mode);
                for prefetch in [false, true] {
                    let b = CipherReader::builder(key).threads(2).threads_after(0);
                    let read = ReadMode::Chunks(if i % 2 == 0 { 1000 } else { 3 * seg });
                    let ctx = format!("stream {i}, prefetch {prefetch}");
                    decrypt_ok(&ctx, Front::Std, b.prefetch(prefetch), &ct, pt, &read);
                }
            });
        }
    });
}

/// The threads named for the library alive in this process now.
fn library_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    let comm = |t: std::fs::DirEntry| std::fs::read_to_string(t.path().join("comm"));
    let names = tasks.filter_map(|t| comm(t.unwrap()).ok());
    names.filter(|n| n.starts_with("cipherio")).count()
}

/// Forty threaded streams alive at once, each in the middle of its
/// stream with its threads at work, hold no more of the library's threads
/// than the CPUs and four: a stream posts its work to the process's pool
/// and owns no thread.
#[test]
fn forty_threaded_streams_alive_at_once_share_the_processs_threads() {
    use std::io::{Read, Write};
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let seg = 16 * KIB;
    let pt = data(64 * seg, 61);
    let ct = encrypt(
        Front::Std,
        CipherWriter::builder(&key).capacity(seg),
        &pt,
        &WriteMode::AllAtOnce,
    );
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for i in 0..20 {
        let b = CipherReader::builder(&key).threads(2).threads_after(0);
        let mut r = b.prefetch(i % 2 == 0).build(&ct[..]);
        let mut buf = vec![0u8; if i % 4 < 2 { 1000 } else { 4 * seg }];
        for _ in 0..8 {
            r.read_exact(&mut buf).unwrap();
        }
        readers.push(r);
        let b = CipherWriter::builder(&key)
            .capacity(seg)
            .threads(2)
            .threads_after(0);
        let mut w = b.build(Vec::new());
        for chunk in pt[..16 * seg].chunks(if i % 2 == 0 { 1000 } else { 5 * seg }) {
            w.write_all(chunk).unwrap();
        }
        writers.push(w);
    }
    let n = library_threads();
    assert!(
        n <= cpus + 4,
        "{n} library threads for 40 streams on {cpus} CPUs"
    );
    drop((readers, writers));
}

/// A threaded stream whose caller is a thread of another pool (a `rayon`
/// job's) never runs that pool's other jobs while it waits for its own
/// threads: waiting for a scope's end there would (any job, for as long
/// as it takes, one that takes a lock the caller holds included). Jobs of
/// a one-thread pool each write and read a threaded stream in large
/// calls; none starts inside another.
#[test]
fn a_stream_inside_another_pools_job_runs_none_of_its_jobs() {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};
    thread_local!(static IN_JOB: Cell<bool> = const { Cell::new(false) });
    let key = Key::generate(Algorithm::Aes128Gcm);
    let seg = 64 * KIB;
    let pt = data(64 * seg + 5, 71);
    let pool = rayon_core::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let nested = AtomicUsize::new(0);
    pool.scope(|s| {
        for i in 0..16 {
            let (key, pt, nested) = (&key, &pt, &nested);
            s.spawn(move |_| {
                if IN_JOB.with(|f| f.replace(true)) {
                    nested.fetch_add(1, Ordering::SeqCst);
                }
                let b = CipherWriter::builder(key).capacity(seg).threads(2);
                let ct = encrypt(Front::Std, b.threads_after(0), pt, &WriteMode::AllAtOnce);
                let b = CipherReader::builder(key).threads(2).threads_after(0);
                let ctx = format!("job {i}");
                decrypt_ok(&ctx, Front::Std, b, &ct, pt, &ReadMode::Chunks(8 * seg));
                IN_JOB.with(|f| f.set(false));
            });
        }
    });
    assert_eq!(
        nested.load(Ordering::SeqCst),
        0,
        "jobs run inside a stream's wait"
    );
}
