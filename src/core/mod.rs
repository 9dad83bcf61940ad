//! The engine: everything a stream does, without I/O.
//!
//! | module | owns |
//! |---|---|
//! | [`window`] | the one buffer type, `pos ≤ end ≤ len`, wiped on drop when secret |
//! | [`kdf`] | HKDF key derivation and its hash choice |
//! | [`ctr_hmac`] | Tink's AES-CTR-HMAC segment cipher (AES-CTR, then a truncated HMAC) |
//! | [`suite`] | the per-segment AEAD of each provider: `seal_at` / `open_at(index, last, aad)` |
//! | [`layout`] | segment sizes; the units as a type: fixed segments (with the offset arithmetic) or framed records |
//! | [`unit`] | how one unit is opened: a segment (the final flag, a cut at a segment boundary, the empty final segment) or a record (its header as the AAD) |
//! | [`sealer`] | the writer's state machine: plaintext in, sealed bytes out; its parts (held plaintext, the open stream's counter and header) in `sealer_*.rs` |
//! | [`plain`] | the reader's plaintext buffer, and which segment it holds |
//! | [`step`] | what a reader's engine asks of its front next (`Step`) |
//! | [`ahead`] | the reader's ciphertext read-ahead: its size (one segment until a segment authenticates, then a batch), aligned reads, the inner reader's end |
//! | [`opener`] | the reader's state machine: ciphertext in, authenticated plaintext out; it moves between the parts it owns |
//! | [`seek`] | the reader's position and its sub-machine of random access: seeking, the authenticated length query |
//!
//! The threads of `threads(n)` are not here: the sealer and the opener
//! post their units to a ring of [`crate::threads`], which owns the pool
//! and the waiting, with the work to do on each.
//!
//! Every front (std, tokio) is glue over [`sealer::Sealer`] and
//! [`opener::Opener`]: a rule fixed here is fixed everywhere.

pub(crate) mod ahead;
pub(crate) mod ctr_hmac;
pub(crate) mod kdf;
pub(crate) mod layout;
pub(crate) mod opener;
pub(crate) mod plain;
pub(crate) mod sealer;
pub(crate) mod seek;
pub(crate) mod step;
pub(crate) mod suite;
pub(crate) mod unit;
pub(crate) mod window;
