//! The drive loops: the one place where the engine's steps are answered
//! with inner I/O, one loop per direction.
//!
//! [`write`] moves a [`Sealer`](crate::core::sealer::Sealer)'s output to
//! any [`std::io::Write`]; [`read`] answers an
//! [`Opener`](crate::core::opener::Opener)'s steps from any
//! [`read::Source`]. The std fronts pass their inner reader or writer
//! straight in. The tokio fronts pass an adapter over the inner object and
//! the task's `Context` that turns `Poll::Pending` into
//! [`io::ErrorKind::WouldBlock`](std::io::ErrorKind::WouldBlock) and
//! remembers that it did, so that the front turns that error, and only
//! that one, back into `Pending`.
//!
//! A loop stops at the first error of the inner object and never calls it
//! again in the same call: that is what makes the mapping exact (the
//! adapter's `WouldBlock` is always the error the loop returns) and what
//! makes a dropped future lose nothing (a `Pending` leaves the engine as
//! an error would, and the engine is consistent after any error).

pub(crate) mod read;
pub(crate) mod write;
