//! The opened headers of recently read objects, per (path, `ETag`), so that
//! a ranged read of a known version costs one GET; and the unwrapped data
//! keys of objects written through a keyring.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cipherio::cobblestone::CobblestoneKey;
use cipherio::segments::{Layout, SegmentOpener};
use object_store::path::Path;

/// One version of one object: what a ranged read needs besides the bytes.
#[derive(Clone, Debug)]
pub(crate) struct Pinned {
    /// The version's `ETag`, sent as `If-Match` with every ranged GET so
    /// that all bytes of one read come from this version.
    pub e_tag: Option<String>,
    /// The version id, where the store has versions.
    pub version: Option<String>,
    /// The ciphertext length.
    pub size: u64,
    /// The opener of the object's stream (its header, key and name).
    pub opener: SegmentOpener,
    /// The stream's header, what finds the object's key record.
    pub header: Vec<u8>,
}

impl Pinned {
    pub(crate) fn layout(&self) -> Layout {
        self.opener.layout()
    }

    /// The plaintext length, `None` when no stream of this header is
    /// `size` bytes long.
    pub(crate) fn plaintext_len(&self) -> Option<u64> {
        self.layout().plaintext_len(self.size)
    }
}

/// A bounded map from path to the last version read there; the oldest
/// entry goes first when it is full. Its `Debug` says how full it is, not
/// which paths it holds.
pub(crate) struct HeaderCache {
    capacity: usize,
    entries: Mutex<(HashMap<Path, Pinned>, VecDeque<Path>)>,
}

impl std::fmt::Debug for HeaderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.entries.lock().map_or(0, |g| g.0.len());
        f.debug_struct("HeaderCache")
            .field("capacity", &self.capacity)
            .field("len", &len)
            .finish()
    }
}

impl HeaderCache {
    pub(crate) fn new(capacity: usize) -> Self {
        HeaderCache {
            capacity,
            entries: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    pub(crate) fn get(&self, path: &Path) -> Option<Pinned> {
        let guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.get(path).cloned()
    }

    /// Remembers `pinned` for `path`; only versions with an `ETag` (the
    /// only ones a later read can pin to) are kept.
    pub(crate) fn insert(&self, path: &Path, pinned: &Pinned) {
        if self.capacity == 0 || pinned.e_tag.is_none() {
            return;
        }
        let mut guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *guard;
        if map.insert(path.clone(), pinned.clone()).is_none() {
            order.push_back(path.clone());
        }
        while map.len() > self.capacity {
            match order.pop_front() {
                Some(old) => {
                    map.remove(&old);
                }
                None => break,
            }
        }
    }

    pub(crate) fn remove(&self, path: &Path) {
        let mut guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *guard;
        if map.remove(path).is_some() {
            order.retain(|p| p != path);
        }
    }
}

/// Unwrapped data keys, per (path, stream header), so that reading one
/// object again costs no unwrap: at most `capacity` of them, each for at
/// most `ttl` after it was unwrapped; the oldest goes first when it is
/// full. A key is wiped when it leaves (the key's bytes zeroize on
/// drop). Its `Debug` says how full it is, never which paths or keys.
pub(crate) struct KeyCache {
    capacity: usize,
    ttl: Duration,
    entries: Mutex<VecDeque<CachedKey>>,
}

/// A cached data key: the object's path and stream header, the key, and
/// when it was unwrapped.
type CachedKey = (Path, Vec<u8>, CobblestoneKey, Instant);

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.entries.lock().map_or(0, |g| g.len());
        f.debug_struct("KeyCache")
            .field("capacity", &self.capacity)
            .field("ttl", &self.ttl)
            .field("len", &len)
            .finish()
    }
}

impl KeyCache {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        KeyCache {
            capacity,
            ttl,
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// The data key of the stream `header` at `path`, if cached and not
    /// expired (expired ones are dropped on the way).
    pub(crate) fn get(&self, path: &Path, header: &[u8]) -> Option<CobblestoneKey> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| e.3.elapsed() < self.ttl);
        entries
            .iter()
            .find(|e| &e.0 == path && e.1 == header)
            .map(|e| e.2.clone())
    }

    pub(crate) fn insert(&self, path: &Path, header: &[u8], key: &CobblestoneKey) {
        if self.capacity == 0 || self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| !(&e.0 == path && e.1 == header));
        entries.push_back((path.clone(), header.to_vec(), key.clone(), Instant::now()));
        while entries.len() > self.capacity {
            entries.pop_front();
        }
    }
}
