//! [`Step`]: what the reader's engine asks of its front next, the one
//! protocol between [`Opener`](crate::core::opener::Opener) and every front
//! (std, tokio, the seekable ones).

/// What a front must do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Hand this many bytes to the caller (0: the end of the stream, or an
    /// empty read).
    Done(usize),
    /// Read from the inner reader into the opener's `room` and report the
    /// count with its `filled` (0: the inner reader is at its end).
    Read,
    /// Show the inner reader's buffered bytes to the opener's
    /// `open_window` (only asked of a front built with an inner buffer).
    Window,
    /// Move the inner reader to this offset from the stream's start, then
    /// report it with the opener's `inner_sought` (only after a seek or a
    /// length query, which only a seekable front starts).
    Seek(u64),
    /// Tell the opener's `inner_sought` how long the inner source is, from
    /// the stream's start (the length query of a seekable front).
    Length,
}
