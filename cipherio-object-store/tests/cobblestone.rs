//! Cobblestone objects through `EncryptedStore`: the stored bytes are the
//! format's (opened by `CipherReader` with a `CobblestoneKey`, as any
//! Cobblestone implementation reads them with the path as context), read
//! whole and by ranges across and at the chunk boundaries, and sized as
//! their plaintext.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::segments::PartLimits;
use cipherio_object_store::{
    EncryptedStore, Source, UploadOptions, cipher_error, complete_plan, create_plan,
    upload_parallel, upload_share,
};
use common::keyring::Keying;
use common::{cobblestone_key, data, raw, reader};
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};

const CHUNK: usize = CHUNK_SIZE;

/// Whether `e` is cipherio's refusal of bytes that do not authenticate.
fn unauthentic(e: &object_store::Error) -> bool {
    matches!(cipher_error(e), Some(cipherio::Error::Authentication))
}

fn store(inner: Arc<dyn ObjectStore>) -> EncryptedStore {
    EncryptedStore::cobblestone(inner, cobblestone_key())
}

/// The ranges read of a plaintext of `len` bytes: the first byte, across
/// the first boundary, the last byte, from a boundary to the end, all of
/// it, and the last chunk's bytes.
fn ranges(len: usize) -> Vec<std::ops::Range<u64>> {
    let len = len as u64;
    let chunk = CHUNK as u64;
    [
        0..1,
        chunk - 1..chunk + 1,
        len.saturating_sub(1)..len,
        chunk..len,
        0..len,
        len.saturating_sub(chunk)..len,
    ]
    .into_iter()
    .filter(|r| r.start < r.end && r.end <= len)
    .collect()
}

/// Every object written (put, put_multipart in pieces) at the lengths
/// around the chunk size: Cobblestone's bytes and length, read back whole,
/// by every range (each by a fresh store, so the header is learnt from the
/// range's own GET, and together), and sized by `head` and `list`; under
/// one key, and under a keyring (a data key per object: no one key reads
/// the stored bytes).
async fn cobblestone_objects_read_back(inner: Arc<dyn ObjectStore>, tag: &str) {
    for keying in [Keying::Cobblestone, Keying::Keyring] {
        let tag = format!("{tag}/{keying:?}");
        read_back(keying, keying.store(Arc::clone(&inner)), &tag).await;
    }
}

async fn read_back(keying: Keying, store: EncryptedStore, tag: &str) {
    let lengths = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK];
    for len in lengths {
        let pt = data(len, len as u64);
        let path = Path::from(format!("{tag}/put/{len}"));
        store.put(&path, pt.clone().into()).await.unwrap();
        let mpath = Path::from(format!("{tag}/multipart/{len}"));
        let mut w =
            WriteMultipart::new_with_chunk_size(store.put_multipart(&mpath).await.unwrap(), 5000);
        pt.chunks(7000).for_each(|c| w.write(c));
        w.finish().await.unwrap();
        for p in [&path, &mpath] {
            let stored = raw(store.inner().as_ref(), p).await;
            // Salt and commitment, then every chunk with its tag: a final
            // short one, empty after whole chunks.
            assert_eq!(stored.len(), 56 + len + 16 * (len / CHUNK + 1), "{p}");
            if keying == Keying::Cobblestone {
                assert_eq!(
                    reader(&cobblestone_key(), p.as_ref(), &stored).unwrap(),
                    pt,
                    "{p}"
                );
            }
            let got = store.get(p).await.unwrap().bytes().await.unwrap();
            assert_eq!(got, pt, "{p}");
            assert_eq!(store.head(p).await.unwrap().size, len as u64, "{p}");
            let ranges = ranges(len);
            for r in &ranges {
                let fresh = keying.store(Arc::clone(store.inner()));
                let got = fresh.get_range(p, r.clone()).await.unwrap();
                assert_eq!(&got[..], &pt[r.start as usize..r.end as usize], "{p} {r:?}");
            }
            let got = store.get_ranges(p, &ranges).await.unwrap();
            for (r, g) in ranges.iter().zip(got) {
                assert_eq!(&g[..], &pt[r.start as usize..r.end as usize], "{p} {r:?}");
            }
        }
    }
    let listed: Vec<_> = store
        .list(Some(&Path::parse(tag).unwrap()))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed.len(), 2 * lengths.len());
    for m in listed {
        let len: u64 = m.location.filename().unwrap().parse().unwrap();
        assert_eq!(m.size, len, "{}", m.location);
    }
}

#[tokio::test]
async fn cobblestone_objects_read_back_in_memory() {
    cobblestone_objects_read_back(Arc::new(InMemory::new()), "mem").await;
}

#[tokio::test]
async fn cobblestone_objects_read_back_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let inner = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    cobblestone_objects_read_back(Arc::new(inner), "fs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cobblestone_objects_read_back_from_s3() {
    let Some(s3) = common::s3("cobblestone") else {
        return;
    };
    cobblestone_objects_read_back(s3, "s3").await;
}

/// A Cobblestone object opens under its key and path only: another key,
/// or the same bytes at another path (another context), is refused by the
/// key commitment, and a native-format store does not read it.
#[tokio::test]
async fn a_cobblestone_object_opens_under_its_key_and_path_only() {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("a/object");
    let pt = data(CHUNK + 1, 1);
    store(Arc::clone(&inner))
        .put(&path, pt.clone().into())
        .await
        .unwrap();
    let moved = Path::from("b/object");
    inner
        .put(&moved, raw(inner.as_ref(), &path).await.into())
        .await
        .unwrap();
    let other = CobblestoneKey::new(Instantiation::Cobblestone256, &[7; 32]).unwrap();
    let cases = [
        (
            EncryptedStore::cobblestone(Arc::clone(&inner), other),
            &path,
        ),
        (store(Arc::clone(&inner)), &moved),
    ];
    for (s, p) in cases {
        let e = s.get(p).await.unwrap_err();
        assert!(unauthentic(&e), "{p}: {e}");
        let e = s
            .get_range(p, CHUNK as u64..CHUNK as u64 + 1)
            .await
            .unwrap_err();
        assert!(unauthentic(&e), "{p}: {e}");
    }
    let native = EncryptedStore::new(Arc::clone(&inner), common::key());
    assert!(native.get(&path).await.is_err());
    let got = common::whole(&store(inner), &path).await;
    assert_eq!(got, pt);
}

/// An object cut back to whole chunks and the first 16 bytes of the next
/// (what an empty final chunk would be) has a Cobblestone length, but a
/// read of its last bytes opens that forged final chunk and is refused:
/// the final chunk, empty or not, is fetched by every read that reaches
/// the end.
#[tokio::test]
async fn a_read_reaching_the_end_opens_the_final_chunk() {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("cut");
    let store = store(Arc::clone(&inner));
    store.put(&path, data(3 * CHUNK, 3).into()).await.unwrap();
    let stored = raw(inner.as_ref(), &path).await;
    let cut = stored[..56 + 2 * (CHUNK + 16) + 16].to_vec();
    inner.put(&path, cut.into()).await.unwrap();
    let end = 2 * CHUNK as u64;
    assert_eq!(store.head(&path).await.unwrap().size, end);
    for r in [CHUNK as u64..end, end - 1..end] {
        let e = store.get_range(&path, r.clone()).await.unwrap_err();
        assert!(unauthentic(&e), "{r:?}: {e}");
        let e = store
            .get_ranges(&path, &[0..1, r.clone()])
            .await
            .unwrap_err();
        assert!(unauthentic(&e), "{r:?}: {e}");
    }
}

/// Parallel uploads of Cobblestone objects, by one call and by a plan
/// shared by workers and completed without the key: the stored bytes are
/// Cobblestone's and read back through the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_uploads_of_cobblestone_objects_read_back() {
    let inner = Arc::new(InMemory::new());
    let mp: Arc<dyn MultipartStore> = inner.clone();
    let s = store(inner.clone());
    let options = UploadOptions {
        segment_size: CHUNK as u32,
        part_size: 3 * CHUNK as u64,
        limits: PartLimits::new(2 * CHUNK as u64, 10 * CHUNK as u64, 1000),
        workers: 2,
        ..UploadOptions::default()
    };
    for len in [0, 1, CHUNK, 3 * CHUNK, 7 * CHUNK + 5, 9 * CHUNK] {
        let pt = data(len, 5);
        let source: Source = Arc::new(pt.clone());
        let path = Path::from(format!("parallel/{len}"));
        upload_parallel(
            mp.clone(),
            &cobblestone_key(),
            &path,
            source.clone(),
            &options,
        )
        .await
        .unwrap();
        let planned = Path::from(format!("planned/{len}"));
        let plan = create_plan(&*mp, &cobblestone_key(), &planned, source.clone(), &options)
            .await
            .unwrap();
        let mut done = Vec::new();
        for worker in 0..2 {
            let share = common::share(&plan, worker, 2);
            let key = cobblestone_key();
            done.extend(
                upload_share(mp.clone(), &key, &plan, &share, source.clone(), 2)
                    .await
                    .unwrap(),
            );
        }
        complete_plan(&*mp, &plan, done).await.unwrap();
        for p in [&path, &planned] {
            let stored = raw(inner.as_ref(), p).await;
            assert_eq!(
                reader(&cobblestone_key(), p.as_ref(), &stored).unwrap(),
                pt,
                "{p}"
            );
            assert_eq!(s.get(p).await.unwrap().bytes().await.unwrap(), pt, "{p}");
        }
    }
}
