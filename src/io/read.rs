//! `CipherReader`: the std `Read`/`BufRead` front over the [`Opener`]
//! engine. It only answers the engine's steps with inner reads (or, built
//! from a `BufRead`, with a look at the inner buffer); every rule of the
//! stream is the engine's.

use std::fmt;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

use crate::core::opener::Opener;
use crate::core::step::Step;
use crate::drive::read::{self as drive, Source};
use crate::format::DEFAULT_MAX_SEGMENT_SIZE;
use crate::profile::{DEFAULT_CAPACITY, Profile};
use crate::{Provider, StreamKey};

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

/// Decrypts a cipherio stream read from `R`.
///
/// Built with a [`Key`](crate::Key) it reads the native format, with a
/// [`AesGcmHkdfKey`](crate::tink::AesGcmHkdfKey) Tink's streaming AEAD format.
///
/// Plaintext is released only after the segment holding it has
/// authenticated, and the stream must end with its final segment, exactly.
/// Treat the data as complete only when `read` returns `Ok(0)`.
///
/// # Errors
///
/// - A stream that ends at a segment boundary without its final segment
///   (a writer that was never finished), or with fewer than 16 bytes of a
///   segment: [`Error::Truncated`](crate::Error::Truncated), [`io::ErrorKind::UnexpectedEof`].
/// - A stream cut inside a segment cannot be told apart from a tampered
///   final segment: [`Error::Authentication`](crate::Error::Authentication), like any other damage.
/// - Bytes after a full-length final segment: [`Error::TrailingData`](crate::Error::TrailingData)
///   (the final segment authenticated, so its plaintext is released first,
///   whatever the read-ahead already held, and the next read fails; after
///   a short final segment they make it fail to authenticate); a malformed
///   header: [`Error::BadMagic`](crate::Error::BadMagic) and friends; a header asking for segments
///   above the limit: [`Error::SegmentTooLarge`](crate::Error::SegmentTooLarge), before anything is
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
/// that sends full segments and waits gets their data (unless the reader
/// was built to [`prefetch`](ReaderBuilder::prefetch), for files and
/// memory). Reads of at least a
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
    pub(crate) engine: Opener,
    /// Set by [`ReaderBuilder::build_from_buf_read`]: `inner`'s own buffer,
    /// from which whole segments are opened where they lie.
    inner_buf: Option<InnerBuf<R>>,
    /// Set by the first seek or length query (where `R: Seek` is known):
    /// `inner`'s `seek`, and the offset where the stream starts in it.
    inner_seek: Option<InnerSeek<R>>,
    /// The error of a read made while the ring has units (with
    /// [`ReaderBuilder::prefetch`]), returned by the next call that needs
    /// input.
    deferred: Option<io::Error>,
    inner: R,
}

/// `Seek::seek` of the inner reader, captured where `R: Seek` is known,
/// and the inner offset of the stream's first byte.
struct InnerSeek<R> {
    seek: fn(&mut R, SeekFrom) -> io::Result<u64>,
    base: u64,
}

impl<R> Clone for InnerSeek<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for InnerSeek<R> {}

/// Configures a [`CipherReader`]: read-ahead capacity, associated data and
/// the largest segment a header may ask for. Its `Debug` shows the
/// associated data's length, not its bytes.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ReaderBuilder {
    pub(super) key: Profile,
    capacity: usize,
    pub(super) aad: Vec<u8>,
    pub(super) max_segment: usize,
    pub(super) provider: Provider,
    threads: usize,
    threads_after: Option<u64>,
    prefetch: bool,
}

impl ReaderBuilder {
    /// Bytes of ciphertext to ask the inner reader for at a time (default
    /// 8 KiB, at least 1). The reader also holds one whole segment,
    /// whatever this is. (With every key, a Cobblestone one too, this is
    /// the I/O buffer: segment sizes come from the stream or the key.) Zero makes every call fail (an empty read too) with
    /// [`Error::InvalidCapacity`](crate::Error::InvalidCapacity) ([`io::ErrorKind::InvalidInput`]), and a
    /// capacity that cannot be allocated with [`Error::Allocation`](crate::Error::Allocation).
    ///
    /// Memory: the read-ahead is this many bytes plus the header at first,
    /// and grows with the ciphertext that arrives (doubling) up to this
    /// many bytes plus one sealed segment; one segment of plaintext is
    /// allocated only for reads smaller than a segment, once one has opened.
    /// A header's segment size alone never allocates anything.
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
    /// 16 MiB; a framed header's is also capped at 2^31 − 1, the longest
    /// record a record header can name). A header over it is refused
    /// before anything is allocated.
    /// (A Tink stream's segment size comes from its key and a Cobblestone
    /// stream's from the format, not from a header: the limit does not
    /// apply to them.)
    pub fn max_segment_size(mut self, limit: usize) -> Self {
        self.max_segment = limit;
        self
    }

    /// Which library opens the segments (default: [`Provider::default`],
    /// RustCrypto whatever features are on). Any provider reads what
    /// any other wrote.
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// Open on `n` threads (default 1): each read's whole segments are
    /// opened at once, each on a thread from its own index, straight into
    /// the caller's buffer (or the internal one for reads smaller than a
    /// unit of 64 KiB): one run per read, in shares claimed by whichever
    /// thread is free, the caller's included. With
    /// [`prefetch`](Self::prefetch), the caller reads the next run's input
    /// while the other threads take the first shares, and reads smaller
    /// than a unit go through a ring instead: units of whole segments (at
    /// least 64 KiB) put in order in a ring of about `2 n`, opened by
    /// whichever thread is free while the caller reads the next ones, each
    /// unit's plaintext handed whole to the reader's buffer. Plaintext is still released in
    /// order and only once its segment authenticated; a damaged stream
    /// fails with the error one thread gives, after the same
    /// authenticated prefix (what failed goes back to the one-thread
    /// path).
    ///
    /// The calling thread is one of the `n`; the others are the process's
    /// pool, shared by every stream (one thread per CPU besides the
    /// callers'), from the reader's first 2 MiB on (opened on the calling
    /// thread alone, as with one thread: a short stream starts nothing).
    /// While it waits for the unit it needs, the caller opens units no
    /// thread has claimed, and takes over a unit a pool thread holds
    /// longer than twice a unit's usual time (on a busy machine, a thread
    /// that lost its core), whose copy is then dropped. A run that took
    /// longer than the caller's own shares say it would have alone (a
    /// pool thread that waited for a core) sends the next 16 runs to the
    /// caller alone, twice as many after each further loss (at most
    /// 256). A panic in a unit's or a run's work fails the stream with
    /// [`Error::WorkerPanicked`](crate::Error::WorkerPanicked). From a
    /// file or memory, [`prefetch`](Self::prefetch) reads the next units
    /// while the threads open earlier ones. (A
    /// [`CipherReaderAt`](crate::CipherReaderAt) is read from the callers'
    /// own threads: the option does not apply to it.)
    ///
    /// On the async front (`build_async`, feature `tokio`) the caller's
    /// share opens inside `poll_read`, as with one thread.
    ///
    /// Memory: the read-ahead grows to the capacity plus `n + 1` units of
    /// sealed segments, and at least 1 MiB; with prefetch, a second one
    /// takes the next run's input, and the ring holds up to `2 n` units
    /// sealed and as many opened. `threads(0)` makes every call fail with
    /// [`Error::ZeroThreads`](crate::Error::ZeroThreads).
    ///
    /// `n` is clamped here to the machine's CPUs
    /// ([`std::thread::available_parallelism`], 1 when unknown), and the
    /// ring and buffers above are sized by the clamped count: whatever
    /// `n` (`usize::MAX`, or a count from a command line), the reader
    /// holds what `threads(cpus)` holds, and only as the ciphertext
    /// arrives. The same holds on the async front.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = crate::threads::clamp(n);
        self
    }

    /// How far into the stream (plaintext bytes) the calling thread
    /// opens alone before [`threads`](Self::threads) start: not part of
    /// the API (hidden, not covered by semver), for the tests and
    /// benchmarks of this crate's threads on short streams.
    #[doc(hidden)]
    pub fn threads_after(mut self, bytes: u64) -> Self {
        self.threads_after = Some(bytes);
        self
    }

    /// With [`threads`](Self::threads), read more input while the threads
    /// open what was read (default off): the calling thread reads the
    /// next run's input beside a run, or a unit at a time while the ring
    /// has room, instead of reading only when it has nothing left to
    /// deliver, so the reads overlap the opening and a threaded reader
    /// comes closer to `n` one-thread readers.
    ///
    /// **Only for an `inner` that never waits for this side**: a file,
    /// memory, a pipe whose writer does not wait for an answer. A
    /// prefetching reader may call `inner` while plaintext is ready, and
    /// a `read` on a socket whose peer sent its message and waits for the
    /// reply would wait for ever, with that plaintext undelivered.
    /// (Without prefetch a `read` calls `inner` only while it has nothing
    /// to deliver.)
    ///
    /// An error of `inner` in such a read does not fail the call that
    /// delivers plaintext: it is returned, once, by the next call that
    /// needs input (a read, a seek's first read,
    /// [`plaintext_len`](CipherReader::plaintext_len)), which may then
    /// report a `WouldBlock` or `TimedOut` that `inner` gave earlier (an
    /// `Interrupted` is dropped). [`into_inner`](CipherReader::into_inner)
    /// loses what the ring holds, and such an error. No effect with one
    /// thread, with [`build_from_buf_read`](Self::build_from_buf_read)
    /// (its segments open in place, with nothing copied to overlap) or
    /// on the async front.
    ///
    /// ```
    /// # use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
    /// # use std::io::{Read, Write};
    /// # let key = Key::generate(Algorithm::ChaCha20Poly1305);
    /// # let mut w = CipherWriter::with_capacity(64 * 1024, &key, Vec::new());
    /// # w.write_all(&vec![7u8; 4 << 20])?;
    /// # let sealed: Vec<u8> = w.finish()?;
    /// # let file = std::io::Cursor::new(sealed);
    /// // `file` is a `std::fs::File` or other input that never waits.
    /// let mut r = CipherReader::builder(&key)
    ///     .threads(2)
    ///     .prefetch(true)
    ///     .build(file);
    /// let mut plaintext = Vec::new();
    /// r.read_to_end(&mut plaintext)?;
    /// assert_eq!(plaintext.len(), 4 << 20);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn prefetch(mut self, on: bool) -> Self {
        self.prefetch = on;
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
    /// With [`threads`](Self::threads), reads of a unit or more open
    /// their segments there as runs on the threads; smaller reads and
    /// `BufRead` open one segment at a time on the calling thread.
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

    /// The engine a front drives: everything but the inner reader.
    /// `windowed`: the front shows its inner buffer.
    pub(crate) fn engine(self, windowed: bool) -> Opener {
        let engine = Opener::new(
            self.key,
            self.aad,
            self.capacity,
            self.max_segment,
            self.provider,
            windowed,
            self.threads,
        )
        .with_prefetch(self.prefetch);
        match self.threads_after {
            Some(bytes) => engine.with_threads_after(bytes),
            None => engine,
        }
    }

    fn build_with<R: Read>(self, inner: R, inner_buf: Option<InnerBuf<R>>) -> CipherReader<R> {
        CipherReader {
            engine: self.engine(inner_buf.is_some()),
            inner_buf,
            inner_seek: None,
            deferred: None,
            inner,
        }
    }
}

impl fmt::Debug for ReaderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReaderBuilder")
            .field("key", &self.key)
            .field("capacity", &self.capacity)
            .field("associated_data_len", &self.aad.len())
            .field("max_segment_size", &self.max_segment)
            .field("provider", &self.provider)
            .field("threads", &self.threads)
            .field("prefetch", &self.prefetch)
            .finish()
    }
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
            threads: 1,
            threads_after: None,
            prefetch: false,
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
        self.engine.capacity()
    }

    /// Which library opens this stream's segments.
    pub fn provider(&self) -> Provider {
        self.engine.provider()
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

    /// The engine and, borrowed beside it, what answers its steps.
    fn parts(&mut self) -> (&mut Opener, Inner<'_, R>) {
        let inner = Inner {
            inner: &mut self.inner,
            inner_buf: self.inner_buf,
            inner_seek: self.inner_seek,
            deferred: &mut self.deferred,
        };
        (&mut self.engine, inner)
    }
}

/// The inner reader with its captured `BufRead` and `Seek` functions: the
/// [`Source`] the read loop drives.
struct Inner<'a, R> {
    inner: &'a mut R,
    inner_buf: Option<InnerBuf<R>>,
    inner_seek: Option<InnerSeek<R>>,
    deferred: &'a mut Option<io::Error>,
}

impl<R: Read> Source for Inner<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }

    fn deferred(&mut self) -> Option<&mut Option<io::Error>> {
        Some(self.deferred)
    }

    fn window(&mut self, engine: &mut Opener, buf: &mut [u8]) -> io::Result<usize> {
        let src = self
            .inner_buf
            .unwrap_or_else(|| unreachable!("asked only of a reader built with an inner buffer"));
        let window = (src.fill)(self.inner)?;
        let (used, n) = engine.open_window(window, buf);
        (src.consume)(self.inner, used);
        Ok(n)
    }

    fn seek(&mut self, engine: &mut Opener, step: &Step) -> io::Result<()> {
        let s = self
            .inner_seek
            .unwrap_or_else(|| unreachable!("asked only after a seek or a length query"));
        let pos = engine.inner_seek_for(step, s.base)?;
        let result = (s.seek)(self.inner, pos);
        engine.inner_sought(step, s.base, result)?;
        Ok(())
    }
}

impl<R: Read> Read for CipherReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (engine, mut inner) = self.parts();
        drive::read(engine, &mut inner, buf)
    }
}

impl<R: Read + Seek> CipherReader<R> {
    /// The authenticated plaintext length of the stream: the source's
    /// length only says which segment would be the last; that segment is
    /// opened as the final one (once; the result is cached), so a source
    /// that was truncated, extended or tampered with fails here with the
    /// usual typed error ([`Error::Truncated`](crate::Error::Truncated),
    /// [`Error::Authentication`](crate::Error::Authentication), …) instead
    /// of giving a length. Reads the header first if no read has.
    ///
    /// The inner reader's position moves; the reader's own position does
    /// not (the next read goes back to it, for free if it falls in the
    /// final segment, which this call leaves decrypted).
    ///
    /// # Errors
    ///
    /// As above (sticky), and the inner reader's errors.
    pub fn plaintext_len(&mut self) -> io::Result<u64> {
        self.seekable()?;
        let (engine, mut inner) = self.parts();
        drive::length(engine, &mut inner)
    }

    /// Captures the inner `seek` and where the stream starts in it.
    fn seekable(&mut self) -> io::Result<()> {
        if self.inner_seek.is_none() {
            let at = self.inner.stream_position()?;
            let base = self.engine.stream_base(at)?;
            self.inner_seek = Some(InnerSeek {
                seek: R::seek,
                base,
            });
        }
        Ok(())
    }
}

/// Random access in plaintext offsets (native and Tink streams). A seek
/// costs nothing until the next read, which opens exactly the segment
/// holding the new position (two if the read crosses into the next).
/// [`SeekFrom::End`] uses [`plaintext_len`](CipherReader::plaintext_len),
/// never the source's raw length. Seeking past the end is allowed, as for a
/// `File`; a read there returns `Ok(0)` only once the true end has been
/// authenticated. The stream starts where the inner reader was when this
/// reader first read from it.
///
/// ```
/// # use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
/// # use std::io::{Cursor, Read, Seek, SeekFrom, Write};
/// # let key = Key::generate(Algorithm::Aes128Gcm);
/// # let mut w = CipherWriter::with_capacity(4096, &key, Vec::new());
/// # w.write_all(&(0..100_000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>())?;
/// # let sealed = w.finish()?;
/// let mut r = CipherReader::new(&key, Cursor::new(sealed));
/// assert_eq!(r.seek(SeekFrom::End(-4))?, 399_996); // opens the final segment
/// let mut last = [0u8; 4];
/// r.read_exact(&mut last)?;                         // from that segment, no new open
/// assert_eq!(u32::from_le_bytes(last), 99_999);
/// r.seek(SeekFrom::Start(4 * 50_000))?;
/// r.read_exact(&mut last)?;                         // opens one segment
/// assert_eq!(u32::from_le_bytes(last), 50_000);
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Writers stay sequential: a writer that could go back would seal two
/// plaintexts under one nonce.
impl<R: Read + Seek> Seek for CipherReader<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seekable()?;
        if let SeekFrom::End(_) = pos {
            self.plaintext_len()?;
        }
        let target = self.engine.seek_target(pos)?;
        self.engine.seek_to(target)?;
        Ok(target)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        Ok(self.engine.position())
    }
}

impl<R: Read> BufRead for CipherReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let (engine, mut inner) = self.parts();
        drive::fill(engine, &mut inner)?;
        Ok(self.engine.buffered())
    }

    fn consume(&mut self, amt: usize) {
        self.engine.consume(amt);
    }
}

impl<R: fmt::Debug> fmt::Debug for CipherReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CipherReader")
            .field("inner", &self.inner)
            .field("capacity", &self.engine.capacity())
            .field("provider", &self.engine.provider())
            .field("stage", &self.engine.stage_name())
            .field("read_ahead", &self.engine.read_ahead())
            .field("buffered", &self.engine.buffered().len())
            .finish()
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
