//! The one binary file format of the workspace, and the one atomic file write.
//!
//! A file is an 8-byte magic naming its kind (`b"MMZGAME\0"`, `b"MMZCKPT\0"`, ...), a
//! little-endian `u32` format version, then the bincode 2 (standard config) serde encoding
//! of one value, and nothing after it. Every writer goes through [`write_atomic`] or
//! [`write_bytes_atomic`], so a crash mid-write never leaves a half-written file under the
//! real name: readers see the old file or the new one.
//!
//! Decoding is bounded: bincode refuses a value whose decoded size would pass a limit
//! scaled to the payload (at most [`MAX_DECODED_BYTES`]), so a corrupt length field cannot
//! make a reader allocate without bound.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Magic (8 bytes) plus version (4 bytes).
pub const HEADER_LEN: usize = 12;

/// The most bytes bincode may account for while decoding one file (its in-memory sizes of
/// strings, sequences and numbers), whatever the file claims.
pub const MAX_DECODED_BYTES: usize = 1 << 30;

/// A problem reading or writing a binary file; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum BinError {
    #[error("{path}: no such file")]
    Missing { path: String },
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path}: cannot write: {source}")]
    Write { path: String, source: io::Error },
    #[error("{path}: not a {kind} file (bad magic: found {found})")]
    BadMagic {
        path: String,
        kind: String,
        found: String,
    },
    #[error("{path}: {kind} format version {found}, this build reads {expected}")]
    Version {
        path: String,
        kind: String,
        found: u32,
        expected: u32,
    },
    #[error("{path}: truncated or corrupt: {msg}")]
    Corrupt { path: String, msg: String },
    #[error("{path}: {extra} bytes of trailing garbage after the value (corrupt or not written by this build)")]
    Trailing { path: String, extra: usize },
    #[error("{path}: cannot encode the value: {msg}")]
    Encode { path: String, msg: String },
}

/// The kind a magic names, for messages: `MMZGAME` for `b"MMZGAME\0"`.
pub fn kind_name(magic: &[u8; 8]) -> String {
    let end = magic.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    show_bytes(&magic[..end])
}

/// Printable ASCII as a quoted string, anything else as hex, so a foreign file's first
/// bytes read well in an error message.
fn show_bytes(bytes: &[u8]) -> String {
    let text = bytes
        .iter()
        .all(|&b| b == 0 || b.is_ascii_graphic() || b == b' ');
    if text && !bytes.is_empty() {
        let s: String = bytes
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| b as char)
            .collect();
        format!("`{s}`")
    } else {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{}", hex.join(""))
    }
}

/// The header and encoding of `value`, as [`write_atomic`] would write them. `origin`
/// names the value in errors.
pub fn to_bytes<T: Serialize>(
    origin: &str,
    magic: &[u8; 8],
    version: u32,
    value: &T,
) -> Result<Vec<u8>, BinError> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    // The limit matters only when decoding; encoding uses the plain standard config.
    bincode::serde::encode_into_std_write(value, &mut out, bincode::config::standard()).map_err(
        |e| BinError::Encode {
            path: origin.to_string(),
            msg: e.to_string(),
        },
    )?;
    Ok(out)
}

/// Decodes bytes laid out as [`to_bytes`] writes them. `origin` (a path or a name) is what
/// the errors name.
pub fn from_bytes<T: DeserializeOwned>(
    origin: &str,
    bytes: &[u8],
    magic: &[u8; 8],
    version: u32,
) -> Result<T, BinError> {
    let path = || origin.to_string();
    let kind = kind_name(magic);
    let head = &bytes[..bytes.len().min(8)];
    if head != &magic[..head.len()] {
        return Err(BinError::BadMagic {
            path: path(),
            kind,
            found: show_bytes(head),
        });
    }
    if bytes.len() < HEADER_LEN {
        return Err(BinError::Corrupt {
            path: path(),
            msg: format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            ),
        });
    }
    let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if found != version {
        return Err(BinError::Version {
            path: path(),
            kind,
            found,
            expected: version,
        });
    }
    let payload = &bytes[HEADER_LEN..];
    let (value, used) = decode_bounded::<T>(payload).map_err(|e| BinError::Corrupt {
        path: path(),
        msg: e.to_string(),
    })?;
    if used != payload.len() {
        return Err(BinError::Trailing {
            path: path(),
            extra: payload.len() - used,
        });
    }
    Ok(value)
}

/// bincode's limit counts in-memory sizes (a 1-byte varint `u64` counts 8 bytes, a string
/// its length), so a valid value stays under 16x its encoding; the limit is the smallest
/// tier above that, which keeps a corrupt length in a small file from claiming a gigabyte.
fn decode_bounded<T: DeserializeOwned>(
    payload: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    use bincode::config::standard;
    use bincode::serde::decode_from_slice;
    let need = payload.len().saturating_mul(16);
    if need <= 1 << 20 {
        decode_from_slice(payload, standard().with_limit::<{ 1 << 20 }>())
    } else if need <= 1 << 24 {
        decode_from_slice(payload, standard().with_limit::<{ 1 << 24 }>())
    } else if need <= 1 << 28 {
        decode_from_slice(payload, standard().with_limit::<{ 1 << 28 }>())
    } else {
        decode_from_slice(payload, standard().with_limit::<MAX_DECODED_BYTES>())
    }
}

/// Writes `value` to `path` (magic, version, encoding), atomically.
pub fn write_atomic<T: Serialize>(
    path: &Path,
    magic: &[u8; 8],
    version: u32,
    value: &T,
) -> Result<(), BinError> {
    let bytes = to_bytes(&path.display().to_string(), magic, version, value)?;
    write_bytes_atomic(path, &bytes)
}

/// Reads a value written by [`write_atomic`] with the same magic and version.
pub fn read<T: DeserializeOwned>(
    path: &Path,
    magic: &[u8; 8],
    version: u32,
) -> Result<T, BinError> {
    let shown = path.display().to_string();
    let mut file = File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => BinError::Missing {
            path: shown.clone(),
        },
        _ => BinError::Read {
            path: shown.clone(),
            source,
        },
    })?;
    // The header first, so a large foreign file is refused without reading it whole.
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    let read_err = |source| BinError::Read {
        path: shown.clone(),
        source,
    };
    (&mut file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() == HEADER_LEN && bytes[..8] == magic[..] {
        file.read_to_end(&mut bytes).map_err(read_err)?;
    }
    from_bytes(&shown, &bytes, magic, version)
}

/// Distinguishes the temporary files of concurrent writers in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsynced, then
/// renamed over `path`. On any error the old file (if any) is untouched and the temporary
/// file is removed.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), BinError> {
    let shown = path.display().to_string();
    let werr = |source| BinError::Write {
        path: shown.clone(),
        source,
    };
    let name = path.file_name().ok_or_else(|| {
        werr(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file",
        ))
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(
        ".tmp.{}.{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = dir.join(temp_name);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&temp, path)
    })();
    if let Err(e) = result {
        // Best effort: the temporary file may not exist (the open failed).
        let _ = fs::remove_file(&temp);
        return Err(werr(e));
    }
    // Make the rename itself durable. Not every platform can open or sync a folder, and the
    // new file is complete either way, so a failure here is not an error.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    const MAGIC: &[u8; 8] = b"MMZTEST\0";

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Value {
        name: String,
        xs: Vec<f64>,
        ids: Vec<u32>,
        extra: Option<Vec<String>>,
    }

    fn value() -> Value {
        Value {
            name: "resnet50".into(),
            xs: vec![0.25, -1e-300, f64::MAX, 3.0],
            ids: vec![0, 1, 300, 70_000],
            extra: Some(vec!["a".into(), String::new()]),
        }
    }

    /// A fresh folder under the system temp dir, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let p = std::env::temp_dir().join(format!("binio-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = TempDir::new("round-trip");
        let path = dir.0.join("v.bin");
        write_atomic(&path, MAGIC, 3, &value()).unwrap();
        let back: Value = read(&path, MAGIC, 3).unwrap();
        assert_eq!(back, value());
        // Overwriting replaces the value and leaves no temporary file behind.
        let mut v2 = value();
        v2.ids.clear();
        write_atomic(&path, MAGIC, 3, &v2).unwrap();
        assert_eq!(read::<Value>(&path, MAGIC, 3).unwrap(), v2);
        let names: Vec<_> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("v.bin")]);
    }

    #[test]
    fn header_is_magic_then_le_version() {
        let b = to_bytes("x", MAGIC, 0x0102_0304, &value()).unwrap();
        assert_eq!(&b[..8], MAGIC);
        assert_eq!(&b[8..12], &[4, 3, 2, 1]);
    }

    #[test]
    fn missing_file_is_named() {
        let e = read::<Value>(Path::new("/nonexistent/dir/game.bin"), MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::Missing { .. }));
        assert_eq!(e.to_string(), "/nonexistent/dir/game.bin: no such file");
    }

    #[test]
    fn foreign_file_is_bad_magic() {
        let dir = TempDir::new("foreign");
        let path = dir.0.join("f.json");
        fs::write(&path, b"{\"name\": \"resnet50\"}").unwrap();
        let e = read::<Value>(&path, MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::BadMagic { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("not a `MMZTEST` file (bad magic"), "{msg}");
        assert!(msg.contains("f.json"), "{msg}");
        // Another kind of our own files is refused the same way.
        let other = to_bytes("x", b"MMZCKPT\0", 1, &value()).unwrap();
        let e = from_bytes::<Value>("ck", &other, MAGIC, 1).unwrap_err();
        assert!(e.to_string().contains("found `MMZCKPT`"), "{e}");
        // Binary junk shows as hex.
        let e = from_bytes::<Value>("j", &[0xff, 0, 1], MAGIC, 1).unwrap_err();
        assert!(e.to_string().contains("0xff0001"), "{e}");
    }

    #[test]
    fn other_version_is_refused() {
        let b = to_bytes("x", MAGIC, 2, &value()).unwrap();
        let e = from_bytes::<Value>("old.bin", &b, MAGIC, 3).unwrap_err();
        assert!(matches!(
            e,
            BinError::Version {
                found: 2,
                expected: 3,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "old.bin: `MMZTEST` format version 2, this build reads 3"
        );
    }

    #[test]
    fn every_truncation_is_an_error() {
        let b = to_bytes("x", MAGIC, 1, &value()).unwrap();
        for len in 0..b.len() {
            let e = from_bytes::<Value>("t.bin", &b[..len], MAGIC, 1).unwrap_err();
            assert!(matches!(e, BinError::Corrupt { .. }), "length {len}: {e}");
            assert!(
                e.to_string().starts_with("t.bin: truncated or corrupt"),
                "{e}"
            );
        }
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        let mut b = to_bytes("x", MAGIC, 1, &value()).unwrap();
        b.extend_from_slice(&[0, 0, 7]);
        let e = from_bytes::<Value>("g.bin", &b, MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::Trailing { extra: 3, .. }), "{e}");
    }

    #[test]
    fn corrupt_bytes_never_panic() {
        // Every byte of the payload set to each of a few values that matter to varints
        // (length markers 251..=254, 0xff) and to enums/options: an error or some value,
        // never a panic or an unbounded allocation.
        let b = to_bytes("x", MAGIC, 1, &value()).unwrap();
        let mut errors = 0;
        for i in HEADER_LEN..b.len() {
            for v in [0u8, 1, 2, 0x7f, 0x80, 250, 251, 252, 253, 254, 255] {
                let mut c = b.clone();
                c[i] = v;
                if from_bytes::<Value>("c.bin", &c, MAGIC, 1).is_err() {
                    errors += 1;
                }
            }
        }
        assert!(errors > 0);
        // A length that claims more than the limit is refused before allocating.
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&1u32.to_le_bytes());
        huge.push(253); // u64 length follows
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        let e = from_bytes::<Value>("h.bin", &huge, MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::Corrupt { .. }), "{e}");
    }

    #[test]
    fn failed_write_keeps_the_old_file() {
        let dir = TempDir::new("failed-write");
        let path = dir.0.join("keep.bin");
        write_atomic(&path, MAGIC, 1, &value()).unwrap();
        let before = fs::read(&path).unwrap();
        // A folder cannot be replaced by a file: the rename fails after the temporary file
        // was written, and the temporary file must go away.
        let blocked = dir.0.join("sub");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("x"), b"x").unwrap();
        let e = write_atomic(&blocked, MAGIC, 1, &value()).unwrap_err();
        assert!(matches!(e, BinError::Write { .. }), "{e}");
        // A folder that does not exist: an error naming the path.
        let e = write_bytes_atomic(&dir.0.join("no/such/dir/keep.bin"), b"new").unwrap_err();
        assert!(
            e.to_string().contains("no/such/dir/keep.bin: cannot write"),
            "{e}"
        );
        assert_eq!(fs::read(&path).unwrap(), before);
        let mut names: Vec<_> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec!["keep.bin", "sub"]);
    }

    #[test]
    fn kind_names_drop_the_padding() {
        assert_eq!(kind_name(b"MMZGAME\0"), "`MMZGAME`");
        assert_eq!(kind_name(b"ABCDEFGH"), "`ABCDEFGH`");
    }
}
