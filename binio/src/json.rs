//! The JSON files of a run folder (`run.json`, `checkpoints/latest.json`,
//! `best/summary.json`, `metrics.jsonl`), shared by every trainer of the workspace (the
//! agent's and EGRL's), so they are written and read one way: whole files atomically and
//! pretty-printed, lines appended in one write, and every error naming the file.

use crate::{write_bytes_atomic, BinError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{Read, Write};
use std::path::Path;

/// The largest JSON file [`read_json`] accepts: a run folder's JSON files are small, and a
/// link to a device or a huge file must not fill memory.
pub const MAX_JSON_BYTES: u64 = 512 << 20;

/// Writes `value` to `path` as pretty-printed JSON, atomically ([`write_bytes_atomic`]).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), BinError> {
    let text = serde_json::to_string_pretty(value).map_err(json_error(path))?;
    write_bytes_atomic(path, text.as_bytes())
}

/// Reads the JSON file at `path` (at most [`MAX_JSON_BYTES`], a leading byte-order mark
/// skipped: an editor may have added one).
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, BinError> {
    let bytes = read_capped(path)?;
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    serde_json::from_slice(body).map_err(json_error(path))
}

/// Appends `value` as one line to the JSON-lines file at `path` (created if missing) in one
/// write, so a kill leaves at most a cut last line, which readers skip. The file is the run
/// folder's own ([`crate::open_own`]): a link in its place is refused, not written through.
pub fn append_json_line<T: Serialize>(path: &Path, value: &T) -> Result<(), BinError> {
    let mut line = serde_json::to_string(value).map_err(json_error(path))?;
    line.push('\n');
    let werr = |source| BinError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    let mut f = crate::open_own(path, &mut options).map_err(werr)?;
    f.write_all(line.as_bytes()).map_err(werr)
}

/// Writes `values` as the JSON-lines file at `path`, atomically.
pub fn write_json_lines<'a, T: Serialize + 'a>(
    path: &Path,
    values: impl IntoIterator<Item = &'a T>,
) -> Result<(), BinError> {
    let mut text = String::new();
    for v in values {
        text += &serde_json::to_string(v).map_err(json_error(path))?;
        text.push('\n');
    }
    write_bytes_atomic(path, text.as_bytes())
}

fn read_capped(path: &Path) -> Result<Vec<u8>, BinError> {
    let shown = || path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // A FIFO in a file's place would block the open until someone writes it.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => BinError::Missing { path: shown() },
        _ => BinError::Read {
            path: shown(),
            source,
        },
    })?;
    let too_large = || BinError::TooLarge {
        path: shown(),
        limit: MAX_JSON_BYTES,
    };
    let meta = file.metadata().map_err(|source| BinError::Read {
        path: shown(),
        source,
    })?;
    if !meta.is_file() {
        let what = format!("it is {}, not a regular file", crate::file_kind(&meta));
        return Err(BinError::Read {
            path: shown(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
        });
    }
    if meta.len() > MAX_JSON_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_JSON_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| BinError::Read {
            path: shown(),
            source,
        })?;
    if bytes.len() as u64 > MAX_JSON_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

fn json_error(path: &Path) -> impl FnOnce(serde_json::Error) -> BinError + '_ {
    move |source| BinError::Json {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_and_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("binio-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.json");
        write_json(&path, &vec![1u32, 2]).unwrap();
        assert_eq!(read_json::<Vec<u32>>(&path).unwrap(), [1, 2]);
        let err = read_json::<String>(&path).unwrap_err().to_string();
        assert!(err.contains("a.json"), "{err}");
        let missing = read_json::<u32>(&dir.join("none.json")).unwrap_err();
        assert!(matches!(missing, BinError::Missing { .. }), "{missing}");
        let lines = dir.join("m.jsonl");
        append_json_line(&lines, &1u32).unwrap();
        append_json_line(&lines, &2u32).unwrap();
        assert_eq!(std::fs::read_to_string(&lines).unwrap(), "1\n2\n");
        write_json_lines(&lines, &[3u32]).unwrap();
        assert_eq!(std::fs::read_to_string(&lines).unwrap(), "3\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A run folder's JSON files never lead a write out of it: a link in a whole file's
    /// place is replaced (the rename), one in an appended file's place refused; and a FIFO
    /// in a file's place is an error, not a wait.
    #[cfg(unix)]
    #[test]
    fn links_in_a_run_folder_are_replaced_or_refused_never_followed() {
        use std::os::unix::fs::symlink;
        let dir = std::env::temp_dir().join(format!("binio-json-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let outside = dir.join("outside.txt");
        std::fs::write(&outside, b"theirs").unwrap();
        let whole = dir.join("run.json");
        symlink(&outside, &whole).unwrap();
        write_json(&whole, &7u32).unwrap();
        assert!(!std::fs::symlink_metadata(&whole)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(read_json::<u32>(&whole).unwrap(), 7);
        let appended = dir.join("metrics.jsonl");
        symlink(&outside, &appended).unwrap();
        let e = append_json_line(&appended, &1u32).unwrap_err().to_string();
        assert!(
            e.contains("metrics.jsonl") && e.contains("symbolic link"),
            "{e}"
        );
        assert_eq!(std::fs::read(&outside).unwrap(), b"theirs");
        let fifo = dir.join("fifo.json");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            let e = read_json::<u32>(&fifo).unwrap_err().to_string();
            assert!(e.contains("a FIFO, not a regular file"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
