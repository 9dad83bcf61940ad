//! Key-encryption keys: what wraps each object's own data key.

use async_trait::async_trait;

/// A key-encryption key (KEK): wraps and unwraps the data key of each
/// object written through a [`Keyring`](crate::Keyring), so that no
/// reader or writer of the data needs the KEK's own secret.
///
/// `context` binds a wrapped key to where it belongs (the object's path
/// and this KEK's id): `unwrap` with another context than the one given
/// to `wrap` must fail. A KEK held by a key service wraps and unwraps
/// there; the data key leaves the service only unwrapped, to its caller.
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
