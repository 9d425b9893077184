//! The guided search with a solver beside it (`GuidedSearch::run_beside`, the race's
//! MIP start): the incumbent has a best before the solver beside returns, on one thread
//! and on two, and a faster game from it is where the search goes on.

mod common;

use accel_sim::{Hardware, Program, Simulator};
use common::{counted, limit};
use malloc_game::anytime::{Incumbent, Start};
use malloc_game::{Game, GameOptions, GameSetup};
use malloc_muzero::{Beside, GuideKind, GuidedSearch};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn case(workload: &str) -> (Arc<Program>, Hardware) {
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == workload)
        .unwrap();
    (
        Arc::new(bench_workloads::load(workload).unwrap()),
        case.hardware(),
    )
}

fn setup(search: &GuidedSearch, program: &Arc<Program>, hw: &Hardware) -> Arc<GameSetup> {
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    search.setup(program, hw, &options).unwrap()
}

/// A uniform search on resnet50, its game setup, and a game faster than every
/// heuristic's: the local search's after some moves.
fn searched_resnet50() -> (GuidedSearch, Arc<GameSetup>, Game) {
    let (program, hw) = case("resnet50");
    let mut search = GuidedSearch::new(GuideKind::Uniform, 0).unwrap();
    let setup = setup(&search, &program, &hw);
    let heuristics = Incumbent::new(Instant::now());
    search.search = counted(400);
    search.run(&setup, &[], 1, &limit(1), &heuristics).unwrap();
    let searched = heuristics.best().unwrap();
    (search, setup, searched)
}

#[test]
fn the_incumbent_has_a_best_before_the_solver_beside_returns() {
    let (program, hw) = case("mobilenet-v2");
    for threads in [1, 2] {
        let mut search = GuidedSearch::new(GuideKind::Uniform, 0).unwrap();
        search.search = counted(40);
        let setup = setup(&search, &program, &hw);
        let incumbent = Incumbent::new(Instant::now());
        let mut seen = None;
        let beside = Beside {
            until: Instant::now() + Duration::from_secs(1),
            run: Box::new(|| {
                // Waits for the search's first best (bounded: a search that never
                // offers one fails the test instead of hanging it).
                let give_up = Instant::now() + Duration::from_secs(300);
                while incumbent.best_latency().is_none() && Instant::now() < give_up {
                    std::thread::sleep(Duration::from_millis(5));
                }
                seen = incumbent.best_latency();
                Vec::new()
            }),
            known: Vec::new(),
        };
        search
            .run_beside(&setup, beside, 3, &limit(threads), &incumbent)
            .unwrap();
        let first = seen.unwrap_or_else(|| panic!("{threads} threads: no best before it returned"));
        let best = incumbent.best().unwrap();
        let mapping = best.mapping();
        mapping.validate(&program, &hw).unwrap();
        let latency = Simulator::new(&program, &hw).run(&mapping, false).latency_s;
        assert_eq!(Some(latency), best.final_latency());
        assert!(latency <= first, "{threads} threads: {latency} > {first}");
        assert!(incumbent.moves() > 0, "{threads} threads: the chains moved");
    }
}

#[test]
fn a_faster_game_from_beside_is_where_the_search_goes_on() {
    let (mut search, setup, searched) = searched_resnet50();
    let starts = search
        .search
        .starts(&setup, &[], &limit(1), &Incumbent::new(Instant::now()));
    let fastest_heuristic = starts
        .iter()
        .filter_map(|s| s.game.final_latency())
        .fold(f64::INFINITY, f64::min);
    assert!(searched.final_latency().unwrap() < fastest_heuristic);
    for threads in [1, 2] {
        // No moves: the result is the fastest start, and the incumbent names it.
        search.search = counted(0);
        let incumbent = Incumbent::new(Instant::now());
        let given = searched.clone();
        let beside = Beside {
            until: Instant::now(),
            run: Box::new(move || vec![Start::new("mip", given)]),
            known: Vec::new(),
        };
        search
            .run_beside(&setup, beside, 5, &limit(threads), &incumbent)
            .unwrap();
        assert_eq!(
            incumbent.start().as_deref(),
            Some("mip"),
            "{threads} threads"
        );
        assert_eq!(
            incumbent.best_latency(),
            searched.final_latency(),
            "{threads} threads"
        );
    }
}

/// A game known before the solver beside runs (a learned start's line) is a start from
/// the first moment: with no moves and nothing from beside, it is the result and the
/// incumbent names it, on one thread and on two.
#[test]
fn a_known_game_is_a_start_at_once() {
    let (mut search, setup, searched) = searched_resnet50();
    for threads in [1, 2] {
        search.search = counted(0);
        let incumbent = Incumbent::new(Instant::now());
        let mut seen = None;
        let beside = Beside {
            until: Instant::now() + Duration::from_secs(1),
            run: Box::new(|| {
                seen = incumbent.best_latency();
                Vec::new()
            }),
            known: vec![Start::new("learned", searched.clone())],
        };
        search
            .run_beside(&setup, beside, 5, &limit(threads), &incumbent)
            .unwrap();
        assert_eq!(
            incumbent.start().as_deref(),
            Some("learned"),
            "{threads} threads"
        );
        assert_eq!(incumbent.best_latency(), searched.final_latency());
        if threads == 1 {
            // One thread offers the starts before the solver beside runs.
            assert_eq!(seen, searched.final_latency());
        }
    }
}
