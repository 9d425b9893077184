//! The cost model's running latency of a game's mapping so far (`P(t)`), the proxy
//! reward's measure and the planners' tie-breaker.

use accel_sim::{Allocation, BufferId, CostModel, OpId};

/// The cost model's running totals over persistent vectors (the arithmetic of
/// [`accel_sim::CostTally`], through [`CostModel::delta_in`] and [`CostModel::apply_in`]),
/// so a game state clones in `O(1)`.
#[derive(Clone, Debug)]
pub(super) struct Tally {
    mem: MemStore,
    copy: imbl::Vector<f64>,
    total: f64,
}

/// Per-op memory times.
#[derive(Clone, Debug)]
struct MemStore(imbl::Vector<f64>);

impl accel_sim::MemTimes for MemStore {
    fn mem_s(&self, t: OpId) -> f64 {
        self.0[t]
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        self.0.set(t, v);
    }
}

impl Tally {
    pub(super) fn new(model: &CostModel, buffers: usize) -> Tally {
        Tally {
            mem: MemStore((0..model.len()).map(|t| model.default_mem_s(t)).collect()),
            copy: (0..buffers).map(|_| 0.0).collect(),
            total: model.all_slow_latency(),
        }
    }
    pub(super) fn latency(&self) -> f64 {
        self.total
    }
    pub(super) fn delta(
        &self,
        model: &CostModel,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) -> f64 {
        model.delta_in(|t| self.mem.0[t], self.copy[b], b, old, new)
    }
    pub(super) fn apply(
        &mut self,
        model: &CostModel,
        b: BufferId,
        old: &[Allocation],
        new: &[Allocation],
    ) {
        let mut copy = self.copy[b];
        model.apply_in(&mut self.mem, &mut self.total, &mut copy, b, old, new);
        self.copy.set(b, copy);
    }
}
