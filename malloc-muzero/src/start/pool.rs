//! Solution pools: the learned start's training data. A pool folder holds `pool.json`
//! (this module's [`Pool`]), the program files of its generated programs, and one mapping
//! file per kept mapping; `harness/examples/solution_pool.rs` builds one (the MIP's and
//! the local search's best mappings of many programs that are none of the suite's, the
//! scale tier's, the held-out or the validation programs).
//!
//! Every file a pool names lies inside its folder: a name is a relative path of plain
//! components (no `..`, no root), or a built-in workload's name.

use super::features::FeatureTable;
use super::StartError;
use accel_sim::{Hardware, HardwareFile, Mapping, MappingFile, Program};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The `format` field of `pool.json`.
pub const POOL_FORMAT: &str = "mallocmuzero-solution-pool";
/// The version this build reads and writes.
pub const POOL_VERSION: u32 = 1;
/// The pool's manifest inside its folder.
pub const POOL_FILE: &str = "pool.json";

/// A pool's manifest.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// [`POOL_FORMAT`].
    pub format: String,
    /// [`POOL_VERSION`].
    pub version: u32,
    /// Its cases.
    pub cases: Vec<PoolCase>,
}

/// One case of a pool: a program on a hardware, and its best mappings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolCase {
    /// How tables name it.
    pub name: String,
    /// A built-in workload's name, or a program file inside the pool's folder.
    pub program: String,
    /// The hardware, capacities included.
    pub hardware: HardwareFile,
    /// The xla mapping's simulated latency, seconds.
    pub xla_latency_s: f64,
    /// The kept mappings, fastest first.
    pub mappings: Vec<PoolMapping>,
}

/// One kept mapping.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolMapping {
    /// A mapping file inside the pool's folder.
    pub file: String,
    /// The solver that found it (`exact`, `local-search`) and its seed.
    pub solver: String,
    /// The seed it ran with.
    pub seed: u64,
    /// Its simulated latency, seconds.
    pub latency_s: f64,
}

/// A case read back: its program, hardware and mappings (each with its latency).
pub struct LoadedCase {
    /// The program.
    pub program: Program,
    /// The hardware.
    pub hw: Hardware,
    /// Each kept mapping and its simulated latency, seconds.
    pub mappings: Vec<(Mapping, f64)>,
}

impl Pool {
    /// An empty pool.
    pub fn new() -> Pool {
        Pool {
            format: POOL_FORMAT.into(),
            version: POOL_VERSION,
            cases: Vec::new(),
        }
    }

    /// Reads `dir/pool.json`.
    pub fn read(dir: &Path) -> Result<Pool, StartError> {
        let path = dir.join(POOL_FILE);
        let bad = |msg: String| StartError::File {
            path: path.display().to_string(),
            msg,
        };
        let text = accel_sim::read_text(&path).map_err(|e| bad(e.to_string()))?;
        let pool: Pool = accel_sim::parse_json(&text).map_err(|e| bad(e.to_string()))?;
        if pool.format != POOL_FORMAT {
            return Err(bad(format!(
                "field `format`: expected \"{POOL_FORMAT}\", got \"{}\"",
                pool.format
            )));
        }
        if pool.version != POOL_VERSION {
            return Err(bad(format!(
                "field `version`: this build reads version {POOL_VERSION}, got {}",
                pool.version
            )));
        }
        Ok(pool)
    }

    /// Writes `dir/pool.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<(), StartError> {
        let path = dir.join(POOL_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| StartError::File {
            path: path.display().to_string(),
            msg: e.to_string(),
        })?;
        binio::write_bytes_atomic(&path, text.as_bytes()).map_err(|e| StartError::File {
            path: path.display().to_string(),
            msg: e.to_string(),
        })
    }

    /// Case `i` read back from `dir`: every file checked (inside the folder, readable,
    /// each mapping valid on the case).
    pub fn load_case(&self, dir: &Path, i: usize) -> Result<LoadedCase, StartError> {
        let case = &self.cases[i];
        let at = |field: &str, msg: String| StartError::File {
            path: dir.join(POOL_FILE).display().to_string(),
            msg: format!("cases[{i}] ({}): field `{field}`: {msg}", case.name),
        };
        let program = if bench_workloads::is_builtin(&case.program) {
            bench_workloads::load(&case.program)
        } else {
            let path = inside(dir, &case.program).map_err(|m| at("program", m))?;
            bench_workloads::load(&path.display().to_string())
        }
        .map_err(|e| at("program", e.to_string()))?;
        let hw = case
            .hardware
            .clone()
            .into_hardware("")
            .map_err(|e| at("hardware", e.to_string()))?;
        let mut mappings = Vec::new();
        for (k, m) in case.mappings.iter().enumerate() {
            let field = format!("mappings[{k}].file");
            let path = inside(dir, &m.file).map_err(|e| at(&field, e))?;
            let mapping = MappingFile::read(&path)
                .and_then(|f| f.to_mapping(&program))
                .map_err(|e| at(&field, e))?;
            mapping
                .validate(&program, &hw)
                .map_err(|e| at(&field, format!("not a valid mapping of the case: {e}")))?;
            mappings.push((mapping, m.latency_s));
        }
        Ok(LoadedCase {
            program,
            hw,
            mappings,
        })
    }
}

/// `name` as a path inside `dir`: a relative path of plain components.
pub fn inside(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let rel = Path::new(name);
    let plain = !name.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(format!(
            "`{name}` is not a file name inside the pool's folder (no `..`, no root)"
        ));
    }
    Ok(dir.join(rel))
}

/// Per row of `table`: the share of `mappings` that read the row's use from the row's
/// level.
pub fn labels(table: &FeatureTable, mappings: &[&Mapping]) -> Vec<f32> {
    table
        .rows
        .iter()
        .map(|&(s, level)| {
            let (b, u) = table.sites[s];
            let hits = mappings
                .iter()
                .filter(|m| m.buffers[b].read_level(u) == level)
                .count();
            hits as f32 / mappings.len().max(1) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_files_stay_inside_the_folder() {
        let dir = Path::new("/pool");
        assert!(inside(dir, "mappings/a.json").is_ok());
        for bad in ["../a.json", "/etc/passwd", "a/../../b", ""] {
            assert!(inside(dir, bad).is_err(), "{bad}");
        }
    }
}
