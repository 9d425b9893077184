//! The run directory: what a run trains (`run.json`, `program.json`), its metrics, its
//! checkpoints, and the repairs a start or resume makes after an interrupted session.
//!
//! One layout for a run of one program and for a multi-program run, which differ only in
//! where each case's files go: a run of one program keeps its program in `program.json`
//! and its best mapping in `best/`; a multi-program run (`run.json` lists `cases`) keeps
//! `programs/NNN.json` (one copy per distinct program) and `best/NNN/` per case, beside a
//! `program.json` of its first case. Its JSON files are written and read as EGRL's are
//! ([`binio::json`]).

use super::checkpoint::Snapshot;
use super::error::io_error;
use super::learner::Learner;
use super::summary::Progress;
use super::TrainConfig;
use super::TrainError;
use accel_sim::Program;
use binio::json::{append_json_line, read_json, write_json};
use malloc_game::GameSetup;
use muzero::ReplayBuffer;
use muzero::{device, MuZeroNet, NetworkConfig};
use muzero::{OptimConfig, Optimizer};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `run.json`: what a run trains, so `--resume` and `evaluate --checkpoint` rebuild it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    /// [`malloc_game::RULES_VERSION`] when written; absent in runs made under rules v1,
    /// which do not load.
    #[serde(default = "rules_v1")]
    pub rules: u32,
    /// A built-in workload's name, or the program file as it was given.
    pub workload: String,
    /// The program file's absolute path, when the program was loaded from a file (absent
    /// in run folders written before it was recorded).
    #[serde(default)]
    pub workload_path: Option<String>,
    /// The program's content hash: a resume refuses a changed program.
    pub program_hash: u64,
    /// The hardware, as a file writes it.
    pub hardware: accel_sim::HardwareFile,
    /// The game's options (its actions and observation follow from them).
    pub options: malloc_game::GameOptions,
    /// The network's sizes: a resume keeps them.
    pub network: NetworkConfig,
    /// The training config (a resume may replace it, but not the network).
    pub config: TrainConfig,
    /// A multi-program run's cases; empty for a run of one program. In a multi-program
    /// run the fields above name its first case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CaseInfo>,
}

/// One case of a multi-program run, as `run.json` records it: its program (a built-in's
/// name or the file it was loaded from, and its hash) and its hardware. The program's copy
/// is `programs/NNN.json` in the run folder.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseInfo {
    /// What the case is called in progress lines and summaries (`resnet50@16MiB`).
    pub name: String,
    /// A built-in workload's name, or the program file as it was given.
    pub workload: String,
    /// The program file's absolute path, when it was loaded from a file.
    #[serde(default)]
    pub workload_path: Option<String>,
    /// The program's content hash.
    pub program_hash: u64,
    /// The hardware, as a file writes it.
    pub hardware: accel_sim::HardwareFile,
}

/// `checkpoints/latest.json`: the newest complete checkpoint and the counters at its end.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Latest {
    /// The last iteration the checkpoint includes.
    pub iteration: u64,
    pub dir: String,
    pub train_steps: u64,
    pub positions: u64,
    pub elapsed_s: f64,
    /// The latency of the last evaluation game, so a resumed run reports it until its
    /// next one.
    #[serde(default)]
    pub eval_latency_s: Option<f64>,
}

const REPLAY_MAGIC: &[u8; 8] = b"MMZRPLY\0";
// 2: binio files carry a checksum.
const REPLAY_VERSION: u32 = 2;

/// The copy of the program a run folder keeps, so it resumes and replays on its own.
pub(super) const PROGRAM_JSON: &str = "program.json";

/// The folder of a multi-program run's program copies (`NNN.json`).
const PROGRAMS: &str = "programs";

/// The files a run writes in `best/`.
const BEST_FILES: [&str; 5] = [
    "game.game",
    "mapping.json",
    "found.json",
    "summary.json",
    super::best::COMPARE_XLA,
];

impl RunInfo {
    /// Whether this is a multi-program run (`cases` listed), whose folder keeps a program
    /// copy and a best mapping per case (see the module's doc).
    pub fn is_multi(&self) -> bool {
        !self.cases.is_empty()
    }

    /// Whether `other`, a new run in this run's folder, trains what this one does: the
    /// same game, or the same cases; so this run's best mappings are the new run's.
    pub(super) fn same_run(&self, other: &RunInfo) -> bool {
        if self.is_multi() || other.is_multi() {
            let cases = |i: &RunInfo| serde_json::to_value(&i.cases).ok();
            return cases(self).is_some() && cases(self) == cases(other);
        }
        self.same_game(other)
    }

    /// The games of the run's cases, their programs loaded as [`RunInfo::load_program`]
    /// says (a multi-program run's from their files, built-ins or `programs/NNN.json`).
    pub fn setups(&self, dir: &Path) -> Result<Vec<Arc<GameSetup>>, TrainError> {
        if !self.is_multi() {
            return Ok(vec![self.setup(dir)?]);
        }
        let origin = dir.join("run.json").display().to_string();
        let mut setups = Vec::with_capacity(self.cases.len());
        for (k, c) in self.cases.iter().enumerate() {
            let recorded = RecordedProgram {
                workload: &c.workload,
                workload_path: c.workload_path.as_deref(),
                hash: c.program_hash,
            };
            let program = recorded.load(&program_copy(dir, copy_index(&self.cases, k)))?;
            let hw = c.hardware.clone().into_hardware(&format!("{origin}: "))?;
            setups.push(GameSetup::new(Arc::new(program), hw, self.options.clone())?);
        }
        Ok(setups)
    }

    /// The program this run trains: the built-in of that name, or the file it was loaded
    /// from, or (the file moved, or the program was built in code) the run's own copy in
    /// `dir`. A program that differs from the one the run started with is refused.
    pub fn load_program(&self, dir: &Path) -> Result<Program, TrainError> {
        let recorded = RecordedProgram {
            workload: &self.workload,
            workload_path: self.workload_path.as_deref(),
            hash: self.program_hash,
        };
        recorded.load(&dir.join(PROGRAM_JSON))
    }

    pub(super) fn same_program(
        &self,
        p: Program,
        origin: impl FnOnce() -> String,
    ) -> Result<Program, TrainError> {
        same_program(p, self.program_hash, origin)
    }

    /// The game this run plays: its program (see [`RunInfo::load_program`]) on its
    /// hardware with its options.
    pub fn setup(&self, dir: &Path) -> Result<Arc<GameSetup>, TrainError> {
        let program = self.load_program(dir)?;
        self.setup_of(program, &dir.join("run.json").display().to_string())
    }

    /// The game this run plays on `program` (already checked to be the run's); `origin`
    /// names the run in errors.
    pub(super) fn setup_of(
        &self,
        program: Program,
        origin: &str,
    ) -> Result<Arc<GameSetup>, TrainError> {
        let hw = self
            .hardware
            .clone()
            .into_hardware(&format!("{origin}: "))?;
        Ok(GameSetup::new(Arc::new(program), hw, self.options.clone())?)
    }

    /// Whether two runs play the same game, so the best mapping of one is one of the other.
    pub(super) fn same_game(&self, other: &RunInfo) -> bool {
        self.game_differences(other.program_hash, &other.hardware, &other.options)
            .is_empty()
    }

    /// What of this run's game differs from the game of that program (by its content
    /// hash), hardware and options: `program`, `hardware`, `game options`.
    pub fn game_differences(
        &self,
        program_hash: u64,
        hardware: &accel_sim::HardwareFile,
        options: &malloc_game::GameOptions,
    ) -> Vec<&'static str> {
        let mut differ = Vec::new();
        if self.program_hash != program_hash {
            differ.push("program");
        }
        let ours = serde_json::to_value(&self.hardware).ok();
        if ours.is_none() || ours != serde_json::to_value(hardware).ok() {
            differ.push("hardware");
        }
        if self.options != *options {
            differ.push("game options");
        }
        differ
    }
}

/// Where a run's program came from, to load it again: the file it was loaded from, else
/// the built-in of its name, else the run's copy.
pub(super) struct RecordedProgram<'a> {
    pub workload: &'a str,
    pub workload_path: Option<&'a str>,
    pub hash: u64,
}

impl RecordedProgram<'_> {
    /// The program, refused if it is not the one the run started with. `copy` is the
    /// run's copy of it, used when the file moved or the program was built in code.
    pub fn load(&self, copy: &Path) -> Result<Program, TrainError> {
        let from_copy = || {
            let p = bench_workloads::load(&copy.display().to_string())?;
            same_program(p, self.hash, || {
                format!("{} (the run's copy)", copy.display())
            })
        };
        if let Some(path) = self.workload_path {
            if !Path::new(path).exists() {
                return from_copy();
            }
            let p = bench_workloads::load(path)?;
            return same_program(p, self.hash, || {
                format!(
                    "{path} (move it away to resume from the run's copy {})",
                    copy.display()
                )
            });
        }
        if bench_workloads::is_builtin(self.workload) {
            let p = bench_workloads::load(self.workload)?;
            return same_program(p, self.hash, || {
                format!("this build's built-in workload `{}`", self.workload)
            });
        }
        if copy.exists() {
            return from_copy();
        }
        // A run folder from before `workload_path` and `program.json` were recorded.
        let p = bench_workloads::load(self.workload)?;
        same_program(p, self.hash, || self.workload.to_string())
    }
}

fn same_program(
    p: Program,
    hash: u64,
    origin: impl FnOnce() -> String,
) -> Result<Program, TrainError> {
    if p.content_hash() == hash {
        return Ok(p);
    }
    Err(TrainError::Resume(format!(
        "the program changed since this run started: {} has program hash {:#018x}, the run's is {:#018x}",
        origin(),
        p.content_hash(),
        hash
    )))
}

/// The case whose program copy case `k` of a multi-program run reads: the first with the
/// same program (cases that differ only in hardware or capacity share its copy).
fn copy_index(cases: &[CaseInfo], k: usize) -> usize {
    let hash = cases[k].program_hash;
    cases
        .iter()
        .position(|c| c.program_hash == hash)
        .unwrap_or(k)
}

/// Case `k`'s program copy in a multi-program run folder.
fn program_copy(dir: &Path, k: usize) -> PathBuf {
    dir.join(PROGRAMS).join(format!("{k:03}.json"))
}

fn rules_v1() -> u32 {
    1
}

/// Reads a run's `run.json`; a folder of another kind of run (a race's, an EGRL run's) is
/// refused, naming what it is.
pub fn read_run_info(dir: &Path) -> Result<RunInfo, TrainError> {
    binio::check_folder_kind(dir, binio::FolderKind::Training, binio::Purpose::Read)?;
    // What is read here is the run's network and its game options, which any rules of
    // `NETWORK_RULES` share.
    read_info_at(&dir.join("run.json"), &malloc_game::NETWORK_RULES)
}

/// Reads `run.json` at `path`, refusing a run made under rules not in `rules` before its
/// options (whose modes changed) can fail on a field.
fn read_info_at(path: &Path, rules: &[u32]) -> Result<RunInfo, TrainError> {
    let value: serde_json::Value = read_json(path)?;
    // An EGRL run has no `rules` either: it is not a mallocMuZero run of old rules.
    if value.get("format").and_then(|f| f.as_str()) == Some("egrl-run") {
        return Err(TrainError::Json {
            path: path.display().to_string(),
            source: serde::de::Error::custom(
                "an EGRL run folder (made by `mallocmuzero train-egrl`), not a mallocMuZero training run: continue it with `mallocmuzero train-egrl --resume`; its best mapping is best/mapping.json (`evaluate --mapping`)",
            ),
        });
    }
    let found = value.get("rules").map_or(Some(1), |r| r.as_u64());
    if !found.is_some_and(|f| rules.iter().any(|&r| u64::from(r) == f)) {
        return Err(TrainError::Rules {
            path: path.display().to_string(),
            found: found.map_or_else(|| "?".to_string(), |r| r.to_string()),
            current: malloc_game::RULES_VERSION,
        });
    }
    run_info_from(value).map_err(|source| TrainError::Json {
        path: path.display().to_string(),
        source,
    })
}

/// A `run.json`'s run, where options without a `reward` are those of a run made before
/// the game had reward kinds: its games earned the cost model's rewards (`proxy`), and its
/// network reads the observation of that setting. (A missing field would otherwise take
/// today's default, another game.)
pub(crate) fn run_info_from(mut value: serde_json::Value) -> Result<RunInfo, serde_json::Error> {
    if let Some(options) = value.get_mut("options").and_then(|o| o.as_object_mut()) {
        options
            .entry("reward")
            .or_insert_with(|| malloc_game::Reward::Proxy.as_str().into());
    }
    serde_json::from_value(value)
}

/// Loads the newest checkpoint's network of a run directory.
pub fn load_network(dir: &Path) -> Result<MuZeroNet, TrainError> {
    let run = RunDir::new(dir);
    let info = read_run_info(dir)?;
    let latest = run.read_latest()?.ok_or_else(|| TrainError::NoCheckpoint {
        dir: dir.display().to_string(),
    })?;
    let path = run.checkpoint(&latest.dir).join("weights.safetensors");
    Ok(MuZeroNet::load(&path, &info.network, &device())?)
}

/// The paths of a run directory and what is done to them.
#[derive(Clone)]
pub(super) struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: &Path) -> RunDir {
        RunDir {
            root: root.to_path_buf(),
        }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn best(&self) -> PathBuf {
        self.root.join("best")
    }
    /// Where case `k` of the run `info` keeps its best mapping: `best/` in a run of one
    /// program, `best/NNN/` in a multi-program run.
    pub fn case_best(&self, info: &RunInfo, k: usize) -> PathBuf {
        match info.is_multi() {
            true => self.best().join(format!("{k:03}")),
            false => self.best(),
        }
    }
    pub fn games(&self) -> PathBuf {
        self.root.join("games")
    }
    fn checkpoints(&self) -> PathBuf {
        self.root.join("checkpoints")
    }
    fn checkpoint(&self, name: &str) -> PathBuf {
        self.checkpoints().join(name)
    }
    fn metrics(&self) -> PathBuf {
        self.root.join("metrics.jsonl")
    }

    /// Makes the run's folders. The root is the user's to name (a link to a folder is
    /// theirs to give); the folders inside are the run's own, never links out of it, so
    /// that nothing the run writes or deletes in them is elsewhere.
    pub fn create(&self) -> Result<(), TrainError> {
        std::fs::create_dir_all(&self.root).map_err(io_error(&self.root))?;
        for d in [self.games(), self.best(), self.checkpoints()] {
            binio::create_own_folder(&d).map_err(io_error(&d))?;
        }
        Ok(())
    }

    /// Removes the files the run `info` would write in its cases' `best/` folders (they
    /// are nobody's without a run.json), and nothing else: the folder may be the user's.
    pub fn clear_best(&self, info: &RunInfo) -> Result<(), TrainError> {
        let cases = info.cases.len().max(1);
        let files = (0..cases).flat_map(|k| BEST_FILES.map(|f| self.case_best(info, k).join(f)));
        for path in files {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_error(&path)(e))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `run.json`, if the folder holds a run.
    pub fn read_info(&self) -> Result<Option<RunInfo>, TrainError> {
        let path = self.root.join("run.json");
        if !path.exists() {
            return Ok(None);
        }
        // A run resumes only under its own rules: its stored games replay move by move.
        read_info_at(&path, &[malloc_game::RULES_VERSION]).map(Some)
    }

    /// Writes the programs' copies (`program.json`, the first case's, and in a
    /// multi-program run `programs/NNN.json`), then `run.json`: a folder with `run.json`
    /// has them all. `setups` are the run's cases' games, in order.
    pub fn write_info(&self, info: &RunInfo, setups: &[Arc<GameSetup>]) -> Result<(), TrainError> {
        let copy = |path: &Path, program: &Program| {
            let text = bench_workloads::json::to_json(program, None);
            binio::write_bytes_atomic(path, text.as_bytes())
        };
        if let Some(first) = setups.first() {
            copy(&self.root.join(PROGRAM_JSON), first.program())?;
        }
        if info.is_multi() {
            let programs = self.root.join(PROGRAMS);
            binio::create_own_folder(&programs).map_err(io_error(&programs))?;
            for (k, setup) in setups.iter().enumerate() {
                if copy_index(&info.cases, k) == k {
                    copy(&program_copy(&self.root, k), setup.program())?;
                }
            }
        }
        Ok(write_json(&self.root.join("run.json"), info)?)
    }

    /// The newest complete checkpoint, if there is one.
    pub fn read_latest(&self) -> Result<Option<Latest>, TrainError> {
        let path = self.checkpoints().join("latest.json");
        if !path.exists() {
            return Ok(None);
        }
        let latest: Latest = read_json(&path)?;
        // The checkpoint is a folder of this run's own: a name that climbs out of
        // checkpoints/ (an edited or hostile file) would load, and later remove, another's.
        if !is_checkpoint_name(&latest.dir) {
            return Err(TrainError::RunFile {
                path: path.display().to_string(),
                field: "dir",
                msg: format!(
                    "{:?} is not a checkpoint folder of this run (iter-N)",
                    latest.dir
                ),
            });
        }
        Ok(Some(latest))
    }

    /// The checkpoint a session continues from, and a note where it is not the one
    /// `latest.json` names. Where `latest.json` is missing, damaged or names a folder that
    /// is gone, the newest complete checkpoint folder on disk is taken (complete: its
    /// `checkpoint.json`, written after its other files, is there and reads), and
    /// `latest.json` is written again to name it. Where nothing complete is left but the
    /// folder shows a run that had one (a damaged `latest.json`, or metrics past the first
    /// checkpoint), the run is refused, naming what is there: nothing is deleted unless the
    /// user restarts the run. `checkpoint_every` is the run's cadence.
    pub fn checkpoint_to_resume(
        &self,
        checkpoint_every: u64,
    ) -> Result<(Option<Latest>, Option<String>), TrainError> {
        let path = self.checkpoints().join("latest.json");
        let trouble = match self.read_latest() {
            Ok(Some(l)) if self.checkpoint(&l.dir).is_dir() => return Ok((Some(l), None)),
            Ok(Some(l)) => Some(format!(
                "{} names checkpoint {}, which is not on disk",
                path.display(),
                l.dir
            )),
            Ok(None) => None,
            Err(e) => Some(format!("{e}")),
        };
        if let Some(found) = self.complete_checkpoints()?.into_iter().next() {
            let why = trouble.unwrap_or_else(|| format!("{} is missing", path.display()));
            write_json(&path, &found)?;
            let note = format!(
                "{why}: resumed from the newest complete checkpoint on disk, {}",
                found.dir
            );
            return Ok((Some(found), Some(note)));
        }
        let recorded = self.metrics_iterations()?;
        let lost = match (trouble, recorded) {
            (Some(t), _) => Some(t),
            (None, Some(n)) if n >= checkpoint_every => Some(format!(
                "{} records {n} iterations, so the run wrote a checkpoint, but {} is missing",
                self.metrics().display(),
                path.display()
            )),
            _ => None,
        };
        if let Some(lost) = lost {
            let folders: Vec<String> = subdirs(&self.checkpoints())?
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
                .filter(|n| is_checkpoint_name(n))
                .collect();
            let there = match folders.is_empty() {
                true => "no checkpoint folder".to_string(),
                false => format!("no complete one among {}", folders.join(", ")),
            };
            return Err(TrainError::Resume(format!(
                "{lost}, and checkpoints/ holds {there} (a checkpoint is complete once its checkpoint.json is written): nothing was deleted; restore the file, or start this run afresh with --restart (deletes its checkpoints and metrics, keeps best/)"
            )));
        }
        Ok((None, None))
    }

    /// The checkpoint folders whose `checkpoint.json` reads and names the folder itself,
    /// newest first.
    fn complete_checkpoints(&self) -> Result<Vec<Latest>, TrainError> {
        let mut found: Vec<Latest> = Vec::new();
        for path in subdirs(&self.checkpoints())? {
            let name = path.file_name().map(|n| n.to_string_lossy().to_string());
            let Some(name) = name.filter(|n| is_checkpoint_name(n)) else {
                continue;
            };
            match read_json::<Latest>(&path.join("checkpoint.json")) {
                Ok(l) if l.dir == name => found.push(l),
                _ => {}
            }
        }
        found.sort_by_key(|l| std::cmp::Reverse(l.iteration));
        Ok(found)
    }

    /// How many iterations `metrics.jsonl` records (one past the largest it names).
    fn metrics_iterations(&self) -> Result<Option<u64>, TrainError> {
        let Some(bytes) = self.read_metrics()? else {
            return Ok(None);
        };
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(line_iteration)
            .max()
            .map(|i| i + 1))
    }

    /// `metrics.jsonl`'s bytes, if the run has one.
    fn read_metrics(&self) -> Result<Option<Vec<u8>>, TrainError> {
        let path = self.metrics();
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    /// Forgets every checkpoint and metrics line of the run (`--restart`): `latest.json`
    /// first, so a kill midway leaves a folder that starts afresh.
    pub fn forget_checkpoints(&self) -> Result<(), TrainError> {
        let path = self.checkpoints().join("latest.json");
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(&path)(e)),
            _ => {}
        }
        self.roll_back_to(None, false)
    }

    /// Brings the folder back to the state of the checkpoint `latest` a session continues
    /// from (`None`: no checkpoint, a fresh start). What a killed
    /// session left after it goes: temporary files of interrupted atomic writes, metrics
    /// lines and evaluation games of later iterations (the session plays them again), and
    /// checkpoint folders other than `latest` (one being written when it was killed), or
    /// only those after it where `keep_older`.
    pub fn roll_back_to(
        &self,
        latest: Option<&Latest>,
        keep_older: bool,
    ) -> Result<(), TrainError> {
        self.remove_temp_files()?;
        let through = latest.map(|l| l.iteration);
        self.truncate_metrics(through)?;
        self.remove_eval_games_after(through)?;
        self.remove_checkpoints_except(latest, keep_older)
    }

    /// Removes the `.NAME.tmp.*` files binio's atomic writes leave when killed mid-write:
    /// any in the run's own subfolders, and those of the run's files in its root (which
    /// may be a folder of the user's).
    fn remove_temp_files(&self) -> Result<(), TrainError> {
        let programs = self.root.join(PROGRAMS);
        binio::refuse_link(&programs).map_err(io_error(&programs))?;
        let mut dirs = vec![self.best(), self.games(), self.checkpoints(), programs];
        dirs.extend(subdirs(&self.checkpoints())?);
        dirs.extend(subdirs(&self.best())?);
        let mut found: Vec<PathBuf> = Vec::new();
        for d in dirs {
            let e = entries(&d)?;
            let ours = e.into_iter().filter(|e| binio::is_temp_file_name(&e.name));
            // A link named like one goes itself (never what it leads to); a folder stays.
            found.extend(ours.filter(|e| !e.is_dir).map(|e| e.path));
        }
        let root_files = ["run.json", "program.json", "metrics.jsonl"];
        for e in entries(&self.root)? {
            let ours = root_files
                .iter()
                .any(|f| e.name.starts_with(&format!(".{f}.tmp.")));
            if ours && !e.is_dir {
                found.push(e.path);
            }
        }
        for path in found {
            std::fs::remove_file(&path).map_err(io_error(&path))?;
        }
        Ok(())
    }

    /// Keeps the metrics lines of iterations `<= through`, once each, and drops a line a
    /// kill cut short; rewritten atomically.
    fn truncate_metrics(&self, through: Option<u64>) -> Result<(), TrainError> {
        let Some(bytes) = self.read_metrics()? else {
            return Ok(());
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut kept = String::new();
        let mut next = 0u64;
        for line in text.lines() {
            match line_iteration(line) {
                Some(i) if i >= next && through.is_some_and(|t| i <= t) => {
                    kept.push_str(line);
                    kept.push('\n');
                    next = i + 1;
                }
                _ => {}
            }
        }
        if kept.as_bytes() != bytes.as_slice() {
            binio::write_bytes_atomic(&self.metrics(), kept.as_bytes())?;
        }
        Ok(())
    }

    fn remove_eval_games_after(&self, through: Option<u64>) -> Result<(), TrainError> {
        for Entry { name, path, .. } in entries(&self.games())? {
            let it = name
                .strip_prefix("eval-")
                .and_then(|n| n.strip_suffix(".game"))
                .and_then(|n| n.parse::<u64>().ok());
            if it.is_some_and(|i| through.is_none_or(|t| i > t)) {
                std::fs::remove_file(&path).map_err(io_error(&path))?;
            }
        }
        Ok(())
    }

    /// Removes the checkpoint folders other than `keep`'s: all of them, or only those of
    /// later iterations (a kill's unfinished one) where `keep_older`. Anything else named
    /// like one (a link) is removed itself, never what it leads to.
    fn remove_checkpoints_except(
        &self,
        keep: Option<&Latest>,
        keep_older: bool,
    ) -> Result<(), TrainError> {
        for Entry {
            name, path, is_dir, ..
        } in entries(&self.checkpoints())?
        {
            let Some(it) = name.strip_prefix("iter-") else {
                continue;
            };
            if !is_dir {
                std::fs::remove_file(&path).map_err(io_error(&path))?;
                continue;
            }
            let older = match (keep, it.parse::<u64>()) {
                (Some(k), Ok(i)) => i < k.iteration,
                _ => false,
            };
            if Some(name.as_str()) != keep.map(|k| k.dir.as_str()) && !(keep_older && older) {
                std::fs::remove_dir_all(&path).map_err(io_error(&path))?;
            }
        }
        Ok(())
    }

    /// Appends one iteration's line to `metrics.jsonl` in one write, so a kill leaves at
    /// most a cut last line (which the next start or resume drops).
    pub fn append_metrics(&self, p: &Progress) -> Result<(), TrainError> {
        Ok(append_json_line(&self.metrics(), p)?)
    }

    /// Writes checkpoint `s`; `latest.json` last, so a checkpoint counts only once
    /// complete. Then the folders of other checkpoints go, or only those past `s` where
    /// `keep_older` (`keep_checkpoints`).
    pub fn save_checkpoint(&self, s: &Snapshot, keep_older: bool) -> Result<(), TrainError> {
        let here = self.checkpoint(&s.latest.dir);
        binio::create_own_folder(&here).map_err(io_error(&here))?;
        binio::write_bytes_atomic(&here.join("weights.safetensors"), &s.weights)?;
        binio::write_bytes_atomic(&here.join("optimizer.bin"), &s.optimizer)?;
        for (name, buffer) in [("replay.bin", &s.replay), ("demos.bin", &s.demos)] {
            binio::write_atomic(&here.join(name), REPLAY_MAGIC, REPLAY_VERSION, buffer)?;
        }
        // Each folder says which iterations it holds, so a kept one is read on its own.
        write_json(&here.join("checkpoint.json"), &s.latest)?;
        write_json(&self.checkpoints().join("latest.json"), &s.latest)?;
        self.remove_checkpoints_except(Some(&s.latest), keep_older)
    }

    /// The learner's state saved in checkpoint `latest`.
    pub fn load_checkpoint(
        &self,
        latest: &Latest,
        network: &NetworkConfig,
        optim: &OptimConfig,
    ) -> Result<Learner, TrainError> {
        let here = self.checkpoint(&latest.dir);
        let net = MuZeroNet::load(&here.join("weights.safetensors"), network, &device())?;
        let opt = Optimizer::load(&here.join("optimizer.bin"), net.vars(), Some(optim.clone()))?;
        let replay =
            binio::read::<ReplayBuffer>(&here.join("replay.bin"), REPLAY_MAGIC, REPLAY_VERSION)?;
        let demos =
            binio::read::<ReplayBuffer>(&here.join("demos.bin"), REPLAY_MAGIC, REPLAY_VERSION)?;
        Ok(Learner {
            net,
            opt,
            replay,
            demos,
        })
    }
}

/// The iteration a metrics line records; none for a line a kill cut short.
fn line_iteration(line: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v["iteration"].as_u64())
}

/// A checkpoint folder's name as a run writes it: `iter-` and digits, nothing that is a path.
fn is_checkpoint_name(name: &str) -> bool {
    name.strip_prefix("iter-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// An entry of a run's folder, as it is: a link to a folder is not a folder here, so
/// nothing is swept or removed through one.
struct Entry {
    name: String,
    path: PathBuf,
    is_dir: bool,
}

/// The entries of `dir` (none if it does not exist).
fn entries(dir: &Path) -> Result<Vec<Entry>, TrainError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir)(e)),
    };
    let mut out = Vec::new();
    for e in read {
        let e = e.map_err(io_error(dir))?;
        // The entry's own type: a symbolic link is not followed.
        let t = e.file_type().map_err(io_error(&e.path()))?;
        out.push(Entry {
            name: e.file_name().to_string_lossy().to_string(),
            path: e.path(),
            is_dir: t.is_dir(),
        });
    }
    Ok(out)
}

/// The folders in `dir`, links to folders left out.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, TrainError> {
    Ok(entries(dir)?
        .into_iter()
        .filter(|e| e.is_dir)
        .map(|e| e.path)
        .collect())
}

#[cfg(test)]
mod tests;
