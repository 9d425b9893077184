//! How near the game gets to each suite case's greedy-size mapping
//! ([`GameSetup::nearest_trajectory`]): the mapping's latency against the nearest game's
//! (development aid for demonstrations).
//!
//! ```text
//! cargo run --release -p malloc-game --example nearest -- [solver]
//! ```

use accel_sim::Simulator;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use xla_msa::solver;

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "greedy-size".into());
    let s = solver(&name).expect("a baseline name");
    for case in bench_workloads::suite::cases() {
        let program = Arc::new(bench_workloads::load(case.workload).expect("suite workload"));
        let hw = case.hardware();
        let setup = GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default())
            .expect("setup");
        let mapping = s.solve(&program, &hw);
        let direct = Simulator::new(&program, &hw).run(&mapping, false).latency_s;
        let near = setup.nearest_trajectory(&mapping);
        let xla = {
            use malloc_game::players::Player;
            let g = malloc_game::players::XlaPlayer.play(&setup, 0);
            g.final_latency().unwrap_or(f64::NAN)
        };
        println!(
            "{:<36} {name} {:>10.1} us  nearest game {:>10.1} us  xla {:>10.1} us",
            format!("{} on {}", case.workload, case.hardware),
            direct * 1e6,
            near.final_latency().unwrap_or(f64::NAN) * 1e6,
            xla * 1e6
        );
    }
}
