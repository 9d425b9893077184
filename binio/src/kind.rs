//! What kind of run folder a folder is: a training run's (`train`), an EGRL run's
//! (`train-egrl`) or a race's (`race --out`). Each command writes only into a folder of its
//! own kind or a new one, so that one never mixes its files into another's.
//!
//! A folder says its kind in [`KIND_FILE`], written when a command first takes it. A
//! folder written before that file existed is known by what it holds (see
//! [`folder_kind`]), and gets the file the next time its own command opens it.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// The file inside a run folder that names its kind (one word and a newline).
pub const KIND_FILE: &str = ".mallocmuzero.kind";

/// The most of [`KIND_FILE`] read: one word.
const KIND_FILE_MAX: u64 = 64;

/// The most of an older folder's `run.json` read to tell a training run from an EGRL run:
/// far more than either writes, and a link to a device cannot fill memory.
const RUN_JSON_MAX: u64 = 16 << 20;

/// A kind of run folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolderKind {
    /// `mallocmuzero train`'s run folder.
    Training,
    /// `mallocmuzero train-egrl`'s run folder.
    Egrl,
    /// `mallocmuzero race --out`'s folder.
    Race,
}

impl FolderKind {
    const ALL: [FolderKind; 3] = [FolderKind::Training, FolderKind::Egrl, FolderKind::Race];

    /// The word [`KIND_FILE`] holds: the command that writes such a folder.
    pub fn word(self) -> &'static str {
        match self {
            FolderKind::Training => "train",
            FolderKind::Egrl => "train-egrl",
            FolderKind::Race => "race",
        }
    }

    fn from_word(word: &str) -> Option<FolderKind> {
        FolderKind::ALL.into_iter().find(|k| k.word() == word)
    }

    /// The folder in words: `a training run folder`.
    pub fn noun(self) -> &'static str {
        match self {
            FolderKind::Training => "a training run folder",
            FolderKind::Egrl => "an EGRL run folder",
            FolderKind::Race => "a race folder",
        }
    }

    /// The command that writes it, as a user types it.
    fn command(self) -> &'static str {
        match self {
            FolderKind::Training => "`mallocmuzero train`",
            FolderKind::Egrl => "`mallocmuzero train-egrl`",
            FolderKind::Race => "`mallocmuzero race --out`",
        }
    }

    /// How the run in folder `dir` of this kind goes on.
    fn continued(self, dir: &str) -> String {
        match self {
            FolderKind::Training => format!("continue it with `mallocmuzero train --resume {dir}`"),
            FolderKind::Egrl => {
                format!("continue it with `mallocmuzero train-egrl --resume {dir}`")
            }
            FolderKind::Race => "continue it by running its race into it again".to_string(),
        }
    }
}

/// A folder's kind and what told it: the kind file, or a file only that kind writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundKind {
    /// The kind of run the folder holds.
    pub kind: FolderKind,
    /// The file that says so (`results.json`, `.mallocmuzero.kind`, ...).
    pub evidence: String,
}

impl fmt::Display for FoundKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind.noun(), self.evidence)
    }
}

/// Why a folder is not one a command may write.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// The folder holds another kind of run than the command writes: a training run given
    /// to a race, say.
    #[error("{dir} is {found}, made by {} ({}); {}: choose another folder", .found.kind.command(), .found.kind.continued(.dir), .purpose.rule(*.want))]
    Other {
        /// The folder.
        dir: String,
        /// The kind it holds, and the file that says so.
        found: FoundKind,
        /// The kind the command wanted.
        want: FolderKind,
        /// What the command meant to do with the folder, for the refusal's words.
        purpose: Purpose,
    },
    /// The path names a file (or something else) that is not a folder.
    #[error("{dir}: it is {what}, not a folder: a run folder is a folder (a new one, or one of a run); choose another")]
    NotAFolder {
        /// The path given.
        dir: String,
        /// What it is instead (`a file`, ...).
        what: String,
    },
    /// The folder holds the files of two or more kinds of run: no command may write it.
    #[error("{dir} holds the files of more than one kind of run: {}; no command writes into it: choose another folder", join(.found))]
    Mixed {
        /// The folder.
        dir: String,
        /// Each kind found, with its evidence.
        found: Vec<FoundKind>,
    },
    /// The kind file names a kind this build does not know (written by a newer build, or by
    /// hand).
    #[error("{path}: names the folder kind `{word}`, which this build does not know (it knows train, train-egrl, race)")]
    Unknown {
        /// The kind file.
        path: String,
        /// The kind it names.
        word: String,
    },
    /// Reading the folder's kind file, or listing the folder, failed.
    #[error("{path}: cannot read the folder's kind: {source}")]
    Io {
        /// The file or folder being read.
        path: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// Writing the kind file failed.
    #[error(transparent)]
    Write(#[from] crate::BinError),
}

/// What a command does with a folder, for the refusal's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// It writes there (`--out`, `--resume`).
    Write,
    /// It only reads a run there (`evaluate --checkpoint`, `train --init`).
    Read,
}

impl Purpose {
    fn rule(self, want: FolderKind) -> String {
        match self {
            Purpose::Write => format!(
                "{} writes only into {} or a new folder",
                want.command(),
                want.noun()
            ),
            Purpose::Read => format!("what is read here is {}", want.noun()),
        }
    }
}

fn join(found: &[FoundKind]) -> String {
    let parts: Vec<String> = found.iter().map(|f| f.to_string()).collect();
    parts.join(" and ")
}

/// The kind of the folder `dir`, or `None` for a folder that holds no run (missing, empty,
/// or only files of the user's). The kind file decides; a folder without one (written
/// before it existed) is known by the files only its kind writes: `results.json` (a race),
/// `checkpoint.bin` or a `run.json` of format `egrl-run` (EGRL), `checkpoints/` or any
/// other `run.json` (training). Files of more than one kind are an error naming them.
pub fn folder_kind(dir: &Path) -> Result<Option<FoundKind>, KindError> {
    if let Ok(meta) = fs::metadata(dir) {
        if !meta.is_dir() {
            return Err(KindError::NotAFolder {
                dir: dir.display().to_string(),
                what: crate::file_kind(&meta).to_string(),
            });
        }
    }
    let marker = dir.join(KIND_FILE);
    if let Some(word) = read_small(&marker, KIND_FILE_MAX)? {
        let word = String::from_utf8_lossy(&word).trim().to_string();
        let kind = FolderKind::from_word(&word).ok_or_else(|| KindError::Unknown {
            path: marker.display().to_string(),
            word: word.chars().take(40).collect(),
        })?;
        // A folder a command took and left with nothing in it (it failed at once) holds
        // no run: any command may take it.
        if holds_only_our_markers(dir)? {
            return Ok(None);
        }
        return Ok(Some(FoundKind {
            kind,
            evidence: KIND_FILE.to_string(),
        }));
    }
    let mut found: Vec<FoundKind> = Vec::new();
    let mut saw = |kind, evidence: &str| {
        if !found.iter().any(|f| f.kind == kind) {
            found.push(FoundKind {
                kind,
                evidence: evidence.to_string(),
            });
        }
    };
    let is = |name: &str, dir_wanted: bool| {
        fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_dir() == dir_wanted)
    };
    if is("results.json", false) {
        saw(FolderKind::Race, "results.json");
    }
    if let Some(text) = read_small(&dir.join("run.json"), RUN_JSON_MAX)? {
        match serde_json::from_slice::<serde_json::Value>(&text) {
            Ok(v) if v.get("format").and_then(|f| f.as_str()) == Some("egrl-run") => {
                saw(FolderKind::Egrl, "run.json of format egrl-run")
            }
            Ok(_) => saw(FolderKind::Training, "run.json"),
            // Unreadable: the other files tell, or the command's own reading says what
            // is wrong with it.
            Err(_) => {}
        }
    }
    if is("checkpoint.bin", false) {
        saw(FolderKind::Egrl, "checkpoint.bin");
    }
    if is("checkpoints", true) {
        saw(FolderKind::Training, "checkpoints/");
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(KindError::Mixed {
            dir: dir.display().to_string(),
            found,
        }),
    }
}

/// Refuses `dir` if it holds a run of another kind than `want` (a folder of no run is
/// anyone's), or is not a folder. Reads only: called before a command locks or creates
/// anything, and by a command that only reads a run (`purpose`).
pub fn check_folder_kind(dir: &Path, want: FolderKind, purpose: Purpose) -> Result<(), KindError> {
    match folder_kind(dir)? {
        Some(found) if found.kind != want => Err(KindError::Other {
            dir: dir.display().to_string(),
            found,
            want,
            purpose,
        }),
        _ => Ok(()),
    }
}

/// [`check_folder_kind`], then the folder's kind file written if it has none (a new
/// folder, or one of an older build): the command now owns it. Called by the folder's one
/// writer, under its lock ([`crate::FolderLock`]).
pub fn claim_folder(dir: &Path, want: FolderKind) -> Result<(), KindError> {
    let found = folder_kind(dir)?;
    if let Some(found) = &found {
        if found.kind != want {
            return Err(KindError::Other {
                dir: dir.display().to_string(),
                found: found.clone(),
                want,
                purpose: Purpose::Write,
            });
        }
        if found.evidence == KIND_FILE {
            return Ok(());
        }
    }
    let text = format!("{}\n", want.word());
    crate::write_bytes_atomic(&dir.join(KIND_FILE), text.as_bytes())?;
    Ok(())
}

/// Whether `dir` holds nothing but the lock file and the kind file.
fn holds_only_our_markers(dir: &Path) -> Result<bool, KindError> {
    let entries = fs::read_dir(dir).map_err(|source| KindError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for e in entries {
        let e = e.map_err(|source| KindError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let name = e.file_name();
        if name != KIND_FILE && name != crate::LOCK_FILE {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first `max` bytes of the regular file at `path`, or `None` if there is none. A link
/// is read through (reading leaves nothing outside the folder), but what is not a regular
/// file (a FIFO would block) is an error.
fn read_small(path: &Path, max: u64) -> Result<Option<Vec<u8>>, KindError> {
    let err = |source| KindError::Io {
        path: path.display().to_string(),
        source,
    };
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e)),
    };
    if !meta.is_file() {
        let what = format!("it is {}, not a regular file", crate::file_kind(&meta));
        return Err(err(io::Error::new(io::ErrorKind::InvalidInput, what)));
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|f| f.take(max).read_to_end(&mut bytes))
        .map_err(err)?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp_dir(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("binio-kind-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn older_folders_are_known_by_their_files() {
        let root = temp_dir("older");
        let make = |name: &str, files: &[(&str, &str)]| {
            let d = root.join(name);
            fs::create_dir_all(&d).unwrap();
            for (f, text) in files {
                match f.strip_suffix('/') {
                    Some(sub) => fs::create_dir_all(d.join(sub)).unwrap(),
                    None => fs::write(d.join(f), text).unwrap(),
                }
            }
            d
        };
        let kind = |d: &Path| folder_kind(d).unwrap().map(|f| f.kind);
        let train = make(
            "train",
            &[("run.json", r#"{"rules": 2}"#), ("checkpoints/", "")],
        );
        assert_eq!(kind(&train), Some(FolderKind::Training));
        let egrl = make(
            "egrl",
            &[
                ("run.json", r#"{"format": "egrl-run"}"#),
                ("checkpoint.bin", "x"),
            ],
        );
        assert_eq!(kind(&egrl), Some(FolderKind::Egrl));
        let race = make("race", &[("results.json", "{}"), ("diamond-tpu/", "")]);
        assert_eq!(kind(&race), Some(FolderKind::Race));
        // A damaged run.json says nothing; the other files still tell.
        let damaged = make("damaged", &[("run.json", "{"), ("checkpoint.bin", "x")]);
        assert_eq!(kind(&damaged), Some(FolderKind::Egrl));
        // The user's own files, or nothing at all: no run.
        let user = make("user", &[("notes.txt", "x"), ("games/", "")]);
        assert_eq!(kind(&user), None);
        assert_eq!(kind(&root.join("absent")), None);
        // Two kinds at once: named, both.
        let mixed = make("mixed", &[("run.json", "{}"), ("results.json", "{}")]);
        let err = folder_kind(&mixed).unwrap_err().to_string();
        assert!(
            err.contains("a race folder (results.json)")
                && err.contains("a training run folder (run.json)"),
            "{err}"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_claimed_folder_refuses_another_kind_naming_what_it_is() {
        let root = temp_dir("claim");
        let dir = root.join("run");
        fs::create_dir_all(&dir).unwrap();
        claim_folder(&dir, FolderKind::Race).unwrap();
        assert_eq!(fs::read_to_string(dir.join(KIND_FILE)).unwrap(), "race\n");
        // Nothing but the markers: still anyone's.
        assert_eq!(folder_kind(&dir).unwrap(), None);
        fs::write(dir.join("results.json"), "{}").unwrap();
        claim_folder(&dir, FolderKind::Race).unwrap();
        let err = claim_folder(&dir, FolderKind::Training)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "{} is a race folder (.mallocmuzero.kind)",
                dir.display()
            )) && err.contains("`mallocmuzero train` writes only into a training run folder"),
            "{err}"
        );
        assert!(check_folder_kind(&dir, FolderKind::Egrl, Purpose::Write).is_err());
        assert!(check_folder_kind(&dir, FolderKind::Race, Purpose::Write).is_ok());
        let err = check_folder_kind(&dir, FolderKind::Training, Purpose::Read)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("what is read here is a training run folder"),
            "{err}"
        );
        let file = root.join("file");
        fs::write(&file, "x").unwrap();
        let err = folder_kind(&file).unwrap_err().to_string();
        assert!(err.contains("a regular file, not a folder"), "{err}");
        // An older folder gets its kind file when its own command claims it.
        let old = root.join("old");
        fs::create_dir_all(old.join("checkpoints")).unwrap();
        claim_folder(&old, FolderKind::Training).unwrap();
        assert_eq!(fs::read_to_string(old.join(KIND_FILE)).unwrap(), "train\n");
        fs::write(dir.join(KIND_FILE), "chess\n").unwrap();
        let err = folder_kind(&dir).unwrap_err().to_string();
        assert!(err.contains("`chess`"), "{err}");
        fs::remove_dir_all(&root).unwrap();
    }
}
