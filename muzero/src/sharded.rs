//! One training step with its batch split among threads (data parallelism on the CPU).
//!
//! Why: the learner's matrices are small (a batch of 128 by a few hundred features), and
//! candle splitting each matmul over the cores was slower than one thread (measured on the
//! 2-core machine: 72 against 93 steps/s, `net_speed`). Splitting the batch instead gives
//! each thread whole matmuls: every shard's loss is back-propagated on its own thread and
//! the gradients are summed, which is the whole batch's gradient, since the loss is a
//! mean of per-sample terms (no statistic couples the samples).

use crate::batch::TrainingBatch;
use crate::network::{LossParts, LossWeights, MuZeroNet, NetError};
use crate::optim::{Gradients, OptimError, Optimizer, StepStats};

/// Why a training step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The network failed on a shard.
    #[error(transparent)]
    Net(#[from] NetError),
    /// The optimizer refused the step (a non-finite gradient, ...).
    #[error(transparent)]
    Optim(#[from] OptimError),
    /// A thread of the step panicked: the step was not applied.
    #[error("a learner thread panicked")]
    Panicked,
}

/// What one training step reports.
#[derive(Clone, Debug)]
pub struct StepReport {
    /// The whole batch's loss terms.
    pub parts: LossParts,
    /// Per sample, in the batch's order: the new replay priorities
    /// ([`crate::LossOutput::value_errors`]).
    pub value_errors: Vec<f32>,
    /// What the optimizer did: the step, the learning rate, the gradient norm.
    pub stats: StepStats,
}

/// One AdamW step of `net` on `batch`, the batch split into `shards` contiguous parts
/// (at most one per sample) back-propagated on as many threads. The gradients are summed
/// in shard order, so a step is deterministic for a given number of shards; one shard is
/// exactly [`MuZeroNet::loss`] then [`Optimizer::step`].
pub fn train_step(
    net: &MuZeroNet,
    opt: &mut Optimizer,
    batch: &TrainingBatch,
    weights: &LossWeights,
    shards: usize,
) -> Result<StepReport, StepError> {
    if shards <= 1 || batch.batch < 2 {
        let out = net.loss(batch, weights)?;
        let stats = opt.step(&out.loss)?;
        return Ok(StepReport {
            parts: out.parts,
            value_errors: out.value_errors,
            stats,
        });
    }
    let parts_of = batch.split(shards);
    let total = batch.batch as f32;
    let shared: &Optimizer = opt;
    // Each shard's loss is its mean: scaled by its share of the batch, the shards' losses
    // sum to the whole batch's.
    let shard = |b: &TrainingBatch| -> Result<(LossParts, Vec<f32>, Gradients), StepError> {
        let out = net.loss(b, weights)?;
        let share = b.batch as f32 / total;
        let scaled = (&out.loss * share as f64).map_err(NetError::from)?;
        let grads = shared.gradients(&scaled)?;
        let p = out.parts;
        let parts = LossParts {
            value: p.value * share,
            reward: p.reward * share,
            policy: p.policy * share,
            total: p.total * share,
        };
        Ok((parts, out.value_errors, grads))
    };
    let results: Vec<Result<_, StepError>> = std::thread::scope(|s| {
        let (first, rest) = parts_of.split_first().expect("two shards or more");
        let handles: Vec<_> = rest.iter().map(|b| s.spawn(move || shard(b))).collect();
        let mut results = vec![shard(first)];
        results.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(Err(StepError::Panicked))),
        );
        results
    });
    let mut parts = LossParts::default();
    let mut value_errors = Vec::with_capacity(batch.batch);
    let mut sum: Option<Gradients> = None;
    for r in results {
        let (p, errors, grads) = r?;
        parts.value += p.value;
        parts.reward += p.reward;
        parts.policy += p.policy;
        parts.total += p.total;
        value_errors.extend(errors);
        sum = Some(match sum {
            None => grads,
            Some(s) => s.plus(grads)?,
        });
    }
    let stats = opt.apply(sum.expect("two shards or more"), shards)?;
    Ok(StepReport {
        parts,
        value_errors,
        stats,
    })
}
