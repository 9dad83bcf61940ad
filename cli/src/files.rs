//! Inputs, outputs and the rules around them: which outputs are written
//! directly and which atomically, their modes, and the refusals
//! (ciphertext to a terminal, input = output, overwriting a file without
//! `--force`).

use std::fs::{self, File, Permissions};
use std::io::{self, IsTerminal, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::atomic::AtomicFile;

/// A refusal: the command as given is not carried out (exit status 2).
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refuse(msg: String) -> anyhow::Error {
    anyhow::Error::new(Refused(msg))
}

/// Where the bytes come from.
pub struct Input {
    pub file: File,
    /// For messages: the path, or `<stdin>`.
    pub name: String,
    /// The bytes left from where the file stands (standard input may
    /// stand past its start), for a regular file.
    pub len: Option<u64>,
    id: Option<(u64, u64)>,
}

impl Input {
    pub fn open(path: Option<&Path>) -> Result<Input> {
        let (file, name) = match path {
            Some(p) if p != Path::new("-") => {
                let f = File::open(p).with_context(|| format!("{}: cannot open", p.display()))?;
                (f, p.display().to_string())
            }
            _ => (dup_stdin()?, "<stdin>".to_string()),
        };
        let meta = file
            .metadata()
            .with_context(|| format!("{name}: cannot stat"))?;
        let regular = meta.file_type().is_file();
        let len = regular
            .then(|| {
                (&file)
                    .stream_position()
                    .map(|at| meta.len().saturating_sub(at))
            })
            .transpose()
            .with_context(|| format!("{name}: cannot seek"))?;
        Ok(Input {
            len,
            id: regular.then_some((meta.dev(), meta.ino())),
            file,
            name,
        })
    }
}

/// Standard input, as a file of its own; an error if the command was
/// started with it closed (see [`stdout`]): that is no empty input.
fn dup_stdin() -> Result<File> {
    standard(io::stdin().as_fd(), 0, "<stdin>", "standard input")
}

/// Standard output, as a file of its own; an error if the command was
/// started with it closed. (The Rust runtime then opens `/dev/null` for
/// reading and writing in its place, which a redirection `> /dev/null`
/// or `< /dev/null` never does: it opens for writing or reading only.)
pub fn stdout() -> Result<File> {
    standard(io::stdout().as_fd(), 1, "<stdout>", "standard output")
}

/// Standard descriptor `n`, `fd`, as a file of its own, unless it was
/// closed when the command started.
fn standard(fd: BorrowedFd<'_>, n: u8, name: &str, what: &str) -> Result<File> {
    let file = File::from(
        fd.try_clone_to_owned()
            .with_context(|| format!("{name}: cannot use {what}"))?,
    );
    if is_null_read_write(n, &file) {
        bail!("{name}: {what} is closed");
    }
    Ok(file)
}

/// Writes `bytes` to standard output: an error, never a panic, if they
/// cannot be written.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    stdout()?.write_all(bytes).context("<stdout>: cannot write")
}

/// Whether standard descriptor `fd`, `file`, is `/dev/null` opened for
/// reading and writing, by the flags its descriptor's `fdinfo` shows.
fn is_null_read_write(fd: u8, file: &File) -> bool {
    const O_ACCMODE: u32 = 3;
    const O_RDWR: u32 = 2;
    let (Ok(meta), Ok(null)) = (file.metadata(), fs::metadata("/dev/null")) else {
        return false;
    };
    if !meta.file_type().is_char_device() || meta.rdev() != null.rdev() {
        return false;
    }
    fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
        .ok()
        .and_then(|t| {
            let flags = t.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & O_ACCMODE == O_RDWR)
}

/// What is written, for the refusal rules and the mode of a new file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    Ciphertext,
    Plaintext,
}

impl Contents {
    /// A new output file's mode, before the umask: plaintext is the secret
    /// the encryption kept, readable by its owner only whatever the
    /// ciphertext's mode was; ciphertext gets any tool's 0666.
    fn mode(self) -> u32 {
        match self {
            Contents::Ciphertext => 0o666,
            Contents::Plaintext => 0o600,
        }
    }
}

/// Where the bytes go.
pub enum Output {
    /// Standard output, a device, a FIFO or a descriptor's name, written as
    /// the bytes come.
    Direct { file: File, name: String },
    /// A file, put in place whole by [`Output::commit`], with the owner,
    /// group and mode of the file it replaces, if any.
    Atomic {
        temp: AtomicFile,
        replaced: Option<Owner>,
        overwrite: bool,
        name: String,
    },
}

impl Output {
    /// Opens the output after checking the refusal rules and what can be
    /// checked before any input is read.
    pub fn open(path: Option<&Path>, input: &Input, what: Contents, force: bool) -> Result<Output> {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            return direct(stdout()?, "<stdout>".to_string(), input, what, force);
        };
        let name = path.display().to_string();
        if let Some(file) = descriptor(path).with_context(|| format!("{name}: cannot open"))? {
            return direct(file, name, input, what, force);
        }
        if path.as_os_str().as_bytes().ends_with(b"/") {
            bail!("{name}: not a file name (it ends with /)");
        }
        let mut replaced = None;
        match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => bail!("{name}: is a directory"),
            Ok(meta) if !meta.is_file() => {
                // A device or a FIFO: nothing to replace atomically.
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .with_context(|| format!("{name}: cannot open for writing"))?;
                return direct(file, name, input, what, force);
            }
            Ok(meta) => {
                if input.id == Some((meta.dev(), meta.ino())) {
                    return Err(refuse(format!(
                        "{name}: refusing to write to the input file"
                    )));
                }
                if !force {
                    return Err(refuse(format!(
                        "{name}: already exists (--force to replace it)"
                    )));
                }
                replaced = Some(Owner {
                    uid: meta.uid(),
                    gid: meta.gid(),
                    mode: meta.mode() & 0o777,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::Error::new(e).context(format!("{name}: cannot stat"))),
        }
        // A symbolic link is written through: its target is replaced, the
        // link stays.
        let dest = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            match fs::canonicalize(path) {
                Ok(target) => target,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    bail!("{name}: a symbolic link to nothing")
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!("{name}: cannot resolve")));
                }
            }
        } else {
            path.to_path_buf()
        };
        let temp = AtomicFile::create(&dest, what.mode())
            .with_context(|| format!("{name}: cannot create the output file"))?;
        Ok(Output::Atomic {
            temp,
            replaced,
            overwrite: force,
            name,
        })
    }

    pub fn name(&self) -> &str {
        match self {
            Output::Direct { name, .. } | Output::Atomic { name, .. } => name,
        }
    }

    pub fn file(&mut self) -> &mut File {
        match self {
            Output::Direct { file, .. } => file,
            Output::Atomic { temp, .. } => temp.file(),
        }
    }

    /// Makes the output final: a file gets the replaced file's owner,
    /// group and mode, is synced and put in place (never over a file that
    /// appeared meanwhile, unless `--force`).
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Direct { .. } => Ok(()),
            Output::Atomic {
                mut temp,
                replaced,
                overwrite,
                name,
            } => {
                if let Some(old) = replaced {
                    keep_access(temp.file(), &old)
                        .with_context(|| format!("{name}: cannot set the mode"))?;
                }
                temp.commit(overwrite)
                    .with_context(|| format!("{name}: cannot put the output in place"))
            }
        }
    }
}

/// Who may read a file: its owner, group and permission bits.
pub struct Owner {
    uid: u32,
    gid: u32,
    mode: u32,
}

/// Gives `file` the owner, group and mode of `old`, the file it replaces,
/// so that the same users can read it. Where the owner or group cannot be
/// given (only root gives files away, and only to a group it is in does a
/// user), the mode keeps the owner's bits alone: the group and others of
/// the new file are not those the old mode was meant for.
fn keep_access(file: &File, old: &Owner) -> io::Result<()> {
    let kept = std::os::unix::fs::fchown(file, Some(old.uid), Some(old.gid)).is_ok();
    let mode = old.mode & if kept { 0o777 } else { 0o700 };
    file.set_permissions(Permissions::from_mode(mode))
}

/// An output written as the bytes come, after the refusals that apply to
/// it: ciphertext to a terminal, and the input file itself.
fn direct(file: File, name: String, input: &Input, what: Contents, force: bool) -> Result<Output> {
    if what == Contents::Ciphertext && !force && file.is_terminal() {
        return Err(refuse(format!(
            "{name}: refusing to write ciphertext to a terminal: use -o FILE, a pipe, or --force"
        )));
    }
    check_not_input(&file, input, &name)?;
    Ok(Output::Direct { file, name })
}

/// The file behind a name that stands for an open descriptor of this
/// process (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`): standard
/// output and error themselves, so that their offset and append mode hold;
/// another descriptor opened anew through its name. `None` for any other
/// name.
fn descriptor(path: &Path) -> Result<Option<File>> {
    let s = path.to_string_lossy();
    let own = format!("/proc/{}/fd/", std::process::id());
    let fd = match s.as_ref() {
        "/dev/stdin" => "0",
        "/dev/stdout" => "1",
        "/dev/stderr" => "2",
        _ => match ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", &own]
            .iter()
            .find_map(|dir| s.strip_prefix(dir))
        {
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Ok(None),
        },
    };
    Ok(Some(match fd {
        "1" => stdout()?,
        "2" => File::from(io::stderr().as_fd().try_clone_to_owned()?),
        _ => fs::OpenOptions::new().write(true).open(path)?,
    }))
}

/// Refuses an output that is the input file itself.
fn check_not_input(out: &File, input: &Input, name: &str) -> Result<()> {
    if let (Ok(meta), Some(id)) = (out.metadata(), input.id)
        && meta.file_type().is_file()
        && (meta.dev(), meta.ino()) == id
    {
        return Err(refuse(format!(
            "{name}: refusing to write to the input file {}",
            input.name
        )));
    }
    Ok(())
}
