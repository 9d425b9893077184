//! Proves a lower bound on the simulated latency of every suite case with the exact
//! solver's simulated objective, and writes them to `harness/data/bounds.json`, the bounds
//! `evaluate` and `race` use for the suite (`harness::bounds`).
//!
//! `cargo run --release -p harness --features highs --example suite_bounds -- [SECONDS]`
//! (HiGHS proves every case; microlp leaves some without a bound: those are left out).

use harness::bounds::CachedBound;
use harness::Case;

fn main() -> anyhow::Result<()> {
    let seconds: f64 = match std::env::args().nth(1) {
        Some(s) => s.parse()?,
        None => 600.0,
    };
    let mut out = Vec::new();
    for case in Case::suite()? {
        let config = exact::ExactConfig {
            seconds,
            objective: exact::Objective::Simulated,
            ..Default::default()
        };
        let s = exact::Exact { config }.solve_proven(&case.program, &case.hw)?;
        println!(
            "{:<18} {:<13} {:<11} {:>8.1} s  bound {:>9.1} us  its mapping {:>9.1} us",
            case.program.name(),
            case.hw.name,
            format!("{:?}", s.status),
            s.solve_s,
            s.lower_bound_s * 1e6,
            s.simulated_s * 1e6
        );
        if s.lower_bound_s <= 0.0 {
            continue;
        }
        out.push(CachedBound {
            workload: case.program.name().to_string(),
            hardware: case.hw.name.clone(),
            program_hash: format!("{:016x}", case.program.content_hash()),
            hardware_config: serde_json::to_value(case.hw.to_file())?,
            lower_bound_s: s.lower_bound_s,
            objective: s.objective,
            backend: exact::BACKEND.into(),
            status: s.status,
            solve_s: s.solve_s,
        });
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/bounds.json");
    let text = serde_json::to_string_pretty(&out)? + "\n";
    binio::write_bytes_atomic(std::path::Path::new(path), text.as_bytes())?;
    println!("wrote {path}");
    Ok(())
}
