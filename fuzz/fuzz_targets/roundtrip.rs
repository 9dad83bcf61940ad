#![no_main]
//! Write, compare with the spec, read back, damage once, read again: see
//! `cipherio_fuzz::roundtrip::check`.

libfuzzer_sys::fuzz_target!(|input: cipherio_fuzz::roundtrip::Input| {
    cipherio_fuzz::roundtrip::check(&input)
});
