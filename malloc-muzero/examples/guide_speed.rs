//! The guided local search's speed beside the uniform one's (issue 43's goal: at least
//! 0.8x the moves per second): each guide runs the same case for the same seconds on the
//! same threads, one after another, in rounds, so that a machine shared with other work
//! disturbs them alike. Development aid: `cargo run --release -p malloc-muzero --example
//! guide_speed -- WORKLOAD SECONDS ROUNDS [GUIDES...]` (a suite workload on its suite
//! hardware; guides default to uniform, untrained and bundled).

mod common;

use common::cpu_seconds;
use malloc_game::anytime::{Incumbent, Limit};
use malloc_muzero::{GuideKind, GuidedSearch};
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = args.first().map_or("resnet50", String::as_str);
    let seconds: f64 = args.get(1).map_or(Ok(10.0), |s| s.parse())?;
    let rounds: usize = args.get(2).map_or(Ok(2), |s| s.parse())?;
    let mut kinds: Vec<GuideKind> = Vec::new();
    for g in args.iter().skip(3) {
        kinds.push(g.parse()?);
    }
    if kinds.is_empty() {
        kinds = vec![GuideKind::Uniform, GuideKind::Untrained, GuideKind::Bundled];
    }
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == workload)
        .ok_or(format!("{workload}: not a suite workload"))?;
    let program = Arc::new(bench_workloads::load(workload)?);
    let hw = case.hardware();
    // The race's rules on this case: every fast level the hardware has.
    let options = malloc_game::GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..malloc_game::GameOptions::default()
    };
    for round in 0..rounds {
        for kind in &kinds {
            let search = GuidedSearch::new(kind.clone(), 0)?;
            let setup = search.setup(&program, &hw, &options)?;
            let (t0, c0) = (Instant::now(), cpu_seconds());
            let incumbent = Incumbent::new(t0);
            let limit = Limit::from_now(seconds, 2);
            let calls = search
                .run(&setup, &[], round as u64, &limit, &incumbent)?
                .network_calls;
            let secs = t0.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - c0;
            let moves = incumbent.moves();
            println!(
                "{workload} round {round} {kind:?}: {moves} moves in {secs:.2} s = {:.1} moves/s, {:.1} moves per CPU second, {:.2} network calls a move, best {:.2} us",
                moves as f64 / secs,
                moves as f64 / cpu,
                calls as f64 / moves.max(1) as f64,
                incumbent.best_latency().unwrap_or(f64::NAN) * 1e6
            );
        }
    }
    Ok(())
}
