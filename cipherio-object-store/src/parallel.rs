//! Parallel uploads through [`MultipartStore`]: parts planned on segment
//! boundaries within the store's limits, sealed and sent by several tasks
//! (or processes), completed in order, aborted on any error.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cipherio::segments::{Part, PartLimits, SegmentSealer};
use cipherio::{Key, ReadAt};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{PutPayload, PutResult, Result};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::{generic, store_error};

/// A positional source shared by the upload's tasks: cipherio's
/// [`ReadAt`] (a `File`, a `Vec<u8>`, a slice), from any thread.
pub type Source = Arc<dyn ReadAt + Send + Sync>;

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

/// One planned part, as it travels to a worker: which segments it seals
/// from which plaintext bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSpec {
    /// The part's place in the upload, from 0.
    pub number: u32,
    /// The index of its first segment.
    pub first_segment: u32,
    /// The plaintext bytes it seals: start.
    pub plaintext_start: u64,
    /// The plaintext bytes it seals: end.
    pub plaintext_end: u64,
    /// It ends with the stream's final segment.
    pub last: bool,
}

impl From<&Part> for PartSpec {
    fn from(p: &Part) -> Self {
        PartSpec {
            number: p.number,
            first_segment: p.first_segment,
            plaintext_start: p.plaintext.start,
            plaintext_end: p.plaintext.end,
            last: p.last,
        }
    }
}

/// A multipart upload in flight, serialisable (JSON) so that worker
/// processes can each take a share of its parts: the object's path, the
/// upload's id, the stream's header (hex) and the parts. It holds no key.
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
    /// The parts, in order.
    pub parts: Vec<PartSpec>,
}

/// A part sent: its number and the id the store gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartDone {
    /// The part's place in the upload.
    pub number: u32,
    /// The store's id of the part (`PartId::content_id`).
    pub content_id: String,
}

impl UploadPlan {
    fn path(&self) -> Result<Path> {
        Ok(Path::parse(&self.path)?)
    }

    fn sealer(&self, key: &Key) -> Result<SegmentSealer> {
        let header = hex::decode(&self.header).map_err(generic)?;
        let aad = if self.bind_path {
            self.path.as_bytes()
        } else {
            b""
        };
        SegmentSealer::from_header(key, &header, aad).map_err(store_error)
    }
}

/// Plans an upload of `plaintext_len` bytes to `path` and starts it: a
/// fresh stream header, the parts cut on segment boundaries within
/// `options.limits` ([`cipherio::segments::Layout::plan_parts`]), and the
/// store's multipart upload.
///
/// # Errors
///
/// The store's; a plan that cannot meet the limits (as a
/// [`object_store::Error::Generic`] with the
/// [`cipherio::segments::PlanError`] as its source).
pub async fn create_plan(
    store: &dyn MultipartStore,
    key: &Key,
    path: &Path,
    plaintext_len: u64,
    options: &UploadOptions,
) -> Result<UploadPlan> {
    let aad = if options.bind_path {
        path.as_ref().as_bytes()
    } else {
        b""
    };
    let sealer = SegmentSealer::new(key, options.segment_size, aad).map_err(store_error)?;
    let parts = sealer
        .layout()
        .plan_parts(plaintext_len, options.part_size, &options.limits)
        .map_err(generic)?;
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
    Ok(UploadPlan {
        path: path.to_string(),
        upload_id,
        header: hex::encode(sealer.header()),
        bind_path: options.bind_path,
        plaintext_len,
        parts: parts.iter().map(PartSpec::from).collect(),
    })
}

/// Seals and sends the parts of `plan` numbered in `share` (all of them
/// for one worker), `workers` at a time, reading each part's plaintext
/// from `source`; returns the parts sent, for
/// [`complete_plan`].
///
/// A part is sealed from the same plaintext however often it is retried,
/// so its nonces never seal two different plaintexts.
///
/// # Errors
///
/// The first of the store's, the source's and the sealer's errors; the
/// parts not yet sent are then not sent.
pub async fn upload_share(
    store: Arc<dyn MultipartStore>,
    key: &Key,
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
        let (specs, next, path) = (Arc::clone(&specs), Arc::clone(&next), path.clone());
        let id = plan.upload_id.clone();
        tasks.spawn(async move {
            let mut done = Vec::new();
            while let Some(spec) = specs.get(next.fetch_add(1, Ordering::Relaxed)) {
                let (sealer, source, spec2) = (sealer.clone(), Arc::clone(&source), spec.clone());
                let sealed =
                    tokio::task::spawn_blocking(move || seal_part(&sealer, &spec2, &*source))
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

/// Reads part `spec`'s plaintext from `source` and seals it: the header
/// first for part 0, then its segments.
fn seal_part(sealer: &SegmentSealer, spec: &PartSpec, source: &dyn ReadAt) -> Result<PutPayload> {
    let len = usize::try_from(spec.plaintext_end - spec.plaintext_start).map_err(generic)?;
    let mut plaintext = Zeroizing::new(vec![0; len]);
    read_exact_at(source, &mut plaintext, spec.plaintext_start).map_err(generic)?;
    let mut out = Vec::new();
    if spec.number == 0 {
        out.extend_from_slice(sealer.header());
    }
    sealer
        .seal_segments(spec.first_segment, &plaintext, spec.last, &mut out)
        .map_err(store_error)?;
    Ok(out.into())
}

/// Completes `plan` with the parts `done` (from every worker, any order):
/// every planned part exactly once, listed in order.
///
/// # Errors
///
/// A part missing or sent twice; the store's.
pub async fn complete_plan(
    store: &dyn MultipartStore,
    plan: &UploadPlan,
    mut done: Vec<PartDone>,
) -> Result<PutResult> {
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

/// Uploads `source` (all of it: [`ReadAt::source_len`]) to `path` as one
/// encrypted object, `options.workers` parts at a time: plans, seals and sends every
/// part, completes with the ordered part list, and aborts the upload on
/// any error. The object reads through an
/// [`EncryptedStore`](crate::EncryptedStore) over the same store with the
/// same key (and path binding).
///
/// # Errors
///
/// As [`create_plan`], [`upload_share`] and [`complete_plan`]; the upload
/// is then aborted.
pub async fn upload_parallel(
    store: Arc<dyn MultipartStore>,
    key: &Key,
    path: &Path,
    source: Source,
    options: &UploadOptions,
) -> Result<PutResult> {
    let plaintext_len = source.source_len().map_err(generic)?;
    let plan = create_plan(&*store, key, path, plaintext_len, options).await?;
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
        Ok(done) => complete_plan(&*store, &plan, done).await,
        Err(e) => Err(e),
    };
    if result.is_err() {
        // The error to report is the first one; an abort that fails too
        // leaves the upload for the store's lifecycle rules.
        let _ = store.abort_multipart(path, &plan.upload_id).await;
    }
    result
}
