//! Reads and uploads through a store that fails (`common::faults`):
//! parts lost, answers cut short or lengthened, objects replaced between
//! two requests, calls retried after an error. Every test checks that no
//! segment index of one stream was sent two different ciphertexts.

mod common;

use std::sync::Arc;

use cipherio_object_store::EncryptedStore;
use common::faults::{Fault, Faulty};
use common::{data, key};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const SEG: u32 = 4096;

fn faulty() -> (Arc<Faulty<InMemory>>, EncryptedStore) {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let store = EncryptedStore::new(Arc::clone(&faulty) as Arc<dyn ObjectStore>, key())
        .with_segment_size(SEG)
        .unwrap();
    (faulty, store)
}

/// `complete` called again after it failed: when the final part was lost
/// the retry is refused (its segment would be sealed again), when only
/// the inner completion failed the retry completes the object; neither
/// seals any segment twice.
#[tokio::test]
async fn a_retried_complete_seals_nothing_twice() {
    for len in [1000, 3 * SEG as usize + 5] {
        let (faulty, store) = faulty();
        let path = Path::from(format!("retry/lost-{len}"));
        let mut upload = store.put_multipart(&path).await.unwrap();
        upload.put_part(data(len, 1).into()).await.unwrap();
        faulty.arm(Fault::LosePart);
        upload.complete().await.unwrap_err();
        let again = upload.complete().await.unwrap_err().to_string();
        assert!(again.contains("upload the object again"), "{again}");
        assert!(store.head(&path).await.is_err(), "no object");
        faulty.sent.assert_no_reuse();

        let path = Path::from(format!("retry/complete-{len}"));
        let mut upload = store.put_multipart(&path).await.unwrap();
        upload.put_part(data(len, 2).into()).await.unwrap();
        faulty.arm(Fault::FailComplete);
        upload.complete().await.unwrap_err();
        upload.complete().await.unwrap();
        let back = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(back, data(len, 2));
        faulty.sent.assert_no_reuse();
    }
}
