//! One EGRL solver on one problem under a deadline: what `mallocmuzero race` runs.

use crate::config::{EgrlConfig, Variant};
use crate::dp::dp_assignment;
use crate::engine::{CurvePoint, Egrl, RunLimits};
use crate::problem::Problem;
use crate::EgrlError;
use accel_sim::Mapping;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// What a raced solver found.
#[derive(Clone, Debug)]
pub struct RaceOutcome {
    /// Each improvement, with the evaluations it took.
    pub curve: Vec<CurvePoint>,
    /// The best mapping found; `None` when none was.
    pub mapping: Option<Mapping>,
    /// Assignments scored.
    pub evaluations: u64,
    /// Generations run.
    pub generations: u64,
}

/// Runs solver `name` (`egrl-dp`, the knapsack mapper, or a [`Variant`]'s name: `egrl`,
/// `egrl-ea`, `egrl-pg`) on `problem` until `deadline` with `config`
/// (its variant is set from the name); `on_best(elapsed_s, latency_s)` hears of each
/// improvement. `None` for an unknown name.
pub fn race(
    name: &str,
    problem: Arc<Problem>,
    config: EgrlConfig,
    deadline: Instant,
    on_best: &mut dyn FnMut(f64, f64),
) -> Option<Result<RaceOutcome, EgrlError>> {
    if name == "egrl-dp" {
        let t0 = Instant::now();
        let decoded = problem.decode(&dp_assignment(&problem));
        let latency_s = problem.simulator().run(&decoded.mapping, false).latency_s;
        let elapsed_s = t0.elapsed().as_secs_f64();
        on_best(elapsed_s, latency_s);
        return Some(Ok(RaceOutcome {
            curve: vec![CurvePoint {
                elapsed_s,
                evaluations: 1,
                latency_s,
            }],
            mapping: Some(decoded.mapping),
            evaluations: 1,
            generations: 0,
        }));
    }
    let variant = Variant::named(name)?;
    Some(run_search(
        problem,
        EgrlConfig { variant, ..config },
        deadline,
        on_best,
    ))
}

fn run_search(
    problem: Arc<Problem>,
    config: EgrlConfig,
    deadline: Instant,
    on_best: &mut dyn FnMut(f64, f64),
) -> Result<RaceOutcome, EgrlError> {
    let mut egrl = Egrl::new(problem, config)?;
    let limits = RunLimits {
        deadline: Some(deadline),
        ..RunLimits::default()
    };
    let mut told = 0;
    egrl.run(&limits, &AtomicBool::new(false), &mut |e, _| {
        for p in &e.curve()[told..] {
            on_best(p.elapsed_s, p.latency_s);
        }
        told = e.curve().len();
        Ok(())
    })?;
    let mapping = egrl
        .best()
        .map(|b| egrl.problem().decode(&b.assignment).mapping);
    Ok(RaceOutcome {
        curve: egrl.curve().to_vec(),
        mapping,
        evaluations: egrl.evaluations(),
        generations: egrl.generation(),
    })
}
