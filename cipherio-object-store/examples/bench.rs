//! Uploads and random reads on a loopback S3 server (moto): a file
//! uploaded encrypted by `upload_parallel` with 1, 2 and 4 workers, by the
//! sequential `AsyncCipherWriter` over `object_store`'s `BufWriter`, and
//! unencrypted over the same `BufWriter` (the ceiling); then random 4 KiB
//! reads through `EncryptedStore` (GETs per read, bytes fetched per byte
//! asked), each beside the same read of a plaintext copy through
//! `object_store` alone, with the ratio read by read; then the per-object
//! cost of a keyring (a data key per object, its record beside it) beside
//! one key of the same format: PUTs and whole GETs of small objects, the
//! data key cached and not. The variants are interleaved by round;
//! medians, min–max and ratios come from one run.
//!
//! ```sh
//! cargo run --release --example bench -- [--quick | --smoke]
//! ```
//! Full: a 1 GiB file, 3 rounds, 1000 reads, 200 small objects; `--quick`:
//! 128 MiB, 3 rounds, 200 reads, 50 objects; `--smoke`: 16 MiB, 1 round, 20
//! reads, 5 objects, and every variant's object read back and compared.
#![allow(clippy::unwrap_used, clippy::cast_precision_loss)]

#[path = "../tests/common/moto.rs"]
mod moto;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cipherio::cobblestone::{CobblestoneKey, Instantiation};
use cipherio::{Algorithm, CipherWriter, Key};
use cipherio_object_store::{
    EncryptedStore, Keyring, LocalKek, Source, UploadOptions, upload_parallel,
};
use object_store::buffered::BufWriter;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy, Debug)]
enum Variant {
    Plaintext,
    Sequential,
    Parallel(usize),
}

impl Variant {
    fn name(self) -> String {
        match self {
            Variant::Plaintext => "plaintext, BufWriter (ceiling)".into(),
            Variant::Sequential => "AsyncCipherWriter over BufWriter".into(),
            Variant::Parallel(n) => format!(
                "upload_parallel, {n} worker{}",
                if n == 1 { "" } else { "s" }
            ),
        }
    }
}

const SEGMENT: usize = 64 << 10;
const PART: usize = 16 << 20;

async fn upload(
    variant: Variant,
    s3: &Arc<object_store::aws::AmazonS3>,
    key: &Key,
    file: &std::path::Path,
    path: &Path,
) {
    match variant {
        Variant::Plaintext | Variant::Sequential => {
            let store: Arc<dyn ObjectStore> = s3.clone();
            let buf = BufWriter::with_capacity(store, path.clone(), PART).with_max_concurrency(4);
            let mut input = tokio::fs::File::open(file).await.unwrap();
            let mut chunk = vec![0; 1 << 20];
            if let Variant::Plaintext = variant {
                let mut out = buf;
                copy(&mut input, &mut out, &mut chunk).await;
                out.shutdown().await.unwrap();
            } else {
                let mut out = CipherWriter::builder(key)
                    .capacity(SEGMENT)
                    .associated_data(path.as_ref().as_bytes())
                    .build_async(buf);
                copy(&mut input, &mut out, &mut chunk).await;
                out.shutdown().await.unwrap();
            }
        }
        Variant::Parallel(workers) => {
            let options = UploadOptions {
                workers,
                part_size: PART as u64,
                ..UploadOptions::default()
            };
            let source: Source = Arc::new(std::fs::File::open(file).unwrap());
            let mp: Arc<dyn MultipartStore> = s3.clone();
            upload_parallel(mp, key, path, source, &options)
                .await
                .unwrap();
        }
    }
}

async fn copy(
    input: &mut tokio::fs::File,
    out: &mut (impl AsyncWriteExt + Unpin),
    chunk: &mut [u8],
) {
    loop {
        let n = input.read(chunk).await.unwrap();
        if n == 0 {
            break;
        }
        out.write_all(&chunk[..n]).await.unwrap();
    }
}

fn stats(times: &mut [Duration]) -> (f64, f64, f64) {
    times.sort();
    let s = |d: Duration| d.as_secs_f64();
    (
        s(times[times.len() / 2]),
        s(times[0]),
        s(times[times.len() - 1]),
    )
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let quick = args.iter().any(|a| a == "--quick");
    let (mib, rounds, reads, objects) = if smoke {
        (16, 1, 20, 5)
    } else if quick {
        (128, 3, 200, 50)
    } else {
        (1024, 3, 1000, 200)
    };
    let s3 = Arc::new(moto::bucket("bench").unwrap_or_else(|e| panic!("no S3 server: {e}")));
    let key = Key::generate(Algorithm::Aes256Gcm);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plaintext");
    let len = (mib as u64) << 20;
    let plaintext: Vec<u8> = (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &plaintext).unwrap();

    let variants = [
        Variant::Plaintext,
        Variant::Sequential,
        Variant::Parallel(1),
        Variant::Parallel(2),
        Variant::Parallel(4),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let store = EncryptedStore::new(s3.clone(), key.clone());
    for round in 0..rounds {
        // Interleaved, the starting variant rotated by round.
        for k in 0..variants.len() {
            let i = (k + round) % variants.len();
            let path = Path::from(format!("bench/{round}/{i}"));
            let t = Instant::now();
            upload(variants[i], &s3, &key, &file, &path).await;
            times[i].push(t.elapsed());
            if smoke {
                let back = match variants[i] {
                    Variant::Plaintext => s3.get(&path).await.unwrap().bytes().await.unwrap(),
                    _ => store.get(&path).await.unwrap().bytes().await.unwrap(),
                };
                assert!(
                    back == plaintext,
                    "{} does not read back",
                    variants[i].name()
                );
            }
            s3.delete(&path).await.unwrap();
        }
    }
    let ceiling = stats(&mut times[0].clone()).0;
    println!("## Upload of {mib} MiB to moto on loopback ({rounds} rounds, interleaved)\n");
    println!("| variant | median s | min–max s | MiB/s | time ÷ plaintext |");
    println!("|---|---|---|---|---|");
    for (v, t) in variants.iter().zip(times.iter_mut()) {
        let (med, min, max) = stats(t);
        println!(
            "| {} | {med:.2} | {min:.2}–{max:.2} | {:.0} | {:.2} |",
            v.name(),
            mib as f64 / med,
            med / ceiling
        );
    }

    // Random 4 KiB reads of one object through a fresh store (nothing
    // cached), each beside the same read of the plaintext object through
    // object_store alone: the two interleaved, which goes first alternating.
    let path = Path::from("bench/reads");
    let plain_path = Path::from("bench/reads-plaintext");
    upload(Variant::Parallel(4), &s3, &key, &file, &path).await;
    upload(Variant::Plaintext, &s3, &key, &file, &plain_path).await;
    let reader = EncryptedStore::new(s3.clone(), key.clone());
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let (mut lat, mut plain_lat, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..reads {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = x % (len - 4096);
        let want = &plaintext[at as usize..at as usize + 4096];
        let (mut enc, mut plain) = (Duration::ZERO, Duration::ZERO);
        for encrypted in [i % 2 == 0, i % 2 == 1] {
            let t = Instant::now();
            let got = if encrypted {
                reader.get_range(&path, at..at + 4096).await.unwrap()
            } else {
                s3.get_range(&plain_path, at..at + 4096).await.unwrap()
            };
            let took = t.elapsed();
            assert_eq!(&got[..], want);
            *(if encrypted { &mut enc } else { &mut plain }) = took;
        }
        lat.push(enc);
        plain_lat.push(plain);
        ratios.push(enc.as_secs_f64() / plain.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let ratio = (
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
    println!("\n## {reads} random 4 KiB reads of the {mib} MiB object (64 KiB segments)\n");
    println!("| reader | GETs per read | bytes fetched ÷ bytes asked | median ms | min–max ms |");
    println!("|---|---|---|---|---|");
    let (med, min, max) = stats(&mut plain_lat);
    println!(
        "| object_store, plaintext | 1 | 1.00 | {:.2} | {:.2}–{:.2} |",
        med * 1e3,
        min * 1e3,
        max * 1e3
    );
    let (med, min, max) = stats(&mut lat);
    println!(
        "| EncryptedStore | {:.3} | {:.2} | {:.2} | {:.2}–{:.2} |",
        reader.get_requests() as f64 / reads as f64,
        reader.bytes_fetched() as f64 / (reads * 4096) as f64,
        med * 1e3,
        min * 1e3,
        max * 1e3
    );
    println!(
        "\nEncryptedStore ÷ plaintext, read by read: median {:.2}, min–max {:.2}–{:.2}",
        ratio.0, ratio.1, ratio.2
    );
    s3.delete(&plain_path).await.unwrap();
    s3.delete(&path).await.unwrap();
    per_object(&s3, objects, smoke).await;
}

/// The bytes of each small object of [`per_object`].
const SMALL: usize = 64 << 10;

/// PUTs and whole GETs of `objects` small objects under one Cobblestone
/// key and under a keyring (the same format, a data key per object),
/// interleaved object by object: what a keyring adds to each (a ranged
/// GET and a PUT per `put`; a GET and an unwrap per uncached `get`).
async fn per_object(s3: &Arc<object_store::aws::AmazonS3>, objects: usize, smoke: bool) {
    let one_key = EncryptedStore::cobblestone(
        s3.clone(),
        CobblestoneKey::generate(Instantiation::Cobblestone256),
    );
    let mut kek = [0; 32];
    getrandom::fill(&mut kek).unwrap();
    let keyring = Keyring::new(Arc::new(LocalKek::new("bench", kek)));
    let keyed = EncryptedStore::with_keyring(s3.clone(), keyring.clone());
    // A whole GET opens the header it brings: the writers read with the
    // data keys their puts cached; the uncached reader unwraps each one.
    let uncached =
        EncryptedStore::with_keyring(s3.clone(), keyring).with_key_cache(0, Duration::ZERO);
    let readers = [&one_key, &keyed, &uncached];
    let rows = [
        "put, one key",
        "put, keyring",
        "get, one key",
        "get, keyring, data key cached",
        "get, keyring, data key not cached",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    let body = vec![0x5a; SMALL];
    for i in 0..objects {
        for (row, store) in [&one_key, &keyed].into_iter().enumerate() {
            let path = Path::from(format!("bench/small/{row}/{i}"));
            let t = Instant::now();
            store.put(&path, body.clone().into()).await.unwrap();
            times[row].push(t.elapsed());
        }
    }
    let mut gets = [0u64; 3];
    for i in 0..objects {
        for (k, reader) in readers.into_iter().enumerate() {
            let path = Path::from(format!("bench/small/{}/{i}", k.min(1)));
            let before = reader.get_requests();
            let t = Instant::now();
            let got = reader.get(&path).await.unwrap().bytes().await.unwrap();
            times[2 + k].push(t.elapsed());
            gets[k] += reader.get_requests() - before;
            if smoke {
                assert!(got == body, "{} does not read back", rows[2 + k]);
            }
        }
    }
    println!(
        "\n## Per object: {objects} objects of {} KiB, one key and a keyring\n",
        SMALL >> 10
    );
    println!("| operation | median ms | min–max ms | GETs per op | time ÷ one key |");
    println!("|---|---|---|---|---|");
    let medians: Vec<f64> = times.iter_mut().map(|t| stats(t).0).collect();
    for (row, t) in times.iter_mut().enumerate() {
        let (med, min, max) = stats(t);
        let base = medians[if row < 2 { 0 } else { 2 }];
        let gets = if row < 2 {
            "-".to_string()
        } else {
            format!("{:.2}", gets[row - 2] as f64 / objects as f64)
        };
        println!(
            "| {} | {:.2} | {:.2}–{:.2} | {gets} | {:.2} |",
            rows[row],
            med * 1e3,
            min * 1e3,
            max * 1e3,
            med / base
        );
    }
    for row in 0..2 {
        for i in 0..objects {
            let store = if row == 0 { &one_key } else { &keyed };
            store
                .delete(&Path::from(format!("bench/small/{row}/{i}")))
                .await
                .unwrap();
        }
    }
}
