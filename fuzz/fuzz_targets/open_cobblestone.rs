#![no_main]
//! Any bytes through `CipherReader` with a Cobblestone key, against the
//! `cobblestone` crate: see `cipherio_fuzz::open_cobblestone::check`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| cipherio_fuzz::open_cobblestone::check(data));
