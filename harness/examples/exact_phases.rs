//! How long each phase of the exact pipeline takes on one case, beside its share of the
//! budget (docs/exact.md, "In the pipeline"): the solve (candidates, starts, whole model),
//! the bound by blocks and the windows.
//!
//! `cargo run --release -p harness --example exact_phases -- WORKLOAD HW CAPACITY SECONDS`
use harness::Case;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        a.len() == 5,
        "usage: exact_phases WORKLOAD HW CAPACITY SECONDS"
    );
    let case = Case::named(Some(&a[1]), Some(&a[2]), Some(&a[3]))?;
    let seconds: f64 = a[4].parse()?;
    let config = exact::ExactConfig {
        seconds,
        ..Default::default()
    };
    let t = Instant::now();
    let starts = exact::Exact::starts(&case.program, &case.hw);
    println!("starts: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let s = exact::solve(&case.program, &case.hw, &config, &starts)?;
    println!(
        "solve: {:.2} s of {seconds} s ({} candidates, {} rounds, {:?})",
        t.elapsed().as_secs_f64(),
        s.candidates,
        s.rounds,
        s.status
    );
    let t = Instant::now();
    let b = exact::block_bound(&case.program, &case.hw, config.objective, seconds)?;
    println!(
        "blocks: {:.2} s of {seconds} s: {} blocks, {} proven, {:.2} us",
        t.elapsed().as_secs_f64(),
        b.blocks,
        b.proven,
        b.lower_bound_s * 1e6
    );
    Ok(())
}
