//! The Tink AES-GCM-HKDF profile: its header, key derivation and layout
//! (the key types are public in [`crate::tink`]).

use super::{Stream, fresh};
use crate::core::kdf::derive_key;
use crate::core::layout::Layout;
use crate::core::suite::{NONCE_PREFIX_LEN, Suite};
use crate::tink::TinkKey;
use crate::{Error, Provider};

/// The Tink header's first byte: its own length (24 or 40).
fn tink_len_byte(key: &TinkKey) -> u8 {
    u8::try_from(key.params().header_len())
        .unwrap_or_else(|_| unreachable!("a Tink header is at most 40 bytes"))
}

/// The Tink stream's sealing core and layout from its header: length byte,
/// salt (derived key size), nonce prefix.
fn tink_stream(key: &TinkKey, aad: &[u8], header: &[u8], provider: Provider) -> Stream {
    let p = key.params();
    let (salt, prefix) = header[1..].split_at(p.derived_key_size());
    let derived = derive_key(
        p.hkdf_hash(),
        p.derived_key_size(),
        key.as_bytes(),
        salt,
        &[aad],
    );
    let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
    nonce_prefix.copy_from_slice(prefix);
    let suite = Suite::new(provider, p.algorithm(), &derived, nonce_prefix);
    let layout = Layout {
        header: p.header_len(),
        first: p.first_segment_plaintext(),
        rest: p.segment_plaintext(),
        tag: suite.tag_len(),
        empty_final: true,
        framed: false,
    };
    Stream { suite, layout }
}

pub(super) fn tink_write(
    key: &TinkKey,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    let p = key.params();
    if capacity != p.segment_plaintext() {
        return Err(Error::CapacityForKey {
            capacity,
            required: p.segment_plaintext(),
        });
    }
    let mut header = vec![0u8; p.header_len()];
    header[0] = tink_len_byte(key);
    fresh(&mut header[1..])?;
    let stream = tink_stream(key, aad, &header, provider);
    Ok((header, stream))
}

pub(super) fn tink_read(
    key: &TinkKey,
    aad: &[u8],
    bytes: &[u8],
    provider: Provider,
) -> Result<Option<(usize, Stream)>, Error> {
    let expected = tink_len_byte(key);
    let Some(&found) = bytes.first() else {
        return Ok(None);
    };
    if found != expected {
        return Err(Error::HeaderLength { expected, found });
    }
    let Some(header) = bytes.get(..usize::from(expected)) else {
        return Ok(None);
    };
    Ok(Some((
        header.len(),
        tink_stream(key, aad, header, provider),
    )))
}
