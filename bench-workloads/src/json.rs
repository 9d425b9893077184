//! The program JSON format. (Helper A fills this in.)
use crate::WorkloadError;
use accel_sim::Program;
use std::path::Path;

/// Traced models embedded in the binary: (name, JSON text).
pub const EMBEDDED: &[(&str, &str)] = &[];

/// Parses a program JSON text; `origin` names the file in errors.
pub fn parse_program(_text: &str, origin: &str) -> Result<Program, WorkloadError> {
    Err(WorkloadError::Parse { origin: origin.into(), msg: "not implemented yet".into() })
}

pub fn load_file(path: &Path) -> Result<Program, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Io { path: path.display().to_string(), source })?;
    parse_program(&text, &path.display().to_string())
}
