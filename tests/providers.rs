//! The providers are interchangeable: a stream sealed by any provider
//! opens with any provider (every pair of [`Provider::ALL`]), in both
//! formats, for every algorithm, writer capacity, plaintext length around
//! the segment boundaries, write chunking, reader capacity and read
//! pattern; over slices, a real file and a TCP socket. Tamper detection
//! across them (a stream sealed by provider A, damaged, fails under
//! provider B and leaves no unverified plaintext in the caller's buffer)
//! is in the tamper suite (`tests/tamper.rs`), which seals and reads every
//! damaged stream with every provider.
//!
//! Byte identity of the two providers' output needs the salt injected and
//! is checked by the unit tests in `src/`; here only the public API is
//! used.
//!
//! Without the `aws-lc` feature `Provider::ALL` is `[RustCrypto]` and
//! every test still runs, with that one pair.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{
    Algorithm, CipherReader, CipherWriter, DEFAULT_CAPACITY, Error, Key, Provider, StreamKey,
};
use common::{
    Front, Layout, MIB, ReadMode, WriteMode, crate_error, data, decrypt_ok, pairs, read_in,
    write_in,
};

/// Writer capacities (native segment sizes).
const WRITER_CAPS: [usize; 5] = [1, 17, 4096, 8192, 65536];
/// Reader capacities, used in rotation.
const READER_CAPS: [usize; 4] = [1, 100, DEFAULT_CAPACITY, MIB];

/// Deterministic plaintext without 0x00 (what a wipe leaves) and 0xAA
/// (what caller buffers are filled with), so that a leak shows.
fn plaintext(len: usize, seed: usize) -> Vec<u8> {
    data(len, seed as u64)
}

/// Lengths around the segment boundaries: 0, 1, first ± 1,
/// first + rest ± 1, and several segments with a short final one.
fn lengths(lay: &Layout) -> Vec<usize> {
    lay.lengths_around(&[1, 2], &[lay.plain_before(3) + 5])
}

// ---------------------------------------------------------------------
// Writing and reading.
// ---------------------------------------------------------------------

/// All at once, 7 bytes a call, and [`varied`].
fn write_modes(seg: usize) -> [WriteMode; 3] {
    [WriteMode::AllAtOnce, WriteMode::Fixed(7), varied(seg)]
}

/// Sizes around the segment size (below, at, above, several), with empty
/// writes between.
fn varied(seg: usize) -> WriteMode {
    WriteMode::Cycle {
        sizes: vec![1, seg.saturating_sub(1).max(1), seg, seg + 1, 2 * seg + 3],
        empty_every: 2,
    }
}

/// Seals `pt` with provider `p` through `front` (native: segments of
/// `cap`; Tink: the key's, `cap` = None).
#[allow(clippy::too_many_arguments)]
fn seal<K: StreamKey>(
    front: Front,
    p: Provider,
    key: &K,
    cap: Option<usize>,
    aad: &[u8],
    pt: &[u8],
    mode: &WriteMode,
) -> Vec<u8> {
    let mut b = CipherWriter::builder(key).provider(p).associated_data(aad);
    if let Some(c) = cap {
        b = b.capacity(c);
    }
    let mut w = front.build_writer(b, Vec::new());
    assert_eq!(w.provider(), p, "the writer reports its provider");
    write_in(&mut w, pt, mode);
    w.finish().unwrap()
}

/// `read_to_end`, reads of 7 bytes and of one byte less than a segment,
/// reads of 2 MiB (the zero-copy path, several segments a call),
/// `fill_buf` consuming 5 bytes and everything in turn.
fn read_modes(seg: usize) -> [ReadMode; 5] {
    [
        ReadMode::ToEnd,
        ReadMode::Chunks(7),
        ReadMode::Chunks(seg.saturating_sub(1).max(1)),
        ReadMode::Chunks(2 * MIB),
        ReadMode::FillBuf(5),
    ]
}

/// Opens `ct` with provider `p` through `front` and checks it reads back
/// `pt`, with a stable end.
#[allow(clippy::too_many_arguments)]
fn open_ok<K: StreamKey>(
    ctx: &str,
    front: Front,
    p: Provider,
    key: &K,
    rcap: usize,
    aad: &[u8],
    ct: &[u8],
    pt: &[u8],
    mode: &ReadMode,
) {
    let builder = CipherReader::builder(key)
        .provider(p)
        .capacity(rcap)
        .associated_data(aad);
    assert_eq!(
        front.build_reader(builder.clone(), ct).provider(),
        p,
        "{ctx}: the reader reports its provider"
    );
    decrypt_ok(ctx, front, builder, ct, pt, mode);
}

// ---------------------------------------------------------------------
// Round trips across providers.
// ---------------------------------------------------------------------

#[test]
fn native_round_trips_across_providers() {
    let aad = b"providers";
    for (ai, alg) in Algorithm::ALL.iter().copied().enumerate() {
        let key = Key::generate(alg);
        for &wp in Provider::ALL {
            for (ci, cap) in WRITER_CAPS.into_iter().enumerate() {
                let lay = Layout::native(cap);
                let mut lens = vec![0, 1, cap - 1, cap, cap + 1, 3 * cap + 5];
                lens.dedup();
                for (li, len) in lens.into_iter().enumerate() {
                    let pt = plaintext(len, ai + li);
                    for (wi, wmode) in write_modes(cap).iter().enumerate() {
                        for &front in Front::ALL {
                            let ct = seal(front, wp, &key, Some(cap), aad, &pt, wmode);
                            assert_eq!(
                                ct.len(),
                                lay.stream_len(len),
                                "{alg} cap {cap} len {len} {front:?}"
                            );
                            for &rp in Provider::ALL {
                                for (ri, rmode) in read_modes(cap).iter().enumerate() {
                                    let rcap =
                                        READER_CAPS[(ai + ci + li + wi + ri) % READER_CAPS.len()];
                                    let ctx = format!(
                                        "{alg}, sealed by {} (cap {cap}, {wmode:?}), opened by {} \
                                         (cap {rcap}, {rmode:?}), len {len}",
                                        wp.name(),
                                        rp.name()
                                    );
                                    open_ok(&ctx, front, rp, &key, rcap, aad, &ct, &pt, rmode);
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
fn native_one_mebibyte_across_providers() {
    let len = MIB + 3;
    let pt = plaintext(len, 5);
    let mut turn = 0;
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        for cap in [4096, 8192, 65536] {
            let wmodes = write_modes(cap);
            let modes = read_modes(cap);
            for (wp, rp) in pairs() {
                for &front in Front::ALL {
                    let wmode = &wmodes[turn % wmodes.len()];
                    let ct = seal(front, wp, &key, Some(cap), b"", &pt, wmode);
                    assert_eq!(ct.len(), Layout::native(cap).stream_len(len));
                    // Two read patterns and a reader capacity per case, in
                    // rotation: every pair meets every pattern.
                    for k in 0..2 {
                        let rmode = &modes[(2 * turn + k) % modes.len()];
                        let rcap = READER_CAPS[(turn + k) % READER_CAPS.len()];
                        let ctx = format!(
                            "{alg} 1 MiB, sealed by {} (cap {cap}, {wmode:?}), opened by {} \
                             (cap {rcap}, {rmode:?})",
                            wp.name(),
                            rp.name()
                        );
                        open_ok(&ctx, front, rp, &key, rcap, b"", &ct, &pt, rmode);
                    }
                    turn += 1;
                }
            }
        }
    }
}

/// Tink parameter sets: Tink's AES128 4 KiB template (SHA256), AES256
/// with SHA512 and an odd segment size, and the minimal segments for
/// both key sizes.
fn tink_sets() -> Vec<AesGcmHkdfParams> {
    vec![
        AesGcmHkdfParams::AES128_GCM_HKDF_4KB,
        AesGcmHkdfParams::new(32, 4113, HkdfHash::Sha512).unwrap(),
        AesGcmHkdfParams::new(16, 41, HkdfHash::Sha256).unwrap(),
        AesGcmHkdfParams::new(32, 57, HkdfHash::Sha512).unwrap(),
        AesGcmHkdfParams::new(16, 100, HkdfHash::Sha1).unwrap(),
    ]
}

fn tink_key(p: AesGcmHkdfParams, seed: u8) -> AesGcmHkdfKey {
    let raw: Vec<u8> = (0..p.derived_key_size())
        .map(|i| u8::try_from(i).unwrap().wrapping_mul(29) ^ seed)
        .collect();
    AesGcmHkdfKey::new(p, &raw).unwrap()
}

#[test]
fn tink_round_trips_across_providers() {
    let aad = b"tink providers";
    for (si, params) in tink_sets().into_iter().enumerate() {
        let key = tink_key(params, u8::try_from(si).unwrap());
        let lay = Layout::of_tink(&params);
        assert_eq!(lay.first, params.first_segment_plaintext());
        assert_eq!(lay.rest, params.segment_plaintext());
        for (li, len) in lengths(&lay).into_iter().enumerate() {
            let pt = plaintext(len, si + li);
            for &wp in Provider::ALL {
                for (wi, wmode) in write_modes(lay.rest).iter().enumerate() {
                    for &front in Front::ALL {
                        let ct = seal(front, wp, &key, None, aad, &pt, wmode);
                        assert_eq!(
                            ct.len(),
                            lay.stream_len(len),
                            "{params:?} len {len} {front:?}"
                        );
                        assert_eq!(usize::from(ct[0]), lay.header, "header length byte");
                        for &rp in Provider::ALL {
                            for (ri, rmode) in read_modes(lay.rest).iter().enumerate() {
                                let rcap = READER_CAPS[(si + li + wi + ri) % READER_CAPS.len()];
                                let ctx = format!(
                                    "{params:?}, sealed by {} ({wmode:?}), opened by {} \
                                     (cap {rcap}, {rmode:?}), len {len}",
                                    wp.name(),
                                    rp.name()
                                );
                                open_ok(&ctx, front, rp, &key, rcap, aad, &ct, &pt, rmode);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn tink_one_mebibyte_across_providers() {
    let len = MIB + 11;
    let pt = plaintext(len, 9);
    let mut turn = 0;
    for (si, params) in tink_sets().into_iter().take(2).enumerate() {
        let key = tink_key(params, 0x40 + u8::try_from(si).unwrap());
        let lay = Layout::of_tink(&params);
        let wmodes = write_modes(lay.rest);
        for (wp, rp) in pairs() {
            for &front in Front::ALL {
                let wmode = &wmodes[turn % wmodes.len()];
                let ct = seal(front, wp, &key, None, b"", &pt, wmode);
                assert_eq!(ct.len(), lay.stream_len(len));
                for rmode in &read_modes(lay.rest) {
                    let rcap = READER_CAPS[turn % READER_CAPS.len()];
                    let ctx = format!(
                        "{params:?} 1 MiB, sealed by {} ({wmode:?}), opened by {} (cap {rcap}, {rmode:?})",
                        wp.name(),
                        rp.name()
                    );
                    open_ok(&ctx, front, rp, &key, rcap, b"", &ct, &pt, rmode);
                }
                turn += 1;
            }
        }
    }
}

// Tamper detection across providers: the tamper suite (`tests/tamper.rs`)
// seals with every provider and reads with every provider.

// ---------------------------------------------------------------------
// Over real I/O.
// ---------------------------------------------------------------------

/// A unique temporary file, removed on drop (also when a test panics).
struct TempFile(PathBuf);

impl TempFile {
    fn new(what: &str) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("cipherio-providers-{}-{what}-{n}.bin", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn through_file<K: StreamKey>(what: &str, key: &K, cap: Option<usize>, seg: usize, pt: &[u8]) {
    for (wp, rp) in pairs() {
        let ctx = format!(
            "{what}: file sealed by {}, opened by {}",
            wp.name(),
            rp.name()
        );
        let tmp = TempFile::new(&format!("{}-{}", wp.name(), rp.name()));
        let file = std::fs::File::create_new(&tmp.0).unwrap();
        let mut b = CipherWriter::builder(key).provider(wp);
        if let Some(c) = cap {
            b = b.capacity(c);
        }
        let mut w = Front::Std.build_writer(b, file);
        write_in(&mut w, pt, &varied(seg));
        w.finish().unwrap().sync_all().unwrap();
        for mode in [
            ReadMode::ToEnd,
            ReadMode::Chunks(1000),
            ReadMode::FillBuf(5),
        ] {
            let file = std::fs::File::open(&tmp.0).unwrap();
            let builder = CipherReader::builder(key).provider(rp);
            let mut r = Front::Std.build_reader(builder, file);
            assert_eq!(r.provider(), rp, "{ctx}");
            let (got, res) = read_in(&mut r, &mode);
            res.unwrap_or_else(|e| panic!("{ctx} {mode:?}: {e}"));
            assert!(got == pt, "{ctx} {mode:?}: wrong plaintext");
        }
        // The same file with its last byte damaged fails.
        let mut bytes = std::fs::read(&tmp.0).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&tmp.0, &bytes).unwrap();
        let mut r = CipherReader::builder(key)
            .provider(rp)
            .build(std::fs::File::open(&tmp.0).unwrap());
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(crate_error(&ctx, &e), Error::Authentication, "{ctx}");
        assert!(got.len() < pt.len() && got == pt[..got.len()], "{ctx}");
    }
}

#[test]
fn real_file_across_providers() {
    let pt = plaintext(300_000 + 7, 11);
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        through_file(&format!("{alg}"), &key, Some(4096), 4096, &pt);
    }
    let params = AesGcmHkdfParams::AES128_GCM_HKDF_4KB;
    let key = tink_key(params, 0x21);
    through_file("Tink", &key, None, params.segment_plaintext(), &pt);
}

/// Nothing here should take more than seconds: a hang fails the test.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(30);

/// The first connection to `listener`, or a panic after `limit` (if the
/// writer thread died before connecting, a plain `accept` would hang).
fn accept_within(listener: &TcpListener, limit: Duration) -> TcpStream {
    listener.set_nonblocking(true).unwrap();
    let start = std::time::Instant::now();
    loop {
        match listener.accept() {
            Ok((sock, _)) => {
                sock.set_nonblocking(false).unwrap();
                return sock;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(start.elapsed() < limit, "no connection within {limit:?}");
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn through_tcp<K: StreamKey + Clone + Send + 'static>(
    what: &str,
    key: &K,
    cap: Option<usize>,
    seg: usize,
    pt: &[u8],
) {
    for (wp, rp) in pairs() {
        let ctx = format!(
            "{what}: TCP, sealed by {}, opened by {}",
            wp.name(),
            rp.name()
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (wkey, wpt) = (key.clone(), pt.to_vec());
        let writer = std::thread::spawn(move || {
            let sock = TcpStream::connect(addr).unwrap();
            sock.set_write_timeout(Some(SOCKET_TIMEOUT)).unwrap();
            let mut b = CipherWriter::builder(&wkey).provider(wp);
            if let Some(c) = cap {
                b = b.capacity(c);
            }
            let mut w = Front::Std.build_writer(b, sock);
            write_in(&mut w, &wpt, &varied(seg));
            let sock = w.finish().unwrap();
            sock.shutdown(Shutdown::Write).unwrap();
        });
        let sock = accept_within(&listener, SOCKET_TIMEOUT);
        sock.set_read_timeout(Some(SOCKET_TIMEOUT)).unwrap();
        let builder = CipherReader::builder(key).provider(rp);
        let mut r = Front::Std.build_reader(builder, sock);
        let (got, res) = read_in(&mut r, &ReadMode::Chunks(1500));
        res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert!(got == pt, "{ctx}: wrong plaintext ({} bytes)", got.len());
        writer.join().unwrap();
    }
}

#[test]
fn tcp_across_providers() {
    let pt = plaintext(200_000 + 3, 13);
    for &alg in Algorithm::ALL {
        let key = Key::generate(alg);
        through_tcp(&format!("{alg}"), &key, Some(8192), 8192, &pt);
    }
    let params = AesGcmHkdfParams::new(32, 4113, HkdfHash::Sha512).unwrap();
    let key = tink_key(params, 0x31);
    through_tcp("Tink", &key, None, params.segment_plaintext(), &pt);
}

// ---------------------------------------------------------------------
// Which provider a stream reports.
// ---------------------------------------------------------------------

/// Features only add: the default is RustCrypto in every build, the
/// `aws-lc` feature adds `Provider::AwsLc` after it.
#[test]
fn default_provider_is_rustcrypto_whatever_the_features() {
    assert_eq!(Provider::default(), Provider::RustCrypto);
    #[cfg(feature = "aws-lc")]
    assert_eq!(Provider::ALL, &[Provider::RustCrypto, Provider::AwsLc]);
    #[cfg(not(feature = "aws-lc"))]
    assert_eq!(Provider::ALL, &[Provider::RustCrypto]);
    assert_eq!(Provider::RustCrypto.name(), "rustcrypto");
    #[cfg(feature = "aws-lc")]
    assert_eq!(Provider::AwsLc.name(), "aws-lc");
}

#[test]
fn writer_and_reader_report_the_builders_provider() {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let tkey = tink_key(AesGcmHkdfParams::AES256_GCM_HKDF_4KB, 1);
    let d = Provider::default();
    // Every constructor without a choice gives the default.
    assert_eq!(CipherWriter::new(&key, Vec::new()).provider(), d);
    assert_eq!(
        CipherWriter::with_capacity(64, &key, Vec::new()).provider(),
        d
    );
    assert_eq!(CipherWriter::builder(&key).build(Vec::new()).provider(), d);
    assert_eq!(CipherWriter::new(&tkey, Vec::new()).provider(), d);
    assert_eq!(CipherReader::new(&key, &[][..]).provider(), d);
    assert_eq!(CipherReader::with_capacity(64, &key, &[][..]).provider(), d);
    assert_eq!(CipherReader::builder(&key).build(&[][..]).provider(), d);
    assert_eq!(CipherReader::new(&tkey, &[][..]).provider(), d);
    for &p in Provider::ALL {
        // The choice, whatever else the builder is told, and in either order.
        let w = CipherWriter::builder(&key)
            .provider(p)
            .capacity(100)
            .associated_data(b"x")
            .build(Vec::new());
        assert_eq!(w.provider(), p);
        let w2 = CipherWriter::builder(&key)
            .capacity(100)
            .provider(p)
            .build(Vec::new());
        assert_eq!(w2.provider(), p);
        assert!(format!("{w:?}").contains(&format!("{p:?}")), "{w:?}");
        let tw = CipherWriter::builder(&tkey).provider(p).build(Vec::new());
        assert_eq!(tw.provider(), p);
        let ct = {
            let mut w = w;
            w.write_all(b"reported").unwrap();
            assert_eq!(w.provider(), p, "after writing");
            w.try_finish().unwrap();
            assert_eq!(w.provider(), p, "after finishing");
            w.finish().unwrap()
        };
        let mut r = CipherReader::builder(&key)
            .max_segment_size(1000)
            .provider(p)
            .capacity(10)
            .associated_data(b"x")
            .build(&ct[..]);
        assert_eq!(r.provider(), p);
        assert!(format!("{r:?}").contains(&format!("{p:?}")), "{r:?}");
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "reported");
        assert_eq!(r.provider(), p, "after reading");
        assert_eq!(
            CipherReader::builder(&tkey)
                .provider(p)
                .build(&[][..])
                .provider(),
            p
        );
        // A builder's choice is its own: a clone re-targeted does not
        // change the original.
        let b = CipherReader::builder(&key).provider(p);
        let other = *Provider::ALL.iter().find(|&&q| q != p).unwrap_or(&p);
        let _ = b.clone().provider(other);
        assert_eq!(b.build(&[][..]).provider(), p);
        assert!(
            format!("{:?}", CipherReader::builder(&key).provider(p)).contains(&format!("{p:?}"))
        );
    }
}
