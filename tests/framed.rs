//! The framed variant of the native format: a
//! framed stream delivers on `flush`.
//!
//! - an oracle written from the format description alone (HKDF, AES-GCM and
//!   ChaCha20-Poly1305 from their crates, none of cipherio's internals): the
//!   writer's output is exactly the stream the oracle builds from the
//!   flushed pieces, and the reader reads what the oracle builds (empty
//!   non-final records too);
//! - a 1,000-round-trip conversation over a real std and a real tokio
//!   `TcpStream`, one connection, a flush per message, then a clean end;
//! - what only records have: a length changed by one, misuse the oracle
//!   seals (two final records, no final record, a skipped counter), a
//!   length over the segment size (every flip, cut and record-level attack
//!   is in the tamper suite, `tests/tamper.rs`, with every other format);
//! - misbehaving inner writers (1-byte, `Interrupted`, `WouldBlock` at
//!   every call) with flushes: nothing lost, nothing sealed twice (the
//!   reader's side is in `tests/misbehaving_io.rs`, with the other formats);
//! - what a flush puts on the wire and what a peer reads of it at once.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider, WriterBuilder};
use common::format::Format;
use common::{
    Front, KIB, ReadMode, ScriptWriter, Upto, Want, crate_error, data, decrypt_ok,
    read_watching_everywhere,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------
// The oracle: from the format description only.
// ---------------------------------------------------------------------

// The framed variant's one oracle (the fuzz crate's file).
use common::oracles::oracle_framed as oracle;
use oracle::{HEADER_LEN, OVERHEAD};

// ---------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------

fn key_for(alg: Algorithm, seed: &[u8; 32]) -> (Key, Vec<u8>) {
    let bytes = seed[..alg.key_len()].to_vec();
    (Key::new(alg, &bytes).unwrap(), bytes)
}

fn framed(key: &Key, cap: usize, aad: &[u8]) -> WriterBuilder {
    CipherWriter::builder(key)
        .framed()
        .capacity(cap)
        .associated_data(aad)
}

/// `pieces` each written (in `write_all`s of `chunk` bytes) and flushed,
/// then `last` written and the stream finished, through `front`.
fn write_framed(
    front: Front,
    builder: WriterBuilder,
    pieces: &[&[u8]],
    last: &[u8],
    chunk: usize,
) -> Vec<u8> {
    let mut w = front.build_writer(builder, Vec::new());
    for p in pieces {
        for c in p.chunks(chunk) {
            w.write_all(c).unwrap();
        }
        w.flush().unwrap();
    }
    for c in last.chunks(chunk) {
        w.write_all(c).unwrap();
    }
    w.finish().unwrap()
}

/// Cuts `pt` into pieces of these lengths (then `last` is the rest).
fn cut<'a>(pt: &'a [u8], lens: &[usize]) -> (Vec<&'a [u8]>, &'a [u8]) {
    let mut pieces = Vec::new();
    let mut pos = 0;
    for &l in lens {
        pieces.push(&pt[pos..pos + l]);
        pos += l;
    }
    (pieces, &pt[pos..])
}

fn salt_prefix(ct: &[u8]) -> ([u8; 32], [u8; 7]) {
    (
        ct[14..46].try_into().unwrap(),
        ct[46..53].try_into().unwrap(),
    )
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------
// 1. Against the oracle.
// ---------------------------------------------------------------------

proptest! {
    #![proptest_config(config(64))]

    /// The writer's output (both fronts, every provider, any chunking) is
    /// exactly the stream the oracle builds from the flushed pieces (the
    /// salt and prefix taken from its header): records split at the
    /// capacity and at every flush, nothing for an empty flush, a final
    /// record (empty if need be). The oracle and the reader read it back.
    #[test]
    fn writer_output_is_the_documented_framed_stream(
        alg in prop::sample::select(Algorithm::ALL.to_vec()),
        seed in any::<[u8; 32]>(),
        aad in prop::collection::vec(any::<u8>(), 0..20),
        cap in prop_oneof![1usize..40, 40usize..700],
        lens in prop::collection::vec(prop_oneof![Just(0usize), 1usize..50, 50usize..1500], 0..6),
        last_len in prop_oneof![Just(0usize), 1usize..1500],
        chunk in 1usize..2000,
        seed_pt in any::<u64>(),
    ) {
        let (key, kb) = key_for(alg, &seed);
        let total = lens.iter().sum::<usize>() + last_len;
        let pt = data(total, seed_pt);
        let (pieces, last) = cut(&pt, &lens);
        let want = oracle::split(cap, &pieces, last);
        for &front in Front::ALL {
            for &wp in Provider::ALL {
                let ct = write_framed(front, framed(&key, cap, &aad).provider(wp), &pieces, last, chunk);
                let parsed = oracle::parse(&kb, &aad, &ct);
                prop_assert!(parsed.is_ok(), "{front:?}/{wp:?}: {:?}", parsed.err());
                let parsed = parsed.unwrap();
                let got: Vec<(&[u8], bool)> =
                    parsed.iter().map(|r| (&r.pt[..], r.last)).collect();
                prop_assert_eq!(&got, &want, "{:?}/{:?}: records", front, wp);
                let (salt, prefix) = salt_prefix(&ct);
                let expect = oracle::build(alg, &kb, &aad, cap, &salt, &prefix, &pieces, last);
                prop_assert!(expect == ct, "{front:?}/{wp:?}: bytes differ from the oracle's");
                for &rp in Provider::ALL {
                    let b = CipherReader::builder(&key).associated_data(&aad).provider(rp);
                    decrypt_ok("writer output", front, b, &ct, &pt, &ReadMode::ToEnd);
                }
            }
        }
    }

    /// The reader (both fronts, every provider, any capacity and read
    /// pattern) reads any stream the oracle builds: records of any length
    /// up to the header's segment size, empty non-final records included,
    /// an empty or full final record.
    #[test]
    fn reader_reads_oracle_framed_streams(
        alg in prop::sample::select(Algorithm::ALL.to_vec()),
        seed in any::<[u8; 32]>(),
        aad in prop::collection::vec(any::<u8>(), 0..20),
        seg in prop_oneof![1u32..40, 40u32..3000],
        fracs in prop::collection::vec(prop_oneof![Just(0.0f64), Just(1.0f64), 0.0f64..1.0], 0..10),
        last_frac in prop_oneof![Just(0.0f64), Just(1.0f64), 0.0f64..1.0],
        salt in any::<[u8; 32]>(),
        prefix in any::<[u8; 7]>(),
        rcap in prop_oneof![1usize..64, 64usize..20000],
        mode in prop_oneof![
            Just(ReadMode::ToEnd),
            (1usize..5000).prop_map(ReadMode::Chunks),
            (1usize..5000).prop_map(ReadMode::FillBuf),
        ],
    ) {
        let (key, kb) = key_for(alg, &seed);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let lens: Vec<usize> = fracs
            .iter()
            .chain([&last_frac])
            .map(|f| (f * f64::from(seg)).round() as usize)
            .collect();
        let total = lens.iter().sum();
        let pt = data(total, 3);
        let mut recs = Vec::new();
        let mut pos = 0;
        for (i, &l) in lens.iter().enumerate() {
            recs.push(oracle::Rec {
                counter: u32::try_from(i).unwrap(),
                last: i + 1 == lens.len(),
                pt: &pt[pos..pos + l],
            });
            pos += l;
        }
        let ct = oracle::seal(&oracle::header(alg, seg, &salt, &prefix), &kb, &aad, &recs);
        prop_assert_eq!(ct.len(), HEADER_LEN + total + OVERHEAD * lens.len());
        for &front in Front::ALL {
            for &rp in Provider::ALL {
                let b = CipherReader::builder(&key)
                    .associated_data(&aad)
                    .provider(rp)
                    .capacity(rcap);
                decrypt_ok("oracle stream", front, b, &ct, &pt, &mode);
            }
        }
    }
}

/// A framed stream made only of empty non-final records before an empty
/// final one is the empty plaintext; the writer never writes one, the
/// reader accepts it.
#[test]
fn empty_records_only() {
    let (key, kb) = key_for(Algorithm::Aes128Gcm, &[7; 32]);
    let recs: Vec<oracle::Rec> = (0..5)
        .map(|i| oracle::Rec {
            counter: i,
            last: i == 4,
            pt: &[],
        })
        .collect();
    let ct = oracle::seal(
        &oracle::header(Algorithm::Aes128Gcm, 16, &[1; 32], &[2; 7]),
        &kb,
        &[],
        &recs,
    );
    for &front in Front::ALL {
        decrypt_ok(
            "empty records",
            front,
            CipherReader::builder(&key),
            &ct,
            &[],
            &ReadMode::Chunks(10),
        );
    }
}

// ---------------------------------------------------------------------
// 2. A conversation over real sockets.
// ---------------------------------------------------------------------

const ROUND_TRIPS: usize = 1000;
const TIMEOUT: Duration = Duration::from_secs(20);

/// The length of message `i` (`side` 0: request, 1: reply), 1 B to
/// 64 KiB: mostly small, some of a few KiB, every 100th 64 KiB, every
/// 100th 1 B.
fn msg_len(i: usize, side: usize) -> usize {
    match (i + 50 * side) % 100 {
        0 => 64 * KIB,
        1 => 1,
        r if r % 9 == 0 => (i * 7919 + side * 131) % (16 * KIB) + 1,
        _ => (i * 37 + side * 11) % 600 + 1,
    }
}

fn msg(i: usize, side: usize) -> Vec<u8> {
    data(msg_len(i, side), (i * 2 + side) as u64)
}

/// 1,000 request/reply round trips on one std `TcpStream` pair, each
/// message flushed and read with `read_exact` of exactly its length, no
/// shutdown until the end; then the client finishes and shuts its write
/// side down, the server sees the end (`Ok(0)`), does the same, and the
/// client sees the end.
#[test]
fn std_tcp_conversation() {
    use std::net::Shutdown;
    let key = Key::generate(Algorithm::Aes128Gcm);
    let (client, server) = common::tcp_pair(TIMEOUT);
    let start = Instant::now();
    let server_thread = {
        let key = key.clone();
        std::thread::spawn(move || -> io::Result<()> {
            // The server seals with 4 KiB records and reads with a small
            // read-ahead.
            let mut w = CipherWriter::builder(&key)
                .framed()
                .capacity(4 * KIB)
                .build(server.try_clone()?);
            let mut r = CipherReader::with_capacity(1000, &key, server);
            for i in 0..ROUND_TRIPS {
                let mut req = vec![0; msg_len(i, 0)];
                r.read_exact(&mut req)?;
                assert!(req == msg(i, 0), "request {i}");
                w.write_all(&msg(i, 1))?;
                w.flush()?;
            }
            assert_eq!(r.read(&mut [0; 16])?, 0, "the client's end");
            w.finish()?.shutdown(Shutdown::Write)?;
            Ok(())
        })
    };
    let mut w = CipherWriter::builder(&key)
        .framed()
        .build(client.try_clone().unwrap());
    let mut r = CipherReader::with_capacity(64 * KIB, &key, client);
    for i in 0..ROUND_TRIPS {
        w.write_all(&msg(i, 0)).unwrap();
        w.flush().unwrap();
        let mut reply = vec![0; msg_len(i, 1)];
        r.read_exact(&mut reply).unwrap();
        assert!(reply == msg(i, 1), "reply {i}");
    }
    w.finish().unwrap().shutdown(Shutdown::Write).unwrap();
    assert_eq!(r.read(&mut [0; 16]).unwrap(), 0, "the server's end");
    assert_eq!(r.read(&mut [0; 16]).unwrap(), 0, "the end is stable");
    server_thread.join().unwrap().unwrap();
    println!(
        "std tcp: {ROUND_TRIPS} round trips in {:?}",
        start.elapsed()
    );
}

/// The same conversation over a tokio `TcpStream` pair: the async fronts
/// over the split halves; the clean end is `shutdown` (which finishes the
/// stream and shuts the write half down).
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_tcp_conversation() {
    use cipherio::tokio::AsyncCipherReader;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
    let (client, (server, _)) = (client.unwrap(), accepted.unwrap());
    client.set_nodelay(true).unwrap();
    server.set_nodelay(true).unwrap();
    let start = Instant::now();
    let server_task = {
        let key = key.clone();
        tokio::spawn(async move {
            let (rd, wr) = server.into_split();
            let mut w = CipherWriter::builder(&key)
                .framed()
                .capacity(4 * KIB)
                .build_async(wr);
            let mut r = AsyncCipherReader::with_capacity(1000, &key, rd);
            for i in 0..ROUND_TRIPS {
                let mut req = vec![0; msg_len(i, 0)];
                r.read_exact(&mut req).await?;
                assert!(req == msg(i, 0), "request {i}");
                w.write_all(&msg(i, 1)).await?;
                w.flush().await?;
            }
            assert_eq!(r.read(&mut [0; 16]).await?, 0, "the client's end");
            w.shutdown().await?;
            io::Result::Ok(())
        })
    };
    let client_side = async {
        let (rd, wr) = client.into_split();
        let mut w = CipherWriter::builder(&key).framed().build_async(wr);
        let mut r = AsyncCipherReader::with_capacity(64 * KIB, &key, rd);
        for i in 0..ROUND_TRIPS {
            w.write_all(&msg(i, 0)).await?;
            w.flush().await?;
            let mut reply = vec![0; msg_len(i, 1)];
            r.read_exact(&mut reply).await?;
            assert!(reply == msg(i, 1), "reply {i}");
        }
        w.shutdown().await?;
        assert_eq!(r.read(&mut [0; 16]).await?, 0, "the server's end");
        assert_eq!(r.read(&mut [0; 16]).await?, 0, "the end is stable");
        io::Result::Ok(())
    };
    tokio::time::timeout(TIMEOUT, client_side)
        .await
        .expect("the conversation hung")
        .unwrap();
    tokio::time::timeout(TIMEOUT, server_task)
        .await
        .expect("the server hung")
        .unwrap()
        .unwrap();
    println!(
        "tokio tcp: {ROUND_TRIPS} round trips in {:?}",
        start.elapsed()
    );
}

// ---------------------------------------------------------------------
// 3. Damaged streams.
// ---------------------------------------------------------------------

// Flips, cuts, dropped, swapped, duplicated and spliced records, bytes
// after the final record and wrong keys are in the tamper suite
// (`tests/tamper.rs`), which attacks these streams with every other
// format: `Format::all`'s framed ones. Here: what only records have.

/// The framed streams of the tamper suite, sealed once.
fn samples() -> Vec<Format> {
    Format::all()
        .into_iter()
        .filter(Format::is_framed)
        .collect()
}

#[test]
fn samples_have_the_expected_records() {
    let lens: Vec<Vec<(usize, bool)>> = samples()
        .iter()
        .map(|f| {
            let ct = f.seal(Provider::default(), &data(f.lengths[0], 99)).ct;
            let recs = oracle::parse(&f.raw, &f.aad, &ct).unwrap();
            recs.iter().map(|r| (r.pt.len(), r.last)).collect()
        })
        .collect();
    let f = |v: &[usize]| -> Vec<(usize, bool)> {
        v.iter()
            .enumerate()
            .map(|(i, &l)| (l, i + 1 == v.len()))
            .collect()
    };
    assert_eq!(lens[0], f(&[5, 16, 16, 16, 8, 3]));
    assert_eq!(lens[1], f(&[1, 7, 0]));
    assert_eq!(lens[2], f(&[20]));
    assert_eq!(lens[3], f(&[16, 16, 1, 16]));
}

/// A record's length changed by one either way (within the segment size),
/// nothing recomputed: the record reads as longer or shorter and fails
/// (`Authentication` or `Truncated`) after exactly the records before it.
#[test]
fn record_length_off_by_one_fails() {
    for f in samples() {
        let s = f.seal(Provider::default(), &data(f.lengths[0], 99));
        let cap = f.layout.rest;
        for j in 0..s.n() {
            for delta in [1i64, -1] {
                let len = i64::try_from(s.before[j + 1] - s.before[j]).unwrap() + delta;
                if !(0..=i64::try_from(cap).unwrap()).contains(&len) {
                    continue;
                }
                let mut bad = s.ct.clone();
                let off = s.segs[j].start;
                let v = u32::from_be_bytes(bad[off..off + 4].try_into().unwrap());
                let v = if delta > 0 { v + 1 } else { v - 1 };
                bad[off..off + 4].copy_from_slice(&v.to_be_bytes());
                let what = format!("record {j}'s length {delta:+}");
                s.fail(&what, &bad, &Want::CutOrAuth, Upto::Exactly(s.before[j]));
            }
        }
    }
}

/// Properly sealed (by the oracle) but not a stream the format allows:
/// a final record followed by another (final or not); no final record;
/// a counter skipped. And a record length over the segment size edited in: refused as `SegmentTooLarge`, even
/// 2^31 - 1 in a tiny stream (at once, before any allocation for it).
#[test]
fn oracle_sealed_misuse_fails() {
    let alg = Algorithm::Aes256Gcm;
    let (key, kb) = key_for(alg, &[3; 32]);
    let header = oracle::header(alg, 16, &[9; 32], &[8; 7]);
    let pt = data(40, 5);
    let rec = |i: u32, last: bool, r: std::ops::Range<usize>| oracle::Rec {
        counter: i,
        last,
        pt: &pt[r],
    };
    let read = |ctx: &str, ct: &[u8], released_pt: &[u8]| {
        read_watching_everywhere(ctx, &CipherReader::builder(&key), ct, released_pt, 4096)
    };
    // Two final records.
    let ct = oracle::seal(
        &header,
        &kb,
        &[],
        &[
            rec(0, false, 0..10),
            rec(1, true, 10..20),
            rec(2, true, 20..30),
        ],
    );
    let (got, e) = read("two final records", &ct, &pt);
    assert_eq!(e, Error::TrailingData);
    assert!(got == 10 || got == 20, "released {got}");
    // A non-final record after the final one.
    let ct = oracle::seal(
        &header,
        &kb,
        &[],
        &[
            rec(0, true, 0..10),
            rec(1, false, 10..20),
            rec(2, true, 20..30),
        ],
    );
    let (got, e) = read("record after the final", &ct, &pt);
    assert_eq!(e, Error::TrailingData);
    assert!(got == 0 || got == 10, "released {got}");
    // No final record.
    let ct = oracle::seal(
        &header,
        &kb,
        &[],
        &[rec(0, false, 0..10), rec(1, false, 10..20)],
    );
    assert_eq!(read("no final record", &ct, &pt), (20, Error::Truncated));
    // A counter skipped.
    let ct = oracle::seal(
        &header,
        &kb,
        &[],
        &[rec(0, false, 0..10), rec(2, true, 10..20)],
    );
    assert_eq!(
        read("counter skipped", &ct, &pt),
        (10, Error::Authentication)
    );
    // Lengths edited in: 17, 2^31 - 1 (the final flag clear or set); for
    // record 1 the edited record is never whole in the read-ahead.
    let good = oracle::seal(
        &header,
        &kb,
        &[],
        &[rec(0, false, 0..10), rec(1, true, 10..20)],
    );
    let second = HEADER_LEN + OVERHEAD + 10;
    for v in [17u32, 0x7fff_ffff, 0xffff_ffff] {
        for at in [HEADER_LEN, second] {
            let mut bad = good.clone();
            bad[at..at + 4].copy_from_slice(&v.to_be_bytes());
            // And cut right after the record header: no body to wait for.
            for end in [bad.len(), at + 4] {
                let start = Instant::now();
                let (got, e) = read(
                    &format!("length {v:#x} at {at}, cut at {end}"),
                    &bad[..end],
                    &pt,
                );
                assert!(start.elapsed() < Duration::from_secs(2), "slow refusal");
                assert!(
                    too_large(&e, u64::from(v & 0x7fff_ffff), 16),
                    "length {v:#x} at {at}: {e:?}"
                );
                assert_eq!(got, if at == HEADER_LEN { 0 } else { 10 });
            }
        }
    }
    // A header at the reader's limit (16 MiB) and a record claiming 2^31-1:
    // refused on its length, the header's size is the limit.
    let big = oracle::header(alg, 16 << 20, &[9; 32], &[8; 7]);
    let mut bad = big.clone();
    bad.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
    bad.extend_from_slice(&[0u8; 30]);
    let (got, e) = read("2^31-1 under a 16 MiB header", &bad, &pt);
    assert_eq!(got, 0);
    assert!(too_large(&e, 0x7fff_ffff, 16 << 20), "{e:?}");
}

/// Whether `e` is `SegmentTooLarge` with this size and limit (a
/// `#[non_exhaustive]` variant: matched, not built).
fn too_large(e: &Error, want_size: u64, want_limit: u64) -> bool {
    matches!(*e, Error::SegmentTooLarge { size, limit, .. } if size == want_size && limit == want_limit)
}

/// A properly sealed record longer than the header's segment size is
/// refused as `SegmentTooLarge` (the format: "the reader refuses a record
/// length above the header's segment size"), on every read path.
///
/// FAILS (crate bug): header segment size 16, records [10 bytes,
/// non-final] then [17 bytes, final], both sealed correctly. With 1-byte
/// reads: 10 bytes, then `SegmentTooLarge { size: 17, limit: 16 }`. With
/// 4 KiB reads (std and tokio fronts, every provider): all 27 bytes and a
/// clean end. The zero-copy loop of `Opener::read` (src/core/opener.rs)
/// takes the next record's length from `next_unit()`, which does not
/// check it against the limit as `fill_record` does, then opens it with
/// `open_next`. The same path turns a length flipped above the segment
/// size into `Authentication` instead of `SegmentTooLarge`.
#[test]
fn record_over_the_segment_size_is_refused() {
    let alg = Algorithm::Aes128Gcm;
    let (key, kb) = key_for(alg, &[3; 32]);
    let header = oracle::header(alg, 16, &[9; 32], &[8; 7]);
    let pt = data(27, 5);
    let recs = [
        oracle::Rec {
            counter: 0,
            last: false,
            pt: &pt[..10],
        },
        oracle::Rec {
            counter: 1,
            last: true,
            pt: &pt[10..],
        },
    ];
    let ct = oracle::seal(&header, &kb, &[], &recs);
    for &front in Front::ALL {
        for buf_len in [1usize, 10, 16, 4096] {
            let ctx = format!("{front:?}, {buf_len}-byte reads");
            let mut r = front.build_reader(CipherReader::builder(&key), &ct[..]);
            let mut got = Vec::new();
            let mut buf = vec![0; buf_len];
            let e = loop {
                match r.read(&mut buf) {
                    Ok(0) => panic!("{ctx}: clean end after {} bytes", got.len()),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) => break e,
                }
            };
            let e = crate_error(&ctx, &e);
            assert!(too_large(&e, 17, 16), "{ctx}: {e:?}");
            assert_eq!(got.len(), 10, "{ctx}");
        }
    }
}

// ---------------------------------------------------------------------
// 4. Misbehaving inner I/O.
// ---------------------------------------------------------------------

/// Writes `pieces` (each flushed) and `last`, then finishes, retrying
/// every call that failed (a failed call consumed nothing): the careful
/// caller. Returns the error kinds seen (none carrying a crate error).
fn write_flushing_retrying<W: Write + Unpin>(
    w: &mut common::FrontWriter<W>,
    pieces: &[&[u8]],
    last: &[u8],
    chunk: usize,
) -> Vec<ErrorKind> {
    let mut errors = Vec::new();
    let note = |e: io::Error, errors: &mut Vec<ErrorKind>| {
        assert_eq!(Error::from_io(&e), None, "inner error altered: {e}");
        errors.push(e.kind());
        assert!(errors.len() < 50, "{errors:?}");
    };
    for (i, p) in pieces.iter().chain([&last]).enumerate() {
        let mut off = 0;
        while off < p.len() {
            let end = (off + chunk).min(p.len());
            match w.write(&p[off..end]) {
                Ok(0) => panic!("write returned Ok(0)"),
                Ok(n) => off += n,
                Err(e) => note(e, &mut errors),
            }
        }
        if i < pieces.len() {
            while let Err(e) = w.flush() {
                note(e, &mut errors);
            }
        }
    }
    while let Err(e) = w.try_finish() {
        note(e, &mut errors);
    }
    errors
}

/// Through both fronts, inner writes of 1 byte (and of any size), one
/// `Interrupted` or `WouldBlock` injected at every write call of the clean
/// run, with flushes between the pieces: the stream always has exactly
/// the records of the clean run (nothing lost, no record sealed twice, no
/// extra record) and reads back to the plaintext.
#[test]
fn misbehaving_writer_with_flushes() {
    let (key, kb) = key_for(Algorithm::Aes128Gcm, &[1; 32]);
    let cap = 16;
    let lens = [5, 0, 16, 40, 1];
    let pt = data(lens.iter().sum::<usize>() + 7, 4);
    let (pieces, last) = cut(&pt, &lens);
    let want: Vec<(&[u8], bool)> = oracle::split(cap, &pieces, last);
    let check = |ctx: &str, ct: &[u8]| {
        let parsed = oracle::parse(&kb, &[], ct).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let got: Vec<(&[u8], bool)> = parsed.iter().map(|r| (&r.pt[..], r.last)).collect();
        assert_eq!(got, want, "{ctx}: records");
    };
    for &front in Front::ALL {
        for max in [1usize, 3, usize::MAX] {
            for chunk in [1usize, 9, 100] {
                let builder = || framed(&key, cap, &[]);
                let mut w = front.build_writer(builder(), ScriptWriter::new().max_per_call(max));
                let errors = write_flushing_retrying(&mut w, &pieces, last, chunk);
                assert!(errors.is_empty());
                let clean_calls = w.get_ref().calls;
                check(
                    &format!("{front:?} max {max} chunk {chunk}"),
                    &w.get_ref().out,
                );
                for kind in [ErrorKind::Interrupted, ErrorKind::WouldBlock] {
                    for k in 0..clean_calls {
                        let ctx = format!("{front:?} max {max} chunk {chunk}: {kind:?} at {k}");
                        let inner = ScriptWriter::new().max_per_call(max).fail_at(k, kind);
                        let mut w = front.build_writer(builder(), inner);
                        let errors = write_flushing_retrying(&mut w, &pieces, last, chunk);
                        assert!(errors.len() <= 1, "{ctx}: {errors:?}");
                        assert!(errors.iter().all(|&e| e == kind), "{ctx}: {errors:?}");
                        check(&ctx, &w.get_ref().out);
                        assert_eq!(w.get_ref().calls, clean_calls + 1, "{ctx}: inner calls");
                    }
                }
            }
        }
    }
}

// The reader over misbehaving inner reads: `tests/misbehaving_io.rs`,
// with the other formats.

// ---------------------------------------------------------------------
// 5. A flush delivers.
// ---------------------------------------------------------------------

/// A reader over `data` that then blocks: `WouldBlock` at its end, never
/// `Ok(0)` (a socket whose peer waits).
struct ThenBlock<'a> {
    data: &'a [u8],
    pos: usize,
    blocked: usize,
    /// At the end: `Ok(0)` instead.
    eof: bool,
}

impl Read for ThenBlock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.data.len() {
            if self.eof {
                return Ok(0);
            }
            self.blocked += 1;
            assert!(self.blocked < 100, "the reader loops on WouldBlock");
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// After `write_all(msg); flush()` the inner writer holds exactly the
/// header and `msg` in records (one if it fits the capacity, of
/// `msg.len()` plus 20 bytes); a second flush adds nothing. A reader over exactly those
/// bytes, whose inner reader then says `WouldBlock`, returns the whole
/// `msg` (`read_exact`) and then fails with `WouldBlock`, not `Truncated`.
/// Then a second message, flushed, is delivered the same way.
#[test]
fn flush_delivers() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let cap = 64;
    for &front in Front::ALL {
        for (len, len2) in [
            (1usize, 1usize),
            (10, 64),
            (63, 3),
            (64, 65),
            (65, 0),
            (3 * 64 + 5, 7),
        ] {
            let ctx = format!("{front:?}: messages of {len} and {len2}");
            let m1 = data(len, 1);
            let m2 = data(len2, 2);
            let mut w = front.build_writer(framed(&key, cap, &[]), ScriptWriter::new());
            w.write_all(&m1).unwrap();
            w.flush().unwrap();
            let records = len.div_ceil(cap);
            let after1 = HEADER_LEN + len + OVERHEAD * records;
            assert_eq!(w.get_ref().out.len(), after1, "{ctx}: first flush");
            assert!(w.get_ref().flushes >= 1, "{ctx}: the inner writer flushed");
            w.flush().unwrap();
            assert_eq!(w.get_ref().out.len(), after1, "{ctx}: an empty flush");
            w.write_all(&m2).unwrap();
            w.flush().unwrap();
            let after2 = after1 + len2 + OVERHEAD * len2.div_ceil(cap);
            assert_eq!(w.get_ref().out.len(), after2, "{ctx}: second flush");
            let stream = w.finish().unwrap().out;
            assert_eq!(
                stream.len(),
                after2 + OVERHEAD,
                "{ctx}: an empty final record"
            );

            for rcap in [1, 16, 8192] {
                let ctx = format!("{ctx}, reader capacity {rcap}");
                let inner = ThenBlock {
                    data: &stream[..after1],
                    pos: 0,
                    blocked: 0,
                    eof: false,
                };
                let mut r = front.build_reader(CipherReader::builder(&key).capacity(rcap), inner);
                let mut got = vec![0; len];
                r.read_exact(&mut got)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(got == m1, "{ctx}: first message");
                let e = r.read(&mut [0; 64]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::WouldBlock, "{ctx}: {e}");
                assert_eq!(Error::from_io(&e), None, "{ctx}: {e}");
                // The second message arrives.
                r.get_mut().data = &stream[..after2];
                let mut got = vec![0; len2];
                r.read_exact(&mut got)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(got == m2, "{ctx}: second message");
                let e = r.read(&mut [0; 64]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::WouldBlock, "{ctx}: {e}");
                // And the end.
                r.get_mut().data = &stream;
                r.get_mut().eof = true;
                assert_eq!(r.read(&mut [0; 64]).unwrap(), 0, "{ctx}: the end");
            }
        }
    }
}

/// A framed stream has no random access: a seek (to anywhere but where
/// the reader is) is refused with `NoRandomAccess` (`InvalidInput`),
/// not sticky: reading goes on where it was, and `stream_position` still
/// counts the bytes delivered. Once the header is read, the `seek` call
/// itself fails; before, the refusal may come with the next read.
/// `build_at` refuses a framed stream too.
///
/// FAILS (crate bug): after 5 bytes read, `seek(Start(50))` returns
/// `Ok(50)`; the next read fails with `NoRandomAccess`; the read after
/// it delivers plaintext bytes 5..9 (right) but `stream_position()` then
/// says 54 (the refused target plus 4), not 9. Likewise `Current(1)` →
/// 10, `Start(0)` → 4; before the header (0 bytes read) `Start(50)` →
/// position 54 after bytes 0..4. Only `End(_)` is refused at once
/// (`plaintext_len`) and leaves the position alone. `seek_to`
/// (src/core/seek.rs) sets `pos` to the target before the refusal, which
/// `seek_step` makes only after `pending` is taken; the refusal does not
/// restore it.
#[test]
fn seeking_a_framed_stream_is_refused() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(100, 8);
    let (pieces, last) = cut(&pt, &[30]);
    let ct = write_framed(Front::Std, framed(&key, 16, &[]), &pieces, last, 100);
    let mut failures = Vec::new();
    for rd in [0usize, 5, 30] {
        for pos in [
            SeekFrom::Start(0),
            SeekFrom::Start(50),
            SeekFrom::End(0),
            SeekFrom::Current(1),
        ] {
            if rd == 0 && pos == SeekFrom::Start(0) {
                continue; // where the reader is
            }
            let ctx = format!("{rd} bytes read, {pos:?}");
            let mut r = CipherReader::new(&key, io::Cursor::new(&ct));
            let mut got = vec![0; rd];
            r.read_exact(&mut got).unwrap();
            let refused = |e: &io::Error| {
                e.kind() == ErrorKind::InvalidInput
                    && matches!(Error::from_io(e), Some(Error::NoRandomAccess))
            };
            match r.seek(pos) {
                Err(e) => assert!(refused(&e), "{ctx}: {e}"),
                Ok(p) => {
                    if rd > 0 {
                        failures.push(format!("{ctx}: seek returned Ok({p})"));
                    }
                    // Then the next read refuses it.
                    let e = r.read(&mut [0; 4]).unwrap_err();
                    assert!(refused(&e), "{ctx}: {e}");
                }
            }
            let mut more = [0u8; 4];
            r.read_exact(&mut more).unwrap();
            assert_eq!(more, pt[rd..rd + 4], "{ctx}: reading goes on where it was");
            let at = r.stream_position().unwrap();
            if at != rd as u64 + 4 {
                failures.push(format!(
                    "{ctx}: stream_position {at} after {} bytes",
                    rd + 4
                ));
            }
            got.extend_from_slice(&more);
            r.read_to_end(&mut got).unwrap();
            assert!(got == pt, "{ctx}: the plaintext");
        }
    }
    let e = CipherReader::builder(&key).build_at(&ct[..]).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
