//! The `header` target: `Header::parse` on any bytes.

use cipherio::format::{HEADER_LEN, Header};
use cipherio::{Algorithm, Error};

/// `Header::parse` never panics, accepts exactly the headers the format
/// description allows (refusing the others with the error it names), and
/// what it accepts encodes back to the same 53 bytes. Also the other way
/// round: a header built from the input's bytes encodes and parses back to
/// itself.
///
/// # Panics
///
/// On any of those failing.
pub fn check(data: &[u8]) {
    let parsed = Header::parse(data);
    assert_eq!(parsed, expected(data), "input {data:02x?}");
    if let Ok(h) = parsed {
        assert_eq!(h.to_bytes()[..], data[..HEADER_LEN]);
    }

    // Encode, then parse: any field values with a nonzero segment size.
    if let Some(b) = data.get(..1 + 4 + 32 + 7) {
        let algorithm = Algorithm::ALL[usize::from(b[0]) % Algorithm::ALL.len()];
        let segment_size = u32::from_be_bytes([b[1], b[2], b[3], b[4]]).max(1);
        let h = Header::new(
            algorithm,
            segment_size,
            b[5..37].try_into().expect("32 bytes"),
            b[37..44].try_into().expect("7 bytes"),
        );
        let bytes = h.to_bytes();
        assert_eq!(
            bytes[..],
            crate::oracle::header(algorithm, segment_size, &b[5..37], &b[37..44])
        );
        assert_eq!(Header::parse(&bytes), Ok(h));
    }
}

/// The parse result the format description calls for, checked in byte
/// order: magic (a strict prefix of it is only truncated), then length,
/// version, algorithm, segment size.
fn expected(data: &[u8]) -> Result<Header, Error> {
    let magic = b"cipherio";
    let n = data.len().min(8);
    if data[..n] != magic[..n] {
        return Err(Error::BadMagic);
    }
    if data.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    // 1: fixed-size segments; 2: the framed variant.
    let framed = match data[8] {
        1 => false,
        2 => true,
        v => return Err(Error::UnsupportedVersion(v)),
    };
    let algorithm = match data[9] {
        1 => Algorithm::Aes128Gcm,
        2 => Algorithm::Aes256Gcm,
        3 => Algorithm::ChaCha20Poly1305,
        id => return Err(Error::UnknownAlgorithm(id)),
    };
    let segment_size = u32::from_be_bytes([data[10], data[11], data[12], data[13]]);
    if segment_size == 0 {
        return Err(Error::ZeroSegmentSize);
    }
    Ok(Header::new(
        algorithm,
        segment_size,
        data[14..46].try_into().expect("32 bytes"),
        data[46..53].try_into().expect("7 bytes"),
    )
    .with_framed(framed))
}
