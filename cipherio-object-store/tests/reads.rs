//! Reads and writes through `EncryptedStore` against `CipherReader` over
//! the downloaded bytes, GETs counted; parallel and planned uploads.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::sync::Arc;

use cipherio::segments::PartLimits;
use cipherio_object_store::{
    EncryptedStore, PartDone, Source, UploadOptions, UploadPlan, cipher_error, complete_plan,
    complete_plan_checked, create_plan, upload_parallel, upload_share,
};
use common::keyring::Keying;
use common::{data, key, raw, reader};
use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, WriteMultipart};

const SEG: usize = 1000;

fn store(inner: Arc<dyn ObjectStore>) -> EncryptedStore {
    EncryptedStore::new(inner, key())
        .with_segment_size(SEG as u32)
        .unwrap()
}

/// The stores the behaviour cases run through: a master key (native
/// segments of `SEG` bytes) and a keyring (a data key per object,
/// Cobblestone chunks).
const KEYINGS: [Keying; 2] = [Keying::Native, Keying::Keyring];

/// A store keyed as `keying`, over `inner`.
fn keyed(keying: Keying, inner: Arc<dyn ObjectStore>) -> EncryptedStore {
    match keying {
        Keying::Native => store(inner),
        _ => keying.store(inner),
    }
}

fn lengths() -> Vec<usize> {
    vec![0, 1, SEG - 1, SEG, SEG + 1, 3 * SEG, 7 * SEG + 5]
}

/// Every object the store writes (put, put_multipart in many pieces),
/// read by `CipherReader` from the inner store's bytes, and through the
/// store whole and by every range shape.
async fn writes_read_back(inner: Arc<dyn ObjectStore>, tag: &str) {
    for keying in KEYINGS {
        let tag = format!("{tag}/{keying:?}");
        read_back(keying, &keyed(keying, Arc::clone(&inner)), &tag).await;
    }
}

async fn read_back(keying: Keying, store: &EncryptedStore, tag: &str) {
    for len in lengths() {
        let pt = data(len, len as u64);
        let path = Path::from(format!("{tag}/put/{len}"));
        store.put(&path, pt.clone().into()).await.unwrap();
        let mpath = Path::from(format!("{tag}/multipart/{len}"));
        let mut w =
            WriteMultipart::new_with_chunk_size(store.put_multipart(&mpath).await.unwrap(), 333);
        pt.chunks(777).for_each(|c| w.write(c));
        w.finish().await.unwrap();
        for p in [&path, &mpath] {
            if keying == Keying::Native {
                let stored = raw(store.inner().as_ref(), p).await;
                assert_eq!(reader(&key(), p.as_ref(), &stored).unwrap(), pt, "{p}");
            }
            let got = store.get(p).await.unwrap().bytes().await.unwrap();
            assert_eq!(got, pt, "{p}");
            assert_eq!(store.head(p).await.unwrap().size, len as u64);
            for (a, b) in [
                (0, 1),
                (len / 3, len / 2 + 1),
                (len.saturating_sub(1), len),
                (SEG - 1, SEG + 1),
            ] {
                if a >= len || b <= a {
                    continue;
                }
                let b = b.min(len);
                let got = store.get_range(p, a as u64..b as u64).await.unwrap();
                assert_eq!(&got[..], &pt[a..b], "{p} {a}..{b}");
            }
            let ranges = [0..1, len as u64 / 2..len as u64, 3..4, 1..2];
            let ranges: Vec<_> = ranges
                .into_iter()
                .filter(|r| r.end <= len as u64 && r.start < r.end)
                .collect();
            let got = store.get_ranges(p, &ranges).await.unwrap();
            for (r, g) in ranges.iter().zip(got) {
                assert_eq!(&g[..], &pt[r.start as usize..r.end as usize], "{p} {r:?}");
            }
        }
    }
}

#[tokio::test]
async fn every_object_written_reads_back_in_memory() {
    writes_read_back(Arc::new(InMemory::new()), "mem").await;
}

#[tokio::test]
async fn every_object_written_reads_back_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let inner = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    writes_read_back(Arc::new(inner), "fs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_written_reads_back_from_s3() {
    let Some(s3) = common::s3("reads") else {
        return;
    };
    // S3's smallest part: put_multipart parts of 5 MiB; one object of
    // three parts besides the small ones.
    for keying in KEYINGS {
        let tag = format!("s3/{keying:?}");
        read_back(
            keying,
            &keyed(keying, s3.clone()).with_part_size(5 << 20),
            &tag,
        )
        .await;
    }
    let store = store(s3).with_part_size(5 << 20);
    let pt = data(11 << 20, 9);
    let path = Path::from("s3/big");
    let mut w = WriteMultipart::new(store.put_multipart(&path).await.unwrap());
    w.write(&pt);
    w.finish().await.unwrap();
    let stored = raw(store.inner().as_ref(), &path).await;
    assert_eq!(reader(&key(), path.as_ref(), &stored).unwrap(), pt);
    let got = store.get_range(&path, 6_000_000..6_000_010).await.unwrap();
    assert_eq!(&got[..], &pt[6_000_000..6_000_010]);
}

/// GETs sent for one ranged read past the first segment.
async fn gets_for(store: &EncryptedStore, path: &Path, at: u64) -> u64 {
    let before = store.get_requests();
    store.get_range(path, at..at + 10).await.unwrap();
    store.get_requests() - before
}

#[tokio::test]
async fn a_ranged_read_is_one_get_once_the_header_is_known() {
    let pt = data(20 * SEG, 3);
    let path = Path::from("counted");
    // The header in the metadata: one GET even cold.
    let s = store(Arc::new(InMemory::new()));
    s.put(&path, pt.clone().into()).await.unwrap();
    assert_eq!(
        gets_for(&s, &path, 5500).await,
        1,
        "cold, header in metadata"
    );
    assert_eq!(gets_for(&s, &path, 12_345).await, 1, "warm");
    // No metadata: two GETs cold (the header, then the segments), one warm.
    let s = store(Arc::new(InMemory::new())).with_header_attribute(false);
    s.put(&path, pt.clone().into()).await.unwrap();
    assert_eq!(gets_for(&s, &path, 5500).await, 2, "cold, no metadata");
    assert_eq!(gets_for(&s, &path, 12_345).await, 1, "warm");
    // A range in the first segment brings the header along: one GET cold.
    let s = store(Arc::new(InMemory::new()))
        .with_header_attribute(false)
        .with_header_cache(0);
    s.put(&path, pt.clone().into()).await.unwrap();
    assert_eq!(gets_for(&s, &path, 10).await, 1, "first segment");
    assert_eq!(gets_for(&s, &path, 5500).await, 2, "no cache, no metadata");
    // A whole get is one GET, and fills the cache.
    let s = store(Arc::new(InMemory::new())).with_header_attribute(false);
    s.put(&path, pt.clone().into()).await.unwrap();
    let before = s.get_requests();
    assert_eq!(s.get(&path).await.unwrap().bytes().await.unwrap(), pt);
    assert_eq!(s.get_requests() - before, 1);
    assert_eq!(gets_for(&s, &path, 5500).await, 1, "warm after a whole get");
    // get_ranges: close ranges share one GET.
    let before = s.get_requests();
    let got = s
        .get_ranges(&path, &[100..200, 3000..3100, 19_000..19_500])
        .await
        .unwrap();
    assert_eq!(s.get_requests() - before, 1);
    assert_eq!(&got[2][..], &pt[19_000..19_500]);
}

#[tokio::test]
async fn a_changed_object_is_read_afresh() {
    for keying in KEYINGS {
        let s = keyed(keying, Arc::new(InMemory::new())).with_header_attribute(false);
        let path = Path::from("changing");
        s.put(&path, data(10 * SEG, 1).into()).await.unwrap();
        s.get_range(&path, 5000..5010).await.unwrap();
        let new = data(10 * SEG, 2);
        // Written behind this store's back: its cache still holds the old
        // header, and the pinned GET refuses the new version.
        let other = keyed(keying, s.inner().clone()).with_header_attribute(false);
        other.put(&path, new.clone().into()).await.unwrap();
        assert_eq!(
            &s.get_range(&path, 5000..5010).await.unwrap()[..],
            &new[5000..5010]
        );
    }
}

#[tokio::test]
async fn an_authentication_failure_carries_cipherios_error() {
    let s = store(Arc::new(InMemory::new()));
    let path = Path::from("tampered");
    s.put(&path, data(5 * SEG, 1).into()).await.unwrap();
    let mut bytes = raw(s.inner().as_ref(), &path).await;
    bytes[53 + 2 * (SEG + 16) + 7] ^= 1; // inside segment 2
    s.inner().put(&path, bytes.into()).await.unwrap();
    let err = s.get(&path).await.unwrap().bytes().await.unwrap_err();
    assert!(
        matches!(cipher_error(&err), Some(cipherio::Error::Authentication)),
        "{err}"
    );
    let err = s
        .get_range(&path, 2 * SEG as u64..2 * SEG as u64 + 1)
        .await
        .unwrap_err();
    assert!(
        matches!(cipher_error(&err), Some(cipherio::Error::Authentication)),
        "{err}"
    );
    // Segments before the tampered one still read.
    s.get_range(&path, 0..SEG as u64).await.unwrap();
    // The source survives object_store's conversion to io::Error.
    let io = std::io::Error::from(err);
    let inner = io
        .get_ref()
        .unwrap()
        .downcast_ref::<object_store::Error>()
        .unwrap();
    assert!(matches!(
        cipher_error(inner),
        Some(cipherio::Error::Authentication)
    ));
}

fn small_limits() -> UploadOptions {
    UploadOptions {
        segment_size: SEG as u32,
        part_size: 3 * SEG as u64,
        limits: PartLimits::new(2 * SEG as u64, 10 * SEG as u64, 1000),
        ..UploadOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_uploads_read_back_with_any_number_of_workers() {
    let inner = Arc::new(InMemory::new());
    let s = store(inner.clone());
    for workers in [1, 2, 4] {
        for len in lengths() {
            let pt = data(len, workers as u64);
            let path = Path::from(format!("parallel/{workers}/{len}"));
            let options = UploadOptions {
                workers,
                ..small_limits()
            };
            let source: Source = Arc::new(pt.clone());
            let mp: Arc<dyn MultipartStore> = inner.clone();
            upload_parallel(mp, &key(), &path, source, &options)
                .await
                .unwrap();
            let stored = raw(inner.as_ref(), &path).await;
            assert_eq!(
                reader(&key(), path.as_ref(), &stored).unwrap(),
                pt,
                "{path}"
            );
            assert_eq!(s.get(&path).await.unwrap().bytes().await.unwrap(), pt);
        }
    }
}

/// A source of `len` bytes that fails at one offset.
struct FailsAt(u64, u64);

impl cipherio::ReadAt for FailsAt {
    fn source_len(&self) -> std::io::Result<u64> {
        Ok(self.1)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        if offset == self.0 {
            return Err(std::io::Error::other("disk on fire"));
        }
        buf.fill(7);
        Ok(buf.len())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_parallel_upload_is_aborted_and_leaves_no_object() {
    let Some(s3) = common::s3("aborted") else {
        return;
    };
    let path = Path::from("aborted");
    let options = UploadOptions {
        part_size: 5 << 20,
        ..UploadOptions::default()
    };
    let plan_len = 30u64 << 20;
    let mp: Arc<dyn MultipartStore> = s3.clone();
    // The fourth part's plaintext cannot be read.
    let probe = create_plan(
        &*s3,
        &key(),
        &path,
        Arc::new(FailsAt(u64::MAX, plan_len)),
        &options,
    )
    .await
    .unwrap();
    s3.abort_multipart(&path, &probe.upload_id).await.unwrap();
    let at = probe.parts[3].plaintext_start;
    let err = upload_parallel(mp, &key(), &path, Arc::new(FailsAt(at, plan_len)), &options)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disk on fire"), "{err}");
    let err = s3.head(&path).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
    // Aborted: moto lists no upload in progress.
    assert_eq!(common::moto::uploads_in_progress("aborted"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_shared_by_workers_completes_as_one_object() {
    let inner = Arc::new(InMemory::new());
    let path = Path::from("planned");
    let len = 23 * SEG + 17;
    let pt = data(len, 5);
    let plan = create_plan(
        &*inner,
        &key(),
        &path,
        Arc::new(pt.clone()),
        &small_limits(),
    )
    .await
    .unwrap();
    assert!(plan.parts.len() >= 4);
    // The plan travels as JSON; each of three workers takes every third part.
    let json = serde_json::to_string(&plan).unwrap();
    let mut done: Vec<PartDone> = Vec::new();
    for w in 0..3u32 {
        let plan: UploadPlan = serde_json::from_str(&json).unwrap();
        let share = common::share(&plan, w, 3);
        let mp: Arc<dyn MultipartStore> = inner.clone();
        let sent = upload_share(mp, &key(), &plan, &share, Arc::new(pt.clone()), 2)
            .await
            .unwrap();
        let sent_json = serde_json::to_string(&sent).unwrap();
        done.extend(serde_json::from_str::<Vec<PartDone>>(&sent_json).unwrap());
    }
    // A part missing is refused before the store sees the list.
    let missing = done[1..].to_vec();
    assert!(
        complete_plan_checked(&*inner, &key(), &plan, missing)
            .await
            .is_err()
    );
    complete_plan_checked(&*inner, &key(), &plan, done)
        .await
        .unwrap();
    let stored = raw(inner.as_ref(), &path).await;
    assert_eq!(reader(&key(), path.as_ref(), &stored).unwrap(), pt);
}

/// `create_plan` and `complete_plan` take the arguments they took before
/// plans carried plaintext MACs: a plan made from a `u64` length carries
/// none (nor its JSON the field), one made from a `Source` carries each
/// part's; both travel as JSON, upload, complete without the key and read
/// back.
#[tokio::test]
async fn a_plan_is_made_from_a_length_or_from_the_source() {
    let inner = Arc::new(InMemory::new());
    let store: Arc<dyn MultipartStore> = inner.clone();
    let (key, opts) = (key(), small_limits());
    let pt = data(23 * SEG + 17, 9);
    for from_source in [false, true] {
        let path = Path::from(format!("compat/{from_source}"));
        let source: Source = Arc::new(pt.clone());
        let plan = if from_source {
            create_plan(&*store, &key, &path, Arc::clone(&source), &opts).await
        } else {
            let len = pt.len() as u64;
            create_plan(&*store, &key, &path, len, &opts).await
        }
        .unwrap();
        assert!(plan.parts.len() >= 4);
        for part in &plan.parts {
            assert_eq!(part.plaintext_mac.is_some(), from_source, "{part:?}");
        }
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(json.contains("plaintext_mac"), from_source);
        let plan: UploadPlan = serde_json::from_str(&json).unwrap();
        let all: Vec<u32> = plan.parts.iter().map(|p| p.number).collect();
        let done = upload_share(Arc::clone(&store), &key, &plan, &all, source, 2)
            .await
            .unwrap();
        complete_plan(&*store, &plan, done).await.unwrap();
        let stored = raw(inner.as_ref(), &path).await;
        assert_eq!(reader(&key, path.as_ref(), &stored).unwrap(), pt);
    }
}

/// `copy(a, a)` and `rename(a, a)` leave the object byte for byte as it
/// was, path bound or not, over a store whose own rename of an object
/// onto itself deletes it (`InMemory`) and one whose does not
/// (`LocalFileSystem`); the `Create` modes say it exists.
#[tokio::test]
async fn copy_or_rename_onto_itself_leaves_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let local = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    let inners: [Arc<dyn ObjectStore>; 2] = [Arc::new(InMemory::new()), Arc::new(local)];
    for (inner, keying) in inners
        .into_iter()
        .flat_map(|i| KEYINGS.map(|k| (i.clone(), k)))
    {
        for bind in [true, false] {
            let s = keyed(keying, inner.clone()).with_path_binding(bind);
            let path = Path::from(format!("itself/{keying:?}/{bind}"));
            let pt = data(3 * SEG + 5, 8);
            s.put(&path, pt.clone().into()).await.unwrap();
            let before = raw(inner.as_ref(), &path).await;
            s.copy(&path, &path).await.unwrap();
            s.rename(&path, &path).await.unwrap();
            assert!(s.copy_if_not_exists(&path, &path).await.is_err());
            assert!(s.rename_if_not_exists(&path, &path).await.is_err());
            assert_eq!(
                raw(inner.as_ref(), &path).await,
                before,
                "{inner} bind {bind}"
            );
            assert_eq!(s.get(&path).await.unwrap().bytes().await.unwrap(), pt);
        }
    }
}

/// An object whose length no stream has (cut a few bytes into its final
/// tag) is refused as truncated from its length: a ranged read fetches
/// only what it asked for, a whole read only the header's chunk.
#[tokio::test]
async fn an_impossible_length_is_named_without_downloading_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn ObjectStore> =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let writer = store(inner.clone());
    let path = Path::from("impossible");
    writer
        .put(&path, data(200 * SEG + 10, 9).into())
        .await
        .unwrap();
    let mut stream = raw(inner.as_ref(), &path).await;
    stream.truncate(stream.len() - 15);
    inner.put(&path, stream.clone().into()).await.unwrap();
    assert_eq!(
        reader(&key(), path.as_ref(), &stream),
        Err(cipherio::Error::Truncated)
    );

    // `read` is refused as truncated, having fetched at most `most` bytes.
    let refused = |s: &EncryptedStore, read: object_store::Result<()>, most: u64| {
        let err = read.unwrap_err();
        assert!(
            matches!(cipher_error(&err), Some(cipherio::Error::Truncated)),
            "{err}"
        );
        assert!(s.bytes_fetched() <= most, "{}", s.bytes_fetched());
    };
    let s = store(inner.clone());
    // One segment and the header asked for, whatever the object's size.
    let read = s.get_range(&path, 0..SEG as u64).await.map(drop);
    refused(&s, read, 2 * (SEG as u64 + 16) + 53);
    let read = s.get(&path).await.map(drop);
    refused(&s, read, stream.len() as u64 / 4);
    // A read from an offset, its header not cached: the first GET asks
    // for the rest of the object, but only its first chunk is read.
    let s = store(inner.clone());
    let from = GetOptions {
        range: Some(GetRange::Offset(100)),
        ..GetOptions::default()
    };
    let read = s.get_opts(&path, from).await.map(drop);
    refused(&s, read, stream.len() as u64 / 4);
}

/// Listings never fail because of one object that is not a cipherio
/// stream (a 0- or 1-byte marker: size 0), and `list`, `list_with_offset`
/// and `list_with_delimiter` size every object alike: an object written
/// with another segment size, once its header is cached, by its header.
#[tokio::test]
async fn listings_size_alike_and_survive_foreign_objects() {
    let inner = Arc::new(InMemory::new());
    let s = store(inner.clone());
    let other = EncryptedStore::new(inner.clone(), key())
        .with_segment_size(4 * SEG as u32)
        .unwrap();
    s.put(&Path::from("l/a"), data(5 * SEG + 3, 1).into())
        .await
        .unwrap();
    other
        .put(&Path::from("l/b"), data(9 * SEG + 7, 2).into())
        .await
        .unwrap();
    inner
        .put(&Path::from("l/marker0"), Vec::new().into())
        .await
        .unwrap();
    inner
        .put(&Path::from("l/marker1"), vec![1].into())
        .await
        .unwrap();
    // Reading `l/b` caches its header: its size is then its own.
    s.get_range(&Path::from("l/b"), 0..10).await.unwrap();
    let prefix = Path::from("l");
    let sizes = |metas: Vec<object_store::ObjectMeta>| {
        let mut v: Vec<(String, u64)> = metas
            .into_iter()
            .map(|m| (m.location.to_string(), m.size))
            .collect();
        v.sort();
        v
    };
    let listed = sizes(s.list(Some(&prefix)).map(Result::unwrap).collect().await);
    let offset = sizes(
        s.list_with_offset(Some(&prefix), &Path::from("l/"))
            .map(Result::unwrap)
            .collect()
            .await,
    );
    let delimited = sizes(s.list_with_delimiter(Some(&prefix)).await.unwrap().objects);
    let want: Vec<(String, u64)> = [
        ("l/a", 5 * SEG as u64 + 3),
        ("l/b", 9 * SEG as u64 + 7),
        ("l/marker0", 0),
        ("l/marker1", 0),
    ]
    .iter()
    .map(|(p, n)| (p.to_string(), *n))
    .collect();
    assert_eq!(listed, want);
    assert_eq!(offset, want);
    assert_eq!(delimited, want);
}

/// `Debug` of a store says how many headers it caches, not the paths.
#[tokio::test]
async fn debug_prints_no_cached_paths() {
    for keying in KEYINGS {
        let s = keyed(keying, Arc::new(InMemory::new()));
        for i in 0..20 {
            let path = Path::from(format!("secret-name-{i}"));
            s.put(&path, data(10, i).into()).await.unwrap();
            s.get_range(&path, 0..1).await.unwrap();
        }
        let debug = format!("{s:?}");
        assert!(!debug.contains("secret-name"), "{debug}");
        assert!(debug.contains("len: 20"), "{debug}");
    }
}
