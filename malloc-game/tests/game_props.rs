//! Invariants of the mallocGame over every suite case and many seeds:
//! - random legal play always ends in a mapping accel-sim's validator accepts;
//! - the return equals (S0 - S) / S0, with S the simulated latency of that mapping;
//! - saving and replaying the game reproduces every reward exactly;
//! - the game's xla player stays within a measured bound of the standalone xla solver.

use accel_sim::Simulator;
use malloc_game::players::player;
use malloc_game::record::GameRecord;
use malloc_game::{baselines, GameOptions, GameSetup};
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

/// The xla player against the standalone xla solver on every suite case. The game gives a
/// buffer one allocation and only the picker's preferred and latest starts, where the
/// solver may split a buffer into segments (no-copy, eviction, a later prefetch) and try
/// every start around the preferred one; so the player may trail. Measured when this test
/// was written: within 0.003 on resnet50, resnet101, alexnet, mobilenet-v2, vgg16, both
/// berts on tpu-v4i-like; unet -0.006, resnet50/nnp-i -0.014, gpt2 -0.017, random-dag
/// -0.037, vit-b16 -0.048, alphatensor-4x4 -0.057 and bert-base-s128/nnp-i -0.099 (two
/// fast levels: the solver's cascade re-plans the second level with the first level's
/// times). The bound is the largest of those plus 0.01.
#[test]
fn xla_player_stays_near_the_xla_solver_on_every_suite_case() {
    let xla = baselines::solver("xla").unwrap();
    let xla_player = player("xla").unwrap();
    let mut worst: f64 = 0.0;
    for (name, setup) in suite_setups() {
        let (p, hw) = (setup.program(), setup.hardware());
        let s0 = setup.all_slow_latency();
        let solver = (s0
            - Simulator::new(p, hw)
                .run(&xla.solve(p, hw), false)
                .latency_s)
            / s0;
        let game = xla_player.play(&setup, 0);
        let d = game.total_return() - solver;
        println!(
            "{name:<32} solver {solver:.4} player {:.4} diff {d:+.4}",
            game.total_return()
        );
        worst = worst.max(-d);
        assert!(
            d >= -MAX_TRAIL,
            "{name}: the xla player trails the solver by {}",
            -d
        );
    }
    println!("worst trail {worst:.4}");
}

const MAX_TRAIL: f64 = 0.11;
