//! Which implementation of each primitive runs: decided by the build's
//! `--cfg` flags and the CPU, exactly as the RustCrypto crates this crate
//! resolves (aes 0.9, polyval 0.7, chacha20 0.10, poly1305 0.9) decide it.
//!
//! This is the [`Provider::RustCrypto`](crate::Provider::RustCrypto)
//! provider's view; with [`Provider::AwsLc`](crate::Provider) (feature
//! `aws-lc`) AWS-LC picks its own assembly at run time and reports nothing.
//!
//! For reports and diagnostics: nothing in the crate depends on it.
//!
//! ```
//! let b = cipherio::backend::detect();
//! println!("AES: {}, GHASH: {}, ChaCha20: {}, Poly1305: {}", b.aes, b.ghash, b.chacha20, b.poly1305);
//! ```

/// The implementation each primitive uses in this build on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backends {
    /// AES block cipher (the CTR half of AES-GCM).
    pub aes: &'static str,
    /// GHASH/POLYVAL universal hash (the MAC half of AES-GCM).
    pub ghash: &'static str,
    /// ChaCha20 stream cipher.
    pub chacha20: &'static str,
    /// Poly1305 universal hash.
    pub poly1305: &'static str,
}

/// The implementations in use, from the build flags and CPU detection.
pub fn detect() -> Backends {
    Backends {
        aes: aes(),
        ghash: ghash(),
        chacha20: chacha20(),
        poly1305: poly1305(),
    }
}

/// The CPU features that select the backends, with whether this CPU (and
/// OS) has them.
pub fn cpu_features() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        vec![
            ("aes", has!("aes")),
            ("pclmulqdq", has!("pclmulqdq")),
            ("avx", has!("avx")),
            ("avx2", has!("avx2")),
            ("vaes", has!("vaes")),
            ("vpclmulqdq", has!("vpclmulqdq")),
            ("avx512f", has!("avx512f")),
            ("avx512vl", has!("avx512vl")),
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        vec![("aes", has!("aes")), ("pmull", has!("pmull"))]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

fn has(name: &str) -> bool {
    cpu_features().iter().any(|&(n, on)| n == name && on)
}

fn aes() -> &'static str {
    if cfg!(aes_backend = "soft") {
        return "software (fixslice, --cfg aes_backend=\"soft\")";
    }
    if cfg!(target_arch = "x86_64") {
        if has("avx512f") && has("vaes") {
            "VAES-512"
        } else if has("vaes") {
            "VAES-256"
        } else if has("aes") {
            "AES-NI"
        } else {
            "software (fixslice; CPU has no AES-NI)"
        }
    } else if cfg!(target_arch = "aarch64") && has("aes") {
        "ARMv8 AES"
    } else {
        "software (fixslice)"
    }
}

fn ghash() -> &'static str {
    if cfg!(polyval_backend = "soft") {
        return "software (--cfg polyval_backend=\"soft\")";
    }
    if cfg!(target_arch = "x86_64") && has("avx") && has("pclmulqdq") {
        "CLMUL (PCLMULQDQ)"
    } else if cfg!(target_arch = "aarch64") && has("aes") {
        "PMULL"
    } else {
        "software"
    }
}

fn chacha20() -> &'static str {
    if cfg!(chacha20_backend = "soft") {
        return "software (--cfg chacha20_backend=\"soft\")";
    }
    if cfg!(target_arch = "x86_64") {
        if cfg!(chacha20_avx512) && has("avx512f") && has("avx512vl") {
            "AVX-512 (--cfg chacha20_avx512)"
        } else if has("avx2") {
            "AVX2"
        } else {
            "SSE2"
        }
    } else if cfg!(target_arch = "aarch64") {
        "NEON"
    } else {
        "software"
    }
}

fn poly1305() -> &'static str {
    if cfg!(poly1305_backend = "soft") {
        return "software (--cfg poly1305_backend=\"soft\")";
    }
    if cfg!(target_arch = "x86_64") && has("avx2") {
        "AVX2"
    } else {
        "software"
    }
}
