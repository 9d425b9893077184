//! `mallocmuzero evaluate`: solvers x cases -> validated, simulated results.

use crate::case::{single_case, CaseArgs};
use anyhow::{bail, Result};
use bench_workloads::suite::SuiteName;
use clap::Args;
use harness::{evaluate_case, Case, EvalProgress, Row, Solver, SolverContext};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub case: CaseArgs,
    /// Every case of a suite, each with its own hardware and capacities: `--suite` alone
    /// (or `--suite standard`) the benchmark suite's 14 cases, `--suite scale` the scale
    /// tier's on both presets.
    #[arg(long, num_args = 0..=1, default_missing_value = "standard", value_name = "NAME", value_parser = clap::value_parser!(SuiteName), conflicts_with_all = ["workload", "hw", "fast_capacity", "mapping"])]
    pub suite: Option<SuiteName>,
    #[arg(long = "solver", help = solver_help())]
    pub solvers: Vec<String>,
    /// Seed of the game players.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Threads a solver may use where sharing its work out leaves its result the same
    /// (the beam's steps). Solvers run one after another. Default: one per core.
    #[arg(long)]
    pub threads: Option<usize>,
    /// The run directory of a trained agent, for `--solver muzero` (without it: the
    /// bundled generalist, malloc-muzero/generalist).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Search simulations per move of `--solver muzero` (default: the run's evaluation
    /// setting).
    #[arg(long)]
    pub simulations: Option<usize>,
    /// Rounds of branch proposals `--solver muzero` makes after its game, as its self-play
    /// makes them (default 64; 0: the game alone).
    #[arg(long)]
    pub proposal_rounds: Option<usize>,
    /// What the search of `--solver muzero` steps through: `learned` (MuZero's dynamics
    /// network) or `game` (the game itself: exact rewards, the network's policy and
    /// value). Default: `game`; a run's own evaluation games searched `learned`.
    #[arg(long)]
    pub search_model: Option<String>,
    #[command(flatten)]
    pub game: crate::case::GameArgs,
    /// A mapping file (JSON, `mallocmuzero-mapping`) to evaluate beside the solvers.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    #[command(flatten)]
    pub exact: ExactArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Default for EvaluateArgs {
    /// The built-in default: resnet50 on tpu-v4i-like at its suite capacity, every solver.
    fn default() -> Self {
        EvaluateArgs {
            case: CaseArgs {
                workload: Some("resnet50".into()),
                ..CaseArgs::default()
            },
            suite: None,
            solvers: Vec::new(),
            seed: 0,
            threads: None,
            checkpoint: None,
            simulations: None,
            proposal_rounds: None,
            search_model: None,
            game: crate::case::GameArgs::default(),
            mapping: None,
            exact: ExactArgs::default(),
            json: false,
        }
    }
}

/// Settings far past what was measured (the bound each takes is far higher) run for
/// hours: said before the time is spent, with why.
fn warn_of_slow_settings(args: &EvaluateArgs) {
    // 16 simulations a move and 64 rounds of proposals are the measured defaults
    // (docs/agent.md); 256x either is hours on a suite program on one core.
    const SIMULATIONS_WARN: usize = 4096;
    const ROUNDS_WARN: usize = 16384;
    if let Some(n) = args.simulations.filter(|&n| n > SIMULATIONS_WARN) {
        errln!(
            "warning: --simulations {n}: the agent searches {n} simulations at every turn of its game (the default is 16, resnet50 has 437 turns): expect hours; the progress line counts turns"
        );
    }
    if let Some(n) = args.proposal_rounds.filter(|&n| n > ROUNDS_WARN) {
        errln!(
            "warning: --proposal-rounds {n}: each round replays the best game with new proposals (the default is 64, about 1-6 s a program): expect hours"
        );
    }
}

pub fn run(args: &EvaluateArgs) -> Result<()> {
    let cases = if let Some(name) = args.suite {
        Case::suite_named(name)?
    } else {
        vec![single_case(&args.case)?]
    };
    let ctx = SolverContext {
        seed: args.seed,
        checkpoint: args.checkpoint.clone(),
        simulations: args.simulations,
        proposal_rounds: args.proposal_rounds,
        search_model: args
            .search_model
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--search-model: {e}"))?,
        exact: args.exact.config(),
        threads: crate::case::threads(args.threads)?,
    };
    warn_of_slow_settings(args);
    let mut solvers = Solver::all_named(&args.solvers, &ctx)?;
    if let Some(path) = &args.mapping {
        solvers.push(Solver::File(path.clone()));
    }
    for solver in &solvers {
        if let Solver::MuZero(agent) = solver {
            for case in &cases {
                for w in agent.warnings(&case.program, &case.hw) {
                    errln!("warning: {w}");
                }
            }
        }
    }
    let bar = ProgressBar::new((cases.len() * solvers.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // A big program keeps one solver busy for seconds: the spinner shows it is alive.
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let talk = crate::talk::Talk::new(&bar, false);
    let mut rows = Vec::new();
    for case in &cases {
        let on = format!("{} on {}", case.program.name(), case.hw.name);
        // The reference run (xla) and the bound come first: seconds on a large program.
        talk.say(format!("{on}: the xla reference and the bound"), false);
        let options = args.game.options(&case.hw);
        let mut solver = String::new();
        let mut progress = |p: EvalProgress| match p {
            EvalProgress::Solving(name) => {
                solver = name.to_string();
                talk.say(format!("{on}: {solver}"), false);
            }
            EvalProgress::Turns { done, total } => {
                talk.say(format!("{on}: {solver}, turn {done}/{total}"), true);
            }
            EvalProgress::Solved(_) => bar.inc(1),
        };
        rows.extend(evaluate_case(case, &solvers, &options, &mut progress)?);
    }
    drop(talk);
    bar.finish_and_clear();
    if args.json {
        outln!("{}", serde_json::json!({ "results": rows }));
    } else {
        print_table(&rows);
    }
    // The table shows every row; an invalid mapping is still a failure of the command.
    if let Some(bad) = rows.iter().find(|r| !r.valid) {
        bail!(
            "{}: invalid mapping of `{}` on `{}`: {}",
            bad.solver.strip_prefix("file:").unwrap_or(&bad.solver),
            bad.workload,
            bad.hardware,
            bad.error.as_deref().unwrap_or("rejected by the validator")
        );
    }
    Ok(())
}

/// The exact solver's limits.
#[derive(Args, Clone, Debug)]
pub struct ExactArgs {
    /// Seconds the exact solver (`--solver exact`) gets in all: under the simulated
    /// objective the MIP has half, then, where it did not finish, windows a quarter, and
    /// the local search the rest; under proxy the MIP has all. An unproven MIP returns
    /// the gap it proved.
    #[arg(long, default_value_t = 60.0, value_parser = crate::positive_seconds)]
    pub exact_seconds: f64,
    /// Stop the exact solver once within this relative gap of its bound (0.01 = 1%; 0:
    /// prove the optimum).
    #[arg(long, default_value_t = 0.0, value_parser = gap_fraction)]
    pub exact_gap: f64,
    /// What the exact solver minimises: simulated (a relaxation of the simulator, so its
    /// bound is a bound on every mapping's simulated latency, and it returns the fastest
    /// simulated mapping it or the local search after it found) or proxy (XLA's cost
    /// model: the cost model's optimum, as the MIP gives it).
    #[arg(long, default_value = "simulated", value_parser = clap::value_parser!(exact::Objective))]
    pub exact_objective: exact::Objective,
    /// Windows after the whole model (the MIP repairing a window of ops of the mapping at
    /// a time, the rest fixed): auto (where the whole model did not finish), on (always),
    /// off (never). Under the simulated objective only.
    #[arg(long, default_value = "auto", value_parser = clap::value_parser!(exact::Windows))]
    pub exact_windows: exact::Windows,
}

impl Default for ExactArgs {
    fn default() -> Self {
        ExactArgs {
            exact_seconds: 60.0,
            exact_gap: 0.0,
            exact_objective: exact::Objective::default(),
            exact_windows: exact::Windows::default(),
        }
    }
}

impl ExactArgs {
    pub fn config(&self) -> exact::ExactConfig {
        exact::ExactConfig {
            seconds: self.exact_seconds,
            relative_gap: self.exact_gap,
            objective: self.exact_objective,
            windows: self.exact_windows,
        }
    }
}

fn gap_fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(g) if (0.0..1.0).contains(&g) => Ok(g),
        _ => Err(format!("expected a fraction in [0, 1), got `{text}`")),
    }
}

fn print_table(rows: &[Row]) {
    use crate::output::shown;
    use accel_sim::format_size;
    outln!(
        "{:<16} {:<13} {:>10} {:<12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>8}",
        "workload",
        "hardware",
        "fast cap",
        "solver",
        "model (us)",
        "sim (us)",
        "vs xla",
        "gap",
        "fast used",
        "solve ms"
    );
    let mut last_case = String::new();
    for (i, r) in rows.iter().enumerate() {
        let case = format!("{} {}", r.workload, r.hardware);
        if case != last_case && !last_case.is_empty() {
            outln!();
        }
        last_case = case;
        let f = |v: Option<f64>, scale: f64, prec: usize| {
            v.map_or("-".to_string(), |x| format!("{:.*}", prec, x * scale))
        };
        outln!(
            "{:<16} {:<13} {:>10} {:<12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>8.1}",
            shown(&r.workload),
            shown(&r.hardware),
            format_size(r.fast_capacity_bytes),
            shown(&r.solver),
            f(r.proxy_latency_s, 1e6, 1),
            f(r.latency_s, 1e6, 1),
            r.speedup_vs_xla.map_or("-".into(), |s| format!("{s:.3}x")),
            gap_cell(r.gap_to_bound),
            r.fast_bytes_used.map_or("-".into(), format_size),
            r.solve_s * 1e3,
        );
        if let Some(e) = &r.error {
            outln!("    invalid mapping: {}", shown(e));
        }
        if let Some(p) = &r.proof {
            outln!("    {}", proof_line(p));
        }
        let last_of_case = rows
            .get(i + 1)
            .is_none_or(|n| n.workload != r.workload || n.hardware != r.hardware);
        if last_of_case {
            outln!("    {}", bound_line(r.lower_bound_s, r.bound_source));
        }
    }
    outln!();
    outln!("`gap`: each solver's simulated latency over the case's best proven lower bound on the simulated latency of any mapping, minus 1 (docs/exact.md).");
}

/// A gap to the bound, as a table cell.
pub(crate) fn gap_cell(gap: Option<f64>) -> String {
    gap.map_or("-".into(), |g| format!("+{:.1}%", g * 100.0))
}

/// A case's bound and where it came from, in words.
pub(crate) fn bound_line(lower_bound_s: f64, source: harness::bounds::BoundSource) -> String {
    use harness::bounds::BoundSource;
    let from = match source {
        BoundSource::Physical => "the physical limit: fastest level unbounded, copies free",
        BoundSource::Exact => "the exact solver's, this run",
        BoundSource::SmallCase => "the small case's checked-in optimum",
        BoundSource::Cached => "the exact solver's, checked in for this suite case",
    };
    format!("lower bound {:.1} us ({from})", lower_bound_s * 1e6)
}

/// What the exact solver proved, in words.
pub fn proof_line(p: &harness::evaluate::Proof) -> String {
    let bound = format!(
        "lower bound {:.2} us; {} candidate holds, {} models solved by {}",
        p.lower_bound_s * 1e6,
        p.candidates,
        p.rounds,
        p.backend
    );
    let objective = match p.objective {
        exact::Objective::Simulated => "the simulator's relaxation",
        exact::Objective::Proxy => "the cost model",
    };
    let proof = if p.optimal {
        format!("exact: its model's best is optimal for {objective} ({bound})")
    } else if p.lower_bound_s <= 0.0 {
        // The limit came before the first model's root was solved.
        format!("exact: no bound proven for {objective} within the time limit ({bound})")
    } else {
        format!(
            "exact: not proven optimal for {objective} ({}): within {:.2}% of the optimum ({bound})",
            match p.status {
                exact::Status::GapReached => "gap reached",
                _ => "time limit",
            },
            p.gap * 100.0
        )
    };
    if p.polished {
        let from = match p.polished_from.as_deref() {
            Some("mip") | None => "the MIP's line".to_string(),
            Some(other) => format!("{other}'s line (faster than the MIP's)"),
        };
        format!("{proof}; its mapping is the local search's, started from {from}")
    } else {
        proof
    }
}

/// `--solver`'s help, from the registry: the names it takes and the defaults.
fn solver_help() -> String {
    format!(
        "Solvers to run (repeat the flag): {}, or beam:W (a beam of width W); muzero plays --checkpoint's run, else the bundled generalist; exact gives every row its gap to its proven optimum. Default: {}.",
        harness::registry::evaluate_names().join(", "),
        harness::evaluate::DEFAULT_SOLVERS.join(", ")
    )
}
