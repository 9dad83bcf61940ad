//! `CipherReader`: reads sealed segments from the inner reader and releases
//! their plaintext once each has authenticated. All crypto is in
//! [`crate::seal`].

use std::fmt;
use std::io::{self, BufRead, Read};

use zeroize::Zeroizing;

use crate::format::{self, DEFAULT_MAX_SEGMENT_SIZE, Layout, Stream, TAG_LEN};
use crate::key::sealed::Profile;
use crate::seal::SegmentCipher;
use crate::write::DEFAULT_CAPACITY;
use crate::{Error, Provider, StreamKey};

/// `BufRead::fill_buf` and `consume` of the inner reader, captured where
/// `R: BufRead` is known ([`ReaderBuilder::build_from_buf_read`]), so that
/// `CipherReader<R>` keeps its one `R: Read` bound.
struct InnerBuf<R> {
    fill: for<'a> fn(&'a mut R) -> io::Result<&'a [u8]>,
    consume: fn(&mut R, usize),
}

impl<R> Clone for InnerBuf<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for InnerBuf<R> {}

/// Where the reader is in the stream.
enum Stage {
    /// The header has not been read yet.
    Start { key: Profile, aad: Vec<u8> },
    /// Segments are being opened.
    Body {
        cipher: SegmentCipher,
        layout: Layout,
    },
    /// A full-length final segment has authenticated; the inner reader must
    /// still confirm that nothing follows it.
    Final,
    /// The final segment authenticated and the inner reader is at its end.
    Done,
    /// A fatal error: every later call returns it.
    Failed(Error),
}

/// Decrypts a cipherio stream read from `R`.
///
/// Built with a [`Key`](crate::Key) it reads the native format, with a
/// [`TinkKey`](crate::tink::TinkKey) Tink's streaming AEAD format.
///
/// Plaintext is released only after the segment holding it has
/// authenticated, and the stream must end with its final segment, exactly.
/// Treat the data as complete only when `read` returns `Ok(0)`.
///
/// # Errors
///
/// - A stream that ends at a segment boundary without its final segment
///   (a writer that was never finished), or with fewer than 16 bytes of a
///   segment: [`Error::Truncated`], [`io::ErrorKind::UnexpectedEof`].
/// - A stream cut inside a segment cannot be told apart from a tampered
///   final segment: [`Error::Authentication`], like any other damage.
/// - Bytes after the final segment: [`Error::TrailingData`] (when the
///   final segment is full-length and nothing after it has been read yet,
///   its authenticated plaintext is released first, and the next read
///   fails); a malformed
///   header: [`Error::BadMagic`] and friends; a header asking for segments
///   above the limit: [`Error::SegmentTooLarge`], before anything is
///   allocated for them. All [`io::ErrorKind::InvalidData`].
///
/// These errors are sticky: once one is returned, every later `read`
/// returns it again (never `Ok(0)`). Errors of `R` itself pass through
/// unchanged and leave the reader consistent, so the call can be retried.
///
/// # Buffering
///
/// The buffer (8 KiB by default) is the read-ahead: each call to the inner
/// reader asks for at least that many bytes (or for what completes the
/// segment it is in the middle of, so that later reads end on segment
/// boundaries and no ciphertext is moved twice), and every complete segment a
/// call delivers is decrypted without another call. A `read` calls `R` again
/// only while the first segment it works on is incomplete, so a socket peer
/// that sends full segments and waits gets their data. Reads of at least a
/// segment decrypt straight into the caller's buffer. The ciphertext itself
/// is copied out of `R` into the read-ahead; when it is in memory already
/// (`&[u8]`, a memory map) or behind a large `BufReader`,
/// [`ReaderBuilder::build_from_buf_read`] opens it where it lies instead.
///
/// A *short* final segment is recognised as complete only when `R`
/// reports its end: a socket peer must shut down its sending side
/// ([`TcpStream::shutdown`](std::net::TcpStream::shutdown) with
/// `Shutdown::Write`, or close) after `finish` for the reader to release
/// the last segment.
pub struct CipherReader<R> {
    stage: Stage,
    /// Ciphertext read ahead from `inner`: `cipher[pos..end]` is unread.
    cipher: Vec<u8>,
    pos: usize,
    end: usize,
    /// `inner` has reported its end.
    eof: bool,
    /// The last inner read brought fewer bytes than it asked for: the input
    /// may be at its end (a hint for which flag to try first, never trusted).
    short: bool,
    /// One decrypted segment for small reads: `plain[ppos..pend]` is unread.
    plain: Zeroizing<Vec<u8>>,
    ppos: usize,
    pend: usize,
    capacity: usize,
    max_segment: usize,
    provider: Provider,
    /// Set by [`ReaderBuilder::build_from_buf_read`]: `inner`'s own buffer,
    /// from which whole segments are opened where they lie.
    inner_buf: Option<InnerBuf<R>>,
    /// The segment that failed to open in the inner buffer: it is left to
    /// the copying path, not tried there again.
    failed_in_place: Option<u64>,
    inner: R,
    /// Ciphertext bytes moved to the front of the read-ahead (tests of the
    /// aligned reads).
    #[cfg(test)]
    moved: usize,
    /// Segment opens tried, failed trials included.
    #[cfg(test)]
    opens: usize,
}

/// Configures a [`CipherReader`]: read-ahead capacity, associated data and
/// the largest segment a header may ask for. Its `Debug` shows the
/// associated data's length, not its bytes.
#[derive(Clone)]
pub struct ReaderBuilder {
    key: Profile,
    capacity: usize,
    aad: Vec<u8>,
    max_segment: usize,
    provider: Provider,
}

impl ReaderBuilder {
    /// Bytes of ciphertext to ask the inner reader for at a time (default
    /// 8 KiB, at least 1). The reader also holds one whole segment,
    /// whatever this is. Zero makes the first read fail with
    /// [`Error::InvalidCapacity`] ([`io::ErrorKind::InvalidInput`]), and a
    /// capacity that cannot be allocated with [`Error::Allocation`].
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// The associated data the writer was given.
    pub fn associated_data(mut self, aad: &[u8]) -> Self {
        self.aad = aad.to_vec();
        self
    }

    /// The largest plaintext segment size a header may ask for (default
    /// 16 MiB). A header over it is refused before anything is allocated.
    /// (A Tink stream's segment size comes from its key, not its header:
    /// the limit does not apply to it.)
    pub fn max_segment_size(mut self, limit: usize) -> Self {
        self.max_segment = limit;
        self
    }

    /// Which library opens the segments (default: [`Provider::default`],
    /// AWS-LC when the `aws-lc` feature is on). Any provider reads what
    /// any other wrote.
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The reader over `inner`. Does no I/O.
    pub fn build<R: Read>(self, inner: R) -> CipherReader<R> {
        self.build_with(inner, None)
    }

    /// The reader over a buffered `inner`, opening segments where they lie
    /// in `inner`'s own buffer: whenever [`fill_buf`](BufRead::fill_buf)
    /// shows a whole full-length segment, it is opened from there as a
    /// non-final one (into the caller's buffer if the read has room for
    /// it) and [`consume`](BufRead::consume)d, without being copied into
    /// the read-ahead first. Anything else (the header, the final
    /// segment, a segment split across `inner`'s refills) takes the
    /// copying path of [`build`](Self::build), which reads through
    /// `inner`'s `Read` — here only as much as completes the segment it is
    /// in, so that the next segment starts on a fresh window of `inner`'s
    /// buffer (behind a `BufReader`, about one segment per refill is
    /// copied). The stream and the errors are the same; only the copy of
    /// the ciphertext is saved.
    ///
    /// It pays where the ciphertext is in memory already — `&[u8]`,
    /// `io::Cursor<Vec<u8>>`, a memory map — or comes through a
    /// `BufReader` whose capacity holds several segments. (Over a plain
    /// `BufReader<File>` the copy merely moves into the `BufReader`.)
    ///
    /// ```
    /// # use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
    /// # use std::io::{Read, Write};
    /// # let key = Key::generate(Algorithm::Aes128Gcm);
    /// # let mut w = CipherWriter::with_capacity(64 * 1024, &key, Vec::new());
    /// # w.write_all(&[7u8; 300_000])?;
    /// # let sealed: Vec<u8> = w.finish()?;
    /// let mut r = CipherReader::builder(&key)
    ///     .capacity(64 * 1024)
    ///     .build_from_buf_read(&sealed[..]);
    /// let mut out = vec![0u8; 64 * 1024];
    /// let mut total = 0;
    /// loop {
    ///     match r.read(&mut out)? {
    ///         0 => break,
    ///         n => total += n, // `out[..n]` is authenticated plaintext
    ///     }
    /// }
    /// assert_eq!(total, 300_000);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build_from_buf_read<R: BufRead>(self, inner: R) -> CipherReader<R> {
        let inner_buf = InnerBuf {
            fill: R::fill_buf,
            consume: R::consume,
        };
        self.build_with(inner, Some(inner_buf))
    }

    fn build_with<R: Read>(self, inner: R, inner_buf: Option<InnerBuf<R>>) -> CipherReader<R> {
        CipherReader {
            stage: Stage::Start {
                key: self.key,
                aad: self.aad,
            },
            cipher: Vec::new(),
            pos: 0,
            end: 0,
            eof: false,
            short: false,
            plain: Zeroizing::new(Vec::new()),
            ppos: 0,
            pend: 0,
            capacity: self.capacity,
            max_segment: self.max_segment,
            provider: self.provider,
            inner_buf,
            failed_in_place: None,
            inner,
            #[cfg(test)]
            moved: 0,
            #[cfg(test)]
            opens: 0,
        }
    }
}

/// What [`CipherReader::open_next`] found.
enum Opened {
    /// A segment of this many plaintext bytes; more follow.
    More(usize),
    /// The final segment, of this many plaintext bytes.
    Last(usize),
}

impl fmt::Debug for ReaderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReaderBuilder")
            .field("key", &self.key)
            .field("capacity", &self.capacity)
            .field("associated_data_len", &self.aad.len())
            .field("max_segment_size", &self.max_segment)
            .field("provider", &self.provider)
            .finish()
    }
}

/// Grows `v` with zeros to `len` bytes (no-op if it is that long), or
/// [`Error::Allocation`] instead of an abort when a huge capacity cannot be
/// had.
fn grow_zeroed(v: &mut Vec<u8>, len: usize) -> Result<(), Error> {
    if let Some(more) = len.checked_sub(v.len()) {
        v.try_reserve_exact(more)
            .map_err(|_| Error::Allocation(len))?;
        v.resize(len, 0);
    }
    Ok(())
}

impl CipherReader<io::Empty> {
    /// A builder for the less common options (associated data, segment
    /// limit). Its [`build`](ReaderBuilder::build) takes the inner reader;
    /// the `Empty` here only lets `CipherReader::builder(&key)` name no type.
    pub fn builder<K: StreamKey>(key: &K) -> ReaderBuilder {
        ReaderBuilder {
            key: key.profile(),
            capacity: DEFAULT_CAPACITY,
            aad: Vec::new(),
            max_segment: DEFAULT_MAX_SEGMENT_SIZE,
            provider: Provider::default(),
        }
    }
}

impl<R: Read> CipherReader<R> {
    /// A reader with the default 8 KiB read-ahead and no associated data.
    pub fn new<K: StreamKey>(key: &K, inner: R) -> Self {
        CipherReader::builder(key).build(inner)
    }

    /// A reader that asks the inner reader for `capacity` bytes at a time.
    pub fn with_capacity<K: StreamKey>(capacity: usize, key: &K, inner: R) -> Self {
        CipherReader::builder(key).capacity(capacity).build(inner)
    }

    /// The configured read-ahead.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Which library opens this stream's segments.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader. Reading from it directly corrupts the stream.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader. Read-ahead ciphertext and undelivered plaintext
    /// are lost (and the plaintext wiped).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Records a fatal error and returns it.
    fn fail(&mut self, e: Error) -> io::Error {
        self.stage = Stage::Failed(e.clone());
        e.into()
    }

    /// Reads once more from the inner reader. The call asks for at least
    /// `capacity` bytes, and ends on a segment boundary where one is far
    /// enough: then a full read leaves no partial segment behind to be moved
    /// to the front later, so each ciphertext byte is copied once, by the
    /// inner reader. Only to complete segments already begun may it ask for
    /// less (once after the header, and after short reads). The current
    /// unit (header or segment, `need` bytes from `pos`) always fits.
    fn read_more(&mut self, need: usize) -> io::Result<()> {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        }
        let far_enough = self
            .aligned_limit(self.pos)
            .is_some_and(|l| l >= self.end + self.capacity);
        let room = self.cipher.len() - self.end;
        if !far_enough && (room < self.capacity || self.pos + need > self.cipher.len()) {
            self.cipher.copy_within(self.pos..self.end, 0);
            #[cfg(test)]
            {
                self.moved += self.end - self.pos;
            }
            self.end -= self.pos;
            self.pos = 0;
        }
        let mut limit = match self.aligned_limit(self.pos) {
            Some(l) if l > self.end => l,
            _ => self.cipher.len(),
        };
        if self.inner_buf.is_some()
            && self.pos < self.end
            && matches!(self.stage, Stage::Body { .. })
        {
            // With an inner buffer, ask only for the rest of the segment
            // begun (as the reader may: with none begun it asks for its
            // capacity): the read-ahead then empties on a segment boundary, and
            // so does what is left in the inner buffer, where the next
            // segments open in place. (A whole read-ahead would end inside
            // a segment of the inner buffer's refill, and every later
            // segment would be copied too.)
            limit = limit.min(self.pos + need);
        }
        match self.inner.read(&mut self.cipher[self.end..limit]) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                self.short = self.end + n < limit;
                self.end += n;
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// With segments starting at `from`, the end of the last whole segment
    /// that fits in the read-ahead; `None` before the header is read or if
    /// not even the next segment fits.
    fn aligned_limit(&self, from: usize) -> Option<usize> {
        let Stage::Body { cipher, layout } = &self.stage else {
            return None;
        };
        let len = self.cipher.len();
        let next = from.checked_add(layout.sealed(cipher.index()))?;
        let rest = layout.sealed(cipher.index() + 1);
        (next <= len).then(|| next + (len - next) / rest * rest)
    }

    /// Reads and checks the header, then sets the stream up.
    fn read_header(&mut self) -> io::Result<()> {
        if self.capacity == 0 {
            return Err(self.fail(Error::InvalidCapacity(0)));
        }
        let Stage::Start { key, .. } = &self.stage else {
            unreachable!("header is read at the start")
        };
        let header_len = key.header_len();
        // Room for the header plus a full read-ahead, so that every inner
        // call asks for at least `capacity` bytes even while the header is
        // still incomplete.
        let len = self.capacity.saturating_add(header_len);
        if let Err(e) = grow_zeroed(&mut self.cipher, len) {
            return Err(self.fail(e));
        }
        let begun = loop {
            let Stage::Start { key, aad } = &self.stage else {
                unreachable!("header is read at the start")
            };
            let bytes = &self.cipher[self.pos..self.end];
            match format::begin_read(key, aad, bytes, self.max_segment, self.provider) {
                Ok(Some(begun)) => break begun,
                Ok(None) if !self.eof => self.read_more(header_len)?,
                Ok(None) => return Err(self.fail(Error::Truncated)),
                Err(e) => return Err(self.fail(e)),
            }
        };
        let (header_len, Stream { cipher, layout }) = begun;
        self.pos += header_len;
        // Room for one whole sealed segment plus a read-ahead of
        // `capacity`, never less than what is already buffered.
        let sealed = layout.sealed(0).max(layout.sealed(1));
        let len = self.capacity.saturating_add(sealed);
        if let Err(e) = grow_zeroed(&mut self.cipher, len) {
            return Err(self.fail(e));
        }
        self.stage = Stage::Body { cipher, layout };
        Ok(())
    }

    /// Makes sure the next segment is complete in the read-ahead (or the
    /// inner reader is at its end), calling the inner reader only while it
    /// is not. Returns the plaintext capacity of that segment.
    fn fill_segment(&mut self) -> io::Result<usize> {
        if let Stage::Start { .. } = self.stage {
            self.read_header()?;
        }
        let Stage::Body { cipher, layout } = &self.stage else {
            unreachable!("called while in the body")
        };
        let (plain, sealed) = (layout.plain(cipher.index()), layout.sealed(cipher.index()));
        while self.end - self.pos < sealed && !self.eof {
            self.read_more(sealed)?;
        }
        Ok(plain)
    }

    /// Opens the segment at `pos` into `out` (at least the segment's
    /// plaintext capacity long). On error `out` holds no plaintext.
    fn open_next(&mut self, out: &mut [u8]) -> Result<Opened, Error> {
        let Stage::Body { cipher, layout } = &mut self.stage else {
            unreachable!("called while in the body")
        };
        let index = cipher.index();
        let full = layout.sealed(index);
        let avail = self.end - self.pos;
        if avail >= full {
            let sealed = &self.cipher[self.pos..self.pos + full];
            let out = &mut out[..full - TAG_LEN];
            // A full-length segment is final or not: try the likely flag
            // first, then the other (as age does). It is likely the last
            // when nothing follows it and the input is at (or, after a
            // short read, probably at) its end; trying that first saves a
            // failed pass over the stream's last segment.
            // (Or when it already failed as non-final in the inner buffer.)
            let likely_last =
                avail == full && (self.eof || self.short) || self.failed_in_place == Some(index);
            #[cfg(test)]
            {
                self.opens += 1;
            }
            if cipher.open(sealed, out, likely_last).is_err() {
                #[cfg(test)]
                {
                    self.opens += 1;
                }
                cipher.open(sealed, out, !likely_last)?;
                if likely_last {
                    self.pos += full;
                    return Ok(Opened::More(full - TAG_LEN));
                }
            } else if !likely_last {
                self.pos += full;
                return Ok(Opened::More(full - TAG_LEN));
            }
            self.pos += full;
            if self.pos < self.end {
                zeroize::Zeroize::zeroize(out);
                return Err(Error::TrailingData);
            }
            return Ok(Opened::Last(full - TAG_LEN));
        }
        debug_assert!(self.eof, "fill_segment stops short only at the end");
        if avail < TAG_LEN {
            return Err(Error::Truncated);
        }
        let len = avail - TAG_LEN;
        cipher.open(&self.cipher[self.pos..self.end], &mut out[..len], true)?;
        self.pos = self.end;
        if len == 0 && index > 0 && !layout.empty_final {
            return Err(Error::EmptyFinalSegment);
        }
        Ok(Opened::Last(len))
    }

    /// Moves the stage on after a segment opened, or records the error.
    fn after_open(&mut self, r: Result<Opened, Error>) -> Result<usize, Error> {
        match r {
            Ok(Opened::More(n)) => Ok(n),
            Ok(Opened::Last(n)) => {
                self.stage = if self.eof { Stage::Done } else { Stage::Final };
                Ok(n)
            }
            Err(e) => {
                self.stage = Stage::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Settles every stage but `Body`: `Some(result)` if there is nothing
    /// to open (end of stream, or an error), `None` to go on opening.
    fn settle(&mut self) -> Option<io::Result<()>> {
        match &self.stage {
            Stage::Failed(e) => Some(Err(e.clone().into())),
            Stage::Done => Some(Ok(())),
            Stage::Final => {
                // The final segment was full-length: only now ask the inner
                // reader whether anything follows it.
                if self.pos == self.end
                    && !self.eof
                    && let Err(e) = self.read_more(1)
                {
                    return Some(Err(e));
                }
                if self.pos < self.end {
                    return Some(Err(self.fail(Error::TrailingData)));
                }
                if self.eof {
                    self.stage = Stage::Done;
                }
                Some(Ok(()))
            }
            Stage::Start { .. } | Stage::Body { .. } => None,
        }
    }

    /// Decrypts the next segment, which [`fill_segment`](Self::fill_segment)
    /// has made complete and found to hold up to `cap` plaintext bytes, into
    /// the internal plaintext buffer.
    fn fill_plain(&mut self, cap: usize) -> io::Result<()> {
        self.plain_room(cap)?;
        let mut plain = std::mem::take(&mut self.plain);
        let r = self.open_next(&mut plain);
        self.plain = plain;
        let n = self.after_open(r)?;
        self.ppos = 0;
        self.pend = n;
        Ok(())
    }
}

impl<R: Read> CipherReader<R> {
    /// Makes the internal plaintext buffer hold at least `cap` bytes.
    fn plain_room(&mut self, cap: usize) -> io::Result<()> {
        if self.plain.len() < cap {
            // Allocated once, at the segment size, so no copy is left
            // behind unwiped by a reallocation.
            let mut v = Vec::new();
            if let Err(e) = grow_zeroed(&mut v, cap) {
                return Err(self.fail(e));
            }
            self.plain = Zeroizing::new(v);
        }
        Ok(())
    }

    /// Opens whole segments where they lie in the inner reader's buffer
    /// (built by [`ReaderBuilder::build_from_buf_read`]; between segments,
    /// with nothing read ahead): every full-length segment there that fits
    /// in `buf` is opened as non-final straight into `buf`; if `buf` cannot
    /// hold the next one, that one segment goes into the internal plaintext
    /// buffer instead. Returns the bytes put in `buf`. Nothing opened (0,
    /// internal buffer empty): the copying path takes over, and it also
    /// settles a segment that failed here (the final one, or a damaged
    /// one), with the full rules (final flag, trailing data).
    fn open_in_inner_buf(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(src) = self.inner_buf else {
            return Ok(0);
        };
        if self.pos != self.end || self.eof || self.ppos != self.pend {
            return Ok(0);
        }
        let Stage::Body { cipher, layout } = &self.stage else {
            return Ok(0);
        };
        if self.failed_in_place == Some(cipher.index()) {
            return Ok(0);
        }
        let first_plain = layout.plain(cipher.index());
        let into_plain = buf.len() < first_plain;
        if into_plain {
            self.plain_room(first_plain)?;
        }
        let Stage::Body { cipher, layout } = &mut self.stage else {
            unreachable!("checked above")
        };
        let avail = (src.fill)(&mut self.inner)?;
        let (mut used, mut n) = (0, 0);
        loop {
            let index = cipher.index();
            let (plain, sealed) = (layout.plain(index), layout.sealed(index));
            // A segment that ends the window is tried too (as non-final:
            // only a non-final one opens so). Left to the copying path, it
            // would be copied, and, the read being short, tried as final
            // first: a wasted pass per window. The cost instead: one
            // failed pass per stream whose final segment is full-length.
            if avail.len() - used < sealed {
                break;
            }
            let ciphertext = &avail[used..used + sealed];
            let opened = if into_plain {
                cipher.open(ciphertext, &mut self.plain[..plain], false)
            } else if buf.len() - n >= plain {
                cipher.open(ciphertext, &mut buf[n..n + plain], false)
            } else {
                break;
            };
            #[cfg(test)]
            {
                self.opens += 1;
            }
            if opened.is_err() {
                self.failed_in_place = Some(index);
                break;
            }
            used += sealed;
            if into_plain {
                self.ppos = 0;
                self.pend = plain;
                break;
            }
            n += plain;
        }
        (src.consume)(&mut self.inner, used);
        Ok(n)
    }
}

impl<R: Read> Read for CipherReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ppos < self.pend {
                let n = buf.len().min(self.pend - self.ppos);
                buf[..n].copy_from_slice(&self.plain[self.ppos..self.ppos + n]);
                self.ppos += n;
                return Ok(n);
            }
            if buf.is_empty() {
                // No inner I/O for an empty read: only a sticky error.
                return match &self.stage {
                    Stage::Failed(e) => Err(e.clone().into()),
                    _ => Ok(0),
                };
            }
            if let Some(r) = self.settle() {
                return r.map(|()| 0);
            }
            if self.inner_buf.is_some() {
                let n = self.open_in_inner_buf(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                if self.ppos < self.pend {
                    continue;
                }
            }
            let cap = self.fill_segment()?;
            if buf.len() < cap {
                // Small read: through the internal buffer. (An empty final
                // segment leaves it empty; the loop then reports the end.)
                self.fill_plain(cap)?;
                continue;
            }
            // Zero-copy: decrypt straight into the caller's buffer, every
            // complete segment that is already read ahead and fits.
            let mut n = 0;
            loop {
                let r = self.open_next(&mut buf[n..]);
                match self.after_open(r) {
                    Ok(k) => n += k,
                    Err(e) if n == 0 => return Err(e.into()),
                    // Earlier segments authenticated: deliver them; the
                    // sticky error comes with the next call.
                    Err(_) => return Ok(n),
                }
                let Stage::Body { cipher, layout } = &self.stage else {
                    break;
                };
                let index = cipher.index();
                if self.end - self.pos < layout.sealed(index) || buf.len() - n < layout.plain(index)
                {
                    break;
                }
            }
            if n == 0 {
                // Only an empty final segment; report the end properly.
                continue;
            }
            return Ok(n);
        }
    }
}

impl<R: Read> BufRead for CipherReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.ppos == self.pend {
            if let Some(r) = self.settle() {
                r?;
                return Ok(&[]);
            }
            if self.inner_buf.is_some() {
                self.open_in_inner_buf(&mut [])?;
                if self.ppos < self.pend {
                    break;
                }
            }
            let cap = self.fill_segment()?;
            self.fill_plain(cap)?;
        }
        Ok(&self.plain[self.ppos..self.pend])
    }

    fn consume(&mut self, amt: usize) {
        self.ppos = (self.ppos + amt).min(self.pend);
    }
}

impl<R: fmt::Debug> fmt::Debug for CipherReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Start { .. } => "start",
            Stage::Body { .. } => "body",
            Stage::Final => "final",
            Stage::Done => "done",
            Stage::Failed(_) => "failed",
        };
        f.debug_struct("CipherReader")
            .field("inner", &self.inner)
            .field("capacity", &self.capacity)
            .field("provider", &self.provider)
            .field("stage", &stage)
            .field("read_ahead", &(self.end - self.pos))
            .field("buffered", &(self.pend - self.ppos))
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Read, Write};

    use crate::{Algorithm, CipherWriter, Key};

    use super::*;

    /// Over a source that fills every read (a slice, a file), the
    /// read-ahead moves at most the part of one segment that the header's
    /// read brought: every later read ends on a segment boundary, so the
    /// ciphertext is copied once, by the inner reader, not again by
    /// compaction.
    #[test]
    fn full_reads_end_on_segment_boundaries() {
        let key = Key::generate(Algorithm::Aes128Gcm);
        let plain: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        for seg in [4096, 8192, 65536, 1 << 20] {
            let mut w = CipherWriter::with_capacity(seg, &key, Vec::new());
            w.write_all(&plain).unwrap();
            let ct = w.finish().unwrap();
            for cap in [4096, 8192, 65536, 1 << 20] {
                for buf in [100, 8192, 1 << 21] {
                    let mut r = CipherReader::with_capacity(cap, &key, &ct[..]);
                    let mut out = Vec::new();
                    let mut b = vec![0; buf];
                    loop {
                        let n = r.read(&mut b).unwrap();
                        if n == 0 {
                            break;
                        }
                        out.extend_from_slice(&b[..n]);
                    }
                    assert!(out == plain);
                    assert!(
                        r.moved <= seg + TAG_LEN,
                        "seg {seg} cap {cap} buf {buf}: {} bytes moved",
                        r.moved
                    );
                }
            }
        }
    }

    /// A stream whose final segment is full-length costs one open per
    /// segment when the input's end is already known (a slice read whole),
    /// not a failed non-final trial on top: that trial is a full GHASH pass.
    #[test]
    fn a_full_final_segment_is_opened_once_when_the_end_is_known() {
        let key = Key::generate(Algorithm::Aes256Gcm);
        for segments in [1, 2, 5] {
            let plain = vec![7u8; segments * 4096];
            let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
            w.write_all(&plain).unwrap();
            let ct = w.finish().unwrap();
            let mut r = CipherReader::with_capacity(1 << 20, &key, &ct[..]);
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert_eq!(out, plain);
            assert_eq!(r.opens, segments, "{segments} segments");
        }
    }

    /// Behind a `BufReader` whose buffer holds k sealed segments, every
    /// segment opens in place once: the segment that ends each window is
    /// not left to the copying path (which tried it as final first after
    /// the short read, a failed pass per window: 241 opens for 129
    /// segments at k = 1).
    #[test]
    fn segments_ending_the_inner_window_open_once() {
        let key = Key::generate(Algorithm::Aes128Gcm);
        let plain = vec![3u8; 128 * 8192 + 1];
        let mut w = CipherWriter::with_capacity(8192, &key, Vec::new());
        w.write_all(&plain).unwrap();
        let ct = w.finish().unwrap();
        for k in 1..=8 {
            let inner = io::BufReader::with_capacity(k * (8192 + TAG_LEN), &ct[..]);
            let mut r = CipherReader::builder(&key)
                .capacity(65536)
                .build_from_buf_read(inner);
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert!(out == plain, "k {k}");
            assert!(
                r.opens <= 129 + 1,
                "k {k}: {} opens for 129 segments",
                r.opens
            );
        }
    }

    /// Over a slice, a stream whose final segment is full-length costs one
    /// failed pass on top of one open per segment: that segment is tried
    /// in place as non-final once, then settled by the copying path, not
    /// tried in place again after the segments before it were delivered.
    #[test]
    fn a_full_final_segment_fails_in_place_at_most_once() {
        let key = Key::generate(Algorithm::Aes256Gcm);
        for segments in [1, 2, 5] {
            let plain = vec![7u8; segments * 4096];
            let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
            w.write_all(&plain).unwrap();
            let ct = w.finish().unwrap();
            for buf in [4096, 3 * 4096, 1 << 20] {
                let mut r = CipherReader::builder(&key)
                    .capacity(4096)
                    .build_from_buf_read(&ct[..]);
                let mut out = Vec::new();
                let mut b = vec![0u8; buf];
                loop {
                    match r.read(&mut b).unwrap() {
                        0 => break,
                        n => out.extend_from_slice(&b[..n]),
                    }
                }
                assert_eq!(out, plain);
                assert!(
                    r.opens <= segments + 1,
                    "{segments} segments, reads of {buf}: {} opens",
                    r.opens
                );
            }
        }
    }
}
