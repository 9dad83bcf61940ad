//! Tink keysets, as `tinkey` writes them: the cleartext JSON format
//! (`--out-format json`, the default) or the binary protobuf format, holding
//! streaming AEAD keys (`AesGcmHkdfStreamingKey`, `AesCtrHmacStreamingKey`).
//!
//! The library takes a Tink key's raw bytes and parameters; reading them out
//! of a keyset (JSON, base64, the serialized key protobuf) is done here,
//! with a protobuf reader just large enough for these messages.

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use cipherio::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use serde_json::Value;
use zeroize::Zeroizing;

use crate::keyfile::{Candidate, Format, plain};

const GCM_URL: &str = "type.googleapis.com/google.crypto.tink.AesGcmHkdfStreamingKey";
const CTR_URL: &str = "type.googleapis.com/google.crypto.tink.AesCtrHmacStreamingKey";
/// `KeyStatusType.ENABLED`.
const ENABLED: u64 = 1;
/// `KeyData.KeyMaterialType.SYMMETRIC`.
const SYMMETRIC: u64 = 2;

/// One key entry of a keyset, before its key data is decoded.
struct Entry {
    key_id: u64,
    enabled: bool,
    type_url: String,
    value: Zeroizing<Vec<u8>>,
    symmetric: bool,
}

/// The enabled streaming keys of a keyset, the primary first.
pub fn parse(bytes: &[u8]) -> Result<Vec<Candidate>> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let (primary, entries) = if first == Some(&b'{') {
        parse_json(bytes)?
    } else {
        parse_binary(bytes)?
    };
    let mut out = Vec::new();
    let mut has_primary = false;
    for e in entries {
        if !e.enabled {
            continue;
        }
        if !e.symmetric {
            bail!("key {}: not symmetric key material", e.key_id);
        }
        let c = decode_key(&e).with_context(|| format!("key {}", e.key_id))?;
        if e.key_id == primary && !has_primary {
            has_primary = true;
            out.insert(0, c);
        } else {
            out.push(c);
        }
    }
    if !has_primary {
        bail!("the primary key {primary} is missing or not enabled");
    }
    Ok(out)
}

fn parse_json(bytes: &[u8]) -> Result<(u64, Vec<Entry>)> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| anyhow!("not JSON: {e}"))?;
    if v.get("encryptedKeyset").is_some() {
        bail!(
            "an encrypted keyset: give the cleartext keyset (tinkey convert-keyset can write one)"
        );
    }
    let primary = v
        .get("primaryKeyId")
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("no primaryKeyId"))?;
    let keys = v
        .get("key")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("no key list"))?;
    let mut entries = Vec::new();
    for k in keys {
        let key_id = k
            .get("keyId")
            .and_then(Value::as_u64)
            .ok_or_else(|| anyhow!("a key without keyId"))?;
        let data = k
            .get("keyData")
            .ok_or_else(|| anyhow!("key {key_id}: no keyData"))?;
        let field = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or("");
        let value = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(field("value"))
                .map_err(|_| anyhow!("key {key_id}: keyData.value is not base64"))?,
        );
        entries.push(Entry {
            key_id,
            enabled: k.get("status").and_then(Value::as_str) == Some("ENABLED"),
            type_url: field("typeUrl").to_string(),
            value,
            symmetric: field("keyMaterialType") == "SYMMETRIC",
        });
    }
    Ok((primary, entries))
}

fn parse_binary(bytes: &[u8]) -> Result<(u64, Vec<Entry>)> {
    let mut primary = None;
    let mut entries = Vec::new();
    for (num, f) in fields(bytes).context("neither JSON nor a binary keyset")? {
        match (num, f) {
            (1, Field::Varint(v)) => primary = Some(v),
            (2, Field::Bytes(key)) => {
                let mut e = Entry {
                    key_id: 0,
                    enabled: false,
                    type_url: String::new(),
                    value: Zeroizing::new(Vec::new()),
                    symmetric: false,
                };
                for (num, f) in fields(key)? {
                    match (num, f) {
                        (1, Field::Bytes(data)) => {
                            for (num, f) in fields(data)? {
                                match (num, f) {
                                    (1, Field::Bytes(url)) => {
                                        e.type_url = String::from_utf8_lossy(url).into_owned();
                                    }
                                    (2, Field::Bytes(v)) => e.value = Zeroizing::new(v.to_vec()),
                                    (3, Field::Varint(t)) => e.symmetric = t == SYMMETRIC,
                                    _ => {}
                                }
                            }
                        }
                        (2, Field::Varint(s)) => e.enabled = s == ENABLED,
                        (3, Field::Varint(id)) => e.key_id = id,
                        _ => {}
                    }
                }
                entries.push(e);
            }
            (1 | 2, _) => bail!("not a binary keyset"),
            _ => {}
        }
    }
    let primary = primary.ok_or_else(|| anyhow!("no primary key id"))?;
    Ok((primary, entries))
}

fn decode_key(e: &Entry) -> Result<Candidate> {
    let gcm = match e.type_url.as_str() {
        GCM_URL => true,
        CTR_URL => false,
        other => bail!("{other} is not a streaming AEAD key this tool reads"),
    };
    let (mut version, mut params, mut raw) = (0, None, Zeroizing::new(Vec::new()));
    for (num, f) in fields(&e.value)? {
        match (num, f) {
            (1, Field::Varint(v)) => version = v,
            (2, Field::Bytes(p)) => params = Some(p),
            (3, Field::Bytes(k)) => raw = Zeroizing::new(k.to_vec()),
            _ => {}
        }
    }
    if version != 0 {
        bail!("key version {version} (only 0 exists)");
    }
    let params = params.ok_or_else(|| anyhow!("no parameters"))?;
    let (mut css, mut dks, mut hkdf, mut hmac) = (0, 0, 0, None);
    for (num, f) in fields(params)? {
        match (num, f) {
            (1, Field::Varint(v)) => css = v,
            (2, Field::Varint(v)) => dks = v,
            (3, Field::Varint(v)) => hkdf = v,
            (4, Field::Bytes(h)) if !gcm => hmac = Some(h),
            _ => {}
        }
    }
    let css = usize::try_from(css)?;
    let dks = usize::try_from(dks)?;
    let hkdf = hash(hkdf)?;
    let lib = |e: cipherio::Error| anyhow!(plain(&e));
    if gcm {
        let p = AesGcmHkdfParams::new(dks, css, hkdf).map_err(lib)?;
        let key = AesGcmHkdfKey::new(p, &raw).map_err(lib)?;
        Ok(Candidate {
            label: format!(
                "Tink key {} (AES{}-GCM-HKDF, {css}-byte segments, HKDF-{hkdf})",
                e.key_id,
                dks * 8
            ),
            key: Box::new(key),
            first_segment: css,
            format: Format::Tink,
        })
    } else {
        let hmac = hmac.ok_or_else(|| anyhow!("no HMAC parameters"))?;
        let (mut h, mut tag) = (0, 0);
        for (num, f) in fields(hmac)? {
            match (num, f) {
                (1, Field::Varint(v)) => h = v,
                (2, Field::Varint(v)) => tag = v,
                _ => {}
            }
        }
        // The HMAC hash by the same Tink hash type.
        let h = HmacHash::from_name(hash(h)?.name()).ok_or_else(|| anyhow!("no such HMAC hash"))?;
        let p = AesCtrHmacParams::new(dks, css, hkdf, h, usize::try_from(tag)?).map_err(lib)?;
        let key = AesCtrHmacKey::new(p, &raw).map_err(lib)?;
        Ok(Candidate {
            label: format!(
                "Tink key {} (AES{}-CTR-HMAC-{h}, {css}-byte segments, HKDF-{hkdf}, {tag}-byte tags)",
                e.key_id,
                dks * 8
            ),
            key: Box::new(key),
            first_segment: css,
            format: Format::Tink,
        })
    }
}

/// Tink's `HashType` enum.
fn hash(v: u64) -> Result<HkdfHash> {
    Ok(match v {
        1 => HkdfHash::Sha1,
        3 => HkdfHash::Sha256,
        4 => HkdfHash::Sha512,
        2 => bail!("SHA384 is not supported"),
        5 => bail!("SHA224 is not supported"),
        _ => bail!("unknown hash type {v}"),
    })
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of one protobuf message, in order.
fn fields(mut b: &[u8]) -> Result<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let tag = varint(&mut b)?;
        let num = tag >> 3;
        let f = match tag & 7 {
            0 => Field::Varint(varint(&mut b)?),
            1 => Field::Fixed.skip(&mut b, 8)?,
            2 => {
                let len = usize::try_from(varint(&mut b)?)?;
                if len > b.len() {
                    bail!("protobuf field runs past its message");
                }
                let (v, rest) = b.split_at(len);
                b = rest;
                Field::Bytes(v)
            }
            5 => Field::Fixed.skip(&mut b, 4)?,
            w => bail!("protobuf wire type {w} is not read here"),
        };
        if num == 0 {
            bail!("protobuf field number 0");
        }
        out.push((num, f));
    }
    Ok(out)
}

impl Field<'_> {
    fn skip(self, b: &mut &[u8], n: usize) -> Result<Self> {
        if b.len() < n {
            bail!("protobuf field runs past its message");
        }
        *b = &b[n..];
        Ok(self)
    }
}

fn varint(b: &mut &[u8]) -> Result<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&byte, rest) = b
            .split_first()
            .ok_or_else(|| anyhow!("protobuf varint runs past its message"))?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    bail!("protobuf varint longer than 10 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn put(out: &mut Vec<u8>, num: u64, bytes: &[u8]) {
        put_varint(out, num << 3 | 2);
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    fn put_int(out: &mut Vec<u8>, num: u64, v: u64) {
        put_varint(out, num << 3);
        put_varint(out, v);
    }

    fn gcm_key(css: u64) -> Vec<u8> {
        let mut params = Vec::new();
        put_int(&mut params, 1, css);
        put_int(&mut params, 2, 16);
        put_int(&mut params, 3, 3);
        let mut key = Vec::new();
        put_int(&mut key, 1, 0);
        put(&mut key, 2, &params);
        put(&mut key, 3, &[7u8; 16]);
        key
    }

    #[test]
    fn binary_and_json_keysets_give_the_same_keys_primary_first() -> Result<()> {
        let mut bin = Vec::new();
        put_int(&mut bin, 1, 42);
        for (id, css, status) in [(7u64, 4096u64, 1u64), (9, 8192, 2), (42, 1 << 20, 1)] {
            let mut data = Vec::new();
            put(&mut data, 1, GCM_URL.as_bytes());
            put(&mut data, 2, &gcm_key(css));
            put_int(&mut data, 3, SYMMETRIC);
            let mut k = Vec::new();
            put(&mut k, 1, &data);
            put_int(&mut k, 2, status);
            put_int(&mut k, 3, id);
            put_int(&mut k, 4, 3);
            put(&mut bin, 2, &k);
        }
        let from_bin = parse(&bin)?;
        assert_eq!(from_bin.len(), 2, "the disabled key is left out");
        assert_eq!(from_bin[0].first_segment, 1 << 20);
        assert_eq!(from_bin[1].first_segment, 4096);

        let b64 = |v: &[u8]| base64::engine::general_purpose::STANDARD.encode(v);
        let json = format!(
            r#"{{"primaryKeyId": 42, "key": [
              {{"keyData": {{"typeUrl": "{GCM_URL}", "value": "{}", "keyMaterialType": "SYMMETRIC"}},
                "status": "ENABLED", "keyId": 7, "outputPrefixType": "RAW"}},
              {{"keyData": {{"typeUrl": "{GCM_URL}", "value": "{}", "keyMaterialType": "SYMMETRIC"}},
                "status": "ENABLED", "keyId": 42, "outputPrefixType": "RAW"}}]}}"#,
            b64(&gcm_key(4096)),
            b64(&gcm_key(1 << 20))
        );
        let from_json = parse(json.as_bytes())?;
        assert_eq!(from_json.len(), 2);
        assert_eq!(from_json[0].first_segment, 1 << 20);
        assert!(from_json[0].label.starts_with("Tink key 42 "));

        let no_primary = json.replace("\"primaryKeyId\": 42", "\"primaryKeyId\": 5");
        assert!(parse(no_primary.as_bytes()).is_err());
        let other = json.replace("AesGcmHkdfStreamingKey", "AesGcmKey");
        assert!(parse(other.as_bytes()).is_err());
        assert!(parse(&bin[..bin.len() - 3]).is_err());
        Ok(())
    }
}
