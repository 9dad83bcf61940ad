//! `CipherReaderAt`: positional reads of a stream, shareable between
//! threads, over a source with positional reads ([`ReadAt`]). It opens
//! segment *i* from the key and *i* alone (the engine's suite and layout),
//! so any number of threads read at once.

use std::fmt;
use std::io;
use std::sync::Mutex;

use crate::core::layout::{Fixed, NO_RANDOM_ACCESS, Units};
use crate::core::suite::Suite;
use crate::core::unit::{self, Place};
use crate::core::window::Window;
use crate::profile::{self, Stream};
use crate::{Error, Provider, ReaderBuilder};

/// A source that reads at an offset without moving a cursor, so that one
/// source can serve many threads: a [`File`](std::fs::File) (unix and
/// windows), a byte slice, a `Vec<u8>`.
pub trait ReadAt {
    /// Reads up to `buf.len()` bytes at `offset`; `Ok(0)` at or past the
    /// end.
    ///
    /// # Errors
    ///
    /// The source's own.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// The source's length in bytes.
    ///
    /// # Errors
    ///
    /// The source's own.
    fn source_len(&self) -> io::Result<u64>;
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }

    fn source_len(&self) -> io::Result<u64> {
        Ok(<[u8]>::len(self) as u64)
    }
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.as_slice().read_at(buf, offset)
    }

    fn source_len(&self) -> io::Result<u64> {
        Ok(Vec::len(self) as u64)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        (**self).read_at(buf, offset)
    }

    fn source_len(&self) -> io::Result<u64> {
        (**self).source_len()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for std::sync::Arc<T> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        (**self).read_at(buf, offset)
    }

    fn source_len(&self) -> io::Result<u64> {
        (**self).source_len()
    }
}

#[cfg(any(unix, windows))]
impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(self, buf, offset)
        }
        #[cfg(windows)]
        {
            std::os::windows::fs::FileExt::seek_read(self, buf, offset)
        }
    }

    fn source_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// Reads `buf.len()` bytes at `offset`, or fewer only at the source's end.
fn read_full_at<S: ReadAt + ?Sized>(s: &S, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match s.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Opened segments kept for the next reads: a small cache, most recent
/// last.
const CACHED_SEGMENTS: usize = 4;

/// Buffers of each kind kept for reuse (about one per thread reading at
/// once on this machine's scale; more are dropped).
const SPARE_BUFFERS: usize = 4;

/// Reusable buffers of a [`CipherReaderAt`].
#[derive(Default)]
struct Spare {
    ct: Vec<Vec<u8>>,
    plain: Vec<Window>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Positional reads of a cipherio stream (native or Tink) for many
/// threads: [`read_at(&self, buf, offset)`](Self::read_at) opens the
/// segments holding `offset..` from the source, with no cursor, so the
/// reader is `Sync` and can be shared (`&`, `Arc`). The final segment is
/// authenticated once, when the reader is built, which fixes the
/// [`plaintext_len`](Self::plaintext_len); the last few opened segments are
/// kept for the next reads (wiped when they leave the cache or the reader
/// is dropped).
///
/// ```
/// # use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
/// # use std::io::Write;
/// # let key = Key::generate(Algorithm::ChaCha20Poly1305);
/// # let mut w = CipherWriter::with_capacity(1000, &key, Vec::new());
/// # w.write_all(&(0..=255u8).cycle().take(10_000).collect::<Vec<u8>>())?;
/// # let sealed = w.finish()?;
/// let r = CipherReader::builder(&key).build_at(sealed)?; // opens the final segment
/// assert_eq!(r.plaintext_len(), 10_000);
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let r = &r;
///         s.spawn(move || {
///             let mut buf = [0u8; 300];
///             let n = r.read_at(&mut buf, 2000 * t + 999).unwrap(); // crosses a segment
///             assert_eq!(n, 300);
///             assert_eq!(buf[0], ((2000 * t + 999) % 256) as u8);
///         });
///     }
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct CipherReaderAt<S> {
    source: S,
    suite: Suite,
    layout: Fixed,
    provider: Provider,
    /// Index and sealed length of the final segment.
    last: (u64, usize),
    len: u64,
    cache: Mutex<Vec<(u64, Window)>>,
    /// Buffers to reuse (a segment's ciphertext, and plaintext windows
    /// evicted from the cache), so that a read allocates nothing once the
    /// reader is warm; what a window held is overwritten before it is read.
    spare: Mutex<Spare>,
}

impl ReaderBuilder {
    /// A positional reader over `source`, for many threads (see
    /// [`CipherReaderAt`]). Reads the header and authenticates the final
    /// segment now. The capacity does not apply (each read reads the
    /// segments it needs).
    ///
    /// # Errors
    ///
    /// The header's errors, [`Error::SegmentTooLarge`], and for the final
    /// segment: [`Error::Truncated`] (the source is cut, at a segment
    /// boundary or inside a tag), [`Error::Authentication`] (damaged or
    /// extended), [`Error::EmptyFinalSegment`]; the source's own errors.
    pub fn build_at<S: ReadAt>(self, source: S) -> io::Result<CipherReaderAt<S>> {
        let header_len = self.key.header_len();
        let mut header = vec![0u8; header_len];
        let got = read_full_at(&source, &mut header, 0)?;
        let (_, Stream { suite, layout }) = profile::begin_read(
            &self.key,
            &self.aad,
            &header[..got],
            self.max_segment,
            self.provider,
        )?
        .ok_or(Error::Truncated)?;
        let Units::Fixed(layout) = layout.units() else {
            return Err(NO_RANDOM_ACCESS.into());
        };
        let raw = source.source_len()?;
        let (index, sealed) = layout.last_segment(raw).ok_or(Error::Truncated)?;
        // The final segment, by the rules every reader applies to the
        // segment that ends the source.
        let offset = layout.segment_offset(index).unwrap_or(u64::MAX);
        let mut ct = vec![0u8; sealed];
        if read_full_at(&source, &mut ct, offset)? < sealed {
            return Err(Error::Truncated.into());
        }
        let mut plain = Window::secret();
        plain.grow(sealed.saturating_sub(layout.tag))?;
        let opened = unit::open_segment(
            &suite,
            &layout,
            index,
            &ct,
            plain.whole_mut(),
            Place::Ends,
            &mut 0,
        )?;
        plain.set(0, opened.len);
        let r = CipherReaderAt {
            source,
            suite,
            layout,
            provider: self.provider,
            last: (index, sealed),
            len: layout.plain_offset(index) + opened.len as u64,
            cache: Mutex::new(Vec::new()),
            spare: Mutex::new(Spare::default()),
        };
        r.keep(index, plain);
        Ok(r)
    }
}

impl<S: ReadAt> CipherReaderAt<S> {
    /// The authenticated plaintext length (from the final segment, opened
    /// when the reader was built).
    pub fn plaintext_len(&self) -> u64 {
        self.len
    }

    /// Which library opens the segments.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The source.
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// The source.
    pub fn into_inner(self) -> S {
        self.source
    }

    /// Reads plaintext at `offset` into `buf`: all of `buf`, or fewer bytes
    /// only at the end of the stream (`Ok(0)` at or past it). Opens each
    /// segment it needs (or takes it from the cache); safe to call from
    /// many threads at once.
    ///
    /// # Errors
    ///
    /// [`Error::Authentication`] for a damaged segment, [`Error::Truncated`]
    /// for a source that became shorter, the source's own errors. Nothing
    /// of a segment that failed is put in `buf` (what earlier segments of
    /// the same call put there stays).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let at = offset.saturating_add(n as u64);
            if at >= self.len {
                break;
            }
            let (index, off) = self.layout.segment_of(at);
            n += self.copy_from(index, off, &mut buf[n..])?;
        }
        Ok(n)
    }

    /// Copies segment `index`'s plaintext from `off` into `buf`.
    fn copy_from(&self, index: u64, off: usize, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(n) = self.copy_cached(index, off, buf) {
            return Ok(n);
        }
        let plain = self.open(index)?;
        let n = buf.len().min(plain.available().saturating_sub(off));
        buf[..n].copy_from_slice(&plain.data()[off..off + n]);
        self.keep(index, plain);
        Ok(n)
    }

    fn copy_cached(&self, index: u64, off: usize, buf: &mut [u8]) -> Option<usize> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (_, plain) = cache.iter().find(|(i, _)| *i == index)?;
        let n = buf.len().min(plain.available().saturating_sub(off));
        buf[..n].copy_from_slice(&plain.data()[off..off + n]);
        Some(n)
    }

    fn keep(&self, index: u64, plain: Window) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.iter().any(|(i, _)| *i == index) {
            return;
        }
        if cache.len() == CACHED_SEGMENTS {
            // The oldest goes, to be reused (or wiped when dropped).
            let (_, old) = cache.remove(0);
            let mut spare = lock(&self.spare);
            if spare.plain.len() < SPARE_BUFFERS {
                spare.plain.push(old);
            }
        }
        cache.push((index, plain));
    }

    /// Reads and opens segment `index` (the final one as final).
    fn open(&self, index: u64) -> io::Result<Window> {
        let (last, last_sealed) = self.last;
        let (sealed, is_last) = if index == last {
            (last_sealed, true)
        } else {
            (self.layout.sealed(index), false)
        };
        let (mut ct, mut plain) = {
            let mut spare = lock(&self.spare);
            (spare.ct.pop().unwrap_or_default(), spare.plain.pop())
        }; // (not held while reading and opening: other threads go on)
        if ct.len() < sealed {
            ct.resize(sealed, 0);
        }
        let offset = self.layout.segment_offset(index).unwrap_or(u64::MAX);
        let got = read_full_at(&self.source, &mut ct[..sealed], offset);
        let len = sealed - self.layout.tag;
        let mut plain = plain.take().unwrap_or_else(Window::secret);
        let opened = match got {
            Ok(n) if n < sealed => Err(io::Error::from(Error::Truncated)),
            Ok(_) => plain.grow(len).map_err(io::Error::from).and_then(|()| {
                plain.clear();
                self.suite
                    .open_at(
                        index,
                        is_last,
                        &[],
                        &ct[..sealed],
                        &mut plain.whole_mut()[..len],
                    )
                    .map_err(io::Error::from)
            }),
            Err(e) => Err(e),
        };
        let mut spare = lock(&self.spare);
        if spare.ct.len() < SPARE_BUFFERS {
            spare.ct.push(ct);
        }
        match opened {
            Ok(()) => {
                plain.set(0, len);
                Ok(plain)
            }
            Err(e) => {
                // (A failed open left no plaintext in the window.)
                if spare.plain.len() < SPARE_BUFFERS {
                    spare.plain.push(plain);
                }
                Err(e)
            }
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for CipherReaderAt<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CipherReaderAt")
            .field("source", &self.source)
            .field("provider", &self.provider)
            .field("plaintext_len", &self.len)
            .finish_non_exhaustive()
    }
}
