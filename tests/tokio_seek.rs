//! The tokio reader seeks through the same engine steps as the std reader:
//! the same positions, bytes and errors for the same seeks and reads.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use cipherio::cobblestone::{CHUNK_SIZE, CobblestoneKey, Instantiation};
use cipherio::tink::{AesGcmHkdfKey, AesGcmHkdfParams};
use cipherio::{Algorithm, CipherReader, CipherWriter, Error, Key, Provider, StreamKey};
use common::data;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, ReadBuf};

fn sealed<K: StreamKey>(key: &K, cap: Option<usize>, pt: &[u8]) -> Vec<u8> {
    let mut b = CipherWriter::builder(key);
    if let Some(c) = cap {
        b = b.capacity(c);
    }
    let mut w = b.build(Vec::new());
    w.write_all(pt).unwrap();
    w.finish().unwrap()
}

/// A walk of seeks and reads, run on both fronts side by side: every
/// position, every byte and every outcome agree with each other and with
/// the plaintext.
async fn walk<K: StreamKey>(key: &K, cap: Option<usize>, len: usize, p: Provider) {
    let pt = data(len, len as u64 + 1);
    let ct = sealed(key, cap, &pt);
    let mut s = CipherReader::builder(key)
        .provider(p)
        .capacity(300)
        .build(Cursor::new(ct.clone()));
    let mut a = CipherReader::builder(key)
        .provider(p)
        .capacity(300)
        .build_async(Cursor::new(ct));
    let n = len as i64;
    let seeks = [
        SeekFrom::Start(0),
        SeekFrom::End(0),
        SeekFrom::End(-(n.min(5))),
        SeekFrom::Start((len / 2) as u64),
        SeekFrom::Current(-(n / 4)),
        SeekFrom::Current(n / 3),
        SeekFrom::Start(len as u64 + 1000),
        SeekFrom::Start(1),
        SeekFrom::End(-n),
    ];
    for (k, pos) in seeks.into_iter().enumerate() {
        let ctx = format!("len {len} cap {cap:?} {p:?} step {k} {pos:?}");
        let (ps, pa) = (s.seek(pos), a.seek(pos).await);
        match (ps, pa) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x, y, "{ctx}");
                let at = usize::try_from(x).unwrap();
                let size = [1usize, 99, 1000][k % 3];
                let (mut bs, mut ba) = (vec![0u8; size], vec![0u8; size]);
                let gs = s.read(&mut bs).unwrap();
                let ga = a.read(&mut ba).await.unwrap();
                let at = at.min(len);
                assert_eq!(&bs[..gs], &ba[..ga], "{ctx}");
                assert_eq!(&ba[..ga], &pt[at..at + ga], "{ctx}");
                assert!(ga > 0 || at == len, "{ctx}: Ok(0) before the end");
                assert_eq!(
                    s.stream_position().unwrap(),
                    a.stream_position().await.unwrap(),
                    "{ctx}"
                );
            }
            (Err(x), Err(y)) => assert_eq!(x.kind(), y.kind(), "{ctx}"),
            (x, y) => panic!("{ctx}: std {x:?}, tokio {y:?}"),
        }
    }
    assert_eq!(a.plaintext_len().await.unwrap(), len as u64);
}

#[tokio::test]
async fn seeks_and_reads_agree_with_the_std_reader() {
    for &p in Provider::ALL {
        for &alg in Algorithm::ALL {
            let key = Key::generate(alg);
            for (cap, len) in [
                (17, 0),
                (17, 1),
                (17, 170),
                (17, 171),
                (4096, 10_000),
                (64, 64 * 9),
            ] {
                walk(&key, Some(cap), len, p).await;
            }
        }
        let tink = AesGcmHkdfKey::generate(
            AesGcmHkdfParams::new(16, 100, cipherio::tink::HkdfHash::Sha256).unwrap(),
        );
        for len in [0, 1, 60, 61, 144, 145, 1000] {
            walk(&tink, None, len, p).await;
        }
        let tink = AesGcmHkdfKey::generate(AesGcmHkdfParams::AES256_GCM_HKDF_4KB);
        walk(&tink, None, 20_000, p).await;
        for &inst in Instantiation::ALL {
            let key = CobblestoneKey::generate(inst);
            for len in [
                0,
                1,
                CHUNK_SIZE - 1,
                CHUNK_SIZE,
                CHUNK_SIZE + 1,
                3 * CHUNK_SIZE + 9,
            ] {
                walk(&key, None, len, p).await;
            }
        }
    }
}

/// A Cobblestone stream cut after a full chunk (its short final chunk
/// gone) fails the length query on both fronts alike: the last chunk of
/// that length is full, so it cannot be the final one.
#[tokio::test]
async fn a_cobblestone_stream_cut_after_a_full_chunk_has_no_length() {
    for &inst in Instantiation::ALL {
        let key = CobblestoneKey::generate(inst);
        let ct = sealed(&key, None, &data(2 * CHUNK_SIZE + 5, 3));
        for chunks in 0..=2 {
            let cut = ct[..56 + chunks * (CHUNK_SIZE + 16)].to_vec();
            let mut s = CipherReader::new(&key, Cursor::new(cut.clone()));
            let mut a = CipherReader::builder(&key).build_async(Cursor::new(cut));
            let es = s.seek(SeekFrom::End(0)).unwrap_err();
            let ea = a.plaintext_len().await.unwrap_err();
            assert_eq!(Error::from_io(&es), Some(&Error::Truncated), "{chunks}");
            assert_eq!(Error::from_io(&ea), Some(&Error::Truncated), "{chunks}");
        }
    }
}

/// A cut or damaged final segment fails the async length query and
/// `SeekFrom::End` with the same typed error as the std reader's, sticky.
#[tokio::test]
async fn a_cut_stream_fails_the_async_length_query() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(1000, 7);
    let ct = sealed(&key, Some(100), &pt);
    for cut in [53 + 116, 53 + 5 * 116, ct.len() - 1] {
        let short = ct[..cut].to_vec();
        let mut s = CipherReader::new(&key, Cursor::new(short.clone()));
        let mut a = CipherReader::builder(&key).build_async(Cursor::new(short));
        let es = s.seek(SeekFrom::End(0)).unwrap_err();
        let ea = a.seek(SeekFrom::End(0)).await.unwrap_err();
        assert_eq!(Error::from_io(&es), Error::from_io(&ea), "cut {cut}");
        assert!(Error::from_io(&ea).is_some(), "cut {cut}: {ea}");
        assert!(a.read(&mut [0u8; 8]).await.is_err(), "cut {cut}: sticky");
    }
    // And a std reader of the whole stream agrees with the plaintext.
    let mut out = Vec::new();
    CipherReader::new(&key, &ct[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, pt);
}

/// A `Cursor` whose inner seeks fail (`poll_complete` returns an error)
/// while `fail` is set.
struct SeekFails {
    inner: Cursor<Vec<u8>>,
    fail: bool,
}

impl AsyncRead for SeekFails {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncSeek for SeekFails {
    fn start_seek(mut self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        Pin::new(&mut self.inner).start_seek(position)
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        if self.fail {
            return Poll::Ready(Err(io::Error::other("the inner seek failed")));
        }
        Pin::new(&mut self.inner).poll_complete(cx)
    }
}

/// A seek that failed (an inner error, passed through) has not happened:
/// the reads after it go on from where they were, and tokio's next seek,
/// which first completes any seek still in flight, does not carry the
/// failed one out (it moved a `stream_position` query, and a relative
/// seek, to the failed seek's target).
#[tokio::test]
async fn a_seek_that_failed_is_not_carried_out_by_the_next_one() {
    let key = Key::generate(Algorithm::Aes128Gcm);
    let pt = data(1000, 9);
    let ct = sealed(&key, Some(100), &pt);
    for (failed, then) in [
        (SeekFrom::Start(500), SeekFrom::Current(0)),
        (SeekFrom::Start(500), SeekFrom::Current(5)),
        (SeekFrom::End(-100), SeekFrom::Current(0)),
    ] {
        let ctx = format!("{failed:?} failed, then {then:?}");
        let inner = SeekFails {
            inner: Cursor::new(ct.clone()),
            fail: true,
        };
        let mut r = CipherReader::builder(&key).build_async(inner);
        assert!(r.seek(failed).await.is_err(), "{ctx}");
        r.get_mut().fail = false;
        let mut b = [0u8; 10];
        r.read_exact(&mut b).await.unwrap();
        assert_eq!(b[..], pt[..10], "{ctx}: read after the failed seek");
        let SeekFrom::Current(d) = then else {
            unreachable!()
        };
        let at = 10 + u64::try_from(d).unwrap();
        assert_eq!(r.seek(then).await.unwrap(), at, "{ctx}");
        r.read_exact(&mut b).await.unwrap();
        let at = usize::try_from(at).unwrap();
        assert_eq!(b[..], pt[at..at + 10], "{ctx}: read after the next seek");
    }
}
