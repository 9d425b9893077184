//! [`SuiteTrainer`]: one network trained on many programs and hardware settings at once.
//!
//! A multi-program run is a list of cases (a program on a hardware with a capacity), all
//! with the same game options, so one network plays them all: the observation and the
//! actions do not depend on the program's size. Each iteration plays one case, drawn from
//! a seeded shuffle of the cases per epoch (every case once per epoch, so a run repeats
//! exactly and resumes exactly): its self-play games, branch games and proposals start from
//! that case's best line, its evaluation game is that case's. The learner trains on one
//! replay buffer and one demonstrations buffer holding every case's games; each case keeps
//! its own policy-target line (its best game, [`super::demos::imitate`]).
//!
//! The run folder is a single run's, with `programs/NNN.json` (each case's program) in
//! place of `program.json` alone, `run.json`'s `cases`, and `best/NNN/` per case. MuZero
//! Reanalyse is not offered here (a stored game does not say which program it is of).

use super::case::CaseRun;
use super::run_dir::{write_json, CaseInfo, RecordedProgram, RunDir, RunInfo};
use super::selfplay::{seed_for, Collector, PlayedGame};
use super::trainer::Progress;
use super::trainer::{past, run_until, save_checkpoint, Counters, Iterations, Learned, Learner};
use super::{Limits, TrainConfig, TrainError};
use malloc_game::{observation, GameSetup};
use muzero::ReplayBuffer;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// A case of a multi-program run: its name, the workload as the user gave it (a built-in
/// name or a program file), and the game.
pub struct SuiteCase {
    pub name: String,
    pub workload: String,
    pub setup: Arc<GameSetup>,
}

/// What a multi-program run reports at its end (also `best/summary.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteSummary {
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub cases: Vec<CaseSummary>,
}

/// One case's results in a multi-program run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseSummary {
    pub name: String,
    pub xla_latency_s: f64,
    /// The fastest mapping the agent found for this case (none before one finished).
    pub best_latency_s: Option<f64>,
    /// The case's last evaluation game in this session.
    pub eval_latency_s: Option<f64>,
}

/// A multi-program training run, stepped an iteration at a time like [`super::Trainer`].
pub struct SuiteTrainer {
    dir: RunDir,
    info: RunInfo,
    cases: Vec<CaseRun>,
    /// The cases' names (`run.json`'s), in their order.
    names: Vec<String>,
    pool: rayon::ThreadPool,
    learner: Learner,
    counters: Counters,
    saved_through: Option<u64>,
    session: Instant,
}

impl SuiteTrainer {
    /// Starts a multi-program run of `cases` in `dir`. The cases must share their game
    /// options; a folder that holds a run with a checkpoint, or another run, is refused.
    pub fn start(
        cases: Vec<SuiteCase>,
        config: TrainConfig,
        dir: &Path,
    ) -> Result<SuiteTrainer, TrainError> {
        let mut config = checked(config)?;
        if config.threads == 0 {
            config.threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        let first = cases
            .first()
            .ok_or_else(|| TrainError::Config("cases: a multi-program run needs a case".into()))?;
        if cases.len() > MAX_CASES {
            return Err(TrainError::Config(format!(
                "cases: {} cases; a multi-program run takes at most {MAX_CASES} (it plays one case an iteration, so more would each be seen too rarely to learn from)",
                cases.len()
            )));
        }
        let network = config.network_for(&first.setup)?;
        for c in &cases {
            same_game(&first.setup, c)?;
        }
        let run_dir = RunDir::new(dir);
        let exists = |what| TrainError::RunExists {
            dir: dir.display().to_string(),
            what,
        };
        if run_dir.read_latest()?.is_some() {
            return Err(exists("with a checkpoint"));
        }
        let infos: Vec<CaseInfo> = cases.iter().map(case_info).collect();
        let info = RunInfo {
            rules: malloc_game::RULES_VERSION,
            workload: format!("suite of {} cases", cases.len()),
            workload_path: None,
            program_hash: infos[0].program_hash,
            hardware: infos[0].hardware.clone(),
            options: first.setup.options().clone(),
            network,
            config,
            cases: infos,
        };
        match run_dir.read_info() {
            Ok(Some(earlier))
                if serde_json::to_value(&earlier.cases).ok()
                    != serde_json::to_value(&info.cases).ok() =>
            {
                return Err(exists("of other cases"))
            }
            Err(_) => return Err(exists("with an unreadable run.json")),
            _ => {}
        }
        run_dir.create()?;
        run_dir.write_info(&info, first.setup.program())?;
        let programs = dir.join("programs");
        std::fs::create_dir_all(&programs).map_err(super::error::io_error(&programs))?;
        // One copy per distinct program: cases that differ only in hardware or capacity
        // share the first one's.
        for (k, c) in cases.iter().enumerate() {
            if copy_index(&info.cases, k) == k {
                let text = bench_workloads::json::to_json(c.setup.program(), None);
                binio::write_bytes_atomic(&program_copy(dir, k), text.as_bytes())?;
            }
        }
        let setups = cases.into_iter().map(|c| c.setup).collect();
        SuiteTrainer::open(run_dir, info, setups)
    }

    /// Resumes the multi-program run in `dir` from its newest checkpoint (or afresh when
    /// it has none). `config` replaces the run's training config (not its network).
    pub fn resume(dir: &Path, config: Option<TrainConfig>) -> Result<SuiteTrainer, TrainError> {
        let run_dir = RunDir::new(dir);
        let mut info = super::read_run_info(dir)?;
        if info.cases.is_empty() {
            return Err(TrainError::Resume(format!(
                "{} holds a run of one program, not a multi-program run",
                dir.display()
            )));
        }
        if let Some(c) = config.filter(|c| *c != info.config) {
            let c = checked(c)?;
            if c.network.as_ref().is_some_and(|n| *n != info.network) {
                return Err(TrainError::Config(format!(
                    "network: differs from the network of the run in {}, which a resume keeps",
                    dir.display()
                )));
            }
            info.config = c;
            write_json(&dir.join("run.json"), &info)?;
        }
        let origin = dir.join("run.json").display().to_string();
        let mut setups = Vec::with_capacity(info.cases.len());
        for (k, c) in info.cases.iter().enumerate() {
            let recorded = RecordedProgram {
                workload: &c.workload,
                workload_path: c.workload_path.as_deref(),
                hash: c.program_hash,
            };
            let program = recorded.load(&program_copy(dir, copy_index(&info.cases, k)))?;
            let hw = c.hardware.clone().into_hardware(&format!("{origin}: "))?;
            setups.push(GameSetup::new(Arc::new(program), hw, info.options.clone())?);
        }
        run_dir.create()?;
        SuiteTrainer::open(run_dir, info, setups)
    }

    /// The run's cases (demonstrations, baselines, bests read back), then its learner:
    /// from the newest checkpoint, or fresh.
    fn open(
        dir: RunDir,
        info: RunInfo,
        setups: Vec<Arc<GameSetup>>,
    ) -> Result<SuiteTrainer, TrainError> {
        let c = &info.config;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(c.threads.max(1))
            .build()
            .map_err(|e| TrainError::Config(format!("threads: {e}")))?;
        let names: Vec<String> = info.cases.iter().map(|c| c.name.clone()).collect();
        let mut cases = Vec::with_capacity(setups.len());
        for (k, (setup, name)) in setups.into_iter().zip(&names).enumerate() {
            let best_dir = dir.best().join(format!("{k:03}"));
            std::fs::create_dir_all(&best_dir).map_err(super::error::io_error(&best_dir))?;
            cases.push(CaseRun::new(setup, &best_dir, name, c)?);
        }
        let latest = dir.read_latest()?;
        dir.roll_back_to(latest.as_ref())?;
        let (learner, counters, saved_through) = match &latest {
            Some(l) => (
                dir.load_checkpoint(l, &info.network, &c.optim)?,
                Counters::after(l),
                Some(l.iteration),
            ),
            None => (Learner::fresh(&info, &cases)?, Counters::default(), None),
        };
        Ok(SuiteTrainer {
            dir,
            info,
            cases,
            names,
            pool,
            learner,
            counters,
            saved_through,
            session: Instant::now(),
        })
    }

    /// Runs iterations until a limit is reached or `stop` is raised (between iterations),
    /// calling `progress` after each; then [`SuiteTrainer::finish`]es.
    pub fn run(
        &mut self,
        limits: &Limits,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<SuiteSummary, TrainError> {
        limits.check()?;
        let interrupted = run_until(self, limits, stop, progress)?;
        self.finish(interrupted)
    }

    /// The case iteration `iteration` plays: epoch `e` visits every case once, in an order
    /// drawn from the seed and `e`.
    pub fn case_at(&self, iteration: u64) -> usize {
        let n = self.cases.len() as u64;
        let mut order: Vec<usize> = (0..self.cases.len()).collect();
        let seed = seed_for(self.info.config.seed, iteration / n, 8);
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        order[(iteration % n) as usize]
    }

    /// One iteration on one case: self-play beside the learner, the evaluation game, the
    /// metrics line, a checkpoint when due. `None`: `limits.deadline` came during it.
    pub fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError> {
        let iteration = self.counters.iterations;
        let cancelled = move || past(limits.deadline);
        self.learner
            .pretrain_before_play(&self.info.config, &mut self.counters, limits)?;
        let k = self.case_at(iteration);
        let weights = self.learner.net.snapshot()?;
        let c = &self.info.config;
        let checkpoint_every = c.checkpoint_every as u64;
        let case = &self.cases[k];
        let best = case.line_to_improve();
        let eval_due = iteration % c.eval_every as u64 == 0;
        let collector = Collector {
            setup: &case.setup,
            config: c,
            pool: &self.pool,
        };
        let (learner, counters) = (&mut self.learner, &mut self.counters);
        let (learned, played, eval) = std::thread::scope(|s| {
            let selfplay =
                s.spawn(|| collector.collect(&weights, iteration, best.as_ref(), &cancelled));
            let eval = eval_due.then(|| s.spawn(|| case.eval_game(&weights, c, iteration)));
            let learned = learner.learn(c, counters, iteration, limits.steps, &cancelled);
            let played = selfplay.join().unwrap_or(Err(TrainError::SelfPlayPanicked));
            let eval = eval.map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)));
            (learned, played, eval)
        });
        let learned = learned?;
        let Some(played) = played? else {
            return Ok(None);
        };
        let returns = self.learner.absorb(
            &mut self.cases[k],
            played,
            &mut self.counters,
            &self.info.config,
            iteration,
        )?;
        if let Some(g) = eval.transpose()? {
            self.record_eval(k, g, iteration)?;
        }
        self.counters.iterations += 1;
        let p = self.progress(k, iteration, &learned, &returns);
        self.dir.append_metrics(&p)?;
        if self.counters.iterations % checkpoint_every == 0 {
            self.checkpoint()?;
        }
        Ok(Some(p))
    }

    /// Case `k`'s evaluation game ([`CaseRun::record_eval`]).
    fn record_eval(&mut self, k: usize, g: PlayedGame, iteration: u64) -> Result<(), TrainError> {
        let mut to = self
            .learner
            .taught_at(&self.info.config, &self.counters, iteration);
        self.cases[k].record_eval(&g, &mut to)
    }

    fn progress(&self, k: usize, iteration: u64, learned: &Learned, returns: &[f64]) -> Progress {
        let elapsed = self.elapsed_s();
        let p = Progress::of_learning(iteration, &self.counters, elapsed, learned, returns);
        Progress {
            case: Some(self.names[k].clone()),
            ..self.cases[k].report(p)
        }
    }

    /// Saves a checkpoint of the iterations completed, unless the newest one has them.
    pub fn checkpoint(&mut self) -> Result<(), TrainError> {
        let latest = self.counters.latest(self.elapsed_s(), None);
        self.saved_through = save_checkpoint(&self.dir, &self.learner, latest, self.saved_through)?;
        Ok(())
    }

    /// Ends the session: a checkpoint of every iteration completed and
    /// `best/summary.json`.
    pub fn finish(&mut self, interrupted: bool) -> Result<SuiteSummary, TrainError> {
        self.checkpoint()?;
        let summary = self.summary(interrupted);
        write_json(&self.dir.best().join("summary.json"), &summary)?;
        Ok(summary)
    }

    /// The run so far.
    pub fn summary(&self, interrupted: bool) -> SuiteSummary {
        SuiteSummary {
            iterations: self.counters.iterations,
            train_steps: self.counters.train_steps,
            positions: self.counters.positions,
            elapsed_s: self.elapsed_s(),
            interrupted,
            cases: self
                .cases
                .iter()
                .zip(&self.names)
                .map(|(c, name)| CaseSummary {
                    name: name.clone(),
                    xla_latency_s: c.xla,
                    best_latency_s: Some(c.best.latency).filter(|l| l.is_finite()),
                    eval_latency_s: c.last_eval,
                })
                .collect(),
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.counters.elapsed_s(self.session)
    }

    pub fn dir(&self) -> &Path {
        self.dir.root()
    }
    pub fn info(&self) -> &RunInfo {
        &self.info
    }
    /// The cases' names, in the run's order.
    pub fn case_names(&self) -> &[String] {
        &self.names
    }
    pub fn iterations(&self) -> u64 {
        self.counters.iterations
    }
    pub fn train_steps(&self) -> u64 {
        self.counters.train_steps
    }
    pub fn positions(&self) -> u64 {
        self.counters.positions
    }
    /// The demonstrations buffer (every case's heuristic games and target lines).
    pub fn demonstrations(&self) -> &ReplayBuffer {
        &self.learner.demos
    }
}

impl Iterations for SuiteTrainer {
    fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError> {
        SuiteTrainer::step_iteration(self, limits)
    }
    fn limits_reached(&self, limits: &Limits) -> bool {
        self.counters.reached(limits, self.session)
    }
}

/// `config`, checked, with what a multi-program run does not offer refused.
fn checked(config: TrainConfig) -> Result<TrainConfig, TrainError> {
    config.check()?;
    if config.reanalyse_games_per_iteration > 0 {
        return Err(TrainError::Config(
            "reanalyse_games_per_iteration: a multi-program run does not reanalyse (set it to 0)"
                .into(),
        ));
    }
    Ok(config)
}

/// Refuses a case whose game the first case's network cannot play.
fn same_game(first: &GameSetup, case: &SuiteCase) -> Result<(), TrainError> {
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

fn case_info(c: &SuiteCase) -> CaseInfo {
    CaseInfo {
        name: c.name.clone(),
        workload: c.workload.clone(),
        workload_path: super::trainer::program_file(&c.workload),
        program_hash: c.setup.program().content_hash(),
        hardware: c.setup.hardware().to_file(),
    }
}

/// The most cases a multi-program run takes.
pub const MAX_CASES: usize = 1024;

/// The case whose program copy case `k` reads: the first with the same program.
fn copy_index(cases: &[CaseInfo], k: usize) -> usize {
    let hash = cases[k].program_hash;
    cases
        .iter()
        .position(|c| c.program_hash == hash)
        .unwrap_or(k)
}

fn program_copy(dir: &Path, k: usize) -> PathBuf {
    dir.join("programs").join(format!("{k:03}.json"))
}
