//! A counted local-search run on one workload, one thread (development aid for issue 58:
//! what a move costs, and whether a change keeps the run's games): prints the moves, the
//! wall time, the line's length and a digest of the best game (its decisions, mapping
//! and latency bits), which must not move when only the speed of a move changes.
//!
//! ```text
//! cargo run --release -p malloc-game --example ls_moves -- WORKLOAD MOVES [SEED]
//! ```
//!
//! A suite workload plays on its suite hardware, any other on tpu-v4i-like as the preset
//! has it (what `mallocmuzero race --workload W` does); every fast level is used.

use accel_sim::Hardware;
use malloc_game::anytime::{AnytimeSolver, Incumbent, Limit, LocalSearch, LocalSearchConfig};
use malloc_game::{GameOptions, GameSetup};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "alexnet".into());
    let moves: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let hw = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == name.as_str())
        .map_or_else(Hardware::tpu_v4i_like, |c| c.hardware());
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    let program = Arc::new(bench_workloads::load(&name).expect("a bundled workload"));
    let setup = GameSetup::new(program, hw, options).expect("setup");
    let ls = LocalSearch {
        config: LocalSearchConfig {
            moves: Some(moves),
            ..LocalSearchConfig::default()
        },
    };
    let incumbent = Incumbent::new(Instant::now());
    let t0 = Instant::now();
    ls.run(&setup, seed, &Limit::from_now(3600.0, 1), &incumbent);
    let secs = t0.elapsed().as_secs_f64();
    let best = incumbent.best().expect("a game");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}", best.decisions()).hash(&mut h);
    format!("{:?}", best.mapping()).hash(&mut h);
    best.final_latency().map(f64::to_bits).hash(&mut h);
    // The starts are offered first: the moves' time is what follows the first offer.
    let started = incumbent.curve().first().map_or(0.0, |p| p.0);
    println!(
        "{name} moves {} in {secs:.2} s (the moves {:.2} s, start {}), best {:.6} us, {} turns, digest {:016x}",
        incumbent.moves(),
        secs - started,
        incumbent.start().unwrap_or_default(),
        best.final_latency().unwrap_or(f64::NAN) * 1e6,
        best.turn(),
        h.finish()
    );
}
