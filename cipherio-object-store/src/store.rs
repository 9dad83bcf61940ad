//! `EncryptedStore`: an `ObjectStore` that keeps every object as one
//! cipherio stream in an inner store and presents its plaintext.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use cipherio::Key;
use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey};
use cipherio::segments::{Layout, SegmentOpener, SegmentSealer};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, CopyMode, CopyOptions, GetOptions, GetResult, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use zeroize::Zeroizing;

use crate::cache::{HeaderCache, KeyCache};
use crate::kek::Keyring;
use crate::keyring::{DATA_KEY, DEFAULT_KEY_TTL, DEFAULT_KEYS, Records, is_record};
use crate::upload::EncryptedUpload;
use crate::{generic, store_error};

/// The metadata key under which the store keeps a copy of each object's
/// header (hex), where the inner store keeps attributes.
pub(crate) const HEADER_ATTRIBUTE: &str = "cipherio-header";

/// Client-side encryption for any [`ObjectStore`]: every object is stored
/// as one cipherio stream (its 53-byte header, then sealed segments, as
/// [`cipherio::CipherWriter`] writes it), and every read returns
/// authenticated plaintext, so any `object_store` consumer works
/// unchanged. [`cobblestone`](Self::cobblestone) stores Cobblestone
/// streams instead (the 56-byte salt and key commitment, then 16 KiB
/// chunks), read and sized by the same rules, and
/// [`with_keyring`](Self::with_keyring) stores each object as a
/// Cobblestone stream under a data key of its own, wrapped by a
/// key-encryption key in a key record beside it.
///
/// - **Reads.** A whole `get` is one GET, opened segment by segment as it
///   streams. A ranged `get` maps the plaintext range to the segments
///   that hold it and fetches them with one ranged GET, pinned to one
///   version of the object with `If-Match`; the header comes from a
///   small per-path cache keyed by `ETag`, else from the object's
///   metadata (where the inner store keeps attributes: a copy of the
///   header is stored under `cipherio-header`), else from a second GET of
///   its first 53 bytes. [`get_requests`](Self::get_requests) counts the
///   GETs.
/// - **Sizes.** `head` and every listing (`list`, `list_with_offset`,
///   `list_with_delimiter`) report plaintext sizes, all computed alike:
///   from the ciphertext size with the segment size of the object's
///   cached header, else this store's (an object written with another
///   segment size is sized right once its header is cached, and always
///   read right). An object whose length no stream has (not a cipherio
///   object, or one cut short) is listed with size 0 and never fails a
///   listing; `head` and `get` of it fail.
/// - **Names.** By default the object's path is the stream's associated
///   data: an object moved or copied to another name by anyone but this
///   store fails to open. `copy` and `rename` then re-encrypt through the
///   client: a GET streamed into a `put_multipart` upload (one PUT for an
///   object no larger than a part, and for the `Create` modes, which a
///   multipart upload cannot honour) and, for a rename, a DELETE. Turn
///   it off with [`with_path_binding(false)`](Self::with_path_binding)
///   and they are the inner store's server-side copy and rename, at the
///   price of objects that can be moved undetected.
/// - **Errors.** A failure to authenticate or to parse is an
///   [`object_store::Error::Generic`] whose source is the
///   [`cipherio::Error`] a [`cipherio::CipherReader`] gives for the same
///   bytes: get it back with [`cipher_error`](crate::cipher_error). An
///   object whose length no stream of its header has is refused as
///   [`cipherio::Error::Truncated`] from its length alone, without
///   fetching its segments (a reader of all its bytes may name it
///   `TrailingData`). A store that answers a ranged GET with more or
///   fewer bytes than asked gives an error, never a panic.
/// - **Onto itself.** `copy(a, a)` and `rename(a, a)` leave the object as
///   it was (they fail only if it does not exist, or for the `Create`
///   modes, since it does).
/// - **Not offered.** [`object_store::multipart::MultipartStore`]: a part
///   given by index cannot be sealed without knowing where it lies in the
///   stream. Use [`put_multipart`](object_store::ObjectStoreExt::put_multipart)
///   (parts sealed in order as they fill) or
///   [`upload_parallel`](crate::upload_parallel) (parts planned from
///   the layout).
///
/// Rolling an object back to an older version under the same key and
/// name is not detected.
pub struct EncryptedStore {
    inner: Arc<dyn ObjectStore>,
    key: StoreKey,
    layout: Layout,
    bind_path: bool,
    /// Whether to store the header as an attribute: on until the inner
    /// store says it keeps none.
    header_attribute: AtomicBool,
    part_size: u64,
    pub(crate) cache: Arc<HeaderCache>,
    /// Unwrapped data keys, for a store with a keyring.
    pub(crate) keys: Arc<KeyCache>,
    gets: AtomicU64,
    fetched: Arc<AtomicU64>,
}

/// The default plaintext bytes of one segment.
const DEFAULT_SEGMENT_SIZE: u32 = 64 << 10;
/// The default ciphertext bytes of one part of a `put_multipart` upload.
const DEFAULT_PART_SIZE: u64 = 10 << 20;
/// The default number of objects whose header is cached.
const DEFAULT_CACHE: usize = 1024;

impl EncryptedStore {
    /// Objects in `inner`, sealed under `key`: 64 KiB segments, the path
    /// bound, the header kept as an attribute where `inner` keeps them,
    /// `put_multipart` parts of 10 MiB, the headers of 1024 objects
    /// cached.
    ///
    /// # Panics
    ///
    /// If the system has no randomness (as [`Key::generate`]).
    pub fn new(inner: Arc<dyn ObjectStore>, key: Key) -> Self {
        Self::keyed(inner, StoreKey::Native(key), DEFAULT_SEGMENT_SIZE)
    }

    /// Objects in `inner`, each stored as one Cobblestone stream under
    /// `key` (its 56-byte salt and key commitment, then 16 KiB chunks),
    /// the bytes any Cobblestone implementation opens with the object's
    /// path as the context (none with
    /// [`with_path_binding(false)`](Self::with_path_binding)). Otherwise
    /// as [`new`](Self::new): ranged reads, sizes, `put_multipart`. The
    /// chunk size is the format's: [`with_segment_size`](Self::with_segment_size)
    /// refuses any other.
    ///
    /// # Panics
    ///
    /// If the system has no randomness (as [`CobblestoneKey::generate`]).
    pub fn cobblestone(inner: Arc<dyn ObjectStore>, key: CobblestoneKey) -> Self {
        Self::keyed(inner, StoreKey::Cobblestone(key), CHUNK_SIZE as u32)
    }

    pub(crate) fn keyed(inner: Arc<dyn ObjectStore>, key: StoreKey, segment_size: u32) -> Self {
        let layout = layout_of(&key, segment_size)
            .unwrap_or_else(|e| panic!("no layout for the default segment size: {e}"));
        EncryptedStore {
            inner,
            key,
            layout,
            bind_path: true,
            header_attribute: AtomicBool::new(true),
            part_size: DEFAULT_PART_SIZE,
            cache: Arc::new(HeaderCache::new(DEFAULT_CACHE)),
            keys: Arc::new(KeyCache::new(DEFAULT_KEYS, DEFAULT_KEY_TTL)),
            gets: AtomicU64::new(0),
            fetched: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Writes segments of `segment_size` plaintext bytes (reads take the
    /// size from each object's header).
    ///
    /// # Errors
    ///
    /// [`cipherio::Error::InvalidCapacity`] for 0 or more than 16 MiB.
    pub fn with_segment_size(mut self, segment_size: u32) -> Result<Self, cipherio::Error> {
        self.layout = layout_of(&self.key, segment_size)?;
        Ok(self)
    }

    /// Binds each object's path as its associated data (the default), or
    /// not. Objects written one way do not open the other way.
    #[must_use]
    pub fn with_path_binding(mut self, bind: bool) -> Self {
        self.bind_path = bind;
        self
    }

    /// Keeps a copy of each object's header in its metadata (the default,
    /// where the inner store keeps attributes), so that a ranged read of
    /// an object whose header is not cached is one GET, not two.
    #[must_use]
    pub fn with_header_attribute(self, keep: bool) -> Self {
        self.header_attribute.store(keep, Ordering::Relaxed);
        self
    }

    /// The ciphertext bytes of each part but the last that a
    /// `put_multipart` upload sends (the header counts in the first
    /// part's). Stores with a smallest part (S3: 5 MiB) need at least
    /// that.
    #[must_use]
    pub fn with_part_size(mut self, part_size: u64) -> Self {
        self.part_size = part_size;
        self
    }

    /// Caches the headers of at most `entries` objects (0: none; every
    /// ranged read of an object whose metadata holds no header is then
    /// two GETs).
    #[must_use]
    pub fn with_header_cache(mut self, entries: usize) -> Self {
        self.cache = Arc::new(HeaderCache::new(entries));
        self
    }

    /// The store the ciphertext lives in.
    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    /// The layout of the objects this store writes.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// GET requests (whole or ranged, not HEAD) sent to the inner store so
    /// far.
    pub fn get_requests(&self) -> u64 {
        self.gets.load(Ordering::Relaxed)
    }

    /// Bytes of ciphertext received from the inner store's GETs so far.
    pub fn bytes_fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// Counts `n` bytes received.
    pub(crate) fn received(&self) -> &Arc<AtomicU64> {
        &self.fetched
    }

    pub(crate) fn key(&self) -> &StoreKey {
        &self.key
    }

    /// Whether each object's path is its associated data.
    pub(crate) fn binds_path(&self) -> bool {
        self.bind_path
    }

    /// The associated data of the object at `path`.
    pub(crate) fn aad(&self, path: &Path) -> Vec<u8> {
        if self.bind_path {
            path.as_ref().as_bytes().to_vec()
        } else {
            Vec::new()
        }
    }

    /// A GET on the inner store, counted.
    pub(crate) async fn inner_get(&self, path: &Path, options: GetOptions) -> Result<GetResult> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.inner.get_opts(path, options).await
    }

    /// `meta` with the plaintext size (see [`plaintext_size`]), or an
    /// error for a length no stream has.
    pub(crate) fn plaintext_meta(&self, meta: ObjectMeta) -> Result<ObjectMeta> {
        let size = plaintext_size(&self.cache, self.layout, &meta).ok_or_else(|| {
            generic(format!(
                "{}: {} bytes is no encrypted object's length",
                meta.location, meta.size
            ))
        })?;
        Ok(ObjectMeta { size, ..meta })
    }

    /// A listing of the inner store's, sized as every listing is.
    fn listed(
        &self,
        list: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let (cache, layout) = (Arc::clone(&self.cache), self.layout);
        let keyed = self.keyring().is_some();
        list.try_filter(move |m| futures::future::ready(!(keyed && is_record(&m.location))))
            .map_ok(move |m| listed_meta(&cache, layout, m))
            .boxed()
    }

    /// A copy or rename of `path` onto itself: the object stays as it
    /// was; the answer is whether it exists and, for `create`, that it
    /// does.
    async fn onto_itself(&self, path: &Path, create: bool) -> Result<()> {
        object_store::ObjectStoreExt::head(&self.inner, path).await?;
        if create {
            return Err(object_store::Error::AlreadyExists {
                path: path.to_string(),
                source: "copied or renamed onto itself".into(),
            });
        }
        Ok(())
    }

    /// `attributes` with the store's header attribute added, if it keeps
    /// them.
    fn with_header(&self, attributes: &Attributes, header: &[u8]) -> Option<Attributes> {
        if !self.header_attribute.load(Ordering::Relaxed) {
            return None;
        }
        let mut a = attributes.clone();
        a.insert(header_key(), hex::encode(header).into());
        Some(a)
    }

    /// Runs `op` with the header attribute added; if the inner store keeps
    /// no attributes and the caller asked for none, stops adding it and
    /// runs `op` without.
    async fn try_with_header<T, F, Fut>(
        &self,
        attributes: &Attributes,
        header: &[u8],
        op: F,
    ) -> Result<T>
    where
        F: Fn(Attributes) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let Some(with) = self.with_header(attributes, header) else {
            return op(attributes.clone()).await;
        };
        match op(with).await {
            Err(object_store::Error::NotImplemented { .. }) if attributes.is_empty() => {
                self.header_attribute.store(false, Ordering::Relaxed);
                op(attributes.clone()).await
            }
            other => other,
        }
    }

    /// The keyring, for a store that has one.
    pub(crate) fn keyring(&self) -> Option<&Keyring> {
        match &self.key {
            StoreKey::Keyring(k) => Some(k),
            _ => None,
        }
    }

    /// A new stream for the object at `path`; through a keyring, under a
    /// fresh data key whose record is stored first (the records of the
    /// write come with it).
    async fn new_stream(&self, path: &Path) -> Result<(SegmentSealer, Option<Records>)> {
        if let Some(keyring) = self.keyring() {
            let (sealer, records) = self.keyed_stream(keyring, path).await?;
            return Ok((sealer, Some(records)));
        }
        let sealer = self
            .key
            .sealer(self.layout.segment_size(), &self.aad(path))
            .map_err(store_error)?;
        Ok((sealer, None))
    }

    /// The opener of the stream that `header` starts (or whose first
    /// bytes it holds) at `path`; through a keyring, under the object's
    /// data key.
    pub(crate) async fn opener(&self, path: &Path, header: &[u8]) -> Result<SegmentOpener> {
        let aad = self.aad(path);
        match &self.key {
            StoreKey::Keyring(keyring) => {
                let header = &header[..header.len().min(self.layout.header_len() as usize)];
                let key = self.data_key(keyring, path, header).await?;
                SegmentOpener::new(&key, header, &aad)
            }
            key => key.opener(header, &aad),
        }
        .map_err(store_error)
    }

    /// The layout of the stream `header` starts at `path`, where it can
    /// be told without fetching anything more: from the header under the
    /// store's key, or, through a keyring, the format's.
    pub(crate) fn header_layout(&self, path: &Path, header: &[u8]) -> Option<Layout> {
        match &self.key {
            StoreKey::Keyring(_) => Some(self.layout),
            key => key.opener(header, &self.aad(path)).ok().map(|o| o.layout()),
        }
    }

    /// Whether copies and renames go through the client: with the path
    /// bound, or with a keyring (whose records bind the path).
    fn moves_through_client(&self) -> bool {
        self.bind_path || self.keyring().is_some()
    }

    /// The ciphertext of a whole object: header and segments.
    fn seal_all(sealer: &SegmentSealer, payload: &PutPayload) -> Result<Vec<u8>> {
        let mut plaintext = Zeroizing::new(Vec::with_capacity(payload.content_length()));
        payload.iter().for_each(|b| plaintext.extend_from_slice(b));
        let mut out = sealer.header().to_vec();
        sealer
            .seal_segments(0, &plaintext, true, &mut out)
            .map_err(store_error)?;
        Ok(out)
    }
}

/// The layout of streams of `segment_size` under `key`.
fn layout_of(key: &StoreKey, segment_size: u32) -> Result<Layout, cipherio::Error> {
    Ok(key.sealer(segment_size, b"")?.layout())
}

/// The key a store seals under, which names the format of its objects.
#[derive(Clone, Debug)]
pub(crate) enum StoreKey {
    Native(Key),
    Cobblestone(CobblestoneKey),
    /// Each object under its own data key, which the keyring wraps.
    Keyring(Keyring),
}

impl StoreKey {
    /// A new stream of `segment_size`-byte segments; through a keyring,
    /// under a fresh data key of which no record is kept (for its layout
    /// only: [`EncryptedStore::new_stream`] makes the keyed streams).
    fn sealer(&self, segment_size: u32, aad: &[u8]) -> Result<SegmentSealer, cipherio::Error> {
        match self {
            StoreKey::Native(k) => SegmentSealer::new(k, segment_size, aad),
            StoreKey::Cobblestone(k) => SegmentSealer::new(k, segment_size, aad),
            StoreKey::Keyring(_) => {
                SegmentSealer::new(&CobblestoneKey::try_generate(DATA_KEY)?, segment_size, aad)
            }
        }
    }

    /// The opener of the stream that `header` starts under this key; a
    /// keyring opens none by itself ([`EncryptedStore::opener`] does).
    fn opener(&self, header: &[u8], aad: &[u8]) -> Result<SegmentOpener, cipherio::Error> {
        match self {
            StoreKey::Native(k) => SegmentOpener::new(k, header, aad),
            StoreKey::Cobblestone(k) => SegmentOpener::new(k, header, aad),
            StoreKey::Keyring(_) => Err(cipherio::Error::Authentication),
        }
    }
}

pub(crate) fn header_key() -> Attribute {
    Attribute::Metadata(HEADER_ATTRIBUTE.into())
}

/// `attributes` without the store's own.
pub(crate) fn user_attributes(mut attributes: Attributes) -> Attributes {
    attributes.remove(&header_key());
    attributes
}

/// Names the inner store as its `Display` does, and says how many headers
/// are cached, not which paths.
impl fmt::Debug for EncryptedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptedStore")
            .field("inner", &format_args!("{}", self.inner))
            .field("key", &self.key)
            .field("layout", &self.layout)
            .field("bind_path", &self.bind_path)
            .field("part_size", &self.part_size)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for EncryptedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncryptedStore({})", self.inner)
    }
}

// Every trait method is written here, none left to its default: a
// default built from the others could skip the encryption or the cache.
#[deny(clippy::missing_trait_methods)]
#[async_trait]
impl ObjectStore for EncryptedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let (sealer, records) = self.new_stream(location).await?;
        let sealed = PutPayload::from(Self::seal_all(&sealer, &payload)?);
        let result = self
            .try_with_header(&opts.attributes, sealer.header(), |attributes| {
                let opts = PutOptions {
                    attributes,
                    ..opts.clone()
                };
                self.inner.put_opts(location, sealed.clone(), opts)
            })
            .await;
        self.cache.remove(location);
        if let Some(records) = records {
            match &result {
                Ok(_) => records.written().await,
                Err(e) => records.refused(e).await,
            }
        }
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let (sealer, records) = self.new_stream(location).await?;
        let inner = self
            .try_with_header(&opts.attributes, sealer.header(), |attributes| {
                let opts = PutMultipartOptions {
                    attributes,
                    ..opts.clone()
                };
                self.inner.put_multipart_opts(location, opts)
            })
            .await;
        if let (Err(e), Some(records)) = (&inner, &records) {
            records.refused(e).await;
        }
        let inner = inner?;
        self.cache.remove(location);
        Ok(Box::new(EncryptedUpload::new(
            inner,
            sealer,
            self.part_size,
            records,
        )))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.get_impl(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<bytes::Bytes>> {
        self.get_ranges_impl(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let cache = Arc::clone(&self.cache);
        let locations = locations
            .inspect(move |p| {
                if let Ok(p) = p {
                    cache.remove(p);
                }
            })
            .boxed();
        if self.keyring().is_none() {
            return self.inner.delete_stream(locations);
        }
        // Each object, then its key record.
        let (inner, header_len) = (Arc::clone(&self.inner), self.layout.header_len());
        locations
            .and_then(move |p| Self::delete_keyed(Arc::clone(&inner), header_len, p))
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listed(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listed(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut list = self.inner.list_with_delimiter(prefix).await?;
        let keyed = self.keyring().is_some();
        list.objects = list
            .objects
            .into_iter()
            .filter(|m| !(keyed && is_record(&m.location)))
            .map(|m| listed_meta(&self.cache, self.layout, m))
            .collect();
        Ok(list)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        if from == to {
            return self
                .onto_itself(from, matches!(options.mode, CopyMode::Create))
                .await;
        }
        if !self.moves_through_client() {
            return self.inner.copy_opts(from, to, options).await;
        }
        // The name is in every segment's tag: the copy is a new stream
        // under the new name, through the client.
        let source = self.get_opts(from, GetOptions::default()).await?;
        let attributes = source.attributes.clone();
        let create = matches!(options.mode, CopyMode::Create);
        if !create && source.meta.size > self.part_size {
            // Streamed into a multipart upload: a part's worth held at a
            // time, and no single PUT's limit (S3: 5 GiB).
            let opts = PutMultipartOptions {
                attributes,
                ..PutMultipartOptions::default()
            };
            let mut upload = self.put_multipart_opts(to, opts).await?;
            let mut body = source.into_stream();
            while let Some(chunk) = body.next().await {
                let sent = match chunk {
                    Ok(b) => upload.put_part(b.into()).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = sent {
                    // The error to report is the first one.
                    let _ = upload.abort().await;
                    return Err(e);
                }
            }
            upload.complete().await?;
            return Ok(());
        }
        // One PUT (a multipart upload has no create-only mode).
        let plaintext = source.bytes().await?;
        let mode = if create {
            PutMode::Create
        } else {
            PutMode::Overwrite
        };
        let opts = PutOptions {
            mode,
            attributes,
            ..PutOptions::default()
        };
        self.put_opts(to, plaintext.into(), opts).await?;
        Ok(())
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::RenameOptions,
    ) -> Result<()> {
        let create = matches!(options.target_mode, object_store::RenameTargetMode::Create);
        if from == to {
            return self.onto_itself(from, create).await;
        }
        if !self.moves_through_client() {
            self.cache.remove(from);
            return self.inner.rename_opts(from, to, options).await;
        }
        let mode = if create {
            CopyMode::Create
        } else {
            CopyMode::Overwrite
        };
        self.copy_opts(from, to, CopyOptions::new().with_mode(mode))
            .await?;
        let mut deleted = self.delete_stream(futures::stream::iter([Ok(from.clone())]).boxed());
        while let Some(r) = deleted.next().await {
            r?;
        }
        Ok(())
    }
}

/// The plaintext size of the object `meta` describes: from its
/// ciphertext length, with the layout of its header when the cache holds
/// this version, else with `layout` (this store's); `None` when no stream
/// of that layout is that long.
fn plaintext_size(cache: &HeaderCache, layout: Layout, meta: &ObjectMeta) -> Option<u64> {
    let layout = match cache.get(&meta.location) {
        Some(p) if p.e_tag.is_some() && p.e_tag == meta.e_tag => p.layout(),
        _ => layout,
    };
    layout.plaintext_len(meta.size)
}

/// `meta` as a listing gives it: sized as [`plaintext_size`], 0 for an
/// object of a length no stream has (one this store cannot read).
fn listed_meta(cache: &HeaderCache, layout: Layout, meta: ObjectMeta) -> ObjectMeta {
    let size = plaintext_size(cache, layout, &meta).unwrap_or(0);
    ObjectMeta { size, ..meta }
}
