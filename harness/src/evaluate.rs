//! The evaluation harness: "evaluate solver X on case Y" as a library call, so a test, a
//! script or a binding gets the same rows as `mallocmuzero evaluate --json`.
//!
//! A [`Case`] is a program on a hardware config; a [`Solver`] is anything that maps it (a
//! baseline, a game player, a trained agent, a mapping file); [`evaluate_case`] solves,
//! validates and simulates each, and returns one [`Row`] per solver.

use crate::bounds::{best_bound, BoundSource};
use crate::exact_run::run_exact;
use crate::solver::polish_of;
pub use crate::solver::{Solver, SolverContext};
use accel_sim::MappingFile;
use accel_sim::{CostModel, Hardware, HardwareError, Mapping, Program, Simulator};
use bench_workloads::{suite, WorkloadError};
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::AgentError;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The `--fast-capacity` that asks for the scale suite's rule ([`suite::scale_hardware`]).
pub const SCALE_RULE: &str = "scale-rule";

/// The workload when none is named.
pub const DEFAULT_WORKLOAD: &str = "resnet50";
/// The hardware preset when none is named.
pub const DEFAULT_HARDWARE: &str = "tpu-v4i-like";

/// The solvers `evaluate` runs when none is named (the registry's selection).
pub use crate::registry::EVALUATE_DEFAULTS as DEFAULT_SOLVERS;

/// Why a case or a solver could not be evaluated; each names what the user gave.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The workload could not be loaded.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The hardware config could not be loaded or is invalid.
    #[error(transparent)]
    Hardware(#[from] HardwareError),
    /// A fast level is smaller than every buffer of the program, so no mapping could use
    /// it: refused rather than reported as a case with nothing to choose.
    #[error("level {level} ({name}) of `{hardware}` has capacity {capacity} B, smaller than the smallest buffer of `{program}` ({smallest} B): nothing could be placed")]
    CapacityTooSmall {
        /// The level.
        level: usize,
        /// Its name.
        name: String,
        /// The hardware's name.
        hardware: String,
        /// The level's capacity, bytes.
        capacity: u64,
        /// The program's name.
        program: String,
        /// Its smallest buffer, bytes.
        smallest: u64,
    },
    /// No solver has this name.
    #[error("unknown solver `{0}` (known: {known}, and beam:W with W in 1..={w}; muzero is the bundled generalist, or a run with --checkpoint)", known = crate::registry::evaluate_names().join(", "), w = malloc_game::players::MAX_BEAM_WIDTH)]
    UnknownSolver(String),
    /// The agent's checkpoint could not be loaded or does not fit the case.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// A game could not be set up on the case.
    #[error(transparent)]
    Game(#[from] malloc_game::GameError),
    /// A mapping file is not a mapping of the case's program.
    #[error("{path}: {msg}")]
    MappingFile {
        /// The file.
        path: String,
        /// What does not fit (a buffer it names that the program lacks, ...).
        msg: String,
    },
    /// A mapping file that could not be read or parsed (the message names the file).
    #[error("{0}")]
    MappingRead(String),
    /// The exact solver failed.
    #[error("exact solver: {0}")]
    Exact(#[from] exact::ExactError),
    /// A baseline's mapping did not validate (a bug).
    #[error("the {solver} baseline produced an invalid mapping (a bug): {msg}")]
    BaselineInvalid {
        /// The baseline.
        solver: String,
        /// The validator's message.
        msg: String,
    },
    /// A mapping simulated faster than the case's proven lower bound: the bound (or the
    /// simulator) is wrong.
    #[error("{solver}'s mapping simulates in {latency_s:e} s, below the case's proven lower bound {bound_s:e} s ({from:?}): the bound is wrong (a bug)")]
    BoundAboveMapping {
        /// The solver whose mapping it was.
        solver: String,
        /// Its simulated latency, seconds.
        latency_s: f64,
        /// The bound, seconds.
        bound_s: f64,
        /// Where the bound came from.
        from: BoundSource,
    },
}

/// A program on a hardware config.
pub struct Case {
    /// The program to map.
    pub program: Arc<Program>,
    /// The hardware it runs on, fast capacities as the user set them.
    pub hw: Hardware,
}

impl Case {
    /// The case a user names: a built-in workload or a program file, a preset or a config
    /// file, and optionally a capacity (`16MiB` or `1:16MiB`, or `scale-rule`: the scale
    /// suite's rule for this program, [`suite::scale_hardware`]). A workload of either suite
    /// on its suite hardware without a capacity gets that suite's capacities.
    pub fn named(
        workload: Option<&str>,
        hardware: Option<&str>,
        fast_capacity: Option<&str>,
    ) -> Result<Case, EvalError> {
        let workload = workload.unwrap_or(DEFAULT_WORKLOAD);
        let hardware = hardware.unwrap_or(DEFAULT_HARDWARE);
        let program = bench_workloads::load(workload)?;
        let mut hw = Hardware::by_name_or_file(hardware)?;
        match fast_capacity {
            Some(SCALE_RULE) => hw = suite::scale_hardware(&program, hw),
            Some(spec) => hw = hw.with_capacity_spec(spec)?,
            None => {
                if let Some(c) = suite::case_of(workload, hardware) {
                    hw = c.hardware();
                } else if let Some(c) = suite::scale_case_of(workload, hardware) {
                    hw = c.hardware();
                }
            }
        }
        Case::new(program, hw)
    }

    /// A case, refused when a fast level cannot hold even the smallest buffer (a mistake
    /// worth an error rather than a table of all-slow mappings).
    pub fn new(program: Program, hw: Hardware) -> Result<Case, EvalError> {
        Case::with_program(Arc::new(program), hw)
    }

    /// [`Case::new`] of a program shared with other cases.
    pub fn with_program(program: Arc<Program>, hw: Hardware) -> Result<Case, EvalError> {
        let smallest = program.buffers().iter().map(|b| b.size).min().unwrap_or(0);
        for (level, l) in hw.levels.iter().enumerate().skip(1) {
            if l.capacity < smallest {
                return Err(EvalError::CapacityTooSmall {
                    level,
                    name: l.name.clone(),
                    hardware: hw.name.clone(),
                    capacity: l.capacity,
                    program: program.name().to_string(),
                    smallest,
                });
            }
        }
        Ok(Case { program, hw })
    }

    /// Every case of the benchmark suite.
    pub fn suite() -> Result<Vec<Case>, EvalError> {
        suite::cases()
            .into_iter()
            .map(|c| Case::new(bench_workloads::load(c.workload)?, c.hardware()))
            .collect()
    }

    /// Every case of the suite `name`: the benchmark suite's 14, or the scale suite's (each
    /// program loaded once for both its presets).
    pub fn suite_named(name: suite::SuiteName) -> Result<Vec<Case>, EvalError> {
        match name {
            suite::SuiteName::Standard => Case::suite(),
            suite::SuiteName::Scale => {
                let mut cases = Vec::new();
                let mut loaded: Option<(&str, Arc<Program>)> = None;
                for c in suite::scale_cases() {
                    let program = match &loaded {
                        Some((w, p)) if *w == c.workload => Arc::clone(p),
                        _ => Arc::new(bench_workloads::load(c.workload)?),
                    };
                    loaded = Some((c.workload, Arc::clone(&program)));
                    cases.push(Case::with_program(program, c.hardware())?);
                }
                Ok(cases)
            }
        }
    }

    /// The bytes of every fast level together.
    pub fn fast_capacity(&self) -> u64 {
        // Each capacity is at most 2^53 (accel_sim::MAX_BYTES): the sum cannot overflow.
        self.hw.levels[1..].iter().map(|l| l.capacity).sum()
    }
}

/// A mapping file resolved against `program`: its format, version, workload name and
/// buffer names checked (a mapping of another program, or one listing a buffer twice, is
/// an error, not a silent guess).
pub fn read_mapping(path: &Path, program: &Program) -> Result<Mapping, EvalError> {
    let err = |msg: String| EvalError::MappingFile {
        path: path.display().to_string(),
        msg,
    };
    let file = MappingFile::read(path).map_err(EvalError::MappingRead)?;
    file.to_mapping(program).map_err(err)
}

/// The line of the game that plays the mapping file at `path` on `setup`'s program and
/// hardware (rules v3: every valid mapping is one, played exactly): the file's workload
/// and buffer names are checked, then the mapping's validity on the hardware, so that a
/// mapping of another program or hardware is refused, naming the file.
pub fn mapping_line(path: &Path, setup: &Arc<GameSetup>) -> Result<malloc_game::Game, EvalError> {
    let err = |msg: String| EvalError::MappingFile {
        path: path.display().to_string(),
        msg,
    };
    let (program, hw) = (setup.program(), setup.hardware());
    let mapping = read_mapping(path, program)?;
    mapping.validate(program, hw).map_err(|e| {
        err(format!(
            "not a valid mapping of `{}` on `{}`: {e}",
            program.name(),
            hw.name
        ))
    })?;
    setup
        .trajectory_of(&mapping)
        .map_err(|e| err(e.to_string()))
}

/// One row of the results, in the JSON form of `evaluate --json`.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// The workload's name.
    pub workload: String,
    /// The hardware's name.
    pub hardware: String,
    /// The solver's name, as the user gave it (`beam:64`).
    pub solver: String,
    /// Simulated ("true") latency; null when the mapping is invalid.
    pub latency_s: Option<f64>,
    /// The cost model's latency of the mapping; null when it is invalid.
    pub proxy_latency_s: Option<f64>,
    /// Whether the mapping passed the validator.
    pub valid: bool,
    /// The xla baseline's simulated latency over this one's: above 1 is faster than xla.
    pub speedup_vs_xla: Option<f64>,
    /// The physical limit of this case (see `xla_msa::bound_latency`).
    pub bound_latency_s: f64,
    /// The best proven lower bound on this case's simulated latency ([`crate::bounds`]).
    pub lower_bound_s: f64,
    /// Where `lower_bound_s` came from.
    pub bound_source: BoundSource,
    /// `latency / lower_bound - 1`: at most this much room is left above this solver.
    pub gap_to_bound: Option<f64>,
    /// The fastest level's capacity in this case, bytes.
    pub fast_capacity_bytes: u64,
    /// Peak bytes held in the fast levels by this mapping.
    pub fast_bytes_used: Option<u64>,
    /// Seconds the solver took.
    pub solve_s: f64,
    /// The validator's message when `valid` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the exact solver proved (its rows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

/// What the exact solver proved on a case.
#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Proof {
    /// What its model minimised: `simulated` (the simulator's relaxation) or `proxy` (the
    /// cost model; results saved before objectives existed are this).
    #[serde(default = "proxy_objective")]
    pub objective: exact::Objective,
    /// The model's best mapping is optimal in the objective.
    pub optimal: bool,
    /// `optimal`, `gap-reached` or `time-limit`.
    pub status: exact::Status,
    /// No mapping's latency in the objective is lower, seconds.
    pub lower_bound_s: f64,
    /// `(model's best latency - lower bound) / model's best latency`, in the objective.
    pub gap: f64,
    /// Candidate holds in the model.
    pub candidates: usize,
    /// Models solved (the model grows its candidates between rounds).
    pub rounds: usize,
    /// The mapping is the local search's, faster in simulation than every mapping the MIP
    /// built or was given (`crate::exact_run`).
    #[serde(default)]
    pub polished: bool,
    /// The line that local search started from: `mip` (the MIP's own mapping, played as
    /// its line), or a heuristic's that was faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polished_from: Option<String>,
    /// The MIP solver that proved it (`microlp`, or `highs` in a build with that feature):
    /// the same model, so the same optimum, but not the same reach within a time limit.
    #[serde(default = "unknown_backend")]
    pub backend: String,
    /// What proved `lower_bound_s`: the whole model, or the bound by prices or by blocks
    /// where the whole model proved none (docs/exact.md).
    #[serde(default)]
    pub bound_by: BoundBy,
    /// What the windows did, where they ran (`crate::exact_run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<exact::WindowStats>,
}

/// Which relaxation of the whole program proved an exact solve's bound.
#[derive(Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BoundBy {
    /// The whole model (its branch and bound's proven bound).
    #[default]
    Model,
    /// The model cut into blocks of ops, each solved on its own (`exact::block_bound`).
    Blocks,
    /// The model's rows that tie buffers together priced (`exact::price_bound`).
    Prices,
}

fn unknown_backend() -> String {
    "unknown".into()
}

fn proxy_objective() -> exact::Objective {
    exact::Objective::Proxy
}

impl Proof {
    /// What `s` proved, before any local search polished its mapping.
    pub fn of(s: &exact::ExactSolution) -> Proof {
        Proof {
            objective: s.objective,
            optimal: s.optimal(),
            status: s.status,
            lower_bound_s: s.lower_bound_s,
            gap: s.gap,
            candidates: s.candidates,
            rounds: s.rounds,
            backend: exact::BACKEND.into(),
            polished: false,
            polished_from: None,
            bound_by: BoundBy::Model,
            windows: None,
        }
    }
}

/// Sets every row's case bound ([`best_bound`]) from the physical limit, the proofs among
/// `rows` and the checked-in bounds, and each valid row's gap to it. A bound above a
/// valid mapping's simulated latency is a broken proof: an error, never a printed gap.
pub fn fill_gaps(rows: &mut [Row], case: &Case) -> Result<(), EvalError> {
    let Some(physical) = rows.first().map(|r| r.bound_latency_s) else {
        return Ok(());
    };
    let bound = best_bound(case, physical, rows.iter().filter_map(|r| r.proof.as_ref()));
    for r in rows.iter_mut() {
        r.lower_bound_s = bound.lower_bound_s;
        r.bound_source = bound.source;
        r.gap_to_bound = bound.gap_of(&r.solver, r.latency_s)?;
    }
    Ok(())
}

/// The checked-in cost-model optimum of `case`, if it is one of the small cases
/// (`bench_workloads::small`): same program, same hardware.
pub fn known_optimum(case: &Case) -> Option<f64> {
    let c = bench_workloads::small::cases()
        .into_iter()
        .find(|c| c.workload == case.program.name() && c.hardware() == case.hw)?;
    let program = bench_workloads::load(c.workload).ok()?;
    (program == *case.program).then_some(c.optimum_s)
}

/// The standalone xla solver's simulated latency: every speedup is measured against it.
pub fn xla_latency(program: &Program, hw: &Hardware) -> Result<f64, EvalError> {
    xla_msa::xla_latency(program, hw).map_err(|msg| EvalError::BaselineInvalid {
        solver: "xla".into(),
        msg,
    })
}

/// The standalone xla solver's mapping, validated.
fn xla_mapping(program: &Program, hw: &Hardware) -> Result<Mapping, EvalError> {
    xla_msa::xla_mapping(program, hw).map_err(|msg| EvalError::BaselineInvalid {
        solver: "xla".into(),
        msg,
    })
}

/// What every row of one case is measured against.
pub struct CaseScorer<'a> {
    case: &'a Case,
    cost: CostModel,
    sim: Simulator,
    bound: f64,
    xla: f64,
    /// The reference xla mapping and the seconds it took, so the `xla` solver's row reuses
    /// it instead of solving again (0.9 s on a 200k-buffer program).
    xla_mapping: Mapping,
    xla_solve_s: f64,
}

impl<'a> CaseScorer<'a> {
    /// The case's reference figures: the xla mapping (solved once), its latency and the
    /// physical bound.
    pub fn new(case: &'a Case) -> Result<CaseScorer<'a>, EvalError> {
        let (program, hw) = (case.program.as_ref(), &case.hw);
        let t0 = Instant::now();
        let xla_mapping = xla_mapping(program, hw)?;
        let xla_solve_s = t0.elapsed().as_secs_f64();
        let mut sim = Simulator::new(program, hw);
        let xla = sim.run(&xla_mapping, false).latency_s;
        Ok(CaseScorer {
            case,
            cost: CostModel::new(program, hw),
            sim,
            bound: xla_msa::bound_latency(program, hw),
            xla,
            xla_mapping,
            xla_solve_s,
        })
    }

    /// The xla baseline's simulated latency on this case.
    pub fn xla_latency(&self) -> f64 {
        self.xla
    }

    /// Validates and simulates `mapping`; an invalid one gives a row with its message.
    pub fn row(&mut self, solver: String, mapping: &Mapping, solve_s: f64) -> Row {
        let (program, hw) = (self.case.program.as_ref(), &self.case.hw);
        let mut row = Row {
            workload: program.name().to_string(),
            hardware: hw.name.clone(),
            solver,
            latency_s: None,
            proxy_latency_s: None,
            valid: false,
            speedup_vs_xla: None,
            bound_latency_s: self.bound,
            lower_bound_s: self.bound,
            bound_source: BoundSource::Physical,
            gap_to_bound: None,
            fast_capacity_bytes: self.case.fast_capacity(),
            fast_bytes_used: None,
            solve_s,
            error: None,
            proof: None,
        };
        match mapping.validate(program, hw) {
            Ok(stats) => {
                let latency = self.sim.run(mapping, false).latency_s;
                row.valid = true;
                row.latency_s = Some(latency);
                row.proxy_latency_s = Some(self.cost.latency(mapping));
                row.speedup_vs_xla = Some(self.xla / latency);
                row.gap_to_bound = Some(latency / self.bound - 1.0);
                row.fast_bytes_used = Some(stats.peak_bytes[1..].iter().sum());
            }
            Err(e) => row.error = Some(e.to_string()),
        }
        row
    }
}

/// What [`evaluate_case`] reports while it works, for a progress display.
pub enum EvalProgress<'a> {
    /// A solver starts.
    Solving(&'a str),
    /// A game player has played `done` of `total` turns.
    Turns {
        /// Turns played.
        done: usize,
        /// Turns in the game.
        total: usize,
    },
    /// A solver's mapping is validated and simulated.
    Solved(&'a Row),
}

/// Runs every solver on `case`, validates and simulates each mapping.
pub fn evaluate_case(
    case: &Case,
    solvers: &[Solver],
    options: &GameOptions,
    progress: &mut dyn FnMut(EvalProgress),
) -> Result<Vec<Row>, EvalError> {
    let mut scorer = CaseScorer::new(case)?;
    let mut rows = Vec::with_capacity(solvers.len());
    for solver in solvers {
        let name = solver.name();
        progress(EvalProgress::Solving(&name));
        let row = match solver {
            // The reference run already solved it: the same deterministic mapping.
            Solver::Baseline(b) if b.name() == "xla" => {
                let (mapping, solve_s) = (scorer.xla_mapping.clone(), scorer.xla_solve_s);
                scorer.row(name, &mapping, solve_s)
            }
            Solver::Exact(config, seed) => {
                let t0 = Instant::now();
                let run = run_exact(case, config, &polish_of(options, *seed), &mut |_, _| {})?;
                let mut row = scorer.row(name, &run.solution.mapping, t0.elapsed().as_secs_f64());
                row.proof = Some(run.proof);
                row
            }
            _ => {
                let t0 = Instant::now();
                let mapping = solver.solve_with_progress(case, options, &mut |done, total| {
                    progress(EvalProgress::Turns { done, total })
                })?;
                scorer.row(name, &mapping, t0.elapsed().as_secs_f64())
            }
        };
        progress(EvalProgress::Solved(&row));
        rows.push(row);
    }
    fill_gaps(&mut rows, case)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diamond() -> Case {
        Case::named(Some("diamond"), None, Some("4MiB")).unwrap()
    }

    #[test]
    fn every_default_solver_gives_a_valid_row() {
        let case = diamond();
        let solvers = Solver::all_named(&[], &SolverContext::default()).unwrap();
        let rows = evaluate_case(&case, &solvers, &GameOptions::default(), &mut |_| {}).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.solver.as_str()).collect();
        // `beam` is named by its width in rows.
        assert_eq!(
            names,
            ["all-slow", "xla", "greedy-size", "greedy", "beam:8"]
        );
        for r in &rows {
            assert!(r.valid, "{}: {:?}", r.solver, r.error);
            assert!(r.latency_s.unwrap() >= r.bound_latency_s);
        }
        let xla = rows.iter().find(|r| r.solver == "xla").unwrap();
        assert!((xla.speedup_vs_xla.unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn names_that_are_not_solvers_are_errors() {
        let ctx = SolverContext::default();
        assert!(matches!(
            Solver::named("nope", &ctx),
            Err(EvalError::UnknownSolver(_))
        ));
        // Without a checkpoint, `muzero` is the bundled generalist.
        assert_eq!(Solver::named("muzero", &ctx).unwrap().name(), "muzero");
        assert_eq!(Solver::named("xla-game", &ctx).unwrap().name(), "xla-game");
    }

    #[test]
    fn a_small_case_gets_its_checked_in_optimum_as_its_bound_without_a_solve() {
        let c = &bench_workloads::small::cases()[1];
        let cap = c.fast_capacity.to_string();
        let case = Case::named(Some(c.workload), Some(c.hardware), Some(&cap)).unwrap();
        let solvers = Solver::all_named(&["xla".into()], &SolverContext::default()).unwrap();
        let rows = evaluate_case(&case, &solvers, &GameOptions::default(), &mut |_| {}).unwrap();
        let xla = &rows[0];
        assert_eq!(xla.bound_source, BoundSource::SmallCase);
        assert_eq!(xla.lower_bound_s, c.optimum_s);
        let want = xla.latency_s.unwrap() / c.optimum_s - 1.0;
        assert!((xla.gap_to_bound.unwrap() - want).abs() < 1e-12);
        assert!(want >= 0.0);
        // Another capacity is another case: no optimum known, the physical limit.
        let other = Case::named(Some(c.workload), Some(c.hardware), Some("1MiB")).unwrap();
        let rows = evaluate_case(&other, &solvers, &GameOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(rows[0].bound_source, BoundSource::Physical);
        assert_eq!(rows[0].lower_bound_s, rows[0].bound_latency_s);
    }

    /// The scale suite: its cases at the rule's capacities, each binding: xla's mapping
    /// is well above the physical bound (fast memory unbounded), and all-slow is above xla.
    #[test]
    fn the_scale_suite_binds_on_every_case() {
        let cases = Case::suite_named(suite::SuiteName::Scale).unwrap();
        assert_eq!(cases.len(), suite::scale_cases().len());
        assert_eq!(cases.len(), 2 * bench_workloads::scale::names().len());
        let solvers = Solver::all_named(
            &["all-slow".into(), "xla".into()],
            &SolverContext::default(),
        )
        .unwrap();
        for case in &cases {
            let want = suite::scale_case_of(case.program.name(), &case.hw.name).unwrap();
            assert_eq!(case.hw, want.hardware());
            let rows = evaluate_case(case, &solvers, &GameOptions::default(), &mut |_| {}).unwrap();
            let (slow, xla) = (&rows[0], &rows[1]);
            let what = format!("{} on {}", xla.workload, xla.hardware);
            assert!(xla.valid && slow.valid, "{what}");
            let (x, s) = (xla.latency_s.unwrap(), slow.latency_s.unwrap());
            assert!(
                x > 1.1 * xla.bound_latency_s,
                "{what}: xla {x} bound {}",
                xla.bound_latency_s
            );
            assert!(s > x, "{what}: all-slow {s} xla {x}");
        }
        // The standard suite is still the 14 cases.
        assert_eq!(
            Case::suite_named(suite::SuiteName::Standard).unwrap().len(),
            14
        );
    }

    #[test]
    fn a_scale_workload_gets_the_scale_capacities_and_any_program_the_scale_rule() {
        let case = Case::named(Some("jax-resnet50-train"), Some("tpu-v4i-like"), None).unwrap();
        let want = suite::scale_case_of("jax-resnet50-train", "tpu-v4i-like").unwrap();
        assert_eq!(case.hw, want.hardware());
        assert_eq!(case.hw.levels[1].capacity, 64 << 20);
        // The rule by name, for a program outside the tier: alexnet's peak (122 MiB) / 16
        // holds 4 MiB of the 128 MiB CMEM at most: 128 MiB / 32.
        let ruled = Case::named(Some("alexnet"), Some("tpu-v4i-like"), Some(SCALE_RULE)).unwrap();
        let divisor = suite::scale_divisor(&ruled.program, &Hardware::tpu_v4i_like());
        assert_eq!(divisor, 32);
        assert_eq!(ruled.hw.levels[1].capacity, 4 << 20);
        let nnp = Case::named(Some("alexnet"), Some("nnp-i-like"), Some(SCALE_RULE)).unwrap();
        let caps: Vec<u64> = nnp.hw.levels[1..].iter().map(|l| l.capacity).collect();
        assert_eq!(caps, [6 << 20, 1 << 20]);
    }

    #[test]
    fn a_suite_workload_on_its_hardware_gets_the_suite_capacity() {
        let case = Case::named(Some("alexnet"), Some("tpu-v4i-like"), None).unwrap();
        let suite = suite::case_of("alexnet", "tpu-v4i-like").unwrap();
        assert_eq!(case.hw, suite.hardware());
        let e = Case::named(Some("alexnet"), None, Some("1:1"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("alignment"), "{e}");
    }
}
