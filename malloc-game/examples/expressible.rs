//! Which baseline mappings are trajectories of the game ([`GameSetup::trajectory_of`]) on
//! the suite, and where the others leave it (development aid for rules changes).
//!
//! ```text
//! cargo run --release -p malloc-game --example expressible -- [solver]
//! ```

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
        let options = GameOptions {
            fast_levels: hw.levels.len() - 1,
            ..GameOptions::default()
        };
        let setup = GameSetup::new(Arc::clone(&program), hw.clone(), options).expect("setup");
        let mapping = s.solve(&program, &hw);
        let placed = mapping
            .buffers
            .iter()
            .filter(|p| !p.allocations.is_empty())
            .count();
        let what = format!("{} on {}", case.workload, case.hardware);
        match setup.trajectory_of(&mapping) {
            Ok(g) => println!("{what:<36} a trajectory ({} turns)", g.turn()),
            Err(e) => println!(
                "{what:<36} leaves the game at turn {} of ~{} ({placed} buffers placed): {}",
                e.turn,
                setup.max_turns(),
                e.reason
            ),
        }
    }
}
