//! One encrypted upload shared by worker processes: the coordinator plans
//! the upload (a fresh header, parts of one size within S3's limits, each
//! part's plaintext MAC, read from the source file, and a MAC over the
//! plan, all of which the workers check) and starts the multipart upload;
//! each worker process (this
//! program with the `worker` argument) reads the plan (JSON), seals and
//! sends its share of the parts and prints the part ids (JSON); the
//! coordinator completes with the ordered list and reads the object back
//! through `EncryptedStore`.
//!
//! The store is a moto S3 server on loopback (started from
//! `s3-server.sh`). The key travels to the workers in the environment
//! (`CIPHERIO_KEY`, hex), never in the plan or on a command line.
//!
//! ```sh
//! cargo run --release --example parallel_upload -- [--workers 3] [--mib 40]
//! ```
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/moto.rs"]
mod moto;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use cipherio::{Algorithm, Key};
use cipherio_object_store::{
    EncryptedStore, PartDone, Source, UploadOptions, UploadPlan, complete_plan_checked,
    create_plan, upload_share,
};
use object_store::ObjectStoreExt;
use object_store::multipart::MultipartStore;
use object_store::path::Path;

const BUCKET: &str = "parallel-upload";

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().unwrap())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        worker(&args[1..]).await;
    } else {
        coordinator(&args).await;
    }
}

/// `worker PORT PLAN_FILE SOURCE_FILE INDEX COUNT`: sends the parts whose
/// number is INDEX modulo COUNT; prints their ids as JSON.
async fn worker(args: &[String]) {
    let [port, plan, source, index, count] = args else {
        panic!("worker PORT PLAN_FILE SOURCE_FILE INDEX COUNT");
    };
    let key = Key::from_hex(
        Algorithm::Aes256Gcm,
        &std::env::var("CIPHERIO_KEY").unwrap(),
    )
    .unwrap();
    let plan: UploadPlan = serde_json::from_slice(&std::fs::read(plan).unwrap()).unwrap();
    let (index, count): (u32, u32) = (index.parse().unwrap(), count.parse().unwrap());
    let share: Vec<u32> = plan
        .parts
        .iter()
        .map(|p| p.number)
        .filter(|n| n % count == index)
        .collect();
    let store: Arc<dyn MultipartStore> = Arc::new(moto::s3_client(port.parse().unwrap(), BUCKET));
    let source: Source = Arc::new(std::fs::File::open(source).unwrap());
    let done = upload_share(store, &key, &plan, &share, source, 2)
        .await
        .unwrap();
    serde_json::to_writer(std::io::stdout(), &done).unwrap();
}

async fn coordinator(args: &[String]) {
    let workers = arg(args, "--workers", 3);
    let mib = arg(args, "--mib", 40);
    let s3 = Arc::new(moto::bucket(BUCKET).unwrap_or_else(|e| panic!("no S3 server: {e}")));
    let port = moto::port().unwrap();
    let key = Key::generate(Algorithm::Aes256Gcm);

    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("plaintext");
    let plaintext: Vec<u8> = (0..mib << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&source, &plaintext).unwrap();

    let path = Path::from("uploads/shared.bin");
    let plan = create_plan(
        &*s3,
        &key,
        &path,
        Arc::new(std::fs::File::open(&source).unwrap()),
        &UploadOptions::default(),
    )
    .await
    .unwrap();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    println!(
        "plan: {} parts of {} MiB plaintext, upload {}",
        plan.parts.len(),
        mib,
        plan.upload_id
    );

    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..workers)
        .map(|i| {
            Command::new(&exe)
                .arg("worker")
                .arg(port.to_string())
                .arg(&plan_file)
                .arg(&source)
                .arg(i.to_string())
                .arg(workers.to_string())
                .env("CIPHERIO_KEY", hex::encode(key.as_bytes()))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut done: Vec<PartDone> = Vec::new();
    let mut failed = false;
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            let sent: Vec<PartDone> = serde_json::from_slice(&out.stdout).unwrap();
            println!(
                "worker process {i} ({}): sent parts {:?}",
                out.status,
                sent.iter().map(|d| d.number).collect::<Vec<_>>()
            );
            done.extend(sent);
        } else {
            println!("worker {i} failed: {}", out.status);
            failed = true;
        }
    }
    if failed {
        s3.abort_multipart(&path, &plan.upload_id).await.unwrap();
        panic!("a worker failed: upload aborted");
    }
    complete_plan_checked(&*s3, &key, &plan, done)
        .await
        .unwrap();

    let store = EncryptedStore::new(s3, key);
    let back = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(back, plaintext, "the object reads back");
    let range = store
        .get_range(&path, 12_345_678..12_345_700)
        .await
        .unwrap();
    assert_eq!(&range[..], &plaintext[12_345_678..12_345_700]);
    println!(
        "completed by {workers} processes; {} MiB read back and verified, GETs: {}",
        mib,
        store.get_requests()
    );
    std::io::stdout().flush().unwrap();
}
