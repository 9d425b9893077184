//! How long each phase of the exact pipeline takes on one case, beside its share of the
//! budget (docs/exact.md, "In the pipeline"): the solve (candidates, starts, whole model),
//! the bounds by prices and by blocks, and the windows, each given the share the pipeline
//! gives it of SECONDS. Built with `--features harness/highs` it times the HiGHS backend.
//! The process's peak memory is printed at the end (Linux).
//!
//! `cargo run --release -p harness --example exact_phases -- WORKLOAD HW CAPACITY SECONDS`
use harness::exact_run::{BOUND_SHARE, WINDOWED_MIP_SHARE, WINDOW_SHARE};
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
    println!("backend: {}", exact::BACKEND);
    let config = exact::ExactConfig {
        seconds: seconds * WINDOWED_MIP_SHARE,
        ..Default::default()
    };
    let t = Instant::now();
    let starts = exact::Exact::starts(&case.program, &case.hw);
    println!("starts: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let s = exact::solve(&case.program, &case.hw, &config, &starts)?;
    println!(
        "solve: {:.2} s of {:.1} s ({} candidates, {} rounds, {:?}), {:.2} us",
        t.elapsed().as_secs_f64(),
        config.seconds,
        s.candidates,
        s.rounds,
        s.status,
        s.simulated_s * 1e6
    );
    let share = seconds * BOUND_SHARE;
    let t = Instant::now();
    let p = exact::price_bound(
        &case.program,
        &case.hw,
        config.objective,
        share,
        Some(s.latency_s),
    )?;
    println!(
        "prices: {:.2} s of {share:.1} s: {} rounds, {:.2} us",
        t.elapsed().as_secs_f64(),
        p.rounds,
        p.lower_bound_s * 1e6
    );
    let t = Instant::now();
    let b = exact::block_bound(&case.program, &case.hw, config.objective, share)?;
    println!(
        "blocks: {:.2} s of {share:.1} s: {} blocks, {} proven, {:.2} us",
        t.elapsed().as_secs_f64(),
        b.blocks,
        b.proven,
        b.lower_bound_s * 1e6
    );
    let window_config = exact::WindowConfig {
        seconds: seconds * (1.0 - WINDOWED_MIP_SHARE - BOUND_SHARE) * WINDOW_SHARE,
        seed: 0,
    };
    let t = Instant::now();
    let w = exact::improve(
        &case.program,
        &case.hw,
        &s.mapping,
        &window_config,
        &mut |_, _| {},
    )?;
    println!(
        "windows: {:.2} s of {:.1} s: {} repairs, {} accepted, {:.2} us",
        t.elapsed().as_secs_f64(),
        window_config.seconds,
        w.stats.repairs,
        w.stats.accepted,
        w.simulated_s * 1e6
    );
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines().filter(|l| l.starts_with("VmHWM")) {
            println!("peak memory: {}", line.trim_start_matches("VmHWM:").trim());
        }
    }
    Ok(())
}
