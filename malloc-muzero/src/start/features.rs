//! What the learned start's predictor reads about one use of a buffer and one fast level:
//! numbers from the program and the hardware alone, each scaled into `[-1, 1]` by a rule
//! that does not depend on the program's size or the hardware's units (fractions,
//! `x / (1 + x)` of ratios, logarithms over the program's length), so that what the
//! predictor learns on small generated programs reads the same on a model of thousands of
//! ops.
//!
//! A *site* is one use (buffer, op reading it); a *row* is a site and a fast level the
//! buffer fits in. Uses of buffers larger than every fast level have no row: no mapping
//! holds them fast.

use accel_sim::{BufferId, BufferKind, CostModel, Hardware, Mapping, OpId, Program};
use xla_msa::OneShotSolver;

/// The features of a row, in this order (their meaning: [`FEATURE_NAMES`]).
pub const FEATURES: usize = 34;

/// One name per feature, in order.
pub const FEATURE_NAMES: [&str; FEATURES] = [
    "size/capacity",
    "log2(size/capacity)/24",
    "kind=weight",
    "kind=input",
    "kind=activation",
    "kind=output",
    "live ops/ops",
    "ln(1+live ops)/ln(1+ops)",
    "ln(1+uses)/ln(65)",
    "use index/(uses-1)",
    "first use",
    "last use",
    "ln(1+ops since previous access)/ln(1+ops)",
    "hide: span since previous access/copy, x/(1+x)",
    "saving/op time",
    "saving/copy, x/(1+x)",
    "op memory-boundedness mem/(mem+compute)",
    "op time/mean op time, x/(1+x)",
    "size/op bytes",
    "buffer's savings/copy, x/(1+x)",
    "share of uses that save",
    "live bytes/capacity, x/(1+x)",
    "log2(live bytes/capacity)/10",
    "max live bytes within 8 ops/capacity, x/(1+x)",
    "beneficial live bytes/capacity, x/(1+x)",
    "level is the fastest",
    "level read bandwidth/level 0's, x/(1+x)",
    "capacity/peak live bytes, x/(1+x)",
    "xla reads it from this level",
    "xla reads it from a fast level",
    "greedy-size reads it from this level",
    "op/ops",
    "ln(1+ops to next access)/ln(1+ops)",
    "copy/op time, x/(1+x)",
];

/// One use of a buffer: the buffer and the op that reads it.
pub type Site = (BufferId, OpId);

/// Every site of a program and the rows of the fast levels each fits in.
#[derive(Clone, Debug)]
pub struct FeatureTable {
    /// Every use of every buffer, by buffer then op.
    pub sites: Vec<Site>,
    /// Per row: its site (an index into `sites`) and its fast level.
    pub rows: Vec<(usize, usize)>,
    /// `FEATURES` numbers per row, row after row.
    pub values: Vec<f32>,
}

impl FeatureTable {
    /// The features of row `r`.
    pub fn row(&self, r: usize) -> &[f32] {
        &self.values[r * FEATURES..(r + 1) * FEATURES]
    }
}

/// Every site of `program` in buffer order, each buffer's uses once each.
pub fn sites(program: &Program) -> Vec<Site> {
    let mut out = Vec::new();
    for b in 0..program.buffers().len() {
        let mut last = None;
        for &u in program.uses(b) {
            if last != Some(u) {
                out.push((b, u));
                last = Some(u);
            }
        }
    }
    out
}

/// `x / (1 + x)` for `x >= 0`: a ratio of any size into `[0, 1)`.
fn squash(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x / (1.0 + x)
    } else if x == f64::INFINITY {
        1.0
    } else {
        0.0
    }
}

fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(lo, hi)
    }
}

/// What every row of one program on one hardware shares.
struct Context<'a> {
    program: &'a Program,
    hw: &'a Hardware,
    cost: CostModel,
    ops: usize,
    ln_ops: f64,
    mean_op_s: f64,
    live: Vec<u64>,
    peak: u64,
    /// Per fast level (index `level - 1`): bytes live at each op among buffers XLA finds
    /// memory-bound there.
    beneficial: Vec<Vec<u64>>,
    xla: Mapping,
    greedy_size: Mapping,
}

impl<'a> Context<'a> {
    fn new(program: &'a Program, hw: &'a Hardware) -> Context<'a> {
        let cost = CostModel::new(program, hw);
        let ops = program.len();
        let live = program.live_bytes();
        let peak = live.iter().copied().max().unwrap_or(0);
        let beneficial = (1..hw.levels.len())
            .map(|l| beneficial_live(program, &cost, l))
            .collect();
        Context {
            program,
            hw,
            mean_op_s: cost.all_slow_latency() / ops.max(1) as f64,
            cost,
            ops,
            ln_ops: (1.0 + ops as f64).ln(),
            live,
            peak,
            beneficial,
            xla: xla_msa::Xla::default().solve(program, hw),
            greedy_size: xla_msa::GreedySize.solve(program, hw),
        }
    }

    /// The features of `b`'s `i`-th use (of `uses`) in `level`, into `out`.
    fn row(&self, b: BufferId, uses: &[OpId], i: usize, level: usize, out: &mut Vec<f32>) {
        let (p, cost, hw) = (self.program, &self.cost, self.hw);
        let buf = p.buffer(b);
        let u = uses[i];
        let cap = hw.levels[level].capacity as f64;
        let size = buf.size as f64;
        let (start, end) = p.live_range(b);
        let live_ops = (end - start + 1) as f64;
        let ln1 = |x: f64| (1.0 + x.max(0.0)).ln();
        // The access before this use: the previous use, else the definition, else none
        // (a weight or input sits in level 0 from the start).
        let prev = if i > 0 { Some(uses[i - 1]) } else { p.def(b) };
        let since = prev.map_or(u + 1, |q| u - q);
        let hide_from = prev.map_or(0, |q| q + 1);
        let next = uses.get(i + 1).copied().unwrap_or(end);
        let copy = cost.copy_s(b, level);
        let saving = cost.use_saving_s(b, level, u);
        let elapsed = cost.default_elapsed_s(u);
        let (mem, compute) = (cost.default_mem_s(u), cost.compute_s(u));
        let savings: Vec<f64> = uses
            .iter()
            .map(|&v| cost.use_saving_s(b, level, v))
            .collect();
        let total_saving: f64 = savings.iter().sum();
        let saving_uses = savings.iter().filter(|&&s| s > 0.0).count();
        let lo = u.saturating_sub(8);
        let hi = (u + 8).min(self.ops - 1);
        let window = self.live[lo..=hi].iter().copied().max().unwrap_or(0) as f64;
        let live = self.live[u] as f64;
        let kind = buf.kind;
        let reads = |m: &Mapping| m.buffers[b].read_level(u);
        let flag = |x: bool| if x { 1.0 } else { 0.0 };
        let values = [
            clamp(size / cap, 0.0, 1.0),
            clamp((size / cap).log2() / 24.0, -1.0, 0.0),
            flag(kind == BufferKind::Weight),
            flag(kind == BufferKind::Input),
            flag(kind == BufferKind::Activation),
            flag(kind == BufferKind::Output),
            clamp(live_ops / self.ops as f64, 0.0, 1.0),
            clamp(ln1(live_ops) / self.ln_ops, 0.0, 1.0),
            clamp(ln1(uses.len() as f64) / 65f64.ln(), 0.0, 1.0),
            if uses.len() > 1 {
                i as f64 / (uses.len() - 1) as f64
            } else {
                0.0
            },
            flag(i == 0),
            flag(i + 1 == uses.len()),
            clamp(ln1(since as f64) / self.ln_ops, 0.0, 1.0),
            squash(cost.span_s(hide_from, u) / copy),
            clamp(saving / elapsed, 0.0, 1.0),
            squash(saving / copy),
            clamp(mem / (mem + compute), 0.0, 1.0),
            squash(elapsed / self.mean_op_s),
            clamp(size / p.op_bytes(u).max(1) as f64, 0.0, 1.0),
            squash(total_saving / copy),
            saving_uses as f64 / uses.len() as f64,
            squash(live / cap),
            clamp((live.max(1.0) / cap).log2() / 10.0, -1.0, 1.0),
            squash(window / cap),
            squash(self.beneficial[level - 1][u] as f64 / cap),
            flag(level == hw.fastest()),
            squash(hw.levels[level].read_bw / hw.levels[0].read_bw),
            squash(cap / self.peak.max(1) as f64),
            flag(reads(&self.xla) == level),
            flag(reads(&self.xla) != 0),
            flag(reads(&self.greedy_size) == level),
            clamp(u as f64 / self.ops as f64, 0.0, 1.0),
            clamp(ln1(next.saturating_sub(u) as f64) / self.ln_ops, 0.0, 1.0),
            squash(copy / elapsed),
        ];
        out.extend(values.iter().map(|&v| v as f32));
    }
}

/// Bytes live at each op among the buffers XLA finds memory-bound in `level`.
fn beneficial_live(program: &Program, cost: &CostModel, level: usize) -> Vec<u64> {
    let t = program.len();
    let mut diff = vec![0i128; t + 1];
    for (b, buf) in program.buffers().iter().enumerate() {
        if cost.memory_boundedness(b, level) > 0.0 {
            let (s, e) = program.live_range(b);
            diff[s] += buf.size as i128;
            diff[e + 1] -= buf.size as i128;
        }
    }
    let mut acc = 0i128;
    diff[..t]
        .iter()
        .map(|d| {
            acc += d;
            acc.max(0) as u64
        })
        .collect()
}

/// The features of every row of `program` on `hw`.
pub fn features(program: &Program, hw: &Hardware) -> FeatureTable {
    let ctx = Context::new(program, hw);
    let sites = sites(program);
    let mut rows = Vec::new();
    let mut values = Vec::new();
    let mut i = 0;
    while i < sites.len() {
        let b = sites[i].0;
        let first = i;
        while i < sites.len() && sites[i].0 == b {
            i += 1;
        }
        let uses: Vec<OpId> = sites[first..i].iter().map(|&(_, u)| u).collect();
        for level in 1..hw.levels.len() {
            if program.buffer(b).size > hw.levels[level].capacity {
                continue;
            }
            for k in 0..uses.len() {
                rows.push((first + k, level));
                ctx.row(b, &uses, k, level, &mut values);
            }
        }
    }
    FeatureTable {
        sites,
        rows,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every feature of every row is finite and in `[-1, 1]` on every suite case: what
    /// the predictor reads never leaves the range it was trained on by scale alone.
    #[test]
    fn features_are_finite_and_in_range_on_every_suite_case() {
        for case in bench_workloads::suite::cases() {
            let program = bench_workloads::load(case.workload).unwrap();
            let hw = case.hardware();
            let table = features(&program, &hw);
            assert!(!table.rows.is_empty(), "{}", case.workload);
            assert_eq!(table.values.len(), table.rows.len() * FEATURES);
            for r in 0..table.rows.len() {
                for (f, &v) in table.row(r).iter().enumerate() {
                    assert!(
                        v.is_finite() && (-1.0..=1.0).contains(&v),
                        "{} on {}: row {r} feature `{}` is {v}",
                        case.workload,
                        case.hardware,
                        FEATURE_NAMES[f]
                    );
                }
            }
            // Each row's site is a use that fits the row's level.
            for &(s, level) in &table.rows {
                let (b, u) = table.sites[s];
                assert!(program.uses(b).contains(&u));
                assert!(program.buffer(b).size <= hw.levels[level].capacity);
            }
        }
    }
}
