#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cache;
mod kek;
mod keyring;
#[cfg(feature = "aws-kms")]
mod kms;
mod parallel;
mod read;
mod store;
mod upload;

pub use kek::{KeyEncryptionKey, Keyring, KeyringError, LocalKek, keyring_error};
pub use keyring::{complete_plan_with_keyring, upload_share_with_keyring};
#[cfg(feature = "aws-kms")]
pub use kms::{AwsKmsKek, KMS_CONTEXT_KEY};
pub use parallel::{
    PartDone, PartSpec, PlanSource, Source, UploadKey, UploadOptions, UploadPlan, WrappedKey,
    complete_plan, complete_plan_checked, create_plan, upload_parallel, upload_share,
};
pub use store::EncryptedStore;
pub use upload::EncryptedUpload;

/// The name this crate gives itself in [`object_store::Error::Generic`].
pub const STORE: &str = "EncryptedStore";

/// The cipherio error inside `e`, if `e` is one this crate made from an
/// authentication, format or truncation failure: every such failure is an
/// [`object_store::Error::Generic`] whose source is the
/// [`cipherio::Error`] that [`cipherio::CipherReader`] gives for the same
/// bytes (but for an object of a length no stream has: see
/// [`EncryptedStore`]'s errors).
///
/// The same as `std::error::Error::source(e)` downcast to
/// `cipherio::Error`.
pub fn cipher_error(e: &object_store::Error) -> Option<&cipherio::Error> {
    std::error::Error::source(e)?.downcast_ref::<cipherio::Error>()
}

/// A cipherio error as an object store's error, the cipherio error its
/// source.
pub(crate) fn store_error(e: cipherio::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: Box::new(e),
    }
}

/// Any other failure of this crate (a bad plan, a worker that failed), as
/// an object store's error.
pub(crate) fn generic(
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: source.into(),
    }
}
