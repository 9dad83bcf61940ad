//! The opened headers of recently read objects, per (path, `ETag`), so that
//! a ranged read of a known version costs one GET.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

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
