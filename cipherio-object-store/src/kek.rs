//! Key-encryption keys: what wraps each object's own data key, and the
//! keyring that names the ones a store wraps with and unwraps with.

use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use async_trait::async_trait;
use zeroize::Zeroizing;

use crate::generic;

/// A key-encryption key (KEK): wraps and unwraps the data key of each
/// object written through a [`Keyring`], so that no reader or writer of
/// the data needs the KEK's own secret.
///
/// `context` binds a wrapped key to where it belongs (the object's path,
/// its stream header and this KEK's id): `unwrap` with another context
/// than the one given to `wrap` must fail. A KEK held by a key service
/// wraps and unwraps there; the data key leaves the service only
/// unwrapped, to its caller.
#[async_trait]
pub trait KeyEncryptionKey: Send + Sync + std::fmt::Debug {
    /// A stable name, stored beside each key it wraps.
    fn id(&self) -> &str;
    /// `data_key` wrapped (encrypted and authenticated) under this KEK,
    /// bound to `context`.
    async fn wrap(&self, data_key: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>>;
    /// The data key inside `wrapped`, if this KEK wrapped it with
    /// `context`; an error otherwise.
    async fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>>;
}

/// Why a data key could not be found or unwrapped: the source of the
/// [`object_store::Error::Generic`] a read, a `rewrap` or a [`LocalKek`]
/// gives (get it back with [`keyring_error`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyringError {
    /// The wrapped key does not open under the KEK its record names, with
    /// the context of the object it lies beside: it was wrapped by
    /// another KEK, for another object (another path or stream header),
    /// under another KEK id, or altered.
    Unwrap {
        /// The KEK that refused it.
        kek: String,
    },
    /// The record names a KEK the keyring does not hold (neither its
    /// primary nor an older one).
    UnknownKek {
        /// The id the record names.
        kek: String,
    },
    /// The object has no key record for its stream header: the record
    /// was deleted, or the object was replaced by one not written there
    /// through a keyring.
    MissingRecord {
        /// The object's path.
        path: String,
    },
    /// The key record does not parse, or is of another format version.
    BadRecord {
        /// The object's path.
        path: String,
    },
}

impl fmt::Display for KeyringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyringError::Unwrap { kek } => write!(
                f,
                "the data key does not unwrap under KEK {kek:?} for this object: another \
                 KEK's, another object's, or altered"
            ),
            KeyringError::UnknownKek { kek } => {
                write!(
                    f,
                    "the data key is wrapped by KEK {kek:?}, which the keyring does not hold"
                )
            }
            KeyringError::MissingRecord { path } => write!(
                f,
                "{path}: no data key record for this object's header (the record was deleted, \
                 or the object replaced)"
            ),
            KeyringError::BadRecord { path } => {
                write!(f, "{path}: the data key record does not parse")
            }
        }
    }
}

impl std::error::Error for KeyringError {}

/// The [`KeyringError`] inside `e`, if a keyring refused it: the same as
/// `std::error::Error::source(e)` downcast to `KeyringError`.
pub fn keyring_error(e: &object_store::Error) -> Option<&KeyringError> {
    std::error::Error::source(e)?.downcast_ref::<KeyringError>()
}

/// A KEK held in this process: 32 bytes that wrap each data key with
/// AES-256-GCM under a fresh random 96-bit nonce, the context as the
/// associated data (`wrapped = nonce ‖ ciphertext ‖ tag`, 60 bytes for a
/// 32-byte data key).
///
/// Why AES-256-GCM: it is an AEAD, so the context is authenticated (a
/// wrapped key moved to another object, or given another KEK id, fails
/// to unwrap), which RFC 3394 key wrap cannot do; and it is the cipher
/// this crate already builds. Random nonces keep it safe for 2^32 wraps
/// per KEK; rotate to a new KEK well before that. GCM is not itself key
/// committing, which does not matter here: one KEK opens its own wrapped
/// keys, and the stream under each data key commits to that key.
///
/// The key is wiped on drop; `Debug` prints the id, never the key.
pub struct LocalKek {
    id: String,
    key: Zeroizing<[u8; 32]>,
}

impl LocalKek {
    /// The KEK named `id` with the 32 bytes `key` (keep them as secret as
    /// the data they reach).
    pub fn new(id: impl Into<String>, key: [u8; 32]) -> Self {
        LocalKek {
            id: id.into(),
            key: Zeroizing::new(key),
        }
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&(*self.key).into())
    }
}

impl fmt::Debug for LocalKek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKek")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The bytes of an AES-GCM nonce.
const NONCE: usize = 12;

#[async_trait]
impl KeyEncryptionKey for LocalKek {
    fn id(&self) -> &str {
        &self.id
    }

    async fn wrap(&self, data_key: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        let mut nonce = [0; NONCE];
        getrandom::fill(&mut nonce).map_err(|_| crate::store_error(cipherio::Error::Random))?;
        let sealed = self
            .cipher()
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: data_key,
                    aad: context,
                },
            )
            .map_err(|_| generic("a data key too long to wrap"))?;
        Ok([&nonce[..], &sealed].concat())
    }

    async fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        let refused = || {
            generic(KeyringError::Unwrap {
                kek: self.id.clone(),
            })
        };
        let (nonce, sealed) = wrapped.split_at_checked(NONCE).ok_or_else(refused)?;
        let nonce: [u8; NONCE] = nonce.try_into().map_err(|_| refused())?;
        self.cipher()
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: sealed,
                    aad: context,
                },
            )
            .map_err(|_| refused())
    }
}

/// The KEKs a store wraps data keys with (the primary) and unwraps them
/// with (the primary and the older ones, found by the id stored beside
/// each wrapped key). Cloning shares the KEKs.
#[derive(Clone, Debug)]
pub struct Keyring {
    primary: Arc<dyn KeyEncryptionKey>,
    older: Vec<Arc<dyn KeyEncryptionKey>>,
}

impl Keyring {
    /// A keyring that wraps every new data key with `primary`.
    pub fn new(primary: Arc<dyn KeyEncryptionKey>) -> Self {
        Keyring {
            primary,
            older: Vec::new(),
        }
    }

    /// Also unwraps the keys `older` wrapped (a KEK being rotated out:
    /// [`rewrap`](crate::EncryptedStore::rewrap) moves them to the
    /// primary).
    #[must_use]
    pub fn with_older(mut self, older: Arc<dyn KeyEncryptionKey>) -> Self {
        self.older.push(older);
        self
    }

    /// The KEK new data keys are wrapped with.
    pub fn primary(&self) -> &Arc<dyn KeyEncryptionKey> {
        &self.primary
    }

    /// The KEK named `id`, the primary first.
    pub(crate) fn find(&self, id: &str) -> Result<&Arc<dyn KeyEncryptionKey>, KeyringError> {
        std::iter::once(&self.primary)
            .chain(&self.older)
            .find(|k| k.id() == id)
            .ok_or_else(|| KeyringError::UnknownKek { kek: id.into() })
    }
}
