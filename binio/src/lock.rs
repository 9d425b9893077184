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
    #[error("{dir}: in use by another process ({holder}); one process writes a run folder at a time: wait for it to end, stop it, or choose another folder")]
    Held { dir: String, holder: String },
    #[error("{path}: cannot lock the folder: {source}")]
    Io {
        path: String,
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
    /// Never waits: a second writer is refused before it spends anything.
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io_err = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|source| LockError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        // Not truncated on open: the holder's pid stays readable to the one refused.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err)?;
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

    #[test]
    fn a_missing_folder_is_created() {
        let dir = temp_dir("created").join("a").join("b");
        let lock = FolderLock::acquire(&dir).unwrap();
        assert!(dir.join(LOCK_FILE).is_file());
        drop(lock);
        std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap()).unwrap();
    }
}
