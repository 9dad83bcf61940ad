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
//! **A test vector**, computed from this description with an independent
//! implementation (Python's `cryptography`: HKDF-SHA256, ChaCha20Poly1305):
//! ChaCha20-Poly1305, key `00 01 .. 1f`, associated data `"cipherio kat"`,
//! segment size 8, salt `20 21 .. 3f`, nonce prefix `a0 a1 .. a6`, plaintext
//! `"The quick brown fox!"` (three segments of 8, 8 and 4 bytes):
//!
//! ```
//! use std::io::Read;
//! use cipherio::{Algorithm, CipherReader, Key};
//!
//! let stream = hex::decode(concat!(
//!     // header: magic, version 1, algorithm 3, segment size 8, salt, nonce prefix
//!     "636970686572696f", "01", "03", "00000008",
//!     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
//!     "a0a1a2a3a4a5a6",
//!     // segment 0 (8 bytes + tag), segment 1 (8 + tag), final segment 2 (4 + tag)
//!     "001d9a045476429c", "d3cb7b74e47af30d666421170a797c9d",
//!     "7db8bd85e7daf3d3", "31792b623d4bdc0db3dc6411272c5aca",
//!     "d559f169", "b6fadec8aac718414484fca4a4520ad6",
//! ))
//! .unwrap();
//! let key = Key::from_hex(
//!     Algorithm::ChaCha20Poly1305,
//!     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
//! )?;
//! let mut r = CipherReader::builder(&key)
//!     .associated_data(b"cipherio kat")
//!     .build(&stream[..]);
//! let mut plaintext = String::new();
//! r.read_to_string(&mut plaintext)?;
//! assert_eq!(plaintext, "The quick brown fox!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `tests/oracle.rs` holds two more such vectors (AES-128-GCM with a full
//! final segment, the empty AES-256-GCM stream) and rebuilds streams from
//! this description alone, comparing them byte for byte with
//! [`CipherWriter`]'s output.
//!
//! # The framed variant (version 2), byte for byte
//!
//! Chosen by the writer ([`WriterBuilder::framed`]), for conversations:
//! `flush` seals whatever is buffered as one record, so the peer can read it
//! at once. The reader needs no option: the version byte says which variant
//! a stream is, and since every header byte goes into the key derivation,
//! neither variant can be read as the other.
//!
//! ```text
//! header (53 bytes): as version 1, with version = 0x02; segment_size is
//!     the largest record's plaintext (the writer's capacity)
//!
//! records, i = 0, 1, ..., n-1 (n >= 1)
//!     record header (4 bytes) = BE32(final << 31 | len_i)
//!     ciphertext (len_i bytes) || tag (16 bytes)
//!     0 <= len_i <= segment_size; final = 1 for record n-1 only
//!
//! nonce_i = nonce_prefix (7) || BE32(i) (4) || final (1)
//! record i = AEAD-Encrypt(K, nonce_i, aad = the 4-byte record header, plaintext_i)
//! ```
//!
//! The stream key `K` is derived as in version 1. A reader refuses a record
//! length above `segment_size` before allocating anything for it; a stream
//! that ends anywhere before its final record is truncated; bytes after the
//! final record are an error. The writer seals a record when its buffer is
//! full and more data follows, on each `flush` of a non-empty buffer, and
//! the final one at `finish` (possibly empty); it never writes an empty
//! non-final record (a reader skips one). Each flush costs 20 bytes and shows
//! its size on the wire; one plaintext has many encodings; records have no
//! computable offsets, so a framed stream has no random access.
//!
//! **A test vector**, computed from this description with Python's
//! `cryptography`: ChaCha20-Poly1305, key `00 01 .. 1f`, associated data
//! `"cipherio framed kat"`, segment size 8, salt `20 21 .. 3f`, nonce
//! prefix `a0 a1 .. a6`; `"hello"` written and flushed, then `" world!"`
//! and finish:
//!
//! ```
//! use std::io::Read;
//! use cipherio::{Algorithm, CipherReader, Key};
//!
//! let stream = hex::decode(concat!(
//!     // header: magic, version 2 (framed), algorithm 3, segment size 8, salt, nonce prefix
//!     "636970686572696f", "02", "03", "00000008",
//!     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
//!     "a0a1a2a3a4a5a6",
//!     // record 0: header (5 bytes, not final), ciphertext, tag
//!     "00000005", "27851a5ca6", "f7932c8a3ed0467533242c3c64646e02",
//!     // record 1: header (7 bytes, final), ciphertext, tag
//!     "80000007", "f80c6cc146ae33", "55e4e60019402b8ac4af75d3446990fc",
//! ))
//! .unwrap();
//! let key = Key::from_hex(
//!     Algorithm::ChaCha20Poly1305,
//!     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
//! )?;
//! let mut r = CipherReader::builder(&key)
//!     .associated_data(b"cipherio framed kat")
//!     .build(&stream[..]);
//! let mut plaintext = String::new();
//! r.read_to_string(&mut plaintext)?;
//! assert_eq!(plaintext, "hello world!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

// The benchmark's and examples' report of which AES/GHASH/ChaCha20/Poly1305
// implementations run: it mirrors the RustCrypto crates' private cfg logic,
// so it is no part of the API (hidden, not covered by semver).
#[doc(hidden)]
pub mod backend;
pub mod cobblestone;
mod core;
mod drive;
mod error;
pub mod format;
mod io;
mod key;
mod probe;
mod profile;
mod provider;
pub mod segments;
mod threads;
pub mod tink;

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[path = "aio/mod.rs"]
pub mod tokio;

#[cfg(feature = "hazmat")]
#[cfg_attr(docsrs, doc(cfg(feature = "hazmat")))]
pub mod hazmat;

pub use error::Error;
pub use format::DEFAULT_CAPACITY;
pub use io::{CipherReader, CipherReaderAt, CipherWriter, ReadAt, ReaderBuilder, WriterBuilder};
pub use key::{Algorithm, Key, StreamKey};
pub use provider::Provider;

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
        send_sync::<tink::AesGcmHkdfKey>();
        send_sync::<tink::AesGcmHkdfParams>();
        send_sync::<cobblestone::CobblestoneKey>();
        send_sync::<Provider>();
        send_sync::<segments::SegmentSealer>();
        send_sync::<segments::SegmentOpener>();
    }
}
