//! Writes the seed corpora under fuzz/corpus/: `cargo run --example seeds`
//! in fuzz/. Deterministic: the streams are built by the spec oracle with
//! fixed salts, so rerunning it rewrites the same files.

use std::fs;
use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use cipherio::Algorithm;
use cipherio_fuzz::open::{
    CONFIG_LEN, Config, fixed_key, tink_ctr_key, tink_ctr_params, tink_key, tink_params,
};
use cipherio_fuzz::{oracle, oracle_tink, oracle_tink_ctr, roundtrip};

/// Reader configuration and read pattern for one `open` seed.
struct Cfg {
    capacity: u16,
    max_segment: u32,
    aad: &'static [u8],
    sizes: [u8; 4],
    inject: u8,
    /// Read through `build_from_buf_read`, the inner reader's refills
    /// taking `sizes`.
    buf_read: bool,
    ops: [u8; 8],
}

impl Cfg {
    fn bytes(&self) -> [u8; CONFIG_LEN] {
        let mut b = [0u8; CONFIG_LEN];
        b[..2].copy_from_slice(&self.capacity.to_le_bytes());
        b[2..5].copy_from_slice(&(self.max_segment - 1).to_le_bytes()[..3]);
        b[5] = u8::from(self.buf_read);
        b[6] = u8::try_from(self.aad.len()).expect("at most 8");
        b[7..7 + self.aad.len()].copy_from_slice(self.aad);
        b[15..19].copy_from_slice(&self.sizes);
        b[19] = self.inject;
        b[20..].copy_from_slice(&self.ops);
        // The target must read back what was meant.
        let c = Config::parse(&b);
        assert_eq!(
            (
                c.capacity,
                c.max_segment,
                c.aad.as_slice(),
                c.wrong_key,
                c.buf_read
            ),
            (
                usize::from(self.capacity),
                self.max_segment as usize,
                self.aad,
                false,
                self.buf_read
            )
        );
        b
    }
}

/// Sets the async bit of an `open`/`open_tink` input (configuration byte 4,
/// bit 7): the stream is read again through the async reader, whose inner
/// reader pends before its n-th call when bit n % 6 of `pending` is set,
/// and whose driver drops the op after its k-th `Pending` when bit k % 3 of
/// `drop_after` is.
fn asyncify(data: &mut [u8], pending: u8, drop_after: u8) {
    assert!(pending < 64 && drop_after < 8);
    let before = Config::parse(data);
    data[4] |= 0x80 | drop_after << 4;
    data[5] |= pending << 2;
    let c = Config::parse(data);
    assert!(c.asynchronous);
    assert_eq!(
        (c.pending.bits, c.drop_after.bits, c.buf_read, c.wrong_key),
        (pending, drop_after, before.buf_read, false)
    );
    assert_eq!(
        (c.capacity, c.max_segment, c.aad, c.sizes, c.ops),
        (
            before.capacity,
            before.max_segment,
            before.aad,
            before.sizes,
            before.ops
        )
    );
}

fn write(dir: &Path, name: &str, data: &[u8]) {
    fs::write(dir.join(name), data).expect("write seed");
}

fn stream(alg: Algorithm, aad: &[u8], segment: u32, len: usize, salt: u8) -> Vec<u8> {
    let pt: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31)).collect();
    let key = fixed_key(alg);
    oracle::encrypt(
        alg,
        key.as_bytes(),
        aad,
        segment,
        &[salt; 32],
        &[salt ^ 0x5a; 7],
        &pt,
    )
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let dir = |t: &str| {
        let d = root.join(t);
        fs::create_dir_all(&d).expect("corpus dir");
        d
    };

    open_cobblestone(&dir("open_cobblestone"));

    // header: each algorithm, and the first bytes of the error paths.
    let h = dir("header");
    for &alg in Algorithm::ALL {
        let bytes = oracle::header(alg, 4096, &[7; 32], &[9; 7]);
        write(&h, &format!("valid-{}", oracle::spec_id(alg)), &bytes);
    }
    let mut v2 = oracle::header(Algorithm::Aes128Gcm, 1, &[0; 32], &[0; 7]);
    v2[8] = 2;
    write(&h, "version-2", &v2);
    write(&h, "truncated", &v2[..20]);

    // open: valid streams under several reader configurations, plus two
    // malformed ones.
    let small = [0x01, 0x03, 0x82, 0x10, 0x00, 0x85, 0x40, 0x07];
    let large = [0xc0, 0x43, 0xff, 0x01, 0xc3, 0x80, 0x20, 0x41];
    let o = dir("open");
    let seeds: [(&str, Algorithm, u32, usize, Cfg); 10] = [
        (
            "aes128-seg1",
            Algorithm::Aes128Gcm,
            1,
            3,
            Cfg {
                capacity: 1,
                max_segment: 64,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "chacha-seg16-aad",
            Algorithm::ChaCha20Poly1305,
            16,
            40,
            Cfg {
                capacity: 64,
                max_segment: 16,
                aad: b"fuzz",
                sizes: [5, 0, 1, 17],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes256-full-final",
            Algorithm::Aes256Gcm,
            100,
            300,
            Cfg {
                capacity: 4096,
                max_segment: 1000,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: large,
            },
        ),
        (
            "aes128-empty",
            Algorithm::Aes128Gcm,
            32,
            0,
            Cfg {
                capacity: 8,
                max_segment: 32,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes256-empty-aad",
            Algorithm::Aes256Gcm,
            7,
            0,
            Cfg {
                capacity: 100,
                max_segment: 4096,
                aad: b"12345678",
                sizes: [3, 3, 3, 3],
                inject: 0,
                buf_read: false,
                ops: large,
            },
        ),
        (
            "chacha-injected",
            Algorithm::ChaCha20Poly1305,
            64,
            200,
            Cfg {
                capacity: 53,
                max_segment: 64,
                aad: b"",
                sizes: [7, 0, 1, 64],
                inject: 3,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes128-many",
            Algorithm::Aes128Gcm,
            5,
            123,
            Cfg {
                capacity: 20,
                max_segment: 300,
                aad: b"ab",
                sizes: [0, 21, 0, 2],
                inject: 1,
                buf_read: false,
                ops: large,
            },
        ),
        (
            "chacha-over-limit",
            Algorithm::ChaCha20Poly1305,
            200,
            250,
            Cfg {
                capacity: 300,
                max_segment: 199,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        // build_from_buf_read: refills of 2.5 segments, a segment and a
        // byte, 7 bytes, the rest; then refills that split segments, with
        // injected errors (fill_buf's included).
        (
            "aes128-bufread-refills",
            Algorithm::Aes128Gcm,
            16,
            12 * 16 + 5,
            Cfg {
                capacity: 20,
                max_segment: 64,
                aad: b"",
                sizes: [80, 33, 7, 0],
                inject: 0,
                buf_read: true,
                ops: large,
            },
        ),
        (
            "chacha-bufread-injected",
            Algorithm::ChaCha20Poly1305,
            40,
            500,
            Cfg {
                capacity: 56,
                max_segment: 64,
                aad: b"buf",
                sizes: [0, 56, 200, 3],
                inject: 2,
                buf_read: true,
                ops: small,
            },
        ),
    ];
    // The async reader too (see `asyncify`): (pending, drop_after).
    let asynchronous = |name: &str| match name {
        "aes128-seg1" => Some((0b01_0101, 0)),
        "chacha-seg16-aad" => Some((0b11_1111, 0b101)),
        "aes256-full-final" => Some((0b00_0001, 0b001)),
        "chacha-injected" => Some((0b10_0110, 0b010)),
        "aes128-many" => Some((0b01_1011, 0)),
        "aes128-bufread-refills" => Some((0b00_0011, 0b110)),
        _ => None,
    };
    for (name, alg, segment, len, cfg) in seeds {
        let mut data = cfg.bytes().to_vec();
        data.extend_from_slice(&stream(alg, cfg.aad, segment, len, len as u8));
        write(&o, name, &data);
        if let Some((pending, drop_after)) = asynchronous(name) {
            let mut data = data.clone();
            asyncify(&mut data, pending, drop_after);
            write(&o, &format!("{name}-async"), &data);
        }
        // The same read by the other provider (configuration byte 5, bit 1).
        data[5] |= 2;
        write(&o, &format!("{name}-other-provider"), &data);
    }
    let cfg = Cfg {
        capacity: 16,
        max_segment: 64,
        aad: b"",
        sizes: [0; 4],
        inject: 0,
        buf_read: false,
        ops: small,
    };
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(b"cipherio\x01\x03\x00\x00");
    write(&o, "truncated-header", &data);
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(&stream(Algorithm::Aes128Gcm, b"", 16, 50, 1)[..90]);
    write(&o, "truncated-segment", &data);
    asyncify(&mut data, 0b10_1010, 0b011);
    write(&o, "truncated-segment-async", &data);

    // An empty final segment after full ones: invalid natively, valid in
    // Tink. Mutations cannot make one (it needs a tag), so it is a seed.
    let pt = [0x11u8; 32];
    let alg = Algorithm::ChaCha20Poly1305;
    let chunks: [&[u8]; 3] = [&pt[..16], &pt[16..], &[]];
    let cfg = Cfg {
        capacity: 32,
        max_segment: 64,
        aad: b"",
        sizes: [0; 4],
        inject: 0,
        buf_read: false,
        ops: small,
    };
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(&oracle::seal(
        alg,
        fixed_key(alg).as_bytes(),
        b"",
        16,
        &[4; 32],
        &[5; 7],
        &chunks,
    ));
    write(&o, "chacha-empty-final-after-full", &data);

    // A full-length final segment with a byte after it, all in one refill
    // of build_from_buf_read: tried there as non-final, settled by the
    // copying path (TrailingData).
    let cfg = Cfg {
        capacity: 8,
        max_segment: 64,
        aad: b"",
        sizes: [0; 4],
        inject: 0,
        buf_read: true,
        ops: large,
    };
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(&stream(Algorithm::Aes256Gcm, b"", 32, 96, 9));
    data.push(0x5c);
    write(&o, "aes256-bufread-trailing-byte", &data);

    // open_tink: the parameters are in the configuration's bytes 2..5
    // (see open::tink_params); plaintexts around the segment boundaries.
    let t = dir("open_tink");
    let tink: [(&str, [u8; 3], usize, Cfg); 8] = [
        (
            "aes128-sha256-empty",
            [2, 0, 0],
            0,
            Cfg {
                capacity: 16,
                max_segment: 1,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes128-sha1-one-segment",
            [0, 10, 0],
            20,
            Cfg {
                capacity: 100,
                max_segment: 1,
                aad: b"tink",
                sizes: [9, 0, 1, 30],
                inject: 0,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes256-sha512-full-final",
            [5, 3, 0],
            17 + 3 + (57 + 3 - 16),
            Cfg {
                capacity: 1,
                max_segment: 1,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: large,
            },
        ),
        (
            "aes256-sha256-many",
            [3, 100, 0],
            900,
            Cfg {
                capacity: 4096,
                max_segment: 1,
                aad: b"12",
                sizes: [0, 50, 0, 7],
                inject: 2,
                buf_read: false,
                ops: large,
            },
        ),
        (
            "aes128-sha512-injected",
            [4, 40, 0],
            333,
            Cfg {
                capacity: 40,
                max_segment: 1,
                aad: b"",
                sizes: [7, 0, 1, 64],
                inject: 3,
                buf_read: false,
                ops: small,
            },
        ),
        (
            "aes128-sha256-1kb",
            [2, 0xd7, 0x03],
            5000,
            Cfg {
                capacity: 8192,
                max_segment: 1,
                aad: b"",
                sizes: [0; 4],
                inject: 0,
                buf_read: false,
                ops: large,
            },
        ),
        // build_from_buf_read. The header's read brings exactly the header
        // (inner call 1 takes sizes[1]) and the read that would complete
        // segment 0 fails (every second call does), so segment 0, shorter
        // in Tink, is opened from the first refill (sizes[0]: everything).
        (
            "aes128-sha256-bufread-header-then-all",
            [2, 30, 0],
            400,
            Cfg {
                capacity: 100,
                max_segment: 1,
                aad: b"",
                sizes: [0, 24, 0, 0],
                inject: 6,
                buf_read: true,
                ops: large,
            },
        ),
        (
            "aes256-sha512-bufread-split-injected",
            [5, 3, 0],
            500,
            Cfg {
                capacity: 60,
                max_segment: 1,
                aad: b"t",
                sizes: [45, 61, 7, 0],
                inject: 3,
                buf_read: true,
                ops: large,
            },
        ),
    ];
    let asynchronous = |name: &str| match name {
        "aes128-sha1-one-segment" => Some((0b11_1111, 0b001)),
        "aes256-sha512-full-final" => Some((0b01_0110, 0)),
        "aes256-sha256-many" => Some((0b00_1101, 0b100)),
        "aes128-sha512-injected" => Some((0b11_0011, 0b011)),
        _ => None,
    };
    for (name, params, len, cfg) in tink {
        let mut data = cfg.bytes().to_vec();
        data[2..5].copy_from_slice(&params);
        let p = tink_params(&data);
        let key = tink_key(&p, false);
        let pt: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(17)).collect();
        let salt = vec![len as u8; p.key_size];
        data.extend_from_slice(&oracle_tink::encrypt(
            &p,
            key.as_bytes(),
            cfg.aad,
            &salt,
            &[3; 7],
            &pt,
        ));
        write(&t, name, &data);
        if let Some((pending, drop_after)) = asynchronous(name) {
            let mut data = data.clone();
            asyncify(&mut data, pending, drop_after);
            let q = tink_params(&data);
            assert_eq!(
                (q.key_size, q.segment, q.hash),
                (p.key_size, p.segment, p.hash),
                "the async bit kept the parameters"
            );
            write(&t, &format!("{name}-async"), &data);
        }
        data[5] |= 2;
        write(&t, &format!("{name}-other-provider"), &data);
    }
    let cfg = Cfg {
        capacity: 64,
        max_segment: 1,
        aad: b"",
        sizes: [0; 4],
        inject: 0,
        buf_read: false,
        ops: large,
    };
    let mut data = cfg.bytes().to_vec();
    data[2..5].copy_from_slice(&[2, 3, 0]);
    let p = tink_params(&data);
    let [first, rest] = p.plain();
    let pt = vec![0x22u8; first + rest];
    let chunks: [&[u8]; 3] = [&pt[..first], &pt[first..], &[]];
    let key = tink_key(&p, false);
    data.extend_from_slice(&oracle_tink::seal(
        &p,
        key.as_bytes(),
        b"",
        &[6; 16],
        &[7; 7],
        &chunks,
    ));
    write(&t, "aes128-sha256-empty-final-after-full", &data);

    open_tink_ctr(&dir("open_tink_ctr"), small, large);

    // roundtrip, roundtrip_tink, roundtrip_tink_ctr: any bytes are an
    // input; a few of different lengths.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut y: u64 = 0x2545_f491_4f6c_dd1d;
    let mut z: u64 = 0x8e13_2ba6_55d9_0f37;
    for target in ["roundtrip", "roundtrip_tink", "roundtrip_tink_ctr"] {
        let r = dir(target);
        for len in [48, 200, 700, 2000] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 32) as u8
                })
                .collect();
            write(&r, &format!("random-{len}"), &bytes);
        }
        // One 700-byte input for every (writer, reader) provider pair: the
        // first of a second generator's inputs that picks that pair (the
        // random seeds above stay as they were).
        let mut x = y;
        for &w in cipherio::Provider::ALL {
            for &rd in cipherio::Provider::ALL {
                let bytes = loop {
                    let bytes: Vec<u8> = (0..700)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            (x >> 32) as u8
                        })
                        .collect();
                    let u = Unstructured::new(&bytes);
                    let picked = match target {
                        "roundtrip" => {
                            roundtrip::Input::arbitrary_take_rest(u).map(|i| i.providers())
                        }
                        "roundtrip_tink" => {
                            roundtrip::TinkInput::arbitrary_take_rest(u).map(|i| i.providers())
                        }
                        _ => roundtrip::TinkCtrInput::arbitrary_take_rest(u).map(|i| i.providers()),
                    };
                    if picked.is_ok_and(|p| p == (w, rd)) {
                        break bytes;
                    }
                };
                write(
                    &r,
                    &format!("providers-{}-to-{}", w.name(), rd.name()),
                    &bytes,
                );
            }
        }
        y = x;

        // Async round trips (bit 13 of the reader capacity field; the
        // plaintext's first bytes script the doubles): the first inputs
        // of a third generator whose writer and reader both met a
        // `Pending`, and that dropped an op after one; one completed by
        // `finish`, one by `poll_shutdown`, twice.
        let mut x = z;
        for (i, finish) in [true, false, true, false].into_iter().enumerate() {
            let bytes = loop {
                let bytes: Vec<u8> = (0..700)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 32) as u8
                    })
                    .collect();
                let u = Unstructured::new(&bytes);
                let trip = match target {
                    "roundtrip" => roundtrip::Input::arbitrary_take_rest(u)
                        .ok()
                        .filter(roundtrip::Input::run_async)
                        .map(|i| roundtrip::check_run(&i)),
                    "roundtrip_tink" => roundtrip::TinkInput::arbitrary_take_rest(u)
                        .ok()
                        .filter(roundtrip::TinkInput::run_async)
                        .map(|i| roundtrip::check_tink_run(&i)),
                    _ => roundtrip::TinkCtrInput::arbitrary_take_rest(u)
                        .ok()
                        .filter(roundtrip::TinkCtrInput::run_async)
                        .map(|i| roundtrip::check_tink_ctr_run(&i)),
                };
                if trip.is_some_and(|t| {
                    t.finish == finish
                        && t.write.pendings > 0
                        && t.read.pendings > 0
                        && t.write.dropped + t.read.dropped > 0
                }) {
                    break bytes;
                }
            };
            let how = if finish { "finish" } else { "shutdown" };
            write(&r, &format!("async-{how}-{i}"), &bytes);
        }
        z = x;
    }

    seek_faults(&dir("seek"));
}

/// The `open_tink_ctr` seeds: a configuration, the parameter bytes (see
/// `open::tink_ctr_params`: flags and tag after the configuration, the
/// segment size in configuration bytes 3..5), then a stream sealed by the
/// oracle; plaintexts around the segment boundaries, every hash as HKDF
/// and HMAC hash, tags from 10 to 64 bytes, each again read through the
/// other provider, four through the async reader too.
fn open_tink_ctr(t: &Path, small: [u8; 8], large: [u8; 8]) {
    let cfg = |capacity, aad, sizes, inject, buf_read, ops| Cfg {
        capacity,
        max_segment: 1,
        aad,
        sizes,
        inject,
        buf_read,
        ops,
    };
    // (name, flags, tag, segment extra, plaintext length or None for
    // one full first and one full later segment, configuration, async)
    type Seed = (
        &'static str,
        u8,
        u8,
        u16,
        Option<usize>,
        Cfg,
        Option<(u8, u8)>,
    );
    let seeds: [Seed; 8] = [
        (
            "aes128-sha256-t32-empty",
            0b01010,
            22,
            0,
            Some(0),
            cfg(16, b"", [0; 4], 0, false, small),
            None,
        ),
        (
            "aes128-sha1-t10-one-segment",
            0,
            0,
            20,
            Some(20),
            cfg(100, b"ctr", [9, 0, 1, 30], 0, false, small),
            Some((0b11_1111, 0b001)),
        ),
        (
            "aes256-sha512-t64-many",
            0b10101,
            54,
            100,
            Some(1000),
            cfg(300, b"", [0; 4], 0, false, large),
            Some((0b01_0110, 0)),
        ),
        (
            "aes128-sha256-sha1-t15-bufread",
            0b00010,
            5,
            50,
            Some(300),
            cfg(64, b"tink", [40, 7, 0, 100], 0, true, large),
            None,
        ),
        (
            // As open_tink's bufread-header-then-all: the header's read
            // brings exactly the header, the read that would complete
            // segment 0 fails, so segment 0 opens from the first refill.
            "aes128-sha1-sha256-t16-bufread-header-then-all",
            0b01000,
            6,
            30,
            Some(400),
            cfg(100, b"", [0, 24, 0, 0], 6, true, large),
            None,
        ),
        (
            "aes256-sha1-sha512-t40-injected",
            0b10001,
            30,
            300,
            Some(2000),
            cfg(512, b"", [0, 13, 0, 77], 3, false, large),
            Some((0b00_1101, 0b100)),
        ),
        (
            "aes256-sha256-t20-full-final",
            0b01011,
            10,
            33,
            None,
            cfg(90, b"x", [0; 4], 0, false, small),
            Some((0b11_0011, 0b011)),
        ),
        (
            "aes128-sha512-sha256-t32-one-byte",
            0b01100,
            22,
            1000,
            Some(1),
            cfg(8, b"", [1, 2, 0, 0], 0, false, small),
            None,
        ),
    ];
    for (name, flags, tag, extra, len, cfg, asynchronous) in seeds {
        let mut data = cfg.bytes().to_vec();
        data[2] = 0;
        data[3..5].copy_from_slice(&extra.to_le_bytes());
        data.extend_from_slice(&[flags, tag]);
        let p = tink_ctr_params(&data);
        let key = tink_ctr_key(&p, false);
        let [first, rest] = p.plain();
        let len = len.unwrap_or(first + rest);
        let pt: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(29)).collect();
        let salt = vec![len as u8; p.key_size];
        data.extend_from_slice(&oracle_tink_ctr::encrypt(
            &p,
            key.as_bytes(),
            cfg.aad,
            &salt,
            &[5; 7],
            &pt,
        ));
        write(t, name, &data);
        if let Some((pending, drop_after)) = asynchronous {
            let mut data = data.clone();
            asyncify(&mut data, pending, drop_after);
            let q = tink_ctr_params(&data);
            assert_eq!(
                (q.key_size, q.segment, q.hkdf, q.hmac, q.tag),
                (p.key_size, p.segment, p.hkdf, p.hmac, p.tag),
                "the async bit kept the parameters"
            );
            write(t, &format!("{name}-async"), &data);
        }
        data[5] |= 2;
        write(t, &format!("{name}-other-provider"), &data);
    }
}

/// The `seek` seeds with a faults block (byte 11, bit 7; see `src/seek.rs`):
/// the std front over a `BufReader` with two threads, the async front with
/// `Pending`s and dropped futures, and a Tink stream over `build` with
/// every error kind. The older `seek` seeds (no faults block) are kept as
/// they were written.
fn seek_faults(dir: &Path) {
    // (name, bytes 0..=10, ops as (kind, x), faults block, plaintext length)
    type Seed = (&'static str, [u8; 11], &'static [(u8, u32)], [u8; 8], usize);
    let seeds: [Seed; 3] = [
        (
            // Native AES-128-GCM, 100-byte segments, capacity 1000,
            // build_from_buf_read over a 256-byte BufReader, threads(2);
            // WouldBlock at call 2 and every 5th from 2 on.
            "faults-std-bufreader-threads",
            [0, 99, 0, 0xE7, 0x13, 0, 0, 0, 0, 0, 0],
            &[
                (11, 100),
                (11, 100),
                (11, 100),
                (9, 60),
                (11, 100),
                (7, 0),
                (0, 0),
                (4, 250),
            ],
            [0b0000_0100, 5 | 1 << 4, 2, 2, 0, 0x10 | 0x40, 255, 0],
            250,
        ),
        (
            // Native ChaCha20-Poly1305, 64-byte segments, capacity 50,
            // the async front, threads(3): a fault every 5th poll, the
            // kinds in turn (Pending, WouldBlock, Interrupted, Other);
            // every other Pending (the first included) drops the op's
            // future.
            "faults-async-drops",
            [2, 63, 0, 49, 0, 0, 0, 0, 0, 0, 0],
            &[
                (11, 299),
                (0, 150),
                (4, 10),
                (0, 0),
                (6, 40),
                (10, 0),
                (4, 100),
                (9, 30),
            ],
            [0b1, 5 | 0x40, 0, 0, 0b01, 2 | 0x20, 0, 0],
            200,
        ),
        (
            // Tink AES-256-GCM (HKDF-SHA256), 7 bytes before the stream,
            // `build`, capacity 100: Interrupted, Other, Pending (as
            // WouldBlock), WouldBlock in turn on a 3-call pattern.
            "faults-tink-prefix-kinds",
            [0x81, 40, 0, 99, 0x20, 0, 0, 0, 0, 0, 0],
            &[
                (11, 30),
                (9, 10),
                (4, 9),
                (0, 31),
                (5, 70),
                (7, 0),
                (11, 100),
            ],
            [0b011, 3 | 2 << 4, 0, 0, 0, 0, 0, 0],
            300,
        ),
    ];
    for (name, fixed, ops, faults, len) in seeds {
        let mut data = fixed.to_vec();
        data.push(0x80 | u8::try_from(ops.len()).expect("few ops"));
        for &(kind, x) in ops {
            data.push(kind);
            data.extend_from_slice(&x.to_le_bytes());
        }
        data.extend_from_slice(&faults);
        data.extend((0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(1)));
        // The target must read back what was meant.
        let input = cipherio_fuzz::seek::Input::decode(&data);
        let fc = input.faults.as_ref().expect("a faults block");
        assert_eq!(input.plaintext.len(), len, "{name}");
        assert_eq!(fc.asynchronous, name.contains("async"), "{name}");
        assert_eq!(input.ops().len(), ops.len(), "{name}");
        write(dir, name, &data);
    }
}

/// `open_cobblestone`: streams of the `cobblestone` crate under the fixed
/// key, both instantiations, around the chunk boundary, and one cut after
/// a full chunk. (Its salts are random: rerunning rewrites these seeds with
/// other bytes, equally valid.)
fn open_cobblestone(dir: &Path) {
    use cipherio_fuzz::open_cobblestone::{context, fixed_key, instantiation};
    // (name, configuration byte 0, read size - 1, plaintext length, bytes cut)
    let seeds: [(&str, u8, u16, usize, usize); 6] = [
        ("128-empty", 0x00, 99, 0, 0),
        ("256-short-ctx", 0x11, 6, 40, 0),
        ("128-full-and-empty", 0x02, 4095, 16384, 0),
        ("256-two-chunks-threads", 0x05, 16383, 16400, 0),
        ("128-bufread", 0x18, 1000, 20000, 0),
        ("128-cut-after-a-full-chunk", 0x00, 500, 16500, 116 + 16),
    ];
    for (name, flags, size, len, cut) in seeds {
        let pt: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(29)).collect();
        let key = fixed_key(instantiation(flags), false);
        let ctx = context(flags);
        let ct = match key.instantiation() {
            cipherio::cobblestone::Instantiation::Cobblestone128 => {
                let k = cobblestone::Key::try_from(key.as_bytes()).expect("16 bytes");
                cobblestone::encrypt(&k, ctx, &pt)
            }
            _ => {
                let k = cobblestone::Key256::try_from(key.as_bytes()).expect("32 bytes");
                cobblestone::encrypt(&k, ctx, &pt)
            }
        }
        .expect("a short message");
        let mut data = vec![flags];
        data.extend_from_slice(&size.to_le_bytes());
        data.extend_from_slice(&ct[..ct.len() - cut]);
        write(dir, name, &data);
    }
}
