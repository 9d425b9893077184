//! Learning from what the search finds, offline (issue 43, item 2): a guide's network
//! trained on the outcomes of the local search's own moves.
//!
//! The bundled generalist's policy was trained to imitate the best line's action at each
//! turn, and the guide masks exactly that action: how it ranks the other actions was never
//! trained. Here the local search runs as it always does (uniform draws) on the training
//! cases, and every move that made its line faster is kept: the observation at the move's
//! first turn and the action played there. Because the draws were uniform, the actions
//! kept at a state are distributed as the chance that each makes the line faster; a policy
//! fitted to them (each weighted by how much faster, or all alike) samples what improves
//! more often. The network starts from the prior and only its policy learns.

use crate::train::TrainError;
use crate::view::GuideView;
use malloc_game::anytime::{Incumbent, Limit, Line, LocalSearch, MoveGuide, Span, UniformGuide};
use malloc_game::{Game, GameSetup};
use muzero::{LossWeights, MuZeroNet, OptimConfig, Optimizer, TrainingBatch};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A move of the local search that made its line faster.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The observation at the move's first re-decided turn, as the guide's network reads it.
    pub observation: Box<[f32]>,
    /// The action the move played there.
    pub action: usize,
    /// The relative change of the line's latency (< 0: faster).
    pub change: f32,
}

/// Runs the local search (its own uniform draws, counted: `moves` per chain on `threads`
/// chains, from `seed`) on `setup`, its best games into `incumbent`, and returns the moves
/// that made a line faster, their observations read through `view`. The search is the
/// `local-search` solver's, move for move: recording draws nothing.
pub fn collect_outcomes(
    setup: &Arc<GameSetup>,
    view: GuideView,
    seed: u64,
    moves: usize,
    threads: usize,
    incumbent: &Incumbent,
) -> Vec<Outcome> {
    let mut search = LocalSearch::default();
    search.config.moves = Some(moves);
    let limit = Limit {
        deadline: Instant::now() + Duration::from_secs(24 * 3600),
        threads: threads.max(1),
        stop: None,
    };
    let found = Mutex::new(vec![Vec::new(); threads.max(1)]);
    let guides = |k: usize| -> Box<dyn MoveGuide + '_> {
        Box::new(Recorder {
            view,
            chain: k,
            pending: None,
            obs: Vec::new(),
            full: Vec::new(),
            kept: Vec::new(),
            found: &found,
        })
    };
    search.run_guided(setup, &[], seed, &limit, incumbent, &guides);
    // By chain, so the order does not depend on which chain finished first.
    found
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// The uniform guide, keeping the moves that made the line faster.
struct Recorder<'f> {
    view: GuideView,
    chain: usize,
    /// The observation and action of the move under way.
    pending: Option<(Box<[f32]>, usize)>,
    obs: Vec<f32>,
    full: Vec<f32>,
    kept: Vec<Outcome>,
    found: &'f Mutex<Vec<Vec<Outcome>>>,
}

impl MoveGuide for Recorder<'_> {
    fn span(&mut self, line: &Line, mean_changed: f64, rng: &mut StdRng) -> Span {
        UniformGuide.span(line, mean_changed, rng)
    }

    fn action(&mut self, line: &Line, game: &Game, i: usize, rng: &mut StdRng) -> usize {
        let a = UniformGuide.action(line, game, i, rng);
        if i == 0 {
            if self.obs.is_empty() {
                self.obs = vec![0.0; self.view.observation_len(game.setup().options())];
            }
            self.view.encode(game, &mut self.full, &mut self.obs);
            self.pending = Some((self.obs.as_slice().into(), a));
        }
        a
    }

    fn judged(&mut self, change: f64, _accepted: bool) {
        if let Some((observation, action)) = self.pending.take() {
            if change < 0.0 && change.is_finite() {
                self.kept.push(Outcome {
                    observation,
                    action,
                    change: change as f32,
                });
            }
        }
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found[self.chain] = std::mem::take(&mut self.kept);
    }
}

/// How each outcome weighs in the policy's fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeWeight {
    /// Every move that made the line faster alike: the policy learns the chance of an
    /// improvement.
    Each,
    /// In proportion to how much faster (the mean 1, clipped at [`OutcomeTraining::clip`]).
    Gain,
}

/// How a network learns from [`Outcome`]s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutcomeTraining {
    /// Passes over the outcomes (> 0).
    pub epochs: usize,
    /// Outcomes per step (> 0).
    pub batch: usize,
    /// AdamW's step size (> 0).
    pub learning_rate: f64,
    /// How each outcome weighs.
    pub weight: OutcomeWeight,
    /// The largest weight of one outcome under [`OutcomeWeight::Gain`] (> 0).
    pub clip: f32,
}

impl Default for OutcomeTraining {
    fn default() -> Self {
        OutcomeTraining {
            epochs: 2,
            batch: 256,
            learning_rate: 3e-4,
            weight: OutcomeWeight::Each,
            clip: 5.0,
        }
    }
}

impl OutcomeTraining {
    /// Rejects impossible values, naming the field.
    pub fn check(&self) -> Result<(), String> {
        check_learning(
            &[("epochs", self.epochs), ("batch", self.batch)],
            self.learning_rate,
            self.clip,
        )
    }
}

/// Fits `net`'s policy (in place) to `outcomes` as `config` says, the batches drawn from
/// `seed`. Returns the mean policy loss of each epoch.
pub fn train_on_outcomes(
    net: &MuZeroNet,
    outcomes: &[Outcome],
    config: &OutcomeTraining,
    seed: u64,
) -> Result<Vec<f64>, TrainError> {
    config.check().map_err(TrainError::Config)?;
    let c = net.config();
    if let Some(o) = outcomes
        .iter()
        .find(|o| o.observation.len() != c.observation_len || o.action >= c.action_count)
    {
        return Err(TrainError::Config(format!(
            "an outcome has an observation of {} and action {}; the network takes {} and {} actions",
            o.observation.len(),
            o.action,
            c.observation_len,
            c.action_count
        )));
    }
    let mut opt = Optimizer::new(net.vars(), fine_tuning(config.learning_rate))?;
    let mean_gain =
        outcomes.iter().map(|o| -o.change as f64).sum::<f64>() / outcomes.len().max(1) as f64;
    let weight = |o: &Outcome| match config.weight {
        OutcomeWeight::Each => 1.0,
        OutcomeWeight::Gain if mean_gain > 0.0 => {
            ((-o.change as f64 / mean_gain) as f32).min(config.clip)
        }
        OutcomeWeight::Gain => 1.0,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..outcomes.len()).collect();
    let mut losses = Vec::with_capacity(config.epochs);
    for _ in 0..config.epochs {
        order.shuffle(&mut rng);
        let (mut sum, mut steps) = (0.0, 0usize);
        for chunk in order.chunks(config.batch) {
            let batch = policy_batch(chunk.iter().map(|&i| &outcomes[i]), c.action_count, &weight);
            let loss = net.loss(&batch, &POLICY_ONLY)?;
            opt.step(&loss.loss)?;
            sum += loss.parts.policy as f64;
            steps += 1;
        }
        losses.push(sum / steps.max(1) as f64);
    }
    Ok(losses)
}

/// The checks a guide's learning settings share: each of `counts` (its name, its value)
/// above 0, the learning rate as the optimizer of [`fine_tuning`] takes it, and `clip`
/// finite and above 0; the first that fails is named.
pub(crate) fn check_learning(
    counts: &[(&str, usize)],
    learning_rate: f64,
    clip: f32,
) -> Result<(), String> {
    if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
        return Err(format!("{name} is 0, must be > 0"));
    }
    fine_tuning(learning_rate).check()?;
    if !(clip.is_finite() && clip > 0.0) {
        return Err(format!("clip is {clip}, must be finite and > 0"));
    }
    Ok(())
}

/// The optimizer of a guide's learning: AdamW at a constant rate, no warm-up, and no
/// weight decay (the prior's weights are what it starts from, not something to shrink).
pub(crate) fn fine_tuning(learning_rate: f64) -> OptimConfig {
    OptimConfig {
        learning_rate,
        warmup_steps: 0,
        decay: muzero::Decay::Constant,
        weight_decay: 0.0,
        ..OptimConfig::default()
    }
}

/// The loss of a guide's learning: the policy's alone (a guide reads nothing else).
pub(crate) const POLICY_ONLY: LossWeights = LossWeights {
    value: 0.0,
    reward: 0.0,
    policy: 1.0,
};

/// A batch whose only target is each outcome's action as the policy, weighted (a
/// negative weight lowers the action's log-probability: the online learner's).
pub(crate) fn policy_batch<'o>(
    outcomes: impl ExactSizeIterator<Item = &'o Outcome>,
    action_count: usize,
    weight: &impl Fn(&Outcome) -> f32,
) -> TrainingBatch {
    let n = outcomes.len();
    let mut batch = TrainingBatch {
        batch: n,
        unroll: 0,
        action_count,
        target_values: vec![0.0; n],
        target_rewards: vec![0.0; n],
        target_policies: vec![0.0; n * action_count],
        mask: vec![0.0; n],
        policy_mask: vec![1.0; n],
        ..TrainingBatch::default()
    };
    for (i, o) in outcomes.enumerate() {
        batch.observations.extend_from_slice(&o.observation);
        batch.target_policies[i * action_count + o.action] = 1.0;
        batch.weights.push(weight(o));
        batch.indices.push((0, i));
    }
    batch
}
