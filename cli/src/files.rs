//! Inputs, outputs and the rules around them: atomic output files, cleanup
//! on SIGINT/SIGTERM/SIGHUP, and the refusals (ciphertext to a terminal,
//! input = output, overwriting a file without `--force`).

use std::fs::{self, File, Permissions};
use std::io::{self, IsTerminal};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use tempfile::NamedTempFile;

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

/// The temporary output file not yet renamed into place, removed by the
/// signal thread if the process is interrupted. Locked across the rename,
/// so that a signal either removes the temporary file or comes after the
/// output is complete.
static PENDING: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Starts the thread that, on SIGINT, SIGTERM or SIGHUP, removes the
/// pending temporary file and then dies of the same signal (so the caller
/// sees the usual status: 130 for Ctrl-C).
pub fn handle_signals() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("cannot install the signal handlers")?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(path) = pending.as_ref() {
                let _ = fs::remove_file(path);
            }
            crate::progress::clear_on_signal();
            // Held until the process is gone: no rename can follow.
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}

/// Where the bytes come from.
pub struct Input {
    pub file: File,
    /// For messages: the path, or `<stdin>`.
    pub name: String,
    /// The length, for a regular file.
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
        Ok(Input {
            len: regular.then_some(meta.len()),
            id: regular.then_some((meta.dev(), meta.ino())),
            file,
            name,
        })
    }
}

fn dup_stdin() -> Result<File> {
    let fd = io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .context("<stdin>: cannot use standard input")?;
    Ok(File::from(fd))
}

fn dup_stdout() -> Result<File> {
    let fd = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("<stdout>: cannot use standard output")?;
    Ok(File::from(fd))
}

/// What is written, for the refusal rules.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    Ciphertext,
    Plaintext,
}

/// Where the bytes go.
pub enum Output {
    /// Standard output (or an existing non-regular file: a device, a FIFO),
    /// written as the bytes come.
    Direct { file: File, name: String },
    /// A temporary file beside the destination, renamed onto it by
    /// [`Output::commit`].
    Atomic {
        temp: NamedTempFile,
        dest: PathBuf,
        overwrite: bool,
        name: String,
        _pending: Pending,
    },
}

/// Clears the pending temporary file's registration when the output is
/// dropped (the file itself is removed by `NamedTempFile`'s drop, first).
pub struct Pending;

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        *pending = None;
    }
}

impl Output {
    /// Opens the output after checking the refusal rules.
    pub fn open(path: Option<&Path>, input: &Input, what: Contents, force: bool) -> Result<Output> {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            let file = dup_stdout()?;
            if what == Contents::Ciphertext && !force && io::stdout().is_terminal() {
                return Err(refuse(
                    "refusing to write ciphertext to a terminal: use -o FILE, a pipe, or --force"
                        .to_string(),
                ));
            }
            check_not_input(&file, input, "<stdout>")?;
            return Ok(Output::Direct {
                file,
                name: "<stdout>".to_string(),
            });
        };
        let name = path.display().to_string();
        match fs::metadata(path) {
            Ok(meta) if !meta.file_type().is_file() && !meta.is_dir() => {
                // A device or a FIFO: nothing to replace atomically.
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .with_context(|| format!("{name}: cannot open for writing"))?;
                if what == Contents::Ciphertext && !force && file.is_terminal() {
                    return Err(refuse(format!(
                        "{name}: refusing to write ciphertext to a terminal (--force to do it)"
                    )));
                }
                return Ok(Output::Direct { file, name });
            }
            Ok(meta) if meta.is_dir() => {
                return Err(anyhow!("{name}: is a directory"));
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
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::Error::new(e).context(format!("{name}: cannot stat"))),
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let file_name = path
            .file_name()
            .ok_or_else(|| anyhow!("{name}: not a file name"))?;
        // Registered before the file exists, so that a signal between the
        // two cannot leave it behind; the name is fixed by then.
        let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{}.", file_name.to_string_lossy()))
            .suffix(".cipherio-tmp")
            // What a new file gets (less the umask), as for any tool's output.
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| {
                format!(
                    "{name}: cannot create a temporary file in {}",
                    dir.display()
                )
            })?;
        *pending = Some(temp.path().to_path_buf());
        Ok(Output::Atomic {
            temp,
            dest: path.to_path_buf(),
            overwrite: force,
            name,
            _pending: Pending,
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
            Output::Atomic { temp, .. } => temp.as_file_mut(),
        }
    }

    /// Makes the output final: for a file, synced and renamed into place
    /// (never over a file that appeared meanwhile, unless `--force`).
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Direct { .. } => Ok(()),
            Output::Atomic {
                temp,
                dest,
                overwrite,
                name,
                _pending,
            } => {
                temp.as_file()
                    .sync_all()
                    .with_context(|| format!("{name}: cannot sync"))?;
                let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
                let done = if overwrite {
                    temp.persist(&dest)
                } else {
                    temp.persist_noclobber(&dest)
                };
                *pending = None;
                drop(pending);
                done.map_err(|e| {
                    anyhow::Error::new(e.error).context(format!("{name}: cannot rename into place"))
                })?;
                // The rename itself, made durable.
                if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let _ = File::open(dir).and_then(|d| d.sync_all());
                }
                Ok(())
            }
        }
    }
}

/// Refuses standard output when it is the input file itself.
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
