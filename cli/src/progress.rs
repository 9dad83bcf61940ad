//! The progress bar: on stderr, only when stderr is a terminal and `-q` is
//! not given, and only once the work has taken a second (a short command
//! draws nothing). Counts the input's bytes; with a known length it shows
//! the rate and the time left.

use std::io::{self, IsTerminal, Read};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work shorter than this draws no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Overrides [`SHOW_AFTER`] (milliseconds): the tests draw at once.
const SHOW_AFTER_ENV: &str = "CIPHERIO_PROGRESS_DELAY_MS";

fn show_after() -> Duration {
    std::env::var(SHOW_AFTER_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(SHOW_AFTER, Duration::from_millis)
}

/// The bar being drawn, for the signal thread to clear.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Clears the bar (if one is drawn) before the process dies of a signal.
pub fn clear_on_signal() {
    if let Ok(shown) = SHOWN.try_lock()
        && let Some(bar) = shown.as_ref()
    {
        bar.finish_and_clear();
    }
}

/// A reader that moves the bar by the bytes it reads.
pub struct Progress<R> {
    inner: R,
    bar: Option<ProgressBar>,
    start: Instant,
    after: Duration,
    shown: bool,
}

impl<R> Progress<R> {
    /// `len`: the total, if known; `quiet`: never draw.
    pub fn new(inner: R, len: Option<u64>, quiet: bool) -> Progress<R> {
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
            let style = if len.is_some() {
                "{bytes:>10}/{total_bytes} {binary_bytes_per_sec:>12} [{wide_bar}] {percent:>3}% {eta} left"
            } else {
                "{spinner} {bytes:>10} {binary_bytes_per_sec:>12} {elapsed}"
            };
            if let Ok(style) = ProgressStyle::with_template(style) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Progress {
            inner,
            bar,
            start: Instant::now(),
            after: show_after(),
            shown: false,
        }
    }

    fn advance(&mut self, n: usize) {
        let Some(bar) = &self.bar else { return };
        bar.inc(n as u64);
        if !self.shown && self.start.elapsed() >= self.after {
            self.shown = true;
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            if let Ok(mut shown) = SHOWN.lock() {
                *shown = Some(bar.clone());
            }
        }
    }
}

impl<R> Drop for Progress<R> {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            if let Ok(mut shown) = SHOWN.lock() {
                *shown = None;
            }
        }
    }
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.advance(n);
        Ok(n)
    }
}
