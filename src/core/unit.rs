//! How one unit of a stream is opened: a fixed-size segment by the rules
//! of the final flag, in one function that the streaming reader, its
//! length and seek queries and `CipherReaderAt` all call
//! ([`open_segment`]); a framed record, by its own header, in one function
//! that the one-thread reader and the workers' runs call ([`open_record`]).
//!
//! The rules of a segment:
//! - A segment that more input follows opens as final or not, the likelier
//!   flag first (a full-length segment may be either).
//! - A segment that ends the source must open as the final one. If it is
//!   full-length and opens only as a non-final one, the stream was cut at
//!   a segment boundary ([`Error::Truncated`]); if it opens as neither, or
//!   is shorter and opens only as non-final (no writer makes that), it was
//!   damaged ([`Error::Authentication`]).
//! - An empty final segment after full ones is refused
//!   ([`Error::EmptyFinalSegment`]) where the layout has no empty final
//!   segment but the empty stream's (the native format).
//! - Where the final segment is told by its length ([`Ends::Short`]), a
//!   segment is opened once: a full-length one as non-final (it is never
//!   the last; if it ends the source, the stream was cut,
//!   [`Error::Truncated`]), a shorter one as the final one.
//! - No byte of `out` is left unverified when it fails, nor the plaintext
//!   of a segment that opened under the wrong flag.

use zeroize::Zeroize;

use crate::Error;
use crate::core::layout::{Ends, Fixed, RECORD_HEADER_LEN, Units, record_at};
use crate::core::suite::Suite;

/// What a stream's header set up to open its units.
pub(crate) struct Setup {
    /// Opens the stream's units.
    pub(crate) suite: Keyed,
    /// Fixed-size segments or framed records, and their sizes.
    pub(crate) units: Units,
}

/// A stream's [`Suite`], owned, or shared with pool threads that open
/// its units on their own time (a ring's): shared only once a ring needs
/// it, so a stream that never starts one allocates nothing for it.
pub(crate) enum Keyed {
    /// Held by the stream alone.
    Own(Suite),
    /// Shared with pool jobs.
    Shared(std::sync::Arc<Suite>),
    /// Only while [`share`](Keyed::share) moves the suite.
    Moving,
}

impl Keyed {
    /// The suite, shared (moved into an [`Arc`](std::sync::Arc) the first
    /// time).
    pub(crate) fn share(&mut self) -> std::sync::Arc<Suite> {
        let arc = match std::mem::replace(self, Keyed::Moving) {
            Keyed::Own(suite) => std::sync::Arc::new(suite),
            Keyed::Shared(arc) => arc,
            Keyed::Moving => unreachable!("a suite is moved only inside `share`"),
        };
        *self = Keyed::Shared(std::sync::Arc::clone(&arc));
        arc
    }
}

impl std::ops::Deref for Keyed {
    type Target = Suite;
    fn deref(&self) -> &Suite {
        match self {
            Keyed::Own(suite) => suite,
            Keyed::Shared(arc) => arc,
            Keyed::Moving => unreachable!("a suite is moved only inside `share`"),
        }
    }
}

/// Where a segment lies in what the reader has seen of the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Full-length, with more input after it or none known yet: final or
    /// not; `likely_last` says which flag to try first.
    Either {
        /// Try the final flag first.
        likely_last: bool,
    },
    /// It ends the source: final, or the stream is cut.
    Ends,
}

/// What [`open_segment`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opened {
    /// Plaintext bytes in `out`.
    pub(crate) len: usize,
    /// It opened as the final segment.
    pub(crate) last: bool,
}

/// Opens segment `index` of a fixed-size layout, `sealed` (its ciphertext
/// and tag), into `out` (at least `sealed.len() - tag` bytes), by the rules
/// of the module docs. `tries` counts the opens tried.
///
/// # Errors
///
/// [`Error::Truncated`] (cut at a segment boundary, or fewer bytes than a
/// tag), [`Error::Authentication`], [`Error::EmptyFinalSegment`],
/// [`Error::TooManySegments`]; `out` then holds no plaintext.
#[inline]
pub(crate) fn open_segment(
    suite: &Suite,
    layout: &Fixed,
    index: u64,
    sealed: &[u8],
    out: &mut [u8],
    place: Place,
    tries: &mut usize,
) -> Result<Opened, Error> {
    let Some(len) = sealed.len().checked_sub(layout.tag) else {
        return Err(Error::Truncated);
    };
    let out = &mut out[..len];
    if layout.ends == Ends::Short {
        let last = sealed.len() < layout.sealed(index);
        *tries += 1;
        suite.open_at(index, last, &[], sealed, out)?;
        if !last && place == Place::Ends {
            out.zeroize();
            return Err(Error::Truncated);
        }
        return Ok(Opened { len, last });
    }
    let first = match place {
        Place::Either { likely_last } => likely_last,
        Place::Ends => true,
    };
    *tries += 1;
    let last = if suite.open_at(index, first, &[], sealed, out).is_ok() {
        first
    } else {
        *tries += 1;
        let second = suite.open_at(index, !first, &[], sealed, out);
        match (place, second) {
            (Place::Either { .. }, Ok(())) => !first,
            (Place::Either { .. }, Err(e)) => return Err(e),
            // Authentic, but not final: full-length, the stream was cut
            // after it; shorter, no writer made it (non-final segments are
            // full).
            (Place::Ends, Ok(())) => {
                out.zeroize();
                return Err(if sealed.len() == layout.sealed(index) {
                    Error::Truncated
                } else {
                    Error::Authentication
                });
            }
            (Place::Ends, Err(e)) => return Err(e),
        }
    };
    if last && len == 0 && index > 0 && layout.ends == Ends::Flag {
        return Err(Error::EmptyFinalSegment);
    }
    Ok(Opened { len, last })
}

/// Opens the framed record at the start of `data` (whole there: its record
/// header, then its sealed plaintext) as unit `index` into `out` (at least
/// its plaintext length): the record header is the AAD and its final flag
/// goes into the nonce, so a header changed in any bit fails to open.
/// Returns what opened and the record's length in `data`. Whether a final
/// record ends the input is the caller's to check.
///
/// # Errors
///
/// [`Error::Authentication`] (`out` then holds no plaintext);
/// [`Error::Truncated`] if `data` holds no whole record.
#[inline]
pub(crate) fn open_record(
    suite: &Suite,
    tag: usize,
    index: u64,
    data: &[u8],
    out: &mut [u8],
) -> Result<(Opened, usize), Error> {
    let (h, len, last) = record_at(data).ok_or(Error::Truncated)?;
    let total = RECORD_HEADER_LEN + len + tag;
    let sealed = data.get(RECORD_HEADER_LEN..total).ok_or(Error::Truncated)?;
    suite.open_at(index, last, &h, sealed, &mut out[..len])?;
    Ok((Opened { len, last }, total))
}
