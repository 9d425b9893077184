//! How much each of the relaxation's charges raises the proven bound on each suite case
//! (docs/exact.md, "What each charge adds"): the exact solver's optimum of XLA's cost
//! model, then with the per-op overhead, then with the DMA setup too, then with the cap
//! on the time a copy hides behind an op (the relaxation).
//!
//! `cargo run --release -p harness --features highs --example tightenings -- [SECONDS]`

use accel_sim::{CostModel, Tightenings};
use harness::Case;

fn main() -> anyhow::Result<()> {
    let seconds: f64 = match std::env::args().nth(1) {
        Some(s) => s.parse()?,
        None => 120.0,
    };
    let steps = [
        ("cost model", Tightenings::NONE),
        (
            "+ overhead",
            Tightenings {
                op_overhead: true,
                ..Tightenings::NONE
            },
        ),
        (
            "+ setup",
            Tightenings {
                op_overhead: true,
                copy_setup: true,
                hide_cap: false,
            },
        ),
        ("+ hide cap", Tightenings::ALL),
    ];
    println!(
        "| case | {} | raised in all | backend |",
        steps
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}---:|---|", "---:|".repeat(steps.len()));
    for case in Case::suite()? {
        let (program, hw) = (case.program.as_ref(), &case.hw);
        let known = exact::Exact::starts(program, hw);
        let config = exact::ExactConfig {
            seconds,
            ..Default::default()
        };
        let mut cells = Vec::new();
        let mut first = None;
        let mut last = None;
        for (_, with) in steps {
            let cost = CostModel::tightened(program, hw, with);
            let s = exact::solve_model(program, hw, &cost, &config, &known)?;
            let b = s.lower_bound_s;
            let proven = if s.optimal() { "" } else { " (not proven)" };
            let step = last.map_or(String::new(), |l: f64| {
                format!(" ({:+.2}%)", (b / l - 1.0) * 100.0)
            });
            cells.push(format!("{:.1}{step}{proven}", b * 1e6));
            first.get_or_insert(b);
            last = Some(b);
        }
        let (first, last) = (first.unwrap_or(0.0), last.unwrap_or(0.0));
        println!(
            "| {} on {} | {} | {:+.2}% | {} |",
            program.name(),
            hw.name,
            cells.join(" | "),
            (last / first - 1.0) * 100.0,
            exact::BACKEND
        );
    }
    Ok(())
}
