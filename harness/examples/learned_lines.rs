//! The learned start's own line on each case of the scale tier (one hardware), beside the
//! heuristics' mappings: what the prediction is worth before any search.
//!
//! `cargo run --release -p harness --example learned_lines -- [tpu-v4i-like|nnp-i-like]`
//!
//! Prints per case the simulated latency of xla's, greedy-size's and the learned line's
//! mapping (µs), the uses each reads from a fast level, how many of the learned line's
//! differ from xla's, and the seconds the prediction and its line took.

use accel_sim::Simulator;
use harness::Case;
use malloc_game::anytime::Limit;
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::start::{bundled, learned_line, Prediction};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;
use xla_msa::OneShotSolver;

fn main() -> anyhow::Result<()> {
    let hw_name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tpu-v4i-like".into());
    let predictor = bundled()?;
    println!("| case | xla | greedy-size | learned line | fast uses: xla / learned | differ from xla | predict + line, s |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for sc in bench_workloads::suite::scale_cases() {
        if sc.hardware != hw_name {
            continue;
        }
        let case = Case::named(Some(sc.workload), Some(sc.hardware), Some("scale-rule"))?;
        let (program, hw) = (&case.program, &case.hw);
        let mut sim = Simulator::new(program, hw);
        let xla = xla_msa::Xla::default().solve(program, hw);
        let greedy = xla_msa::GreedySize.solve(program, hw);
        let t = Instant::now();
        let prediction = Prediction::of(&predictor, program, hw);
        let setup = GameSetup::new(Arc::clone(program), hw.clone(), GameOptions::default())?;
        let line = learned_line(&setup, &prediction, &Limit::from_now(600.0, 1))
            .ok_or_else(|| anyhow::anyhow!("{}: no line within 600 s", sc.workload))?;
        let seconds = t.elapsed().as_secs_f64();
        let learned = line.mapping();
        learned.validate(program, hw)?;
        let fast_xla: BTreeSet<_> = xla.fast_uses(program).into_iter().collect();
        let fast_learned: BTreeSet<_> = learned.fast_uses(program).into_iter().collect();
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {} / {} | {} | {:.2} |",
            sc.workload,
            sim.run(&xla, false).latency_s * 1e6,
            sim.run(&greedy, false).latency_s * 1e6,
            sim.run(&learned, false).latency_s * 1e6,
            fast_xla.len(),
            fast_learned.len(),
            fast_xla.symmetric_difference(&fast_learned).count(),
            seconds
        );
    }
    Ok(())
}
