//! `mallocmuzero train-egrl`: the EGRL search (or one of its ablations) on one case, into a
//! run folder with `train`'s conventions (docs/egrl.md).
//!
//! Ctrl-C (or SIGTERM) stops after the current generation and writes a checkpoint; a
//! checkpoint is also written every `--checkpoint-seconds`, so a run killed with -9 loses
//! at most that much; `--resume DIR` continues exactly.

use anyhow::{bail, Context, Result};
use clap::Args;
use egrl::{EgrlConfig, RunFolder, RunLimits};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct TrainEgrlArgs {
    #[command(flatten)]
    pub case: crate::case::CaseArgs,
    /// egrl (population and learner), egrl-ea (population alone), egrl-pg (learner alone).
    /// Default: the config file's `variant`, else egrl; given, it wins over the config file.
    #[arg(long)]
    pub variant: Option<String>,
    /// Wall-clock minutes of this session (default 3 unless --generations is given).
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Stop once the run has this many generations in all.
    #[arg(long)]
    pub generations: Option<u64>,
    /// The run folder (default runs/egrl-<workload>-seed<seed>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the run in this folder.
    #[arg(long, conflicts_with_all = ["out", "workload", "hw", "fast_capacity", "seed", "config", "variant"])]
    pub resume: Option<PathBuf>,
    /// Default: the config file's `seed`, else 0; given, it wins over the config file.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Threads (default: the config file's `threads`, else one per core); given, it wins
    /// over the config file. Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// A JSON config: an object of `EgrlConfig`'s fields (absent fields keep their
    /// defaults). Settings merge as defaults < this file < flags: --variant, --seed and
    /// --threads, when given, win over the config file (a note names each such override).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Seconds between checkpoints.
    #[arg(long, default_value_t = 30.0, value_parser = crate::positive_seconds)]
    pub checkpoint_seconds: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TrainEgrlArgs) -> Result<()> {
    if args.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        bail!("--minutes: must be > 0");
    }
    if args.generations == Some(0) {
        bail!("--generations: must be >= 1");
    }
    let threads = crate::case::threads_given(args.threads)?;
    let stop = Arc::new(AtomicBool::new(false));
    let bar = crate::train::spinner(args.json);
    let running = Arc::new(AtomicBool::new(false));
    crate::train::install_interrupt_handler(
        Arc::clone(&stop),
        Arc::clone(&running),
        bar.clone(),
        "stopping after this generation, then writing a checkpoint",
    )?;
    let (folder, mut search) = match &args.resume {
        Some(dir) => RunFolder::resume(dir, threads)?,
        None => start(args, threads)?,
    };
    running.store(true, Ordering::SeqCst);
    if !args.json {
        errln!(
            "{} on {} ({} decisions) on {} into {}{}",
            search.config().variant.name(),
            crate::output::shown(search.problem().program().name()),
            search.problem().decisions().len(),
            crate::output::shown(&search.problem().hardware().name),
            folder.root().display(),
            // Generations counted from 1, as metrics.jsonl and --generations count them.
            match search.generation() {
                0 => String::new(),
                g => format!(" (resumed after generation {g})"),
            }
        );
    }
    let minutes = args.minutes.or(args.generations.is_none().then_some(3.0));
    let limits = RunLimits {
        deadline: minutes.map(|m| Instant::now() + Duration::from_secs_f64(m * 60.0)),
        generations: args.generations,
        evaluations: None,
    };
    let every = Duration::from_secs_f64(args.checkpoint_seconds);
    let mut last_save = Instant::now();
    let (t0, evals0) = (Instant::now(), search.evaluations());
    search.run(&limits, &stop, &mut |s, m| {
        let speed = (s.evaluations() - evals0) as f64 / t0.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "generation {} | {} evaluations ({speed:.0}/s) | best {:.2} us | top {} fitness {:.4}",
            m.generation,
            m.evaluations,
            m.best_latency_s * 1e6,
            m.top_by,
            m.top_fitness
        ));
        bar.tick();
        if last_save.elapsed() >= every {
            folder.save(s)?;
            last_save = Instant::now();
        }
        Ok(())
    })?;
    folder.save(&search)?;
    bar.finish_and_clear();
    report(&folder, &search, args.json)?;
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        errln!(
            "interrupted after generation {}: checkpoint and best mapping written; continue with: mallocmuzero train-egrl --resume {}",
            search.generation(),
            folder.root().display()
        );
        std::process::exit(crate::train::INTERRUPTED);
    }
    Ok(())
}

fn start(args: &TrainEgrlArgs, threads: Option<usize>) -> Result<(RunFolder, egrl::Egrl)> {
    let (mut config, in_file) = match &args.config {
        Some(path) => read_config_file(path)?,
        None => (EgrlConfig::default(), Vec::new()),
    };
    let origin = config_origin(args);
    // defaults < file < flags: a flag overrides only when given, and says so when the file
    // set that field otherwise (printed once the run is made, so an error stays one line).
    let mut notes = Vec::new();
    let mut overridden = |field: &str, file_value: String, flag_value: String| {
        if in_file.iter().any(|f| f == field) && file_value != flag_value {
            notes.push(format!(
                "note: --{field} {flag_value} overrides `{field}` {file_value} of {origin}"
            ));
        }
    };
    if let Some(name) = &args.variant {
        let variant = harness::registry::egrl_variant(name).with_context(|| {
            let known = harness::registry::egrl_variant_names().join(", ");
            format!("--variant: unknown `{name}` ({known})")
        })?;
        overridden("variant", config.variant.name().into(), name.clone());
        config.variant = variant;
    }
    if let Some(s) = args.seed {
        overridden("seed", config.seed.to_string(), s.to_string());
        config.seed = s;
    }
    if let Some(t) = threads {
        overridden("threads", config.threads.to_string(), t.to_string());
        config.threads = t;
    }
    config
        .check()
        .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    let mut case_args = args.case.clone();
    let workload = case_args
        .workload
        .get_or_insert_with(|| "resnet50".into())
        .clone();
    if case_args.hw.is_none() {
        case_args.hw = Some("nnp-i-like".into());
    }
    let case = crate::case::single_case(&case_args)?;
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "egrl-{}-seed{}",
            workload.replace(['/', '\\', '.'], "_"),
            config.seed
        ))
    });
    // The bounds that depend on the case's size are checked here, against the config.
    let made =
        RunFolder::create(&dir, &workload, case.program, case.hw, config).map_err(|e| match e {
            egrl::EgrlError::Config(m) => anyhow::anyhow!("{origin}: {m}"),
            e => e.into(),
        })?;
    for n in notes {
        errln!("{n}");
    }
    Ok(made)
}

fn config_origin(args: &TrainEgrlArgs) -> String {
    args.config
        .as_ref()
        .map_or("config".into(), |p| p.display().to_string())
}

/// A config file and the names of the fields it sets.
pub(crate) fn read_config_file(path: &Path) -> Result<(EgrlConfig, Vec<String>)> {
    let text = accel_sim::read_text(path)?;
    EgrlConfig::from_json_with_fields(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn report(folder: &RunFolder, search: &egrl::Egrl, json: bool) -> Result<()> {
    let problem = search.problem();
    let xla = harness::evaluate::xla_latency(problem.program(), problem.hardware())?;
    let best = search.best();
    if json {
        let v = serde_json::json!({
            "run": folder.root().display().to_string(),
            "solver": search.config().variant.name(),
            "generations": search.generation(),
            "evaluations": search.evaluations(),
            "best_latency_s": best.map(|b| b.latency_s),
            "xla_latency_s": xla,
            "all_slow_latency_s": problem.all_slow_s(),
        });
        outln!("{v}");
        return Ok(());
    }
    match best {
        Some(b) => outln!(
            "{}: best {:.2} us ({:.4}x xla, {:.4}x all-slow) after {} generations, {} evaluations; mapping in {}",
            search.config().variant.name(),
            b.latency_s * 1e6,
            xla / b.latency_s,
            problem.all_slow_s() / b.latency_s,
            search.generation(),
            search.evaluations(),
            folder.root().join("best").join("mapping.json").display()
        ),
        None => outln!("no generation ran"),
    }
    Ok(())
}
