//! The `roundtrip` target: write, check against the spec, read back, then
//! damage the ciphertext once and read again.

use std::future::Future;
use std::io::Write;
use std::pin::{Pin, pin};
use std::task::Poll;

use arbitrary::Arbitrary;
use cipherio::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider, StreamKey};
use tokio::io::AsyncWrite;

use crate::aio::{self, AsyncInner, Script, ScriptWriter};
use crate::drive::{self, Inner, SCRATCH_LEN};
use crate::oracle::{self, HEADER_LEN, TAG_LEN};
use crate::{oracle_tink, oracle_tink_ctr};

/// Largest plaintext, so that every input runs in well under a millisecond
/// or so even with one-byte segments.
const MAX_PLAINTEXT: usize = 4096;

/// Bytes of async script: the plaintext's first ones, in async mode (see
/// [`Run::script`]).
pub const SCRIPT_LEN: usize = 9;

/// One `roundtrip` input: a native key and segment size, and the rest.
#[derive(Arbitrary, Debug)]
pub struct Input {
    alg: u8,
    key: [u8; 32],
    /// Writer capacity (segment size) is `1 + v % 300`.
    writer_capacity: u16,
    run: Run,
}

/// One `roundtrip_tink` input: Tink parameters and key, and the rest.
#[derive(Arbitrary, Debug)]
pub struct TinkInput {
    /// Bit 0: key size 16 or 32; `(v >> 1) % 3`: HKDF hash.
    params: u8,
    /// Ciphertext segment size above its minimum, mod 512.
    segment: u16,
    /// Raw key: `key_size + extra % 17` bytes of it.
    key: [u8; 48],
    extra: u8,
    run: Run,
}

/// What both round trips share: associated data, the caller's chunking on
/// both sides, the damage, the plaintext.
#[derive(Arbitrary, Debug)]
pub struct Run {
    aad: Vec<u8>,
    /// Reader capacity is `1 + v % 2048`; bit 14 picks the writer's
    /// provider and bit 15 the reader's (`Provider::ALL`); bit 13 adds a
    /// second round trip through the async fronts, scripted by the
    /// plaintext's first bytes (see [`Run::script`]).
    reader_capacity: u16,
    /// Write sizes, in turn; `None` is a `flush`.
    writes: Vec<Option<u16>>,
    /// Read ops, in turn (see `drive::drive`).
    reads: Vec<u8>,
    mutation: Mutation,
    /// The plaintext (async: its first [`SCRIPT_LEN`] bytes are the
    /// script too).
    plaintext: Vec<u8>,
}

/// How the async fronts are driven, from the script bytes `s`.
#[derive(Clone, Copy, Debug)]
struct AsyncScript {
    /// `s[0]`: the inner writer's write poll n pends (bit n % 8; polls
    /// counted per kind, `Pending`s included, at most
    /// `aio::MAX_PENDING` in a row).
    write: Script,
    /// `s[1]` bits 0..3: its flush poll n pends (bit n % 4).
    flush: Script,
    /// `s[1]` bits 4..6: its shutdown poll n pends (bit n % 3).
    shutdown: Script,
    /// `s[1]` bit 7: complete with `finish` (else `poll_shutdown`).
    finish: bool,
    /// `s[2]`, `s[3]`: bytes the inner writer takes per write, in turn
    /// (0: all).
    write_sizes: [u8; 2],
    /// `s[4]`: after the writer's k-th `Pending`, drop the op (go on with
    /// the next write size or flush) if bit k % 8 is set, else poll again.
    write_drop: Script,
    /// `s[5]`: the inner reader's poll n pends (bit n % 8).
    read_pending: Script,
    /// `s[6]`, `s[7]`: the inner reader's read sizes, in turn (0: as much
    /// as asked).
    read_sizes: [u8; 4],
    /// `s[8]`: after the reader's k-th `Pending`, drop the read op (bit
    /// k % 8), else poll again.
    read_drop: Script,
}

impl AsyncScript {
    fn new(s: [u8; SCRIPT_LEN]) -> Self {
        AsyncScript {
            write: Script::new(s[0], 8),
            flush: Script::new(s[1] & 15, 4),
            shutdown: Script::new(s[1] >> 4 & 7, 3),
            finish: s[1] & 0x80 != 0,
            write_sizes: [s[2], s[3]],
            write_drop: Script::new(s[4], 8),
            read_pending: Script::new(s[5], 8),
            read_sizes: [s[6], s[7], s[6], s[7]],
            read_drop: Script::new(s[8], 8),
        }
    }
}

/// What the async fronts did in one round trip (all 0 in std mode).
#[derive(Clone, Copy, Debug, Default)]
pub struct Trip {
    /// The writer's polls.
    pub write: aio::Stats,
    /// The reader's polls, over both reads (intact and damaged).
    pub read: aio::Stats,
    /// The async writer was completed by `finish` (else `poll_shutdown`).
    pub finish: bool,
}

/// One change to the ciphertext. Positions wrap around its length.
#[derive(Arbitrary, Debug)]
pub enum Mutation {
    /// Flip bit `bit % 8` of byte `at`.
    Flip { at: u32, bit: u8 },
    /// Keep only the first `len` bytes.
    Truncate { len: u32 },
    /// Insert bytes before byte `at` (or at the end).
    Insert { at: u32, bytes: Vec<u8> },
    /// Remove `len` bytes from `at`.
    Delete { at: u32, len: u16 },
    /// Overwrite byte `at`.
    Set { at: u32, byte: u8 },
}

impl Mutation {
    pub(crate) fn apply(&self, ct: &[u8]) -> Vec<u8> {
        let wrap = |at: u32, n: usize| at as usize % n.max(1);
        let mut m = ct.to_vec();
        match self {
            Mutation::Flip { at, bit } => m[wrap(*at, ct.len())] ^= 1 << (bit % 8),
            Mutation::Truncate { len } => m.truncate(wrap(*len, ct.len())),
            Mutation::Insert { at, bytes } => {
                let at = wrap(*at, ct.len() + 1);
                m.splice(at..at, bytes.iter().copied());
            }
            Mutation::Delete { at, len } => {
                let at = wrap(*at, ct.len());
                let end = (at + usize::from(*len).max(1)).min(ct.len());
                m.drain(at..end);
            }
            Mutation::Set { at, byte } => m[wrap(*at, ct.len())] = *byte,
        }
        m
    }
}

/// Where the segments are: the sealed span of segment 0 (with the header)
/// and of later ones, and their plaintext lengths; the header's length.
struct Segments {
    span: [usize; 2],
    plain: [usize; 2],
    header: usize,
}

impl Segments {
    /// The stream bytes a writer has put out after `taken` plaintext bytes
    /// and a flush: every segment that more data follows, sealed once
    /// (the header goes out with the first; a possibly final one is held).
    fn flushed_len(&self, taken: usize) -> usize {
        if taken <= self.plain[0] {
            return 0;
        }
        let k = 1 + (taken - self.plain[0] - 1) / self.plain[1];
        self.span[0] + (k - 1) * self.span[1]
    }

    /// Index of the segment holding byte `at` (the header is part of
    /// segment 0: both formats bind it to the first segment's tag).
    fn of_byte(&self, at: usize) -> usize {
        match at.checked_sub(self.span[0]) {
            None => 0,
            Some(d) => 1 + d / self.span[1],
        }
    }

    /// Plaintext bytes before segment `k`.
    fn boundary(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.plain[0] + (k - 1) * self.plain[1]
        }
    }
}

/// Writes `run`'s plaintext with its write sizes and flushes, through the
/// std writer or (`asynchronous`) the async one; after each flush the
/// stream holds exactly the segments sealed so far.
fn write<K: StreamKey>(
    key: &K,
    capacity: Option<usize>,
    run: &Run,
    segs: &Segments,
    asynchronous: bool,
) -> (Vec<u8>, aio::Stats) {
    let mut b = CipherWriter::builder(key)
        .associated_data(&run.aad)
        .provider(run.provider(14));
    if let Some(c) = capacity {
        b = b.capacity(c);
    }
    if asynchronous {
        return write_async(b, run, segs);
    }
    let mut w = b.build(Vec::new());
    let mut rest = run.plaintext();
    let mut taken = 0;
    for op in run.write_ops().iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let Some(n) = op else {
            w.flush().expect("flush into a Vec");
            assert_eq!(
                w.get_ref().len(),
                segs.flushed_len(taken),
                "flushed after {taken}"
            );
            continue;
        };
        let n = usize::from(*n).clamp(1, rest.len());
        let k = w.write(&rest[..n]).expect("write into a Vec");
        assert!(k <= n && k > 0, "write of {n} returned {k}");
        rest = &rest[k..];
        taken += k;
    }
    (
        w.finish().expect("finish into a Vec"),
        aio::Stats::default(),
    )
}

/// [`write`] through the async writer over a [`ScriptWriter`], polled by
/// hand as the run's script says: `poll_write` never `Ok(0)` for
/// non-empty input nor more than offered; after a flush the stream holds
/// exactly the segments sealed so far; completed by `finish` (the inner
/// writer flushed, not shut down) or by `poll_shutdown` (shut down once,
/// then polled again: ready, no inner poll; a write after it: `Finished`).
fn write_async(b: cipherio::WriterBuilder, run: &Run, segs: &Segments) -> (Vec<u8>, aio::Stats) {
    let s = AsyncScript::new(run.script());
    let inner = ScriptWriter::new(s.write_sizes, s.write, s.flush, s.shutdown);
    let mut w = b.build_async(inner);
    let mut cx = aio::cx();
    let mut stats = aio::Stats::default();
    let dropping = |stats: &mut aio::Stats| {
        let d = s.write_drop.at(stats.pendings);
        stats.pendings += 1;
        stats.dropped += usize::from(d);
        d
    };
    let mut rest = run.plaintext();
    let mut taken = 0;
    for op in run.write_ops().iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let Some(n) = op else {
            loop {
                match Pin::new(&mut w).poll_flush(&mut cx) {
                    Poll::Ready(Ok(())) => {
                        let inner = w.get_ref();
                        assert_eq!(inner.flushed, inner.data.len(), "flush did not flush");
                        assert_eq!(
                            inner.data.len(),
                            segs.flushed_len(taken),
                            "flushed after {taken}"
                        );
                        break;
                    }
                    Poll::Ready(Err(e)) => panic!("flush into a script: {e:?}"),
                    Poll::Pending if dropping(&mut stats) => break,
                    Poll::Pending => {}
                }
            }
            continue;
        };
        let n = usize::from(*n).clamp(1, rest.len());
        loop {
            match Pin::new(&mut w).poll_write(&mut cx, &rest[..n]) {
                Poll::Ready(Ok(k)) => {
                    assert!(k <= n && k > 0, "write of {n} returned {k}");
                    rest = &rest[k..];
                    taken += k;
                    break;
                }
                Poll::Ready(Err(e)) => panic!("write into a script: {e:?}"),
                Poll::Pending if dropping(&mut stats) => break,
                Poll::Pending => {}
            }
        }
    }
    // (`AsyncCipherWriter` has no `into_inner`: after a shutdown the
    // stream is read through `get_mut`.)
    let (data, inner_pendings) = if s.finish {
        let mut fut = pin!(w.finish());
        let inner = loop {
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(r) => break r.expect("finish into a script"),
                Poll::Pending => stats.pendings += 1,
            }
        };
        assert_eq!(inner.shutdowns, 0, "finish shut the inner writer down");
        assert_eq!(inner.flushed, inner.data.len(), "finish did not flush");
        (inner.data, inner.pendings)
    } else {
        loop {
            match Pin::new(&mut w).poll_shutdown(&mut cx) {
                Poll::Ready(r) => break r.expect("shutdown into a script"),
                Poll::Pending => stats.pendings += 1,
            }
        }
        assert_eq!(w.get_ref().shutdowns, 1);
        let polls = w.get_ref().polls;
        for _ in 0..2 {
            let again = Pin::new(&mut w).poll_shutdown(&mut cx);
            assert!(
                matches!(again, Poll::Ready(Ok(()))),
                "shutdown again: {again:?}"
            );
        }
        assert_eq!(
            w.get_ref().polls,
            polls,
            "a shutdown again polled the inner writer"
        );
        match Pin::new(&mut w).poll_write(&mut cx, b"x") {
            Poll::Ready(Err(e)) => assert_eq!(Error::from_io(&e), Some(&Error::Finished)),
            other => panic!("a write after the shutdown returned {other:?}"),
        }
        let inner = w.get_mut();
        (std::mem::take(&mut inner.data), inner.pendings)
    };
    stats.inner_pendings = inner_pendings;
    assert!(
        stats.pendings <= stats.inner_pendings,
        "the writer returned Pending without its inner writer's"
    );
    (data, stats)
}

impl Input {
    /// Whether the input drives the async fronts.
    pub fn run_async(&self) -> bool {
        self.run.asynchronous()
    }

    /// The writer's and the reader's provider.
    pub fn providers(&self) -> (Provider, Provider) {
        (self.run.provider(14), self.run.provider(15))
    }
}

impl TinkInput {
    /// Whether the input drives the async fronts.
    pub fn run_async(&self) -> bool {
        self.run.asynchronous()
    }

    /// The writer's and the reader's provider.
    pub fn providers(&self) -> (Provider, Provider) {
        (self.run.provider(14), self.run.provider(15))
    }
}

impl Run {
    /// Bit 13 of `reader_capacity`: after the std round trip, one
    /// through the async fronts.
    pub fn asynchronous(&self) -> bool {
        self.reader_capacity >> 13 & 1 == 1
    }

    /// In async mode, the plaintext's first [`SCRIPT_LEN`] bytes
    /// (zero-padded) script the async doubles and drivers
    /// (`AsyncScript`). They stay plaintext too, so that an input with
    /// bit 13 set still makes the std round trip it made before the bit
    /// had a meaning.
    fn script(&self) -> [u8; SCRIPT_LEN] {
        let mut s = [0; SCRIPT_LEN];
        let n = self.plaintext.len().min(SCRIPT_LEN);
        s[..n].copy_from_slice(&self.plaintext[..n]);
        s
    }

    /// The write sizes and flushes (64 bytes at a time if none is a size).
    fn write_ops(&self) -> &[Option<u16>] {
        if self.writes.iter().any(Option::is_some) {
            &self.writes[..]
        } else {
            &[Some(64)][..]
        }
    }

    /// The provider that `reader_capacity`'s bit `bit` picks.
    fn provider(&self, bit: u32) -> Provider {
        let i = usize::from((self.reader_capacity >> bit) & 1);
        Provider::ALL[i % Provider::ALL.len()]
    }

    fn plaintext(&self) -> &[u8] {
        &self.plaintext[..self.plaintext.len().min(MAX_PLAINTEXT)]
    }

    /// Reads `ct` with this run's reader capacity and read ops; `stats`
    /// given, through the async reader over an [`AsyncInner`] (the
    /// script's read sizes and `Pending`s, and the std double's ask-size
    /// checks), adding its polls there.
    fn read<K: StreamKey>(
        &self,
        key: &K,
        ct: &[u8],
        header: usize,
        stats: Option<&mut aio::Stats>,
    ) -> (Vec<u8>, Result<(), Error>) {
        let mut scratch = vec![0u8; SCRATCH_LEN];
        let mut out = Vec::new();
        let capacity = 1 + usize::from(self.reader_capacity) % 2048;
        let b = CipherReader::builder(key)
            .capacity(capacity)
            .associated_data(&self.aad)
            // Far above any native segment written here; a damaged header
            // asking for more is refused without a large zeroed allocation
            // per input. (Tink streams ignore it.)
            .max_segment_size(4096)
            .provider(self.provider(15));
        if let Some(stats) = stats {
            let s = AsyncScript::new(self.script());
            let inner = Inner::new(ct, s.read_sizes, None, capacity, header);
            let mut r = b.build_async(AsyncInner::new(inner, s.read_pending));
            let mut st = aio::Stats::default();
            let end = aio::drive(
                &mut r,
                &self.reads,
                s.read_drop,
                &mut scratch,
                &mut out,
                &mut st,
            );
            aio::check_after(&mut r, &end, &mut scratch);
            st.inner_pendings = r.get_ref().pendings;
            assert_eq!(
                st.pendings, st.inner_pendings,
                "the reader returned Pending without its inner reader's"
            );
            stats.pendings += st.pendings;
            stats.inner_pendings += st.inner_pendings;
            stats.dropped += st.dropped;
            return (out, end);
        }
        let mut r = b.build(ct);
        let end = drive::drive(&mut r, &self.reads, &mut scratch, &mut out);
        drive::check_after(&mut r, &end, &mut scratch);
        (out, end)
    }

    /// Reads `ct` back, then damages it once and reads it again (`stats`
    /// given: with the async reader).
    fn read_back_and_damage<K: StreamKey>(
        &self,
        key: &K,
        ct: &[u8],
        segs: &Segments,
        mut stats: Option<&mut aio::Stats>,
    ) {
        let pt = self.plaintext();
        let (out, end) = self.read(key, ct, segs.header, stats.as_deref_mut());
        assert_eq!(end, Ok(()));
        assert!(out == pt, "read back differs");

        let bad = self.mutation.apply(ct);
        let Some(first) = ct.iter().zip(&bad).position(|(a, b)| a != b).or_else(|| {
            // Equal up to the shorter one: damage starts where it ends.
            (ct.len() != bad.len()).then_some(ct.len().min(bad.len()))
        }) else {
            return;
        };
        let (out, end) = self.read(key, &bad, segs.header, stats);
        assert!(end.is_err(), "damaged at byte {first}, read to the end");
        let damaged = segs.of_byte(first);
        assert!(
            (0..=damaged).any(|k| segs.boundary(k) == out.len()) && pt.starts_with(&out),
            "released {} bytes; damage at byte {first} (segment {damaged})",
            out.len()
        );
    }
}

/// The round trips an input makes: the std one, then (bit 13) the async
/// one.
fn modes(run: &Run) -> impl Iterator<Item = bool> {
    [false, true]
        .into_iter()
        .take(1 + usize::from(run.asynchronous()))
}

/// - The writer's output, whatever the write sizes and flushes, is exactly
///   the spec oracle's stream for the plaintext, with the header's salt and
///   nonce prefix and the writer's capacity as the segment size.
/// - The reader, whatever its capacity and read sizes, returns the
///   plaintext and then `Ok(0)`.
/// - After one mutation that changes the bytes, the reader errors, and what
///   it returned before is a prefix of the plaintext made of whole segments,
///   none of them from the first damaged one on.
/// - After each flush, the stream holds exactly the segments that more
///   data followed (each sealed once).
/// - In async mode (`Run::asynchronous`) all of that again through the
///   tokio fronts over scripted doubles that return `Pending` (another
///   salt, so the async writer's stream is checked against the spec
///   itself), with the writer's shutdown or `finish` checked too (see
///   `write_async`).
///
/// # Panics
///
/// On any of those failing.
pub fn check(input: &Input) {
    check_run(input);
}

/// [`check`], returning what the async fronts did.
///
/// # Panics
///
/// As [`check`].
pub fn check_run(input: &Input) -> Trip {
    let alg = Algorithm::ALL[usize::from(input.alg) % 3];
    let key = Key::new(alg, &input.key[..alg.key_len()]).expect("right length");
    let seg = 1 + usize::from(input.writer_capacity) % 300;
    let run = &input.run;
    let segs = Segments {
        span: [HEADER_LEN + seg + TAG_LEN, seg + TAG_LEN],
        plain: [seg; 2],
        header: HEADER_LEN,
    };
    let spec = |ct: &[u8]| {
        oracle::encrypt(
            alg,
            key.as_bytes(),
            &run.aad,
            u32::try_from(seg).expect("small"),
            &ct[14..46],
            &ct[46..53],
            run.plaintext(),
        )
    };
    trips(&key, Some(seg), run, &segs, spec)
}

/// The round trips of one input (std, then async if asked): the writer's
/// stream (written at `capacity`, else the key's segment size) must be
/// `spec` of it, the oracle's stream for the salt and nonce prefix the
/// writer chose; then it is read back and damaged.
fn trips<K: StreamKey>(
    key: &K,
    capacity: Option<usize>,
    run: &Run,
    segs: &Segments,
    spec: impl Fn(&[u8]) -> Vec<u8>,
) -> Trip {
    let mut trip = Trip::default();
    for asynchronous in modes(run) {
        let (ct, w) = write(key, capacity, run, segs, asynchronous);
        assert!(
            ct == spec(&ct),
            "the writer's stream differs from the oracle's"
        );
        let stats = asynchronous.then(|| {
            trip.write = w;
            trip.finish = AsyncScript::new(run.script()).finish;
            &mut trip.read
        });
        run.read_back_and_damage(key, &ct, segs, stats);
    }
    trip
}

/// The HKDF (or HMAC) hash of a parameter number, 1, 256 or 512.
fn hash(h: u16) -> HkdfHash {
    match h {
        1 => HkdfHash::Sha1,
        256 => HkdfHash::Sha256,
        _ => HkdfHash::Sha512,
    }
}

/// The HMAC hash of the same name as [`hash`]'s.
fn hmac_hash(h: u16) -> HmacHash {
    HmacHash::from_name(hash(h).name()).expect("the same three names")
}

/// The same as [`check`] for a Tink key (the writer at its default
/// capacity, the key's segment size), against the Tink oracle.
///
/// # Panics
///
/// On any of those failing.
pub fn check_tink(input: &TinkInput) {
    check_tink_run(input);
}

/// [`check_tink`], returning what the async fronts did.
///
/// # Panics
///
/// As [`check_tink`].
pub fn check_tink_run(input: &TinkInput) -> Trip {
    let key_size = if input.params & 1 == 0 { 16 } else { 32 };
    let p = oracle_tink::Params {
        key_size,
        segment: 1 + key_size + 7 + 17 + usize::from(input.segment % 512),
        hash: [1, 256, 512][usize::from(input.params >> 1) % 3],
    };
    let params =
        AesGcmHkdfParams::new(p.key_size, p.segment, hash(p.hash)).expect("valid parameters");
    let raw = &input.key[..key_size + usize::from(input.extra % 17)];
    let key = AesGcmHkdfKey::new(params, raw).expect("long enough");
    tink_trips(
        &key,
        &input.run,
        key_size,
        p.segment,
        p.plain(),
        |salt, prefix, pt| oracle_tink::encrypt(&p, raw, &input.run.aad, salt, prefix, pt),
    )
}

/// [`trips`] for a Tink key of either type (`key_size`-byte salt,
/// `segment`-byte segments, `plain` plaintext bytes in segment 0 and
/// later ones) whose oracle is `encrypt(salt, prefix, plaintext)`.
fn tink_trips<K: StreamKey>(
    key: &K,
    run: &Run,
    key_size: usize,
    segment: usize,
    plain: [usize; 2],
    encrypt: impl Fn(&[u8], &[u8], &[u8]) -> Vec<u8>,
) -> Trip {
    let h = 1 + key_size + 7;
    let segs = Segments {
        span: [segment; 2],
        plain,
        header: h,
    };
    let spec = |ct: &[u8]| encrypt(&ct[1..1 + key_size], &ct[1 + key_size..h], run.plaintext());
    trips(key, None, run, &segs, spec)
}

/// One `roundtrip_tink_ctr` input: Tink AES-CTR-HMAC parameters and key,
/// and the rest.
#[derive(Arbitrary, Debug)]
pub struct TinkCtrInput {
    /// Flags of [`ctr_params`]: key size, HKDF and HMAC hash.
    params: u8,
    /// Tag size: `10 + v % (hash length - 9)` (10 up to the HMAC hash's
    /// length).
    tag: u8,
    /// Ciphertext segment size above its minimum (header + tag + 1), mod
    /// 512.
    segment: u16,
    /// Raw key: `key_size + extra % 17` bytes of it.
    key: [u8; 48],
    extra: u8,
    run: Run,
}

impl TinkCtrInput {
    /// Whether the input drives the async fronts.
    pub fn run_async(&self) -> bool {
        self.run.asynchronous()
    }

    /// The oracle's parameters.
    pub fn params(&self) -> oracle_tink_ctr::Params {
        ctr_params(self.params, self.tag, self.segment % 512)
    }

    /// The writer's and the reader's provider.
    pub fn providers(&self) -> (Provider, Provider) {
        (self.run.provider(14), self.run.provider(15))
    }
}

/// Tink AES-CTR-HMAC parameters: `flags` bit 0 the key size (16, 32),
/// bits 1..3 (mod 3) the HKDF hash, bits 3..5 (mod 3) the HMAC hash
/// (SHA-1, SHA-256, SHA-512); the tag `10 + tag % (hash length - 9)`
/// bytes; the segment `extra` bytes above its minimum (header + tag + 1).
pub fn ctr_params(flags: u8, tag: u8, extra: u16) -> oracle_tink_ctr::Params {
    let key_size = if flags & 1 == 0 { 16 } else { 32 };
    let hashes = [1, 256, 512];
    let hmac = hashes[usize::from(flags >> 3 & 3) % 3];
    let tag = 10 + usize::from(tag) % (oracle_tink_ctr::hash_len(hmac) - 9);
    oracle_tink_ctr::Params {
        key_size,
        segment: 1 + key_size + 7 + tag + 1 + usize::from(extra),
        hkdf: hashes[usize::from(flags >> 1 & 3) % 3],
        hmac,
        tag,
    }
}

/// cipherio's parameters for the oracle's.
///
/// # Panics
///
/// If Tink would refuse them.
pub fn ctr_key_params(p: &oracle_tink_ctr::Params) -> AesCtrHmacParams {
    AesCtrHmacParams::new(
        p.key_size,
        p.segment,
        hash(p.hkdf),
        hmac_hash(p.hmac),
        p.tag,
    )
    .expect("valid parameters")
}

/// The same as [`check_tink`] for a Tink AES-CTR-HMAC key, against
/// `oracle_tink_ctr` (written from the format description, not from
/// cipherio): any key size, HKDF and HMAC hash, tag size, and segment
/// size up to 511 bytes above its minimum.
///
/// # Panics
///
/// On any of the checks of [`check`] failing.
pub fn check_tink_ctr(input: &TinkCtrInput) {
    check_tink_ctr_run(input);
}

/// [`check_tink_ctr`], returning what the async fronts did.
///
/// # Panics
///
/// As [`check_tink_ctr`].
pub fn check_tink_ctr_run(input: &TinkCtrInput) -> Trip {
    let p = input.params();
    let raw = &input.key[..p.key_size + usize::from(input.extra % 17)];
    let key = AesCtrHmacKey::new(ctr_key_params(&p), raw).expect("long enough");
    tink_trips(
        &key,
        &input.run,
        p.key_size,
        p.segment,
        p.plain(),
        |salt, prefix, pt| oracle_tink_ctr::encrypt(&p, raw, &input.run.aad, salt, prefix, pt),
    )
}
