//! Random access: `Seek for CipherReader<R: Read + Seek>` and
//! `CipherReader::plaintext_len` (positions come from the layout, the end
//! only from an authenticated final segment), from
//! outside, against the plaintext and the layout model of `common::layout`
//! (written from the format descriptions, not from the crate's layout).
//!
//! - A model-checked proptest: random sequences of seeks (`Start`,
//!   `Current`, `End`, past the end, back to 0, negative), reads of random
//!   sizes, `read_exact`, `fill_buf`/`consume` and length queries against
//!   the plaintext (position and bytes `pt[pos..]`), for every algorithm,
//!   segment sizes 1, 17, 4 KiB and 64 KiB, every Tink parameter set the
//!   tests use (the shorter first segment), plaintext lengths 0, 1 and
//!   around segment boundaries; over `Cursor<Vec<u8>>` (`build` and
//!   `build_from_buf_read`) and a real `File` (`build`, and
//!   `build_from_buf_read` over a `BufReader<File>`), the stream starting
//!   after unrelated bytes in the source, small and large reader
//!   capacities, every provider pair. `stream_position` matches the model
//!   after every operation.
//! - Attacks: truncation at every byte, appended bytes, a swapped final
//!   segment, a flipped byte where a seek lands; each makes the affected
//!   call fail with a typed, sticky error, never wrong data or a position
//!   computed from unauthenticated bytes. A flipped byte elsewhere does not
//!   affect reads that never open its segment (locality).
//! - Counts from outside, through a counting `Read + Seek` double: a seek
//!   alone moves and reads nothing; `plaintext_len` reads the final segment
//!   once (cached); a read after `SeekFrom::End(-n)` within the final
//!   segment does no inner I/O; a read after a seek asks the inner reader
//!   for the one segment that holds the position, at the model's offset.
//! - The empty stream, reads across segment boundaries after a seek, and
//!   positions far past the end.

#![allow(clippy::unwrap_used)]

mod common;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider, ReaderBuilder};
use proptest::prelude::*;

use common::{KIB, Layout, TAG, crate_error, data, no_plaintext, pairs};

const ALGS: [Algorithm; 3] = [
    Algorithm::Aes128Gcm,
    Algorithm::Aes256Gcm,
    Algorithm::ChaCha20Poly1305,
];

/// Native segment sizes.
const SEGMENTS: [usize; 4] = [1, 17, 4 * KIB, 64 * KIB];

/// Reader capacities: small (below a segment of most layouts) and large.
const CAPACITIES: [usize; 4] = [1, 7, 100, 64 * KIB];

/// Every Tink parameter set the tests use: the four named ones and small
/// custom ones (first segment of one plaintext byte, odd sizes, every
/// HKDF hash).
fn tink_params() -> Vec<AesGcmHkdfParams> {
    vec![
        AesGcmHkdfParams::AES128_GCM_HKDF_4KB,
        AesGcmHkdfParams::AES256_GCM_HKDF_4KB,
        AesGcmHkdfParams::AES128_GCM_HKDF_1MB,
        AesGcmHkdfParams::AES256_GCM_HKDF_1MB,
        AesGcmHkdfParams::new(16, 16 + 8 + TAG + 1, HkdfHash::Sha256).unwrap(),
        AesGcmHkdfParams::new(32, 32 + 8 + TAG + 1, HkdfHash::Sha512).unwrap(),
        AesGcmHkdfParams::new(16, 16 + 8 + TAG + 24, HkdfHash::Sha256).unwrap(),
        AesGcmHkdfParams::new(16, 48, HkdfHash::Sha256).unwrap(),
        AesGcmHkdfParams::new(32, 64, HkdfHash::Sha512).unwrap(),
        AesGcmHkdfParams::new(16, 100, HkdfHash::Sha1).unwrap(),
        AesGcmHkdfParams::new(32, 200, HkdfHash::Sha512).unwrap(),
        AesGcmHkdfParams::new(32, 4113, HkdfHash::Sha512).unwrap(),
    ]
}

// ---------------------------------------------------------------------
// Streams.
// ---------------------------------------------------------------------

/// A stream format: native (algorithm, segment size) or Tink.
#[derive(Clone, Copy, Debug)]
enum Fmt {
    Native(Algorithm, usize),
    Tink(AesGcmHkdfParams),
}

impl Fmt {
    fn layout(&self) -> Layout {
        match self {
            Fmt::Native(_, s) => Layout::native(*s),
            Fmt::Tink(p) => Layout::of_tink(p),
        }
    }

    /// Every format: each algorithm at each segment size, each Tink set.
    fn all() -> Vec<Fmt> {
        let mut v: Vec<Fmt> = ALGS
            .iter()
            .flat_map(|&a| SEGMENTS.iter().map(move |&s| Fmt::Native(a, s)))
            .collect();
        v.extend(tink_params().into_iter().map(Fmt::Tink));
        v
    }

    /// Small formats for the exhaustive attacks: every algorithm at 17-byte
    /// segments, 1-byte segments, small Tink sets.
    fn small() -> Vec<Fmt> {
        let mut v: Vec<Fmt> = ALGS.iter().map(|&a| Fmt::Native(a, 17)).collect();
        v.push(Fmt::Native(Algorithm::ChaCha20Poly1305, 1));
        v.push(Fmt::Tink(
            AesGcmHkdfParams::new(16, 16 + 8 + TAG + 1, HkdfHash::Sha256).unwrap(),
        ));
        v.push(Fmt::Tink(
            AesGcmHkdfParams::new(32, 64, HkdfHash::Sha512).unwrap(),
        ));
        v.push(Fmt::Tink(
            AesGcmHkdfParams::new(16, 100, HkdfHash::Sha1).unwrap(),
        ));
        v
    }

    fn key(&self) -> AnyKey {
        match self {
            Fmt::Native(a, s) => AnyKey::Native(Key::generate(*a), *s),
            Fmt::Tink(p) => AnyKey::Tink(AesGcmHkdfKey::generate(*p)),
        }
    }

    /// Plaintext lengths to test: 0, 1, and one less, at and one more
    /// than the start of segments 1..=3 (k·segment ± 1, the shorter first
    /// segment for Tink), capped for large segments.
    fn lengths(&self) -> Vec<usize> {
        let l = self.layout();
        let segs: &[usize] = if l.rest >= 64 * KIB {
            &[1, 2]
        } else {
            &[1, 2, 3]
        };
        let extra: &[usize] = if l.rest <= 17 { &[40, 100] } else { &[] };
        l.lengths_around(segs, extra)
    }
}

enum AnyKey {
    Native(Key, usize),
    Tink(AesGcmHkdfKey),
}

impl AnyKey {
    fn seal(&self, pt: &[u8], p: Provider) -> Vec<u8> {
        let sealed = match self {
            AnyKey::Native(k, s) => {
                let mut w = CipherWriter::builder(k)
                    .capacity(*s)
                    .provider(p)
                    .build(Vec::new());
                w.write_all(pt).unwrap();
                w.finish()
            }
            AnyKey::Tink(k) => {
                let mut w = CipherWriter::builder(k).provider(p).build(Vec::new());
                w.write_all(pt).unwrap();
                w.finish()
            }
        };
        sealed.unwrap()
    }

    fn reader(&self, p: Provider, capacity: usize) -> ReaderBuilder {
        match self {
            AnyKey::Native(k, _) => CipherReader::builder(k),
            AnyKey::Tink(k) => CipherReader::builder(k),
        }
        .provider(p)
        .capacity(capacity)
    }
}

/// A sealed stream with its plaintext and layout.
struct Sealed {
    key: AnyKey,
    layout: Layout,
    pt: Vec<u8>,
    ct: Vec<u8>,
}

impl Sealed {
    fn new(fmt: Fmt, len: usize, seed: u64, writer: Provider) -> Sealed {
        let key = fmt.key();
        let layout = fmt.layout();
        let pt = data(len, seed);
        let ct = key.seal(&pt, writer);
        assert_eq!(ct.len(), layout.stream_len(len), "{fmt:?}: stream length");
        Sealed {
            key,
            layout,
            pt,
            ct,
        }
    }

    fn segments(&self) -> usize {
        self.layout.segments(self.pt.len())
    }

    /// A reader (`build`) over `ct` in a `Cursor`.
    fn over(&self, ct: Vec<u8>, p: Provider, capacity: usize) -> CipherReader<Cursor<Vec<u8>>> {
        self.key.reader(p, capacity).build(Cursor::new(ct))
    }

    /// Plaintext bytes of segment `i`.
    fn plain_len(&self, i: usize) -> usize {
        self.layout.plain_segments(&self.pt)[i].len()
    }
}

/// A temporary file, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(bytes: &[u8]) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "cipherio-seek-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Reads from the current position until `Ok(0)` or an error, in
/// `chunk`-byte reads into buffers filled with 0xAA (whose unreturned
/// part must hold no plaintext). Returns the bytes and the error.
fn drain<R: Read>(ctx: &str, r: &mut R, chunk: usize) -> (Vec<u8>, Option<io::Error>) {
    let mut got = Vec::new();
    for _ in 0..1_000_000 {
        let mut b = vec![0xAAu8; chunk];
        match r.read(&mut b) {
            Ok(0) => return (got, None),
            Ok(n) => {
                assert!(n <= chunk, "{ctx}: read {n} > {chunk}");
                assert!(no_plaintext(&b[n..]), "{ctx}: plaintext past Ok({n})");
                got.extend_from_slice(&b[..n]);
            }
            Err(e) => {
                assert!(
                    no_plaintext(&b),
                    "{ctx}: plaintext in a failed read's buffer"
                );
                return (got, Some(e));
            }
        }
    }
    panic!("{ctx}: the reader never ends");
}

/// The error of the next `read`, `fill_buf`, `seek` and `plaintext_len`
/// is `first` again (sticky), and leaves no plaintext in the buffer.
fn assert_sticky<R: Read + Seek>(ctx: &str, r: &mut CipherReader<R>, first: &Error) {
    for len in [0usize, 1, 4096] {
        let mut b = vec![0xAAu8; len];
        match r.read(&mut b) {
            Ok(n) => panic!("{ctx}: read({len}) after {first:?} returned Ok({n})"),
            Err(e) => assert_eq!(&crate_error(ctx, &e), first, "{ctx}: read({len}) again"),
        }
        assert!(no_plaintext(&b), "{ctx}: plaintext after the error");
    }
    match r.fill_buf() {
        Ok(b) => panic!("{ctx}: fill_buf after {first:?}: Ok({} bytes)", b.len()),
        Err(e) => assert_eq!(&crate_error(ctx, &e), first, "{ctx}: fill_buf again"),
    }
    for to in [SeekFrom::Start(0), SeekFrom::End(0), SeekFrom::Current(1)] {
        match r.seek(to) {
            Ok(p) => panic!("{ctx}: seek({to:?}) after {first:?}: Ok({p})"),
            Err(e) => assert_eq!(&crate_error(ctx, &e), first, "{ctx}: seek({to:?})"),
        }
    }
    let mut b = vec![0xAAu8; 10];
    assert!(r.read(&mut b).is_err(), "{ctx}: read after the seeks");
    assert!(no_plaintext(&b), "{ctx}");
}

// ---------------------------------------------------------------------
// 1. The model-checked proptest.
// ---------------------------------------------------------------------

/// One operation; numbers are mapped onto the stream's length and layout
/// by [`Model::target`].
#[derive(Clone, Debug)]
enum Op {
    Start(u8, u32),
    Current(u8, u32),
    End(u8, u32),
    Read(u32),
    ReadExact(u32),
    /// `fill_buf`, then `consume` of `v % (available + 1)` bytes.
    Fill(u32),
    Len,
    /// A read into an empty buffer.
    Empty,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u8>(), any::<u32>()).prop_map(|(s, x)| Op::Start(s, x)),
        2 => (any::<u8>(), any::<u32>()).prop_map(|(s, x)| Op::Current(s, x)),
        2 => (any::<u8>(), any::<u32>()).prop_map(|(s, x)| Op::End(s, x)),
        3 => any::<u32>().prop_map(Op::Read),
        2 => any::<u32>().prop_map(Op::ReadExact),
        2 => any::<u32>().prop_map(Op::Fill),
        1 => Just(Op::Len),
        1 => Just(Op::Empty),
    ]
}

/// The plaintext and the position a reader must be at.
struct Model<'a> {
    pt: &'a [u8],
    layout: Layout,
    pos: u64,
}

impl Model<'_> {
    fn len(&self) -> u64 {
        self.pt.len() as u64
    }

    /// A plaintext offset chosen by `sel`: 0, the end, past the end (near
    /// or far), around a segment boundary, or anywhere inside.
    fn target(&self, sel: u8, x: u32) -> u64 {
        let len = self.len();
        let x64 = u64::from(x);
        let rest = self.layout.rest as u64;
        match sel % 8 {
            0 => 0,
            1 => len,
            2 => len + 1 + x64 % (2 * rest + 3),
            3 => (1u64 << 40) + x64,
            4 => {
                let segs = self.layout.segments(self.pt.len());
                let b = self.layout.plain_before(x as usize % (segs + 1)) as u64;
                (b + u64::from(x >> 30)).saturating_sub(1)
            }
            _ => x64 % (len + 1),
        }
    }

    /// Whether `sel` asks for a seek before 0.
    fn negative(sel: u8) -> bool {
        sel >= 0xF0
    }

    fn size(&self, x: u32) -> usize {
        let max = (3 * self.layout.rest.max(self.layout.first) + 5).min(200 * KIB);
        match x % 4 {
            0 => x as usize % 4 + 1,
            _ => (x >> 2) as usize % (max + 1),
        }
    }

    fn avail(&self) -> &[u8] {
        let p = usize::try_from(self.pos.min(self.len())).unwrap();
        &self.pt[p..]
    }
}

/// Runs `ops` on `r` against the model; `ctx` names the case.
fn run_ops<R: Read + Seek>(ctx: &str, r: &mut CipherReader<R>, m: &mut Model, ops: &[Op]) {
    for (k, op) in ops.iter().enumerate() {
        let ctx = &format!("{ctx}, op {k} {op:?} at {}", m.pos);
        match *op {
            Op::Start(s, x) => {
                let t = m.target(s, x);
                assert_eq!(r.seek(SeekFrom::Start(t)).unwrap(), t, "{ctx}");
                m.pos = t;
            }
            Op::Current(s, x) | Op::End(s, x) => {
                let from = if matches!(op, Op::Current(..)) {
                    m.pos
                } else {
                    m.len()
                };
                let (d, ok) = if Model::negative(s) {
                    (-i64::try_from(from).unwrap() - 1 - i64::from(x % 5), false)
                } else {
                    let t = m.target(s, x);
                    (
                        i64::try_from(i128::from(t) - i128::from(from)).unwrap(),
                        true,
                    )
                };
                let to = if matches!(op, Op::Current(..)) {
                    SeekFrom::Current(d)
                } else {
                    SeekFrom::End(d)
                };
                match r.seek(to) {
                    Ok(p) => {
                        assert!(ok, "{ctx}: seek({to:?}) before 0 gave Ok({p})");
                        assert_eq!(p, from.checked_add_signed(d).unwrap(), "{ctx}");
                        m.pos = p;
                    }
                    Err(e) => {
                        assert!(!ok, "{ctx}: seek({to:?}): {e}");
                        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{ctx}: {e}");
                    }
                }
            }
            Op::Read(x) => {
                let n = m.size(x);
                let mut b = vec![0xAAu8; n];
                let k = r.read(&mut b).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let want = m.avail();
                assert!(k <= n, "{ctx}");
                if n > 0 && !want.is_empty() {
                    assert!(k > 0, "{ctx}: Ok(0) before the end");
                }
                assert!(b[..k] == want[..k], "{ctx}: wrong bytes");
                assert!(no_plaintext(&b[k..]), "{ctx}: plaintext past Ok({k})");
                m.pos += k as u64;
            }
            Op::ReadExact(x) => {
                let n = m.size(x);
                let mut b = vec![0xAAu8; n];
                let want = m.avail();
                match r.read_exact(&mut b) {
                    Ok(()) => {
                        assert!(n <= want.len(), "{ctx}: read_exact past the end");
                        assert!(b == want[..n], "{ctx}: wrong bytes");
                        m.pos += n as u64;
                    }
                    Err(e) => {
                        assert!(n > want.len(), "{ctx}: {e}");
                        assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{ctx}: {e}");
                        assert!(Error::from_io(&e).is_none(), "{ctx}: {e:?}");
                        // The default read_exact reads up to the end.
                        m.pos = m.pos.max(m.len());
                    }
                }
            }
            Op::Fill(x) => {
                let want = m.avail();
                let b = r.fill_buf().unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(b.is_empty(), want.is_empty(), "{ctx}: fill_buf");
                assert!(
                    b.len() <= want.len() && b == &want[..b.len()],
                    "{ctx}: fill_buf bytes"
                );
                let c = x as usize % (b.len() + 1);
                r.consume(c);
                m.pos += c as u64;
            }
            Op::Len => {
                assert_eq!(r.plaintext_len().unwrap(), m.len(), "{ctx}");
            }
            Op::Empty => {
                assert_eq!(r.read(&mut []).unwrap(), 0, "{ctx}");
            }
        }
        assert_eq!(
            r.stream_position().unwrap(),
            m.pos,
            "{ctx}: stream_position"
        );
    }
    // Then the rest, from wherever the ops left it, to a clean end.
    let (got, err) = drain(ctx, r, 3000);
    assert!(err.is_none(), "{ctx}: final drain: {err:?}");
    assert!(got == m.avail(), "{ctx}: final drain bytes");
    assert_eq!(
        r.stream_position().unwrap(),
        m.pos.max(m.len()),
        "{ctx}: at the end"
    );
}

/// The sources a reader is built over.
#[derive(Clone, Copy, Debug)]
enum Source {
    CursorBuild,
    CursorBufRead,
    FileBuild,
    /// `build_from_buf_read` over a `BufReader<File>` of this capacity.
    BufFile(usize),
}

/// Runs one proptest case: seals `fmt` at the `len_i`-th length, puts it
/// after `prefix` unrelated bytes in `source`, and runs `ops`.
#[allow(clippy::too_many_arguments)]
fn case(
    fmt: Fmt,
    len_i: usize,
    pair: usize,
    cap: usize,
    prefix: usize,
    source: Source,
    seed: u64,
    ops: &[Op],
    threads: usize,
) {
    let lens = fmt.lengths();
    let len = lens[len_i % lens.len()];
    let (wp, rp) = pairs()[pair % pairs().len()];
    let cap = CAPACITIES[cap % CAPACITIES.len()];
    let s = Sealed::new(fmt, len, seed, wp);
    let mut bytes = vec![0x5Au8; prefix];
    bytes.extend_from_slice(&s.ct);
    let ctx = format!(
        "{fmt:?} len {len}, {wp:?}->{rp:?}, capacity {cap}, prefix {prefix}, {source:?}, threads {threads}"
    );
    let mut m = Model {
        pt: &s.pt,
        layout: s.layout,
        pos: 0,
    };
    let b = s.key.reader(rp, cap).threads(threads).threads_after(0);
    match source {
        Source::CursorBuild | Source::CursorBufRead => {
            let mut c = Cursor::new(bytes);
            c.set_position(prefix as u64);
            if matches!(source, Source::CursorBuild) {
                run_ops(&ctx, &mut b.build(c), &mut m, ops);
            } else {
                run_ops(&ctx, &mut b.build_from_buf_read(c), &mut m, ops);
            }
        }
        Source::FileBuild | Source::BufFile(_) => {
            let tmp = TempFile::new(&bytes);
            let mut f = File::open(&tmp.0).unwrap();
            f.seek(SeekFrom::Start(prefix as u64)).unwrap();
            if let Source::BufFile(c) = source {
                let inner = BufReader::with_capacity(c, f);
                run_ops(&ctx, &mut b.build_from_buf_read(inner), &mut m, ops);
            } else {
                run_ops(&ctx, &mut b.build(f), &mut m, ops);
            }
        }
    }
}

/// One thread, mostly; sometimes a threaded reader (its runs, and the
/// first segment of a run kept for a seek back into it).
fn threads() -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(1usize), 1 => Just(2), 1 => Just(3)]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..40)
}

fn native_fmt() -> impl Strategy<Value = Fmt> {
    (0..ALGS.len(), 0..SEGMENTS.len()).prop_map(|(a, s)| Fmt::Native(ALGS[a], SEGMENTS[s]))
}

fn tink_fmt() -> impl Strategy<Value = Fmt> {
    (0..tink_params().len()).prop_map(|i| Fmt::Tink(tink_params()[i]))
}

fn cursor_source() -> impl Strategy<Value = Source> {
    prop_oneof![Just(Source::CursorBuild), Just(Source::CursorBufRead)]
}

fn file_source() -> impl Strategy<Value = Source> {
    prop_oneof![
        Just(Source::FileBuild),
        prop_oneof![Just(1usize), Just(64), Just(8 * KIB), Just(256 * KIB)]
            .prop_map(Source::BufFile),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn model_native_cursor(
        fmt in native_fmt(), len_i in any::<usize>(), pair in any::<usize>(), cap in any::<usize>(),
        prefix in prop_oneof![Just(0usize), 1..70usize], source in cursor_source(),
        seed in any::<u64>(), ops in ops(), threads in threads(),
    ) {
        case(fmt, len_i, pair, cap, prefix, source, seed, &ops, threads);
    }

    #[test]
    fn model_tink_cursor(
        fmt in tink_fmt(), len_i in any::<usize>(), pair in any::<usize>(), cap in any::<usize>(),
        prefix in prop_oneof![Just(0usize), 1..70usize], source in cursor_source(),
        seed in any::<u64>(), ops in ops(), threads in threads(),
    ) {
        case(fmt, len_i, pair, cap, prefix, source, seed, &ops, threads);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn model_file(
        fmt in prop_oneof![native_fmt(), tink_fmt()], len_i in any::<usize>(), pair in any::<usize>(),
        cap in any::<usize>(), prefix in prop_oneof![Just(0usize), 1..70usize],
        source in file_source(), seed in any::<u64>(), ops in ops(), threads in threads(),
    ) {
        case(fmt, len_i, pair, cap, prefix, source, seed, &ops, threads);
    }
}

/// Every format, length and source once, with a fixed sequence that visits
/// the cases the proptest may miss: back to 0 after the end, `End` before
/// any read, the length query mid-stream.
#[test]
fn model_fixed_sequence_every_format_and_length() {
    let ops = [
        Op::End(0, 0),             // End(-len): to 0
        Op::Read(5),               // 2 bytes (or fewer)
        Op::End(1, 0),             // End(0)
        Op::Read(7),               // Ok(0)
        Op::Start(0, 0),           // back to 0
        Op::ReadExact(9),          // 3 bytes
        Op::Current(2, 3),         // past the end
        Op::Fill(1),               // nothing
        Op::Start(4, 1 | 1 << 30), // the start of segment 1
        Op::ReadExact(4 * 3 + 1),  // 4 bytes
        Op::Len,
        Op::Start(5, 12345),
        Op::Fill(u32::MAX),
        Op::Current(0xF0, 0), // before 0: InvalidInput
        Op::Start(3, 7),      // 2^40 + 7
        Op::Read(1),
        Op::Start(0, 0),
    ];
    for fmt in Fmt::all() {
        for (i, _) in fmt.lengths().iter().enumerate() {
            for (k, source) in [Source::CursorBuild, Source::CursorBufRead]
                .into_iter()
                .enumerate()
            {
                for threads in [1, 2] {
                    case(fmt, i, i + k, i + k, 3 * k, source, i as u64, &ops, threads);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// 2. Attacks.
// ---------------------------------------------------------------------

/// Plaintext length for the attack streams: three full segments and a
/// short final one (four segments; the Tink first one shorter).
fn attack_len(l: &Layout) -> usize {
    l.plain_before(3) + l.rest / 2 + 1
}

/// The error a stream cut to `c` bytes must give: `Truncated` when the
/// cut is in the header, at a segment boundary, or leaves less than a tag
/// of the last segment; else `Authentication` (a partial segment opened as
/// the final one).
fn cut_error(l: &Layout, c: usize) -> Error {
    if c < l.header {
        return Error::Truncated;
    }
    let i = l.seg_of(c);
    let r = c - l.seg_start(i);
    if r < TAG {
        Error::Truncated
    } else {
        Error::Authentication
    }
}

/// Truncation at every byte (every segment boundary, inside every segment
/// and tag, inside the header): `plaintext_len` and `SeekFrom::End` fail
/// with the typed error (sticky), and reads from any position give only
/// bytes of complete segments before the cut, then an error, never
/// `Ok(0)`.
#[test]
fn truncation_fails_length_end_and_reads_past_the_cut() {
    for fmt in Fmt::small() {
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&fmt.layout()), 7, wp);
            let l = s.layout;
            let len = s.pt.len();
            for c in 0..s.ct.len() {
                let ctx = &format!("{fmt:?} {wp:?}->{rp:?} cut at {c} of {}", s.ct.len());
                let cut = s.ct[..c].to_vec();
                let want = cut_error(&l, c);
                // The length query.
                let mut r = s.over(cut.clone(), rp, 64);
                let e = r.plaintext_len().unwrap_err();
                let ce = crate_error(ctx, &e);
                assert_eq!(ce, want, "{ctx}: plaintext_len");
                assert_eq!(r.stream_position().unwrap(), 0, "{ctx}");
                assert_sticky(ctx, &mut r, &ce);
                match r.plaintext_len() {
                    Ok(n) => panic!("{ctx}: plaintext_len again: Ok({n})"),
                    Err(e) => assert_eq!(crate_error(ctx, &e), ce, "{ctx}"),
                }
                // SeekFrom::End on a fresh reader.
                for d in [0i64, -1, 5] {
                    let mut r = s.over(cut.clone(), rp, 7);
                    match r.seek(SeekFrom::End(d)) {
                        Ok(p) => panic!("{ctx}: seek(End({d})) = Ok({p})"),
                        Err(e) => assert_eq!(crate_error(ctx, &e), want, "{ctx}: End({d})"),
                    }
                    assert_eq!(r.stream_position().unwrap(), 0, "{ctx}: position moved");
                }
                // Reads from positions before, at and past the cut. The
                // complete segments before the cut (none of them final)
                // may be released, nothing else.
                let complete = (0..s.segments())
                    .take_while(|&i| l.seg_start(i) + l.sealed(i) <= c)
                    .count();
                let ok_upto = if c < l.header {
                    0
                } else {
                    l.plain_before(complete)
                };
                let mut starts: Vec<usize> = l.boundaries(len);
                starts.extend([1, len - 1, len + 3, ok_upto.saturating_sub(1), ok_upto + 1]);
                for p in starts {
                    for (chunk, cap) in [(1usize, 1usize), (5, 64 * KIB), (4096, 7)] {
                        let ctx = &format!("{ctx}: from {p}, reads of {chunk}, capacity {cap}");
                        let mut r = s.over(cut.clone(), rp, cap);
                        assert_eq!(r.seek(SeekFrom::Start(p as u64)).unwrap(), p as u64);
                        let (got, err) = drain(ctx, &mut r, chunk);
                        let e = err.unwrap_or_else(|| {
                            panic!("{ctx}: Ok(0) after {} bytes on a cut stream", got.len())
                        });
                        let ce = crate_error(ctx, &e);
                        assert!(
                            matches!(ce, Error::Truncated | Error::Authentication),
                            "{ctx}: {ce:?}"
                        );
                        assert!(
                            got.is_empty()
                                || (p + got.len() <= ok_upto && got == s.pt[p..p + got.len()]),
                            "{ctx}: {} bytes released (complete segments end at {ok_upto})",
                            got.len()
                        );
                        assert_sticky(ctx, &mut r, &ce);
                    }
                }
            }
        }
    }
}

/// Bytes after the final segment: `plaintext_len`, `SeekFrom::End` and a
/// read of the whole stream fail; no length is computed from the raw one.
#[test]
fn appended_bytes_fail_the_length() {
    for fmt in Fmt::small() {
        let l = fmt.layout();
        // A short final segment, and a full one.
        for len in [attack_len(&l), l.plain_before(3)] {
            for (wp, rp) in pairs() {
                let s = Sealed::new(fmt, len, 11, wp);
                let (header, segs) = l.split(&s.ct);
                let n = segs.len();
                let extras: Vec<(&str, Vec<u8>)> = vec![
                    ("1 zero", vec![0]),
                    ("15 bytes", vec![1; 15]),
                    ("a tag's worth", vec![2; TAG]),
                    ("17 bytes", vec![3; 17]),
                    ("a full segment", vec![4; l.sealed(1)]),
                    ("the final segment again", segs[n - 1].clone()),
                    ("segment 1 again", segs[1].clone()),
                    ("the header", header.clone()),
                ];
                for (what, extra) in extras {
                    let ctx = &format!("{fmt:?} len {len} {wp:?}->{rp:?} + {what}");
                    let mut ct = s.ct.clone();
                    ct.extend_from_slice(&extra);
                    let mut r = s.over(ct.clone(), rp, 100);
                    let e = match r.plaintext_len() {
                        Ok(n) => panic!("{ctx}: plaintext_len = Ok({n})"),
                        Err(e) => e,
                    };
                    let ce = crate_error(ctx, &e);
                    assert_sticky(ctx, &mut r, &ce);
                    let mut r = s.over(ct.clone(), rp, 100);
                    if let Ok(p) = r.seek(SeekFrom::End(0)) {
                        panic!("{ctx}: seek(End(0)) = Ok({p})")
                    }
                    // Sequentially too, after a seek back to the start.
                    let mut r = s.over(ct, rp, 100);
                    r.seek(SeekFrom::Start(1)).unwrap();
                    r.seek(SeekFrom::Current(-1)).unwrap();
                    let (got, err) = drain(ctx, &mut r, 1000);
                    assert!(err.is_some(), "{ctx}: a clean end after the extension");
                    assert!(got == s.pt[..got.len()], "{ctx}");
                }
            }
        }
    }
}

/// The last two segments swapped: the length query and a read where
/// either lies fail with `Authentication`; the segments before still
/// read.
#[test]
fn swapped_final_segment_fails() {
    for fmt in Fmt::small() {
        let l = fmt.layout();
        for len in [attack_len(&l), l.plain_before(3)] {
            for (wp, rp) in pairs() {
                let s = Sealed::new(fmt, len, 13, wp);
                let (header, mut segs) = l.split(&s.ct);
                let n = segs.len();
                segs.swap(n - 1, n - 2);
                let ct = common::join(&header, &segs);
                let ctx = &format!("{fmt:?} len {len} {wp:?}->{rp:?}, last two swapped");
                let mut r = s.over(ct.clone(), rp, 100);
                let e = r.plaintext_len().unwrap_err();
                let ce = crate_error(ctx, &e);
                assert_eq!(ce, Error::Authentication, "{ctx}");
                assert_sticky(ctx, &mut r, &ce);
                let mut r = s.over(ct.clone(), rp, 100);
                let e = r.seek(SeekFrom::End(-1)).unwrap_err();
                assert_eq!(crate_error(ctx, &e), Error::Authentication, "{ctx}");
                for i in [n - 2, n - 1] {
                    let p = l.plain_before(i);
                    let mut r = s.over(ct.clone(), rp, 7);
                    r.seek(SeekFrom::Start(p as u64)).unwrap();
                    let (got, err) = drain(ctx, &mut r, 3);
                    assert!(got.is_empty(), "{ctx}: {} bytes from {p}", got.len());
                    assert_eq!(
                        crate_error(ctx, &err.unwrap()),
                        Error::Authentication,
                        "{ctx}: from {p}"
                    );
                }
                // Before them: the intact segments, then the error.
                let mut r = s.over(ct, rp, 7);
                r.seek(SeekFrom::Start(1)).unwrap();
                let (got, err) = drain(ctx, &mut r, 10);
                assert!(err.is_some(), "{ctx}");
                assert!(got == s.pt[1..l.plain_before(n - 2)], "{ctx}");
            }
        }
    }
}

/// A flipped byte in the segment a seek lands on: the read after the seek
/// fails (`Authentication`), releases nothing, and the error is sticky; a
/// flip in the final segment fails `plaintext_len`, one elsewhere does not.
#[test]
fn flipped_byte_where_a_seek_lands_fails_the_read() {
    for fmt in Fmt::small() {
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&fmt.layout()), 17, wp);
            let l = s.layout;
            let n = s.segments();
            for i in 0..n {
                let range = l.seg_range(s.ct.len(), i);
                let flips = [range.start, (range.start + range.end) / 2, range.end - 1];
                for at in flips {
                    let mut ct = s.ct.clone();
                    ct[at] ^= 0x20;
                    let pl = s.plain_len(i);
                    let b = l.plain_before(i);
                    for p in [b, b + pl / 2, b + pl - 1] {
                        for (chunk, cap) in
                            [(1usize, 1usize), (l.rest, 100), (4 * l.rest, 64 * KIB)]
                        {
                            let ctx = &format!(
                                "{fmt:?} {wp:?}->{rp:?}, byte {at} (segment {i}) flipped, \
                                 from {p}, reads of {chunk}, capacity {cap}"
                            );
                            let mut r = s.over(ct.clone(), rp, cap);
                            assert_eq!(r.seek(SeekFrom::Start(p as u64)).unwrap(), p as u64);
                            let mut buf = vec![0xAAu8; chunk];
                            let e = match r.read(&mut buf) {
                                Ok(k) => panic!("{ctx}: Ok({k})"),
                                Err(e) => e,
                            };
                            assert!(no_plaintext(&buf), "{ctx}: plaintext in the buffer");
                            let ce = crate_error(ctx, &e);
                            assert_eq!(ce, Error::Authentication, "{ctx}");
                            assert_sticky(ctx, &mut r, &ce);
                        }
                        // read_exact and fill_buf too.
                        let ctx = &format!("{fmt:?} byte {at} flipped, from {p}");
                        let mut r = s.over(ct.clone(), rp, 100);
                        r.seek(SeekFrom::Start(p as u64)).unwrap();
                        let mut buf = [0xAAu8; 2];
                        let e = r.read_exact(&mut buf).unwrap_err();
                        assert_eq!(crate_error(ctx, &e), Error::Authentication, "{ctx}");
                        assert!(no_plaintext(&buf), "{ctx}");
                        let mut r = s.over(ct.clone(), rp, 100);
                        r.seek(SeekFrom::Start(p as u64)).unwrap();
                        let e = r.fill_buf().map(<[u8]>::len).unwrap_err();
                        assert_eq!(crate_error(ctx, &e), Error::Authentication, "{ctx}");
                    }
                    // The length query opens only the final segment.
                    let ctx = &format!("{fmt:?} {wp:?}->{rp:?}, byte {at} (segment {i}) flipped");
                    let mut r = s.over(ct.clone(), rp, 100);
                    if i == n - 1 {
                        let e = r.plaintext_len().unwrap_err();
                        assert_eq!(crate_error(ctx, &e), Error::Authentication, "{ctx}");
                        assert!(r.seek(SeekFrom::End(0)).is_err(), "{ctx}");
                    } else {
                        assert_eq!(r.plaintext_len().unwrap(), s.pt.len() as u64, "{ctx}");
                        assert_eq!(r.seek(SeekFrom::End(-1)).unwrap(), s.pt.len() as u64 - 1);
                        let mut one = [0u8];
                        r.read_exact(&mut one).unwrap();
                        assert_eq!(one[0], s.pt[s.pt.len() - 1], "{ctx}");
                    }
                }
            }
            // A flipped header byte: the first read after a seek fails.
            for at in [0, s.layout.header / 2, s.layout.header - 1] {
                let mut ct = s.ct.clone();
                ct[at] ^= 1;
                let ctx = &format!("{fmt:?} {wp:?}->{rp:?}, header byte {at} flipped");
                let mut r = s.over(ct.clone(), rp, 100);
                r.seek(SeekFrom::Start(l.plain_before(2) as u64)).unwrap();
                let mut buf = [0xAAu8; 8];
                let e = r.read(&mut buf).unwrap_err();
                let ce = crate_error(ctx, &e);
                assert!(no_plaintext(&buf), "{ctx}");
                assert_sticky(ctx, &mut r, &ce);
                let mut r = s.over(ct, rp, 100);
                assert!(r.plaintext_len().is_err(), "{ctx}: plaintext_len");
            }
        }
    }
}

/// Locality: a flipped byte in segment `j` does not affect a seek and read
/// that stays within another segment `i`, whatever the read-ahead.
#[test]
fn flipped_byte_elsewhere_does_not_affect_a_seek_and_read() {
    for fmt in Fmt::small() {
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&fmt.layout()), 19, wp);
            let l = s.layout;
            let n = s.segments();
            for j in 0..n {
                let range = l.seg_range(s.ct.len(), j);
                let mut ct = s.ct.clone();
                ct[(range.start + range.end) / 2] ^= 4;
                for i in (0..n).filter(|&i| i != j) {
                    for cap in CAPACITIES {
                        let ctx = &format!(
                            "{fmt:?} {wp:?}->{rp:?}, segment {j} damaged, segment {i} read, \
                             capacity {cap}"
                        );
                        let b = l.plain_before(i);
                        let pl = s.plain_len(i);
                        let mut r = s.over(ct.clone(), rp, cap);
                        r.seek(SeekFrom::Start(b as u64)).unwrap();
                        let mut buf = vec![0u8; pl];
                        r.read_exact(&mut buf)
                            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert!(buf == s.pt[b..b + pl], "{ctx}");
                        // Back into it from its end, by Current.
                        let back = i64::try_from(pl).unwrap();
                        assert_eq!(r.seek(SeekFrom::Current(-back)).unwrap(), b as u64);
                        let mut one = [0u8; 1];
                        r.read_exact(&mut one).unwrap();
                        assert_eq!(one[0], s.pt[b], "{ctx}");
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// 3. Counts from outside.
// ---------------------------------------------------------------------

/// A `Read + Seek` double that counts: reads and bytes, moving seeks and
/// position queries (`Current(0)`), and the ranges it read.
struct Counting<R> {
    inner: R,
    at: u64,
    reads: usize,
    bytes: usize,
    moves: Vec<SeekFrom>,
    queries: usize,
    ranges: Vec<(u64, usize)>,
}

impl<R: Seek> Counting<R> {
    fn new(mut inner: R) -> Self {
        let at = inner.stream_position().unwrap();
        Counting {
            inner,
            at,
            reads: 0,
            bytes: 0,
            moves: Vec::new(),
            queries: 0,
            ranges: Vec::new(),
        }
    }

    /// (reads, moves) so far.
    fn io(&self) -> (usize, usize) {
        (self.reads, self.moves.len())
    }

    /// Bytes read from `lo..hi`, over all reads.
    fn read_of(&self, lo: u64, hi: u64) -> u64 {
        self.ranges
            .iter()
            .map(|&(a, n)| {
                let b = a + n as u64;
                b.min(hi).saturating_sub(a.max(lo))
            })
            .sum()
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.reads += 1;
        self.bytes += n;
        self.ranges.push((self.at, n));
        self.at += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if pos == SeekFrom::Current(0) {
            self.queries += 1;
        } else {
            self.moves.push(pos);
        }
        self.at = self.inner.seek(pos)?;
        Ok(self.at)
    }
}

fn count_formats() -> Vec<Fmt> {
    vec![
        Fmt::Native(Algorithm::Aes128Gcm, 17),
        Fmt::Native(Algorithm::ChaCha20Poly1305, 4 * KIB),
        Fmt::Native(Algorithm::Aes256Gcm, 64 * KIB),
        Fmt::Tink(AesGcmHkdfParams::AES128_GCM_HKDF_4KB),
        Fmt::Tink(AesGcmHkdfParams::new(32, 64, HkdfHash::Sha512).unwrap()),
    ]
}

/// A seek alone does no inner I/O (no read, no move), before and after
/// reads, whatever the target.
#[test]
fn count_a_seek_alone_does_no_inner_io() {
    for fmt in count_formats() {
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&fmt.layout()), 23, wp);
            let len = s.pt.len() as u64;
            let ctx = &format!("{fmt:?} {wp:?}->{rp:?}");
            let mut r = s
                .key
                .reader(rp, 100)
                .build(Counting::new(Cursor::new(s.ct.clone())));
            for to in [
                SeekFrom::Start(3),
                SeekFrom::Start(len / 2),
                SeekFrom::Current(5),
                SeekFrom::Current(-5),
                SeekFrom::Start(len + 100),
                SeekFrom::Start(0),
            ] {
                r.seek(to).unwrap();
            }
            assert_eq!(r.get_ref().io(), (0, 0), "{ctx}: seeks before any read");
            assert!(r.get_ref().queries <= 1, "{ctx}: position queries");
            let mut b = [0u8; 3];
            r.read_exact(&mut b).unwrap();
            let before = r.get_ref().io();
            for to in [
                SeekFrom::Start(len - 1),
                SeekFrom::Current(-7),
                SeekFrom::Start(1),
            ] {
                r.seek(to).unwrap();
            }
            assert_eq!(r.get_ref().io(), before, "{ctx}: seeks after a read");
        }
    }
}

/// `plaintext_len` reads the final segment once: the second call (and
/// `SeekFrom::End`) does no inner I/O; the bytes of the final segment are
/// read exactly once; it moves the inner reader only to find the end and
/// to the final segment's model offset.
#[test]
fn count_plaintext_len_reads_the_final_segment_once() {
    for fmt in count_formats() {
        let l = fmt.layout();
        for len in [0, 1, attack_len(&l), l.plain_before(3)] {
            for (wp, rp) in pairs() {
                for prefix in [0usize, 9] {
                    let s = Sealed::new(fmt, len, 29, wp);
                    let ctx = &format!("{fmt:?} len {len} {wp:?}->{rp:?} prefix {prefix}");
                    let mut bytes = vec![0u8; prefix];
                    bytes.extend_from_slice(&s.ct);
                    let mut c = Cursor::new(bytes);
                    c.set_position(prefix as u64);
                    let mut r = s.key.reader(rp, 1).build(Counting::new(c));
                    assert_eq!(r.plaintext_len().unwrap(), len as u64, "{ctx}");
                    let after = r.get_ref().io();
                    let last = s.segments() - 1;
                    let range = l.seg_range(s.ct.len(), last);
                    let (lo, hi) = ((range.start + prefix) as u64, (range.end + prefix) as u64);
                    // Read once; when the final segment is segment 0, the
                    // header's read-ahead (capacity 1) may have taken its
                    // first byte before.
                    let once = r.get_ref().read_of(lo, hi);
                    assert!(
                        once == hi - lo || (last == 0 && once == hi - lo + 1),
                        "{ctx}: {once} bytes of the {}-byte final segment read",
                        hi - lo
                    );
                    let moves = &r.get_ref().moves;
                    assert!(moves.contains(&SeekFrom::End(0)), "{ctx}: {moves:?}");
                    for m in moves {
                        assert!(
                            matches!(m, SeekFrom::End(0)) || *m == SeekFrom::Start(lo),
                            "{ctx}: inner seek {m:?}, final segment at {lo}"
                        );
                    }
                    assert_eq!(r.plaintext_len().unwrap(), len as u64, "{ctx}");
                    assert_eq!(r.seek(SeekFrom::End(0)).unwrap(), len as u64, "{ctx}");
                    assert_eq!(r.get_ref().io(), after, "{ctx}: the second query did I/O");
                    assert_eq!(r.get_ref().read_of(lo, hi), once, "{ctx}");
                    // And reading from 0 still works.
                    r.seek(SeekFrom::Start(0)).unwrap();
                    let (got, err) = drain(ctx, &mut r, 1000);
                    assert!(err.is_none(), "{ctx}: {err:?}");
                    assert!(got == s.pt, "{ctx}");
                }
            }
        }
    }
}

/// After `SeekFrom::End(-n)` with `n` within the final segment, reading
/// those `n` bytes and the end (`Ok(0)`) does no inner I/O at all.
#[test]
fn count_read_after_end_within_the_final_segment_does_no_io() {
    for fmt in count_formats() {
        let l = fmt.layout();
        for len in [1, attack_len(&l), l.plain_before(3)] {
            for (wp, rp) in pairs() {
                let s = Sealed::new(fmt, len, 31, wp);
                let last = s.segments() - 1;
                let fl = s.plain_len(last);
                for cap in [1, 64 * KIB] {
                    for n in [1, fl / 2, fl].into_iter().filter(|&n| n >= 1) {
                        let ctx = &format!("{fmt:?} len {len} {wp:?}->{rp:?} cap {cap} End(-{n})");
                        let mut r = s
                            .key
                            .reader(rp, cap)
                            .build(Counting::new(Cursor::new(s.ct.clone())));
                        let to = SeekFrom::End(-i64::try_from(n).unwrap());
                        assert_eq!(r.seek(to).unwrap(), (len - n) as u64, "{ctx}");
                        let io = r.get_ref().io();
                        let mut b = vec![0u8; n];
                        r.read_exact(&mut b).unwrap();
                        assert!(b == s.pt[len - n..], "{ctx}");
                        assert_eq!(r.read(&mut [0u8; 10]).unwrap(), 0, "{ctx}");
                        assert_eq!(r.get_ref().io(), io, "{ctx}: inner I/O after the seek");
                        assert_eq!(r.stream_position().unwrap(), len as u64, "{ctx}");
                    }
                }
            }
        }
    }
}

/// A read after a seek into a middle segment moves the inner reader once,
/// to that segment's model offset, and reads (with capacity 1) only that
/// segment; a read across a boundary reads the next one too.
#[test]
fn count_a_read_after_a_seek_reads_one_segment_at_its_offset() {
    for fmt in count_formats() {
        let l = fmt.layout();
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&l), 37, wp);
            for prefix in [0usize, 5] {
                for i in 1..s.segments() - 1 {
                    let ctx = &format!("{fmt:?} {wp:?}->{rp:?} prefix {prefix} segment {i}");
                    let mut bytes = vec![0u8; prefix];
                    bytes.extend_from_slice(&s.ct);
                    let mut c = Cursor::new(bytes);
                    c.set_position(prefix as u64);
                    let mut r = s.key.reader(rp, 1).build(Counting::new(c));
                    // The header first, by a read at 0.
                    let mut one = [0u8; 1];
                    r.read_exact(&mut one).unwrap();
                    let (reads0, bytes0) = (r.get_ref().reads, r.get_ref().bytes);
                    let moves0 = r.get_ref().moves.len();
                    let p = l.plain_before(i) + l.rest / 2;
                    r.seek(SeekFrom::Start(p as u64)).unwrap();
                    r.read_exact(&mut one).unwrap();
                    assert_eq!(one[0], s.pt[p], "{ctx}");
                    let at = (prefix + l.seg_start(i)) as u64;
                    // Segment 1 follows the read-ahead (segment 0 opened):
                    // the reader may go on reading instead of moving.
                    let moves = r.get_ref().moves[moves0..].to_vec();
                    assert!(
                        moves == [SeekFrom::Start(at)] || (i == 1 && moves.is_empty()),
                        "{ctx}: inner moves {moves:?}, segment at {at}"
                    );
                    assert!(r.get_ref().reads > reads0, "{ctx}");
                    let read = r.get_ref().bytes - bytes0;
                    assert_eq!(read, l.sealed(i), "{ctx}: bytes read for one segment");
                    // Across the boundary into i + 1: one more segment.
                    let b1 = l.plain_before(i + 1);
                    let mut two = vec![0u8; b1 + 2 - (p + 1)];
                    r.read_exact(&mut two).unwrap();
                    assert!(two == s.pt[p + 1..b1 + 2], "{ctx}: across the boundary");
                    assert_eq!(
                        r.get_ref().moves.len(),
                        moves0 + moves.len(),
                        "{ctx}: moved again"
                    );
                    let read = r.get_ref().bytes - bytes0;
                    let want = l.sealed(i) + l.seg_range(s.ct.len(), i + 1).len();
                    assert!(read <= want, "{ctx}: {read} bytes read for two segments");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// 4. The empty stream; 5. across boundaries; far past the end.
// ---------------------------------------------------------------------

#[test]
fn empty_stream_length_zero_seeks_anywhere_reads_nothing() {
    for fmt in Fmt::all() {
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, 0, 41, wp);
            for source in [Source::CursorBuild, Source::CursorBufRead] {
                let ctx = &format!("{fmt:?} {wp:?}->{rp:?} {source:?}");
                let c = Cursor::new(s.ct.clone());
                let b = s.key.reader(rp, 5);
                let mut r = match source {
                    Source::CursorBuild => b.build(c),
                    _ => b.build_from_buf_read(c),
                };
                // A read before anything, then the length.
                assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0, "{ctx}");
                assert_eq!(r.plaintext_len().unwrap(), 0, "{ctx}");
                for (to, want) in [
                    (SeekFrom::Start(0), 0),
                    (SeekFrom::Start(5), 5),
                    (SeekFrom::End(0), 0),
                    (SeekFrom::End(3), 3),
                    (SeekFrom::Current(7), 10),
                    (SeekFrom::Current(-10), 0),
                    (SeekFrom::Start(1 << 40), 1 << 40),
                ] {
                    assert_eq!(r.seek(to).unwrap(), want, "{ctx}: {to:?}");
                    assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0, "{ctx}: {to:?}");
                    assert!(r.fill_buf().unwrap().is_empty(), "{ctx}: {to:?}");
                    assert_eq!(r.stream_position().unwrap(), want, "{ctx}");
                }
                let e = r.seek(SeekFrom::End(-1)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{ctx}");
                assert_eq!(r.stream_position().unwrap(), 1 << 40, "{ctx}: moved");
                // A fresh reader: a seek past the end, then a read first.
                let mut r = s.over(s.ct.clone(), rp, 5);
                r.seek(SeekFrom::Start(9)).unwrap();
                assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0, "{ctx}: fresh");
                let mut r = s.over(s.ct.clone(), rp, 5);
                assert_eq!(r.seek(SeekFrom::End(0)).unwrap(), 0, "{ctx}: fresh End");
                assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0, "{ctx}: fresh End");
            }
        }
    }
}

/// Seek to a little before a segment boundary and read across one or more
/// boundaries: the right bytes, whatever the read pattern.
#[test]
fn seek_then_read_across_segment_boundaries() {
    for fmt in Fmt::all() {
        let l = fmt.layout();
        if l.rest > 4113 {
            continue;
        }
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&l), 43, wp);
            let len = s.pt.len();
            for i in 1..s.segments() {
                let b = l.plain_before(i);
                for back in [1usize, 3, l.rest] {
                    let p = b.saturating_sub(back);
                    for n in [back + 1, back + l.rest + 1, len - p] {
                        let n = n.min(len - p);
                        for cap in [1, 100, 64 * KIB] {
                            let ctx =
                                &format!("{fmt:?} {wp:?}->{rp:?} from {p}, {n} bytes, cap {cap}");
                            let mut r = s.over(s.ct.clone(), rp, cap);
                            r.seek(SeekFrom::Start(p as u64)).unwrap();
                            let mut buf = vec![0u8; n];
                            r.read_exact(&mut buf).unwrap();
                            assert!(buf == s.pt[p..p + n], "{ctx}: read_exact");
                            // By fill_buf/consume from the same place, after
                            // a seek back by Current.
                            let back = i64::try_from(n).unwrap();
                            r.seek(SeekFrom::Current(-back)).unwrap();
                            let mut got = Vec::new();
                            while got.len() < n {
                                let f = r.fill_buf().unwrap();
                                assert!(!f.is_empty(), "{ctx}: fill_buf empty");
                                let k = f.len().min(n - got.len());
                                got.extend_from_slice(&f[..k]);
                                r.consume(k);
                            }
                            assert!(got == s.pt[p..p + n], "{ctx}: fill_buf");
                        }
                    }
                }
            }
        }
    }
}

/// Positions far past the end, up to `u64::MAX`: a seek there succeeds,
/// a read there returns `Ok(0)` (after authenticating the end), and
/// `Current` past `u64::MAX` fails with `InvalidInput`.
#[test]
fn seek_far_past_the_end() {
    for fmt in [
        Fmt::Native(Algorithm::Aes128Gcm, 1),
        Fmt::Native(Algorithm::Aes128Gcm, 17),
        Fmt::Native(Algorithm::ChaCha20Poly1305, 64 * KIB),
        Fmt::Tink(AesGcmHkdfParams::new(16, 16 + 8 + TAG + 1, HkdfHash::Sha256).unwrap()),
        Fmt::Tink(AesGcmHkdfParams::AES128_GCM_HKDF_4KB),
    ] {
        let l = fmt.layout();
        for (wp, rp) in pairs() {
            let s = Sealed::new(fmt, attack_len(&l), 47, wp);
            for p in [
                1u64 << 32,
                1 << 40,
                1 << 60,
                i64::MAX as u64,
                u64::MAX - 1,
                u64::MAX,
            ] {
                let ctx = &format!("{fmt:?} {wp:?}->{rp:?} at {p}");
                let mut r = s.over(s.ct.clone(), rp, 100);
                assert_eq!(r.seek(SeekFrom::Start(p)).unwrap(), p, "{ctx}");
                match (
                    r.seek(SeekFrom::Current(i64::MAX)),
                    p.checked_add(i64::MAX as u64),
                ) {
                    (Ok(q), Some(w)) => {
                        assert_eq!(q, w, "{ctx}");
                        r.seek(SeekFrom::Start(p)).unwrap();
                    }
                    (Err(e), None) => assert_eq!(e.kind(), ErrorKind::InvalidInput, "{ctx}"),
                    (got, want) => panic!("{ctx}: Current(i64::MAX): {got:?}, want {want:?}"),
                }
                assert_eq!(r.stream_position().unwrap(), p, "{ctx}");
                assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0, "{ctx}: read");
                assert_eq!(r.stream_position().unwrap(), p, "{ctx}");
                // And back.
                r.seek(SeekFrom::Start(2)).unwrap();
                let mut b = [0u8; 2];
                r.read_exact(&mut b).unwrap();
                assert_eq!(b[..], s.pt[2..4], "{ctx}");
            }
        }
    }
}

/// The smallest cases of the proptest's failures, pinned: after
/// `plaintext_len` (or `SeekFrom::End`), a read at the segment that the
/// reader would have read next (segment 0 on a fresh reader; the next
/// segment after reads that ended on a boundary) gives its plaintext.
#[test]
fn read_after_plaintext_len_at_the_next_segment() {
    for fmt in [
        Fmt::Native(Algorithm::Aes128Gcm, 17),
        Fmt::Tink(AesGcmHkdfParams::new(16, 16 + 8 + TAG + 24, HkdfHash::Sha256).unwrap()),
    ] {
        let l = fmt.layout();
        let s = Sealed::new(fmt, attack_len(&l), 53, Provider::ALL[0]);
        let rp = Provider::ALL[0];
        for cap in [1, 100] {
            let ctx = &format!("{fmt:?} capacity {cap}");
            // Fresh reader: the length, then a read at 0.
            let mut r = s.over(s.ct.clone(), rp, cap);
            assert_eq!(r.plaintext_len().unwrap(), s.pt.len() as u64, "{ctx}");
            let mut one = [0u8; 1];
            r.read_exact(&mut one)
                .unwrap_or_else(|e| panic!("{ctx}: plaintext_len, read at 0: {e:?}"));
            assert_eq!(one[0], s.pt[0], "{ctx}");
            // Fresh reader: End(-1), Start(0), read to the end.
            let mut r = s.over(s.ct.clone(), rp, cap);
            r.seek(SeekFrom::End(-1)).unwrap();
            r.seek(SeekFrom::Start(0)).unwrap();
            let (got, err) = drain(ctx, &mut r, 1000);
            assert!(err.is_none(), "{ctx}: End(-1), Start(0), read: {err:?}");
            assert!(got == s.pt, "{ctx}");
            // Segment 0 read whole, the length, then on.
            let mut r = s.over(s.ct.clone(), rp, cap);
            let mut first = vec![0u8; l.first];
            r.read_exact(&mut first).unwrap();
            assert_eq!(r.plaintext_len().unwrap(), s.pt.len() as u64, "{ctx}");
            let (got, err) = drain(ctx, &mut r, 1000);
            assert!(
                err.is_none(),
                "{ctx}: segment 0, plaintext_len, read on: {err:?}"
            );
            assert!(got == s.pt[l.first..], "{ctx}");
        }
    }
}

/// Found by the `seek` fuzz target: a Tink stream (16-byte key, 46-byte
/// ciphertext segments, HKDF-SHA512) of 176 plaintext bytes with 16 bytes
/// appended; a `read` of 895 bytes at 0 returns `Ok(156)` (the full
/// segments, right bytes) and the error comes with the next read; the
/// position must be 156 in between, as without the extension.
#[test]
fn position_after_a_read_before_a_deferred_error() {
    let fmt = Fmt::Tink(AesGcmHkdfParams::new(16, 46, HkdfHash::Sha512).unwrap());
    for (wp, rp) in pairs() {
        let s = Sealed::new(fmt, 176, 59, wp);
        for append in [1usize, 16, 17] {
            for bufread in [false, true] {
                let ctx = &format!("{wp:?}->{rp:?} + {append} bytes, bufread {bufread}");
                let mut ct = s.ct.clone();
                ct.extend(std::iter::repeat_n(0xFFu8, append));
                let b = s.key.reader(rp, 2048);
                let mut r = if bufread {
                    b.build_from_buf_read(Cursor::new(ct))
                } else {
                    b.build(Cursor::new(ct))
                };
                let mut buf = vec![0u8; 895];
                let n = r.read(&mut buf).unwrap();
                assert!(buf[..n] == s.pt[..n], "{ctx}");
                assert_eq!(
                    r.stream_position().unwrap(),
                    n as u64,
                    "{ctx}: after Ok({n})"
                );
            }
        }
    }
}

/// A `File` refuses to seek past the largest size its file system allows
/// (`EINVAL`; 16 TiB on ext4). A read at such a position is past any end:
/// it returns `Ok(0)` once the authenticated length confirms it, instead
/// of passing the refusal on (found by `model_file`, 1-byte segments).
#[test]
fn a_position_the_file_system_refuses_is_past_the_end() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt: Vec<u8> = (0..100u8).collect();
    let mut w = CipherWriter::with_capacity(1, &key, Vec::new());
    w.write_all(&pt).unwrap();
    let ct = w.finish().unwrap();
    let path = std::env::temp_dir().join(format!("cipherio-seek-far-{}", std::process::id()));
    std::fs::write(&path, &ct).unwrap();
    let mut r = CipherReader::new(&key, File::open(&path).unwrap());
    for p in [1u64 << 40, 1 << 50, 1 << 59] {
        assert_eq!(r.seek(SeekFrom::Start(p)).unwrap(), p);
        assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0, "at {p}");
        assert_eq!(r.stream_position().unwrap(), p);
    }
    r.seek(SeekFrom::Start(5)).unwrap();
    let mut b = [0u8; 3];
    r.read_exact(&mut b).unwrap();
    assert_eq!(b, [5, 6, 7]);
    std::fs::remove_file(&path).unwrap();
}

/// A seek back into the final segment before the check for data after it
/// (found by the `seek` fuzz target): the final segment of a Tink stream
/// with bytes appended was opened and released (the trailing data is
/// checked at the next read), then a seek into it reused its plaintext and
/// marked the stream done, and the reads after it ended cleanly. The end
/// must still be the trailing data, and on the intact stream a clean end;
/// over the reader's own read-ahead and over an inner `BufRead`.
#[test]
fn seeking_back_into_an_unconfirmed_final_segment_still_checks_what_follows() {
    let raw: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0x5C).collect();
    let key = AesGcmHkdfKey::new(
        AesGcmHkdfParams::new(16, 61, HkdfHash::Sha256).unwrap(),
        &raw[..16],
    )
    .unwrap();
    let pt = data(66, 3);
    let mut w = CipherWriter::builder(&key).build(Vec::new());
    w.write_all(&pt).unwrap();
    let ct = w.finish().unwrap();
    let mut extended = ct.clone();
    extended.extend_from_slice(&[0xEF; 20]);
    for (source, want) in [(&ct, None), (&extended, Some(Error::TrailingData))] {
        for buf_read in [false, true] {
            let ctx = format!("{} bytes, buf_read {buf_read}", source.len());
            let b = CipherReader::builder(&key).capacity(65);
            let mut r = if buf_read {
                b.build_from_buf_read(Cursor::new(source.clone()))
            } else {
                b.build(Cursor::new(source.clone()))
            };
            let mut head = vec![0u8; 21];
            r.read_exact(&mut head).unwrap();
            // The final segment, released before what follows is checked
            // (over its own read-ahead, the reader has seen what follows
            // already, and says so).
            let n = match r.fill_buf() {
                Ok(b) => b.len(),
                Err(e) => {
                    assert!(!buf_read, "{ctx}: {e}");
                    assert_eq!(Some(crate_error(&ctx, &e)), want, "{ctx}");
                    continue;
                }
            };
            assert_eq!(n, 45, "{ctx}");
            r.consume(35);
            r.seek(SeekFrom::Start(32)).unwrap();
            let (rest, end) = drain(&ctx, &mut r, 1000);
            assert!(rest == pt[32..], "{ctx}");
            assert_eq!(end.map(|e| crate_error(&ctx, &e)), want, "{ctx}");
        }
    }
}
