//! The race: every solver on one case under the same wall-clock budget and threads,
//! recording the best valid mapping each has found against time.
//!
//! Solvers: the baselines (`xla`, `xla-repack`, `greedy-size`: instant, one point each),
//! the anytime game solvers (`beam`, `local-search`, `random`: see
//! [`malloc_game::anytime`]), `muzero` (the agent: the local search with its moves drawn
//! by its network's policy, [`malloc_muzero::GuidedSearch`], the network `--checkpoint`'s
//! or the bundled generalist's), `muzero-train` (a training run for the budget, from
//! scratch or continuing a run folder, whose best counts only the agent's own games), the
//! guided searches of issue 43's ablation (`guided-uniform`, `guided-untrained`,
//! `guided-bundled`, `guided-tuned`, `guided-bundled+online`), and EGRL's solvers (`egrl`,
//! `egrl-ea`, `egrl-pg`: searches; `egrl-dp`: the knapsack mapper, instant; see the `egrl`
//! crate), and `exact` (the MIP solver, which proves its optimum where it can; its proof
//! gives every result of the case its gap to the optimum). Every result is the solver's
//! best mapping validated and simulated here, by the same simulator for all.

use crate::bounds::{best_bound, BoundSource};
use crate::evaluate::{Case, EvalError, Proof};
use crate::exact_run::{run_exact, Polish};
use crate::registry::Run;
use accel_sim::{Mapping, MappingFile, Simulator};
use malloc_game::anytime::{anytime_solver, Incumbent, Limit, Start};
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::train::{Limits, TrainConfig, TrainError, Trainer};
use malloc_muzero::{GuideKind, GuidedSearch};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The share of the agent's race budget the MIP gets before the guided search, whose
/// starts then include the MIP's line (issue 59): chosen on validation programs, never
/// the suite or the scale tier (docs/results.md, "Where the agent starts").
pub const AGENT_MIP_SHARE: f64 = 0.5;

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
    /// local search after its MIP): `mip`, `xla`, `greedy`, `beam:64`, `greedy-size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
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
    let mut set = |k: &str, x: serde_json::Value| {
        v[k] = x;
    };
    match crate::registry::run_of(name) {
        Some(Run::Baseline | Run::Knapsack) => {}
        Some(Run::Exact) => {
            set("backend", exact::BACKEND.into());
            set("objective", config.exact_objective.as_str().into());
            // The local search after the MIP plays the game by these rules.
            if config.exact_objective == exact::Objective::Simulated {
                set("options", serde_json::json!(config.options));
                set(
                    "mip_share",
                    crate::exact_run::mip_share(exact::Windows::default()).into(),
                );
                set("windows", exact::Windows::default().as_str().into());
            }
        }
        Some(Run::Agent) => {
            // The guided search plays the rules its network reads (the race's, as a rule).
            // The uniform guide decides as the bundled network does without loading it.
            let rules_of = match agent_guide(config) {
                GuideKind::Bundled => GuideKind::Uniform,
                kind => kind,
            };
            let played =
                GuidedSearch::new(rules_of, config.seed).map(|g| g.rules_for(&config.options).0);
            set(
                "options",
                serde_json::json!(played.unwrap_or(config.options.clone())),
            );
            set("guide", agent_guide_name(config).into());
            set("mip_share", config.agent_mip_share().into());
        }
        Some(Run::Train) => {
            set("options", serde_json::json!(config.options));
            let mut train = serde_json::json!(config.train);
            // Whether a run keeps its older checkpoints does not decide its result, and
            // results saved before the field existed must still match.
            if let Some(t) = train.as_object_mut() {
                t.remove("keep_checkpoints");
            }
            set("train", train);
            let checkpoint = config.checkpoint.as_ref().map(|c| c.display().to_string());
            set("checkpoint", checkpoint.into());
        }
        Some(Run::Egrl) => set("egrl", serde_json::json!(config.egrl)),
        Some(Run::Guided) => {
            // The guided searches play the rules the bundled network reads.
            let played = GuidedSearch::new(GuideKind::Uniform, config.seed)
                .map(|g| g.rules_for(&config.options).0);
            set(
                "options",
                serde_json::json!(played.unwrap_or(config.options.clone())),
            );
            set("guide", name.trim_start_matches(GUIDED_PREFIX).into());
            set("mip_share", config.agent_mip_share().into());
            if let Some(GuideKind::Online(_)) = guide_of(name) {
                set(
                    "online",
                    serde_json::json!(malloc_muzero::OnlineConfig::default()),
                );
            }
        }
        Some(Run::Anytime) | None => set("options", serde_json::json!(config.options)),
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
    let bad = |m: String| RaceError::Config(m);
    let runs = |run: Run| {
        names
            .iter()
            .any(|n| crate::registry::run_of(n) == Some(run))
    };
    if runs(Run::Egrl) || runs(Run::Knapsack) {
        config
            .egrl
            .check_for(egrl::decision_count(&case.program), case.hw.levels.len())
            .map_err(RaceError::EgrlConfig)?;
    }
    if runs(Run::Agent) {
        // The agent's network loads and reads this case before any budget is spent.
        let search = GuidedSearch::new(agent_guide(config), config.seed)?;
        search.setup(&case.program, &case.hw, &config.options)?;
    }
    if !runs(Run::Train) {
        return Ok(());
    }
    config.train.check().map_err(Box::new)?;
    let Some(dir) = &config.checkpoint else {
        return Ok(());
    };
    let info = malloc_muzero::train::read_run_info(dir).map_err(Box::new)?;
    if !info.cases.is_empty() {
        return Err(bad(format!(
            "--checkpoint {}: a multi-program run; the race continues a run of one program",
            dir.display()
        )));
    }
    let differ: Vec<String> = info
        .game_differences(
            case.program.content_hash(),
            &case.hw.to_file(),
            &config.options,
        )
        .into_iter()
        .map(|d| match d {
            "program" => format!("program (the run trains `{}`)", info.workload),
            "hardware" => format!("hardware (the run's is `{}`)", info.hardware.name),
            other => other.to_string(),
        })
        .collect();
    if !differ.is_empty() {
        return Err(bad(format!(
            "--checkpoint {}: a run of another case ({}): the agent would train it on this one; race its own case, or start the agent afresh",
            dir.display(),
            differ.join(", ")
        )));
    }
    // Its network must load: a damaged checkpoint is found now, not after other budgets.
    malloc_muzero::train::load_network(dir).map_err(Box::new)?;
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
    let mut evaluations_curve = Vec::new();
    let mut proof = None;
    let mut moves = None;
    let mut start = None;
    let run = crate::registry::run_of(name).ok_or(RaceError::UnknownSolver(name.into()))?;
    let (curve, mapping, run_dir) = match run {
        Run::Exact => {
            let exact = exact::ExactConfig {
                seconds: config.seconds,
                relative_gap: 0.0,
                objective: config.exact_objective,
                ..Default::default()
            };
            let polish = Polish {
                options: config.options.clone(),
                seed: config.seed,
                threads: config.threads,
            };
            let run = run_exact(case, &exact, &polish, on_best)?;
            proof = Some(run.proof);
            start = run.start;
            (run.curve, Some(run.solution.mapping), None)
        }
        Run::Baseline => {
            let solver = xla_msa::solver(name).ok_or(RaceError::UnknownSolver(name.into()))?;
            let m = solver.solve(&case.program, &case.hw);
            (vec![], Some(m), None)
        }
        Run::Train => {
            let (curve, mapping, dir) = race_agent(case, config, t0, on_best)?;
            (curve, mapping, Some(dir))
        }
        Run::Egrl | Run::Knapsack => {
            let deadline = t0 + Duration::from_secs_f64(config.seconds);
            let problem = egrl::Problem::new(
                Arc::clone(&case.program),
                case.hw.clone(),
                config.egrl.violation_penalty,
            )
            .map_err(egrl::EgrlError::from)?;
            let egrl_config = egrl::EgrlConfig {
                seed: config.seed,
                threads: config.threads,
                ..config.egrl.clone()
            };
            // The search's clock starts after the problem is built: race time adds that.
            let setup_s = t0.elapsed().as_secs_f64();
            let mut shifted = |t: f64, l: f64| on_best(t + setup_s, l);
            let outcome = egrl::race(name, Arc::new(problem), egrl_config, deadline, &mut shifted)
                .ok_or(RaceError::UnknownSolver(name.into()))??;
            evaluations_curve = outcome
                .curve
                .iter()
                .map(|p| (p.evaluations, p.latency_s))
                .collect();
            let curve = outcome
                .curve
                .iter()
                .map(|p| (p.elapsed_s + setup_s, p.latency_s))
                .collect();
            (curve, outcome.mapping, None)
        }
        Run::Agent | Run::Guided => {
            let kind = match run {
                Run::Agent => agent_guide(config),
                _ => guide_of(name).ok_or(RaceError::UnknownSolver(name.into()))?,
            };
            let search = GuidedSearch::new(kind, config.seed)?;
            let setup = search.setup(&case.program, &case.hw, &config.options)?;
            let incumbent = Incumbent::new(t0);
            let limit = Limit {
                deadline: t0 + Duration::from_secs_f64(config.seconds),
                threads: config.threads,
            };
            let mut ran = Ok(Default::default());
            watch(&incumbent, &limit, on_best, || {
                // The MIP's time is the search's: its line is one more start.
                let mip = mip_start(case, config, &setup);
                ran = search.run(&setup, &mip, config.seed, &limit, &incumbent);
            });
            ran?;
            moves = Some(incumbent.moves()).filter(|&n| n > 0);
            start = incumbent.start();
            let best = incumbent.best().map(|g| g.mapping());
            (incumbent.curve(), best, None)
        }
        Run::Anytime => {
            let solver = anytime_solver(name).ok_or(RaceError::UnknownSolver(name.into()))?;
            let setup = GameSetup::new(
                Arc::clone(&case.program),
                case.hw.clone(),
                config.options.clone(),
            )?;
            let incumbent = Incumbent::new(t0);
            let limit = Limit {
                deadline: t0 + Duration::from_secs_f64(config.seconds),
                threads: config.threads,
            };
            watch(&incumbent, &limit, on_best, || {
                solver.run(&setup, config.seed, &limit, &incumbent)
            });
            let best = incumbent.best().map(|g| g.mapping());
            moves = Some(incumbent.moves()).filter(|&n| n > 0);
            start = incumbent.start();
            (incumbent.curve(), best, None)
        }
    };
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
                on_best(t0.elapsed().as_secs_f64(), latency);
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

/// The `muzero` solver's guide: the network of `--checkpoint`'s run, else the bundled
/// generalist (the agent never starts a race from random weights). Not the bundled guide
/// fitted to move outcomes (`guided-tuned`): level with the generalist at equal moves, its
/// moves cost about 4% more CPU (docs/results.md, "Move outcomes, offline").
fn agent_guide(config: &RaceConfig) -> GuideKind {
    match &config.checkpoint {
        Some(dir) => GuideKind::Run(dir.clone()),
        None => GuideKind::Bundled,
    }
}

/// How a result's settings name [`agent_guide`].
fn agent_guide_name(config: &RaceConfig) -> String {
    match &config.checkpoint {
        Some(dir) => format!("run {}", dir.display()),
        None => "bundled".into(),
    }
}

/// What the guided solvers' names start with; the rest names the guide
/// ([`malloc_muzero::GuideKind`]).
pub const GUIDED_PREFIX: &str = "guided-";

/// The guide of a guided solver's name (`guided-bundled`: the bundled generalist).
pub(crate) fn guide_of(name: &str) -> Option<GuideKind> {
    name.strip_prefix(GUIDED_PREFIX)?.parse().ok()
}

/// The MIP's line for a guided search's starts: the exact solver's model solved for
/// [`RaceConfig::agent_mip_share`] of the budget, its mapping played on `setup` (its own
/// line where the game fills every level it uses). None where the share is 0 or the
/// MIP gives nothing.
fn mip_start(case: &Case, config: &RaceConfig, setup: &Arc<GameSetup>) -> Vec<Start> {
    let seconds = config.seconds * config.agent_mip_share();
    if seconds <= 0.0 {
        return Vec::new();
    }
    let exact = exact::ExactConfig {
        seconds,
        relative_gap: 0.0,
        objective: exact::Objective::Simulated,
        // Past the backend's reach the whole model would not finish its first relaxation.
        windows: exact::Windows::Auto,
    };
    let starts = exact::Exact::starts(&case.program, &case.hw);
    match exact::solve(&case.program, &case.hw, &exact, &starts) {
        Ok(s) => vec![Start::new("mip", setup.nearest_trajectory(&s.mapping))],
        Err(_) => Vec::new(),
    }
}

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

/// Runs `work` while telling `on_best` of each improvement of `incumbent`.
pub(crate) fn watch(
    incumbent: &Incumbent,
    limit: &Limit,
    on_best: &mut dyn FnMut(f64, f64),
    work: impl FnOnce() + Send,
) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            work();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut told = 0;
        loop {
            let finished = done.load(std::sync::atomic::Ordering::SeqCst);
            let curve = incumbent.curve();
            for &(t, l) in &curve[told..] {
                on_best(t, l);
            }
            told = curve.len();
            if finished {
                break;
            }
            let left = limit.deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(left.clamp(Duration::from_millis(20), Duration::from_millis(200)));
        }
    });
}

/// What the agent's race found: its curve, its best mapping, its run folder.
type AgentRace = (Vec<(f64, f64)>, Option<Mapping>, String);

/// The agent's race: a training run for the budget (its deadline checked inside each
/// iteration), its best game as the mapping.
fn race_agent(
    case: &Case,
    config: &RaceConfig,
    t0: Instant,
    on_best: &mut dyn FnMut(f64, f64),
) -> Result<AgentRace, RaceError> {
    let deadline = t0 + Duration::from_secs_f64(config.seconds);
    let dir = match &config.agent_dir {
        Some(d) => d.clone(),
        None => temp_run_dir(case),
    };
    let mut trainer = match &config.checkpoint {
        // A copy: the run the user names is theirs, and stays as it was.
        Some(from) => {
            copy_run(from, &dir)?;
            Trainer::resume(&dir, None).map_err(Box::new)?
        }
        None => {
            let setup = GameSetup::new(
                Arc::clone(&case.program),
                case.hw.clone(),
                config.options.clone(),
            )?;
            let train = TrainConfig {
                seed: config.seed,
                threads: config.threads,
                ..config.train.clone()
            };
            Trainer::start(setup, case.program.name(), train, &dir).map_err(Box::new)?
        }
    };
    let limits = Limits {
        deadline: Some(deadline),
        ..Limits::default()
    };
    let mut curve: Vec<(f64, f64)> = Vec::new();
    let stop = AtomicBool::new(false);
    trainer
        .run(&limits, &stop, &mut |p| {
            let (t, latency) = (t0.elapsed().as_secs_f64(), p.best_latency_s);
            if latency.is_finite() && curve.last().is_none_or(|&(_, l)| latency < l) {
                curve.push((t, latency));
                on_best(t, latency);
            }
        })
        .map_err(Box::new)?;
    let dir = trainer.dir().to_path_buf();
    let best = dir.join("best").join("mapping.json");
    let mapping = if best.exists() {
        let file = MappingFile::read(&best).map_err(|msg| RaceError::Io {
            path: best.display().to_string(),
            msg,
        })?;
        let m = file
            .to_mapping(&case.program)
            .map_err(|msg| RaceError::Io {
                path: best.display().to_string(),
                msg,
            })?;
        Some(m)
    } else {
        None
    };
    Ok((curve, mapping, dir.display().to_string()))
}

/// Copies the run folder `from` into `to` (a fresh folder), files and subfolders.
fn copy_run(from: &Path, to: &Path) -> Result<(), RaceError> {
    let io = |p: &Path, e: std::io::Error| RaceError::Io {
        path: p.display().to_string(),
        msg: e.to_string(),
    };
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| io(from, e))? {
        let entry = entry.map_err(|e| io(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| io(&src, e))?;
        if kind.is_dir() {
            copy_run(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| io(&src, e))?;
        }
    }
    Ok(())
}

fn temp_run_dir(case: &Case) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "mallocmuzero-race-{}-{}-{nanos}",
        std::process::id(),
        case.program.name().replace(['/', '\\', '.'], "_")
    ))
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
