//! Development aid (issue 58): the cost of a line's moves alone, from the xla game:
//! `K` moves at random turns, each re-deciding one turn to a random legal action, the
//! chain taking every move. Prints the mean milliseconds per move.
//!
//! ```text
//! cargo run --release -p malloc-game --example line_moves -- WORKLOAD K [SEED]
//! ```

use accel_sim::Hardware;
use malloc_game::anytime::Line;
use malloc_game::players::{Player, XlaPlayer};
use malloc_game::{GameOptions, GameSetup};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "alexnet".into());
    let k: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
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
    let t0 = Instant::now();
    let start = XlaPlayer.play(&setup, 0);
    let t1 = Instant::now();
    let mut line = Line::of(&start, 16).expect("a finished game");
    let t2 = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..k {
        let t = rng.random_range(0..line.len());
        let legal = line.state_before(t).legal_actions();
        let a = legal[rng.random_range(0..legal.len())];
        if let Some(next) = line.branch(t, &[a], &|| false) {
            line = next;
        }
    }
    let moves = t2.elapsed().as_secs_f64();
    println!(
        "{name}: {} turns; xla {:.2} s, line {:.2} s, {k} moves {:.3} ms each, latency {:.6} us",
        line.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        moves * 1e3 / k as f64,
        line.latency() * 1e6
    );
}
