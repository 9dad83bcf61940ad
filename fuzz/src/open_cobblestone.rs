//! The `open_cobblestone` target: any bytes through `CipherReader` with a
//! Cobblestone key, against the `cobblestone` crate's streaming reader on
//! the same bytes: the same verdict and the same plaintext released.
//!
//! ```text
//! offset len
//!      0   1  bit 0: Cobblestone-256 (else -128); bit 1: the reader's
//!             provider (`Provider::ALL[bit % len]`); bit 2: threads(2)
//!             from the first byte; bit 3: build_from_buf_read over a
//!             BufReader of the read size; bit 4: the context "fuzz"
//!             (else empty); bit 5: the wrong key
//!      1   2  read size - 1, u16 LE (the caller's buffer)
//!      3   -  the stream
//! ```

use std::io::{BufReader, Read};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::{CipherReader, Provider};

/// Bytes of configuration before the stream.
pub const CONFIG_LEN: usize = 3;

/// The key the seeds are sealed with (`wrong`: another one).
pub fn fixed_key(inst: Instantiation, wrong: bool) -> CobblestoneKey {
    let bytes: Vec<u8> = (0..inst.key_len())
        .map(|i| u8::try_from(i).expect("a key length") ^ if wrong { 0xA5 } else { 0x3C })
        .collect();
    CobblestoneKey::new(inst, &bytes).expect("the instantiation's key length")
}

/// The instantiation configuration byte 0 picks.
pub fn instantiation(flags: u8) -> Instantiation {
    if flags & 1 == 0 {
        Instantiation::Cobblestone128
    } else {
        Instantiation::Cobblestone256
    }
}

/// The context configuration byte 0 picks.
pub fn context(flags: u8) -> &'static [u8] {
    if flags & 0x10 == 0 { b"" } else { b"fuzz" }
}

/// The plaintext `r` releases in `size`-byte reads until its end or first
/// error, and whether it ended cleanly.
fn drain(mut r: impl Read, size: usize) -> (Vec<u8>, bool) {
    let (mut out, mut buf) = (Vec::new(), vec![0u8; size]);
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (out, false),
        }
    }
}

/// The other implementation's release and verdict.
fn theirs(key: &CobblestoneKey, ctx: &[u8], stream: &[u8]) -> (Vec<u8>, bool) {
    let bytes = key.as_bytes();
    match key.instantiation() {
        Instantiation::Cobblestone128 => {
            let k = cobblestone::Key::try_from(bytes).expect("16 bytes");
            drain(cobblestone::DecryptReader::new(&k, ctx, stream), 4096)
        }
        _ => {
            let k = cobblestone::Key256::try_from(bytes).expect("32 bytes");
            drain(cobblestone::DecryptReader::new(&k, ctx, stream), 4096)
        }
    }
}

/// Runs the input through both readers.
///
/// # Panics
///
/// When the verdicts differ, when the plaintext released differs, or when
/// cipherio released anything but whole chunks before an error.
pub fn check(data: &[u8]) {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let flags = b(0);
    let size = usize::from(u16::from_le_bytes([b(1), b(2)])) + 1;
    let stream = data.get(CONFIG_LEN..).unwrap_or(&[]);
    let inst = instantiation(flags);
    let (ctx, wrong) = (context(flags), flags & 0x20 != 0);
    let key = fixed_key(inst, wrong);
    let provider = Provider::ALL[usize::from(flags >> 1 & 1) % Provider::ALL.len()];
    let mut builder = CipherReader::builder(&key)
        .associated_data(ctx)
        .provider(provider);
    if flags & 4 != 0 {
        builder = builder.threads(2).threads_after(0);
    }
    let (ours, ok) = if flags & 8 != 0 {
        drain(
            builder.build_from_buf_read(BufReader::with_capacity(size, stream)),
            size,
        )
    } else {
        drain(builder.build(stream), size)
    };
    let (want, their_ok) = theirs(&key, ctx, stream);
    assert_eq!(
        ok,
        their_ok,
        "verdicts differ ({inst}, {} bytes)",
        stream.len()
    );
    assert!(
        ours == want,
        "released {} bytes, the other implementation {}",
        ours.len(),
        want.len()
    );
    assert!(
        ok || ours.len() % CHUNK_SIZE == 0,
        "a short chunk before an error"
    );
}
