//! The writer's plaintext buffer ([`Held`]): bytes written and not sealed
//! yet.

use crate::Error;
use crate::core::window::Window;
use crate::profile;

/// The smallest plaintext buffer a writer allocates (unless its segments
/// are smaller): streams with the default capacity allocate it once.
const PLAIN_FLOOR: usize = profile::DEFAULT_CAPACITY;

/// Plaintext written and not sealed yet, at the front of its buffer: at
/// most a batch (one segment without threads), which the sealer seals
/// only once one more byte has arrived (until then it may be the final
/// one). The buffer grows with the data (from [`PLAIN_FLOOR`] bytes,
/// doubling, up to the batch), moving to a fresh allocation and wiping
/// the old one each time, so wiping it on drop wipes every copy.
pub(super) struct Held {
    plain: Window,
}

impl Held {
    /// Empty, with nothing allocated.
    pub(super) fn new() -> Held {
        Held {
            plain: Window::secret(),
        }
    }

    /// Bytes held.
    pub(super) fn available(&self) -> usize {
        self.plain.available()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.plain.is_empty()
    }

    /// The buffer, for a ring to trade with.
    pub(super) fn window(&mut self) -> &mut Window {
        &mut self.plain
    }

    /// The bytes held.
    pub(super) fn data(&self) -> &[u8] {
        self.plain.data()
    }

    /// Copies what fits of `rest` until `upto` bytes are held, growing
    /// the buffer at most to `max`; returns how many it copied.
    pub(super) fn take(&mut self, rest: &[u8], upto: usize, max: usize) -> Result<usize, Error> {
        let n = rest.len().min(upto - self.available());
        self.append(&rest[..n], max)?;
        Ok(n)
    }

    /// Appends `bytes`, growing the buffer (at most to `max` unless more
    /// is needed): what a write copies, on the caller's thread or as a
    /// pipelined run's last job.
    pub(super) fn append(&mut self, bytes: &[u8], max: usize) -> Result<(), Error> {
        let need = self.available() + bytes.len();
        self.plain.grow_for(need, PLAIN_FLOOR, max)?;
        self.plain.extend(bytes);
        Ok(())
    }

    /// Forgets every byte held (they were sealed).
    pub(super) fn clear(&mut self) {
        self.plain.clear();
    }

    /// Forgets the first `n` bytes held (they were sealed): the rest moves
    /// to the front.
    pub(super) fn drop_front(&mut self, n: usize) {
        self.plain.consume(n);
        self.plain.compact();
    }
}

#[cfg(test)]
mod tests {
    use super::{Held, PLAIN_FLOOR};

    #[test]
    fn the_buffer_grows_from_the_floor_by_doubling_up_to_the_batch() {
        let mut held = Held::new();
        assert_eq!(held.plain.len(), 0, "nothing allocated before a write");
        let batch = 5 * PLAIN_FLOOR;
        assert_eq!(held.take(&[1; 10], batch, batch).ok(), Some(10));
        assert_eq!(held.plain.len(), PLAIN_FLOOR);
        let more = vec![2; PLAIN_FLOOR];
        assert_eq!(held.take(&more, batch, batch).ok(), Some(PLAIN_FLOOR));
        assert_eq!(held.plain.len(), 2 * PLAIN_FLOOR);
        let rest = vec![3; 4 * PLAIN_FLOOR];
        assert_eq!(
            held.take(&rest, batch, batch).ok(),
            Some(batch - PLAIN_FLOOR - 10)
        );
        assert_eq!((held.available(), held.plain.len()), (batch, batch));
    }

    #[test]
    fn a_take_stops_at_its_limit_and_what_is_left_moves_to_the_front() {
        let mut held = Held::new();
        assert_eq!(held.take(b"abcdefgh", 5, 64).ok(), Some(5));
        assert_eq!(
            held.take(b"xyz", 5, 64).ok(),
            Some(0),
            "held up to the limit"
        );
        held.drop_front(3);
        assert_eq!(held.data(), b"de");
        assert_eq!(held.take(b"fg", 64, 64).ok(), Some(2));
        assert_eq!(held.data(), b"defg");
        held.clear();
        assert!(held.is_empty());
    }
}
