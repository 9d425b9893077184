//! The op times a pass plans with.

use accel_sim::{CostModel, OpId};

/// Per-op times a pass plans with: the op's memory time under the mapping so far, its
/// elapsed time `max(compute, mem)` and their prefix sums.
#[derive(Debug)]
pub(crate) struct Timing {
    pub(crate) mem: Vec<f64>,
    pub(crate) elapsed: Vec<f64>,
    /// `cum[t]` = elapsed time of ops `0..t`.
    cum: Vec<f64>,
}

impl Timing {
    pub(crate) fn new(cost: &CostModel, mem: Vec<f64>) -> Timing {
        let elapsed: Vec<f64> = mem
            .iter()
            .enumerate()
            .map(|(t, &m)| cost.compute_s(t).max(m))
            .collect();
        let mut cum = Vec::with_capacity(elapsed.len() + 1);
        cum.push(0.0);
        for e in &elapsed {
            cum.push(cum.last().copied().unwrap_or(0.0) + e);
        }
        Timing { mem, elapsed, cum }
    }
    /// Elapsed time of ops `s..e` (half-open).
    pub(crate) fn span(&self, s: OpId, e: OpId) -> f64 {
        if e <= s {
            0.0
        } else {
            self.cum[e] - self.cum[s]
        }
    }
}
