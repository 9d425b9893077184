//! MuZero's networks in candle: representation h, dynamics g, prediction f, the training
//! loss, and safetensors checkpoints.
//!
//! Shapes (all MLPs use ReLU between layers, none after the last):
//! - h: `observation -> repr_layers... -> hidden`, then `blocks` residual blocks, then the
//!   per-sample min-max scaling of the hidden state to `[0, 1]`.
//! - g: `[hidden, one_hot(action)] -> dyn_layers...` (ReLU after each) feeding two heads:
//!   `-> hidden` (then `blocks` residual blocks and min-max scaling) and `-> reward bins`.
//!   Both heads are one layer, `dyn.out`, whose output columns are `[hidden | reward]`.
//! - f: `hidden -> pred_layers...` (ReLU after each) feeding the policy head (`action_count`
//!   logits) and the value head (value bins), again one layer `pred.heads` with columns
//!   `[policy | value]`: one matmul instead of two small ones, each with gemm's fixed cost.
//!
//! Weights are stored `[in, out]` (see `Linear`); parameter names are `repr.{i}`, `dyn.{i}`,
//! `dyn.out`, `pred.{i}`, `pred.heads` (each `.weight` and `.bias`) and
//! `{repr,dyn}_block.{j}.{ln,fc1,fc2}.{weight,bias}`.
//!
//! A residual block is pre-norm: `x + W2 relu(W1 LN(x))`, with a layer norm written from
//! differentiable primitives (candle's fused layer norm has no backward pass: gradients
//! through it silently stop).
//!
//! Value and reward heads are always categorical (see [`crate::support`]); the [`Model`]
//! implementation decodes them to scalars.
//!
//! Every parameter is a candle `Var` kept in a list sorted by name, so the optimizer, the
//! checkpoint and the gradient report walk them in one reproducible order. Inference runs
//! on detached views of the same storage, so it records no autograd graph and still sees
//! every optimizer update. On the CPU, the [`Model`] calls (what the search runs) skip
//! candle altogether: `cpu_infer` reads that storage as plain slices and runs the MLPs
//! with gemm directly (the search bench went from 66,000 to 156,000 simulations/s);
//! candle still runs the loss, and inference off the CPU.
//!
//! The files, by idea: `config` (the sizes and their bounds), `layers` (linear, layer norm,
//! residual block, min-max scaling, the seeded initialiser), `model` (the three networks
//! and their inference), `loss` (the training loss), `io` (checkpoints). This file holds
//! the error and the process-wide settings.

use binio::BinError;
use candle_core::Device;

mod config;
mod io;
mod layers;
mod loss;
mod model;

pub use config::{NetworkConfig, MAX_PARAMETERS, MAX_WIDTH};
pub use loss::{LossOutput, LossParts, LossWeights};
pub use model::MuZeroNet;

/// An error from building, running, saving or loading a network.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A network config that cannot be built (its field named).
    #[error("network config: {0}")]
    Config(String),
    /// An input of the wrong shape or with non-finite values.
    #[error("{0}")]
    Input(String),
    /// A training batch whose parts disagree in size.
    #[error("training batch: {0}")]
    Batch(String),
    /// A weights file that does not fit the network or cannot be read.
    #[error("{path}: {msg}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What does not fit.
        msg: String,
    },
    /// The weights file could not be read or written.
    #[error(transparent)]
    Bin(#[from] BinError),
    /// The tensor backend failed.
    #[error("tensor backend: {0}")]
    Candle(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, NetError>;

/// Keeps candle's CPU elementwise ops on the calling thread, unless the user chose
/// otherwise with `CANDLE_NUM_THREADS`. Call it first thing in `main`, before any thread
/// starts (it sets an environment variable, which candle reads once).
///
/// Why: candle 0.11 splits every elementwise op over 64K elements (a 256 x 256 hidden
/// batch) across a pool of spinning threads. When anything else wants the cores (self-play
/// threads, the learner, other processes) each such op stalls: measured on the 2-core
/// machine under load, a 256 x 256 add took 1.9 ms with the pool and 15 us without. The
/// matmuls keep their own threads (`RAYON_NUM_THREADS`, default all physical cores).
pub fn keep_candle_elementwise_single_threaded() {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}

/// Keeps candle's CPU matmuls on the calling thread, unless the user chose otherwise with
/// `RAYON_NUM_THREADS`. Call it first thing in `main`, before any thread starts (it sets
/// an environment variable, which candle reads at every matmul).
///
/// Why: this project's matrices are small, and candle splitting each over the cores was
/// slower than one thread, before anything else wanted the cores (the `net_speed`
/// example on the 2-core machine: 72 training steps/s split, 93 on one thread); the
/// learner splits its batch among threads instead ([`crate::train_step`]). rayon reads the
/// same variable when it builds its global pool, so that pool is built first, with one
/// thread per core, for the parallel loops that use it.
pub fn keep_candle_matmuls_single_threaded() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // An error means the pool exists already, built before the variable was set.
        let _ = rayon::ThreadPoolBuilder::new().build_global();
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
}

/// The device the networks run on: a CUDA GPU when built with the `cuda` feature and one
/// is present, else the CPU.
pub fn device() -> Device {
    #[cfg(feature = "cuda")]
    {
        if let Ok(d) = Device::cuda_if_available(0) {
            return d;
        }
    }
    Device::Cpu
}

#[cfg(test)]
mod fixtures {
    //! What the files' tests share.
    use super::*;
    use crate::support::Support;

    pub(super) fn tiny() -> NetworkConfig {
        NetworkConfig {
            observation_len: 6,
            action_count: 3,
            hidden: 8,
            repr_layers: vec![10],
            blocks: 1,
            dyn_layers: vec![9],
            pred_layers: vec![7],
            value_support: Support::symmetric(5, 10.0),
            reward_support: Support::symmetric(3, 10.0),
        }
    }
}
