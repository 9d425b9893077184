//! Windows (docs/exact.md, "Windows") and the bound by blocks, end to end: the windows
//! only ever return a valid mapping no slower than the one they start from, and tell of
//! each faster one as they keep it; the bound by blocks is below every mapping's latency
//! and below the known optima.

use accel_sim::{Hardware, Mapping, Program, Simulator};
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;

/// Relative slack for floating-point sums in different orders.
const TOLERANCE: f64 = 1e-9;

fn random_games(program: &Arc<Program>, hw: &Hardware, games: u64) -> Vec<Mapping> {
    let setup = GameSetup::new(Arc::clone(program), hw.clone(), GameOptions::default()).unwrap();
    (0..games)
        .map(|s| player("random").unwrap().play(&setup, s).mapping())
        .collect()
}

/// From any valid mapping (random games, xla's), the windows return a valid mapping no
/// slower in simulation, say its latency right, and tell of each kept repair in order,
/// each faster than the one before.
#[test]
fn windows_never_return_an_invalid_or_slower_mapping() {
    let mut improved = 0;
    for seed in 0..6u64 {
        let program = Arc::new(bench_workloads::synthetic::random_dag(
            40 + 5 * seed as usize,
            seed,
        ));
        let hw = accel_sim::fixtures::binding_hw(
            &program,
            if seed % 2 == 0 {
                "tpu-v4i-like"
            } else {
                "nnp-i-like"
            },
            4,
        );
        let mut sim = Simulator::new(&program, &hw);
        let mut starts = random_games(&program, &hw, 2);
        starts.push(xla_msa::solver("xla").unwrap().solve(&program, &hw));
        for start in starts {
            let before = sim.run(&start, false).latency_s;
            let mut told = Vec::new();
            let config = exact::WindowConfig { seconds: 0.6, seed };
            let r = exact::improve(&program, &hw, &start, &config, &mut |m, l| {
                told.push((m.clone(), l))
            })
            .unwrap();
            r.mapping.validate(&program, &hw).unwrap();
            assert_eq!(sim.run(&r.mapping, false).latency_s, r.simulated_s);
            assert!(r.simulated_s <= before);
            assert_eq!(r.stats.invalid, 0);
            assert_eq!(r.stats.accepted, told.len());
            let mut last = before;
            for (m, l) in &told {
                m.validate(&program, &hw).unwrap();
                assert!(*l < last);
                last = *l;
            }
            if let Some((m, l)) = told.last() {
                assert_eq!((m, *l), (&r.mapping, r.simulated_s));
            }
            improved += usize::from(r.simulated_s < before);
        }
    }
    assert!(improved >= 6, "{improved}");
}

/// Beside another solver, the windows take up a faster mapping offered before a repair
/// (and return one no slower than it), pass over a slower one, and drop one the validator
/// refuses: what they return is valid whatever they are offered.
#[test]
fn windows_take_up_a_faster_offered_mapping_and_only_that() {
    let program = Arc::new(bench_workloads::synthetic::random_dag(60, 5));
    let hw = accel_sim::fixtures::binding_hw(&program, "tpu-v4i-like", 4);
    let mut sim = Simulator::new(&program, &hw);
    let mut games = random_games(&program, &hw, 8);
    games.sort_by(|a, b| {
        let (a, b) = (sim.run(a, false).latency_s, sim.run(b, false).latency_s);
        a.total_cmp(&b)
    });
    let (fastest, slowest) = (games[0].clone(), games[games.len() - 1].clone());
    let fastest_s = sim.run(&fastest, false).latency_s;
    assert!(fastest_s < sim.run(&slowest, false).latency_s);
    let config = exact::WindowConfig {
        seconds: 0.4,
        seed: 3,
    };
    let run = |start: &Mapping, offer: Mapping| {
        let mut asked = 0;
        let r = exact::improve_beside(&program, &hw, start, &config, &mut |_, _| {}, &mut |l| {
            asked += 1;
            assert!(l > 0.0);
            Some(offer.clone())
        })
        .unwrap();
        r.mapping.validate(&program, &hw).unwrap();
        assert!(asked >= 1);
        r
    };
    // From the slowest game, offered the fastest: taken, and the answer is no slower.
    let r = run(&slowest, fastest.clone());
    assert_eq!(r.stats.adopted, 1);
    assert!(r.simulated_s <= fastest_s);
    // From the fastest, offered the slowest: never taken.
    let r = run(&fastest, slowest.clone());
    assert_eq!(r.stats.adopted, 0);
    assert!(r.simulated_s <= fastest_s);
    // An offer the validator refuses (every buffer dropped) is never taken.
    let mut broken = fastest.clone();
    broken.buffers.clear();
    assert!(broken.validate(&program, &hw).is_err());
    let r = run(&slowest, broken);
    assert_eq!(r.stats.adopted, 0);
}

/// Where the whole model finishes, windows from its mapping return one no slower.
#[test]
fn windows_after_a_proven_model_are_no_worse() {
    for (workload, capacity) in [("random-dag", 3), ("diamond", 2), ("chain", 2)] {
        let program = Arc::new(bench_workloads::load(workload).unwrap());
        let hw = accel_sim::fixtures::binding_hw(&program, "tpu-v4i-like", capacity);
        let config = exact::ExactConfig {
            seconds: 20.0,
            ..Default::default()
        };
        let whole = exact::Exact { config }.solve_proven(&program, &hw).unwrap();
        assert!(whole.optimal(), "{workload}");
        let config = exact::WindowConfig {
            seconds: 0.5,
            seed: 1,
        };
        let r = exact::improve(&program, &hw, &whole.mapping, &config, &mut |_, _| {}).unwrap();
        r.mapping.validate(&program, &hw).unwrap();
        assert!(r.simulated_s <= whole.simulated_s, "{workload}");
        assert!(
            whole.lower_bound_s <= r.simulated_s * (1.0 + TOLERANCE),
            "{workload}"
        );
    }
}

/// The bounds by blocks and by prices are below every mapping's simulated latency (random
/// games, the heuristics, the windows' own), and, under the cost model, below each small
/// case's checked-in optimum.
#[test]
fn the_bounds_by_blocks_and_prices_are_below_every_mapping_and_the_known_optima() {
    for seed in 0..4u64 {
        let program = Arc::new(bench_workloads::synthetic::random_dag(120, 70 + seed));
        let hw = accel_sim::fixtures::binding_hw(
            &program,
            if seed % 2 == 0 {
                "tpu-v4i-like"
            } else {
                "nnp-i-like"
            },
            3,
        );
        let b = exact::block_bound(&program, &hw, exact::Objective::Simulated, 10.0).unwrap();
        assert!(b.lower_bound_s > xla_msa::bound_latency(&program, &hw) * 0.5);
        let p = exact::price_bound(&program, &hw, exact::Objective::Simulated, 5.0, None).unwrap();
        assert!(p.lower_bound_s > xla_msa::bound_latency(&program, &hw) * 0.5);
        let mut sim = Simulator::new(&program, &hw);
        let mut all = random_games(&program, &hw, 3);
        for name in ["xla", "xla-repack", "greedy-size"] {
            all.push(xla_msa::solver(name).unwrap().solve(&program, &hw));
        }
        let config = exact::WindowConfig { seconds: 0.5, seed };
        all.push(
            exact::improve(&program, &hw, &all[3], &config, &mut |_, _| {})
                .unwrap()
                .mapping,
        );
        for m in &all {
            let s = sim.run(m, false).latency_s;
            assert!(
                b.lower_bound_s <= s * (1.0 + TOLERANCE),
                "seed {seed}: {b:?} > {s:e}"
            );
            assert!(
                p.lower_bound_s <= s * (1.0 + TOLERANCE),
                "seed {seed}: {p:?} > {s:e}"
            );
        }
    }
    for c in bench_workloads::small::cases() {
        let program = bench_workloads::load(c.workload).unwrap();
        let b = exact::block_bound(&program, &c.hardware(), exact::Objective::Proxy, 5.0).unwrap();
        let p = exact::price_bound(&program, &c.hardware(), exact::Objective::Proxy, 2.0, None)
            .unwrap();
        for bound in [b.lower_bound_s, p.lower_bound_s] {
            assert!(
                bound <= c.optimum_s * (1.0 + TOLERANCE),
                "{}: {:e} > {:e}",
                c.workload,
                bound,
                c.optimum_s
            );
        }
    }
}
