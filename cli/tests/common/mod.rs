//! Helpers shared by the end-to-end tests: the built binary, scratch
//! directories, keys and deterministic pseudo-random data.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// Exit statuses the command line promises.
pub const OK: i32 = 0;
pub const ERROR: i32 = 1;
pub const USAGE: i32 = 2;
pub const UNAUTHENTIC: i32 = 3;

/// The built `cipherio` binary.
pub fn bin_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cipherio"))
}

/// A command running the binary, with a clean environment for the bar.
pub fn cipherio() -> Command {
    let mut c = Command::new(bin_path());
    c.env_remove("CIPHERIO_PROGRESS_DELAY_MS");
    c
}

/// A command running `script` in `sh` with umask 022 (and no core
/// files), as a user's shell would, in `dir`; the script names the binary
/// `"$0"`.
pub fn sh(dir: &Path, script: &str) -> Command {
    Command::from_std(sh_std(dir, script))
}

/// [`sh`] as a `std` command, to spawn.
pub fn sh_std(dir: &Path, script: &str) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("umask 022; ulimit -c 0; {script}"))
        .arg(bin_path())
        .current_dir(dir)
        .env_remove("CIPHERIO_PROGRESS_DELAY_MS");
    c
}

/// A file's permission bits.
pub fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

/// `len` bytes of a fixed pseudo-random sequence (xorshift), different per
/// `seed`.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A scratch directory with a fresh key file `key` in it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch::with_algorithm("aes256gcm")
    }

    pub fn with_algorithm(alg: &str) -> Scratch {
        let dir = tempfile::tempdir().expect("a scratch directory");
        cipherio()
            .args(["keygen", "--algorithm", alg, "-o"])
            .arg(dir.path().join("key"))
            .assert()
            .code(OK);
        Scratch { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn key(&self) -> PathBuf {
        self.path("key")
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(name);
        fs::write(&p, bytes).expect("write a scratch file");
        p
    }

    /// Writes a file readable by its owner only, as a key file should be.
    pub fn write_private(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.write(name, bytes);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).expect("chmod");
        p
    }

    pub fn read(&self, name: &str) -> Vec<u8> {
        fs::read(self.path(name)).expect("read a scratch file")
    }

    /// The names in the directory, sorted (temporary files included).
    pub fn names(&self) -> Vec<String> {
        names_in(self.dir.path())
    }

    /// Encrypts `plaintext` to the file `name` with the scratch key.
    pub fn encrypt(&self, plaintext: &[u8], name: &str, extra: &[&str]) -> PathBuf {
        let out = self.path(name);
        cipherio()
            .args(["encrypt", "-k"])
            .arg(self.key())
            .args(extra)
            .arg("-o")
            .arg(&out)
            .write_stdin(plaintext.to_vec())
            .assert()
            .code(OK);
        out
    }
}

pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("list a directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

/// The key line's algorithm and hex from a key file.
pub fn key_parts(path: &Path) -> (String, String) {
    let text = fs::read_to_string(path).expect("read the key file");
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .expect("a key line");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 3, "key line: {line}");
    assert_eq!(words[0], "cipherio-key-v1");
    (words[1].to_string(), words[2].to_string())
}
