//! Reads and uploads through a store that fails (`common::faults`):
//! parts lost, answers cut short or lengthened, objects replaced between
//! two requests, calls retried after an error. Every test checks that no
//! segment index of one stream was sent two different ciphertexts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use cipherio::segments::PartLimits;
use cipherio_object_store::{
    EncryptedStore, Source, UploadOptions, UploadPlan, complete_plan, complete_plan_checked,
    create_plan, upload_share,
};
use common::faults::{Fault, Faulty};
use common::keyring::Keying;
use common::{data, key};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const SEG: u32 = 4096;

fn faulty() -> (Arc<Faulty<InMemory>>, EncryptedStore) {
    faulty_keyed(Keying::Native)
}

/// The cases that run under a master key and under a keyring.
const KEYINGS: [Keying; 2] = [Keying::Native, Keying::Keyring];

/// A fault layer over memory, and a store keyed as `keying` over it.
fn faulty_keyed(keying: Keying) -> (Arc<Faulty<InMemory>>, EncryptedStore) {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let store = fresh_keyed(&faulty, keying);
    (faulty, store)
}

/// `complete` called again after it failed: when the final part was lost
/// the retry is refused (its segment would be sealed again), when only
/// the inner completion failed the retry completes the object; neither
/// seals any segment twice.
#[tokio::test]
async fn a_retried_complete_seals_nothing_twice() {
    for (len, keying) in [1000, 3 * SEG as usize + 5]
        .into_iter()
        .flat_map(|l| KEYINGS.map(|k| (l, k)))
    {
        let (faulty, store) = faulty_keyed(keying);
        let path = Path::from(format!("retry/lost-{len}"));
        let mut upload = store.put_multipart(&path).await.unwrap();
        upload.put_part(data(len, 1).into()).await.unwrap();
        faulty.arm(Fault::LosePart);
        upload.complete().await.unwrap_err();
        let again = upload.complete().await.unwrap_err().to_string();
        assert!(again.contains("upload the object again"), "{again}");
        assert!(store.head(&path).await.is_err(), "no object");
        faulty.sent.assert_no_reuse();

        let path = Path::from(format!("retry/complete-{len}"));
        let mut upload = store.put_multipart(&path).await.unwrap();
        upload.put_part(data(len, 2).into()).await.unwrap();
        faulty.arm(Fault::FailComplete);
        upload.complete().await.unwrap_err();
        upload.complete().await.unwrap();
        let back = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(back, data(len, 2));
        faulty.sent.assert_no_reuse();
    }
}

/// Every part but the last is one size, the header counted in the first
/// part's share: of a `put_multipart` upload and of a planned one.
#[tokio::test]
async fn every_part_but_the_last_is_one_size() {
    let (faulty, store) = faulty();
    let store = store.with_part_size(3 * SEG as u64);
    let path = Path::from("sizes/put-multipart");
    let mut upload = store.put_multipart(&path).await.unwrap();
    for piece in data(10 * SEG as usize + 7, 3).chunks(1000) {
        upload.put_part(piece.to_vec().into()).await.unwrap();
    }
    upload.complete().await.unwrap();
    let back = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(back, data(10 * SEG as usize + 7, 3));
    one_size(&faulty.sent.part_sizes(path.as_ref()));

    // The second length is whole parts of whole segments (parts of 2 or
    // 3 segments): the stream then ends a header's length past the last
    // full part.
    for len in [23 * SEG as usize + 17, 12 * SEG as usize] {
        let path = Path::from(format!("sizes/planned-{len}"));
        let source: Source = Arc::new(data(len, 4));
        let plan = planned(&faulty, &path, source.clone()).await;
        assert_eq!(upload_all(&faulty, &plan, source).await, data(len, 4));
        one_size(&faulty.sent.part_sizes(&plan.upload_id));
    }
    faulty.sent.assert_no_reuse();
}

/// `sizes` (number, size) has several parts, all but the last one size
/// and the last no larger (as R2 requires).
fn one_size(sizes: &[(usize, usize)]) {
    assert!(sizes.len() >= 3, "{sizes:?}");
    let (_, first) = sizes[0];
    for (n, size) in &sizes[..sizes.len() - 1] {
        assert_eq!(*size, first, "part {n} of {sizes:?}");
    }
    let (n, last) = sizes[sizes.len() - 1];
    assert!(last <= first, "part {n}, the last, of {sizes:?}");
}

/// A plan under the test key of `source` to `path`, in parts of a few
/// segments.
async fn planned(faulty: &Arc<Faulty<InMemory>>, path: &Path, source: Source) -> UploadPlan {
    create_plan(&**faulty, &key(), path, source, &small_limits())
        .await
        .unwrap()
}

fn small_limits() -> UploadOptions {
    UploadOptions {
        segment_size: SEG,
        part_size: 3 * SEG as u64,
        limits: PartLimits::new(2 * SEG as u64, 10 * SEG as u64, 1000),
        ..UploadOptions::default()
    }
}

/// A plan edited on its way to a worker (or made under another key) is
/// refused before anything is sealed: no part reaches the store.
#[tokio::test]
async fn an_edited_plan_is_refused_and_nothing_is_sent() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let path = Path::from("plans/edited");
    let len = 23 * SEG as usize + 17;
    let plan = planned(&faulty, &path, Arc::new(data(len, 6))).await;
    let other = planned(&faulty, &path, Arc::new(data(len, 6))).await;
    type Edit = (&'static str, fn(&mut UploadPlan, &UploadPlan));
    let edits: Vec<Edit> = vec![
        ("two parts seal one segment", |p, _| {
            p.parts[1].first_segment = p.parts[0].first_segment;
        }),
        ("a part ends before it starts", |p, _| {
            p.parts[1].plaintext_end = p.parts[1].plaintext_start - 1;
        }),
        ("a part past the length", |p, _| {
            p.parts[3].plaintext_end += 5 * SEG as u64;
        }),
        ("another plan's header", |p, o| p.header = o.header.clone()),
        ("another path", |p, _| p.path = "plans/elsewhere".into()),
        ("another length", |p, _| p.plaintext_len += 1),
        ("parts reordered", |p, _| p.parts.swap(1, 2)),
    ];
    let source: Source = Arc::new(data(len, 6));
    let all: Vec<u32> = (0..plan.parts.len() as u32).collect();
    for (what, edit) in edits {
        let mut edited = plan.clone();
        edit(&mut edited, &other);
        let sent = upload_share(faulty.clone(), &key(), &edited, &all, source.clone(), 2).await;
        let err = sent.expect_err(what).to_string();
        assert!(err.contains("nothing was sealed or sent"), "{what}: {err}");
    }
    // Made under another key.
    let stranger = cipherio::Key::new(cipherio::Algorithm::Aes256Gcm, &[7; 32]).unwrap();
    let sent = upload_share(faulty.clone(), &stranger, &plan, &all, source.clone(), 2).await;
    assert!(sent.is_err(), "a plan of another key");
    assert_eq!(faulty.sent.part_sizes(&plan.upload_id), [], "no part sent");
    // The plan as made is sealed and sent.
    upload_share(faulty.clone(), &key(), &plan, &all, source, 2)
        .await
        .unwrap();
    faulty.sent.assert_no_reuse();
}

/// A ranged GET answered short or long (inside one segment, across
/// several, through `get_ranges`; cold cache and warm) is an error, never
/// a panic, and the next read is right.
#[tokio::test]
async fn a_short_or_long_answer_is_an_error() {
    for keying in KEYINGS {
        short_or_long(keying).await;
    }
}

async fn short_or_long(keying: Keying) {
    let (faulty, store) = faulty_keyed(keying);
    let path = Path::from("answers/object");
    let pt = data(10 * SEG as usize + 99, 7);
    store.put(&path, pt.clone().into()).await.unwrap();
    let ranges = [
        100..200,
        5000..3 * SEG as u64 + 10,
        9 * SEG as u64..10 * SEG as u64 + 50,
    ];
    store.get(&path).await.unwrap();
    for fault in [
        Fault::Short(1),
        Fault::Short(3000),
        Fault::Long(1),
        Fault::Long(40),
    ] {
        for r in &ranges {
            // A store with no header cached, and one with it cached.
            let cold = fresh_keyed(&faulty, keying).with_header_cache(0);
            for (what, store) in [("cold", &cold), ("warm", &store)] {
                faulty.arm(fault.clone());
                let got = store.get_range(&path, r.clone()).await;
                assert!(got.is_err(), "{fault:?} {r:?} {what}");
                faulty.arm(fault.clone());
                let got = store.get_ranges(&path, &ranges).await;
                assert!(got.is_err(), "{fault:?} get_ranges {what}");
                let got = store.get_range(&path, r.clone()).await.unwrap();
                assert_eq!(got, pt[r.start as usize..r.end as usize]);
            }
        }
    }
}

/// An `EncryptedStore` over `faulty` with nothing cached.
fn fresh(faulty: &Arc<Faulty<InMemory>>) -> EncryptedStore {
    fresh_keyed(faulty, Keying::Native)
}

/// An `EncryptedStore` over `faulty` with nothing cached, keyed as
/// `keying` (a master key: segments of `SEG` bytes).
fn fresh_keyed(faulty: &Arc<Faulty<InMemory>>, keying: Keying) -> EncryptedStore {
    let store = keying.store(Arc::clone(faulty) as Arc<dyn ObjectStore>);
    match keying {
        Keying::Keyring => store,
        _ => store.with_segment_size(SEG).unwrap(),
    }
}

/// The recorder sees a nonce sealed twice: segment 0 of one header sent
/// with two plaintexts.
#[tokio::test]
#[should_panic(expected = "a nonce sealed two plaintexts")]
async fn the_recorder_catches_a_nonce_sealed_twice() {
    let faulty = Faulty::new(Arc::new(InMemory::new()));
    let sealer = cipherio::segments::SegmentSealer::new(&key(), SEG, b"").unwrap();
    for (n, seed) in [(0, 1), (1, 2)] {
        let mut stream = sealer.header().to_vec();
        sealer
            .seal_segments(0, &data(100, seed), true, &mut stream)
            .unwrap();
        let path = Path::from(format!("twice/{n}"));
        faulty.put(&path, stream.into()).await.unwrap();
    }
    faulty.sent.assert_no_reuse();
}

/// Parts lost once (the part, or only its answer) in a planned upload
/// shared by two workers: the worker whose share failed sends it again,
/// the upload completes, and every part resent is the bytes sent before.
#[tokio::test]
async fn parts_lost_once_and_resent_seal_the_same_bytes() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let len = 23 * SEG as usize + 17;
    let (key, source): (_, Source) = (key(), Arc::new(data(len, 10)));
    for fault in [Fault::LosePart, Fault::LoseAnswer] {
        let path = Path::from(format!("lost/{fault:?}"));
        let plan = planned(&faulty, &path, source.clone()).await;
        let mut done = Vec::new();
        for worker in 0..2u32 {
            let share = common::share(&plan, worker, 2);
            faulty.arm(fault.clone());
            let first = upload_share(faulty.clone(), &key, &plan, &share, source.clone(), 2).await;
            assert!(first.is_err(), "{fault:?}");
            let again = upload_share(faulty.clone(), &key, &plan, &share, source.clone(), 2);
            done.extend(again.await.unwrap());
        }
        complete_plan_checked(&*faulty, &key, &plan, done)
            .await
            .unwrap();
        let back = common::whole(&fresh(&faulty), &path).await;
        assert_eq!(back, data(len, 10));
    }
    faulty.sent.assert_no_reuse();
}

/// Another writer replaces the object between two requests of one read
/// (after the GET that learns the header and version, before the GET of
/// the segments; after a HEAD): the read gives the bytes of one version
/// or an error, never a mix, and never sends a write.
#[tokio::test]
async fn a_write_between_two_requests_never_mixes_versions() {
    let (faulty, store) = faulty();
    let path = Path::from("replaced/object");
    let (old, new) = (data(10 * SEG as usize, 11), data(10 * SEG as usize, 12));
    // The new version's ciphertext, made aside.
    let aside = fresh(&Arc::new(Faulty::new(Arc::new(InMemory::new()))));
    aside.put(&path, new.clone().into()).await.unwrap();
    let replacement = common::raw(aside.inner().as_ref(), &path).await;
    let r = 3 * SEG as u64 + 5..7 * SEG as u64;
    let want = |v: &[u8]| v[r.start as usize..r.end as usize].to_vec();
    for (what, head_first) in [("between two GETs", false), ("after a HEAD", true)] {
        store.put(&path, old.clone().into()).await.unwrap();
        let cold = fresh(&faulty)
            .with_header_cache(0)
            .with_header_attribute(false);
        faulty.arm(Fault::Overwrite(replacement.clone().into()));
        if head_first {
            assert_eq!(cold.head(&path).await.unwrap().size, old.len() as u64);
        }
        match cold.get_range(&path, r.clone()).await {
            Ok(b) => assert!(
                b.to_vec() == want(&old) || b.to_vec() == want(&new),
                "{what}"
            ),
            Err(e) => assert!(
                matches!(e, object_store::Error::Precondition { .. }),
                "{what}: {e}"
            ),
        }
        store.put(&path, old.clone().into()).await.unwrap();
        faulty.arm(Fault::Overwrite(replacement.clone().into()));
        match cold.get_ranges(&path, &[r.clone(), 0..10]).await {
            Ok(b) => assert!(b[0].to_vec() == want(&old) || b[0].to_vec() == want(&new)),
            Err(e) => assert!(matches!(e, object_store::Error::Precondition { .. }), "{e}"),
        }
    }
    faulty.sent.assert_no_reuse();
}

/// `get_ranges` of ranges far apart: one ranged GET each, at most ten in
/// flight at once, and on a cold cache the GET that learned the header
/// serves the first range too.
#[tokio::test]
async fn get_ranges_runs_ten_gets_at_once_and_fetches_each_once() {
    let (faulty, store) = faulty();
    let path = Path::from("ranges/object");
    let pt = data(12 * 300 * SEG as usize, 13);
    store.put(&path, pt.clone().into()).await.unwrap();
    // 12 ranges, each 300 segments (over 1 MiB of ciphertext, too far to
    // merge) from the next.
    let ranges: Vec<_> = (0..12u64)
        .map(|i| i * 300 * SEG as u64 + 7..i * 300 * SEG as u64 + 99)
        .collect();
    let cold = fresh(&faulty);
    let gets = faulty.gets.load(Ordering::SeqCst);
    let got = cold.get_ranges(&path, &ranges).await.unwrap();
    for (r, b) in ranges.iter().zip(&got) {
        assert_eq!(b[..], pt[r.start as usize..r.end as usize]);
    }
    assert_eq!(faulty.gets.load(Ordering::SeqCst) - gets, ranges.len());
    assert_eq!(faulty.most_in_flight.load(Ordering::SeqCst), 10);
}

/// A copy (the path bound: re-encrypted through the client) of an object
/// larger than a part is streamed into a multipart upload of parts of
/// one size, not sent as one PUT of the whole object.
#[tokio::test]
async fn a_large_copy_is_a_multipart_upload() {
    for keying in KEYINGS {
        large_copy(keying).await;
    }
}

async fn large_copy(keying: Keying) {
    let (faulty, store) = faulty_keyed(keying);
    let store = store.with_part_size(3 * SEG as u64);
    let (from, to) = (Path::from("copy/from"), Path::from("copy/to"));
    let pt = data(10 * SEG as usize + 3, 14);
    store.put(&from, pt.clone().into()).await.unwrap();
    store.copy(&from, &to).await.unwrap();
    assert_eq!(store.get(&to).await.unwrap().bytes().await.unwrap(), pt);
    one_size(&faulty.sent.part_sizes(to.as_ref()));
    faulty.sent.assert_no_reuse();
}

/// A plan edited to complete a truncated object in place of the one
/// planned is refused before the store sees the list. Without the key,
/// `complete_plan` refuses a plan with its last part dropped and its
/// length kept (its parts are not its layout's); a plan cut to a shorter
/// length, its parts that length's layout, passes that check, and only
/// the MAC `complete_plan_checked` checks refuses it. The plan as made
/// then completes.
#[tokio::test]
async fn an_edited_plan_is_not_completed() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let path = Path::from("plans/complete-edited");
    let len = 23 * SEG as usize + 17;
    let plan = planned(&faulty, &path, Arc::new(data(len, 12))).await;
    let all: Vec<u32> = plan.parts.iter().map(|p| p.number).collect();
    let source: Source = Arc::new(data(len, 12));
    let done = upload_share(faulty.clone(), &key(), &plan, &all, source, 2)
        .await
        .unwrap();
    let fewer = done[..done.len() - 1].to_vec();
    let mut dropped = plan.clone();
    dropped.parts.pop();
    let err = complete_plan(&*faulty, &dropped, fewer.clone())
        .await
        .expect_err("a plan with its last part dropped, its length kept");
    assert!(err.to_string().contains("not its layout's"), "{err}");
    // The parts the layout gives a stream a part's size shorter (a part
    // here is two sealed segments): one part fewer, of the same size.
    let shorter_len = (len - 2 * SEG as usize) as u64;
    let shorter = create_plan(&*faulty, &key(), &path, shorter_len, &small_limits())
        .await
        .unwrap();
    assert_eq!(shorter.parts.len(), plan.parts.len() - 1);
    assert_eq!(shorter.part_size, plan.part_size);
    let cut = UploadPlan {
        plaintext_len: shorter.plaintext_len,
        parts: shorter.parts,
        ..plan.clone()
    };
    let err = complete_plan_checked(&*faulty, &key(), &cut, fewer)
        .await
        .expect_err("a plan cut to a shorter length");
    assert!(err.to_string().contains("does not authenticate"), "{err}");
    assert!(faulty.head(&path).await.is_err(), "no object completed");
    complete_plan_checked(&*faulty, &key(), &plan, done)
        .await
        .unwrap();
    let back = common::whole(&fresh(&faulty), &path).await;
    assert_eq!(back, data(len, 12));
}

/// A source file rewritten while a planned upload runs: part 1 is stored
/// but its answer lost, the file changes, and the worker sends part 1
/// again; part 2 (which shares a segment with part 1) is sealed after the
/// change too. Neither is sealed from the new bytes (that would send one
/// segment's nonce two plaintexts): both are refused, and nothing is sent
/// twice differently.
#[tokio::test]
async fn a_source_changed_mid_upload_is_refused() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let path = Path::from("plans/source-changed");
    let len = 23 * SEG as usize + 17;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), data(len, 13)).unwrap();
    let source: Source = Arc::new(std::fs::File::open(file.path()).unwrap());
    let plan = planned(&faulty, &path, source.clone()).await;
    faulty.arm(Fault::LoseAnswer);
    upload_share(faulty.clone(), &key(), &plan, &[1], source.clone(), 1)
        .await
        .unwrap_err();
    std::fs::write(file.path(), data(len, 14)).unwrap();
    for part in [1, 2] {
        let err = upload_share(faulty.clone(), &key(), &plan, &[part], source.clone(), 1)
            .await
            .expect_err("a part sealed from changed bytes");
        assert!(err.to_string().contains("changed"), "part {part}: {err}");
    }
    faulty.sent.assert_no_reuse();
}

/// A plan the layout cuts into exactly the most parts the store allows,
/// whose stream ends a header's length past a full part: its parts of one
/// size stay within the limit (each takes a segment more), the last no
/// larger than the others.
#[tokio::test]
async fn a_plan_at_the_most_parts_stays_within_them() {
    let faulty = Arc::new(Faulty::new(Arc::new(InMemory::new())));
    let options = UploadOptions {
        segment_size: SEG,
        part_size: 2 * SEG as u64,
        limits: PartLimits::new(2 * SEG as u64, 10 * SEG as u64, 6),
        ..UploadOptions::default()
    };
    let path = Path::from("sizes/most-parts");
    let source: Source = Arc::new(data(12 * SEG as usize, 15));
    let plan = create_plan(&*faulty, &key(), &path, source.clone(), &options)
        .await
        .unwrap();
    assert!(plan.parts.len() <= 6, "{:?}", plan.parts);
    let back = upload_all(&faulty, &plan, source).await;
    assert_eq!(back, data(12 * SEG as usize, 15));
    one_size(&faulty.sent.part_sizes(&plan.upload_id));
}

/// Sends every part of `plan` from `source`, completes the upload and
/// reads the object back.
async fn upload_all(faulty: &Arc<Faulty<InMemory>>, plan: &UploadPlan, source: Source) -> Vec<u8> {
    let all: Vec<u32> = plan.parts.iter().map(|p| p.number).collect();
    let done = upload_share(faulty.clone(), &key(), plan, &all, source, 3)
        .await
        .unwrap();
    complete_plan_checked(&**faulty, &key(), plan, done)
        .await
        .unwrap();
    let path = Path::from(plan.path.as_str());
    let back = fresh(faulty).get(&path).await.unwrap().bytes().await;
    back.unwrap().to_vec()
}
