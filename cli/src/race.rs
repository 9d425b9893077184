//! `mallocmuzero race`: every solver on a case (or the suite) under the same wall-clock
//! budget and threads, one after another.
//!
//! With `--out DIR`, `DIR/results.json` is rewritten (atomically) after each solver, and a
//! race run again into the same folder with the same budget and seed keeps the results
//! already there: a race killed at any moment resumes with every result found so far (the
//! folder's format and its reuse rules are [`harness::race_folder`]'s).

use crate::case::{single_case, CaseArgs, GameArgs};
use anyhow::{anyhow, bail, Result};
use bench_workloads::suite::SuiteName;
use clap::Args;
use harness::race::{self, RaceConfig, RaceResult};
use harness::race_folder::{race_into, FolderError};
use harness::race_settings::{self, Setting};
use harness::Case;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_muzero::train::TrainConfig;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct RaceArgs {
    #[command(flatten)]
    pub case: CaseArgs,
    /// Every case of a suite, each with its own hardware and capacities: `--suite` alone
    /// (or `--suite standard`) the benchmark suite's 14 cases, `--suite scale` the scale
    /// tier's on both presets.
    #[arg(long, num_args = 0..=1, default_missing_value = "standard", value_name = "NAME", value_parser = clap::value_parser!(SuiteName), conflicts_with_all = ["workload", "hw", "fast_capacity"])]
    pub suite: Option<SuiteName>,
    /// Wall-clock seconds each solver gets.
    #[arg(long, value_parser = crate::positive_seconds)]
    pub seconds: f64,
    #[arg(long = "solver", help = solver_help())]
    pub solvers: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Threads each solver gets (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Keep each solver's best mapping, the agent's run folder, the curves (SVG) and
    /// `results.json` here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A `train` run folder: its network guides the muzero solver (instead of the bundled
    /// generalist), and muzero-train continues its training instead of starting afresh.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// A JSON training config for the muzero-train solver (fields of `TrainConfig`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What the muzero-train solver's searches step through: `game` (the default) or `learned`
    /// (over the config file's `search_model`).
    #[arg(long)]
    pub search_model: Option<malloc_muzero::SearchModel>,
    /// A JSON config for the EGRL solvers (fields of `EgrlConfig`).
    #[arg(long)]
    pub egrl_config: Option<PathBuf>,
    /// What the exact solver minimises: simulated (a relaxation of the simulator: its
    /// bound bounds every mapping's simulated latency) or proxy (XLA's cost model).
    #[arg(long, default_value = "simulated", value_parser = clap::value_parser!(exact::Objective))]
    pub exact_objective: exact::Objective,
    /// The share of muzero's budget (and the guided solvers') for which the exact solver's
    /// MIP runs beside the search, its mapping's line then one of the search's starts: 0
    /// to 0.9 (default 0.75, chosen on validation programs; docs/race.md).
    #[arg(long, value_parser = mip_share)]
    pub mip_share: Option<f64>,
    #[command(flatten)]
    pub game: GameArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `--mip-share`: a share of the budget in 0..=0.9 (the search must keep some).
fn mip_share(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if !(0.0..=0.9).contains(&v) {
        return Err(format!("{v} is not in 0..=0.9"));
    }
    Ok(v)
}

/// `--solver`'s help, from the registry: the names a race takes and its defaults.
fn solver_help() -> String {
    let named_only: Vec<&str> = harness::registry::race_names()
        .into_iter()
        .filter(|n| !harness::registry::race_default_names().contains(n))
        .collect();
    format!(
        "Solvers (repeat the flag): {}. Default: all but {}.",
        harness::registry::race_names().join(", "),
        named_only.join(", ")
    )
}

pub fn run(args: &RaceArgs) -> Result<()> {
    let solvers: Vec<String> = if args.solvers.is_empty() {
        harness::registry::race_default_names()
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        args.solvers.clone()
    };
    race::check_solvers(&solvers)?;
    let threads = crate::case::threads(args.threads)?;
    let (train, egrl) = solver_configs(args)?;
    let cases = if let Some(name) = args.suite {
        Case::suite_named(name)?
    } else {
        vec![single_case(&args.case)?]
    };
    check_flags_read(args, &solvers, cases.len())?;
    let config_of = |case: &Case| RaceConfig {
        seconds: args.seconds,
        threads,
        seed: args.seed,
        options: args.game.options(&case.hw),
        train: train.clone(),
        checkpoint: args.checkpoint.clone(),
        agent_dir: None,
        egrl: egrl.clone(),
        exact_objective: args.exact_objective,
        mip_share: args.mip_share,
    };
    // Every setting and every saved result's key is checked before the first budget
    // starts, and the folder is written once: a mistake costs nothing already spent.
    let kept = args.out.as_ref().map(|d| d.join("results.json"));
    let finished = race_into(
        args.out.as_deref(),
        &cases,
        &solvers,
        &config_of,
        &mut |case, name, config| {
            run_one(case, name, config, args.json).inspect_err(|_| {
                if let Some(p) = &kept {
                    errln!("the results so far are kept in {}", p.display());
                }
            })
        },
        &mut |case, name, why| {
            errln!(
                "{} on {}: the saved {name} result does not check out ({why}): racing it again",
                case.program.name(),
                case.hw.name
            )
        },
    )
    .map_err(|e| match (e, &args.egrl_config) {
        // A config's error names the file it came from.
        (FolderError::Race(e), Some(p)) => match *e {
            race::RaceError::EgrlConfig(m) => anyhow!("{}: {m}", p.display()),
            e => e.into(),
        },
        (e, _) => e.into(),
    })?;
    let all: Vec<RaceResult> = finished.into_iter().map(|f| f.result).collect();
    print_results(args, threads, &all);
    Ok(())
}

/// The configs of the trained and the EGRL solvers: the defaults, then the files, then the
/// flags; an EGRL file may not set what the race itself sets.
fn solver_configs(args: &RaceArgs) -> Result<(TrainConfig, egrl::EgrlConfig)> {
    let mut train = match &args.config {
        Some(path) => crate::train::read_config(path)?,
        None => TrainConfig::default(),
    };
    if let Some(m) = args.search_model {
        train.search_model = m;
    }
    let egrl = match &args.egrl_config {
        Some(path) => {
            let (config, fields) = crate::egrl::read_config_file(path)?;
            if let Some(f) = race_settings::raced_egrl_field(fields.iter().map(String::as_str)) {
                bail!(
                    "{}: field `{f}`: the race sets it (--seed, --threads, and the solver's name for the variant); remove it from the file",
                    path.display()
                );
            }
            config
        }
        None => egrl::EgrlConfig::default(),
    };
    Ok((train, egrl))
}

/// Refuses a flag that no raced solver reads, and a continued training run over many cases.
fn check_flags_read(args: &RaceArgs, solvers: &[String], n_cases: usize) -> Result<()> {
    if race_settings::continues_on_many_cases(solvers, args.checkpoint.is_some(), n_cases) {
        bail!("--checkpoint: muzero-train continues one run, so it needs one case, not --suite");
    }
    let given = [
        (
            "--checkpoint",
            args.checkpoint.is_some(),
            Setting::Checkpoint,
        ),
        ("--config", args.config.is_some(), Setting::TrainConfig),
        (
            "--search-model",
            args.search_model.is_some(),
            Setting::SearchModel,
        ),
        (
            "--egrl-config",
            args.egrl_config.is_some(),
            Setting::EgrlConfig,
        ),
        ("--mip-share", args.mip_share.is_some(), Setting::MipShare),
    ];
    if let Some(why) = race_settings::first_unread(solvers, given) {
        bail!("{why}");
    }
    Ok(())
}

/// The race's results: one JSON object (with the settings the folder keeps), or a table.
fn print_results(args: &RaceArgs, threads: usize, all: &[RaceResult]) {
    if args.json {
        // The same settings as the folder's `results.json`, so a printed race is read alone.
        outln!(
            "{}",
            serde_json::json!({
                "seconds": args.seconds,
                "seed": args.seed,
                "threads": threads,
                "results": all,
            })
        );
    } else {
        print_table(all, args.seconds);
    }
}

fn run_one(
    case: &Case,
    name: &str,
    config: &RaceConfig,
    quiet: bool,
) -> Result<RaceResult, FolderError> {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((config.seconds * 10.0).ceil() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bar:30} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let on = format!("{} on {}: {name}", case.program.name(), case.hw.name);
    let on = crate::output::shown(&on).into_owned();
    bar.set_message(on.clone());
    let t0 = Instant::now();
    let ticker = bar.clone();
    let seconds = config.seconds;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = std::sync::Arc::clone(&stop);
    let tick = std::thread::spawn(move || {
        while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
            let done = (t0.elapsed().as_secs_f64().min(seconds) * 10.0) as u64;
            ticker.set_position(done);
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let mut improvements = 0usize;
    let result = race::race_case(case, name, config, &mut |t, l| {
        improvements += 1;
        bar.set_message(format!(
            "{on}: best {:.2} us at {t:.1} s ({improvements} improvements)",
            l * 1e6
        ));
    });
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = tick.join();
    bar.finish_and_clear();
    let r = result?;
    if !quiet {
        errln!(
            "{on}: {} ({} improvements)",
            r.best_latency_s
                .map_or("no mapping".into(), |l| format!("{:.2} us", l * 1e6)),
            r.curve.len()
        );
    }
    Ok(r)
}

fn print_table(results: &[RaceResult], seconds: f64) {
    use crate::output::shown;
    outln!(
        "{:<18} {:<13} {:<13} {:>12} {:>8} {:>8} {:>8} {:>13}",
        "workload",
        "hardware",
        "solver",
        "best (us)",
        "vs xla",
        "gap",
        "primal",
        "improvements"
    );
    for r in results {
        let l = r.best_latency_s;
        // This case's xla, wherever xla stands in the solver list (or `-` if not raced).
        let xla = results
            .iter()
            .find(|x| x.solver == "xla" && x.workload == r.workload && x.hardware == r.hardware)
            .and_then(|x| x.best_latency_s);
        outln!(
            "{:<18} {:<13} {:<13} {:>12} {:>8} {:>8} {:>8} {:>13}",
            shown(&r.workload),
            shown(&r.hardware),
            shown(&r.solver),
            l.map_or("-".into(), |l| format!("{:.2}", l * 1e6)),
            match (xla, l) {
                (Some(x), Some(l)) => format!("{:.4}x", x / l),
                _ => "-".into(),
            },
            crate::evaluate::gap_cell(r.gap_to_bound),
            crate::evaluate::gap_cell(r.primal_integral),
            r.curve.len(),
        );
        if let Some(p) = &r.proof {
            outln!("    {}", crate::evaluate::proof_line(p));
        }
        if r.over_budget(seconds) {
            outln!(
                "    over budget: ended at {:.1} s of {seconds} s",
                r.wall_s.unwrap_or_default()
            );
        }
    }
    let mut cases: Vec<(&str, &str, f64, harness::bounds::BoundSource)> = Vec::new();
    for r in results {
        if let (Some(b), Some(s)) = (r.lower_bound_s, r.bound_source) {
            if !cases.iter().any(|c| c.0 == r.workload && c.1 == r.hardware) {
                cases.push((&r.workload, &r.hardware, b, s));
            }
        }
    }
    outln!();
    for (w, h, b, s) in cases {
        outln!(
            "{} on {}: {}",
            shown(w),
            shown(h),
            crate::evaluate::bound_line(b, s)
        );
    }
    outln!("`gap`: best simulated latency over the case's best proven lower bound, minus 1 (docs/exact.md).");
    outln!("`primal`: the primal integral, the mean over the budget of 1 - bound / best so far (1 before the first mapping; docs/race.md).");
}
