//! Reads: whole objects opened as they stream, plaintext ranges mapped to
//! the segments that hold them and fetched with one ranged GET pinned to
//! one version.

use std::ops::Range;

use bytes::Bytes;
use cipherio::segments::{Layout, SegmentOpener};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, GetOptions, GetRange, GetResult, GetResultPayload, ObjectMeta, Result,
};

use crate::cache::Pinned;
use crate::store::{EncryptedStore, header_key, user_attributes};
use crate::{STORE, store_error};

/// Ranged GETs that `get_ranges` merges when the gap between them is at
/// most this many bytes, as `object_store` coalesces its own.
const COALESCE: u64 = object_store::OBJECT_STORE_COALESCE_DEFAULT;

/// Ranged GETs that `get_ranges` has in flight at once, as `object_store`
/// runs its own.
const PARALLEL: usize = 10;

/// Sealed segments fetched from an object: `bytes` start at segment
/// `first`.
struct Fetched {
    first: u32,
    bytes: Bytes,
}

/// What a first GET told about the object besides its bytes.
struct Response {
    meta: ObjectMeta,
    attributes: Attributes,
    extensions: object_store::Extensions,
}

impl EncryptedStore {
    pub(crate) async fn get_impl(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.head {
            let result = self.inner().get_opts(location, options).await?;
            let meta = self.plaintext_meta(result.meta)?;
            return Ok(GetResult {
                payload: GetResultPayload::Stream(futures::stream::empty().boxed()),
                range: 0..meta.size,
                meta,
                attributes: user_attributes(result.attributes),
                extensions: result.extensions,
            });
        }
        match options.range.clone() {
            None => self.get_whole(location, options).await,
            Some(range) => {
                range.is_valid().map_err(range_error)?;
                self.get_ranged(location, &options, &range).await
            }
        }
    }

    /// One GET of the whole object, opened segment by segment as it
    /// arrives.
    async fn get_whole(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let result = self.inner_get(location, options).await?;
        let response = Response {
            meta: result.meta.clone(),
            attributes: result.attributes.clone(),
            extensions: result.extensions.clone(),
        };
        let counter = std::sync::Arc::clone(self.received());
        let mut stream = result
            .into_stream()
            .inspect_ok(move |b| {
                counter.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
            })
            .boxed();
        let header_len = self.layout().header_len() as usize;
        let mut buf = Vec::new();
        while buf.len() < header_len {
            match stream.try_next().await? {
                Some(b) => buf.extend_from_slice(&b),
                None => break,
            }
        }
        let opener = self.opener(location, &buf).await?;
        let pinned = Pinned {
            e_tag: response.meta.e_tag.clone(),
            version: response.meta.version.clone(),
            size: response.meta.size,
            opener: opener.clone(),
            header: buf[..buf.len().min(header_len)].to_vec(),
        };
        let len = pinned.plaintext_len().ok_or_else(impossible)?;
        self.cache.insert(location, &pinned);
        buf.drain(..header_len);
        let body = opened(opener, buf, stream);
        Ok(GetResult {
            payload: GetResultPayload::Stream(body),
            range: 0..len,
            meta: ObjectMeta {
                size: len,
                ..response.meta
            },
            attributes: user_attributes(response.attributes),
            extensions: response.extensions,
        })
    }

    async fn get_ranged(
        &self,
        location: &Path,
        options: &GetOptions,
        range: &GetRange,
    ) -> Result<GetResult> {
        if let Some(pinned) = self.warm(location, options).await {
            match self
                .read_pinned(location, options, &pinned, range, None)
                .await
            {
                // Another version now (or none): read it afresh.
                Err(object_store::Error::Precondition { .. }) => self.cache.remove(location),
                Err(e @ object_store::Error::NotFound { .. }) => {
                    self.cache.remove(location);
                    return Err(e);
                }
                other => return other,
            }
        }
        let (pinned, response, fetched) = self.pin(location, options, range).await?;
        self.read_pinned(location, options, &pinned, range, Some((response, fetched)))
            .await
    }

    /// The cached version of `location`, if the caller pinned no version
    /// of their own.
    ///
    /// Through a keyring the object's key record is read again (every read
    /// reads it, so a record changed or deleted is refused at once); when
    /// it no longer opens the cached version, that version is forgotten
    /// and the object read afresh (a newer version deletes the record of
    /// the one it replaced).
    async fn warm(&self, location: &Path, options: &GetOptions) -> Option<Pinned> {
        if options.if_match.is_some() || options.version.is_some() {
            return None;
        }
        let mut pinned = self.cache.get(location)?;
        if self.keyring().is_some() {
            match self.opener(location, &pinned.header).await {
                Ok(opener) => pinned.opener = opener,
                Err(_) => {
                    self.cache.remove(location);
                    return None;
                }
            }
        }
        Some(pinned)
    }

    /// Learns the object's version and header: one GET of the segments
    /// `range` needs were the object laid out as this store writes (from
    /// byte 0 when they start at segment 0, so the header comes along), or
    /// of the header alone for a suffix; the header from those bytes, the
    /// metadata, or a second GET pinned to the first's version.
    async fn pin(
        &self,
        location: &Path,
        options: &GetOptions,
        range: &GetRange,
    ) -> Result<(Pinned, Response, Option<Fetched>)> {
        let layout = self.layout();
        let header_len = layout.header_len();
        let guess = match range {
            GetRange::Bounded(r) => Some(layout.segments_for(r.clone())),
            GetRange::Offset(o) => Some(layout.segments_for(*o..u64::MAX)),
            GetRange::Suffix(_) => None,
        };
        let (want, first) = match &guess {
            Some(s) => {
                let c = layout.ciphertext_range(s.clone());
                (if s.start == 0 { 0..c.end } else { c }, s.start)
            }
            None => (0..header_len, 0),
        };
        let opts = GetOptions {
            range: Some(GetRange::Bounded(want.clone())),
            head: false,
            ..options.clone()
        };
        let (response, mut bytes) = self.ranged_get(location, opts).await?;
        let header = if want.start == 0 {
            let h = bytes.slice(..bytes.len().min(header_len as usize));
            bytes = bytes.slice(h.len()..);
            h
        } else if let Some(h) = response
            .attributes
            .get(&header_key())
            .and_then(|v| hex::decode(v.as_ref()).ok())
        {
            Bytes::from(h)
        } else {
            let opts = GetOptions {
                range: Some(GetRange::Bounded(0..header_len)),
                if_match: response.meta.e_tag.clone(),
                version: response.meta.version.clone(),
                extensions: options.extensions.clone(),
                ..GetOptions::default()
            };
            self.ranged_get(location, opts).await?.1
        };
        let opener = self.opener(location, &header).await?;
        let same_layout = opener.layout() == layout;
        let pinned = Pinned {
            e_tag: response.meta.e_tag.clone(),
            version: response.meta.version.clone(),
            size: response.meta.size,
            opener,
            header: header.to_vec(),
        };
        if pinned.plaintext_len().is_some() {
            self.cache.insert(location, &pinned);
        }
        let fetched = (guess.is_some() && same_layout).then_some(Fetched { first, bytes });
        Ok((pinned, response, fetched))
    }

    /// Reads `range` of the version `pinned`: its segments from `known`
    /// when the first GET brought them, else with one ranged GET pinned
    /// with `If-Match`.
    async fn read_pinned(
        &self,
        location: &Path,
        options: &GetOptions,
        pinned: &Pinned,
        range: &GetRange,
        known: Option<(Response, Option<Fetched>)>,
    ) -> Result<GetResult> {
        let len = pinned.plaintext_len().ok_or_else(impossible)?;
        let r = range.as_range(len).map_err(range_error)?;
        let layout = pinned.layout();
        // An empty range still opens a segment (the last), so that even
        // an empty read is of an object that authenticates.
        let segments = if r.is_empty() {
            let count = u32::try_from(layout.segment_count(len)).map_err(crate::generic)?;
            count - 1..count
        } else {
            segments_of(layout, len, &r)
        };
        let c = layout.ciphertext_range(segments.clone());
        let whole = c.end.min(pinned.size) - c.start;
        let (response, fetched) = match known {
            Some((response, Some(f)))
                if f.first == segments.start && f.bytes.len() as u64 >= whole =>
            {
                (response, f)
            }
            Some((response, _)) => {
                let (_, f) = self
                    .fetch(location, options, pinned, segments.clone())
                    .await?;
                (response, f)
            }
            None => {
                self.fetch(location, options, pinned, segments.clone())
                    .await?
            }
        };
        let sealed = fetched
            .bytes
            .slice(..fetched.bytes.len().min(whole as usize));
        let opened = open_run(pinned, segments.clone(), &sealed)?;
        let from = layout.plaintext_range(segments).start;
        let plaintext =
            Bytes::from(opened).slice((r.start - from) as usize..(r.end - from) as usize);
        Ok(GetResult {
            payload: GetResultPayload::Stream(
                futures::stream::once(futures::future::ready(Ok(plaintext))).boxed(),
            ),
            meta: ObjectMeta {
                size: len,
                ..response.meta
            },
            range: r,
            attributes: user_attributes(response.attributes),
            extensions: response.extensions,
        })
    }

    /// One ranged GET of `segments` of the version `pinned`.
    async fn fetch(
        &self,
        location: &Path,
        options: &GetOptions,
        pinned: &Pinned,
        segments: Range<u32>,
    ) -> Result<(Response, Fetched)> {
        let c = pinned.layout().ciphertext_range(segments.clone());
        let end = c.end.min(pinned.size);
        let opts = GetOptions {
            range: Some(GetRange::Bounded(c.start..end)),
            if_match: pinned.e_tag.clone().or_else(|| options.if_match.clone()),
            version: pinned.version.clone(),
            head: false,
            ..options.clone()
        };
        let (response, bytes) = self.ranged_get(location, opts).await?;
        Ok((
            response,
            Fetched {
                first: segments.start,
                bytes,
            },
        ))
    }

    /// A ranged GET and its bytes, counted: exactly the bytes asked for
    /// (cut at the object's end), else an error. An answer from byte 0
    /// of an object whose length no stream of its header has is refused
    /// once the header is in, before the rest is downloaded.
    async fn ranged_get(&self, location: &Path, opts: GetOptions) -> Result<(Response, Bytes)> {
        let asked = opts.range.clone();
        let result = self.inner_get(location, opts).await?;
        let response = Response {
            meta: result.meta.clone(),
            attributes: result.attributes.clone(),
            extensions: result.extensions.clone(),
        };
        let size = response.meta.size;
        let header_len = self.layout().header_len() as usize;
        let mut unchecked = matches!(&asked, Some(GetRange::Bounded(r)) if r.start == 0);
        let mut body = result.into_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.try_next().await? {
            self.received()
                .fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
            bytes.extend_from_slice(&chunk);
            if unchecked && bytes.len() >= header_len {
                unchecked = false;
                let layout = self.header_layout(location, &bytes[..header_len]);
                if layout.is_some_and(|l| l.plaintext_len(size).is_none()) {
                    return Err(impossible());
                }
            }
        }
        let bytes = Bytes::from(bytes);
        if let Some(asked) = asked {
            let want = asked.as_range(size).map_err(range_error)?;
            if bytes.len() as u64 != want.end - want.start {
                return Err(crate::generic(format!(
                    "{location}: asked for bytes {want:?} of {size}, the store answered {}",
                    bytes.len()
                )));
            }
        }
        Ok((response, bytes))
    }

    pub(crate) async fn get_ranges_impl(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let options = GetOptions::default();
        if let Some(pinned) = self.warm(location, &options).await {
            match self.ranges_of(location, &pinned, ranges, None).await {
                Err(object_store::Error::Precondition { .. }) => self.cache.remove(location),
                other => return other,
            }
        }
        // The version and header: the segments of the first range, from
        // byte 0 if they start there; they serve that range's GET too.
        let first = ranges[0].clone();
        let (pinned, _, fetched) = self
            .pin(location, &options, &GetRange::Bounded(first))
            .await?;
        self.ranges_of(location, &pinned, ranges, fetched).await
    }

    /// `ranges` of the version `pinned`: the segments they need, merged
    /// where they lie close, one ranged GET each (none for the run
    /// `known` holds whole), at most [`PARALLEL`] at once.
    async fn ranges_of(
        &self,
        location: &Path,
        pinned: &Pinned,
        ranges: &[Range<u64>],
        mut known: Option<Fetched>,
    ) -> Result<Vec<Bytes>> {
        let len = pinned.plaintext_len().ok_or_else(impossible)?;
        let layout = pinned.layout();
        let resolved = ranges
            .iter()
            .map(|r| {
                GetRange::Bounded(r.clone())
                    .as_range(len)
                    .map_err(range_error)
            })
            .collect::<Result<Vec<_>>>()?;
        let gap = COALESCE.div_ceil(layout.sealed_segment_len()).max(1);
        let mut spans: Vec<Range<u32>> = resolved
            .iter()
            .map(|r| segments_of(layout, len, r))
            .collect();
        spans.sort_by_key(|s| s.start);
        let mut merged: Vec<Range<u32>> = Vec::new();
        for s in spans {
            match merged.last_mut() {
                Some(m) if u64::from(s.start) <= u64::from(m.end) + gap => m.end = m.end.max(s.end),
                _ => merged.push(s),
            }
        }
        let options = GetOptions::default();
        let runs = merged.into_iter().map(|s| {
            let c = layout.ciphertext_range(s.clone());
            let whole = (c.end.min(pinned.size) - c.start) as usize;
            let held = known
                .take_if(|f| f.first == s.start && f.bytes.len() >= whole)
                .map(|f| f.bytes.slice(..whole));
            (s, held)
        });
        let opened: Vec<(u64, Bytes)> = futures::stream::iter(runs)
            .map(|(s, held)| async {
                let sealed = match held {
                    Some(b) => b,
                    None => {
                        self.fetch(location, &options, pinned, s.clone())
                            .await?
                            .1
                            .bytes
                    }
                };
                let plaintext = open_run(pinned, s.clone(), &sealed)?;
                Ok::<_, object_store::Error>((
                    layout.plaintext_range(s).start,
                    Bytes::from(plaintext),
                ))
            })
            .buffered(PARALLEL)
            .try_collect()
            .await?;
        Ok(resolved
            .iter()
            .map(|r| {
                let (from, bytes) = opened
                    .iter()
                    .rfind(|(from, _)| *from <= r.start)
                    .unwrap_or(&opened[0]);
                bytes.slice((r.start - from) as usize..(r.end - from) as usize)
            })
            .collect())
    }
}

/// The segments that hold the range `r` of a stream of `len`
/// plaintext bytes. A range reaching the end takes the final segment
/// too: only it authenticates the length, and in Cobblestone, after whole
/// chunks, it is an empty one that holds no byte of `r`.
fn segments_of(layout: Layout, len: u64, r: &Range<u64>) -> Range<u32> {
    let s = layout.segments_for(r.clone());
    if r.end < len {
        return s;
    }
    let count = u32::try_from(layout.segment_count(len)).unwrap_or(u32::MAX);
    s.start..s.end.max(count)
}

/// Opens `sealed`, the segments `segments` of the version `pinned`: a run
/// that reaches the object's last segment must end with the stream's
/// final one, as a reader at the end of its source requires.
fn open_run(pinned: &Pinned, segments: Range<u32>, sealed: &[u8]) -> Result<Vec<u8>> {
    let layout = pinned.layout();
    let len = pinned.plaintext_len().unwrap_or(0);
    let ends = u64::from(segments.end) >= layout.segment_count(len);
    let mut out = Vec::new();
    pinned
        .opener
        .open_segments(segments.start, sealed, ends, &mut out)
        .map_err(store_error)?;
    Ok(out)
}

/// The error of an object whose length no stream of its header has,
/// named from the length alone: its final segment is cut (or bytes
/// follow it; only reading it all could tell which).
fn impossible() -> object_store::Error {
    store_error(cipherio::Error::Truncated)
}

/// A range the object does not hold.
fn range_error(e: impl std::error::Error + Send + Sync + 'static) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: Box::new(e),
    }
}

/// The plaintext of `body` (sealed segments after the header, `buf` the
/// bytes already read): complete segments are opened as they arrive and
/// at least one byte is held back, since only the end of the object says
/// which segment is the final one.
fn opened(
    opener: SegmentOpener,
    buf: Vec<u8>,
    body: BoxStream<'static, Result<Bytes>>,
) -> BoxStream<'static, Result<Bytes>> {
    struct State {
        opener: SegmentOpener,
        buf: Vec<u8>,
        body: BoxStream<'static, Result<Bytes>>,
        next: u32,
        done: bool,
    }
    let full = opener.layout().sealed_segment_len() as usize;
    let state = State {
        opener,
        buf,
        body,
        next: 0,
        done: false,
    };
    futures::stream::unfold(state, move |mut s| async move {
        if s.done {
            return None;
        }
        loop {
            if s.buf.len() > full {
                let n = (s.buf.len() - 1) / full * full;
                let mut out = Vec::new();
                let r = s.opener.open_segments(s.next, &s.buf[..n], false, &mut out);
                let item = match r {
                    // The final segment with bytes after it.
                    Ok(o) if o.ends_stream => Err(cipherio::Error::TrailingData),
                    Ok(o) => {
                        s.next += o.segments;
                        s.buf.drain(..n);
                        return Some((Ok(Bytes::from(out)), s));
                    }
                    Err(e) => Err(e),
                };
                s.done = true;
                return Some((item.map_err(store_error), s));
            }
            match s.body.next().await {
                Some(Ok(b)) => s.buf.extend_from_slice(&b),
                Some(Err(e)) => {
                    s.done = true;
                    return Some((Err(e), s));
                }
                None => {
                    s.done = true;
                    let mut out = Vec::new();
                    let r = s.opener.open_segments(s.next, &s.buf, true, &mut out);
                    return Some((r.map(|_| Bytes::from(out)).map_err(store_error), s));
                }
            }
        }
    })
    .boxed()
}
