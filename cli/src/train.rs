//! `mallocmuzero train`: self-play training of the mallocMuZero agent on one case.

use crate::evaluate;
use crate::play::GameArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use malloc_game::GameSetup;
use muzero::train::{self, Limits, TrainConfig};
use std::path::PathBuf;
use std::sync::Arc;

/// The built-in default of `train` with no arguments: a case small enough to learn in a
/// few minutes on 2 cores.
pub const DEFAULT_WORKLOAD: &str = "alexnet";
pub const DEFAULT_MINUTES: f64 = 3.0;

#[derive(Args, Clone)]
pub struct TrainArgs {
    #[command(flatten)]
    pub case: evaluate::CaseArgs,
    /// Stop after this many minutes (default 3, unless --steps is given).
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Stop after this many training steps in total.
    #[arg(long)]
    pub steps: Option<u64>,
    /// The run directory (default `runs/<workload>-seed<S>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the run saved in this directory.
    #[arg(long, conflicts_with_all = ["out", "workload", "hw", "fast_capacity"])]
    pub resume: Option<PathBuf>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// A JSON training config (fields of `TrainConfig`; missing ones take defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub game: GameArgs,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TrainArgs) -> Result<()> {
    let limits = Limits {
        minutes: args.minutes.or(if args.steps.is_none() {
            Some(DEFAULT_MINUTES)
        } else {
            None
        }),
        steps: args.steps,
    };
    if limits.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        bail!("--minutes: must be > 0");
    }
    let mut config: TrainConfig = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?
        }
        None => TrainConfig::default(),
    };
    let (setup, workload, dir, resume) = match &args.resume {
        Some(dir) => {
            let info = train::read_run_info(dir)?;
            let program = bench_workloads::load(&info.workload)
                .with_context(|| format!("the workload of {}", dir.display()))?;
            let hw = info
                .hardware
                .clone()
                .into_hardware(&format!("{}/run.json: ", dir.display()))?;
            if args.config.is_none() {
                config = info.config.clone();
            }
            let setup = GameSetup::new(Arc::new(program), hw, info.options.clone())?;
            (setup, info.workload, dir.clone(), true)
        }
        None => {
            let mut case_args = args.case.clone();
            if case_args.workload.is_none() {
                case_args.workload = Some(DEFAULT_WORKLOAD.into());
            }
            let case = evaluate::single_case(&case_args)?;
            let workload = case_args.workload.clone().unwrap_or_default();
            if let Some(s) = args.seed {
                config.seed = s;
            }
            let dir = args.out.clone().unwrap_or_else(|| {
                PathBuf::from("runs").join(format!(
                    "{}-seed{}",
                    workload.replace(['/', '\\', '.'], "_"),
                    config.seed
                ))
            });
            if dir.join("run.json").exists() {
                bail!(
                    "{} already holds a run: continue it with --resume {}, or pick another --out",
                    dir.display(),
                    dir.display()
                );
            }
            let options = args.game.options(&case.hw);
            let setup = GameSetup::new(Arc::new(case.program), case.hw, options)?;
            (setup, workload, dir, false)
        }
    };
    if !args.json {
        eprintln!(
            "training on {} ({} buffers) on {} into {}{}",
            workload,
            setup.program().buffers().len(),
            setup.hardware().name,
            dir.display(),
            if resume { " (resumed)" } else { "" }
        );
    }
    let summary = train::train(Arc::clone(&setup), &workload, config, &dir, resume, limits)?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
        return Ok(());
    }
    println!(
        "{} iterations, {} training steps, {} positions in {:.1} s",
        summary.iterations, summary.train_steps, summary.positions, summary.elapsed_s
    );
    println!(
        "agent: best mapping found {:.2} us ({:.4}x vs xla at {:.2} us; all-slow {:.2} us); last evaluation game {}",
        summary.best_latency_s * 1e6,
        summary.xla_latency_s / summary.best_latency_s,
        summary.xla_latency_s * 1e6,
        summary.all_slow_latency_s * 1e6,
        summary
            .eval_latency_s
            .map_or("-".into(), |l| format!("{:.2} us ({:.4}x vs xla)", l * 1e6, summary.xla_latency_s / l))
    );
    println!(
        "run: {} (best/mapping.json, best/game.game, metrics.jsonl; continue with --resume {})",
        dir.display(),
        dir.display()
    );
    Ok(())
}
