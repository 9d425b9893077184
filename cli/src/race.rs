//! `mallocmuzero race`: every solver on a case (or the suite) under the same wall-clock
//! budget and threads, one after another.
//!
//! With `--out DIR`, `DIR/results.json` is rewritten (atomically) after each solver, and a
//! race run again into the same folder with the same budget and seed keeps the results
//! already there: a race killed at any moment resumes with every result found so far.

use crate::case::{single_case, CaseArgs, GameArgs};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use harness::race::{self, RaceConfig, RaceResult};
use harness::Case;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_muzero::train::TrainConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct RaceArgs {
    #[command(flatten)]
    pub case: CaseArgs,
    /// Every case of the benchmark suite.
    #[arg(long, conflicts_with_all = ["workload", "hw", "fast_capacity"])]
    pub suite: bool,
    /// Wall-clock seconds each solver gets.
    #[arg(long, value_parser = crate::positive_seconds)]
    pub seconds: f64,
    /// Solvers (repeat the flag; default all but muzero-train and the guided ones): xla,
    /// xla-repack, greedy-size, beam, local-search, random, muzero, muzero-train,
    /// guided-uniform, guided-untrained, guided-bundled, egrl, egrl-ea, egrl-pg, egrl-dp,
    /// exact.
    #[arg(long = "solver")]
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
    #[command(flatten)]
    pub game: GameArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What `results.json` holds now: 2 added each result's settings (its reuse key).
const RESULTS_VERSION: u32 = 2;

/// `results.json`: the race's settings and every result so far.
#[derive(Serialize, Deserialize, Default)]
struct Saved {
    /// [`RESULTS_VERSION`] when written; absent (1) in files of older builds.
    #[serde(default = "version_1")]
    version: u32,
    seconds: f64,
    seed: u64,
    threads: usize,
    results: Vec<RaceResult>,
}

fn version_1() -> u32 {
    1
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
            // The race sets these for every solver alike; a file's own would be dropped
            // without a word.
            let raced = ["seed", "threads", "variant"];
            if let Some(f) = fields.iter().find(|f| raced.contains(&f.as_str())) {
                bail!(
                    "{}: field `{f}`: the race sets it (--seed, --threads, and the solver's name for the variant); remove it from the file",
                    path.display()
                );
            }
            config
        }
        None => egrl::EgrlConfig::default(),
    };
    let cases = if args.suite {
        Case::suite()?
    } else {
        vec![single_case(&args.case)?]
    };
    let training = solvers.iter().any(|s| s == race::MUZERO_TRAIN);
    if args.checkpoint.is_some() && training && cases.len() > 1 {
        bail!("--checkpoint: muzero-train continues one run, so it needs one case, not --suite");
    }
    for (flag, given, readers) in [
        (
            "--checkpoint",
            args.checkpoint.is_some(),
            &["muzero", race::MUZERO_TRAIN][..],
        ),
        ("--config", args.config.is_some(), &[race::MUZERO_TRAIN][..]),
        (
            "--search-model",
            args.search_model.is_some(),
            &[race::MUZERO_TRAIN][..],
        ),
    ] {
        if given && !solvers.iter().any(|s| readers.contains(&s.as_str())) {
            bail!(
                "{flag}: only the {} solver reads it, and it is not in this race",
                readers.join(" or ")
            );
        }
    }
    if args.egrl_config.is_some()
        && !solvers
            .iter()
            .any(|s| harness::registry::run_of(s).is_some_and(|r| r.reads_egrl_config()))
    {
        bail!("--egrl-config: only the EGRL solvers read it, and none is in this race");
    }
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
    };
    // Every setting and every saved result's key is checked before the first budget
    // starts, and the folder is written once: a mistake costs nothing already spent.
    for case in &cases {
        race::check_config(case, &solvers, &config_of(case)).map_err(|e| {
            // A config's error names the file it came from.
            match (e, &args.egrl_config) {
                (race::RaceError::EgrlConfig(m), Some(p)) => anyhow!("{}: {m}", p.display()),
                (e, _) => e.into(),
            }
        })?;
    }
    // One race writes a folder at a time; what a killed race's writes left is swept.
    let _lock = match &args.out {
        Some(dir) => Some(lock_out(dir, &cases)?),
        None => None,
    };
    let mut saved = read_saved(args, threads)?;
    for case in &cases {
        for name in &solvers {
            check_saved_settings(&saved, case, name, &config_of(case), args)?;
        }
    }
    write_saved(args, &saved)?;
    let mut all = Vec::new();
    for case in &cases {
        let case_dir = args.out.as_ref().map(|d| d.join(case_folder(case)));
        let mut results = Vec::new();
        for name in &solvers {
            if let Some(r) = reuse_saved(&mut saved, case, name, case_dir.as_deref()) {
                results.push(r);
                continue;
            }
            let config = RaceConfig {
                agent_dir: if name == race::MUZERO_TRAIN {
                    agent_dir(case_dir.as_deref())?
                } else {
                    None
                },
                ..config_of(case)
            };
            let r = match run_one(case, name, &config, args.json) {
                Ok(r) => r,
                Err(e) => {
                    if let Some(p) = results_path(args) {
                        eprintln!("the results so far are kept in {}", p.display());
                    }
                    return Err(e);
                }
            };
            if let (Some(dir), Some(m)) = (&case_dir, &r.mapping) {
                std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
                race::save_mapping(case, m, &dir.join(format!("{name}.mapping.json")))?;
            }
            saved.results.push(r.clone());
            write_saved(args, &saved)?;
            results.push(r);
        }
        race::fill_gaps(&mut results, case, args.seconds)?;
        // results.json gets the gaps too, once the case's solvers are done.
        for r in &results {
            if let Some(s) = saved.results.iter_mut().find(|s| {
                s.workload == r.workload && s.hardware == r.hardware && s.solver == r.solver
            }) {
                (s.lower_bound_s, s.bound_source) = (r.lower_bound_s, r.bound_source);
                (s.gap_to_bound, s.primal_integral) = (r.gap_to_bound, r.primal_integral);
            }
        }
        write_saved(args, &saved)?;
        if let Some(dir) = &case_dir {
            write_svg(case, &results, args.seconds, dir)?;
        }
        all.extend(results);
    }
    if args.json {
        outln!("{}", serde_json::json!({ "results": all }));
    } else {
        print_table(&all);
    }
    Ok(())
}

/// Locks the race folder `dir` for this process and removes the temporary files of
/// writes a killed race left in it and in its cases' folders.
fn lock_out(dir: &Path, cases: &[Case]) -> Result<binio::FolderLock> {
    let lock = binio::FolderLock::acquire(dir)?;
    binio::remove_temp_files(dir)?;
    for case in cases {
        binio::remove_temp_files(&dir.join(case_folder(case)))?;
    }
    Ok(lock)
}

fn case_folder(case: &Case) -> String {
    format!("{}-{}", case.program.name(), case.hw.name).replace(['/', '\\', ' '], "_")
}

/// The agent's run folder under the case's folder; one left by a race killed before its
/// result was saved is removed (its budget was not spent to the end).
fn agent_dir(case_dir: Option<&Path>) -> Result<Option<PathBuf>> {
    let Some(dir) = case_dir else {
        return Ok(None);
    };
    let run = dir.join("muzero-run");
    if run.exists() {
        std::fs::remove_dir_all(&run).with_context(|| format!("{}", run.display()))?;
    }
    Ok(Some(run))
}

fn run_one(case: &Case, name: &str, config: &RaceConfig, quiet: bool) -> Result<RaceResult> {
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
        eprintln!(
            "{on}: {} ({} improvements)",
            r.best_latency_s
                .map_or("no mapping".into(), |l| format!("{:.2} us", l * 1e6)),
            r.curve.len()
        );
    }
    Ok(r)
}

fn results_path(args: &RaceArgs) -> Option<PathBuf> {
    args.out.as_ref().map(|d| d.join("results.json"))
}

/// The results of an earlier race into the same folder, if it had the same budget, seed
/// and threads; one with other settings is an error rather than a mix.
fn read_saved(args: &RaceArgs, threads: usize) -> Result<Saved> {
    let fresh = Saved {
        version: RESULTS_VERSION,
        seconds: args.seconds,
        seed: args.seed,
        threads,
        results: Vec::new(),
    };
    let Some(path) = results_path(args).filter(|p| p.exists()) else {
        return Ok(fresh);
    };
    let text = accel_sim::read_text(&path)?;
    let saved: Saved =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    if saved.version != RESULTS_VERSION {
        bail!(
            "{}: field `version`: written by an older build (version {}; this build writes {RESULTS_VERSION}, whose results carry the settings they were found under); pick another --out",
            path.display(),
            saved.version
        );
    }
    if saved.seconds != args.seconds || saved.seed != args.seed || saved.threads != threads {
        bail!(
            "{}: holds a race with --seconds {} --seed {} --threads {}; pick another --out",
            path.display(),
            saved.seconds,
            saved.seed,
            saved.threads
        );
    }
    Ok(saved)
}

fn saved_index(saved: &Saved, case: &Case, solver: &str) -> Option<usize> {
    saved.results.iter().position(|r| {
        r.workload == case.program.name() && r.hardware == case.hw.name && r.solver == solver
    })
}

/// A saved result of `solver` on `case` found under other settings (another capacity,
/// other rules, another config) is not this race's: an error naming what differs.
fn check_saved_settings(
    saved: &Saved,
    case: &Case,
    solver: &str,
    config: &RaceConfig,
    args: &RaceArgs,
) -> Result<()> {
    let Some(i) = saved_index(saved, case, solver) else {
        return Ok(());
    };
    let now = race::settings_of(case, solver, config);
    let differ = match &saved.results[i].settings {
        Some(s) => race::settings_differ(s, &now),
        None => vec!["settings (not recorded)".to_string()],
    };
    if !differ.is_empty() {
        bail!(
            "{}: holds {solver} on {} on {} raced with other settings ({}); pick another --out",
            results_path(args).unwrap_or_default().display(),
            case.program.name(),
            case.hw.name,
            differ.join(", ")
        );
    }
    Ok(())
}

/// The saved result of `solver` on `case`, re-validated and re-simulated from its mapping
/// file; one that does not check out is dropped (with a warning) and raced again.
fn reuse_saved(
    saved: &mut Saved,
    case: &Case,
    solver: &str,
    case_dir: Option<&Path>,
) -> Option<RaceResult> {
    let i = saved_index(saved, case, solver)?;
    let mapping = case_dir.and_then(|dir| {
        let path = dir.join(format!("{solver}.mapping.json"));
        harness::evaluate::read_mapping(&path, &case.program).ok()
    });
    match race::recheck(case, &saved.results[i], mapping) {
        Ok(r) => Some(r),
        Err(why) => {
            eprintln!(
                "{} on {}: the saved {solver} result does not check out ({why}): racing it again",
                case.program.name(),
                case.hw.name
            );
            saved.results.remove(i);
            None
        }
    }
}

fn write_saved(args: &RaceArgs, saved: &Saved) -> Result<()> {
    let Some(path) = results_path(args) else {
        return Ok(());
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(saved)?;
    binio::write_bytes_atomic(&path, text.as_bytes())?;
    Ok(())
}

fn write_svg(case: &Case, results: &[RaceResult], seconds: f64, dir: &Path) -> Result<()> {
    let xla = harness::evaluate::xla_latency(&case.program, &case.hw)?;
    let title = format!(
        "{} on {}: best mapping against time",
        case.program.name(),
        case.hw.name
    );
    let svg = harness::curves::curves_svg(&title, results, seconds, xla);
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    binio::write_bytes_atomic(&dir.join("curves.svg"), svg.as_bytes())?;
    if results.iter().any(|r| !r.evaluations_curve.is_empty()) {
        let title = format!(
            "{} on {}: best mapping against mappings evaluated",
            case.program.name(),
            case.hw.name
        );
        let svg = harness::curves::evaluations_svg(&title, results, xla);
        binio::write_bytes_atomic(&dir.join("evaluations.svg"), svg.as_bytes())?;
    }
    Ok(())
}

fn print_table(results: &[RaceResult]) {
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
    let mut xla = None;
    for r in results {
        let l = r.best_latency_s;
        if r.solver == "xla" {
            xla = l;
        }
        outln!(
            "{:<18} {:<13} {:<13} {:>12} {:>8} {:>8} {:>8} {:>13}",
            r.workload,
            r.hardware,
            r.solver,
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
        outln!("{w} on {h}: {}", crate::evaluate::bound_line(b, s));
    }
    outln!("`gap`: best simulated latency over the case's best proven lower bound, minus 1 (docs/exact.md).");
    outln!("`primal`: the primal integral, the mean over the budget of 1 - bound / best so far (1 before the first mapping; docs/race.md).");
}
