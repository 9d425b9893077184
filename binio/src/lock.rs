//! One writer per run folder: an exclusive OS lock on a file inside it.
//!
//! Two processes writing one run folder interleave their metrics, overwrite each other's
//! checkpoints and results, and both report success. The lock is the operating system's
//! (`flock` on Unix, `LockFileEx` on Windows, through the `fs4` crate, which std's own
//! `File::try_lock` matches from Rust 1.89 on): it is
//! released when its holder exits in any way, `kill -9` included, so a stale lock never
//! blocks a later run. The holder writes its pid into the lock file so the process that is
//! refused can say which process holds the folder.

use fs4::TryLockError;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside a locked folder.
pub const LOCK_FILE: &str = ".mallocmuzero.lock";

/// A folder that could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the folder's lock.
    #[error("{dir}: in use by another process ({holder}); one process writes a run folder at a time: wait for it to end, stop it, or choose another folder")]
    Held {
        /// The folder.
        dir: String,
        /// The holder as its lock file names it (its pid), or that the file does not say.
        holder: String,
    },
    /// The path names a file (or something else) that is not a folder.
    #[error("{dir}: it is {what}, not a folder: a run folder is a folder (a new one, or one of a run); choose another")]
    NotAFolder {
        /// The path given.
        dir: String,
        /// What it is instead.
        what: String,
    },
    /// Creating or locking the lock file failed for another reason than a holder.
    #[error("{path}: cannot lock the folder: {source}")]
    Io {
        /// The lock file.
        path: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
}

/// An exclusive lock on a folder, held until dropped (or the process ends).
#[derive(Debug)]
pub struct FolderLock {
    // Held open for the lock's lifetime: closing it releases the lock.
    _file: File,
    dir: PathBuf,
}

impl FolderLock {
    /// Locks `dir` (created if missing) for this process, or says which process holds it.
    /// Never waits: a second writer is refused before it spends anything. The lock file is
    /// the folder's own ([`crate::open_own`]): one that is a link (symbolic or hard) is
    /// refused, never written through, so the pid lands nowhere but in the folder.
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io_err = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        make_folder(dir)?;
        // Not truncated on open: the holder's pid stays readable to the one refused.
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        let mut file = crate::open_own(&path, &mut options).map_err(io_err)?;
        // Called through the trait: from Rust 1.89 on, std's inherent `File::try_lock`
        // would be taken instead, which this workspace's minimum Rust does not have.
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    dir: dir.display().to_string(),
                    holder: holder_of(&mut file),
                })
            }
            Err(TryLockError::Error(e)) => return Err(io_err(e)),
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(|_| ()))
            .and_then(|()| file.write_all(pid.as_bytes()))
            .and_then(|()| file.flush())
            .map_err(io_err)?;
        Ok(FolderLock {
            _file: file,
            dir: dir.to_path_buf(),
        })
    }

    /// The folder this lock holds.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Creates the run folder `dir` if missing; a path that is not a folder is refused in
/// words (`create_dir_all` says only "File exists").
fn make_folder(dir: &Path) -> Result<(), LockError> {
    let refuse = |what: &str| LockError::NotAFolder {
        dir: dir.display().to_string(),
        what: what.to_string(),
    };
    match (std::fs::metadata(dir), std::fs::symlink_metadata(dir)) {
        (Ok(m), _) if m.is_dir() => return Ok(()),
        (Ok(m), _) => return Err(refuse(crate::file_kind(&m))),
        (Err(_), Ok(m)) if m.file_type().is_symlink() => {
            return Err(refuse("a symbolic link to nothing"))
        }
        _ => {}
    }
    std::fs::create_dir_all(dir).map_err(|source| LockError::Io {
        path: dir.display().to_string(),
        source,
    })
}

/// The holder's pid as its lock file says, for the refusal's message. The holder may not
/// have written it yet (it locks, then writes), hence the fallback.
fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.take(32).read_to_string(&mut text));
    match read.ok().and(text.trim().parse::<u32>().ok()) {
        Some(pid) => format!("pid {pid}"),
        None => "pid not yet recorded".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("binio-lock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = temp_dir("second");
        let first = FolderLock::acquire(&dir).unwrap();
        assert_eq!(first.dir(), dir.as_path());
        // Locks are per open file description, so a second open in this process conflicts
        // just as another process's would.
        let err = FolderLock::acquire(&dir).unwrap_err().to_string();
        assert!(err.contains(&dir.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        let again = FolderLock::acquire(&dir).unwrap();
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_lock_file_is_refused_and_its_target_untouched() {
        use std::os::unix::fs::symlink;
        let root = temp_dir("linked");
        std::fs::create_dir_all(&root).unwrap();
        let outside = root.join("outside");
        std::fs::write(&outside, b"precious").unwrap();
        let run = root.join("run");
        std::fs::create_dir_all(&run).unwrap();
        // A link to a file, then a dangling one (the open would create its target).
        for target in [outside.clone(), root.join("made-elsewhere")] {
            let _ = std::fs::remove_file(run.join(LOCK_FILE));
            symlink(&target, run.join(LOCK_FILE)).unwrap();
            let err = FolderLock::acquire(&run).unwrap_err().to_string();
            assert!(
                err.contains(LOCK_FILE) && err.contains("symbolic link"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        assert!(!root.join("made-elsewhere").exists());
        std::fs::remove_file(run.join(LOCK_FILE)).unwrap();
        std::fs::hard_link(&outside, run.join(LOCK_FILE)).unwrap();
        let err = FolderLock::acquire(&run).unwrap_err().to_string();
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_is_not_a_folder() {
        let root = temp_dir("file");
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("f");
        std::fs::write(&file, b"x").unwrap();
        let err = FolderLock::acquire(&file).unwrap_err().to_string();
        assert!(
            err.contains("a regular file, not a folder") && err.contains("/f"),
            "{err}"
        );
        #[cfg(unix)]
        {
            let dangling = root.join("dangling");
            std::os::unix::fs::symlink(root.join("none"), &dangling).unwrap();
            let err = FolderLock::acquire(&dangling).unwrap_err().to_string();
            assert!(err.contains("a symbolic link to nothing"), "{err}");
            assert!(!root.join("none").exists());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_missing_folder_is_created() {
        let dir = temp_dir("created").join("a").join("b");
        let lock = FolderLock::acquire(&dir).unwrap();
        assert!(dir.join(LOCK_FILE).is_file());
        drop(lock);
        std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap()).unwrap();
    }
}
