//! A race's folder (`race --out DIR`), and the rules by which a race run again into it
//! keeps what it finds there.
//!
//! `DIR/results.json` holds the race's budget, seed and threads and every result so far,
//! rewritten atomically after each solver; `DIR/<workload>-<hardware>/` holds each
//! solver's best mapping (`<solver>.mapping.json`), the curves (`curves.svg`, and
//! `evaluations.svg` for EGRL's solvers) and `muzero-train`'s run folder (`muzero-run/`).
//! A race run again into the same folder with the same budget, seed and threads keeps each
//! saved result found under the same settings ([`crate::race::settings_of`]) whose mapping
//! still checks out ([`crate::race::recheck`]), and races only the rest: a race killed at
//! any moment resumes with every result found so far. [`race_into`] is that whole run,
//! the one the command line and the Python package both call.

use crate::evaluate::{Case, EvalError};
use crate::race::{self, RaceConfig, RaceError, RaceResult};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What `results.json` holds now: 2 added each result's settings (its reuse key).
pub const RESULTS_VERSION: u32 = 2;

/// Why a race folder could not be opened, kept or written; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// Another process writes the folder.
    #[error(transparent)]
    Lock(#[from] binio::LockError),
    /// The folder holds another kind of run ([`binio::FolderKind`]).
    #[error(transparent)]
    Kind(#[from] binio::KindError),
    /// A saved mapping could not be read or written.
    #[error(transparent)]
    Bin(#[from] binio::BinError),
    /// A results file could not be read.
    #[error(transparent)]
    Text(#[from] accel_sim::TextFileError),
    /// A solver of the race failed.
    #[error(transparent)]
    Race(Box<RaceError>),
    /// A case of the race could not be built.
    #[error(transparent)]
    Eval(Box<EvalError>),
    /// A file of the folder could not be read or written.
    #[error("{path}: {msg}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// The folder holds another race (another budget, seed, threads or build), or a
    /// result found under other settings: it is not this race's to continue.
    #[error("{0}")]
    NotThisRace(String),
}

impl From<RaceError> for FolderError {
    fn from(e: RaceError) -> FolderError {
        FolderError::Race(Box::new(e))
    }
}

impl From<EvalError> for FolderError {
    fn from(e: EvalError) -> FolderError {
        FolderError::Eval(Box::new(e))
    }
}

/// `results.json`: the race's settings and every result so far.
#[derive(Serialize, Deserialize, Default)]
struct Saved {
    /// [`RESULTS_VERSION`] when written; absent (1) in files of older builds.
    #[serde(default = "version_1")]
    version: u32,
    seconds: f64,
    seed: u64,
    threads: usize,
    results: Vec<RaceResult>,
}

fn version_1() -> u32 {
    1
}

/// A race's folder, locked for this process while it lives (or none: a race that keeps
/// nothing, whose results live in memory only).
pub struct RaceFolder {
    dir: Option<PathBuf>,
    saved: Saved,
    _lock: Option<binio::FolderLock>,
}

impl RaceFolder {
    /// The folder `dir` for a race of `cases` with this budget, seed and threads: locked
    /// (one race writes a folder at a time), the temporary files of writes a killed race
    /// left in it swept, and the results of an earlier race into it read back. An earlier
    /// race with another budget, seed or threads, or of an older build, is an error
    /// rather than a mix; so is a folder of another kind of run (a training run's, an EGRL
    /// run's), and a case's folder that is a link out of the race's. Nothing is written
    /// until [`RaceFolder::save`], but for the lock, the folder's kind
    /// ([`binio::claim_folder`]) and the renaming of an older build's training result
    /// ([`RaceFolder::migrate`]).
    pub fn open(
        dir: Option<&Path>,
        cases: &[Case],
        seconds: f64,
        seed: u64,
        threads: usize,
    ) -> Result<RaceFolder, FolderError> {
        let lock = match dir {
            Some(dir) => {
                binio::check_folder_kind(dir, binio::FolderKind::Race, binio::Purpose::Write)?;
                let lock = binio::FolderLock::acquire(dir)?;
                binio::claim_folder(dir, binio::FolderKind::Race)?;
                binio::remove_temp_files(dir)?;
                for case in cases {
                    let case_dir = dir.join(case_folder(case));
                    binio::refuse_link(&case_dir).map_err(|e| io(&case_dir, e))?;
                    binio::remove_temp_files(&case_dir)?;
                }
                Some(lock)
            }
            None => None,
        };
        let mut folder = RaceFolder {
            dir: dir.map(Path::to_path_buf),
            saved: Saved {
                version: RESULTS_VERSION,
                seconds,
                seed,
                threads,
                results: Vec::new(),
            },
            _lock: lock,
        };
        if let Some(path) = folder.results_path().filter(|p| p.exists()) {
            folder.saved = read_saved(&path, seconds, seed, threads)?;
            folder.migrate()?;
        }
        Ok(folder)
    }

    /// Builds before the guided agent (`muzero` as the local search guided by the
    /// network) raced the agent's self-play training under the name `muzero`, the solver
    /// now named [`race::MUZERO_TRAIN`], into the same `muzero-run/`. Such a result is
    /// known by its settings: the training race records its `train` config, the guided
    /// search its `guide`. It is renamed, in memory and its mapping file on disk, so that
    /// `muzero-train` reuses it and `muzero` races afresh. The mapping file is renamed
    /// first: a race killed before `results.json` is saved finds the result under its old
    /// name and the file under its new one, and migrates it again.
    fn migrate(&mut self) -> Result<(), FolderError> {
        let old = "muzero";
        for i in 0..self.saved.results.len() {
            let r = &self.saved.results[i];
            let trained = r
                .settings
                .as_ref()
                .is_some_and(|s| s.get("train").is_some() && s.get("guide").is_none());
            let taken = self.saved.results.iter().any(|s| {
                s.solver == race::MUZERO_TRAIN
                    && s.workload == r.workload
                    && s.hardware == r.hardware
            });
            if r.solver != old || !trained || taken {
                continue;
            }
            if let Some(dir) = &self.dir {
                let case_dir = dir.join(folder_name(&r.workload, &r.hardware));
                binio::refuse_link(&case_dir).map_err(|e| io(&case_dir, e))?;
                let from = case_dir.join(format!("{old}.mapping.json"));
                let to = case_dir.join(format!("{}.mapping.json", race::MUZERO_TRAIN));
                if from.exists() && !to.exists() {
                    std::fs::rename(&from, &to).map_err(|e| io(&from, e))?;
                }
            }
            self.saved.results[i].solver = race::MUZERO_TRAIN.to_string();
        }
        Ok(())
    }

    /// `DIR/results.json`.
    pub fn results_path(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join("results.json"))
    }

    /// The folder of `case`'s mappings, curves and agent run.
    pub fn case_dir(&self, case: &Case) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(case_folder(case)))
    }

    /// A saved result of `solver` on `case` found under other settings than `config`'s
    /// (another capacity, other rules, another config) is not this race's: an error
    /// naming what differs. Checked for every solver before the first budget starts.
    pub fn check_settings(
        &self,
        case: &Case,
        solver: &str,
        config: &RaceConfig,
    ) -> Result<(), FolderError> {
        let Some(i) = self.saved_index(case, solver) else {
            return Ok(());
        };
        let now = race::settings_of(case, solver, config);
        let differ = match &self.saved.results[i].settings {
            Some(s) => race::settings_differ(s, &now),
            None => vec!["settings (not recorded)".to_string()],
        };
        if differ.is_empty() {
            return Ok(());
        }
        Err(FolderError::NotThisRace(format!(
            "{}: holds {solver} on {} on {} raced with other settings ({}); pick another --out",
            self.results_path().unwrap_or_default().display(),
            case.program.name(),
            case.hw.name,
            differ.join(", ")
        )))
    }

    /// The saved result of `solver` on `case`, re-validated and re-simulated from its
    /// mapping file: `None` when there is none, `Some(Err(why))` when it does not check
    /// out (it is dropped, to be raced again).
    pub fn reuse(&mut self, case: &Case, solver: &str) -> Option<Result<RaceResult, String>> {
        let i = self.saved_index(case, solver)?;
        let mapping = self.case_dir(case).and_then(|dir| {
            let path = dir.join(format!("{solver}.mapping.json"));
            crate::evaluate::read_mapping(&path, &case.program).ok()
        });
        let checked = race::recheck(case, &self.saved.results[i], mapping);
        if checked.is_err() {
            self.saved.results.remove(i);
        }
        Some(checked)
    }

    /// Where `muzero-train`'s run goes on `case`; one left by a race killed before
    /// its result was saved is removed (its budget was not spent to the end).
    pub fn agent_dir(&self, case: &Case) -> Result<Option<PathBuf>, FolderError> {
        let Some(dir) = self.case_dir(case) else {
            return Ok(None);
        };
        binio::create_own_folder(&dir).map_err(|e| io(&dir, e))?;
        let run = dir.join("muzero-run");
        // A link in its place goes itself, never what it leads to.
        if std::fs::symlink_metadata(&run).is_ok() {
            std::fs::remove_dir_all(&run).map_err(|e| io(&run, e))?;
        }
        Ok(Some(run))
    }

    /// Keeps a fresh result of `case`: its mapping in the case's folder, the result in
    /// `results.json`.
    pub fn record(&mut self, case: &Case, result: &RaceResult) -> Result<(), FolderError> {
        if let (Some(dir), Some(m)) = (self.case_dir(case), &result.mapping) {
            binio::create_own_folder(&dir).map_err(|e| io(&dir, e))?;
            let path = dir.join(format!("{}.mapping.json", result.solver));
            race::save_mapping(case, m, &path)?;
        }
        self.saved.results.push(result.clone());
        self.save()
    }

    /// Ends `case` with its `results` (with their gaps, [`race::fill_gaps`]):
    /// `results.json` gets the gaps too, and the case's folder its curves over the race's
    /// budget.
    pub fn finish_case(&mut self, case: &Case, results: &[RaceResult]) -> Result<(), FolderError> {
        for r in results {
            if let Some(s) = self.saved.results.iter_mut().find(|s| {
                s.workload == r.workload && s.hardware == r.hardware && s.solver == r.solver
            }) {
                (s.lower_bound_s, s.bound_source) = (r.lower_bound_s, r.bound_source);
                (s.gap_to_bound, s.primal_integral) = (r.gap_to_bound, r.primal_integral);
            }
        }
        self.save()?;
        match self.case_dir(case) {
            Some(dir) => write_svg(case, results, self.saved.seconds, &dir),
            None => Ok(()),
        }
    }

    /// Writes `results.json` (atomically).
    pub fn save(&self) -> Result<(), FolderError> {
        let Some(path) = self.results_path() else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let text = serde_json::to_string_pretty(&self.saved).map_err(|e| FolderError::Io {
            path: path.display().to_string(),
            msg: e.to_string(),
        })?;
        binio::write_bytes_atomic(&path, text.as_bytes())?;
        Ok(())
    }

    fn saved_index(&self, case: &Case, solver: &str) -> Option<usize> {
        self.saved.results.iter().position(|r| {
            r.workload == case.program.name() && r.hardware == case.hw.name && r.solver == solver
        })
    }
}

/// One result of [`race_into`]: raced now, or kept from the folder.
#[derive(Clone, Debug)]
pub struct Finished {
    /// The solver's result on the case.
    pub result: RaceResult,
    /// Kept from an earlier race into the folder (re-validated and re-simulated), not
    /// raced again.
    pub reused: bool,
}

/// Races `solvers` on each of `cases` into the folder `out` (none: nothing kept), as
/// `race --out` does: the names and every solver's config are checked, the folder opened
/// and each saved result's settings checked before the first budget starts; a saved
/// result that still checks out is kept, and the rest are raced by `run` (given the case,
/// the name and its config; [`race::race_case`], or the same with progress shown), each
/// kept as soon as it is found (a [`RaceError`] comes back as [`FolderError::Race`]).
/// `dropped` hears of each saved result that no longer checks out (case, solver, why),
/// which is raced again. `config_of` gives each case's config; the budget, seed and
/// threads of the first case's are the folder's.
pub fn race_into(
    out: Option<&Path>,
    cases: &[Case],
    solvers: &[String],
    config_of: &dyn Fn(&Case) -> RaceConfig,
    run: &mut dyn FnMut(&Case, &str, &RaceConfig) -> Result<RaceResult, FolderError>,
    dropped: &mut dyn FnMut(&Case, &str, &str),
) -> Result<Vec<Finished>, FolderError> {
    race::check_solvers(solvers)?;
    for case in cases {
        race::check_config(case, solvers, &config_of(case))?;
    }
    let Some(first) = cases.first() else {
        return Ok(Vec::new());
    };
    let c = config_of(first);
    // One race writes a folder at a time; what a killed race's writes left is swept.
    let mut folder = RaceFolder::open(out, cases, c.seconds, c.seed, c.threads)?;
    for case in cases {
        for name in solvers {
            folder.check_settings(case, name, &config_of(case))?;
        }
    }
    folder.save()?;
    let mut all = Vec::new();
    for case in cases {
        let mut results = Vec::new();
        let mut reused = Vec::new();
        for name in solvers {
            match folder.reuse(case, name) {
                Some(Ok(r)) => {
                    results.push(r);
                    reused.push(true);
                    continue;
                }
                Some(Err(why)) => dropped(case, name, &why),
                None => {}
            }
            let mut config = config_of(case);
            if name == race::MUZERO_TRAIN {
                config.agent_dir = folder.agent_dir(case)?;
            }
            let r = run(case, name, &config)?;
            folder.record(case, &r)?;
            results.push(r);
            reused.push(false);
        }
        race::fill_gaps(&mut results, case, c.seconds)?;
        folder.finish_case(case, &results)?;
        all.extend(
            results
                .into_iter()
                .zip(reused)
                .map(|(result, reused)| Finished { result, reused }),
        );
    }
    Ok(all)
}

/// The folder of `case` in a race's folder: `<workload>-<hardware>`, path separators and
/// spaces made `_`, and a name too long for a file system shortened with a hash of the
/// whole ([`malloc_game::record::bounded_name`]), so that two long names stay two folders.
pub fn case_folder(case: &Case) -> String {
    folder_name(case.program.name(), &case.hw.name)
}

fn folder_name(workload: &str, hardware: &str) -> String {
    let name = format!("{workload}-{hardware}").replace(['/', '\\', ' '], "_");
    malloc_game::record::bounded_name(&name, MAX_FOLDER_NAME)
}

/// The longest case folder name, in bytes: under the common file systems' 255.
const MAX_FOLDER_NAME: usize = 200;

fn io(path: &Path, e: std::io::Error) -> FolderError {
    FolderError::Io {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

/// The results of an earlier race at `path`, if it had the same budget, seed and threads.
fn read_saved(path: &Path, seconds: f64, seed: u64, threads: usize) -> Result<Saved, FolderError> {
    let text = accel_sim::read_text(path)?;
    let saved: Saved = serde_json::from_str(&text).map_err(|e| FolderError::Io {
        path: path.display().to_string(),
        msg: e.to_string(),
    })?;
    if saved.version != RESULTS_VERSION {
        return Err(FolderError::NotThisRace(format!(
            "{}: field `version`: written by an older build (version {}; this build writes {RESULTS_VERSION}, whose results carry the settings they were found under); pick another --out",
            path.display(),
            saved.version
        )));
    }
    if saved.seconds != seconds || saved.seed != seed || saved.threads != threads {
        return Err(FolderError::NotThisRace(format!(
            "{}: holds a race with --seconds {} --seed {} --threads {}; pick another --out",
            path.display(),
            saved.seconds,
            saved.seed,
            saved.threads
        )));
    }
    Ok(saved)
}

/// The case's curves: best latency against time (`curves.svg`) and, for solvers that
/// count their evaluations, against mappings evaluated (`evaluations.svg`).
fn write_svg(
    case: &Case,
    results: &[RaceResult],
    seconds: f64,
    dir: &Path,
) -> Result<(), FolderError> {
    let xla = crate::evaluate::xla_latency(&case.program, &case.hw)?;
    let title = format!(
        "{} on {}: best mapping against time",
        case.program.name(),
        case.hw.name
    );
    let svg = crate::curves::curves_svg(&title, results, seconds, xla);
    binio::create_own_folder(dir).map_err(|e| io(dir, e))?;
    binio::write_bytes_atomic(&dir.join("curves.svg"), svg.as_bytes())?;
    if results.iter().any(|r| !r.evaluations_curve.is_empty()) {
        let title = format!(
            "{} on {}: best mapping against mappings evaluated",
            case.program.name(),
            case.hw.name
        );
        let svg = crate::curves::evaluations_svg(&title, results, xla);
        binio::write_bytes_atomic(&dir.join("evaluations.svg"), svg.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_folder_names_stay_short_and_distinct() {
        assert_eq!(
            folder_name("resnet50", "tpu-v4i-like"),
            "resnet50-tpu-v4i-like"
        );
        assert_eq!(folder_name("a/b c", "hw"), "a_b_c-hw");
        let long = "w".repeat(300);
        let a = folder_name(&long, "tpu-v4i-like");
        let b = folder_name(&long, "nnp-i-like");
        assert!(
            a.len() <= MAX_FOLDER_NAME && b.len() <= MAX_FOLDER_NAME,
            "{a}"
        );
        assert_ne!(a, b);
    }
}
