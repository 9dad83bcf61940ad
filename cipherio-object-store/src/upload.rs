//! `put_multipart`: an upload that seals whole segments as plaintext
//! arrives and sends the stream in parts of one size.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use cipherio::segments::SegmentSealer;
use object_store::{MultipartUpload, PutPayload, PutResult, Result, UploadPart};
use zeroize::Zeroizing;

use crate::keyring::Records;
use crate::{generic, store_error};

/// The [`MultipartUpload`] that [`EncryptedStore`](crate::EncryptedStore)'s
/// `put_multipart` returns: whole segments are sealed as plaintext
/// arrives, and the stream (header, then segments) is sent as the inner
/// upload's parts, every part but the last exactly the part size (the
/// header counts in the first part's share); `complete` seals the rest,
/// the stream's final segment, into the last part.
///
/// At least one byte is always held back until `complete`, since only the
/// end says which segment is the final one. Parts are sent in the order
/// `put_part` is called, so the futures it returns may be awaited in any
/// order, as [`MultipartUpload`] allows. Dropped without `complete`, the
/// upload leaves no object (and nothing readable: the final segment was
/// never sealed).
///
/// Every segment is sealed once. `complete` seals the final segment
/// once: when the inner upload's `complete` fails after every part was
/// sent, calling `complete` again retries only that. When a sealed part
/// fails to send, the upload is spoiled: sealing it again would reuse its
/// nonces with other bytes, and sending it again would not put it in its
/// place (the inner upload numbers parts as they come), so every later
/// `complete` is refused. Abort it and upload the object again: a new
/// upload seals under a new header.
#[derive(Debug)]
pub struct EncryptedUpload {
    inner: Box<dyn MultipartUpload>,
    sealer: SegmentSealer,
    /// Plaintext not yet sealed.
    pending: Zeroizing<Vec<u8>>,
    /// Sealed bytes not yet sent: the header first, then segments.
    sealed: Vec<u8>,
    /// The index of the next segment to seal.
    next: u32,
    /// Ciphertext bytes of every part but the last.
    part_size: usize,
    /// The final segment is sealed: nothing more is.
    finished: bool,
    /// A sealed part failed to send, or the upload was aborted.
    spoiled: Arc<AtomicBool>,
    /// Through a keyring: the key records of the write.
    records: Option<Records>,
    /// The inner upload completed.
    completed: bool,
}

impl EncryptedUpload {
    /// Sends `inner` parts of `part_size` ciphertext bytes (the last may
    /// be smaller), so that a store's smallest part is met.
    pub(crate) fn new(
        inner: Box<dyn MultipartUpload>,
        sealer: SegmentSealer,
        part_size: u64,
        records: Option<Records>,
    ) -> Self {
        EncryptedUpload {
            inner,
            sealed: sealer.header().to_vec(),
            sealer,
            pending: Zeroizing::new(Vec::new()),
            next: 0,
            part_size: usize::try_from(part_size.max(1)).unwrap_or(usize::MAX),
            finished: false,
            spoiled: Arc::new(AtomicBool::new(false)),
            records,
            completed: false,
        }
    }

    /// Seals the pending plaintext: with `last` all of it, as the stream's
    /// end, else its whole segments but at least one byte.
    fn seal(&mut self, last: bool) -> Result<()> {
        let size = self.sealer.layout().segment_size() as usize;
        let n = if last {
            self.pending.len()
        } else {
            self.pending.len().saturating_sub(1) / size * size
        };
        if n == 0 && !last {
            return Ok(());
        }
        self.sealer
            .seal_segments(self.next, &self.pending[..n], last, &mut self.sealed)
            .map_err(store_error)?;
        self.next += u32::try_from(n / size).map_err(generic)?;
        self.pending.drain(..n);
        Ok(())
    }

    /// Sends the sealed bytes as parts of the part size (all of them, the
    /// last part smaller, when `all`), in order; a part that fails spoils
    /// the upload.
    fn send(&mut self, all: bool) -> UploadPart {
        let mut sent = Vec::new();
        while self.sealed.len() >= self.part_size || (all && !self.sealed.is_empty()) {
            let rest = self.sealed.split_off(self.part_size.min(self.sealed.len()));
            let part = std::mem::replace(&mut self.sealed, rest);
            sent.push(self.inner.put_part(part.into()));
        }
        let spoiled = Arc::clone(&self.spoiled);
        Box::pin(async move {
            for part in sent {
                part.await
                    .inspect_err(|_| spoiled.store(true, Ordering::Relaxed))?;
            }
            Ok(())
        })
    }

    /// Why nothing more can be sealed or sent, if so.
    fn refused(&self) -> Option<object_store::Error> {
        if self.spoiled.load(Ordering::Relaxed) {
            Some(generic(
                "a sealed part of this upload failed to send, or the upload was aborted: \
                 it cannot be completed (sealing a part again would reuse its nonces); \
                 abort it and upload the object again, under a new header",
            ))
        } else {
            None
        }
    }
}

#[async_trait]
impl MultipartUpload for EncryptedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let refused = match self.refused() {
            None if self.finished => Some(generic("the upload is complete: no more parts")),
            r => r,
        };
        if let Some(e) = refused {
            return Box::pin(futures::future::ready(Err(e)));
        }
        data.iter().for_each(|b| self.pending.extend_from_slice(b));
        if let Err(e) = self.seal(false) {
            return Box::pin(futures::future::ready(Err(e)));
        }
        self.send(false)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        if let Some(e) = self.refused() {
            return Err(e);
        }
        if !self.finished {
            self.seal(true)?;
            self.finished = true;
            self.send(true).await?;
        }
        let done = self.inner.complete().await?;
        self.completed = true;
        if let Some(records) = &self.records {
            records.written().await;
        }
        Ok(done)
    }

    async fn abort(&mut self) -> Result<()> {
        self.pending.clear();
        self.spoiled.store(true, Ordering::Relaxed);
        if let Some(records) = self.records.as_ref().filter(|_| !self.completed) {
            records.aborted().await;
        }
        self.inner.abort().await
    }
}
