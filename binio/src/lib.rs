//! The one binary file format of the workspace, the one atomic file write, and the JSON
//! files of run folders ([`json`]).
//!
//! A file is an 8-byte magic naming its kind (`b"MMZGAME\0"`, `b"MMZCKPT\0"`, ...), a
//! little-endian `u32` format version, the bincode 2 (standard config) serde encoding of
//! one
//! value, and a little-endian `u64` FNV-1a checksum of everything before it. The checksum
//! is
//! there because a flipped byte inside a bincode payload usually still decodes (as another
//! number), and a training run resumed from such a file would blame training for it. Every
//! writer goes through [`write_atomic`] or
//! [`write_bytes_atomic`], so a crash mid-write never leaves a half-written file under the
//! real name: readers see the old file or the new one.
//!
//! Decoding is bounded: bincode refuses a value whose decoded size would pass a limit
//! scaled to the payload (at most [`MAX_DECODED_BYTES`]), so a corrupt length field cannot
//! make a reader allocate without bound.

#![warn(missing_docs)]

mod error;
pub mod json;
mod kind;
mod lock;
mod own;

use error::show_bytes;
pub use error::{kind_name, BinError};
pub use kind::{
    check_folder_kind, claim_folder, folder_kind, FolderKind, FoundKind, KindError, Purpose,
    KIND_FILE,
};
pub use lock::{FolderLock, LockError, LOCK_FILE};
pub use own::{create_own_folder, open_own, refuse_link};

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Magic (8 bytes) plus version (4 bytes).
pub const HEADER_LEN: usize = 12;

/// The checksum after the payload.
pub const CHECKSUM_LEN: usize = 8;

/// The largest binary file [`read`] accepts: more is not a file this workspace wrote (or a
/// device such as `/dev/zero` behind a link), and reading it would exhaust memory.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// The most bytes bincode may account for while decoding one file (its in-memory sizes of
/// strings, sequences and numbers), whatever the file claims.
pub const MAX_DECODED_BYTES: usize = 1 << 30;

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
    let sum = fnv1a64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The 64-bit FNV-1a hash of `bytes`: the files' checksum, and a content hash where no
/// adversary is involved.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv64::new();
    h.write(bytes);
    h.finish()
}

/// FNV-1a over bytes written in pieces.
#[derive(Clone, Debug)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64::new()
    }
}

impl Fnv64 {
    /// The hash of no bytes (FNV-1a's offset basis).
    pub fn new() -> Fnv64 {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    /// Mixes `bytes` into the hash, in order.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash of every byte written so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
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
    let corrupt = |msg: String| BinError::Corrupt { path: path(), msg };
    if bytes.len() < HEADER_LEN + CHECKSUM_LEN {
        return Err(corrupt(format!(
            "{} bytes, too short to hold a value and its checksum",
            bytes.len()
        )));
    }
    let (body, tail) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    let stored = u64::from_le_bytes(tail.try_into().unwrap_or([0; 8]));
    if stored != fnv1a64(body) {
        return Err(corrupt(
            "checksum mismatch: the file was truncated, damaged or edited after it was written"
                .into(),
        ));
    }
    let payload = &body[HEADER_LEN..];
    let (value, used) =
        decode_bounded::<T>(payload).map_err(|e| corrupt(decode_error_in_words(&e, &kind)))?;
    if used != payload.len() {
        return Err(BinError::Trailing {
            path: path(),
            extra: payload.len() - used,
        });
    }
    Ok(value)
}

/// A decoder error as a user can act on it (bincode's own text names its internals).
fn decode_error_in_words(e: &bincode::error::DecodeError, kind: &str) -> String {
    use bincode::error::DecodeError as D;
    match e {
        D::UnexpectedEnd { .. } => "the data ends before the value does".into(),
        D::LimitExceeded => {
            "a length inside the file claims more data than any valid file holds".into()
        }
        D::Utf8 { .. } => "a text field is not valid UTF-8".into(),
        _ => format!("its contents are not a {kind} value of this format version"),
    }
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
    if let Ok(meta) = file.metadata() {
        if meta.is_file() && meta.len() > MAX_FILE_BYTES {
            return Err(BinError::TooLarge {
                path: shown,
                limit: MAX_FILE_BYTES,
            });
        }
    }
    // The header first, so a large foreign file is refused without reading it whole; the
    // rest under the cap, for what has no length (a pipe, a device).
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
        (&mut file)
            .take(MAX_FILE_BYTES + 1 - HEADER_LEN as u64)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(BinError::TooLarge {
                path: shown,
                limit: MAX_FILE_BYTES,
            });
        }
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
    refuse_special_target(path).map_err(werr)?;
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

/// Refuses to replace what is not a regular file: a rename over a FIFO, a device node or
/// a folder the user named would turn it into a plain file (or fail late, after the work).
fn refuse_special_target(path: &Path) -> io::Result<()> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        // A dangling link or an unreadable parent: the write itself says what is wrong.
        Err(_) => return Ok(()),
    };
    if meta.is_file() {
        return Ok(());
    }
    let what = file_kind(&meta);
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file; name a file to write"),
    ))
}

/// What a file is, in words (`a folder`, `a FIFO`, ...), for messages.
#[cfg(unix)]
pub(crate) fn file_kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
pub(crate) fn file_kind(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Whether `name` is a temporary file of [`write_bytes_atomic`]'s (`.NAME.tmp.PID.N`).
pub fn is_temp_file_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp.")
}

/// Removes the temporary files that atomic writes killed mid-write left in `dir` (not in
/// its subfolders); returns how many. Only the folder's one writer may call it (see
/// [`FolderLock`]): another writer's temporary file is still being written.
pub fn remove_temp_files(dir: &Path) -> Result<usize, BinError> {
    let err = |source| BinError::Write {
        path: dir.display().to_string(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(err)?;
        let name = entry.file_name().to_string_lossy().to_string();
        if is_temp_file_name(&name) && entry.file_type().is_ok_and(|t| t.is_file()) {
            let path = entry.path();
            fs::remove_file(&path).map_err(|source| BinError::Write {
                path: path.display().to_string(),
                source,
            })?;
            removed += 1;
        }
    }
    Ok(removed)
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
        assert!(matches!(e, BinError::Corrupt { .. }), "{e}");
        // Garbage inside the checksummed part (written by a buggy writer) is still named.
        let mut raw = to_bytes("x", MAGIC, 1, &value()).unwrap();
        raw.truncate(raw.len() - CHECKSUM_LEN);
        raw.extend_from_slice(&[0, 0, 7]);
        let sum = fnv1a64(&raw);
        raw.extend_from_slice(&sum.to_le_bytes());
        let e = from_bytes::<Value>("g.bin", &raw, MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::Trailing { extra: 3, .. }), "{e}");
    }

    #[test]
    fn every_flipped_bit_is_caught_by_the_checksum() {
        let b = to_bytes("x", MAGIC, 1, &value()).unwrap();
        for i in HEADER_LEN..b.len() {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                let e = from_bytes::<Value>("f.bin", &c, MAGIC, 1).unwrap_err();
                assert!(e.to_string().contains("checksum mismatch"), "byte {i}: {e}");
            }
        }
    }

    #[test]
    fn decoder_errors_are_said_in_words() {
        // A value of another shape under the right magic, version and checksum.
        let b = to_bytes("x", MAGIC, 1, &(3u8, 4u8)).unwrap();
        let e = from_bytes::<Value>("w.bin", &b, MAGIC, 1).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("w.bin: truncated or corrupt: "), "{msg}");
        assert!(!msg.contains('{') && !msg.contains("Unexpected"), "{msg}");
    }

    #[test]
    fn an_endless_file_is_refused_without_reading_it_all() {
        // A link to /dev/zero is refused at the magic; a file with the right magic and no
        // end is what the size cap is for: here a FIFO-free stand-in, a sparse file.
        let dir = TempDir::new("endless");
        let path = dir.0.join("big.bin");
        let f = File::create(&path).unwrap();
        f.set_len(MAX_FILE_BYTES + 16).unwrap();
        drop(f);
        let mut head = OpenOptions::new().write(true).open(&path).unwrap();
        head.write_all(MAGIC).unwrap();
        head.write_all(&1u32.to_le_bytes()).unwrap();
        drop(head);
        let e = read::<Value>(&path, MAGIC, 1).unwrap_err();
        assert!(matches!(e, BinError::TooLarge { .. }), "{e}");
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
        // A length that claims more than the limit is refused before allocating (a file
        // whose checksum was recomputed, so the decoder sees it).
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&1u32.to_le_bytes());
        huge.push(253); // u64 length follows
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        let sum = fnv1a64(&huge);
        huge.extend_from_slice(&sum.to_le_bytes());
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

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_never_replaced() {
        let dir = TempDir::new("special");
        let fifo = dir.0.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = write_bytes_atomic(&fifo, b"x").unwrap_err().to_string();
            assert!(
                e.contains("pipe") && e.contains("a FIFO, not a regular file"),
                "{e}"
            );
            use std::os::unix::fs::FileTypeExt;
            assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        }
        // /dev/null as root would be replaced by a file: the check comes before the write.
        let e = write_bytes_atomic(Path::new("/dev/null"), b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/null") && e.contains("a device"), "{e}");
        let names: Vec<_> = fs::read_dir(&dir.0).unwrap().collect();
        assert_eq!(
            names.len(),
            usize::from(fifo.exists()),
            "no temporary file left"
        );
    }

    #[test]
    fn temporary_files_are_swept_and_nothing_else() {
        let dir = TempDir::new("sweep");
        for name in [
            ".results.json.tmp.42.0",
            ".x.tmp.1.2",
            "results.json",
            ".hidden",
        ] {
            fs::write(dir.0.join(name), b"x").unwrap();
        }
        fs::create_dir(dir.0.join(".d.tmp.1.1")).unwrap();
        assert_eq!(remove_temp_files(&dir.0).unwrap(), 2);
        let mut names: Vec<_> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec![".d.tmp.1.1", ".hidden", "results.json"]);
        assert_eq!(remove_temp_files(&dir.0.join("absent")).unwrap(), 0);
    }
}
