//! Toy environments and models for testing the core (search, targets, training) on games
//! whose optimum is known.
//!
//! - [`ChainGame`]: one rewarded action per step, some actions illegal; optimum = steps.
//! - [`DelayedGame`]: every reward paid at the last step; tests value propagation.
//! - [`EnvironmentModel`]: a perfect model of any [`Environment`] (it replays the real game).
//! - [`RandomModel`]: cheap pseudo-random outputs, to measure the search's own overhead.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::env::{EnvError, Environment};
use crate::model::{Model, ModelError, ModelOutput};

/// The exact model lives beside the search now; toy games are its first users.
pub use crate::env_model::EnvironmentModel;

/// `steps` turns of `actions` choices. At each step one "correct" action (a seeded
/// sequence) earns 1, another legal action earns `wrong_reward` (0 unless set), and, when
/// `actions >= 3`, one seeded action other than the correct one is illegal. Observation:
/// one-hot of the step (`steps + 1` entries, the last for the end) followed by one-hot of
/// the previous action (`actions + 1` entries, the last for "none yet").
#[derive(Clone, Debug, PartialEq)]
pub struct ChainGame {
    steps: usize,
    actions: usize,
    /// Shared so that cloning a state (the exact model does it per expansion) is cheap.
    correct: Arc<[usize]>,
    illegal: Arc<[Option<usize>]>,
    wrong_reward: f32,
    step: usize,
    previous: Option<usize>,
}

impl ChainGame {
    /// A chain of `steps` turns over `actions` actions, its correct and illegal actions
    /// drawn from `seed`; refused when `steps` is 0 or `actions` below 2.
    pub fn new(steps: usize, actions: usize, seed: u64) -> Result<Self, EnvError> {
        if steps == 0 {
            return Err(EnvError("ChainGame steps = 0: must be at least 1".into()));
        }
        if actions < 2 {
            return Err(EnvError(format!(
                "ChainGame actions = {actions}: must be at least 2"
            )));
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let correct: Vec<usize> = (0..steps).map(|_| rng.random_range(0..actions)).collect();
        let illegal = correct
            .iter()
            .map(|&c| (actions >= 3).then(|| (c + rng.random_range(1..actions)) % actions))
            .collect::<Vec<_>>();
        Ok(Self {
            steps,
            actions,
            correct: correct.into(),
            illegal: illegal.into(),
            wrong_reward: 0.0,
            step: 0,
            previous: None,
        })
    }

    /// Reward of a legal but wrong action (0 by default; a small penalty makes value
    /// targets signed).
    pub fn with_wrong_reward(mut self, reward: f32) -> Self {
        self.wrong_reward = reward;
        self
    }

    /// Steps played so far.
    pub fn step(&self) -> usize {
        self.step
    }

    /// The rewarded action at `step`, if `step < steps`.
    pub fn correct_action(&self, step: usize) -> Option<usize> {
        self.correct.get(step).copied()
    }

    /// The illegal action at `step`, if any.
    pub fn illegal_action(&self, step: usize) -> Option<usize> {
        self.illegal.get(step).copied().flatten()
    }

    /// The best return from the start: one per step.
    pub fn optimal_return(&self) -> f32 {
        self.steps as f32
    }

    /// The best return from the current state.
    pub fn optimal_value_to_go(&self) -> f32 {
        (self.steps - self.step) as f32
    }
}

impl Environment for ChainGame {
    fn observation_len(&self) -> usize {
        self.steps + 1 + self.actions + 1
    }

    fn action_count(&self) -> usize {
        self.actions
    }

    fn observe(&self, out: &mut [f32]) {
        out.fill(0.0);
        out[self.step] = 1.0;
        out[self.steps + 1 + self.previous.unwrap_or(self.actions)] = 1.0;
    }

    fn legal_mask(&self, mask: &mut [bool]) {
        let terminal = self.is_terminal();
        for (a, m) in mask.iter_mut().enumerate() {
            *m = !terminal && self.illegal_action(self.step) != Some(a);
        }
    }

    fn apply(&mut self, action: usize) -> Result<f32, EnvError> {
        if self.is_terminal() {
            return Err(EnvError(format!(
                "ChainGame: action {action} after the end (step {})",
                self.step
            )));
        }
        if action >= self.actions || self.illegal_action(self.step) == Some(action) {
            return Err(EnvError(format!(
                "ChainGame: action {action} is illegal at step {} ({} actions)",
                self.step, self.actions
            )));
        }
        let reward = if self.correct[self.step] == action {
            1.0
        } else {
            self.wrong_reward
        };
        self.step += 1;
        self.previous = Some(action);
        Ok(reward)
    }

    fn is_terminal(&self) -> bool {
        self.step >= self.steps
    }
}

/// `steps` turns of `actions` choices, all legal. Choosing `a` at step `t` is worth
/// `payoff(t, a)` (seeded, multiples of 0.1 in [0, 1]), but nothing is paid until the
/// last step, whose reward is the sum over the whole game. Observation: one-hot of the
/// step (`steps + 1` entries) then the sum so far (so the state is Markov).
#[derive(Clone, Debug, PartialEq)]
pub struct DelayedGame {
    steps: usize,
    actions: usize,
    payoff: Arc<[f32]>,
    step: usize,
    accumulated: f32,
}

impl DelayedGame {
    /// A game of `steps` turns over `actions` actions, its payoffs drawn from `seed`;
    /// refused when `steps` or `actions` is 0.
    pub fn new(steps: usize, actions: usize, seed: u64) -> Result<Self, EnvError> {
        if steps == 0 {
            return Err(EnvError("DelayedGame steps = 0: must be at least 1".into()));
        }
        if actions == 0 {
            return Err(EnvError(
                "DelayedGame actions = 0: must be at least 1".into(),
            ));
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let payoff: Vec<f32> = (0..steps * actions)
            .map(|_| rng.random_range(0..=10) as f32 / 10.0)
            .collect();
        Ok(Self {
            steps,
            actions,
            payoff: payoff.into(),
            step: 0,
            accumulated: 0.0,
        })
    }

    /// The worth of action `action` at step `step` (paid at the end).
    pub fn payoff(&self, step: usize, action: usize) -> f32 {
        self.payoff[step * self.actions + action]
    }

    /// The sum so far (what the last step will pay, minus the last payoff).
    pub fn accumulated(&self) -> f32 {
        self.accumulated
    }

    /// The best return from the start: the sum of each step's best payoff.
    pub fn optimal_return(&self) -> f32 {
        self.payoff
            .chunks_exact(self.actions)
            .map(|row| row.iter().copied().fold(f32::NEG_INFINITY, f32::max))
            .sum()
    }
}

impl Environment for DelayedGame {
    fn observation_len(&self) -> usize {
        self.steps + 2
    }

    fn action_count(&self) -> usize {
        self.actions
    }

    fn observe(&self, out: &mut [f32]) {
        out.fill(0.0);
        out[self.step] = 1.0;
        out[self.steps + 1] = self.accumulated;
    }

    fn legal_mask(&self, mask: &mut [bool]) {
        mask.fill(!self.is_terminal());
    }

    fn apply(&mut self, action: usize) -> Result<f32, EnvError> {
        if self.is_terminal() {
            return Err(EnvError(format!(
                "DelayedGame: action {action} after the end (step {})",
                self.step
            )));
        }
        if action >= self.actions {
            return Err(EnvError(format!(
                "DelayedGame: action {action} out of range ({} actions)",
                self.actions
            )));
        }
        self.accumulated += self.payoff(self.step, action);
        self.step += 1;
        Ok(if self.is_terminal() {
            self.accumulated
        } else {
            0.0
        })
    }

    fn is_terminal(&self) -> bool {
        self.step >= self.steps
    }
}

/// A model with cheap pseudo-random outputs, for measuring the search's own cost and
/// testing plumbing. Deterministic: outputs depend only on the seed, the observation (or
/// the hidden state's first float) and the action. The hidden state is the observation
/// (cycled or truncated to `hidden_len`) with its first float replaced by a hash, so each
/// node differs and copying it costs what copying a real hidden state costs.
#[derive(Clone, Debug)]
pub struct RandomModel {
    observation_len: usize,
    hidden_len: usize,
    action_count: usize,
    seed: u64,
}

impl RandomModel {
    /// A model of the given sizes whose outputs are drawn from `seed` and the inputs;
    /// refused when `hidden_len` or `action_count` is 0.
    pub fn new(
        observation_len: usize,
        hidden_len: usize,
        action_count: usize,
        seed: u64,
    ) -> Result<Self, String> {
        if hidden_len == 0 || action_count == 0 {
            return Err(format!(
                "RandomModel: hidden_len = {hidden_len}, action_count = {action_count}: both must be at least 1"
            ));
        }
        Ok(Self {
            observation_len,
            hidden_len,
            action_count,
            seed,
        })
    }

    fn fill(&self, key: u64, out: &mut ModelOutput, reward: bool) {
        let unit = |k: u64| (splitmix(k) >> 40) as f32 / (1u64 << 24) as f32;
        out.value.push(2.0 * unit(key ^ 0x5151) - 1.0);
        out.reward.push(if reward {
            0.2 * unit(key ^ 0x7272) - 0.1
        } else {
            0.0
        });
        for a in 0..self.action_count {
            out.policy_logits
                .push(4.0 * unit(key.wrapping_add(a as u64 + 1)) - 2.0);
        }
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Model for RandomModel {
    fn observation_len(&self) -> usize {
        self.observation_len
    }

    fn hidden_len(&self) -> usize {
        self.hidden_len
    }

    fn action_count(&self) -> usize {
        self.action_count
    }

    fn initial_inference(
        &self,
        observations: &[f32],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        let (o, h) = (self.observation_len, self.hidden_len);
        if observations.len() != batch * o {
            return Err(format!(
                "RandomModel: {} observation values for batch {batch} x {o}",
                observations.len()
            )
            .into());
        }
        let mut out = ModelOutput::default();
        out.hidden.reserve(batch * h);
        for i in 0..batch {
            let obs = &observations[i * o..(i + 1) * o];
            let key = obs
                .iter()
                .fold(self.seed, |k, x| splitmix(k ^ x.to_bits() as u64));
            let start = out.hidden.len();
            out.hidden
                .extend((0..h).map(|j| if o == 0 { 0.0 } else { obs[j % o] }));
            out.hidden[start] = (key >> 40) as f32;
            self.fill(key, &mut out, false);
        }
        Ok(out)
    }

    fn recurrent_inference(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        let h = self.hidden_len;
        if hidden.len() != batch * h || actions.len() != batch {
            return Err(format!(
                "RandomModel: {} hidden values and {} actions for batch {batch} x {h}",
                hidden.len(),
                actions.len()
            )
            .into());
        }
        let mut out = ModelOutput {
            hidden: hidden.to_vec(),
            ..Default::default()
        };
        for (i, &a) in actions.iter().enumerate() {
            let key = splitmix(self.seed ^ ((out.hidden[i * h].to_bits() as u64) << 8) ^ a as u64);
            // 24 bits: an f32 holds it exactly, so the next call hashes the same key.
            out.hidden[i * h] = (key >> 40) as f32;
            self.fill(key, &mut out, true);
        }
        Ok(out)
    }
}
