//! Objects under a keyring: each has its own data key, wrapped by a KEK
//! and kept in a key record beside the object, named by the object's
//! salt.

use std::sync::Arc;
use std::time::Duration;

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::segments::{SegmentOpener, SegmentSealer};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload, Result};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::cache::KeyCache;
use crate::kek::{Keyring, KeyringError};
use crate::parallel::{PlanSource, UploadOptions, UploadPlan, WrappedKey, plan};
use crate::store::{EncryptedStore, StoreKey};
use crate::{generic, store_error};

/// What every object's data key is: a Cobblestone-256 input key, so that
/// the stream under it commits to it.
pub(crate) const DATA_KEY: Instantiation = Instantiation::Cobblestone256;
/// What names a key record: the object's name, this, its salt (hex).
const RECORD: &str = ".cipherio-key.";
/// The bytes of a Cobblestone salt, the first of its header.
const SALT: usize = 24;
/// The key records' format version.
const FORMAT: u32 = 1;
/// The default number of unwrapped data keys cached, and for how long.
pub(crate) const DEFAULT_KEYS: usize = 1024;
pub(crate) const DEFAULT_KEY_TTL: Duration = Duration::from_secs(300);

/// A key record: its format version, which KEK wrapped the data key,
/// and the wrapped key.
#[derive(Serialize, Deserialize)]
struct Record {
    version: u32,
    #[serde(flatten)]
    key: WrappedKey,
}

/// Where the key record of the stream `header` at `path` lives.
fn record_path(path: &Path, header: &[u8]) -> Result<Path> {
    let salt = header
        .get(..SALT)
        .ok_or_else(|| store_error(cipherio::Error::Truncated))?;
    Ok(Path::parse(format!("{path}{RECORD}{}", hex::encode(salt)))?)
}

/// Whether `path` names a key record (which listings do not show).
pub(crate) fn is_record(path: &Path) -> bool {
    path.filename()
        .and_then(|f| f.rsplit_once(RECORD))
        .is_some_and(|(_, salt)| {
            salt.len() == 2 * SALT && salt.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// What a wrapped data key is bound to: the object's path, the KEK's id
/// and the object's stream header (salt and key commitment), each
/// length-prefixed.
fn context(path: &Path, kek: &str, header: &[u8]) -> Vec<u8> {
    let mut c = b"cipherio-object-store data key v1".to_vec();
    for part in [path.as_ref().as_bytes(), kek.as_bytes(), header] {
        c.extend_from_slice(&(part.len() as u64).to_be_bytes());
        c.extend_from_slice(part);
    }
    c
}

/// The key records of a write: the new object's, and the one of the
/// version it replaces.
#[derive(Debug)]
pub(crate) struct Records {
    inner: Arc<dyn ObjectStore>,
    new: Path,
    stale: Option<Path>,
}

impl Records {
    /// The object is written: the replaced version's record goes (if
    /// that fails, it stays as an orphan, which nothing reads).
    pub(crate) async fn written(&self) {
        if let Some(stale) = &self.stale {
            let _ = self.inner.delete(stale).await;
        }
    }

    /// The object was not written, and the store said so for certain
    /// (an error that may hide a write keeps the record): its record
    /// goes. A store refuses for certain a create-only or conditional
    /// write that does not hold, and a mode or attributes it does not
    /// implement.
    pub(crate) async fn refused(&self, e: &object_store::Error) {
        if matches!(
            e,
            object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. }
                | object_store::Error::NotImplemented { .. }
                | object_store::Error::NotSupported { .. }
        ) {
            let _ = self.inner.delete(&self.new).await;
        }
    }

    /// The upload was aborted: the record of an object never written goes.
    pub(crate) async fn aborted(&self) {
        let _ = self.inner.delete(&self.new).await;
    }
}

/// What a cached data key is filed under beside its path: the stream's
/// header and the wrapped key its record holds now. A key is taken from
/// the cache only for the record it was unwrapped from, so a record
/// deleted, edited or swapped since is seen on the next read by every
/// store, the ones holding the key too.
fn cache_id(header: &[u8], key: &WrappedKey) -> Result<Vec<u8>> {
    let mut id = header.to_vec();
    id.extend(serde_json::to_vec(key).map_err(generic)?);
    Ok(id)
}

impl EncryptedStore {
    /// Objects in `inner`, each under its own random data key, wrapped by
    /// `keyring`'s primary KEK; otherwise as
    /// [`cobblestone`](Self::cobblestone) (each object one Cobblestone-256
    /// stream, the path bound).
    ///
    /// - **The data key** of each object is 32 fresh random bytes, the
    ///   Cobblestone input key of its stream. The stream commits to it:
    ///   its 56-byte header (salt and key commitment) opens under that
    ///   key only, so a wrong or swapped key is refused before any chunk
    ///   is opened, and one ciphertext never opens to two plaintexts.
    /// - **The key record.** The wrapped key lives in a small object
    ///   beside the data object, `<path>.cipherio-key.<salt>` (the salt
    ///   of the object's header, hex): a JSON record of the format
    ///   version, the KEK's id and the wrapped key. The wrap binds the
    ///   key to the object's path, the KEK's id and the object's header,
    ///   so a record moved to another object, or given another KEK id,
    ///   fails to unwrap. Records work on any store (a file system keeps
    ///   no attributes) and are left out of every listing; names of that
    ///   shape are the store's own. A record's file name is its object's
    ///   and 62 bytes more: on a file system whose names have at most 255
    ///   bytes, a `put` of an object whose file name is longer than about
    ///   190 bytes fails (before the object is written).
    /// - **Consistency.** A record names the one version of the object
    ///   whose salt it carries, and the key commitment in that version's
    ///   header checks the key: neither `ETag` nor version pinning is
    ///   needed. A `put` stores the new record first, then the object,
    ///   then deletes the record of the version it replaced (read from
    ///   that version's header, one ranged GET). A crash between the
    ///   writes leaves the old object readable and an orphan record
    ///   (never read; a store's refusal, as for a create-only `put` of an
    ///   existing path, deletes it at once); a crash after the object
    ///   leaves the replaced version's record as an orphan. Two writers
    ///   of one path at once (puts, or a put and a delete) may leave the
    ///   record of the version that lost as an orphan too.
    /// - **Copy, rename, delete.** `copy` and `rename` re-encrypt through
    ///   the client under a new data key and record, whatever the path
    ///   binding (the record binds the path); `delete` deletes the object,
    ///   then its record.
    /// - **Cost.** A `put` adds a ranged GET (the replaced version's
    ///   header) and a PUT (the record); every read adds a GET of the
    ///   record (a few hundred bytes), and an unwrap when its key is not
    ///   cached. Unwrapped keys are cached per (path, header, record):
    ///   1024 of them, for five minutes
    ///   ([`with_key_cache`](Self::with_key_cache)). Since every read
    ///   reads the record, a record deleted, edited or swapped is refused
    ///   on the next read by every store, those holding the key too:
    ///   deleting an object's record makes it unreadable at once.
    /// - **Parallel uploads**: [`create_plan`](Self::create_plan).
    /// - **Rotation and revocation**: [`rewrap`](Self::rewrap).
    ///
    /// # Panics
    ///
    /// If the system has no randomness (as [`CobblestoneKey::generate`]).
    pub fn with_keyring(inner: Arc<dyn ObjectStore>, keyring: Keyring) -> Self {
        Self::keyed(inner, StoreKey::Keyring(keyring), CHUNK_SIZE as u32)
    }

    /// Caches at most `entries` unwrapped data keys, each for at most
    /// `ttl` (0 of either: none; every read then unwraps its object's
    /// key). A key is wiped when it leaves the cache.
    #[must_use]
    pub fn with_key_cache(mut self, entries: usize, ttl: Duration) -> Self {
        self.keys = Arc::new(KeyCache::new(entries, ttl));
        self
    }

    /// Moves the data key of the object at `location` to the keyring's
    /// primary KEK, without moving its data: one ranged GET of its
    /// 56-byte header, one GET of its key record, an unwrap by the KEK
    /// the record names and a wrap by the primary, one PUT of the record,
    /// a second ranged GET of the header (well under 1 KiB whatever the
    /// object's size). Nothing is written when the primary wraps it
    /// already. Afterwards a keyring without the primary reads nothing
    /// of the object. When a put or delete replaced the object meanwhile
    /// (the second GET shows another header, or none), the record written
    /// back names no object and is deleted; the new version keeps the
    /// record its writer gave it.
    ///
    /// **Revocation** is rewrap to a new KEK: rewrap every object, then
    /// retire the old KEK (drop it from every keyring, destroy it in its
    /// key service). What that does not undo: rewrap leaves the data key
    /// as it was (the data is not re-encrypted), so an attacker who kept
    /// an old record (the wrapped key) and can still use the old KEK, or
    /// who kept the unwrapped data key, still decrypts this object's
    /// data, the same ciphertext they could already reach. Objects
    /// written afterwards have new data keys, out of their reach. To cut
    /// such a holder off from an existing object, write it again (a new
    /// data key). A running store reads the record on every read: a data
    /// key it cached from the record before the rewrap is not used after
    /// it, so a store without the new KEK is refused at once.
    ///
    /// # Errors
    ///
    /// The store's (`NotFound` for no object); a store without a keyring;
    /// [`KeyringError`] (see [`keyring_error`](crate::keyring_error)) for a
    /// missing record, an unknown KEK or a key that does not unwrap; a
    /// key that does not open the object's header
    /// ([`cipherio::Error::Authentication`]).
    pub async fn rewrap(&self, location: &Path) -> Result<()> {
        let StoreKey::Keyring(keyring) = self.key() else {
            return Err(generic("rewrap: this store has no keyring"));
        };
        let header = self.current_header(location).await?;
        let (at, record) = self.record(location, &header).await?;
        let primary = keyring.primary();
        if record.key.kek == primary.id() {
            return Ok(());
        }
        let key = unwrap_key(keyring, location, &header, &record.key).await?;
        SegmentOpener::new(&key, &header, &self.aad(location)).map_err(store_error)?;
        let wrapped = wrap_key(keyring, location, &header, &key).await?;
        self.put_record(&at, wrapped).await?;
        // A put or delete that landed meanwhile replaced this version
        // and deleted its record, perhaps before it was written back:
        // the record then names no object, and goes.
        match self.current_header(location).await {
            Err(object_store::Error::NotFound { .. }) => {}
            Ok(now) if now != header => {}
            _ => return Ok(()),
        }
        let _ = self.inner().delete(&at).await;
        Ok(())
    }

    /// A new stream for the object at `path` under a fresh data key,
    /// whose record is stored before anything of the object.
    pub(crate) async fn keyed_stream(
        &self,
        keyring: &Keyring,
        path: &Path,
    ) -> Result<(SegmentSealer, Records)> {
        let (sealer, records, _) = self.keyed_stream_with(keyring, path).await?;
        Ok((sealer, records))
    }

    /// [`keyed_stream`](Self::keyed_stream), and the data key with it,
    /// plain and wrapped.
    async fn keyed_stream_with(
        &self,
        keyring: &Keyring,
        path: &Path,
    ) -> Result<(SegmentSealer, Records, (CobblestoneKey, WrappedKey))> {
        let stale = self
            .current_header(path)
            .await
            .ok()
            .and_then(|h| record_path(path, &h).ok());
        let key = CobblestoneKey::try_generate(DATA_KEY).map_err(store_error)?;
        let sealer = SegmentSealer::new(&key, self.layout().segment_size(), &self.aad(path))
            .map_err(store_error)?;
        let header = sealer.header();
        let wrapped = wrap_key(keyring, path, header, &key).await?;
        let new = record_path(path, header)?;
        self.put_record(&new, wrapped.clone()).await?;
        self.keys.insert(path, &cache_id(header, &wrapped)?, &key);
        let stale = stale.filter(|s| s != &new);
        let records = Records {
            inner: Arc::clone(self.inner()),
            new,
            stale,
        };
        Ok((sealer, records, (key, wrapped)))
    }

    /// Plans a parallel upload to `path` of an object under a fresh data
    /// key, as [`create_plan`](crate::create_plan) does under a key: the
    /// object's key record is stored first (beside it in this store's
    /// inner store, as for a `put`), and the plan carries the data key
    /// wrapped by the keyring's primary KEK, its MACs keyed from the data
    /// key. Workers take it to
    /// [`upload_share_with_keyring`](crate::upload_share_with_keyring)
    /// with a keyring that holds the KEK (and no other key); the
    /// coordinator completes it with
    /// [`complete_plan_with_keyring`](crate::complete_plan_with_keyring).
    /// The segment size and the path binding are this store's (Cobblestone
    /// chunks), whatever `options` says. The record of a version the
    /// upload replaces stays, as an orphan; a plan that fails to be made
    /// deletes its record.
    ///
    /// # Errors
    ///
    /// A store without a keyring; as [`create_plan`](crate::create_plan).
    pub async fn create_plan(
        &self,
        multipart: &dyn MultipartStore,
        path: &Path,
        source: impl Into<PlanSource>,
        options: &UploadOptions,
    ) -> Result<UploadPlan> {
        let Some(keyring) = self.keyring() else {
            return Err(generic("create_plan: this store has no keyring"));
        };
        let (sealer, records, (key, wrapped)) = self.keyed_stream_with(keyring, path).await?;
        let options = UploadOptions {
            segment_size: self.layout().segment_size(),
            bind_path: self.binds_path(),
            ..options.clone()
        };
        let source = source.into();
        let planned = plan(
            multipart,
            &key,
            &sealer,
            path,
            source,
            &options,
            Some(wrapped),
        )
        .await;
        // No plan, no object under this key: its record goes.
        if planned.is_err() {
            records.aborted().await;
        }
        planned
    }

    /// The data key of the stream `header` at `path`: cached, else
    /// unwrapped from its record.
    pub(crate) async fn data_key(
        &self,
        keyring: &Keyring,
        path: &Path,
        header: &[u8],
    ) -> Result<CobblestoneKey> {
        let (_, record) = self.record(path, header).await?;
        let id = cache_id(header, &record.key)?;
        if let Some(key) = self.keys.get(path, &id) {
            return Ok(key);
        }
        let key = unwrap_key(keyring, path, header, &record.key).await?;
        self.keys.insert(path, &id, &key);
        Ok(key)
    }

    /// The key record of the stream `header` at `path`, and where it is.
    async fn record(&self, path: &Path, header: &[u8]) -> Result<(Path, Record)> {
        let at = record_path(path, header)?;
        let bytes = match self.inner_get(&at, GetOptions::default()).await {
            Err(object_store::Error::NotFound { .. }) => {
                return Err(generic(KeyringError::MissingRecord {
                    path: path.to_string(),
                }));
            }
            r => r?.bytes().await?,
        };
        self.received()
            .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let record = serde_json::from_slice::<Record>(&bytes)
            .ok()
            .filter(|r| r.version == FORMAT)
            .ok_or_else(|| {
                generic(KeyringError::BadRecord {
                    path: path.to_string(),
                })
            })?;
        Ok((at, record))
    }

    async fn put_record(&self, at: &Path, key: WrappedKey) -> Result<()> {
        let record = Record {
            version: FORMAT,
            key,
        };
        let bytes = serde_json::to_vec(&record).map_err(generic)?;
        self.inner().put(at, PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// The stream header of the object at `path` now: one ranged GET.
    pub(crate) async fn current_header(&self, path: &Path) -> Result<Vec<u8>> {
        let len = self.layout().header_len();
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..len)),
            ..GetOptions::default()
        };
        let bytes = self.inner_get(path, opts).await?.bytes().await?;
        self.received()
            .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(bytes.to_vec())
    }

    /// Deletes the object at `path`, then its key record (which names
    /// its header, read first).
    pub(crate) async fn delete_keyed(
        inner: Arc<dyn ObjectStore>,
        header_len: u64,
        path: Path,
    ) -> Result<Path> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..header_len)),
            ..GetOptions::default()
        };
        let header = match inner.get_opts(&path, opts).await {
            Ok(r) => r.bytes().await.ok(),
            Err(_) => None,
        };
        inner.delete(&path).await?;
        if let Some(at) = header.and_then(|h| record_path(&path, &h).ok()) {
            let _ = inner.delete(&at).await;
        }
        Ok(path)
    }
}

/// `key`, the data key of the stream `header` at `path`, wrapped by the
/// keyring's primary KEK.
async fn wrap_key(
    keyring: &Keyring,
    path: &Path,
    header: &[u8],
    key: &CobblestoneKey,
) -> Result<WrappedKey> {
    let primary = keyring.primary();
    let wrapped = primary
        .wrap(key.as_bytes(), &context(path, primary.id(), header))
        .await?;
    Ok(WrappedKey {
        kek: primary.id().to_string(),
        wrapped: hex::encode(wrapped),
    })
}

/// The data key of the stream `header` at `path`, unwrapped from
/// `wrapped` by the keyring's KEK of that id.
async fn unwrap_key(
    keyring: &Keyring,
    path: &Path,
    header: &[u8],
    wrapped: &WrappedKey,
) -> Result<CobblestoneKey> {
    let refused = || {
        generic(KeyringError::Unwrap {
            kek: wrapped.kek.clone(),
        })
    };
    let kek = keyring.find(&wrapped.kek).map_err(generic)?;
    let bytes = hex::decode(&wrapped.wrapped).map_err(|_| refused())?;
    let key = Zeroizing::new(
        kek.unwrap(&bytes, &context(path, &wrapped.kek, header))
            .await?,
    );
    CobblestoneKey::new(DATA_KEY, &key).map_err(|_| refused())
}

/// The data key of a plan made by [`EncryptedStore::create_plan`],
/// unwrapped through `keyring`.
async fn plan_key(keyring: &Keyring, plan: &UploadPlan) -> Result<CobblestoneKey> {
    let wrapped = plan
        .data_key
        .as_ref()
        .ok_or_else(|| generic("the upload plan carries no wrapped data key"))?;
    let header = hex::decode(&plan.header).map_err(generic)?;
    unwrap_key(keyring, &Path::parse(&plan.path)?, &header, wrapped).await
}

/// [`upload_share`](crate::upload_share) of a plan made by
/// [`EncryptedStore::create_plan`]: the data key is unwrapped from the
/// plan through `keyring` (a worker holds KEKs, or handles to them in a
/// key service, and never a master key), then the plan is checked under
/// it and the parts sealed.
///
/// # Errors
///
/// A plan without a wrapped data key; [`KeyringError`] for a key that the
/// keyring cannot unwrap; as [`upload_share`](crate::upload_share).
pub async fn upload_share_with_keyring(
    store: Arc<dyn MultipartStore>,
    keyring: &Keyring,
    plan: &UploadPlan,
    share: &[u32],
    source: crate::Source,
    workers: usize,
) -> Result<Vec<crate::PartDone>> {
    let key = plan_key(keyring, plan).await?;
    crate::upload_share(store, &key, plan, share, source, workers).await
}

/// [`complete_plan_checked`](crate::complete_plan_checked) of a plan made
/// by [`EncryptedStore::create_plan`], its data key unwrapped through
/// `keyring`.
///
/// # Errors
///
/// As [`upload_share_with_keyring`] and
/// [`complete_plan_checked`](crate::complete_plan_checked).
pub async fn complete_plan_with_keyring(
    store: &dyn MultipartStore,
    keyring: &Keyring,
    plan: &UploadPlan,
    done: Vec<crate::PartDone>,
) -> Result<object_store::PutResult> {
    let key = plan_key(keyring, plan).await?;
    crate::complete_plan_checked(store, &key, plan, done).await
}
