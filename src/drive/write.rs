//! The write loop: plaintext into the [`Sealer`], sealed bytes out to the
//! inner writer. Shared by [`CipherWriter`](crate::CipherWriter) and, through
//! its adapter, the tokio writer.

use std::io::{self, Write};

use crate::Error;
use crate::core::sealer::{PipeJob, Sealer};

/// One call to `inner`, retrying `Interrupted`: how many bytes of
/// `bytes` it took. `Ok(0)` from `inner` is [`Error::WriteZero`].
fn write_once<W: Write>(inner: &mut W, bytes: &[u8]) -> io::Result<usize> {
    loop {
        match inner.write(bytes) {
            Ok(0) => return Err(Error::WriteZero.into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Moves the engine's sealed output to `inner`, retrying `Interrupted`.
/// `Ok(0)` from `inner` is [`Error::WriteZero`].
pub(crate) fn drain<W: Write>(engine: &mut Sealer, inner: &mut W) -> io::Result<()> {
    while !engine.output().is_empty() {
        let n = write_once(inner, engine.output())?;
        engine.consume_output(n);
    }
    Ok(())
}

/// `Write::write`: takes what it can of `buf`, never `Ok(0)` for a
/// non-empty `buf`. An error of `inner` after bytes were taken is not
/// returned: the call reports the bytes, and the next call, which starts
/// by draining what `inner` did not take, meets the error again. Nothing
/// is sealed twice: sealed bytes wait in the engine's output.
pub(crate) fn write<W: Write>(engine: &mut Sealer, inner: &mut W, buf: &[u8]) -> io::Result<usize> {
    if engine.is_sealed() {
        return Err(Error::Finished.into());
    }
    engine.start()?;
    if buf.is_empty() {
        return Ok(0);
    }
    // Whatever an earlier call left pending goes first; an error here has
    // taken nothing.
    drain(engine, inner)?;
    let mut taken = 0;
    while taken < buf.len() {
        let rest = &buf[taken..];
        let mut stopped = None;
        let step = match pipe(engine, inner, rest, &mut stopped) {
            Some(piped) => piped,
            None => engine.write(rest).map(|n| (n, false)),
        };
        match step {
            Ok((n, false)) => taken += n,
            Ok((n, true)) => {
                // The segments sealed are non-final: the bytes after them
                // are taken now, as after any drain that failed; the error
                // comes back with the next call.
                taken += n;
                taken += engine.hold(&buf[taken..]);
                return match stopped {
                    Some(e) if taken == 0 => Err(e),
                    _ => Ok(taken),
                };
            }
            Err(e) if taken == 0 => return Err(e.into()),
            // The error comes back with the next call.
            Err(_) => return Ok(taken),
        }
        if drain(engine, inner).is_err() {
            // The segment just sealed is non-final: the bytes after it are
            // taken now, and the call reports them.
            taken += engine.hold(&buf[taken..]);
            return Ok(taken);
        }
    }
    Ok(taken)
}

/// With threads, the pipelined step of a write of `rest`, when it applies
/// ([`Sealer::plan_pipe`]): the run goes to the workers, and each sealed
/// share to `inner` as soon as it and those before it are ready. When
/// `inner` takes none, the run stops and its error is kept in `stopped`
/// (`inner` is not called again in this call). Returns what
/// [`Sealer::settle`] says: the bytes of `rest` taken and whether the run
/// stopped. A panic of `inner` goes on once the engine is settled.
fn pipe<W: Write>(
    engine: &mut Sealer,
    inner: &mut W,
    rest: &[u8],
    stopped: &mut Option<io::Error>,
) -> Option<Result<(usize, bool), Error>> {
    let PipeJob {
        workers,
        slots,
        shares,
    } = match engine.plan_pipe(rest)? {
        Ok(job) => job,
        Err(e) => return Some(Err(e)),
    };
    let to_inner = |bytes: &[u8]| {
        write_once(inner, bytes).unwrap_or_else(|e| {
            *stopped = Some(e);
            0
        })
    };
    let piped = workers.pipeline(shares.jobs(), slots, |u, out| shares.run(u, out), to_inner);
    let mut ran = shares.finish(piped);
    let panic = ran.take_panic();
    let settled = engine.settle(ran);
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
    Some(settled)
}

/// `Write::flush`: writes out every sealed byte (framed: what is buffered
/// becomes a record first), then flushes `inner`.
pub(crate) fn flush<W: Write>(engine: &mut Sealer, inner: &mut W) -> io::Result<()> {
    if let Some(e) = engine.error() {
        return Err(e.clone().into());
    }
    drain(engine, inner)?;
    engine.flush_record()?;
    drain(engine, inner)?;
    inner.flush()
}

/// Completes the stream: seals the final segment once (whatever is
/// buffered, possibly nothing) and writes everything out. Called again
/// after an error, it resumes; once done, it only drains.
pub(crate) fn seal_all<W: Write>(engine: &mut Sealer, inner: &mut W) -> io::Result<()> {
    engine.start()?;
    while !engine.is_sealed() {
        // A segment left pending by an earlier error goes out first.
        drain(engine, inner)?;
        engine.finish()?;
    }
    drain(engine, inner)
}

/// [`seal_all`], then flushes `inner`.
pub(crate) fn complete<W: Write>(engine: &mut Sealer, inner: &mut W) -> io::Result<()> {
    seal_all(engine, inner)?;
    inner.flush()
}
