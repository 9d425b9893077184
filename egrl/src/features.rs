//! The op graph the GNN reads: a feature row per op and the data-flow edges, as dense
//! mean-aggregation matrices (the graphs here have at most a few thousand ops).
//!
//! Features per op (each column scaled into [-1, 1] over the program):
//! - its kind, hashed into [`KIND_BUCKETS`] one-hot columns;
//! - log FLOPs, log bytes read, log bytes written, log weight bytes (its W buffers);
//! - compute share of its all-slow time, position in the schedule;
//! - live-range length (over the program length) of its W and of its A buffers;
//! - per fast level: the cost-model saving of its W and of its A buffers resident there;
//! - per fast level: its W bytes and A bytes over that level's capacity.

use crate::problem::{Problem, Slot};
use accel_sim::CostModel;

/// One-hot columns of the op kind hash.
pub const KIND_BUCKETS: usize = 8;

/// Features and edges of a problem's op graph.
#[derive(Clone, Debug)]
pub struct OpGraph {
    /// Ops (rows).
    pub nodes: usize,
    /// Columns per row.
    pub width: usize,
    /// `nodes x width`, row-major.
    pub features: Vec<f32>,
    /// `nodes x nodes`: row `i` averages the producers of what op `i` reads.
    pub from_producers: Vec<f32>,
    /// `nodes x nodes`: row `i` averages the consumers of what op `i` writes.
    pub from_consumers: Vec<f32>,
    /// Per decision: its row in the `(nodes * 2) x levels` output (`op * 2 + slot`).
    pub decision_rows: Vec<u32>,
}

/// The number of feature columns for `levels` memory levels.
pub fn feature_width(levels: usize) -> usize {
    KIND_BUCKETS + 8 + 4 * (levels - 1)
}

impl OpGraph {
    /// The op graph of `problem`: each op's feature row (see the module docs) and the
    /// producer and consumer edges between ops.
    pub fn of(problem: &Problem) -> OpGraph {
        let program = problem.program();
        let hw = problem.hardware();
        let cost = CostModel::new(program, hw);
        let n = program.len();
        let levels = problem.levels();
        let width = feature_width(levels);
        let mut features = vec![0f32; n * width];
        let horizon = n.max(1) as f32;
        let mut slot_buffers = vec![[Vec::new(), Vec::new()]; n];
        for d in problem.decisions() {
            slot_buffers[d.op][d.slot as usize] = d.buffers.clone();
        }
        for (t, op) in program.ops().iter().enumerate() {
            let row = &mut features[t * width..(t + 1) * width];
            row[(binio::fnv1a64(op.kind.as_bytes()) % KIND_BUCKETS as u64) as usize] = 1.0;
            let bytes = |bs: &[usize]| bs.iter().map(|&b| program.buffer(b).size).sum::<u64>();
            let log = |x: f64| (1.0 + x).log2() as f32;
            let [w, a] = &slot_buffers[t];
            let mut c = KIND_BUCKETS;
            let elapsed = cost.default_elapsed_s(t);
            let span = |bs: &[usize]| {
                bs.iter()
                    .map(|&b| {
                        let (s, e) = program.live_range(b);
                        (e - s + 1) as f32
                    })
                    .fold(0f32, f32::max)
                    / horizon
            };
            for v in [
                log(op.flops),
                log(bytes(&op.reads) as f64),
                log(bytes(&op.writes) as f64),
                log(bytes(w) as f64),
                if elapsed > 0.0 {
                    (cost.compute_s(t) / elapsed) as f32
                } else {
                    0.0
                },
                t as f32 / horizon,
                span(w),
                span(a),
            ] {
                row[c] = v;
                c += 1;
            }
            for bs in [w, a] {
                for level in 1..levels {
                    row[c] = bs.iter().map(|&b| problem.saving(b, level)).sum::<f64>() as f32;
                    c += 1;
                }
            }
            for bs in [w, a] {
                for level in 1..levels {
                    let cap = hw.levels[level].capacity.max(1) as f64;
                    row[c] = (bytes(bs) as f64 / cap).min(4.0) as f32;
                    c += 1;
                }
            }
        }
        scale_columns(&mut features, n, width);
        let (from_producers, from_consumers) = adjacency(problem);
        let decision_rows = problem
            .decisions()
            .iter()
            .map(|d| (d.op * 2 + if d.slot == Slot::W { 0 } else { 1 }) as u32)
            .collect();
        OpGraph {
            nodes: n,
            width,
            features,
            from_producers,
            from_consumers,
            decision_rows,
        }
    }
}

/// Divides each column by its largest magnitude, so every column lies in [-1, 1].
fn scale_columns(features: &mut [f32], n: usize, width: usize) {
    for c in 0..width {
        let m = (0..n)
            .map(|r| features[r * width + c].abs())
            .fold(0f32, f32::max);
        if m > 0.0 && m.is_finite() {
            for r in 0..n {
                features[r * width + c] /= m;
            }
        }
    }
}

/// Mean-aggregation matrices over the data-flow edges (producer -> consumer).
fn adjacency(problem: &Problem) -> (Vec<f32>, Vec<f32>) {
    let program = problem.program();
    let n = program.len();
    let mut producers = vec![0f32; n * n];
    let mut consumers = vec![0f32; n * n];
    for (t, op) in program.ops().iter().enumerate() {
        for &b in &op.reads {
            if let Some(p) = program.def(b) {
                producers[t * n + p] = 1.0;
                consumers[p * n + t] = 1.0;
            }
        }
    }
    for m in [&mut producers, &mut consumers] {
        for row in m.chunks_mut(n.max(1)) {
            let deg: f32 = row.iter().sum();
            if deg > 0.0 {
                row.iter_mut().for_each(|x| *x /= deg);
            }
        }
    }
    (producers, consumers)
}
