//! Invariants of the mallocGame over every suite case and many seeds:
//! - random legal play always ends in a mapping accel-sim's validator accepts;
//! - the return equals (S0 - S) / S0, with S the simulated latency of that mapping;
//! - saving and replaying the game reproduces every reward exactly;
//! - the game's xla player is the standalone xla solver, mapping for mapping.

use accel_sim::Simulator;
use malloc_game::players::player;
use malloc_game::record::GameRecord;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;

fn suite_setups() -> Vec<(String, Arc<GameSetup>)> {
    bench_workloads::suite::cases()
        .into_iter()
        .map(|c| {
            let p = Arc::new(bench_workloads::load(c.workload).unwrap());
            let hw = c.hardware();
            let options = GameOptions {
                fast_levels: hw.levels.len() - 1,
                ..GameOptions::default()
            };
            let name = format!("{} on {}", c.workload, c.hardware);
            (name, GameSetup::new(p, hw, options).unwrap())
        })
        .collect()
}

#[test]
fn random_play_is_valid_exact_and_replayable_on_every_suite_case() {
    let random = player("random").unwrap();
    let dir = std::env::temp_dir().join(format!("game-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, setup) in suite_setups() {
        let program = setup.program_arc().clone();
        let hw = setup.hardware().clone();
        for seed in 0..8 {
            let game = random.play(&setup, seed);
            assert!(game.is_terminal());
            let mapping = game.mapping();
            mapping
                .validate(&program, &hw)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            let s = Simulator::new(&program, &hw).run(&mapping, false).latency_s;
            assert_eq!(game.final_latency(), Some(s));
            let s0 = setup.all_slow_latency();
            let expected = (s0 - s) / s0;
            assert!(
                (game.total_return() - expected).abs() <= 1e-12,
                "{name} seed {seed}: return {} vs (S0-S)/S0 {expected}",
                game.total_return()
            );
            if seed < 2 {
                let path = dir.join(format!("{seed}.game"));
                GameRecord::from_game(&game, "random", seed, None)
                    .unwrap()
                    .save(&path)
                    .unwrap();
                let replay = GameRecord::load(&path)
                    .unwrap()
                    .replay(Arc::clone(&program))
                    .unwrap();
                assert_eq!(replay.game.rewards(), game.rewards(), "{name}");
                assert_eq!(replay.game.final_latency(), game.final_latency());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The xla player is the xla solver: on every suite case, and on every bundled workload at
/// 4, 8, 16 and 32 MiB on tpu-v4i-like and at the suite's nnp-i-like capacities, its game
/// ends with the solver's very mapping and simulated latency.
#[test]
fn xla_player_is_the_xla_solver_on_every_suite_case_and_workload() {
    let mut setups = suite_setups();
    let options = |hw: &accel_sim::Hardware| GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    let mut nnp_capacities: Vec<u64> = bench_workloads::suite::cases()
        .into_iter()
        .filter(|c| c.hardware == "nnp-i-like")
        .map(|c| c.fast_capacity)
        .collect();
    nnp_capacities.sort_unstable();
    nnp_capacities.dedup();
    for name in bench_workloads::names() {
        let p = Arc::new(bench_workloads::load(name).unwrap());
        for mib in [4u64, 8, 16, 32] {
            let hw = accel_sim::Hardware::tpu_v4i_like()
                .with_capacity(1, mib << 20)
                .unwrap();
            let o = options(&hw);
            setups.push((
                format!("{name} on tpu-v4i-like {mib} MiB"),
                GameSetup::new(Arc::clone(&p), hw, o).unwrap(),
            ));
        }
        for &cap in &nnp_capacities {
            let hw = accel_sim::Hardware::nnp_i_like()
                .with_capacity(2, cap)
                .unwrap();
            let o = options(&hw);
            setups.push((
                format!("{name} on nnp-i-like {cap} B"),
                GameSetup::new(Arc::clone(&p), hw, o).unwrap(),
            ));
        }
    }
    let xla = xla_msa::solver("xla").unwrap();
    let xla_player = player("xla").unwrap();
    for (name, setup) in setups {
        let (p, hw) = (setup.program(), setup.hardware());
        let want = xla.solve(p, hw);
        let solver = Simulator::new(p, hw).run(&want, false).latency_s;
        let game = xla_player.play(&setup, 0);
        assert!(game.mapping() == want, "{name}: the mappings differ");
        let s = game.final_latency().unwrap();
        assert!(
            ((s - solver) / solver).abs() <= 1e-9,
            "{name}: xla-game {s} vs xla {solver}"
        );
    }
}

/// Random play on generated programs, one and two fast levels: every finished game is a
/// valid mapping whose return is the simulated saving, and its actions replay to the
/// same rewards.
#[test]
fn random_play_is_valid_and_exact_on_generated_programs() {
    use bench_workloads::synthetic::{large_random, random_dag};
    let random = player("random").unwrap();
    let tpu = |cap| {
        accel_sim::Hardware::tpu_v4i_like()
            .with_capacity(1, cap)
            .unwrap()
    };
    let nnp = |cap| {
        accel_sim::Hardware::nnp_i_like()
            .with_capacity(2, cap)
            .unwrap()
    };
    for seed in 0..6u64 {
        let programs = [random_dag(80, seed), large_random(400, seed)];
        for program in programs {
            let program = Arc::new(program);
            for hw in [tpu(1 << 20), tpu(8 << 20), nnp(2 << 20)] {
                let options = GameOptions {
                    fast_levels: hw.levels.len() - 1,
                    ..GameOptions::default()
                };
                let setup = GameSetup::new(Arc::clone(&program), hw.clone(), options).unwrap();
                let game = random.play(&setup, seed);
                let what = format!("{} seed {seed} on {}", program.name(), hw.name);
                let mapping = game.mapping();
                mapping
                    .validate(&program, &hw)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let s = Simulator::new(&program, &hw).run(&mapping, false).latency_s;
                let s0 = setup.all_slow_latency();
                assert!(
                    (game.total_return() - (s0 - s) / s0).abs() <= 1e-12,
                    "{what}"
                );
                let mut replay = setup.start();
                for a in game.actions() {
                    replay.apply_action(a).unwrap();
                }
                assert_eq!(replay.rewards(), game.rewards(), "{what}");
                assert!(replay.is_terminal(), "{what}");
            }
        }
    }
}

/// The beam keeps the xla line, so it never ends behind the xla solver on the suite.
#[test]
fn beam_never_ends_behind_xla_on_the_suite() {
    let xla = xla_msa::solver("xla").unwrap();
    let beam = player("beam:4").unwrap();
    for (name, setup) in suite_setups() {
        let (p, hw) = (setup.program(), setup.hardware());
        let x = Simulator::new(p, hw)
            .run(&xla.solve(p, hw), false)
            .latency_s;
        let g = beam.play(&setup, 0);
        let b = g.final_latency().unwrap();
        assert!(b <= x, "{name}: beam:4 {b} > xla {x}");
        g.mapping().validate(p, hw).unwrap();
    }
}

/// A `keep` move's gap is the free room from its offset up over the chunk's extension:
/// at least the buffer, and more wherever the level has room above it.
#[test]
fn keep_moves_see_the_room_above_their_chunk() {
    let (mut keeps, mut roomy) = (0, 0);
    for (_, setup) in suite_setups() {
        let keep = setup
            .options()
            .modes
            .iter()
            .position(|&m| m == malloc_game::Mode::Keep)
            .map(|mi| setup.options().encode(mi, 0));
        let mut g = setup.start();
        while let Some(b) = g.current_buffer() {
            let size = setup.program().buffer(b).size;
            g.for_each_legal(|a, alloc, gap| {
                if Some(a) == keep {
                    keeps += 1;
                    assert!(gap >= size, "{alloc:?}: gap {gap} < size {size}");
                    roomy += usize::from(gap > size);
                }
            });
            let a = *g.legal_actions().last().unwrap();
            g.apply_action(a).unwrap();
        }
    }
    assert!(
        keeps > 0 && roomy > 0,
        "{keeps} keep moves, {roomy} with room"
    );
}

/// Under the simulated reward the game keeps `S(t)`, the simulated latency of the mapping
/// so far, incrementally. After every turn of random games (every bundled workload and
/// generated programs, on 2- and 3-level hardware), it must equal a whole run of
/// `mapping()` within 1e-9, each reward must be `(S(t-1) - S(t)) / S0`, and the rewards
/// sum to the return. A clone taken halfway and played on differently keeps its own
/// state.
#[test]
fn the_running_latency_is_a_whole_simulation_of_the_mapping_so_far() {
    use bench_workloads::synthetic::{large_random, random_dag};
    use rand::{Rng, SeedableRng};
    let tpu = accel_sim::Hardware::tpu_v4i_like()
        .with_capacity(1, 4 << 20)
        .unwrap();
    let nnp = accel_sim::Hardware::nnp_i_like()
        .with_capacity(2, 2 << 20)
        .unwrap();
    let mut programs: Vec<Arc<accel_sim::Program>> = bench_workloads::names()
        .into_iter()
        .map(|n| Arc::new(bench_workloads::load(n).unwrap()))
        .collect();
    programs.extend((0..3).map(|s| Arc::new(random_dag(60, s))));
    programs.push(Arc::new(large_random(300, 1)));
    let mut turns = 0;
    for (i, program) in programs.iter().enumerate() {
        for hw in [&tpu, &nnp] {
            let options = GameOptions {
                fast_levels: hw.levels.len() - 1,
                ..GameOptions::default()
            };
            let setup = GameSetup::new(Arc::clone(program), hw.clone(), options).unwrap();
            let mut sim = Simulator::new(program, hw);
            let s0 = setup.all_slow_latency();
            let what = format!("{} on {}", program.name(), hw.name);
            let mut rng = rand::rngs::StdRng::seed_from_u64(i as u64);
            let mut play = |mut g: malloc_game::Game, stop_at: Option<usize>, rng: &mut _| {
                let rng: &mut rand::rngs::StdRng = rng;
                while !g.is_terminal() && Some(g.turn()) != stop_at {
                    let legal = g.legal_actions();
                    // Mostly placements, so that copies queue and interact.
                    let a = if rng.random_bool(0.2) {
                        0
                    } else {
                        legal[rng.random_range(0..legal.len())]
                    };
                    let before = g.simulated_latency();
                    let r = g.apply_action(a).unwrap();
                    let want = sim.run(&g.mapping(), false).latency_s;
                    let got = if g.is_terminal() {
                        g.final_latency().unwrap()
                    } else {
                        g.simulated_latency()
                    };
                    assert_eq!(g.final_latency().unwrap_or(want), want, "{what}");
                    assert!(
                        (got - want).abs() <= 1e-9 * want,
                        "{what} turn {}: S(t) {got} vs a whole run {want}",
                        g.turn()
                    );
                    assert!((r - (before - got) / s0).abs() <= 1e-12, "{what}");
                    turns += 1;
                }
                g
            };
            let half = play(setup.start(), Some(setup.max_turns() / 8), &mut rng);
            let kept = (half.simulated_latency(), half.mapping());
            let a = play(half.clone(), None, &mut rng);
            assert_eq!(half.simulated_latency(), kept.0, "{what}: the clone moved");
            assert!(
                half.mapping() == kept.1,
                "{what}: the clone's mapping moved"
            );
            let b = play(half, None, &mut rng);
            for g in [a, b] {
                let s = g.final_latency().unwrap();
                let sum: f64 = g.rewards().iter().sum();
                assert!((sum - (s0 - s) / s0).abs() <= 1e-12, "{what}");
            }
        }
    }
    assert!(turns > 10_000, "{turns}");
}

#[test]
fn the_pass_view_is_the_observation_with_one_fast_level() {
    use malloc_game::observation::{encode, encode_pass_view, observation_len};
    let random = player("random").unwrap();
    for (name, setup) in suite_setups() {
        let options = setup.options().clone();
        let one = GameOptions {
            fast_levels: 1,
            ..options.clone()
        };
        let (levels, cells) = (options.fast_levels, options.grid_time * options.grid_offset);
        let line = random.play(&setup, 3).actions();
        let mut game = setup.start();
        let (mut full, mut scratch) = (vec![0f32; observation_len(&options)], Vec::new());
        let mut view = vec![0f32; observation_len(&one)];
        for &a in &line {
            encode(&game, &mut full);
            encode_pass_view(&game, &mut scratch, &mut view);
            if levels == 1 {
                assert_eq!(view, full, "{name}: one level sees its own observation");
            } else {
                // The tails (actions, look-ahead, simulator) and the pass's grid agree.
                let tail = view.len() - (4 + 19 + cells);
                assert_eq!(
                    view[view.len() - tail..],
                    full[full.len() - tail..],
                    "{name}"
                );
                let grid = 3 + levels + 19 + game.pass() * cells;
                assert_eq!(
                    view[4 + 19..4 + 19 + cells],
                    full[grid..grid + cells],
                    "{name}"
                );
                assert_eq!(view[3], full[3 + game.pass()], "{name}");
            }
            game.apply_action(a).unwrap();
        }
    }
}
