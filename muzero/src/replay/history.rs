//! One played game as the learner needs it ([`GameHistory`]), its checks and its n-step
//! value targets.

use super::ReplayError;
use serde::{Deserialize, Serialize};

/// One played game as the learner needs it. Position `t` is the state before action `t`;
/// the terminal observation is not stored (no target needs it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameHistory {
    /// Length of each observation.
    pub observation_len: usize,
    /// Number of actions: the length of each policy.
    pub action_count: usize,
    /// `[len, observation_len]`.
    pub observations: Vec<f32>,
    /// `[len]`.
    pub actions: Vec<usize>,
    /// `[len]`: the reward of action `t`.
    pub rewards: Vec<f32>,
    /// `[len]`: the search (root) value at position `t`.
    pub root_values: Vec<f32>,
    /// `[len, action_count]`: the search policy at position `t`.
    pub policies: Vec<f32>,
}

const GAME: &str = "game history";
pub(super) const REANALYSE: &str = "reanalyse";
pub(super) const PRIORITIES: &str = "update_priorities";

impl GameHistory {
    /// An empty game of observations of `observation_len` and policies of `action_count`.
    pub fn new(observation_len: usize, action_count: usize) -> Self {
        GameHistory {
            observation_len,
            action_count,
            observations: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            root_values: Vec::new(),
            policies: Vec::new(),
        }
    }

    /// Number of positions (actions played).
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether no position has been recorded.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Records one turn: the observation before `action`, the action, its reward, and the
    /// search's root value and policy. Checks shapes so a bad turn is refused whole.
    pub fn push_step(
        &mut self,
        observation: &[f32],
        action: usize,
        reward: f32,
        root_value: f32,
        policy: &[f32],
    ) -> Result<(), ReplayError> {
        check_len(GAME, "observation", observation.len(), self.observation_len)?;
        check_len(GAME, "policy", policy.len(), self.action_count)?;
        if action >= self.action_count {
            return Err(bad_action(self.len(), action, self.action_count));
        }
        self.observations.extend_from_slice(observation);
        self.actions.push(action);
        self.rewards.push(reward);
        self.root_values.push(root_value);
        self.policies.extend_from_slice(policy);
        Ok(())
    }

    /// The observation at position `t` (panics past the end, like slice indexing).
    pub fn observation(&self, t: usize) -> &[f32] {
        &self.observations[t * self.observation_len..(t + 1) * self.observation_len]
    }

    /// The search policy at position `t` (panics past the end, like slice indexing).
    pub fn policy(&self, t: usize) -> &[f32] {
        &self.policies[t * self.action_count..(t + 1) * self.action_count]
    }

    /// Checks that the arrays agree in length and hold finite values, actions in range and
    /// non-negative policies.
    pub fn check(&self) -> Result<(), ReplayError> {
        let len = self.len();
        check_len(GAME, "rewards", self.rewards.len(), len)?;
        check_len(GAME, "root_values", self.root_values.len(), len)?;
        check_len(
            GAME,
            "observations",
            self.observations.len(),
            len * self.observation_len,
        )?;
        check_len(
            GAME,
            "policies",
            self.policies.len(),
            len * self.action_count,
        )?;
        if let Some(i) = self.actions.iter().position(|&a| a >= self.action_count) {
            return Err(bad_action(i, self.actions[i], self.action_count));
        }
        check_finite(GAME, "observations", &self.observations)?;
        check_finite(GAME, "rewards", &self.rewards)?;
        check_finite(GAME, "root_values", &self.root_values)?;
        check_policies(GAME, &self.policies)
    }

    /// The n-step value target of position `t` (0 at and past the end).
    pub fn value_target(&self, t: usize, td_steps: usize, discount: f32) -> f32 {
        let len = self.len();
        if t >= len {
            return 0.0;
        }
        let d = discount as f64;
        // Saturating: a huge n (Monte Carlo returns) must not wrap around.
        let bootstrap = t.saturating_add(td_steps);
        let mut sum = 0.0f64;
        let mut scale = 1.0f64;
        for &r in &self.rewards[t..bootstrap.min(len)] {
            sum += scale * r as f64;
            scale *= d;
        }
        // `scale` is d^n here exactly when the loop ran n times, i.e. when t + n <= len.
        if bootstrap < len {
            sum += scale * self.root_values[bootstrap] as f64;
        }
        sum as f32
    }

    /// [`Self::value_target`] for every position.
    pub fn value_targets(&self, td_steps: usize, discount: f32) -> Vec<f32> {
        let len = self.len();
        if td_steps >= len {
            // Monte Carlo returns: no position bootstraps, so one backward pass suffices
            // (this is the common case for a finite game with long n).
            let d = discount as f64;
            let mut out = vec![0.0f32; len];
            let mut g = 0.0f64;
            for t in (0..len).rev() {
                g = self.rewards[t] as f64 + d * g;
                out[t] = g as f32;
            }
            return out;
        }
        (0..len)
            .map(|t| self.value_target(t, td_steps, discount))
            .collect()
    }
}

pub(super) fn check_len(
    context: &'static str,
    field: &'static str,
    found: usize,
    expected: usize,
) -> Result<(), ReplayError> {
    if found == expected {
        Ok(())
    } else {
        Err(ReplayError::Shape {
            context,
            field,
            found,
            expected,
        })
    }
}

pub(super) fn check_finite(
    context: &'static str,
    field: &'static str,
    values: &[f32],
) -> Result<(), ReplayError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(ReplayError::Value {
            context,
            field,
            index,
            value: values[index].to_string(),
            reason: "must be finite",
        }),
    }
}

pub(super) fn check_policies(context: &'static str, policies: &[f32]) -> Result<(), ReplayError> {
    match policies.iter().position(|p| !(p.is_finite() && *p >= 0.0)) {
        None => Ok(()),
        Some(index) => Err(ReplayError::Value {
            context,
            field: "policies",
            index,
            value: policies[index].to_string(),
            reason: "must be finite and >= 0",
        }),
    }
}

fn bad_action(index: usize, action: usize, action_count: usize) -> ReplayError {
    ReplayError::Value {
        context: GAME,
        field: "actions",
        index,
        value: action.to_string(),
        reason: if action_count == 0 {
            "no action exists (action_count = 0)"
        } else {
            "must be < action_count"
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monte_carlo_pass_matches_direct_sum() {
        let mut g = GameHistory::new(1, 2);
        for t in 0..7 {
            g.push_step(&[0.0], 0, t as f32 * 0.5 - 1.0, 3.0 + t as f32, &[1.0, 0.0])
                .unwrap();
        }
        for n in [7, 8, 100] {
            let fast = g.value_targets(n, 0.9);
            for (t, z) in fast.iter().enumerate() {
                assert!((z - g.value_target(t, n, 0.9)).abs() < 1e-5);
            }
        }
    }
}
