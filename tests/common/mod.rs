//! What the integration tests share (`mod common;` in each test file):
//!
//! | module | holds |
//! |---|---|
//! | [`doubles`] | the scripted inner reader and writer: short, failing, zero and counting I/O |
//! | [`front`] | [`Front`]: one writer/reader handle over the std and the tokio fronts |
//! | [`drive`] | write and read drivers: chunkings, read patterns, retrying loops |
//! | [`check`] | typed error checks, "only an authenticated prefix was released", sticky errors, the tamper harness |
//! | [`layout`] | one model of the segment layout, from the format description |
//! | [`format`] | the formats the tamper suite attacks: sealing, where segments lie, the error each attack gives |
//! | [`seals`] | a nonce spent once: every segment a writer offered, opened by index, one plaintext per `(header, index)` |
//! | [`oracles`] | one oracle per format (the fuzz crate's files), for streams the writer never makes |
//! | [`c2sp`] | the `cobblestone` crate's decryption, for Cobblestone interop |
//! | [`aio`] | async doubles for the tokio fronts (feature `tokio`): `Pending`, errors, short writes and `Ok(0)` at chosen poll positions |
//!
//! The oracles in [`oracles`] use nothing of this module nor of cipherio's
//! internals: an oracle shares no code with what it checks.
#![allow(dead_code, unused_imports)]

#[cfg(feature = "tokio")]
pub mod aio;
pub mod c2sp;
pub mod check;
pub mod doubles;
pub mod drive;
pub mod format;
pub mod front;
pub mod layout;
pub mod oracles;
pub mod seals;

pub use check::*;
pub use doubles::*;
pub use drive::*;
pub use front::*;
pub use layout::*;

use cipherio::Provider;

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;

/// Deterministic plaintext that looks random (a swapped or duplicated
/// segment never decrypts to the same bytes) and never holds 0x00 (what a
/// wipe leaves) nor 0xAA (what caller buffers are filled with), so that
/// plaintext left in a buffer shows. Streams of other seeds differ.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1 + x.to_le_bytes()[3] % 0xA9
        })
        .collect()
}

/// Whether `b` holds no plaintext of [`data`]: only 0x00 and 0xAA.
pub fn no_plaintext(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0x00 || x == 0xAA)
}

/// Every (writer provider, reader provider) pair of `Provider::ALL`.
pub fn pairs() -> Vec<(Provider, Provider)> {
    Provider::ALL
        .iter()
        .flat_map(|&w| Provider::ALL.iter().map(move |&r| (w, r)))
        .collect()
}
