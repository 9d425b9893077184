//! A run folder's own files and folders: what a run writes stays inside its folder.
//!
//! A run folder may hold what someone else put there: a symbolic link named like one of
//! its files (`metrics.jsonl -> ~/.bashrc`) or folders (`best -> /elsewhere`), or a hard
//! link to a file elsewhere. Whole files are written by rename ([`crate::write_bytes_atomic`]),
//! which replaces such a link rather than writing through it; what is opened to write in
//! place (the lock file, an appended log) and the folders a run writes into are checked
//! here, so nothing is ever written outside the folder.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// Opens `path` to write in place, never through a symbolic link (`O_NOFOLLOW`, so a link
/// planted between a check and the open is refused too), and only if it is a regular file
/// with one name: writing a hard link would change the file's other names. Never blocks (a
/// FIFO is refused, not waited on).
pub fn open_own(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    refuse_link(path)?;
    let not_a_file = |meta: &fs::Metadata| {
        let what = format!("it is {}, not a regular file", crate::file_kind(meta));
        not_own(io::ErrorKind::InvalidInput, &what)
    };
    let file = match options.open(path) {
        Ok(f) => f,
        // What stood in the way, said in words (a FIFO without a reader fails the open).
        Err(e) => match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => return Err(not_own(e.kind(), SYMLINK)),
            Ok(m) if !m.is_file() => return Err(not_a_file(&m)),
            _ => return Err(e),
        },
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file(&meta));
    }
    let names = link_count(&meta);
    if names > 1 {
        let what = format!("it has {names} names (hard links), and writing it would change the file under its other names");
        return Err(not_own(io::ErrorKind::InvalidInput, &what));
    }
    Ok(file)
}

/// Makes `path` a folder of the run's own: created if missing (its parent too), and if it
/// exists, a real folder, not a symbolic link to one elsewhere.
pub fn create_own_folder(path: &Path) -> io::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent)?;
            }
            match fs::create_dir(path) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Err(not_own(io::ErrorKind::InvalidInput, SYMLINK));
    }
    if !meta.is_dir() {
        let what = format!("it is {}, not a folder", crate::file_kind(&meta));
        return Err(not_own(io::ErrorKind::InvalidInput, &what));
    }
    Ok(())
}

/// Refuses `path` if it is a symbolic link (a missing path is fine): for a folder about to
/// be swept or a file about to be opened, whose link would lead out of the run folder.
pub fn refuse_link(path: &Path) -> io::Result<()> {
    match is_symlink(path) {
        true => Err(not_own(io::ErrorKind::InvalidInput, SYMLINK)),
        false => Ok(()),
    }
}

const SYMLINK: &str = "it is a symbolic link";

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn not_own(kind: io::ErrorKind, what: &str) -> io::Error {
    io::Error::new(
        kind,
        format!("{what}; a run folder is written only through its own files and folders, never through a link out of it: remove it, or choose another folder"),
    )
}

#[cfg(unix)]
fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_: &fs::Metadata) -> u64 {
    1
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    fn temp_dir(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("binio-own-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        p
    }

    fn append() -> OpenOptions {
        let mut o = OpenOptions::new();
        o.create(true).append(true);
        o
    }

    #[test]
    fn a_link_is_never_written_through() {
        let dir = temp_dir("links");
        let outside = dir.join("outside");
        fs::write(&outside, b"theirs").unwrap();
        let run = dir.join("run");
        fs::create_dir(&run).unwrap();
        // A link to a file, a dangling link (an open with O_CREAT would make its target),
        // a hard link, a FIFO.
        symlink(&outside, run.join("to-file")).unwrap();
        symlink(dir.join("nowhere"), run.join("dangling")).unwrap();
        fs::hard_link(&outside, run.join("hard")).unwrap();
        for (name, says) in [
            ("to-file", "symbolic link"),
            ("dangling", "symbolic link"),
            ("hard", "2 names"),
        ] {
            let e = open_own(&run.join(name), &mut append()).unwrap_err();
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
        let fifo = run.join("fifo");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            let e = open_own(&fifo, &mut append()).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
        assert_eq!(fs::read(&outside).unwrap(), b"theirs");
        assert!(!dir.join("nowhere").exists());
        // A file of its own opens, and is created when missing.
        let mut f = open_own(&run.join("own"), &mut append()).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(fs::read(run.join("own")).unwrap(), b"x");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_of_its_own_is_made_and_a_linked_one_refused() {
        let dir = temp_dir("folders");
        let elsewhere = dir.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let run = dir.join("run");
        create_own_folder(&run.join("best")).unwrap();
        create_own_folder(&run.join("best")).unwrap();
        assert!(run.join("best").is_dir());
        symlink(&elsewhere, run.join("games")).unwrap();
        let e = create_own_folder(&run.join("games")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(refuse_link(&run.join("games")).is_err());
        assert!(refuse_link(&run.join("best")).is_ok());
        assert!(refuse_link(&run.join("absent")).is_ok());
        fs::write(run.join("file"), b"x").unwrap();
        let e = create_own_folder(&run.join("file")).unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
