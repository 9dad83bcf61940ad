//! Runs of segments opened on the workers: which segments at the start
//! of the read-ahead (or of the inner buffer) qualify, and what is
//! released after the run (up to its first failure; the rest is wiped).

use crate::Error;
use crate::core::layout::{RECORD_HEADER_LEN, Units, record_at};
use crate::core::unit::{self, Setup};
use crate::threads::{Piece, Workers};

/// What [`open_pieces`] did.
pub(crate) struct Run {
    /// Segments tried (0: fewer than two qualified; nothing was done).
    pub(crate) tried: usize,
    /// Segments that opened before the first failure.
    pub(crate) opened: usize,
    /// Their sealed bytes (from the start of the input).
    pub(crate) used: usize,
    /// Their plaintext bytes (from the start of `out`).
    pub(crate) plain: usize,
}

/// Opens on `workers` the run of segments at the start of `data`, from
/// segment `next` on: at most `max`, each whole in `data`, fitting in
/// `out`, and, fixed-size, followed by more input (or ending `data`, when
/// `ends`: then tried as non-final, as one thread tries it first); framed,
/// records whose header says they are not final. All are opened as
/// non-final, each from its own index, straight into `out`; what opened
/// after the first failure is wiped (it is not released before it).
/// Fewer than two qualifying segments: nothing is done. `beside` is
/// given what the run leaves of `data` and is done on the caller's thread
/// while the workers open the run (not at all without a run).
///
/// # Errors
///
/// [`Error::WorkerPanicked`], with `out` wiped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn open_pieces(
    workers: &mut Workers,
    setup: &Setup,
    next: u64,
    data: &[u8],
    out: &mut [u8],
    max: usize,
    ends: bool,
    beside: impl FnOnce(&[u8]),
) -> Result<Run, Error> {
    let Setup { suite, units } = setup;
    let tag = units.layout().tag;
    let (mut pieces, written) = gather(units, next, data, &mut *out, max, ends);
    let tried = pieces.len();
    if tried < 2 {
        return Ok(Run {
            tried: 0,
            opened: 0,
            used: 0,
            plain: 0,
        });
    }
    let taken: usize = pieces.iter().map(|p| p.input.len()).sum();
    let left = &data[taken..];
    let ran = workers.run_beside(
        &mut pieces,
        |p| {
            p.result = if let Units::Framed(_) = units {
                // Its header says it is not final (`piece_at`).
                unit::open_record(suite, tag, p.index, p.input, p.output).map(|_| ())
            } else {
                suite.open_at(p.index, false, &[], p.input, p.output)
            };
        },
        || beside(left),
    );
    let good = pieces.iter().take_while(|p| p.result.is_ok());
    let (opened, used, plain) = good.fold((0, 0, 0), |(k, s, n), p| {
        (k + 1, s + p.input.len(), n + p.output.len())
    });
    drop(pieces);
    if let Err(e) = ran {
        zeroize::Zeroize::zeroize(&mut out[..written]);
        return Err(e);
    }
    zeroize::Zeroize::zeroize(&mut out[plain..written]);
    Ok(Run {
        tried,
        opened,
        used,
        plain,
    })
}

/// The run's pieces, from segment `next` at the start of `data` into
/// `out` (see [`open_pieces`]), and the plaintext bytes of `out` they take.
fn gather<'a>(
    units: &Units,
    next: u64,
    data: &'a [u8],
    out: &'a mut [u8],
    max: usize,
    ends: bool,
) -> (Vec<Piece<'a>>, usize) {
    let mut pieces = Vec::new();
    let (mut at, mut written) = (0, 0);
    let mut room = out;
    while pieces.len() < max {
        let index = next + pieces.len() as u64;
        let Some((plain, sealed)) = piece_at(units, index, &data[at..], ends) else {
            break;
        };
        if room.len() < plain {
            break;
        }
        let (o, r) = std::mem::take(&mut room).split_at_mut(plain);
        pieces.push(Piece {
            index,
            last: false,
            input: &data[at..at + sealed],
            output: o,
            result: Ok(()),
        });
        (room, at, written) = (r, at + sealed, written + plain);
    }
    (pieces, written)
}

/// The plaintext capacity and sealed length of segment `index` at the
/// start of `rest`, if it may join a run: a fixed-size segment that more
/// input follows (or that ends `rest`, when `ends`), a record whole in
/// `rest` whose header says it is not final.
fn piece_at(units: &Units, index: u64, rest: &[u8], ends: bool) -> Option<(usize, usize)> {
    match units {
        Units::Fixed(l) => {
            let (plain, sealed) = (l.plain(index), l.sealed(index));
            let left = rest.len();
            (left > sealed || left == sealed && ends).then_some((plain, sealed))
        }
        Units::Framed(l) => match record_at(rest) {
            Some((_, len, false)) if len <= l.rest => {
                let sealed = RECORD_HEADER_LEN + len + l.tag;
                (rest.len() >= sealed).then_some((len, sealed))
            }
            _ => None,
        },
    }
}
