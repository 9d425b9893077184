//! `mallocmuzero train`: self-play training of the mallocMuZero agent on one case, or on
//! many at once (`--suite`, `--cases FILE`: one network for every program); one
//! [`Trainer`] either way, started, run and reported by one path.
//!
//! Ctrl-C (or SIGTERM) stops training cleanly: the current iteration is cancelled (its
//! games dropped, as at a time limit), a checkpoint is written (the best mapping is on disk from the moment it was found), the
//! summary is printed with how to continue, and the command exits with status 130
//! ([`INTERRUPTED`]). A second Ctrl-C exits at once, also with 130; the run folder stays
//! consistent (every file is written atomically) and `--resume` continues from its last
//! checkpoint.

use crate::case::GameArgs;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_game::GameSetup;
use malloc_muzero::generalist::{self, CaseSpec};
use malloc_muzero::train::{Demonstrations, TrainCase, INIT_BUNDLED};
use malloc_muzero::train::{Limits, Progress, TrainConfig, TrainError, TrainSummary, Trainer};
use malloc_muzero::SearchModel;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The built-in default of `train` with no arguments: a case small enough to learn in a
/// few minutes on 2 cores where those minutes beat every instant heuristic (on alexnet,
/// greedy-size's mapping is the proven optimum; on bert-base-s128, the greedy player's).
pub const DEFAULT_WORKLOAD: &str = "unet";
pub const DEFAULT_MINUTES: f64 = 3.0;
/// The exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, the shell's
/// convention), so scripts can tell it from a run that reached its limits.
pub const INTERRUPTED: i32 = 130;

#[derive(Args, Clone)]
pub struct TrainArgs {
    #[command(flatten)]
    pub case: crate::case::CaseArgs,
    /// Stop after this many minutes of this session (default 3, unless --steps is given).
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Stop after this many training steps in total (>= 1; counts those of a resumed run).
    #[arg(long)]
    pub steps: Option<u64>,
    /// The run directory (default `runs/<workload>-seed<S>`). A folder whose run stopped
    /// before its first checkpoint may be started again.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the run saved in this directory (from its newest checkpoint, or afresh if
    /// it has none); the program, hardware and game options come from the folder.
    #[arg(long, conflicts_with_all = ["out", "workload", "hw", "fast_capacity", "seed", "slots", "order", "fast_levels"])]
    pub resume: Option<PathBuf>,
    /// With --resume: start that run afresh from its run.json, deleting its checkpoints and
    /// metrics (its best mappings stay). Without it nothing is deleted: a run whose
    /// checkpoints/latest.json is lost resumes from its newest complete checkpoint, or is
    /// refused with what is there.
    #[arg(long, requires = "resume")]
    pub restart: bool,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Self-play threads beside the learner (default: one per core; the run keeps the
    /// number, and a run repeats exactly for the same seed and threads).
    #[arg(long, conflicts_with = "resume")]
    pub threads: Option<usize>,
    /// Fine-tune: start from the network of the run in this folder (its newest
    /// checkpoint), or `bundled` (the generalist shipped with the project; a folder of
    /// that name is `./bundled`), instead of random weights. The game must have the same
    /// options and number of fast levels as that run's.
    #[arg(long, conflicts_with = "resume")]
    pub init: Option<PathBuf>,
    /// Train one network on the generalist's training cases (every training workload on
    /// every training hardware; see malloc-muzero/generalist/README.md).
    #[arg(long, conflicts_with_all = ["resume", "workload", "hw", "fast_capacity", "cases"])]
    pub suite: bool,
    /// Train one network on the cases of this JSON file: a list of
    /// `{"workload": W, "hw": H, "fast_capacity": C}` (hw and capacity optional).
    #[arg(long, conflicts_with_all = ["resume", "workload", "hw", "fast_capacity"])]
    pub cases: Option<PathBuf>,
    /// A JSON training config (fields of `TrainConfig`; missing ones take defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What every search of the run steps through: `game` (the default: the game itself,
    /// exact rewards, the network as prior and value) or `learned` (MuZero's learned model).
    #[arg(long, conflicts_with = "resume")]
    pub search_model: Option<SearchModel>,
    /// Keep every checkpoint in `checkpoints/`, not only the newest, to choose among them
    /// afterwards (each holds the replay buffers: 95 MB after a minute on resnet50, 785 MB
    /// for the generalist's suite run).
    #[arg(long, conflicts_with = "resume")]
    pub keep_checkpoints: bool,
    #[command(flatten)]
    pub game: GameArgs,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TrainArgs) -> Result<()> {
    let limits = limits(args)?;
    let config = match &args.config {
        Some(path) => Some(read_config(path)?),
        None => None,
    };
    let bar = spinner(args.json);
    // Installed before anything is written, so no interrupt finds a half-made run.
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicBool::new(false));
    install_interrupt_handler(
        Arc::clone(&stop),
        Arc::clone(&running),
        bar.clone(),
        "stopping now (the iteration running is dropped), then writing a checkpoint",
    )?;
    // Loading a large program and playing its baselines and demonstrations takes a while
    // before the first iteration, and the first iteration longer still: the spinner and
    // its clock run throughout.
    let talk = crate::talk::Talk::new(&bar, false);
    talk.say(
        "loading the run's program and preparing its baselines and demonstrations".into(),
        false,
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut trainer = match &args.resume {
        Some(dir) => Trainer::resume_or_restart(dir, config, args.restart, &demonstrations())?,
        None if args.suite || args.cases.is_some() => start_cases(args, config, &bar)?,
        None => start(args, config)?,
    };
    if let Some(note) = trainer.resume_note() {
        bar.suspend(|| errln!("note: {note}"));
    }
    if !args.json {
        announce(&trainer, args.resume.is_some(), args.restart);
    }
    talk.say(
        format!(
            "iteration {}: demonstrations, self-play and learning",
            trainer.iterations()
        ),
        false,
    );
    let mut render = renderer(
        (trainer.train_steps(), trainer.positions()),
        &talk,
        limits.steps,
    );
    running.store(true, Ordering::SeqCst);
    let summary = trainer.run(&limits, &stop, &mut render)?;
    drop(render);
    drop(talk);
    bar.finish_and_clear();
    report(&summary, &trainer, args.json)?;
    exit_if_interrupted(summary.interrupted, summary.iterations, trainer.dir());
    Ok(())
}

fn exit_if_interrupted(interrupted: bool, iterations: u64, dir: &Path) {
    if interrupted {
        let saved = match iterations {
            // Nothing completed, nothing to checkpoint: a resume starts the run afresh.
            0 => "no iteration completed, so no checkpoint (the best mapping found is written)",
            _ => "checkpoint and best mapping written",
        };
        errln!(
            "interrupted after {iterations} iterations: {saved}; continue with: mallocmuzero train --resume {}",
            dir.display()
        );
        std::process::exit(INTERRUPTED);
    }
}

fn limits(args: &TrainArgs) -> Result<Limits> {
    if args.steps == Some(0) {
        bail!("--steps: must be >= 1 (a run of 0 steps would train nothing)");
    }
    if args.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        bail!("--minutes: must be > 0");
    }
    let default_minutes = args.steps.is_none().then_some(DEFAULT_MINUTES);
    Ok(Limits {
        minutes: args.minutes.or(default_minutes),
        steps: args.steps,
        deadline: None,
    })
}

pub(crate) fn read_config(path: &Path) -> Result<TrainConfig> {
    let text = accel_sim::read_text(path)?;
    let config = TrainConfig::from_json(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    config
        .check()
        .and_then(|()| demonstrations().check(&config.demonstrations))
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(config)
}

/// The demonstrations a run may ask for: the registry's.
fn demonstrations() -> Demonstrations {
    harness::registry::demonstrations()
}

/// The first Ctrl-C raises `stop`; the second exits at once.
/// The progress line of a long run (hidden when the output is JSON).
pub(crate) fn spinner(hidden: bool) -> ProgressBar {
    let bar = if hidden {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

/// `running` is raised once the run's loop starts: before it (loading, baselines,
/// demonstrations: minutes on a large program) there is nothing to checkpoint, and an
/// interrupt exits at once. `stopping` says what the run does on the first interrupt.
pub(crate) fn install_interrupt_handler(
    stop: Arc<AtomicBool>,
    running: Arc<AtomicBool>,
    bar: ProgressBar,
    stopping: &'static str,
) -> Result<()> {
    ctrlc::set_handler(move || {
        if !running.load(Ordering::SeqCst) {
            bar.suspend(|| errln!("interrupted while preparing the run: nothing to checkpoint yet (every file written is whole); exiting"));
            std::process::exit(INTERRUPTED);
        }
        if stop.swap(true, Ordering::SeqCst) {
            errln!("interrupted again: exiting now (resume continues from the last checkpoint)");
            std::process::exit(INTERRUPTED);
        }
        bar.suspend(|| errln!("interrupt: {stopping} (Ctrl-C again to exit at once)"));
    })
    .context("cannot install the Ctrl-C handler")
}

/// A flag over the config file's field: `field` takes `given` when the flag is set, with a
/// note where the file had set the field to something else.
fn flag_over_file<T: std::fmt::Display>(
    flag: &str,
    given: Option<T>,
    field: &mut T,
    default: &T,
    from_file: bool,
) {
    let Some(given) = given else { return };
    let (file, given_s) = (field.to_string(), given.to_string());
    if from_file && file != default.to_string() && file != given_s {
        errln!("note: {flag} {given_s} overrides the config file's {file}");
    }
    *field = given;
}

/// The run's config: the file's (or the defaults) with the flags applied.
fn config_of(args: &TrainArgs, config: Option<TrainConfig>) -> Result<TrainConfig> {
    let from_file = config.is_some();
    let mut config = config.unwrap_or_default();
    let defaults = TrainConfig::default();
    flag_over_file(
        "--seed",
        args.seed,
        &mut config.seed,
        &defaults.seed,
        from_file,
    );
    flag_over_file(
        "--threads",
        crate::case::threads_given(args.threads)?,
        &mut config.threads,
        &defaults.threads,
        from_file,
    );
    flag_over_file(
        "--search-model",
        args.search_model,
        &mut config.search_model,
        &defaults.search_model,
        from_file,
    );
    // A switch: given, it keeps them; absent, the file decides.
    config.keep_checkpoints |= args.keep_checkpoints;
    if let (Some(file), Some(given)) = (&config.init, &args.init) {
        if from_file && *file != given.display().to_string() {
            errln!(
                "note: --init {} overrides the config file's init {file}",
                given.display()
            );
        }
    }
    if let Some(init) = &args.init {
        if init.as_os_str() == INIT_BUNDLED {
            config.init = Some(INIT_BUNDLED.into());
        } else {
            // Absolute, so a restart of this run from another folder finds it.
            let path = std::fs::canonicalize(init)
                .with_context(|| format!("--init {}: no such run folder", init.display()))?;
            config.init = Some(path.display().to_string());
        }
    }
    Ok(config)
}

/// `runs/<what>-seed<S>` unless `--out` says otherwise.
fn out_dir(args: &TrainArgs, what: &str, seed: u64) -> PathBuf {
    args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "{}-seed{seed}",
            what.replace(['/', '\\', '.'], "_")
        ))
    })
}

/// The game flags, with the reward kind of the run `config.init` names where `--reward`
/// is not given: fine-tuning plays the game its network was trained on (the bundled
/// generalist predates reward kinds: `proxy`).
fn game_of(game: &GameArgs, config: &TrainConfig) -> Result<GameArgs> {
    let mut game = game.clone();
    if let (None, Some(init)) = (game.reward, &config.init) {
        game.reward = Some(malloc_muzero::train::init_info(init)?.options.reward);
    }
    Ok(game)
}

/// A new run of the case the flags name.
fn start(args: &TrainArgs, config: Option<TrainConfig>) -> Result<Trainer> {
    let config = config_of(args, config)?;
    let mut case_args = args.case.clone();
    let workload = case_args
        .workload
        .get_or_insert_with(|| DEFAULT_WORKLOAD.into())
        .clone();
    let case = crate::case::single_case(&case_args)?;
    let dir = out_dir(args, &workload, config.seed);
    let options = game_of(&args.game, &config)?.options(&case.hw);
    let setup = GameSetup::new(case.program, case.hw, options)?;
    let started = Trainer::start(setup, &workload, config, &dir, &demonstrations());
    refuse_existing(started, &dir)
}

/// A new run of the cases of `--suite` or `--cases` (of one program when the file lists
/// one case).
fn start_cases(
    args: &TrainArgs,
    config: Option<TrainConfig>,
    bar: &ProgressBar,
) -> Result<Trainer> {
    let config = config_of(args, config)?;
    let (specs, origin) = match &args.cases {
        Some(path) => (read_cases(path)?, path.display().to_string()),
        None => (generalist::training_cases(), "--suite".to_string()),
    };
    // Loading and preparing many cases takes a while before the first iteration: shown.
    let mut named = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        bar.set_message(format!(
            "loading case {}/{} ({})",
            i + 1,
            specs.len(),
            spec.workload
        ));
        bar.tick();
        let case = harness::Case::named(
            Some(&spec.workload),
            spec.hw.as_deref(),
            spec.fast_capacity.as_deref(),
        )
        .with_context(|| format!("{origin}: case {i} (`{}`)", spec.workload))?;
        named.push((i, spec, case));
    }
    // One network plays every case, so every case plays by the same options: without
    // --fast-levels, the fewest fast levels any case's hardware has.
    let mut game = game_of(&args.game, &config)?;
    if game.fast_levels.is_none() {
        game.fast_levels = named.iter().map(|(_, _, c)| c.hw.levels.len() - 1).min();
    }
    let mut cases = Vec::with_capacity(named.len());
    for (i, spec, case) in named {
        let capacity = case.hw.levels[case.hw.fastest()].capacity;
        let name = format!(
            "{}@{}/{}",
            spec.workload,
            case.hw.name,
            if capacity % (1 << 20) == 0 {
                format!("{}MiB", capacity >> 20)
            } else {
                format!("{capacity}B")
            }
        );
        let options = game.options(&case.hw);
        let setup = GameSetup::new(case.program, case.hw, options)
            .with_context(|| format!("{origin}: case {i} (`{name}`)"))?;
        cases.push(TrainCase {
            name,
            workload: spec.workload.clone(),
            setup,
        });
    }
    let what = if args.suite { "suite" } else { "cases" };
    let dir = out_dir(args, what, config.seed);
    bar.set_message(format!(
        "preparing {} cases (baselines and demonstrations)",
        cases.len()
    ));
    let started = Trainer::start_cases(cases, config, &dir, &demonstrations());
    refuse_existing(started, &dir)
}

/// A `--cases` file: a non-empty JSON list of cases.
fn read_cases(path: &Path) -> Result<Vec<CaseSpec>> {
    let text = accel_sim::read_text(path)?;
    let cases: Vec<CaseSpec> =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    if cases.is_empty() {
        bail!("{}: the list of cases is empty", path.display());
    }
    if cases.len() > malloc_muzero::train::MAX_CASES {
        bail!(
            "{}: {} cases; a multi-program run takes at most {} (one case an iteration: more would each be seen too rarely to learn from)",
            path.display(),
            cases.len(),
            malloc_muzero::train::MAX_CASES
        );
    }
    Ok(cases)
}

/// A folder that already holds a run is the user's to resume or keep, not to overwrite.
fn refuse_existing<T>(started: Result<T, TrainError>, dir: &Path) -> Result<T> {
    match started {
        Err(TrainError::RunExists { what, .. }) => bail!(
            "{} already holds a run {what}: continue it with --resume {}, or pick another --out",
            dir.display(),
            dir.display()
        ),
        other => Ok(other?),
    }
}

fn announce(trainer: &Trainer, resume: bool, restart: bool) {
    let setup = trainer.setup();
    let how = match (resume, trainer.iterations()) {
        (false, _) => String::new(),
        (true, 0) if restart => " (restarted: its checkpoints and metrics deleted)".into(),
        (true, 0) => " (it had no checkpoint: started afresh)".into(),
        (true, n) => format!(" (resumed after iteration {})", n - 1),
    };
    if trainer.is_multi() {
        errln!(
            "training one network on {} cases into {}{how}",
            trainer.case_names().len(),
            trainer.dir().display(),
        );
        return;
    }
    errln!(
        "training on {} ({} buffers) on {} into {}{how}",
        crate::output::shown(&trainer.info().workload),
        setup.program().buffers().len(),
        crate::output::shown(&setup.hardware().name),
        trainer.dir().display(),
    );
}

/// Draws each iteration's progress on `bar`: steps, the best latency and the speed of this
/// session.
fn renderer(
    (steps0, positions0): (u64, u64),
    talk: &crate::talk::Talk,
    step_limit: Option<u64>,
) -> impl FnMut(&Progress) + '_ {
    let t0 = Instant::now();
    move |p: &Progress| {
        let s = t0.elapsed().as_secs_f64().max(1e-9);
        let steps = match step_limit {
            Some(l) => format!("{}/{l}", p.train_steps),
            None => p.train_steps.to_string(),
        };
        let case = p.case.as_ref().map_or(String::new(), |c| format!("  {c}"));
        talk.say(format!(
            "iteration {}{case}  steps {steps}  loss {:.4}  best {:.2} us ({:.4}x vs xla {:.2} us)  eval {}  {:.1} steps/s  {:.0} positions/s",
            p.iteration,
            p.loss,
            p.best_latency_s * 1e6,
            p.speedup_vs_xla,
            p.xla_latency_s * 1e6,
            p.eval_latency_s.map_or("-".into(), |l| format!("{:.2} us", l * 1e6)),
            (p.train_steps - steps0) as f64 / s,
            (p.positions - positions0) as f64 / s,
        ), true);
    }
}

/// Prints `summary` as one JSON line; `false` when the output is text, which the caller
/// prints, starting with the counts line.
fn printed_as_json(summary: &TrainSummary, json: bool) -> Result<bool> {
    if json {
        outln!("{}", serde_json::to_string(summary)?);
        return Ok(true);
    }
    outln!(
        "{} iterations, {} training steps, {} positions in {:.1} s",
        summary.iterations,
        summary.train_steps,
        summary.positions,
        summary.elapsed_s
    );
    Ok(false)
}

/// The cases' table of a multi-program run.
fn report_cases(summary: &TrainSummary, dir: &Path) {
    outln!(
        "{:<40} {:>11} {:>11} {:>8} {:>11}",
        "case",
        "xla (us)",
        "best (us)",
        "vs xla",
        "eval (us)"
    );
    let us = |v: Option<f64>| v.map_or("-".to_string(), |l| format!("{:.2}", l * 1e6));
    for c in &summary.cases {
        let speedup = c
            .best_latency_s
            .map_or("-".to_string(), |b| format!("{:.4}x", c.xla_latency_s / b));
        outln!(
            "{:<40} {:>11.2} {:>11} {:>8} {:>11}",
            crate::output::shown(&c.name),
            c.xla_latency_s * 1e6,
            us(c.best_latency_s),
            speedup,
            us(c.eval_latency_s)
        );
    }
    outln!(
        "run: {d} (the network: its newest checkpoint; play it with `evaluate --solver muzero --checkpoint {d}`; continue with --resume {d})",
        d = dir.display()
    );
}

fn report(summary: &TrainSummary, trainer: &Trainer, json: bool) -> Result<()> {
    let dir = trainer.dir();
    if printed_as_json(summary, json)? {
        return Ok(());
    }
    if !summary.cases.is_empty() {
        report_cases(summary, dir);
        return Ok(());
    }
    outln!(
        "agent: best mapping found {} (xla {:.2} us; all-slow {:.2} us); last evaluation game {}",
        summary
            .best_latency_s
            .map_or("- (no game finished)".into(), |l| format!(
                "{:.2} us ({:.4}x vs xla)",
                l * 1e6,
                summary.xla_latency_s / l
            )),
        summary.xla_latency_s * 1e6,
        summary.all_slow_latency_s * 1e6,
        summary.eval_latency_s.map_or("-".into(), |l| format!(
            "{:.2} us ({:.4}x vs xla)",
            l * 1e6,
            summary.xla_latency_s / l
        ))
    );
    if let Some(best) = summary.best_latency_s {
        report_reference(best, trainer.setup());
    }
    outln!(
        "run: {d} (best/mapping.json, best/game.game, best/compare-xla.html: the best game against xla's in a browser, metrics.jsonl; replay with `replay {d}/best/game.game`; continue with --resume {d})",
        d = dir.display()
    );
    Ok(())
}

/// The agent's best beside the fastest instant heuristic and the case's proven bound: a
/// run that only matches a heuristic found in milliseconds should say so.
fn report_reference(best_s: f64, setup: &GameSetup) {
    let case = harness::Case {
        program: Arc::clone(setup.program_arc()),
        hw: setup.hardware().clone(),
    };
    let r = match harness::reference::reference(&case, setup.options()) {
        Ok(r) => r,
        Err(e) => {
            outln!("against: the instant heuristics could not be run: {e}");
            return;
        }
    };
    let verdict = match best_s / r.heuristic_latency_s {
        x if x < 1.0 - 1e-9 => format!("the agent {:.2}% faster", (1.0 - x) * 100.0),
        x if x > 1.0 + 1e-9 => format!("the agent {:.2}% slower", (x - 1.0) * 100.0),
        _ => "the agent no faster".to_string(),
    };
    let bound = match r.bound.source {
        harness::bounds::BoundSource::Physical => "the physical limit",
        _ => "the proven lower bound",
    };
    let gap = r.bound.gap(best_s);
    let room = if gap <= 1e-9 {
        "the agent is at it: no mapping is faster".to_string()
    } else {
        format!("the agent is {:.2}% above it", gap * 100.0)
    };
    outln!(
        "against: the best instant heuristic, {} {:.2} us (of {} run in {:.2} s): {verdict}; {bound} {:.2} us: {room}",
        r.heuristic,
        r.heuristic_latency_s * 1e6,
        harness::reference::INSTANT_HEURISTICS.join(", "),
        r.solve_s,
        r.bound.lower_bound_s * 1e6,
    );
}
