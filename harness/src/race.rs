//! The race: every solver on one case under the same wall-clock budget and threads,
//! recording the best valid mapping each has found against time.
//!
//! The solvers are the registry's ([`crate::registry::SOLVERS`], each entry's
//! [`crate::registry::Racer`]): the baselines, instant, one point each; the anytime game
//! solvers; `muzero`, the local search guided by the bundled network (or `--checkpoint`'s)
//! starting from the MIP's line among the heuristics'; `muzero-train`, the agent trained
//! for the budget; the guided searches of issue 43's ablation; EGRL's solvers; and
//! `exact`, the MIP solver, whose proof gives every result of the case its gap to the
//! optimum. How each kind runs is [`crate::race_runs`]. Every result is the solver's best
//! mapping validated and simulated here, by the same simulator for all.

use crate::bounds::{best_bound, BoundSource};
use crate::evaluate::{Case, EvalError, Proof};
use crate::race_runs::{Raced, Racing};
use accel_sim::{Mapping, MappingFile, Simulator};
use malloc_game::GameOptions;
use malloc_muzero::train::{TrainConfig, TrainError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a race could not run.
#[derive(Debug, thiserror::Error)]
pub enum RaceError {
    /// No race solver has this name.
    #[error("unknown race solver `{0}` (known: {known})", known = crate::registry::race_names().join(", "))]
    UnknownSolver(String),
    /// The case could not be built, or a mapping not scored.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The agent's training failed.
    #[error(transparent)]
    Train(#[from] Box<TrainError>),
    /// A game could not be set up on the case.
    #[error(transparent)]
    Game(#[from] malloc_game::GameError),
    /// EGRL failed.
    #[error(transparent)]
    Egrl(#[from] egrl::EgrlError),
    /// A guided search's network could not be loaded or does not fit the case.
    #[error(transparent)]
    Guide(#[from] malloc_muzero::AgentError),
    /// The learned start could not be loaded.
    #[error(transparent)]
    Start(#[from] malloc_muzero::start::StartError),
    /// A file of the race could not be read or written.
    #[error("{path}: {msg}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// A race setting is out of range.
    #[error("{0}")]
    Config(String),
    /// EGRL's config does not fit the case (its field named).
    #[error("egrl config: {0}")]
    EgrlConfig(String),
}

/// What every solver of a race gets.
#[derive(Clone, Debug)]
pub struct RaceConfig {
    /// Wall-clock seconds per solver.
    pub seconds: f64,
    /// Threads per solver.
    pub threads: usize,
    /// The seed of every solver that draws at random.
    pub seed: u64,
    /// The game's rules for the game solvers and the agent.
    pub options: GameOptions,
    /// The agent's training config (its seed is replaced by `seed`).
    pub train: TrainConfig,
    /// A run folder the agent continues instead of starting from scratch.
    pub checkpoint: Option<PathBuf>,
    /// Where the agent's run folder goes (a fresh folder; `None`: a temporary one).
    pub agent_dir: Option<PathBuf>,
    /// EGRL's config (its variant, seed and threads are replaced by the race's).
    pub egrl: egrl::EgrlConfig,
    /// What the exact solver minimises (its time limit is the race's).
    pub exact_objective: exact::Objective,
    /// The share of the agent's budget (and the guided searches') spent on the MIP whose
    /// mapping's line is one of the search's starts; `None`: [`AGENT_MIP_SHARE`].
    pub mip_share: Option<f64>,
}

/// The share of the agent's race budget the MIP runs beside the guided search (on one of
/// its threads), whose starts then include the MIP's line (issue 59): chosen on
/// validation programs, never the suite or the scale tier (docs/results.md, "Where the
/// agent starts").
pub const AGENT_MIP_SHARE: f64 = 0.75;

impl RaceConfig {
    /// The MIP's share of a guided search's budget ([`RaceConfig::mip_share`]).
    pub fn agent_mip_share(&self) -> f64 {
        self.mip_share.unwrap_or(AGENT_MIP_SHARE)
    }
}

/// One solver's result on one case (the JSON form of `race --json`; a race's saved
/// results read back into it, without the mapping).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RaceResult {
    /// The workload's name.
    pub workload: String,
    /// The hardware's name.
    pub hardware: String,
    /// The solver's name.
    pub solver: String,
    /// The best mapping's simulated latency; `None` when the solver found none.
    pub best_latency_s: Option<f64>,
    /// The best mapping passed the validator.
    pub valid: bool,
    /// `[elapsed_s, best_latency_s]` at each improvement.
    pub curve: Vec<(f64, f64)>,
    /// The best mapping itself (not saved in the results).
    #[serde(skip)]
    pub mapping: Option<Mapping>,
    /// The agent's run folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
    /// For solvers that score candidate mappings one by one (EGRL's): `[evaluations,
    /// best_latency_s]` at each improvement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluations_curve: Vec<(u64, f64)>,
    /// The best mapping's cost-model latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_latency_s: Option<f64>,
    /// What the exact solver proved (its results only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// The case's best proven lower bound on the simulated latency (as in
    /// [`crate::evaluate::Row`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_bound_s: Option<f64>,
    /// Where `lower_bound_s` came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_source: Option<BoundSource>,
    /// `best_latency / lower_bound - 1`: at most this much room is left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_to_bound: Option<f64>,
    /// The mean primal gap over the budget (`crate::bounds::CaseBound::primal_integral`):
    /// how soon the solver got how close, lower is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primal_integral: Option<f64>,
    /// Everything besides the budget, seed and threads that decides this result
    /// ([`settings_of`]): a saved result is reused only under the same settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Moves tried, for the solvers that count them (the local search and the guided
    /// searches): their speed is `moves / seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<u64>,
    /// The line a search started from (the local search, the guided searches and exact's
    /// local search after its MIP): `mip`, `xla`, `greedy`, `beam:W`, `greedy-size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// What the MIP beside a guided search did: the line it returned, its windows' repairs
    /// and the search's lines they took up (the `muzero` and guided solvers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mip_beside: Option<crate::exact_run::MipBeside>,
    /// Wall-clock seconds from the solver's start to its answer. A solver that cannot be
    /// stopped mid-step (a MIP backend inside one relaxation) can pass its budget; the
    /// table marks such a result ([`RaceResult::over_budget`]) rather than hide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

/// Seconds past its budget a result may end and still count as within it: the answer's
/// validation and simulation, and a thread's last step.
pub const BUDGET_SLACK_S: f64 = 1.0;

impl RaceResult {
    /// Whether the solver ran past `seconds` (its budget) by more than 5% and
    /// [`BUDGET_SLACK_S`].
    pub fn over_budget(&self, seconds: f64) -> bool {
        self.wall_s
            .is_some_and(|w| w > seconds * 1.05 + BUDGET_SLACK_S)
    }
}

/// Sets the bound of `case` ([`best_bound`]: the physical limit, the proofs among
/// `results`, the checked-in bounds) on each of its results, each valid one's gap to it,
/// and each one's primal integral over the race's `budget_s`. A bound above a valid
/// mapping's simulated latency is a broken proof: an error.
pub fn fill_gaps(results: &mut [RaceResult], case: &Case, budget_s: f64) -> Result<(), EvalError> {
    let physical = xla_msa::bound_latency(&case.program, &case.hw);
    let bound = best_bound(
        case,
        physical,
        results.iter().filter_map(|r| r.proof.as_ref()),
    );
    for r in results.iter_mut() {
        r.lower_bound_s = Some(bound.lower_bound_s);
        r.bound_source = Some(bound.source);
        r.gap_to_bound = bound.gap_of(&r.solver, r.best_latency_s)?;
        r.primal_integral = if r.valid {
            bound.primal_integral(&r.curve, budget_s)
        } else {
            None
        };
    }
    Ok(())
}

/// Checks solver names before any solver runs, so a typo costs no budget.
pub fn check_solvers(names: &[String]) -> Result<(), RaceError> {
    for n in names {
        if !crate::registry::race_names().contains(&n.as_str()) {
            return Err(RaceError::UnknownSolver(n.clone()));
        }
    }
    Ok(())
}

/// What decides solver `name`'s result on `case` besides the budget, seed and threads:
/// the program's contents, the whole hardware (capacities included), and the settings the
/// solver reads (the game's rules, the agent's config and the run it continues, EGRL's
/// config, the MIP backend).
pub fn settings_of(case: &Case, name: &str, config: &RaceConfig) -> serde_json::Value {
    let mut v = serde_json::json!({
        "program_hash": format!("{:016x}", case.program.content_hash()),
        "hardware": case.hw.to_file(),
    });
    if let Some(racer) = crate::registry::find(name).and_then(|e| e.race.as_ref()) {
        let mut settings = crate::race_runs::Settings::new();
        (racer.settings)(config, &mut settings);
        for (k, x) in settings {
            v[k] = x;
        }
    } else {
        // A name the race does not know reads the game's rules, as the game solvers do.
        v["options"] = serde_json::json!(config.options);
    }
    v
}

/// The settings that differ between two [`settings_of`] values, as paths
/// (`hardware.levels`, `options.slots`).
pub fn settings_differ(saved: &serde_json::Value, now: &serde_json::Value) -> Vec<String> {
    accel_sim::json_differences(saved, now, "")
        .into_iter()
        .map(|(path, _, _)| path)
        .collect()
}

/// Checks every solver's settings against `case` before any budget is spent: EGRL's and
/// the agent's configs, and the run folder the agent would continue (it must be a run of
/// this very case, and readable).
pub fn check_config(case: &Case, names: &[String], config: &RaceConfig) -> Result<(), RaceError> {
    for name in names {
        let racer = crate::registry::find(name).and_then(|e| e.race.as_ref());
        if let Some(check) = racer.and_then(|r| r.check) {
            check(case, config)?;
        }
    }
    Ok(())
}

/// A saved result checked again before it is reused: its mapping (read back from the
/// race's folder, `None` when the file is gone) must pass the validator and simulate to
/// the saved latency, and its curve must end there. `Err` says what did not hold.
pub fn recheck(
    case: &Case,
    saved: &RaceResult,
    mapping: Option<Mapping>,
) -> Result<RaceResult, String> {
    let Some(best) = saved.best_latency_s else {
        // A solver that found no valid mapping: nothing to re-check but the claim itself.
        return if saved.valid || !saved.curve.is_empty() {
            Err("it has no latency but claims a valid mapping or a curve".into())
        } else {
            Ok(saved.clone())
        };
    };
    let m = mapping.ok_or("its mapping file is missing")?;
    let (latency, proxy) =
        measure(case, &m).map_err(|e| format!("its mapping is not valid: {e}"))?;
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    if !same(latency, best) {
        return Err(format!(
            "its mapping simulates to {:.4} us, the saved result says {:.4} us",
            latency * 1e6,
            best * 1e6
        ));
    }
    let steps_down = saved
        .curve
        .windows(2)
        .all(|w| w[1].1 <= w[0].1 && w[1].0 >= w[0].0);
    let ends_at_best = saved.curve.last().is_some_and(|&(_, l)| same(l, best));
    if !(steps_down && ends_at_best) {
        return Err("its curve does not improve step by step to its best latency".into());
    }
    Ok(RaceResult {
        valid: true,
        best_latency_s: Some(latency),
        proxy_latency_s: Some(proxy),
        mapping: Some(m),
        ..saved.clone()
    })
}

/// Runs solver `name` on `case` for `config.seconds`; `on_best(elapsed_s, latency_s)` is
/// told of each improvement as it happens (for a progress display).
pub fn race_case(
    case: &Case,
    name: &str,
    config: &RaceConfig,
    on_best: &mut dyn FnMut(f64, f64),
) -> Result<RaceResult, RaceError> {
    let t0 = Instant::now();
    let racer = crate::registry::find(name)
        .and_then(|e| e.race.as_ref())
        .ok_or(RaceError::UnknownSolver(name.into()))?;
    let mut racing = Racing {
        case,
        config,
        t0,
        on_best,
    };
    let raced = (racer.run)(&mut racing)?;
    let Raced {
        curve,
        mapping,
        run_dir,
        evaluations_curve,
        proof,
        moves,
        start,
        mip_beside,
    } = raced;
    let mut result = RaceResult {
        workload: case.program.name().to_string(),
        hardware: case.hw.name.clone(),
        solver: name.to_string(),
        best_latency_s: None,
        valid: false,
        curve,
        mapping: None,
        run_dir,
        evaluations_curve,
        proxy_latency_s: None,
        proof,
        lower_bound_s: None,
        bound_source: None,
        gap_to_bound: None,
        primal_integral: None,
        settings: Some(settings_of(case, name, config)),
        moves,
        start,
        mip_beside,
        wall_s: None,
    };
    if let Some(m) = mapping {
        if let Ok((latency, proxy)) = measure(case, &m) {
            result.valid = true;
            result.best_latency_s = Some(latency);
            result.proxy_latency_s = Some(proxy);
            if result.curve.is_empty() {
                // An instant solver: one point, when it finished.
                result.curve.push((t0.elapsed().as_secs_f64(), latency));
                (racing.on_best)(t0.elapsed().as_secs_f64(), latency);
            }
        }
        result.mapping = Some(m);
    }
    result.wall_s = Some(t0.elapsed().as_secs_f64());
    Ok(result)
}

/// The agent trained by self-play for the race's budget (from scratch, or continuing
/// `--checkpoint`'s run): the `muzero` solver before it guided the local search.
pub const MUZERO_TRAIN: &str = "muzero-train";

/// What the guided solvers' names start with; the rest names the guide
/// ([`malloc_muzero::GuideKind`]).
pub const GUIDED_PREFIX: &str = "guided-";

/// A mapping of `case` validated, then its simulated and cost-model latencies; `Err` is
/// the validator's message. Every result of a race, fresh or reused, is measured so.
fn measure(case: &Case, m: &Mapping) -> Result<(f64, f64), accel_sim::MappingError> {
    m.validate(&case.program, &case.hw)?;
    let latency = Simulator::new(&case.program, &case.hw)
        .run(m, false)
        .latency_s;
    let proxy = accel_sim::CostModel::new(&case.program, &case.hw).latency(m);
    Ok((latency, proxy))
}

/// Writes `mapping` as a mapping file of `case` at `path` (atomically).
pub fn save_mapping(case: &Case, mapping: &Mapping, path: &Path) -> Result<(), RaceError> {
    let io = |msg: String| RaceError::Io {
        path: path.display().to_string(),
        msg,
    };
    let file = MappingFile::from_mapping(&case.program, mapping);
    let text = serde_json::to_string_pretty(&file).map_err(|e| io(e.to_string()))?;
    binio::write_bytes_atomic(path, text.as_bytes()).map_err(|e| io(e.to_string()))
}
