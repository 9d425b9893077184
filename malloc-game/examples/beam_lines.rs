//! How a beam search's lines move (development aid for sharing work between lines): per
//! step, the lines, the children kept, their distinct scores and parents, and how often
//! every kept child plays the same action.
//!
//! ```text
//! cargo run --release -p malloc-game --example beam_lines -- resnet50 16 8
//! cargo run --release -p malloc-game --example beam_lines -- /tmp/big100k.json 128 8
//! ```
//!
//! Arguments: a bundled workload or program file, the fast level's capacity in MiB
//! (tpu-v4i-like), the beam's width.

use accel_sim::Hardware;
use malloc_game::players::BeamPlayer;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "resnet50".into());
    let mib: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let width: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let program = Arc::new(bench_workloads::load(&name).expect("a workload"));
    let hw = Hardware::tpu_v4i_like()
        .with_capacity(1, mib << 20)
        .expect("a capacity");
    let setup = GameSetup::new(program, hw, GameOptions::default()).expect("setup");
    let t0 = Instant::now();
    let (game, s) = BeamPlayer::new(width).play_with_stats(&setup);
    let seconds = t0.elapsed().as_secs_f64();
    let per_step = |x: usize| x as f64 / s.steps.max(1) as f64;
    println!(
        "beam:{width} on {name} at {mib} MiB: {} steps in {seconds:.1} s, latency {:.6e} s",
        s.steps,
        game.final_latency().unwrap_or(f64::NAN)
    );
    println!(
        "per step: {:.2} lines, {:.2} kept, {:.2} distinct kept scores, {:.2} parents; \
         every kept child the same action in {:.1}% of steps",
        per_step(s.lines),
        per_step(s.kept),
        per_step(s.distinct_scores),
        per_step(s.parents),
        100.0 * per_step(s.same_action_steps)
    );
}
