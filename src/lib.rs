#![doc = include_str!("../README.md")]
//!
//! # The native format, v1, byte for byte
//!
//! A stream is a 53-byte header followed by one or more segments. All
//! integers are big-endian.
//!
//! ```text
//! header (53 bytes)
//! offset  len  field
//!      0    8  magic           ASCII "cipherio" = 63 69 70 68 65 72 69 6f
//!      8    1  version         0x01
//!      9    1  algorithm       0x01 AES-128-GCM, 0x02 AES-256-GCM,
//!                              0x03 ChaCha20-Poly1305
//!     10    4  segment_size    plaintext bytes per segment, u32, >= 1
//!     14   32  salt            random, fresh for every stream
//!     46    7  nonce_prefix    random, fresh for every stream
//!
//! segments, i = 0, 1, ..., n-1 (n >= 1)
//!     ciphertext (len_i bytes) || tag (16 bytes)
//!     len_i = segment_size for i < n-1;  0 <= len_{n-1} <= segment_size,
//!     and len_{n-1} = 0 only when n = 1 (the empty stream)
//! ```
//!
//! **Stream key.** `K = HKDF-SHA256(salt = header.salt, ikm = caller's key,
//! info = the 53 header bytes ‖ associated data, L = key length)`, with
//! `L` = 16 for AES-128-GCM and 32 for the others (RFC 5869; the associated
//! data is whatever the caller gave the builder, possibly empty, and is not
//! stored). Because every header byte is in `info`, a changed header yields
//! a different key and the first segment fails to authenticate.
//!
//! **Segment nonce** (12 bytes, the STREAM construction of
//! Hoang–Reyhanitabar–Rogaway–Vizár):
//!
//! ```text
//! nonce_i = nonce_prefix (7) || BE32(i) (4) || last (1)
//!           last = 0x01 for segment n-1, 0x00 for every other segment
//! ```
//!
//! Segment `i` is `AEAD-Encrypt(K, nonce_i, aad = empty, plaintext_i)`,
//! written as ciphertext then the 16-byte tag. At most 2^32 segments.
//!
//! **Reading.** A reader knows a segment is the last one when the input
//! ends less than a full sealed segment (`segment_size + 16` bytes) after
//! it; a full-length segment is tried as non-final and then as final, and a
//! final one must be followed by the end of the input. An input that ends
//! at a segment boundary without a final segment is truncated; bytes after
//! the final segment are an error; an empty final segment after non-empty
//! ones (which no writer produces) is refused, so each plaintext has exactly
//! one encoding for a given header.
//!
//! A test vector: the [`format`] module's tests and `tests/oracle.rs`
//! rebuild streams from this description alone and compare them byte for
//! byte with [`CipherWriter`]'s output.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod backend;
mod error;
pub mod format;
mod key;
mod read;
mod seal;
mod write;

pub use error::Error;
pub use key::{Algorithm, Key};
pub use read::{CipherReader, ReaderBuilder};
pub use write::{CipherWriter, DEFAULT_CAPACITY, WriterBuilder};

#[cfg(test)]
mod assertions {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_are_send_and_sync() {
        send_sync::<Key>();
        send_sync::<Error>();
        send_sync::<CipherWriter<std::fs::File>>();
        send_sync::<CipherReader<std::fs::File>>();
        send_sync::<WriterBuilder>();
        send_sync::<ReaderBuilder>();
    }
}
