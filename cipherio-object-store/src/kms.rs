//! AWS KMS as a key-encryption key (the `aws-kms` feature).

use std::collections::HashMap;
use std::error::Error;
use std::fmt;

use async_trait::async_trait;
use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;

use crate::KeyEncryptionKey;

/// The name under which [`AwsKmsKek`] puts the wrapping context into KMS's
/// encryption context, as lowercase hex.
pub const KMS_CONTEXT_KEY: &str = "cipherio-context";

/// A symmetric AWS KMS key as a [`KeyEncryptionKey`]: `wrap` is KMS
/// `Encrypt` of the data key and `unwrap` is KMS `Decrypt`, so the KMS
/// key's secret never leaves KMS.
///
/// KMS's encryption context is a map of strings: the wrapping context goes
/// in as one entry, [`KMS_CONTEXT_KEY`] → the context's bytes in lowercase
/// hex (none for an empty context), so that any bytes are a context and two
/// contexts are one entry only if their bytes are equal. KMS binds it to the
/// ciphertext (`Decrypt` with another context fails) and writes it in the
/// clear to CloudTrail: a context is not secret. KMS limits the size of an
/// encryption context; hex doubles the context's length.
///
/// `unwrap` names the key in its `Decrypt` request, so KMS refuses a
/// ciphertext made under any other key, even one the caller may use. Give
/// the key's id or ARN: an alias works too, but one moved to another key
/// unwraps nothing wrapped before the move.
///
/// The client brings the region, credentials, HTTP client and retries:
/// build it from `aws-config`'s `SdkConfig` (`aws_sdk_kms::Client::new`) or
/// from an `aws_sdk_kms::Config`. The SDK's request and response buffers
/// hold copies of each data key that this crate cannot wipe.
///
/// `Debug` shows the key id, never a key.
///
/// # Errors
///
/// A failed call is an [`object_store::Error::Generic`] whose message names
/// the call, the key id and KMS's error code; its source's source is the
/// SDK's `SdkError<EncryptError, _>` or `SdkError<DecryptError, _>`, for
/// the typed cause (`InvalidCiphertextException` for another context or an
/// altered wrapped key, `IncorrectKeyException` for a ciphertext of
/// another key, `NotFoundException` for a key KMS does not have).
#[derive(Clone)]
pub struct AwsKmsKek {
    client: Client,
    key_id: String,
}

impl AwsKmsKek {
    /// The KMS key `key_id` (a key id, key ARN, alias name or alias ARN),
    /// called through `client`. Does no I/O: a key KMS does not have is
    /// refused by the first `wrap` or `unwrap`.
    pub fn new(client: Client, key_id: impl Into<String>) -> Self {
        Self {
            client,
            key_id: key_id.into(),
        }
    }

    /// The KMS encryption context that carries `context`: none for an
    /// empty context.
    fn encryption_context(context: &[u8]) -> Option<HashMap<String, String>> {
        (!context.is_empty())
            .then(|| HashMap::from([(KMS_CONTEXT_KEY.to_owned(), hex::encode(context))]))
    }

    /// The failure of KMS call `call` with this key.
    fn error(
        &self,
        call: &'static str,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> object_store::Error {
        crate::generic(KmsError {
            call,
            key_id: self.key_id.clone(),
            source: source.into(),
        })
    }
}

impl fmt::Debug for AwsKmsKek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsKmsKek")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl KeyEncryptionKey for AwsKmsKek {
    fn id(&self) -> &str {
        &self.key_id
    }

    async fn wrap(&self, data_key: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        let out = self
            .client
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(Blob::new(data_key))
            .set_encryption_context(Self::encryption_context(context))
            .send()
            .await
            .map_err(|e| self.error("Encrypt", e))?;
        out.ciphertext_blob
            .map(Blob::into_inner)
            .ok_or_else(|| self.error("Encrypt", "the answer has no CiphertextBlob"))
    }

    async fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> object_store::Result<Vec<u8>> {
        let out = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(wrapped))
            .set_encryption_context(Self::encryption_context(context))
            .send()
            .await
            .map_err(|e| self.error("Decrypt", e))?;
        out.plaintext
            .map(Blob::into_inner)
            .ok_or_else(|| self.error("Decrypt", "the answer has no Plaintext"))
    }
}

/// A failed KMS call: which call, under which key, and the SDK's error.
#[derive(Debug)]
struct KmsError {
    call: &'static str,
    key_id: String,
    source: Box<dyn Error + Send + Sync>,
}

impl fmt::Display for KmsError {
    /// The call, the key and the SDK's error with its sources, each message
    /// once (the SDK's service error repeats the one inside it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AWS KMS {} with key {}", self.call, self.key_id)?;
        let mut said = String::new();
        let mut next: Option<&(dyn Error + 'static)> = Some(&*self.source);
        while let Some(e) = next {
            let message = e.to_string();
            if !said.contains(&message) {
                write!(f, ": {message}")?;
                said.push_str(&message);
            }
            next = e.source();
        }
        Ok(())
    }
}

impl Error for KmsError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}
