//! The anytime solvers: each stops at its deadline, reports only finished games whose
//! mappings are valid, and improves monotonically; local search never ends worse than the
//! heuristics it starts from.

use accel_sim::Simulator;
use malloc_game::anytime::{
    AnytimeSolver, BeamWidening, Incumbent, Limit, LocalSearch, RandomRestarts,
};
use malloc_game::players::{GreedyPlayer, Player, XlaPlayer};
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

fn setup(workload: &str) -> Arc<GameSetup> {
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == workload)
        .unwrap();
    let program = Arc::new(bench_workloads::load(workload).unwrap());
    GameSetup::new(program, case.hardware(), GameOptions::default()).unwrap()
}

/// On resnet50 a beam of width 64 alone takes longer than the budget, and a local-search
/// move is a replay of hundreds of turns: each solver must still stop at the deadline
/// (with the slack of one unit of work checked between units).
#[test]
fn every_anytime_solver_respects_its_budget_and_reports_valid_games() {
    let s = setup("resnet50");
    let all: [Box<dyn AnytimeSolver>; 3] = [
        Box::new(RandomRestarts),
        Box::new(BeamWidening),
        Box::new(LocalSearch::default()),
    ];
    for solver in all {
        let name = solver.name();
        let t0 = Instant::now();
        let incumbent = Incumbent::new(t0);
        let limit = Limit::from_now(0.5, 2);
        solver.run(&s, 1, &limit, &incumbent);
        let took = t0.elapsed().as_secs_f64();
        assert!(took < 0.5 + 1.5, "{name} ran {took:.2} s on a 0.5 s budget");
        let best = incumbent
            .best()
            .unwrap_or_else(|| panic!("{name} found nothing"));
        let mapping = best.mapping();
        mapping.validate(s.program(), s.hardware()).unwrap();
        let simulated = Simulator::new(s.program(), s.hardware())
            .run(&mapping, false)
            .latency_s;
        assert_eq!(Some(simulated), best.final_latency(), "{name}");
        let curve = incumbent.curve();
        assert!(
            curve
                .windows(2)
                .all(|w| w[1].1 < w[0].1 && w[1].0 >= w[0].0),
            "{name}"
        );
        assert_eq!(curve.last().map(|c| c.1), best.final_latency(), "{name}");
    }
}

#[test]
fn local_search_ends_no_worse_than_the_heuristics_it_starts_from() {
    let s = setup("unet");
    let incumbent = Incumbent::new(Instant::now());
    let limit = Limit::from_now(1.0, 2);
    LocalSearch::default().run(&s, 3, &limit, &incumbent);
    let best = incumbent.best_latency().unwrap();
    for g in [XlaPlayer.play(&s, 0), GreedyPlayer.play(&s, 0)] {
        assert!(best <= g.final_latency().unwrap());
    }
}

/// Making a line replays its whole game: a deadline cuts it, and uncut it is the game's.
#[test]
fn a_line_is_cut_by_its_deadline() {
    use malloc_game::anytime::Line;
    let s = setup("resnet50");
    let game = GreedyPlayer.play(&s, 0);
    assert!(Line::of_until(&game, 16, &|| true).is_none());
    let line = Line::of_until(&game, 16, &|| false).unwrap();
    assert_eq!(line.len(), game.turn());
    assert_eq!(Some(line.latency()), game.final_latency());
}
