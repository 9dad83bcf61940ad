#![no_main]
//! A stream on several threads against the same stream on one: see
//! `cipherio_fuzz::threads::check`.

libfuzzer_sys::fuzz_target!(|input: cipherio_fuzz::threads::Input| {
    cipherio_fuzz::threads::check(&input)
});
