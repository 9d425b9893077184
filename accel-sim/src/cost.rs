//! The analytic cost model, after XLA's cost analysis (docs/simulator.md, "The analytic cost
//! model").
//!
//! For op `i` with its operands and results placed in levels:
//! - `compute(i) = flops(i) / peak_flops`
//! - `mem(i) = sum over operands and results of bytes / bw(level)` (read bandwidth for
//!   operands, write bandwidth for results): XLA's formula generalised to N levels.
//! - `elapsed(i) = max(compute(i), mem(i))` (XLA's pipeline overhead term is 0).
//!
//! The latency of a mapping is the sum of `elapsed(i)` plus the *exposed* time of each copy:
//! `max(0, copy_seconds - overlap)`, where `overlap` is the all-level-0 elapsed time of the
//! ops the copy runs beside (ops `start..first_use` for a prefetch, `e+1..=end` for an
//! eviction). Copies do not compete for bandwidth here: that contention, per-op overheads
//! and DMA setup are the simulator's job. Keeping the cost additive per buffer is what
//! makes [`CostState::delta`] cheap.
//!
//! [`CostModel::relaxation`] is the same form with the simulator's constants, built to be
//! a proven lower bound on the simulated latency of every valid mapping (docs/exact.md,
//! "A lower bound on the simulated latency"): each op also pays the per-op overhead, a
//! copy also pays the DMA setup, and the time a copy can hide behind op `i` is at most
//! `max(compute(i), fast(i)) + overhead`, where `fast(i)` is op `i`'s traffic with every
//! access in the slowest fast level: what level 0 can be idle for during op `i` under any
//! mapping.

use crate::hardware::Hardware;
use crate::mapping::{Allocation, Arrival, BufferPlacement, Mapping};
use crate::program::{BufferId, OpId, Program, UseLists};

/// Which of the simulator's charges [`CostModel::tightened`] adds to XLA's cost model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tightenings {
    /// Each op also pays the per-op overhead (and copies can hide behind it).
    pub op_overhead: bool,
    /// Each copy also pays the DMA setup, shared by the engines.
    pub copy_setup: bool,
    /// Behind op `i` a copy hides at most `max(compute(i), fast(i))`, not op `i`'s
    /// all-level-0 time: level 0 is busy serving op `i` for the rest.
    pub hide_cap: bool,
}

impl Tightenings {
    /// XLA's view: none.
    pub const NONE: Tightenings = Tightenings {
        op_overhead: false,
        copy_setup: false,
        hide_cap: false,
    };
    /// The relaxation: all.
    pub const ALL: Tightenings = Tightenings {
        op_overhead: true,
        copy_setup: true,
        hide_cap: true,
    };
}

/// Per-(program, hardware) constants of the cost model.
#[derive(Clone, Debug)]
pub struct CostModel {
    compute: Vec<f64>,
    default_mem: Vec<f64>,
    default_elapsed: Vec<f64>,
    /// `cum[t]` = sum of `default_elapsed[..t]`.
    cum: Vec<f64>,
    /// `hide_cum[t]` = the copy time ops `..t` can hide, summed: `cum` in XLA's view.
    hide_cum: Vec<f64>,
    /// Per-op overhead, seconds (0 in XLA's view).
    overhead: f64,
    /// Added to every copy's time, seconds (0 in XLA's view).
    copy_setup: f64,
    inv_read: Vec<f64>,
    inv_write: Vec<f64>,
    copy_bw: Vec<f64>,
    size: Vec<f64>,
    def: Vec<Option<OpId>>,
    uses: UseLists,
}

impl CostModel {
    /// The cost model of `program` on `hw`: each op's compute time and the per-byte read
    /// and write times of every level, worked out once so a mapping's latency is sums.
    pub fn new(program: &Program, hw: &Hardware) -> CostModel {
        let inv_read: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.read_bw).collect();
        let inv_write: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.write_bw).collect();
        let t_count = program.len();
        let mut compute = Vec::with_capacity(t_count);
        let mut default_mem = Vec::with_capacity(t_count);
        for op in program.ops() {
            compute.push(op.flops / hw.peak_flops);
            let r: u64 = op.reads.iter().map(|&b| program.buffer(b).size).sum();
            let w: u64 = op.writes.iter().map(|&b| program.buffer(b).size).sum();
            default_mem.push(r as f64 * inv_read[0] + w as f64 * inv_write[0]);
        }
        let default_elapsed: Vec<f64> = compute
            .iter()
            .zip(&default_mem)
            .map(|(c, m)| c.max(*m))
            .collect();
        let mut cum = Vec::with_capacity(t_count + 1);
        cum.push(0.0);
        for e in &default_elapsed {
            cum.push(cum.last().unwrap() + e);
        }
        let n = program.buffers().len();
        CostModel {
            compute,
            default_mem,
            default_elapsed,
            hide_cum: cum.clone(),
            cum,
            overhead: 0.0,
            copy_setup: 0.0,
            inv_read,
            inv_write,
            copy_bw: (0..hw.levels.len())
                .map(|l| if l == 0 { f64::INFINITY } else { hw.copy_bw(l) })
                .collect(),
            size: program.buffers().iter().map(|b| b.size as f64).collect(),
            def: (0..n).map(|b| program.def(b)).collect(),
            uses: UseLists::new(program),
        }
    }

    /// The simulator's relaxation (see the module docs): its latency of a valid mapping is
    /// at most the simulated one. Solvers that minimise it (the exact solver) prove lower
    /// bounds on the simulated latency; XLA's choices use [`CostModel::new`].
    pub fn relaxation(program: &Program, hw: &Hardware) -> CostModel {
        CostModel::tightened(program, hw, Tightenings::ALL)
    }

    /// XLA's cost model with some of the simulator's charges added ([`Tightenings`]):
    /// [`CostModel::new`] with none, [`CostModel::relaxation`] with all. Each partial one
    /// is at most the simulated latency where no fast level is slower than level 0 (the
    /// cost model's own condition) or where `hide_cap` is on; it exists to measure each
    /// charge's share of the bound (docs/exact.md).
    pub fn tightened(program: &Program, hw: &Hardware, with: Tightenings) -> CostModel {
        let mut m = CostModel::new(program, hw);
        if with.op_overhead {
            m.overhead = hw.op_overhead_s;
        }
        if with.copy_setup {
            m.copy_setup = hw.dma.setup_s / hw.dma.engines as f64;
        }
        if !with.hide_cap {
            let mut hidden = 0.0;
            for (t, e) in m.default_elapsed.iter().enumerate() {
                hidden += e + m.overhead;
                m.hide_cum[t + 1] = hidden;
            }
            return m;
        }
        let fast = 1..hw.levels.len();
        let slowest = |bw: fn(&crate::hardware::MemoryLevel) -> f64| {
            fast.clone()
                .map(|l| bw(&hw.levels[l]))
                .fold(f64::INFINITY, f64::min)
        };
        let (read_bw, write_bw) = (slowest(|l| l.read_bw), slowest(|l| l.write_bw));
        let mut hidden = 0.0;
        m.hide_cum.clear();
        m.hide_cum.push(0.0);
        for (t, op) in program.ops().iter().enumerate() {
            let r: u64 = op.reads.iter().map(|&b| program.buffer(b).size).sum();
            let w: u64 = op.writes.iter().map(|&b| program.buffer(b).size).sum();
            // With no fast level, nothing is ever copied: the term is never read.
            let fast_mem = if fast.is_empty() {
                0.0
            } else {
                r as f64 / read_bw + w as f64 / write_bw
            };
            hidden += m.compute[t].max(fast_mem) + m.overhead;
            m.hide_cum.push(hidden);
        }
        m
    }

    /// The ops that read buffer `b`, in order.
    fn uses_of(&self, b: BufferId) -> &[OpId] {
        self.uses.of(b)
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.compute.len()
    }
    /// Always false for a model of a program (a program has an op).
    pub fn is_empty(&self) -> bool {
        self.compute.is_empty()
    }
    /// `flops / peak`, seconds.
    pub fn compute_s(&self, t: OpId) -> f64 {
        self.compute[t]
    }
    /// Memory time of op `t` with everything in level 0.
    pub fn default_mem_s(&self, t: OpId) -> f64 {
        self.default_mem[t]
    }
    /// `elapsed(t)` with everything in level 0.
    pub fn default_elapsed_s(&self, t: OpId) -> f64 {
        self.default_elapsed[t]
    }
    /// The copy time ops `s..e` (half-open) can hide, seconds: their all-level-0 elapsed
    /// time in XLA's view.
    pub fn span_s(&self, s: OpId, e: OpId) -> f64 {
        if e <= s {
            0.0
        } else {
            self.hide_cum[e] - self.hide_cum[s]
        }
    }
    /// Latency with everything in level 0.
    pub fn all_slow_latency(&self) -> f64 {
        self.cum.last().unwrap() + self.overhead * self.len() as f64
    }
    /// Seconds to copy buffer `b` between level 0 and `level`.
    pub fn copy_s(&self, b: BufferId, level: usize) -> f64 {
        self.size[b] / self.copy_bw[level] + self.copy_setup
    }
    /// The change of op `t`'s memory time if buffer `b`'s access there moves from level
    /// `from` to level `to`.
    pub fn mem_shift(&self, b: BufferId, write: bool, from: usize, to: usize) -> f64 {
        let inv = if write {
            &self.inv_write
        } else {
            &self.inv_read
        };
        self.size[b] * (inv[to] - inv[from])
    }

    /// What op `u` saves by reading buffer `b` from `level` instead of level 0, with every
    /// other access in level 0 (XLA's `inst_elapsed_reduction`).
    pub fn use_saving_s(&self, b: BufferId, level: usize, u: OpId) -> f64 {
        let c = self.compute[u];
        c.max(self.default_mem[u]) - c.max(self.default_mem[u] + self.mem_shift(b, false, 0, level))
    }

    /// XLA's `memory_boundedness` of a buffer placed in `level` (docs/xla-msa.md, "Cost
    /// analysis"): the benefit of its defining op and uses, combined, divided by sqrt(size).
    pub fn memory_boundedness(&self, b: BufferId, level: usize) -> f64 {
        let benefit = |t: OpId, write: bool| {
            let mem0 = self.default_mem[t];
            let c = self.compute[t];
            if mem0 > c {
                let alt = c.max(mem0 + self.mem_shift(b, write, 0, level));
                mem0 - alt
            } else {
                mem0 - c
            }
        };
        // A weight or input is defined by XLA's parameter instruction, which moves no
        // bytes and computes nothing: its benefit is 0.
        let mut acc = self.def[b].map_or(0.0, |d| benefit(d, true));
        for &u in self.uses_of(b) {
            let ub = benefit(u, false);
            acc = if acc > 0.0 && ub > 0.0 {
                acc + ub
            } else {
                acc.max(ub)
            };
        }
        acc / self.size[b].sqrt()
    }

    /// Exposed copy time of one buffer's placement (see the module docs).
    pub fn copy_cost(&self, b: BufferId, allocations: &[Allocation]) -> f64 {
        let mut cost = 0.0;
        for a in allocations {
            match a.arrival {
                Arrival::Prefetch => {
                    let uses = self.uses_of(b);
                    let first = uses
                        .get(uses.partition_point(|&u| u < a.start))
                        .copied()
                        .unwrap_or(a.start);
                    cost += (self.copy_s(b, a.level) - self.span_s(a.start, first)).max(0.0);
                }
                Arrival::Defined => {
                    if let Some(e) = a.eviction {
                        cost += (self.copy_s(b, a.level) - self.span_s(e + 1, a.end + 1)).max(0.0);
                    }
                }
            }
        }
        cost
    }

    /// The cost-model latency of a whole mapping, evaluated from scratch (what
    /// [`CostState::from_mapping`] reaches, without copying the placements).
    pub fn latency(&self, mapping: &Mapping) -> f64 {
        let mut tally = CostTally::new(self);
        for (b, p) in mapping.buffers.iter().enumerate() {
            if !p.allocations.is_empty() {
                tally.apply(self, b, &[], &p.allocations);
            }
        }
        tally.latency()
    }

    /// Visits each op touching `b` whose level changes from `old` to `new`, with the
    /// memory-time shift, in op order. `O(uses + allocations)` for valid placements.
    #[inline]
    pub fn for_each_shift(
        &self,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
        mut f: impl FnMut(OpId, f64),
    ) {
        if let Some(d) = self.def[b] {
            let (lo, ln) = (write_level(old), write_level(new));
            if lo != ln {
                f(d, self.mem_shift(b, true, lo, ln));
            }
        }
        let (mut old_at, mut new_at) = (Levels::new(old), Levels::new(new));
        for &u in self.uses_of(b) {
            let (lo, ln) = (old_at.at(u), new_at.at(u));
            if lo != ln {
                f(u, self.mem_shift(b, false, lo, ln));
            }
        }
    }

    /// The latency change if buffer `b`'s allocations went from `old` to `new`, given the
    /// per-op memory times `mem_s` and `b`'s current exposed copy time `copy_now`, without
    /// applying it: [`CostTally::delta`] over any store of memory times.
    pub fn delta_in(
        &self,
        mem_s: impl Fn(OpId) -> f64,
        copy_now: f64,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) -> f64 {
        let mut d = self.copy_cost(b, new) - copy_now;
        // An op appears at most once per buffer: programs forbid reading and writing one
        // buffer in the same op.
        self.for_each_shift(b, old, new, |t, shift| {
            let c = self.compute[t];
            let m = mem_s(t);
            d += c.max(m + shift) - c.max(m);
        });
        d
    }

    /// Moves buffer `b` from `old` to `new` in `mem`, the latency `total` and `b`'s
    /// exposed copy time `copy`; returns the latency change: [`CostTally::apply`] over
    /// any store of memory times, with the same arithmetic in the same order.
    pub fn apply_in(
        &self,
        mem: &mut impl MemTimes,
        total: &mut f64,
        copy: &mut f64,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) -> f64 {
        let before = *total;
        self.for_each_shift(b, old, new, |t, s| {
            let c = self.compute[t];
            let m = mem.mem_s(t);
            let was = c.max(m);
            let now = m + s;
            mem.set_mem_s(t, now);
            *total += c.max(now) - was;
        });
        let c = self.copy_cost(b, new);
        *total += c - *copy;
        *copy = c;
        *total - before
    }
}

/// Per-op memory times, as a cost tally keeps them: a plain vector in [`CostTally`], or
/// another store (a beam search keeps persistent ones) that shares the tally's arithmetic
/// through [`CostModel::delta_in`] and [`CostModel::apply_in`].
pub trait MemTimes {
    /// Memory time of op `t`, seconds.
    fn mem_s(&self, t: OpId) -> f64;
    /// Sets the memory time of op `t`, seconds.
    fn set_mem_s(&mut self, t: OpId, v: f64);
}

impl MemTimes for Vec<f64> {
    fn mem_s(&self, t: OpId) -> f64 {
        self[t]
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        self[t] = v;
    }
}

/// The level of each op of an ascending sequence in one placement's allocations: a
/// cursor over a valid placement (sorted by start, disjoint holds), a scan otherwise.
pub(crate) struct Levels<'a> {
    allocations: &'a [Allocation],
    next: usize,
    sorted: bool,
}

impl<'a> Levels<'a> {
    pub(crate) fn new(allocations: &'a [Allocation]) -> Levels<'a> {
        Levels {
            allocations,
            next: 0,
            sorted: allocations.windows(2).all(|w| w[0].end < w[1].start),
        }
    }
    pub(crate) fn at(&mut self, t: OpId) -> usize {
        if !self.sorted {
            return read_level(self.allocations, t);
        }
        while self.allocations.get(self.next).is_some_and(|a| a.end < t) {
            self.next += 1;
        }
        match self.allocations.get(self.next) {
            Some(a) if a.start <= t => a.level,
            _ => 0,
        }
    }
}

/// The cost model's running totals, without the model or the placements: per-op memory
/// time, per-buffer exposed copy time and the latency. Cheap to clone (two `f64` vectors),
/// so game states and searches can own one; the caller supplies each buffer's old and new
/// allocations.
#[derive(Clone, Debug, PartialEq)]
pub struct CostTally {
    mem: Vec<f64>,
    copy: Vec<f64>,
    total: f64,
}

impl CostTally {
    /// Everything in level 0.
    pub fn new(model: &CostModel) -> CostTally {
        CostTally {
            mem: model.default_mem.clone(),
            copy: vec![0.0; model.size.len()],
            total: model.all_slow_latency(),
        }
    }
    /// The current cost-model latency, seconds.
    pub fn latency(&self) -> f64 {
        self.total
    }
    /// Current memory time of op `t`.
    pub fn mem_s(&self, t: OpId) -> f64 {
        self.mem[t]
    }

    /// The latency change if buffer `b`'s allocations went from `old` (its current ones)
    /// to `new`, without applying it.
    pub fn delta(
        &self,
        model: &CostModel,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) -> f64 {
        model.delta_in(|t| self.mem[t], self.copy[b], b, old, new)
    }

    /// Moves buffer `b` from `old` to `new`; returns the latency change.
    pub fn apply(
        &mut self,
        model: &CostModel,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) -> f64 {
        model.apply_in(
            &mut self.mem,
            &mut self.total,
            &mut self.copy[b],
            b,
            old,
            new,
        )
    }
}

/// The level op `t` reads a buffer with these allocations from.
#[inline]
pub fn read_level(allocations: &[Allocation], t: OpId) -> usize {
    allocations
        .iter()
        .find(|a| a.start <= t && t <= a.end)
        .map_or(0, |a| a.level)
}

/// The level a buffer's defining op writes to.
#[inline]
pub fn write_level(allocations: &[Allocation]) -> usize {
    match allocations.first() {
        Some(a) if a.arrival == Arrival::Defined => a.level,
        _ => 0,
    }
}

/// A mapping being built together with its cost-model latency: the convenient form of
/// [`CostTally`] for solvers that change one buffer at a time.
#[derive(Clone, Debug)]
pub struct CostState<'m> {
    model: &'m CostModel,
    tally: CostTally,
    placements: Vec<BufferPlacement>,
}

impl<'m> CostState<'m> {
    /// Everything in level 0.
    pub fn new(model: &'m CostModel) -> CostState<'m> {
        CostState {
            model,
            tally: CostTally::new(model),
            placements: vec![BufferPlacement::default(); model.size.len()],
        }
    }

    /// The cost state of `mapping`: every buffer's placement applied in turn.
    pub fn from_mapping(model: &'m CostModel, mapping: &Mapping) -> CostState<'m> {
        let mut s = CostState::new(model);
        for (b, p) in mapping.buffers.iter().enumerate() {
            if !p.allocations.is_empty() {
                s.apply(b, p.clone());
            }
        }
        s
    }

    /// The current cost-model latency, seconds.
    pub fn latency(&self) -> f64 {
        self.tally.latency()
    }
    /// Buffer `b`'s placement now (no allocation: it lives in level 0).
    pub fn placement(&self, b: BufferId) -> &BufferPlacement {
        &self.placements[b]
    }
    /// The current mapping.
    pub fn mapping(&self) -> Mapping {
        Mapping {
            buffers: self.placements.clone(),
        }
    }
    /// Current memory time of op `t`.
    pub fn mem_s(&self, t: OpId) -> f64 {
        self.tally.mem_s(t)
    }

    /// The latency change if buffer `b`'s placement became `new`, without applying it.
    pub fn delta(&self, b: BufferId, new: &BufferPlacement) -> f64 {
        self.tally.delta(
            self.model,
            b,
            &self.placements[b].allocations,
            &new.allocations,
        )
    }

    /// Replaces buffer `b`'s placement; returns the latency change.
    pub fn apply(&mut self, b: BufferId, new: BufferPlacement) -> f64 {
        let d = self.tally.apply(
            self.model,
            b,
            &self.placements[b].allocations,
            &new.allocations,
        );
        self.placements[b] = new;
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Buffer, BufferKind, Op};

    /// One op reading x (1 MB) and writing y (1 MB), no flops: memory-bound.
    fn tiny() -> (Program, Hardware) {
        let p = Program::new(
            "t",
            "",
            vec![
                Buffer {
                    name: "x".into(),
                    size: 1_000_000,
                    kind: BufferKind::Input,
                },
                Buffer {
                    name: "y".into(),
                    size: 1_000_000,
                    kind: BufferKind::Activation,
                },
                Buffer {
                    name: "z".into(),
                    size: 1_000_000,
                    kind: BufferKind::Output,
                },
            ],
            vec![
                Op {
                    name: "a".into(),
                    kind: "t".into(),
                    flops: 0.0,
                    reads: vec![0],
                    writes: vec![1],
                },
                Op {
                    name: "b".into(),
                    kind: "t".into(),
                    flops: 0.0,
                    reads: vec![1],
                    writes: vec![2],
                },
            ],
        )
        .unwrap();
        let mut hw = Hardware::tpu_v4i_like();
        hw.levels[0].read_bw = 1e9;
        hw.levels[0].write_bw = 1e9;
        hw.levels[1].read_bw = 4e9;
        hw.levels[1].write_bw = 4e9;
        (p, hw)
    }

    #[test]
    fn hand_computed_latencies() {
        let (p, hw) = tiny();
        let m = CostModel::new(&p, &hw);
        // all slow: each op moves 2 MB at 1 GB/s = 2 ms.
        assert!((m.all_slow_latency() - 4e-3).abs() < 1e-12);
        let mut s = CostState::new(&m);
        let y_fast = BufferPlacement {
            allocations: vec![Allocation {
                level: 1,
                offset: 0,
                start: 0,
                end: 1,
                arrival: Arrival::Defined,
                eviction: None,
            }],
        };
        // y in fast: op a = 1 ms + 0.25 ms, op b = 0.25 ms + 1 ms: saves 1.5 ms.
        let d = s.delta(1, &y_fast);
        assert!((d + 1.5e-3).abs() < 1e-12, "{d}");
        assert!((s.apply(1, y_fast) - d).abs() < 1e-15);
        assert!((s.latency() - 2.5e-3).abs() < 1e-12);
        // prefetch x at op 0 for use at op 0: the copy (1 ms) is fully exposed; the read
        // saves 0.75 ms, so the net is +0.25 ms.
        let x_pref = BufferPlacement {
            allocations: vec![Allocation {
                level: 1,
                offset: 0,
                start: 0,
                end: 0,
                arrival: Arrival::Prefetch,
                eviction: None,
            }],
        };
        let d = s.delta(0, &x_pref);
        assert!((d - 0.25e-3).abs() < 1e-12, "{d}");
        // From scratch agrees with the incremental state.
        s.apply(0, x_pref);
        assert!((m.latency(&s.mapping()) - s.latency()).abs() < 1e-15);
        assert!(m.memory_boundedness(1, 1) > 0.0);
    }

    /// No tightening is XLA's view, all of them the relaxation, and each raises the
    /// latency of a mapping whose copy XLA's view hides entirely.
    #[test]
    fn each_tightening_raises_the_latency_and_none_is_xlas_view() {
        let (p, mut hw) = tiny();
        hw.op_overhead_s = 1e-5;
        hw.dma.setup_s = 2e-5;
        // y written fast by op 0, read fast by op 1, its eviction issued after op 0: the
        // copy (1 ms) runs beside op 1, whose all-level-0 time (2 ms) hides it in XLA's
        // view, and whose fast traffic (0.5 ms) is all level 0 can be idle for.
        let mut mapping = Mapping::all_slow(&p);
        mapping.buffers[1].allocations.push(Allocation {
            level: 1,
            offset: 0,
            start: 0,
            end: 1,
            arrival: Arrival::Defined,
            eviction: Some(0),
        });
        let latency = |t: Tightenings| CostModel::tightened(&p, &hw, t).latency(&mapping);
        assert_eq!(
            latency(Tightenings::NONE),
            CostModel::new(&p, &hw).latency(&mapping)
        );
        assert_eq!(
            latency(Tightenings::ALL),
            CostModel::relaxation(&p, &hw).latency(&mapping)
        );
        let none = latency(Tightenings::NONE);
        let overhead = Tightenings {
            op_overhead: true,
            ..Tightenings::NONE
        };
        let cap = Tightenings {
            hide_cap: true,
            ..Tightenings::NONE
        };
        let cap_setup = Tightenings {
            copy_setup: true,
            ..cap
        };
        assert!((latency(overhead) - none - 2e-5).abs() < 1e-12);
        assert!(latency(cap) > none + 0.4e-3, "{} {none}", latency(cap));
        // The setup shows once the copy is exposed.
        assert!(latency(cap_setup) > latency(cap));
        assert!(latency(Tightenings::ALL) > latency(cap_setup));
    }
}
