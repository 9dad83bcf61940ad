//! The writer's state machine, over byte slices: plaintext in, sealed bytes
//! out. It never calls I/O; a front moves [`Sealer::output`] to its inner
//! writer and reports how much went with [`Sealer::consume_output`].
//!
//! The rules it owns:
//! - **Hold-back.** A segment is sealed once it is full *and* one more byte
//!   has arrived: until then it may be the final one, whose nonce differs.
//! - **One seal per step.** [`write`](Sealer::write) takes bytes until it has
//!   sealed one segment (or taken everything); its output must be drained
//!   before the next step, so sealed bytes are never overwritten, and a
//!   segment is sealed exactly once whatever the inner writer does.
//! - **Zero copy.** A write of more than a segment (with threads, a batch) at an empty buffer is
//!   sealed straight from the caller's slice.
//! - **A non-final segment is never left without its successor.** When the
//!   output of a non-final seal cannot be drained, the front hands the
//!   following bytes to [`hold`](Sealer::hold), so that a `finish` right
//!   after still has a final segment to seal.
//! - **Explicit finish, sticky errors.** Only [`finish`](Sealer::finish)
//!   seals the final segment; a fatal error is returned by every later call.
//! - **Threads seal batches.** With `threads(n)`, n > 1, the buffer holds a
//!   batch of segments ([`threads::batch_segments`]) instead of one, and
//!   the hold-back applies to the batch: it is sealed, as one step, once
//!   full and one more byte has arrived, every segment from its own index
//!   on [`Workers`]; the bytes are those of one thread.
//! - **Threads pipeline large writes.** Given the front's inner writer as a
//!   [`Drain`], a write of whole segments (after the buffered ones) is one
//!   [`Workers::pipeline`]: the caller moves each sealed share out while
//!   the other threads seal the next ones, instead of a hand-over and a
//!   serial copy per batch. The first write is one too (the header goes
//!   out at the head of its first share). Still one step: what the inner
//!   writer did not take is the output, and the bytes after the last
//!   sealed segment (the segment the write ends in) are copied into the
//!   buffer by the run's last job, on a thread with time for it, or stay
//!   the caller's (or [`hold`](Sealer::hold)'s) when the run stopped
//!   first.

use crate::core::layout::{Layout, RECORD_HEADER_LEN, record_header};
use crate::core::pipe::{self, PipeInput, PipePlan};
use crate::core::suite::Suite;
use crate::core::window::Window;
use crate::profile::{self, Profile, Stream};
use crate::threads::{self, Piece, Workers};
use crate::{Error, Provider};

/// Where the writer is in the life of its stream.
enum Stage {
    /// Nothing written yet: the header (and its random salt) is made on the
    /// first write or on finish, so that constructors do no I/O and cannot fail.
    Start { key: Profile, aad: Vec<u8> },
    /// Header made; segments are being sealed. `header` is held until it can
    /// go out in one inner write with the first segment.
    Open {
        suite: Suite,
        layout: Layout,
        header: Option<Vec<u8>>,
        /// Index of the next segment to seal.
        next: u64,
    },
    /// The final segment is sealed (its bytes may still be in the output);
    /// the derived key is gone.
    Sealed,
    /// A fatal error (bad configuration, no randomness): every later call
    /// returns it.
    Failed(Error),
}

/// Where a pipelined write moves sealed bytes: the front's inner writer,
/// returning how many bytes it took (0 when it took none; the front keeps
/// the reason, an error or `WouldBlock` or `Pending`, and meets it again
/// when it drains the output left).
pub(crate) type Drain<'a> = &'a mut dyn FnMut(&[u8]) -> usize;

/// The smallest plaintext buffer a writer allocates (unless its segments
/// are smaller): streams with the default capacity allocate it once.
const PLAIN_FLOOR: usize = profile::DEFAULT_CAPACITY;

/// The I/O-free core of a writer.
pub(crate) struct Sealer {
    stage: Stage,
    /// Plaintext of the current segment. It grows with the data written
    /// (from [`PLAIN_FLOOR`] bytes, doubling, up to one segment), moving
    /// to a fresh allocation and wiping the old one each time, so wiping
    /// it on drop wipes every copy.
    plain: Window,
    /// Sealed bytes (the header and/or one segment) not yet accepted by the
    /// inner writer. It grows to the largest unit sealed so far and is
    /// never cleared, so sealing does not first fill it with zeros.
    out: Window,
    capacity: usize,
    provider: Provider,
    /// The framed variant: records, and `flush` seals what is buffered.
    framed: bool,
    /// Threads sealing batches (`threads(n)`, n > 1); made with the header.
    threads: usize,
    workers: Option<Workers>,
    /// What the tests count, and the failure they inject.
    #[cfg(test)]
    pub(crate) counts: Counts,
}

/// What a [`Sealer`] did, for the tests (zero-copy paths, runs on the
/// workers), and the failure they can inject.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Counts {
    /// Segments sealed so far.
    pub(crate) sealed: u64,
    /// Plaintext bytes copied into `plain`.
    pub(crate) copied: usize,
    /// Runs of segments sealed on the workers.
    pub(crate) runs: u64,
    /// Of those, the pipelined ones.
    pub(crate) pipelines: u64,
    /// Of those, the ones whose last job copied the write's tail into the
    /// buffer.
    pub(crate) tails: u64,
    /// The tail job's allocation fails (tests of the fallback).
    pub(crate) fail_tail_alloc: bool,
    /// The job of this unit of a pipelined run panics (tests of a failure
    /// partway through a run).
    pub(crate) fail_unit: Option<usize>,
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
        let stage = match key.check_capacity(capacity) {
            Ok(()) if threads == 0 => Stage::Failed(Error::InvalidParameters(THREADS_ZERO)),
            Ok(()) => Stage::Start { key, aad },
            Err(e) => Stage::Failed(e),
        };
        Sealer {
            stage,
            plain: Window::secret(),
            out: Window::public(),
            capacity,
            provider,
            framed,
            threads,
            workers: None,
            #[cfg(test)]
            counts: Counts::default(),
        }
    }

    /// Plaintext bytes per segment.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Which library seals the segments.
    pub(crate) fn provider(&self) -> Provider {
        self.provider
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
            Stage::Open { .. } => "open",
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
            Stage::Open { .. } | Stage::Sealed => return Ok(()),
        }
        let Stage::Start { key, aad } = std::mem::replace(&mut self.stage, Stage::Sealed) else {
            unreachable!("checked above")
        };
        // Nothing is allocated for the segments yet: the buffers grow with
        // the data (a Tink key may ask for 2 GiB segments).
        let begun = profile::begin_write(&key, &aad, self.capacity, self.provider, self.framed);
        match begun {
            Ok((header, Stream { suite, layout })) => {
                if self.threads > 1 {
                    self.workers = Some(Workers::new(self.threads));
                }
                self.stage = Stage::Open {
                    suite,
                    layout,
                    header: Some(header),
                    next: 0,
                };
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
    /// With threads and a `drain` (the front's inner writer), a write of
    /// whole segments is sealed and moved out in one pipeline
    /// ([`Workers::pipeline`]): the caller hands each share to `drain`
    /// while the other threads seal the next ones. When `drain` stops,
    /// what was sealed but not taken is the output, and the call returns
    /// the bytes sealed and those [`hold`](Self::hold) took after them
    /// (more than 0 unless the buffer is full).
    ///
    /// # Errors
    ///
    /// A sticky error; `StreamTooLong` as above. When some bytes were
    /// taken first, they are reported (`Ok`) and the error comes next time.
    pub(crate) fn write(
        &mut self,
        buf: &[u8],
        mut drain: Option<Drain<'_>>,
    ) -> Result<usize, Error> {
        self.start()?;
        debug_assert!(self.out.is_empty(), "output drained before sealing");
        let mut taken = 0;
        while taken < buf.len() {
            if let Some(drain) = drain.as_deref_mut() {
                match self.pipe(&buf[taken..], drain) {
                    None => {}
                    Some(Ok((n, stopped))) => {
                        taken += n;
                        if stopped {
                            // The segments sealed are non-final: the bytes
                            // after them are taken now, as after any drain
                            // that failed (`hold`).
                            taken += self.hold(&buf[taken..]);
                            return Ok(taken);
                        }
                        continue;
                    }
                    Some(Err(_)) if taken > 0 => return Ok(taken),
                    Some(Err(e)) => return Err(e),
                }
            }
            let Stage::Open { layout, next, .. } = &self.stage else {
                unreachable!("started and not sealed")
            };
            let (count, batch) = self.batch(layout, *next);
            let rest = &buf[taken..];
            let held = self.plain.available() == batch;
            // Straight from the caller's slice only a whole batch (with a
            // byte after it): a shorter run would seal its segments on
            // fewer threads than the batch has, and leave the rest to be
            // copied anyway.
            // At the counter's last index the segment can only be the
            // final one: it is buffered for `finish` (below), never sealed
            // from the slice (which would leave `finish` an empty final
            // segment after full ones, a stream the reader refuses).
            let last_index = *next >= u64::from(u32::MAX);
            let direct = self.plain.is_empty() && rest.len() > batch && !last_index;
            if held && last_index {
                // The last segment is full: keep it for `finish` and
                // refuse the data that would follow it.
                return if taken > 0 {
                    Ok(taken)
                } else {
                    Err(Error::StreamTooLong)
                };
            }
            let sealed = if held {
                // A full segment (batch) was held back; more data follows,
                // so it is not the final one.
                let r = self.seal_run(None, false);
                self.plain.clear();
                r
            } else if direct {
                // Zero-copy: seal straight from the caller's slice, as many
                // whole segments of the batch as leave a byte after them.
                let direct = layout.run_len(*next, count, rest.len() - 1);
                let r = self.seal_run(Some(&rest[..direct]), false);
                if r.is_ok() {
                    taken += direct;
                }
                r
            } else {
                // Pipelined, only up to the end of the segment begun: the
                // segments after it go to the pipeline from `rest`.
                let upto = if drain.is_some() && self.workers.is_some() {
                    let held = self.plain.available();
                    let whole = layout.run_len(*next, u64::MAX, held);
                    let end = if *next == 0 && whole == 0 {
                        layout.plain(0)
                    } else {
                        whole + layout.rest
                    };
                    end.min(batch)
                } else {
                    batch
                };
                match self.copy_in(rest, upto, batch) {
                    Ok(n) => taken += n,
                    Err(_) if taken > 0 => return Ok(taken),
                    Err(e) => return Err(e),
                }
                continue;
            };
            return match sealed {
                Ok(()) => Ok(taken),
                // Fatal and sticky: the next call reports it if this one
                // already took bytes.
                Err(_) if taken > 0 => Ok(taken),
                Err(e) => Err(e),
            };
        }
        Ok(taken)
    }

    /// The pipelined step of [`write`](Self::write), when
    /// it applies: the buffer holds whole segments only (none, or a full
    /// batch) and `rest` whole segments with a byte after them (the
    /// hold-back), or the buffer a full batch and `rest` more. Seals the
    /// buffered segments, then those of `rest` (at most [`MAX_PIPE_UNITS`](pipe::MAX_PIPE_UNITS)
    /// shares in all: a longer write is several runs), all non-final, in
    /// shares, each handed to `drain` as soon as it and those before it
    /// are sealed; a header not yet written goes out first, in the first
    /// share; the last job (when the run reaches the end of the write and
    /// enough shares come between it and the buffered ones) copies the
    /// rest of `rest`, the segment the write ends in, into the buffer.
    /// Returns the bytes of `rest` taken (sealed, or copied by that job)
    /// and whether `drain` stopped (the undelivered sealed bytes are then
    /// the output). A job that fails fails the stream; the bytes of `rest`
    /// in the shares written out before it are still reported (`Ok`, as
    /// stopped), the error comes with the next call.
    fn pipe(&mut self, rest: &[u8], drain: Drain<'_>) -> Option<Result<(usize, bool), Error>> {
        let Sealer {
            stage,
            plain,
            out,
            workers,
            ..
        } = self;
        let workers = workers.as_mut()?;
        let Stage::Open {
            suite,
            layout,
            header,
            next,
        } = stage
        else {
            return None;
        };
        if rest.is_empty() {
            return None;
        }
        // A header not written yet goes out at the head of the first unit
        // (the first write of a stream is a pipeline too, and the output
        // is sized for the pipeline at once, not for a batch first).
        let head = header.as_deref().unwrap_or_default();
        let held = plain.available();
        let PipePlan {
            units,
            buffered_units,
            extra,
            slot,
            slots: k,
            batch,
            tail,
            tail_job,
        } = pipe::plan(PipeInput {
            layout: *layout,
            next: *next,
            held,
            rest: rest.len(),
            threads: workers.threads(),
            head: head.len(),
            tag: suite.tag_len(),
        })?;
        if let Err(e) = out.grow(slot * k) {
            *stage = Stage::Failed(e.clone());
            return Some(Err(e));
        }
        out.clear();
        // The bytes after the run, which the write keeps in the buffer
        // (the segment it ends in, perhaps the final one): copied there by
        // the pipeline's last job when the plan has one (on whichever
        // thread is free once the buffered shares are sealed) instead of
        // by the caller after the run: a thread of the pool is the one
        // that has time, the caller writes every share out.
        let tail = &rest[tail..];
        // Buffered shares sealed (the tail job checks the order above).
        // An allocation the tail job cannot make leaves the buffer empty,
        // and the copy (and the error) to the caller's copy after the run,
        // so that the shares written out are reported.
        let sealed_buffered = std::sync::atomic::AtomicUsize::new(0);
        #[cfg(test)]
        let (fail_alloc, fail_unit) = (self.counts.fail_tail_alloc, self.counts.fail_unit);
        #[cfg(not(test))]
        let (fail_alloc, fail_unit) = (false, None::<usize>);
        let plain_lock = std::sync::RwLock::new(&mut *plain);
        let (suite, layout, first) = (&*suite, *layout, *next);
        let slots = out.whole_mut().chunks_mut(slot).take(k).collect();
        let piped = workers.pipeline(
            units.len() + usize::from(tail_job.is_some()),
            slots,
            |u, output| {
                if Some(u) == tail_job {
                    // Every buffered share was written out, so sealed
                    // (the order above; the lock only lets the buffer be
                    // shared). Were it not so, a panic (`WorkerPanicked`)
                    // rather than a share sealed from the tail.
                    assert_eq!(
                        sealed_buffered.load(std::sync::atomic::Ordering::Acquire),
                        buffered_units,
                        "the tail job started before the buffered shares were sealed"
                    );
                    let mut plain = plain_lock
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    plain.clear();
                    if !fail_alloc {
                        // An error leaves the buffer empty (see above).
                        let _ = buffer(&mut plain, tail, batch);
                    }
                    return Ok(0);
                }
                assert!(fail_unit != Some(u), "injected panic in unit {u}");
                let unit = &units[u];
                let buffered;
                let input = if unit.buffered {
                    buffered = plain_lock
                        .read()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    buffered.data()
                } else {
                    rest
                };
                let input = &input[unit.start..unit.start + unit.len];
                let head = if u == 0 { head } else { &[][..] };
                let at = seal_share(
                    suite,
                    &layout,
                    first + unit.first as u64,
                    extra,
                    head,
                    input,
                    output,
                )?;
                if unit.buffered {
                    sealed_buffered.fetch_add(1, std::sync::atomic::Ordering::Release);
                }
                Ok(at)
            },
            drain,
        );
        // The tail (never empty) is in the buffer if its job ran and could
        // allocate: the job left the buffer empty otherwise.
        let tail_done =
            tail_job.is_some_and(|t| piped.started > t) && plain.available() == tail.len();
        if piped.started > 0 {
            // Sealed into the first unit: it is output now, or written.
            *header = None;
        }
        let done = &units[..piped.started.min(units.len())];
        let segments = done.last().map_or(0, |u| u.end);
        let used_plain: usize = done.iter().filter(|u| u.buffered).map(|u| u.len).sum();
        let used_rest: usize = done.iter().filter(|u| !u.buffered).map(|u| u.len).sum();
        *next += segments as u64;
        #[cfg(test)]
        {
            self.counts.sealed += segments as u64;
            self.counts.runs += 1;
            self.counts.pipelines += 1;
            if tail_done {
                self.counts.copied += tail.len();
                self.counts.tails += 1;
            }
        }
        if tail_done {
            // The buffer holds the tail (the buffered shares were all
            // sealed before it).
        } else if used_plain == held {
            plain.clear();
        } else {
            plain.consume(used_plain);
            plain.compact();
        }
        if let Some(e) = piped.error {
            *stage = Stage::Failed(e.clone());
            if let Some(p) = piped.panic {
                std::panic::resume_unwind(p);
            }
            // The shares before the failing one went out: their bytes of
            // `rest` are taken (reported), the error comes with the next
            // call (it is sticky).
            return Some(if used_rest > 0 {
                Ok((used_rest, true))
            } else {
                Err(e)
            });
        }
        let stopped = !piped.pending.is_empty();
        // What `drain` did not take stays where it was sealed, moved to
        // the front of the output (no copy elsewhere: the output is the
        // `n + 1` slots, nothing more).
        let left = threads::gather(out.whole_mut(), slot, k, &piped.pending);
        out.set(0, left);
        if let Some(p) = piped.panic {
            // The inner writer panicked: the state above is what one
            // thread would leave (every segment sealed counted, what was
            // not written kept as output), so a caller that catches the
            // panic and goes on seals no index twice.
            std::panic::resume_unwind(p);
        }
        let taken = used_rest + if tail_done { tail.len() } else { 0 };
        Some(Ok((taken, stopped)))
    }

    /// After a segment sealed by [`write`](Self::write) could not be
    /// drained: buffers the bytes that follow it (the segment is non-final,
    /// so they exist and must be taken now, or a `finish` right after would
    /// have nothing left to seal as the final segment). Returns how many
    /// were taken, more than 0 when `buf` is not empty.
    pub(crate) fn hold(&mut self, buf: &[u8]) -> usize {
        let Stage::Open { layout, next, .. } = &self.stage else {
            return 0;
        };
        // Empty, or (a pipeline stopped before it sealed every buffered
        // share) holding the segments that follow the one sealed.
        let (_, batch) = self.batch(layout, *next);
        // An allocation failure is sticky: the stream cannot be finished.
        self.copy_in(buf, batch, batch).unwrap_or(0)
    }

    /// The segments of the next batch, from segment `next` (1 without
    /// threads; never so many that the last could not have a successor),
    /// and their plaintext bytes: what the buffer holds before it seals.
    fn batch(&self, layout: &Layout, next: u64) -> (u64, usize) {
        let Some(w) = &self.workers else {
            return (1, layout.plain(next));
        };
        let per = threads::batch_segments(w.threads(), layout.rest) as u64;
        let count = per.min(u64::from(u32::MAX).saturating_sub(next)).max(1);
        (count, layout.run_len(next, count, usize::MAX))
    }

    /// Seals `direct` (whole segments from the caller's slice) or else the
    /// buffer, as the stream's next segments: several on the workers when
    /// it holds more than one, all non-final but the last when `last`.
    fn seal_run(&mut self, direct: Option<&[u8]>, last: bool) -> Result<(), Error> {
        let held = self.plain.available();
        self.seal_from(direct, held, last)
    }

    /// [`seal_run`](Self::seal_run) of `direct`, or else of the first
    /// `prefix` bytes of the buffer.
    fn seal_from(&mut self, direct: Option<&[u8]>, prefix: usize, last: bool) -> Result<(), Error> {
        let plain = direct.unwrap_or(&self.plain.data()[..prefix]);
        let r = match (&mut self.workers, &self.stage) {
            (Some(workers), Stage::Open { layout, next, .. })
                if plain.len() > layout.plain(*next) =>
            {
                seal_parallel(&mut self.stage, &mut self.out, plain, last, workers)
            }
            _ => seal(&mut self.stage, &mut self.out, plain, last).map(|()| 1),
        };
        #[cfg(test)]
        if let Ok(n) = r {
            self.counts.sealed += n;
            self.counts.runs += u64::from(n > 1);
        }
        r.map(|_| ())
    }

    /// Copies what fits of `rest` into the plaintext buffer until it holds
    /// `upto` bytes, growing it (at most to `batch`); a failed allocation
    /// is fatal (sticky).
    fn copy_in(&mut self, rest: &[u8], upto: usize, batch: usize) -> Result<usize, Error> {
        let n = rest.len().min(upto - self.plain.available());
        if let Err(e) = buffer(&mut self.plain, &rest[..n], batch) {
            self.stage = Stage::Failed(e.clone());
            return Err(e);
        }
        #[cfg(test)]
        {
            self.counts.copied += n;
        }
        Ok(n)
    }

    /// Seals whatever is buffered (possibly nothing, for an empty stream)
    /// as the final segment. Call it with the output drained; once sealed,
    /// it does nothing more.
    ///
    /// # Errors
    ///
    /// A sticky error, or a sealing error (which becomes sticky).
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.start()?;
        if let Stage::Open { .. } = self.stage {
            debug_assert!(self.out.is_empty(), "output drained before sealing");
            self.seal_run(None, true)?;
            self.plain.clear();
            self.stage = Stage::Sealed;
            // The derived key is gone; so are the threads.
            self.workers = None;
        }
        Ok(())
    }

    /// In the framed variant, seals whatever is buffered (nothing if the
    /// buffer is empty) as one non-final record, so that a `flush` can
    /// deliver it; in the fixed-size format (a segment may be short only
    /// if it is the final one), with threads, seals the whole segments of
    /// the batch begun but the last (which may yet be the final one): what
    /// one thread would have sealed by now, so a `flush` delivers what it
    /// delivers with one thread. Call it with the output drained.
    ///
    /// # Errors
    ///
    /// A sticky error; a sealing error (sticky); [`Error::StreamTooLong`]
    /// when the counter has no number left for a non-final record.
    pub(crate) fn flush_record(&mut self) -> Result<(), Error> {
        if !self.framed && self.workers.is_some() {
            return self.flush_batch();
        }
        if !self.framed || self.plain.is_empty() {
            return match &self.stage {
                Stage::Failed(e) => Err(e.clone()),
                _ => Ok(()),
            };
        }
        self.start()?;
        let Stage::Open { next, .. } = &self.stage else {
            return Ok(());
        };
        if *next >= u64::from(u32::MAX) {
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
        let Stage::Open { layout, next, .. } = &self.stage else {
            return self.error().map_or(Ok(()), |e| Err(e.clone()));
        };
        let held = self.plain.available();
        let (count, _) = self.batch(layout, *next);
        let prefix = layout.run_len(*next, count, held.saturating_sub(1));
        if prefix == 0 {
            return Ok(());
        }
        debug_assert!(self.out.is_empty(), "output drained before sealing");
        self.seal_from(None, prefix, false)?;
        self.plain.consume(prefix);
        self.plain.compact();
        Ok(())
    }

    /// Makes every job of the workers panic from now on (tests of the
    /// panic path through a pipeline; the stream must have started).
    #[cfg(test)]
    pub(crate) fn inject_panic(&mut self) {
        if let Some(w) = &mut self.workers {
            w.inject_panic = true;
        }
    }

    /// The output buffer's allocated length (tests of its growth).
    #[cfg(test)]
    pub(crate) fn out_allocated(&self) -> usize {
        self.out.len()
    }

    /// Moves segment numbering to `index` (tests of the counter's end).
    #[cfg(test)]
    pub(crate) fn set_next(&mut self, index: u64) {
        if let Stage::Open { next, .. } = &mut self.stage {
            *next = index;
        }
    }
}

/// Appends `bytes` to the plaintext buffer, growing it (from
/// [`PLAIN_FLOOR`], at most to `max` unless more is needed): what a write
/// copies, on the caller's thread or as a pipeline's last job.
fn buffer(plain: &mut Window, bytes: &[u8], max: usize) -> Result<(), Error> {
    plain.grow_for(plain.available() + bytes.len(), PLAIN_FLOOR, max)?;
    plain.extend(bytes);
    Ok(())
}

/// Why a thread count of zero is refused.
pub(crate) const THREADS_ZERO: &str = "threads must be at least 1";

/// Seals `plain`, more than one segment, as the stream's next segments
/// into the drained `out` (behind the header if it has not gone out yet),
/// on the workers: each from its own index, the last one final when
/// `last`. Returns how many were sealed. A sealing error or a panic is
/// fatal.
fn seal_parallel(
    stage: &mut Stage,
    out: &mut Window,
    plain: &[u8],
    last: bool,
    workers: &mut Workers,
) -> Result<u64, Error> {
    let Stage::Open {
        suite,
        header,
        next,
        layout,
    } = stage
    else {
        unreachable!("seal is only called on an open stream")
    };
    let record = if layout.framed { RECORD_HEADER_LEN } else { 0 };
    // The pieces: whole segments from `next` on; the last may be short
    // (the final segment, or a framed record sealed by a flush).
    let mut sizes = Vec::new();
    let mut left = plain.len();
    while left > 0 {
        let n = left.min(layout.plain(*next + sizes.len() as u64));
        sizes.push(n);
        left -= n;
    }
    let body = sizes.iter().map(|n| record + n + suite.tag_len()).sum();
    let head = match out_behind_header(header, out, body) {
        Ok(head) => head,
        Err(e) => {
            *stage = Stage::Failed(e.clone());
            return Err(e);
        }
    };
    let need = head + body;
    let bytes = out.whole_mut();
    let mut pieces = Vec::with_capacity(sizes.len());
    let (mut input, mut output) = (plain, &mut bytes[head..need]);
    for (i, &n) in sizes.iter().enumerate() {
        let (p, rest_in) = input.split_at(n);
        let (o, rest_out) = output.split_at_mut(record + n + suite.tag_len());
        pieces.push(Piece {
            index: *next + i as u64,
            last: last && i + 1 == sizes.len(),
            input: p,
            output: o,
            result: Ok(()),
        });
        (input, output) = (rest_in, rest_out);
    }
    let framed = layout.framed;
    let suite = &*suite;
    let ran = workers.run(&mut pieces, |p| {
        p.result = seal_piece(suite, framed, p.index, p.last, p.input, p.output);
    });
    let first_error: Result<(), Error> =
        ran.and_then(|()| pieces.iter().try_for_each(|p| p.result.clone()));
    drop(pieces);
    if let Err(e) = first_error {
        *stage = Stage::Failed(e.clone());
        return Err(e);
    }
    *next += sizes.len() as u64;
    out.set(0, need);
    Ok(sizes.len() as u64)
}

/// Readies the drained `out` for `body` sealed bytes behind the stream
/// header not written yet (copied in, and so gone from `header`): grows it
/// and returns where the body starts. What [`seal`] and [`seal_parallel`]
/// share; an allocation failure is theirs to make sticky.
fn out_behind_header(
    header: &mut Option<Vec<u8>>,
    out: &mut Window,
    body: usize,
) -> Result<usize, Error> {
    let head = header.as_ref().map_or(0, Vec::len);
    out.grow(head + body)?;
    out.clear();
    if let Some(h) = header.take() {
        out.whole_mut()[..head].copy_from_slice(&h);
    }
    Ok(head)
}

/// Seals segment `index` of `plain` into `output` (exactly its sealed
/// length): in the framed variant first the record header, which is also
/// the segment's AAD. What the one-thread and the threaded paths share.
fn seal_piece(
    suite: &Suite,
    framed: bool,
    index: u64,
    last: bool,
    plain: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    if !framed {
        return suite.seal_at(index, last, &[], plain, output);
    }
    let rh = record_header(plain.len(), last);
    let (h, body) = output.split_at_mut(RECORD_HEADER_LEN);
    h.copy_from_slice(&rh);
    suite.seal_at(index, last, &rh, plain, body)
}

/// Seals the segments of one share of a pipelined write, non-final, from
/// segment `first` on, into `output` behind `head` (the stream header, in
/// the first share only), each `extra` bytes longer sealed; returns the
/// bytes written.
fn seal_share(
    suite: &Suite,
    layout: &Layout,
    first: u64,
    extra: usize,
    head: &[u8],
    mut input: &[u8],
    output: &mut [u8],
) -> Result<usize, Error> {
    output[..head.len()].copy_from_slice(head);
    let (mut at, mut index) = (head.len(), first);
    while !input.is_empty() {
        let (p, rest) = input.split_at(layout.plain(index));
        let o = &mut output[at..at + p.len() + extra];
        seal_piece(suite, layout.framed, index, false, p, o)?;
        (input, at, index) = (rest, at + o.len(), index + 1);
    }
    Ok(at)
}

/// Seals `plain` as the stream's next segment into the drained `out`,
/// behind the header if it has not gone out yet. A sealing error is fatal.
fn seal(stage: &mut Stage, out: &mut Window, plain: &[u8], last: bool) -> Result<(), Error> {
    let Stage::Open {
        suite,
        header,
        next,
        layout,
    } = stage
    else {
        unreachable!("seal is only called on an open stream")
    };
    let record = if layout.framed { RECORD_HEADER_LEN } else { 0 };
    let body = record + plain.len() + suite.tag_len();
    let start = match out_behind_header(header, out, body) {
        Ok(start) => start,
        Err(e) => {
            *stage = Stage::Failed(e.clone());
            return Err(e);
        }
    };
    let end = start + body;
    let output = &mut out.whole_mut()[start..end];
    if let Err(e) = seal_piece(suite, layout.framed, *next, last, plain, output) {
        *stage = Stage::Failed(e.clone());
        return Err(e);
    }
    *next += 1;
    out.set(0, end);
    Ok(())
}
