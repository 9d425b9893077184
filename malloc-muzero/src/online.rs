//! Learning from what the search finds (issue 43, item 2): a guided chain's network
//! trained during the race on the outcomes of the chain's own moves.
//!
//! Each move plays an action at its first re-decided turn and is judged by the latency it
//! gives the line. The learner keeps the recent moves (the observation at the first turn,
//! the action, the relative change of latency) and every [`OnlineConfig::learn_every`]
//! moves takes one policy-gradient step on the last [`OnlineConfig::batch`] of them: the
//! log-probability of each action is raised in proportion to how much faster it made the
//! line, and lowered in proportion to how much slower, the changes scaled by their mean
//! size in the batch and clipped. Moves that change nothing teach nothing. Only the
//! policy learns: the guide reads nothing else.
//!
//! Each chain learns alone, on its own copy of the network (a [`MuZeroNet::snapshot`]):
//! chains share no weights, so a run repeats exactly per seed and thread count, and no
//! chain waits for another's learning.

use crate::outcomes::{check_learning, fine_tuning, policy_batch, Outcome, POLICY_ONLY};
use crate::train::TrainError;
use muzero::{MuZeroNet, Optimizer};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How a guided chain learns from its moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnlineConfig {
    /// Moves between two learning steps (> 0): with [`OnlineConfig::batch`], the share
    /// of the chain's time its learning takes.
    pub learn_every: usize,
    /// The recent moves each step learns from (> 0).
    pub batch: usize,
    /// AdamW's step size (> 0).
    pub learning_rate: f64,
    /// The largest weight of one move, in mean changes of the batch (> 0).
    pub clip: f32,
}

impl Default for OnlineConfig {
    /// Chosen on the validation families at 2 and 4 MiB (`guide_ablation --
    /// validation-small 3000 2`, docs/results.md): learning rates 3e-4 and 1e-3 at a
    /// batch of 128 gave 1.0001x and 1.0014x the uniform guide (the bundled guide without
    /// learning: 1.0011x); a batch of 256 at 3e-3 gave 1.0005x at 1.40x the uniform
    /// guide's CPU per move, against about 1.05x at 128.
    fn default() -> Self {
        OnlineConfig {
            learn_every: 32,
            batch: 128,
            learning_rate: 1e-3,
            clip: 3.0,
        }
    }
}

impl OnlineConfig {
    /// Rejects impossible values, naming the field.
    pub fn check(&self) -> Result<(), String> {
        check_learning(
            &[("learn_every", self.learn_every), ("batch", self.batch)],
            self.learning_rate,
            self.clip,
        )
    }
}

/// One chain's learner: its recent moves and its optimizer over the chain's network.
pub(crate) struct OnlineLearner {
    config: OnlineConfig,
    opt: Optimizer,
    /// The recent judged moves (any change, not only the ones that made a line faster).
    moves: VecDeque<Outcome>,
    /// The move played and not yet judged.
    pending: Option<(Box<[f32]>, usize)>,
    since_step: usize,
    steps: u64,
}

impl OnlineLearner {
    /// A learner updating `net` in place.
    pub(crate) fn new(net: &MuZeroNet, config: OnlineConfig) -> Result<Self, TrainError> {
        let opt = Optimizer::new(net.vars(), fine_tuning(config.learning_rate))?;
        Ok(OnlineLearner {
            moves: VecDeque::with_capacity(config.batch),
            config,
            opt,
            pending: None,
            since_step: 0,
            steps: 0,
        })
    }

    /// A move played `action` at its first turn, whose observation is `obs`.
    pub(crate) fn played(&mut self, obs: &[f32], action: usize) {
        self.pending = Some((obs.into(), action));
    }

    /// The move played last changed the line's latency by `change`. Returns whether the
    /// network learned (its policies changed).
    pub(crate) fn judged(&mut self, net: &MuZeroNet, change: f64) -> bool {
        let Some((obs, action)) = self.pending.take() else {
            return false;
        };
        if self.moves.len() == self.config.batch {
            self.moves.pop_front();
        }
        self.moves.push_back(Outcome {
            observation: obs,
            action,
            change: change as f32,
        });
        self.since_step += 1;
        if self.since_step < self.config.learn_every {
            return false;
        }
        self.since_step = 0;
        // A failed step leaves the network as it was: the guide goes on with it.
        self.step(net).unwrap_or(false)
    }

    /// Learning steps taken.
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// One policy-gradient step on the recent moves; `false` if none changed latency.
    fn step(&mut self, net: &MuZeroNet) -> Result<bool, TrainError> {
        let n = self.moves.len();
        let scale = self.moves.iter().map(|m| m.change.abs()).sum::<f32>() / n.max(1) as f32;
        if !(scale.is_finite() && scale > 0.0) {
            return Ok(false);
        }
        let clip = self.config.clip;
        // Faster (a negative change) raises the action's log-probability.
        let weight = |o: &Outcome| (-o.change / scale).clamp(-clip, clip);
        let batch = policy_batch(self.moves.iter(), net.config().action_count, &weight);
        let loss = net.loss(&batch, &POLICY_ONLY)?;
        self.opt.step(&loss.loss)?;
        self.steps += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muzero::{device, Model, NetworkConfig};

    #[test]
    fn a_move_that_made_the_line_faster_gains_probability_and_a_slower_one_loses_it() {
        let config = NetworkConfig::small(6, 4);
        let net = MuZeroNet::new(&config, 3, &device()).unwrap();
        let obs = [0.5f32, -0.25, 1.0, 0.0, 0.75, -1.0];
        let policy = |net: &MuZeroNet| {
            let logits = net.initial_inference(&obs, 1).unwrap().policy_logits;
            let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = logits.iter().map(|l| (l - top).exp()).collect();
            let total: f32 = e.iter().sum();
            e.into_iter().map(|x| x / total).collect::<Vec<f32>>()
        };
        let before = policy(&net);
        let online = OnlineConfig {
            learn_every: 2,
            batch: 2,
            learning_rate: 1e-2,
            clip: 3.0,
        };
        let mut learner = OnlineLearner::new(&net, online).unwrap();
        for _ in 0..20 {
            learner.played(&obs, 1);
            learner.judged(&net, -0.01);
            learner.played(&obs, 2);
            learner.judged(&net, 0.01);
        }
        let after = policy(&net);
        assert_eq!(learner.steps(), 20);
        assert!(after[1] > before[1] + 0.05, "{before:?} -> {after:?}");
        assert!(after[2] < before[2], "{before:?} -> {after:?}");
    }

    #[test]
    fn moves_that_change_nothing_teach_nothing() {
        let config = NetworkConfig::small(6, 4);
        let net = MuZeroNet::new(&config, 3, &device()).unwrap();
        let mut learner = OnlineLearner::new(&net, OnlineConfig::default()).unwrap();
        let obs = [0.0f32; 6];
        for _ in 0..100 {
            learner.played(&obs, 0);
            assert!(!learner.judged(&net, 0.0));
        }
        assert_eq!(learner.steps(), 0);
    }

    #[test]
    fn impossible_settings_are_named() {
        let bad = OnlineConfig {
            learning_rate: f64::NAN,
            ..OnlineConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("learning_rate"));
        let bad = OnlineConfig {
            learn_every: 0,
            ..OnlineConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("learn_every"));
    }
}
