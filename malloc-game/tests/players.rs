//! The players of the mallocGame on synthetic and traced programs: every game they play
//! ends in a valid mapping scored by the simulator, and they rank as they should.

use accel_sim::{Hardware, Program, Simulator};
use malloc_game::players::{player, BeamPlayer, GreedyPlayer, Player, RandomPlayer, XlaPlayer};
use malloc_game::{Game, GameOptions, GameSetup};
use std::sync::Arc;
use xla_msa::solver;

const MIB: u64 = 1 << 20;

fn tpu(capacity: u64) -> Hardware {
    Hardware::tpu_v4i_like().with_capacity(1, capacity).unwrap()
}

fn setup(program: Program, hw: Hardware) -> Arc<GameSetup> {
    // Every fast level the hardware has, so the multi-level case is played too.
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::new(program), hw, options).unwrap()
}

fn random_dag(seed: u64) -> Arc<GameSetup> {
    setup(
        bench_workloads::synthetic::random_dag(60, seed),
        tpu(512 << 10),
    )
}

/// The programs of the suite the tests play on, by name.
fn suite_like() -> Vec<(&'static str, Arc<GameSetup>)> {
    let load = |name| bench_workloads::load(name).unwrap();
    vec![
        ("resnet50", setup(load("resnet50"), tpu(16 * MIB))),
        (
            "chain",
            setup(bench_workloads::synthetic::chain(12), tpu(16 * MIB)),
        ),
        (
            "diamond",
            setup(bench_workloads::synthetic::diamond(), tpu(16 * MIB)),
        ),
        (
            "resnet50@nnp-i",
            setup(
                load("resnet50"),
                Hardware::nnp_i_like().with_capacity(2, 4 * MIB).unwrap(),
            ),
        ),
    ]
}

/// Every player, built by type (the names are `harness::registry`'s).
fn players() -> Vec<Box<dyn Player>> {
    vec![
        Box::new(RandomPlayer),
        Box::new(XlaPlayer),
        Box::new(GreedyPlayer),
        Box::new(BeamPlayer::new(malloc_game::players::beam::DEFAULT_WIDTH)),
    ]
}

/// The game is over, its mapping is valid, and its return is the simulated saving.
fn check(what: &str, setup: &GameSetup, game: &Game) {
    assert!(game.is_terminal(), "{what}: not finished");
    assert_eq!(game.actions().len(), game.turn(), "{what}");
    assert!(game.turn() <= setup.max_turns(), "{what}");
    let mapping = game.mapping();
    if let Err(e) = mapping.validate(setup.program(), setup.hardware()) {
        panic!("{what}: invalid mapping: {e}");
    }
    let s0 = setup.all_slow_latency();
    let s = Simulator::new(setup.program(), setup.hardware())
        .run(&mapping, false)
        .latency_s;
    assert_eq!(game.final_latency(), Some(s), "{what}");
    let want = (s0 - s) / s0;
    assert!(
        (game.total_return() - want).abs() < 1e-9,
        "{what}: return {} vs (S0-S)/S0 {want}",
        game.total_return()
    );
}

#[test]
fn every_player_ends_valid_with_the_simulated_return_on_random_dags() {
    for seed in 0..30 {
        let s = random_dag(seed);
        for p in players() {
            let g = p.play(&s, seed);
            check(&format!("{} on random_dag seed {seed}", p.name()), &s, &g);
        }
    }
}

#[test]
fn every_player_ends_valid_with_the_simulated_return_on_suite_programs() {
    for (name, s) in suite_like() {
        for p in players() {
            let g = p.play(&s, 7);
            check(&format!("{} on {name}", p.name()), &s, &g);
        }
    }
}

#[test]
fn greedy_beats_random_on_average() {
    let greedy = player("greedy").unwrap();
    let random = player("random").unwrap();
    let (mut g_sum, mut r_sum) = (0.0, 0.0);
    let mut cases: Vec<Arc<GameSetup>> = (0..30).map(random_dag).collect();
    cases.extend(suite_like().into_iter().map(|(_, s)| s));
    for (i, s) in cases.iter().enumerate() {
        g_sum += greedy.play(s, 0).total_return();
        r_sum += random.play(s, i as u64).total_return();
    }
    let n = cases.len() as f64;
    assert!(
        g_sum / n > r_sum / n,
        "greedy {} <= random {}",
        g_sum / n,
        r_sum / n
    );
}

#[test]
fn beam_is_never_worse_than_greedy_or_xla() {
    // The beam keeps the greedy line and the xla line (see players/beam.rs), so this
    // holds on every program, not only on average.
    let greedy = player("greedy").unwrap();
    let xla = player("xla").unwrap();
    let mut cases: Vec<(String, Arc<GameSetup>)> = suite_like()
        .into_iter()
        .map(|(n, s)| (n.to_string(), s))
        .collect();
    cases.extend((0..10).map(|seed| (format!("random_dag {seed}"), random_dag(seed))));
    let mut gains = 0;
    for (name, s) in &cases {
        let g = greedy.play(s, 0).total_return();
        let x = xla.play(s, 0).total_return();
        for w in [1, 2, 8, 16] {
            let b = player(&format!("beam:{w}"))
                .unwrap()
                .play(s, 0)
                .total_return();
            assert!(b >= g, "beam:{w} {b} < greedy {g} on {name}");
            assert!(b >= x, "beam:{w} {b} < xla {x} on {name}");
            gains += usize::from(b > g.max(x) + 1e-9);
        }
    }
    // And the search is worth something: it finds better games than both somewhere.
    assert!(gains > 0);
}

#[test]
fn players_are_deterministic_given_the_seed() {
    let s = random_dag(3);
    for p in players() {
        let a = p.play(&s, 11);
        let b = p.play(&s, 11);
        assert_eq!(a.actions(), b.actions(), "{}", p.name());
        assert_eq!(a.total_return(), b.total_return(), "{}", p.name());
    }
    // The random player does use its seed.
    let random = player("random").unwrap();
    let first = random.play(&s, 0);
    assert!((1..5).any(|seed| random.play(&s, seed).actions() != first.actions()));
}

/// The xla player's game ends with the standalone xla solver's mapping, allocation for
/// allocation, on random DAGs on one and on two fast levels.
#[test]
fn xla_player_is_the_standalone_xla_solver() {
    let xla_solver = solver("xla").expect("the xla baseline exists");
    let xla_player = player("xla").unwrap();
    let nnp = |cap| Hardware::nnp_i_like().with_capacity(2, cap).unwrap();
    for seed in 0..10 {
        for hw in [tpu(512 << 10), tpu(2 * MIB), nnp(MIB)] {
            let s = setup(bench_workloads::synthetic::random_dag(60, seed), hw);
            let game = xla_player.play(&s, 0);
            let want = xla_solver.solve(s.program(), s.hardware());
            assert!(
                game.mapping() == want,
                "random_dag seed {seed} on {}",
                s.hardware().name
            );
            check("xla", &s, &game);
        }
    }
}
