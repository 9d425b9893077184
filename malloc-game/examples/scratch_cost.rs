use accel_sim::{Hardware, Simulator};
use malloc_game::players::{Player, XlaPlayer};
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let hw = bench_workloads::suite::cases().into_iter().find(|c| c.workload == name.as_str()).map_or_else(Hardware::tpu_v4i_like, |c| c.hardware());
    let options = GameOptions { fast_levels: hw.levels.len() - 1, ..GameOptions::default() };
    let program = Arc::new(bench_workloads::load(&name).unwrap());
    let setup = GameSetup::new(program.clone(), hw.clone(), options).unwrap();
    let g = XlaPlayer.play(&setup, 0);
    let t = Instant::now();
    let n = 20;
    for _ in 0..n { std::hint::black_box(g.mapping()); }
    println!("mapping {:.1} us", t.elapsed().as_secs_f64() * 1e6 / n as f64);
    let m = g.mapping();
    let mut sim = Simulator::new(&program, &hw);
    let t = Instant::now();
    for _ in 0..n { std::hint::black_box(sim.run(&m, false)); }
    println!("sim run {:.1} us", t.elapsed().as_secs_f64() * 1e6 / n as f64);
    let t = Instant::now();
    let mut game = setup.start();
    for d in g.decisions() { game.apply_decision(d).unwrap(); }
    println!("replay {} turns {:.1} us/turn", g.turn(), t.elapsed().as_secs_f64() * 1e6 / g.turn() as f64);
    println!("buffers {} ops {}", program.buffers().len(), program.len());
}
