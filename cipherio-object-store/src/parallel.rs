//! Parallel uploads through [`MultipartStore`]: parts of one size planned
//! within the store's limits, sealed and sent by several tasks (or
//! processes), completed in order, aborted on any error.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::segments::{Layout, PartLimits, SegmentSealer};
use cipherio::{Algorithm, Key, ReadAt, StreamKey};
use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{PutPayload, PutResult, Result};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::{generic, store_error};

/// A positional source shared by the upload's tasks: cipherio's
/// [`ReadAt`] (a `File`, a `Vec<u8>`, a slice), from any thread.
pub type Source = Arc<dyn ReadAt + Send + Sync>;

/// What [`create_plan`] plans from: the source itself (safe), or only its
/// length.
///
/// From the source, the plan carries each part's plaintext MAC, and a
/// worker refuses a part whose plaintext changed since. From a length
/// alone it cannot: a source that changes between a part's first send and
/// a resend (or between the two parts that share a segment) has a segment
/// sealed twice under one nonce, from two plaintexts, and the store sees
/// both ciphertexts. Plan from the source ([`upload_parallel`] does).
///
/// Made from a `u64`, a [`Source`], or an `Arc` of any [`ReadAt`].
#[derive(Clone)]
pub enum PlanSource {
    /// Only the plaintext's length: the parts carry no plaintext MAC.
    Length(u64),
    /// The source, read once, whole, for each part's plaintext MAC.
    Source(Source),
}

impl From<u64> for PlanSource {
    fn from(len: u64) -> Self {
        PlanSource::Length(len)
    }
}

impl From<Source> for PlanSource {
    fn from(source: Source) -> Self {
        PlanSource::Source(source)
    }
}

impl<T: ReadAt + Send + Sync + 'static> From<Arc<T>> for PlanSource {
    fn from(source: Arc<T>) -> Self {
        PlanSource::Source(source)
    }
}

impl std::fmt::Debug for PlanSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanSource::Length(len) => f.debug_tuple("Length").field(len).finish(),
            PlanSource::Source(_) => f.debug_tuple("Source").finish_non_exhaustive(),
        }
    }
}

/// Fills `buf` from `source` at `offset`.
fn read_exact_at(source: &dyn ReadAt, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match source.read_at(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How [`upload_parallel`] and [`create_plan`] cut and send an upload.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    /// Plaintext bytes of a segment (default 64 KiB).
    pub segment_size: u32,
    /// Ciphertext bytes of a part, as near as the limits allow (default
    /// 16 MiB).
    pub part_size: u64,
    /// The store's limits on parts (default S3's).
    pub limits: PartLimits,
    /// Parts sealed and sent at once (default 4).
    pub workers: usize,
    /// Bind the path as associated data, as
    /// [`EncryptedStore`](crate::EncryptedStore) does by default (default
    /// on; must match the store that reads the object).
    pub bind_path: bool,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            segment_size: 64 << 10,
            part_size: 16 << 20,
            limits: PartLimits::S3,
            workers: 4,
            bind_path: true,
        }
    }
}

/// One planned part, as it travels to a worker: the stream bytes it
/// holds, and the segments sealed to make them.
///
/// Every part but the last is the plan's part size; the first holds the
/// header in its share, so a part's bytes need not start or end on a
/// segment boundary: a segment that two parts share is sealed by both,
/// from the same plaintext, and each sends its own side of it. The
/// plaintext's MAC, taken when the plan was made, is checked before the
/// part is sealed, so that no segment is sealed from bytes that changed
/// since (a plan made from a length alone has none: see [`PlanSource`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSpec {
    /// The part's place in the upload, from 0.
    pub number: u32,
    /// The stream bytes it holds: start (0 for the first part: the header).
    pub ciphertext_start: u64,
    /// The stream bytes it holds: end.
    pub ciphertext_end: u64,
    /// The index of the first segment it seals.
    pub first_segment: u32,
    /// The plaintext bytes it seals: start.
    pub plaintext_start: u64,
    /// The plaintext bytes it seals: end.
    pub plaintext_end: u64,
    /// It ends with the stream's final segment.
    pub last: bool,
    /// HMAC-SHA256 (hex) of the plaintext bytes it seals, under a key
    /// derived from the upload's key; none in a plan made from a length
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plaintext_mac: Option<String>,
}

/// A multipart upload in flight, serialisable (JSON) so that worker
/// processes can each take a share of its parts: the object's path, the
/// upload's id, the stream's header (hex), the part size and the parts,
/// and a MAC over all of them. It holds no key.
///
/// A worker seals only a plan that authenticates under its key and whose
/// parts are the ones the layout gives for its length and part size
/// (see [`upload_share`]): a plan edited on its way (two parts sealing
/// one segment, another stream's header, a part past the length) is
/// refused before anything is sealed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadPlan {
    /// The object's path.
    pub path: String,
    /// The multipart upload's id.
    pub upload_id: String,
    /// The stream's header, hex.
    pub header: String,
    /// Whether the path is the associated data.
    pub bind_path: bool,
    /// The plaintext's length.
    pub plaintext_len: u64,
    /// Ciphertext bytes of every part but the last.
    pub part_size: u64,
    /// The parts, in order.
    pub parts: Vec<PartSpec>,
    /// For an upload under a keyring: the object's data key, wrapped by a
    /// KEK (the plan's MACs are then keyed from the data key, and a worker
    /// unwraps it through the KEK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_key: Option<WrappedKey>,
    /// HMAC-SHA256 (hex) of every other field, under a key derived from
    /// the upload's key.
    pub mac: String,
}

/// A data key as a plan carries it: the id of the KEK that wrapped it,
/// and the wrapped key (hex), bound to the object's path, header and
/// that id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedKey {
    /// The KEK's id.
    pub kek: String,
    /// The wrapped key, hex.
    pub wrapped: String,
}

/// A part sent: its number and the id the store gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartDone {
    /// The part's place in the upload.
    pub number: u32,
    /// The store's id of the part (`PartId::content_id`).
    pub content_id: String,
}

/// The parts of a stream of `plaintext_len` bytes laid out as `layout`,
/// every part but the last `part_size` bytes of the stream, the last at
/// most that.
fn parts_of(layout: Layout, plaintext_len: u64, part_size: u64) -> Result<Vec<PartSpec>> {
    let (header, full) = (layout.header_len(), layout.sealed_segment_len());
    let total = layout.ciphertext_len(plaintext_len);
    let segments = layout.segment_count(plaintext_len);
    let size = part_size.max(1);
    let count = total.div_ceil(size);
    (0..count)
        .map(|k| {
            let start = k * size;
            let end = if k + 1 == count { total } else { start + size };
            let first = start.saturating_sub(header) / full;
            let past = (end - header).div_ceil(full).min(segments);
            Ok(PartSpec {
                number: u32::try_from(k).map_err(generic)?,
                ciphertext_start: start,
                ciphertext_end: end,
                first_segment: u32::try_from(first).map_err(generic)?,
                plaintext_start: first * u64::from(layout.segment_size()),
                plaintext_end: (past * u64::from(layout.segment_size())).min(plaintext_len),
                last: past == segments,
                plaintext_mac: None,
            })
        })
        .collect()
}

/// A key an upload seals under: a native [`Key`], or a [`CobblestoneKey`]
/// for a Cobblestone object (with [`UploadOptions::segment_size`] set to
/// its chunk size, [`CHUNK_SIZE`]).
pub trait UploadKey: StreamKey + Clone + Send + Sync + 'static {
    /// The key's bytes, from which the keys of the plan's MACs are derived.
    fn key_bytes(&self) -> &[u8];
}

impl UploadKey for Key {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl UploadKey for CobblestoneKey {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The HKDF info of the key of a plan's MAC.
const PLAN_MAC: &[u8] = b"cipherio-object-store upload plan MAC";
/// The HKDF info of the key of a part's plaintext MAC.
const PLAINTEXT_MAC: &[u8] = b"cipherio-object-store part plaintext MAC";

/// An HMAC-SHA256 under a key derived from the upload's key for `info`.
fn mac(key: &impl UploadKey, info: &[u8]) -> Hmac<Sha256> {
    let mut okm = Zeroizing::new([0; 32]);
    Hkdf::<Sha256>::new(None, key.key_bytes())
        .expand(info, &mut *okm)
        .unwrap_or_else(|_| unreachable!("32 bytes of HKDF-SHA256 output"));
    <Hmac<Sha256> as KeyInit>::new_from_slice(&*okm)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
}

/// Fills in each part's plaintext MAC, reading `source` a MiB at a time.
fn mac_parts(parts: &mut [PartSpec], key: &impl UploadKey, source: &dyn ReadAt) -> Result<()> {
    let mut buf = Zeroizing::new(vec![0; 1 << 20]);
    for part in parts {
        let mut mac = mac(key, PLAINTEXT_MAC);
        let mut at = part.plaintext_start;
        while at < part.plaintext_end {
            let n = (part.plaintext_end - at).min(buf.len() as u64) as usize;
            read_exact_at(source, &mut buf[..n], at).map_err(generic)?;
            mac.update(&buf[..n]);
            at += n as u64;
        }
        part.plaintext_mac = Some(hex::encode(mac.finalize().into_bytes()));
    }
    Ok(())
}

impl UploadPlan {
    fn path(&self) -> Result<Path> {
        Ok(Path::parse(&self.path)?)
    }

    fn aad(&self) -> &[u8] {
        if self.bind_path {
            self.path.as_bytes()
        } else {
            b""
        }
    }

    /// The MAC of every field but `mac`: over their JSON, which serde
    /// writes the same for the same values.
    fn mac_of(&self, key: &impl UploadKey) -> Result<Hmac<Sha256>> {
        let fields = serde_json::to_vec(&UploadPlan {
            mac: String::new(),
            ..self.clone()
        })
        .map_err(generic)?;
        let mut mac = mac(key, PLAN_MAC);
        mac.update(&fields);
        Ok(mac)
    }

    /// The sealer of a plan that authenticates under `key` and whose
    /// parts are the layout's for its length and part size; else an
    /// error, before anything is sealed.
    fn sealer(&self, key: &impl UploadKey) -> Result<SegmentSealer> {
        let mac = hex::decode(&self.mac).unwrap_or_default();
        if self.mac_of(key)?.verify_slice(&mac).is_err() {
            return Err(generic(
                "the upload plan does not authenticate under this key: it was edited or \
                 made under another key; nothing was sealed or sent",
            ));
        }
        let header = hex::decode(&self.header).map_err(generic)?;
        let sealer = SegmentSealer::from_header(key, &header, self.aad()).map_err(store_error)?;
        self.check_parts(sealer.layout())?;
        Ok(sealer)
    }

    /// The layout its header gives, read without the upload's key: the
    /// layout depends on the header alone, so a key of the header's
    /// algorithm, of any bytes, reads it.
    fn layout(&self) -> Result<Layout> {
        let header = hex::decode(&self.header).map_err(generic)?;
        Algorithm::ALL
            .iter()
            .find_map(|&alg| {
                let any = Key::new(alg, &vec![0; alg.key_len()]).ok()?;
                Some(
                    SegmentSealer::from_header(&any, &header, self.aad())
                        .ok()?
                        .layout(),
                )
            })
            .or_else(|| {
                // A Cobblestone header (salt and key commitment) names no
                // algorithm and opens under its key only: the layout is
                // the format's, told by the header's length.
                let any = CobblestoneKey::try_generate(Instantiation::Cobblestone128).ok()?;
                let layout = SegmentSealer::new(&any, CHUNK_SIZE as u32, b"")
                    .ok()?
                    .layout();
                (header.len() as u64 == layout.header_len()).then_some(layout)
            })
            .ok_or_else(|| generic("the upload plan's header is not a stream header"))
    }

    /// An error unless the parts are the ones `layout` gives for the
    /// plan's length and part size (their plaintext MACs aside).
    fn check_parts(&self, layout: Layout) -> Result<()> {
        let mut laid = parts_of(layout, self.plaintext_len, self.part_size)?;
        for (l, p) in laid.iter_mut().zip(&self.parts) {
            l.plaintext_mac.clone_from(&p.plaintext_mac);
        }
        if self.parts != laid {
            return Err(generic(
                "the upload plan's parts are not its layout's (contiguous, in order, \
                 covering its length): nothing was sealed, sent or completed",
            ));
        }
        Ok(())
    }
}

/// Plans an upload to `path` and starts it: a fresh stream header, parts
/// of one size within `options.limits` (the size
/// [`cipherio::segments::Layout::plan_parts`] gives its first part, the
/// header counted in it), the store's multipart upload, and the plan's MAC
/// under `key`.
///
/// `source` is a [`Source`] (all of it: [`ReadAt::source_len`]), read
/// once, whole, to put each part's plaintext MAC in the plan, or only the
/// plaintext's length (a `u64`), for a plan whose parts carry no
/// plaintext MAC. A plan made from a length alone cannot detect a source
/// that changes between a part's first send and a resend: the store then
/// sees two ciphertexts under one nonce. Planning from the source is the
/// safe way, and the way [`upload_parallel`] plans.
///
/// # Errors
///
/// The source's and the store's; a plan that cannot meet the limits (as
/// a [`object_store::Error::Generic`] with the
/// [`cipherio::segments::PlanError`] as its source).
pub async fn create_plan(
    store: &dyn MultipartStore,
    key: &impl UploadKey,
    path: &Path,
    source: impl Into<PlanSource>,
    options: &UploadOptions,
) -> Result<UploadPlan> {
    let aad = if options.bind_path {
        path.as_ref().as_bytes()
    } else {
        b""
    };
    let sealer = SegmentSealer::new(key, options.segment_size, aad).map_err(store_error)?;
    plan(store, key, &sealer, path, source.into(), options, None).await
}

/// The plan of an upload of the stream `sealer` begins, under `key`
/// ([`create_plan`]'s, or a keyring's data key, `data_key` wrapped).
pub(crate) async fn plan(
    store: &dyn MultipartStore,
    key: &impl UploadKey,
    sealer: &SegmentSealer,
    path: &Path,
    source: PlanSource,
    options: &UploadOptions,
    data_key: Option<WrappedKey>,
) -> Result<UploadPlan> {
    let plaintext_len = match &source {
        PlanSource::Length(len) => *len,
        PlanSource::Source(source) => source.source_len().map_err(generic)?,
    };
    let layout = sealer.layout();
    let planned = layout
        .plan_parts(plaintext_len, options.part_size, &options.limits)
        .map_err(generic)?;
    let limits = &options.limits;
    let mut part_size = planned[0].segments * layout.sealed_segment_len();
    // Parts of one size end a header's length later in the stream than
    // the planned parts of whole segments: a stream that ends within that
    // length past a part takes one part more, and where that is one too
    // many, every part takes one segment more.
    let total = layout.ciphertext_len(plaintext_len);
    if total.div_ceil(part_size) > u64::from(limits.max_parts) {
        part_size += layout.sealed_segment_len();
    }
    if total.div_ceil(part_size) > u64::from(limits.max_parts) || part_size > limits.max_part {
        return Err(generic(format!(
            "{plaintext_len} bytes fit no parts of one size within the store's limits \
             ({limits:?}): ask for a larger part size"
        )));
    }
    let mut parts = parts_of(layout, plaintext_len, part_size)?;
    if let PlanSource::Source(source) = source {
        let mac_key = key.clone();
        parts = tokio::task::spawn_blocking(move || {
            mac_parts(&mut parts, &mac_key, &*source).map(|()| parts)
        })
        .await
        .map_err(generic)??;
    }
    // A copy of the header in the object's metadata, where the store keeps
    // it, makes a ranged read of an uncached object one GET.
    let attributes = object_store::Attributes::from_iter([(
        crate::store::header_key(),
        hex::encode(sealer.header()),
    )]);
    let upload_id = match store.create_multipart_opts(path, attributes.into()).await {
        Err(
            object_store::Error::NotSupported { .. } | object_store::Error::NotImplemented { .. },
        ) => store.create_multipart(path).await?,
        other => other?,
    };
    let mut plan = UploadPlan {
        path: path.to_string(),
        upload_id,
        header: hex::encode(sealer.header()),
        bind_path: options.bind_path,
        plaintext_len,
        part_size,
        parts,
        data_key,
        mac: String::new(),
    };
    plan.mac = hex::encode(plan.mac_of(key)?.finalize().into_bytes());
    Ok(plan)
}

/// Seals and sends the parts of `plan` numbered in `share` (all of them
/// for one worker), `workers` at a time, reading each part's plaintext
/// from `source`; returns the parts sent, for
/// [`complete_plan_checked`].
///
/// The plan is checked first: it must authenticate under `key` (its MAC)
/// and its parts must be the ones its layout gives; else nothing is
/// sealed or sent.
///
/// A part is sealed only from the plaintext the plan was made from: each
/// part's plaintext is checked against its MAC in the plan (where the
/// plan was made from the source: see [`PlanSource`]) before it is
/// sealed, so a part retried, or the two workers of two parts that share
/// a segment, never seal one nonce with two plaintexts. If the source
/// changed since the plan was made, the parts read after the change are
/// refused (nothing of them sealed or sent), and the upload cannot be
/// completed: abort it and start over with a new plan (a new header).
///
/// # Errors
///
/// A plan that does not authenticate or whose parts are not its
/// layout's; a part whose plaintext changed since the plan was made;
/// the first of the store's, the source's and the sealer's errors; the
/// parts not yet sent are then not sent.
pub async fn upload_share(
    store: Arc<dyn MultipartStore>,
    key: &impl UploadKey,
    plan: &UploadPlan,
    share: &[u32],
    source: Source,
    workers: usize,
) -> Result<Vec<PartDone>> {
    let sealer = plan.sealer(key)?;
    let path = plan.path()?;
    let specs: Vec<PartSpec> = share
        .iter()
        .map(|&n| {
            plan.parts
                .get(n as usize)
                .filter(|p| p.number == n)
                .cloned()
                .ok_or_else(|| generic(format!("the plan has no part {n}")))
        })
        .collect::<Result<_>>()?;
    let specs = Arc::new(specs);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1).min(specs.len().max(1)) {
        let (store, sealer, source) = (Arc::clone(&store), sealer.clone(), Arc::clone(&source));
        let key = key.clone();
        let (specs, next, path) = (Arc::clone(&specs), Arc::clone(&next), path.clone());
        let id = plan.upload_id.clone();
        tasks.spawn(async move {
            let mut done = Vec::new();
            while let Some(spec) = specs.get(next.fetch_add(1, Ordering::Relaxed)) {
                let (sealer, source, spec2) = (sealer.clone(), Arc::clone(&source), spec.clone());
                let key = key.clone();
                let sealed =
                    tokio::task::spawn_blocking(move || seal_part(&sealer, &key, &spec2, &*source))
                        .await
                        .map_err(generic)??;
                let part = store
                    .put_part(&path, &id, spec.number as usize, sealed)
                    .await?;
                done.push(PartDone {
                    number: spec.number,
                    content_id: part.content_id,
                });
            }
            Ok::<_, object_store::Error>(done)
        });
    }
    let mut all = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined.map_err(generic).and_then(|r| r) {
            Ok(done) => all.extend(done),
            Err(e) => {
                tasks.abort_all();
                return Err(e);
            }
        }
    }
    all.sort_by_key(|d| d.number);
    Ok(all)
}

/// Reads part `spec`'s plaintext from `source`, checks it against its
/// MAC, and seals its segments (after the header for the first), then
/// keeps the part's own bytes.
fn seal_part(
    sealer: &SegmentSealer,
    key: &impl UploadKey,
    spec: &PartSpec,
    source: &dyn ReadAt,
) -> Result<PutPayload> {
    let len = usize::try_from(spec.plaintext_end - spec.plaintext_start).map_err(generic)?;
    let mut plaintext = Zeroizing::new(vec![0; len]);
    read_exact_at(source, &mut plaintext, spec.plaintext_start).map_err(generic)?;
    // A plan made from a length alone has no plaintext MAC to check.
    if let Some(expected) = &spec.plaintext_mac {
        let mut mac = mac(key, PLAINTEXT_MAC);
        mac.update(&plaintext);
        if mac
            .verify_slice(&hex::decode(expected).unwrap_or_default())
            .is_err()
        {
            return Err(generic(format!(
                "part {}'s plaintext changed since the upload was planned: nothing of it \
                 was sealed or sent (its segments' nonces are the plan's); abort the \
                 upload and plan it again, under a new header, with the source kept still",
                spec.number
            )));
        }
    }
    let layout = sealer.layout();
    let (mut out, at) = if spec.first_segment == 0 {
        (sealer.header().to_vec(), 0)
    } else {
        let at = layout
            .ciphertext_range(spec.first_segment..spec.first_segment)
            .start;
        (Vec::new(), at)
    };
    sealer
        .seal_segments(spec.first_segment, &plaintext, spec.last, &mut out)
        .map_err(store_error)?;
    let own = (spec.ciphertext_start - at) as usize..(spec.ciphertext_end - at) as usize;
    Ok(bytes::Bytes::from(out).slice(own).into())
}

/// Completes `plan` with the parts `done` (from every worker, any order):
/// every planned part exactly once, listed in order.
///
/// Without the key it checks what it can: the plan's parts must be the
/// ones its header's layout gives for its length and part size
/// (contiguous, in order, covering the stream), so a plan with a part
/// dropped is refused before the store sees the list. A plan edited
/// together with its length, or with another path or upload, passes:
/// [`complete_plan_checked`] also checks the plan's MAC under the key.
///
/// # Errors
///
/// A plan whose parts are not its layout's; a part missing or sent twice;
/// the store's.
pub async fn complete_plan(
    store: &dyn MultipartStore,
    plan: &UploadPlan,
    mut done: Vec<PartDone>,
) -> Result<PutResult> {
    plan.check_parts(plan.layout()?)?;
    done.sort_by_key(|d| d.number);
    let numbers: Vec<u32> = done.iter().map(|d| d.number).collect();
    let planned: Vec<u32> = plan.parts.iter().map(|p| p.number).collect();
    if numbers != planned {
        return Err(generic(format!(
            "parts sent {numbers:?}, planned {planned:?}: every part exactly once"
        )));
    }
    let parts = done
        .into_iter()
        .map(|d| PartId {
            content_id: d.content_id,
        })
        .collect();
    store
        .complete_multipart(&plan.path()?, &plan.upload_id, parts)
        .await
}

/// [`complete_plan`] of a plan that authenticates under `key` too, as
/// [`upload_share`] checks it: a plan edited on its way (a part dropped,
/// its length with it, another path or upload) would publish another
/// object than the one planned, so it is refused before the store sees
/// the list.
///
/// # Errors
///
/// A plan that does not authenticate under `key`; as [`complete_plan`].
pub async fn complete_plan_checked(
    store: &dyn MultipartStore,
    key: &impl UploadKey,
    plan: &UploadPlan,
    done: Vec<PartDone>,
) -> Result<PutResult> {
    plan.sealer(key)?;
    complete_plan(store, plan, done).await
}

/// Uploads `source` (all of it: [`ReadAt::source_len`]) to `path` as one
/// encrypted object, `options.workers` parts at a time: plans, seals and sends every
/// part, completes with the ordered part list, and aborts the upload on
/// any error. The object reads through an
/// [`EncryptedStore`](crate::EncryptedStore) over the same store with the
/// same key (and path binding).
///
/// # Errors
///
/// As [`create_plan`], [`upload_share`] and [`complete_plan_checked`]; the upload
/// is then aborted.
pub async fn upload_parallel(
    store: Arc<dyn MultipartStore>,
    key: &impl UploadKey,
    path: &Path,
    source: Source,
    options: &UploadOptions,
) -> Result<PutResult> {
    let plan = create_plan(&*store, key, path, Arc::clone(&source), options).await?;
    let all: Vec<u32> = plan.parts.iter().map(|p| p.number).collect();
    let result = match upload_share(
        Arc::clone(&store),
        key,
        &plan,
        &all,
        source,
        options.workers,
    )
    .await
    {
        Ok(done) => complete_plan_checked(&*store, key, &plan, done).await,
        Err(e) => Err(e),
    };
    if result.is_err() {
        // The error to report is the first one; an abort that fails too
        // leaves the upload for the store's lifecycle rules.
        let _ = store.abort_multipart(path, &plan.upload_id).await;
    }
    result
}
