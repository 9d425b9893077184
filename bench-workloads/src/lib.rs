//! bench-workloads: real ML programs as [`accel_sim::Program`]s, synthetic programs for
//! tests, loaders for user files, and the benchmark suite.
//!
//! - [`json`]: the program JSON format (traced models and user files); the embedded models.
//! - [`csv`]: minimalloc-style lifetime CSVs (`id,lower,upper,size`).
//! - [`synthetic`]: small hand-shaped programs (chain, diamond, random DAG).
//! - [`alphatensor`]: a large matrix product computed block-wise with an AlphaTensor
//!   factorization.
//! - [`suite`]: the benchmark cases (workload, hardware, fast capacity).

pub mod alphatensor;
pub mod csv;
pub mod json;
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
    v.extend(alphatensor::NAMES);
    v.extend(synthetic::NAMES);
    v
}

/// A built-in workload by name, or a user file: a path ending in `.json` (program format)
/// or `.csv` (minimalloc lifetimes).
pub fn load(spec: &str) -> Result<Program, WorkloadError> {
    if let Some((_, text)) = json::EMBEDDED.iter().find(|(n, _)| *n == spec) {
        return json::parse_program(text, spec);
    }
    if let Some(p) = alphatensor::builtin(spec) {
        return p;
    }
    if let Some(p) = synthetic::builtin(spec) {
        return Ok(p);
    }
    let path = std::path::Path::new(spec);
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => json::load_file(path),
        Some("csv") => csv::load_file(path).map(|c| c.program),
        _ => Err(WorkloadError::Unknown { name: spec.into() }),
    }
}
