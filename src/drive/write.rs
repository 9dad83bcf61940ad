//! The write loop: plaintext into the [`Sealer`], sealed bytes out to the
//! inner writer. Shared by [`CipherWriter`](crate::CipherWriter) and, through
//! its adapter, the tokio writer.

use std::io::{self, Write};

use crate::Error;
use crate::core::sealer::Sealer;

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
        match engine.write(&buf[taken..]) {
            Ok(n) => taken += n,
            Err(e) if taken == 0 => return Err(e.into()),
            // The error comes back with the next call.
            Err(_) => return Ok(taken),
        }
        if let Err(e) = drain(engine, inner) {
            // The segment just sealed is non-final: the bytes after it are
            // taken now, and the call reports them (or, when the buffer
            // is full and it took none, the error).
            taken += engine.hold(&buf[taken..]);
            return if taken == 0 { Err(e) } else { Ok(taken) };
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
    while engine.flush_record()? {
        drain(engine, inner)?;
    }
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
