#![no_main]
//! The framed variant: write with flushes, compare with the oracle, read
//! back, damage once, read again: see `cipherio_fuzz::roundtrip_framed::check`.

libfuzzer_sys::fuzz_target!(|input: cipherio_fuzz::roundtrip_framed::Input| {
    cipherio_fuzz::roundtrip_framed::check(&input)
});
