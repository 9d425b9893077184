//! [`Trainer`]: one run, of one program or of many, stepped an iteration at a time.
//!
//! A run is a list of cases (a program on a hardware with a capacity), all with the same
//! game options, so one network plays them all: the observation and the actions do not
//! depend on the program's size. A run of one program is a run of one case. Each
//! iteration plays one case, drawn from a seeded shuffle of the cases per epoch (every case
//! once per epoch, so a run repeats exactly and resumes exactly): its self-play games,
//! branch games and proposals start from that case's best line, its evaluation game is
//! that case's. The learner trains on one replay buffer and one demonstrations buffer
//! holding every case's games; each case keeps its own policy-target line (its best game,
//! [`super::demos::imitate`]). MuZero Reanalyse is offered to a run of one program only (a
//! stored game does not say which program it is of).

use super::best::Found;
use super::case::{self, CaseRun};
use super::checkpoint::{CheckpointWriter, Snapshot};
use super::demos::{history_of, imitate};
use super::remote::{self, BatchInfo};
use super::run_dir::{CaseInfo, Latest, RunDir, RunInfo};
use super::selfplay::{reanalyse_round, seed_for};
use super::selfplay::{Collector, PlayedGame};
use super::{Limits, TrainConfig, TrainError};
use binio::json::write_json;
use malloc_game::record::GameRecord;
use malloc_game::{observation, GameSetup};
use muzero::{device, LossParts, MuZeroNet, NetworkConfig};
use muzero::{Optimizer, StepStats};
use muzero::{ReplayBuffer, TrainingBatch};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a run reports at its end (also `best/summary.json`). In a multi-program run the
/// case fields (`xla_latency_s` to `eval_latency_s`) are its first case's, as in
/// `run.json`, and `cases` has every case's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainSummary {
    /// Iterations completed, counting those of earlier sessions.
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    pub elapsed_s: f64,
    pub xla_latency_s: f64,
    pub all_slow_latency_s: f64,
    /// The fastest mapping found in training (self-play or evaluation games), in any
    /// session of the run; `None` when no game has finished yet (a session interrupted
    /// in its first iteration).
    pub best_latency_s: Option<f64>,
    pub best_return: Option<f64>,
    /// The last evaluation game (no noise).
    pub eval_latency_s: Option<f64>,
    /// The session ended because its stop flag was raised, not at its limits.
    #[serde(default)]
    pub interrupted: bool,
    /// A multi-program run's cases; empty for a run of one program.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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

/// One iteration's report: what the progress callback gets, and one line of
/// `metrics.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub iteration: u64,
    /// Seconds of training in all sessions of the run so far.
    pub elapsed_s: f64,
    pub positions: u64,
    pub train_steps: u64,
    pub steps_this_iteration: u64,
    pub reanalysed_games: usize,
    /// Mean losses of this iteration's steps (0 when it made none).
    pub loss: f32,
    pub loss_value: f32,
    pub loss_reward: f32,
    pub loss_policy: f32,
    pub lr: Option<f64>,
    pub grad_norm: Option<f32>,
    pub selfplay_mean_return: f64,
    pub eval_latency_s: Option<f64>,
    pub best_latency_s: f64,
    pub best_return: f64,
    pub xla_latency_s: f64,
    pub speedup_vs_xla: f64,
    /// The case this iteration played, in a multi-program run (its evaluation game,
    /// latencies and speedup are that case's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

impl Progress {
    /// The iteration's counters, losses and self-play returns; no game results yet.
    pub(super) fn of_learning(
        iteration: u64,
        counters: &Counters,
        elapsed_s: f64,
        learned: &Learned,
        returns: &[f64],
    ) -> Progress {
        let n = learned.steps.max(1) as f32;
        let s = &learned.loss_sum;
        Progress {
            iteration,
            elapsed_s,
            positions: counters.positions,
            train_steps: counters.train_steps,
            steps_this_iteration: learned.steps,
            reanalysed_games: learned.reanalysed,
            loss: s.total / n,
            loss_value: s.value / n,
            loss_reward: s.reward / n,
            loss_policy: s.policy / n,
            lr: learned.last.map(|l| l.lr),
            grad_norm: learned.last.map(|l| l.grad_norm),
            selfplay_mean_return: returns.iter().sum::<f64>() / returns.len().max(1) as f64,
            eval_latency_s: None,
            best_latency_s: f64::INFINITY,
            best_return: f64::NEG_INFINITY,
            xla_latency_s: f64::NAN,
            speedup_vs_xla: f64::NAN,
            case: None,
        }
    }
}

/// The network, its optimizer and the replay buffers: what a checkpoint saves.
pub(super) struct Learner {
    pub(super) net: MuZeroNet,
    pub(super) opt: Optimizer,
    pub(super) replay: ReplayBuffer,
    /// The demonstrations and the agent's best games (self-imitation), sampled beside
    /// the self-play buffer.
    pub(super) demos: ReplayBuffer,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    /// Iterations completed: the next iteration's number.
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    /// Seconds of training in earlier sessions.
    pub elapsed_before: f64,
}

/// What the learner did in one iteration.
#[derive(Default)]
pub(super) struct Learned {
    pub steps: u64,
    pub loss_sum: LossParts,
    pub last: Option<StepStats>,
    pub reanalysed: usize,
}

/// A case of a run: its name (in progress lines and summaries), the workload as the user
/// gave it (a built-in name or a program file), and the game.
pub struct TrainCase {
    pub name: String,
    pub workload: String,
    pub setup: Arc<GameSetup>,
}

/// The most cases a run takes.
pub const MAX_CASES: usize = 1024;

/// A training run of one case or of many: started or resumed in a run directory, then
/// stepped an iteration at a time ([`Trainer::step_iteration`]) or run to its limits
/// ([`Trainer::run`]).
pub struct Trainer {
    dir: RunDir,
    info: RunInfo,
    cases: Vec<CaseRun>,
    /// The cases' names, in their order (a run of one program: its workload).
    names: Vec<String>,
    /// The threads that replay branch proposals.
    pool: rayon::ThreadPool,
    /// The first case's all-slow latency, for the summary.
    all_slow: f64,
    learner: Learner,
    counters: Counters,
    /// The last iteration the newest checkpoint includes (queued or written).
    saved_through: Option<u64>,
    writer: CheckpointWriter,
    session: Instant,
    /// The next remote work order's ticket (see [`Trainer::order`]).
    next_ticket: u64,
    /// See [`Trainer::resume_note`].
    resume_note: Option<String>,
    /// The run folder's one-writer lock, released when the trainer is dropped.
    _lock: binio::FolderLock,
}

impl Trainer {
    /// Starts a run of one program, `setup`, in `dir`: a one-case
    /// [`Trainer::start_cases`] whose case is named `workload` (the built-in name or the
    /// program file it was loaded from).
    pub fn start(
        setup: Arc<GameSetup>,
        workload: &str,
        config: TrainConfig,
        dir: &Path,
    ) -> Result<Trainer, TrainError> {
        let case = TrainCase {
            name: workload.to_string(),
            workload: workload.to_string(),
            setup,
        };
        Trainer::start_cases(vec![case], config, dir)
    }

    /// Starts a run of `cases` in `dir`: one network for every case, so they must share
    /// their game options. A folder whose run of the same cases has no checkpoint yet (it
    /// stopped in its first iterations) is started again, keeping the best mappings it
    /// found; a folder whose run has a checkpoint, or is of other cases, is refused
    /// ([`TrainError::RunExists`]).
    pub fn start_cases(
        cases: Vec<TrainCase>,
        config: TrainConfig,
        dir: &Path,
    ) -> Result<Trainer, TrainError> {
        let mut config = checked(config, cases.len() > 1)?;
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
        Trainer::open(run_dir, lock, info, setups, false)
    }

    /// Resumes the run in `dir` from its newest checkpoint, or starts it afresh from its
    /// `run.json` when it has none. The programs come from the folder
    /// ([`RunInfo::setups`]). `config` replaces the run's training config (not its
    /// network). A run whose `checkpoints/latest.json` is lost resumes from its newest
    /// complete checkpoint ([`Trainer::resume_note`] says so), or is refused: see
    /// [`Trainer::resume_or_restart`] to start it afresh instead.
    pub fn resume(dir: &Path, config: Option<TrainConfig>) -> Result<Trainer, TrainError> {
        Trainer::resume_or_restart(dir, config, false)
    }

    /// [`Trainer::resume`], or with `restart` the run in `dir` started afresh from its
    /// `run.json`: its checkpoints and metrics are deleted, its best mappings kept.
    pub fn resume_or_restart(
        dir: &Path,
        config: Option<TrainConfig>,
        restart: bool,
    ) -> Result<Trainer, TrainError> {
        let run_dir = RunDir::new(dir);
        // Read first so a folder of another kind of run, or without a run, is refused as
        // such, and not created.
        binio::check_folder_kind(dir, binio::FolderKind::Training, binio::Purpose::Write)?;
        super::read_run_info(dir)?;
        let lock = binio::FolderLock::acquire(dir)?;
        binio::claim_folder(dir, binio::FolderKind::Training)?;
        run_dir.create()?;
        let mut info = super::read_run_info(dir)?;
        let setups = info.setups(dir)?;
        if let Some(c) = config.filter(|c| *c != info.config) {
            let c = checked(c, info.is_multi())?;
            if c.network.as_ref().is_some_and(|n| *n != info.network) {
                return Err(TrainError::Config(format!(
                    "network: differs from the network of the run in {}, which a resume keeps",
                    dir.display()
                )));
            }
            info.config = c;
            run_dir.write_info(&info, &setups)?;
        }
        checked(info.config.clone(), info.is_multi())?;
        Trainer::open(run_dir, lock, info, setups, restart)
    }

    /// The run's cases (demonstrations, baselines, bests read back), then its learner:
    /// from the newest checkpoint, or fresh; the folder rolled back to that checkpoint.
    fn open(
        dir: RunDir,
        lock: binio::FolderLock,
        info: RunInfo,
        setups: Vec<Arc<GameSetup>>,
        restart: bool,
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
            binio::create_own_folder(&best_dir).map_err(super::error::io_error(&best_dir))?;
            cases.push(CaseRun::new(setup, &best_dir, name, c)?);
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

    /// Where this session's checkpoint is not the one `checkpoints/latest.json` named (it
    /// was missing or damaged), what was found and taken instead.
    pub fn resume_note(&self) -> Option<&str> {
        self.resume_note.as_deref()
    }

    /// Runs iterations until a limit is reached or `stop` is raised, calling `progress`
    /// after each; then [`Trainer::finish`]es. A `stop` raised mid-iteration cancels it as
    /// a passed deadline does (its games are dropped; the learner's steps so far stay), so
    /// an interrupt on a large program takes effect in moments, not after the iteration.
    pub fn run(
        &mut self,
        limits: &Limits,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<TrainSummary, TrainError> {
        limits.check()?;
        let interrupted = loop {
            if stop.load(Ordering::SeqCst) {
                break true;
            }
            if self.limits_reached(limits) {
                break false;
            }
            match self.step_iteration_until(limits, &|| stop.load(Ordering::SeqCst))? {
                Some(p) => progress(&p),
                None => break stop.load(Ordering::SeqCst),
            }
        };
        self.finish(interrupted)
    }

    /// The case iteration `iteration` plays: epoch `e` visits every case once, in an order
    /// drawn from the seed and `e` (a run of one program plays it every iteration).
    pub fn case_at(&self, iteration: u64) -> usize {
        let n = self.cases.len() as u64;
        let mut order: Vec<usize> = (0..self.cases.len()).collect();
        let seed = seed_for(self.info.config.seed, iteration / n, 8);
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        order[(iteration % n) as usize]
    }

    /// One iteration on one case ([`Trainer::case_at`]): self-play with the current
    /// weights beside the learner, then the new games enter the buffer, the evaluation
    /// game, the metrics line, and a checkpoint when one is due. The learner stops at
    /// `limits.steps`. `None`: `limits.deadline` came during the iteration, which is
    /// dropped (its games are not kept).
    pub fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError> {
        self.step_iteration_until(limits, &|| false)
    }

    /// [`Trainer::step_iteration`], cancelled (`None`) also when `stop` says so.
    fn step_iteration_until(
        &mut self,
        limits: &Limits,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<Progress>, TrainError> {
        let iteration = self.counters.iterations;
        let cancelled = move || past(limits.deadline) || stop();
        self.pretrain(limits)?;
        let k = self.case_at(iteration);
        let weights = self.learner.net.snapshot()?;
        let (case, c) = (&self.cases[k], &self.info.config);
        let best = case.line_to_improve();
        let eval_due = iteration % c.eval_every as u64 == 0;
        let collector = Collector {
            setup: &case.setup,
            config: c,
            pool: &self.pool,
        };
        let reanalysed_on = reanalysed_on(&self.info, &self.cases);
        let (learner, counters) = (&mut self.learner, &mut self.counters);
        // The evaluation game plays the same weights as self-play, on a thread of its own.
        let (learned, played, eval) = std::thread::scope(|s| {
            let selfplay =
                s.spawn(|| collector.collect(&weights, iteration, best.as_ref(), &cancelled));
            let eval = eval_due.then(|| s.spawn(|| case.eval_game(&weights, c, iteration)));
            let learned = learner
                .learn(c, counters, iteration, limits.steps, &cancelled)
                .and_then(|l| learner.reanalyse(reanalysed_on, c, iteration, l));
            let played = selfplay.join().unwrap_or(Err(TrainError::SelfPlayPanicked));
            let eval = eval.map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)));
            (learned, played, eval)
        });
        let learned = learned?;
        let Some(played) = played? else {
            return Ok(None);
        };
        let returns = self.absorb(k, played, iteration)?;
        self.end_iteration(k, iteration, &learned, &returns, eval.transpose()?)
            .map(Some)
    }

    /// The demonstrations-only training steps that come before the first self-play games
    /// (at most `limits.steps`); nothing once the run has trained.
    pub fn pretrain(&mut self, limits: &Limits) -> Result<(), TrainError> {
        let c = &self.info.config;
        self.learner
            .pretrain_before_play(c, &mut self.counters, limits)
    }

    /// The end of every iteration on case `k`: the evaluation game (if one was played),
    /// the metrics line, and a checkpoint when one is due.
    fn end_iteration(
        &mut self,
        k: usize,
        iteration: u64,
        learned: &Learned,
        returns: &[f64],
        eval: Option<PlayedGame>,
    ) -> Result<Progress, TrainError> {
        if let Some(g) = eval {
            self.record_eval(k, g, iteration)?;
        }
        self.counters.iterations += 1;
        let p = self.progress(k, iteration, learned, returns);
        self.dir.append_metrics(&p)?;
        if self.counters.iterations % self.info.config.checkpoint_every as u64 == 0 {
            self.queue_checkpoint()?;
        }
        Ok(p)
    }

    /// The only case of a run of one program: remote self-play ships one game to its
    /// workers.
    fn remote_case(&self) -> Result<&CaseRun, TrainError> {
        match self.cases.as_slice() {
            [only] if !self.info.is_multi() => Ok(only),
            _ => Err(TrainError::Remote(format!(
                "{} holds a multi-program run; remote self-play plays a run of one program",
                self.dir().display()
            ))),
        }
    }

    /// The run as a remote self-play worker needs it ([`super::SelfPlayWorker::new`]);
    /// a run of one program only.
    pub fn describe(&self) -> Result<Vec<u8>, TrainError> {
        remote::describe(&self.info, &self.remote_case()?.setup)
    }

    /// The learner's weights now, as bytes ([`super::SelfPlayWorker::load_weights`]).
    pub fn weights(&self) -> Result<Vec<u8>, TrainError> {
        Ok(self.learner.net.to_bytes()?)
    }

    /// The next batch of self-play for a remote worker: a fresh ticket, and the line that
    /// branch games and proposals start from now.
    pub fn order(&mut self) -> Result<Vec<u8>, TrainError> {
        let line = self.remote_case()?.line_to_improve();
        let ticket = self.next_ticket.max(self.counters.iterations);
        self.next_ticket = ticket + 1;
        remote::order(ticket, line.as_ref())
    }

    /// One iteration of a run whose self-play happens elsewhere: the batch `bytes` (from
    /// [`super::SelfPlayWorker::play`]) enters the buffers, then the learner trains up to the
    /// run's ratio of steps per position (at most `limits.steps`), beside the evaluation
    /// game when one is due; the metrics line and a due checkpoint follow as in
    /// [`Trainer::step_iteration`]. A batch that does not replay on the run's game is refused.
    pub fn absorb_batch(
        &mut self,
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<(BatchInfo, Progress), TrainError> {
        let (info, played) = remote::decode_batch(&self.remote_case()?.setup, bytes)?;
        let iteration = self.counters.iterations;
        let returns = self.absorb(0, played, iteration)?;
        let cancelled = move || past(limits.deadline);
        let weights = self.learner.net.snapshot()?;
        let (case, config) = (&self.cases[0], &self.info.config);
        let eval_due = iteration % config.eval_every as u64 == 0;
        let reanalysed_on = reanalysed_on(&self.info, &self.cases);
        let (learner, counters) = (&mut self.learner, &mut self.counters);
        let (learned, eval) = std::thread::scope(|s| {
            let eval = eval_due.then(|| s.spawn(|| case.eval_game(&weights, config, iteration)));
            let learned = learner
                .learn(config, counters, iteration, limits.steps, &cancelled)
                .and_then(|l| learner.reanalyse(reanalysed_on, config, iteration, l));
            let eval = eval.map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)));
            (learned, eval)
        });
        let p = self.end_iteration(0, iteration, &learned?, &returns, eval.transpose()?)?;
        Ok((info, p))
    }

    /// Whether `limits` are reached (the session's minutes, the deadline, the steps).
    pub fn limits_reached(&self, limits: &Limits) -> bool {
        self.counters.reached(limits, self.session)
    }

    /// Counts case `k`'s new games, keeps the best, and stores them for the learner;
    /// returns their returns.
    fn absorb(
        &mut self,
        k: usize,
        played: Vec<PlayedGame>,
        iteration: u64,
    ) -> Result<Vec<f64>, TrainError> {
        let (case, config) = (&mut self.cases[k], &self.info.config);
        self.learner
            .absorb(case, played, &mut self.counters, config, iteration)
    }

    /// Case `k`'s evaluation game: saved under `games/` in a run of one program (a game
    /// file replays on the run's `program.json`; a multi-program run has many), then the
    /// case records it ([`CaseRun::record_eval`]).
    fn record_eval(&mut self, k: usize, g: PlayedGame, iteration: u64) -> Result<(), TrainError> {
        if !self.info.is_multi() {
            let path = self.dir.games().join(format!("eval-{iteration:06}.game"));
            let record =
                GameRecord::from_game(&g.game, "muzero", iteration, Some(g.search.clone()))?;
            record.save(&path)?;
        }
        let mut to = self
            .learner
            .taught_at(&self.info.config, &self.counters, iteration);
        self.cases[k].record_eval(&g, &mut to)
    }

    /// Iteration `iteration`'s line, on case `k` (named in a multi-program run).
    fn progress(&self, k: usize, iteration: u64, learned: &Learned, returns: &[f64]) -> Progress {
        let elapsed = self.elapsed_s();
        let p = Progress::of_learning(iteration, &self.counters, elapsed, learned, returns);
        Progress {
            case: self.info.is_multi().then(|| self.names[k].clone()),
            ..self.cases[k].report(p)
        }
    }

    /// Saves a checkpoint of the iterations completed, unless the newest one has them,
    /// and returns once it (and every one queued before) is on disk.
    pub fn checkpoint(&mut self) -> Result<(), TrainError> {
        self.queue_checkpoint()?;
        self.writer.wait()
    }

    /// Copies the learner's state for the writer thread to save while training goes on
    /// (unless the newest checkpoint has these iterations).
    fn queue_checkpoint(&mut self) -> Result<(), TrainError> {
        // A run of one program reports its last evaluation game until a resumed session
        // plays the next; a multi-program run's cases each had their own.
        let eval = match self.info.is_multi() {
            true => None,
            false => self.cases[0].last_eval,
        };
        let latest = self.counters.latest(self.elapsed_s(), eval);
        match latest {
            Some(l) if self.saved_through != Some(l.iteration) => {
                self.saved_through = Some(l.iteration);
                self.writer.submit(Snapshot::of(l, &self.learner)?)
            }
            _ => Ok(()),
        }
    }

    /// Ends the session: a checkpoint of every iteration completed,
    /// `best/compare-xla.html` (the best game against xla's line, in the game viewer) and
    /// `best/summary.json`. The best mappings themselves were written when found.
    pub fn finish(&mut self, interrupted: bool) -> Result<TrainSummary, TrainError> {
        self.checkpoint()?;
        for case in &self.cases {
            case.best.write_compare_xla()?;
        }
        let summary = self.summary(interrupted);
        write_json(&self.dir.best().join("summary.json"), &summary)?;
        Ok(summary)
    }

    /// The run so far.
    pub fn summary(&self, interrupted: bool) -> TrainSummary {
        let first = &self.cases[0];
        let cases = match self.info.is_multi() {
            false => Vec::new(),
            true => self
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
        };
        TrainSummary {
            iterations: self.counters.iterations,
            train_steps: self.counters.train_steps,
            positions: self.counters.positions,
            elapsed_s: self.elapsed_s(),
            xla_latency_s: first.xla,
            all_slow_latency_s: self.all_slow,
            best_latency_s: Some(first.best.latency).filter(|l| l.is_finite()),
            best_return: Some(first.best.ret).filter(|r| r.is_finite()),
            eval_latency_s: first.last_eval,
            interrupted,
            cases,
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.counters.elapsed_s(self.session)
    }

    pub fn dir(&self) -> &Path {
        self.dir.root()
    }
    /// The first case's game (a run of one program's only one).
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.cases[0].setup
    }
    pub fn info(&self) -> &RunInfo {
        &self.info
    }
    /// The cases' names, in the run's order (a run of one program: its workload).
    pub fn case_names(&self) -> &[String] {
        &self.names
    }
    /// Whether the run trains on many programs (`run.json`'s `cases`).
    pub fn is_multi(&self) -> bool {
        self.info.is_multi()
    }
    /// Iterations completed, counting those of earlier sessions.
    pub fn iterations(&self) -> u64 {
        self.counters.iterations
    }
    pub fn train_steps(&self) -> u64 {
        self.counters.train_steps
    }
    pub fn positions(&self) -> u64 {
        self.counters.positions
    }
    /// The demonstrations buffer: every case's heuristic games and best game (the one
    /// whose moves are policy targets), sampled beside self-play.
    pub fn demonstrations(&self) -> &ReplayBuffer {
        &self.learner.demos
    }
    /// The first case's best return so far (-inf before any game has finished).
    pub fn best_return(&self) -> f64 {
        self.cases[0].best.ret
    }
    /// The first case's best latency so far (inf before any game has finished).
    pub fn best_latency_s(&self) -> f64 {
        self.cases[0].best.latency
    }
}

/// The game reanalyse replays stored games on: a run of one program's. A stored game does
/// not say which program it is of, so a multi-program run does not reanalyse ([`checked`]
/// refuses the config).
fn reanalysed_on<'a>(info: &RunInfo, cases: &'a [CaseRun]) -> Option<&'a Arc<GameSetup>> {
    match cases {
        [only] if !info.is_multi() => Some(&only.setup),
        _ => None,
    }
}

/// `config`, checked, with what a multi-program run does not offer refused.
fn checked(config: TrainConfig, multi: bool) -> Result<TrainConfig, TrainError> {
    config.check()?;
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

impl Counters {
    /// The counters at the end of checkpoint `latest`.
    pub(super) fn after(latest: &Latest) -> Counters {
        Counters {
            iterations: latest.iteration + 1,
            train_steps: latest.train_steps,
            positions: latest.positions,
            elapsed_before: latest.elapsed_s,
        }
    }

    /// Seconds of training in every session, this one begun at `session`.
    pub(super) fn elapsed_s(&self, session: Instant) -> f64 {
        self.elapsed_before + session.elapsed().as_secs_f64()
    }

    /// Whether `limits` are reached: the minutes of the session begun at `session`, the
    /// deadline, the training steps.
    pub(super) fn reached(&self, limits: &Limits, session: Instant) -> bool {
        let minutes = session.elapsed().as_secs_f64() / 60.0;
        limits.deadline.is_some_and(|d| Instant::now() >= d)
            || limits.minutes.is_some_and(|m| minutes >= m)
            || limits.steps.is_some_and(|s| self.train_steps >= s)
    }

    /// The checkpoint record of the iterations completed (none before the first).
    pub(super) fn latest(&self, elapsed_s: f64, eval_latency_s: Option<f64>) -> Option<Latest> {
        let last = self.iterations.checked_sub(1)?;
        Some(Latest {
            iteration: last,
            dir: format!("iter-{last:06}"),
            train_steps: self.train_steps,
            positions: self.positions,
            elapsed_s,
            eval_latency_s,
        })
    }
}

impl Learner {
    /// The learner of a new run: its network (random, or the one `init` names) and
    /// buffers holding every case's demonstrations, each case's first target line
    /// ([`CaseRun::first_target`]) as its policy targets. Every demonstration teaches
    /// values and rewards.
    pub(super) fn fresh<'a>(
        info: &RunInfo,
        cases: impl IntoIterator<Item = &'a CaseRun>,
    ) -> Result<Learner, TrainError> {
        let (c, n) = (&info.config, &info.network);
        let net = match &c.init {
            Some(init) => super::load_init(init)?,
            None => MuZeroNet::new(n, c.seed, &device())?,
        };
        let opt = Optimizer::new(net.vars(), c.optim.clone())?;
        let replay = ReplayBuffer::new(c.replay.clone(), n.observation_len, n.action_count)?;
        let mut demos = ReplayBuffer::new(c.replay.clone(), n.observation_len, n.action_count)?;
        for case in cases {
            for game in &case.demos {
                demos.push(history_of(game, false)?)?;
            }
            if let Some(game) = case.first_target() {
                imitate(&mut demos, game)?;
            }
        }
        Ok(Learner {
            net,
            opt,
            replay,
            demos,
        })
    }

    /// Where the games a case finds in `iteration` teach this learner.
    pub(super) fn taught_at(
        &mut self,
        config: &TrainConfig,
        counters: &Counters,
        iteration: u64,
    ) -> case::Learner<'_> {
        case::Learner {
            demos: &mut self.demos,
            demo_fraction: config.demo_fraction,
            found: Found {
                iteration: Some(iteration),
                train_steps: Some(counters.train_steps),
            },
        }
    }

    /// Takes the games `case` played in `iteration`: counts their positions, lets the case
    /// keep the best of them, and stores the self-play games for training; returns their
    /// returns.
    pub(super) fn absorb(
        &mut self,
        case: &mut CaseRun,
        played: Vec<PlayedGame>,
        counters: &mut Counters,
        config: &TrainConfig,
        iteration: u64,
    ) -> Result<Vec<f64>, TrainError> {
        let mut returns = Vec::with_capacity(played.len());
        for g in played {
            counters.positions += g.history.len() as u64;
            // Branch proposals (no history) are not self-play games of their own.
            if !g.history.is_empty() {
                returns.push(g.game.total_return());
            }
            case.consider(&g, &mut self.taught_at(config, counters, iteration))?;
            // A branch game that only replayed the best game to its end searched nothing.
            if !g.history.is_empty() {
                self.replay.push(g.history)?;
            }
        }
        Ok(returns)
    }

    /// The demonstrations-only training steps that come before the first self-play games
    /// (at most `limits.steps`); nothing once the run has trained.
    pub(super) fn pretrain_before_play(
        &mut self,
        config: &TrainConfig,
        counters: &mut Counters,
        limits: &Limits,
    ) -> Result<(), TrainError> {
        if counters.train_steps > 0 || counters.iterations > 0 {
            return Ok(());
        }
        let steps = limits.steps.map_or(config.demo_pretrain_steps, |s| {
            s.min(config.demo_pretrain_steps)
        });
        let cancelled = move || past(limits.deadline);
        self.pretrain(config, counters, steps, &cancelled)
    }

    /// Trains on the buffers up to the controlled ratio of steps per position generated
    /// (plus the pre-training steps; at most `step_limit` steps in all), until `cancelled`.
    pub(super) fn learn(
        &mut self,
        config: &TrainConfig,
        counters: &mut Counters,
        iteration: u64,
        step_limit: Option<u64>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Learned, TrainError> {
        let mut rng = StdRng::seed_from_u64(seed_for(config.seed, iteration, 2));
        let pretrain = if self.demos.positions() > 0 {
            config.demo_pretrain_steps
        } else {
            0
        };
        let target = (config.train_steps_per_position * counters.positions as f64).floor() as u64;
        let target = target + pretrain;
        let target = step_limit.map_or(target, |s| target.min(s));
        let mut learned = Learned::default();
        while counters.train_steps < target && self.replay.positions() > 0 && !cancelled() {
            let share = self.demo_share(config);
            self.step(config, share, &mut rng, &mut learned)?;
            counters.train_steps += 1;
        }
        Ok(learned)
    }

    /// Training steps on the demonstrations alone (before any self-play game).
    fn pretrain(
        &mut self,
        config: &TrainConfig,
        counters: &mut Counters,
        steps: u64,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), TrainError> {
        if self.demos.positions() == 0 {
            return Ok(());
        }
        let mut rng = StdRng::seed_from_u64(seed_for(config.seed, 0, 6));
        let mut learned = Learned::default();
        for _ in 0..steps {
            if cancelled() {
                break;
            }
            self.step(config, config.batch_size, &mut rng, &mut learned)?;
            counters.train_steps += 1;
        }
        Ok(())
    }

    /// How many samples of a batch come from the demonstrations buffer.
    fn demo_share(&self, config: &TrainConfig) -> usize {
        if self.demos.positions() == 0 {
            return 0;
        }
        let n = (config.batch_size as f64 * config.demo_fraction).round() as usize;
        n.min(config.batch_size)
    }

    /// One step on a batch with `from_demos` samples from the demonstrations buffer and
    /// the rest from self-play; each buffer gets its own samples' new priorities.
    fn step(
        &mut self,
        config: &TrainConfig,
        from_demos: usize,
        rng: &mut StdRng,
        learned: &mut Learned,
    ) -> Result<(), TrainError> {
        let from_play = config.batch_size - from_demos;
        let mut batch = TrainingBatch::default();
        if from_play > 0 {
            batch = self.replay.sample(from_play, rng)?;
        }
        if from_demos > 0 {
            batch.append(&self.demos.sample(from_demos, rng)?);
        }
        let shards = config.threads.max(1);
        let out = muzero::train_step(&self.net, &mut self.opt, &batch, &config.loss, shards)?;
        let stats = out.stats;
        let (play_idx, demo_idx) = batch.indices.split_at(from_play);
        let (play_err, demo_err) = out.value_errors.split_at(from_play);
        self.replay.update_priorities(play_idx, play_err)?;
        self.demos.update_priorities(demo_idx, demo_err)?;
        let sum = &mut learned.loss_sum;
        sum.value += out.parts.value;
        sum.reward += out.parts.reward;
        sum.policy += out.parts.policy;
        sum.total += out.parts.total;
        learned.last = Some(stats);
        learned.steps += 1;
        Ok(())
    }

    /// This iteration's reanalyse round on the game `setup` (none: no reanalyse), with
    /// the weights the learner has now.
    fn reanalyse(
        &mut self,
        setup: Option<&Arc<GameSetup>>,
        config: &TrainConfig,
        iteration: u64,
        learned: Learned,
    ) -> Result<Learned, TrainError> {
        let Some(setup) = setup else {
            return Ok(learned);
        };
        let net = &self.net;
        let reanalysed = reanalyse_round(net, setup, &mut self.replay, config, iteration)?;
        Ok(Learned {
            reanalysed,
            ..learned
        })
    }
}

pub(super) fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
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
