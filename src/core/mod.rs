//! The engine: everything a stream does, without I/O.
//!
//! | module | owns |
//! |---|---|
//! | [`window`] | the one buffer type, `pos ≤ end ≤ len`, wiped on drop when secret |
//! | [`kdf`] | HKDF key derivation and its hash choice |
//! | [`ctr_hmac`] | Tink's AES-CTR-HMAC segment cipher (AES-CTR, then a truncated HMAC) |
//! | [`suite`] | the per-segment AEAD of each provider: `seal_at` / `open_at(index, last, aad)` |
//! | [`layout`] | segment sizes and offset arithmetic |
//! | [`unit`] | how one segment is opened: the final flag, a cut at a segment boundary, the empty final segment |
//! | [`pipe`] | planning a pipelined write: its shares, slots and tail job, from plain numbers |
//! | [`sealer`] | the writer's state machine: plaintext in, sealed bytes out |
//! | [`plain`] | the reader's plaintext buffer, and which segment it holds |
//! | [`opener`] | the reader's state machine: ciphertext in, authenticated plaintext out |
//! | [`seek`] | random access on the opener: seeking, the authenticated length |
//!
//! The threads of `threads(n)` are not here: the sealer and the opener
//! hand runs of segments to [`crate::threads`], which owns the pool.
//!
//! Every front (std, tokio) is glue over [`sealer::Sealer`] and
//! [`opener::Opener`]: a rule fixed here is fixed everywhere.

pub(crate) mod ctr_hmac;
pub(crate) mod kdf;
pub(crate) mod layout;
pub(crate) mod opener;
pub(crate) mod pipe;
pub(crate) mod plain;
pub(crate) mod sealer;
pub(crate) mod seek;
pub(crate) mod suite;
pub(crate) mod unit;
pub(crate) mod window;
