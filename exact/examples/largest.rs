//! The largest program the exact solver proves within a time limit on one core: large
//! random programs (`bench_workloads::synthetic::large_random`) of growing length (x1.4) on
//! tpu-v4i-like with the fast level at half the program's beneficial peak, until a proof
//! takes longer than the limit.
//!
//! `cargo run --release -p exact --example largest -- 60 50` (limit in seconds, first length)

use accel_sim::Hardware;

fn main() {
    let limit: f64 = std::env::args().nth(1).map_or(60.0, |s| s.parse().unwrap());
    let mut ops: usize = std::env::args().nth(2).map_or(250, |s| s.parse().unwrap());
    loop {
        let program = bench_workloads::synthetic::large_random(ops, 1);
        let base = Hardware::preset("tpu-v4i-like").unwrap();
        let fastest = base.fastest();
        let peak = bench_workloads::suite::beneficial_peak(&program, &base, fastest);
        let align = base.levels[fastest].alignment;
        let hw = base
            .with_capacity(fastest, (peak / 2 / align).max(1) * align)
            .unwrap();
        let config = exact::ExactConfig {
            seconds: limit,
            ..Default::default()
        };
        let s = exact::Exact { config }.solve_proven(&program, &hw).unwrap();
        println!(
            "large-random {ops} ops, {} buffers: {:?} in {:.2} s ({} candidates, {} models), gap {:.4}%",
            program.buffers().len(),
            s.status,
            s.solve_s,
            s.candidates,
            s.rounds,
            s.gap * 100.0
        );
        if !s.optimal() {
            break;
        }
        ops = ops * 7 / 5;
    }
}
