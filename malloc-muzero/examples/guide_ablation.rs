//! Issue 43's ablation at equal moves: each guide runs the same counted local search (the
//! same number of moves, on the same threads, from the same seed) on every case of a set,
//! so the result depends on the guide alone and not on how busy the machine was. Counted
//! runs repeat exactly per seed and thread count; the CPU seconds each run took are
//! printed beside it, so the network's cost per move (what equal moves leave out of an
//! equal-time race) is measured in the same run.
//!
//! `cargo run --release -p malloc-muzero --example guide_ablation -- SET MOVES SEEDS
//! [GUIDES...]`: SET is `suite` (every suite case on its hardware, every fast level, as
//! the race plays it), `held-out` (the held-out programs on tpu-v4i-like at 8 and 16 MiB)
//! or `validation` (the validation families, likewise; `validation-small`: at 2 and
//! 4 MiB; `validation-nnp`: on nnp-i-like, two fast levels); MOVES per run on 2 threads; seeds
//! 0..SEEDS (or `A..B`); guides default to uniform and bundled (`bundled^0.5`: the bundled guide sampling at temperature 0.5;
//! `bundled@0.5`: the bundled guide choosing
//! the first turn of half its moves by disagreement, `GuidedSearch::focus`;
//! `bundled+online{"learning_rate":1e-3}`: the online guide with those `OnlineConfig`
//! fields changed; `weights=PATH`: the bundled guide with the network saved at PATH, as
//! `guide_outcomes` makes one). `SET:W1,W2` keeps the set's cases of
//! those workloads. One JSON line per run on stdout.

mod common;

use accel_sim::{Hardware, Program, Simulator};
use common::cpu_seconds;
use malloc_game::anytime::{Incumbent, Limit, LocalSearch, LocalSearchConfig};
use malloc_game::GameOptions;
use malloc_muzero::generalist::{HELD_OUT_WORKLOADS, VALIDATION_WORKLOADS};
use malloc_muzero::{GuideKind, GuidedSearch, OnlineConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const THREADS: usize = 2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let set = args.first().map_or("suite", String::as_str);
    let moves: usize = args.get(1).map_or(Ok(10_000), |s| s.parse())?;
    // SEEDS: a count from 0, or a range `A..B`.
    let seeds: std::ops::Range<u64> = match args.get(2).map(|s| s.split_once("..")) {
        Some(Some((a, b))) => a.parse()?..b.parse()?,
        Some(None) => 0..args[2].parse()?,
        None => 0..3,
    };
    let mut guides: Vec<&str> = args.iter().skip(3).map(String::as_str).collect();
    if guides.is_empty() {
        guides = vec!["uniform", "bundled"];
    }
    let (set, only) = set.split_once(':').unwrap_or((set, ""));
    let only: Vec<&str> = only.split(',').filter(|w| !w.is_empty()).collect();
    let cases: Vec<Named> = cases(set)?
        .into_iter()
        .filter(|(_, p, _)| only.is_empty() || only.contains(&p.name()))
        .collect();
    let mut searches: Vec<(&str, GuidedSearch)> = Vec::new();
    for g in guides {
        let (g_and_focus, online) = g.split_once('{').map_or((g, None), |(a, b)| (a, Some(b)));
        let (g_and_focus, temperature) = g_and_focus.split_once('^').unwrap_or((g_and_focus, "1"));
        let (kind, focus) = g_and_focus.split_once('@').unwrap_or((g_and_focus, "0"));
        let mut s = match kind.strip_prefix("weights=") {
            // A network made elsewhere (`guide_outcomes`), of the bundled one's shape.
            Some(path) => {
                GuidedSearch::new(GuideKind::Bundled, 0)?.with_network(muzero::MuZeroNet::load(
                    Path::new(path),
                    &malloc_muzero::generalist::info()?.network,
                    &muzero::device(),
                )?)?
            }
            None => GuidedSearch::new(kind.parse::<GuideKind>()?, 0)?,
        };
        s.focus = focus.parse()?;
        s.temperature = temperature.parse()?;
        if let Some(fields) = online {
            let config: OnlineConfig = serde_json::from_str(&format!("{{{fields}"))?;
            config.check()?;
            s.online = Some(config);
        }
        s.search = LocalSearch {
            config: LocalSearchConfig {
                moves: Some(moves),
                ..LocalSearchConfig::default()
            },
        };
        searches.push((g, s));
    }
    for (name, program, hw) in &cases {
        let options = GameOptions {
            fast_levels: hw.levels.len() - 1,
            ..GameOptions::default()
        };
        for seed in seeds.clone() {
            for (kind, search) in &searches {
                let setup = search.setup(program, hw, &options)?;
                let (t0, c0) = (Instant::now(), cpu_seconds());
                let incumbent = Incumbent::new(t0);
                let limit = Limit {
                    deadline: t0 + Duration::from_secs(24 * 3600),
                    threads: THREADS,
                    stop: None,
                };
                let stats = search.run(&setup, &[], seed, &limit, &incumbent)?;
                let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
                let best = incumbent.best().ok_or("no game found")?;
                let mapping = best.mapping();
                mapping.validate(program, hw)?;
                let latency = Simulator::new(program, hw).run(&mapping, false).latency_s;
                let line = serde_json::json!({
                    "case": name,
                    "guide": kind,
                    "seed": seed,
                    "moves": incumbent.moves(),
                    "latency_us": latency * 1e6,
                    "cpu_s": cpu,
                    "wall_s": wall,
                    "network_calls": stats.network_calls,
                    "learning_steps": stats.learning_steps,
                    "fast_levels": setup.options().fast_levels,
                });
                println!("{line}");
            }
        }
    }
    Ok(())
}

type Named = (String, Arc<Program>, Hardware);

fn cases(set: &str) -> Result<Vec<Named>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    match set {
        "suite" => {
            for c in bench_workloads::suite::cases() {
                let name = format!("{} on {}", c.workload, c.hardware);
                out.push((
                    name,
                    Arc::new(bench_workloads::load(c.workload)?),
                    c.hardware(),
                ));
            }
        }
        "held-out" | "validation" | "validation-small" | "validation-nnp" => {
            let mut programs: Vec<Program> = Vec::new();
            let names = if set == "held-out" {
                HELD_OUT_WORKLOADS
            } else {
                VALIDATION_WORKLOADS
            };
            for w in names {
                programs.push(bench_workloads::load(w)?);
            }
            if set == "held-out" {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-workloads/heldout");
                let mut files: Vec<_> = std::fs::read_dir(&dir)?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect();
                files.sort();
                for f in files {
                    programs.push(bench_workloads::load(&f.display().to_string())?);
                }
            }
            for p in programs {
                let p = Arc::new(p);
                if set == "validation-nnp" {
                    out.push((
                        format!("{} nnp-i-like", p.name()),
                        p,
                        Hardware::nnp_i_like(),
                    ));
                    continue;
                }
                let sizes: &[u64] = if set == "validation-small" {
                    &[2, 4]
                } else {
                    &[8, 16]
                };
                for &mib in sizes {
                    let hw = Hardware::tpu_v4i_like().with_capacity(1, mib << 20)?;
                    out.push((format!("{} {mib}MiB", p.name()), Arc::clone(&p), hw));
                }
            }
        }
        other => {
            return Err(format!(
                "{other}: expected suite, held-out, validation, validation-small or validation-nnp"
            )
            .into())
        }
    }
    Ok(out)
}
