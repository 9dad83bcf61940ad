//! Which library seals and opens the segments.

/// The implementation of the AEADs behind a stream: the pure-Rust
/// RustCrypto crates (always there), or AWS-LC through `aws-lc-rs` (cargo
/// feature `aws-lc`). Both write and read the same bytes: a stream
/// written with one opens with the other, in either format.
///
/// The default is [`RustCrypto`](Self::RustCrypto) in every build: cargo
/// features only add, so turning `aws-lc` on (in this crate or in any other
/// crate of the build, since cargo unifies features) changes no stream that
/// did not ask for AWS-LC. Pick AWS-LC per stream with
/// [`WriterBuilder::provider`](crate::WriterBuilder::provider) and
/// [`ReaderBuilder::provider`](crate::ReaderBuilder::provider) and
/// `Provider::AwsLc`; a crate that names it turns the feature on itself.
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
    /// portable, no C toolchain. Each picks its CPU backend (AES-NI,
    /// VAES, CLMUL, AVX2, NEON, or portable code) at run time.
    RustCrypto,
    /// AWS-LC's AES-GCM and ChaCha20-Poly1305 (assembly with its own CPU
    /// dispatch: stitched AES-NI/VAES and CLMUL/VPCLMULQDQ on x86-64),
    /// through `aws-lc-rs`. Needs the `aws-lc` feature (and a C compiler
    /// to build AWS-LC).
    #[cfg(feature = "aws-lc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "aws-lc")))]
    AwsLc,
}

impl Provider {
    /// Every provider compiled into this build, the default
    /// ([`RustCrypto`](Self::RustCrypto)) first.
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
    /// [`RustCrypto`](Self::RustCrypto), whatever features are on.
    fn default() -> Self {
        Provider::RustCrypto
    }
}

/// The providers write the same bytes: streams with the salt and nonce
/// prefix injected (`probe::FIXED_RANDOM`) compared byte for byte, each
/// read back by every provider, with the segments counted to show that the
/// chosen provider did the sealing and opening.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Read, Write};

    use super::Provider;
    use crate::probe::FIXED_RANDOM;
    use crate::probe::USED;
    use crate::tink::{AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash};
    use crate::{Algorithm, CipherReader, CipherWriter, Key, StreamKey};

    /// Segments sealed or opened by each provider since the last call.
    fn used() -> Vec<u64> {
        USED.with(|u| std::mem::replace(&mut *u.borrow_mut(), vec![0; Provider::ALL.len()]))
    }

    fn only(p: Provider, n: u64) -> Vec<u64> {
        Provider::ALL
            .iter()
            .map(|&q| if q == p { n } else { 0 })
            .collect()
    }

    fn seal<K: StreamKey>(key: &K, p: Provider, cap: Option<usize>, pt: &[u8]) -> Vec<u8> {
        FIXED_RANDOM.with(|f| *f.borrow_mut() = Some((0..64u8).map(|i| i ^ 0xa5).collect()));
        let mut b = CipherWriter::builder(key)
            .associated_data(b"cross-provider")
            .provider(p);
        if let Some(c) = cap {
            b = b.capacity(c);
        }
        let mut w = b.build(Vec::new());
        assert_eq!(w.provider(), p);
        // Uneven pieces, so both the buffered and the zero-copy paths seal.
        let mut rest = pt;
        let mut step = 1;
        while !rest.is_empty() {
            let n = step.min(rest.len());
            w.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
            step = step * 3 + 1;
        }
        let out = w.finish().unwrap();
        FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
        out
    }

    fn open<K: StreamKey>(key: &K, p: Provider, sealed: &[u8]) -> Vec<u8> {
        let mut r = CipherReader::builder(key)
            .associated_data(b"cross-provider")
            .provider(p)
            .build(sealed);
        assert_eq!(r.provider(), p);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        out
    }

    /// Seals `pt` with every provider: identical bytes; each opens all.
    fn check<K: StreamKey>(
        key: &K,
        cap: Option<usize>,
        pt: &[u8],
        segments: u64,
        ctx: &str,
    ) -> Vec<u8> {
        used();
        let sealed: Vec<Vec<u8>> = Provider::ALL
            .iter()
            .map(|&p| {
                let s = seal(key, p, cap, pt);
                assert_eq!(used(), only(p, segments), "{ctx}: {p:?} sealed");
                s
            })
            .collect();
        for (s, &p) in sealed.iter().zip(Provider::ALL) {
            assert!(s == &sealed[0], "{ctx}: {p:?} wrote other bytes");
            for &q in Provider::ALL {
                assert!(open(key, q, s) == pt, "{ctx}: {p:?} -> {q:?}");
                assert_eq!(used(), only(q, segments), "{ctx}: {q:?} opened");
            }
        }
        sealed.into_iter().next().unwrap()
    }

    fn plaintext(len: usize) -> Vec<u8> {
        (0..len).map(|i| i.to_le_bytes()[0] ^ 0x3c).collect()
    }

    #[test]
    fn native_streams_are_identical_across_providers() {
        for &alg in Algorithm::ALL {
            let key = Key::new(alg, &vec![0x42; alg.key_len()]).unwrap();
            for cap in [1usize, 17, 4096, 8192, 65_536] {
                for len in [0, 1, cap - 1, cap, cap + 1, 3 * cap + 5, 200_000] {
                    let segments = len.div_ceil(cap).max(1) as u64;
                    let ctx = format!("{alg:?} cap {cap} len {len}");
                    check(&key, Some(cap), &plaintext(len), segments, &ctx);
                }
            }
        }
    }

    #[test]
    fn tink_streams_are_identical_across_providers() {
        let sets = [
            (16, 4096, HkdfHash::Sha256),
            (32, 4096, HkdfHash::Sha1),
            (32, 4113, HkdfHash::Sha512),
            (16, 16 + 24 + 1, HkdfHash::Sha256),
            (32, 1 << 20, HkdfHash::Sha256),
        ];
        for (dks, seg, hash) in sets {
            let params = AesGcmHkdfParams::new(dks, seg, hash).unwrap();
            let key = AesGcmHkdfKey::new(params, &[0x17; 32]).unwrap();
            let (first, rest) = (params.first_segment_plaintext(), params.segment_plaintext());
            for len in [
                0,
                1,
                first - 1,
                first,
                first + 1,
                first + rest,
                first + 2 * rest + 7,
            ] {
                // Tink: the first segment is shorter; a stream that fills
                // its last segment exactly ends with it (no empty one).
                let segments = if len <= first {
                    1
                } else {
                    1 + (len - first).div_ceil(rest) as u64
                };
                let ctx = format!("Tink {dks}/{seg}/{hash:?} len {len}");
                check(&key, None, &plaintext(len), segments, &ctx);
            }
        }
    }

    #[test]
    fn the_default_is_rustcrypto_whatever_the_features() {
        assert_eq!(Provider::default(), Provider::RustCrypto);
        assert_eq!(Provider::ALL.first(), Some(&Provider::default()));
        assert_eq!(
            Provider::ALL.len(),
            if cfg!(feature = "aws-lc") { 2 } else { 1 }
        );
        let key = Key::new(Algorithm::Aes128Gcm, &[1; 16]).unwrap();
        used();
        let w = CipherWriter::new(&key, Vec::new());
        assert_eq!(w.provider(), Provider::RustCrypto);
        let sealed = w.finish().unwrap();
        assert_eq!(used(), only(Provider::RustCrypto, 1));
        let r = CipherReader::new(&key, &sealed[..]);
        assert_eq!(r.provider(), Provider::RustCrypto);
        assert!(r.bytes().next().is_none());
        assert_eq!(used(), only(Provider::RustCrypto, 1));
    }
}
