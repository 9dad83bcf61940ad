//! Files that appear complete or not at all, and the signal thread that
//! removes what a killed command would leave behind.
//!
//! On Linux the bytes go to an unnamed file in the destination's directory
//! (`O_TMPFILE`), linked onto its name once complete: no other process can
//! open it meanwhile, and nothing of it is left if the process dies, even
//! of SIGKILL. Where the filesystem cannot make unnamed files, a hidden
//! temporary file beside the destination takes its place, created with the
//! same mode, removed on failure and by the signal thread.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use anyhow::{Context, Result};
use tempfile::TempPath;

/// The temporary file of an output that has a name but is not yet in
/// place, removed by the signal thread if the process is interrupted.
/// Locked across the rename, so that a signal either removes the
/// temporary file or comes after the output is complete.
static PENDING: Mutex<Option<PathBuf>> = Mutex::new(None);

fn pending() -> MutexGuard<'static, Option<PathBuf>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// The signals whose default action ends the process and that another
/// process or the terminal sends: on each, the signal thread removes the
/// pending temporary file before the process dies of it.
const CLEANUP_SIGNALS: [i32; 10] = {
    use signal_hook::consts::*;
    [
        SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU, SIGXFSZ,
    ]
};

/// Starts the thread that, on one of [`CLEANUP_SIGNALS`], removes the
/// pending temporary file and then dies of the same signal (so the caller
/// sees the usual status: 130 for Ctrl-C). A signal the command was
/// started with ignored (`nohup`, a script's background job) stays
/// ignored.
pub fn handle_signals() -> Result<()> {
    let ignored = ignored_signals();
    let wanted = CLEANUP_SIGNALS
        .into_iter()
        .filter(|&s| ignored & (1 << (s - 1)) == 0);
    let mut signals = signal_hook::iterator::Signals::new(wanted)
        .context("cannot install the signal handlers")?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let pending = pending();
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

/// The set of ignored signals, bit `n - 1` for signal `n`, as the kernel
/// reports it (`SigIgn` in `/proc/self/status`); none where that cannot be
/// read.
fn ignored_signals() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

/// An output file being written: unnamed, or under a temporary name, until
/// [`AtomicFile::commit`] puts it in place. Dropped uncommitted, it leaves
/// nothing.
pub struct AtomicFile {
    file: File,
    dest: PathBuf,
    /// The temporary name, where the file has one (removed on drop, first,
    /// then the registration).
    temp: Option<(TempPath, Pending)>,
}

/// Clears the pending temporary file's registration when dropped.
struct Pending;

impl Drop for Pending {
    fn drop(&mut self) {
        *pending() = None;
    }
}

impl AtomicFile {
    /// Starts a file that will appear at `dest`, created with `mode` less
    /// the umask. Fails now, before anything is written, if it cannot be
    /// created in `dest`'s directory.
    pub fn create(dest: &Path, mode: u32) -> io::Result<AtomicFile> {
        let dir = dir_of(dest);
        if let Some(file) = unnamed(dir, mode) {
            return Ok(AtomicFile {
                file,
                dest: dest.to_path_buf(),
                temp: None,
            });
        }
        // Locked from before the file exists until it is registered: a
        // signal in between waits, then removes it.
        let mut pending = pending();
        let (file, path) = tempfile::Builder::new()
            .prefix(&temp_prefix(dest))
            .suffix(TEMP_SUFFIX)
            .permissions(fs::Permissions::from_mode(mode))
            .tempfile_in(dir)?
            .into_parts();
        *pending = Some(path.to_path_buf());
        Ok(AtomicFile {
            file,
            dest: dest.to_path_buf(),
            temp: Some((path, Pending)),
        })
    }

    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Syncs the file and puts it at its destination: never over a file
    /// that is there by then, unless `replace`.
    pub fn commit(self, replace: bool) -> io::Result<()> {
        let AtomicFile { file, dest, temp } = self;
        file.sync_all()?;
        let temp = match temp {
            Some(t) => t,
            // linkat never replaces a name: EEXIST if it is taken.
            None if !replace => {
                link_unnamed(&file, &dest)?;
                sync_dir(&dest);
                return Ok(());
            }
            None => named_link(&file, &dest)?,
        };
        let (path, _registration) = temp;
        let mut pending = pending();
        let done = if replace {
            path.persist(&dest)
        } else {
            path.persist_noclobber(&dest)
        };
        *pending = None;
        drop(pending);
        done.map_err(|e| e.error)?;
        sync_dir(&dest);
        Ok(())
    }
}

const TEMP_SUFFIX: &str = ".cipherio-tmp";

/// The start of a temporary name beside `dest`, `.NAME.` (then random
/// characters and [`TEMP_SUFFIX`]), NAME cut short enough that the whole
/// stays within a file name's 255 bytes.
fn temp_prefix(dest: &Path) -> OsString {
    let name = dest.file_name().map_or(&[][..], |n| n.as_bytes());
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(&name[..name.len().min(200)]);
    prefix.push(b'.');
    OsString::from_vec(prefix)
}

/// The directory `dest` is in.
fn dir_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Makes a new name in `dest`'s directory durable.
fn sync_dir(dest: &Path) {
    let _ = File::open(dir_of(dest)).and_then(|d| d.sync_all());
}

/// The name through which an unnamed file can be linked.
fn fd_path(file: &File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// An unnamed file in `dir`, if the system makes them and can later link
/// one (through `/proc`).
#[cfg(target_os = "linux")]
fn unnamed(dir: &Path, mode: u32) -> Option<File> {
    use rustix::fs::{CWD, Mode, OFlags, openat};
    let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
    let file = File::from(openat(CWD, dir, flags, Mode::from_raw_mode(mode)).ok()?);
    fs::symlink_metadata(fd_path(&file)).ok()?;
    Some(file)
}

#[cfg(not(target_os = "linux"))]
fn unnamed(_dir: &Path, _mode: u32) -> Option<File> {
    None
}

#[cfg(target_os = "linux")]
fn link_unnamed(file: &File, name: &Path) -> io::Result<()> {
    use rustix::fs::{AtFlags, CWD, linkat};
    Ok(linkat(
        CWD,
        fd_path(file),
        CWD,
        name,
        AtFlags::SYMLINK_FOLLOW,
    )?)
}

#[cfg(not(target_os = "linux"))]
fn link_unnamed(_file: &File, _name: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Links the unnamed `file` under a fresh temporary name beside `dest`,
/// registered for the signal thread, to be renamed over `dest`.
fn named_link(file: &File, dest: &Path) -> io::Result<(TempPath, Pending)> {
    let mut pending = pending();
    let linked = tempfile::Builder::new()
        .prefix(&temp_prefix(dest))
        .suffix(TEMP_SUFFIX)
        .make_in(dir_of(dest), |p| {
            *pending = Some(p.to_path_buf());
            link_unnamed(file, p)
        });
    match linked {
        Ok(t) => Ok((t.into_temp_path(), Pending)),
        Err(e) => {
            *pending = None;
            Err(e)
        }
    }
}
