//! `train-egrl`'s run folder, with the conventions of `train`'s (its JSON files are
//! written and read by the same functions, [`binio::json`]):
//! - `run.json`: what the run searches (workload, program hash, hardware, config);
//! - `program.json`: the run's copy of the program, so it resumes on its own;
//! - `checkpoint.bin`: the whole search state (population, learner, replay, best), written
//!   atomically, so a run killed at any moment resumes from its last checkpoint exactly;
//! - `metrics.jsonl`: one line per generation;
//! - `best/mapping.json` (a mapping file `evaluate --mapping` reads) and
//!   `best/summary.json`.

use crate::config::EgrlConfig;
use crate::engine::{Egrl, EgrlState, Found};
use crate::problem::Problem;
use crate::EgrlError;
use accel_sim::{Hardware, HardwareFile, MappingFile, Program};
use binio::json::{read_json, write_json, write_json_lines};
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
    /// Always `egrl-run`: a folder of another kind is refused.
    pub format: String,
    /// The format version.
    pub version: u32,
    /// A built-in workload's name, or the program file as it was given.
    pub workload: String,
    /// The program's content hash: a resume refuses a changed program.
    pub program_hash: u64,
    /// The hardware, as a file writes it.
    pub hardware: HardwareFile,
    /// The run's config.
    pub config: EgrlConfig,
}

/// `best/summary.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The workload.
    pub workload: String,
    /// The hardware's name.
    pub hardware: String,
    /// The solver (`egrl`, `egrl-ea`, `egrl-pg`).
    pub solver: String,
    /// The best mapping's simulated latency, seconds.
    pub latency_s: f64,
    /// The all-slow mapping's simulated latency, seconds.
    pub all_slow_latency_s: f64,
    /// `all_slow_latency_s / latency_s`.
    pub speedup_over_all_slow: f64,
    /// The assignment and when it was found.
    #[serde(flatten)]
    pub found: Found,
}

/// A run folder.
pub struct RunFolder {
    root: PathBuf,
    workload: String,
    /// One writer per folder: a second `train-egrl` on it is refused.
    _lock: binio::FolderLock,
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
        // A training run's or a race's folder is refused before anything is made in it.
        binio::check_folder_kind(root, binio::FolderKind::Egrl, binio::Purpose::Write)?;
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
        let lock = binio::FolderLock::acquire(root)?;
        binio::claim_folder(root, binio::FolderKind::Egrl)?;
        // Again under the lock: another start may have written it since.
        if root.join("run.json").exists() {
            return Err(file_error(
                &root.join("run.json"),
                "a run is already here: resume it (--resume) or choose another folder",
            ));
        }
        let best = root.join("best");
        binio::create_own_folder(&best)
            .map_err(|e| file_error(&best, &format!("cannot create: {e}")))?;
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
            _lock: lock,
        };
        folder.save(&egrl)?;
        Ok((folder, egrl))
    }

    /// Continues the run in `root` from its checkpoint; `threads` (if given) replaces the
    /// thread count (results do not depend on it).
    pub fn resume(root: &Path, threads: Option<usize>) -> Result<(RunFolder, Egrl), EgrlError> {
        let info_path = root.join("run.json");
        binio::check_folder_kind(root, binio::FolderKind::Egrl, binio::Purpose::Write)?;
        let value: serde_json::Value = read_json(&info_path)?;
        let lock = binio::FolderLock::acquire(root)?;
        binio::claim_folder(root, binio::FolderKind::Egrl)?;
        // What a write killed midway left (only the folder's one writer may sweep), in the
        // run's own folders: `best/` is never a link out of the run.
        let best = root.join("best");
        binio::create_own_folder(&best)
            .map_err(|e| file_error(&best, &format!("cannot create: {e}")))?;
        binio::remove_temp_files(root)?;
        binio::remove_temp_files(&best)?;
        // A mallocMuZero run has no `format`; without this it failed on a missing field.
        if value.get("format").is_none() && value.get("rules").is_some() {
            return Err(file_error(
                &info_path,
                &format!(
                    "a mallocMuZero training run folder (made by `mallocmuzero train`), not an EGRL run: continue it with `mallocmuzero train --resume {}`",
                    root.display()
                ),
            ));
        }
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
        let checkpoint = root.join("checkpoint.bin");
        let mut state: EgrlState = binio::read(&checkpoint, STATE_MAGIC, STATE_VERSION)?;
        // The run continues from the checkpoint's config: a run.json that says otherwise
        // (edited after the start) would describe a run that is not the one running.
        same_config(&info.config, &state.config, &info_path, &checkpoint)?;
        if let Some(t) = threads {
            state.config.threads = t;
        }
        let penalty = state.config.violation_penalty;
        let problem = Arc::new(Problem::new(Arc::new(program), hw, penalty)?);
        let egrl = Egrl::from_state(problem, state)?;
        same_best(&egrl, &info_path, &checkpoint)?;
        Ok((
            RunFolder {
                root: root.to_path_buf(),
                workload: info.workload,
                _lock: lock,
            },
            egrl,
        ))
    }

    /// The run folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes the checkpoint, the metrics and the best mapping, each atomically (the best
    /// first: a checkpoint never names a best that is not on disk).
    pub fn save(&self, egrl: &Egrl) -> Result<(), EgrlError> {
        if let Some(best) = egrl.best() {
            self.save_best(egrl, best)?;
        }
        write_json_lines(&self.root.join("metrics.jsonl"), egrl.metrics())?;
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
        binio::create_own_folder(&dir)
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
        Ok(write_json(&dir.join("summary.json"), &summary)?)
    }
}

/// Refuses a `run.json` config that differs from the checkpoint's, naming the first field
/// that differs and both values. `threads` is left out: `--resume --threads` replaces it in
/// the checkpoint alone, and results do not depend on it.
fn same_config(
    recorded: &EgrlConfig,
    running: &EgrlConfig,
    info_path: &Path,
    checkpoint: &Path,
) -> Result<(), EgrlError> {
    let recorded = EgrlConfig {
        threads: running.threads,
        ..recorded.clone()
    };
    if recorded == *running {
        return Ok(());
    }
    let as_value =
        |c: &EgrlConfig| serde_json::to_value(c).map_err(|e| file_error(info_path, &e.to_string()));
    let (field, said, made) =
        accel_sim::json_differences(&as_value(&recorded)?, &as_value(running)?, "config")
            .into_iter()
            .next()
            .map(|(path, a, b)| (path, a.to_string(), b.to_string()))
            .unwrap_or_else(|| ("config".into(), "?".into(), "?".into()));
    Err(file_error(
        info_path,
        &format!(
            "{field} is {said}, but the run's checkpoint ({}) was made with {made}: run.json was changed after the run started; put back {made}, or start a new run",
            checkpoint.display()
        ),
    ))
}

/// Refuses a checkpoint whose best mapping does not score, on the problem `run.json`
/// describes, the latency it recorded: the hardware in `run.json` (or the simulator) is not
/// the one the run was made with, and the resumed run would compare new mappings with a
/// best of another case.
fn same_best(egrl: &Egrl, info_path: &Path, checkpoint: &Path) -> Result<(), EgrlError> {
    let Some(best) = egrl.best() else {
        return Ok(());
    };
    let problem = egrl.problem();
    let scored = problem.score(&mut problem.simulator(), &best.assignment).1;
    if scored.latency_s == best.latency_s {
        return Ok(());
    }
    Err(file_error(
        info_path,
        &format!(
            "the best mapping of the run's checkpoint ({}) scores {:e} s on this hardware, but {:e} s when it was found: run.json's hardware differs from the one the run was made with (or the simulator changed); put it back, or start a new run",
            checkpoint.display(),
            scored.latency_s,
            best.latency_s
        ),
    ))
}

fn file_error(path: &Path, msg: &str) -> EgrlError {
    EgrlError::File {
        path: path.display().to_string(),
        msg: msg.to_string(),
    }
}
