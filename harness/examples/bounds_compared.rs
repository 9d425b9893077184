//! The bound by prices beside the bound by blocks on named cases, each given the same
//! seconds (docs/exact.md, "A bound by prices"), and how far each is below a mapping's
//! latency in the objective (the xla mapping's and exact's starts', the best of them).
//!
//! `cargo run --release -p harness --example bounds_compared -- HW CAPACITY SECONDS WORKLOAD...`
use harness::Case;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        a.len() >= 5,
        "usage: bounds_compared HW CAPACITY SECONDS WORKLOAD..."
    );
    let seconds: f64 = a[3].parse()?;
    println!("| case | candidates | best start, us | blocks, us (s) | prices, us (s, rounds) |");
    println!("|---|---:|---:|---:|---:|");
    for w in &a[4..] {
        let case = Case::named(Some(w), Some(&a[1]), Some(&a[2]))?;
        let objective = exact::Objective::Simulated;
        let cost = objective.cost_model(&case.program, &case.hw);
        let best = exact::Exact::starts(&case.program, &case.hw)
            .iter()
            .map(|m| cost.latency(m))
            .fold(f64::INFINITY, f64::min);
        let t = Instant::now();
        let b = exact::block_bound(&case.program, &case.hw, objective, seconds)?;
        let bs = t.elapsed().as_secs_f64();
        let p = exact::price_bound(&case.program, &case.hw, objective, seconds, Some(best))?;
        println!(
            "| {w} | {} | {:.1} | {:.1} ({bs:.1}) | {:.1} ({:.1}, {}) |",
            p.candidates,
            best * 1e6,
            b.lower_bound_s * 1e6,
            p.lower_bound_s * 1e6,
            p.seconds,
            p.rounds
        );
    }
    Ok(())
}
