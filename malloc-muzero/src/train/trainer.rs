//! [`Trainer`]: one run, stepped an iteration at a time.

use super::best::{Best, Found};
use super::demos::{corrected_history, demonstration, history_of, imitate};
use super::remote::{self, BatchInfo};
use super::run_dir::{write_json, Latest, RunDir, RunInfo};
use super::selfplay::{play_greedy, reanalyse_round, seed_for, xla_latency};
use super::selfplay::{Collector, PlayedGame};
use super::{Limits, TrainConfig, TrainError};
use malloc_game::anytime::Line;
use malloc_game::record::GameRecord;
use malloc_game::{Game, GameSetup};
use muzero::SearchConfig;
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

/// What a run keeps fixed: where it writes, what it plays and its baselines.
struct Run {
    dir: RunDir,
    /// The demonstrations' games (deterministic: recomputed when a run resumes).
    demos: Vec<Game>,
    /// The threads that replay branch proposals.
    pool: rayon::ThreadPool,
    setup: Arc<GameSetup>,
    info: RunInfo,
    xla: f64,
    all_slow: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    /// Iterations completed: the next iteration's number.
    iterations: u64,
    train_steps: u64,
    positions: u64,
    /// Seconds of training in earlier sessions.
    elapsed_before: f64,
}

/// What the learner did in one iteration.
#[derive(Default)]
struct Learned {
    steps: u64,
    loss_sum: LossParts,
    last: Option<StepStats>,
    reanalysed: usize,
}

/// A training run: started or resumed in a run directory, then stepped an iteration at a
/// time ([`Trainer::step_iteration`]) or run to its limits ([`Trainer::run`]).
pub struct Trainer {
    run: Run,
    learner: Learner,
    counters: Counters,
    best: Best,
    last_eval: Option<f64>,
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
        let (c, n) = (&run.info.config, &run.info.network);
        let net = match &c.init {
            Some(dir) => super::load_network(Path::new(dir))
                .map_err(|e| TrainError::Config(format!("init: {e}")))?,
            None => MuZeroNet::new(n, c.seed, &device())?,
        };
        let opt = Optimizer::new(net.vars(), c.optim.clone())?;
        let replay = ReplayBuffer::new(c.replay.clone(), n.observation_len, n.action_count)?;
        let mut demos = ReplayBuffer::new(c.replay.clone(), n.observation_len, n.action_count)?;
        let best = run.read_best()?;
        // Every demonstration teaches values and rewards; the best game of all (the
        // agent's own best from an earlier start, else the best demonstration) is the
        // one the policy imitates.
        let mut first: Option<Game> = best.game.clone();
        for game in &run.demos {
            demos.push(history_of(game, false)?)?;
            if first
                .as_ref()
                .is_none_or(|f| game.total_return() > f.total_return())
            {
                first = Some(game.clone());
            }
        }
        if let Some(game) = &first {
            imitate(&mut demos, game)?;
        }
        Ok(Trainer {
            run,
            learner: Learner {
                net,
                opt,
                replay,
                demos,
            },
            counters: Counters::default(),
            best,
            last_eval: None,
            saved_through: None,
            session: Instant::now(),
            next_ticket: 0,
        })
    }

    fn restore(run: Run, latest: Latest) -> Result<Trainer, TrainError> {
        let (network, optim) = (&run.info.network, &run.info.config.optim);
        let learner = run.dir.load_checkpoint(&latest, network, optim)?;
        run.dir.roll_back_to(Some(&latest))?;
        let best = run.read_best()?;
        Ok(Trainer {
            run,
            learner,
            counters: Counters {
                iterations: latest.iteration + 1,
                train_steps: latest.train_steps,
                positions: latest.positions,
                elapsed_before: latest.elapsed_s,
            },
            best,
            last_eval: latest.eval_latency_s,
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
        let interrupted = loop {
            if stop.load(Ordering::SeqCst) {
                break true;
            }
            if self.reached(limits) {
                break false;
            }
            match self.step_iteration(limits)? {
                Some(p) => progress(&p),
                None => break false,
            }
        };
        self.finish(interrupted)
    }

    fn reached(&self, limits: &Limits) -> bool {
        let minutes = self.session.elapsed().as_secs_f64() / 60.0;
        limits.deadline.is_some_and(|d| Instant::now() >= d)
            || limits.minutes.is_some_and(|m| minutes >= m)
            || limits.steps.is_some_and(|s| self.counters.train_steps >= s)
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
        let best = self.line_to_improve();
        let eval_due = iteration % self.run.info.config.eval_every as u64 == 0;
        let (run, learner, counters) = (&self.run, &mut self.learner, &mut self.counters);
        // The evaluation game plays the same weights as self-play, on a thread of its own.
        let (learned, played, eval) = std::thread::scope(|s| {
            let selfplay = s.spawn(|| {
                run.collector()
                    .collect(&weights, iteration, best.as_ref(), &cancelled)
            });
            let eval = eval_due.then(|| s.spawn(|| run.eval_game(&weights, iteration)));
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
        if self.counters.train_steps > 0 || self.counters.iterations > 0 {
            return Ok(());
        }
        let c = &self.run.info.config;
        let steps = limits
            .steps
            .map_or(c.demo_pretrain_steps, |s| s.min(c.demo_pretrain_steps));
        let cancelled = move || past(limits.deadline);
        self.learner
            .pretrain(c, &mut self.counters, steps, &cancelled)
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
        remote::describe(&self.run.info, &self.run.setup)
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
        remote::order(ticket, self.line_to_improve().as_ref())
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
        let (info, played) = remote::decode_batch(&self.run.setup, bytes)?;
        let iteration = self.counters.iterations;
        let returns = self.absorb(played, iteration)?;
        let cancelled = move || past(limits.deadline);
        let weights = self.learner.net.snapshot()?;
        let eval_due = iteration % self.run.info.config.eval_every as u64 == 0;
        let (run, learner, counters) = (&self.run, &mut self.learner, &mut self.counters);
        let (learned, eval) = std::thread::scope(|s| {
            let eval = eval_due.then(|| s.spawn(|| run.eval_game(&weights, iteration)));
            let config = &run.info.config;
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
        self.reached(limits)
    }

    /// Counts the new games, keeps the best, and stores them for the learner; returns
    /// their returns.
    fn absorb(&mut self, played: Vec<PlayedGame>, iteration: u64) -> Result<Vec<f64>, TrainError> {
        let mut returns = Vec::with_capacity(played.len());
        for g in played {
            self.counters.positions += g.history.len() as u64;
            // Branch proposals (no history) are not self-play games of their own.
            if !g.history.is_empty() {
                returns.push(g.game.total_return());
            }
            self.consider(&g, iteration)?;
            // A branch game that only replayed the best game to its end searched nothing.
            if !g.history.is_empty() {
                self.learner.replay.push(g.history)?;
            }
        }
        Ok(returns)
    }

    /// Saves the evaluation game under `games/` and keeps it if it is the best.
    fn record_eval(&mut self, g: PlayedGame, iteration: u64) -> Result<(), TrainError> {
        self.last_eval = g.game.final_latency();
        let path = self
            .run
            .dir
            .games()
            .join(format!("eval-{iteration:06}.game"));
        GameRecord::from_game(&g.game, "muzero", iteration, Some(g.search.clone()))?.save(&path)?;
        self.consider(&g, iteration)?;
        let c = &self.run.info.config;
        let line = self.line_to_improve();
        let best = line.as_ref().and_then(Game::final_latency);
        let off_line = best.is_some_and(|b| b < g.game.final_latency().unwrap_or(f64::INFINITY));
        if c.demo_fraction > 0.0 && off_line {
            if let Some(best) = line.as_ref().and_then(|b| Line::of(b, 16)) {
                let corrected = corrected_history(&g.game, &best)?;
                self.learner.demos.push(corrected)?;
            }
        }
        Ok(())
    }

    /// The game branch games and proposals start from: the agent's best game, or the best
    /// demonstration where that is faster (search improves on the best heuristic).
    fn line_to_improve(&self) -> Option<Game> {
        let latency = |g: &Game| g.final_latency().unwrap_or(f64::INFINITY);
        self.best
            .game
            .iter()
            .chain(&self.run.demos)
            .min_by(|a, b| latency(a).total_cmp(&latency(b)))
            .cloned()
    }

    /// Keeps `g` as the best if it is, and then lets the learner imitate it. A branch game
    /// or proposal whose mapping is a demonstration's (its search chose the
    /// demonstration's moves) is not the agent's result.
    fn consider(&mut self, g: &PlayedGame, iteration: u64) -> Result<(), TrainError> {
        // A branch game or a proposal played only part of the game itself (its history
        // is shorter than the game); if its line was a demonstration's, it may be that
        // demonstration. A game the agent played from the start counts even if it
        // reproduces one.
        let branched = g.history.len() < g.game.turn();
        if branched && !self.run.demos.is_empty() {
            let mapping = g.game.mapping();
            if self.run.demos.iter().any(|d| d.mapping() == mapping) {
                return Ok(());
            }
        }
        let latency = g.game.final_latency().unwrap_or(f64::INFINITY);
        let best_demo = self
            .run
            .demos
            .iter()
            .filter_map(Game::final_latency)
            .fold(f64::INFINITY, f64::min);
        if self.best.consider(g, &self.found(iteration))?
            && self.run.info.config.demo_fraction > 0.0
            && latency <= best_demo
        {
            imitate(&mut self.learner.demos, &g.game)?;
        }
        Ok(())
    }

    fn found(&self, iteration: u64) -> Found {
        Found {
            iteration: Some(iteration),
            train_steps: Some(self.counters.train_steps),
        }
    }

    fn progress(&self, iteration: u64, learned: &Learned, returns: &[f64]) -> Progress {
        let n = learned.steps.max(1) as f32;
        let s = &learned.loss_sum;
        Progress {
            iteration,
            elapsed_s: self.elapsed_s(),
            positions: self.counters.positions,
            train_steps: self.counters.train_steps,
            steps_this_iteration: learned.steps,
            reanalysed_games: learned.reanalysed,
            loss: s.total / n,
            loss_value: s.value / n,
            loss_reward: s.reward / n,
            loss_policy: s.policy / n,
            lr: learned.last.map(|l| l.lr),
            grad_norm: learned.last.map(|l| l.grad_norm),
            selfplay_mean_return: returns.iter().sum::<f64>() / returns.len().max(1) as f64,
            eval_latency_s: self.last_eval,
            best_latency_s: self.best.latency,
            best_return: self.best.ret,
            xla_latency_s: self.run.xla,
            speedup_vs_xla: self.run.xla / self.best.latency,
        }
    }

    /// Saves a checkpoint of the iterations completed, unless the newest one has them.
    pub fn checkpoint(&mut self) -> Result<(), TrainError> {
        let Some(last) = self.counters.iterations.checked_sub(1) else {
            return Ok(());
        };
        if self.saved_through == Some(last) {
            return Ok(());
        }
        let latest = Latest {
            iteration: last,
            dir: format!("iter-{last:06}"),
            train_steps: self.counters.train_steps,
            positions: self.counters.positions,
            elapsed_s: self.elapsed_s(),
            eval_latency_s: self.last_eval,
        };
        self.run.dir.save_checkpoint(&latest, &self.learner)?;
        self.saved_through = Some(last);
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
            xla_latency_s: self.run.xla,
            all_slow_latency_s: self.run.all_slow,
            best_latency_s: Some(self.best.latency).filter(|l| l.is_finite()),
            best_return: Some(self.best.ret).filter(|r| r.is_finite()),
            eval_latency_s: self.last_eval,
            interrupted,
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.counters.elapsed_before + self.session.elapsed().as_secs_f64()
    }

    pub fn dir(&self) -> &Path {
        self.run.dir.root()
    }
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.run.setup
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
        self.best.ret
    }
    pub fn best_latency_s(&self) -> f64 {
        self.best.latency
    }
}

impl Run {
    fn new(dir: RunDir, setup: Arc<GameSetup>, info: RunInfo) -> Result<Run, TrainError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(info.config.threads.max(1))
            .build()
            .map_err(|e| TrainError::Config(format!("threads: {e}")))?;
        let demos = info
            .config
            .demonstrations
            .iter()
            .filter_map(|name| demonstration(&setup, name))
            .collect();
        Ok(Run {
            demos,
            pool,
            xla: xla_latency(&setup)?,
            all_slow: setup.all_slow_latency(),
            dir,
            setup,
            info,
        })
    }

    fn collector(&self) -> Collector<'_> {
        Collector {
            setup: &self.setup,
            config: &self.info.config,
            pool: &self.pool,
        }
    }

    fn read_best(&self) -> Result<Best, TrainError> {
        let c = &self.info.config;
        let (best, workload) = (self.dir.best(), &self.info.workload);
        Best::read_back(&best, &self.setup, workload, c.seed, self.xla)
    }

    /// The evaluation game (no noise) with `weights`.
    fn eval_game(&self, weights: &MuZeroNet, iteration: u64) -> Result<PlayedGame, TrainError> {
        let c = &self.info.config;
        let search = SearchConfig {
            simulations: c.eval_simulations,
            ..c.search.clone()
        };
        play_greedy(
            weights,
            &self.setup,
            &search,
            seed_for(c.seed, iteration, 3),
        )
    }
}

impl Learner {
    /// Trains on the buffers up to the controlled ratio of steps per position generated
    /// (plus the pre-training steps; at most `step_limit` steps in all), until `cancelled`.
    fn learn(
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
        let reanalysed = reanalyse_round(net, &run.setup, &mut self.replay, config, iteration)?;
        Ok(Learned {
            reanalysed,
            ..learned
        })
    }
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The absolute path of the program file `workload` names; none for a built-in (or a
/// program built in code).
fn program_file(workload: &str) -> Option<String> {
    if bench_workloads::names().contains(&workload) {
        return None;
    }
    let path = std::fs::canonicalize(workload).ok()?;
    path.is_file().then(|| path.display().to_string())
}
