//! The formats the tamper suite attacks, each described once: how a stream
//! is sealed (by the crate's writer, or by the format's oracle with the
//! header's salt and nonce prefix and chosen segments and flags), where
//! its header, segments and tags lie, and which error each attack must
//! give in that format. The attacks themselves (`tests/tamper.rs`) are
//! written once, over [`Format::all`].

use std::io::Write;
use std::ops::Range;

use cipherio::format::DEFAULT_MAX_SEGMENT_SIZE;
use cipherio::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use cipherio::{
    Algorithm, CipherReader, CipherWriter, Error, Key, Provider, ReaderBuilder, WriterBuilder,
};

use super::check::{TAMPER_CONFIGS, Tamper, Upto, Want, read_watching_everywhere, tamper_patterns};
use super::drive::{ReadMode, WriteMode, write_in};
use super::front::Front;
use super::layout::Layout;
use super::oracles::{oracle, oracle_framed, oracle_tink, oracle_tink_ctr};

/// Plaintext bytes per segment of the native streams attacked.
pub const NATIVE_SEGMENT: usize = 16;

/// Which format, with the parameters its streams are sealed with.
#[derive(Clone, Debug)]
pub enum Kind {
    /// The native fixed-size format, `NATIVE_SEGMENT`-byte segments.
    Native(Algorithm),
    /// The native framed variant: records of at most `cap` bytes, one per
    /// flush of `flushes` (an empty flush seals nothing), then the rest as
    /// the final record.
    Framed {
        alg: Algorithm,
        cap: usize,
        flushes: Vec<usize>,
    },
    /// Tink's AES-GCM-HKDF streaming format.
    TinkGcm(AesGcmHkdfParams),
    /// Tink's AES-CTR-HMAC streaming format.
    TinkCtrHmac(AesCtrHmacParams),
}

/// A key of any format.
#[derive(Clone)]
pub enum AnyKey {
    Native(Key),
    Tink(AesGcmHkdfKey),
    CtrHmac(AesCtrHmacKey),
}

impl AnyKey {
    fn reader(&self) -> ReaderBuilder {
        match self {
            AnyKey::Native(k) => CipherReader::builder(k),
            AnyKey::Tink(k) => CipherReader::builder(k),
            AnyKey::CtrHmac(k) => CipherReader::builder(k),
        }
    }

    fn writer(&self) -> WriterBuilder {
        match self {
            AnyKey::Native(k) => CipherWriter::builder(k),
            AnyKey::Tink(k) => CipherWriter::builder(k),
            AnyKey::CtrHmac(k) => CipherWriter::builder(k),
        }
    }
}

/// One format under attack, with one key.
pub struct Format {
    pub name: String,
    pub kind: Kind,
    pub key: AnyKey,
    /// The key's bytes (the oracles' input).
    pub raw: Vec<u8>,
    /// The associated data the attacked streams are sealed with.
    pub aad: Vec<u8>,
    /// Header, segment sizes and tag. The framed variant's records are
    /// found by its oracle; its layout gives the header and the read sizes
    /// only.
    pub layout: Layout,
    /// The plaintext lengths of the streams attacked.
    pub lengths: Vec<usize>,
}

/// The oracle's name of an HKDF hash.
pub fn hash_id(h: HkdfHash) -> u16 {
    match h {
        HkdfHash::Sha1 => 1,
        HkdfHash::Sha256 => 256,
        _ => 512,
    }
}

/// The oracle's name of an HMAC hash.
pub fn hmac_id(h: HmacHash) -> u16 {
    match h {
        HmacHash::Sha1 => 1,
        HmacHash::Sha256 => 256,
        _ => 512,
    }
}

/// Key bytes that differ by `seed`.
pub fn raw_key(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i % 256).unwrap().wrapping_mul(37) ^ seed)
        .collect()
}

impl Format {
    /// Every format, with the parameter sets its attacks run over.
    pub fn all() -> Vec<Format> {
        let mut v: Vec<Format> = Algorithm::ALL
            .iter()
            .copied()
            .enumerate()
            .map(|(i, alg)| Format::native(alg, u8::try_from(i).unwrap() + 0x10))
            .collect();
        // Records 5, 16, 16, 16, 8, final 3 (an empty flush in between);
        // records 1, 7, an empty final one; one final record; records 16,
        // 16, 1, a full final one of 16.
        v.push(Format::framed(
            Algorithm::Aes128Gcm,
            16,
            &[5, 0, 16, 40],
            3,
            b"ad",
        ));
        v.push(Format::framed(
            Algorithm::ChaCha20Poly1305,
            7,
            &[1, 7],
            0,
            b"",
        ));
        v.push(Format::framed(Algorithm::Aes256Gcm, 32, &[], 20, b""));
        v.push(Format::framed(Algorithm::Aes128Gcm, 16, &[33], 16, b""));
        // (16-byte key, 8 + 32-byte segments), (32-byte key, 8 + 48), and
        // the minimal one (1 + 25).
        for (i, (dks, css, hash)) in [
            (16, 48, HkdfHash::Sha256),
            (32, 64, HkdfHash::Sha512),
            (16, 41, HkdfHash::Sha1),
        ]
        .into_iter()
        .enumerate()
        {
            let p = AesGcmHkdfParams::new(dks, css, hash).unwrap();
            v.push(Format::tink(p, u8::try_from(i).unwrap() + 1));
        }
        // Three segments of 20, 44 and 36 bytes with 16-byte tags; and a
        // 10-byte truncated SHA-1 tag.
        for (css, hkdf, hmac, tag) in [
            (60, HkdfHash::Sha256, HmacHash::Sha256, 16),
            (54, HkdfHash::Sha1, HmacHash::Sha1, 10),
        ] {
            let p = AesCtrHmacParams::new(16, css, hkdf, hmac, tag).unwrap();
            v.push(Format::ctr_hmac(p));
        }
        v
    }

    /// The fixed-size formats (every one but the framed variant).
    pub fn fixed() -> Vec<Format> {
        Format::all()
            .into_iter()
            .filter(|f| !f.is_framed())
            .collect()
    }

    pub fn native(alg: Algorithm, seed: u8) -> Format {
        Format::native_with_segment(alg, seed, NATIVE_SEGMENT)
    }

    /// The native format with `s`-byte segments.
    pub fn native_with_segment(alg: Algorithm, seed: u8, s: usize) -> Format {
        let raw = raw_key(alg.key_len(), seed);
        Format {
            name: format!("native {alg}"),
            kind: Kind::Native(alg),
            key: AnyKey::Native(Key::new(alg, &raw).unwrap()),
            raw,
            aad: Vec::new(),
            layout: Layout::native(s),
            // 3 full segments and a partial one; 3 full (a full-length
            // final segment); one full; the empty stream.
            lengths: vec![3 * s + 5, 3 * s, s, 0],
        }
    }

    pub fn framed(
        alg: Algorithm,
        cap: usize,
        flushes: &[usize],
        last: usize,
        aad: &[u8],
    ) -> Format {
        let raw = raw_key(alg.key_len(), 0x5c);
        Format {
            name: format!("framed {alg} cap {cap} flushes {flushes:?} last {last}"),
            kind: Kind::Framed {
                alg,
                cap,
                flushes: flushes.to_vec(),
            },
            key: AnyKey::Native(Key::new(alg, &raw).unwrap()),
            raw,
            aad: aad.to_vec(),
            layout: Layout::native(cap),
            lengths: vec![flushes.iter().sum::<usize>() + last],
        }
    }

    /// A Tink AES-GCM-HKDF key with a 32-byte raw key (longer than a
    /// 16-byte derived key: the whole raw key is HKDF's input).
    pub fn tink(p: AesGcmHkdfParams, seed: u8) -> Format {
        let raw = raw_key(32, seed);
        let layout = Layout::of_tink(&p);
        Format {
            name: format!("{p:?}"),
            kind: Kind::TinkGcm(p),
            key: AnyKey::Tink(AesGcmHkdfKey::new(p, &raw).unwrap()),
            raw,
            aad: Vec::new(),
            layout,
            lengths: tink_lengths(&layout),
        }
    }

    pub fn ctr_hmac(p: AesCtrHmacParams) -> Format {
        let raw = raw_key(p.derived_key_size(), 0x33);
        let layout = Layout::tink_with_tag(
            p.derived_key_size(),
            p.ciphertext_segment_size(),
            p.tag_size(),
        );
        Format {
            name: format!("{p:?}"),
            kind: Kind::TinkCtrHmac(p),
            key: AnyKey::CtrHmac(AesCtrHmacKey::new(p, &raw).unwrap()),
            raw,
            aad: Vec::new(),
            layout,
            lengths: tink_lengths(&layout),
        }
    }

    /// Tink's formats, whose header length byte is decided on alone.
    pub fn is_tink(&self) -> bool {
        matches!(self.kind, Kind::TinkGcm(_) | Kind::TinkCtrHmac(_))
    }

    pub fn is_framed(&self) -> bool {
        matches!(self.kind, Kind::Framed { .. })
    }

    fn is_native_header(&self) -> bool {
        matches!(self.kind, Kind::Native(_) | Kind::Framed { .. })
    }

    /// This format with `key` (another key, or other parameters).
    pub fn with_key(&self, key: AnyKey, layout: Layout) -> Format {
        Format {
            name: self.name.clone(),
            kind: self.kind.clone(),
            key,
            raw: self.raw.clone(),
            aad: self.aad.clone(),
            layout,
            lengths: self.lengths.clone(),
        }
    }

    /// The reader of this format's key with `aad`.
    pub fn reader(&self, aad: &[u8]) -> ReaderBuilder {
        self.key.reader().associated_data(aad)
    }

    /// The stream of `pt`, sealed by the crate's writer on the std front
    /// with provider `wp` and associated data `aad`: in 7-byte writes, or
    /// for the framed variant flushed after each piece of `flushes`.
    pub fn seal_aad(&self, wp: Provider, aad: &[u8], pt: &[u8]) -> Sealed<'_> {
        let mut builder = self.writer(wp, aad);
        let ct = match &self.kind {
            Kind::Framed { cap, flushes, .. } => {
                builder = builder.framed().capacity(*cap);
                let mut w = Front::Std.build_writer(builder, Vec::new());
                let mut pos = 0;
                for &l in flushes {
                    w.write_all(&pt[pos..pos + l]).unwrap();
                    w.flush().unwrap();
                    pos += l;
                }
                w.write_all(&pt[pos..]).unwrap();
                w.finish().unwrap()
            }
            Kind::Native(_) => {
                let mut w = Front::Std.build_writer(builder, Vec::new());
                write_in(&mut w, pt, &WriteMode::Fixed(7));
                w.finish().unwrap()
            }
            Kind::TinkGcm(_) | Kind::TinkCtrHmac(_) => {
                let mut w = Front::Std.build_writer(builder, Vec::new());
                assert_eq!(w.capacity(), self.layout.rest, "a Tink writer's capacity");
                write_in(&mut w, pt, &WriteMode::Fixed(7));
                w.finish().unwrap()
            }
        };
        self.sealed(wp, aad, pt, ct)
    }

    /// The writer of this format's key (a native one with the format's
    /// segment size), sealing with `wp`.
    pub fn writer(&self, wp: Provider, aad: &[u8]) -> WriterBuilder {
        let b = self.key.writer().provider(wp).associated_data(aad);
        match self.kind {
            Kind::Native(_) => b.capacity(self.layout.rest),
            _ => b,
        }
    }

    /// [`Format::seal_aad`] with the format's associated data.
    pub fn seal(&self, wp: Provider, pt: &[u8]) -> Sealed<'_> {
        self.seal_aad(wp, &self.aad, pt)
    }

    /// `ct`, a stream of `pt` in this format, with its segments found.
    pub fn sealed(&self, wp: Provider, aad: &[u8], pt: &[u8], ct: Vec<u8>) -> Sealed<'_> {
        let (segs, before) = if self.is_framed() {
            let recs = oracle_framed::parse(&self.raw, aad, &ct).unwrap();
            let mut before = vec![0];
            for r in &recs {
                before.push(before.last().unwrap() + r.pt.len());
            }
            (recs.iter().map(|r| r.offset..r.end()).collect(), before)
        } else {
            let l = &self.layout;
            assert_eq!(ct.len(), l.stream_len(pt.len()), "{}: layout", self.name);
            let n = l.segments(pt.len());
            let segs = (0..n).map(|i| l.seg_range(ct.len(), i)).collect();
            let before = (0..=n).map(|i| l.plain_before(i).min(pt.len())).collect();
            (segs, before)
        };
        assert_eq!(*before.last().unwrap(), pt.len(), "{}: segments", self.name);
        Sealed {
            f: self,
            wp,
            aad: aad.to_vec(),
            pt: pt.to_vec(),
            ct,
            segs,
            before,
        }
    }

    /// The oracle's stream of `segs` (plaintext, last flag), each sealed
    /// with its index as counter, under the salt and nonce prefix of the
    /// header of `ct` (fixed-size formats).
    pub fn reseal(&self, ct: &[u8], aad: &[u8], segs: &[(&[u8], bool)]) -> Vec<u8> {
        let h = self.layout.header;
        match &self.kind {
            Kind::Native(alg) => {
                let size = u32::try_from(self.layout.rest).unwrap();
                oracle::seal_flagged(*alg, &self.raw, aad, size, &ct[14..46], &ct[46..h], segs)
            }
            Kind::TinkGcm(p) => {
                let op = oracle_tink::Params {
                    key_size: p.derived_key_size(),
                    segment: p.ciphertext_segment_size(),
                    hash: hash_id(p.hkdf_hash()),
                };
                let (salt, prefix) = ct[1..h].split_at(op.key_size);
                oracle_tink::seal_flagged(&op, &self.raw, aad, salt, prefix, segs)
            }
            Kind::TinkCtrHmac(p) => {
                let op = oracle_tink_ctr::Params {
                    key_size: p.derived_key_size(),
                    segment: p.ciphertext_segment_size(),
                    hkdf: hash_id(p.hkdf_hash()),
                    hmac: hmac_id(p.hmac_hash()),
                    tag: p.tag_size(),
                };
                let (salt, prefix) = ct[1..h].split_at(op.key_size);
                oracle_tink_ctr::seal_flagged(&op, &self.raw, aad, salt, prefix, segs)
            }
            Kind::Framed { .. } => panic!("the framed variant is resealed by its own oracle"),
        }
    }

    /// The bit masks every byte is flipped with: for the framed variant
    /// also 0xff, which makes a record length huge.
    pub fn masks(&self) -> &'static [u8] {
        if self.is_framed() {
            &[0x01, 0x80, 0xff]
        } else {
            &[0x01, 0x80]
        }
    }

    /// What a header byte flipped in `ct` at `pos` by `mask` must give.
    pub fn header_flip(&self, ct: &[u8], pos: usize, mask: u8) -> Want {
        let v = ct[pos] ^ mask;
        match &self.kind {
            Kind::Native(alg) | Kind::Framed { alg, .. } => Want::Is(match pos {
                0..8 => Error::BadMagic,
                // Versions 1 and 2 are both known, and bound into the key.
                8 if v == 1 || v == 2 => Error::Authentication,
                8 => Error::UnsupportedVersion(v),
                9 => match Algorithm::from_id(v) {
                    Some(stream) => {
                        return Want::Shows(format!(
                            "AlgorithmMismatch {{ stream: {stream:?}, key: {alg:?} }}"
                        ));
                    }
                    None => Error::UnknownAlgorithm(v),
                },
                10..14 => {
                    let mut b = [ct[10], ct[11], ct[12], ct[13]];
                    b[pos - 10] = v;
                    let size = u32::from_be_bytes(b);
                    if size == 0 {
                        Error::ZeroSegmentSize
                    } else if usize::try_from(size).unwrap() > DEFAULT_MAX_SEGMENT_SIZE {
                        return Want::Shows(format!(
                            "SegmentTooLarge {{ size: {size}, limit: {DEFAULT_MAX_SEGMENT_SIZE} }}"
                        ));
                    } else {
                        // A different segment size changes the derived key.
                        Error::Authentication
                    }
                }
                // Salt or nonce prefix: another key or other nonces.
                _ => Error::Authentication,
            }),
            Kind::TinkGcm(_) | Kind::TinkCtrHmac(_) => {
                if pos == 0 {
                    self.header_length(v)
                } else {
                    Want::Is(Error::Authentication)
                }
            }
        }
    }

    /// A Tink header whose length byte is `found`.
    pub fn header_length(&self, found: u8) -> Want {
        header_length(self.layout.header, found)
    }

    /// Whether a stream whose header was changed to `bad` asks for
    /// segments of a megabyte or more (under the limit): the reader then
    /// sets up and wipes megabyte buffers on every run, so those few
    /// cases run a reduced matrix.
    pub fn asks_for_big_segments(&self, bad: &[u8]) -> bool {
        self.is_native_header()
            && bad.len() >= 14
            && u32::from_be_bytes(bad[10..14].try_into().unwrap()) >= 1 << 20
    }

    /// What a stream cut `into` bytes into a segment (0: at its start)
    /// must give: the framed variant knows each record's length, so any
    /// cut is `Truncated`; a fixed-size format opens a partial segment of
    /// at least a tag as the final one, which fails to authenticate.
    pub fn cut_error(&self, into: usize) -> Error {
        if self.is_framed() || into < self.layout.tag {
            Error::Truncated
        } else {
            Error::Authentication
        }
    }

    /// The header patches every stream of this format must refuse before
    /// any plaintext: (what, offset, bytes written there, the error).
    pub fn header_patches(&self) -> Vec<(String, usize, Vec<u8>, Want)> {
        let mut v = Vec::new();
        match &self.kind {
            Kind::Native(_) | Kind::Framed { .. } => {
                let magic = |what: &str, at: usize, b: &[u8]| {
                    (what.to_string(), at, b.to_vec(), Want::Is(Error::BadMagic))
                };
                v.push(magic("magic Cipherio", 0, b"C"));
                v.push(magic("magic cipheri0", 7, b"0"));
                v.push(magic("zero magic", 0, &[0; 8]));
                for ver in [0u8, 3, 0xff] {
                    let e = Want::Is(Error::UnsupportedVersion(ver));
                    v.push((format!("version {ver}"), 8, vec![ver], e));
                }
                // Version 1 is the fixed-size format, 2 the framed one: a
                // stream relabelled as the other is never read as it,
                // since the version byte is bound into the key: it fails
                // (as the other variant's reader finds it), releasing
                // nothing.
                let other = if self.is_framed() { 1 } else { 2 };
                v.push((format!("version {other}"), 8, vec![other], Want::Damaged));
                for id in [0u8, 4, 0x81, 0xff] {
                    let e = Want::Is(Error::UnknownAlgorithm(id));
                    v.push((format!("algorithm id {id}"), 9, vec![id], e));
                }
                v.push((
                    "segment size 0".to_string(),
                    10,
                    vec![0; 4],
                    Want::Is(Error::ZeroSegmentSize),
                ));
            }
            Kind::TinkGcm(_) | Kind::TinkCtrHmac(_) => {
                for found in [0u8, 1, 24, 40, 41, 0xff] {
                    if usize::from(found) != self.layout.header {
                        let e = self.header_length(found);
                        v.push((format!("header length byte {found}"), 0, vec![found], e));
                    }
                }
            }
        }
        v
    }

    /// Readers that must refuse this format's streams before any
    /// plaintext: (what, reader builder, layout it reads with, the error).
    /// Another key of the same kind; for native keys a key of another
    /// algorithm; for Tink keys the raw key cut to the derived key size
    /// and other parameters, which the header does not name.
    pub fn wrong_readers(&self) -> Vec<(String, Format, Want)> {
        let auth = Want::Is(Error::Authentication);
        let mut other_raw = self.raw.clone();
        *other_raw.last_mut().unwrap() ^= 1;
        let mut v = Vec::new();
        match &self.kind {
            Kind::Native(alg) | Kind::Framed { alg, .. } => {
                let k = AnyKey::Native(Key::new(*alg, &other_raw).unwrap());
                v.push(("wrong key".into(), self.with_key(k, self.layout), auth));
                // Refused by the header's algorithm byte before any
                // segment is tried; the same bytes too where they fit.
                for &other in Algorithm::ALL.iter().filter(|&o| o != alg) {
                    let e = Want::Shows(format!(
                        "AlgorithmMismatch {{ stream: {alg:?}, key: {other:?} }}"
                    ));
                    let bytes = raw_key(other.key_len(), 9);
                    let k = AnyKey::Native(Key::new(other, &bytes).unwrap());
                    v.push((
                        format!("key for {other}"),
                        self.with_key(k, self.layout),
                        e.clone(),
                    ));
                    if other.key_len() == alg.key_len() {
                        let k = AnyKey::Native(Key::new(other, &self.raw).unwrap());
                        let what = format!("key for {other}, same bytes");
                        v.push((what, self.with_key(k, self.layout), e));
                    }
                }
            }
            Kind::TinkGcm(p) => {
                let tink = |p: AesGcmHkdfParams, raw: &[u8]| {
                    self.with_key(
                        AnyKey::Tink(AesGcmHkdfKey::new(p, raw).unwrap()),
                        Layout::of_tink(&p),
                    )
                };
                v.push(("wrong raw key".into(), tink(*p, &other_raw), auth.clone()));
                let dks = p.derived_key_size();
                if self.raw.len() > dks {
                    v.push((
                        format!("raw key cut to {dks}"),
                        tink(*p, &self.raw[..dks]),
                        auth.clone(),
                    ));
                }
                // Segment size ± 1 moves the first segment boundary,
                // another hash gives another key.
                let css = p.ciphertext_segment_size();
                let mut others: Vec<(String, usize, usize, HkdfHash)> = vec![
                    ("segment size - 1".into(), dks, css - 1, p.hkdf_hash()),
                    ("segment size + 1".into(), dks, css + 1, p.hkdf_hash()),
                ];
                for h in [HkdfHash::Sha1, HkdfHash::Sha256, HkdfHash::Sha512] {
                    if h != p.hkdf_hash() {
                        others.push((format!("{h:?}"), dks, css, h));
                    }
                }
                for (what, dks, css, h) in others {
                    if let Ok(q) = AesGcmHkdfParams::new(dks, css, h) {
                        v.push((what, tink(q, &self.raw), auth.clone()));
                    }
                }
                // Another derived key size: another header length.
                let other = if dks == 16 { 32 } else { 16 };
                let found = u8::try_from(self.layout.header).unwrap();
                for css in [css, 57, 64] {
                    if let Ok(q) = AesGcmHkdfParams::new(other, css, p.hkdf_hash()) {
                        let e = header_length(1 + other + 7, found);
                        v.push((
                            format!("{other}-byte derived key, segment {css}"),
                            tink(q, &self.raw),
                            e,
                        ));
                    }
                }
            }
            Kind::TinkCtrHmac(p) => {
                let k = AnyKey::CtrHmac(AesCtrHmacKey::new(*p, &other_raw).unwrap());
                v.push(("wrong raw key".into(), self.with_key(k, self.layout), auth));
            }
        }
        if self.is_tink() {
            // A native key looks for the native header.
            let k = AnyKey::Native(Key::new(Algorithm::Aes128Gcm, &self.raw[..16]).unwrap());
            let native = self.with_key(k, Layout::native(16));
            v.push(("native key".into(), native, Want::Is(Error::BadMagic)));
        }
        v
    }

    /// Whether a stream of `len` bytes ends in a segment whose end the
    /// reader knows: then bytes after it come after an authenticated final
    /// segment (`TrailingData`, that segment possibly released); otherwise
    /// they read together with it as one segment that does not
    /// authenticate. Every framed record is delimited; a fixed-size
    /// stream's final segment is when it is full.
    pub fn delimited_final(&self, len: usize) -> bool {
        self.is_framed() || self.layout.full_final(len)
    }

    /// What an empty final segment after full ones must give: the native
    /// format keeps one encoding per plaintext; Tink readers accept it
    /// (and Tink writers never make it).
    pub fn empty_final_after_full(&self) -> Option<Error> {
        match self.kind {
            Kind::Native(_) => Some(Error::EmptyFinalSegment),
            _ => None,
        }
    }
}

impl Sealed<'_> {
    /// What a flip of stream byte `pos` by `mask` must give (`bad` is the
    /// flipped stream), and how much plaintext may come out first: every
    /// segment before the damaged one. In a framed record's 4-byte header
    /// a length made larger than the segment size is `SegmentTooLarge`, a
    /// flipped final flag `Authentication`, another length either that or
    /// `Truncated` (the record then reads as longer or shorter).
    pub fn flip_want(&self, bad: &[u8], pos: usize, mask: u8) -> (Want, Upto) {
        let Some(i) = self.seg_at(pos) else {
            return (self.f.header_flip(&self.ct, pos, mask), Upto::Exactly(0));
        };
        let upto = Upto::Exactly(self.before[i]);
        let start = self.segs[i].start;
        if let Kind::Framed { cap, .. } = self.f.kind
            && pos < start + 4
        {
            let word = u32::from_be_bytes(bad[start..start + 4].try_into().unwrap());
            let len = word & 0x7fff_ffff;
            let want = if usize::try_from(len).unwrap() > cap {
                Want::Shows(format!("SegmentTooLarge {{ size: {len}, limit: {cap} }}"))
            } else if pos == start && mask == 0x80 {
                Want::Is(Error::Authentication)
            } else {
                Want::CutOrAuth
            };
            return (want, upto);
        }
        (Want::Is(Error::Authentication), upto)
    }
}

/// Tampering lengths: several segments with a short final one, several
/// with a full final one, one full segment, one short, empty.
fn tink_lengths(l: &Layout) -> Vec<usize> {
    vec![
        l.first + 2 * l.rest + 5,
        l.first + 2 * l.rest,
        l.first,
        l.first.div_ceil(2),
        0,
    ]
}

/// One sealed stream under attack.
pub struct Sealed<'f> {
    pub f: &'f Format,
    /// The provider that sealed it.
    pub wp: Provider,
    pub aad: Vec<u8>,
    pub pt: Vec<u8>,
    pub ct: Vec<u8>,
    /// Byte ranges of its segments (records), in order.
    pub segs: Vec<Range<usize>>,
    /// Plaintext bytes in segments `..i`, for `i` in `0..=segs.len()`.
    pub before: Vec<usize>,
}

impl Sealed<'_> {
    /// Segments (records).
    pub fn n(&self) -> usize {
        self.segs.len()
    }

    pub fn header(&self) -> &[u8] {
        &self.ct[..self.segs[0].start]
    }

    pub fn seg(&self, i: usize) -> &[u8] {
        &self.ct[self.segs[i].clone()]
    }

    /// Every segment's bytes, in order.
    pub fn seg_bytes(&self) -> Vec<Vec<u8>> {
        (0..self.n()).map(|i| self.seg(i).to_vec()).collect()
    }

    /// The segment holding stream byte `pos` (None: the header).
    pub fn seg_at(&self, pos: usize) -> Option<usize> {
        self.segs.iter().position(|r| r.contains(&pos))
    }

    /// The header followed by `segs`.
    pub fn join(&self, segs: &[Vec<u8>]) -> Vec<u8> {
        [self.header().to_vec(), segs.concat()].concat()
    }

    /// Plaintext bytes before the final segment.
    pub fn before_last(&self) -> usize {
        self.before[self.n() - 1]
    }

    /// The context of a case: format, sealing provider, length, `what`.
    pub fn ctx(&self, what: &str) -> String {
        format!(
            "{} by {:?} len {}: {what}",
            self.f.name,
            self.wp,
            self.pt.len()
        )
    }

    /// The plaintext cut into its segments.
    pub fn plain_segments(&self) -> Vec<&[u8]> {
        (0..self.n())
            .map(|i| &self.pt[self.before[i]..self.before[i + 1]])
            .collect()
    }

    fn tamper<T>(
        &self,
        ctx: &str,
        reader: &Format,
        aad: &[u8],
        f: impl FnOnce(&Tamper<'_>) -> T,
    ) -> T {
        let builder = reader.reader(aad);
        f(&Tamper {
            ctx,
            builder: &builder,
            layout: &reader.layout,
            pt: &self.pt,
        })
    }

    /// `bad` read with `reader`'s key and `aad` fails as `want` after
    /// releasing `upto` (see [`Tamper::fail_in`]), on every front, with
    /// every provider, in every configuration and read pattern (a
    /// reduced matrix where the header asks for megabyte segments); and
    /// read into watched buffers of 4 KiB and of 1 byte, no plaintext is
    /// left past what was returned.
    pub fn fail_with(
        &self,
        what: &str,
        reader: &Format,
        aad: &[u8],
        bad: &[u8],
        want: &Want,
        upto: Upto,
    ) {
        let ctx = self.ctx(what);
        self.tamper(&ctx, reader, aad, |t| {
            if self.f.asks_for_big_segments(bad) {
                let pats = [ReadMode::ToEnd, ReadMode::Chunks(1)];
                t.fail_in(&TAMPER_CONFIGS[..1], &pats, bad, want, upto);
            } else {
                let pats = tamper_patterns(&reader.layout);
                t.fail_in(&TAMPER_CONFIGS, &pats, bad, want, upto);
            }
        });
        if self.f.asks_for_big_segments(bad) {
            return;
        }
        for buf_len in [4096, 1] {
            let ctx = format!("{ctx} [watched reads of {buf_len}]");
            let builder = reader.reader(aad);
            let (got, e) = read_watching_everywhere(&ctx, &builder, bad, &self.pt, buf_len);
            want.check(&ctx, &e);
            upto.check_count(&ctx, got);
        }
    }

    /// `bad` read with this format's key in `configs` × `pats` only (on
    /// every front, with every provider) fails as `want` after `upto`.
    pub fn fail_in(
        &self,
        what: &str,
        configs: &[(usize, usize)],
        pats: &[ReadMode],
        bad: &[u8],
        want: &Want,
        upto: Upto,
    ) {
        let ctx = self.ctx(what);
        self.tamper(&ctx, self.f, &self.aad, |t| {
            t.fail_in(configs, pats, bad, want, upto);
        });
    }

    /// [`Sealed::fail_with`] this format's key and the stream's associated
    /// data.
    pub fn fail(&self, what: &str, bad: &[u8], want: &Want, upto: Upto) {
        self.fail_with(what, self.f, &self.aad, bad, want, upto);
    }

    /// [`Sealed::fail`] with the error `e`.
    pub fn fail_is(&self, what: &str, bad: &[u8], e: Error, upto: Upto) {
        self.fail(what, bad, &Want::Is(e), upto);
    }

    /// `stream` reads back to the plaintext in every configuration and
    /// pattern, with `aad`.
    pub fn clean_aad(&self, what: &str, aad: &[u8], stream: &[u8]) {
        let ctx = self.ctx(what);
        self.tamper(&ctx, self.f, aad, |t| t.clean(stream));
    }

    /// [`Sealed::clean_aad`] with the stream's associated data.
    pub fn clean(&self, what: &str, stream: &[u8]) {
        self.clean_aad(what, &self.aad, stream);
    }

    /// Bytes after the final segment (see [`Format::delimited_final`]).
    pub fn fail_after_final(&self, what: &str, bad: &[u8]) {
        let len = self.pt.len();
        if self.f.delimited_final(len) {
            let upto = Upto::Either(self.before_last(), len);
            self.fail_is(what, bad, Error::TrailingData, upto);
        } else {
            let upto = Upto::Exactly(self.before_last());
            self.fail_is(what, bad, Error::Authentication, upto);
        }
    }
}

/// A Tink header of `expected` bytes whose length byte is `found` (the
/// variant is `#[non_exhaustive]`, so named by its `Debug` form).
fn header_length(expected: usize, found: u8) -> Want {
    Want::Shows(format!(
        "HeaderLength {{ expected: {expected}, found: {found} }}"
    ))
}
