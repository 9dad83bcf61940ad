//! The read loop: the [`Opener`]'s steps answered from the inner reader.
//! Shared by [`CipherReader`](crate::CipherReader) and, through its adapter,
//! the tokio reader.

use std::io;

use crate::core::opener::{Beside, Opener};
use crate::core::step::Step;

/// What the read loop asks of an inner reader. Each method stops at the
/// inner reader's first error and returns it.
pub(crate) trait Source {
    /// `Read::read` of the inner reader (`Interrupted` passed through, as
    /// any other error).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;

    /// Answers [`Step::Window`]: shows the inner reader's buffer to
    /// [`Opener::open_window`] and consumes what it used; returns the
    /// plaintext bytes opened into `buf`. Asked only of a source whose
    /// engine was built windowed.
    fn window(&mut self, engine: &mut Opener, buf: &mut [u8]) -> io::Result<usize>;

    /// Answers [`Step::Seek`] and [`Step::Length`]: moves or measures the
    /// inner reader and reports the result to the engine. Asked only after
    /// a seek or a length query.
    fn seek(&mut self, engine: &mut Opener, step: &Step) -> io::Result<()>;

    /// Where an error of a read beside the threads' work waits for the
    /// next call that needs input (kept across calls by the front);
    /// `None`: the front makes no read beside.
    fn deferred(&mut self) -> Option<&mut Option<io::Error>> {
        None
    }
}

/// A [`Source`]'s read beside the threads' work, as the engine asks for it: the inner
/// reader's `read`, whose error does not fail the call that has
/// plaintext to give. The error waits in the source's
/// [`deferred`](Source::deferred) slot (an interruption is dropped), and
/// while one waits no read beside is made: it comes first, with the
/// next call that needs input.
struct Side<'a, S>(&'a mut S);

impl<S: Source> Beside for Side<'_, S> {
    fn read_beside(&mut self, room: &mut [u8]) -> Option<usize> {
        if self.0.deferred()?.is_some() {
            return None;
        }
        match self.0.read(room) {
            Ok(n) => Some(n),
            Err(e) => {
                if e.kind() != io::ErrorKind::Interrupted {
                    *self.0.deferred()? = Some(e);
                }
                None
            }
        }
    }
}

/// Reads into the read-ahead the engine offers.
fn read_ahead<S: Source>(engine: &mut Opener, inner: &mut S) -> io::Result<()> {
    if let Some(e) = inner.deferred().and_then(Option::take) {
        return Err(e);
    }
    let n = inner.read(engine.room()?)?;
    engine.filled(n);
    Ok(())
}

/// `Read::read`: authenticated plaintext into `buf`.
pub(crate) fn read<S: Source>(
    engine: &mut Opener,
    inner: &mut S,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut fresh = true;
    loop {
        match engine.read(buf, fresh, Some(&mut Side(&mut *inner)))? {
            Step::Done(n) => return Ok(n),
            Step::Read => read_ahead(engine, inner)?,
            Step::Window => {
                let n = inner.window(engine, buf)?;
                if n > 0 {
                    return Ok(n);
                }
            }
            step => inner.seek(engine, &step)?,
        }
        fresh = false;
    }
}

/// `BufRead::fill_buf`: once it returns, the engine's buffered plaintext
/// is the answer (empty at the end of the stream).
pub(crate) fn fill<S: Source>(engine: &mut Opener, inner: &mut S) -> io::Result<()> {
    let mut fresh = true;
    loop {
        match engine.fill(fresh, Some(&mut Side(&mut *inner)))? {
            Step::Done(_) => return Ok(()),
            Step::Read => read_ahead(engine, inner)?,
            Step::Window => {
                inner.window(engine, &mut [])?;
            }
            step => inner.seek(engine, &step)?,
        }
        fresh = false;
    }
}

/// The authenticated plaintext length (the final segment opened once;
/// cached by the engine).
pub(crate) fn length<S: Source>(engine: &mut Opener, inner: &mut S) -> io::Result<u64> {
    loop {
        match engine.length()? {
            Step::Done(_) => {
                return Ok(engine
                    .auth_len()
                    .unwrap_or_else(|| unreachable!("the query ends with a length")));
            }
            Step::Read => read_ahead(engine, inner)?,
            Step::Window => unreachable!("a length query does not look into the inner buffer"),
            step => inner.seek(engine, &step)?,
        }
    }
}
