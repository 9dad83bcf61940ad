//! The write loop: plaintext into the [`Sealer`], sealed bytes out to the
//! inner writer. Shared by [`CipherWriter`](crate::CipherWriter) and, through
//! its adapter, the tokio writer.

use std::io::{self, Write};

use crate::Error;
use crate::core::sealer::Sealer;

/// Moves the engine's sealed output to `inner`, retrying `Interrupted`.
/// `Ok(0)` from `inner` is [`Error::WriteZero`].
pub(crate) fn drain<W: Write>(engine: &mut Sealer, inner: &mut W) -> io::Result<()> {
    while !engine.output().is_empty() {
        match inner.write(engine.output()) {
            Ok(0) => return Err(Error::WriteZero.into()),
            Ok(n) => engine.consume_output(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
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
        // With threads, whole segments go to `inner` as they are sealed;
        // when it takes none, the run stops and its error is kept (it is
        // not called again in this call, as below).
        let mut stopped = None;
        let mut to_inner = |bytes: &[u8]| loop {
            match inner.write(bytes) {
                Ok(0) => {
                    stopped = Some(Error::WriteZero.into());
                    return 0;
                }
                Ok(n) => return n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    stopped = Some(e);
                    return 0;
                }
            }
        };
        match engine.write(&buf[taken..], Some(&mut to_inner)) {
            Ok(n) => taken += n,
            Err(e) if taken == 0 => return Err(e.into()),
            // The error comes back with the next call.
            Err(_) => return Ok(taken),
        }
        if let Some(e) = stopped {
            // The engine took the bytes after the last segment sealed; the
            // error comes back with the next call.
            return if taken > 0 { Ok(taken) } else { Err(e) };
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
    if !engine.is_sealed() {
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
