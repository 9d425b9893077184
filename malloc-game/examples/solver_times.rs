//! Times every stage `mallocmuzero evaluate` runs by default on one program file, one
//! line per stage (development aid for the solvers' scaling):
//!
//! ```text
//! cargo run --release -p malloc-game --example solver_times -- /tmp/big.json [stage...]
//! ```
//!
//! Stages: setup (cost model, simulator, bound), all-slow, xla, greedy-size, game-setup,
//! greedy, beam, check (validate + simulate + cost model of each mapping). Default: all.

use accel_sim::{CostModel, Hardware, Mapping, Simulator};
use malloc_game::players;
use malloc_game::{GameOptions, GameSetup};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    println!("{name:<14} {:>9.3} s", t0.elapsed().as_secs_f64());
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: solver_times PROGRAM.json [stage...]");
    let stages: Vec<String> = args.collect();
    let on = |s: &str| stages.is_empty() || stages.iter().any(|x| x == s);
    let program = timed("load", || bench_workloads::load(&path).expect("program"));
    println!(
        "{}: {} ops, {} buffers",
        program.name(),
        program.len(),
        program.buffers().len()
    );
    let hw = Hardware::tpu_v4i_like();
    if on("setup") {
        timed("setup", || {
            let c = CostModel::new(&program, &hw);
            let s = Simulator::new(&program, &hw);
            let b = xla_msa::bound_latency(&program, &hw);
            (c.len(), s, b)
        });
    }
    let mut mappings: Vec<(String, Mapping)> = Vec::new();
    for name in ["all-slow", "xla", "greedy-size"] {
        if on(name) {
            let s = xla_msa::solver(name).expect("built-in solver");
            mappings.push((name.into(), timed(name, || s.solve(&program, &hw))));
        }
    }
    let game: Vec<&str> = ["greedy", "beam"].into_iter().filter(|p| on(p)).collect();
    if !game.is_empty() || on("game-setup") {
        let options = GameOptions {
            fast_levels: hw.levels.len() - 1,
            ..GameOptions::default()
        };
        let shared = Arc::new(program.clone());
        let setup = timed("game-setup", || {
            GameSetup::new(shared, hw.clone(), options).expect("setup")
        });
        for name in game {
            let p = players::player(name).expect("built-in player");
            let g = timed(name, || p.play(&setup, 0));
            mappings.push((name.into(), g.mapping()));
        }
    }
    if on("check") {
        let cost = CostModel::new(&program, &hw);
        let mut sim = Simulator::new(&program, &hw);
        for (name, m) in &mappings {
            let v = timed(&format!("validate {name}"), || m.validate(&program, &hw));
            let s = timed(&format!("sim {name}"), || sim.run(m, false).latency_s);
            let c = timed(&format!("cost {name}"), || cost.latency(m));
            let mut h = std::collections::hash_map::DefaultHasher::new();
            m.hash(&mut h);
            println!(
                "  {name}: valid {} sim {s:?} cost {c:?} mapping hash {:016x}",
                v.is_ok(),
                h.finish()
            );
        }
    }
}
