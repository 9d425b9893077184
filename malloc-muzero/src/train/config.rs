//! What shapes a run ([`TrainConfig`]) and when it stops ([`Limits`]).

use super::TrainError;
use crate::SearchModel;
use muzero::OptimConfig;
use muzero::ReplayConfig;
use muzero::{GumbelConfig, SearchConfig};
use muzero::{LossWeights, NetworkConfig};
use serde::{Deserialize, Serialize};

/// Everything that shapes a training run. Loads from JSON (`--config FILE`); every field
/// has a default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// The seed of every random draw: a run repeats exactly for any thread count.
    pub seed: u64,
    /// The network; `None` sizes [`NetworkConfig::small`] to the game.
    pub network: Option<NetworkConfig>,
    /// Self-play search (Gumbel MuZero with 16 simulations by default).
    pub search: SearchConfig,
    /// Self-play plays a uniformly random legal action instead of the search's with this
    /// probability per turn (the search policy stays the policy target). Why: once the
    /// policy is sharp, the Gumbel noise alone seldom tries an action the model misjudges,
    /// so the model never sees the true outcome and self-play settles on a local optimum.
    pub explore_epsilon: f64,
    /// Simulations of the evaluation game (its search has no noise).
    pub eval_simulations: usize,
    /// What every search of the run steps through (self-play, branch proposals,
    /// evaluation games, reanalyse): the game itself (the default: exact rewards and
    /// states, the network's policy and value as the prior) or the network's learned
    /// model (MuZero's own, `learned`).
    pub search_model: SearchModel,
    /// The replay buffer's size, priorities and value targets.
    pub replay: ReplayConfig,
    /// The optimizer: learning rate and its schedule, Adam's moments, clipping.
    pub optim: OptimConfig,
    /// The weights of the value, reward and policy terms.
    pub loss: LossWeights,
    /// Positions per training step.
    pub batch_size: usize,
    /// Games played in lockstep per iteration (one batched search call per turn).
    pub games_per_iteration: usize,
    /// The controlled ratio: the learner does this many training steps per position
    /// generated.
    pub train_steps_per_position: f64,
    /// Play an evaluation game every this many iterations.
    pub eval_every: usize,
    /// Save a checkpoint every this many iterations (and at the end).
    pub checkpoint_every: usize,
    /// Keep every checkpoint, not only the newest (to choose among them afterwards, as
    /// the generalist's validation does). Each holds the replay buffers (95 MB after a
    /// minute on resnet50, 785 MB for the generalist's suite run).
    pub keep_checkpoints: bool,
    /// MuZero Reanalyse: each iteration the learner re-searches this many stored games
    /// with its latest network (noise-free) and replaces their search policies, root
    /// values and value targets (with the default Monte Carlo value targets only the
    /// policy targets change). Games are taken round-robin over the buffer, oldest first.
    /// 0 (the default) turns it off.
    pub reanalyse_games_per_iteration: usize,
    /// Self-play threads beside the learner (the iteration's games are split among them,
    /// each with its own seed), and the threads each learner batch is split among
    /// ([`muzero::train_step`]). 0: one per core, fixed when the run starts.
    pub threads: usize,
    /// The heuristics whose games the learner sees from the start, by name (the front end
    /// that starts the run knows them: [`super::Demonstrations`], which refuses an unknown
    /// one): their true rewards and the moves they played as policy targets. Kept apart
    /// from self-play in a buffer of their own, with the agent's best game
    /// (self-imitation).
    pub demonstrations: Vec<String>,
    /// The share of each batch drawn from the demonstrations buffer (when it has any).
    pub demo_fraction: f64,
    /// Training steps on the demonstrations alone before the first self-play games.
    pub demo_pretrain_steps: u64,
    /// The share of each iteration's self-play games that branch from the agent's best
    /// game so far: they replay it up to a random turn and search from there.
    pub branch_fraction: f64,
    /// Rounds of branch proposals per iteration: in each, the search picks a move at
    /// `proposals_per_round` random turns of the agent's best game, each differing move is
    /// played with the rest of the game kept from the best game where legal, and the
    /// fastest result, if faster, becomes the best game for the next round.
    pub proposal_rounds: usize,
    /// Turns of the best game each round of proposals tries a new move at.
    pub proposals_per_round: usize,
    /// A round's fastest proposal slower than the current line by a relative `d` still
    /// becomes the current line with probability `exp(-d / proposal_temperature)` (0: only
    /// faster ones do). Each iteration starts again from the best game.
    pub proposal_temperature: f64,
    /// Fine-tuning: a run folder whose newest checkpoint's network starts this run instead
    /// of random weights, or `bundled`, the generalist shipped with the project (its network config becomes this run's; the game must have the
    /// same observation and actions, so the same game options and number of fast levels).
    /// Only a fresh start reads it; a resumed run continues from its own checkpoint.
    pub init: Option<String>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 0,
            network: None,
            // c_scale 0.1 (mctx's default), not the paper's 1.0: with 1.0, sigma(q) over
            // min-max-rescaled Q spans ~66 and swamps the Gumbel noise, so self-play became
            // deterministic and stopped exploring (unet: every game identical from the
            // 9th iteration on).
            search: SearchConfig {
                simulations: 16,
                gumbel: Some(GumbelConfig {
                    c_scale: 0.1,
                    ..GumbelConfig::default()
                }),
                ..SearchConfig::default()
            },
            // 0.05: on the tiny test game, self-play without it found the optimum with 2 of 5
            // seeds in 3,000 steps (stuck behind a move whose model reward was wrong), with
            // it 5 of 5 (0.15: 4 of 4).
            explore_epsilon: 0.05,
            eval_simulations: 16,
            search_model: SearchModel::Game,
            replay: ReplayConfig::default(),
            optim: OptimConfig::default(),
            loss: LossWeights::default(),
            batch_size: 128,
            // 4 games and 64 rounds of 16 proposals at 1e-4: the proposals find nearly
            // every new best mapping, and the self-play games almost none (timed on
            // alphatensor-4x4: 8 games took 1.3 s of a 2.5 s iteration, 256 proposals
            // 0.4 s). With more proposals in place of games the agent's 60 s race ended
            // 2.3% faster there (docs/results.md, "More proposals").
            games_per_iteration: 4,
            train_steps_per_position: 0.05,
            eval_every: 1,
            checkpoint_every: 5,
            keep_checkpoints: false,
            reanalyse_games_per_iteration: 0,
            threads: 0,
            demonstrations: ["xla", "greedy-size", "beam"].map(String::from).to_vec(),
            demo_fraction: 0.25,
            demo_pretrain_steps: 300,
            branch_fraction: 0.5,
            proposal_rounds: 64,
            proposals_per_round: 16,
            proposal_temperature: 1e-4,
            init: None,
        }
    }
}

impl TrainConfig {
    /// A config file's text: a JSON object of the fields by name (nested ones objects
    /// too, never arrays read by position), each field once; missing fields keep their
    /// defaults. Errors name the field where they can.
    pub fn from_json(text: &str) -> Result<TrainConfig, String> {
        // Through parse_json: a `NaN` is named as found, not only by its column.
        let value: serde_json::Value = accel_sim::parse_json(text)?;
        let mut defaults =
            serde_json::to_value(TrainConfig::default()).map_err(|e| e.to_string())?;
        // `network` defaults to none, yet is an object when given.
        defaults["network"] =
            serde_json::to_value(NetworkConfig::small(1, 1)).map_err(|e| e.to_string())?;
        accel_sim::objects_where_objects(&value, &defaults, "TrainConfig")?;
        // From the text, not the value: a repeated field is an error there.
        accel_sim::parse_json(text)
    }

    /// Refuses impossible values, naming the field. The demonstrations' names are the
    /// front end's to check ([`super::Demonstrations::check`]).
    pub fn check(&self) -> Result<(), TrainError> {
        let bad = |m: String| Err(TrainError::Config(m));
        self.search
            .check()
            .map_err(|m| TrainError::Config(format!("search: {m}")))?;
        self.replay.check()?;
        self.optim
            .check()
            .map_err(|m| TrainError::Config(format!("optim: {m}")))?;
        if let Some(n) = &self.network {
            n.check()
                .map_err(|m| TrainError::Config(format!("network: {m}")))?;
        }
        // Upper bounds too: a careless `"batch_size": 1e12` must be an error, not an
        // allocation that aborts the process.
        for (field, v, max) in [
            ("batch_size", self.batch_size, 1 << 16),
            ("games_per_iteration", self.games_per_iteration, 1 << 12),
            ("eval_simulations", self.eval_simulations, 1 << 16),
        ] {
            if !(1..=max).contains(&v) {
                return bad(format!("{field}: must be in 1..={max}, got {v}"));
            }
        }
        // An iteration learns up to this ratio before it can stop: an absurd ratio would
        // make one iteration (and so Ctrl-C) last for ever.
        let ratio = self.train_steps_per_position;
        if !(ratio.is_finite() && (0.0..=1000.0).contains(&ratio)) {
            return bad(format!(
                "train_steps_per_position: must be in [0, 1000], got {ratio}"
            ));
        }
        if !(0.0..=1.0).contains(&self.explore_epsilon) {
            return bad(format!(
                "explore_epsilon: must be in [0, 1], got {}",
                self.explore_epsilon
            ));
        }
        for (field, v) in [
            ("demo_fraction", self.demo_fraction),
            ("branch_fraction", self.branch_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{field}: must be in [0, 1], got {v}"));
            }
        }
        if self.proposal_rounds > 1 << 16 || self.proposals_per_round > 1 << 16 {
            return bad("proposal_rounds, proposals_per_round: must be at most 65536".into());
        }
        let t = self.proposal_temperature;
        if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
            return bad(format!("proposal_temperature: must be in [0, 1], got {t}"));
        }
        if self.threads > 256 {
            return bad(format!("threads: must be in 0..=256, got {}", self.threads));
        }
        if self.demo_pretrain_steps > 1_000_000 {
            return bad(format!(
                "demo_pretrain_steps: must be at most 1000000, got {}",
                self.demo_pretrain_steps
            ));
        }
        if self.eval_every == 0 || self.checkpoint_every == 0 {
            return bad("eval_every, checkpoint_every: must be >= 1".into());
        }
        Ok(())
    }
}

/// When to stop: whichever comes first (none: run until the stop flag is raised).
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Minutes of this session (a resumed run gets them afresh).
    pub minutes: Option<f64>,
    /// Total training steps, counting those of a resumed run.
    pub steps: Option<u64>,
    /// A wall-clock deadline, checked inside an iteration too: an iteration it cuts short
    /// is dropped (the run ends with the iterations completed).
    pub deadline: Option<std::time::Instant>,
}

impl Limits {
    /// Refuses limits that could train nothing: a run of 0 steps or 0 minutes would leave a
    /// run folder with no checkpoint to continue from, so it is an error, not an empty run.
    pub fn check(&self) -> Result<(), TrainError> {
        if self.steps == Some(0) {
            return Err(TrainError::Config("steps: must be >= 1, got 0".into()));
        }
        if let Some(m) = self.minutes {
            if !(m.is_finite() && m > 0.0) {
                return Err(TrainError::Config(format!("minutes: must be > 0, got {m}")));
            }
        }
        Ok(())
    }
}
