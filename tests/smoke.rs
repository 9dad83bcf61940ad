use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
use std::io::{Read, Write};

#[test]
fn smoke() {
    for alg in Algorithm::ALL {
        let key = Key::generate(alg);
        for len in [0usize, 1, 99, 100, 101, 1000, 12345] {
            for wcap in [1usize, 7, 100, 8192] {
                let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let mut w = CipherWriter::with_capacity(wcap, &key, Vec::new());
                for c in data.chunks(13) {
                    w.write_all(c).unwrap();
                }
                let ct = w.finish().unwrap();
                for rcap in [1usize, 5, 64, 100000] {
                    let mut r = CipherReader::with_capacity(rcap, &key, &ct[..]);
                    let mut out = Vec::new();
                    r.read_to_end(&mut out).unwrap();
                    assert_eq!(out, data, "{alg} len {len} wcap {wcap} rcap {rcap}");
                }
            }
        }
    }
}
