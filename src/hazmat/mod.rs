//! Unauthenticated keystream adapters: [`KeystreamWriter`] and
//! [`KeystreamReader`] over any [`cipher::StreamCipher`].
//!
//! **Nothing here is authenticated.** A keystream cipher only XORs the data
//! with a keystream: anyone who can change the ciphertext can flip any bit
//! of the plaintext, undetected, and cut or extend the stream; a reader
//! hands out whatever it is given, decrypted. Reusing a key and IV (or
//! nonce) for two streams reveals the XOR of their plaintexts. For anything
//! new, use the crate's authenticated types, [`CipherWriter`] and
//! [`CipherReader`], which detect every such change.
//!
//! These adapters are still the right tool when:
//!
//! - the format authenticates elsewhere: a MAC or signature over the whole
//!   ciphertext, checked before the plaintext is trusted (encrypt-then-MAC
//!   done by the caller), or a transport that already authenticates;
//! - existing data was written with a raw stream cipher (AES-CTR as in
//!   Java's `Cipher.getInstance("AES/CTR/NoPadding")` streams, ChaCha20, …)
//!   and has to be read or written byte for byte;
//! - the medium needs random access at byte granularity with ciphertext
//!   exactly as long as the plaintext (disk images, sector-style
//!   encryption), where an authenticated format's per-segment tags do not
//!   fit.
//!
//! # The adapters
//!
//! Both are generic over any `C:` [`StreamCipher`] (`ctr::Ctr128BE<aes::Aes128>`,
//! `chacha20::ChaCha20`, …) of the `cipher` crate's 0.5 series, the one
//! `ctr` 0.10 and `chacha20` 0.10 implement; bring the traits from the
//! cipher's own crate (`ctr::cipher::KeyIvInit`). `cipher` is not
//! re-exported: it is not yet 1.0, and a re-export would make its whole
//! API part of this crate's. Moving the adapters to a later `cipher`
//! series is a breaking change of the `hazmat` feature, made in a minor
//! release while this crate is 0.x. The adapters buffer like [`std::io::BufWriter`] / [`std::io::BufReader`], with the
//! crate's usual constructors: `new(cipher, inner)` (an 8 KiB buffer,
//! [`DEFAULT_CAPACITY`]) and `with_capacity(capacity, cipher, inner)`.
//! Encrypting and decrypting are the same operation, so either adapter does
//! both: a writer encrypts what it is given on the way out (or decrypts
//! it), a reader decrypts what it reads (or encrypts it).
//!
//! - [`KeystreamWriter`] applies the keystream exactly once to every byte it
//!   accepts, as it accepts it, and keeps the result until the inner writer
//!   has taken it: an inner `Interrupted`, `WouldBlock` or short write loses
//!   nothing and encrypts nothing twice, and a retried call resumes. Its
//!   buffer holds ciphertext, never plaintext. Call [`flush`](std::io::Write::flush)
//!   or [`finish`](KeystreamWriter::finish): dropping it writes nothing.
//! - [`KeystreamReader`] implements [`Read`](std::io::Read) and
//!   [`BufRead`](std::io::BufRead). Over an inner reader that is a
//!   `BufRead` itself (a `&[u8]`, a `BufReader<File>`), build it with
//!   [`from_buf_read`](KeystreamReader::from_buf_read): it then applies the
//!   keystream from the inner reader's buffer straight into yours, where
//!   a plain `Read` source has to be copied out first.
//! - Both implement [`Seek`](std::io::Seek) when the cipher implements
//!   [`StreamCipherSeek`] and the inner type seeks (see below).
//! - Buffers are wiped on drop.
//!
//! # Seeking
//!
//! Ciphertext and plaintext have the same length, so positions are the
//! inner reader's or writer's own: `SeekFrom::Start(n)` moves the inner
//! type to `n` and the keystream with it. The keystream position the
//! cipher has when the adapter is built belongs to the inner position at
//! that moment: a cipher at keystream position 0 over a file positioned at
//! byte 16 (after a header, say) decrypts byte 16 with the first keystream
//! byte, and `Start(16)` goes back to it. The adapters do no I/O when
//! built, so they measure that inner position at the first seek (one
//! [`stream_position`](std::io::Seek::stream_position) call to the inner
//! type), as the inner position minus the bytes of keystream used so far;
//! moving the inner type behind an adapter's back
//! ([`get_mut`](KeystreamReader::get_mut)) breaks that correspondence. A
//! seek to a position before the keystream's start, or beyond its end,
//! fails with `InvalidInput` and leaves the adapter where it was.
//!
//! A writer that seeks past the inner writer's end and writes there leaves
//! a gap the inner type fills (with zeros, for a `File` or a `Cursor`):
//! those bytes were never encrypted and read back as keystream, not zeros.
//!
//! # The end of the keystream
//!
//! A cipher whose counter is short has a finite keystream (ChaCha20 with a
//! 96-bit nonce: 256 GiB; `Ctr32BE`: 2^32 blocks from its IV). Neither
//! adapter ever panics there: a writer accepts the bytes it still has
//! keystream for, then fails with `FileTooLarge`; a reader fails with
//! `FileTooLarge` if the input goes on beyond the keystream.
//!
//! # Example
//!
//! AES-128-CTR, compatible with any other AES-CTR implementation with a
//! 128-bit big-endian counter (Java's `AES/CTR/NoPadding`, OpenSSL's
//! `aes-128-ctr`):
//!
//! ```
//! use std::io::{Cursor, Read, Seek, SeekFrom, Write};
//! use cipherio::hazmat::{KeystreamReader, KeystreamWriter};
//! use ctr::cipher::KeyIvInit;
//!
//! type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;
//! let (key, iv) = ([0x42; 16], [0x24; 16]);
//!
//! let mut w = KeystreamWriter::new(Aes128Ctr::new(&key.into(), &iv.into()), Vec::new());
//! w.write_all(b"not authenticated: a flipped bit goes unnoticed")?;
//! let ciphertext = w.finish()?;
//!
//! let mut r = KeystreamReader::new(Aes128Ctr::new(&key.into(), &iv.into()), Cursor::new(ciphertext));
//! r.seek(SeekFrom::Start(19))?; // random access: the keystream follows
//! let mut rest = String::new();
//! r.read_to_string(&mut rest)?;
//! assert_eq!(rest, "a flipped bit goes unnoticed");
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`CipherWriter`]: crate::CipherWriter
//! [`CipherReader`]: crate::CipherReader
//! [`DEFAULT_CAPACITY`]: crate::DEFAULT_CAPACITY
//! [`StreamCipher`]: cipher::StreamCipher
//! [`StreamCipherSeek`]: cipher::StreamCipherSeek

use std::io::{self, ErrorKind};
use std::ops::{Deref, DerefMut};

use cipher::{StreamCipher, StreamCipherSeek};
use zeroize::{Zeroize, Zeroizing};

mod read;
mod write;

pub use read::KeystreamReader;
pub use write::KeystreamWriter;

/// An adapter's buffer, wiped on drop (in a [`Zeroizing`]) with one fill
/// of the whole slice: `[u8]`'s `Zeroize`, a `memset` behind an
/// optimisation barrier. zeroize's impls for `Vec<u8>` and `Box<[u8]>` go
/// element by element (`iter_mut().zeroize()`, a volatile write per byte),
/// which for a 64 KiB buffer cost a fresh adapter about 7 % of a 1 MiB
/// AES-128-CTR stream. The `Vec` is only ever resized from empty to its
/// full length, so its slice is the whole allocation.
#[derive(Default)]
struct Buf(Vec<u8>);

impl Zeroize for Buf {
    fn zeroize(&mut self) {
        self.0.as_mut_slice().zeroize();
    }
}

impl Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// The writer's buffer of `capacity` bytes (at least one).
fn buffer(capacity: usize) -> Zeroizing<Buf> {
    Zeroizing::new(Buf(vec![0; capacity.max(1)]))
}

/// How many of the next `len` bytes the cipher still has keystream for.
#[inline]
fn keystream_room<C: StreamCipher>(cipher: &C, len: usize) -> usize {
    if cipher.check_remaining(len).is_ok() {
        len
    } else {
        keystream_room_cold(cipher, len)
    }
}

/// Near the end of the keystream: the longest length that still fits.
#[cold]
fn keystream_room_cold<C: StreamCipher>(cipher: &C, len: usize) -> usize {
    // check_remaining(0) always holds, check_remaining(len) does not.
    let (mut fits, mut too_long) = (0, len);
    while too_long - fits > 1 {
        let mid = fits + (too_long - fits) / 2;
        if cipher.check_remaining(mid).is_ok() {
            fits = mid;
        } else {
            too_long = mid;
        }
    }
    fits
}

fn exhausted() -> io::Error {
    io::Error::new(
        ErrorKind::FileTooLarge,
        "the cipher's keystream is exhausted",
    )
}

/// The cipher's keystream position.
fn keystream_pos<C: StreamCipherSeek>(cipher: &C) -> io::Result<u64> {
    cipher.try_current_pos::<u64>().map_err(|_| {
        io::Error::new(
            ErrorKind::InvalidInput,
            "the keystream position does not fit in a u64",
        )
    })
}

/// The inner position minus the keystream position, fixed at the first
/// seek: `inner_pos` is the inner type's position with every byte the
/// cipher has processed already read from it or written to it.
fn origin<C: StreamCipherSeek>(inner_pos: u64, cipher: &C) -> io::Result<i128> {
    Ok(i128::from(inner_pos) - i128::from(keystream_pos(cipher)?))
}

/// Moves the keystream to the inner position `inner_pos`; on error the
/// cipher is unchanged.
fn seek_keystream<C: StreamCipherSeek>(
    cipher: &mut C,
    origin: i128,
    inner_pos: u64,
) -> io::Result<()> {
    let pos = u64::try_from(i128::from(inner_pos) - origin).map_err(|_| {
        io::Error::new(
            ErrorKind::InvalidInput,
            "seek to a position before the start of the keystream",
        )
    })?;
    cipher.try_seek(pos).map_err(|_| {
        io::Error::new(
            ErrorKind::InvalidInput,
            "seek to a position beyond the end of the keystream",
        )
    })
}

/// The inner position of keystream position `keystream`.
fn inner_pos(origin: i128, keystream: u64) -> io::Result<u64> {
    u64::try_from(origin + i128::from(keystream))
        .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "position out of range"))
}
