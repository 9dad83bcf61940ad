//! The `open` target: any bytes through `CipherReader`, with a reader
//! configuration and a read pattern taken from the input's first
//! [`CONFIG_LEN`] bytes.

use cipherio::format::{HEADER_LEN, TAG_LEN};
use cipherio::tink::{AesCtrHmacKey, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
use cipherio::{Algorithm, CipherReader, Error, Key, StreamKey};

use crate::aio::{self, AsyncInner, Script};
use crate::drive::{self, Inner, SCRATCH_LEN};
use crate::{alloc, oracle, oracle_tink, oracle_tink_ctr, roundtrip};

/// Bytes of reader configuration before the stream.
pub const CONFIG_LEN: usize = 28;

/// Allocations the reader may make besides its two buffers: the key and
/// associated data copies, the AEAD's key schedule, an error box.
const SLACK: usize = 4096;

/// The reader configuration and read pattern at the front of an input.
///
/// ```text
/// offset len
///      0   2  capacity, u16 LE (0 is refused; 0xffff means usize::MAX)
///      2   3  max_segment_size - 1, u24 LE, low 20 bits (1 B ..= 1 MiB);
///             byte 4 bit 7: the async front (`build_async`, polled by
///             hand over `aio::AsyncInner`), after the std one; byte 4
///             bits 4..6, async only:
///             after the reader's k-th `Pending`, drop the op (go on with
///             the next one: another caller buffer) if bit k % 3 is set,
///             else poll it again
///      5   1  bit 0: build_from_buf_read (the inner reader's refills take
///             the read sizes below), else build (the std reader's only:
///             there is no async build_from_buf_read); bit 1: the reader's
///             provider (`Provider::ALL[bit % len]`); bits 2..7, async
///             only: the inner reader's poll n (from 0, `Pending`s
///             included) returns `Pending` if bit n % 6 is set (never more
///             than `aio::MAX_PENDING` in a row); 0xfe or 0xff: a key of
///             another algorithm than the header's
///      6   1  associated data length (mod 9)
///      7   8  associated data
///     15   4  inner read (and refill) sizes, in turn (0: all that is
///             asked, or all the rest)
///     19   1  0: no errors; else an injected error every 2 + (v % 6) calls
///     20   8  read ops (see drive::drive)
/// ```
#[derive(Debug)]
pub struct Config {
    /// Reader capacity.
    pub capacity: usize,
    /// Reader segment limit.
    pub max_segment: usize,
    /// Use another algorithm's key than the header asks for.
    pub wrong_key: bool,
    /// Build the reader with `build_from_buf_read` (else `build`).
    pub buf_read: bool,
    /// Read the stream again through the async reader (`build_async`),
    /// polled by hand.
    pub asynchronous: bool,
    /// Async: which inner polls return `Pending`.
    pub pending: Script,
    /// Async: after which of the reader's `Pending`s the op is dropped.
    pub drop_after: Script,
    /// The reader's provider.
    pub provider: cipherio::Provider,
    /// Associated data given to the reader.
    pub aad: Vec<u8>,
    /// Inner read sizes.
    pub sizes: [u8; 4],
    /// Injected error period.
    pub period: Option<usize>,
    /// Read ops.
    pub ops: [u8; 8],
}

impl Config {
    /// Decodes the configuration (missing bytes read as zero).
    pub fn parse(data: &[u8]) -> Config {
        let mut b = [0u8; CONFIG_LEN];
        let n = data.len().min(CONFIG_LEN);
        b[..n].copy_from_slice(&data[..n]);
        let capacity = match u16::from_le_bytes([b[0], b[1]]) {
            u16::MAX => usize::MAX,
            c => usize::from(c),
        };
        let max = u32::from_le_bytes([b[2], b[3], b[4], 0]) & 0xf_ffff;
        let asynchronous = b[4] & 0x80 != 0;
        Config {
            capacity,
            max_segment: max as usize + 1,
            wrong_key: b[5] >= 0xfe,
            buf_read: b[5] & 1 == 1,
            asynchronous,
            pending: Script::new(b[5] >> 2, 6),
            drop_after: Script::new(b[4] >> 4 & 7, 3),
            provider: cipherio::Provider::ALL
                [usize::from(b[5] >> 1 & 1) % cipherio::Provider::ALL.len()],
            aad: b[7..7 + usize::from(b[6] % 9)].to_vec(),
            sizes: [b[15], b[16], b[17], b[18]],
            period: (b[19] != 0).then_some(2 + usize::from(b[19] % 6)),
            ops: b[20..28].try_into().expect("8 bytes"),
        }
    }
}

/// The key the `open` corpus is sealed with, one per algorithm.
pub fn fixed_key(alg: Algorithm) -> Key {
    let bytes: Vec<u8> = (0..alg.key_len())
        .map(|i| (i as u8).wrapping_mul(7) ^ oracle::spec_id(alg))
        .collect();
    Key::new(alg, &bytes).expect("right length")
}

/// Tink parameters from the configuration's segment-limit bytes: byte 2
/// bit 0 picks the key size (16, 32), `(byte 2 >> 1) % 3` the HKDF hash,
/// and bytes 3..5 (u16 LE, mod 1024) the ciphertext segment size above its
/// minimum (header + 17).
pub fn tink_params(data: &[u8]) -> oracle_tink::Params {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let key_size = if b(2) & 1 == 0 { 16 } else { 32 };
    let extra = usize::from(u16::from_le_bytes([b(3), b(4)]) % 1024);
    oracle_tink::Params {
        key_size,
        segment: 1 + key_size + 7 + 17 + extra,
        hash: [1, 256, 512][usize::from(b(2) >> 1) % 3],
    }
}

/// The Tink key the `open_tink` corpus is sealed with, and its parameters
/// as cipherio's type.
pub fn tink_key(p: &oracle_tink::Params, wrong: bool) -> AesGcmHkdfKey {
    let hash = match p.hash {
        1 => HkdfHash::Sha1,
        256 => HkdfHash::Sha256,
        _ => HkdfHash::Sha512,
    };
    let params = AesGcmHkdfParams::new(p.key_size, p.segment, hash).expect("valid parameters");
    AesGcmHkdfKey::new(params, &tink_raw_key(p.key_size, wrong)).expect("long enough")
}

/// The raw key bytes of the Tink corpora; `wrong` flips a bit.
fn tink_raw_key(len: usize, wrong: bool) -> Vec<u8> {
    let mut raw: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ 0xa5)
        .collect();
    raw[0] ^= u8::from(wrong);
    raw
}

/// What one `open` input did (the corpus tests look at it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// Stream bytes the std reader took from the inner reader's buffer
    /// (`BufRead::consume`) rather than through `read`.
    pub consumed: usize,
    /// The async reader's polls (all 0 without the async bit).
    pub polls: aio::Stats,
}

/// One read of the stream: how it ended, the plaintext, the inner
/// reader's counts ([`Inner::counts`]).
struct Read {
    end: Result<(), Error>,
    out: Vec<u8>,
    counts: [usize; 6],
}

/// Reads `stream` with `cfg` and `key` through the std reader or
/// (`asynchronous`) the async one, checking allocation bounds
/// (`header_len` and `sealed`, the longest sealed segment, size the
/// reader's two buffers), the inner reader contract and the sticky end.
fn read_measured<K: StreamKey>(
    key: &K,
    cfg: &Config,
    stream: &[u8],
    header_len: usize,
    sealed: usize,
    asynchronous: bool,
    run: &mut Run,
) -> Read {
    let mut scratch = vec![0u8; SCRATCH_LEN];
    let mut out = Vec::with_capacity(stream.len());
    let inner = Inner::new(
        stream,
        cfg.sizes,
        cfg.period,
        cfg.capacity.max(1),
        header_len,
    );
    let before = alloc::live();
    alloc::reset();
    let builder = CipherReader::builder(key)
        .capacity(cfg.capacity)
        .max_segment_size(cfg.max_segment)
        .associated_data(&cfg.aad)
        .provider(cfg.provider);
    let (end, counts) = if asynchronous {
        let mut r = builder.build_async(AsyncInner::new(inner, cfg.pending));
        let polls = &mut run.polls;
        let end = aio::drive(
            &mut r,
            &cfg.ops,
            cfg.drop_after,
            &mut scratch,
            &mut out,
            polls,
        );
        aio::check_after(&mut r, &end, &mut scratch);
        polls.inner_pendings = r.get_ref().pendings;
        assert_eq!(
            polls.pendings, polls.inner_pendings,
            "the reader returned Pending without its inner reader's"
        );
        let counts = r.get_ref().inner.counts();
        drop(r);
        (end, counts)
    } else {
        let mut r = if cfg.buf_read {
            builder.build_from_buf_read(inner)
        } else {
            builder.build(inner)
        };
        let end = drive::drive(&mut r, &cfg.ops, &mut scratch, &mut out);
        drive::check_after(&mut r, &end, &mut scratch);
        run.consumed = r.get_ref().consumed();
        let counts = r.get_ref().counts();
        drop(r);
        (end, counts)
    };
    let (peak, largest) = (alloc::peak() - before, alloc::largest());

    let ahead = cfg.capacity.max(header_len);
    assert!(
        largest <= ahead.saturating_add(sealed + SLACK),
        "one allocation of {largest} bytes, {cfg:?}"
    );
    assert!(
        peak <= ahead.saturating_mul(2).saturating_add(2 * sealed + SLACK),
        "{peak} bytes live at once, {cfg:?}"
    );
    // Memory follows the bytes that arrived (read, or consumed from the
    // inner buffer) and the caller's capacity, not what a header asks for:
    // the read-ahead starts at capacity + header and doubles when what it
    // holds leaves less than capacity of room (which a few bytes past the
    // header can do: old and new blocks, 3 x (capacity + header), live for
    // a moment), or grows to capacity + the unit in hand once that fits;
    // the plaintext buffer holds one opened segment.
    let arrived = counts[1].saturating_add(counts[5]);
    let follows = arrived
        .saturating_mul(4)
        .saturating_add(cfg.capacity.saturating_add(header_len).saturating_mul(4))
        .saturating_add(SLACK);
    assert!(
        peak <= follows,
        "{peak} bytes live at once for {arrived} bytes arrived, {cfg:?}"
    );
    Read { end, out, counts }
}

/// Reads `stream` through the std reader and, with the async bit, the
/// async reader too, each checked against the oracle by `compare`. When
/// both were built alike (not `build_from_buf_read`) and the async driver
/// dropped no op after a `Pending`, the async reader must have done
/// exactly what the std reader did over the same script: the same
/// plaintext, the same end, the same inner calls.
fn read_both<K: StreamKey>(
    key: &K,
    cfg: &Config,
    stream: &[u8],
    header_len: usize,
    sealed: usize,
    compare: impl Fn(&Result<(), Error>, &[u8]),
) -> Run {
    let mut run = Run::default();
    let std = read_measured(key, cfg, stream, header_len, sealed, false, &mut run);
    compare(&std.end, &std.out);
    if cfg.asynchronous {
        let a = read_measured(key, cfg, stream, header_len, sealed, true, &mut run);
        compare(&a.end, &a.out);
        if !cfg.buf_read && run.polls.dropped == 0 {
            assert_eq!(a.end, std.end, "the async and the std reader ended apart");
            assert!(
                a.out == std.out,
                "the async and the std reader released apart"
            );
            assert_eq!(
                a.counts, std.counts,
                "inner calls differ from the std reader's"
            );
        }
    }
    run
}

/// The outcome the oracle calls for: `refused` (an error before any
/// plaintext, in its `Debug` form: struct-like variants are
/// `#[non_exhaustive]` and cannot be built here), else all of a valid
/// stream, else an error after a prefix of what authenticates.
fn compare(end: &Result<(), Error>, out: &[u8], want: &oracle::Decrypted, refused: Option<String>) {
    if let Some(e) = refused {
        assert_eq!(format!("{end:?}"), format!("Err({e})"));
        assert!(out.is_empty());
    } else if want.valid {
        assert_eq!(end, &Ok(()), "a valid stream was refused");
        assert!(out == want.released, "a valid stream read back wrong");
    } else {
        assert!(end.is_err(), "an invalid stream read to its end");
        // A full-length segment that authenticates as the final one may be
        // released before the bytes after it are seen; then the error is
        // TrailingData.
        let mut allowed = want.released.clone();
        if end == &Err(Error::TrailingData) {
            allowed.extend_from_slice(&want.final_then_trailing);
        }
        assert!(
            allowed.starts_with(out),
            "released {} bytes that did not authenticate (oracle: {})",
            out.len(),
            want.released.len()
        );
    }
}

/// The configuration's own errors, which come before any header check, in
/// their `Debug` form.
fn refused_by_config(cfg: &Config) -> Option<String> {
    match cfg.capacity {
        0 => Some(format!("{:?}", Error::InvalidCapacity(0))),
        usize::MAX => Some(format!("{:?}", Error::Allocation(usize::MAX))),
        _ => None,
    }
}

/// Reads `data[CONFIG_LEN..]` with the configuration in front of it:
///
/// - nothing panics, and the `Read`/`BufRead` contract holds;
/// - the reader never holds more than two read-aheads and two sealed
///   segments of the configured limit (peak live bytes), nor allocates
///   more than one read-ahead plus one sealed segment at once, whatever the
///   header says;
/// - each inner `read` asks for at least the capacity (or the rest of the
///   header);
/// - built with `build_from_buf_read` (configuration byte 5, bit 0) over
///   refills of the configured sizes, everything above holds alike;
/// - with configuration byte 4, bit 7, the stream is read again through
///   `build_async`, polled by hand over the same script with `Pending`s
///   in it (byte 5, bits 2..7), re-polled or dropped after each `Pending`
///   (byte 4, bits 4..6): everything above holds alike; a `Pending` read leaves the caller's
///   buffer alone and comes only from the inner reader's; after the end
///   every poll is ready at once; and when no op was dropped the async
///   reader released, ended and called its inner reader exactly as the std
///   reader does;
/// - the end is sticky: after an error every call errors the same way,
///   after `Ok(0)` every call returns `Ok(0)`;
/// - injected inner errors pass through and the reader goes on as if they
///   had not happened;
/// - the plaintext released is what the spec oracle says: all of it, then
///   `Ok(0)`, for a valid stream; for any other input an error, after a
///   prefix of the segments that authenticate.
///
/// # Panics
///
/// On any of those failing.
pub fn check(data: &[u8]) {
    check_counting(data);
}

/// [`check`], returning the stream bytes the reader took from the inner
/// reader's buffer (`BufRead::consume`) rather than through `read`.
///
/// # Panics
///
/// As [`check`].
pub fn check_counting(data: &[u8]) -> usize {
    check_run(data).consumed
}

/// [`check`], returning what the run did.
///
/// # Panics
///
/// As [`check`].
pub fn check_run(data: &[u8]) -> Run {
    let cfg = Config::parse(data);
    let stream = data.get(CONFIG_LEN..).unwrap_or(&[]);
    let header_alg = stream.get(9).and_then(|&id| Algorithm::from_id(id));
    let alg = header_alg.unwrap_or(Algorithm::Aes128Gcm);
    let alg = if cfg.wrong_key {
        Algorithm::ALL[(Algorithm::ALL
            .iter()
            .position(|&a| a == alg)
            .expect("listed")
            + 1)
            % 3]
    } else {
        alg
    };
    let key = fixed_key(alg);
    let sealed = cfg.max_segment + TAG_LEN;
    let want = oracle::decrypt(key.as_bytes(), &cfg.aad, stream);
    let refused = refused_by_config(&cfg).or(match want.segment_size {
        Some(size) if size as usize > cfg.max_segment => Some(format!(
            "SegmentTooLarge {{ size: {size}, limit: {} }}",
            cfg.max_segment
        )),
        Some(_) if cfg.wrong_key => Some(format!(
            "AlgorithmMismatch {{ stream: {:?}, key: {alg:?} }}",
            header_alg.expect("well-formed header")
        )),
        _ => None,
    });
    read_both(&key, &cfg, stream, HEADER_LEN, sealed, |end, out| {
        compare(end, out, &want, refused.clone());
    })
}

/// The same checks as [`check`] with a Tink key whose parameters come from
/// the configuration ([`tink_params`]; the wrong-key byte flips a key
/// bit). The reader's segment limit must not apply: the segment size is
/// the key's. A first byte other than the header length is refused with
/// [`Error::HeaderLength`].
///
/// # Panics
///
/// On any of those failing.
pub fn check_tink(data: &[u8]) {
    check_tink_counting(data);
}

/// [`check_tink`], returning the bytes taken through `BufRead::consume`.
///
/// # Panics
///
/// As [`check_tink`].
pub fn check_tink_counting(data: &[u8]) -> usize {
    check_tink_run(data).consumed
}

/// [`check_tink`], returning what the run did.
///
/// # Panics
///
/// As [`check_tink`].
pub fn check_tink_run(data: &[u8]) -> Run {
    let cfg = Config::parse(data);
    let stream = data.get(CONFIG_LEN..).unwrap_or(&[]);
    let p = tink_params(data);
    let key = tink_key(&p, cfg.wrong_key);
    let want = oracle_tink::decrypt(&p, key.as_bytes(), &cfg.aad, stream);
    tink_read_both(&key, &cfg, stream, p.header_len(), p.segment, &want)
}

/// [`read_both`] for a Tink stream (either key type) with a
/// `header_len`-byte header and `segment`-byte segments: a first byte
/// other than the header length is [`Error::HeaderLength`], before any
/// plaintext; else the oracle's `want`.
fn tink_read_both<K: StreamKey>(
    key: &K,
    cfg: &Config,
    stream: &[u8],
    header_len: usize,
    segment: usize,
    want: &oracle::Decrypted,
) -> Run {
    let h = u8::try_from(header_len).expect("at most 40");
    let refused = refused_by_config(cfg).or(match stream.first() {
        Some(&found) if found != h => {
            Some(format!("HeaderLength {{ expected: {h}, found: {found} }}"))
        }
        _ => None,
    });
    read_both(key, cfg, stream, header_len, segment, |end, out| {
        compare(end, out, want, refused.clone());
    })
}

/// Bytes of Tink AES-CTR-HMAC parameters after the configuration in an
/// `open_tink_ctr` input (see [`tink_ctr_params`]).
pub const CTR_PARAMS_LEN: usize = 2;

/// Tink AES-CTR-HMAC parameters of an `open_tink_ctr` input: byte
/// [`CONFIG_LEN`] is the flags of [`roundtrip::ctr_params`] (key size,
/// HKDF and HMAC hash), the next the tag size, and configuration bytes
/// 3..5 (u16 LE, mod 1024, as [`tink_params`]) the ciphertext segment size
/// above its minimum (header + tag + 1).
pub fn tink_ctr_params(data: &[u8]) -> oracle_tink_ctr::Params {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let extra = u16::from_le_bytes([b(3), b(4)]) % 1024;
    roundtrip::ctr_params(b(CONFIG_LEN), b(CONFIG_LEN + 1), extra)
}

/// The Tink AES-CTR-HMAC key the `open_tink_ctr` corpus is sealed with.
pub fn tink_ctr_key(p: &oracle_tink_ctr::Params, wrong: bool) -> AesCtrHmacKey {
    AesCtrHmacKey::new(
        roundtrip::ctr_key_params(p),
        &tink_raw_key(p.key_size, wrong),
    )
    .expect("long enough")
}

/// [`check_tink`] for a Tink AES-CTR-HMAC key: the parameters come from
/// the input ([`tink_ctr_params`]), the stream starts after them, and the
/// reader's release is checked against `oracle_tink_ctr`.
///
/// # Panics
///
/// On any of the checks failing.
pub fn check_tink_ctr(data: &[u8]) {
    check_tink_ctr_run(data);
}

/// [`check_tink_ctr`], returning what the run did.
///
/// # Panics
///
/// As [`check_tink_ctr`].
pub fn check_tink_ctr_run(data: &[u8]) -> Run {
    let cfg = Config::parse(data);
    let stream = data.get(CONFIG_LEN + CTR_PARAMS_LEN..).unwrap_or(&[]);
    let p = tink_ctr_params(data);
    let key = tink_ctr_key(&p, cfg.wrong_key);
    let want = oracle_tink_ctr::decrypt(&p, key.as_bytes(), &cfg.aad, stream);
    tink_read_both(&key, &cfg, stream, p.header_len(), p.segment, &want)
}
