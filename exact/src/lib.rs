//! exact: a proven lower bound on the latency of every mapping of a program, and the best
//! mapping the proof found, from a mixed-integer program over the mapping's decisions.
//!
//! The program (docs/exact.md): for each buffer,
//! level 0 or one of its candidate holds per fast level (defined there, or prefetched, each
//! with its interval), an offset for each hold, time x address non-overlap by disjunctive
//! constraints, capacity, and each op's latency `max(compute, memory traffic)` made linear
//! with one variable per op; it minimises the objective's model. Solved through `good_lp`
//! by the pure-Rust microlp (every build) or by HiGHS with the opt-in feature `highs`
//! (built from source with cmake and libclang). Both take the time limit, a gap tolerance
//! and a starting solution, and both report a proven bound when the limit stops them;
//! HiGHS reaches far further within one (docs/exact.md). [`BACKEND`] names the
//! one this build uses.
//!
//! - [`solve`]: the optimum (or the best mapping found and a proven lower bound) within
//!   an [`ExactConfig`]'s time limit and gap tolerance, as an [`ExactSolution`].
//! - [`Exact`]: the solver as a baseline, started from the xla, xla-repack and greedy-size
//!   mappings.
//! - [`solve_in_region`]: the solve within a [`TrustRegion`] around a centre's fast uses
//!   (local branching: a learned start's injection).
//! - [`improve`]: windows, where the whole model does not finish: the MIP repairs a window
//!   of ops of a mapping at a time, the rest fixed, and a repair is kept when it simulates
//!   faster; [`improve_beside`] repairs a faster mapping offered from beside (a search's)
//!   as soon as it is offered.

#![warn(missing_docs)]

mod blocks;
#[cfg(test)]
mod bound_cases;
mod candidates;
mod covers;
mod model;
mod packing;
mod prices;
mod region;
mod sharing;
mod solve;
mod window;
mod windows;

pub use blocks::{block_bound, BlockBound};
pub use model::MipError;
pub use prices::{price_bound, PriceBound};
pub use region::TrustRegion;
pub use solve::{
    model_size, no_fast_level_slower, solve, solve_in_region, solve_model, ExactConfig, ExactError,
    ExactSolution, ModelSize, Objective, Status, SETUP_NONZEROS_PER_S, WHOLE_MODEL_REACH,
};
pub use windows::{improve, improve_beside, WindowConfig, WindowResult, WindowStats, Windows};

use accel_sim::{Hardware, Mapping, Program};

/// The MIP solver this build uses.
pub const BACKEND: &str = if cfg!(feature = "highs") {
    "highs"
} else {
    "microlp"
};

/// The exact solver as a baseline: [`solve`] started from the xla, xla-repack and
/// greedy-size mappings, so it never returns worse than any of them (in its objective,
/// and under [`Objective::Simulated`] in simulation too).
#[derive(Clone, Debug, Default)]
pub struct Exact {
    /// The time limit, gap tolerance and objective of the MIP.
    pub config: ExactConfig,
}

impl Exact {
    /// The solve with its proof.
    pub fn solve_proven(
        &self,
        program: &Program,
        hw: &Hardware,
    ) -> Result<ExactSolution, ExactError> {
        solve(program, hw, &self.config, &Exact::starts(program, hw))
    }

    /// The mappings the solve starts from: xla's, xla-repack's and greedy-size's.
    pub fn starts(program: &Program, hw: &Hardware) -> Vec<Mapping> {
        use xla_msa::{GreedySize, OneShotSolver, Xla, XlaOptions, DEFAULT_MAX_REPACKS};
        let repack = Xla::new(XlaOptions {
            max_repacks: DEFAULT_MAX_REPACKS,
            ..XlaOptions::default()
        });
        let starts: [&dyn OneShotSolver; 3] = [&Xla::default(), &repack, &GreedySize];
        starts.iter().map(|s| s.solve(program, hw)).collect()
    }
}
