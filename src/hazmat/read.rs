//! [`KeystreamReader`]: applies the keystream to what is read, in the
//! caller's buffer or its own.

use std::fmt;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

use cipher::{StreamCipher, StreamCipherSeek};
use zeroize::Zeroizing;

use super::{Buf, exhausted, inner_pos, keystream_pos, keystream_room, origin, seek_keystream};
use crate::DEFAULT_CAPACITY;

/// A buffered reader that applies a stream cipher's keystream to every byte
/// read through it. **Not authenticated**: read the
/// [module docs](crate::hazmat) first.
///
/// A [`read`](Read::read) into a buffer at least as large as the capacity,
/// with nothing buffered, reads straight into the caller's buffer and
/// applies the keystream there, in place (no copy); smaller reads and
/// [`BufRead`] go through the internal buffer, as with
/// [`std::io::BufReader`], which is allocated on first use (a reader that
/// only ever takes such large reads never allocates it). Errors of the
/// inner reader pass through and change nothing: retry the call.
///
/// Over an inner reader that is itself a [`BufRead`] (a `&[u8]`, a
/// [`BufReader`](std::io::BufReader), …), build it with
/// [`from_buf_read`](Self::from_buf_read): the keystream then goes from
/// the inner reader's buffer straight into the caller's (or the internal)
/// buffer in one pass, where `Read::read` would first copy the ciphertext
/// out and then apply the keystream over the copy.
pub struct KeystreamReader<C, R> {
    inner: R,
    cipher: C,
    /// Decrypted bytes not yet handed out: `buf[pos..filled]`. Empty until
    /// first needed, then `capacity` bytes; wiped on drop.
    buf: Zeroizing<Buf>,
    capacity: usize,
    pos: usize,
    filled: usize,
    /// Inner position minus keystream position, measured at the first seek.
    origin: Option<i128>,
    /// Reads from `inner` into a slice with the keystream applied:
    /// [`read_through`], or [`read_from_buf`] for [`from_buf_read`](Self::from_buf_read).
    read_into: ReadInto<C, R>,
}

/// How a reader takes bytes from its inner reader, decrypted, into a slice.
type ReadInto<C, R> = fn(&mut C, &mut R, &mut [u8]) -> io::Result<usize>;

impl<C: StreamCipher, R: Read> KeystreamReader<C, R> {
    /// A reader with an 8 KiB buffer ([`DEFAULT_CAPACITY`]). Does no I/O.
    pub fn new(cipher: C, inner: R) -> Self {
        Self::with_capacity(DEFAULT_CAPACITY, cipher, inner)
    }

    /// A reader with a buffer of `capacity` bytes (0 is taken as 1). Does
    /// no I/O.
    pub fn with_capacity(capacity: usize, cipher: C, inner: R) -> Self {
        Self::reading(capacity, cipher, inner, read_through::<C, R>)
    }

    fn reading(capacity: usize, cipher: C, inner: R, read_into: ReadInto<C, R>) -> Self {
        KeystreamReader {
            inner,
            cipher,
            buf: Zeroizing::default(),
            capacity: capacity.max(1),
            pos: 0,
            filled: 0,
            origin: None,
            read_into,
        }
    }
}

impl<C: StreamCipher, R: BufRead> KeystreamReader<C, R> {
    /// A reader with an 8 KiB buffer ([`DEFAULT_CAPACITY`]) that applies
    /// the keystream from `inner`'s own buffer ([`BufRead::fill_buf`]) into
    /// the destination in one pass, then [`consume`](BufRead::consume)s
    /// what it took: no copy of the ciphertext first. Each `read` takes at
    /// most what one `fill_buf` holds. Does no I/O.
    pub fn from_buf_read(cipher: C, inner: R) -> Self {
        Self::from_buf_read_with_capacity(DEFAULT_CAPACITY, cipher, inner)
    }

    /// [`from_buf_read`](Self::from_buf_read) with a buffer of `capacity`
    /// bytes (0 is taken as 1). Does no I/O.
    pub fn from_buf_read_with_capacity(capacity: usize, cipher: C, inner: R) -> Self {
        Self::reading(capacity, cipher, inner, read_from_buf::<C, R>)
    }
}

impl<C, R> KeystreamReader<C, R> {
    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader. Reading from it directly, or moving it, puts
    /// ciphertext and keystream out of step.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader; whatever was buffered is lost (and wiped).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The decrypted bytes buffered and not yet read.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }
}

/// Takes decrypted bytes from `inner` into `out` with `read_into`, no
/// more than the keystream has left; with none left, the end of the input
/// is a clean end and one more byte an error.
fn take<C: StreamCipher, R: Read>(
    cipher: &mut C,
    inner: &mut R,
    read_into: ReadInto<C, R>,
    out: &mut [u8],
) -> io::Result<usize> {
    let want = keystream_room(cipher, out.len());
    if want == 0 && !out.is_empty() {
        return past_keystream(inner);
    }
    read_into(cipher, inner, &mut out[..want])
}

/// Reads from `inner` into `out` and applies the keystream there, over
/// all it read at once.
fn read_through<C: StreamCipher, R: Read>(
    cipher: &mut C,
    inner: &mut R,
    out: &mut [u8],
) -> io::Result<usize> {
    let n = inner.read(out)?.min(out.len());
    cipher
        .try_apply_keystream(&mut out[..n])
        .map_err(|_| exhausted())?;
    Ok(n)
}

/// Applies the keystream from what `inner` holds into `out`, one pass, and
/// consumes that much of it.
fn read_from_buf<C: StreamCipher, R: BufRead>(
    cipher: &mut C,
    inner: &mut R,
    out: &mut [u8],
) -> io::Result<usize> {
    let held = inner.fill_buf()?;
    let n = held.len().min(out.len());
    cipher
        .try_apply_keystream_b2b(&held[..n], &mut out[..n])
        .map_err(|_| exhausted())?;
    inner.consume(n);
    Ok(n)
}

/// No keystream left: the end of the input is fine, one more byte is not.
#[cold]
fn past_keystream<R: Read>(inner: &mut R) -> io::Result<usize> {
    match inner.read(&mut [0; 1])? {
        0 => Ok(0),
        _ => Err(exhausted()),
    }
}

impl<C: StreamCipher, R: Read> Read for KeystreamReader<C, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.filled && out.len() >= self.capacity {
            // The bytes still in the buffer lie behind the position only
            // until the position moves past them without them: forget
            // them, so that a relative seek cannot move back into bytes of
            // another offset.
            self.pos = 0;
            self.filled = 0;
            return take(&mut self.cipher, &mut self.inner, self.read_into, out);
        }
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<C: StreamCipher, R: Read> BufRead for KeystreamReader<C, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.filled {
            if self.buf.is_empty() {
                self.buf.0.resize(self.capacity, 0);
            }
            let n = take(
                &mut self.cipher,
                &mut self.inner,
                self.read_into,
                &mut self.buf,
            )?;
            self.pos = 0;
            self.filled = n;
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

impl<C: StreamCipherSeek, R> KeystreamReader<C, R> {
    fn origin(&mut self) -> io::Result<i128>
    where
        R: Seek,
    {
        match self.origin {
            Some(origin) => Ok(origin),
            // Every byte the cipher has processed has been read from `inner`.
            None => Ok(*self
                .origin
                .insert(origin(self.inner.stream_position()?, &self.cipher)?)),
        }
    }

    /// The position of the next byte `read` returns, in inner terms.
    fn logical_pos(&mut self) -> io::Result<u64>
    where
        R: Seek,
    {
        let origin = self.origin()?;
        let end = inner_pos(origin, keystream_pos(&self.cipher)?)?;
        Ok(end - (self.filled - self.pos) as u64)
    }
}

/// Positions are the inner reader's; the keystream follows them (see the
/// [module docs](crate::hazmat#seeking)). A seek within the buffer
/// ([`seek_relative`](Seek::seek_relative)) does no I/O.
impl<C: StreamCipher + StreamCipherSeek, R: Read + Seek> Seek for KeystreamReader<C, R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let origin = self.origin()?;
        let target = match pos {
            SeekFrom::Current(offset) => {
                let here = self.logical_pos()?;
                let target = i128::from(here) + i128::from(offset);
                SeekFrom::Start(u64::try_from(target).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "seek to a negative or overflowing position",
                    )
                })?)
            }
            other => other,
        };
        let new = self.inner.seek(target)?;
        if let Err(e) = seek_keystream(&mut self.cipher, origin, new) {
            // Back to where the buffered bytes came from.
            let back = inner_pos(origin, keystream_pos(&self.cipher)?)?;
            self.inner.seek(SeekFrom::Start(back))?;
            return Err(e);
        }
        self.pos = 0;
        self.filled = 0;
        Ok(new)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        self.logical_pos()
    }

    fn seek_relative(&mut self, offset: i64) -> io::Result<()> {
        let to = i128::try_from(self.pos).map_err(io::Error::other)? + i128::from(offset);
        match usize::try_from(to) {
            Ok(to) if to <= self.filled => {
                self.pos = to;
                Ok(())
            }
            _ => self.seek(SeekFrom::Current(offset)).map(drop),
        }
    }
}

impl<C, R: fmt::Debug> fmt::Debug for KeystreamReader<C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeystreamReader")
            .field("inner", &self.inner)
            .field("capacity", &self.capacity)
            .field("buffered", &(self.filled - self.pos))
            .finish_non_exhaustive()
    }
}
