//! Dev check: each EGRL solver for a few seconds on one case, beside xla and greedy-size.
//! `cargo run --release -p egrl --example quick -- resnet50 4MiB 20`
use accel_sim::{Hardware, Simulator};
use egrl::{race, EgrlConfig, Problem};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workload = args.get(1).map_or("resnet50", |s| s.as_str());
    let cap = args.get(2).map_or("4MiB", |s| s.as_str());
    let seconds: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let program = Arc::new(bench_workloads::load(workload).unwrap());
    let hw = Hardware::nnp_i_like().with_capacity_spec(cap).unwrap();
    let mut sim = Simulator::new(&program, &hw);
    for name in ["xla", "greedy-size"] {
        let m = xla_msa::solver(name).unwrap().solve(&program, &hw);
        println!("{name}: {:.2} us", sim.run(&m, false).latency_s * 1e6);
    }
    let problem = Arc::new(Problem::new(Arc::clone(&program), hw.clone(), 0.1).unwrap());
    println!(
        "ops {} decisions {} all-slow {:.2} us",
        program.len(),
        problem.decisions().len(),
        problem.all_slow_s() * 1e6
    );
    for name in ["egrl", "egrl-ea", "egrl-pg", "egrl-dp"] {
        let t0 = Instant::now();
        let config = EgrlConfig {
            threads: 2,
            ..EgrlConfig::default()
        };
        let deadline = t0 + Duration::from_secs_f64(seconds);
        let out = race(name, Arc::clone(&problem), config, deadline, &mut |_, _| {})
            .unwrap()
            .unwrap();
        let m = out.mapping.unwrap();
        m.validate(&program, &hw).unwrap();
        println!(
            "{name}: {:.2} us, {} evaluations, {} generations, {:.1}s",
            sim.run(&m, false).latency_s * 1e6,
            out.evaluations,
            out.generations,
            t0.elapsed().as_secs_f64()
        );
    }
}
