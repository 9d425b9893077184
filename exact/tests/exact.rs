//! The exact solver against every other solver: on random programs and on cuts of the
//! bundled models, its mapping is valid and no other solver's mapping has a lower latency
//! in its objective (the cost model, or the simulator's relaxation); where it says
//! optimal, its bound equals its model's best latency.

use accel_sim::{CostModel, Hardware, Mapping, Program};
use malloc_game::anytime::{AnytimeSolver, Incumbent, Limit, LocalSearch};
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

/// Every other solver's mappings of the case: the baselines, game players (several
/// random games among them) and a short local search.
fn others(program: &Program, hw: &Hardware) -> Vec<(String, Mapping)> {
    let repack = xla_msa::XlaOptions {
        max_repacks: xla_msa::DEFAULT_MAX_REPACKS,
        ..Default::default()
    };
    let all: [Box<dyn xla_msa::OneShotSolver>; 4] = [
        Box::new(xla_msa::AllSlow),
        Box::new(xla_msa::Xla::default()),
        Box::new(xla_msa::Xla::new(repack)),
        Box::new(xla_msa::GreedySize),
    ];
    let mut out: Vec<(String, Mapping)> = all
        .iter()
        .map(|s| (s.name().to_string(), s.solve(program, hw)))
        .collect();
    let setup = GameSetup::new(
        Arc::new(program.clone()),
        hw.clone(),
        GameOptions::default(),
    )
    .unwrap();
    for (name, seeds) in [("greedy", 1), ("beam:16", 1), ("random", 8), ("xla", 1)] {
        let p = player(name).unwrap();
        for seed in 0..seeds {
            out.push((format!("{name}/{seed}"), p.play(&setup, seed).mapping()));
        }
    }
    let incumbent = Incumbent::new(Instant::now());
    LocalSearch::default().run(&setup, 0, &Limit::from_now(0.3, 1), &incumbent);
    if let Some(g) = incumbent.best() {
        out.push(("local-search".into(), g.mapping()));
    }
    out
}

/// Solves the case exactly under both objectives and checks each against every other
/// solver; returns whether both were proven optimal.
fn check_case(program: &Program, hw: &Hardware) -> bool {
    let others = others(program, hw);
    [exact::Objective::Proxy, exact::Objective::Simulated]
        .into_iter()
        .all(|objective| check_objective(program, hw, objective, &others))
}

fn check_objective(
    program: &Program,
    hw: &Hardware,
    objective: exact::Objective,
    others: &[(String, Mapping)],
) -> bool {
    let config = exact::ExactConfig {
        seconds: 60.0,
        objective,
        ..Default::default()
    };
    let s = exact::Exact { config }.solve_proven(program, hw).unwrap();
    let name = format!("{} ({objective:?})", program.name());
    s.mapping
        .validate(program, hw)
        .unwrap_or_else(|e| panic!("{name}: invalid exact mapping: {e}"));
    let sim = accel_sim::Simulator::new(program, hw).run(&s.mapping, false);
    assert_eq!(sim.latency_s, s.simulated_s, "{name}");
    let cost = objective.cost_model(program, hw);
    if objective == exact::Objective::Proxy {
        // The proxy objective returns the model's best itself.
        assert!((cost.latency(&s.mapping) - s.latency_s).abs() <= 1e-12 * s.latency_s);
    }
    assert!(s.lower_bound_s <= s.latency_s * (1.0 + 1e-9), "{name}");
    for (solver, m) in others {
        if m.validate(program, hw).is_err() {
            continue;
        }
        let other = cost.latency(m);
        assert!(
            s.latency_s <= other * (1.0 + 1e-9),
            "{name}: {solver} costs {other:e} s, exact {:e} s ({:?})",
            s.latency_s,
            s.status
        );
        // Nothing valid beats the proven bound.
        assert!(other >= s.lower_bound_s * (1.0 - 1e-6), "{name}: {solver}");
    }
    s.optimal()
}

/// Hardware with a fastest level of `capacity` bytes.
fn hw(preset: &str, capacity: u64) -> Hardware {
    let hw = Hardware::preset(preset).unwrap();
    let fastest = hw.fastest();
    hw.with_capacity(fastest, capacity).unwrap()
}

#[test]
fn random_programs_are_solved_no_worse_than_any_solver() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut proven = 0;
    let n = 12;
    for i in 0..n {
        let ops = rng.random_range(6..16);
        let program = bench_workloads::synthetic::random_dag(ops, 1000 + i);
        let peak = program.peak_live_bytes();
        let capacity = (peak as f64 * rng.random_range(0.1..0.6)) as u64;
        let smallest = program.buffers().iter().map(|b| b.size).min().unwrap();
        let preset = if i % 3 == 2 {
            "nnp-i-like"
        } else {
            "tpu-v4i-like"
        };
        let h = hw(preset, capacity.max(smallest).max(4096));
        proven += check_case(&program, &h) as usize;
    }
    // Programs this small are proven in well under the limit.
    assert_eq!(proven, n as usize);
}

#[test]
fn the_tiny_fixture_with_three_levels_is_solved_no_worse_than_any_solver() {
    let program = accel_sim::fixtures::three_ops("three", 1 << 20, 1e6);
    // nnp-i-like has two fast levels: holds may use either.
    for capacity in [1 << 20, 2 << 20, 3 << 20] {
        assert!(check_case(&program, &hw("nnp-i-like", capacity)));
    }
}

/// The lowest latency in `cost` over every finished game (depth-first over every legal
/// action at every turn), and how many games there were.
fn best_game(setup: &Arc<GameSetup>, cost: &CostModel) -> (f64, usize) {
    fn walk(game: &malloc_game::Game, cost: &CostModel, best: &mut f64, games: &mut usize) {
        if game.is_terminal() {
            *games += 1;
            *best = best.min(cost.latency(&game.mapping()));
            return;
        }
        for a in game.legal_actions() {
            let mut next = game.clone();
            next.apply_action(a).unwrap();
            walk(&next, cost, best, games);
        }
    }
    let (mut best, mut games) = (f64::INFINITY, 0);
    walk(&setup.start(), cost, &mut best, &mut games);
    (best, games)
}

#[test]
fn no_game_of_the_fixture_beats_the_optimum() {
    // An independent check of the candidate space: every trajectory of the game, every
    // mode and offset slot at every turn, is a valid mapping no cheaper than the optimum,
    // and the best of them are found again.
    let program = accel_sim::fixtures::three_ops("three", 1 << 20, 1e6);
    for capacity in [1 << 20, 2 << 20, 3 << 20, 5 << 20] {
        let h = hw("tpu-v4i-like", capacity);
        let setup =
            GameSetup::new(Arc::new(program.clone()), h.clone(), GameOptions::default()).unwrap();
        for objective in [exact::Objective::Proxy, exact::Objective::Simulated] {
            let (best, games) = best_game(&setup, &objective.cost_model(&program, &h));
            assert!(games > 10, "{games}");
            let config = exact::ExactConfig {
                objective,
                ..Default::default()
            };
            let s = exact::Exact { config }.solve_proven(&program, &h).unwrap();
            assert!(s.optimal());
            assert!(
                s.latency_s <= best * (1.0 + 1e-9),
                "{capacity} {objective:?}: exact {} > game {best}",
                s.latency_s
            );
        }
    }
}

/// The whole model is not built where its nonzeros would not be set up in half the time
/// left (`exact::SETUP_NONZEROS_PER_S`): the solve then returns the best start unproven,
/// while with the time to set it up the same model is solved.
#[test]
fn a_model_that_would_not_be_set_up_in_time_is_not_built() {
    let program = bench_workloads::synthetic::random_dag(40, 11);
    let h = accel_sim::fixtures::binding_hw(&program, "tpu-v4i-like", 3);
    let objective = exact::Objective::Simulated;
    let size = exact::model_size(&program, &h, objective);
    assert!(size.nonzeros > size.holds && size.holds > 0, "{size:?}");
    // Just short of the time its setup needs, then ample time.
    let needed = 2.0 * size.nonzeros as f64 / exact::SETUP_NONZEROS_PER_S;
    assert!(!size.built_within(0.9 * needed) && size.built_within(needed + 5.0));
    let solve = |seconds: f64| {
        let config = exact::ExactConfig {
            seconds,
            objective,
            ..Default::default()
        };
        exact::solve(&program, &h, &config, &exact::Exact::starts(&program, &h)).unwrap()
    };
    let refused = solve(0.9 * needed);
    assert_eq!(refused.rounds, 0);
    assert_eq!(refused.lower_bound_s, 0.0);
    let built = solve(needed + 5.0);
    assert!(built.rounds >= 1 && built.lower_bound_s > 0.0);
    assert!(built.simulated_s <= refused.simulated_s * (1.0 + 1e-9));
}
