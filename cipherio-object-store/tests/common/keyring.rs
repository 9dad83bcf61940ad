//! Keyrings for the tests: the store factory every store behaviour test
//! runs through (a master key, and a keyring), KEKs, and a KEK that
//! counts its unwraps.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use cipherio_object_store::{EncryptedStore, KeyEncryptionKey, Keyring, LocalKek};
use object_store::ObjectStore;
use object_store::path::Path;

/// How a test's store is keyed: one master key of either format, or a
/// keyring (a data key per object). Store behaviour tests run their
/// cases under a master key and under a keyring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keying {
    /// The native format under [`super::key`].
    Native,
    /// Cobblestone under [`super::cobblestone_key`].
    Cobblestone,
    /// A data key per object, wrapped by [`kek`]`("primary")`.
    Keyring,
}

impl Keying {
    /// A store over `inner` keyed this way (a fresh store: nothing cached).
    pub fn store(self, inner: Arc<dyn ObjectStore>) -> EncryptedStore {
        match self {
            Keying::Native => EncryptedStore::new(inner, super::key()),
            Keying::Cobblestone => EncryptedStore::cobblestone(inner, super::cobblestone_key()),
            Keying::Keyring => EncryptedStore::with_keyring(inner, keyring()),
        }
    }
}

/// The KEK named `id`, its 32 bytes derived from the name.
pub fn kek(id: &str) -> Arc<LocalKek> {
    let mut key = [0x5a; 32];
    for (k, b) in key.iter_mut().zip(id.bytes()) {
        *k ^= b;
    }
    Arc::new(LocalKek::new(id, key))
}

/// The keyring of [`Keying::Keyring`]: `kek("primary")`.
pub fn keyring() -> Keyring {
    Keyring::new(kek("primary"))
}

/// A KEK that counts the unwraps it is asked for and passes every call
/// to a real [`LocalKek`] (a wrapper, since no KEK reports its calls).
#[derive(Debug)]
pub struct CountingKek {
    pub inner: Arc<LocalKek>,
    pub unwraps: AtomicUsize,
}

impl CountingKek {
    pub fn new(id: &str) -> Arc<Self> {
        Arc::new(CountingKek {
            inner: kek(id),
            unwraps: AtomicUsize::new(0),
        })
    }

    pub fn unwraps(&self) -> usize {
        self.unwraps.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl KeyEncryptionKey for CountingKek {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn wrap(&self, data_key: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        self.inner.wrap(data_key, context).await
    }

    async fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        self.unwraps.fetch_add(1, Ordering::SeqCst);
        self.inner.unwrap(wrapped, context).await
    }
}

/// The key records in `inner` beside the object at `path` (raw paths).
pub async fn records_of(inner: &dyn ObjectStore, path: &Path) -> Vec<Path> {
    use futures::TryStreamExt;
    let name = format!("{}.cipherio-key.", path.filename().unwrap());
    let all: Vec<_> = inner.list(None).try_collect().await.unwrap();
    all.into_iter()
        .map(|m| m.location)
        .filter(|p| p.filename().unwrap().starts_with(&name) && p.prefix_matches(&dir(path)))
        .collect()
}

/// The one key record beside the object at `path`.
pub async fn record_of(inner: &dyn ObjectStore, path: &Path) -> Path {
    let mut records = records_of(inner, path).await;
    assert_eq!(records.len(), 1, "{path}: {records:?}");
    records.pop().unwrap()
}

fn dir(path: &Path) -> Path {
    let parts: Vec<_> = path.parts().collect();
    Path::from_iter(parts[..parts.len() - 1].iter().cloned())
}

/// A KEK that runs a task once, inside the first `wrap` after it is
/// armed, and passes every call to a real [`LocalKek`]: another writer
/// acting at a given point of an operation (a wrapper, since no real
/// KEK can be told when to let others act).
pub struct HookedKek {
    pub inner: Arc<LocalKek>,
    hook: std::sync::Mutex<Option<futures::future::BoxFuture<'static, ()>>>,
}

impl HookedKek {
    pub fn new(id: &str) -> Arc<Self> {
        Arc::new(HookedKek {
            inner: kek(id),
            hook: std::sync::Mutex::new(None),
        })
    }

    /// Runs `task` inside the next `wrap`.
    pub fn arm(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        *self.hook.lock().unwrap() = Some(Box::pin(task));
    }
}

impl std::fmt::Debug for HookedKek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedKek")
            .field("inner", &self.inner)
            .finish()
    }
}

#[async_trait]
impl KeyEncryptionKey for HookedKek {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn wrap(&self, data_key: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook.await;
        }
        self.inner.wrap(data_key, context).await
    }

    async fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        self.inner.unwrap(wrapped, context).await
    }
}

/// The inner stores every keyring case runs over: memory, and files in a
/// directory of their own (kept while the returned directory lives).
pub fn inners() -> Vec<(Arc<dyn ObjectStore>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let files = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    vec![
        (Arc::new(object_store::memory::InMemory::new()), None),
        (Arc::new(files), Some(dir)),
    ]
}
