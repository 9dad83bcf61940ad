//! Sealing and opening segments by index: one stream written and read by
//! separate workers, threads, processes or machines.
//!
//! Segment *i* of a stream is sealed under the stream key with a nonce
//! made from the header and *i* alone (natively `prefix ‖ BE32(i) ‖
//! last`), and the stream key comes from the header, so any segment can be
//! sealed or opened alone by whoever holds the key and the header's bytes.
//! A coordinator makes the header ([`SegmentSealer::new`]); workers
//! anywhere seal disjoint runs of segments
//! ([`SegmentSealer::from_header`],
//! [`seal_segments`](SegmentSealer::seal_segments)); the stream is the
//! header followed by the runs in index order, byte for byte what a
//! [`CipherWriter`](crate::CipherWriter) with that header writes, and every
//! [`CipherReader`](crate::CipherReader) reads it. A reader of a plaintext
//! range fetches exactly the ciphertext that holds it
//! ([`Layout::segments_for`], [`Layout::ciphertext_range`]) and opens it
//! with [`SegmentOpener::open_segments`], under the rules a
//! `CipherReader` applies.
//!
//! ```
//! use cipherio::segments::{SegmentOpener, SegmentSealer};
//! use cipherio::{Algorithm, Key};
//!
//! # fn main() -> Result<(), cipherio::Error> {
//! let key = Key::generate(Algorithm::Aes256Gcm);
//! let plaintext = vec![7u8; 10_000];
//! // The coordinator: a fresh header for one stream of 4 KiB segments.
//! let sealer = SegmentSealer::new(&key, 4096, b"reports/2026.csv")?;
//! let header = sealer.header().to_vec();
//!
//! // Two workers, in any order: segments 0 and 1, then segment 2 (the last).
//! let worker = SegmentSealer::from_header(&key, &header, b"reports/2026.csv")?;
//! let (mut tail, mut head) = (Vec::new(), Vec::new());
//! worker.seal_segments(2, &plaintext[8192..], true, &mut tail)?;
//! worker.seal_segments(0, &plaintext[..8192], false, &mut head)?;
//! let stream = [header.clone(), head, tail].concat();
//!
//! // A reader of bytes 5000..9000 fetches segments 1 and 2 only.
//! let opener = SegmentOpener::new(&key, &header, b"reports/2026.csv")?;
//! let layout = opener.layout();
//! let segments = layout.segments_for(5000..9000);
//! let range = layout.ciphertext_range(segments.clone());
//! let fetched = &stream[range.start as usize..stream.len().min(range.end as usize)];
//! let mut out = Vec::new();
//! opener.open_segments(segments.start, fetched, true, &mut out)?;
//! let from = layout.plaintext_range(segments).start as usize;
//! assert_eq!(&out[5000 - from..9000 - from], &plaintext[5000..9000]);
//! # Ok(())
//! # }
//! ```
//!
//! # The one hazard: a part sealed twice with different bytes
//!
//! A segment's nonce depends only on the header and its index. Sealing
//! segment *i* of one header twice **with different plaintext** reuses a
//! nonce under the same key, which is fatal for AES-GCM and
//! ChaCha20-Poly1305 (it leaks the XOR of the plaintexts and lets anyone
//! forge tags). Sealing the same bytes again gives the same ciphertext and
//! is harmless. So a retried part must be sealed from the same plaintext,
//! or the whole upload restarts with a fresh header
//! ([`SegmentSealer::new`]).
//!
//! Also:
//! - The header is authenticated through the key derivation, but the
//!   object's name is not: pass it (or anything else that must match) as
//!   the associated data if moving or renaming the object must be detected.
//! - Rolling an object back to an older complete stream under the same key
//!   is not detected: keep its `ETag` or version elsewhere if that matters.
//! - A stream holds at most 2^32 segments: 32 TiB with 8 KiB segments.
//!   Use 64 KiB or larger segments for objects.
//! - Framed streams (records of any length) have no index arithmetic and
//!   are refused, as are Tink keys (their first segment is shorter).
//!
//! # Cobblestone
//!
//! A [`CobblestoneKey`](crate::cobblestone::CobblestoneKey) works the same
//! way, under its format's rules: segments are 16 KiB chunks, the 56-byte
//! header is the salt and the key commitment (checked before any chunk is
//! opened, so a wrong key or associated data fails at
//! [`SegmentOpener::new`] with [`Error::Authentication`]), and the final
//! chunk is always shorter than 16 KiB: sealing a plaintext of whole chunks
//! with `last` appends an empty final chunk, and a run that ends the
//! stream on a full chunk does not open ([`Error::Truncated`]).

mod layout;

pub use layout::{Layout, Part, PartLimits, PlanError};

use std::fmt;
use std::sync::Arc;

use zeroize::Zeroize;

use crate::core::layout::{Ends, Fixed, Units};
use crate::core::suite::Suite;
use crate::core::unit::{self, Place};
use crate::profile::{self, Profile};
use crate::{Error, Provider, StreamKey};

/// What a sealer and an opener of one stream share: its header, stream key
/// and layout. The key is wiped when the last clone drops.
struct Stream {
    header: Vec<u8>,
    suite: Suite,
    lengths: Fixed,
    layout: Layout,
}

impl Stream {
    /// The stream a profile set up, with its header's bytes. Only layouts
    /// of equal fixed-size segments have index arithmetic.
    fn new(header: Vec<u8>, stream: profile::Stream) -> Result<Stream, Error> {
        let profile::Stream { suite, layout } = stream;
        let Units::Fixed(lengths) = layout.units() else {
            return Err(Error::NoRandomAccess);
        };
        if lengths.first != lengths.rest {
            return Err(Error::UnevenSegments);
        }
        let size = u32::try_from(lengths.rest)
            .unwrap_or_else(|_| unreachable!("headers hold 32-bit segment sizes"));
        let layout = Layout::new(
            lengths.header,
            size,
            lengths.tag,
            lengths.ends == Ends::Short,
        );
        Ok(Stream {
            header,
            suite,
            lengths,
            layout,
        })
    }

    /// The stream that `header` (its first bytes; more may follow) starts.
    fn parse(
        profile: &Profile,
        header: &[u8],
        aad: &[u8],
        provider: Provider,
    ) -> Result<Stream, Error> {
        let (len, stream) = profile::begin_read(profile, aad, header, usize::MAX, provider)?
            .ok_or(Error::Truncated)?;
        Stream::new(header[..len].to_vec(), stream)
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The header is public; the key is not shown.
        f.debug_struct("Stream")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

/// Seals segments of one stream by index. Cheap to clone (the stream key
/// is shared), `Send + Sync`; the key is wiped when the last clone drops.
#[derive(Clone, Debug)]
pub struct SegmentSealer {
    stream: Arc<Stream>,
}

impl SegmentSealer {
    /// A new stream of `segment_size`-byte segments under `key`, with a
    /// fresh random salt (and nonce prefix): what a coordinator makes once,
    /// before handing [`header`](Self::header) to its workers. A
    /// [`CobblestoneKey`](crate::cobblestone::CobblestoneKey)'s segments
    /// are the format's 16 KiB chunks
    /// ([`CHUNK_SIZE`](crate::cobblestone::CHUNK_SIZE)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCapacity`] for a segment size of 0 or over 16 MiB,
    /// [`Error::CapacityForKey`] for a size the key's format does not
    /// have, [`Error::UnevenSegments`] for a Tink key,
    /// [`Error::Random`] if the system has no randomness.
    pub fn new(
        key: &impl StreamKey,
        segment_size: u32,
        associated_data: &[u8],
    ) -> Result<Self, Error> {
        let capacity = usize::try_from(segment_size).unwrap_or(usize::MAX);
        let (header, stream) = profile::begin_write(
            &key.profile(),
            associated_data,
            capacity,
            Provider::default(),
            false,
        )?;
        let stream = Stream::new(header, stream)?;
        if stream.lengths.rest != capacity {
            return Err(Error::CapacityForKey {
                capacity,
                required: stream.lengths.rest,
            });
        }
        Ok(SegmentSealer {
            stream: Arc::new(stream),
        })
    }

    /// The sealer of the stream that `header` (its first bytes; more may
    /// follow) starts, for a worker given the header by its coordinator.
    ///
    /// # Errors
    ///
    /// The header's errors ([`Error::Truncated`], [`Error::BadMagic`], …),
    /// [`Error::AlgorithmMismatch`] for a key of another algorithm,
    /// [`Error::NoRandomAccess`] for a framed stream,
    /// [`Error::UnevenSegments`] for a Tink key; for a Cobblestone key,
    /// [`Error::Authentication`] when the header's key commitment is not
    /// this key's and associated data's.
    pub fn from_header(
        key: &impl StreamKey,
        header: &[u8],
        associated_data: &[u8],
    ) -> Result<Self, Error> {
        Self::from_header_with(key, header, associated_data, Provider::default())
    }

    /// [`from_header`](Self::from_header), sealing with `provider`. The
    /// bytes are the same whichever provider seals them.
    ///
    /// # Errors
    ///
    /// As [`from_header`](Self::from_header).
    pub fn from_header_with(
        key: &impl StreamKey,
        header: &[u8],
        associated_data: &[u8],
        provider: Provider,
    ) -> Result<Self, Error> {
        Ok(SegmentSealer {
            stream: Arc::new(Stream::parse(
                &key.profile(),
                header,
                associated_data,
                provider,
            )?),
        })
    }

    /// The header's bytes: what the stream starts with.
    pub fn header(&self) -> &[u8] {
        &self.stream.header
    }

    /// Where the stream's segments lie.
    pub fn layout(&self) -> Layout {
        self.stream.layout
    }

    /// Seals `plaintext` as segments `first`, `first + 1`, … and appends
    /// them to `out`. Unless `last`, `plaintext` is whole segments; with
    /// `last`, its final segment (full or short) is the stream's final one,
    /// and `plaintext` is empty only for the empty stream (`first == 0`).
    /// In Cobblestone the final chunk is always short: with `last`, the
    /// chunk after the whole ones holds the rest of `plaintext`, and is
    /// empty when `plaintext` is whole chunks (or empty).
    ///
    /// Never seal a segment of one header twice with different plaintext:
    /// see the [module docs](self).
    ///
    /// # Errors
    ///
    /// [`Error::PartialSegment`] for plaintext that is not whole segments
    /// without `last`; [`Error::EmptyFinalSegment`] for empty plaintext
    /// with `last` after segment 0 in the native format (only the empty
    /// stream ends with an empty segment);
    /// [`Error::StreamTooLong`] past segment 2^32 − 1. `out` is then as it
    /// was.
    pub fn seal_segments(
        &self,
        first: u32,
        plaintext: &[u8],
        last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let s = &*self.stream;
        let size = s.lengths.rest;
        if !last && !plaintext.len().is_multiple_of(size) {
            return Err(Error::PartialSegment);
        }
        let short_end = s.lengths.ends == Ends::Short;
        if last && plaintext.is_empty() && first > 0 && !short_end {
            return Err(Error::EmptyFinalSegment);
        }
        let count = match (last, short_end) {
            (false, _) => plaintext.len() / size,
            // The final segment is the short rest, empty after whole ones.
            (true, true) => plaintext.len() / size + 1,
            (true, false) => plaintext.len().div_ceil(size).max(1),
        };
        if u64::from(first) + count as u64 > 1 << 32 {
            return Err(Error::StreamTooLong);
        }
        let start = out.len();
        out.reserve(plaintext.len() + count * s.lengths.tag);
        let mut chunks = plaintext.chunks(size);
        for k in 0..count {
            let chunk = chunks.next().unwrap_or(&[]);
            let at = out.len();
            out.resize(at + chunk.len() + s.lengths.tag, 0);
            let final_one = last && k + 1 == count;
            if let Err(e) = s.suite.seal_at(
                u64::from(first) + k as u64,
                final_one,
                &[],
                chunk,
                &mut out[at..],
            ) {
                out.truncate(start);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Seals `part` of a plan ([`Layout::plan_parts`]) from `plaintext`
    /// (the part's plaintext bytes) and appends its bytes to `out`: the
    /// header first for part 0, then its segments.
    ///
    /// # Errors
    ///
    /// [`Error::PartLength`] if `plaintext` is not the part's length; those of [`seal_segments`](Self::seal_segments).
    pub fn seal_part(&self, part: &Part, plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if plaintext.len() as u64 != part.plaintext.end - part.plaintext.start {
            return Err(Error::PartLength {
                expected: part.plaintext.end - part.plaintext.start,
                actual: plaintext.len() as u64,
            });
        }
        let start = out.len();
        if part.number == 0 {
            out.extend_from_slice(self.header());
        }
        self.seal_segments(part.first_segment, plaintext, part.last, out)
            .inspect_err(|_| out.truncate(start))
    }
}

/// What [`SegmentOpener::open_segments`] opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opened {
    /// Segments opened.
    pub segments: u32,
    /// The last of them was the stream's final segment.
    pub ends_stream: bool,
}

/// Opens segments of one stream by index. Cheap to clone, `Send + Sync`;
/// the key is wiped when the last clone drops.
#[derive(Clone, Debug)]
pub struct SegmentOpener {
    stream: Arc<Stream>,
}

impl SegmentOpener {
    /// The opener of the stream that `header` (its first bytes; more may
    /// follow) starts.
    ///
    /// # Errors
    ///
    /// As [`SegmentSealer::from_header`].
    pub fn new(key: &impl StreamKey, header: &[u8], associated_data: &[u8]) -> Result<Self, Error> {
        Self::new_with(key, header, associated_data, Provider::default())
    }

    /// [`new`](Self::new), opening with `provider`.
    ///
    /// # Errors
    ///
    /// As [`SegmentSealer::from_header`].
    pub fn new_with(
        key: &impl StreamKey,
        header: &[u8],
        associated_data: &[u8],
        provider: Provider,
    ) -> Result<Self, Error> {
        Ok(SegmentOpener {
            stream: Arc::new(Stream::parse(
                &key.profile(),
                header,
                associated_data,
                provider,
            )?),
        })
    }

    /// Where the stream's segments lie.
    pub fn layout(&self) -> Layout {
        self.stream.layout
    }

    /// Opens `ciphertext`, sealed segments from index `first` on (each full
    /// but the stream's final one), and appends their plaintext to `out`.
    /// With `ends_stream`, the ciphertext must end with the stream's final
    /// segment (as a reader at the end of its source requires); without,
    /// it may end anywhere on a segment boundary, or with the final
    /// segment.
    ///
    /// All or nothing: on an error `out` is as it was, and no plaintext of
    /// any segment is released.
    ///
    /// # Errors
    ///
    /// Those of [`CipherReader`](crate::CipherReader) for the same bytes:
    /// [`Error::Authentication`] for a segment that does not open (wrong
    /// key, associated data, index or bytes), [`Error::Truncated`] for a
    /// stream that ends (`ends_stream`) without its final segment or
    /// inside a tag, [`Error::TrailingData`] for segments after the final
    /// one, [`Error::EmptyFinalSegment`], [`Error::TooManySegments`].
    pub fn open_segments(
        &self,
        first: u32,
        ciphertext: &[u8],
        ends_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<Opened, Error> {
        let start = out.len();
        self.open_into(first, ciphertext, ends_stream, out)
            .inspect_err(|_| {
                out[start..].zeroize();
                out.truncate(start);
            })
    }

    fn open_into(
        &self,
        first: u32,
        ciphertext: &[u8],
        ends_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<Opened, Error> {
        let s = &*self.stream;
        let full = s.lengths.rest + s.lengths.tag;
        if ciphertext.is_empty() {
            return if ends_stream {
                Err(Error::Truncated)
            } else {
                Ok(Opened {
                    segments: 0,
                    ends_stream: false,
                })
            };
        }
        let pieces = ciphertext.len().div_ceil(full);
        out.reserve(ciphertext.len());
        let mut tries = 0;
        for (k, sealed) in ciphertext.chunks(full).enumerate() {
            let more = k + 1 < pieces;
            // A short piece can only be the final segment; so must the
            // last piece be when the stream ends here.
            let place = if !more && (ends_stream || sealed.len() < full) {
                Place::Ends
            } else {
                Place::Either { likely_last: false }
            };
            let at = out.len();
            out.resize(at + sealed.len().saturating_sub(s.lengths.tag), 0);
            let index = u64::from(first) + k as u64;
            let opened = unit::open_segment(
                &s.suite,
                &s.lengths,
                index,
                sealed,
                &mut out[at..],
                place,
                &mut tries,
            )?;
            if opened.last {
                if more {
                    return Err(Error::TrailingData);
                }
                return Ok(Opened {
                    segments: u32::try_from(pieces).unwrap_or(u32::MAX),
                    ends_stream: true,
                });
            }
        }
        Ok(Opened {
            segments: u32::try_from(pieces).unwrap_or(u32::MAX),
            ends_stream: false,
        })
    }
}
