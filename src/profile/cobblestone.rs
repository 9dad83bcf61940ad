//! The Cobblestone profile (C2SP chunked encryption): a 56-byte header of
//! salt and key commitment, 16 KiB chunks whose nonces are the base nonce
//! XOR the chunk index, and a final chunk told by its length. The key
//! type is public in [`crate::cobblestone`].

use hmac::{Hmac, Mac};
use sha2::Sha512;
use zeroize::Zeroizing;

use super::{Stream, fresh};
use crate::cobblestone::{CHUNK_SIZE, CobblestoneKey};
use crate::core::layout::{Ends, Layout};
use crate::core::suite::{NONCE_LEN, Suite};
use crate::{Error, Provider};

/// Bytes of random salt at the start of a stream.
const SALT_LEN: usize = 24;
/// Bytes of key commitment after the salt.
const COMMITMENT_LEN: usize = 32;
/// Bytes of header: salt, then commitment.
pub(crate) const HEADER_LEN: usize = SALT_LEN + COMMITMENT_LEN;
/// The fixed start of the key derivation's info.
const LABEL: &[u8] = b"c2sp.org/chunked-encryption@v1+";

/// HKDF-Expand (RFC 5869, section 2.3) with HMAC-SHA-512 into `okm`, at
/// most 255 blocks, with `prk` the HMAC keyed with the input key as it is
/// (no Extract step: the spec's input key is uniformly random, and may be
/// shorter than a SHA-512 output).
fn hkdf_expand_sha512(prk: &Hmac<Sha512>, info: &[&[u8]], okm: &mut [u8]) {
    let mut previous = Zeroizing::new(Vec::new());
    for (counter, block) in (1u8..).zip(okm.chunks_mut(64)) {
        let mut mac = prk.clone();
        mac.update(&previous);
        for part in info {
            mac.update(part);
        }
        mac.update(&[counter]);
        let t = Zeroizing::new(mac.finalize().into_bytes().to_vec());
        block.copy_from_slice(&t[..block.len()]);
        *previous = t.to_vec();
    }
}

/// The stream's suite and the commitment it must carry, from its salt.
fn derive(
    key: &CobblestoneKey,
    context: &[u8],
    salt: &[u8],
    provider: Provider,
) -> (Suite, [u8; COMMITMENT_LEN]) {
    let inst = key.instantiation();
    let key_len = inst.key_len();
    let mut okm = Zeroizing::new(vec![0u8; key_len + NONCE_LEN + COMMITMENT_LEN]);
    let info: [&[u8]; 5] = [LABEL, inst.aead_name().as_bytes(), &[0], salt, context];
    hkdf_expand_sha512(key.prk(), &info, &mut okm);
    let (derived, rest) = okm.split_at(key_len);
    let (nonce, commitment) = rest.split_at(NONCE_LEN);
    let mut base = [0u8; NONCE_LEN];
    base.copy_from_slice(nonce);
    let mut c = [0u8; COMMITMENT_LEN];
    c.copy_from_slice(commitment);
    let suite = Suite::xor(provider, inst.algorithm(), derived, base);
    (suite, c)
}

fn stream(suite: Suite) -> Stream {
    let layout = Layout {
        header: HEADER_LEN,
        first: CHUNK_SIZE,
        rest: CHUNK_SIZE,
        tag: suite.tag_len(),
        ends: Ends::Short,
        framed: false,
    };
    Stream { suite, layout }
}

pub(super) fn cobblestone_write(
    key: &CobblestoneKey,
    context: &[u8],
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    let mut header = vec![0u8; HEADER_LEN];
    fresh(&mut header[..SALT_LEN])?;
    let (suite, commitment) = derive(key, context, &header[..SALT_LEN], provider);
    header[SALT_LEN..].copy_from_slice(&commitment);
    Ok((header, stream(suite)))
}

/// The stream from its first bytes: `Ok(None)` while they hold no whole
/// header; [`Error::Authentication`] when the commitment is not the one
/// this key and context derive (a wrong key or context, or a damaged
/// header), before any chunk is looked at.
pub(super) fn cobblestone_read(
    key: &CobblestoneKey,
    context: &[u8],
    bytes: &[u8],
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let (salt, commitment) = header.split_at(SALT_LEN);
    let (suite, expected) = derive(key, context, salt, provider);
    // Constant time: every byte is compared whatever the first difference.
    let diff = expected
        .iter()
        .zip(commitment)
        .fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        return Err(Error::Authentication);
    }
    Ok(Some((HEADER_LEN, stream(suite))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hkdf::Hkdf;
    use hmac::KeyInit;

    /// Where the input key is at least a SHA-512 output long, the hkdf
    /// crate's Expand takes it as a PRK: both must agree.
    #[test]
    fn expand_agrees_with_the_hkdf_crate() {
        let prk = [0x42u8; 64];
        for len in [1, 60, 64, 65, 76, 200] {
            let mut ours = vec![0u8; len];
            let keyed = <Hmac<Sha512> as KeyInit>::new_from_slice(&prk).expect("any length");
            hkdf_expand_sha512(&keyed, &[b"a", b"", b"bc"], &mut ours);
            let mut theirs = vec![0u8; len];
            Hkdf::<Sha512>::from_prk(&prk)
                .expect("64-byte PRK")
                .expand(b"abc", &mut theirs)
                .expect("short output");
            assert_eq!(ours, theirs, "{len}");
        }
    }
}
