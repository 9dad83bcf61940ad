//! `cipherio inspect`: what a stream's header says, without a key. A
//! Cobblestone stream (C2SP chunked encryption) has no header to show: it
//! starts with a random salt and a key commitment, which only the key
//! recognises.

use std::io::{Read, Seek, SeekFrom, Write};

use anyhow::{Context, Result};
use cipherio::format::{HEADER_LEN, Header, MAGIC, TAG_LEN};
use serde_json::json;

use crate::files::{Contents, Input, Output};

/// Plaintext length implied by a native v1 layout: `ciphertext_len` bytes
/// with a header and segments of `segment_size` plaintext bytes, each
/// followed by a tag. `None` if no stream has that length.
pub fn implied_plaintext_len(ciphertext_len: u64, segment_size: u64) -> Option<(u64, u64)> {
    let tag = TAG_LEN as u64;
    let body = ciphertext_len.checked_sub(HEADER_LEN as u64)?;
    let sealed = segment_size + tag;
    let (full, rest) = (body / sealed, body % sealed);
    match rest {
        // Ends on a boundary: the last full segment is the final one.
        0 if full > 0 => Some((full * segment_size, full)),
        r if r >= tag => Some((full * segment_size + r - tag, full + 1)),
        _ => None,
    }
}

pub fn run(mut input: Input, as_json: bool) -> Result<()> {
    let mut out = Output::open(None, &input, Contents::Plaintext, false)?;
    let start = input.file.stream_position().ok();
    let mut head = Vec::with_capacity(HEADER_LEN);
    (&mut input.file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: cannot read", input.name))?;
    // The length of a regular file, or of anything else that seeks (a
    // block device), from where the stream starts.
    let len = input.len.or_else(|| {
        let end = input.file.seek(SeekFrom::End(0)).ok()?;
        end.checked_sub(start?).filter(|&n| n >= head.len() as u64)
    });
    let report = if head.starts_with(&MAGIC) || MAGIC.starts_with(&head) && !head.is_empty() {
        let h = Header::parse(&head)
            .map_err(|e| anyhow::Error::new(std::io::Error::from(e)).context(input.name.clone()))?;
        native(&h, len)
    } else {
        tink_guess(&head, len).ok_or_else(|| {
            anyhow::Error::new(std::io::Error::from(cipherio::Error::BadMagic)).context(format!(
                "{}: neither a cipherio stream nor a Tink one; a Cobblestone stream has no \
                 magic bytes (it starts with random ones), so only its key recognises one: \
                 `cipherio verify` with the key and context checks it",
                input.name
            ))
        })?
    };
    let text = if as_json {
        let obj: serde_json::Map<String, serde_json::Value> = report
            .iter()
            .map(|(k, v, j)| ((*k).to_string(), j.clone().unwrap_or_else(|| json!(v))))
            .collect();
        format!("{}\n", serde_json::Value::Object(obj))
    } else {
        report
            .iter()
            .map(|(k, v, _)| format!("{:<15} {v}\n", format!("{}:", k.replace('_', " "))))
            .collect()
    };
    out.file()
        .write_all(text.as_bytes())
        .context("<stdout>: cannot write")
}

type Line = (&'static str, String, Option<serde_json::Value>);

fn native(h: &Header, len: Option<u64>) -> Vec<Line> {
    let mut out: Vec<Line> = vec![
        (
            "format",
            if h.framed {
                "cipherio v2 (framed records)".to_string()
            } else {
                "cipherio v1 (fixed-size segments)".to_string()
            },
            Some(json!(if h.framed {
                "cipherio-v2-framed"
            } else {
                "cipherio-v1"
            })),
        ),
        ("algorithm", h.algorithm.to_string(), None),
        (
            "segment_size",
            format!("{} bytes of plaintext", h.segment_size),
            Some(json!(h.segment_size)),
        ),
    ];
    if let Some(len) = len {
        out.push(("ciphertext_len", format!("{len} bytes"), Some(json!(len))));
        if h.framed {
            out.push((
                "plaintext_len",
                "not given by the layout (framed records): decrypt or verify to know".to_string(),
                Some(serde_json::Value::Null),
            ));
        } else {
            match implied_plaintext_len(len, u64::from(h.segment_size)) {
                Some((p, segments)) => {
                    out.push((
                        "plaintext_len",
                        format!("{p} bytes (implied by the layout, unauthenticated)"),
                        Some(json!(p)),
                    ));
                    out.push(("segments", segments.to_string(), Some(json!(segments))));
                }
                None => out.push((
                    "plaintext_len",
                    "none: no stream has this length (truncated or extended)".to_string(),
                    Some(serde_json::Value::Null),
                )),
            }
        }
    }
    out.push((
        "authenticated",
        "no (nothing here was checked with a key)".to_string(),
        Some(json!(false)),
    ));
    out
}

/// A Tink stream names nothing but its header's length (1 + derived key
/// size + 7): 24 or 40.
fn tink_guess(head: &[u8], len: Option<u64>) -> Option<Vec<Line>> {
    let dks = match head.first()? {
        24 => 16,
        40 => 32,
        _ => return None,
    };
    let mut out: Vec<Line> = vec![
        (
            "format",
            "possibly Tink streaming AEAD (no magic; its first byte is a Tink header length), \
             or a Cobblestone stream (no magic either: its first bytes are random)"
                .to_string(),
            Some(json!("tink?")),
        ),
        (
            "algorithm",
            format!(
                "AES-{}-GCM-HKDF or AES-{}-CTR-HMAC (the key says which)",
                dks * 8,
                dks * 8
            ),
            None,
        ),
        (
            "segment_size",
            "set by the key, not the stream".to_string(),
            Some(serde_json::Value::Null),
        ),
    ];
    if let Some(len) = len {
        out.push(("ciphertext_len", format!("{len} bytes"), Some(json!(len))));
    }
    out.push((
        "authenticated",
        "no (nothing here was checked with a key)".to_string(),
        Some(json!(false)),
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implied_lengths_follow_the_layout() {
        let h = HEADER_LEN as u64;
        assert_eq!(implied_plaintext_len(h + 16, 100), Some((0, 1)));
        assert_eq!(implied_plaintext_len(h + 116, 100), Some((100, 1)));
        assert_eq!(implied_plaintext_len(h + 116 + 17, 100), Some((101, 2)));
        assert_eq!(implied_plaintext_len(h + 116 + 15, 100), None);
        assert_eq!(implied_plaintext_len(h, 100), None);
        assert_eq!(implied_plaintext_len(h - 1, 100), None);
    }
}
