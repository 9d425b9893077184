//! How near the game's lines come to the best mappings a race found (docs/mallocgame.md,
//! "The game's reach"): for each suite case of a race folder, the fastest mapping any
//! solver found, whether it is a line of the game, the game's nearest line to it
//! ([`GameSetup::nearest_trajectory`]) under the race's rules and with every offset slot
//! on offer ([`MAX_SLOTS`]), and the fastest line among the nearest lines of every
//! solver's mapping (a game solver's mapping is a line, so its own nearest line). The
//! race's rules are the `options` its game solvers were raced under.
//!
//! ```text
//! mallocmuzero race --suite --seconds 35 --threads 2 --solver exact \
//!     --solver local-search --solver greedy-size --solver xla --out DIR
//! cargo run --release -p harness --example game_reach -- DIR
//! ```
//!
//! Prints a Markdown table and a summary line.

use accel_sim::{MappingFile, Simulator};
use anyhow::{bail, Context, Result};
use harness::race::RaceResult;
use harness::Case;
use malloc_game::{GameOptions, GameSetup, MAX_SLOTS};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The part of a race folder's `results.json` this reads.
#[derive(serde::Deserialize)]
struct Results {
    seconds: f64,
    seed: u64,
    threads: usize,
    results: Vec<RaceResult>,
}

/// One solver's mapping on a case, and the game's nearest line to it.
struct Reached {
    solver: String,
    latency_s: f64,
    /// Where the mapping leaves the game's lines (`None`: it is a line).
    leaves: Option<String>,
    nearest_s: f64,
    /// The nearest line with every offset slot on offer.
    nearest_all_slots_s: f64,
}

fn main() -> Result<()> {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        bail!("usage: game_reach RACE_FOLDER");
    };
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let saved: Results = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
    println!(
        "race folder {}: {} s per solver, {} threads, seed {}\n",
        dir.display(),
        saved.seconds,
        saved.threads,
        saved.seed
    );
    println!("| case | best mapping (µs) | found by | a line | its nearest line (µs) | gap | same, {MAX_SLOTS} slots (µs) | gap | fastest line (µs) | from | gap |");
    println!("|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|");
    let (mut gaps, mut departures) = (Vec::new(), Vec::new());
    for case in Case::suite()? {
        let results: Vec<&RaceResult> = saved
            .results
            .iter()
            .filter(|r| r.workload == case.program.name() && r.hardware == case.hw.name)
            .collect();
        if results.is_empty() {
            continue;
        }
        let reached = reach(&case, &results, &dir)?;
        let Some(best) = reached
            .iter()
            .min_by(|a, b| a.latency_s.total_cmp(&b.latency_s))
        else {
            continue;
        };
        let line = reached
            .iter()
            .min_by(|a, b| a.nearest_s.total_cmp(&b.nearest_s))
            .unwrap_or(best);
        let gap = |l: f64| l / best.latency_s - 1.0;
        println!(
            "| {} on {} | {:.2} | {} | {} | {:.2} | {:.2}% | {:.2} | {:.2}% | {:.2} | {} | {:.2}% |",
            case.program.name(),
            case.hw.name,
            best.latency_s * 1e6,
            best.solver,
            if best.leaves.is_none() { "yes" } else { "no" },
            best.nearest_s * 1e6,
            gap(best.nearest_s) * 100.0,
            best.nearest_all_slots_s * 1e6,
            gap(best.nearest_all_slots_s) * 100.0,
            line.nearest_s * 1e6,
            line.solver,
            gap(line.nearest_s) * 100.0
        );
        gaps.push(gap(line.nearest_s));
        if let Some(why) = &best.leaves {
            departures.push(format!(
                "{} on {}: {why}",
                case.program.name(),
                case.hw.name
            ));
        }
    }
    let capped: Vec<f64> = gaps.iter().copied().filter(|&g| g > 1e-9).collect();
    let geomean = |g: &[f64]| {
        (g.iter().map(|x| (1.0 + x).ln()).sum::<f64>() / g.len().max(1) as f64).exp() - 1.0
    };
    println!(
        "\nthe fastest line is slower than the best mapping on {} of {} cases: by at most {:.2}%, geomean {:.2}% over those, {:.2}% over all",
        capped.len(),
        gaps.len(),
        capped.iter().copied().fold(0.0, f64::max) * 100.0,
        geomean(&capped) * 100.0,
        geomean(&gaps) * 100.0
    );
    println!("\nwhere each best mapping that is not a line leaves the game:");
    for d in departures {
        println!("- {d}");
    }
    Ok(())
}

/// Every valid mapping the race kept for `case`, simulated here, with its nearest line.
fn reach(case: &Case, results: &[&RaceResult], dir: &Path) -> Result<Vec<Reached>> {
    let options = race_options(case, results)?;
    let setup = |slots| {
        let options = GameOptions {
            slots,
            ..options.clone()
        };
        GameSetup::new(Arc::clone(&case.program), case.hw.clone(), options).map(Arc::new)
    };
    let (raced, all_slots) = (setup(options.slots)?, setup(MAX_SLOTS)?);
    let folder = harness::race_folder::case_folder(case);
    let mut sim = Simulator::new(&case.program, &case.hw);
    let mut out = Vec::new();
    for r in results
        .iter()
        .filter(|r| r.valid && r.best_latency_s.is_some())
    {
        let path = dir.join(&folder).join(format!("{}.mapping.json", r.solver));
        let mapping = MappingFile::read(&path)
            .and_then(|f| f.to_mapping(&case.program))
            .map_err(anyhow::Error::msg)
            .with_context(|| path.display().to_string())?;
        let latency_s = sim.run(&mapping, false).latency_s;
        let nearest = |s: &Arc<GameSetup>| {
            let line = s.nearest_trajectory(&mapping);
            line.final_latency().unwrap_or(f64::INFINITY)
        };
        out.push(Reached {
            solver: r.solver.clone(),
            latency_s,
            leaves: raced.trajectory_of(&mapping).err().map(|e| {
                format!(
                    "leaves the game at turn {} of {} (buffer {}, op {}): {}",
                    e.turn,
                    raced.max_turns(),
                    e.buffer,
                    e.op,
                    e.reason
                )
            }),
            nearest_s: nearest(&raced),
            nearest_all_slots_s: nearest(&all_slots),
        });
    }
    Ok(out)
}

/// The game's rules the race's game solvers played under (their saved settings), else
/// the race's default: every fast level, the rest the library's defaults.
fn race_options(case: &Case, results: &[&RaceResult]) -> Result<GameOptions> {
    let raced = results
        .iter()
        .filter(|r| !r.solver.starts_with("guided-"))
        .find_map(|r| r.settings.as_ref()?.get("options").cloned());
    Ok(match raced {
        Some(v) => serde_json::from_value(v)?,
        None => GameOptions {
            fast_levels: case.hw.levels.len() - 1,
            ..GameOptions::default()
        },
    })
}
