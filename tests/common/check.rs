//! Assertions: typed errors, "only an authenticated prefix of the
//! plaintext was released", sticky errors, and the harness that reads a
//! damaged stream every way and checks all three.

use std::io::{self, ErrorKind, Read};

use cipherio::{CipherReader, DEFAULT_CAPACITY, Error, Provider, ReaderBuilder, StreamKey};

use super::doubles::ScriptReader;
use super::drive::{ReadMode, read_in};
use super::front::{Front, FrontReader};
use super::layout::Layout;
use super::no_plaintext;

/// The `cipherio::Error` inside `e`, checking that the kinds agree and are
/// those of a damaged stream (`InvalidData` or `UnexpectedEof`).
pub fn crate_error(ctx: &str, e: &io::Error) -> Error {
    let ce = Error::from_io(e)
        .unwrap_or_else(|| panic!("{ctx}: error {e:?} carries no cipherio::Error"))
        .clone();
    assert_eq!(e.kind(), ce.kind(), "{ctx}: io kind vs crate error {ce:?}");
    assert!(
        matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::UnexpectedEof),
        "{ctx}: kind {:?} for a damaged stream",
        e.kind()
    );
    ce
}

/// The crate error `e` carries, if any (no check of its kind).
pub fn crate_error_of(e: &io::Error) -> Option<Error> {
    Error::from_io(e).cloned()
}

/// Errors are sticky: three more reads (of 0, 1 and many bytes) and a
/// `fill_buf` all fail with `first` again, never `Ok` (an `Ok(0)` would
/// look like a clean end), and leave no plaintext in the buffer.
pub fn assert_sticky<R: Read + Unpin>(ctx: &str, r: &mut FrontReader<R>, first: &Error) {
    for len in [0usize, 1, 4096] {
        let mut b = vec![0xAAu8; len];
        match r.read(&mut b) {
            Ok(n) => panic!("{ctx}: read({len}) after {first:?} returned Ok({n})"),
            Err(e) => assert_eq!(&crate_error(ctx, &e), first, "{ctx}: read({len}) again"),
        }
        assert!(no_plaintext(&b), "{ctx}: plaintext after the error");
    }
    match r.fill_buf() {
        Ok(b) => panic!(
            "{ctx}: fill_buf after {first:?} returned Ok({} bytes)",
            b.len()
        ),
        Err(e) => assert_eq!(&crate_error(ctx, &e), first, "{ctx}: fill_buf again"),
    }
}

/// The error a damaged stream must end in.
#[derive(Clone, Debug)]
pub enum Want {
    Is(Error),
    /// The crate error whose `Debug` form this is: how a test names a
    /// struct-like variant, which is `#[non_exhaustive]` and so cannot be
    /// built outside the crate.
    Shows(String),
    /// Any crate error of kind `InvalidData`.
    InvalidData,
    /// `Truncated` or `Authentication`.
    CutOrAuth,
    /// Any crate error of a damaged stream (`InvalidData` or
    /// `UnexpectedEof`, as [`crate_error`] checks): a damaged header may
    /// fail as either.
    Damaged,
}

impl Want {
    /// `ce` is what this wants (its kind is the `io::Error`'s, as
    /// [`crate_error`] checks).
    pub fn check(&self, ctx: &str, ce: &Error) {
        match self {
            Want::Is(w) => assert_eq!(ce, w, "{ctx}"),
            Want::Shows(w) => assert_eq!(&format!("{ce:?}"), w, "{ctx}"),
            Want::InvalidData => assert_eq!(ce.kind(), ErrorKind::InvalidData, "{ctx}: {ce:?}"),
            Want::CutOrAuth => assert!(
                matches!(ce, Error::Truncated | Error::Authentication),
                "{ctx}: {ce:?}"
            ),
            Want::Damaged => {}
        }
    }
}

/// How much plaintext a damaged stream may release before its error.
#[derive(Clone, Copy, Debug)]
pub enum Upto {
    /// Exactly this many bytes.
    Exactly(usize),
    /// Between these many (inclusive), on a segment boundary.
    Between(usize, usize),
    /// Exactly one of these two (an authenticated segment that may be
    /// released or held back before the error).
    Either(usize, usize),
}

impl Upto {
    /// `got` released bytes are as many as this says (for `Between`,
    /// without the boundary check of [`check_released`]).
    pub fn check_count(&self, ctx: &str, got: usize) {
        match *self {
            Upto::Exactly(n) => assert_eq!(got, n, "{ctx}: plaintext bytes before the error"),
            Upto::Between(lo, hi) => assert!(
                (lo..=hi).contains(&got),
                "{ctx}: {got} plaintext bytes before the error, want {lo}..={hi}"
            ),
            Upto::Either(a, b) => assert!(
                got == a || got == b,
                "{ctx}: {got} plaintext bytes before the error, want {a} or {b}"
            ),
        }
    }
}

/// Only an authenticated prefix was released: `got` is a prefix of `pt`,
/// as long as `upto` says, and (for `Between`) ends on a segment boundary.
pub fn check_released(ctx: &str, got: &[u8], pt: &[u8], layout: &Layout, upto: Upto) {
    assert!(
        got.len() <= pt.len() && got == &pt[..got.len()],
        "{ctx}: released bytes are not a prefix of the plaintext"
    );
    upto.check_count(ctx, got.len());
    if let Upto::Between(..) = upto {
        assert!(
            layout.boundaries(pt.len()).contains(&got.len()),
            "{ctx}: {} bytes do not end on a segment boundary",
            got.len()
        );
    }
}

/// Reads `stream` through `front` with `builder` in `buf_len`-byte reads
/// into buffers filled with 0xAA: every returned byte is the plaintext's,
/// the rest of each buffer holds none, also in the call that fails (a
/// provider may decrypt a segment into the caller's buffer before it
/// checks the tag: only the wipe after a failed open keeps it from the
/// caller). The error is typed and sticky. Returns the bytes released and
/// the error.
pub fn read_watching(
    ctx: &str,
    front: Front,
    builder: ReaderBuilder,
    stream: &[u8],
    pt: &[u8],
    buf_len: usize,
) -> (usize, Error) {
    let ctx = &format!("{ctx} [{front:?}]");
    let mut r = front.build_reader(builder, stream);
    let mut done = 0;
    loop {
        let mut buf = vec![0xAAu8; buf_len];
        match r.read(&mut buf) {
            Ok(0) => panic!("{ctx}: clean end of stream after {done} bytes"),
            Ok(n) => {
                assert_eq!(&buf[..n], &pt[done..done + n], "{ctx}");
                assert!(
                    no_plaintext(&buf[n..]),
                    "{ctx}: plaintext left past the {n} returned bytes"
                );
                done += n;
            }
            Err(e) => {
                assert!(
                    no_plaintext(&buf),
                    "{ctx}: unverified plaintext in the buffer of a failed read"
                );
                let ce = crate_error(ctx, &e);
                // And again, into a fresh buffer of the same size.
                let mut again = vec![0xAAu8; buf_len];
                assert!(r.read(&mut again).is_err(), "{ctx}: error is sticky");
                assert!(no_plaintext(&again), "{ctx}: plaintext after the error");
                assert_sticky(ctx, &mut r, &ce);
                return (done, ce);
            }
        }
    }
}

/// [`read_watching`] on every front with every provider, which must
/// agree: returns their common outcome.
pub fn read_watching_everywhere(
    ctx: &str,
    builder: &ReaderBuilder,
    stream: &[u8],
    pt: &[u8],
    buf_len: usize,
) -> (usize, Error) {
    let mut results = Front::ALL.iter().flat_map(|&front| {
        Provider::ALL.iter().map(move |&rp| {
            let ctx = format!("{ctx} [read by {rp:?}]");
            read_watching(
                &ctx,
                front,
                builder.clone().provider(rp),
                stream,
                pt,
                buf_len,
            )
        })
    });
    let first = results.next().expect("at least one front and provider");
    for other in results {
        assert_eq!(other, first, "{ctx}: providers or fronts disagree");
    }
    first
}

/// [`read_watching_everywhere`] with `key`'s default reader (no
/// associated data). (AWS-LC decrypts a segment into the caller's buffer
/// before it checks the tag: only the wipe after a failed open keeps that
/// plaintext from the caller.)
pub fn read_watching_key<K: StreamKey>(
    ctx: &str,
    key: &K,
    stream: &[u8],
    pt: &[u8],
    buf_len: usize,
) -> (usize, Error) {
    read_watching_everywhere(ctx, &CipherReader::builder(key), stream, pt, buf_len)
}

/// (reader capacity, bytes the inner reader hands out per call) that a
/// damaged stream is read with.
pub const TAMPER_CONFIGS: [(usize, usize); 4] = [
    (DEFAULT_CAPACITY, usize::MAX),
    (1, usize::MAX),
    (40, usize::MAX),
    (DEFAULT_CAPACITY, 1),
];

/// The read patterns a damaged stream is read with: `read_to_end`, 1-byte
/// reads, reads of one segment (of each size), reads of several segments
/// (the zero-copy path coalesces), `BufRead`.
pub fn tamper_patterns(l: &Layout) -> Vec<ReadMode> {
    let mut v = vec![
        ReadMode::ToEnd,
        ReadMode::Chunks(1),
        ReadMode::Chunks(l.first),
    ];
    if l.rest != l.first {
        v.push(ReadMode::Chunks(l.rest));
    }
    v.push(ReadMode::Chunks(5 * l.rest + 3));
    v.push(ReadMode::FillBuf(usize::MAX));
    v
}

/// A stream to damage: how to read it and what it holds.
pub struct Tamper<'a> {
    pub ctx: &'a str,
    /// The reader's builder (key, associated data); capacity and provider
    /// are set per reading.
    pub builder: &'a ReaderBuilder,
    pub layout: &'a Layout,
    pub pt: &'a [u8],
}

impl Tamper<'_> {
    /// Reads `stream` with every front, provider, configuration and
    /// pattern: `check` gets the context, the reader and how it ended.
    fn each_reading(
        &self,
        configs: &[(usize, usize)],
        pats: &[ReadMode],
        stream: &[u8],
        check: impl Fn(&str, &mut FrontReader<ScriptReader<'_>>, Vec<u8>, io::Result<()>),
    ) {
        for &front in Front::ALL {
            for &rp in Provider::ALL {
                for &(cap, chunk) in configs {
                    for pattern in pats {
                        let ctx = format!(
                            "{} [{front:?}, read by {rp:?}, cap {cap}, chunk {chunk}, {pattern:?}]",
                            self.ctx
                        );
                        let builder = self.builder.clone().provider(rp).capacity(cap);
                        let inner = ScriptReader::new(stream).max_per_call(chunk);
                        let mut r = front.build_reader(builder, inner);
                        let (got, res) = read_in(&mut r, pattern);
                        check(&ctx, &mut r, got, res);
                    }
                }
            }
        }
    }

    /// Reads `stream` on every front, with every provider, in `configs` ×
    /// `pats`: every reading ends in an error as `want` says (never a
    /// clean end), released only an authenticated prefix (`upto`), and the
    /// error is sticky.
    pub fn fail_in(
        &self,
        configs: &[(usize, usize)],
        pats: &[ReadMode],
        stream: &[u8],
        want: &Want,
        upto: Upto,
    ) {
        self.each_reading(configs, pats, stream, |ctx, r, got, res| {
            let Err(e) = res else {
                panic!("{ctx}: clean end of stream after {} bytes", got.len())
            };
            let ce = crate_error(ctx, &e);
            want.check(ctx, &ce);
            check_released(ctx, &got, self.pt, self.layout, upto);
            assert_sticky(ctx, r, &ce);
        });
    }

    /// [`Tamper::fail_in`] every configuration and pattern.
    pub fn fail(&self, stream: &[u8], want: &Want, upto: Upto) {
        self.fail_in(
            &TAMPER_CONFIGS,
            &tamper_patterns(self.layout),
            stream,
            want,
            upto,
        );
    }

    /// The untampered `stream` reads back to the plaintext in every
    /// configuration and pattern, with a stable end (so a failure elsewhere
    /// is the tampering's doing, not the harness's).
    pub fn clean(&self, stream: &[u8]) {
        let pats = tamper_patterns(self.layout);
        self.each_reading(&TAMPER_CONFIGS, &pats, stream, |ctx, r, got, res| {
            res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert!(got == self.pt, "{ctx}: wrong plaintext");
            assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0, "{ctx}: end is stable");
        });
    }
}
