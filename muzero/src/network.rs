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

use crate::batch::TrainingBatch;
use crate::cpu_infer;
use crate::model::{Model, ModelError, ModelOutput};
use crate::support::Support;
use binio::BinError;
use candle_core::{DType, Device, Layout, Storage, StorageRef, Tensor, Var, D};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// An error from building, running, saving or loading a network.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("network config: {0}")]
    Config(String),
    #[error("{0}")]
    Input(String),
    #[error("training batch: {0}")]
    Batch(String),
    #[error("{path}: {msg}")]
    Checkpoint { path: String, msg: String },
    #[error(transparent)]
    Bin(#[from] BinError),
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

/// The widest layer (and the most residual blocks) a network may have.
pub const MAX_WIDTH: usize = 1 << 16;
/// The most parameters a network may have (4 GiB of f32).
pub const MAX_PARAMETERS: usize = 1 << 30;

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

/// Sizes of the three networks. See the module docs for how they are wired.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkConfig {
    pub observation_len: usize,
    pub action_count: usize,
    /// Width of the hidden state.
    pub hidden: usize,
    /// Widths of the representation MLP's inner layers (its output is `hidden` wide).
    pub repr_layers: Vec<usize>,
    /// Residual blocks after the representation and after the dynamics.
    pub blocks: usize,
    /// Widths of the dynamics trunk (input `hidden + action_count`).
    pub dyn_layers: Vec<usize>,
    /// Widths of the prediction trunk (input `hidden`).
    pub pred_layers: Vec<usize>,
    pub value_support: Support,
    pub reward_support: Support,
}

impl NetworkConfig {
    /// The bench's reference shape (issue 4): observation 512, hidden 256, 13 actions,
    /// representation 512-256-256, dynamics 269-256-256 with a reward head, prediction
    /// 256-256 with policy and value heads, no residual blocks. The value and reward heads
    /// are categorical with the default 25-bin supports, as in training: the bench then
    /// times the network the agent really runs (the two heads add 50 output columns to
    /// the 256-wide layers, under 7% of the multiply-adds).
    pub fn reference() -> NetworkConfig {
        NetworkConfig {
            observation_len: 512,
            action_count: 13,
            hidden: 256,
            repr_layers: vec![256],
            blocks: 0,
            dyn_layers: vec![256],
            pred_layers: vec![256],
            value_support: Support::default(),
            reward_support: Support::default(),
        }
    }

    /// A small default for training on 2 CPU cores: hidden 128 with one residual block in
    /// h and g.
    pub fn small(observation_len: usize, action_count: usize) -> NetworkConfig {
        NetworkConfig {
            observation_len,
            action_count,
            hidden: 128,
            repr_layers: vec![256],
            blocks: 1,
            dyn_layers: vec![256],
            pred_layers: vec![128],
            value_support: Support::default(),
            reward_support: Support::default(),
        }
    }

    /// Rejects impossible sizes, naming the field.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (field, v) in [
            ("observation_len", self.observation_len),
            ("action_count", self.action_count),
            ("hidden", self.hidden),
        ] {
            if v == 0 {
                return Err(format!("{field} is 0, must be at least 1"));
            }
        }
        for (field, layers) in [
            ("repr_layers", &self.repr_layers),
            ("dyn_layers", &self.dyn_layers),
            ("pred_layers", &self.pred_layers),
        ] {
            if let Some(i) = layers.iter().position(|&w| w == 0) {
                return Err(format!("{field}[{i}] is 0, must be at least 1"));
            }
        }
        self.value_support.check("value_support")?;
        self.reward_support.check("reward_support")?;
        // A careless width (`"hidden": 1e9`) must be an error, not an allocation that aborts
        // the process: every width and the total are capped, the total in checked arithmetic.
        let widest = [
            self.hidden,
            self.observation_len,
            self.action_count,
            self.value_support.bins,
            self.reward_support.bins,
        ]
        .into_iter()
        .chain(self.repr_layers.iter().copied())
        .chain(self.dyn_layers.iter().copied())
        .chain(self.pred_layers.iter().copied())
        .max()
        .unwrap_or(0);
        if widest > MAX_WIDTH {
            return Err(format!(
                "a width of {widest} is more than the {MAX_WIDTH} a network may have"
            ));
        }
        if self.blocks > MAX_WIDTH {
            return Err(format!("blocks: {} is more than {MAX_WIDTH}", self.blocks));
        }
        let params = self.parameter_count();
        if params > MAX_PARAMETERS {
            return Err(format!(
                "{params} parameters is more than the {MAX_PARAMETERS} a network may have"
            ));
        }
        Ok(())
    }

    /// Number of scalar parameters (`usize::MAX` when the count would overflow).
    pub fn parameter_count(&self) -> usize {
        self.checked_parameter_count().unwrap_or(usize::MAX)
    }

    fn checked_parameter_count(&self) -> Option<usize> {
        let lin = |i: usize, o: usize| i.checked_mul(o)?.checked_add(o);
        let chain = |input: usize, widths: &[usize]| -> Option<(usize, usize)> {
            let mut total: usize = 0;
            let mut last = input;
            for &w in widths {
                total = total.checked_add(lin(last, w)?)?;
                last = w;
            }
            Some((total, last))
        };
        let h = self.hidden;
        let block = h.checked_mul(2)?.checked_add(lin(h, h)?.checked_mul(2)?)?;
        let (repr, r_last) = chain(self.observation_len, &self.repr_layers)?;
        let (dyn_, d_last) = chain(h.checked_add(self.action_count)?, &self.dyn_layers)?;
        let (pred, p_last) = chain(h, &self.pred_layers)?;
        [
            repr,
            lin(r_last, h)?,
            dyn_,
            lin(d_last, h)?,
            lin(d_last, self.reward_support.bins)?,
            pred,
            lin(p_last, self.action_count)?,
            lin(p_last, self.value_support.bins)?,
            self.blocks.checked_mul(2)?.checked_mul(block)?,
        ]
        .into_iter()
        .try_fold(0usize, |acc, x| acc.checked_add(x))
    }
}

/// Whether a forward pass records the autograd graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Train,
    Infer,
}

/// `x W + b` with `W` stored `[in, out]` (JAX's "kernel" layout): the matmul then reads a
/// contiguous right-hand side, measurably faster in candle's CPU gemm than `x W^T` over a
/// transposed view. `w`/`b` are the Vars' tensors (tracked); `wd`/`bd` detached views of
/// the same storage for inference.
#[derive(Clone)]
struct Linear {
    w: Tensor,
    b: Tensor,
    wd: Tensor,
    bd: Tensor,
}

impl Linear {
    fn params(&self, pass: Pass) -> (&Tensor, &Tensor) {
        match pass {
            Pass::Train => (&self.w, &self.b),
            Pass::Infer => (&self.wd, &self.bd),
        }
    }

    fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let (w, b) = self.params(pass);
        x.matmul(w)?.broadcast_add(b)
    }
}

/// Layer norm over the last dimension, from differentiable primitives.
pub fn layer_norm(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    eps: f64,
) -> candle_core::Result<Tensor> {
    let centered = x.broadcast_sub(&x.mean_keepdim(D::Minus1)?)?;
    let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
    centered
        .broadcast_div(&(var + eps)?.sqrt()?)?
        .broadcast_mul(gamma)?
        .broadcast_add(beta)
}

const LN_EPS: f64 = 1e-5;

#[derive(Clone)]
struct LayerNorm {
    gamma: Tensor,
    beta: Tensor,
    gamma_d: Tensor,
    beta_d: Tensor,
}

impl LayerNorm {
    fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        match pass {
            Pass::Train => layer_norm(x, &self.gamma, &self.beta, LN_EPS),
            Pass::Infer => layer_norm(x, &self.gamma_d, &self.beta_d, LN_EPS),
        }
    }
}

/// Pre-norm residual MLP block: `x + fc2(relu(fc1(LN(x))))`.
#[derive(Clone)]
struct ResBlock {
    ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

impl ResBlock {
    fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let y = self.ln.forward(x, pass)?;
        let y = self.fc1.forward(&y, pass)?.relu()?;
        x + self.fc2.forward(&y, pass)?
    }
}

/// MuZero's hidden-state scaling: each row mapped to `[0, 1]` by its own min and max. The
/// small constant keeps a constant row finite (it maps to zeros).
fn min_max_scale(x: &Tensor) -> candle_core::Result<Tensor> {
    let min = x.min_keepdim(D::Minus1)?;
    let range = (x.max_keepdim(D::Minus1)? - &min)? + MIN_MAX_EPS;
    x.broadcast_sub(&min)?.broadcast_div(&range?)
}

const MIN_MAX_EPS: f64 = 1e-5;

/// [`min_max_scale`] on plain rows, with the same operations in the same order (so the
/// same bits): inference scales outside candle because candle's row reductions cost more
/// than the round trip through a `Vec`.
fn min_max_rows(data: &mut [f32], width: usize) {
    cpu_infer::min_max_rows(data, width, MIN_MAX_EPS as f32)
}

/// Applies `layers` with ReLU between them (`relu_last` adds one after the last).
fn mlp(layers: &[Linear], x: &Tensor, relu_last: bool, pass: Pass) -> candle_core::Result<Tensor> {
    let mut x = x.clone();
    for (i, l) in layers.iter().enumerate() {
        x = l.forward(&x, pass)?;
        if relu_last || i + 1 < layers.len() {
            x = x.relu()?;
        }
    }
    Ok(x)
}

/// Scales the gradient flowing back through `x` by `s`, leaving the value unchanged.
fn scale_gradient(x: &Tensor, s: f64) -> candle_core::Result<Tensor> {
    (x * s)? + (x.detach() * (1.0 - s))?
}

/// Creates the Vars with seeded PyTorch-style initialisation (uniform in
/// `±1/sqrt(fan_in)` for weights and biases; layer norm gain 1, shift 0).
struct Builder {
    rng: StdRng,
    device: Device,
    vars: Vec<(String, Var)>,
}

impl Builder {
    fn var(&mut self, name: String, data: Vec<f32>, shape: &[usize]) -> Result<(Tensor, Tensor)> {
        let var = Var::from_tensor(&Tensor::from_vec(data, shape, &self.device)?)?;
        let t = var.as_tensor().clone();
        let d = t.detach();
        self.vars.push((name, var));
        Ok((t, d))
    }

    fn uniform(&mut self, n: usize, bound: f32) -> Vec<f32> {
        (0..n)
            .map(|_| self.rng.random_range(-bound..bound))
            .collect()
    }

    fn linear(&mut self, name: &str, input: usize, output: usize) -> Result<Linear> {
        let bound = 1.0 / (input as f32).sqrt();
        let w = self.uniform(input * output, bound);
        let b = self.uniform(output, bound);
        let (w, wd) = self.var(format!("{name}.weight"), w, &[input, output])?;
        let (b, bd) = self.var(format!("{name}.bias"), b, &[output])?;
        Ok(Linear { w, b, wd, bd })
    }

    fn chain(&mut self, prefix: &str, input: usize, widths: &[usize]) -> Result<Vec<Linear>> {
        let mut last = input;
        let mut out = Vec::with_capacity(widths.len());
        for (i, &w) in widths.iter().enumerate() {
            out.push(self.linear(&format!("{prefix}.{i}"), last, w)?);
            last = w;
        }
        Ok(out)
    }

    fn block(&mut self, name: &str, width: usize) -> Result<ResBlock> {
        let (gamma, gamma_d) = self.var(format!("{name}.ln.weight"), vec![1.0; width], &[width])?;
        let (beta, beta_d) = self.var(format!("{name}.ln.bias"), vec![0.0; width], &[width])?;
        Ok(ResBlock {
            ln: LayerNorm {
                gamma,
                beta,
                gamma_d,
                beta_d,
            },
            fc1: self.linear(&format!("{name}.fc1"), width, width)?,
            fc2: self.linear(&format!("{name}.fc2"), width, width)?,
        })
    }
}

/// The weights of the loss terms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossWeights {
    pub value: f32,
    pub reward: f32,
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
    pub value: f32,
    pub reward: f32,
    pub policy: f32,
    pub total: f32,
}

/// What [`MuZeroNet::loss`] returns.
pub struct LossOutput {
    /// The scalar to differentiate.
    pub loss: Tensor,
    pub parts: LossParts,
    /// Per sample, `|value prediction at k = 0 - target value at k = 0|`: the new replay
    /// priorities.
    pub value_errors: Vec<f32>,
}

/// The one metadata entry of a checkpoint. One entry, not several: safetensors writes its
/// metadata map in hash order, and a single key keeps the file bytes reproducible.
const META_KEY: &str = "mallocmuzero-network";
/// Format version of the checkpoint's metadata and tensor naming.
const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct CheckpointMeta {
    format_version: u32,
    /// FNV-1a of the tensor names and data, in name order, as 16 hex digits.
    checksum: String,
    config: NetworkConfig,
}

/// MuZero's three networks (see the module docs).
pub struct MuZeroNet {
    config: NetworkConfig,
    device: Device,
    vars: Vec<(String, Var)>,
    repr: Vec<Linear>,
    repr_blocks: Vec<ResBlock>,
    /// The dynamics trunk followed by its output layer `dyn.out`, whose columns are the
    /// next hidden state then the reward logits (one matmul for both heads). The first
    /// layer's input is `[hidden, one_hot(action)]`.
    dyn_layers: Vec<Linear>,
    dyn_blocks: Vec<ResBlock>,
    /// The prediction trunk followed by `pred.heads`: policy logits then value logits.
    pred_layers: Vec<Linear>,
    /// Threads a CPU inference call may use (the machine's cores, read once here).
    inference_threads: usize,
}

impl MuZeroNet {
    /// A freshly initialised network; the same seed gives the same weights.
    pub fn new(config: &NetworkConfig, seed: u64, device: &Device) -> Result<MuZeroNet> {
        config.check().map_err(NetError::Config)?;
        let c = config;
        let mut b = Builder {
            rng: StdRng::seed_from_u64(seed),
            device: device.clone(),
            vars: Vec::new(),
        };
        let mut repr = b.chain("repr", c.observation_len, &c.repr_layers)?;
        let r_last = c.repr_layers.last().copied().unwrap_or(c.observation_len);
        repr.push(b.linear(&format!("repr.{}", c.repr_layers.len()), r_last, c.hidden)?);
        let repr_blocks = (0..c.blocks)
            .map(|i| b.block(&format!("repr_block.{i}"), c.hidden))
            .collect::<Result<Vec<_>>>()?;
        let mut dyn_layers = b.chain("dyn", c.hidden + c.action_count, &c.dyn_layers)?;
        let d_last = c
            .dyn_layers
            .last()
            .copied()
            .unwrap_or(c.hidden + c.action_count);
        dyn_layers.push(b.linear("dyn.out", d_last, c.hidden + c.reward_support.bins)?);
        let dyn_blocks = (0..c.blocks)
            .map(|i| b.block(&format!("dyn_block.{i}"), c.hidden))
            .collect::<Result<Vec<_>>>()?;
        let mut pred_layers = b.chain("pred", c.hidden, &c.pred_layers)?;
        let p_last = c.pred_layers.last().copied().unwrap_or(c.hidden);
        pred_layers.push(b.linear("pred.heads", p_last, c.action_count + c.value_support.bins)?);
        let mut vars = b.vars;
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(MuZeroNet {
            config: config.clone(),
            device: device.clone(),
            vars,
            repr,
            repr_blocks,
            dyn_layers,
            dyn_blocks,
            pred_layers,
            inference_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }

    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Every parameter, sorted by name.
    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    /// A deep copy with its own storage: what a self-play thread runs while the learner
    /// keeps updating this one.
    pub fn snapshot(&self) -> Result<MuZeroNet> {
        let copy = MuZeroNet::new(&self.config, 0, &self.device)?;
        copy.copy_weights_from(self)?;
        Ok(copy)
    }

    /// Overwrites this network's weights with `other`'s (same config required).
    pub fn copy_weights_from(&self, other: &MuZeroNet) -> Result<()> {
        if self.config != other.config {
            return Err(NetError::Input(
                "copy_weights_from: the two networks have different configs".into(),
            ));
        }
        for ((_, dst), (_, src)) in self.vars.iter().zip(&other.vars) {
            dst.set(&src.as_tensor().to_device(&self.device)?.detach())?;
        }
        Ok(())
    }

    /// The representation before the min-max scaling.
    fn represent_raw(&self, obs: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let mut x = mlp(&self.repr, obs, false, pass)?;
        for b in &self.repr_blocks {
            x = b.forward(&x, pass)?;
        }
        Ok(x)
    }

    /// The dynamics before the min-max scaling: `(next hidden, reward logits)` for
    /// `actions` (u32, `[B]`), both possibly strided views of one `[B, H + bins]` output.
    fn dynamics_raw(
        &self,
        hidden: &Tensor,
        actions: &Tensor,
        pass: Pass,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let h = self.config.hidden;
        let a = self.config.action_count;
        let last = self.dyn_layers.len() - 1;
        // The first layer on `[hidden, one_hot(action)]`, without building either: the
        // one-hot part of the product is just the action's row of the weight.
        let (w, b) = self.dyn_layers[0].params(pass);
        let action_rows = w.narrow(0, h, a)?.index_select(actions, 0)?;
        let mut x = (hidden.matmul(&w.narrow(0, 0, h)?)? + action_rows)?.broadcast_add(b)?;
        for (i, layer) in self.dyn_layers.iter().enumerate() {
            if i > 0 {
                x = layer.forward(&x, pass)?;
            }
            if i < last {
                x = x.relu()?;
            }
        }
        let reward = x.narrow(1, h, self.config.reward_support.bins)?;
        let mut next = x.narrow(1, 0, h)?;
        for b in &self.dyn_blocks {
            next = b.forward(&next, pass)?;
        }
        Ok((next, reward))
    }

    /// `[B, A + value bins]`: policy logits then value logits.
    fn predict(&self, hidden: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        mlp(&self.pred_layers, hidden, false, pass)
    }

    /// `act` (at `position` of its batch) as a weight-row index, if the network has it.
    fn action_index(&self, position: usize, act: usize) -> Result<u32> {
        let a = self.config.action_count;
        if act >= a {
            return Err(NetError::Input(format!(
                "action {act} at position {position} is out of range (the network has {a} actions)"
            )));
        }
        Ok(act as u32)
    }

    fn actions_tensor(&self, actions: impl Iterator<Item = usize>) -> Result<Tensor> {
        let mut idx = Vec::with_capacity(actions.size_hint().0);
        for (i, act) in actions.enumerate() {
            idx.push(self.action_index(i, act)?);
        }
        let n = idx.len();
        Ok(Tensor::from_vec(idx, n, &self.device)?)
    }

    /// Scales raw hidden states (`[B, H]`) and runs the prediction on them, in candle.
    fn finish(&self, raw_hidden: &Tensor, reward: Option<&Tensor>) -> Result<ModelOutput> {
        let h = self.config.hidden;
        let batch = raw_hidden.dim(0)?;
        let mut hidden = raw_hidden.flatten_all()?.to_vec1::<f32>()?;
        min_max_rows(&mut hidden, h);
        let scaled = Tensor::from_slice(&hidden, (batch, h), &self.device)?;
        let heads = self
            .predict(&scaled, Pass::Infer)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let reward = match reward {
            Some(r) => r.flatten_all()?.to_vec1::<f32>()?,
            None => Vec::new(),
        };
        Ok(self.decode(hidden, &heads, &reward, batch))
    }

    /// The model's outputs from scaled hidden states, prediction heads (`[B, A + value
    /// bins]`) and reward logits (`[B, reward bins]`, or empty at the roots).
    fn decode(&self, hidden: Vec<f32>, heads: &[f32], reward: &[f32], batch: usize) -> ModelOutput {
        let c = &self.config;
        let a = c.action_count;
        let vs = &c.value_support;
        let mut policy_logits = Vec::with_capacity(batch * a);
        let mut value = Vec::with_capacity(batch);
        for row in heads.chunks_exact(a + vs.bins) {
            policy_logits.extend_from_slice(&row[..a]);
            value.push(vs.decode_logits(&row[a..]));
        }
        let rs = &c.reward_support;
        let reward = if reward.is_empty() {
            vec![0.0; batch]
        } else {
            reward
                .chunks_exact(rs.bins)
                .map(|row| rs.decode_logits(row))
                .collect()
        };
        ModelOutput {
            hidden,
            reward,
            policy_logits,
            value,
        }
    }

    /// Runs `f` on the weights as plain slices (the Vars' own storage, locked for reading
    /// meanwhile); `None` off the CPU, where inference stays in candle.
    fn with_cpu_weights<R>(&self, f: impl FnOnce(&cpu_infer::Weights<'_>) -> R) -> Option<R> {
        type Guard<'a> = (StorageRef<'a>, &'a Layout);
        fn lock(t: &Tensor) -> Guard<'_> {
            t.storage_and_layout()
        }
        fn slice<'a>(g: &'a Guard<'_>) -> Option<&'a [f32]> {
            let Storage::Cpu(cpu) = &*g.0 else {
                return None;
            };
            let (start, end) = g.1.contiguous_offsets()?;
            cpu.as_slice::<f32>().ok()?.get(start..end)
        }
        fn linears(ls: &[Linear]) -> Vec<Guard<'_>> {
            ls.iter().flat_map(|l| [lock(&l.wd), lock(&l.bd)]).collect()
        }
        fn block_guards(bs: &[ResBlock]) -> Vec<Guard<'_>> {
            bs.iter()
                .flat_map(|b| {
                    [
                        &b.ln.gamma_d,
                        &b.ln.beta_d,
                        &b.fc1.wd,
                        &b.fc1.bd,
                        &b.fc2.wd,
                        &b.fc2.bd,
                    ]
                    .map(lock)
                })
                .collect()
        }
        fn dense<'a>(g: &'a [Guard<'_>]) -> Option<Vec<cpu_infer::Dense<'a>>> {
            g.chunks_exact(2)
                .map(|wb| {
                    let dims = wb[0].1.dims();
                    Some(cpu_infer::Dense {
                        w: slice(&wb[0])?,
                        b: slice(&wb[1])?,
                        input: dims[0],
                        output: dims[1],
                    })
                })
                .collect()
        }
        fn blocks<'a>(g: &'a [Guard<'_>]) -> Option<Vec<cpu_infer::Block<'a>>> {
            g.chunks_exact(6)
                .map(|p| {
                    let mut fc = dense(&p[2..])?.into_iter();
                    Some(cpu_infer::Block {
                        gamma: slice(&p[0])?,
                        beta: slice(&p[1])?,
                        fc1: fc.next()?,
                        fc2: fc.next()?,
                    })
                })
                .collect()
        }
        if !self.device.is_cpu() {
            return None;
        }
        let guards = [
            linears(&self.repr),
            block_guards(&self.repr_blocks),
            linears(&self.dyn_layers),
            block_guards(&self.dyn_blocks),
            linears(&self.pred_layers),
        ];
        let weights = cpu_infer::Weights {
            hidden: self.config.hidden,
            repr: dense(&guards[0])?,
            repr_blocks: blocks(&guards[1])?,
            dyn_layers: dense(&guards[2])?,
            dyn_blocks: blocks(&guards[3])?,
            pred: dense(&guards[4])?,
            ln_eps: LN_EPS as f32,
            min_max_eps: MIN_MAX_EPS as f32,
        };
        Some(f(&weights))
    }

    fn initial(&self, observations: &[f32], batch: usize) -> Result<ModelOutput> {
        let o = self.config.observation_len;
        if batch == 0 || observations.len() != batch * o {
            return Err(NetError::Input(format!(
                "initial_inference: {} observation values for batch {batch} x observation_len {o}",
                observations.len()
            )));
        }
        let input = cpu_infer::Input::Observations(observations);
        match self.with_cpu_weights(|w| w.run(input, batch, self.inference_threads)) {
            Some(out) => Ok(self.decode(out.hidden, &out.heads, &out.reward_logits, batch)),
            None => self.initial_candle(observations, batch),
        }
    }

    /// [`MuZeroNet::initial`] through candle: the path off the CPU, and the reference the
    /// CPU path is tested against.
    fn initial_candle(&self, observations: &[f32], batch: usize) -> Result<ModelOutput> {
        let o = self.config.observation_len;
        let obs = Tensor::from_slice(observations, (batch, o), &self.device)?;
        let raw = self.represent_raw(&obs, Pass::Infer)?;
        self.finish(&raw, None)
    }

    fn recurrent(&self, hidden: &[f32], actions: &[usize], batch: usize) -> Result<ModelOutput> {
        let h = self.config.hidden;
        if batch == 0 || hidden.len() != batch * h || actions.len() != batch {
            return Err(NetError::Input(format!(
                "recurrent_inference: {} hidden values and {} actions for batch {batch} \
                 (hidden_len {h})",
                hidden.len(),
                actions.len()
            )));
        }
        for (i, &act) in actions.iter().enumerate() {
            self.action_index(i, act)?;
        }
        let input = cpu_infer::Input::Transitions { hidden, actions };
        match self.with_cpu_weights(|w| w.run(input, batch, self.inference_threads)) {
            Some(out) => Ok(self.decode(out.hidden, &out.heads, &out.reward_logits, batch)),
            None => self.recurrent_candle(hidden, actions, batch),
        }
    }

    /// [`MuZeroNet::recurrent`] through candle.
    fn recurrent_candle(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> Result<ModelOutput> {
        let h = self.config.hidden;
        let hidden = Tensor::from_slice(hidden, (batch, h), &self.device)?;
        let actions = self.actions_tensor(actions.iter().copied())?;
        let (next, reward) = self.dynamics_raw(&hidden, &actions, Pass::Infer)?;
        self.finish(&next, Some(&reward))
    }

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
        let obs = Tensor::from_slice(&batch.observations, (n, c.observation_len), dev)?;
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
        // One prediction call over every step: bigger matmuls, fewer graph nodes. Rows
        // are step-major: row `s * n + i` is sample `i` at step `s`.
        let all_hidden = Tensor::cat(&hiddens, 0)?;
        let heads = self.predict(&all_hidden, Pass::Train)?;
        let policy_logits = heads.narrow(1, 0, a)?;
        let value_logits = heads.narrow(1, a, c.value_support.bins)?;

        let step_scale = |s: usize| if s == 0 { 1.0 } else { 1.0 / k as f32 };
        let at = |i: usize, s: usize| i * (k + 1) + s;
        let rows = (k + 1) * n;
        let mut value_targets = Vec::with_capacity(rows);
        let mut value_coef = Vec::with_capacity(rows);
        let mut policy_targets = Vec::with_capacity(rows * a);
        let mut policy_coef = Vec::with_capacity(rows);
        let mut reward_targets = Vec::with_capacity(k * n);
        let mut reward_coef = Vec::with_capacity(k * n);
        for s in 0..=k {
            for i in 0..n {
                let w = batch.weights[i] * step_scale(s) / n as f32;
                let j = at(i, s);
                value_targets.push(batch.target_values[j]);
                value_coef.push(w * batch.mask[j]);
                policy_targets.extend_from_slice(&batch.target_policies[j * a..(j + 1) * a]);
                policy_coef.push(w * batch.policy_mask[j]);
                if s > 0 {
                    reward_targets.push(batch.target_rewards[j]);
                    reward_coef.push(w * batch.mask[j]);
                }
            }
        }
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

    /// The checkpoint bytes: safetensors of every parameter, with the config (JSON) and a
    /// checksum of the tensor data in the metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let tensors: Vec<(String, Tensor)> = self
            .vars
            .iter()
            .map(|(name, v)| Ok((name.clone(), v.as_tensor().to_device(&Device::Cpu)?)))
            .collect::<Result<_>>()?;
        let meta = CheckpointMeta {
            format_version: FORMAT_VERSION,
            checksum: format!("{:016x}", checksum_tensors(&tensors)?),
            config: self.config.clone(),
        };
        let meta = HashMap::from([(
            META_KEY.to_string(),
            serde_json::to_string(&meta)
                .map_err(|e| NetError::Input(format!("cannot encode the config: {e}")))?,
        )]);
        safetensors::tensor::serialize(tensors.iter().map(|(n, t)| (n, t)), Some(meta))
            .map_err(|e| NetError::Input(format!("cannot serialize the weights: {e}")))
    }

    /// Writes the checkpoint atomically (a crash leaves the old file or the new one).
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        binio::write_bytes_atomic(path, &bytes)?;
        Ok(())
    }

    /// Reads a checkpoint written by [`MuZeroNet::save`] into a network of `config`.
    pub fn load(path: &Path, config: &NetworkConfig, device: &Device) -> Result<MuZeroNet> {
        let bytes = read_file(path)?;
        MuZeroNet::from_bytes(&path.display().to_string(), &bytes, config, device)
    }

    /// The config stored in a checkpoint (to rebuild the network it was saved from).
    pub fn read_config(path: &Path) -> Result<NetworkConfig> {
        let bytes = read_file(path)?;
        let origin = path.display().to_string();
        Ok(parse_checkpoint(&origin, &bytes)?.1.config)
    }

    /// [`MuZeroNet::load`] from bytes; `origin` names them in errors.
    pub fn from_bytes(
        origin: &str,
        bytes: &[u8],
        config: &NetworkConfig,
        device: &Device,
    ) -> Result<MuZeroNet> {
        let err = |msg: String| NetError::Checkpoint {
            path: origin.to_string(),
            msg,
        };
        let (st, _) = parse_checkpoint(origin, bytes)?;
        let net = MuZeroNet::new(config, 0, device)?;
        let known: HashMap<&str, &Var> = net.vars.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let mut stored: Vec<&str> = st.names().into_iter().collect();
        stored.sort_unstable();
        if let Some(extra) = stored.iter().find(|n| !known.contains_key(*n)) {
            return Err(err(format!(
                "checkpoint built with another network shape: it has tensor `{extra}`, \
                 which the config does not"
            )));
        }
        for (name, var) in &net.vars {
            let view = st.tensor(name).map_err(|_| {
                err(format!(
                    "checkpoint built with another network shape: it lacks tensor `{name}`"
                ))
            })?;
            let want = var.as_tensor().dims().to_vec();
            if view.shape() != want.as_slice() {
                return Err(err(format!(
                    "checkpoint built with another network shape: tensor `{name}` is {:?}, \
                     the config needs {want:?}",
                    view.shape()
                )));
            }
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(err(format!(
                    "tensor `{name}` is {:?}, expected F32",
                    view.dtype()
                )));
            }
            let data: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            var.set(&Tensor::from_vec(data, want.as_slice(), device)?)?;
        }
        Ok(net)
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        let p = path.display().to_string();
        if e.kind() == std::io::ErrorKind::NotFound {
            NetError::Bin(BinError::Missing { path: p })
        } else {
            NetError::Bin(BinError::Read { path: p, source: e })
        }
    })
}

/// Parses the safetensors header and verifies the format version and the checksum.
fn parse_checkpoint<'a>(
    origin: &str,
    bytes: &'a [u8],
) -> Result<(safetensors::SafeTensors<'a>, CheckpointMeta)> {
    let err = |msg: String| NetError::Checkpoint {
        path: origin.to_string(),
        msg,
    };
    let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| {
        err(format!(
            "not a network checkpoint (corrupt or truncated): {e}"
        ))
    })?;
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| {
        err(format!(
            "not a network checkpoint (corrupt or truncated): {e}"
        ))
    })?;
    let json = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get(META_KEY))
        .ok_or_else(|| {
            err(format!(
                "a safetensors file without the `{META_KEY}` metadata: not written by \
                 MuZeroNet::save"
            ))
        })?;
    let meta: CheckpointMeta =
        serde_json::from_str(json).map_err(|e| err(format!("corrupt checkpoint metadata: {e}")))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(err(format!(
            "checkpoint format version {}, this build reads {FORMAT_VERSION}",
            meta.format_version
        )));
    }
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort_unstable();
    let mut hash = binio::Fnv64::new();
    for name in &names {
        let view = st.tensor(name).map_err(|e| err(e.to_string()))?;
        hash.write(name.as_bytes());
        hash.write(view.data());
    }
    let got = format!("{:016x}", hash.finish());
    if meta.checksum != got {
        return Err(err(format!(
            "corrupt checkpoint: tensor data checksum {got}, the header says {}",
            meta.checksum
        )));
    }
    Ok((st, meta))
}

/// FNV-1a over names and little-endian data, in name order: catches flipped bytes that the
/// safetensors header checks (which only see lengths and offsets) let through.
fn checksum_tensors(tensors: &[(String, Tensor)]) -> Result<u64> {
    let mut sorted: Vec<&(String, Tensor)> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hash = binio::Fnv64::new();
    for (name, t) in sorted {
        hash.write(name.as_bytes());
        let data = t.flatten_all()?.to_vec1::<f32>()?;
        for x in data {
            hash.write(&x.to_le_bytes());
        }
    }
    Ok(hash.finish())
}

impl Model for MuZeroNet {
    fn observation_len(&self) -> usize {
        self.config.observation_len
    }

    fn hidden_len(&self) -> usize {
        self.config.hidden
    }

    fn action_count(&self) -> usize {
        self.config.action_count
    }

    fn initial_inference(
        &self,
        observations: &[f32],
        batch: usize,
    ) -> std::result::Result<ModelOutput, ModelError> {
        Ok(self.initial(observations, batch)?)
    }

    fn recurrent_inference(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> std::result::Result<ModelOutput, ModelError> {
        Ok(self.recurrent(hidden, actions, batch)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn careless_sizes_are_errors_not_aborts() {
        let mut c = tiny();
        c.hidden = 1_000_000_000;
        assert!(c.check().unwrap_err().contains("width"), "{:?}", c.check());
        let mut c = tiny();
        c.repr_layers = vec![60_000, 60_000, 60_000];
        assert!(c.check().unwrap_err().contains("parameters"));
        let mut c = tiny();
        c.blocks = usize::MAX / 2;
        assert!(c.check().is_err());
        assert_eq!(c.parameter_count(), usize::MAX);
        assert!(tiny().check().is_ok());
    }

    fn tiny() -> NetworkConfig {
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

    fn assert_close(what: &str, fast: &[f32], reference: &[f32]) {
        assert_eq!(fast.len(), reference.len(), "{what}: lengths");
        for (i, (a, b)) in fast.iter().zip(reference).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "{what}[{i}]: CPU path {a} vs candle {b}"
            );
        }
    }

    /// The CPU inference path against candle's, on two residual blocks and deeper trunks,
    /// with a batch that leaves a partial group of rows; and the CPU path gives the same
    /// bits on 1 and on 3 threads.
    #[test]
    fn cpu_inference_matches_candle_and_ignores_thread_count() {
        let config = NetworkConfig {
            observation_len: 20,
            action_count: 5,
            hidden: 16,
            repr_layers: vec![24, 12],
            blocks: 2,
            dyn_layers: vec![18, 14],
            pred_layers: vec![11, 9],
            value_support: Support::symmetric(7, 10.0),
            reward_support: Support::symmetric(5, 10.0),
        };
        let mut net = MuZeroNet::new(&config, 3, &Device::Cpu).unwrap();
        let batch = 2 * cpu_infer::ROWS_PER_TASK + 37;
        let mut rng = StdRng::seed_from_u64(9);
        let obs: Vec<f32> = (0..batch * config.observation_len)
            .map(|_| rng.random_range(-2.0..2.0))
            .collect();
        let actions: Vec<usize> = (0..batch).map(|i| (i * 7) % config.action_count).collect();

        let reference = net.initial_candle(&obs, batch).unwrap();
        let mut runs = Vec::new();
        for threads in [1, 3] {
            net.inference_threads = threads;
            let fast = net.initial(&obs, batch).unwrap();
            let next = net.recurrent(&fast.hidden, &actions, batch).unwrap();
            runs.push((fast, next));
        }
        assert_eq!(runs[0], runs[1], "1 and 3 threads differ");
        let (fast, next) = &runs[0];
        assert_close("initial hidden", &fast.hidden, &reference.hidden);
        assert_close(
            "initial policy",
            &fast.policy_logits,
            &reference.policy_logits,
        );
        assert_close("initial value", &fast.value, &reference.value);
        let reference = net.recurrent_candle(&fast.hidden, &actions, batch).unwrap();
        assert_close("next hidden", &next.hidden, &reference.hidden);
        assert_close("reward", &next.reward, &reference.reward);
        assert_close("next policy", &next.policy_logits, &reference.policy_logits);
        assert_close("next value", &next.value, &reference.value);
        assert!(
            next.reward.iter().any(|&r| r != 0.0),
            "rewards were decoded"
        );
    }

    #[test]
    fn layer_norm_matches_hand_computation() {
        let x = Tensor::new(
            &[[1.0f32, 2.0, 3.0, 6.0], [-1.0, -1.0, 1.0, 1.0]],
            &Device::Cpu,
        )
        .unwrap();
        let gamma = Tensor::new(&[1.0f32, 2.0, 0.5, 1.0], &Device::Cpu).unwrap();
        let beta = Tensor::new(&[0.0f32, 1.0, 0.0, -1.0], &Device::Cpu).unwrap();
        let y = layer_norm(&x, &gamma, &beta, 1e-5)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        // Row 0: mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5.
        let sd0 = (3.5f32 + 1e-5).sqrt();
        let want0 = [-2.0 / sd0, 2.0 * (-1.0 / sd0) + 1.0, 0.0, 3.0 / sd0 - 1.0];
        // Row 1: mean 0, variance 1.
        let sd1 = (1.0f32 + 1e-5).sqrt();
        let want1 = [
            -1.0 / sd1,
            2.0 * (-1.0 / sd1) + 1.0,
            0.5 / sd1,
            1.0 / sd1 - 1.0,
        ];
        for (got, want) in y.iter().zip([want0, want1]) {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-5, "{got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn layer_norm_passes_gradients() {
        let x = Var::new(&[[1.0f32, 2.0, 4.0]], &Device::Cpu).unwrap();
        let gamma = Var::new(&[1.0f32, 1.0, 1.0], &Device::Cpu).unwrap();
        let beta = Var::new(&[0.0f32, 0.0, 0.0], &Device::Cpu).unwrap();
        let w = Tensor::new(&[[1.0f32, -2.0, 0.5]], &Device::Cpu).unwrap();
        let y = layer_norm(x.as_tensor(), gamma.as_tensor(), beta.as_tensor(), 1e-5).unwrap();
        let loss = (y * w).unwrap().sum_all().unwrap();
        let grads = loss.backward().unwrap();
        for (name, v) in [("x", &x), ("gamma", &gamma), ("beta", &beta)] {
            let g = grads.get(v).expect(name).abs().unwrap();
            let g = g.sum_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(g > 1e-3, "{name} gets no gradient");
        }
    }

    #[test]
    fn hidden_states_are_min_max_scaled() {
        let net = MuZeroNet::new(&tiny(), 3, &Device::Cpu).unwrap();
        let obs: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        let out = net.initial(&obs, 2).unwrap();
        for row in out.hidden.chunks(8) {
            let min = row.iter().copied().fold(f32::MAX, f32::min);
            let max = row.iter().copied().fold(f32::MIN, f32::max);
            assert!(min.abs() < 1e-6 && (max - 1.0).abs() < 1e-4, "{row:?}");
        }
        assert_eq!(out.reward, vec![0.0, 0.0]);
        let next = net.recurrent(&out.hidden, &[2, 0], 2).unwrap();
        assert_eq!(next.policy_logits.len(), 6);
        for row in next.hidden.chunks(8) {
            let max = row.iter().copied().fold(f32::MIN, f32::max);
            assert!((max - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn same_seed_same_weights_and_parameter_count() {
        let c = tiny();
        let a = MuZeroNet::new(&c, 7, &Device::Cpu).unwrap();
        let b = MuZeroNet::new(&c, 7, &Device::Cpu).unwrap();
        assert!(a.to_bytes().unwrap() == b.to_bytes().unwrap());
        let counted: usize = a.vars().iter().map(|(_, v)| v.elem_count()).sum();
        assert_eq!(counted, c.parameter_count());
        let r = NetworkConfig::reference();
        let rn = MuZeroNet::new(&r, 0, &Device::Cpu).unwrap();
        let counted: usize = rn.vars().iter().map(|(_, v)| v.elem_count()).sum();
        assert_eq!(counted, r.parameter_count());
        let shape = |name: &str| {
            rn.vars()
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.dims().to_vec())
                .unwrap()
        };
        assert_eq!(shape("repr.0.weight"), vec![512, 256]);
        assert_eq!(shape("repr.1.weight"), vec![256, 256]);
        assert_eq!(shape("dyn.0.weight"), vec![269, 256]);
        // Next hidden state and 25 reward bins.
        assert_eq!(shape("dyn.out.weight"), vec![256, 281]);
        assert_eq!(shape("pred.0.weight"), vec![256, 256]);
        // 13 policy logits and 25 value bins.
        assert_eq!(shape("pred.heads.weight"), vec![256, 38]);
        assert_eq!(rn.vars().len(), 12);
    }

    #[test]
    fn config_check_names_the_field() {
        let mut c = tiny();
        c.dyn_layers = vec![4, 0];
        assert_eq!(
            c.check().unwrap_err(),
            "dyn_layers[1] is 0, must be at least 1"
        );
        let mut c = tiny();
        c.hidden = 0;
        assert_eq!(c.check().unwrap_err(), "hidden is 0, must be at least 1");
        let mut c = tiny();
        c.reward_support.bins = 0;
        assert!(c.check().unwrap_err().starts_with("reward_support.bins"));
        assert!(matches!(
            MuZeroNet::new(&c, 0, &Device::Cpu),
            Err(NetError::Config(_))
        ));
    }

    #[test]
    fn bad_inference_input_is_an_error() {
        let net = MuZeroNet::new(&tiny(), 3, &Device::Cpu).unwrap();
        let e = net.initial(&[0.0; 5], 1).unwrap_err().to_string();
        assert!(e.contains("5 observation values for batch 1"), "{e}");
        let e = net.recurrent(&[0.0; 8], &[3], 1).unwrap_err().to_string();
        assert!(e.contains("action 3 at position 0 is out of range"), "{e}");
    }

    #[test]
    fn scale_gradient_keeps_value_and_halves_gradient() {
        let x = Var::new(&[1.0f32, -2.0], &Device::Cpu).unwrap();
        let y = scale_gradient(x.as_tensor(), 0.5).unwrap();
        assert_eq!(y.to_vec1::<f32>().unwrap(), vec![1.0, -2.0]);
        let grads = (y * 3.0).unwrap().sum_all().unwrap().backward().unwrap();
        let g = grads.get(&x).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(g, vec![1.5, 1.5]);
    }
}
