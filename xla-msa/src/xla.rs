//! The `xla` baseline: XLA's memory space assignment (MSA), re-implemented in our timing
//! conventions (accel-sim/src/mapping.rs) and described in docs/xla-msa.md.
//!
//! The pipeline, per fast level (see "Multi-level hardware" below):
//! 1. Order the buffers by ascending `(-memory_boundedness, -size, start - end,
//!    latest_use, start, id)` ([`crate::xla_order`]).
//! 2. For each buffer, walk its uses in time order. Each use closes a *segment* that starts
//!    at the previous use (or the definition). For each segment:
//!    - **no-copy**: if the buffer is already in the fast level (or this is its first
//!      segment and it has a defining op) and the picker allows no-copy over the segment,
//!      extend the chunk at the same offset (for the first segment: best fit, choosing the
//!      offset that is free as far as the latest later use the buffer could also reach
//!      without a copy, as XLA's `FindBestChunkCandidate` does);
//!    - otherwise, if the buffer was defined in the fast level and level 0 has no copy of
//!      it: an **eviction**, issued after the definition, holding the chunk until the
//!      copy is done (extended towards the picker's preferred eviction end where the same
//!      offset is free);
//!    - then a **prefetch** for the use, trying the picker's start times from the
//!      preferred one, alternately later and earlier, the first with a best-fit chunk and
//!      copy budget winning;
//!    - else the use reads level 0.
//!
//!    If an eviction cannot be made, the buffer's pending chunks and copies are undone
//!    and it stays in level 0.
//!
//! Our conventions versus XLA's logical times: XLA's prefetch starting after instruction
//! `t` overlaps the instructions strictly between `t` and the use; ours starts when op `s`
//! begins and overlaps ops `s..u`, so `s = t + 1` and XLA's `interval(t, u)` is
//! `span_s(s, u)`. No-copy over a segment `[p, u]` compares `span_s(p + 1, u)` (the ops
//! strictly between). An eviction issued after the defining op `d` and held until op `E`
//! overlaps ops `d+1..=E` and must be done before op `E + 1`, which reads level 0.
//!
//! Choices where XLA's behaviour is unclear, each as XLA most plausibly makes it (listed in
//! docs/xla-msa.md, "Choices where XLA's behaviour is unclear"):
//! - A prefetch for a use starts no earlier than the op after the previous use (XLA's
//!   segment starts there: `inclusive_start_time`), nor before level 0 holds the data.
//! - Weights and inputs (XLA's entry parameters, defined at the program start) can be
//!   prefetched from op 0; they are never written into a fast level.
//! - A buffer is written into the fast level only by a successful no-copy of its first
//!   segment; if that fails, it is defined in level 0 and its uses may be prefetched.
//! - An eviction is issued right after the definition (XLA's `eviction_start_time` is the
//!   allocation's start). It never fails for space, since its hold up to the last use
//!   served is already reserved; only the copy budget can refuse it
//!   ([`crate::EvictionOverBudget`]).
//! - An output's program end acts as a use that must read level 0.
//! - The picker and the budget use all-level-0 elapsed times (XLA's
//!   `GetInstructionElapsed`); a use's own saving (`red`) assumes everything else of the
//!   op in level 0.
//! - XLA's compile-time shortcut (exploring only a fixed number of earlier starts once the
//!   later ones run out) is left out: every start in the picker's window is tried.
//!
//! Multi-level hardware: XLA has one alternate memory. We run the algorithm with the
//! fastest level as the alternate memory, then (option [`XlaOptions::cascade`], on by
//! default) again for each slower fast level, fastest first, over the uses still read from
//! level 0. A later pass treats the earlier passes' allocations of a buffer as fixed: its
//! own allocations must end before them (with an eviction if level 0 must hold the data
//! when an earlier pass's prefetch starts) and start after them. All passes draw on one
//! copy budget, since every copy moves level-0 bytes. A later pass plans with the op times
//! under the mapping so far ([`crate::CascadeTiming::Current`]): ops that now read a faster level
//! are shorter and hide less copy time, so its picker and budget use those times, with the
//! copies already made replayed into the budget.
//!
//! The code, by concept: the options (options.rs), the buffer order and the levels
//! (order.rs), the op times (timing.rs) and copy budgets (budgets.rs), a buffer's cursor
//! (cursor.rs), a pass and its moves (pass.rs), the prefetch picker's search
//! (prefetch.rs), re-packing (repack.rs), and XLA's choices at a use (walk.rs), which
//! this baseline takes at every use and the mallocGame offers its players.

use crate::budgets::Budgets;
use crate::options::XlaOptions;
use crate::order::{pass_levels, xla_order};
use crate::pass::{mapping_of, Ctx, PassState, XlaPassStats};
use crate::timing::Timing;
use crate::OneShotSolver;
use accel_sim::{Allocation, BufferPlacement, CostModel, Hardware, Mapping, Program};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// A mapping with what each pass did.
#[derive(Clone, Debug)]
pub struct XlaSolution {
    mapping: Mapping,
    /// One per pass, fastest level first.
    passes: Vec<XlaPassStats>,
}

impl XlaSolution {
    /// The mapping: every buffer's allocations, level by level.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }
    /// The mapping, taken out of the solution.
    pub fn into_mapping(self) -> Mapping {
        self.mapping
    }
    /// What each pass did (prefetches, evictions, re-packs), fastest level first.
    pub fn passes(&self) -> &[XlaPassStats] {
        &self.passes
    }
}

/// The `xla` solver.
#[derive(Clone, Debug, Default)]
pub struct Xla {
    options: XlaOptions,
}

impl Xla {
    /// The `xla` solver with `options` (`xla-repack` when they allow re-packs).
    pub fn new(options: XlaOptions) -> Xla {
        Xla { options }
    }

    /// Runs the algorithm; the mapping is valid by construction (the tests check it on
    /// random programs).
    pub fn solve_detailed(&self, program: &Program, hw: &Hardware) -> XlaSolution {
        let cost = CostModel::new(program, hw);
        let ctx = Ctx {
            program,
            hw,
            cost: &cost,
            opts: &self.options,
        };
        let n = program.buffers().len();
        let mut allocs: Vec<Vec<Allocation>> = vec![Vec::new(); n];
        let default_mem = (0..program.len()).map(|t| cost.default_mem_s(t)).collect();
        let default_timing = Arc::new(Timing::new(&cost, default_mem));
        let mut budgets = Budgets::new(&self.options, &default_timing);
        let mut passes = Vec::new();
        for level in pass_levels(&self.options, hw.fastest()) {
            // A level the heap cannot model is skipped: its buffers stay where the other
            // passes put them.
            let Some(mut state) = PassState::start(
                ctx,
                level,
                passes.is_empty(),
                &default_timing,
                || mapping_of(allocs.iter().map(Vec::as_slice)),
                &mut budgets,
            ) else {
                continue;
            };
            let mut pass = ctx.pass_mut(&mut state);
            let mut repacks_left = self.options.max_repacks;
            for b in xla_order(program, &cost, level) {
                let mut new = pass.place_repacking(b, &mut allocs, &mut budgets, &mut repacks_left);
                if !new.is_empty() {
                    allocs[b].append(&mut new);
                    allocs[b].sort_by_key(|a| a.start);
                }
            }
            passes.push(state.stats);
        }
        XlaSolution {
            mapping: Mapping {
                buffers: allocs
                    .into_iter()
                    .map(|allocations| BufferPlacement { allocations })
                    .collect(),
            },
            passes,
        }
    }
}

impl OneShotSolver for Xla {
    fn name(&self) -> &str {
        if self.options.max_repacks > 0 {
            "xla-repack"
        } else {
            "xla"
        }
    }
    fn solve(&self, program: &Program, hw: &Hardware) -> Mapping {
        crate::ensure_valid(program, hw, self.solve_detailed(program, hw).mapping)
    }
}
