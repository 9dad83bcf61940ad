//! Everything one format decides: header bytes, key derivation, layout.
//!
//! A profile turns a key, the associated data and (when reading) the first
//! bytes of a stream into a [`Stream`]: the [`Suite`] that seals segment *i*
//! and the [`Layout`] of the segments. The engine does the rest, the same
//! for every profile.
//!
//! | profile | header | key derivation | layout |
//! |---|---|---|---|
//! | [`native`] v1 | 53 bytes, self-describing | HKDF-SHA256, info = header ‖ AAD | fixed `capacity`-byte segments |
//! | [`tink`] AES-GCM-HKDF | 24 or 40 bytes | HKDF (key's hash), info = AAD | first segment shorter by the header |
//! | [`tink`] AES-CTR-HMAC | 24 or 40 bytes | HKDF (key's hash), info = AAD, AES key ‖ HMAC key | the same, with the key's tag size |
//! | [`cobblestone`] | 56 bytes: salt ‖ key commitment | HKDF-Expand-SHA-512, info = label ‖ AEAD name ‖ salt ‖ AAD | 16 KiB chunks, the last one short |

pub(crate) mod cobblestone;
pub(crate) mod native;
pub(crate) mod tink;

use crate::core::layout::Layout;
use crate::core::suite::Suite;
use crate::{Error, Key, Provider};
use tink::TinkFormat;

pub use native::DEFAULT_CAPACITY;

/// The format a key selects: what a [`StreamKey`](crate::StreamKey) turns
/// into when a writer or reader is built.
#[derive(Clone, Debug)]
pub enum Profile {
    /// The native v1 format.
    Native(Key),
    /// Tink's AES-GCM-HKDF streaming format.
    Tink(crate::tink::AesGcmHkdfKey),
    /// Tink's AES-CTR-HMAC streaming format.
    TinkCtrHmac(crate::tink::AesCtrHmacKey),
    /// C2SP chunked encryption (Cobblestone).
    Cobblestone(crate::cobblestone::CobblestoneKey),
}

/// A stream as its profile set it up: the suite and the segment
/// layout. The reader and writer drive it; only the profile knows headers.
pub(crate) struct Stream {
    pub(crate) suite: Suite,
    pub(crate) layout: Layout,
}

/// Starts a stream to write with `capacity`-byte segments: the header
/// bytes (to go out with the first segment) and the stream.
pub(crate) fn begin_write(
    profile: &Profile,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
    framed: bool,
) -> Result<(Vec<u8>, Stream), Error> {
    match profile {
        Profile::Native(key) => native::native_write(key, aad, capacity, provider, framed),
        Profile::Tink(_) | Profile::TinkCtrHmac(_) if framed => Err(Error::FramedTinkKey),
        Profile::Tink(key) => tink::tink_write(key, aad, capacity, provider),
        Profile::TinkCtrHmac(key) => tink::tink_write(key, aad, capacity, provider),
        Profile::Cobblestone(_) if framed => Err(Error::FramedCobblestoneKey),
        Profile::Cobblestone(key) => cobblestone::cobblestone_write(key, aad, provider),
    }
}

/// Starts a stream to read from its first bytes: `Ok(None)` while they
/// hold no complete header, else the header's length and the stream. A
/// native header asking for segments over `max_segment` is refused here,
/// before the caller allocates anything for them.
pub(crate) fn begin_read(
    profile: &Profile,
    aad: &[u8],
    bytes: &[u8],
    max_segment: usize,
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    match profile {
        Profile::Native(key) => native::native_read(key, aad, bytes, max_segment, provider),
        Profile::Tink(key) => tink::tink_read(key, aad, bytes, provider),
        Profile::TinkCtrHmac(key) => tink::tink_read(key, aad, bytes, provider),
        Profile::Cobblestone(key) => cobblestone::cobblestone_read(key, aad, bytes, provider),
    }
}

impl Profile {
    /// The writer capacity when the caller sets none.
    pub(crate) fn default_capacity(&self) -> usize {
        match self {
            Profile::Native(_) => DEFAULT_CAPACITY,
            Profile::Tink(key) => key.segment_plaintext(),
            Profile::TinkCtrHmac(key) => key.segment_plaintext(),
            Profile::Cobblestone(_) => crate::cobblestone::CHUNK_SIZE,
        }
    }

    /// Plaintext bytes of a writer's segments for the caller's
    /// `capacity`: the capacity itself, but where the format fixes the
    /// segment size and the capacity is only an I/O buffer (Cobblestone).
    pub(crate) fn segment_capacity(&self, capacity: usize) -> usize {
        match self {
            Profile::Cobblestone(_) => crate::cobblestone::CHUNK_SIZE,
            _ => capacity,
        }
    }

    /// Whether a writer may have segments of `capacity` plaintext bytes:
    /// natively 1 ..= [`MAX_WRITER_CAPACITY`](native::MAX_WRITER_CAPACITY),
    /// for a Tink key exactly its segment size; for a Cobblestone key, as
    /// natively (the capacity is not its chunk size).
    pub(crate) fn check_capacity(&self, capacity: usize) -> Result<(), Error> {
        match self {
            Profile::Native(_) | Profile::Cobblestone(_) => {
                native::segment_size(capacity).map(|_| ())
            }
            Profile::Tink(key) if capacity == key.segment_plaintext() => Ok(()),
            Profile::TinkCtrHmac(key) if capacity == key.segment_plaintext() => Ok(()),
            Profile::Tink(key) => Err(Error::CapacityForKey {
                capacity,
                required: key.segment_plaintext(),
            }),
            Profile::TinkCtrHmac(key) => Err(Error::CapacityForKey {
                capacity,
                required: key.segment_plaintext(),
            }),
        }
    }

    /// The header length of this profile (for a Tink key, exact; natively
    /// always [`HEADER_LEN`]).
    pub(crate) fn header_len(&self) -> usize {
        match self {
            Profile::Native(_) => native::HEADER_LEN,
            Profile::Tink(key) => key.header_len(),
            Profile::TinkCtrHmac(key) => key.header_len(),
            Profile::Cobblestone(_) => cobblestone::HEADER_LEN,
        }
    }
}

/// Fills `buf` with fresh randomness for a salt and nonce prefix.
fn fresh(buf: &mut [u8]) -> Result<(), Error> {
    if crate::probe::fixed_random(buf) {
        return Ok(());
    }
    getrandom::fill(buf).map_err(|_| Error::Random)
}
