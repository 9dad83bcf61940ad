//! What [`Open`] keeps: the header goes out once, ahead of the first
//! sealed bytes; every index is sealed once, whichever path seals it.

use super::Open;
use crate::core::window::Window;
use crate::key::sealed::Sealed;
use crate::probe::FIXED_RANDOM;
use crate::profile::{self, Stream};
use crate::{Algorithm, Key, Provider};

/// An open stream of `capacity`-byte segments, with a fixed salt and
/// nonce prefix (every call opens the same stream), and its header.
fn open(capacity: usize) -> (Open, Vec<u8>) {
    let key = Key::new(Algorithm::Aes128Gcm, &[7; 16]).unwrap();
    FIXED_RANDOM.with(|f| *f.borrow_mut() = Some(vec![0x5a; 64]));
    let begun = profile::begin_write(&key.profile(), b"", capacity, Provider::default(), false);
    FIXED_RANDOM.with(|f| *f.borrow_mut() = None);
    let (header, Stream { suite, layout }) = begun.unwrap();
    (Open::new(suite, layout, header.clone()), header)
}

#[test]
fn the_header_goes_out_once_ahead_of_the_first_segment() {
    let (mut open, header) = open(16);
    let mut out = Window::public();
    assert_eq!(open.header(), &header[..]);
    open.seal(&mut out, &[1; 16], false).unwrap();
    assert!(
        out.data().starts_with(&header),
        "the header, then the segment"
    );
    assert_eq!(out.data().len(), header.len() + 16 + open.suite().tag_len());
    assert!(open.header().is_empty());
    assert_eq!(open.next(), 1);
    out.consume(out.available());
    open.seal(&mut out, &[2; 3], true).unwrap();
    assert_eq!(
        out.data().len(),
        3 + open.suite().tag_len(),
        "no header again"
    );
    assert_eq!(open.next(), 2);
}

#[test]
fn segments_sealed_together_are_the_segments_sealed_one_by_one() {
    let plain: Vec<u8> = (0..=255).cycle().take(16 * 5 + 7).collect();
    let (mut one, _) = open(16);
    let mut serial = Vec::new();
    let mut out = Window::public();
    let chunks: Vec<&[u8]> = plain.chunks(16).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        one.seal(&mut out, chunk, i + 1 == chunks.len()).unwrap();
        serial.extend_from_slice(out.data());
        out.consume(out.available());
    }
    let (mut run, _) = open(16);
    assert_eq!(run.seal(&mut out, &plain, true).unwrap(), 6);
    assert_eq!(out.data(), &serial[..]);
    assert_eq!((run.next(), one.next()), (6, 6));
}

#[test]
fn the_counter_moves_past_posted_segments_to_its_last_index() {
    let (mut open, _) = open(16);
    assert!(!open.at_last_index());
    open.advance(4);
    assert_eq!(open.next(), 4);
    open.set_next(u64::from(u32::MAX));
    assert!(open.at_last_index());
}
