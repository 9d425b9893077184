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
//! - [`suite`]: the benchmark cases (workload, hardware, fast capacity).
//! - [`small`]: windows of the models with their proven cost-model optima.

pub mod alphatensor;
pub mod csv;
pub mod hlo;
pub mod json;
pub mod small;
pub mod suite;
pub mod synthetic;

use accel_sim::{Program, ProgramError};

/// A workload that could not be loaded; names the file (or workload) and the field.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("unknown workload `{name}` (built in: {list})", list = names().join(", "))]
    Unknown { name: String },
    #[error(transparent)]
    File(#[from] accel_sim::TextFileError),
    /// `origin` is the file name (or embedded workload name); `msg` names the field.
    #[error("{origin}: {msg}")]
    Parse { origin: String, msg: String },
    #[error("{origin}: {source}")]
    Program {
        origin: String,
        source: ProgramError,
    },
}

/// Names of every built-in workload: traced models, then generated ones.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = json::EMBEDDED.iter().map(|(n, _)| *n).collect();
    v.extend(hlo::names());
    v.extend(alphatensor::NAMES);
    v.extend(synthetic::NAMES);
    v
}

/// A built-in workload by name, or a user file: a path ending in `.json` (program format),
/// `.csv` (minimalloc lifetimes) or `.hlo`/`.hlo.txt` (XLA's HLO text); any followed by `@A..B` is its ops `A..B` alone
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
    if let Some(p) = synthetic::builtin(spec) {
        return Ok(p);
    }
    let path = std::path::Path::new(spec);
    if hlo::is_hlo_path(spec) {
        return hlo::load_file(path);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => json::load_file(path),
        Some("csv") => csv::load_file(path).map(|c| c.program),
        _ => Err(WorkloadError::Unknown { name: spec.into() }),
    }
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
