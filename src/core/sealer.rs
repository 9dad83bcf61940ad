//! The writer's state machine, over byte slices: plaintext in, sealed bytes
//! out. It never calls I/O; a front moves [`Sealer::output`] to its inner
//! writer and reports how much went with [`Sealer::consume_output`].
//!
//! The rules it owns:
//! - **Hold-back.** A segment is sealed once it is full *and* one more byte
//!   has arrived: until then it may be the final one, whose nonce differs.
//!   Where the final segment is told by its length ([`Ends::Short`]), a
//!   full segment is never the final one: it is sealed as soon as it is
//!   full, and `finish` seals a shorter (possibly empty) one after it.
//! - **One seal per step.** [`write`](Sealer::write) takes bytes until it has
//!   sealed one segment (or taken everything); its output must be drained
//!   before the next step, so sealed bytes are never overwritten, and a
//!   segment is sealed exactly once whatever the inner writer does.
//! - **Zero copy.** A write of more than a segment (with threads, a
//!   batch) at an empty buffer is sealed straight from the caller's slice.
//! - **A non-final segment is never left without its successor.** When the
//!   output of a non-final seal cannot be drained, the front hands the
//!   following bytes to [`hold`](Sealer::hold), so that a `finish` right
//!   after still has a final segment to seal.
//! - **Explicit finish, sticky errors.** Only [`finish`](Sealer::finish)
//!   seals the final segment; a fatal error is returned by every later call.
//! - **Threads seal units on a ring.** With `threads(n)`, n > 1, the
//!   buffer holds a unit of segments (about 64 KiB,
//!   [`threads::unit_segments`]) instead of one, and the hold-back
//!   applies to the unit: once full and one more byte has arrived (at
//!   once where a full segment is never final), it is posted to the
//!   writer's ring (`Ring`), which seals it on the process's pool and
//!   gives it back, in order, as the output of a later step; the bytes
//!   are those of one thread. The ring holds about 2·n units: a post to a
//!   full ring first delivers its oldest unit.
//!
//! Its state is in parts, each keeping its own rules:
//!
//! | part | owns |
//! |---|---|
//! | `Sealer` (here) | the stage, the hold-back step, flush and finish, the sticky error |
//! | `Held` (`sealer_held.rs`) | the plaintext not sealed yet: how its buffer grows, fills and empties |
//! | `Open` (`sealer_seal.rs`) | the key, the segment sizes, the header until it goes out, the next index: each index sealed once, the header once |
//! | `Counts` (`sealer_probe.rs`) | what the tests count and inject; nothing outside the tests |

use crate::core::layout::Ends;
use crate::core::window::Window;
use crate::profile::{self, Profile, Stream};
use crate::threads::{self, Ring, Work, Workers};
use crate::{Error, Provider};

#[path = "sealer_held.rs"]
mod held;
#[path = "sealer_probe.rs"]
mod probe;
#[path = "sealer_seal.rs"]
mod seal;

use held::Held;
use seal::Open;

pub(crate) use probe::Counts;

/// Where the writer is in the life of its stream.
enum Stage {
    /// Nothing written yet: the header (and its random salt) is made on the
    /// first write or on finish, so that constructors do no I/O and cannot fail.
    Start { key: Profile, aad: Vec<u8> },
    /// Header made; segments are being sealed.
    Open(Open),
    /// The final segment is sealed (its bytes may still be in the output);
    /// the derived key is gone.
    Sealed,
    /// A fatal error (bad configuration, no randomness): every later call
    /// returns it.
    Failed(Error),
}

/// How far into a stream (plaintext bytes sealed) a writer with threads
/// seals alone before its workers are made: a writer's threads cost it
/// less than a reader's (no read-ahead to grow), and sealed at two
/// threads from its first byte, a 1 MiB stream of 1 KiB writes took up
/// to 1.4 times as long as on one thread, a 256 KiB one up to 3 times.
pub(crate) const WRITER_ALONE: u64 = 1 << 20;

/// The I/O-free core of a writer.
pub(crate) struct Sealer {
    stage: Stage,
    /// Plaintext written and not sealed yet.
    plain: Held,
    /// Sealed bytes (the header and/or one segment) not yet accepted by the
    /// inner writer. It grows to the largest unit sealed so far and is
    /// never cleared, so sealing does not first fill it with zeros.
    out: Window,
    config: Config,
    /// The ring its units are sealed on (`threads(n)`, n > 1); made once
    /// the stream is `alone` bytes in.
    ring: Option<Ring>,
    /// Plaintext bytes sealed so far (the ring is made once they
    /// reach the configured threshold).
    sealed: u64,
    /// What the tests count, and the failures they inject (zero-sized
    /// outside them).
    pub(crate) counts: Counts,
}

/// What the builder chose: fixed for the life of the stream.
#[derive(Clone, Copy)]
struct Config {
    /// Plaintext bytes per segment.
    capacity: usize,
    provider: Provider,
    /// The framed variant: records, and `flush` seals what is buffered.
    framed: bool,
    /// Threads, the caller's included.
    threads: usize,
    /// How far into the stream (plaintext bytes) the caller seals alone:
    /// a short stream does not pay for the pool.
    alone: u64,
}

impl Sealer {
    /// A sealer for `key`'s profile; `capacity` `None` takes the profile's
    /// default. Allocates nothing and cannot fail: the first step does.
    pub(crate) fn new(
        key: Profile,
        aad: Vec<u8>,
        capacity: Option<usize>,
        provider: Provider,
        framed: bool,
        threads: usize,
    ) -> Sealer {
        let capacity = capacity.unwrap_or_else(|| key.default_capacity());
        // A capacity the profile refuses fails every call, the first one
        // included (a `flush` before any write too).
        let checked = key.check_capacity(capacity);
        let capacity = key.segment_capacity(capacity);
        let stage = match checked {
            Ok(()) if threads == 0 => Stage::Failed(Error::ZeroThreads),
            Ok(()) => Stage::Start { key, aad },
            Err(e) => Stage::Failed(e),
        };
        Sealer {
            stage,
            plain: Held::new(),
            out: Window::public(),
            config: Config {
                capacity,
                provider,
                framed,
                threads,
                alone: WRITER_ALONE,
            },
            ring: None,
            sealed: 0,
            counts: Counts::default(),
        }
    }

    /// With threads, how far into the stream (plaintext bytes) the caller
    /// seals alone before the workers are made (default
    /// [`WRITER_ALONE`]).
    pub(crate) fn with_threads_after(mut self, bytes: u64) -> Sealer {
        self.config.alone = bytes;
        self
    }

    /// Whether the ring is made (tests: a short stream starts none).
    #[cfg(test)]
    pub(crate) fn threaded(&self) -> bool {
        self.ring.is_some()
    }

    /// Units the caller took over from late pool threads (tests).
    #[cfg(test)]
    pub(crate) fn taken_over(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.taken_over)
    }

    /// Plaintext bytes per segment.
    pub(crate) fn capacity(&self) -> usize {
        self.config.capacity
    }

    /// Which library seals the segments.
    pub(crate) fn provider(&self) -> Provider {
        self.config.provider
    }

    /// The sticky error, if the stream has failed.
    pub(crate) fn error(&self) -> Option<&Error> {
        match &self.stage {
            Stage::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the final segment has been sealed.
    pub(crate) fn is_sealed(&self) -> bool {
        matches!(self.stage, Stage::Sealed)
    }

    /// A short name of the stage (`Debug`).
    pub(crate) fn stage_name(&self) -> &'static str {
        match &self.stage {
            Stage::Start { .. } => "start",
            Stage::Open(_) => "open",
            Stage::Sealed => "sealed",
            Stage::Failed(_) => "failed",
        }
    }

    /// Plaintext bytes buffered, not sealed yet.
    pub(crate) fn buffered(&self) -> usize {
        self.plain.available()
    }

    /// Sealed bytes the inner writer has yet to accept.
    pub(crate) fn output(&self) -> &[u8] {
        self.out.data()
    }

    /// The inner writer accepted `n` bytes of [`output`](Self::output).
    pub(crate) fn consume_output(&mut self, n: usize) {
        self.out.consume(n);
    }

    /// Makes the header on first use; returns the sticky error if any.
    pub(crate) fn start(&mut self) -> Result<(), Error> {
        match &self.stage {
            Stage::Failed(e) => return Err(e.clone()),
            Stage::Start { .. } => {}
            Stage::Open(_) | Stage::Sealed => return Ok(()),
        }
        let Stage::Start { key, aad } = std::mem::replace(&mut self.stage, Stage::Sealed) else {
            unreachable!("checked above")
        };
        // Nothing is allocated for the segments yet: the buffers grow with
        // the data (a Tink key may ask for 2 GiB segments).
        let begun = profile::begin_write(
            &key,
            &aad,
            self.config.capacity,
            self.config.provider,
            self.config.framed,
        );
        match begun {
            Ok((header, Stream { suite, layout })) => {
                self.stage = Stage::Open(Open::new(suite, layout, header));
                Ok(())
            }
            Err(e) => {
                self.stage = Stage::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Takes plaintext from `buf` until one segment has been sealed into
    /// the output or `buf` is used up; returns the bytes taken (possibly 0
    /// when a held-back segment was sealed). Call it with the output
    /// drained. A stream at the last segment its counter can number
    /// refuses what would follow it with [`Error::StreamTooLong`] (not
    /// sticky: it can still be finished).
    ///
    /// # Errors
    ///
    /// A sticky error; `StreamTooLong` as above. When some bytes were
    /// taken first, they are reported (`Ok`) and the error comes next time.
    pub(crate) fn write(&mut self, buf: &[u8]) -> Result<usize, Error> {
        self.start()?;
        debug_assert!(self.out.is_empty(), "output drained before sealing");
        self.workers_due();
        self.steps(buf)
    }

    /// Makes the ring once the stream is far enough in for it to pay, at
    /// a segment's start (the buffer empty: it holds a unit only from then
    /// on).
    fn workers_due(&mut self) {
        if let Stage::Open(open) = &mut self.stage
            && self.config.threads > 1
            && self.ring.is_none()
            && self.plain.is_empty()
            && self.sealed >= self.config.alone
        {
            let workers = Workers::new(self.config.threads);
            let (suite, layout) = (open.share_suite(), *open.layout());
            let work: Box<Work> = Box::new(move |first, head, plain, out| {
                seal::seal_segments(&suite, &layout, first, false, head, plain, out).map(|_| ())
            });
            self.ring = Some(Ring::new(workers, work));
        }
    }

    /// [`write`](Self::write)'s steps, once it has started.
    fn steps(&mut self, buf: &[u8]) -> Result<usize, Error> {
        let mut taken = 0;
        // Without a hold-back, a batch the last copy filled is sealed now.
        while taken < buf.len() || self.full_due() {
            match self.step(&buf[taken..]) {
                Ok(Step::Copied(n)) => taken += n,
                Ok(Step::Sealed(n)) => return Ok(taken + n),
                // Fatal and sticky (or `StreamTooLong`): the next call
                // reports it if this one already took bytes.
                Err(_) if taken > 0 => return Ok(taken),
                Err(e) => return Err(e),
            }
        }
        Ok(taken)
    }

    /// One move of [`write`](Self::write) with `rest`: the hold-back.
    /// A full batch held back is sealed (with threads, posted to the
    /// ring) now that a byte follows it; without threads, at an empty
    /// buffer, a whole segment is sealed straight from `rest` (with a byte
    /// after it); otherwise `rest` is copied into the buffer.
    fn step(&mut self, rest: &[u8]) -> Result<Step, Error> {
        let Stage::Open(open) = &self.stage else {
            unreachable!("started and not sealed")
        };
        let (count, batch) = self.batch(open);
        let held = self.plain.available() == batch;
        let hold_back = open.layout().ends.hold_back();
        // At the counter's last index the segment can only be the final
        // one: it is buffered for `finish`, never sealed from the slice
        // (which would leave `finish` an empty final segment after full
        // ones, a stream the reader refuses); once full, the data that
        // would follow it is refused.
        let last_index = open.at_last_index();
        if held && last_index {
            return Err(Error::StreamTooLong);
        }
        if held && self.ring.is_some() {
            return self.post(count);
        }
        if self.ring.as_ref().is_some_and(Ring::front_done) {
            // Sealed bytes go out as soon as they are ready (the buffer
            // still has room for the bytes that follow them).
            return self.deliver_held().map(|_| Step::Sealed(0));
        }
        if held {
            // More data follows the batch held back, so it is not final.
            let r = self.seal_run(None, false);
            self.plain.clear();
            return r.map(|()| Step::Sealed(0));
        }
        // Zero-copy: one thread seals a whole segment (with a byte after
        // it) straight from the caller's slice; the ring's units are its
        // own, copied.
        if self.ring.is_none()
            && self.plain.is_empty()
            && rest.len() >= batch + hold_back
            && !last_index
        {
            self.seal_run(Some(&rest[..batch]), false)?;
            return Ok(Step::Sealed(batch));
        }
        let mut upto = batch;
        if last_index && hold_back == 0 {
            // A full segment at the last index would need a final one
            // after it, which the counter cannot number.
            upto = upto.min(batch - 1);
            if self.plain.available() == upto {
                return Err(Error::StreamTooLong);
            }
        }
        self.copy_in(rest, upto, batch).map(Step::Copied)
    }

    /// Whether the buffer holds a full batch that is sealed without
    /// waiting for a byte after it ([`Ends::Short`]).
    fn full_due(&self) -> bool {
        let Stage::Open(open) = &self.stage else {
            return false;
        };
        open.layout().ends == Ends::Short
            && !self.plain.is_empty()
            && self.plain.available() == self.batch(open).1
    }

    /// Posts the full unit buffered (`count` segments, not final: a byte
    /// follows it, or a full segment is never final here) to the ring,
    /// delivering the ring's oldest unit first when it is full, or after
    /// when that one is due ([`Ring::front_due`]): the step's output.
    fn post(&mut self, count: u64) -> Result<Step, Error> {
        let Sealer {
            stage: Stage::Open(open),
            ring: Some(ring),
            plain,
            out,
            ..
        } = self
        else {
            unreachable!("posting on an open stream with a ring")
        };
        let full = ring.is_full();
        if full {
            if let Err(e) = Self::deliver(ring, open, out) {
                self.stage = Stage::Failed(e.clone());
                return Err(e);
            }
            if ring.is_full() {
                // The unit delivered was taken over from a late pool
                // thread, which still holds its slot: the unit buffered
                // waits for the next step, so the ring holds no more.
                return Ok(Step::Sealed(0));
            }
        }
        let len = plain.available() as u64;
        ring.post(plain.window(), open.next());
        open.advance(count);
        self.sealed = self.sealed.saturating_add(len);
        self.counts
            .sealed
            .add(usize::try_from(count).unwrap_or(usize::MAX));
        self.counts.posted.add(1);
        if full {
            return Ok(Step::Sealed(0));
        }
        if ring.front_due() {
            if let Err(e) = Self::deliver(ring, open, out) {
                self.stage = Stage::Failed(e.clone());
                return Err(e);
            }
            return Ok(Step::Sealed(0));
        }
        Ok(Step::Copied(0))
    }

    /// Delivers the ring's oldest unit into the drained output, behind
    /// the header if it has not gone out; `false` when the ring is empty.
    fn deliver(ring: &mut Ring, open: &mut Open, out: &mut Window) -> Result<bool, Error> {
        debug_assert!(out.is_empty(), "output drained before delivering");
        if ring.len() == 0 {
            return Ok(false);
        }
        let head = open.take_header();
        ring.deliver(out, head).transpose().map(|d| d.is_some())
    }

    /// Delivers the ring's oldest unit, if the ring holds any: the step
    /// of a `flush` or `finish` before it seals what is buffered.
    fn deliver_held(&mut self) -> Result<bool, Error> {
        let Sealer {
            stage: Stage::Open(open),
            ring: Some(ring),
            out,
            ..
        } = self
        else {
            return Ok(false);
        };
        Self::deliver(ring, open, out).inspect_err(|e| self.stage = Stage::Failed(e.clone()))
    }

    /// After a segment sealed by [`write`](Self::write) could not be
    /// drained: buffers the bytes that follow it (the segment is non-final,
    /// so they exist and must be taken now, or a `finish` right after would
    /// have nothing left to seal as the final segment). Returns how many
    /// were taken, more than 0 when `buf` is not empty.
    pub(crate) fn hold(&mut self, buf: &[u8]) -> usize {
        let Stage::Open(open) = &self.stage else {
            return 0;
        };
        // Empty, or (a pipeline stopped before it sealed every buffered
        // share) holding the segments that follow the one sealed.
        let (_, batch) = self.batch(open);
        // An allocation failure is sticky: the stream cannot be finished.
        self.copy_in(buf, batch, batch).unwrap_or(0)
    }

    /// The segments of the next batch, from segment `next` (1 without
    /// threads; never so many that the last could not have a successor),
    /// and their plaintext bytes: what the buffer holds before it seals.
    fn batch(&self, open: &Open) -> (u64, usize) {
        let (layout, next) = (open.layout(), open.next());
        if self.ring.is_none() {
            return (1, layout.plain(next));
        }
        let per = threads::unit_segments(layout.rest) as u64;
        let count = per.min(u64::from(u32::MAX).saturating_sub(next)).max(1);
        (count, layout.run_len(next, count, usize::MAX))
    }

    /// Seals `direct` (a whole segment from the caller's slice) or else the
    /// buffer, as the stream's next segments on the caller's thread, all
    /// non-final but the last when `last`.
    fn seal_run(&mut self, direct: Option<&[u8]>, last: bool) -> Result<(), Error> {
        let held = self.plain.available();
        self.seal_from(direct, held, last)
    }

    /// [`seal_run`](Self::seal_run) of `direct`, or else of the first
    /// `prefix` bytes of the buffer.
    fn seal_from(&mut self, direct: Option<&[u8]>, prefix: usize, last: bool) -> Result<(), Error> {
        let plain = direct.unwrap_or(&self.plain.data()[..prefix]);
        let Stage::Open(open) = &mut self.stage else {
            unreachable!("sealing only an open stream")
        };
        let len = plain.len() as u64;
        let r = open.seal(&mut self.out, plain, last);
        if let Err(e) = &r {
            self.stage = Stage::Failed(e.clone());
        }
        if let Ok(n) = r {
            self.sealed = self.sealed.saturating_add(len);
            self.counts
                .sealed
                .add(usize::try_from(n).unwrap_or(usize::MAX));
        }
        r.map(|_| ())
    }

    /// Copies what fits of `rest` into the plaintext buffer until it holds
    /// `upto` bytes, growing it (at most to `batch`); a failed allocation
    /// is fatal (sticky).
    fn copy_in(&mut self, rest: &[u8], upto: usize, batch: usize) -> Result<usize, Error> {
        let n = match self.plain.take(rest, upto, batch) {
            Ok(n) => n,
            Err(e) => {
                self.stage = Stage::Failed(e.clone());
                return Err(e);
            }
        };
        self.counts.copied.add(n);
        Ok(n)
    }

    /// Seals whatever is buffered (possibly nothing, for an empty stream)
    /// as the final segment. Call it with the output drained, until
    /// [`is_sealed`](Self::is_sealed) (the ring's units are delivered
    /// first, one a call; where a full segment is never final, a buffer
    /// of full segments takes two calls); once sealed, it does nothing
    /// more.
    ///
    /// # Errors
    ///
    /// A sticky error, or a sealing error (which becomes sticky).
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.start()?;
        if self.deliver_held()? {
            return Ok(());
        }
        if let Stage::Open(open) = &self.stage {
            debug_assert!(self.out.is_empty(), "output drained before sealing");
            let held = self.plain.available();
            let whole = open.layout().run_len(open.next(), u64::MAX, held);
            if open.layout().ends == Ends::Short && held > 0 && whole == held {
                // Full segments are never final here: they go first, and
                // the next call seals the empty final one.
                self.seal_run(None, false)?;
                self.plain.clear();
                return Ok(());
            }
            self.seal_run(None, true)?;
            self.plain.clear();
            self.stage = Stage::Sealed;
            // The derived key is gone; so is the ring.
            self.ring = None;
        }
        Ok(())
    }

    /// In the framed variant, seals whatever is buffered (nothing if the
    /// buffer is empty) as one non-final record, so that a `flush` can
    /// deliver it; in the fixed-size format (a segment may be short only
    /// if it is the final one), with threads, seals the whole segments of
    /// the batch begun but the last (which may yet be the final one): what
    /// one thread would have sealed by now, so a `flush` delivers what it
    /// delivers with one thread. Call it with the output drained, again
    /// after draining while it returns `true` (it delivered one of the
    /// ring's units first).
    ///
    /// # Errors
    ///
    /// A sticky error; a sealing error (sticky); [`Error::StreamTooLong`]
    /// when the counter has no number left for a non-final record.
    pub(crate) fn flush_record(&mut self) -> Result<bool, Error> {
        if self.deliver_held()? {
            return Ok(true);
        }
        self.flush_buffered().map(|()| false)
    }

    /// [`flush_record`](Self::flush_record) once the ring is empty.
    fn flush_buffered(&mut self) -> Result<(), Error> {
        if !self.config.framed && (self.ring.is_some() || self.full_due()) {
            return self.flush_batch();
        }
        if !self.config.framed || self.plain.is_empty() {
            return match &self.stage {
                Stage::Failed(e) => Err(e.clone()),
                _ => Ok(()),
            };
        }
        self.start()?;
        let Stage::Open(open) = &self.stage else {
            return Ok(());
        };
        if open.at_last_index() {
            return Err(Error::StreamTooLong);
        }
        debug_assert!(self.out.is_empty(), "output drained before sealing");
        self.seal_run(None, false)?;
        self.plain.clear();
        Ok(())
    }

    /// The fixed-size half of [`flush_record`](Self::flush_record): the
    /// whole segments buffered, all but one byte, are sealed; the rest
    /// moves to the front of the buffer.
    fn flush_batch(&mut self) -> Result<(), Error> {
        let Stage::Open(open) = &self.stage else {
            return self.error().map_or(Ok(()), |e| Err(e.clone()));
        };
        let held = self.plain.available();
        let (count, _) = self.batch(open);
        let hold_back = open.layout().ends.hold_back();
        let prefix = open
            .layout()
            .run_len(open.next(), count, held.saturating_sub(hold_back));
        if prefix == 0 {
            return Ok(());
        }
        debug_assert!(self.out.is_empty(), "output drained before sealing");
        self.seal_from(None, prefix, false)?;
        self.plain.drop_front(prefix);
        Ok(())
    }
}

/// What a [`Sealer::step`] did with the bytes it was given.
enum Step {
    /// Copied this many into the buffer.
    Copied(usize),
    /// Sealed a batch into the output, this many of them from the slice.
    Sealed(usize),
}
