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

mod open;

pub use open::{TrainCase, MAX_CASES};

use super::case::CaseRun;
use super::checkpoint::{CheckpointWriter, Snapshot};
use super::learner::{past, Counters, Learned, Learner};
use super::remote::{self, BatchInfo};
use super::run_dir::{RunDir, RunInfo};
use super::selfplay::{seed_for, Collector, PlayedGame};
use super::summary::{CaseSummary, Progress, TrainSummary};
use super::{Limits, TrainError};
use binio::json::write_json;
use malloc_game::record::GameRecord;
use malloc_game::GameSetup;
use muzero::ReplayBuffer;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

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

    /// The run folder.
    pub fn dir(&self) -> &Path {
        self.dir.root()
    }
    /// The first case's game (a run of one program's only one).
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.cases[0].setup
    }
    /// What `run.json` records: the program, hardware, game options, network and config.
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
    /// Training steps, counting those of earlier sessions.
    pub fn train_steps(&self) -> u64 {
        self.counters.train_steps
    }
    /// Positions generated by self-play, counting earlier sessions.
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
/// not say which program it is of, so a multi-program run does not reanalyse (`open::checked`
/// refuses the config).
fn reanalysed_on<'a>(info: &RunInfo, cases: &'a [CaseRun]) -> Option<&'a Arc<GameSetup>> {
    match cases {
        [only] if !info.is_multi() => Some(&only.setup),
        _ => None,
    }
}
