//! Random legal play on a bundled workload for a number of seconds, printing game steps
//! per second (development aid: a target for a profiler).
//!
//! ```text
//! cargo run --release -p malloc-game --example random_play -- resnet50 16 5
//! ```

use accel_sim::Hardware;
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "resnet50".into());
    let mib: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let program = Arc::new(bench_workloads::load(&name).expect("a bundled workload"));
    let hw = Hardware::tpu_v4i_like()
        .with_capacity(1, mib << 20)
        .expect("a capacity");
    let mut options = GameOptions::default();
    // A fourth argument lists the modes (comma-separated), e.g. `keep,define,prefetch`.
    if let Some(modes) = args.next() {
        options.modes = modes
            .split(',')
            .map(|m| serde_json::from_value(serde_json::Value::String(m.into())).expect("a mode"))
            .collect();
    }
    let setup = GameSetup::new(program, hw, options).expect("setup");
    let random = player("random").expect("random");
    let t0 = Instant::now();
    let (mut steps, mut episodes) = (0usize, 0u64);
    while t0.elapsed().as_secs_f64() < seconds {
        steps += random.play(&setup, episodes).turn();
        episodes += 1;
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{:.0} steps/s, {:.1} turns per episode",
        steps as f64 / dt,
        steps as f64 / episodes as f64
    );
}
