//! `AwsKmsKek` against moto's KMS on loopback (the server of the S3
//! tests): data keys wrapped by KMS `Encrypt` under the documented
//! encryption context, unwrapped by `Decrypt` pinned to the key; another
//! context, another key's ciphertext, an edited wrapped key and a key KMS
//! does not have are each refused with KMS's own error code.
#![cfg(feature = "aws-kms")]
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::error::Error;

use aws_sdk_kms::Client;
use aws_sdk_kms::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kms::operation::{decrypt::DecryptError, encrypt::EncryptError};
use aws_sdk_kms::primitives::Blob;
use cipherio_object_store::{AwsKmsKek, KMS_CONTEXT_KEY, KeyEncryptionKey};

const DATA_KEY: [u8; 32] = [0x5a; 32];
/// Not UTF-8: a context is bytes.
const CONTEXT: &[u8] = b"objects/a.bin\0kek\xff";
/// `CONTEXT` but for its last byte, which no lossy text encoding tells
/// apart from it.
const OTHER_CONTEXT: &[u8] = b"objects/a.bin\0kek\xfe";

/// A fresh symmetric key on moto's KMS: its id.
async fn create_key(client: &Client) -> String {
    let out = client.create_key().send().await.unwrap();
    out.key_metadata.unwrap().key_id
}

/// A KMS client of the moto server and the KEK of a fresh key, or `None`
/// (the test skipped, said loudly) when the server cannot start.
async fn kek(test: &str) -> Option<(Client, AwsKmsKek)> {
    let client = common::moto::kms(test)?;
    let id = create_key(&client).await;
    Some((client.clone(), AwsKmsKek::new(client, id)))
}

/// The KMS error code that refused a wrap or unwrap: the code of the SDK
/// error in `e`'s sources.
fn kms_code(e: &object_store::Error) -> String {
    let mut source = e.source();
    while let Some(s) = source {
        let code = if let Some(d) = s.downcast_ref::<SdkError<DecryptError>>() {
            d.code()
        } else if let Some(d) = s.downcast_ref::<SdkError<EncryptError>>() {
            d.code()
        } else {
            source = s.source();
            continue;
        };
        return code
            .unwrap_or_else(|| panic!("no KMS error code: {e}"))
            .to_owned();
    }
    panic!("not a KMS error: {e}")
}

#[tokio::test]
async fn a_data_key_wraps_in_kms_and_unwraps() {
    let Some((client, kek)) = kek("kms_round_trip").await else {
        return;
    };
    let key_id = client
        .describe_key()
        .key_id(kek.id())
        .send()
        .await
        .unwrap()
        .key_metadata
        .unwrap()
        .key_id;
    assert_eq!(kek.id(), key_id);
    assert_eq!(
        format!("{kek:?}"),
        format!("AwsKmsKek {{ key_id: {key_id:?}, .. }}")
    );

    let wrapped = kek.wrap(&DATA_KEY, CONTEXT).await.unwrap();
    assert!(!wrapped.windows(DATA_KEY.len()).any(|w| w == DATA_KEY));
    assert_eq!(kek.unwrap(&wrapped, CONTEXT).await.unwrap(), DATA_KEY);
    // KMS itself opens it under the documented encryption context.
    let out = client
        .decrypt()
        .ciphertext_blob(Blob::new(wrapped))
        .set_encryption_context(Some(HashMap::from([(
            KMS_CONTEXT_KEY.to_owned(),
            hex::encode(CONTEXT),
        )])))
        .send()
        .await
        .unwrap();
    assert_eq!(out.plaintext.unwrap().into_inner(), DATA_KEY);
    assert_eq!(out.key_id.unwrap().rsplit('/').next(), Some(&*key_id));

    // An empty context is a context of its own.
    let wrapped = kek.wrap(&DATA_KEY, b"").await.unwrap();
    assert_eq!(kek.unwrap(&wrapped, b"").await.unwrap(), DATA_KEY);
}

#[tokio::test]
async fn another_context_is_refused() {
    let Some((_, kek)) = kek("kms_context").await else {
        return;
    };
    for (wrap, unwrap) in [
        (CONTEXT, OTHER_CONTEXT),
        (CONTEXT, &b""[..]),
        (&b""[..], CONTEXT),
    ] {
        let wrapped = kek.wrap(&DATA_KEY, wrap).await.unwrap();
        let e = kek.unwrap(&wrapped, unwrap).await.unwrap_err();
        assert_eq!(kms_code(&e), "InvalidCiphertextException", "{e}");
    }
}

#[tokio::test]
async fn a_ciphertext_of_another_key_is_refused() {
    let Some((client, kek)) = kek("kms_another_key").await else {
        return;
    };
    let other = AwsKmsKek::new(client.clone(), create_key(&client).await);
    let wrapped = kek.wrap(&DATA_KEY, CONTEXT).await.unwrap();
    let e = other.unwrap(&wrapped, CONTEXT).await.unwrap_err();
    // KMS says IncorrectKeyException; moto says AccessDeniedException.
    let code = kms_code(&e);
    assert!(
        ["IncorrectKeyException", "AccessDeniedException"].contains(&&*code),
        "{e}"
    );
    assert!(e.to_string().contains(other.id()), "{e}");
}

#[tokio::test]
async fn an_edited_wrapped_key_is_refused() {
    let Some((_, kek)) = kek("kms_edited").await else {
        return;
    };
    let wrapped = kek.wrap(&DATA_KEY, CONTEXT).await.unwrap();
    let last = wrapped.len() - 1;
    for at in [0, wrapped.len() / 2, last] {
        let mut edited = wrapped.clone();
        edited[at] ^= 1;
        let e = kek.unwrap(&edited, CONTEXT).await.unwrap_err();
        kms_code(&e);
    }
    let e = kek.unwrap(&wrapped[..last], CONTEXT).await.unwrap_err();
    assert_eq!(kms_code(&e), "InvalidCiphertextException", "{e}");
}

#[tokio::test]
async fn a_key_kms_does_not_have_is_refused() {
    let Some((client, kek)) = kek("kms_missing_key").await else {
        return;
    };
    let missing = AwsKmsKek::new(client, "0b1b6f3c-5d0e-4a8e-9d1b-000000000000");
    let e = missing.wrap(&DATA_KEY, CONTEXT).await.unwrap_err();
    assert_eq!(kms_code(&e), "NotFoundException", "{e}");
    assert!(e.to_string().contains("Encrypt with key 0b1b6f3c-"), "{e}");

    let wrapped = kek.wrap(&DATA_KEY, CONTEXT).await.unwrap();
    let e = missing.unwrap(&wrapped, CONTEXT).await.unwrap_err();
    assert_eq!(kms_code(&e), "NotFoundException", "{e}");
    assert!(e.to_string().contains("Decrypt with key 0b1b6f3c-"), "{e}");
    assert!(e.to_string().contains("NotFoundException"), "{e}");
    assert!(!e.to_string().contains(&hex::encode(DATA_KEY)), "{e}");
}

/// A keyring whose primary KEK is a KMS key, over an S3 bucket of the same
/// moto server: objects written under a local KEK are rewrapped to KMS
/// without moving their data, then read by a keyring holding KMS alone,
/// and no longer by one holding the local KEK alone.
#[tokio::test]
async fn a_keyring_rewraps_local_objects_to_kms_and_reads_them_there() {
    use cipherio_object_store::{EncryptedStore, Keyring};
    use object_store::ObjectStoreExt;
    use object_store::path::Path;
    use std::sync::Arc;

    let test = "a_keyring_rewraps_local_objects_to_kms_and_reads_them_there";
    let Some((_, kms)) = kek(test).await else {
        return;
    };
    let Some(s3) = common::moto::s3(test) else {
        return;
    };
    let inner: Arc<dyn object_store::ObjectStore> = s3;
    let local = common::keyring::kek("local");
    let kms: Arc<dyn KeyEncryptionKey> = Arc::new(kms);
    let path = Path::from("kms/object");
    let pt = common::data(3 * 16 * 1024 + 5, 9);
    let old = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(local.clone()));
    old.put(&path, pt.clone().into()).await.unwrap();

    let both = Keyring::new(Arc::clone(&kms)).with_older(local.clone());
    let rotated = EncryptedStore::with_keyring(Arc::clone(&inner), both);
    let before = inner.head(&path).await.unwrap();
    rotated.rewrap(&path).await.unwrap();
    assert_eq!(inner.head(&path).await.unwrap(), before, "data moved");

    let kms_only = EncryptedStore::with_keyring(Arc::clone(&inner), Keyring::new(kms));
    let got = kms_only.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(got, pt);
    let got = kms_only.get_range(&path, 40_000..40_100).await.unwrap();
    assert_eq!(got, pt[40_000..40_100]);
    let local_only = EncryptedStore::with_keyring(inner, Keyring::new(local));
    let refused = local_only.get(&path).await.unwrap_err();
    assert!(
        cipherio_object_store::keyring_error(&refused).is_some(),
        "{refused}"
    );
}
