//! The oracles checked against known answers from outside cipherio: the
//! crate documentation's vector (made with Python's `cryptography`) and
//! real Tink's output. Kept apart from the oracles themselves, which the
//! main crate's tests include by `#[path]`.

mod native {
    use cipherio::Algorithm;

    use crate::oracle::{decrypt, encrypt};

    /// The crate documentation's vector (made with Python's
    /// `cryptography`): the oracle builds and reads exactly that stream.
    #[test]
    fn oracle_matches_the_documented_vector() {
        let key: Vec<u8> = (0..32).collect();
        let salt: Vec<u8> = (0x20..0x40).collect();
        let prefix: Vec<u8> = (0xa0..0xa7).collect();
        let hex = concat!(
            "636970686572696f",
            "01",
            "03",
            "00000008",
            "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
            "a0a1a2a3a4a5a6",
            "001d9a045476429c",
            "d3cb7b74e47af30d666421170a797c9d",
            "7db8bd85e7daf3d3",
            "31792b623d4bdc0db3dc6411272c5aca",
            "d559f169",
            "b6fadec8aac718414484fca4a4520ad6",
        );
        let want: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let pt = b"The quick brown fox!";
        let alg = Algorithm::ChaCha20Poly1305;
        let ct = encrypt(alg, &key, b"cipherio kat", 8, &salt, &prefix, pt);
        assert!(ct == want);
        let d = decrypt(&key, b"cipherio kat", &ct);
        assert!(d.valid && d.released == pt && d.segment_size == Some(8));
    }
}

mod tink {
    use crate::oracle_tink::{Params, decrypt, encrypt};

    pub(super) fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// The associated data of the vectors with one.
    pub(super) const SHORT_AAD: &str = "74696e6b2d696e7465726f70206173736f6369617465642064617461";

    /// Vectors from real Tink (tests/data/tink_vectors.json in the main
    /// crate: salt a0 a1 .., nonce prefix 01 .. 07, plaintext[i] = i % 251),
    /// so the oracle is checked against Tink, not against cipherio.
    #[test]
    fn oracle_matches_tink() {
        let short_aad = unhex(SHORT_AAD);
        let vectors: [(Params, &str, &[u8], usize, &str); 3] = [
            (
                Params {
                    key_size: 16,
                    segment: 41,
                    hash: 256,
                },
                "c188f4c8e417a55b80f18f048f722558",
                &short_aad,
                56,
                "18a0a1a2a3a4a5a6a7a8a9aaabacadaeaf01020304050607cd3c822a01ddcb736f9c4a29da34ef5d\
                 6f6bd3797c940932d88eeb5b1a0ce5baff7f21117684d856b29ece2a50fc8756b8dfc915d1239a44\
                 06534f1ee059a0ceba3a0df20493b69a920292426b436fb288db1462b967a4299e1c7d6f3f556c6a\
                 2e5a90a81a285c317ab14d6e94ac61daaab78166a89012ae",
            ),
            (
                Params {
                    key_size: 32,
                    segment: 4096,
                    hash: 1,
                },
                "be1c109d1d1eb8ff3b32fbf808526b8586f4381166186f99b62a47cf95f489c2",
                &short_aad,
                1,
                "28a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf0102030405060777\
                 b943173027e9c7c21ab1c84d37a0ecef",
            ),
            (
                Params {
                    key_size: 16,
                    segment: 4113,
                    hash: 512,
                },
                "a58aaa733bdb0a58ed8ff3d54f5c64d1",
                b"",
                1,
                "18a0a1a2a3a4a5a6a7a8a9aaabacadaeaf01020304050607fda5a9fd2f16237d927d0accb119677d97",
            ),
        ];
        for (p, key, aad, n, ct) in vectors {
            let (key, ct) = (unhex(key), unhex(ct));
            let pt: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let salt: Vec<u8> = (0xa0..0xa0 + p.key_size as u8).collect();
            let ours = encrypt(&p, &key, aad, &salt, &[1, 2, 3, 4, 5, 6, 7], &pt);
            assert!(ours == ct, "{p:?}");
            let d = decrypt(&p, &key, aad, &ct);
            assert!(d.valid && d.released == pt, "{p:?}");
        }
    }
}

mod tink_ctr {
    use super::tink::{SHORT_AAD, unhex};
    use crate::oracle_tink_ctr::{Params, decrypt, encrypt};

    /// Vectors from real Tink (tests/data/tink_vectors.json in the main
    /// crate, `det/…`: salt a0 a1 .., nonce prefix 01 .. 07, plaintext[i]
    /// = i % 251), so the oracle is checked against Tink, not cipherio:
    /// several segments with a 16-byte tag, SHA-1 with a 20-byte tag and
    /// a 32-byte key, SHA-512 with a 64-byte tag.
    #[test]
    fn oracle_matches_tink() {
        let short_aad = unhex(SHORT_AAD);
        let p = |key_size, segment, hash, tag| Params {
            key_size,
            segment,
            hkdf: hash,
            hmac: hash,
            tag,
        };
        let vectors: [(Params, &str, &[u8], usize, &str); 3] = [
            (
                p(16, 41, 256, 16),
                "cc809ab783c4f6c1c59e1abbc3ce3a89",
                &short_aad,
                56,
                "18a0a1a2a3a4a5a6a7a8a9aaabacadaeaf01020304050607b0883215f3207607277ffb888d7ad117\
                 59320251ffbd645febcbd185074341ecba502add1f751a0f61b2e0fb4bad4031ad11958c2679dc05\
                 54e90003a3a11c61481d50ebe347b58719d6dcc1494b719701f5a4e5e176682638b459fe9fc4fb05\
                 3ff333d301466da1e3c907196cf5973829ad0afbca001c4c",
            ),
            (
                p(32, 4096, 1, 20),
                "7481aef2181cd99caf0b4211da18ce80f778197958410e979b74ffdbed49563c",
                &short_aad,
                1,
                "28a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf01020304050607\
                 90b002c9aba8ffad0643f8551682c1951cb57e5da1",
            ),
            (
                p(16, 4113, 512, 64),
                "beb049df8b48564fa04f2d82af4a3464",
                b"",
                1,
                "18a0a1a2a3a4a5a6a7a8a9aaabacadaeaf01020304050607ee68e04b18f8533356afcff88af18a02\
                 73b67ffaff8acc1566b2b0a45fafd5c4e65c064cd78ba356f0ac8c5fa9e123552f2b6df5abd2bc4c\
                 796aef7bbbad986090",
            ),
        ];
        for (p, key, aad, n, ct) in vectors {
            let (key, ct) = (unhex(key), unhex(ct));
            let pt: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let salt: Vec<u8> = (0xa0..0xa0 + p.key_size as u8).collect();
            let ours = encrypt(&p, &key, aad, &salt, &[1, 2, 3, 4, 5, 6, 7], &pt);
            assert!(ours == ct, "{p:?}");
            let d = decrypt(&p, &key, aad, &ct);
            assert!(d.valid && d.released == pt, "{p:?}");
            // A flipped tag bit: nothing of that segment is released.
            let mut bad = ct.clone();
            *bad.last_mut().expect("not empty") ^= 1;
            let d = decrypt(&p, &key, aad, &bad);
            assert!(!d.valid && pt.starts_with(&d.released) && d.released.len() < n);
        }
    }
}
