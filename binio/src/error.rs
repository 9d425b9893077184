//! [`BinError`]: what can go wrong reading or writing a binary file, each naming the file.

use std::io;

/// A problem reading or writing a binary file; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum BinError {
    /// The file does not exist.
    #[error("{path}: no such file")]
    Missing {
        /// The file asked for.
        path: String,
    },
    /// The file exists but reading it failed (permissions, a device error).
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file being read.
        path: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// Writing the file (or its temporary sibling, or the rename over it) failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// The file being written.
        path: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The file's first eight bytes are not the magic of the kind expected: another kind of
    /// file, or not one of ours.
    #[error("{path}: not a {kind} file (bad magic: found {found})")]
    BadMagic {
        /// The file read.
        path: String,
        /// The kind expected (`MMZGAME`, ...).
        kind: String,
        /// The first bytes found instead, printable or as hex.
        found: String,
    },
    /// The file is of the right kind but of a format version this build does not read.
    #[error("{path}: {kind} format version {found}, this build reads {expected}")]
    Version {
        /// The file read.
        path: String,
        /// The file's kind.
        kind: String,
        /// The version the file says it is.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The file is larger than [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES): not a file this workspace wrote, and
    /// reading it would exhaust memory.
    #[error(
        "{path}: larger than the {limit}-byte limit of binary files (not a file this tool wrote?)"
    )]
    TooLarge {
        /// The file refused.
        path: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The checksum does not match, the header is cut short, or the payload does not
    /// decode.
    #[error("{path}: truncated or corrupt: {msg}")]
    Corrupt {
        /// The file read.
        path: String,
        /// Which of those, in words.
        msg: String,
    },
    /// The value decoded but bytes are left after it.
    #[error("{path}: {extra} bytes of trailing garbage after the value (corrupt or not written by this build)")]
    Trailing {
        /// The file read.
        path: String,
        /// How many bytes were left.
        extra: usize,
    },
    /// The value could not be encoded (a value serde cannot write; a bug, not a file
    /// problem).
    #[error("{path}: cannot encode the value: {msg}")]
    Encode {
        /// The file it was for.
        path: String,
        /// The encoder's message.
        msg: String,
    },
    /// A JSON file ([`json`](crate::json)) that does not parse as what it should hold.
    #[error("{path}: {source}")]
    Json {
        /// The file read.
        path: String,
        /// The parser's message, with its line and column.
        #[source]
        source: serde_json::Error,
    },
}

/// The kind a magic names, for messages: `MMZGAME` for `b"MMZGAME\0"`.
pub fn kind_name(magic: &[u8; 8]) -> String {
    let end = magic.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    show_bytes(&magic[..end])
}

/// Printable ASCII as a quoted string, anything else as hex, so a foreign file's first
/// bytes read well in an error message.
pub(crate) fn show_bytes(bytes: &[u8]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_drop_the_padding() {
        assert_eq!(kind_name(b"MMZGAME\0"), "`MMZGAME`");
        assert_eq!(kind_name(b"ABCDEFGH"), "`ABCDEFGH`");
    }
}
