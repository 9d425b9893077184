//! What the guided searches' starts cost on a case, one thread: the heuristics' lines
//! (with the widening beams' share of `SECONDS`) and the network's own game, each timed,
//! with the latency it reaches. Development aid for where the first part of a `muzero`
//! race goes: `cargo run --release -p harness --example own_game_time -- SECONDS HW
//! WORKLOAD...` (the tier's capacity for a tier program on its hardware).

use harness::evaluate::Case;
use malloc_game::anytime::{Incumbent, Limit, LocalSearch};
use malloc_muzero::{GuideKind, GuidedSearch};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seconds, hw, workloads @ ..] = args.as_slice() else {
        return Err("usage: own_game_time SECONDS HW WORKLOAD...".into());
    };
    let seconds: f64 = seconds.parse()?;
    for workload in workloads {
        let case = Case::named(Some(workload), Some(hw), None)?;
        let search = GuidedSearch::new(GuideKind::Bundled, 0)?;
        let options = malloc_game::GameOptions {
            fast_levels: case.hw.levels.len() - 1,
            ..malloc_game::GameOptions::default()
        };
        let setup = search.setup(&case.program, &case.hw, &options)?;
        let t0 = Instant::now();
        let incumbent = Incumbent::new(t0);
        let limit = Limit::from_now(seconds, 1);
        let starts = LocalSearch::default().starts(&setup, &[], &limit, &incumbent);
        let starts_s = t0.elapsed().as_secs_f64();
        let best = starts
            .iter()
            .filter_map(|s| Some((s.game.final_latency()?, s.name.clone())))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let t1 = Instant::now();
        let own = search.own_game(&setup, &limit);
        let own_s = t1.elapsed().as_secs_f64();
        let own_latency = own.as_ref().and_then(|g| g.final_latency());
        println!(
            "{workload} on {hw}: {} ops, {} turns; starts {starts_s:.2} s (best {:?}); own game {own_s:.2} s, latency {:?}",
            case.program.len(),
            own.as_ref().map_or(0, |g| g.turn()),
            best.map(|(l, n)| format!("{:.1} us {n}", l * 1e6)),
            own_latency.map(|l| format!("{:.1} us", l * 1e6)),
        );
    }
    Ok(())
}
