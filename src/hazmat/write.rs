//! [`KeystreamWriter`]: applies the keystream to what is written, keeps the
//! result until the inner writer has taken it.

use std::fmt;
use std::io::{self, ErrorKind, Seek, SeekFrom, Write};

use cipher::{StreamCipher, StreamCipherSeek};
use zeroize::Zeroizing;

use super::{
    Buf, buffer, exhausted, inner_pos, keystream_pos, keystream_room, origin, seek_keystream,
};
use crate::DEFAULT_CAPACITY;

/// A buffered writer that applies a stream cipher's keystream to every byte
/// written through it. **Not authenticated**: read the
/// [module docs](crate::hazmat) first.
///
/// Each byte is combined with the keystream (XOR) once, when [`write`](Write::write)
/// accepts it; the result waits in the buffer until the inner writer has
/// taken it. Writes smaller than the buffer are collected in it; a write of
/// at least the capacity at an empty buffer goes through in buffer-sized
/// chunks, each applied from the caller's slice straight into the buffer
/// (`apply_keystream_b2b`: one copy, which the caller's immutable slice
/// makes necessary) and written out at once.
///
/// Errors of the inner writer (`Interrupted`, `WouldBlock`, …) are returned
/// when nothing of the call's input was accepted; otherwise the call returns
/// the bytes it accepted and the next call meets the error again. An inner
/// writer that accepts no bytes (`Ok(0)`) gives `WriteZero`. A call never
/// returns `Ok(0)` for non-empty input.
///
/// **Call [`flush`](Write::flush) or [`finish`](Self::finish)**: dropping
/// the writer discards what is still buffered (it writes nothing in `drop`).
#[must_use = "a KeystreamWriter must be flushed or finished; dropping it discards what it buffers"]
pub struct KeystreamWriter<C, W> {
    inner: W,
    cipher: C,
    /// Ciphertext waiting for the inner writer in `buf[start..end]`.
    buf: Zeroizing<Buf>,
    start: usize,
    end: usize,
    /// Inner position minus keystream position, measured at the first seek.
    origin: Option<i128>,
}

impl<C: StreamCipher, W: Write> KeystreamWriter<C, W> {
    /// A writer with an 8 KiB buffer ([`DEFAULT_CAPACITY`]). Does no I/O.
    pub fn new(cipher: C, inner: W) -> Self {
        Self::with_capacity(DEFAULT_CAPACITY, cipher, inner)
    }

    /// A writer with a buffer of `capacity` bytes (0 is taken as 1). Does
    /// no I/O.
    pub fn with_capacity(capacity: usize, cipher: C, inner: W) -> Self {
        KeystreamWriter {
            inner,
            cipher,
            buf: buffer(capacity),
            start: 0,
            end: 0,
            origin: None,
        }
    }

    /// Writes out everything buffered, flushes the inner writer and returns
    /// it.
    ///
    /// # Errors
    ///
    /// Any error of the inner writer; the buffered bytes are lost with the
    /// writer then. To retry instead, call [`flush`](Write::flush) until it
    /// succeeds, then `finish`.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.inner)
    }

    /// Writes `buf[start..end]` out; keeps whatever the inner writer did not
    /// take.
    fn flush_buf(&mut self) -> io::Result<()> {
        while self.start < self.end {
            match self.inner.write(&self.buf[self.start..self.end])? {
                0 => {
                    return Err(io::Error::new(
                        ErrorKind::WriteZero,
                        "the inner writer accepted no bytes",
                    ));
                }
                n => self.start += n.min(self.end - self.start),
            }
        }
        self.start = 0;
        self.end = 0;
        Ok(())
    }

    /// Applies the keystream from `data` into the buffer after `end`, as
    /// much as fits and the keystream allows.
    fn encrypt_into_buf(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = keystream_room(&self.cipher, data.len().min(self.buf.len() - self.end));
        if n == 0 {
            return Err(exhausted());
        }
        self.cipher
            .try_apply_keystream_b2b(&data[..n], &mut self.buf[self.end..self.end + n])
            .map_err(|_| exhausted())?;
        self.end += n;
        Ok(n)
    }

    /// `data` is at least a buffer long and the buffer is empty: buffer-sized
    /// chunks, each written out at once, the tail buffered.
    fn write_large(&mut self, data: &[u8]) -> io::Result<usize> {
        let capacity = self.buf.len();
        let mut done = 0;
        while data.len() - done >= capacity {
            match self.encrypt_into_buf(&data[done..done + capacity]) {
                Ok(n) => done += n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => return Ok(done),
            }
            // Accepted: from here on an error waits for the next call.
            if self.end < capacity || self.flush_buf().is_err() {
                return Ok(done);
            }
        }
        if done < data.len() {
            done += self.encrypt_into_buf(&data[done..]).unwrap_or(0);
        }
        Ok(done)
    }
}

impl<C, W> KeystreamWriter<C, W> {
    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer. Writing to it directly, or moving it, puts
    /// ciphertext and keystream out of step.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The inner writer, **discarding** whatever is still buffered; use
    /// [`finish`](Self::finish) to write it out first.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The bytes written to this writer, encrypted, and not yet taken by
    /// the inner writer.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }
}

impl<C: StreamCipher, W: Write> Write for KeystreamWriter<C, W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if data.len() > self.buf.len() - self.end {
            self.flush_buf()?;
        }
        if self.end == 0 && data.len() >= self.buf.len() {
            self.write_large(data)
        } else {
            self.encrypt_into_buf(data)
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buf()?;
        self.inner.flush()
    }
}

/// Positions are the inner writer's; the keystream follows them (see the
/// [module docs](crate::hazmat#seeking)). A seek first writes out the
/// buffer.
impl<C: StreamCipher + StreamCipherSeek, W: Write + Seek> Seek for KeystreamWriter<C, W> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.flush_buf()?;
        let origin = match self.origin {
            Some(origin) => origin,
            None => {
                let origin = origin(self.inner.stream_position()?, &self.cipher)?;
                *self.origin.insert(origin)
            }
        };
        let new = self.inner.seek(pos)?;
        if let Err(e) = seek_keystream(&mut self.cipher, origin, new) {
            let back = inner_pos(origin, keystream_pos(&self.cipher)?)?;
            self.inner.seek(SeekFrom::Start(back))?;
            return Err(e);
        }
        Ok(new)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        let buffered = u64::try_from(self.buffered()).map_err(io::Error::other)?;
        Ok(self.inner.stream_position()? + buffered)
    }
}

impl<C, W: fmt::Debug> fmt::Debug for KeystreamWriter<C, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeystreamWriter")
            .field("inner", &self.inner)
            .field("capacity", &self.buf.len())
            .field("buffered", &self.buffered())
            .finish_non_exhaustive()
    }
}
