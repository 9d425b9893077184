//! A small sweep of the local search's knobs on a few suite cases, each run for the same
//! seconds (development aid: how `LocalSearchConfig::default` was chosen).
//!
//! ```text
//! cargo run --release -p malloc-game --example tune_local_search -- SECONDS WORKLOAD...
//! ```

use malloc_game::anytime::{AnytimeSolver, Incumbent, Limit, LocalSearch, LocalSearchConfig};
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20.0);
    let workloads: Vec<String> = args.collect();
    let d = LocalSearchConfig::default();
    let configs = [
        ("default", d.clone()),
        (
            "t_start 5e-4",
            LocalSearchConfig {
                t_start: 5e-4,
                ..d.clone()
            },
        ),
        (
            "t_start 8e-3",
            LocalSearchConfig {
                t_start: 8e-3,
                ..d.clone()
            },
        ),
        (
            "mean_changed 1",
            LocalSearchConfig {
                mean_changed: 1.0,
                ..d.clone()
            },
        ),
        (
            "mean_changed 4",
            LocalSearchConfig {
                mean_changed: 4.0,
                ..d.clone()
            },
        ),
        (
            "no annealing",
            LocalSearchConfig {
                t_start: 1e-12,
                t_end: 1e-12,
                ..d.clone()
            },
        ),
    ];
    for w in &workloads {
        let case = bench_workloads::suite::cases()
            .into_iter()
            .find(|c| c.workload == w.as_str())
            .expect("a suite workload");
        let hw = case.hardware();
        let options = GameOptions {
            fast_levels: hw.levels.len() - 1,
            ..GameOptions::default()
        };
        let program = Arc::new(bench_workloads::load(w).expect("workload"));
        let setup = GameSetup::new(program, hw, options).expect("setup");
        for (name, config) in &configs {
            let incumbent = Incumbent::new(Instant::now());
            let limit = Limit::from_now(seconds, 2);
            LocalSearch {
                config: config.clone(),
            }
            .run(&setup, 0, &limit, &incumbent);
            println!(
                "{w:<18} {name:<16} {:>10.2} us",
                incumbent.best_latency().unwrap_or(f64::NAN) * 1e6
            );
        }
    }
}
