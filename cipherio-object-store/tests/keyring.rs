//! Keyrings: a data key per object, wrapped by key-encryption keys, in a
//! key record beside the object; rotation by rewrap, without moving data;
//! every attack on the records refused with a typed cause, over
//! `InMemory` and `LocalFileSystem`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use cipherio::cobblestone::CHUNK_SIZE;
use cipherio::segments::PartLimits;
use cipherio_object_store::{
    EncryptedStore, KeyEncryptionKey, Keyring, KeyringError, LocalKek, Source, UploadOptions,
    UploadPlan, cipher_error, complete_plan_with_keyring, keyring_error, upload_share_with_keyring,
};
use common::faults::Faulty;
use common::keyring::inners;
use common::keyring::{CountingKek, kek, keyring, record_of, records_of};
use common::{data, raw};
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions};

/// The keyring error a read of `path` through `store` fails with (whole
/// and ranged alike).
async fn refused(store: &EncryptedStore, path: &Path) -> KeyringError {
    let whole = store.get(path).await.unwrap_err();
    let ranged = store.get_range(path, 5..10).await.unwrap_err();
    let cause = keyring_error(&whole).unwrap_or_else(|| panic!("{path}: {whole}"));
    assert_eq!(keyring_error(&ranged), Some(cause), "{path}: {ranged}");
    cause.clone()
}

/// Two objects, `a` and `b`, written through the default keyring.
async fn two_objects(inner: &Arc<dyn ObjectStore>) -> (Path, Path) {
    let store = EncryptedStore::with_keyring(Arc::clone(inner), keyring());
    let (a, b) = (Path::from("dir/a"), Path::from("dir/b"));
    store.put(&a, data(3 * CHUNK_SIZE, 1).into()).await.unwrap();
    store.put(&b, data(3 * CHUNK_SIZE, 2).into()).await.unwrap();
    (a, b)
}

/// Puts the key record of `b` in place of the one of `a`.
async fn swap_records(inner: &Arc<dyn ObjectStore>, a: &Path, b: &Path) {
    let (ra, rb) = (
        record_of(inner.as_ref(), a).await,
        record_of(inner.as_ref(), b).await,
    );
    inner
        .put(&ra, raw(inner.as_ref(), &rb).await.into())
        .await
        .unwrap();
}

/// A fresh store over `inner` with the default keyring: nothing cached.
fn fresh(inner: &Arc<dyn ObjectStore>) -> EncryptedStore {
    EncryptedStore::with_keyring(Arc::clone(inner), keyring())
}

#[tokio::test]
async fn a_local_kek_unwraps_only_its_own_keys_in_their_context() {
    let (k1, k2) = (kek("one"), kek("two"));
    let wrapped = k1.wrap(&[9; 32], b"context").await.unwrap();
    assert_eq!(&*k1.unwrap(&wrapped, b"context").await.unwrap(), &[9; 32]);
    // Two wraps of one key differ (a fresh nonce each).
    assert_ne!(wrapped, k1.wrap(&[9; 32], b"context").await.unwrap());
    for (kek, context) in [(&k1, &b"another"[..]), (&k2, b"context")] {
        let e = kek.unwrap(&wrapped, context).await.unwrap_err();
        let want = KeyringError::Unwrap {
            kek: kek.id().into(),
        };
        assert_eq!(keyring_error(&e), Some(&want), "{e}");
    }
    let mut flipped = wrapped.clone();
    flipped[20] ^= 1;
    assert!(keyring_error(&k1.unwrap(&flipped, b"context").await.unwrap_err()).is_some());
    let shown = format!("{:?}", LocalKek::new("named", [0xab; 32]));
    assert!(shown.contains("named") && !shown.contains("ab, ") && !shown.contains("171"));
}

#[tokio::test]
async fn each_object_has_its_own_data_key_in_one_record_that_follows_it() {
    for (inner, _dir) in inners() {
        let store = fresh(&inner);
        let (a, b) = two_objects(&inner).await;
        // Same plaintext length, two data keys: two headers.
        let (ra, rb) = (raw(inner.as_ref(), &a).await, raw(inner.as_ref(), &b).await);
        assert_ne!(ra[..56], rb[..56]);
        // Listings show the objects alone.
        let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
        assert_eq!(listed.len(), 2, "{listed:?}");
        let dir = store
            .list_with_delimiter(Some(&Path::from("dir")))
            .await
            .unwrap();
        assert_eq!(dir.objects.len(), 2, "{dir:?}");
        let offset: Vec<_> = store
            .list_with_offset(None, &a)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(offset.len(), 1, "{offset:?}");
        // An overwrite leaves one record (the new one); a refused
        // create-only put leaves it too.
        store.put(&a, data(10, 3).into()).await.unwrap();
        let first = record_of(inner.as_ref(), &a).await;
        let create = PutOptions::from(PutMode::Create);
        assert!(store.put_opts(&a, data(5, 4).into(), create).await.is_err());
        assert_eq!(record_of(inner.as_ref(), &a).await, first);
        assert_eq!(raw(&store, &a).await, data(10, 3));
        // A rename takes the record along, a delete deletes it.
        let c = Path::from("dir/c");
        store.rename(&a, &c).await.unwrap();
        assert!(records_of(inner.as_ref(), &a).await.is_empty());
        record_of(inner.as_ref(), &c).await;
        assert_eq!(raw(&store, &c).await, data(10, 3));
        store.delete(&c).await.unwrap();
        store.delete(&b).await.unwrap();
        let left: Vec<_> = inner.list(None).try_collect().await.unwrap();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[tokio::test]
async fn two_hundred_ranged_reads_cost_one_unwrap() {
    let counting = CountingKek::new("primary");
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("read/often");
    let pt = data(10 * CHUNK_SIZE, 5);
    let keyring = Keyring::new(counting.clone());
    EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone())
        .put(&path, pt.clone().into())
        .await
        .unwrap();
    // No header cache: every read opens the header again, and only the
    // data key cache spares the unwraps.
    let reads = |store: EncryptedStore| {
        let (path, pt) = (path.clone(), pt.clone());
        async move {
            for i in 0..200u64 {
                let at = i * 811 % (pt.len() as u64 - 10);
                let got = store.get_range(&path, at..at + 10).await.unwrap();
                assert_eq!(&got[..], &pt[at as usize..at as usize + 10]);
            }
        }
    };
    let cold =
        || EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone()).with_header_cache(0);
    reads(cold()).await;
    assert_eq!(counting.unwraps(), 1);
    reads(cold().with_key_cache(0, Duration::from_secs(60))).await;
    assert_eq!(counting.unwraps(), 201, "no cache: one unwrap per read");
    reads(cold().with_key_cache(8, Duration::ZERO)).await;
    assert_eq!(
        counting.unwraps(),
        401,
        "expired at once: one unwrap per read"
    );
}

#[tokio::test]
async fn rewrap_moves_the_key_not_the_data() {
    let (old, new) = (kek("old"), kek("new"));
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let inner: Arc<dyn ObjectStore> = faulty.clone();
    let path = Path::from("big/object");
    let pt = data(4 << 20, 6);
    EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old.clone()))
        .put(&path, pt.clone().into())
        .await
        .unwrap();
    let before = raw(inner.as_ref(), &path).await;
    let rotated = EncryptedStore::with_keyring(
        Arc::clone(&inner),
        Keyring::new(new.clone()).with_older(old.clone()),
    );
    let traffic = faulty.traffic.load(std::sync::atomic::Ordering::SeqCst);
    rotated.rewrap(&path).await.unwrap();
    let moved = faulty.traffic.load(std::sync::atomic::Ordering::SeqCst) - traffic;
    assert!(moved <= 16 << 10, "{moved} bytes for a rewrap");
    assert_eq!(
        raw(inner.as_ref(), &path).await,
        before,
        "the data is not moved"
    );
    // Already under the primary: nothing written.
    let traffic = faulty.traffic.load(std::sync::atomic::Ordering::SeqCst);
    rotated.rewrap(&path).await.unwrap();
    let again = faulty.traffic.load(std::sync::atomic::Ordering::SeqCst) - traffic;
    assert!(again < moved, "{again} bytes for a second rewrap");
    // The old KEK alone reads nothing; the new one alone reads it all.
    let only_old = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old));
    assert_eq!(
        refused(&only_old, &path).await,
        KeyringError::UnknownKek { kek: "new".into() }
    );
    let only_new = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(new));
    let got = raw(&only_new, &path).await;
    assert_eq!(got, pt);
}

#[tokio::test]
async fn a_wrapped_key_swapped_between_objects_is_refused() {
    for (inner, _dir) in inners() {
        let (a, b) = two_objects(&inner).await;
        swap_records(&inner, &a, &b).await;
        let want = KeyringError::Unwrap {
            kek: "primary".into(),
        };
        assert_eq!(refused(&fresh(&inner), &a).await, want);
    }
}

#[tokio::test]
async fn an_edited_kek_id_is_refused() {
    for (inner, _dir) in inners() {
        let (a, _) = two_objects(&inner).await;
        let ra = record_of(inner.as_ref(), &a).await;
        let record = String::from_utf8(raw(inner.as_ref(), &ra).await).unwrap();
        let keyring = keyring().with_older(kek("older"));
        for (id, want) in [
            (
                "older",
                KeyringError::Unwrap {
                    kek: "older".into(),
                },
            ),
            (
                "nobody",
                KeyringError::UnknownKek {
                    kek: "nobody".into(),
                },
            ),
        ] {
            let edited = record.replace("\"primary\"", &format!("\"{id}\""));
            assert_ne!(edited, record);
            inner.put(&ra, edited.into_bytes().into()).await.unwrap();
            let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone());
            assert_eq!(refused(&store, &a).await, want);
        }
    }
}

#[tokio::test]
async fn a_deleted_record_is_refused() {
    for (inner, _dir) in inners() {
        let (a, _) = two_objects(&inner).await;
        inner
            .delete(&record_of(inner.as_ref(), &a).await)
            .await
            .unwrap();
        let want = KeyringError::MissingRecord {
            path: a.to_string(),
        };
        assert_eq!(refused(&fresh(&inner), &a).await, want);
    }
}

/// A store that holds an object's data key (it wrote the object and read
/// it) still reads the record on every read: a record swapped or deleted
/// since is refused by that store too, not only by fresh ones.
#[tokio::test]
async fn a_store_holding_the_key_sees_its_record_change() {
    for (inner, _dir) in inners() {
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
        let (a, b) = (Path::from("dir/a"), Path::from("dir/b"));
        store.put(&a, data(3 * CHUNK_SIZE, 1).into()).await.unwrap();
        store.put(&b, data(3 * CHUNK_SIZE, 2).into()).await.unwrap();
        store.get(&a).await.unwrap().bytes().await.unwrap();
        swap_records(&inner, &a, &b).await;
        let want = KeyringError::Unwrap {
            kek: "primary".into(),
        };
        assert_eq!(refused(&store, &a).await, want);
        store.get(&b).await.unwrap().bytes().await.unwrap();
        inner
            .delete(&record_of(inner.as_ref(), &b).await)
            .await
            .unwrap();
        let want = KeyringError::MissingRecord {
            path: b.to_string(),
        };
        assert_eq!(refused(&store, &b).await, want);
    }
}

#[tokio::test]
async fn an_object_replaced_under_its_record_is_refused() {
    for (inner, _dir) in inners() {
        let (a, b) = two_objects(&inner).await;
        let (sa, sb) = (raw(inner.as_ref(), &a).await, raw(inner.as_ref(), &b).await);
        // Another object's bytes: no record for its salt here.
        inner.put(&a, sb.clone().into()).await.unwrap();
        let want = KeyringError::MissingRecord {
            path: a.to_string(),
        };
        assert_eq!(refused(&fresh(&inner), &a).await, want);
        // With its record beside it, under its salt: the wrap is bound
        // to the other path.
        let rb = record_of(inner.as_ref(), &b).await;
        let salt = rb.filename().unwrap().rsplit_once('.').unwrap().1;
        let planted = Path::from(format!("{a}.cipherio-key.{salt}"));
        inner
            .put(&planted, raw(inner.as_ref(), &rb).await.into())
            .await
            .unwrap();
        let want = KeyringError::Unwrap {
            kek: "primary".into(),
        };
        assert_eq!(refused(&fresh(&inner), &a).await, want);
        // Its own header, another body: the chunks do not authenticate.
        let spliced = [&sa[..56], &sb[56..]].concat();
        inner.put(&a, spliced.into()).await.unwrap();
        let e = fresh(&inner).get_range(&a, 5..10).await.unwrap_err();
        assert_eq!(
            cipher_error(&e),
            Some(&cipherio::Error::Authentication),
            "{e}"
        );
    }
}

#[tokio::test]
async fn a_keyring_without_the_kek_is_refused() {
    for (inner, _dir) in inners() {
        let (a, _) = two_objects(&inner).await;
        let other = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(kek("other")));
        let want = KeyringError::UnknownKek {
            kek: "primary".into(),
        };
        assert_eq!(refused(&other, &a).await, want);
        assert_eq!(
            keyring_error(&other.rewrap(&a).await.unwrap_err()),
            Some(&want)
        );
    }
}

/// A KEK that ignores the context and does not encrypt: its "wrapped"
/// key is the key. Written by hand (no real KEK is this weak) to show
/// what the stream's key commitment does alone.
#[derive(Debug)]
struct Naive;

#[async_trait::async_trait]
impl KeyEncryptionKey for Naive {
    fn id(&self) -> &str {
        "naive"
    }
    async fn wrap(&self, data_key: &[u8], _: &[u8]) -> object_store::Result<Vec<u8>> {
        Ok(data_key.to_vec())
    }
    async fn unwrap(&self, wrapped: &[u8], _: &[u8]) -> object_store::Result<Vec<u8>> {
        Ok(wrapped.to_vec())
    }
}

#[tokio::test]
async fn a_swapped_key_is_refused_by_the_commitment_even_under_a_kek_that_binds_nothing() {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let store = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(Arc::new(Naive)));
    let (a, b) = (Path::from("a"), Path::from("b"));
    store.put(&a, data(100, 1).into()).await.unwrap();
    store.put(&b, data(100, 2).into()).await.unwrap();
    swap_records(&inner, &a, &b).await;
    let fresh = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(Arc::new(Naive)));
    let e = fresh.get(&a).await.unwrap_err();
    assert_eq!(
        cipher_error(&e),
        Some(&cipherio::Error::Authentication),
        "{e}"
    );
}

/// A parallel upload under a keyring: the plan carries the wrapped data
/// key (under its MAC), workers hold only the KEK and unwrap it through
/// it, and the object reads back through the store; a worker whose
/// keyring lacks the KEK, or a plan whose wrapped key was swapped for
/// another plan's, seals and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_of_a_keyring_plan_hold_only_the_kek() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let inner: Arc<dyn ObjectStore> = faulty.clone();
    let mp: Arc<dyn object_store::multipart::MultipartStore> = faulty.clone();
    let store = fresh(&inner);
    let options = UploadOptions {
        part_size: 3 * CHUNK_SIZE as u64,
        limits: PartLimits::new(2 * CHUNK_SIZE as u64, 10 * CHUNK_SIZE as u64, 1000),
        ..UploadOptions::default()
    };
    let pt = data(7 * CHUNK_SIZE + 5, 8);
    let source: Source = Arc::new(pt.clone());
    let (path, other) = (Path::from("parallel/a"), Path::from("parallel/b"));
    let plan = store
        .create_plan(&*mp, &path, source.clone(), &options)
        .await
        .unwrap();
    assert!(plan.data_key.is_some() && plan.parts.len() > 2);
    let worker_keyring = Keyring::new(kek("primary"));
    let refusals = [
        (
            Keyring::new(kek("other")),
            plan.clone(),
            KeyringError::UnknownKek {
                kek: "primary".into(),
            },
        ),
        (
            worker_keyring.clone(),
            UploadPlan {
                data_key: store
                    .create_plan(&*mp, &other, source.clone(), &options)
                    .await
                    .unwrap()
                    .data_key,
                ..plan.clone()
            },
            KeyringError::Unwrap {
                kek: "primary".into(),
            },
        ),
    ];
    for (keyring, plan, want) in refusals {
        let all = common::share(&plan, 0, 1);
        let e = upload_share_with_keyring(mp.clone(), &keyring, &plan, &all, source.clone(), 2)
            .await
            .unwrap_err();
        assert_eq!(keyring_error(&e), Some(&want), "{e}");
    }
    assert!(faulty.sent.part_sizes(&plan.upload_id).is_empty());
    let mut done = Vec::new();
    for worker in 0..2 {
        let share = common::share(&plan, worker, 2);
        let sent = upload_share_with_keyring(
            mp.clone(),
            &worker_keyring,
            &plan,
            &share,
            source.clone(),
            2,
        )
        .await
        .unwrap();
        done.extend(sent);
    }
    complete_plan_with_keyring(&*mp, &worker_keyring, &plan, done)
        .await
        .unwrap();
    assert_eq!(raw(&fresh(&inner), &path).await, pt);
}

/// The data key cache holds at most its entries: with room for one, two
/// objects read in turn are unwrapped on every read; with room for two,
/// once each.
#[tokio::test]
async fn the_key_cache_keeps_at_most_its_entries() {
    let counting = CountingKek::new("primary");
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let keyring = Keyring::new(counting.clone());
    let writer = EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone());
    let paths = [Path::from("one"), Path::from("two")];
    for p in &paths {
        writer.put(p, data(100, 1).into()).await.unwrap();
    }
    for (entries, unwraps) in [(1, 6), (2, 2)] {
        let before = counting.unwraps();
        let reader = EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone())
            .with_header_cache(0)
            .with_key_cache(entries, Duration::from_secs(600));
        for _ in 0..3 {
            for p in &paths {
                reader.get_range(p, 0..10).await.unwrap();
            }
        }
        assert_eq!(counting.unwraps() - before, unwraps, "{entries} entries");
    }
}
