//! object_store's own conformance suite (`object_store::integration`)
//! against `EncryptedStore` over `InMemory`, `LocalFileSystem` and S3
//! (moto): every test that can apply to a store that encrypts, each under
//! a master key and under a keyring (a data key per object, its key
//! record beside it).
//!
//! Left out, for every inner store:
//! - `multipart`, `multipart_with_opts`, `multipart_put_part_out_of_order`
//!   and `list_paginated` take a `MultipartStore` / `PaginatedListStore`,
//!   which `EncryptedStore` is not: a part given by index cannot be sealed
//!   without knowing where it lies in the stream (`upload_parallel` plans
//!   the parts from the layout instead), and a page of ciphertext
//!   listings is the inner store's own.
//! - `put_opts(.., supports_update: true)` needs `PutMode::Update`, which
//!   only some inner stores have; it runs where they do.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use cipherio_object_store::EncryptedStore;
use common::keyring::Keying;
use object_store::DynObjectStore;
use object_store::integration::*;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;

/// The tests every inner store runs; `attributes`: the inner store keeps
/// them.
async fn suite(store: &EncryptedStore, attributes: bool) {
    let dyn_store: &DynObjectStore = store;
    put_get_delete_list(dyn_store).await;
    get_opts(dyn_store).await;
    list_uses_directories_correctly(dyn_store).await;
    list_with_delimiter(dyn_store).await;
    rename_and_copy(dyn_store).await;
    copy_if_not_exists(dyn_store).await;
    copy_rename_nonexistent_object(dyn_store).await;
    stream_get(dyn_store).await;
    multipart_out_of_order(dyn_store).await;
    list_with_offset_exclusivity(dyn_store).await;
    if attributes {
        put_get_attributes(dyn_store).await;
    }
    let err = get_nonexistent_object(dyn_store, None).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

/// Under a master key and under a keyring.
const KEYINGS: [Keying; 2] = [Keying::Native, Keying::Keyring];

/// `store` with segments of `size` bytes where its format lets it choose
/// (a keyring's objects are Cobblestone: 16 KiB chunks).
fn segments(store: EncryptedStore, keying: Keying, size: u32) -> EncryptedStore {
    match keying {
        Keying::Keyring => store,
        _ => store.with_segment_size(size).unwrap(),
    }
}

#[tokio::test]
async fn in_memory() {
    for keying in KEYINGS {
        let store = keying.store(Arc::new(InMemory::new()));
        suite(&store, true).await;
        put_opts(&store, true).await;
        multipart_race_condition(&store, true).await;
    }
}

#[tokio::test]
async fn in_memory_through_the_fault_layer() {
    // No fault armed: the layer only records every byte sent, and no
    // segment index of any stream the suite writes is sent twice with
    // other bytes.
    for keying in KEYINGS {
        let faulty = Arc::new(common::faults::Faulty::new(Arc::new(InMemory::new())));
        let store = segments(keying.store(faulty.clone()), keying, 64).with_part_size(5 << 20);
        suite(&store, true).await;
        put_opts(&store, true).await;
        faulty.sent.assert_no_reuse();
    }
}

#[tokio::test]
async fn in_memory_without_path_binding() {
    // Copy and rename are then the inner store's (but for a keyring,
    // whose key records bind the path).
    for keying in KEYINGS {
        let store = keying
            .store(Arc::new(InMemory::new()))
            .with_path_binding(false);
        suite(&store, true).await;
        put_opts(&store, true).await;
    }
}

#[tokio::test]
async fn in_memory_small_segments_no_cache() {
    // Every path through the reads: objects of many segments, the header
    // never cached, never in the metadata (and, for a keyring, no data
    // key cached: every read unwraps).
    for keying in KEYINGS {
        let store = segments(keying.store(Arc::new(InMemory::new())), keying, 5)
            .with_header_cache(0)
            .with_key_cache(0, std::time::Duration::ZERO)
            .with_header_attribute(false)
            .with_part_size(5 << 20);
        suite(&store, false).await;
    }
}

#[tokio::test]
async fn local_file_system() {
    for keying in KEYINGS {
        let dir = tempfile::tempdir().unwrap();
        let inner = LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let store = keying.store(Arc::new(inner));
        // No attributes in a file system: the header is not kept there,
        // and put_get_attributes expects NotImplemented, which it gets.
        suite(&store, true).await;
        put_opts(&store, false).await;
        multipart_race_condition(&store, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_moto() {
    let Some(s3) = common::s3("conformance") else {
        return;
    };
    for keying in KEYINGS {
        let store = keying.store(s3.clone());
        suite(&store, true).await;
        multipart_race_condition(&store, true).await;
    }
}
