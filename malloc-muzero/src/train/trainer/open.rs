//! Opening a run's folder: a new run started ([`Trainer::start_cases`]) or an old one
//! resumed ([`Trainer::resume`]), its cases, learner and counters read back.

use super::Trainer;
use crate::train::case::CaseRun;
use crate::train::checkpoint::CheckpointWriter;
use crate::train::counters::Counters;
use crate::train::demos::Demonstrations;
use crate::train::learner::Learner;
use crate::train::run_dir::{CaseInfo, RunDir, RunInfo};
use crate::train::{TrainConfig, TrainError};
use malloc_game::{observation, GameSetup};
use muzero::NetworkConfig;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A case of a run: its name (in progress lines and summaries), the workload as the user
/// gave it (a built-in name or a program file), and the game.
pub struct TrainCase {
    /// Its name in progress lines and summaries.
    pub name: String,
    /// The workload as the user gave it: a built-in name or a program file.
    pub workload: String,
    /// The game the case is played by.
    pub setup: Arc<GameSetup>,
}

/// The most cases a run takes.
pub const MAX_CASES: usize = 1024;

impl Trainer {
    /// Starts a run of one program, `setup`, in `dir`: a one-case
    /// [`Trainer::start_cases`] whose case is named `workload` (the built-in name or the
    /// program file it was loaded from).
    pub fn start(
        setup: Arc<GameSetup>,
        workload: &str,
        config: TrainConfig,
        dir: &Path,
        known: &Demonstrations,
    ) -> Result<Trainer, TrainError> {
        let case = TrainCase {
            name: workload.to_string(),
            workload: workload.to_string(),
            setup,
        };
        Trainer::start_cases(vec![case], config, dir, known)
    }

    /// Starts a run of `cases` in `dir`: one network for every case, so they must share
    /// their game options. A folder whose run of the same cases has no checkpoint yet (it
    /// stopped in its first iterations) is started again, keeping the best mappings it
    /// found; a folder whose run has a checkpoint, or is of other cases, is refused
    /// ([`TrainError::RunExists`]). `known` plays the demonstrations the config names (an
    /// unknown name is refused before anything is written).
    pub fn start_cases(
        cases: Vec<TrainCase>,
        config: TrainConfig,
        dir: &Path,
        known: &Demonstrations,
    ) -> Result<Trainer, TrainError> {
        let mut config = checked(config, cases.len() > 1, known)?;
        if config.threads == 0 {
            config.threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        let first = cases
            .first()
            .ok_or_else(|| TrainError::Config("cases: a run needs a case".into()))?;
        if cases.len() > MAX_CASES {
            return Err(TrainError::Config(format!(
                "cases: {} cases; a run takes at most {MAX_CASES} (it plays one case an iteration, so more would each be seen too rarely to learn from)",
                cases.len()
            )));
        }
        let network = config.network_for(&first.setup)?;
        for c in &cases {
            same_game(&first.setup, c)?;
        }
        let run_dir = RunDir::new(dir);
        // A race's or an EGRL run's folder is refused before anything is made in it.
        binio::check_folder_kind(dir, binio::FolderKind::Training, binio::Purpose::Write)?;
        // Before anything is read: a second writer would see a half-made run.
        let lock = binio::FolderLock::acquire(dir)?;
        binio::claim_folder(dir, binio::FolderKind::Training)?;
        // Its folders before anything in them is removed: none leads out of the run.
        run_dir.create()?;
        let exists = |what| TrainError::RunExists {
            dir: dir.display().to_string(),
            what,
        };
        if run_dir.read_latest()?.is_some() {
            return Err(exists("with a checkpoint"));
        }
        let info = run_info(&cases, network, config);
        match run_dir.read_info() {
            Ok(Some(earlier)) if !earlier.same_run(&info) => {
                return Err(exists(if info.is_multi() {
                    "of other cases"
                } else {
                    "of another game"
                }))
            }
            Err(_) => return Err(exists("with an unreadable run.json")),
            Ok(Some(_)) => {}
            // Files in `best/` without a run.json are nobody's.
            Ok(None) => run_dir.clear_best(&info)?,
        }
        let setups: Vec<Arc<GameSetup>> = cases.into_iter().map(|c| c.setup).collect();
        run_dir.write_info(&info, &setups)?;
        Trainer::open(run_dir, lock, info, setups, false, known)
    }

    /// Resumes the run in `dir` from its newest checkpoint, or starts it afresh from its
    /// `run.json` when it has none. The programs come from the folder
    /// ([`RunInfo::setups`]). `config` replaces the run's training config (not its
    /// network). A run whose `checkpoints/latest.json` is lost resumes from its newest
    /// complete checkpoint ([`Trainer::resume_note`] says so), or is refused: see
    /// [`Trainer::resume_or_restart`] to start it afresh instead. `known` plays the
    /// demonstrations the run's config names (they are played again, not saved).
    pub fn resume(
        dir: &Path,
        config: Option<TrainConfig>,
        known: &Demonstrations,
    ) -> Result<Trainer, TrainError> {
        Trainer::resume_or_restart(dir, config, false, known)
    }

    /// [`Trainer::resume`], or with `restart` the run in `dir` started afresh from its
    /// `run.json`: its checkpoints and metrics are deleted, its best mappings kept.
    pub fn resume_or_restart(
        dir: &Path,
        config: Option<TrainConfig>,
        restart: bool,
        known: &Demonstrations,
    ) -> Result<Trainer, TrainError> {
        let run_dir = RunDir::new(dir);
        // Read first so a folder of another kind of run, or without a run, is refused as
        // such, and not created.
        binio::check_folder_kind(dir, binio::FolderKind::Training, binio::Purpose::Write)?;
        crate::train::read_run_info(dir)?;
        let lock = binio::FolderLock::acquire(dir)?;
        binio::claim_folder(dir, binio::FolderKind::Training)?;
        run_dir.create()?;
        let mut info = crate::train::read_run_info(dir)?;
        let setups = info.setups(dir)?;
        if let Some(c) = config.filter(|c| *c != info.config) {
            let c = checked(c, info.is_multi(), known)?;
            if c.network.as_ref().is_some_and(|n| *n != info.network) {
                return Err(TrainError::Config(format!(
                    "network: differs from the network of the run in {}, which a resume keeps",
                    dir.display()
                )));
            }
            info.config = c;
            run_dir.write_info(&info, &setups)?;
        }
        checked(info.config.clone(), info.is_multi(), known)?;
        Trainer::open(run_dir, lock, info, setups, restart, known)
    }

    /// The run's cases (demonstrations, baselines, bests read back), then its learner:
    /// from the newest checkpoint, or fresh; the folder rolled back to that checkpoint.
    fn open(
        dir: RunDir,
        lock: binio::FolderLock,
        info: RunInfo,
        setups: Vec<Arc<GameSetup>>,
        restart: bool,
        known: &Demonstrations,
    ) -> Result<Trainer, TrainError> {
        let c = &info.config;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(c.threads.max(1))
            .build()
            .map_err(|e| TrainError::Config(format!("threads: {e}")))?;
        let names: Vec<String> = match info.is_multi() {
            true => info.cases.iter().map(|c| c.name.clone()).collect(),
            false => vec![info.workload.clone()],
        };
        let all_slow = setups.first().map_or(f64::NAN, |s| s.all_slow_latency());
        let mut cases = Vec::with_capacity(setups.len());
        for (k, (setup, name)) in setups.into_iter().zip(&names).enumerate() {
            let best_dir = dir.case_best(&info, k);
            binio::create_own_folder(&best_dir)
                .map_err(crate::train::error::io_error(&best_dir))?;
            cases.push(CaseRun::new(setup, &best_dir, name, c, known)?);
        }
        let (latest, resume_note) = match restart {
            true => {
                dir.forget_checkpoints()?;
                (None, None)
            }
            false => dir.checkpoint_to_resume(c.checkpoint_every as u64)?,
        };
        let (learner, counters, saved_through) = match &latest {
            Some(l) => (
                dir.load_checkpoint(l, &info.network, &c.optim)?,
                Counters::after(l),
                Some(l.iteration),
            ),
            None => (Learner::fresh(&info, &cases)?, Counters::default(), None),
        };
        dir.roll_back_to(latest.as_ref(), c.keep_checkpoints)?;
        let writer = CheckpointWriter::spawn(dir.clone(), c.keep_checkpoints)?;
        if let (Some(l), false) = (&latest, info.is_multi()) {
            cases[0].last_eval = l.eval_latency_s;
        }
        Ok(Trainer {
            dir,
            info,
            cases,
            names,
            pool,
            all_slow,
            learner,
            counters,
            saved_through,
            writer,
            session: Instant::now(),
            next_ticket: 0,
            resume_note,
            _lock: lock,
        })
    }
}

/// `config`, checked (its demonstrations against `known`), with what a multi-program run
/// does not offer refused.
fn checked(
    config: TrainConfig,
    multi: bool,
    known: &Demonstrations,
) -> Result<TrainConfig, TrainError> {
    config.check()?;
    known.check(&config.demonstrations)?;
    if multi && config.reanalyse_games_per_iteration > 0 {
        return Err(TrainError::Config(
            "reanalyse_games_per_iteration: a multi-program run does not reanalyse (set it to 0)"
                .into(),
        ));
    }
    Ok(config)
}

/// Refuses a case whose game the first case's network cannot play.
fn same_game(first: &GameSetup, case: &TrainCase) -> Result<(), TrainError> {
    let (a, b) = (first.options(), case.setup.options());
    if a != b {
        return Err(TrainError::Config(format!(
            "cases: `{}` has other game options than the first case (observation {} vs {}, actions {} vs {}): every case of a multi-program run plays by the same options and number of fast levels",
            case.name,
            observation::observation_len(b),
            observation::observation_len(a),
            case.setup.action_count(),
            first.action_count()
        )));
    }
    Ok(())
}

/// `run.json` of a new run of `cases`: a run of one program names it in the top fields;
/// a multi-program run lists its cases, the top fields naming the first.
fn run_info(cases: &[TrainCase], network: NetworkConfig, config: TrainConfig) -> RunInfo {
    let infos: Vec<CaseInfo> = cases.iter().map(case_info).collect();
    let first = &cases[0];
    let multi = cases.len() > 1;
    RunInfo {
        rules: malloc_game::RULES_VERSION,
        workload: match multi {
            true => format!("suite of {} cases", cases.len()),
            false => first.workload.clone(),
        },
        workload_path: infos[0].workload_path.clone().filter(|_| !multi),
        program_hash: infos[0].program_hash,
        hardware: infos[0].hardware.clone(),
        options: first.setup.options().clone(),
        network,
        config,
        cases: if multi { infos } else { Vec::new() },
    }
}

fn case_info(c: &TrainCase) -> CaseInfo {
    CaseInfo {
        name: c.name.clone(),
        workload: c.workload.clone(),
        workload_path: program_file(&c.workload),
        program_hash: c.setup.program().content_hash(),
        hardware: c.setup.hardware().to_file(),
    }
}

/// The absolute path of the program file `workload` names; none for a built-in (or a
/// program built in code).
pub(super) fn program_file(workload: &str) -> Option<String> {
    if bench_workloads::is_builtin(workload) {
        return None;
    }
    let path = std::fs::canonicalize(workload).ok()?;
    path.is_file().then(|| path.display().to_string())
}
