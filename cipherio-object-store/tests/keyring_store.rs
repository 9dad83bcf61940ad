//! Every `ObjectStore` operation through a keyring, over `InMemory` and
//! `LocalFileSystem`: what each leaves in the inner store (the objects
//! and one key record each, nothing else), reads of every shape at the
//! sizes where chunks end, and rewrap and the attacks on records against
//! stores whose caches are warm.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use cipherio::cobblestone::CHUNK_SIZE;
use cipherio_object_store::{EncryptedStore, Keyring, KeyringError, LocalKek, keyring_error};
use common::keyring::inners;
use common::keyring::{CountingKek, HookedKek, kek, keyring, record_of};
use common::{data, raw};
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, UpdateVersion};

/// Every path in the inner store, sorted.
async fn everything(inner: &dyn ObjectStore) -> Vec<String> {
    let all: Vec<_> = inner.list(None).try_collect().await.unwrap();
    let mut all: Vec<String> = all.into_iter().map(|m| m.location.to_string()).collect();
    all.sort();
    all
}

/// An error unless the inner store holds exactly `objects`, each with
/// one key record.
async fn holds(inner: &dyn ObjectStore, objects: &[&str], step: u32) {
    let all = everything(inner).await;
    let records: Vec<_> = all
        .iter()
        .filter(|p| p.contains(".cipherio-key."))
        .collect();
    let mut plain: Vec<_> = all
        .iter()
        .filter(|p| !p.contains(".cipherio-key."))
        .collect();
    plain.sort();
    let mut want: Vec<_> = objects.to_vec();
    want.sort();
    assert_eq!(plain, want, "{step}: {all:?}");
    assert_eq!(records.len(), objects.len(), "{step}: {all:?}");
    for o in objects {
        record_of(inner, &Path::from(*o)).await;
    }
}

#[tokio::test]
async fn sizes_where_chunks_end_read_in_every_shape() {
    for (inner, _dir) in inners() {
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
        for len in [
            0,
            1,
            CHUNK_SIZE - 1,
            CHUNK_SIZE,
            2 * CHUNK_SIZE,
            2 * CHUNK_SIZE + 1,
        ] {
            let path = Path::from(format!("sizes/{len}"));
            let pt = data(len, len as u64);
            store.put(&path, pt.clone().into()).await.unwrap();
            if len == 0 {
                assert_eq!(raw(&store, &path).await, pt);
                continue;
            }
            for reader in [
                EncryptedStore::with_keyring(Arc::clone(&inner), keyring()),
                EncryptedStore::with_keyring(Arc::clone(&inner), keyring()),
            ] {
                // Twice each: cold, then warm.
                for _ in 0..2 {
                    assert_eq!(raw(&reader, &path).await, pt, "{len}");
                    assert_eq!(reader.head(&path).await.unwrap().size, len as u64);
                    let (tail, half) = (len.saturating_sub(10)..len, len.div_ceil(2));
                    let got = reader
                        .get_range(&path, tail.start as u64..tail.end as u64)
                        .await
                        .unwrap();
                    assert_eq!(&got[..], &pt[tail.clone()], "{len}");
                    let got = reader
                        .get_ranges(&path, &[0..half as u64, tail.start as u64..len as u64])
                        .await
                        .unwrap();
                    assert_eq!(&got[0][..], &pt[..half]);
                    assert_eq!(&got[1][..], &pt[tail.clone()]);
                    let opts = object_store::GetOptions {
                        range: Some(object_store::GetRange::Suffix(3)),
                        ..Default::default()
                    };
                    let got = reader.get_opts(&path, opts).await.unwrap().bytes().await;
                    assert_eq!(&got.unwrap()[..], &pt[len.saturating_sub(3)..]);
                }
            }
        }
        let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
        assert_eq!(listed.len(), 6, "{listed:?}");
        for m in listed {
            let len: u64 = m.location.filename().unwrap().parse().unwrap();
            assert_eq!(m.size, len);
        }
    }
}

#[tokio::test]
async fn every_write_leaves_the_objects_and_one_record_each() {
    for (inner, _dir) in inners() {
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
        let (a, b, c) = (Path::from("d/a"), Path::from("d/b"), Path::from("e/c"));
        store.put(&a, data(10, 1).into()).await.unwrap();
        store.put(&a, data(20, 2).into()).await.unwrap();
        holds(inner.as_ref(), &["d/a"], 1).await;
        // Create-only, onto an existing object: refused, nothing left.
        let e = store
            .put_opts(&a, data(5, 3).into(), PutMode::Create.into())
            .await
            .unwrap_err();
        assert!(
            matches!(e, object_store::Error::AlreadyExists { .. }),
            "{e}"
        );
        holds(inner.as_ref(), &["d/a"], 2).await;
        // Update: where the store has it, with the right version and a
        // wrong one; where it has not (a file system), refused.
        let meta = store.head(&a).await.unwrap();
        let update = |e_tag: Option<String>| {
            PutOptions::from(PutMode::Update(UpdateVersion {
                e_tag,
                version: None,
            }))
        };
        let wrong = store
            .put_opts(&a, data(5, 4).into(), update(Some("nope".into())))
            .await;
        assert!(wrong.is_err());
        holds(inner.as_ref(), &["d/a"], 3).await;
        if store
            .put_opts(&a, data(6, 5).into(), update(meta.e_tag.clone()))
            .await
            .is_ok()
        {
            assert_eq!(raw(&store, &a).await, data(6, 5));
        }
        holds(inner.as_ref(), &["d/a"], 4).await;
        // Attributes, where the store keeps them (a file system refuses
        // them, the single PUT and the multipart upload alike).
        let attributes =
            object_store::Attributes::from_iter([(object_store::Attribute::ContentType, "x/y")]);
        let put = PutOptions {
            attributes: attributes.clone(),
            ..PutOptions::default()
        };
        if store.put_opts(&b, data(5, 6).into(), put).await.is_ok() {
            store.delete(&b).await.unwrap();
        }
        let opts = object_store::PutMultipartOptions {
            attributes,
            ..Default::default()
        };
        if let Ok(mut up) = store.put_multipart_opts(&b, opts).await {
            up.abort().await.unwrap();
        }
        holds(inner.as_ref(), &["d/a"], 13).await;
        // Copies and renames, plain and create-only.
        store.copy(&a, &b).await.unwrap();
        holds(inner.as_ref(), &["d/a", "d/b"], 5).await;
        assert!(store.copy_if_not_exists(&a, &b).await.is_err());
        assert!(store.rename_if_not_exists(&a, &b).await.is_err());
        holds(inner.as_ref(), &["d/a", "d/b"], 6).await;
        store.rename_if_not_exists(&b, &c).await.unwrap();
        holds(inner.as_ref(), &["d/a", "e/c"], 7).await;
        store.rename(&c, &a).await.unwrap();
        holds(inner.as_ref(), &["d/a"], 8).await;
        // Multipart: completed over an object, aborted, dropped.
        let mut up = store.put_multipart(&a).await.unwrap();
        up.put_part(data(3 * CHUNK_SIZE, 6).into()).await.unwrap();
        up.complete().await.unwrap();
        holds(inner.as_ref(), &["d/a"], 9).await;
        let mut up = store.put_multipart(&b).await.unwrap();
        up.put_part(data(100, 7).into()).await.unwrap();
        up.abort().await.unwrap();
        holds(inner.as_ref(), &["d/a"], 10).await;
        let mut up = store.put_multipart(&c).await.unwrap();
        up.complete().await.unwrap();
        assert_eq!(raw(&store, &c).await, b"");
        holds(inner.as_ref(), &["d/a", "e/c"], 11).await;
        store.delete(&a).await.unwrap();
        store.delete(&c).await.unwrap();
        assert!(everything(inner.as_ref()).await.is_empty());
    }
}

#[tokio::test]
async fn listings_hide_records_with_prefixes_offsets_and_delimiters() {
    for (inner, _dir) in inners() {
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
        for p in ["a", "a.b", "d/a", "d/a.x", "d/e/f", "z"] {
            store.put(&Path::from(p), data(7, 1).into()).await.unwrap();
        }
        let names = |v: Vec<object_store::ObjectMeta>| {
            let mut v: Vec<String> = v.into_iter().map(|m| m.location.to_string()).collect();
            v.sort();
            v
        };
        let all = names(store.list(None).try_collect().await.unwrap());
        assert_eq!(all, ["a", "a.b", "d/a", "d/a.x", "d/e/f", "z"]);
        let d = names(store.list(Some(&"d".into())).try_collect().await.unwrap());
        assert_eq!(d, ["d/a", "d/a.x", "d/e/f"]);
        for (offset, want) in [
            ("a", &["a.b", "d/a", "d/a.x", "d/e/f", "z"][..]),
            ("d/a", &["d/a.x", "d/e/f", "z"]),
            ("d/a.cipherio-key.", &["d/a.x", "d/e/f", "z"]),
        ] {
            let got = names(
                store
                    .list_with_offset(None, &offset.into())
                    .try_collect()
                    .await
                    .unwrap(),
            );
            assert_eq!(got, want, "{offset}");
        }
        let got = names(
            store
                .list_with_offset(Some(&"d".into()), &"d/a".into())
                .try_collect()
                .await
                .unwrap(),
        );
        assert_eq!(got, ["d/a.x", "d/e/f"]);
        for (prefix, objects, dirs) in [
            (None, &["a", "a.b", "z"][..], &["d"][..]),
            (Some("d"), &["d/a", "d/a.x"], &["d/e"]),
        ] {
            let l = store
                .list_with_delimiter(prefix.map(Path::from).as_ref())
                .await
                .unwrap();
            assert_eq!(names(l.objects), objects);
            let dirs_got: Vec<String> = l.common_prefixes.iter().map(|p| p.to_string()).collect();
            assert_eq!(dirs_got, dirs);
        }
    }
}

/// The wrapped key of `path`'s record, edited by `edit` (hex in, hex out).
async fn edit_wrapped(inner: &Arc<dyn ObjectStore>, path: &Path, edit: impl Fn(&str) -> String) {
    let at = record_of(inner.as_ref(), path).await;
    let record: serde_json::Value =
        serde_json::from_slice(&raw(inner.as_ref(), &at).await).unwrap();
    let mut record = record;
    let wrapped = record["wrapped"].as_str().unwrap().to_string();
    record["wrapped"] = edit(&wrapped).into();
    inner
        .put(&at, serde_json::to_vec(&record).unwrap().into())
        .await
        .unwrap();
}

/// Whole, ranged (past the first chunk) and multi-range reads of `path`
/// through `store` are all refused with `want`.
async fn refused_everywhere(store: &EncryptedStore, path: &Path, want: &KeyringError) {
    let errors = [
        store.get(path).await.map(|_| ()).unwrap_err(),
        store.get_range(path, 5..10).await.map(|_| ()).unwrap_err(),
        store
            .get_range(path, CHUNK_SIZE as u64 + 5..CHUNK_SIZE as u64 + 10)
            .await
            .map(|_| ())
            .unwrap_err(),
        store
            .get_ranges(
                path,
                &[0..3, 2 * CHUNK_SIZE as u64..2 * CHUNK_SIZE as u64 + 1],
            )
            .await
            .map(|_| ())
            .unwrap_err(),
    ];
    for e in errors {
        assert_eq!(keyring_error(&e), Some(want), "{path}: {e}");
    }
}

/// Stores that already read the object (both caches warm) and fresh
/// ones, refused alike once the record is attacked.
#[tokio::test]
async fn attacks_on_records_are_refused_by_warm_and_fresh_stores() {
    type Attack = fn(&str) -> String;
    let attacks: [(Attack, &str); 3] = [
        (|w| w[..w.len() - 2].to_string(), "truncated"),
        (|w| format!("{w}00"), "extended"),
        (|w| w[..w.len() - 1].to_string(), "odd hex"),
    ];
    for (inner, _dir) in inners() {
        for (attack, what) in attacks {
            let path = Path::from(format!("x/{what}"));
            let warm = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
            warm.put(&path, data(3 * CHUNK_SIZE, 1).into())
                .await
                .unwrap();
            raw(&warm, &path).await;
            warm.get_range(&path, 20000..20010).await.unwrap();
            edit_wrapped(&inner, &path, attack).await;
            let want = KeyringError::Unwrap {
                kek: "primary".into(),
            };
            refused_everywhere(&warm, &path, &want).await;
            let fresh = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
            refused_everywhere(&fresh, &path, &want).await;
        }
    }
}

#[tokio::test]
async fn after_a_rewrap_the_old_kek_alone_reads_nothing_even_where_it_read_before() {
    for (inner, _dir) in inners() {
        let (old, new) = (kek("old"), kek("new"));
        let path = Path::from("r/obj");
        let pt = data(5 * CHUNK_SIZE + 3, 9);
        let before = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old.clone()));
        before.put(&path, pt.clone().into()).await.unwrap();
        raw(&before, &path).await;
        before.get_range(&path, 20000..20010).await.unwrap();
        let ciphertext = raw(inner.as_ref(), &path).await;
        let rotated = EncryptedStore::with_keyring(
            Arc::clone(&inner),
            Keyring::new(new.clone()).with_older(old.clone()),
        );
        // A keyring without the record's KEK, a missing object.
        let e = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(new.clone()))
            .rewrap(&path)
            .await
            .unwrap_err();
        assert_eq!(
            keyring_error(&e),
            Some(&KeyringError::UnknownKek { kek: "old".into() })
        );
        let e = rotated.rewrap(&"r/none".into()).await.unwrap_err();
        assert!(matches!(e, object_store::Error::NotFound { .. }), "{e}");
        rotated.rewrap(&path).await.unwrap();
        assert_eq!(raw(inner.as_ref(), &path).await, ciphertext);
        let want = KeyringError::UnknownKek { kek: "new".into() };
        refused_everywhere(&before, &path, &want).await;
        let only_old = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old));
        refused_everywhere(&only_old, &path, &want).await;
        assert_eq!(raw(&rotated, &path).await, pt);
        holds(inner.as_ref(), &["r/obj"], 12).await;
    }
}

#[test]
fn debug_shows_no_key_bytes() {
    let keyring = Keyring::new(Arc::new(LocalKek::new("k", [0xab; 32])))
        .with_older(Arc::new(LocalKek::new("o", [0xcd; 32])));
    let store = EncryptedStore::with_keyring(Arc::new(InMemory::new()), keyring.clone());
    for shown in [
        format!("{keyring:?}"),
        format!("{store:?}"),
        format!("{store:#?}"),
    ] {
        for secret in ["171", "205", "ab", "cd", "AB", "CD"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}

/// A put or a delete that lands while a rewrap is between reading the
/// record and writing it back leaves the new version readable and no
/// record of the replaced one.
#[tokio::test]
async fn a_rewrap_racing_a_put_or_a_delete_leaves_no_record_behind() {
    for (inner, _dir) in inners() {
        for delete in [true, false] {
            let (old, new) = (kek("old"), HookedKek::new("new"));
            let path = Path::from("race/obj");
            EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old.clone()))
                .put(&path, data(3 * CHUNK_SIZE, 1).into())
                .await
                .unwrap();
            let other = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(old));
            let p = path.clone();
            new.arm(async move {
                if delete {
                    other.delete(&p).await.unwrap();
                } else {
                    other.put(&p, data(10, 2).into()).await.unwrap();
                }
            });
            let keyring = Keyring::new(new.clone()).with_older(kek("old"));
            let rotated = EncryptedStore::with_keyring(Arc::clone(&inner), keyring);
            let _ = rotated.rewrap(&path).await;
            if delete {
                assert!(everything(inner.as_ref()).await.is_empty());
            } else {
                assert_eq!(raw(&rotated, &path).await, data(10, 2));
                holds(inner.as_ref(), &["race/obj"], 0).await;
                rotated.delete(&path).await.unwrap();
            }
        }
    }
}

/// Worker-side edits of a keyring plan: its wrapped key's KEK id edited
/// (to one the worker holds, and to one it does not), its wrapped key
/// dropped: each refused before anything is sent or completed.
#[tokio::test]
async fn an_edited_keyring_plan_is_refused_before_anything_is_sent() {
    use cipherio_object_store::{
        Source, UploadOptions, UploadPlan, complete_plan_with_keyring, upload_share_with_keyring,
    };
    let faulty = Arc::new(common::faults::Faulty::new(Arc::new(InMemory::new())));
    let inner: Arc<dyn ObjectStore> = faulty.clone();
    let mp: Arc<dyn object_store::multipart::MultipartStore> = faulty.clone();
    let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
    let source: Source = Arc::new(data(3 * CHUNK_SIZE, 1));
    let path = Path::from("plan/a");
    let plan = store
        .create_plan(&*mp, &path, source.clone(), &UploadOptions::default())
        .await
        .unwrap();
    let worker = keyring().with_older(kek("older"));
    let with_kek = |id: &str| {
        let mut p = plan.clone();
        p.data_key.as_mut().unwrap().kek = id.into();
        p
    };
    let edits: [(UploadPlan, Option<KeyringError>); 3] = [
        (
            with_kek("older"),
            Some(KeyringError::Unwrap {
                kek: "older".into(),
            }),
        ),
        (
            with_kek("gone"),
            Some(KeyringError::UnknownKek { kek: "gone".into() }),
        ),
        (
            UploadPlan {
                data_key: None,
                ..plan.clone()
            },
            None,
        ),
    ];
    for (edited, want) in edits {
        let all = common::share(&edited, 0, 1);
        let e = upload_share_with_keyring(mp.clone(), &worker, &edited, &all, source.clone(), 2)
            .await
            .unwrap_err();
        assert_eq!(keyring_error(&e), want.as_ref(), "{e}");
        let e = complete_plan_with_keyring(&*mp, &worker, &edited, Vec::new())
            .await
            .unwrap_err();
        assert_eq!(keyring_error(&e), want.as_ref(), "{e}");
    }
    assert!(faulty.sent.part_sizes(&plan.upload_id).is_empty());
}

/// Reads of every kind through the default caches: 200 ranged reads,
/// 200 multi-range reads and 20 whole reads of one object cost one
/// unwrap.
#[tokio::test]
async fn reads_of_every_kind_cost_one_unwrap() {
    let counting = CountingKek::new("primary");
    for (inner, _dir) in inners() {
        let before = counting.unwraps();
        let keyring = Keyring::new(counting.clone());
        let path = Path::from("often");
        let pt = data(6 * CHUNK_SIZE, 3);
        EncryptedStore::with_keyring(Arc::clone(&inner), keyring.clone())
            .put(&path, pt.clone().into())
            .await
            .unwrap();
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring);
        for i in 0..200u64 {
            let at = i * 977 % (pt.len() as u64 - 20);
            let got = store.get_range(&path, at..at + 10).await.unwrap();
            assert_eq!(&got[..], &pt[at as usize..at as usize + 10]);
            let got = store
                .get_ranges(&path, &[at..at + 1, at + 10..at + 20])
                .await
                .unwrap();
            assert_eq!(&got[1][..], &pt[at as usize + 10..at as usize + 20]);
        }
        for _ in 0..20 {
            assert_eq!(raw(&store, &path).await, pt);
        }
        assert_eq!(counting.unwraps() - before, 1);
    }
}

/// Another object's bytes put in place of one a store has read (both
/// caches warm), with and without that object's record planted beside
/// it: refused by that store as by a fresh one.
#[tokio::test]
async fn an_object_replaced_under_a_warm_store_is_refused() {
    for (inner, _dir) in inners() {
        for plant in [false, true] {
            let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
            let (a, b) = (Path::from("w/a"), Path::from("w/b"));
            store.put(&a, data(3 * CHUNK_SIZE, 1).into()).await.unwrap();
            store.put(&b, data(3 * CHUNK_SIZE, 2).into()).await.unwrap();
            raw(&store, &a).await;
            store.get_range(&a, 20000..20010).await.unwrap();
            let rb = record_of(inner.as_ref(), &b).await;
            inner
                .put(&a, raw(inner.as_ref(), &b).await.into())
                .await
                .unwrap();
            let want = if plant {
                let salt = rb.filename().unwrap().rsplit_once('.').unwrap().1;
                let planted = Path::from(format!("{a}.cipherio-key.{salt}"));
                let bytes = raw(inner.as_ref(), &rb).await;
                inner.put(&planted, bytes.into()).await.unwrap();
                KeyringError::Unwrap {
                    kek: "primary".into(),
                }
            } else {
                KeyringError::MissingRecord {
                    path: a.to_string(),
                }
            };
            refused_everywhere(&store, &a, &want).await;
            let fresh = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
            refused_everywhere(&fresh, &a, &want).await;
            for p in everything(inner.as_ref()).await {
                inner.delete(&p.into()).await.unwrap();
            }
        }
    }
}

/// A keyring plan that cannot be made (a source that does not fit the
/// store's limits) leaves no key record.
#[tokio::test]
async fn a_keyring_plan_refused_leaves_no_record() {
    use cipherio::segments::PartLimits;
    use cipherio_object_store::{Source, UploadOptions};
    for (inner, _dir) in inners() {
        let mp = Arc::new(InMemory::new());
        let store = EncryptedStore::with_keyring(Arc::clone(&inner), keyring());
        let options = UploadOptions {
            limits: PartLimits::new(1, 2 * CHUNK_SIZE as u64, 2),
            ..UploadOptions::default()
        };
        let source: Source = Arc::new(data(10 * CHUNK_SIZE, 1));
        let e = store
            .create_plan(&*mp, &"p/a".into(), source, &options)
            .await
            .unwrap_err();
        assert!(everything(inner.as_ref()).await.is_empty(), "{e}");
    }
}
