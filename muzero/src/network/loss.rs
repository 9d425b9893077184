//! MuZero's training loss: the network unrolled over a [`TrainingBatch`], cross-entropies
//! against the two-hot value and reward targets and the search policies.

use super::layers::{min_max_scale, scale_gradient, Pass};
use super::{MuZeroNet, NetError, Result};
use crate::batch::TrainingBatch;
use candle_core::{DType, Tensor, D};
use serde::{Deserialize, Serialize};

/// The weights of the loss terms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossWeights {
    /// Weight of the value term (cross-entropy against the n-step value target).
    pub value: f32,
    /// Weight of the reward term (cross-entropy against the observed rewards).
    pub reward: f32,
    /// Weight of the policy term (cross-entropy against the search policy).
    pub policy: f32,
}

impl Default for LossWeights {
    /// MuZero Reanalyse's 0.25 on the value term: value targets from replayed games are
    /// noisier than the search policies and rewards, and overfit first.
    fn default() -> Self {
        LossWeights {
            value: 0.25,
            reward: 1.0,
            policy: 1.0,
        }
    }
}

/// The loss terms as numbers (each already scaled per step and by importance weights,
/// averaged over the batch; `total` includes the [`LossWeights`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossParts {
    /// The value term.
    pub value: f32,
    /// The reward term.
    pub reward: f32,
    /// The policy term.
    pub policy: f32,
    /// The weighted sum of the three.
    pub total: f32,
}

/// What [`MuZeroNet::loss`] returns.
pub struct LossOutput {
    /// The scalar to differentiate.
    pub loss: Tensor,
    /// The loss terms as numbers, for the metrics.
    pub parts: LossParts,
    /// Per sample, `|value prediction at k = 0 - target value at k = 0|`: the new replay
    /// priorities.
    pub value_errors: Vec<f32>,
}

impl MuZeroNet {
    fn check_batch(&self, b: &TrainingBatch) -> Result<()> {
        let c = &self.config;
        if b.batch == 0 {
            return Err(NetError::Batch("batch is 0".into()));
        }
        if b.action_count != c.action_count {
            return Err(NetError::Batch(format!(
                "action_count is {}, the network has {}",
                b.action_count, c.action_count
            )));
        }
        let (n, k, a) = (b.batch, b.unroll, b.action_count);
        let sizes = [
            ("observations", b.observations.len(), n * c.observation_len),
            ("actions", b.actions.len(), n * k),
            ("target_values", b.target_values.len(), n * (k + 1)),
            ("target_rewards", b.target_rewards.len(), n * (k + 1)),
            ("target_policies", b.target_policies.len(), n * (k + 1) * a),
            ("mask", b.mask.len(), n * (k + 1)),
            ("policy_mask", b.policy_mask.len(), n * (k + 1)),
            ("weights", b.weights.len(), n),
        ];
        for (field, got, want) in sizes {
            if got != want {
                return Err(NetError::Batch(format!(
                    "`{field}` has {got} entries, expected {want} (batch {n}, unroll {k}, \
                     {a} actions, observation_len {})",
                    c.observation_len
                )));
            }
        }
        for (field, xs) in [
            ("observations", &b.observations),
            ("target_values", &b.target_values),
            ("target_rewards", &b.target_rewards),
            ("target_policies", &b.target_policies),
            ("mask", &b.mask),
            ("policy_mask", &b.policy_mask),
            ("weights", &b.weights),
        ] {
            if let Some(i) = xs.iter().position(|x| !x.is_finite()) {
                return Err(NetError::Batch(format!(
                    "`{field}`[{i}] is {}, not a finite number",
                    xs[i]
                )));
            }
        }
        Ok(())
    }

    /// MuZero's training loss on `batch`: initial inference on the observations, then
    /// `unroll` recurrent steps with the batch's actions. Each term is a cross-entropy:
    /// value and reward against the two-hot targets (masked by `mask`), policy against the
    /// search policy (masked by `policy_mask`). Step 0 counts fully and each unrolled step
    /// `1/K`; the gradient into each next dynamics step is halved; each sample is weighted
    /// by its importance weight and the batch is averaged.
    pub fn loss(&self, batch: &TrainingBatch, weights: &LossWeights) -> Result<LossOutput> {
        self.check_batch(batch)?;
        let c = &self.config;
        let (n, k, a) = (batch.batch, batch.unroll, batch.action_count);
        let dev = &self.device;
        let (hiddens, rewards) = self.unroll(batch)?;
        // One prediction call over every step: bigger matmuls, fewer graph nodes. Rows
        // are step-major: row `s * n + i` is sample `i` at step `s`.
        let all_hidden = Tensor::cat(&hiddens, 0)?;
        let heads = self.predict(&all_hidden, Pass::Train)?;
        let policy_logits = heads.narrow(1, 0, a)?;
        let value_logits = heads.narrow(1, a, c.value_support.bins)?;

        let at = |i: usize, s: usize| i * (k + 1) + s;
        let rows = (k + 1) * n;
        let Targets {
            value_targets,
            value_coef,
            policy_targets,
            policy_coef,
            reward_targets,
            reward_coef,
        } = Targets::of(batch);
        let weighted_ce = |logits: &Tensor, targets: Tensor, coef: Vec<f32>| -> Result<Tensor> {
            let rows = coef.len();
            let logp = candle_nn::ops::log_softmax(logits, D::Minus1)?;
            let ce = (targets * logp)?.sum(D::Minus1)?.neg()?;
            Ok((ce * Tensor::from_vec(coef, rows, dev)?)?.sum_all()?)
        };
        let value_loss = weighted_ce(
            &value_logits,
            c.value_support.encode_tensor(&value_targets, dev)?,
            value_coef,
        )?;
        let policy_loss = weighted_ce(
            &policy_logits,
            Tensor::from_vec(policy_targets, (rows, a), dev)?,
            policy_coef,
        )?;
        let reward_loss = if k > 0 {
            weighted_ce(
                &Tensor::cat(&rewards, 0)?,
                c.reward_support.encode_tensor(&reward_targets, dev)?,
                reward_coef,
            )?
        } else {
            Tensor::zeros((), DType::F32, dev)?
        };
        let total = ((&value_loss * weights.value as f64)?
            + (&reward_loss * weights.reward as f64)?
            + (&policy_loss * weights.policy as f64)?)?;

        let vs = &c.value_support;
        let v0 = value_logits
            .narrow(0, 0, n)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let value_errors = v0
            .chunks_exact(vs.bins)
            .enumerate()
            .map(|(i, row)| (vs.decode_logits(row) - batch.target_values[at(i, 0)]).abs())
            .collect();
        let parts = LossParts {
            value: value_loss.to_scalar::<f32>()?,
            reward: reward_loss.to_scalar::<f32>()?,
            policy: policy_loss.to_scalar::<f32>()?,
            total: total.to_scalar::<f32>()?,
        };
        Ok(LossOutput {
            loss: total,
            parts,
            value_errors,
        })
    }

    /// The hidden states of every step (the observations' at step 0, then the dynamics'
    /// over the batch's actions, each min-max scaled) and the predicted rewards' logits.
    /// The gradient into each next dynamics step is halved.
    fn unroll(&self, batch: &TrainingBatch) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let (n, k) = (batch.batch, batch.unroll);
        let obs = Tensor::from_slice(
            &batch.observations,
            (n, self.config.observation_len),
            &self.device,
        )?;
        let h0 = min_max_scale(&self.represent_raw(&obs, Pass::Train)?)?;
        let mut hiddens = Vec::with_capacity(k + 1);
        let mut rewards = Vec::with_capacity(k);
        hiddens.push(h0.clone());
        let mut h = h0;
        for step in 0..k {
            let acts = self.actions_tensor((0..n).map(|i| batch.actions[i * k + step]))?;
            let (next, reward) = self.dynamics_raw(&h, &acts, Pass::Train)?;
            let next = min_max_scale(&next)?;
            rewards.push(reward);
            h = scale_gradient(&next, 0.5)?;
            hiddens.push(next);
        }
        Ok((hiddens, rewards))
    }
}

/// The loss's targets and each row's coefficient (its importance weight, `1/K` past step
/// 0, its mask, over the batch size), step-major: row `s * n + i` is sample `i` at step `s`.
struct Targets {
    value_targets: Vec<f32>,
    value_coef: Vec<f32>,
    policy_targets: Vec<f32>,
    policy_coef: Vec<f32>,
    reward_targets: Vec<f32>,
    reward_coef: Vec<f32>,
}

impl Targets {
    fn of(batch: &TrainingBatch) -> Targets {
        let (n, k, a) = (batch.batch, batch.unroll, batch.action_count);
        let step_scale = |s: usize| if s == 0 { 1.0 } else { 1.0 / k as f32 };
        let rows = (k + 1) * n;
        let mut t = Targets {
            value_targets: Vec::with_capacity(rows),
            value_coef: Vec::with_capacity(rows),
            policy_targets: Vec::with_capacity(rows * a),
            policy_coef: Vec::with_capacity(rows),
            reward_targets: Vec::with_capacity(k * n),
            reward_coef: Vec::with_capacity(k * n),
        };
        for s in 0..=k {
            for i in 0..n {
                let w = batch.weights[i] * step_scale(s) / n as f32;
                let j = i * (k + 1) + s;
                t.value_targets.push(batch.target_values[j]);
                t.value_coef.push(w * batch.mask[j]);
                t.policy_targets
                    .extend_from_slice(&batch.target_policies[j * a..(j + 1) * a]);
                t.policy_coef.push(w * batch.policy_mask[j]);
                if s > 0 {
                    t.reward_targets.push(batch.target_rewards[j]);
                    t.reward_coef.push(w * batch.mask[j]);
                }
            }
        }
        t
    }
}
