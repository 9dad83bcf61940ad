//! Opening segments in place, in the inner reader's own buffer (a front
//! built on a `BufRead`): whole full-length segments there open as
//! non-final without a copy; whatever fails or is cut is left to the
//! copying path, which applies the full rules (final flag, trailing data).

use super::ring::open_run;
use super::*;

/// Whether the front shows its inner buffer ([`Step::Window`]), and where
/// opening there failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InPlace {
    /// The front has no inner buffer to show.
    Off,
    /// The front answers [`Step::Window`]. `failed`: the segment that
    /// failed to open in the inner buffer; it is left to the copying path,
    /// not tried there again (until the inner reader moves).
    On { failed: Option<u64> },
}

impl InPlace {
    /// For a front that shows its inner buffer (`windowed`) or not.
    pub(super) const fn new(windowed: bool) -> InPlace {
        if windowed {
            InPlace::On { failed: None }
        } else {
            InPlace::Off
        }
    }

    /// The front shows its inner buffer.
    #[inline]
    pub(super) fn is_on(&self) -> bool {
        matches!(self, InPlace::On { .. })
    }

    /// Whether segment `index` may be tried in the inner buffer.
    #[inline]
    pub(super) fn may_try(&self, index: u64) -> bool {
        matches!(self, InPlace::On { failed } if *failed != Some(index))
    }

    /// Whether segment `index` failed to open (as non-final) in place.
    #[inline]
    pub(super) fn failed_at(&self, index: u64) -> bool {
        matches!(self, InPlace::On { failed: Some(i) } if *i == index)
    }

    /// Segment `index` failed to open in place.
    fn fail(&mut self, index: u64) {
        if let InPlace::On { failed } = self {
            *failed = Some(index);
        }
    }

    /// The inner reader moved: no segment has failed where it now is.
    pub(super) fn reset(&mut self) {
        if let InPlace::On { failed } = self {
            *failed = None;
        }
    }
}

impl Opener {
    /// Whether to look into the inner reader's buffer now (built with one;
    /// between segments, with nothing read ahead or buffered; not at a
    /// segment that already failed there).
    #[inline]
    pub(super) fn window_wanted(&self) -> bool {
        if !self.in_place.may_try(self.next)
            || self.ring_read_ahead() > 0
            || !self.ahead.is_empty()
            || self.ahead.at_end()
            || !self.plain.is_empty()
        {
            return false;
        }
        matches!(self.stage, Stage::Body)
            && !matches!(self.units(), Some(Units::Framed(_)))
            && !self.position.moves_inner()
            && !self.position.skips()
    }

    /// Opens whole segments where they lie in `window`, the inner reader's
    /// buffered bytes (after [`Step::Window`]): every full-length segment
    /// there that fits in `buf` is opened as non-final straight into `buf`
    /// if `buf` cannot hold the next one, that one segment goes into the
    /// internal plaintext buffer instead. Returns the bytes of `window`
    /// used (for the inner reader's `consume`) and the bytes put in `buf`.
    /// Nothing opened: the copying path takes over, and it also settles a
    /// segment that failed here (the final one, or a damaged one), with
    /// the full rules (final flag, trailing data).
    pub(crate) fn open_window(&mut self, window: &[u8], buf: &mut [u8]) -> (usize, usize) {
        let (Stage::Body, Some(Units::Fixed(layout))) = (&self.stage, self.units()) else {
            return (0, 0);
        };
        let into_plain = buf.len() < layout.plain(self.next);
        if self.run_pays(buf.len())
            && let Some(done) = self.window_run(window, buf)
        {
            return done;
        }
        let (used, n) = self.window_segments(&layout, window, buf, into_plain);
        if used > 0 {
            self.authenticated();
        }
        self.position.inner_read(used);
        self.position.delivered(n);
        (used, n)
    }

    /// With threads: every whole segment of the window that fits in `buf`
    /// as one run on the workers (the one that ends the window too, as in
    /// [`window_segments`](Self::window_segments)). `None`: no run (fewer
    /// than two segments qualify).
    fn window_run(&mut self, window: &[u8], buf: &mut [u8]) -> Option<(usize, usize)> {
        let (Some(r), Some(s)) = (&mut self.ring, &self.stream) else {
            return None;
        };
        match open_run(r.workers(), s, self.next, window, buf, true, |_| ()) {
            Ok(run) if run.tried == 0 => None,
            Ok(run) => {
                self.counts.opens.add(run.tried);
                self.counts.runs.add(1);
                if run.opened < run.tried {
                    // The copying path settles it, with the full rules.
                    self.in_place.fail(self.next + run.opened as u64);
                }
                self.next += run.opened as u64;
                if run.opened > 0 {
                    self.authenticated();
                }
                self.position.inner_read(run.used);
                self.position.delivered(run.plain);
                Some((run.used, run.plain))
            }
            Err(e) => {
                // The copying path reports it (sticky).
                self.fail(e);
                Some((0, 0))
            }
        }
    }

    /// One thread: the segments of the window, each opened as non-final
    /// into `buf` while they fit, or the first one into the plaintext
    /// buffer (`into_plain`). Returns the bytes of `window` used and the
    /// bytes put in `buf`.
    fn window_segments(
        &mut self,
        layout: &Fixed,
        window: &[u8],
        buf: &mut [u8],
        into_plain: bool,
    ) -> (usize, usize) {
        let Some(Setup { suite, .. }) = &self.stream else {
            return (0, 0);
        };
        // Far enough in for the threads, the call ends: the next one makes
        // them and opens the rest of the window as runs.
        let alone = self.alone_left().map_or(u64::MAX, |left| left.max(1));
        let (mut used, mut n) = (0, 0);
        loop {
            let index = self.next;
            let (plain, sealed) = (layout.plain(index), layout.sealed(index));
            // A segment that ends the window is tried too (as non-final:
            // only a non-final one opens so). Left to the copying path, it
            // would be copied, and, the read being short, tried as final
            // first: a wasted pass per window. The cost instead: one
            // failed pass per stream whose final segment is full-length.
            if window.len() - used < sealed {
                break;
            }
            let ciphertext = &window[used..used + sealed];
            let opened = if into_plain {
                let Ok(out) = self.plain.open_into(plain) else {
                    // Left to the copying path, which reports the failure.
                    break;
                };
                suite.open_at(index, false, &[], ciphertext, &mut out[..plain])
            } else if buf.len() - n >= plain {
                suite.open_at(index, false, &[], ciphertext, &mut buf[n..n + plain])
            } else {
                break;
            };
            self.counts.opens.add(1);
            if opened.is_err() {
                self.in_place.fail(index);
                break;
            }
            self.next += 1;
            used += sealed;
            if into_plain {
                let held = Held {
                    index,
                    len: plain,
                    last: false,
                };
                self.plain.opened(held, plain, 0);
                break;
            }
            n += plain;
            if n as u64 >= alone {
                break;
            }
        }
        (used, n)
    }
}

#[cfg(test)]
mod tests {
    use super::InPlace;

    #[test]
    fn a_segment_that_failed_in_place_is_not_tried_there_again() {
        let mut off = InPlace::new(false);
        off.fail(3);
        assert!(!off.is_on() && !off.may_try(0) && !off.failed_at(3));
        let mut on = InPlace::new(true);
        assert!(on.may_try(3) && !on.failed_at(3));
        on.fail(3);
        assert!(!on.may_try(3) && on.may_try(4) && on.failed_at(3));
        on.reset();
        assert!(on.may_try(3) && !on.failed_at(3));
    }
}
