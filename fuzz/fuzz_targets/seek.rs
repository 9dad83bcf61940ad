#![no_main]
//! Seeks, reads and length queries against the plaintext, on an intact or
//! once-damaged stream: see `cipherio_fuzz::seek::check`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| cipherio_fuzz::seek::check(data));
