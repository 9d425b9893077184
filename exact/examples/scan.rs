//! Scans windows of a workload for small cases where the choice matters: for each window
//! of `ops` ops from `step` to `step`, with 10..=40 buffers, the fastest level at `fraction`
//! of the window's beneficial peak; prints the exact optimum, the time to prove it, and
//! xla's and greedy-size's cost-model gaps to it.
//!
//! `cargo run --release -p exact --example scan -- resnet50 tpu-v4i-like 12 6 0.5`

use accel_sim::{CostModel, Hardware};
use xla_msa::OneShotSolver as _;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = args.first().map_or("resnet50", |s| s.as_str());
    let preset = args.get(1).map_or("tpu-v4i-like", |s| s.as_str());
    let ops: usize = args.get(2).map_or(12, |s| s.parse().unwrap());
    let step: usize = args.get(3).map_or(6, |s| s.parse().unwrap());
    let fraction: f64 = args.get(4).map_or(0.5, |s| s.parse().unwrap());
    let seconds: f64 = args.get(5).map_or(60.0, |s| s.parse().unwrap());
    let whole = bench_workloads::load(workload).unwrap();
    let mut start = 0;
    while start + ops <= whole.len() {
        let program = whole.window(start..start + ops).unwrap();
        start += step;
        let n = program.buffers().len();
        if !(10..=40).contains(&n) {
            continue;
        }
        let base = Hardware::preset(preset).unwrap();
        let fastest = base.fastest();
        let peak = bench_workloads::suite::beneficial_peak(&program, &base, fastest);
        let align = base.levels[fastest].alignment;
        let capacity = ((peak as f64 * fraction) as u64 / align).max(1) * align;
        let smallest = program.buffers().iter().map(|b| b.size).min().unwrap();
        if capacity < smallest {
            continue;
        }
        let hw = base.with_capacity(fastest, capacity).unwrap();
        let cost = CostModel::new(&program, &hw);
        let config = exact::ExactConfig {
            seconds,
            ..Default::default()
        };
        let s = exact::Exact { config }.solve_proven(&program, &hw).unwrap();
        let xla = cost.latency(&xla_msa::Xla::default().solve(&program, &hw));
        let greedy = cost.latency(&xla_msa::GreedySize.solve(&program, &hw));
        println!(
            "{:<24} bufs {:>3} cap {:>9} opt {:>10.3} us {:?} in {:>6.2} s ({} cands, {} rounds)  xla +{:.2}%  greedy +{:.2}%  all-slow +{:.2}%",
            program.name(),
            n,
            capacity,
            s.latency_s * 1e6,
            s.status,
            s.solve_s,
            s.candidates,
            s.rounds,
            (xla / s.latency_s - 1.0) * 100.0,
            (greedy / s.latency_s - 1.0) * 100.0,
            (cost.all_slow_latency() / s.latency_s - 1.0) * 100.0,
        );
    }
}
