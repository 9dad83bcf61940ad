//! One oracle per format, each written from its format description alone
//! and shared with the fuzz crate (which builds the same files): the
//! native fixed-size format, its framed variant, and Tink's AES-GCM-HKDF
//! and AES-CTR-HMAC streaming formats. Their known-answer checks live in
//! the fuzz crate (`fuzz/src/oracle_kats.rs`).

#[path = "../../fuzz/src/oracle.rs"]
pub mod oracle;

#[path = "../../fuzz/src/oracle_framed.rs"]
pub mod oracle_framed;

#[path = "../../fuzz/src/oracle_tink.rs"]
pub mod oracle_tink;

#[path = "../../fuzz/src/oracle_tink_ctr.rs"]
pub mod oracle_tink_ctr;
