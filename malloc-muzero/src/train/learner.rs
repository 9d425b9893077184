//! The learner of a run ([`Learner`]: the network, its optimizer, the replay and
//! demonstrations buffers) and the counters a checkpoint carries ([`Counters`]).

use super::best::Found;
use super::case::{self, CaseRun};
use super::demos::{history_of, imitate};
use super::run_dir::{Latest, RunInfo};
use super::selfplay::{reanalyse_round, seed_for, PlayedGame};
use super::{Limits, TrainConfig, TrainError};
use malloc_game::GameSetup;
use muzero::{device, LossParts, MuZeroNet, Optimizer, ReplayBuffer, StepStats, TrainingBatch};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

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
    pub(super) fn reanalyse(
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
