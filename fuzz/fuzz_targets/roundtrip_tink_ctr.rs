#![no_main]
//! Write with a Tink AES-CTR-HMAC key, compare with its oracle, read back,
//! damage once, read again: see `cipherio_fuzz::roundtrip::check_tink_ctr`.

libfuzzer_sys::fuzz_target!(|input: cipherio_fuzz::roundtrip::TinkCtrInput| {
    cipherio_fuzz::roundtrip::check_tink_ctr(&input)
});
