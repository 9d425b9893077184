//! minimalloc-style CSV lifetimes. (Helper C fills this in.)
use crate::WorkloadError;
use accel_sim::Program;
use std::path::Path;

/// A CSV instance as a program, with the capacity in its file name if any.
pub struct CsvInstance {
    pub program: Program,
    pub capacity: Option<u64>,
}

pub fn load_file(path: &Path) -> Result<CsvInstance, WorkloadError> {
    Err(WorkloadError::Parse { origin: path.display().to_string(), msg: "not implemented yet".into() })
}
