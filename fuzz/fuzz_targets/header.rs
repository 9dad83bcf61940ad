#![no_main]
//! `Header::parse` on any bytes: see `cipherio_fuzz::header::check`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| cipherio_fuzz::header::check(data));
