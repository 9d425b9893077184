//! bench-workloads: real ML programs as [`accel_sim::Program`]s, synthetic programs for
//! tests, loaders for user files, and the benchmark suite.
//!
//! - [`json`]: the program JSON format (traced models and user files); the embedded models.
//! - [`csv`]: minimalloc-style lifetime CSVs (`id,lower,upper,size`).
//! - [`hlo`]: XLA's HLO text (JAX programs, scheduled or before optimization); the bundled
//!   JAX programs.
//! - [`synthetic`]: small hand-shaped programs (chain, diamond, random DAG).
//! - [`alphatensor`]: a large matrix product computed block-wise with an AlphaTensor
//!   factorization.
//! - [`scale`]: the scale tier, full-size JAX models as XLA's HLO (gzip-compressed).
//! - [`suite`]: the benchmark cases (workload, hardware, fast capacity): the suite and
//!   the scale suite.
//! - [`small`]: windows of the models with their proven cost-model optima.

#![warn(missing_docs)]

pub mod alphatensor;
pub mod csv;
pub mod hlo;
pub mod json;
pub mod scale;
pub mod small;
pub mod suite;
pub mod synthetic;

use accel_sim::{Program, ProgramError};

/// A workload that could not be loaded; names the file (or workload) and the field.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// No built-in workload has this name, and no file is named by it.
    #[error("unknown workload `{name}` (built in: {list}; the scale tier: {scale}; for the generalist: {generalist})", list = names().join(", "), scale = scale::names().join(", "), generalist = scale::generalist_names().join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// The program file could not be read.
    #[error(transparent)]
    File(#[from] accel_sim::TextFileError),
    /// `origin` is the file name (or embedded workload name); `msg` names the field.
    #[error("{origin}: {msg}")]
    Parse {
        /// The file (or the built-in workload's name).
        origin: String,
        /// What is wrong, naming the field.
        msg: String,
    },
    /// The file parses but does not make a valid program (a buffer no op writes, ...).
    #[error("{origin}: {source}")]
    Program {
        /// The file (or the built-in workload's name).
        origin: String,
        /// The rule the program breaks.
        source: ProgramError,
    },
}

/// Names of the built-in workloads: traced models, bundled JAX programs, then generated
/// ones. The scale tier's ([`scale::names`]) and the generalist's programs of its size
/// ([`scale::generalist_names`]) load by name too but are not among these: each is
/// hundreds to thousands of ops, too many for the loops over every workload here.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = json::EMBEDDED.iter().map(|(n, _)| *n).collect();
    v.extend(hlo::names());
    v.extend(alphatensor::NAMES);
    v.extend(synthetic::NAMES);
    v
}

/// Whether `name` is a workload built into this build, of either tier.
pub fn is_builtin(name: &str) -> bool {
    names().contains(&name)
        || scale::names().contains(&name)
        || scale::generalist_names().contains(&name)
}

/// A built-in workload by name (either tier), or a user file: a path ending in `.json`
/// (program format), `.csv` (minimalloc lifetimes) or `.hlo`/`.hlo.txt` (XLA's HLO text,
/// gzip-compressed when it ends in `.gz`); any followed by `@A..B` is its ops `A..B` alone
/// ([`Program::window`]: `resnet50@0..40`).
pub fn load(spec: &str) -> Result<Program, WorkloadError> {
    if let Some((base, window)) = split_window(spec) {
        let (start, end) = window?;
        if split_window(base).is_some() {
            return Err(WorkloadError::Parse {
                origin: spec.into(),
                msg: "window: a workload takes one `@A..B`, this names two (cut the first with `mallocmuzero cut`, or give the ops of the whole program)".into(),
            });
        }
        let program = load_whole(base)?;
        if start >= end || end > program.len() {
            return Err(WorkloadError::Parse {
                origin: spec.into(),
                msg: format!(
                    "window: ops {start}..{end} is not a non-empty range inside the program's ops 0..{}",
                    program.len()
                ),
            });
        }
        return program
            .window(start..end)
            .map_err(|source| WorkloadError::Program {
                origin: spec.into(),
                source,
            });
    }
    load_whole(spec)
}

/// A window's first op and the op after its last.
type Window = (usize, usize);

/// `spec` as `(workload, Ok((A, B)))` when it ends in `@A..B`; a malformed range after
/// the `@` is an error naming it. `None` when there is no window.
fn split_window(spec: &str) -> Option<(&str, Result<Window, WorkloadError>)> {
    let (base, window) = spec.rsplit_once('@')?;
    let (a, b) = window.split_once("..")?;
    let bad = || WorkloadError::Parse {
        origin: spec.into(),
        msg: format!("window `{window}`: expected `A..B` with whole numbers A < B"),
    };
    let parsed = match (a.parse::<usize>(), b.parse::<usize>()) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        _ => Err(bad()),
    };
    Some((base, parsed))
}

fn load_whole(spec: &str) -> Result<Program, WorkloadError> {
    if let Some((_, text)) = json::EMBEDDED.iter().find(|(n, _)| *n == spec) {
        return json::parse_program(text, spec);
    }
    if let Some(p) = hlo::builtin(spec) {
        return p;
    }
    if let Some(p) = alphatensor::builtin(spec) {
        return p;
    }
    if let Some(p) = scale::builtin(spec) {
        return p;
    }
    if let Some(p) = synthetic::builtin(spec) {
        return Ok(p);
    }
    let path = std::path::Path::new(spec);
    if hlo::is_hlo_path(spec) {
        return hlo::load_file(path);
    }
    if let Some(hlo_name) = spec.strip_suffix(".gz").filter(|s| hlo::is_hlo_path(s)) {
        return load_gzipped_hlo(path, hlo_name);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => json::load_file(path),
        Some("csv") => csv::load_file(path).map(|c| c.program),
        _ => Err(WorkloadError::Unknown { name: spec.into() }),
    }
}

/// An HLO text file compressed with gzip, named as [`hlo::load_file`] names the file it
/// would be inflated to (`model.hlo.txt.gz`: `model`).
fn load_gzipped_hlo(path: &std::path::Path, hlo_name: &str) -> Result<Program, WorkloadError> {
    let shown = path.display().to_string();
    // A compressed file is at most the text cap: it inflates to more, checked as it does.
    let bytes = read_bytes_capped(path, accel_sim::MAX_TEXT_BYTES)?;
    let text = scale::gunzip(&bytes, &shown)?;
    let file = std::path::Path::new(hlo_name)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file.strip_suffix(".txt").unwrap_or(&file);
    let name = stem.strip_suffix(".hlo").unwrap_or(stem);
    let options = hlo::Options {
        name: (!name.is_empty()).then(|| name.to_string()),
        ..hlo::Options::default()
    };
    hlo::parse_program_with(&text, &shown, &options)
}

/// A file's bytes, refused past `limit` (a link to `/dev/zero` is not read to the end).
fn read_bytes_capped(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, WorkloadError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let io = |source| accel_sim::TextFileError::Io {
        path: shown.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(io(std::io::Error::other("it is a folder")).into());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(accel_sim::TextFileError::TooLarge {
            path: shown,
            limit_mib: limit >> 20,
        }
        .into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_with_a_window_is_its_ops_alone() {
        let whole = load("resnet50").unwrap();
        let cut = load("resnet50@10..30").unwrap();
        assert_eq!(cut.len(), 20);
        assert_eq!(cut.name(), "resnet50@10..30");
        assert_eq!(cut.op(0).name, whole.op(10).name);
        for bad in [
            "resnet50@30..10",
            "resnet50@0..999999",
            "resnet50@a..3",
            "resnet50@5..5",
            "resnet50@36..48@1..3",
        ] {
            let e = load(bad).unwrap_err().to_string();
            assert!(e.contains("window"), "{bad}: {e}");
        }
    }
}
