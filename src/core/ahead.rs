//! [`ReadAhead`]: the reader's ciphertext read-ahead, how large it may
//! grow, and what the inner reader said of its end.
//!
//! The rules it owns:
//! - **Memory follows the ciphertext that arrived**: the read-ahead may
//!   reach the header plus `capacity` before the header is read, then one
//!   sealed segment plus `capacity`, and a batch of segments plus
//!   `capacity` (with threads) only once a segment has authenticated and
//!   with it the header that named the segment size. It grows toward that
//!   size as bytes arrive, never because a header asks. Bytes put back in
//!   front of it (a ring's units, after a seek) may pass that size for a
//!   while; reads then add no more than a read of `capacity` until what
//!   is held is back under it, so seeks do not ratchet it up.
//! - **Aligned reads**: each inner read is offered at least `capacity`
//!   bytes of room, ending on a unit boundary where one is far enough, so
//!   a full read leaves no partial unit to move later; only the rest of a
//!   unit begun may be asked for with less. The unit in hand always fits.
//! - **The end is the inner reader's word**: only a read of 0 bytes ends
//!   the input; a short read is a hint (which final flag to try first),
//!   never trusted.

use crate::Error;
use crate::core::window::Window;

/// What the inner reader said of its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// The last read filled the room offered (or none was made yet).
    Open,
    /// The last read brought less than it was offered: the input may be at
    /// its end.
    Short,
    /// A read brought nothing: the input is at its end.
    Ended,
}

/// The units the read-ahead lines its reads up with: the sealed length of
/// the unit in hand and of each after it (`None` before the header is
/// read, or outside the body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Sealed lengths of the unit in hand and of the units after it.
    pub(crate) grid: Option<(usize, usize)>,
    /// Records: the unit in hand is as long as its header says, not as the
    /// stream's largest, and grows the read-ahead only that far.
    pub(crate) framed: bool,
    /// Ask only for the rest of a unit begun (a front with an inner buffer:
    /// the read-ahead then empties on a unit boundary, and the units after
    /// it open in the inner buffer, in place).
    pub(crate) exact: bool,
}

/// Ciphertext read ahead of the opener: `data()` is what is held, not
/// opened yet. It reads as the [`Window`] it holds (`data`, `available`,
/// `is_empty`); only its own methods change it.
pub(crate) struct ReadAhead {
    buf: Window,
    /// The configured read-ahead (more than 0).
    capacity: usize,
    /// The read-ahead's full size (see the module docs); what is held
    /// passes it only after bytes were put back in front.
    target: usize,
    /// A segment has authenticated: the target may include a batch.
    proven: bool,
    /// Bytes the unit in hand needs from the read-ahead's start.
    need: usize,
    flow: Flow,
    /// Room offered by the last [`make_room`](Self::make_room).
    offered: usize,
}

/// An inner read made on the caller's thread while the pool threads
/// open what was read (with prefetch): the front's answer to it.
pub(crate) trait Beside {
    /// Reads into `room`, as the inner reader's `read` would: the bytes
    /// it brought (0: the input is at its end), or `None` when it brought
    /// nothing to add (an error the front keeps for the call that next
    /// needs input, or an interruption).
    fn read_beside(&mut self, room: &mut [u8]) -> Option<usize>;
}

impl std::ops::Deref for ReadAhead {
    type Target = Window;
    fn deref(&self) -> &Window {
        &self.buf
    }
}

impl ReadAhead {
    /// An empty read-ahead (no allocation) of `capacity` bytes per read.
    pub(crate) const fn new(capacity: usize) -> ReadAhead {
        ReadAhead {
            buf: Window::public(),
            capacity,
            target: 0,
            proven: false,
            need: 0,
            flow: Flow::Open,
            offered: 0,
        }
    }

    /// Whether a unit has authenticated (the read-ahead may hold a
    /// batch).
    pub(crate) fn proven(&self) -> bool {
        self.proven
    }

    /// Takes back, in front of what is held, `bytes` read earlier and held
    /// elsewhere meanwhile (a ring's units not delivered, in stream
    /// order).
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when the read-ahead cannot grow to hold them.
    pub(crate) fn put_front(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.rebuild(bytes, &[])
    }

    /// What is held, between `front` and `back`, in a buffer of its own.
    fn rebuild(&mut self, front: &[u8], back: &[u8]) -> Result<(), Error> {
        let mut buf = Window::public();
        buf.grow(front.len() + self.buf.available() + back.len() + self.capacity)?;
        buf.extend(front);
        buf.extend(self.buf.data());
        buf.extend(back);
        self.buf = buf;
        Ok(())
    }

    /// How far a read beside a run may fill a second buffer that starts
    /// with the `rest` bytes held after the run's: up to twice what the
    /// run takes (memory follows the ciphertext that arrived), at least
    /// the capacity, never past the read-ahead's size (nor its full size,
    /// when bytes put back made it larger). `None`: no room for a read of
    /// the capacity.
    pub(crate) fn behind_end(&self, rest: usize) -> Option<usize> {
        let took = self.buf.available().saturating_sub(rest);
        let most = self.buf.len().min(self.target);
        let end = (rest + (2 * took).max(self.capacity)).min(most);
        (rest + self.capacity <= end).then_some(end)
    }

    /// A run used the first `used` bytes held, while an inner read beside
    /// it filled `behind`: the bytes held after the run's, then the last
    /// `n`, read into `offered` bytes of room. `behind` becomes the
    /// read-ahead (trading buffers: nothing copied), unless the run
    /// stopped short (a segment failed): then what the read brought is
    /// added behind what is held.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when the read-ahead cannot grow to add it.
    pub(crate) fn take_behind(
        &mut self,
        used: usize,
        behind: &mut Window,
        n: usize,
        offered: usize,
    ) -> Result<(), Error> {
        self.note_read(n, offered);
        let kept = behind.available() - n;
        if used + kept == self.buf.available() {
            std::mem::swap(&mut self.buf, behind);
            return Ok(());
        }
        self.consume(used);
        self.rebuild(&[], &behind.data()[kept..])
    }

    /// The configured read-ahead.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The opener used `n` bytes (a unit it opened, a header it read).
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.buf.consume(n);
    }

    /// The inner reader is at its end.
    #[inline]
    pub(crate) fn at_end(&self) -> bool {
        self.flow == Flow::Ended
    }

    /// The inner reader is at its end, or its last read was short (a hint
    /// only).
    #[inline]
    pub(crate) fn looks_ended(&self) -> bool {
        self.flow != Flow::Open
    }

    /// Whether the unit in hand, `n` bytes from the start, must wait for
    /// more input: fewer are held and the input has not ended. Then the
    /// next [`make_room`](Self::make_room) makes it fit.
    #[inline]
    pub(crate) fn wants(&mut self, n: usize) -> bool {
        if self.available() < n && !self.at_end() {
            self.expect(n);
            return true;
        }
        false
    }

    /// The unit in hand is `n` bytes from the start: the next
    /// [`make_room`](Self::make_room) makes it fit.
    #[inline]
    pub(crate) fn expect(&mut self, n: usize) {
        self.need = n;
    }

    /// Forgets what is held (the next unit is read elsewhere).
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }

    /// Forgets what is held and what the inner reader said of its end: it
    /// was moved, and reads start over.
    pub(crate) fn restart(&mut self) {
        self.buf.clear();
        self.flow = Flow::Open;
    }

    /// Forgets what is held, and takes the input to be at its end (no
    /// source holds the bytes wanted).
    pub(crate) fn end_here(&mut self) {
        self.buf.clear();
        self.flow = Flow::Ended;
    }

    /// Sizes the read-ahead for a header of `header_len` bytes plus a
    /// read of `capacity`, so that every inner call asks for at least
    /// `capacity` bytes even while the header is incomplete.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`].
    pub(crate) fn size_for_header(&mut self, header_len: usize) -> Result<(), Error> {
        self.target = self.capacity.saturating_add(header_len);
        self.buf.grow(self.target)
    }

    /// The header is read, not proven: room for one whole sealed unit of
    /// `max_sealed` bytes plus `capacity`, never less than what is held —
    /// reached as the unit's bytes arrive, not now.
    pub(crate) fn size_for_unit(&mut self, max_sealed: usize) {
        self.target = self.capacity.saturating_add(max_sealed).max(self.buf.len());
    }

    /// A unit authenticated, and with it the header: from the first time
    /// on, the target may hold `batch()` sealed bytes (with threads) plus
    /// `capacity`. Before, a forged header must not make the reader
    /// allocate more than about twice what arrived.
    #[inline]
    pub(crate) fn prove(&mut self, batch: impl FnOnce() -> Option<usize>) {
        if self.proven {
            return;
        }
        self.proven = true;
        if let Some(sealed) = batch() {
            self.size_for_run(sealed);
        }
    }

    /// Threads came after the header was proven: the target may hold a
    /// batch of `sealed` bytes plus `capacity` from now on. (Before the
    /// proof, [`prove`](Self::prove) does this.)
    pub(crate) fn size_for_run(&mut self, sealed: usize) {
        if self.proven {
            self.target = self.capacity.saturating_add(sealed).max(self.target);
        }
    }

    /// Makes the room for the next inner read (see the module docs) and
    /// returns the bytes moved to the front for it; [`spare`](Self::spare)
    /// is then the room.
    ///
    /// # Errors
    ///
    /// [`Error::Allocation`] when the read-ahead cannot grow.
    pub(crate) fn make_room(&mut self, shape: &Shape) -> Result<usize, Error> {
        if self.buf.is_empty() {
            self.buf.clear();
        }
        self.grow(shape)?;
        let (pos, end, len) = (self.buf.pos(), self.buf.end(), self.buf.len());
        let far_enough =
            aligned_limit(shape.grid, len, pos).is_some_and(|l| l >= end + self.capacity);
        let mut moved = 0;
        if !far_enough && (len - end < self.capacity || pos + self.need > len) {
            moved = self.buf.compact();
        }
        let (pos, end) = (self.buf.pos(), self.buf.end());
        let mut limit = match aligned_limit(shape.grid, len, pos) {
            Some(l) if l > end => l,
            _ => len,
        };
        if shape.exact && pos < end && pos + self.need > end {
            limit = limit.min(pos + self.need);
        }
        // Past the full size (bytes put back in front): a read of the
        // capacity at most, until what is held is back under it.
        let under = self.target.saturating_sub(end - pos).max(self.capacity);
        self.offered = (limit - end).min(under);
        Ok(moved)
    }

    /// Grows toward the target: only when, moved to the front, what is
    /// held would leave less than `capacity` bytes of room (then double),
    /// or once the unit in hand fits: then straight to the target (at most
    /// about twice what arrived, plus `capacity`), where every read is at
    /// least `capacity` bytes and ends on a unit boundary again.
    fn grow(&mut self, shape: &Shape) -> Result<(), Error> {
        let held = self.buf.available();
        let len = self.buf.len();
        if len >= self.target || len - held >= self.capacity && (self.need > len || shape.framed) {
            return Ok(());
        }
        let mut grown = (held + self.capacity).max(len.saturating_mul(2));
        if grown >= self.need {
            grown = if shape.framed {
                // Room for the record in hand and a read-ahead, not for the
                // largest record the header allows.
                grown
                    .min(self.need.saturating_add(self.capacity))
                    .max(held + self.capacity)
            } else {
                self.target
            };
        }
        self.buf.grow(grown.min(self.target))
    }

    /// Offers the next read at most `n` bytes of the room made (at least
    /// `capacity`, as every read).
    pub(crate) fn offer_at_most(&mut self, n: usize) {
        self.offered = self.offered.min(n.max(self.capacity));
    }

    /// The room made by [`make_room`](Self::make_room).
    #[inline]
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        let end = self.buf.end();
        self.buf.spare_to(end + self.offered)
    }

    /// The inner reader put `n` bytes into the [`spare`](Self::spare) room
    /// (0: it is at its end).
    pub(crate) fn filled(&mut self, n: usize) {
        self.note_read(n, self.offered);
        if n > 0 {
            self.buf.commit(n);
        }
    }

    /// What a read of `n` bytes, offered `offered`, says of the input's
    /// end.
    fn note_read(&mut self, n: usize, offered: usize) {
        if n == 0 {
            self.flow = Flow::Ended;
        } else if self.flow != Flow::Ended {
            self.flow = if n < offered { Flow::Short } else { Flow::Open };
        }
    }
}

/// With units starting at `from` in a buffer of `len` bytes, laid out as
/// `grid` says, the end of the last whole unit that fits; `None` without a
/// grid or if not even the unit in hand fits.
fn aligned_limit(grid: Option<(usize, usize)>, len: usize, from: usize) -> Option<usize> {
    let (unit, rest) = grid?;
    let first = from.checked_add(unit)?;
    (first <= len).then(|| first + (len - first) / rest * rest)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const FIXED: Shape = Shape {
        grid: Some((10, 10)),
        framed: false,
        exact: false,
    };

    /// Reads `bytes` into the room, as an inner reader would.
    fn read(r: &mut ReadAhead, shape: &Shape, bytes: &[u8]) -> usize {
        r.make_room(shape).unwrap();
        let room = r.spare();
        let n = room.len().min(bytes.len());
        room[..n].copy_from_slice(&bytes[..n]);
        r.filled(n);
        n
    }

    #[test]
    fn a_read_beside_a_run_follows_what_the_run_left() {
        // Held: 30 bytes; a run used the first 20 and left 10, which
        // `behind` holds before the 5 bytes read beside, into 40 of room.
        let held: Vec<u8> = (0..30).collect();
        let behind_of = || {
            let mut b = Window::public();
            b.grow(50).unwrap();
            b.extend(&held[20..]);
            b.extend(&[99; 5]);
            b
        };
        let fill = || {
            let mut r = ReadAhead::new(8);
            r.size_for_header(40).unwrap();
            let mut at = 0;
            while at < held.len() {
                at += read(
                    &mut r,
                    &Shape {
                        grid: None,
                        ..FIXED
                    },
                    &held[at..],
                );
            }
            r
        };
        let r = fill();
        assert_eq!(r.buf.len(), 48, "the header's 40 and the capacity");
        assert_eq!(r.behind_end(10), Some(48), "twice the run, within the size");
        assert_eq!(r.behind_end(28), Some(36), "the capacity at least");
        assert_eq!(r.behind_end(41), None, "no room for a read of the capacity");
        let mut r = fill();
        r.take_behind(20, &mut behind_of(), 5, 40).unwrap();
        assert_eq!(r.data(), [&held[20..], &[99; 5]].concat(), "the whole run");
        assert!(r.looks_ended(), "a short read is a hint");
        // The run stopped after 12 bytes (a segment failed): what it did
        // not use stays, and what the read brought comes after it.
        let mut r = fill();
        r.take_behind(12, &mut behind_of(), 5, 5).unwrap();
        assert_eq!(r.data(), [&held[12..], &[99; 5]].concat(), "stopped short");
        assert!(!r.looks_ended());
        let mut r = fill();
        let mut nothing = behind_of();
        nothing.set(nothing.pos(), nothing.end() - 5);
        r.take_behind(20, &mut nothing, 0, 40).unwrap();
        assert!(r.at_end(), "an empty read ends the input");
    }

    #[test]
    fn the_size_reaches_a_batch_only_once_proven() {
        let mut r = ReadAhead::new(8);
        r.size_for_header(5).unwrap();
        assert_eq!(r.spare().len(), 0, "no room before one is made");
        assert_eq!(
            read(
                &mut r,
                &Shape {
                    grid: None,
                    ..FIXED
                },
                &[1; 100]
            ),
            13
        );
        r.consume(5);
        r.size_for_unit(10);
        while read(&mut r, &FIXED, &[2; 100]) > 0 {
            if r.available() >= 18 {
                break;
            }
        }
        assert!(r.buf.len() <= 18, "one unit plus the capacity, not more");
        r.prove(|| Some(100));
        assert_eq!(r.target, 108);
        r.prove(|| Some(1000));
        assert_eq!(r.target, 108, "proven once");
    }

    #[test]
    fn reads_end_on_unit_boundaries_and_the_unit_in_hand_fits() {
        let mut r = ReadAhead::new(8);
        r.size_for_header(0).unwrap();
        r.size_for_unit(10);
        assert!(r.wants(10));
        read(&mut r, &FIXED, &[0; 3]);
        for _ in 0..10 {
            r.make_room(&FIXED).unwrap();
            let (pos, end) = (r.buf.pos(), r.buf.end());
            assert!(pos + r.need <= r.buf.len(), "the unit in hand fits");
            let limit = end + r.spare().len();
            assert!(
                limit == r.buf.len() || (limit - pos).is_multiple_of(10),
                "aligned"
            );
            let n = r.spare().len();
            r.filled(n);
            r.consume(r.available() / 10 * 10);
        }
    }

    #[test]
    fn only_an_empty_read_ends_the_input() {
        let mut r = ReadAhead::new(4);
        r.size_for_header(4).unwrap();
        read(&mut r, &FIXED, &[0; 1]);
        assert!(r.looks_ended() && !r.at_end(), "a short read is a hint");
        read(&mut r, &FIXED, &[]);
        assert!(r.at_end() && !r.wants(100));
        r.filled(1);
        assert!(r.at_end(), "an ended input stays ended until restarted");
        r.restart();
        assert!(!r.looks_ended() && r.is_empty());
    }
}
