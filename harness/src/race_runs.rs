//! How each kind of race solver runs, and what decides its result: the functions the
//! registry's entries ([`crate::registry::Racer`]) point at. Each run gets the case, the
//! race's config, its start and the improvement callback ([`Racing`]) and answers with
//! what it found ([`Raced`]); [`crate::race::race_case`] validates, simulates and records
//! it, the same for every solver.

use crate::evaluate::{Case, Proof};
use crate::exact_run::{run_exact, MipBeside, Polish};
use crate::injection::{inject, Injected, Injection};
use crate::race::{RaceConfig, RaceError};
use accel_sim::{Mapping, MappingFile};
use malloc_game::anytime::{AnytimeSolver, Incumbent, Limit, Start};
use malloc_game::GameSetup;
use malloc_muzero::train::{Limits, TrainConfig, Trainer};
use malloc_muzero::{Beside, GuideKind, GuidedSearch};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xla_msa::OneShotSolver;

/// What one solver's race run gets.
pub struct Racing<'a> {
    /// The case.
    pub case: &'a Case,
    /// The race's config.
    pub config: &'a RaceConfig,
    /// When the solver's clock started.
    pub t0: Instant,
    /// Told `(elapsed_s, latency_s)` of each improvement as it happens.
    pub on_best: &'a mut dyn FnMut(f64, f64),
}

impl Racing<'_> {
    /// The solver's deadline and threads.
    fn limit(&self) -> Limit {
        Limit {
            deadline: self.deadline(),
            threads: self.config.threads,
            stop: None,
        }
    }

    fn deadline(&self) -> Instant {
        self.t0 + Duration::from_secs_f64(self.config.seconds)
    }
}

/// What a solver's race run found, before the race measures it.
#[derive(Debug, Default)]
pub struct Raced {
    /// `(elapsed_s, latency_s)` at each improvement; empty for an instant solver.
    pub curve: Vec<(f64, f64)>,
    /// Its best mapping.
    pub mapping: Option<Mapping>,
    /// The agent's run folder.
    pub run_dir: Option<String>,
    /// `(evaluations, latency_s)` at each improvement, for EGRL's solvers.
    pub evaluations_curve: Vec<(u64, f64)>,
    /// What the exact solver proved.
    pub proof: Option<Proof>,
    /// Moves tried, where counted.
    pub moves: Option<u64>,
    /// The line its search started from.
    pub start: Option<String>,
    /// What the MIP beside its search did (the `muzero` and guided solvers).
    pub mip_beside: Option<MipBeside>,
}

/// A one-shot solver: instant, one point.
pub fn one_point(solver: &dyn OneShotSolver, r: &mut Racing) -> Result<Raced, RaceError> {
    Ok(Raced {
        mapping: Some(solver.solve(&r.case.program, &r.case.hw)),
        ..Raced::default()
    })
}

/// An anytime game solver under the race's rules.
pub fn anytime(solver: &dyn AnytimeSolver, r: &mut Racing) -> Result<Raced, RaceError> {
    let (case, config) = (r.case, r.config);
    let setup = GameSetup::new(
        Arc::clone(&case.program),
        case.hw.clone(),
        config.options.clone(),
    )?;
    let incumbent = Incumbent::new(r.t0);
    let limit = r.limit();
    watch(&incumbent, &limit, r.on_best, || {
        solver.run(&setup, config.seed, &limit, &incumbent)
    });
    Ok(Raced {
        mapping: incumbent.best().map(|g| g.mapping()),
        moves: Some(incumbent.moves()).filter(|&n| n > 0),
        start: incumbent.start(),
        curve: incumbent.curve(),
        ..Raced::default()
    })
}

/// EGRL's problem of the case, under the race's config.
fn egrl_problem(r: &Racing) -> Result<egrl::Problem, RaceError> {
    let problem = egrl::Problem::new(
        Arc::clone(&r.case.program),
        r.case.hw.clone(),
        r.config.egrl.violation_penalty,
    );
    Ok(problem.map_err(egrl::EgrlError::from)?)
}

/// EGRL's search of `variant`, with the race's EGRL config, seed and threads.
pub fn egrl_search(variant: egrl::Variant, r: &mut Racing) -> Result<Raced, RaceError> {
    let deadline = r.deadline();
    let problem = egrl_problem(r)?;
    let config = egrl::EgrlConfig {
        variant,
        seed: r.config.seed,
        threads: r.config.threads,
        ..r.config.egrl.clone()
    };
    // The search's clock starts after the problem is built: race time adds that.
    let setup_s = r.t0.elapsed().as_secs_f64();
    let on_best = &mut *r.on_best;
    let mut shifted = |t: f64, l: f64| on_best(t + setup_s, l);
    let outcome = egrl::race(Arc::new(problem), config, deadline, &mut shifted)?;
    Ok(egrl_raced(outcome, setup_s))
}

/// EGRL's knapsack mapper: instant, one point.
pub fn egrl_knapsack(r: &mut Racing) -> Result<Raced, RaceError> {
    let problem = egrl_problem(r)?;
    let setup_s = r.t0.elapsed().as_secs_f64();
    let on_best = &mut *r.on_best;
    let mut shifted = |t: f64, l: f64| on_best(t + setup_s, l);
    let outcome = egrl::race_knapsack(&problem, &mut shifted);
    Ok(egrl_raced(outcome, setup_s))
}

fn egrl_raced(outcome: egrl::RaceOutcome, setup_s: f64) -> Raced {
    Raced {
        evaluations_curve: outcome
            .curve
            .iter()
            .map(|p| (p.evaluations, p.latency_s))
            .collect(),
        curve: outcome
            .curve
            .iter()
            .map(|p| (p.elapsed_s + setup_s, p.latency_s))
            .collect(),
        mapping: outcome.mapping,
        ..Raced::default()
    }
}

/// The MIP, then the local search for the budget left.
pub fn exact(r: &mut Racing) -> Result<Raced, RaceError> {
    let config = r.config;
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
    let run = run_exact(r.case, &exact, &polish, r.on_best)?;
    Ok(Raced {
        curve: run.curve,
        mapping: Some(run.solution.mapping),
        proof: Some(run.proof),
        start: run.start,
        ..Raced::default()
    })
}

/// The `muzero` solver: the local search guided by [`agent_guide`], its starts the MIP's
/// line among the heuristics'.
pub fn agent(r: &mut Racing) -> Result<Raced, RaceError> {
    guided(agent_guide(r.config), r)
}

/// The local search with its moves drawn by the guide `kind`, its starts the MIP's line
/// ([`RaceConfig::agent_mip_share`] of the budget) among the heuristics'.
pub fn guided(kind: GuideKind, r: &mut Racing) -> Result<Raced, RaceError> {
    guided_from(kind, Injection::None, r)
}

/// [`guided`] with `injection`'s starts and trust region ([`crate::injection`]), made
/// within the budget.
pub fn guided_from(
    kind: GuideKind,
    injection: Injection,
    r: &mut Racing,
) -> Result<Raced, RaceError> {
    let (case, config) = (r.case, r.config);
    let search = GuidedSearch::new(kind, config.seed)?;
    let setup = search.setup(&case.program, &case.hw, &config.options)?;
    let incumbent = Incumbent::new(r.t0);
    let limit = r.limit();
    let mut ran = Ok(Default::default());
    let mut mip_beside = None;
    watch(&incumbent, &limit, r.on_best, || {
        let began = Instant::now();
        let injected = match inject(injection, &setup, &limit) {
            Ok(injected) => injected,
            Err(e) => {
                ran = Err(RaceError::from(e));
                return;
            }
        };
        // The MIP's time is the search's: it runs beside the search on one of its
        // threads, and its line is one more start once it returns. The injection was
        // made in its share.
        let share_s = config.seconds * config.agent_mip_share();
        let seconds = share_s - began.elapsed().as_secs_f64();
        ran = if share_s > 0.0 {
            let mip = Beside {
                until: began + Duration::from_secs_f64(share_s),
                run: Box::new(|| {
                    let (starts, report) =
                        mip_start(case, seconds, config.seed, &setup, &injected, &incumbent);
                    mip_beside = report;
                    starts
                }),
                known: injected.starts.clone(),
            };
            search
                .run_beside(&setup, mip, config.seed, &limit, &incumbent)
                .map_err(RaceError::from)
        } else {
            search
                .run(&setup, &injected.starts, config.seed, &limit, &incumbent)
                .map_err(RaceError::from)
        };
    });
    ran?;
    Ok(Raced {
        moves: Some(incumbent.moves()).filter(|&n| n > 0),
        start: incumbent.start(),
        mapping: incumbent.best().map(|g| g.mapping()),
        curve: incumbent.curve(),
        mip_beside,
        ..Raced::default()
    })
}

/// The agent trained by self-play for the budget (`muzero-train`).
pub fn train(r: &mut Racing) -> Result<Raced, RaceError> {
    let (curve, mapping, dir) = race_agent(r.case, r.config, r.t0, r.on_best)?;
    Ok(Raced {
        curve,
        mapping,
        run_dir: Some(dir),
        ..Raced::default()
    })
}

/// The settings that decide one kind of solver's result, written into a result's
/// [`crate::race::settings_of`] (beside the program and hardware every result has).
pub type Settings = serde_json::Map<String, serde_json::Value>;

/// A solver that reads nothing but its case (the baselines, EGRL's knapsack mapper).
pub fn no_settings(_: &RaceConfig, _: &mut Settings) {}

/// A solver that plays the game by the race's rules.
pub fn rules_settings(config: &RaceConfig, v: &mut Settings) {
    v.insert("options".into(), serde_json::json!(config.options));
}

/// EGRL's searches: their config.
pub fn egrl_settings(config: &RaceConfig, v: &mut Settings) {
    v.insert("egrl".into(), serde_json::json!(config.egrl));
}

/// The exact solver: its backend and objective, and the local search after its MIP.
pub fn exact_settings(config: &RaceConfig, v: &mut Settings) {
    v.insert("backend".into(), exact::BACKEND.into());
    v.insert("objective".into(), config.exact_objective.as_str().into());
    // The local search after the MIP plays the game by these rules.
    if config.exact_objective == exact::Objective::Simulated {
        v.insert("options".into(), serde_json::json!(config.options));
        let share = crate::exact_run::mip_share(exact::Windows::default());
        v.insert("mip_share".into(), share.into());
        v.insert("windows".into(), exact::Windows::default().as_str().into());
    }
}

/// `muzero`: the rules its network plays, its guide and the MIP's share.
pub fn agent_settings(config: &RaceConfig, v: &mut Settings) {
    // The guided search plays the rules its network reads (the race's, as a rule).
    // The uniform guide decides as the bundled network does without loading it.
    let rules_of = match agent_guide(config) {
        GuideKind::Bundled => GuideKind::Uniform,
        kind => kind,
    };
    let played = GuidedSearch::new(rules_of, config.seed).map(|g| g.rules_for(&config.options).0);
    v.insert(
        "options".into(),
        serde_json::json!(played.unwrap_or(config.options.clone())),
    );
    v.insert("guide".into(), agent_guide_name(config).into());
    v.insert("mip_share".into(), config.agent_mip_share().into());
}

/// `muzero` with an injection ([`crate::injection`]): its settings, the injection's name
/// and its trust region's rule.
pub fn injected_settings(injection: Injection, config: &RaceConfig, v: &mut Settings) {
    let bundled = RaceConfig {
        checkpoint: None,
        ..config.clone()
    };
    agent_settings(&bundled, v);
    v.insert("injection".into(), injection.as_str().into());
    v.insert(
        "region_delta".into(),
        serde_json::json!({
            "fraction": 1.0 / crate::injection::REGION_DELTA_DIVISOR as f64,
            "min": crate::injection::MIN_REGION_DELTA,
        }),
    );
}

/// A guided search of issue 43's ablation: the rules the bundled network reads, the
/// guide's name, the MIP's share, and the online learner's config where its guide learns.
pub fn guided_settings(guide: &str, online: bool, config: &RaceConfig, v: &mut Settings) {
    let played =
        GuidedSearch::new(GuideKind::Uniform, config.seed).map(|g| g.rules_for(&config.options).0);
    v.insert(
        "options".into(),
        serde_json::json!(played.unwrap_or(config.options.clone())),
    );
    v.insert("guide".into(), guide.into());
    v.insert("mip_share".into(), config.agent_mip_share().into());
    if online {
        let online = malloc_muzero::OnlineConfig::default();
        v.insert("online".into(), serde_json::json!(online));
    }
}

/// `muzero-train`: the rules, its training config, and the run it continues.
pub fn train_settings(config: &RaceConfig, v: &mut Settings) {
    v.insert("options".into(), serde_json::json!(config.options));
    let mut train = serde_json::json!(config.train);
    // Whether a run keeps its older checkpoints does not decide its result, and
    // results saved before the field existed must still match.
    if let Some(t) = train.as_object_mut() {
        t.remove("keep_checkpoints");
    }
    v.insert("train".into(), train);
    let checkpoint = config.checkpoint.as_ref().map(|c| c.display().to_string());
    v.insert("checkpoint".into(), checkpoint.into());
}

/// EGRL's solvers: their config fits the case.
pub fn check_egrl(case: &Case, config: &RaceConfig) -> Result<(), RaceError> {
    config
        .egrl
        .check_for(egrl::decision_count(&case.program), case.hw.levels.len())
        .map_err(RaceError::EgrlConfig)
}

/// `muzero`: its network loads and reads this case before any budget is spent.
pub fn check_agent(case: &Case, config: &RaceConfig) -> Result<(), RaceError> {
    let search = GuidedSearch::new(agent_guide(config), config.seed)?;
    search.setup(&case.program, &case.hw, &config.options)?;
    Ok(())
}

/// `muzero-train`: its training config, and the run folder it would continue (a run of
/// this very case, and readable).
pub fn check_train(case: &Case, config: &RaceConfig) -> Result<(), RaceError> {
    let bad = |m: String| RaceError::Config(m);
    config.train.check().map_err(Box::new)?;
    crate::registry::demonstrations()
        .check(&config.train.demonstrations)
        .map_err(Box::new)?;
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

/// The MIP's line for a guided search's starts: the exact solver's mapping
/// ([`crate::exact_run::mip_mapping`]: the MIP, then windows repairing the fastest of its
/// mapping and the search's best in `incumbent`) within `seconds`, played on `setup` as
/// its own line, and what the MIP did. No start where the MIP gives nothing.
fn mip_start(
    case: &Case,
    seconds: f64,
    seed: u64,
    setup: &Arc<GameSetup>,
    injected: &Injected,
    incumbent: &Incumbent,
) -> (Vec<Start>, Option<MipBeside>) {
    match crate::exact_run::mip_mapping(case, seconds, seed, injected, incumbent) {
        Some((m, report)) => {
            let start = Start::new(&report.line, setup.nearest_trajectory(&m));
            (vec![start], Some(report))
        }
        None => (Vec::new(), None),
    }
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
            Trainer::resume(&dir, None, &crate::registry::demonstrations()).map_err(Box::new)?
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
            let known = crate::registry::demonstrations();
            Trainer::start(setup, case.program.name(), train, &dir, &known).map_err(Box::new)?
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
