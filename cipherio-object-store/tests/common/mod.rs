//! What the test files share: keys, data, a model reader (`CipherReader`
//! over downloaded bytes), and the S3 server (moto, on loopback).
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Read;

use cipherio::cobblestone::{CobblestoneKey, Instantiation};
use cipherio::{Algorithm, CipherReader, Key, StreamKey};
use object_store::ObjectStore;

pub fn key() -> Key {
    Key::new(Algorithm::Aes256Gcm, &[0x42; 32]).unwrap()
}

pub fn cobblestone_key() -> CobblestoneKey {
    CobblestoneKey::new(Instantiation::Cobblestone256, &[0x42; 32]).unwrap()
}

/// `len` bytes that differ with `seed` and with position.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// What `CipherReader` makes of `stream` stored at `path` (the path bound
/// as associated data): the plaintext, or its cipherio error.
pub fn reader(key: &impl StreamKey, path: &str, stream: &[u8]) -> Result<Vec<u8>, cipherio::Error> {
    let mut r = CipherReader::builder(key)
        .associated_data(path.as_bytes())
        .build(stream);
    let mut out = Vec::new();
    match r.read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(e) => Err(e
            .get_ref()
            .and_then(|e| e.downcast_ref::<cipherio::Error>())
            .cloned()
            .unwrap_or_else(|| panic!("not a cipherio error: {e}"))),
    }
}

pub mod faults;
pub mod keyring;
pub mod moto;

#[allow(unused_imports)]
pub use moto::s3;

/// The parts of `plan` that worker `worker` of `workers` takes: every
/// `workers`-th.
pub fn share(plan: &cipherio_object_store::UploadPlan, worker: u32, workers: u32) -> Vec<u32> {
    plan.parts
        .iter()
        .map(|p| p.number)
        .filter(|n| n % workers == worker)
        .collect()
}

/// Every object in `store` with its raw bytes.
pub async fn raw(store: &dyn ObjectStore, path: &object_store::path::Path) -> Vec<u8> {
    use object_store::ObjectStoreExt;
    store
        .get(path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec()
}

/// The whole plaintext of the object at `path`, read through `store`.
pub async fn whole(store: &dyn ObjectStore, path: &object_store::path::Path) -> bytes::Bytes {
    object_store::ObjectStoreExt::get(store, path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
}
