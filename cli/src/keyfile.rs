//! The key file format and where a key comes from.
//!
//! A key file is text: lines starting with `#` and blank lines are ignored,
//! and exactly one line holds the key:
//!
//! ```text
//! cipherio-key-v1 ALGORITHM HEX
//! ```
//!
//! `ALGORITHM` is `aes128gcm`, `aes256gcm` or `chacha20poly1305` (the
//! native format), or `cobblestone128` or `cobblestone256` (C2SP chunked
//! encryption), and `HEX` the raw key (16 bytes for AES-128-GCM and
//! Cobblestone-128, 32 for the others), lower- or upper-case. A leading UTF-8 byte order mark is ignored. The same text is
//! accepted from an environment variable or a file descriptor.
//!
//! No message about a key line quotes it or any of its words: one of them
//! may be the key.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use cipherio::cobblestone::{CobblestoneKey, Instantiation};
use cipherio::{Algorithm, Key, StreamKey};
use clap::ValueEnum;
use zeroize::Zeroizing;

use crate::atomic::AtomicFile;
use crate::keyset;

/// The first word of a key line; names the format's version.
pub const KEY_LINE_TAG: &str = "cipherio-key-v1";

/// The algorithms, by the names the command line and key files use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmName {
    /// AES-128-GCM (16-byte key)
    Aes128gcm,
    /// AES-256-GCM (32-byte key)
    Aes256gcm,
    /// ChaCha20-Poly1305 (32-byte key)
    Chacha20poly1305,
    /// Cobblestone-128: C2SP chunked encryption with AES-128-GCM (16-byte key)
    Cobblestone128,
    /// Cobblestone-256: C2SP chunked encryption with AES-256-GCM (32-byte key)
    Cobblestone256,
}

impl AlgorithmName {
    /// The native format's algorithm, or the Cobblestone instantiation.
    fn kind(self) -> Result<Algorithm, Instantiation> {
        match self {
            AlgorithmName::Aes128gcm => Ok(Algorithm::Aes128Gcm),
            AlgorithmName::Aes256gcm => Ok(Algorithm::Aes256Gcm),
            AlgorithmName::Chacha20poly1305 => Ok(Algorithm::ChaCha20Poly1305),
            AlgorithmName::Cobblestone128 => Err(Instantiation::Cobblestone128),
            AlgorithmName::Cobblestone256 => Err(Instantiation::Cobblestone256),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AlgorithmName::Aes128gcm => "aes128gcm",
            AlgorithmName::Aes256gcm => "aes256gcm",
            AlgorithmName::Chacha20poly1305 => "chacha20poly1305",
            AlgorithmName::Cobblestone128 => "cobblestone128",
            AlgorithmName::Cobblestone256 => "cobblestone256",
        }
    }

    fn from_name(name: &str) -> Option<AlgorithmName> {
        AlgorithmName::value_variants()
            .iter()
            .copied()
            .find(|a| a.name() == name)
    }
}

/// The text of a key file with a fresh random key for `alg`.
pub fn new_key_text(alg: AlgorithmName) -> Result<Zeroizing<String>> {
    let lib = |e: cipherio::Error| anyhow!(plain(&e));
    Ok(match alg.kind() {
        Ok(a) => key_file_text(alg, Key::try_generate(a).map_err(lib)?.as_bytes()),
        Err(i) => key_file_text(
            alg,
            CobblestoneKey::try_generate(i).map_err(lib)?.as_bytes(),
        ),
    })
}

/// The text of a key file for the raw key `bytes`.
fn key_file_text(alg: AlgorithmName, bytes: &[u8]) -> Zeroizing<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = Zeroizing::new(String::with_capacity(2 * bytes.len()));
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    Zeroizing::new(format!(
        "# cipherio key file: keep it secret. Anyone who has it can decrypt\n\
         # and forge everything encrypted with it.\n\
         {KEY_LINE_TAG} {} {}\n",
        alg.name(),
        hex.as_str()
    ))
}

/// Parses the text of a key file.
pub fn parse_key_text(text: &str) -> Result<Candidate> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if found.is_some() {
            bail!("more than one key line (a key file holds one key)");
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [tag, alg, hex] = words[..] else {
            bail!("not a key line: expected `{KEY_LINE_TAG} ALGORITHM HEX`");
        };
        if tag != KEY_LINE_TAG {
            bail!("not a cipherio key: the key line must start with `{KEY_LINE_TAG}`");
        }
        let alg = AlgorithmName::from_name(alg).ok_or_else(|| {
            anyhow!(
                "the key line's second word is not aes128gcm, aes256gcm, chacha20poly1305, \
                 cobblestone128 or cobblestone256"
            )
        })?;
        let lib = |e: cipherio::Error| anyhow!(plain(&e));
        found = Some(match alg.kind() {
            Ok(a) => Candidate {
                label: format!("{a} key"),
                format: Format::Native,
                key: Box::new(Key::from_hex(a, hex).map_err(lib)?),
                first_segment: 0,
            },
            Err(i) => Candidate {
                label: format!("{i} key"),
                format: Format::Cobblestone,
                key: Box::new(CobblestoneKey::from_hex(i, hex).map_err(lib)?),
                first_segment: 0,
            },
        });
    }
    found.ok_or_else(|| anyhow!("no key line (`{KEY_LINE_TAG} ALGORITHM HEX`)"))
}

/// A library error's text without the crate's `cipherio: ` prefix (the
/// command line prints its own).
pub fn plain(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    match s.strip_prefix("cipherio: ") {
        Some(rest) => rest.to_string(),
        None => s,
    }
}

/// Writes a fresh key file at `path`, which must not exist, readable and
/// writable by its owner only. It appears whole or not at all: a write
/// that fails (a full disk) leaves no empty key file.
pub fn write_new_key_file(path: &Path, text: &str) -> Result<()> {
    let refused = || {
        format!(
            "{}: cannot create the key file (an existing file is never overwritten)",
            path.display()
        )
    };
    if fs::symlink_metadata(path).is_ok() {
        return Err(anyhow::Error::new(io::Error::from(
            io::ErrorKind::AlreadyExists,
        )))
        .with_context(refused);
    }
    let mut f = AtomicFile::create(path, 0o600).with_context(refused)?;
    f.file()
        .write_all(text.as_bytes())
        .with_context(|| format!("{}: cannot write the key file", path.display()))?;
    f.commit(false).with_context(refused)
}

/// One key a stream may be sealed with, and what the command line needs to
/// know about it.
pub struct Candidate {
    pub key: Box<dyn StreamKey>,
    /// For messages: `AES-256-GCM key`, `Tink key 1234 (AES-GCM-HKDF ...)`.
    pub label: String,
    /// The Tink key's first ciphertext segment (header included), read
    /// ahead to tell which of several keys a stream is sealed with; 0 for
    /// a key from a key file.
    pub first_segment: usize,
    /// The stream format the key reads and writes.
    pub format: Format,
}

/// The stream formats, as far as the command line treats them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// cipherio's own: the segment size is the writer's choice.
    Native,
    /// Tink's: the key sets the segment size.
    Tink,
    /// C2SP chunked encryption: the format fixes the chunk size.
    Cobblestone,
}

/// The keys from the command line: one key from a key file, or a Tink keyset's
/// enabled keys with the primary first (it is the one that encrypts).
pub struct Keys {
    pub candidates: Vec<Candidate>,
}

impl Keys {
    pub fn primary(&self) -> &Candidate {
        &self.candidates[0]
    }
}

/// Where the key comes from (exactly one of them).
#[derive(Debug, Clone)]
pub enum KeySource {
    File(PathBuf),
    Env(String),
    /// A descriptor's number, as given: checked when read, so that a key
    /// given here by mistake is not quoted in the usage error.
    Fd(String),
    TinkKeyset(PathBuf),
}

/// Loads the key(s) named on the command line.
pub fn load(source: &KeySource) -> Result<Keys> {
    let native = |text: &str, from: &str| -> Result<Keys> {
        let key = parse_key_text(text).with_context(|| format!("{from}: bad key"))?;
        Ok(Keys {
            candidates: vec![key],
        })
    };
    match source {
        KeySource::File(path) => {
            let name = shown(path);
            let text = read_secret(path, &name)
                .with_context(|| format!("{name}: cannot read the key file"))?;
            native(&text, &name)
        }
        KeySource::Env(var) => {
            let name = format!("${}", shown(Path::new(var)));
            let value = std::env::var_os(var)
                .ok_or_else(|| anyhow!("{name}: the environment variable is not set"))?;
            let text = Zeroizing::new(
                value
                    .into_string()
                    .map_err(|_| anyhow!("{name}: not valid UTF-8"))?,
            );
            native(&text, &name)
        }
        KeySource::Fd(fd) => {
            let fd: u32 = fd.parse().map_err(|_| {
                anyhow::Error::new(crate::files::Refused(
                    "--key-fd: not a descriptor number".to_string(),
                ))
            })?;
            // Opening /dev/fd/N duplicates the descriptor without unsafe code.
            let path = PathBuf::from(format!("/dev/fd/{fd}"));
            let name = format!("file descriptor {fd}");
            let text = read_secret(&path, &name)
                .with_context(|| format!("{name}: cannot read a key from it"))?;
            native(&text, &name)
        }
        KeySource::TinkKeyset(path) => {
            let name = shown(path);
            let bytes = read_secret_bytes(path, &name)
                .with_context(|| format!("{name}: cannot read the Tink keyset"))?;
            let candidates =
                keyset::parse(&bytes).with_context(|| format!("{name}: bad Tink keyset"))?;
            Ok(Keys { candidates })
        }
    }
}

/// A key source's name (a file, a variable) as messages show it: as
/// given, unless it holds what may be a key itself (its line's tag, or 32
/// hex digits in a row, a 16-byte key's), as when `--key-env "$KEY"` was
/// meant as `--key-env KEY`.
fn shown(name: &Path) -> String {
    let name = name.display().to_string();
    let mut run = 0;
    let key_like = name.contains(KEY_LINE_TAG)
        || name.chars().any(|c| {
            run = if c.is_ascii_hexdigit() { run + 1 } else { 0 };
            run >= 32
        });
    if key_like {
        "(a name that may be a key, not shown)".to_string()
    } else {
        name
    }
}

fn read_secret_bytes(path: &Path, name: &str) -> io::Result<Zeroizing<Vec<u8>>> {
    let mut f = File::open(path)?;
    warn_if_open_to_others(&f, name);
    let mut buf = Zeroizing::new(Vec::with_capacity(4096));
    // Read in place so that no unwiped copy is left by a reallocation.
    let mut chunk = Zeroizing::new([0u8; 4096]);
    loop {
        let n = f.read(&mut chunk[..])?;
        if n == 0 {
            break;
        }
        if buf.len() + n > 1 << 20 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "larger than 1 MiB: not a key",
            ));
        }
        if buf.len() + n > buf.capacity() {
            let mut bigger = Zeroizing::new(Vec::with_capacity(2 * (buf.len() + n)));
            bigger.extend_from_slice(&buf);
            buf = bigger;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(buf)
}

/// Warns (and goes on) when other users may read or change a key file.
fn warn_if_open_to_others(f: &File, name: &str) {
    if let Ok(meta) = f.metadata()
        && meta.is_file()
        && meta.permissions().mode() & 0o077 != 0
    {
        crate::say(format_args!(
            "cipherio: warning: {name}: other users may read this key (mode {:04o}; chmod 600 it)",
            meta.permissions().mode() & 0o7777
        ));
    }
}

fn read_secret(path: &Path, name: &str) -> io::Result<Zeroizing<String>> {
    let bytes = read_secret_bytes(path, name)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))?;
    Ok(Zeroizing::new(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_text_round_trips_and_rejects_garbage() -> Result<()> {
        for &alg in AlgorithmName::value_variants() {
            let text = new_key_text(alg)?;
            let back = parse_key_text(&text)?;
            let cobblestone = alg.kind().is_err();
            assert_eq!(back.format == Format::Cobblestone, cobblestone, "{alg:?}");
            assert!(!back.label.contains(alg.name()), "{}", back.label);
            let two = format!("{}{}", text.as_str(), text.as_str());
            assert!(parse_key_text(&two).is_err());
        }
        assert!(parse_key_text("# nothing\n").is_err());
        assert!(parse_key_text("cipherio-key-v1 aes128gcm 0011").is_err());
        assert!(
            parse_key_text("cipherio-key-v2 aes128gcm 00112233445566778899aabbccddeeff").is_err()
        );
        assert!(parse_key_text("cipherio-key-v1 aes512 00112233445566778899aabbccddeeff").is_err());
        // A Cobblestone-256 key is 32 bytes.
        assert!(
            parse_key_text("cipherio-key-v1 cobblestone256 00112233445566778899aabbccddeeff")
                .is_err()
        );
        let ok = parse_key_text("  cipherio-key-v1 aes128gcm 00112233445566778899AABBCCDDEEFF  ")?;
        assert_eq!(ok.label, "AES-128-GCM key");
        let ok = parse_key_text("cipherio-key-v1 cobblestone128 00112233445566778899AABBCCDDEEFF")?;
        assert_eq!(ok.label, "Cobblestone-128 key");
        Ok(())
    }
}
