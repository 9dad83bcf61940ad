//! The Tink profiles: AES-GCM-HKDF and AES-CTR-HMAC streaming keys share
//! the header (length byte ‖ salt ‖ nonce prefix) and the layout (the first
//! segment shorter by the header); they differ in the key derivation and
//! the segment cipher. The key types are public in [`crate::tink`].

use super::{Stream, fresh};
use crate::core::ctr_hmac::HMAC_KEY_LEN;
use crate::core::kdf::derive_key;
use crate::core::layout::{Ends, Layout};
use crate::core::suite::{NONCE_PREFIX_LEN, Suite};
use crate::tink::{AesCtrHmacKey, AesGcmHkdfKey};
use crate::{Error, Provider};

/// What a Tink key type decides: the sizes, and the suite from the salt.
pub(crate) trait TinkFormat {
    /// Bytes of header: 1 + derived key size + 7.
    fn header_len(&self) -> usize;
    /// Plaintext bytes of a full first segment.
    fn first_segment_plaintext(&self) -> usize;
    /// Plaintext bytes of every later full segment.
    fn segment_plaintext(&self) -> usize;
    /// The stream's suite from its salt and nonce prefix.
    fn suite(
        &self,
        aad: &[u8],
        salt: &[u8],
        prefix: [u8; NONCE_PREFIX_LEN],
        provider: Provider,
    ) -> Suite;
}

impl TinkFormat for AesGcmHkdfKey {
    fn header_len(&self) -> usize {
        self.params().header_len()
    }
    fn first_segment_plaintext(&self) -> usize {
        self.params().first_segment_plaintext()
    }
    fn segment_plaintext(&self) -> usize {
        self.params().segment_plaintext()
    }
    /// HKDF(hash, salt, ikm, info = AAD, L = derived key size): the AES-GCM key.
    fn suite(
        &self,
        aad: &[u8],
        salt: &[u8],
        prefix: [u8; NONCE_PREFIX_LEN],
        provider: Provider,
    ) -> Suite {
        let p = self.params();
        let derived = derive_key(
            p.hkdf_hash(),
            p.derived_key_size(),
            self.as_bytes(),
            salt,
            &[aad],
        );
        Suite::new(provider, p.algorithm(), &derived, prefix)
    }
}

impl TinkFormat for AesCtrHmacKey {
    fn header_len(&self) -> usize {
        self.params().header_len()
    }
    fn first_segment_plaintext(&self) -> usize {
        self.params().first_segment_plaintext()
    }
    fn segment_plaintext(&self) -> usize {
        self.params().segment_plaintext()
    }
    /// HKDF(hash, salt, ikm, info = AAD, L = derived key size + 32): the
    /// AES-CTR key, then the HMAC key.
    fn suite(
        &self,
        aad: &[u8],
        salt: &[u8],
        prefix: [u8; NONCE_PREFIX_LEN],
        provider: Provider,
    ) -> Suite {
        let p = self.params();
        let dks = p.derived_key_size();
        let derived = derive_key(
            p.hkdf_hash(),
            dks + HMAC_KEY_LEN,
            self.as_bytes(),
            salt,
            &[aad],
        );
        let (aes_key, hmac_key) = derived.split_at(dks);
        Suite::ctr_hmac(
            provider,
            aes_key,
            hmac_key,
            p.hmac_hash(),
            p.tag_size(),
            prefix,
        )
    }
}

/// The Tink header's first byte: its own length (24 or 40).
fn tink_len_byte<K: TinkFormat>(key: &K) -> u8 {
    u8::try_from(key.header_len())
        .unwrap_or_else(|_| unreachable!("a Tink header is at most 40 bytes"))
}

/// The Tink stream's suite and layout from its header: length byte, salt
/// (derived key size), nonce prefix.
fn tink_stream<K: TinkFormat>(key: &K, aad: &[u8], header: &[u8], provider: Provider) -> Stream {
    let (salt, prefix) = header[1..].split_at(key.header_len() - 1 - NONCE_PREFIX_LEN);
    let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
    nonce_prefix.copy_from_slice(prefix);
    let suite = key.suite(aad, salt, nonce_prefix, provider);
    let layout = Layout {
        header: key.header_len(),
        first: key.first_segment_plaintext(),
        rest: key.segment_plaintext(),
        tag: suite.tag_len(),
        ends: Ends::FlagOrEmpty,
        framed: false,
    };
    Stream { suite, layout }
}

pub(super) fn tink_write<K: TinkFormat>(
    key: &K,
    aad: &[u8],
    capacity: usize,
    provider: Provider,
) -> Result<(Vec<u8>, Stream), Error> {
    if capacity != key.segment_plaintext() {
        return Err(Error::CapacityForKey {
            capacity,
            required: key.segment_plaintext(),
        });
    }
    let mut header = vec![0u8; key.header_len()];
    header[0] = tink_len_byte(key);
    fresh(&mut header[1..])?;
    let stream = tink_stream(key, aad, &header, provider);
    Ok((header, stream))
}

pub(super) fn tink_read<K: TinkFormat>(
    key: &K,
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
