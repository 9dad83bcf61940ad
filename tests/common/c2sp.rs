//! The `cobblestone` crate, the other side of Cobblestone interop tests.

use cipherio::cobblestone::{CobblestoneKey, Instantiation};

/// The `cobblestone` crate's one-shot decryption, with the same key.
pub fn their_decrypt(
    key: &CobblestoneKey,
    ctx: &[u8],
    ct: &[u8],
) -> Result<Vec<u8>, cobblestone::Error> {
    match key.instantiation() {
        Instantiation::Cobblestone128 => cobblestone::decrypt(
            &cobblestone::Key::try_from(key.as_bytes()).expect("the instantiation's key length"),
            ctx,
            ct,
        ),
        _ => cobblestone::decrypt(
            &cobblestone::Key256::try_from(key.as_bytes()).expect("the instantiation's key length"),
            ctx,
            ct,
        ),
    }
}
