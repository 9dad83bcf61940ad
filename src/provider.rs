//! Which library seals and opens the segments.

/// The implementation of the AEADs behind a stream: the pure-Rust
/// RustCrypto crates (always there), or AWS-LC through `aws-lc-rs` (cargo
/// feature `aws-lc`). Both write and read the same bytes: a stream
/// written with one opens with the other, in either format.
///
/// The default is the fastest one compiled in: [`AwsLc`](Self::AwsLc)
/// when the `aws-lc` feature is on, else [`RustCrypto`](Self::RustCrypto).
/// So turning the feature on speeds up every `CipherWriter::new` and
/// `CipherReader::new` without a change to the code that calls them;
/// [`WriterBuilder::provider`](crate::WriterBuilder::provider) and
/// [`ReaderBuilder::provider`](crate::ReaderBuilder::provider) pick one
/// per stream. (Cargo unifies features: if any crate in the build turns
/// `aws-lc` on, every default stream in it uses AWS-LC. The format does
/// not change, so nothing a stream writes or reads does either.)
///
/// Only the per-segment AEAD moves: HKDF key derivation, the header and
/// the buffering are the same code for both.
///
/// ```
/// use cipherio::{Algorithm, CipherReader, CipherWriter, Key, Provider};
/// use std::io::{Read, Write};
///
/// let key = Key::generate(Algorithm::Aes128Gcm);
/// let mut w = CipherWriter::builder(&key)
///     .provider(Provider::RustCrypto)
///     .build(Vec::new());
/// w.write_all(b"sealed by RustCrypto")?;
/// let sealed = w.finish()?;
///
/// // Any provider opens it, the default included.
/// for provider in Provider::ALL {
///     let mut r = CipherReader::builder(&key).provider(*provider).build(&sealed[..]);
///     let mut text = String::new();
///     r.read_to_string(&mut text)?;
///     assert_eq!(text, "sealed by RustCrypto");
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// `aes-gcm` and `chacha20poly1305` from RustCrypto: pure Rust,
    /// portable, no C toolchain. [`backend::detect`](crate::backend::detect)
    /// tells which of their CPU backends runs.
    RustCrypto,
    /// AWS-LC's AES-GCM and ChaCha20-Poly1305 (assembly with its own CPU
    /// dispatch: stitched AES-NI/VAES and CLMUL/VPCLMULQDQ on x86-64),
    /// through `aws-lc-rs`. Needs the `aws-lc` feature (and a C compiler
    /// to build AWS-LC).
    #[cfg(feature = "aws-lc")]
    AwsLc,
}

impl Provider {
    /// Every provider compiled into this build, the default last.
    pub const ALL: &'static [Provider] = &[
        Provider::RustCrypto,
        #[cfg(feature = "aws-lc")]
        Provider::AwsLc,
    ];

    /// A short name for reports: `"rustcrypto"` or `"aws-lc"`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::RustCrypto => "rustcrypto",
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => "aws-lc",
        }
    }
}

impl Default for Provider {
    /// [`AwsLc`](Self::AwsLc) when compiled in, else
    /// [`RustCrypto`](Self::RustCrypto).
    fn default() -> Self {
        #[cfg(feature = "aws-lc")]
        {
            Provider::AwsLc
        }
        #[cfg(not(feature = "aws-lc"))]
        {
            Provider::RustCrypto
        }
    }
}
