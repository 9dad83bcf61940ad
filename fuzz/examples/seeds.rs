//! Writes the seed corpora under fuzz/corpus/: `cargo run --example seeds`
//! in fuzz/. Deterministic: the streams are built by the spec oracle with
//! fixed salts, so rerunning it rewrites the same files.

use std::fs;
use std::path::{Path, PathBuf};

use cipherio::Algorithm;
use cipherio_fuzz::open::{CONFIG_LEN, Config, fixed_key};
use cipherio_fuzz::oracle;

/// Reader configuration and read pattern for one `open` seed.
struct Cfg {
    capacity: u16,
    max_segment: u32,
    aad: &'static [u8],
    sizes: [u8; 4],
    inject: u8,
    ops: [u8; 8],
}

impl Cfg {
    fn bytes(&self) -> [u8; CONFIG_LEN] {
        let mut b = [0u8; CONFIG_LEN];
        b[..2].copy_from_slice(&self.capacity.to_le_bytes());
        b[2..5].copy_from_slice(&(self.max_segment - 1).to_le_bytes()[..3]);
        b[6] = u8::try_from(self.aad.len()).expect("at most 8");
        b[7..7 + self.aad.len()].copy_from_slice(self.aad);
        b[15..19].copy_from_slice(&self.sizes);
        b[19] = self.inject;
        b[20..].copy_from_slice(&self.ops);
        // The target must read back what was meant.
        let c = Config::parse(&b);
        assert_eq!(
            (c.capacity, c.max_segment, c.aad.as_slice(), c.wrong_key),
            (
                usize::from(self.capacity),
                self.max_segment as usize,
                self.aad,
                false
            )
        );
        b
    }
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

    // header: each algorithm, and the first bytes of the error paths.
    let h = dir("header");
    for alg in Algorithm::ALL {
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
    let seeds: [(&str, Algorithm, u32, usize, Cfg); 8] = [
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
                ops: small,
            },
        ),
    ];
    for (name, alg, segment, len, cfg) in seeds {
        let mut data = cfg.bytes().to_vec();
        data.extend_from_slice(&stream(alg, cfg.aad, segment, len, len as u8));
        write(&o, name, &data);
    }
    let cfg = Cfg {
        capacity: 16,
        max_segment: 64,
        aad: b"",
        sizes: [0; 4],
        inject: 0,
        ops: small,
    };
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(b"cipherio\x01\x03\x00\x00");
    write(&o, "truncated-header", &data);
    let mut data = cfg.bytes().to_vec();
    data.extend_from_slice(&stream(Algorithm::Aes128Gcm, b"", 16, 50, 1)[..90]);
    write(&o, "truncated-segment", &data);

    // roundtrip: any bytes are an input; a few of different lengths.
    let r = dir("roundtrip");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
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
}
