//! [`Window`]: one byte buffer with a window of live bytes, `pos ≤ end ≤ len`.
//!
//! Every buffer of the engine is one: the writer's plaintext segment and its
//! sealed output, the reader's ciphertext read-ahead and its plaintext
//! segment. The window owns the index arithmetic (consume, commit, compact,
//! clear) that the adapters used to keep in loose pairs of fields, and wipes
//! the whole allocation on drop when it holds secrets.

use zeroize::Zeroize;

use crate::Error;

/// A zero-initialised buffer of `len` bytes whose live bytes are
/// `buf[pos..end]`: `data()` is what is held, `spare_mut()` the room after it.
pub(crate) struct Window {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Plaintext (or keys) may pass through: zeroize on drop.
    secret: bool,
}

impl Window {
    /// An empty window (no allocation) that will hold secrets.
    pub(crate) const fn secret() -> Window {
        Window {
            buf: Vec::new(),
            pos: 0,
            end: 0,
            secret: true,
        }
    }

    /// An empty window (no allocation) for public bytes (ciphertext).
    pub(crate) const fn public() -> Window {
        Window {
            buf: Vec::new(),
            pos: 0,
            end: 0,
            secret: false,
        }
    }

    /// The allocated length.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Start of the live bytes.
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// End of the live bytes.
    #[inline]
    pub(crate) fn end(&self) -> usize {
        self.end
    }

    /// The live bytes.
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// How many live bytes there are.
    #[inline]
    pub(crate) fn available(&self) -> usize {
        self.end - self.pos
    }

    /// Whether no live bytes are held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.end
    }

    /// Drops `n` live bytes from the front (at most all of them: a caller
    /// asking for more, as `BufRead::consume` allows, empties the window).
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n.min(self.available());
    }

    /// The room after the live bytes, up to `limit` (an absolute index,
    /// at most `len`).
    #[inline]
    pub(crate) fn spare_to(&mut self, limit: usize) -> &mut [u8] {
        &mut self.buf[self.end..limit]
    }

    /// Appends `n` bytes written into the room after the live bytes.
    #[inline]
    pub(crate) fn commit(&mut self, n: usize) {
        debug_assert!(self.end + n <= self.buf.len());
        self.end += n;
    }

    /// Appends `bytes` (which must fit).
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.buf[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// Forgets the live bytes (the memory keeps its content until it is
    /// overwritten or the window is dropped).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.pos = 0;
        self.end = 0;
    }

    /// Moves the live bytes to the front; returns how many moved.
    pub(crate) fn compact(&mut self) -> usize {
        if self.pos == 0 {
            return 0;
        }
        let n = self.available();
        self.buf.copy_within(self.pos..self.end, 0);
        self.pos = 0;
        self.end = n;
        n
    }

    /// The whole buffer, for filling from the start: the caller then sets
    /// the live bytes with [`set`](Self::set).
    #[inline]
    pub(crate) fn whole_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Makes `buf[pos..end]` the live bytes.
    #[inline]
    pub(crate) fn set(&mut self, pos: usize, end: usize) {
        debug_assert!(pos <= end && end <= self.buf.len());
        self.pos = pos;
        self.end = end;
    }

    /// Grows the allocation with zeros to `len` bytes, keeping the live
    /// bytes where they are (no-op if it is that long already), or
    /// [`Error::Allocation`] instead of an abort when it cannot be had.
    /// A secret window moves to a fresh allocation and wipes the old one (a
    /// reallocation in place could leave an unwiped copy behind).
    pub(crate) fn grow(&mut self, len: usize) -> Result<(), Error> {
        let Some(more) = len.checked_sub(self.buf.len()).filter(|&m| m > 0) else {
            return Ok(());
        };
        if self.secret && !self.buf.is_empty() {
            let mut v = Vec::new();
            v.try_reserve_exact(len)
                .map_err(|_| Error::Allocation(len))?;
            v.extend_from_slice(&self.buf[..self.end]);
            v.resize(len, 0);
            wipe(&mut self.buf);
            self.buf = v;
            return Ok(());
        }
        self.buf
            .try_reserve_exact(more)
            .map_err(|_| Error::Allocation(len))?;
        self.buf.resize(len, 0);
        Ok(())
    }

    /// Grows (as [`grow`](Self::grow)) so that `need` bytes fit from the
    /// window's start: to `need`, at least doubling, at most `max`. Memory
    /// follows the bytes that arrive, and a buffer reaches its full size in
    /// a few steps.
    pub(crate) fn grow_for(&mut self, need: usize, floor: usize, max: usize) -> Result<(), Error> {
        if need <= self.buf.len() {
            return Ok(());
        }
        let len = need
            .max(self.buf.len().saturating_mul(2))
            .max(floor)
            .min(max)
            .max(need);
        self.grow(len)
    }

    /// Replaces the allocation with a fresh zeroed one of `len` bytes,
    /// empty, wiping the old one first (a reallocation would leave an
    /// unwiped copy of a secret behind).
    pub(crate) fn renew(&mut self, len: usize) -> Result<(), Error> {
        let v = zeroed(len)?;
        if self.secret {
            wipe(&mut self.buf);
        }
        self.buf = v;
        self.clear();
        Ok(())
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if self.secret {
            wipe(&mut self.buf);
        }
    }
}

/// `len` zero bytes in an allocation of their own, or
/// [`Error::Allocation`] instead of an abort when it cannot be had.
pub(crate) fn zeroed(len: usize) -> Result<Vec<u8>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::Allocation(len))?;
    v.resize(len, 0);
    Ok(v)
}

/// Wipes the whole allocation of `buf` with one fill of each part
/// (`[u8]`'s bulk `Zeroize`): zeroize's own `Vec` impl writes the
/// elements one volatile byte at a time, which cost short streams a few
/// percent of their time in the drop.
pub(crate) fn wipe(buf: &mut Vec<u8>) {
    buf.spare_capacity_mut().zeroize();
    buf.as_mut_slice().zeroize();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_arithmetic() {
        let mut w = Window::public();
        w.grow(8).expect("grow");
        assert_eq!((w.len(), w.available()), (8, 0));
        w.extend(b"abcdef");
        w.consume(2);
        assert_eq!(w.data(), b"cdef");
        assert_eq!(w.compact(), 4);
        assert_eq!((w.pos(), w.end()), (0, 4));
        w.spare_to(6).copy_from_slice(b"gh");
        w.commit(2);
        assert_eq!(w.data(), b"cdefgh");
        w.consume(usize::MAX);
        assert!(w.is_empty());
        assert_eq!(w.pos(), 6, "consume clamps at the end, never wraps");
        w.clear();
        assert_eq!((w.pos(), w.end()), (0, 0));
        assert_eq!(w.grow(usize::MAX), Err(Error::Allocation(usize::MAX)));
    }
}
