//! A store that fails the way networks and stores fail, around a real one
//! (`InMemory`, `LocalFileSystem`, S3 on moto), and a recorder of every
//! byte of ciphertext sent through it.
//!
//! The fault layer is written by hand: no real store can be told to lose
//! one given part, cut one answer short or have another writer replace an
//! object between two given requests, and object_store offers no such
//! layer (its `ThrottledStore` only delays). Everything else is the
//! wrapped store's own behaviour.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartId, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result, UploadPart,
};

/// One fault, armed with [`Faulty::arm`] and spent by the first call it
/// applies to.
#[derive(Clone, Debug)]
pub enum Fault {
    /// A part (of either kind of multipart upload) is sent but never
    /// stored, and answered with an error.
    LosePart,
    /// A part is stored, but its answer is lost: an error.
    LoseAnswer,
    /// A completion fails without completing.
    FailComplete,
    /// A ranged GET's answer is this many bytes short.
    Short(usize),
    /// A ranged GET's answer has this many bytes more.
    Long(usize),
    /// Right after a GET or HEAD is answered, another writer replaces the
    /// object with these bytes.
    Overwrite(Bytes),
}

/// `inner` with faults armed by the test, every sent byte recorded.
#[derive(Debug)]
pub struct Faulty<T> {
    pub inner: Arc<T>,
    armed: Arc<Armed>,
    pub sent: Arc<Recorder>,
    /// GETs answered so far, GETs in flight now and the most at once:
    /// each GET yields once before it is answered, so that GETs polled
    /// together are in flight together.
    pub gets: AtomicUsize,
    in_flight: AtomicUsize,
    pub most_in_flight: AtomicUsize,
    /// Bytes sent by single PUTs and received from GETs so far.
    pub traffic: Arc<AtomicU64>,
}

/// The faults not yet spent, shared with the uploads begun.
#[derive(Debug, Default)]
struct Armed(Mutex<VecDeque<Fault>>);

impl Armed {
    /// Takes the first armed fault that `applies` accepts.
    fn take(&self, applies: impl Fn(&Fault) -> bool) -> Option<Fault> {
        let mut armed = self.0.lock().unwrap();
        let i = armed.iter().position(applies)?;
        armed.remove(i)
    }

    fn part_fault(&self) -> Option<Fault> {
        self.take(|f| matches!(f, Fault::LosePart | Fault::LoseAnswer))
    }
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "Faulty",
        source: format!("injected fault: {what}").into(),
    }
}

fn bytes_of(payload: &PutPayload) -> Vec<u8> {
    payload.iter().flat_map(|b| b.to_vec()).collect()
}

impl<T> Faulty<T> {
    pub fn new(inner: Arc<T>) -> Self {
        Faulty {
            inner,
            armed: Arc::default(),
            sent: Arc::default(),
            gets: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            traffic: Arc::default(),
        }
    }

    /// Arms `fault` for the first call it applies to.
    pub fn arm(&self, fault: Fault) {
        self.armed.0.lock().unwrap().push_back(fault);
    }

    fn take(&self, applies: impl Fn(&Fault) -> bool) -> Option<Fault> {
        self.armed.take(applies)
    }
}

impl<T: ObjectStore> std::fmt::Display for Faulty<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

#[async_trait]
impl<T: ObjectStore> ObjectStore for Faulty<T> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.traffic
            .fetch_add(payload.content_length() as u64, Ordering::SeqCst);
        // A key record is no stream: its bytes name no segment.
        if !location.as_ref().contains(".cipherio-key.") {
            self.sent.record(0, &bytes_of(&payload));
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(FaultyUpload {
            inner,
            armed: Arc::clone(&self.armed),
            sent: Arc::clone(&self.sent),
            key: location.to_string(),
            parts: 0,
            header: Vec::new(),
            offset: 0,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::task::yield_now().await;
        let ranged = options.range.is_some();
        let answer = self.inner.get_opts(location, options).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.gets.fetch_add(1, Ordering::SeqCst);
        let answer = answer?;
        if let Some(Fault::Overwrite(b)) = self.take(|f| matches!(f, Fault::Overwrite(_))) {
            self.inner
                .put_opts(location, b.into(), PutOptions::default())
                .await?;
        }
        let fault = ranged
            .then(|| self.take(|f| matches!(f, Fault::Short(_) | Fault::Long(_))))
            .flatten();
        let Some(fault) = fault else {
            return Ok(counted(answer, Arc::clone(&self.traffic)));
        };
        let GetResult {
            meta,
            range,
            attributes,
            extensions,
            ..
        } = answer;
        let mut bytes = answer_bytes(meta.clone(), range.clone(), answer.payload).await?;
        match fault {
            Fault::Short(n) => bytes.truncate(bytes.len().saturating_sub(n)),
            Fault::Long(n) => bytes.extend(std::iter::repeat_n(0xA5, n)),
            _ => unreachable!(),
        }
        let body = futures::stream::once(futures::future::ready(Ok(Bytes::from(bytes))));
        Ok(GetResult {
            payload: GetResultPayload::Stream(body.boxed()),
            meta,
            range,
            attributes,
            extensions,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// `answer`, its bytes counted into `traffic` as they are received.
fn counted(answer: GetResult, traffic: Arc<AtomicU64>) -> GetResult {
    let (meta, range) = (answer.meta.clone(), answer.range.clone());
    let (attributes, extensions) = (answer.attributes.clone(), answer.extensions.clone());
    let body = answer.into_stream().inspect(move |b| {
        if let Ok(b) = b {
            traffic.fetch_add(b.len() as u64, Ordering::SeqCst);
        }
    });
    GetResult {
        payload: GetResultPayload::Stream(body.boxed()),
        meta,
        range,
        attributes,
        extensions,
    }
}

/// The bytes of a GET's answer.
async fn answer_bytes(
    meta: ObjectMeta,
    range: Range<u64>,
    payload: GetResultPayload,
) -> Result<Vec<u8>> {
    let whole = GetResult {
        payload,
        meta,
        range,
        attributes: Default::default(),
        extensions: Default::default(),
    };
    Ok(whole.bytes().await?.to_vec())
}

#[async_trait]
impl<T: MultipartStore> MultipartStore for Faulty<T> {
    async fn create_multipart(&self, path: &Path) -> Result<MultipartId> {
        self.inner.create_multipart(path).await
    }

    async fn create_multipart_opts(
        &self,
        path: &Path,
        opts: PutMultipartOptions,
    ) -> Result<MultipartId> {
        self.inner.create_multipart_opts(path, opts).await
    }

    async fn put_part(
        &self,
        path: &Path,
        id: &MultipartId,
        part_idx: usize,
        data: PutPayload,
    ) -> Result<PartId> {
        self.sent.part(id, part_idx, &bytes_of(&data));
        match self.armed.part_fault() {
            Some(Fault::LosePart) => Err(injected("part lost")),
            Some(_) => {
                self.inner.put_part(path, id, part_idx, data).await?;
                Err(injected("answer lost"))
            }
            None => self.inner.put_part(path, id, part_idx, data).await,
        }
    }

    async fn complete_multipart(
        &self,
        path: &Path,
        id: &MultipartId,
        parts: Vec<PartId>,
    ) -> Result<PutResult> {
        if self.take(|f| matches!(f, Fault::FailComplete)).is_some() {
            return Err(injected("completion failed"));
        }
        self.inner.complete_multipart(path, id, parts).await
    }

    async fn abort_multipart(&self, path: &Path, id: &MultipartId) -> Result<()> {
        self.inner.abort_multipart(path, id).await
    }
}

/// A `put_multipart` upload of a [`Faulty`] store, failing as armed.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn MultipartUpload>,
    armed: Arc<Armed>,
    sent: Arc<Recorder>,
    key: String,
    parts: usize,
    /// The stream's header (from the first part) and the bytes sent.
    header: Vec<u8>,
    offset: u64,
}

#[async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let bytes = bytes_of(&data);
        if self.parts == 0 {
            self.header = bytes[..HEADER.min(bytes.len())].to_vec();
        }
        let sent = &self.sent;
        sent.record_in(&self.header, self.offset, &bytes);
        sent.sized(&self.key, self.parts, bytes.len());
        self.offset += bytes.len() as u64;
        self.parts += 1;
        match self.armed.part_fault() {
            Some(Fault::LosePart) => Box::pin(futures::future::ready(Err(injected("part lost")))),
            Some(_) => {
                let stored = self.inner.put_part(data);
                Box::pin(async move {
                    stored.await?;
                    Err(injected("answer lost"))
                })
            }
            None => self.inner.put_part(data),
        }
    }

    async fn complete(&mut self) -> Result<PutResult> {
        if self
            .armed
            .take(|f| matches!(f, Fault::FailComplete))
            .is_some()
        {
            return Err(injected("completion failed"));
        }
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

/// Offset -> bytes sent there, of one stream.
type Sent = BTreeMap<u64, Vec<u8>>;
/// (number, bytes) of each part sent.
type Parts = Vec<(usize, Vec<u8>)>;

/// The bytes of a native header: what names a stream.
const HEADER: usize = 53;

/// Every byte of ciphertext sent, by stream (its header) and offset. Under
/// one header a byte's offset fixes its segment index and so its nonce:
/// two different bytes sent for one offset are two plaintexts sealed
/// under one nonce (equal ciphertext under one nonce is equal plaintext),
/// whether they came from a retry, another worker or another upload.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Header -> offset -> bytes sent there.
    streams: Mutex<HashMap<Vec<u8>, Sent>>,
    /// Upload -> parts by number, in the order sent, placed by
    /// `assert_no_reuse`.
    parts: Mutex<HashMap<String, Parts>>,
    /// Upload (its id, or its path for `put_multipart`) -> (number, size)
    /// of every part sent.
    sizes: Mutex<HashMap<String, Vec<(usize, usize)>>>,
    /// Offsets that were sent two different bytes.
    reused: Mutex<Vec<String>>,
}

impl Recorder {
    /// `bytes` sent at `offset` of the stream whose header `header` is.
    fn record_in(&self, header: &[u8], offset: u64, bytes: &[u8]) {
        let mut streams = self.streams.lock().unwrap();
        let sent = streams.entry(header.to_vec()).or_default();
        let end = offset + bytes.len() as u64;
        for (&at, old) in sent.range(..end) {
            let (from, to) = (at.max(offset), (at + old.len() as u64).min(end));
            let span = |o: u64| (from - o) as usize..(to - o) as usize;
            if from < to && old[span(at)] != bytes[span(offset)] {
                self.reused.lock().unwrap().push(format!(
                    "stream {}…: bytes {from}..{to} sent twice, different",
                    hex::encode(&header[..8])
                ));
            }
        }
        let slot = sent.entry(offset).or_default();
        if slot.len() < bytes.len() {
            *slot = bytes.to_vec();
        }
    }

    /// A whole stream, or its first bytes: `offset` 0.
    fn record(&self, offset: u64, bytes: &[u8]) {
        if bytes.len() >= HEADER {
            self.record_in(&bytes[..HEADER], offset, bytes);
        }
    }

    /// Part `number` of upload `upload`, placed later.
    fn part(&self, upload: &str, number: usize, bytes: &[u8]) {
        self.sized(upload, number, bytes.len());
        let mut parts = self.parts.lock().unwrap();
        parts
            .entry(upload.to_string())
            .or_default()
            .push((number, bytes.to_vec()));
    }

    fn sized(&self, upload: &str, number: usize, size: usize) {
        let mut sizes = self.sizes.lock().unwrap();
        sizes
            .entry(upload.to_string())
            .or_default()
            .push((number, size));
    }

    /// The sizes of the parts of `upload` sent, by number (every size a
    /// number was sent with).
    pub fn part_sizes(&self, upload: &str) -> Vec<(usize, usize)> {
        let mut sizes = self
            .sizes
            .lock()
            .unwrap()
            .get(upload)
            .cloned()
            .unwrap_or_default();
        sizes.sort();
        sizes.dedup();
        sizes
    }

    /// Panics if any offset of any stream was sent two different bytes.
    /// A `put_multipart` part lies after the bytes sent before it; a
    /// numbered part at its number times the size of part 0 (every part
    /// but the last is that size).
    pub fn assert_no_reuse(&self) {
        let uploads = self.parts.lock().unwrap().clone();
        for parts in uploads.values() {
            let Some((_, first)) = parts.iter().find(|(n, _)| *n == 0) else {
                continue;
            };
            if first.len() < HEADER {
                continue;
            }
            let size = first.len() as u64;
            for (n, bytes) in parts {
                self.record_in(&first[..HEADER], *n as u64 * size, bytes);
            }
        }
        let reused = self.reused.lock().unwrap();
        assert!(
            reused.is_empty(),
            "a nonce sealed two plaintexts: {reused:#?}"
        );
    }
}
