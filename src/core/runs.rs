//! Runs of segments opened on the workers: which segments at the start
//! of the read-ahead (or of the inner buffer) qualify, and what is
//! released after the run (up to its first failure; the rest is wiped).

use crate::Error;
use crate::core::layout::{Layout, RECORD_HEADER_LEN, Units, record_at};
use crate::core::unit::{self, Setup};
use crate::threads::{Fed, Piece, Places, Plan, Workers};

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

/// Where a fed run's sealed bytes go (see [`open_fed`]).
pub(crate) enum FedInto<'r> {
    /// Into `region` (the read-ahead), which holds the first `held`; what
    /// is not released stays there, in order.
    Apart { region: &'r mut [u8], held: usize },
    /// Into the caller's buffer where they open, the tags into `tags`;
    /// `held` (read before) comes first. What is not released is given
    /// back to be put in front of what the read-ahead holds next.
    InPlace { tags: &'r mut [u8], held: &'r [u8] },
}

/// Opens on `workers`, as a fed run (see [`Workers::run_fed`]), the
/// `count` fixed-size segments from segment `next` on, as non-final, into
/// `out` (which holds their plaintext, and in place one tag more), their sealed bytes read by `read`
/// as they open. Returns the run, what the feeding did, and (opened in
/// place) the sealed bytes that arrived and were not released, in order
/// (a segment that opened after the first failure gives zeros of its
/// length: its ciphertext is gone, and nothing after a failure is opened
/// again). What is not released of `out` is wiped.
///
/// # Errors
///
/// [`Error::WorkerPanicked`], with `out` wiped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn open_fed(
    workers: &mut Workers,
    setup: &Setup,
    layout: &Layout,
    (next, count): (u64, usize),
    into: FedInto<'_>,
    out: &mut [u8],
    read: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    capacity: usize,
) -> Result<(Run, Fed, Vec<u8>), Error> {
    let tag = layout.tag;
    let plain: Vec<usize> = (next..).take(count).map(|i| layout.plain(i)).collect();
    let span: usize = plain.iter().sum();
    let plan = Plan {
        plain: &plain,
        tag,
        capacity,
    };
    let (mut apart, mut tags) = match into {
        FedInto::Apart { region, held } => (Some((region, held)), None),
        FedInto::InPlace { tags, held } => (None, Some((tags, held))),
    };
    let in_place = tags.is_some();
    let (ran, results) = {
        let mut pieces = Vec::with_capacity(count);
        let (places, mut room) = match (apart.take(), tags.as_mut()) {
            (Some((region, held)), _) => (Places::Apart { region, held }, &mut *out),
            (None, Some((tags, held))) => {
                let places = Places::InPlace {
                    out: &mut out[..span + tag],
                    tags: &mut tags[..],
                    held,
                };
                (places, &mut [][..])
            }
            (None, None) => unreachable!("one place or the other"),
        };
        for (k, index) in (next..).take(count).enumerate() {
            // Opened in place, a piece gets its place when handed over.
            let o = if in_place {
                &mut [][..]
            } else {
                let (o, r) = std::mem::take(&mut room).split_at_mut(plain[k]);
                room = r;
                o
            };
            pieces.push(Piece {
                index,
                input: &[],
                output: o,
                // Not opened until a job says otherwise: a piece the
                // feeding never hands over is not released.
                result: Err(Error::Truncated),
            });
        }
        let suite = &setup.suite;
        let ran = workers.run_fed(&mut pieces, &plan, places, read, |p| {
            p.result = if in_place {
                suite.open_in_place(p.index, false, &[], p.output, p.input)
            } else {
                suite.open_at(p.index, false, &[], p.input, p.output)
            };
        });
        let results: Vec<bool> = pieces.iter().map(|p| p.result.is_ok()).collect();
        (ran, results)
    };
    // Opened in place, the last tag landed after the run's places too.
    let end = if in_place { span + tag } else { span };
    let fed = match ran {
        Ok(fed) => fed,
        Err(e) => {
            zeroize::Zeroize::zeroize(&mut out[..end]);
            return Err(e);
        }
    };
    let opened = results.iter().take_while(|&&ok| ok).count();
    let released: usize = plain[..opened].iter().sum();
    let mut back = Vec::new();
    if let Some((tags, _)) = &tags {
        // The sealed bytes not released, in stream order: each segment's
        // ciphertext (where it was opened) and its tag.
        let mut at = released;
        for k in opened..count {
            let arrived = match k.cmp(&fed.handed) {
                std::cmp::Ordering::Less => plain[k] + tag,
                std::cmp::Ordering::Equal => fed.left,
                std::cmp::Ordering::Greater => break,
            };
            if k < fed.handed && results[k] {
                back.resize(back.len() + arrived, 0);
            } else {
                let ct = arrived.min(plain[k]);
                back.extend_from_slice(&out[at..at + ct]);
                let t = (arrived - ct).min(tag);
                back.extend_from_slice(&tags[k * tag..k * tag + t]);
            }
            at += plain[k];
        }
    }
    zeroize::Zeroize::zeroize(&mut out[released..end]);
    Ok((
        Run {
            tried: fed.handed,
            opened,
            used: released + opened * tag,
            plain: released,
        },
        fed,
        back,
    ))
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
