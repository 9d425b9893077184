//! How near the game's lines come to the best mappings the solvers find (docs/mallocgame.md,
//! "The game's reach"): for each case, the fastest mapping any solver found, whether it is
//! a line of the game ([`GameSetup::trajectory_of`]), the latency of its line, how many of
//! that line's turns are moves given in full, and the fastest line among every solver's.
//! Under rules v3 every valid mapping is a line, so every gap should read 0.00%: this
//! checks it on any case, files included.
//!
//! ```text
//! # race the cases here (exact, local-search, greedy-size, xla-repack, xla; S s each):
//! cargo run --release -p harness --example game_reach -- --seconds 20 --suite --heldout --jax \
//!     [--case WORKLOAD[,HW[,CAPACITY]]]...
//! # or read a race folder's mappings:
//! cargo run --release -p harness --example game_reach -- RACE_FOLDER
//! ```
//!
//! `--heldout` is the 20 held-out cases (docs/results.md: four bundled models and the six
//! of bench-workloads/heldout, at 8 and 16 MiB on tpu-v4i-like); `--jax` the bundled JAX
//! programs at 16 MiB on tpu-v4i-like. Prints a Markdown table and a summary line.

use accel_sim::{Mapping, MappingFile, Simulator};
use anyhow::{bail, Context, Result};
use harness::race::{race_case, RaceConfig, RaceResult};
use harness::Case;
use malloc_game::{Decision, GameOptions, GameSetup};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The solvers raced per case: the MIP's, the heuristics' that are not lines of numbered
/// actions, and the game's own search.
const SOLVERS: [&str; 5] = ["exact", "local-search", "greedy-size", "xla-repack", "xla"];
const HELD_OUT_BUNDLED: [&str; 4] = [
    "resnet101",
    "mobilenet-v2",
    "bert-base-s384",
    "gpt2-small-s128",
];

/// One solver's mapping on a case, and its line.
struct Reached {
    solver: String,
    latency_s: f64,
    /// Where the mapping leaves the game (`None`: it is a line).
    leaves: Option<String>,
    /// The line's latency (the nearest line's where it is not one).
    line_s: f64,
    /// Turns of the line decided by moves given in full, and turns in all.
    given: usize,
    turns: usize,
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut seconds, mut threads) = (20.0, 2);
    let mut cases: Vec<Case> = Vec::new();
    let mut folder = None;
    while let Some(a) = args.next() {
        let mut value = |flag: &str| args.next().with_context(|| format!("{flag}: a value"));
        match a.as_str() {
            "--seconds" => seconds = value("--seconds")?.parse()?,
            "--threads" => threads = value("--threads")?.parse()?,
            "--suite" => cases.extend(Case::suite()?),
            "--heldout" => cases.extend(held_out()?),
            "--jax" => {
                for w in bench_workloads::hlo::names() {
                    cases.push(Case::named(Some(w), None, Some("16MiB"))?);
                }
            }
            "--case" => {
                let spec = value("--case")?;
                let mut parts = spec.split(',');
                let w = parts.next();
                cases.push(Case::named(w, parts.next(), parts.next())?);
            }
            other if !other.starts_with("--") => folder = Some(PathBuf::from(other)),
            other => bail!("unknown flag {other} (see the example's header)"),
        }
    }
    if let Some(dir) = &folder {
        cases.extend(Case::suite()?);
        println!("race folder {}\n", dir.display());
    } else {
        println!(
            "each case raced here: {} s per solver ({}), {threads} threads, seed 0\n",
            seconds,
            SOLVERS.join(", ")
        );
    }
    if cases.is_empty() {
        bail!("no cases: give --suite, --heldout, --jax, --case W[,HW[,CAP]] or a race folder");
    }
    println!("| case | best mapping (µs) | found by | a line | its line (µs) | gap | moves given in full | fastest line (µs) | from | gap |");
    println!("|---|---:|---|---|---:|---:|---:|---:|---|---:|");
    let mut gaps = Vec::new();
    let mut departures = Vec::new();
    for case in &cases {
        let options = GameOptions {
            fast_levels: case.hw.levels.len() - 1,
            ..GameOptions::default()
        };
        let mappings = match &folder {
            Some(dir) => from_folder(case, dir)?,
            None => raced(case, &options, seconds, threads)?,
        };
        if mappings.is_empty() {
            continue;
        }
        let setup = Arc::new(GameSetup::new(
            Arc::clone(&case.program),
            case.hw.clone(),
            options,
        )?);
        let reached = reach(case, &setup, &mappings);
        let best = reached
            .iter()
            .min_by(|a, b| a.latency_s.total_cmp(&b.latency_s))
            .context("a mapping")?;
        let line = reached
            .iter()
            .min_by(|a, b| a.line_s.total_cmp(&b.line_s))
            .unwrap_or(best);
        let gap = |l: f64| l / best.latency_s - 1.0;
        println!(
            "| {} on {} ({}) | {:.2} | {} | {} | {:.2} | {:.2}% | {} of {} | {:.2} | {} | {:.2}% |",
            case.program.name(),
            case.hw.name,
            human(case.fast_capacity()),
            best.latency_s * 1e6,
            best.solver,
            if best.leaves.is_none() { "yes" } else { "no" },
            best.line_s * 1e6,
            gap(best.line_s) * 100.0,
            best.given,
            best.turns,
            line.line_s * 1e6,
            line.solver,
            gap(line.line_s) * 100.0
        );
        gaps.push(gap(line.line_s));
        for r in &reached {
            if let Some(why) = &r.leaves {
                departures.push(format!(
                    "{} on {}, {}: {why}",
                    case.program.name(),
                    case.hw.name,
                    r.solver
                ));
            }
        }
    }
    let behind = gaps.iter().filter(|&&g| g > 0.0).count();
    println!(
        "\nthe fastest line is slower than the best mapping on {behind} of {} cases (largest gap {:.4}%); mappings that are not lines: {}",
        gaps.len(),
        gaps.iter().copied().fold(0.0, f64::max) * 100.0,
        departures.len()
    );
    for d in departures {
        println!("- {d}");
    }
    Ok(())
}

/// The 20 held-out cases: four bundled models and the six files of
/// bench-workloads/heldout, at 8 and 16 MiB on tpu-v4i-like.
fn held_out() -> Result<Vec<Case>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-workloads/heldout");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    let programs = HELD_OUT_BUNDLED.iter().map(|s| s.to_string()).chain(files);
    let mut cases = Vec::new();
    for w in programs {
        for cap in ["8MiB", "16MiB"] {
            cases.push(Case::named(Some(&w), Some("tpu-v4i-like"), Some(cap))?);
        }
    }
    Ok(cases)
}

fn human(bytes: u64) -> String {
    format!("{} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Each solver's best mapping on `case`, raced here for `seconds`.
fn raced(
    case: &Case,
    options: &GameOptions,
    seconds: f64,
    threads: usize,
) -> Result<Vec<(String, Mapping)>> {
    let config = RaceConfig {
        seconds,
        threads,
        seed: 0,
        options: options.clone(),
        train: Default::default(),
        checkpoint: None,
        agent_dir: None,
        egrl: Default::default(),
        exact_objective: exact::Objective::Simulated,
        mip_share: None,
    };
    let mut out = Vec::new();
    for solver in SOLVERS {
        let r = race_case(case, solver, &config, &mut |_, _| {})?;
        if let (true, Some(m)) = (r.valid, r.mapping) {
            out.push((solver.to_string(), m));
        }
    }
    Ok(out)
}

/// The valid mappings a race folder kept for `case`.
fn from_folder(case: &Case, dir: &Path) -> Result<Vec<(String, Mapping)>> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    #[derive(serde::Deserialize)]
    struct Results {
        results: Vec<RaceResult>,
    }
    let saved: Results = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
    let sub = harness::race_folder::case_folder(case);
    let mut out = Vec::new();
    for r in saved
        .results
        .iter()
        .filter(|r| r.valid && r.workload == case.program.name() && r.hardware == case.hw.name)
    {
        let path = dir.join(&sub).join(format!("{}.mapping.json", r.solver));
        let mapping = MappingFile::read(&path)
            .and_then(|f| f.to_mapping(&case.program))
            .map_err(anyhow::Error::msg)
            .with_context(|| path.display().to_string())?;
        out.push((r.solver.clone(), mapping));
    }
    Ok(out)
}

/// Every mapping simulated here, with its line (or its nearest line where it is none).
fn reach(case: &Case, setup: &Arc<GameSetup>, mappings: &[(String, Mapping)]) -> Vec<Reached> {
    let mut sim = Simulator::new(&case.program, &case.hw);
    mappings
        .iter()
        .map(|(solver, mapping)| {
            let latency_s = sim.run(mapping, false).latency_s;
            let (game, leaves) = match setup.trajectory_of(mapping) {
                Ok(g) => (g, None),
                Err(e) => (setup.nearest_trajectory(mapping), Some(e.to_string())),
            };
            let decisions = game.decisions();
            Reached {
                solver: solver.clone(),
                latency_s,
                leaves,
                line_s: game.final_latency().unwrap_or(f64::INFINITY),
                given: decisions
                    .iter()
                    .filter(|d| matches!(d, Decision::Move(_)))
                    .count(),
                turns: decisions.len(),
            }
        })
        .collect()
}
