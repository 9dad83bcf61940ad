//! The pipelined step of a threaded writer's write, as a job the engine
//! plans and settles but does not run: [`Sealer::plan_pipe`] describes a
//! run of shares (which segments, sealed from which buffer, into which
//! output slot), the drive loop runs it on the workers
//! ([`Workers::pipeline`]) and hands each sealed share to the inner writer,
//! and [`Sealer::settle`] records what the run did. The engine calls no
//! inner writer.
//!
//! A run is still one step of the writer: what the inner writer did not
//! take is the output, and the bytes after the last sealed segment (the
//! segment the write ends in) are copied into the buffer by the run's
//! last job, on a thread with time for it, or stay the caller's (or
//! [`hold`](Sealer::hold)'s) when the run stopped first.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

use super::held::Held;
use super::seal::seal_share;
use super::{Sealer, Stage};
use crate::Error;
use crate::core::layout::Layout;
use crate::core::pipe::{self, PipeInput, PipePlan};
use crate::core::suite::Suite;
use crate::threads::{self, Piped, Workers};

/// A pipelined run, planned: what the drive loop hands to
/// [`Workers::pipeline`], then (as [`Shares::finish`] leaves it) to
/// [`Sealer::settle`].
pub(crate) struct PipeJob<'a> {
    /// The stream's threads.
    pub(crate) workers: &'a mut Workers,
    /// The output slots, one more than threads, reused in turn.
    pub(crate) slots: Vec<&'a mut [u8]>,
    /// What each unit of the run does.
    pub(crate) shares: Shares<'a>,
}

/// The units of a pipelined run: the shares, in order, each sealed
/// non-final from the buffer or from the caller's slice (the first behind
/// the stream header not written yet), then perhaps the tail job, which
/// copies the bytes after the last share (the segment the write ends in,
/// perhaps the final one) into the buffer: on whichever thread is free
/// once the buffered shares are sealed, instead of by the caller after
/// the run (the caller writes every share out).
pub(crate) struct Shares<'a> {
    plan: PipePlan,
    suite: &'a Suite,
    layout: Layout,
    /// Index of the run's first segment.
    first: u64,
    /// The stream header not written yet (empty once written).
    head: &'a [u8],
    /// The caller's slice.
    rest: &'a [u8],
    /// Plaintext bytes buffered when the run was planned.
    held: usize,
    buffer: Buffered<'a>,
    faults: Faults,
}

/// The failures the tests inject into a run ([`Counts`](super::Counts)):
/// always none outside the tests.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// The tail job's allocation fails.
    tail_alloc: bool,
    /// The job of this unit panics.
    unit: Option<usize>,
}

/// The plaintext buffer during a run: the buffered shares are sealed
/// from it (shared), and only once every one of them is sealed may the
/// tail job replace what it holds with the write's tail. The pipeline
/// starts unit `u` only once unit `u - slots` is delivered, and the plan
/// puts the tail job that far behind the last buffered share (a rule
/// `pipe_tests` checks); [`refill`](Self::refill) checks it again, so
/// that a broken order is a panic (`WorkerPanicked`), and a share that
/// runs late, after the refill (the caller took its unit over), refuses
/// to seal: never a share sealed from the tail.
struct Buffered<'a> {
    plain: RwLock<&'a mut Held>,
    /// Whether each buffered share was sealed (a share may be sealed
    /// twice: the pipeline's caller takes over a late thread's unit).
    sealed: Vec<AtomicBool>,
    /// The tail replaced what the buffer held: a share sealed now would
    /// seal the tail's bytes under a segment number its own bytes took.
    refilled: AtomicBool,
}

impl<'a> Buffered<'a> {
    fn new(plain: &'a mut Held, shares: usize) -> Self {
        Buffered {
            plain: RwLock::new(plain),
            sealed: (0..shares).map(|_| AtomicBool::new(false)).collect(),
            refilled: AtomicBool::new(false),
        }
    }

    /// Seals buffered share `u` with `seal`, marking it once sealed. A
    /// share run late, after the tail replaced the buffer (its unit was
    /// taken over and written out), fails instead, and its failure is
    /// dropped with it.
    fn seal(
        &self,
        u: usize,
        seal: impl FnOnce(&[u8]) -> Result<usize, Error>,
    ) -> Result<usize, Error> {
        let plain = self.plain.read().unwrap_or_else(PoisonError::into_inner);
        if self.refilled.load(Ordering::Acquire) {
            return Err(Error::WorkerPanicked);
        }
        let at = seal(plain.data())?;
        self.sealed[u].store(true, Ordering::Release);
        Ok(at)
    }

    /// Replaces what the buffer holds with `tail` (growing it at most to
    /// `max`), once every buffered share is sealed. An allocation that
    /// fails (or `fail`) leaves the buffer empty, and the copy (and the
    /// error) to the caller after the run, so that the shares written
    /// out are reported.
    fn refill(&self, tail: &[u8], max: usize, fail: bool) {
        assert!(
            self.sealed.iter().all(|s| s.load(Ordering::Acquire)),
            "the tail job started before the buffered shares were sealed"
        );
        let mut plain = self.plain.write().unwrap_or_else(PoisonError::into_inner);
        self.refilled.store(true, Ordering::Release);
        plain.clear();
        if !fail {
            let _ = plain.append(tail, max);
        }
    }

    fn into_inner(self) -> &'a mut Held {
        self.plain
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shares<'_> {
    /// The units of the run: the shares and the tail job.
    pub(crate) fn jobs(&self) -> usize {
        self.plan.units.len() + usize::from(self.plan.tail_job.is_some())
    }

    /// Unit `u` of the run, into `output`: seals a share and returns its
    /// sealed length, or (the tail job) copies the tail and returns 0.
    pub(crate) fn run(&self, u: usize, output: &mut [u8]) -> Result<usize, Error> {
        if Some(u) == self.plan.tail_job {
            let tail = &self.rest[self.plan.tail..];
            self.buffer
                .refill(tail, self.plan.batch, self.faults.tail_alloc);
            return Ok(0);
        }
        assert!(self.faults.unit != Some(u), "injected panic in unit {u}");
        let unit = &self.plan.units[u];
        let head = if u == 0 { self.head } else { &[][..] };
        let mut seal = |input: &[u8]| {
            seal_share(
                self.suite,
                &self.layout,
                self.first + unit.first as u64,
                self.plan.extra,
                head,
                &input[unit.start..unit.start + unit.len],
                output,
            )
        };
        if unit.buffered {
            self.buffer.seal(u, seal)
        } else {
            seal(self.rest)
        }
    }

    /// What the run did, for [`Sealer::settle`]: the tail (never empty)
    /// is in the buffer if its job ran and could allocate (the job left
    /// the buffer empty otherwise).
    pub(crate) fn finish(self, piped: Piped) -> PipeRan {
        let Shares {
            plan,
            rest,
            held,
            buffer,
            ..
        } = self;
        let tail_len = rest.len() - plan.tail;
        let tail_done = plan.tail_job.is_some_and(|t| piped.started > t)
            && buffer.into_inner().available() == tail_len;
        PipeRan {
            plan,
            held,
            tail_len,
            tail_done,
            piped,
        }
    }
}

/// What a pipelined run did, owned (the engine is free again).
pub(crate) struct PipeRan {
    plan: PipePlan,
    held: usize,
    tail_len: usize,
    /// The tail job copied the tail into the buffer.
    tail_done: bool,
    piped: Piped,
}

impl PipeRan {
    /// A panic of the inner writer during the run, to resume once the
    /// engine is settled.
    pub(crate) fn take_panic(&mut self) -> Option<Box<dyn Any + Send>> {
        self.piped.panic.take()
    }
}

impl Sealer {
    /// The pipelined step of a write of `rest` with threads, when it
    /// applies: the buffer holds whole segments only (none, or a full
    /// batch) and `rest` whole segments with a byte after them (the
    /// hold-back), or the buffer a full batch and `rest` more. The run
    /// seals the buffered segments, then those of `rest` (at most
    /// [`MAX_PIPE_UNITS`](pipe::MAX_PIPE_UNITS) shares in all: a longer
    /// write is several runs), all non-final, in shares, each handed to
    /// the inner writer as soon as it and those before it are sealed; a
    /// header not yet written goes out first, in the first share; the last
    /// job (when the run reaches the end of the write and enough shares
    /// come between it and the buffered ones) copies the rest of `rest`,
    /// the segment the write ends in, into the buffer. Call it with the
    /// output drained.
    ///
    /// # Errors
    ///
    /// An output that cannot be allocated (sticky).
    pub(crate) fn plan_pipe<'a>(
        &'a mut self,
        rest: &'a [u8],
    ) -> Option<Result<PipeJob<'a>, Error>> {
        let plan = self.pipe_plan(rest.len())?;
        if let Err(e) = self.out.grow(plan.slot * plan.slots) {
            self.stage = Stage::Failed(e.clone());
            return Some(Err(e));
        }
        self.out.clear();
        let faults = Faults {
            tail_alloc: self.counts.fail_tail_alloc.armed().is_some(),
            unit: self.counts.fail_unit.armed(),
        };
        let Sealer {
            stage: Stage::Open(open),
            plain,
            out,
            workers: Some(workers),
            ..
        } = self
        else {
            unreachable!("planned on an open stream with threads")
        };
        let slots = out
            .whole_mut()
            .chunks_mut(plan.slot)
            .take(plan.slots)
            .collect();
        let held = plain.available();
        let buffer = Buffered::new(plain, plan.buffered_units);
        let shares = Shares {
            plan,
            suite: open.suite(),
            layout: *open.layout(),
            first: open.next(),
            head: open.header(),
            rest,
            held,
            buffer,
            faults,
        };
        Some(Ok(PipeJob {
            workers,
            slots,
            shares,
        }))
    }

    /// The plan of a pipelined write of `rest` bytes from where the
    /// stream is ([`pipe::plan`]), if one applies: `None` without threads,
    /// on a stream not open, for an empty write.
    fn pipe_plan(&self, rest: usize) -> Option<PipePlan> {
        let workers = self.workers.as_ref()?;
        let Stage::Open(open) = &self.stage else {
            return None;
        };
        if rest == 0 {
            return None;
        }
        // A header not written yet goes out at the head of the first unit:
        // the output is sized for the pipeline at once (the first write of
        // a stream is a pipeline too), not for a batch first.
        pipe::plan(PipeInput {
            layout: *open.layout(),
            next: open.next(),
            held: self.plain.available(),
            rest,
            threads: workers.threads(),
            head: open.header().len(),
            tag: open.suite().tag_len(),
        })
    }

    /// Records what a planned run did (take its panic out first): the
    /// segments sealed, the buffer's bytes sealed or replaced by the tail,
    /// what the inner writer did not take as the output. Returns the
    /// bytes of the write taken (sealed, or copied by the tail job) and
    /// whether the run stopped (the undelivered sealed bytes are then the
    /// output). The state is what one thread would leave, a panic of the
    /// inner writer included: every segment sealed counted, what was not
    /// written kept as output, so a caller that catches the panic and goes
    /// on seals no index twice.
    ///
    /// # Errors
    ///
    /// A job that failed fails the stream; the bytes of the write in the
    /// shares written out before it are still reported (`Ok`, as stopped),
    /// the error comes with the next call.
    pub(crate) fn settle(&mut self, ran: PipeRan) -> Result<(usize, bool), Error> {
        let PipeRan {
            plan,
            held,
            tail_len,
            tail_done,
            piped,
        } = ran;
        let Stage::Open(open) = &mut self.stage else {
            unreachable!("a run is planned on an open stream")
        };
        let done = &plan.units[..piped.started.min(plan.units.len())];
        let segments = done.last().map_or(0, |u| u.end);
        let used_plain: usize = done.iter().filter(|u| u.buffered).map(|u| u.len).sum();
        let used_rest: usize = done.iter().filter(|u| !u.buffered).map(|u| u.len).sum();
        // The header was sealed into the first unit: it is output now, or
        // written.
        open.advance(segments, piped.started > 0);
        self.count_run(segments, tail_done.then_some(tail_len));
        if tail_done {
            // The buffer holds the tail (the buffered shares were all
            // sealed before it).
        } else if used_plain == held {
            self.plain.clear();
        } else {
            self.plain.drop_front(used_plain);
        }
        if let Some(e) = piped.error {
            self.stage = Stage::Failed(e.clone());
            return if used_rest > 0 {
                Ok((used_rest, true))
            } else {
                Err(e)
            };
        }
        // What the inner writer did not take stays where it was sealed,
        // moved to the front of the output (no copy elsewhere: the output
        // is the run's slots, nothing more).
        let left = threads::gather(self.out.whole_mut(), plan.slot, plan.slots, &piped.pending);
        self.out.set(0, left);
        let taken = used_rest + if tail_done { tail_len } else { 0 };
        Ok((taken, !piped.pending.is_empty()))
    }

    /// Counts a pipelined run of `segments` whose tail job copied `tail`
    /// bytes (for the tests).
    fn count_run(&mut self, segments: usize, tail: Option<usize>) {
        self.counts.sealed.add(segments);
        self.counts.runs.add(1);
        self.counts.pipelines.add(1);
        if let Some(n) = tail {
            self.counts.copied.add(n);
            self.counts.tails.add(1);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{Buffered, Held};

    /// One share sealed twice (a unit taken over) is not two shares.
    #[test]
    #[should_panic(expected = "before the buffered shares were sealed")]
    fn the_tail_may_not_replace_the_buffer_before_its_shares_are_sealed() {
        let mut held = Held::new();
        held.append(b"abcd", 64).unwrap();
        let buffer = Buffered::new(&mut held, 2);
        for _ in 0..2 {
            assert_eq!(buffer.seal(0, |d: &[u8]| Ok(d.len())).unwrap(), 4);
        }
        buffer.refill(b"xy", 64, false);
    }

    /// A share run late, once the tail replaced the buffer, seals nothing.
    #[test]
    fn a_share_run_after_the_refill_seals_nothing() {
        let mut held = Held::new();
        held.append(b"abcd", 64).unwrap();
        let buffer = Buffered::new(&mut held, 1);
        buffer.seal(0, |d: &[u8]| Ok(d.len())).unwrap();
        buffer.refill(b"xy", 64, false);
        let r = buffer.seal(0, |_: &[u8]| -> Result<usize, crate::Error> {
            panic!("sealed the tail's bytes")
        });
        assert_eq!(r, Err(crate::Error::WorkerPanicked));
    }

    /// The tail job run twice (taken over) leaves the tail once.
    #[test]
    fn once_its_shares_are_sealed_the_buffer_takes_the_tail() {
        let mut held = Held::new();
        held.append(b"abcd", 64).unwrap();
        let buffer = Buffered::new(&mut held, 2);
        for u in 0..2 {
            buffer.seal(u, |d: &[u8]| Ok(d.len())).unwrap();
        }
        buffer.refill(b"xy", 64, false);
        buffer.refill(b"xy", 64, false);
        assert_eq!(buffer.into_inner().data(), b"xy");
    }
}
