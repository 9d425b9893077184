//! `train-egrl`'s run folder, with the conventions of `train`'s:
//! - `run.json`: what the run searches (workload, program hash, hardware, config);
//! - `program.json`: the run's copy of the program, so it resumes on its own;
//! - `checkpoint.bin`: the whole search state (population, learner, replay, best), written
//!   atomically, so a run killed at any moment resumes from its last checkpoint exactly;
//! - `metrics.jsonl`: one line per generation;
//! - `best/mapping.json` (a mapping file `evaluate --mapping` reads) and
//!   `best/summary.json`.

use crate::engine::{Egrl, EgrlConfig, EgrlState, Found};
use crate::problem::Problem;
use crate::EgrlError;
use accel_sim::{Hardware, HardwareFile, MappingFile, Program};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const STATE_MAGIC: &[u8; 8] = b"EGRLSTAT";
const STATE_VERSION: u32 = 1;
const RUN_FORMAT: &str = "egrl-run";
const RUN_VERSION: u32 = 1;

/// `run.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    pub format: String,
    pub version: u32,
    /// A built-in workload's name, or the program file as it was given.
    pub workload: String,
    pub program_hash: u64,
    pub hardware: HardwareFile,
    pub config: EgrlConfig,
}

/// `best/summary.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub workload: String,
    pub hardware: String,
    pub solver: String,
    pub latency_s: f64,
    pub all_slow_latency_s: f64,
    pub speedup_over_all_slow: f64,
    #[serde(flatten)]
    pub found: Found,
}

/// A run folder.
pub struct RunFolder {
    root: PathBuf,
    workload: String,
}

impl RunFolder {
    /// Starts a run in `root` (a new or empty folder).
    pub fn create(
        root: &Path,
        workload: &str,
        program: Arc<Program>,
        hw: Hardware,
        config: EgrlConfig,
    ) -> Result<(RunFolder, Egrl), EgrlError> {
        if root.join("run.json").exists() {
            return Err(file_error(
                &root.join("run.json"),
                "a run is already here: resume it (--resume) or choose another folder",
            ));
        }
        // Built first, so a case or config the search refuses leaves no folder behind.
        let problem = Arc::new(Problem::new(
            Arc::clone(&program),
            hw.clone(),
            config.violation_penalty,
        )?);
        let egrl = Egrl::new(problem, config.clone())?;
        std::fs::create_dir_all(root.join("best"))
            .map_err(|e| file_error(root, &format!("cannot create: {e}")))?;
        let info = RunInfo {
            format: RUN_FORMAT.into(),
            version: RUN_VERSION,
            workload: workload.to_string(),
            program_hash: program.content_hash(),
            hardware: hw.to_file(),
            config: config.clone(),
        };
        let text = bench_workloads::json::to_json(&program, None);
        binio::write_bytes_atomic(&root.join("program.json"), text.as_bytes())?;
        write_json(&root.join("run.json"), &info)?;
        let folder = RunFolder {
            root: root.to_path_buf(),
            workload: workload.to_string(),
        };
        folder.save(&egrl)?;
        Ok((folder, egrl))
    }

    /// Continues the run in `root` from its checkpoint; `threads` (if given) replaces the
    /// thread count (results do not depend on it).
    pub fn resume(root: &Path, threads: Option<usize>) -> Result<(RunFolder, Egrl), EgrlError> {
        let info_path = root.join("run.json");
        let info: RunInfo = read_json(&info_path)?;
        if info.format != RUN_FORMAT || info.version != RUN_VERSION {
            return Err(file_error(
                &info_path,
                &format!(
                    "format `{}` version {}, this build reads `{RUN_FORMAT}` version {RUN_VERSION}",
                    info.format, info.version
                ),
            ));
        }
        let copy = root.join("program.json");
        let program = bench_workloads::load(&copy.display().to_string())?;
        if program.content_hash() != info.program_hash {
            return Err(file_error(
                &copy,
                "the program differs from the one the run started with (run.json's program_hash)",
            ));
        }
        let context = format!("{}: ", info_path.display());
        let hw = info.hardware.clone().into_hardware(&context)?;
        let mut state: EgrlState =
            binio::read(&root.join("checkpoint.bin"), STATE_MAGIC, STATE_VERSION)?;
        if let Some(t) = threads {
            state.config.threads = t;
        }
        let penalty = state.config.violation_penalty;
        let problem = Arc::new(Problem::new(Arc::new(program), hw, penalty)?);
        let egrl = Egrl::from_state(problem, state)?;
        Ok((
            RunFolder {
                root: root.to_path_buf(),
                workload: info.workload,
            },
            egrl,
        ))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes the checkpoint, the metrics and the best mapping, each atomically (the best
    /// first: a checkpoint never names a best that is not on disk).
    pub fn save(&self, egrl: &Egrl) -> Result<(), EgrlError> {
        if let Some(best) = egrl.best() {
            self.save_best(egrl, best)?;
        }
        let mut lines = String::new();
        for m in egrl.metrics() {
            let line = serde_json::to_string(m)
                .map_err(|e| file_error(&self.root.join("metrics.jsonl"), &e.to_string()))?;
            lines += &line;
            lines.push('\n');
        }
        binio::write_bytes_atomic(&self.root.join("metrics.jsonl"), lines.as_bytes())?;
        let state = egrl.state()?;
        binio::write_atomic(
            &self.root.join("checkpoint.bin"),
            STATE_MAGIC,
            STATE_VERSION,
            &state,
        )?;
        Ok(())
    }

    fn save_best(&self, egrl: &Egrl, best: &Found) -> Result<(), EgrlError> {
        let problem = egrl.problem();
        let mapping = problem.decode(&best.assignment).mapping;
        let file = MappingFile::from_mapping(problem.program(), &mapping);
        let dir = self.root.join("best");
        std::fs::create_dir_all(&dir)
            .map_err(|e| file_error(&dir, &format!("cannot create: {e}")))?;
        write_json(&dir.join("mapping.json"), &file)?;
        let summary = Summary {
            workload: self.workload.clone(),
            hardware: problem.hardware().name.clone(),
            solver: egrl.config().variant.name().into(),
            latency_s: best.latency_s,
            all_slow_latency_s: problem.all_slow_s(),
            speedup_over_all_slow: problem.all_slow_s() / best.latency_s,
            found: best.clone(),
        };
        write_json(&dir.join("summary.json"), &summary)
    }
}

fn file_error(path: &Path, msg: &str) -> EgrlError {
    EgrlError::File {
        path: path.display().to_string(),
        msg: msg.to_string(),
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), EgrlError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| file_error(path, &e.to_string()))?;
    Ok(binio::write_bytes_atomic(path, text.as_bytes())?)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, EgrlError> {
    let text = accel_sim::read_text(path).map_err(|e| file_error(path, &e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| file_error(path, &e.to_string()))
}
