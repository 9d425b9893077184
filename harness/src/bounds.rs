//! A case's best proven lower bound on the simulated latency, and where it came from: every
//! row's `gap_to_bound` is measured against it (docs/exact.md, "A lower bound on the
//! simulated latency").
//!
//! The sources, the highest kept:
//! - the physical limit (`xla_msa::bound_latency`: fastest level unbounded, copies free);
//! - an exact solve in the same run, when its objective bounds the simulation;
//! - a small case's checked-in cost-model optimum (`bench_workloads::small`), which bounds
//!   the simulation where no fast level is slower than level 0;
//! - the suite's bounds, computed once by the exact solver and checked in
//!   (`data/bounds.json`, written by `cargo run --release -p harness --example
//!   suite_bounds`), used only for the same program contents and the same hardware.

use crate::evaluate::{known_optimum, Case, EvalError, Proof};
use serde::{Deserialize, Serialize};

/// Where a case's bound came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundSource {
    /// `xla_msa::bound_latency`: unbounded fast memory and free copies; always there,
    /// seldom tight.
    Physical,
    /// An exact solve of this run.
    Exact,
    /// A small case's checked-in optimum.
    SmallCase,
    /// The checked-in suite bounds.
    Cached,
}

/// A proven lower bound on the simulated latency of every valid mapping of a case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaseBound {
    /// No valid mapping of the case simulates faster, seconds.
    pub lower_bound_s: f64,
    /// Where the bound came from.
    pub source: BoundSource,
}

impl CaseBound {
    /// `latency / bound - 1`.
    pub fn gap(&self, latency_s: f64) -> f64 {
        latency_s / self.lower_bound_s - 1.0
    }

    /// The gap of `solver`'s mapping, simulated in `latency_s` (`None`: no valid mapping).
    /// A mapping below the bound means a broken proof: an error, never a negative gap.
    pub fn gap_of(&self, solver: &str, latency_s: Option<f64>) -> Result<Option<f64>, EvalError> {
        match latency_s {
            Some(l) if l < self.lower_bound_s * (1.0 - 1e-9) => Err(EvalError::BoundAboveMapping {
                solver: solver.to_string(),
                latency_s: l,
                bound_s: self.lower_bound_s,
                from: self.source,
            }),
            l => Ok(l.map(|l| self.gap(l))),
        }
    }

    /// The primal integral of an anytime curve (`(elapsed_s, best latency)` at each
    /// improvement) over a budget of `budget_s`: the mean over the budget of the primal gap
    /// `1 - bound / best so far` (1 before the first mapping), the area under the gap curve
    /// divided by the budget (the ML4CO competition's score, normalised). In `[0, 1]`: 0 is
    /// a mapping at the bound from the start. `None` without a bound above 0.
    pub fn primal_integral(&self, curve: &[(f64, f64)], budget_s: f64) -> Option<f64> {
        if self.lower_bound_s <= 0.0 || !(budget_s.is_finite() && budget_s > 0.0) {
            return None;
        }
        let gap = |l: f64| (1.0 - self.lower_bound_s / l).clamp(0.0, 1.0);
        let (mut area, mut t_prev, mut g_prev) = (0.0, 0.0, 1.0);
        for &(t, l) in curve {
            let t = t.clamp(t_prev, budget_s);
            area += g_prev * (t - t_prev);
            t_prev = t;
            g_prev = g_prev.min(gap(l));
        }
        area += g_prev * (budget_s - t_prev);
        Some(area / budget_s)
    }
}

/// One checked-in bound: the case it holds for, by content, and how it was proven.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CachedBound {
    /// The workload's name.
    pub workload: String,
    /// The hardware preset's name.
    pub hardware: String,
    /// `Program::content_hash`, hex.
    pub program_hash: String,
    /// The whole hardware, capacities included.
    pub hardware_config: serde_json::Value,
    /// No valid mapping of the case simulates faster, seconds.
    pub lower_bound_s: f64,
    /// What the exact solve minimised (a `proxy` bound does not bound the simulator).
    pub objective: exact::Objective,
    /// The MIP backend that proved it (`microlp`, `highs`).
    pub backend: String,
    /// Whether the solve proved the optimum or stopped at a gap or its time limit.
    pub status: exact::Status,
    /// Seconds the proof took, on the machine that made it.
    pub solve_s: f64,
}

impl CachedBound {
    /// Whether this bound was proven for `case`'s program and hardware.
    pub fn holds_for(&self, case: &Case) -> bool {
        self.program_hash == format!("{:016x}", case.program.content_hash())
            && serde_json::to_value(case.hw.to_file()).ok().as_ref() == Some(&self.hardware_config)
            && self.objective.bounds_simulation(&case.hw)
    }
}

/// The checked-in suite bounds.
pub fn cached_bounds() -> Vec<CachedBound> {
    // Written by the suite_bounds example; a parse failure is a bug in the checked-in file,
    // which the tests catch.
    serde_json::from_str(include_str!("../data/bounds.json")).unwrap_or_default()
}

/// The best bound of `case` from the physical limit `physical_s`, the proofs of this run
/// and the checked-in ones.
pub fn best_bound<'a>(
    case: &Case,
    physical_s: f64,
    proofs: impl IntoIterator<Item = &'a Proof>,
) -> CaseBound {
    let mut best = CaseBound {
        lower_bound_s: physical_s,
        source: BoundSource::Physical,
    };
    let mut offer = |lower_bound_s: f64, source| {
        if lower_bound_s > best.lower_bound_s {
            best = CaseBound {
                lower_bound_s,
                source,
            };
        }
    };
    for p in proofs {
        if p.objective.bounds_simulation(&case.hw) {
            offer(p.lower_bound_s, BoundSource::Exact);
        }
    }
    if exact::no_fast_level_slower(&case.hw) {
        if let Some(optimum) = known_optimum(case) {
            offer(optimum, BoundSource::SmallCase);
        }
    }
    for c in cached_bounds().iter().filter(|c| c.holds_for(case)) {
        offer(c.lower_bound_s, BoundSource::Cached);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed: a bound of 1, no mapping for the first second, then latency 2 (gap
    /// 1/2) until second 3, then 1.25 (gap 1/5) to the end of a 5-second budget.
    #[test]
    fn the_primal_integral_is_the_mean_gap_over_the_budget() {
        let bound = CaseBound {
            lower_bound_s: 1.0,
            source: BoundSource::Physical,
        };
        let curve = [(1.0, 2.0), (3.0, 1.25)];
        let want = (1.0 * 1.0 + 2.0 * 0.5 + 2.0 * 0.2) / 5.0;
        assert!((bound.primal_integral(&curve, 5.0).unwrap() - want).abs() < 1e-12);
        // Points past the budget count at its end; no mapping at all is 1; a mapping at
        // the bound from the start is 0.
        let late = [(1.0, 2.0), (9.0, 1.0)];
        let want = (1.0 + 4.0 * 0.5) / 5.0;
        assert!((bound.primal_integral(&late, 5.0).unwrap() - want).abs() < 1e-12);
        assert_eq!(bound.primal_integral(&[], 5.0), Some(1.0));
        assert_eq!(bound.primal_integral(&[(0.0, 1.0)], 5.0), Some(0.0));
        assert_eq!(bound.primal_integral(&curve, 0.0), None);
        let none = CaseBound {
            lower_bound_s: 0.0,
            ..bound
        };
        assert_eq!(none.primal_integral(&curve, 5.0), None);
    }

    #[test]
    fn the_checked_in_bounds_parse_and_hold_for_their_suite_cases() {
        let text = include_str!("../data/bounds.json");
        let cached: Vec<CachedBound> = serde_json::from_str(text).unwrap();
        let suite = Case::suite().unwrap();
        for c in &cached {
            assert!(c.lower_bound_s > 0.0, "{c:?}");
            let case = suite
                .iter()
                .find(|s| s.program.name() == c.workload && s.hw.name == c.hardware)
                .unwrap_or_else(|| panic!("{} on {} is no suite case", c.workload, c.hardware));
            assert!(
                c.holds_for(case),
                "{} on {} is stale",
                c.workload,
                c.hardware
            );
        }
    }

    /// The bounds by blocks and by prices are bounds on the whole model's optimum: below
    /// each checked-in suite bound (the relaxation's proven optimum) they hold for, and
    /// above the physical limit.
    #[test]
    fn the_bounds_by_blocks_and_prices_are_below_the_checked_in_optima() {
        let suite = Case::suite().unwrap();
        let mut checked = 0;
        for c in cached_bounds()
            .iter()
            .filter(|c| c.objective == exact::Objective::Simulated)
        {
            let Some(case) = suite.iter().find(|s| c.holds_for(s)) else {
                continue;
            };
            let b = exact::block_bound(&case.program, &case.hw, c.objective, 2.0).unwrap();
            let p = exact::price_bound(&case.program, &case.hw, c.objective, 2.0, None).unwrap();
            let what = format!("{} on {}", c.workload, c.hardware);
            let physical = xla_msa::bound_latency(&case.program, &case.hw);
            for (bound, how) in [(b.lower_bound_s, "blocks"), (p.lower_bound_s, "prices")] {
                assert!(
                    bound <= c.lower_bound_s * (1.0 + 1e-9),
                    "{what}, {how}: {bound:e} above {:e}",
                    c.lower_bound_s
                );
                assert!(bound > physical, "{what}, {how}: {bound:e}");
            }
            checked += 1;
            if checked == 6 {
                break;
            }
        }
        assert_eq!(checked, 6);
    }

    #[test]
    fn a_cached_bound_is_not_used_for_another_capacity() {
        let suite = Case::suite().unwrap();
        let Some(c) = cached_bounds().into_iter().next() else {
            return;
        };
        let case = suite
            .iter()
            .find(|s| s.program.name() == c.workload && s.hw.name == c.hardware)
            .unwrap();
        let fast = case.hw.fastest();
        let capacity = case.hw.levels[fast].capacity / 2;
        let other = Case {
            program: case.program.clone(),
            hw: case.hw.clone().with_capacity(fast, capacity).unwrap(),
        };
        assert!(!c.holds_for(&other));
        let bound = best_bound(&other, 1e-9, []);
        assert_ne!(bound.source, BoundSource::Cached);
    }

    #[test]
    fn a_mapping_below_the_bound_is_an_error_not_a_negative_gap() {
        let bound = CaseBound {
            lower_bound_s: 2e-3,
            source: BoundSource::Cached,
        };
        assert_eq!(bound.gap_of("xla", None).unwrap(), None);
        let gap = bound.gap_of("xla", Some(3e-3)).unwrap().unwrap();
        assert!((gap - 0.5).abs() < 1e-12);
        let e = bound.gap_of("beam:8", Some(1e-3)).unwrap_err().to_string();
        assert!(e.contains("beam:8") && e.contains("Cached"), "{e}");
    }
}
