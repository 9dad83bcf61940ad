//! Encrypts or decrypts a file in one of Google Tink's streaming formats,
//! with the key and parameters of a Tink `AesGcmHkdfStreamingKey`
//! (`--type gcm`, the default) or `AesCtrHmacStreamingKey` (`--type
//! ctr-hmac`, which also takes `--hmac-hash` and `--tag-size`). The interop
//! checks drive it (see `interop/tink_interop.py`).
//!
//! ```text
//! cargo run --release --example tink -- (encrypt|decrypt) [--type gcm|ctr-hmac] --key HEX \
//!     --derived-key-size N --segment-size N --hkdf-hash (SHA1|SHA256|SHA512) \
//!     [--hmac-hash (SHA1|SHA256|SHA512) --tag-size N] [--aad HEX] IN_FILE OUT_FILE
//! ```
//!
//! Exit status 0 on success. On any failure it prints one line saying why,
//! exits with 1 (2 for a usage error), and leaves no `OUT_FILE` behind: the
//! output goes to a new temporary file beside it (created exclusively, with
//! a random name), renamed into place only once everything (for `decrypt`,
//! every segment's tag) has checked out, and a regular `OUT_FILE` that
//! existed before a failed run is removed too, so that no stale file can
//! pass for the result. `OUT_FILE` must be a regular file or not exist, and
//! may not be `IN_FILE`; a usage error touches no file.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cipherio::tink::{
    AesCtrHmacKey, AesCtrHmacParams, AesGcmHkdfKey, AesGcmHkdfParams, HkdfHash, HmacHash,
};
use cipherio::{CipherReader, CipherWriter, Provider, StreamKey};

/// The provider this example seals and opens with: AWS-LC when it is built
/// with `--features aws-lc` (cargo features never change the default).
#[cfg(feature = "aws-lc")]
const PROVIDER: Provider = Provider::AwsLc;
/// The provider this example seals and opens with: the default, RustCrypto.
#[cfg(not(feature = "aws-lc"))]
const PROVIDER: Provider = Provider::RustCrypto;

const USAGE: &str = "usage: tink (encrypt|decrypt) [--type gcm|ctr-hmac] --key HEX \
                     --derived-key-size N --segment-size N --hkdf-hash (SHA1|SHA256|SHA512) \
                     [--hmac-hash (SHA1|SHA256|SHA512) --tag-size N (ctr-hmac only)] \
                     [--aad HEX] IN_FILE OUT_FILE";

struct Args {
    encrypt: bool,
    /// An `AesGcmHkdfKey` or an `AesCtrHmacKey`.
    key: Box<dyn StreamKey>,
    aad: Vec<u8>,
    input: PathBuf,
    output: PathBuf,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut mode = None;
    let (mut key, mut dks, mut seg, mut hash, mut aad) = (None, None, None, None, None);
    let (mut kind, mut hmac_hash, mut tag_size) = (None, None, None);
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        // File names may be any bytes; options and values are text.
        let Some(a) = arg.to_str() else {
            files.push(PathBuf::from(arg));
            continue;
        };
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value"))?
                .to_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{name} is not valid UTF-8"))
        };
        match a {
            "--key" => key = Some(value(a)?),
            "--derived-key-size" => dks = Some(value(a)?),
            "--segment-size" => seg = Some(value(a)?),
            "--hkdf-hash" => hash = Some(value(a)?),
            "--aad" => aad = Some(value(a)?),
            "--type" => kind = Some(value(a)?),
            "--hmac-hash" => hmac_hash = Some(value(a)?),
            "--tag-size" => tag_size = Some(value(a)?),
            "encrypt" | "decrypt" if mode.is_none() => mode = Some(a == "encrypt"),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => files.push(PathBuf::from(a)),
        }
    }
    let encrypt = mode.ok_or("missing mode: encrypt or decrypt")?;
    let number = |v: Option<String>, name: &str| -> Result<usize, String> {
        let v = v.ok_or_else(|| format!("missing {name}"))?;
        v.parse()
            .map_err(|_| format!("{name} must be a number, got {v:?}"))
    };
    let dks = number(dks, "--derived-key-size")?;
    let seg = number(seg, "--segment-size")?;
    let hash_of = |v: Option<String>, name: &str| -> Result<HkdfHash, String> {
        let v = v.ok_or_else(|| format!("missing {name}"))?;
        HkdfHash::from_name(&v)
            .ok_or_else(|| format!("{name} must be SHA1, SHA256 or SHA512, got {v:?}"))
    };
    let hash = hash_of(hash, "--hkdf-hash")?;
    let hex_key = key.ok_or("missing --key")?;
    let key: Box<dyn StreamKey> = match kind.as_deref().unwrap_or("gcm") {
        "gcm" => {
            if hmac_hash.is_some() || tag_size.is_some() {
                return Err("--hmac-hash and --tag-size are for --type ctr-hmac".into());
            }
            let params = AesGcmHkdfParams::new(dks, seg, hash).map_err(|e| e.to_string())?;
            Box::new(AesGcmHkdfKey::from_hex(params, &hex_key).map_err(|e| e.to_string())?)
        }
        "ctr-hmac" => {
            let hmac = hmac_hash.ok_or("missing --hmac-hash")?;
            let hmac = HmacHash::from_name(&hmac).ok_or_else(|| {
                format!("--hmac-hash must be SHA1, SHA256 or SHA512, got {hmac:?}")
            })?;
            let tag = number(tag_size, "--tag-size")?;
            let params =
                AesCtrHmacParams::new(dks, seg, hash, hmac, tag).map_err(|e| e.to_string())?;
            Box::new(AesCtrHmacKey::from_hex(params, &hex_key).map_err(|e| e.to_string())?)
        }
        t => return Err(format!("--type must be gcm or ctr-hmac, got {t:?}")),
    };
    let aad = hex::decode(aad.unwrap_or_default()).map_err(|_| "--aad is not valid hex")?;
    let [input, output] = <[PathBuf; 2]>::try_from(files)
        .map_err(|f| format!("expected IN_FILE and OUT_FILE, got {} file names", f.len()))?;
    Ok(Args {
        encrypt,
        key,
        aad,
        input,
        output,
    })
}

/// Streams `args.input` through the writer or reader into `tmp`.
fn run(args: &Args, tmp: File) -> io::Result<()> {
    let mut input = File::open(&args.input)?;
    let out = BufWriter::with_capacity(1 << 16, tmp);
    let file = if args.encrypt {
        let mut w = CipherWriter::builder(&args.key)
            .provider(PROVIDER)
            .associated_data(&args.aad)
            .build(out);
        io::copy(&mut input, &mut w)?;
        w.finish()?
    } else {
        let mut r = CipherReader::builder(&args.key)
            .provider(PROVIDER)
            .associated_data(&args.aad)
            .capacity(1 << 16)
            .build(input);
        let mut out = out;
        io::copy(&mut r, &mut out)?;
        out
    };
    let file = file.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// A new file beside `out`, created exclusively under a random name (so
/// no link planted in advance is followed), and its path.
fn temp_beside(out: &Path) -> io::Result<(File, PathBuf)> {
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(io::Error::other)?;
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", hex::encode(random)));
    let path = out.with_file_name(name);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok((file, path))
}

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    if argv.len() == 1 && (argv[0] == "--help" || argv[0] == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(why) => {
            eprintln!("tink: {why} (--help for usage)");
            return ExitCode::from(2);
        }
    };
    if let (Ok(i), Ok(o)) = (
        fs::canonicalize(&args.input),
        fs::canonicalize(&args.output),
    ) && i == o
    {
        eprintln!("tink: OUT_FILE is IN_FILE");
        return ExitCode::from(2);
    }
    // Replacing or removing a device, a directory or a link's target is
    // not this program's business.
    if let Ok(m) = fs::symlink_metadata(&args.output)
        && !m.file_type().is_file()
    {
        eprintln!("tink: OUT_FILE exists and is not a regular file");
        return ExitCode::from(2);
    }
    let (file, tmp) = match temp_beside(&args.output) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tink: cannot create a file beside OUT_FILE: {e}");
            return ExitCode::from(1);
        }
    };
    let done = run(&args, file).and_then(|()| fs::rename(&tmp, &args.output));
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Nothing half-written or unauthenticated stays behind.
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(&args.output);
            let what = if args.encrypt { "encrypt" } else { "decrypt" };
            eprintln!("tink: {what} failed: {e}");
            ExitCode::from(1)
        }
    }
}
