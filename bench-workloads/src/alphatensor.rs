//! AlphaTensor block matmul workload. (Helper C fills this in.)
use crate::WorkloadError;
use accel_sim::Program;
pub const NAMES: [&str; 0] = [];
pub fn builtin(_name: &str) -> Option<Result<Program, WorkloadError>> { None }
