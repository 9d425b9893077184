//! Turns per episode of the mallocGame on a workload, for each player (development aid
//! for the issue figures: how long the game is under the current rules).
//!
//! ```text
//! cargo run --release -p malloc-game --example game_length -- resnet50 [capacity MiB]
//! ```

use accel_sim::Hardware;
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "resnet50".into());
    let mib: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let program = Arc::new(bench_workloads::load(&name).expect("a bundled workload"));
    let hw = Hardware::tpu_v4i_like()
        .with_capacity(1, mib << 20)
        .expect("a capacity");
    let setup = GameSetup::new(Arc::clone(&program), hw, GameOptions::default()).expect("setup");
    println!(
        "{name} at {mib} MiB: {} buffers, {} uses, at most {} turns",
        program.buffers().len(),
        (0..program.buffers().len())
            .map(|b| program.uses(b).len())
            .sum::<usize>(),
        setup.max_turns()
    );
    for p in ["random", "greedy", "xla", "beam:8"] {
        let pl = player(p).expect("a player");
        let episodes = if p == "random" { 20 } else { 1 };
        let turns: usize = (0..episodes).map(|seed| pl.play(&setup, seed).turn()).sum();
        println!(
            "{p:<8} {:.1} turns per episode",
            turns as f64 / episodes as f64
        );
    }
}
