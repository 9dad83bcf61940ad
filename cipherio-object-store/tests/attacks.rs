//! Attacks on an object assembled from multipart parts: every one fails to
//! read through `EncryptedStore` with the error `CipherReader` gives for
//! the same bytes.
//!
//! Against real S3 (moto) an attacker places sealed parts at the part
//! numbers of their choice (or leaves the last one out of the completion
//! list): S3 assembles parts by part number and refuses a completion list
//! whose ETags do not match its numbers, so a list merely reordered,
//! shortened in the middle or repeated is refused by the store itself.
//! Stores that do assemble parts in the listed order (Azure's block lists,
//! GCS's compose) are modelled by `ListedOrder`, a strict double that
//! honours the completion list as given: the list attacks run there.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cipherio::segments::SegmentSealer;
use cipherio_object_store::{EncryptedStore, UploadOptions, UploadPlan, cipher_error, create_plan};
use common::{data, key, raw, reader};
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, ListResult, MultipartId, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};

/// The sealed bytes of every part of `plan`, from `plaintext`: the
/// stream, cut where the plan says.
fn sealed(plan: &UploadPlan, plaintext: &[u8]) -> Vec<Vec<u8>> {
    let mut stream = hex::decode(&plan.header).unwrap();
    let sealer = SegmentSealer::from_header(&key(), &stream, plan.path.as_bytes()).unwrap();
    sealer
        .seal_segments(0, plaintext, true, &mut stream)
        .unwrap();
    plan.parts
        .iter()
        .map(|p| stream[p.ciphertext_start as usize..p.ciphertext_end as usize].to_vec())
        .collect()
}

/// Reads `path` through `store`, whole (one streamed GET) and as one
/// range of all its bytes (a ranged GET, opened at once), and checks both
/// fail as `CipherReader` fails over the raw bytes, with `want`. (A range
/// fails only if the damage lies in it: a part swapped in the middle does
/// not spoil a read of the last one.)
async fn fails_as_the_reader(
    what: &str,
    store: &EncryptedStore,
    path: &Path,
    want: fn(&cipherio::Error) -> bool,
) {
    let bytes = raw(store.inner().as_ref(), path).await;
    let model = refused(what, "CipherReader", reader(&key(), path.as_ref(), &bytes));
    assert!(want(&model), "{what}: CipherReader says {model:?}");
    let whole = async { store.get(path).await?.bytes().await };
    let err = refused(what, "whole get", whole.await);
    let got = cipher_error(&err).unwrap_or_else(|| panic!("{what}: {err}"));
    assert!(want(got), "{what}: whole get {got:?}, reader {model:?}");
    let len = store.head(path).await.unwrap().size;
    let err = refused(what, "ranged get", store.get_range(path, 0..len).await);
    let got = cipher_error(&err).unwrap_or_else(|| panic!("{what}: {err}"));
    assert!(want(got), "{what}: ranged get {got:?}, reader {model:?}");
}

/// The error of a read that must fail; a read that succeeds panics
/// without printing the plaintext.
fn refused<T: AsRef<[u8]>, E>(what: &str, read: &str, r: Result<T, E>) -> E {
    match r {
        Ok(b) => panic!("{what}: {read} returned {} bytes", b.as_ref().len()),
        Err(e) => e,
    }
}

fn authentication(e: &cipherio::Error) -> bool {
    matches!(e, cipherio::Error::Authentication)
}

/// Four parts of 64 KiB segments: three of 81 sealed segments' length
/// (the fewest over S3's smallest part, 5 MiB) and a short last one.
const LEN: usize = 3 * 81 * 65_536 + 12_345;

fn options() -> UploadOptions {
    UploadOptions {
        part_size: (5 << 20) + 100_000,
        ..UploadOptions::default()
    }
}

/// A plan to upload `LEN` bytes to `path` under the test key.
async fn plan_of(s3: &dyn MultipartStore, path: &Path) -> UploadPlan {
    create_plan(s3, &key(), path, Arc::new(vec![0u8; LEN]), &options())
        .await
        .unwrap()
}

/// Assembles an object at `path` from the parts `order` (indices into
/// `parts`, placed at part numbers 0, 1, …) of upload `plan`.
async fn assemble(s3: &dyn MultipartStore, plan: &UploadPlan, parts: &[Vec<u8>], order: &[usize]) {
    let path = Path::parse(&plan.path).unwrap();
    let mut ids = Vec::new();
    for (at, &p) in order.iter().enumerate() {
        let payload = PutPayload::from(parts[p].clone());
        ids.push(
            s3.put_part(&path, &plan.upload_id, at, payload)
                .await
                .unwrap(),
        );
    }
    s3.complete_multipart(&path, &plan.upload_id, ids)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attacks_on_parts_in_s3_fail_as_the_reader_fails() {
    let Some(s3) = common::s3("attacks") else {
        return;
    };
    let store = EncryptedStore::new(s3.clone(), key());
    let pt = data(LEN, 1);
    type Case = (&'static str, Vec<usize>, fn(&cipherio::Error) -> bool);
    let cases: Vec<Case> = vec![
        ("parts reordered", vec![0, 2, 1, 3], authentication),
        ("a middle part dropped", vec![0, 2, 3], authentication),
        // Parts end 53 bytes into a segment (the header counts in the
        // first part's share): the stream ends inside a segment.
        ("the last part dropped", vec![0, 1, 2], authentication),
        ("a part duplicated", vec![0, 1, 1, 2, 3], authentication),
    ];
    for (what, order, want) in cases {
        let path = Path::from(format!("attack/{}", what.replace(' ', "-")));
        let plan = plan_of(&*s3, &path).await;
        let parts = sealed(&plan, &pt);
        assert_eq!(parts.len(), 4);
        assemble(&*s3, &plan, &parts, &order).await;
        fails_as_the_reader(what, &store, &path, want).await;
    }

    // A part of another upload to the same path, under the same key.
    let path = Path::from("attack/foreign-part");
    let plan = plan_of(&*s3, &path).await;
    let other = plan_of(&*s3, &path).await;
    let mut parts = sealed(&plan, &pt);
    parts[1] = sealed(&other, &pt)[1].clone();
    assemble(&*s3, &plan, &parts, &[0, 1, 2, 3]).await;
    s3.abort_multipart(&path, &other.upload_id).await.unwrap();
    fails_as_the_reader("a part from another upload", &store, &path, authentication).await;

    // The header edited (its salt).
    let path = Path::from("attack/header");
    let plan = plan_of(&*s3, &path).await;
    let mut parts = sealed(&plan, &pt);
    parts[0][20] ^= 1;
    assemble(&*s3, &plan, &parts, &[0, 1, 2, 3]).await;
    fails_as_the_reader("the header edited", &store, &path, authentication).await;

    // A part cut short (100 bytes off its end; still over S3's smallest
    // part): every segment after the cut is misaligned.
    let path = Path::from("attack/part-cut-short");
    let plan = plan_of(&*s3, &path).await;
    let mut parts = sealed(&plan, &pt);
    let short = parts[1].len() - 100;
    parts[1].truncate(short);
    assemble(&*s3, &plan, &parts, &[0, 1, 2, 3]).await;
    fails_as_the_reader("a part cut short", &store, &path, authentication).await;

    // A part of another object (another path, same key, same plaintext,
    // same part number).
    let path = Path::from("attack/spliced");
    let plan = plan_of(&*s3, &path).await;
    let donor_path = Path::from("attack/donor");
    let donor = plan_of(&*s3, &donor_path).await;
    let mut parts = sealed(&plan, &pt);
    parts[2] = sealed(&donor, &pt)[2].clone();
    assemble(&*s3, &plan, &parts, &[0, 1, 2, 3]).await;
    s3.abort_multipart(&donor_path, &donor.upload_id)
        .await
        .unwrap();
    fails_as_the_reader("a part of another object", &store, &path, authentication).await;

    // A sound object copied to another name by the store's own copy.
    let path = Path::from("attack/original");
    let plan = plan_of(&*s3, &path).await;
    assemble(&*s3, &plan, &sealed(&plan, &pt), &[0, 1, 2, 3]).await;
    assert_eq!(store.get(&path).await.unwrap().bytes().await.unwrap(), pt);
    let moved = Path::from("attack/moved");
    s3.copy(&path, &moved).await.unwrap();
    fails_as_the_reader("read under another name", &store, &moved, authentication).await;
}

/// A multipart store that assembles the parts in the order the completion
/// list gives them, repeats and gaps included (as Azure's block lists and
/// GCS's compose do), into an `InMemory`.
#[derive(Debug, Default)]
struct ListedOrder {
    objects: Arc<InMemory>,
    parts: Mutex<HashMap<String, Vec<u8>>>,
}

#[async_trait]
impl MultipartStore for ListedOrder {
    async fn create_multipart(&self, path: &Path) -> Result<MultipartId> {
        Ok(format!("{path}#{}", rand_id()))
    }

    async fn put_part(
        &self,
        _path: &Path,
        id: &MultipartId,
        part_idx: usize,
        data: PutPayload,
    ) -> Result<PartId> {
        let content_id = format!("{id}/{part_idx}");
        let bytes: Vec<u8> = data.iter().flat_map(|b| b.to_vec()).collect();
        self.parts.lock().unwrap().insert(content_id.clone(), bytes);
        Ok(PartId { content_id })
    }

    async fn complete_multipart(
        &self,
        path: &Path,
        _id: &MultipartId,
        parts: Vec<PartId>,
    ) -> Result<PutResult> {
        let object: Vec<u8> = {
            let all = self.parts.lock().unwrap();
            parts
                .iter()
                .flat_map(|p| all[&p.content_id].clone())
                .collect()
        };
        self.objects.put(path, object.into()).await
    }

    async fn abort_multipart(&self, _path: &Path, _id: &MultipartId) -> Result<()> {
        Ok(())
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[tokio::test]
async fn completion_lists_that_lie_fail_as_the_reader_fails() {
    let double = ListedOrder::default();
    let objects: Arc<dyn ObjectStore> = double.objects.clone();
    let store = EncryptedStore::new(objects, key());
    let pt = data(LEN, 2);
    type Case = (&'static str, Vec<usize>, fn(&cipherio::Error) -> bool);
    let cases: Vec<Case> = vec![
        ("list reordered", vec![0, 2, 1, 3], authentication),
        (
            "middle part left out of the list",
            vec![0, 1, 3],
            authentication,
        ),
        (
            "last part left out of the list",
            vec![0, 1, 2],
            authentication,
        ),
        ("a part listed twice", vec![0, 1, 2, 2, 3], authentication),
        (
            "the first part listed last",
            vec![1, 2, 3, 0],
            authentication,
        ),
    ];
    for (what, order, want) in cases {
        let path = Path::from(format!("listed/{}", what.replace(' ', "-")));
        let plan = plan_of(&double, &path).await;
        let parts = sealed(&plan, &pt);
        let mut ids = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            ids.push(
                double
                    .put_part(&path, &plan.upload_id, i, p.clone().into())
                    .await
                    .unwrap(),
            );
        }
        let listed = order.iter().map(|&i| ids[i].clone()).collect();
        double
            .complete_multipart(&path, &plan.upload_id, listed)
            .await
            .unwrap();
        if what == "the first part listed last" {
            // No header where the header should be: the reader refuses the
            // magic before any key is derived.
            let bytes = raw(double.objects.as_ref(), &path).await;
            let model = reader(&key(), path.as_ref(), &bytes).unwrap_err();
            let err = store.get(&path).await.unwrap_err();
            assert_eq!(
                std::mem::discriminant(cipher_error(&err).unwrap()),
                std::mem::discriminant(&model),
                "{what}: {err}"
            );
            continue;
        }
        fails_as_the_reader(what, &store, &path, want).await;
    }
}

/// A server that lies about one object: every ranged GET of `victim` that
/// starts past its first segment (53-byte header, 64 KiB + 16-byte tag)
/// answers with `victim`'s metadata (its ETag, so `If-Match`
/// holds) but the bytes at the same offsets of `donor`.
#[derive(Debug)]
struct OtherObjectsRange {
    inner: Arc<InMemory>,
    victim: Path,
    donor: Path,
}

impl std::fmt::Display for OtherObjectsRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OtherObjectsRange({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for OtherObjectsRange {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        const FIRST_SEGMENT_END: u64 = 53 + 65_536 + 16;
        let past_first = match &options.range {
            Some(GetRange::Bounded(r)) => r.start >= FIRST_SEGMENT_END,
            Some(GetRange::Offset(o)) => *o >= FIRST_SEGMENT_END,
            _ => false,
        };
        let real = self.inner.get_opts(location, options.clone()).await?;
        if location != &self.victim || !past_first {
            return Ok(real);
        }
        let lie = GetOptions {
            if_match: None,
            ..options
        };
        let donor = self.inner.get_opts(&self.donor, lie).await?;
        Ok(GetResult {
            payload: donor.payload,
            ..real
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

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[tokio::test]
async fn a_range_of_another_object_fails_to_authenticate() {
    let victim = Path::from("range/victim");
    let donor = Path::from("range/donor");
    let liar = Arc::new(OtherObjectsRange {
        inner: Arc::new(InMemory::new()),
        victim: victim.clone(),
        donor: donor.clone(),
    });
    let store = EncryptedStore::new(liar, key());
    // The same plaintext and length: only the stream's key and name differ.
    let pt = data(20 * 65_536, 5);
    store.put(&victim, pt.clone().into()).await.unwrap();
    store.put(&donor, pt.clone().into()).await.unwrap();
    // Cold (the header from the metadata), then warm (the header cached);
    // the first segment, which the liar serves true, reads.
    for what in ["cold", "warm"] {
        let err = store
            .get_range(&victim, 300_000..300_100)
            .await
            .unwrap_err();
        assert!(
            matches!(cipher_error(&err), Some(cipherio::Error::Authentication)),
            "{what}: {err}"
        );
        let err = store
            .get_ranges(&victim, &[70_000..70_001, 1_000_000..1_000_010])
            .await
            .unwrap_err();
        assert!(
            matches!(cipher_error(&err), Some(cipherio::Error::Authentication)),
            "{what}, get_ranges: {err}"
        );
        assert_eq!(
            &store.get_range(&victim, 0..100).await.unwrap()[..],
            &pt[..100]
        );
    }
    // The donor itself reads.
    assert_eq!(
        &store.get_range(&donor, 300_000..300_100).await.unwrap()[..],
        &pt[300_000..300_100]
    );
}

/// The limit the README states: an older version of an object, put back
/// under the same name and key, reads as it did. Should this start to
/// fail, the README's "Not detected" is out of date.
#[tokio::test]
async fn an_object_rolled_back_is_not_detected() {
    let store = EncryptedStore::new(Arc::new(InMemory::new()), key());
    let path = Path::from("rolled/back");
    let old = data(3 * 65_536, 6);
    store.put(&path, old.clone().into()).await.unwrap();
    let old_sealed = raw(store.inner().as_ref(), &path).await;
    store.put(&path, data(3 * 65_536, 7).into()).await.unwrap();
    store.inner().put(&path, old_sealed.into()).await.unwrap();
    assert_eq!(store.get(&path).await.unwrap().bytes().await.unwrap(), old);
}
