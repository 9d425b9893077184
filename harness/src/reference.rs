//! What one result on a case is read against: the fastest of the heuristics that answer in
//! moments (a user would run them before any search), and the case's best proven lower
//! bound. The main job prints its agent's result beside both, so a run that only matches a
//! heuristic found in milliseconds says so.

use crate::bounds::CaseBound;
use crate::evaluate::{fill_gaps, Case, CaseScorer, EvalError, Solver, SolverContext};
use malloc_game::GameOptions;
use std::time::Instant;

/// The heuristics [`reference`] runs (the registry's selection).
pub use crate::registry::INSTANT_HEURISTICS;

/// The best instant heuristic on a case and the case's bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The fastest heuristic's name and simulated latency.
    pub heuristic: String,
    /// Its simulated latency, seconds.
    pub heuristic_latency_s: f64,
    /// The best proven lower bound on every mapping's simulated latency.
    pub bound: CaseBound,
    /// Seconds the heuristics took together.
    pub solve_s: f64,
}

/// Runs [`INSTANT_HEURISTICS`] on `case` (the game players under `options`) and finds the
/// case's bound.
pub fn reference(case: &Case, options: &GameOptions) -> Result<Reference, EvalError> {
    let t0 = Instant::now();
    let mut scorer = CaseScorer::new(case)?;
    let ctx = SolverContext::default();
    let mut rows = Vec::new();
    for name in INSTANT_HEURISTICS {
        let mapping = Solver::named(name, &ctx)?.solve(case, options)?;
        rows.push(scorer.row(name.to_string(), &mapping, 0.0));
    }
    fill_gaps(&mut rows, case)?;
    let best = rows
        .iter()
        .filter_map(|r| Some((r, r.latency_s?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or_else(|| EvalError::BaselineInvalid {
            solver: INSTANT_HEURISTICS.join(", "),
            msg: "none found a valid mapping".into(),
        })?;
    Ok(Reference {
        heuristic: best.0.solver.clone(),
        heuristic_latency_s: best.1,
        bound: CaseBound {
            lower_bound_s: best.0.lower_bound_s,
            source: best.0.bound_source,
        },
        solve_s: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_is_the_fastest_heuristic_above_the_bound() {
        let case = Case::named(Some("alexnet"), None, None).unwrap();
        let r = reference(&case, &GameOptions::default()).unwrap();
        assert!(INSTANT_HEURISTICS.contains(&r.heuristic.as_str()));
        let xla = crate::evaluate::xla_latency(&case.program, &case.hw).unwrap();
        assert!(r.heuristic_latency_s <= xla);
        assert!(r.bound.lower_bound_s > 0.0 && r.bound.lower_bound_s <= r.heuristic_latency_s);
    }
}
