//! [`Plain`]: the reader's internal plaintext buffer, which knows which
//! segment it holds.
//!
//! The rule it owns: the buffer is said to hold a segment only while its
//! bytes are that segment's authenticated plaintext. Every way into the
//! bytes for writing ([`open_into`](Plain::open_into)) forgets which
//! segment they were first, so an open that fails there (and wipes them)
//! can never leave them standing for the segment they held before; only
//! [`opened`](Plain::opened), after an open succeeded, says which segment
//! they are. A seek back ([`show`](Plain::show)) reuses them only then.

use crate::Error;
use crate::core::window::Window;

/// Which segment a [`Plain`] holds whole, from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// The segment's index.
    pub(crate) index: u64,
    /// Its plaintext length.
    pub(crate) len: usize,
    /// Whether it opened as the final segment.
    pub(crate) last: bool,
}

/// Authenticated plaintext for small reads and `BufRead`: the live bytes
/// are what the caller has not taken yet; [`held`](Self::held) says which
/// segment the buffer holds from its start, if it does.
pub(crate) struct Plain {
    buf: Window,
    held: Option<Held>,
}

impl Plain {
    /// An empty buffer (no allocation), wiped on drop.
    pub(crate) const fn new() -> Plain {
        Plain {
            buf: Window::secret(),
            held: None,
        }
    }

    /// The plaintext not taken yet.
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        self.buf.data()
    }

    /// How many bytes are not taken yet.
    #[inline]
    pub(crate) fn available(&self) -> usize {
        self.buf.available()
    }

    /// Whether every byte was taken.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The caller took `n` bytes (at most all of them).
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.buf.consume(n);
    }

    /// Hides the bytes not taken yet. The segment held stays held: its
    /// bytes are untouched, and a seek back may show them again.
    #[inline]
    pub(crate) fn hide(&mut self) {
        self.buf.clear();
    }

    /// The segment held from the buffer's start, if any.
    #[cfg(test)]
    pub(crate) fn held(&self) -> Option<Held> {
        self.held
    }

    /// The whole buffer, at least `cap` bytes long, to open segments into;
    /// from now on it holds no segment until [`opened`](Self::opened) says
    /// which. Allocated at the size asked (a fresh allocation, the old one
    /// wiped, when it must grow), so no copy is left behind unwiped.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when it cannot grow (then it is empty).
    #[inline]
    pub(crate) fn open_into(&mut self, cap: usize) -> Result<&mut [u8], Error> {
        self.held = None;
        self.buf.clear();
        if self.buf.len() < cap {
            self.buf.renew(cap)?;
        }
        Ok(self.buf.whole_mut())
    }

    /// An open into [`open_into`](Self::open_into)'s buffer succeeded: it
    /// holds `held` from its start and `filled` bytes in all (a run of
    /// segments may follow the first), of which the first `skip` are not
    /// the caller's (a seek into the segment).
    #[inline]
    pub(crate) fn opened(&mut self, held: Held, filled: usize, skip: usize) {
        self.buf.set(0, filled);
        self.buf.consume(skip);
        self.held = Some(held);
    }

    /// Fills the whole buffer by `fill` (a ring's delivery, trading its
    /// allocation); once that succeeded, it holds the plaintext `fill`
    /// left there, segment `first` (whole) from its start and the ones
    /// after it. On error it holds none.
    ///
    /// # Errors
    ///
    /// `fill`'s.
    pub(crate) fn fill_from(
        &mut self,
        first: Held,
        fill: impl FnOnce(&mut Window) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.held = None;
        let r = fill(&mut self.buf);
        if r.is_err() {
            self.buf.clear();
            return r;
        }
        let (pos, end) = (self.buf.pos(), self.buf.end());
        debug_assert!(pos == 0 && first.len <= end);
        self.opened(first, end, 0);
        Ok(())
    }

    /// Shows the held segment from plaintext offset `off` if it is segment
    /// `index` and `off` lies in it (its end included): then returns it.
    #[inline]
    pub(crate) fn show(&mut self, index: u64, off: usize) -> Option<Held> {
        let held = self.held.filter(|h| h.index == index && off <= h.len)?;
        self.buf.set(off, held.len);
        Some(held)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SEG: Held = Held {
        index: 3,
        len: 4,
        last: false,
    };

    #[test]
    fn an_open_that_fails_leaves_no_segment_held() {
        let mut p = Plain::new();
        p.open_into(8).unwrap()[..4].copy_from_slice(b"abcd");
        p.opened(SEG, 4, 0);
        p.consume(4);
        assert_eq!(p.show(3, 1), Some(SEG));
        assert_eq!(p.data(), b"bcd");
        // The next segment is opened into it and fails (wiping it): the
        // buffer must no longer claim segment 3.
        p.open_into(4).unwrap().fill(0);
        assert_eq!(p.held(), None);
        assert_eq!(p.show(3, 1), None);
        assert!(p.is_empty());
    }

    #[test]
    fn a_filled_unit_is_held_from_its_first_segment_and_a_failed_one_not_at_all() {
        let mut p = Plain::new();
        p.open_into(4).unwrap().copy_from_slice(b"abcd");
        p.opened(SEG, 4, 0);
        let r = p.fill_from(Held { index: 4, ..SEG }, |w| {
            w.grow(8)?;
            w.extend(b"half");
            Err(Error::Authentication)
        });
        assert!(r.is_err());
        assert!(
            p.is_empty() && p.held().is_none(),
            "nothing held after a failure"
        );
        let next = Held { index: 4, ..SEG };
        let mut traded = Window::secret();
        traded.grow(8).unwrap();
        traded.extend(b"wxyzWXYZ");
        p.fill_from(next, |w| {
            std::mem::swap(w, &mut traded);
            Ok(())
        })
        .unwrap();
        assert_eq!(p.data(), b"wxyzWXYZ", "the whole unit is shown");
        assert_eq!(p.held(), Some(next));
        p.consume(5);
        assert_eq!(
            p.show(4, 1),
            Some(next),
            "a seek back into its first segment"
        );
        assert_eq!(p.data(), b"xyz");
    }

    #[test]
    fn hiding_keeps_the_segment_a_seek_back_shows() {
        let mut p = Plain::new();
        p.open_into(4).unwrap().copy_from_slice(b"wxyz");
        p.opened(SEG, 4, 2);
        assert_eq!(p.data(), b"yz");
        p.hide();
        assert!(p.is_empty());
        assert_eq!(p.show(3, 0), Some(SEG));
        assert_eq!(p.data(), b"wxyz");
        assert_eq!(p.show(3, 4), Some(SEG));
        assert!(p.is_empty());
        assert_eq!(p.show(3, 5), None, "past the segment");
        assert_eq!(p.show(2, 0), None, "another segment");
    }
}
