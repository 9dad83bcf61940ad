#![no_main]
//! Any bytes through `CipherReader` with a Tink AES-CTR-HMAC key: see
//! `cipherio_fuzz::open::check_tink_ctr`.

#[global_allocator]
static ALLOC: cipherio_fuzz::alloc::Counting = cipherio_fuzz::alloc::Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| cipherio_fuzz::open::check_tink_ctr(data));
