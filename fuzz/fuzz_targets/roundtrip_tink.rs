#![no_main]
//! Write with a Tink key, compare with the Tink oracle, read back, damage
//! once, read again: see `cipherio_fuzz::roundtrip::check_tink`.

libfuzzer_sys::fuzz_target!(|input: cipherio_fuzz::roundtrip::TinkInput| {
    cipherio_fuzz::roundtrip::check_tink(&input)
});
