//! `put_multipart`: an upload that seals whole segments as parts fill.

use async_trait::async_trait;
use cipherio::segments::SegmentSealer;
use object_store::{MultipartUpload, PutPayload, PutResult, Result, UploadPart};
use zeroize::Zeroizing;

use crate::store_error;

/// The [`MultipartUpload`] that [`EncryptedStore`](crate::EncryptedStore)'s
/// `put_multipart` returns: plaintext is buffered until a part of whole
/// segments is full, sealed, and sent as the inner upload's next part (the
/// first with the header); `complete` seals the rest, the stream's final
/// segment, as the last part.
///
/// At least one byte is always held back until `complete`, since only the
/// end says which segment is the final one. Parts are sent in the order
/// `put_part` is called, so the futures it returns may be awaited in any
/// order, as [`MultipartUpload`] allows. Dropped without `complete`, the
/// upload leaves no object (and nothing readable: the final segment was
/// never sealed).
#[derive(Debug)]
pub struct EncryptedUpload {
    inner: Box<dyn MultipartUpload>,
    sealer: SegmentSealer,
    /// Plaintext not yet sealed.
    pending: Zeroizing<Vec<u8>>,
    /// The index of the next segment to seal.
    next: u32,
    /// Plaintext bytes of one part: whole segments.
    part_plaintext: usize,
    header_sent: bool,
}

impl EncryptedUpload {
    /// Seals into `inner`'s parts of at least `part_size` ciphertext bytes
    /// (the fewest whole segments that reach it; the last part may be
    /// smaller), so that a store's smallest part is met.
    pub(crate) fn new(
        inner: Box<dyn MultipartUpload>,
        sealer: SegmentSealer,
        part_size: u64,
    ) -> Self {
        let layout = sealer.layout();
        let segments = part_size.div_ceil(layout.sealed_segment_len()).max(1);
        let part_plaintext =
            usize::try_from(segments * u64::from(layout.segment_size())).unwrap_or(usize::MAX);
        EncryptedUpload {
            inner,
            sealer,
            pending: Zeroizing::new(Vec::new()),
            next: 0,
            part_plaintext,
            header_sent: false,
        }
    }

    /// Seals the first `n` pending bytes (whole segments unless `last`)
    /// as the next part.
    fn seal(&mut self, n: usize, last: bool) -> Result<PutPayload> {
        let mut out = Vec::new();
        if !self.header_sent {
            out.extend_from_slice(self.sealer.header());
        }
        self.sealer
            .seal_segments(self.next, &self.pending[..n], last, &mut out)
            .map_err(store_error)?;
        self.header_sent = true;
        let size = self.sealer.layout().segment_size() as usize;
        self.next += u32::try_from(n / size).map_err(crate::generic)?;
        self.pending.drain(..n);
        Ok(out.into())
    }
}

#[async_trait]
impl MultipartUpload for EncryptedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        data.iter().for_each(|b| self.pending.extend_from_slice(b));
        let mut sent = Vec::new();
        while self.pending.len() > self.part_plaintext {
            match self.seal(self.part_plaintext, false) {
                Ok(part) => sent.push(self.inner.put_part(part)),
                Err(e) => return Box::pin(futures::future::ready(Err(e))),
            }
        }
        Box::pin(async move {
            for part in sent {
                part.await?;
            }
            Ok(())
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let rest = self.seal(self.pending.len(), true)?;
        self.inner.put_part(rest).await?;
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.pending.clear();
        self.inner.abort().await
    }
}
