//! The graph neural network of EGRL's policies and critic, in candle.
//!
//! An embedding of each op's features, then `rounds` of message passing, each
//! `h <- h + relu(h Ws + mean_producers(h) Wp + mean_consumers(h) Wc + b)`, then a linear
//! head giving per op `2 x levels` numbers: per level, a logit (policy) or a value (critic)
//! for its W and for its A decision. Separate producer and consumer weights let a message
//! tell "what feeds me" from "what I feed".
//!
//! The parameters live as plain vectors ([`Params`]) so the evolutionary population can
//! mutate, cross and save them; [`forward`] takes them as tensors, [`Vars`] when the
//! learner needs gradients.

use crate::features::OpGraph;
use candle_core::{DType, Device, Result, Tensor, Var};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The network's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GnnShape {
    /// Feature columns per op.
    pub features: usize,
    /// Width of each op's hidden features.
    pub hidden: usize,
    /// Rounds of message passing along the producer and consumer edges.
    pub rounds: usize,
    /// Memory levels (outputs per decision).
    pub levels: usize,
}

/// A network's parameters, one vector per tensor in [`GnnShape::dims`] order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params(pub Vec<Vec<f32>>);

impl GnnShape {
    /// The tensor shapes: embedding (W, b), per round (Ws, Wp, Wc, b), head (W, b).
    pub fn dims(&self) -> Vec<Vec<usize>> {
        let (f, h, o) = (self.features, self.hidden, 2 * self.levels);
        let mut d = vec![vec![f, h], vec![h]];
        for _ in 0..self.rounds {
            d.extend([vec![h, h], vec![h, h], vec![h, h], vec![h]]);
        }
        d.extend([vec![h, o], vec![o]]);
        d
    }

    /// Glorot-uniform matrices (message matrices halved, so early rounds stay near the
    /// identity of the residual), zero biases; the head starts small so a fresh policy is
    /// near uniform.
    pub fn init(&self, rng: &mut impl Rng) -> Params {
        let dims = self.dims();
        let last = dims.len() - 2;
        let tensors = dims
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if d.len() == 1 {
                    return vec![0.0; d[0]];
                }
                let mut a = (6.0 / (d[0] + d[1]) as f32).sqrt();
                if i == last {
                    a *= 0.1;
                } else if i > 1 {
                    a *= 0.5;
                }
                (0..d[0] * d[1]).map(|_| rng.random_range(-a..a)).collect()
            })
            .collect();
        Params(tensors)
    }

    /// Checks that `params` has this shape.
    pub fn fits(&self, params: &Params) -> bool {
        let dims = self.dims();
        params.0.len() == dims.len()
            && params
                .0
                .iter()
                .zip(&dims)
                .all(|(p, d)| p.len() == d.iter().product::<usize>())
    }
}

impl Params {
    /// The parameters as tensors on `device`.
    pub fn tensors(&self, shape: &GnnShape, device: &Device) -> Result<Vec<Tensor>> {
        self.0
            .iter()
            .zip(shape.dims())
            .map(|(v, d)| Tensor::from_slice(v, d.as_slice(), device))
            .collect()
    }

    /// The number of scalars.
    pub fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }
    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The parameters as candle variables, for the learner.
pub struct Vars(pub Vec<Var>);

impl Vars {
    /// The parameters as trainable variables on `device`.
    pub fn new(params: &Params, shape: &GnnShape, device: &Device) -> Result<Vars> {
        Ok(Vars(
            params
                .tensors(shape, device)?
                .into_iter()
                .map(|t| Var::from_tensor(&t))
                .collect::<Result<_>>()?,
        ))
    }
    /// The variables' current values as tensors.
    pub fn tensors(&self) -> Vec<Tensor> {
        self.0.iter().map(|v| v.as_tensor().clone()).collect()
    }
    /// The variables' current values, copied out.
    pub fn params(&self) -> Result<Params> {
        Ok(Params(
            self.0
                .iter()
                .map(|v| v.as_tensor().flatten_all()?.to_vec1::<f32>())
                .collect::<Result<_>>()?,
        ))
    }
    /// Overwrites the variables with `params` (same shape).
    pub fn set(&self, params: &Params, shape: &GnnShape) -> Result<()> {
        let device = self.0.first().map_or(Device::Cpu, |v| v.device().clone());
        for (v, t) in self.0.iter().zip(params.tensors(shape, &device)?) {
            v.set(&t)?;
        }
        Ok(())
    }
}

/// An op graph as tensors.
pub struct GraphTensors {
    nodes: usize,
    x: Tensor,
    producers: Tensor,
    consumers: Tensor,
    rows: Tensor,
}

impl GraphTensors {
    /// The graph's features and edges as tensors on `device`, ready for the forward pass.
    pub fn new(g: &OpGraph, device: &Device) -> Result<GraphTensors> {
        let n = g.nodes;
        Ok(GraphTensors {
            nodes: n,
            x: Tensor::from_slice(&g.features, (n, g.width), device)?,
            producers: Tensor::from_slice(&g.from_producers, (n, n), device)?,
            consumers: Tensor::from_slice(&g.from_consumers, (n, n), device)?,
            rows: Tensor::from_slice(&g.decision_rows, g.decision_rows.len(), device)?,
        })
    }
    /// Decisions (output rows).
    pub fn decisions(&self) -> usize {
        self.rows.dims1().unwrap_or(0)
    }
}

/// The network's output: `[decisions, levels]`.
pub fn forward(shape: &GnnShape, p: &[Tensor], g: &GraphTensors) -> Result<Tensor> {
    let mut h = g.x.matmul(&p[0])?.broadcast_add(&p[1])?.relu()?;
    for r in 0..shape.rounds {
        let k = 2 + 4 * r;
        let own = h.matmul(&p[k])?;
        let from_producers = g.producers.matmul(&h)?.matmul(&p[k + 1])?;
        let from_consumers = g.consumers.matmul(&h)?.matmul(&p[k + 2])?;
        let m = (own + from_producers + from_consumers)?
            .broadcast_add(&p[k + 3])?
            .relu()?;
        h = (h + m)?;
    }
    let k = 2 + 4 * shape.rounds;
    let out = h.matmul(&p[k])?.broadcast_add(&p[k + 1])?;
    out.reshape((g.nodes * 2, shape.levels))?
        .index_select(&g.rows, 0)?
        .to_dtype(DType::F32)
}

/// Per decision, the level of the largest output (a GNN policy acting greedily).
pub fn argmax_levels(out: &Tensor) -> Result<Vec<u8>> {
    let rows = out.to_vec2::<f32>()?;
    Ok(rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .fold((0usize, f32::NEG_INFINITY), |best, (i, &v)| {
                    if v > best.1 {
                        (i, v)
                    } else {
                        best
                    }
                })
                .0 as u8
        })
        .collect())
}

/// While alive, candle's CPU matmuls run on the calling thread; the previous setting comes
/// back on drop.
///
/// Why: candle 0.11 splits every matmul over `RAYON_NUM_THREADS` (default: every core)
/// threads, read per call. EGRL's matrices are tiny (a few hundred ops by 32 features) and
/// its threads are already busy scoring mappings: measured on the 2-core machine, a GNN
/// forward took 4.4 ms split and 0.34 ms on one thread, a learner step 64 ms and 6 ms
/// (`cargo run --release -p egrl --example learner_speed`). The variable is process-wide:
/// other candle work in the process meanwhile runs single-threaded too.
pub struct SingleThreadedMatmuls {
    previous: Option<std::ffi::OsString>,
}

const RAYON_THREADS: &str = "RAYON_NUM_THREADS";

impl SingleThreadedMatmuls {
    /// Sets candle's matrix products to one thread until dropped (the previous setting is
    /// then restored).
    pub fn new() -> SingleThreadedMatmuls {
        let previous = std::env::var_os(RAYON_THREADS);
        std::env::set_var(RAYON_THREADS, "1");
        SingleThreadedMatmuls { previous }
    }
}

impl Default for SingleThreadedMatmuls {
    fn default() -> Self {
        SingleThreadedMatmuls::new()
    }
}

impl Drop for SingleThreadedMatmuls {
    fn drop(&mut self) {
        match &self.previous {
            Some(v) => std::env::set_var(RAYON_THREADS, v),
            None => std::env::remove_var(RAYON_THREADS),
        }
    }
}
