//! [`Trainer`]: one run, stepped an iteration at a time.

use super::best::Found;
use super::case::{self, CaseRun};
use super::demos::{history_of, imitate};
use super::remote::{self, BatchInfo};
use super::run_dir::{write_json, Latest, RunDir, RunInfo};
use super::selfplay::{reanalyse_round, seed_for};
use super::selfplay::{Collector, PlayedGame};
use super::{Limits, TrainConfig, TrainError};
use malloc_game::record::GameRecord;
use malloc_game::GameSetup;
use muzero::{device, LossParts, MuZeroNet};
use muzero::{Optimizer, StepStats};
use muzero::{ReplayBuffer, TrainingBatch};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a run reports at its end (also `best/summary.json`).
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

/// What a run keeps: where it writes, its case (game, demonstrations, baseline, best).
struct Run {
    dir: RunDir,
    /// The threads that replay branch proposals.
    pool: rayon::ThreadPool,
    case: CaseRun,
    info: RunInfo,
    all_slow: f64,
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

/// A training run: started or resumed in a run directory, then stepped an iteration at a
/// time ([`Trainer::step_iteration`]) or run to its limits ([`Trainer::run`]).
pub struct Trainer {
    run: Run,
    learner: Learner,
    counters: Counters,
    /// The last iteration the newest checkpoint includes.
    saved_through: Option<u64>,
    session: Instant,
    /// The next remote work order's ticket (see [`Trainer::order`]).
    next_ticket: u64,
}

impl Trainer {
    /// Starts a run of `setup` in `dir`. `workload` is the built-in name or the program
    /// file it was loaded from. A folder whose run of the same game has no checkpoint yet
    /// (it stopped in its first iterations) is started again, keeping the best mapping it
    /// found; a folder whose run has a checkpoint, or is of another game, is refused
    /// ([`TrainError::RunExists`]).
    pub fn start(
        setup: Arc<GameSetup>,
        workload: &str,
        config: TrainConfig,
        dir: &Path,
    ) -> Result<Trainer, TrainError> {
        config.check()?;
        let mut config = config;
        if config.threads == 0 {
            config.threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        let network = config.network_for(&setup)?;
        let run_dir = RunDir::new(dir);
        let exists = |what| TrainError::RunExists {
            dir: dir.display().to_string(),
            what,
        };
        if run_dir.read_latest()?.is_some() {
            return Err(exists("with a checkpoint"));
        }
        let info = RunInfo {
            rules: malloc_game::RULES_VERSION,
            workload: workload.to_string(),
            workload_path: program_file(workload),
            program_hash: setup.program().content_hash(),
            hardware: setup.hardware().to_file(),
            options: setup.options().clone(),
            network,
            config,
            cases: Vec::new(),
        };
        match run_dir.read_info() {
            Ok(Some(earlier)) if !earlier.same_game(&info) => {
                return Err(exists("of another game"))
            }
            Err(_) => return Err(exists("with an unreadable run.json")),
            Ok(Some(_)) => {}
            // Files in `best/` without a run.json are nobody's.
            Ok(None) => run_dir.clear_best()?,
        }
        run_dir.create()?;
        run_dir.write_info(&info, setup.program())?;
        Trainer::fresh(Run::new(run_dir, setup, info)?)
    }

    /// Resumes the run in `dir` from its newest checkpoint, or starts it afresh from its
    /// `run.json` when it has none. The program comes from the folder ([`RunInfo::setup`]).
    /// `config` replaces the run's training config (not its network).
    pub fn resume(dir: &Path, config: Option<TrainConfig>) -> Result<Trainer, TrainError> {
        let run_dir = RunDir::new(dir);
        let mut info = super::read_run_info(dir)?;
        if !info.cases.is_empty() {
            return Err(TrainError::Resume(format!(
                "{} holds a multi-program run: resume it as one (`train --resume` does)",
                dir.display()
            )));
        }
        let setup = info.setup(dir)?;
        if let Some(c) = config.filter(|c| *c != info.config) {
            c.check()?;
            if c.network.as_ref().is_some_and(|n| *n != info.network) {
                return Err(TrainError::Config(format!(
                    "network: differs from the network of the run in {}, which a resume keeps",
                    dir.display()
                )));
            }
            info.config = c;
            run_dir.write_info(&info, setup.program())?;
        }
        info.config.check()?;
        run_dir.create()?;
        let run = Run::new(run_dir, setup, info)?;
        match run.dir.read_latest()? {
            None => Trainer::fresh(run),
            Some(latest) => Trainer::restore(run, latest),
        }
    }

    fn fresh(run: Run) -> Result<Trainer, TrainError> {
        run.dir.roll_back_to(None)?;
        let learner = Learner::fresh(&run.info, [&run.case])?;
        Ok(Trainer {
            run,
            learner,
            counters: Counters::default(),
            saved_through: None,
            session: Instant::now(),
            next_ticket: 0,
        })
    }

    fn restore(mut run: Run, latest: Latest) -> Result<Trainer, TrainError> {
        let (network, optim) = (&run.info.network, &run.info.config.optim);
        let learner = run.dir.load_checkpoint(&latest, network, optim)?;
        run.dir.roll_back_to(Some(&latest))?;
        run.case.last_eval = latest.eval_latency_s;
        Ok(Trainer {
            run,
            learner,
            counters: Counters::after(&latest),
            saved_through: Some(latest.iteration),
            session: Instant::now(),
            next_ticket: 0,
        })
    }

    /// Runs iterations until a limit is reached or `stop` is raised (checked between
    /// iterations: the current one is finished, so the run stays what an uninterrupted one
    /// would have been), calling `progress` after each; then [`Trainer::finish`]es.
    pub fn run(
        &mut self,
        limits: &Limits,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<TrainSummary, TrainError> {
        limits.check()?;
        let interrupted = run_until(self, limits, stop, progress)?;
        self.finish(interrupted)
    }

    /// One iteration: self-play with the current weights beside the learner, then the
    /// new games enter the buffer, the evaluation game, the metrics line, and a checkpoint
    /// when one is due. The learner stops at `limits.steps`. `None`: `limits.deadline`
    /// came during the iteration, which is dropped (its games are not kept).
    pub fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError> {
        let iteration = self.counters.iterations;
        let cancelled = move || past(limits.deadline);
        self.pretrain(limits)?;
        let weights = self.learner.net.snapshot()?;
        let best = self.run.case.line_to_improve();
        let eval_due = iteration % self.run.info.config.eval_every as u64 == 0;
        let (run, learner, counters) = (&self.run, &mut self.learner, &mut self.counters);
        // The evaluation game plays the same weights as self-play, on a thread of its own.
        let (learned, played, eval) = std::thread::scope(|s| {
            let selfplay = s.spawn(|| {
                run.collector()
                    .collect(&weights, iteration, best.as_ref(), &cancelled)
            });
            let eval = eval_due
                .then(|| s.spawn(|| run.case.eval_game(&weights, &run.info.config, iteration)));
            let learned = learner
                .learn(
                    &run.info.config,
                    counters,
                    iteration,
                    limits.steps,
                    &cancelled,
                )
                .and_then(|l| learner.reanalyse(run, iteration, l));
            let played = selfplay.join().unwrap_or(Err(TrainError::SelfPlayPanicked));
            let eval = eval.map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)));
            (learned, played, eval)
        });
        let learned = learned?;
        let Some(played) = played? else {
            return Ok(None);
        };
        let returns = self.absorb(played, iteration)?;
        self.end_iteration(iteration, &learned, &returns, eval.transpose()?)
            .map(Some)
    }

    /// The demonstrations-only training steps that come before the first self-play games
    /// (at most `limits.steps`); nothing once the run has trained.
    pub fn pretrain(&mut self, limits: &Limits) -> Result<(), TrainError> {
        let c = &self.run.info.config;
        self.learner
            .pretrain_before_play(c, &mut self.counters, limits)
    }

    /// The end of every iteration: the evaluation game (if one was played), the metrics
    /// line, and a checkpoint when one is due.
    fn end_iteration(
        &mut self,
        iteration: u64,
        learned: &Learned,
        returns: &[f64],
        eval: Option<PlayedGame>,
    ) -> Result<Progress, TrainError> {
        if let Some(g) = eval {
            self.record_eval(g, iteration)?;
        }
        self.counters.iterations += 1;
        let p = self.progress(iteration, learned, returns);
        self.run.dir.append_metrics(&p)?;
        if self.counters.iterations % self.run.info.config.checkpoint_every as u64 == 0 {
            self.checkpoint()?;
        }
        Ok(p)
    }

    /// The run as a remote self-play worker needs it ([`super::SelfPlayWorker::new`]).
    pub fn describe(&self) -> Result<Vec<u8>, TrainError> {
        remote::describe(&self.run.info, &self.run.case.setup)
    }

    /// The learner's weights now, as bytes ([`super::SelfPlayWorker::load_weights`]).
    pub fn weights(&self) -> Result<Vec<u8>, TrainError> {
        Ok(self.learner.net.to_bytes()?)
    }

    /// The next batch of self-play for a remote worker: a fresh ticket, and the line that
    /// branch games and proposals start from now.
    pub fn order(&mut self) -> Result<Vec<u8>, TrainError> {
        let ticket = self.next_ticket.max(self.counters.iterations);
        self.next_ticket = ticket + 1;
        remote::order(ticket, self.run.case.line_to_improve().as_ref())
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
        let (info, played) = remote::decode_batch(&self.run.case.setup, bytes)?;
        let iteration = self.counters.iterations;
        let returns = self.absorb(played, iteration)?;
        let cancelled = move || past(limits.deadline);
        let weights = self.learner.net.snapshot()?;
        let eval_due = iteration % self.run.info.config.eval_every as u64 == 0;
        let (run, learner, counters) = (&self.run, &mut self.learner, &mut self.counters);
        let (learned, eval) = std::thread::scope(|s| {
            let config = &run.info.config;
            let eval =
                eval_due.then(|| s.spawn(|| run.case.eval_game(&weights, config, iteration)));
            let learned = learner
                .learn(config, counters, iteration, limits.steps, &cancelled)
                .and_then(|l| learner.reanalyse(run, iteration, l));
            let eval = eval.map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)));
            (learned, eval)
        });
        let p = self.end_iteration(iteration, &learned?, &returns, eval.transpose()?)?;
        Ok((info, p))
    }

    /// Whether `limits` are reached (the session's minutes, the deadline, the steps).
    pub fn limits_reached(&self, limits: &Limits) -> bool {
        self.counters.reached(limits, self.session)
    }

    /// Counts the new games, keeps the best, and stores them for the learner; returns
    /// their returns.
    fn absorb(&mut self, played: Vec<PlayedGame>, iteration: u64) -> Result<Vec<f64>, TrainError> {
        let (case, config) = (&mut self.run.case, &self.run.info.config);
        self.learner
            .absorb(case, played, &mut self.counters, config, iteration)
    }

    /// Saves the evaluation game under `games/`, then the case records it.
    fn record_eval(&mut self, g: PlayedGame, iteration: u64) -> Result<(), TrainError> {
        let path = self
            .run
            .dir
            .games()
            .join(format!("eval-{iteration:06}.game"));
        GameRecord::from_game(&g.game, "muzero", iteration, Some(g.search.clone()))?.save(&path)?;
        let mut to = self
            .learner
            .taught_at(&self.run.info.config, &self.counters, iteration);
        self.run.case.record_eval(&g, &mut to)
    }

    fn progress(&self, iteration: u64, learned: &Learned, returns: &[f64]) -> Progress {
        let elapsed = self.elapsed_s();
        let p = Progress::of_learning(iteration, &self.counters, elapsed, learned, returns);
        self.run.case.report(p)
    }

    /// Saves a checkpoint of the iterations completed, unless the newest one has them.
    pub fn checkpoint(&mut self) -> Result<(), TrainError> {
        let latest = self
            .counters
            .latest(self.elapsed_s(), self.run.case.last_eval);
        self.saved_through =
            save_checkpoint(&self.run.dir, &self.learner, latest, self.saved_through)?;
        Ok(())
    }

    /// Ends the session: a checkpoint of every iteration completed and
    /// `best/summary.json`. The best mapping itself was written when it was found.
    pub fn finish(&mut self, interrupted: bool) -> Result<TrainSummary, TrainError> {
        self.checkpoint()?;
        let summary = self.summary(interrupted);
        write_json(&self.run.dir.best().join("summary.json"), &summary)?;
        Ok(summary)
    }

    /// The run so far.
    pub fn summary(&self, interrupted: bool) -> TrainSummary {
        TrainSummary {
            iterations: self.counters.iterations,
            train_steps: self.counters.train_steps,
            positions: self.counters.positions,
            elapsed_s: self.elapsed_s(),
            xla_latency_s: self.run.case.xla,
            all_slow_latency_s: self.run.all_slow,
            best_latency_s: Some(self.run.case.best.latency).filter(|l| l.is_finite()),
            best_return: Some(self.run.case.best.ret).filter(|r| r.is_finite()),
            eval_latency_s: self.run.case.last_eval,
            interrupted,
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.counters.elapsed_s(self.session)
    }

    pub fn dir(&self) -> &Path {
        self.run.dir.root()
    }
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.run.case.setup
    }
    pub fn info(&self) -> &RunInfo {
        &self.run.info
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
    /// The demonstrations buffer: the heuristics' games and the agent's best game (the
    /// one whose moves are policy targets), sampled beside self-play.
    pub fn demonstrations(&self) -> &ReplayBuffer {
        &self.learner.demos
    }
    /// The best return found so far (-inf before any game has finished).
    pub fn best_return(&self) -> f64 {
        self.run.case.best.ret
    }
    pub fn best_latency_s(&self) -> f64 {
        self.run.case.best.latency
    }
}

impl Run {
    fn new(dir: RunDir, setup: Arc<GameSetup>, info: RunInfo) -> Result<Run, TrainError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(info.config.threads.max(1))
            .build()
            .map_err(|e| TrainError::Config(format!("threads: {e}")))?;
        let all_slow = setup.all_slow_latency();
        let case = CaseRun::new(setup, &dir.best(), &info.workload, &info.config)?;
        Ok(Run {
            pool,
            case,
            all_slow,
            dir,
            info,
        })
    }

    fn collector(&self) -> Collector<'_> {
        Collector {
            setup: &self.case.setup,
            config: &self.info.config,
            pool: &self.pool,
        }
    }
}

/// What [`run_until`] steps: a run of one program or of many.
pub(super) trait Iterations {
    fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError>;
    fn limits_reached(&self, limits: &Limits) -> bool;
}

impl Iterations for Trainer {
    fn step_iteration(&mut self, limits: &Limits) -> Result<Option<Progress>, TrainError> {
        Trainer::step_iteration(self, limits)
    }
    fn limits_reached(&self, limits: &Limits) -> bool {
        Trainer::limits_reached(self, limits)
    }
}

/// Runs iterations until a limit is reached or `stop` is raised (checked between
/// iterations: the current one is finished, so the run stays what an uninterrupted one
/// would have been), calling `progress` after each. Returns whether `stop` ended it.
pub(super) fn run_until(
    t: &mut impl Iterations,
    limits: &Limits,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<bool, TrainError> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(true);
        }
        if t.limits_reached(limits) {
            return Ok(false);
        }
        match t.step_iteration(limits)? {
            Some(p) => progress(&p),
            None => return Ok(false),
        }
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

/// Saves checkpoint `latest` of `learner` in `dir` unless the newest one (`saved_through`)
/// has its iterations; returns the newest checkpoint's last iteration.
pub(super) fn save_checkpoint(
    dir: &RunDir,
    learner: &Learner,
    latest: Option<Latest>,
    saved_through: Option<u64>,
) -> Result<Option<u64>, TrainError> {
    match latest {
        Some(l) if saved_through != Some(l.iteration) => {
            dir.save_checkpoint(&l, learner)?;
            Ok(Some(l.iteration))
        }
        _ => Ok(saved_through),
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
        let out = self.net.loss(&batch, &config.loss)?;
        let stats = self.opt.step(&out.loss)?;
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

    /// This iteration's reanalyse round, with the weights the learner has now.
    fn reanalyse(
        &mut self,
        run: &Run,
        iteration: u64,
        learned: Learned,
    ) -> Result<Learned, TrainError> {
        let (net, config) = (&self.net, &run.info.config);
        let reanalysed =
            reanalyse_round(net, &run.case.setup, &mut self.replay, config, iteration)?;
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
    if bench_workloads::names().contains(&workload) {
        return None;
    }
    let path = std::fs::canonicalize(workload).ok()?;
    path.is_file().then(|| path.display().to_string())
}
