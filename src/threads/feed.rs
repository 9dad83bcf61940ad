//! Fed runs: a run whose sealed input is read while it opens. The caller's
//! thread reads the segments one after the other into their places in
//! the read-ahead and hands each over as soon as it is whole (and known
//! not to end the input); pool threads open the segments handed over
//! meanwhile, and the caller joins them once its reads are done. The
//! read of a run overlaps the opening of the same run, each segment's
//! bytes are opened just after they arrived, and no second buffer holds
//! a run read ahead.
//!
//! The rules it owns:
//! - **A segment is opened only once more input follows it**, the run's
//!   last once it is whole: all are opened as non-final, and one that
//!   fails (the final segment, which the input may end with after the
//!   run's last) is left to the one-thread path, which tries both flags.
//! - **Reads no smaller than they must be**: into the read-ahead, each
//!   read is offered at least the configured read-ahead, ending on a
//!   segment boundary (a reader that fills what it is offered is asked as
//!   often as without threads); in place, one segment's sealed bytes at
//!   most, since the next segment's go elsewhere.
//! - **The input's end is the reader's word**: a read of 0 bytes (or one
//!   that failed, whose error the front keeps) ends the feeding; whatever
//!   arrived stays in the read-ahead, in order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;

use super::pool::Workers;
use super::run::{Claims, Piece};
use super::wait::{Wait, Waits};
use crate::Error;

/// Which pieces of a fed run have their input: counted from the first,
/// and whether the feeding is over (no more will); the threads asleep
/// waiting for either, woken by the caller when it says so.
pub(crate) struct Gate {
    ready: AtomicUsize,
    ended: AtomicBool,
    /// Plaintext bytes of a piece (the run's shares are cut by it before
    /// any piece has its place).
    pub(super) unit: usize,
    sleepers: Mutex<Vec<Thread>>,
    waits: Waits,
}

impl Gate {
    fn new(unit: usize, waits: Waits) -> Gate {
        Gate {
            ready: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
            unit,
            sleepers: Mutex::new(Vec::new()),
            waits,
        }
    }

    /// Waits until the first `upto` pieces have their input or the
    /// feeding is over; returns how many have it then. Spin-loop hints
    /// first, then yielding the core for a while (the next segment is
    /// usually a read away), then sleeping until the caller's next word
    /// wakes it (a slow inner reader holds no core here).
    pub(super) fn wait(&self, upto: usize) -> usize {
        let mut wait = Wait::new(&self.waits);
        // The end is read before the count: once it is seen, the count is
        // final.
        let done = || {
            let ended = self.ended.load(Ordering::Acquire);
            let ready = self.ready.load(Ordering::Acquire);
            (ready >= upto || ended).then_some(ready)
        };
        loop {
            if let Some(ready) = done() {
                return ready;
            }
            wait.pause_unless(|| {
                // Listed before the last look, so that a word said after
                // it wakes this thread; listed once, however often it naps.
                let me = std::thread::current();
                let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
                if !sleepers.iter().any(|t| t.id() == me.id()) {
                    sleepers.push(me);
                }
                drop(sleepers);
                done().is_none()
            });
        }
    }

    /// The first `n` pieces have their input.
    fn open(&self, n: usize) {
        self.ready.store(n, Ordering::Release);
        self.wake();
    }

    /// The feeding is over.
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        sleepers.drain(..).for_each(|t| t.unpark());
    }
}

/// Ends the feeding when dropped, also when the inner reader panicked:
/// the threads waiting at the gate then return, and the run's scope can
/// end (and pass the panic on).
struct Ending<'g>(&'g Gate);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// What the feeding of a run read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fed {
    /// Pieces handed over (each was opened; its outcome is in the piece).
    pub(crate) handed: usize,
    /// Bytes read into the run's region, after what it held.
    pub(crate) read: usize,
    /// The last read: bytes it brought and the room it was offered
    /// (`None`: no read was made, or the last one failed).
    pub(crate) last: Option<(usize, usize)>,
    /// Bytes that arrived past the pieces handed over (what was held
    /// included).
    pub(crate) left: usize,
}

/// Where a fed run's sealed bytes go.
pub(crate) enum Places<'a, 'h> {
    /// One after the other in `region` (the read-ahead), which holds the
    /// first `held` already: each piece's input is its sealed bytes.
    Apart { region: &'a mut [u8], held: usize },
    /// Where they open: each piece's ciphertext where its plaintext goes,
    /// one after the other in `out` (which has room for one more tag after
    /// the last), and its tag in its `tag_len` bytes of `tags` (the
    /// piece's output and input once handed over); `held`, the bytes read
    /// before, come first.
    InPlace {
        out: &'a mut [u8],
        tags: &'a mut [u8],
        held: &'h [u8],
    },
}

impl Workers {
    /// Opens `pieces` (each with its segment index, no input yet; apart,
    /// its plaintext place too) as their sealed bytes arrive, laid out as
    /// `plan` says and placed as `places` says; `read` is the inner
    /// reader's read (`None`: it failed or was interrupted, and the front
    /// keeps what it has to say; `Some(0)`: the input is at its end).
    ///
    /// # Errors
    ///
    /// [`Error::WorkerPanicked`] when a job panicked.
    pub(crate) fn run_fed<'a>(
        &mut self,
        pieces: &mut [Piece<'a>],
        plan: &Plan<'_>,
        places: Places<'a, '_>,
        read: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
        job: impl Fn(&mut Piece<'_>) + Sync,
    ) -> Result<Fed, Error> {
        let unit = plan.plain.first().copied().unwrap_or(1);
        let gate = Gate::new(unit, self.waits.clone());
        let mut fed = Fed::default();
        let r = self.run_with(pieces, job, Some(gate), |claims, hand_over| {
            let Some(gate) = &claims.gate else {
                unreachable!("a fed run has a gate")
            };
            let _ending = Ending(gate);
            let feeding = Feeding {
                claims,
                gate,
                hand_over,
            };
            fed = match places {
                Places::Apart { region, held } => plan.feed(feeding, region, held, read),
                Places::InPlace { out, tags, held } => {
                    plan.feed_in_place(feeding, out, tags, held, read)
                }
            };
        });
        r.map(|()| fed)
    }
}

/// A fed run's segments: the plaintext length of each and the tag's.
pub(crate) struct Plan<'p> {
    pub(crate) plain: &'p [usize],
    pub(crate) tag: usize,
    /// Bytes each read is offered at least (where segments allow).
    pub(crate) capacity: usize,
}

impl Plan<'_> {
    /// The sealed length of piece `k`.
    fn sealed(&self, k: usize) -> usize {
        self.plain[k] + self.tag
    }

    /// Whether piece `k`, `arrived` bytes of it and what follows in, may
    /// be handed over: whole and followed by more input, or whole, the
    /// run's last.
    fn may_hand(&self, k: usize, arrived: usize) -> bool {
        if k + 1 == self.plain.len() {
            arrived == self.sealed(k)
        } else {
            arrived > self.sealed(k)
        }
    }

    /// Reads the region full (or until the input stops), each piece's
    /// sealed bytes one after the other, handing each piece its input
    /// once it may be opened.
    fn feed<'a>(
        &self,
        mut feeding: Feeding<'_, '_, '_, 'a>,
        region: &'a mut [u8],
        held: usize,
        read: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> Fed {
        let total: usize = (0..self.plain.len()).map(|k| self.sealed(k)).sum();
        let mut fed = Fed::default();
        // `rest` is the region not yet handed over: its first `fed.left`
        // bytes have arrived.
        let mut rest = &mut region[..total];
        fed.left = held.min(total);
        loop {
            while fed.handed < self.plain.len() && self.may_hand(fed.handed, fed.left) {
                let len = self.sealed(fed.handed);
                let (input, after) = std::mem::take(&mut rest).split_at_mut(len);
                feeding.hand(fed.handed, input, None);
                (rest, fed.left) = (after, fed.left - len);
                fed.handed += 1;
            }
            if fed.left == rest.len() {
                return fed;
            }
            // At least `capacity` bytes, ending where a segment does; a
            // rest under `capacity` after them goes with them, so that the
            // run asks for less only where a short read left less.
            let mut limit = 0;
            for k in fed.handed..self.plain.len() {
                limit += self.sealed(k);
                if limit >= fed.left + self.capacity {
                    break;
                }
            }
            if rest.len() - limit < self.capacity {
                limit = rest.len();
            }
            match read_once(read, &mut rest[fed.left..limit], &mut fed) {
                Some(n) => fed.left += n,
                None => return fed,
            }
        }
    }

    /// Reads each piece's ciphertext into `out`, where its plaintext goes,
    /// and its tag into its place in `tags`, handing each piece its place
    /// and tag once it may be opened. A segment's sealed bytes are read at
    /// once: its tag lands where the next segment's ciphertext goes (after
    /// the last, in the room `out` has for it), and is copied to `tags`
    /// before anything else lands there. `held` comes first, as if read.
    fn feed_in_place<'a>(
        &self,
        mut feeding: Feeding<'_, '_, '_, 'a>,
        out: &'a mut [u8],
        tags: &'a mut [u8],
        mut held: &[u8],
        read: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> Fed {
        let tag = self.tag;
        let mut fed = Fed::default();
        // From the first piece not handed over: its place and the rest of
        // `out`, its tag's place and the rest of `tags`; `fed.left` bytes
        // of it (and at most the first of the next piece) have arrived.
        let (mut rest, mut tags_rest) = (out, tags);
        loop {
            while fed.handed < self.plain.len() && self.may_hand(fed.handed, fed.left) {
                let k = fed.handed;
                let (place, after) = std::mem::take(&mut rest).split_at_mut(self.plain[k]);
                let (t, tags_after) = std::mem::take(&mut tags_rest).split_at_mut(tag);
                feeding.hand(k, t, Some(place));
                (rest, tags_rest) = (after, tags_after);
                fed.left -= self.sealed(k);
                fed.handed += 1;
            }
            let k = fed.handed;
            if k == self.plain.len() {
                return fed;
            }
            // The piece the next byte belongs to (this one, or the first
            // byte of the next), where its place starts in `rest`, and
            // how far into its sealed bytes the byte is.
            let (base, j, off) = if fed.left < self.sealed(k) {
                (0, k, fed.left)
            } else if k + 1 < self.plain.len() {
                (self.plain[k], k + 1, fed.left - self.sealed(k))
            } else {
                return fed;
            };
            let plain = self.plain[j];
            let chunk = (j - k) * tag;
            // The tag lands after the ciphertext (the buffer has room for
            // the last one's: see `Places::InPlace`).
            let end = base + plain + tag;
            let room = &mut rest[base + off..end];
            let n = if held.is_empty() {
                match read_once(read, room, &mut fed) {
                    Some(n) => n,
                    None => return fed,
                }
            } else {
                let n = held.len().min(room.len());
                room[..n].copy_from_slice(&held[..n]);
                held = &held[n..];
                n
            };
            if off + n > plain {
                // Tag bytes that landed where the next ciphertext goes.
                let from = off.max(plain);
                let src = &rest[base + from..base + off + n];
                tags_rest[chunk + from - plain..chunk + off + n - plain].copy_from_slice(src);
            }
            fed.left += n;
        }
    }
}

/// One inner read into `room` for a fed run: the bytes it brought (at most
/// the room), counted in `fed`; `None` when the feeding stops (the input
/// is at its end, or the read failed).
fn read_once(
    read: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    room: &mut [u8],
    fed: &mut Fed,
) -> Option<usize> {
    let offered = room.len();
    match read(room) {
        Some(n) if n > 0 => {
            // A reader that claims more than it was offered is not
            // believed past the room.
            let n = n.min(offered);
            fed.read += n;
            fed.last = Some((n, offered));
            Some(n)
        }
        Some(_) => {
            fed.last = Some((0, offered));
            None
        }
        None => {
            fed.last = None;
            None
        }
    }
}

/// The caller's side of a fed run while it feeds: the claims whose
/// pieces it hands their input, the gate it says so through, and the
/// hand-over of shares to pool threads found awake (a run that started
/// with none looks again as pieces are handed).
struct Feeding<'f, 'c, 's, 'a> {
    claims: &'c Claims<'s, 'a>,
    gate: &'c Gate,
    hand_over: &'f mut dyn FnMut(),
}

impl<'a> Feeding<'_, '_, '_, 'a> {
    /// Gives piece `k` its input (and, opened in place, its place as its
    /// output), then says so through the gate: no thread holds its share
    /// before.
    fn hand(&mut self, k: usize, input: &'a [u8], place: Option<&'a mut [u8]>) {
        let claims = self.claims;
        let mut share = claims.shares[k / claims.per]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let piece = &mut share[k % claims.per];
        piece.input = input;
        if let Some(place) = place {
            piece.output = place;
        }
        drop(share);
        self.gate.open(k + 1);
        (self.hand_over)();
    }
}
