//! EGRL's invariants: the repair always gives a valid mapping, the learner's parameters all
//! learn, the search finds a tiny program's optimum, and a resumed run continues exactly.

use accel_sim::fixtures::three_ops;
use accel_sim::{Hardware, Simulator};
use bench_workloads::synthetic::random_dag;
use egrl::gnn::{GnnShape, GraphTensors};
use egrl::learner::{Learner, LearnerConfig};
use egrl::{
    dp_assignment, feature_width, Assignment, Egrl, EgrlConfig, OpGraph, Problem, RunFolder,
    RunLimits,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn hardware(rng: &mut StdRng) -> Hardware {
    if rng.random_bool(0.5) {
        let hw = Hardware::nnp_i_like();
        let llc = rng.random_range(64u64 << 10..=16 << 20);
        let sram = rng.random_range(16u64 << 10..=4 << 20);
        hw.with_capacity(1, llc)
            .unwrap()
            .with_capacity(2, sram)
            .unwrap()
    } else {
        let cap = rng.random_range(16u64 << 10..=16 << 20);
        Hardware::tpu_v4i_like().with_capacity(1, cap).unwrap()
    }
}

#[test]
fn every_assignment_repairs_to_a_valid_mapping() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut demoted = 0;
    for case in 0..40 {
        let program = Arc::new(random_dag(rng.random_range(3..60), case));
        let hw = hardware(&mut rng);
        let problem = Problem::new(program, hw, 0.1).unwrap();
        let levels = problem.levels() as u8;
        let d = problem.decisions().len();
        let mut sim = problem.simulator();
        let mut assignments: Vec<Assignment> = (0..20)
            .map(|_| Assignment((0..d).map(|_| rng.random_range(0..levels)).collect()))
            .collect();
        assignments.push(Assignment(vec![levels - 1; d]));
        assignments.push(dp_assignment(&problem));
        for a in &assignments {
            let (decoded, scored) = problem.score(&mut sim, a);
            decoded
                .mapping
                .validate(problem.program(), problem.hardware())
                .unwrap_or_else(|e| panic!("case {case}: {e}"));
            assert!((0.0..=1.0).contains(&decoded.violation));
            assert!(scored.latency_s.is_finite() && scored.latency_s > 0.0);
            if decoded.violation > 0.0 {
                demoted += 1;
            }
        }
    }
    assert!(demoted > 100, "the repair ran only {demoted} times");
}

fn tiny() -> Arc<Problem> {
    // Units of 1 MiB in a 4 MiB SRAM and 24 MiB LLC: not everything fits in SRAM.
    let program = three_ops("tiny", 1 << 20, 2e6);
    let hw = Hardware::nnp_i_like().with_capacity(2, 3 << 20).unwrap();
    Arc::new(Problem::new(Arc::new(program), hw, 0.1).unwrap())
}

#[test]
fn every_learner_parameter_gets_a_gradient() {
    let problem = tiny();
    let graph =
        Arc::new(GraphTensors::new(&OpGraph::of(&problem), &candle_core::Device::Cpu).unwrap());
    let shape = GnnShape {
        features: feature_width(problem.levels()),
        hidden: 8,
        rounds: 2,
        levels: problem.levels(),
    };
    let mut rng = StdRng::seed_from_u64(2);
    let learner = Learner::new(shape, graph, LearnerConfig::default(), &mut rng).unwrap();
    let d = problem.decisions().len();
    let data: Vec<(Assignment, f64)> = (0..16)
        .map(|_| {
            let a = Assignment((0..d).map(|_| rng.random_range(0..3)).collect());
            (a, rng.random_range(1.0..3.0))
        })
        .collect();
    let batch: Vec<(&Assignment, f64)> = data.iter().map(|(a, f)| (a, *f)).collect();
    let moved = learner.step_movement(&batch).unwrap();
    assert_eq!(moved.len(), 2 * shape.dims().len() + 1);
    for (name, m) in moved {
        assert!(m > 0.0, "{name} did not move: no gradient reached it");
    }
}

#[test]
fn egrl_finds_the_optimum_of_a_tiny_program() {
    // 9 decisions over 3 levels: 2 of the 19683 assignments reach the best fitness, and a
    // strong local optimum sits one decision away (fitness 1.1255 against 1.1303).
    let program = Arc::new(random_dag(5, 1));
    let peak = program.peak_live_bytes();
    let hw = Hardware::nnp_i_like()
        .with_capacity(1, peak / 2)
        .unwrap()
        .with_capacity(2, peak / 5)
        .unwrap();
    let problem = Arc::new(Problem::new(program, hw, 0.1).unwrap());
    let d = problem.decisions().len();
    let levels = problem.levels();
    assert_eq!((d, levels), (9, 3));
    let mut sim = problem.simulator();
    let mut optimum = f64::NEG_INFINITY;
    for code in 0..levels.pow(d as u32) {
        let digits = (0..d).map(|k| ((code / levels.pow(k as u32)) % levels) as u8);
        let a = Assignment(digits.collect());
        optimum = optimum.max(problem.score(&mut sim, &a).1.fitness);
    }
    // Five seeds, 300 generations each (about 11k evaluations, of a space of 19683). Seed 7
    // stays at the local optimum; EA alone (not asserted) found the optimum with one of
    // seeds 3, 4, 5.
    let mut found = 0;
    for seed in 3..8 {
        let config = EgrlConfig {
            seed,
            hidden: 8,
            rounds: 2,
            threads: 1,
            ..EgrlConfig::default()
        };
        let mut search = Egrl::new(Arc::clone(&problem), config).unwrap();
        let limits = RunLimits {
            generations: Some(300),
            ..RunLimits::default()
        };
        search
            .run(&limits, &AtomicBool::new(false), &mut |_, _| Ok(()))
            .unwrap();
        let best = search
            .metrics()
            .iter()
            .map(|m| m.top_fitness)
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(best <= optimum);
        if best == optimum {
            found += 1;
        }
        // The best mapping it reports is the simulator's verdict on a valid mapping.
        let reported = search.best().unwrap();
        let mapping = problem.decode(&reported.assignment).mapping;
        mapping
            .validate(problem.program(), problem.hardware())
            .unwrap();
        let simulated = Simulator::new(problem.program(), problem.hardware())
            .run(&mapping, false)
            .latency_s;
        assert_eq!(simulated, reported.latency_s);
    }
    assert!(found >= 4, "the optimum found with {found} of 5 seeds");
}

#[test]
fn a_resumed_run_continues_exactly_for_any_thread_count() {
    let program = Arc::new(random_dag(40, 5));
    let hw = Hardware::nnp_i_like()
        .with_capacity(1, 2 << 20)
        .unwrap()
        .with_capacity(2, 256 << 10)
        .unwrap();
    let config = EgrlConfig {
        seed: 9,
        hidden: 8,
        rounds: 2,
        gnn_members: 3,
        boltzmann_members: 5,
        migrate_every: 2,
        threads: 2,
        ..EgrlConfig::default()
    };
    let base = std::env::temp_dir().join(format!("egrl-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let run = |dir: &std::path::Path, stops: &[u64], threads: usize| {
        let (mut folder, mut search) = RunFolder::create(
            dir,
            "random-dag-40",
            Arc::clone(&program),
            hw.clone(),
            config.clone(),
        )
        .unwrap();
        for &g in stops {
            let limits = RunLimits {
                generations: Some(g),
                ..RunLimits::default()
            };
            search
                .run(&limits, &AtomicBool::new(false), &mut |_, _| Ok(()))
                .unwrap();
            folder.save(&search).unwrap();
            // The folder's lock goes with it: a resume while it is held is refused.
            drop(folder);
            (folder, search) = RunFolder::resume(dir, Some(threads)).unwrap();
        }
        let s = search.state().unwrap();
        (
            s.best.unwrap().assignment,
            s.evaluations,
            serde_json::to_string(&s.population).unwrap(),
            serde_json::to_string(&s.learner).unwrap(),
        )
    };
    let straight = run(&base.join("a"), &[8], 2);
    let resumed = run(&base.join("b"), &[3, 5, 8], 1);
    assert_eq!(straight.0, resumed.0);
    assert_eq!(straight.1, resumed.1);
    assert_eq!(straight.2, resumed.2, "populations differ");
    assert_eq!(straight.3, resumed.3, "learners differ");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn the_knapsack_mapper_beats_all_slow_and_fits() {
    let program = Arc::new(bench_workloads::load("alexnet").unwrap());
    let hw = Hardware::nnp_i_like().with_capacity(2, 4 << 20).unwrap();
    let problem = Problem::new(program, hw, 0.1).unwrap();
    let a = dp_assignment(&problem);
    let (decoded, scored) = problem.score(&mut problem.simulator(), &a);
    assert!(decoded
        .mapping
        .validate(problem.program(), problem.hardware())
        .is_ok());
    assert!(scored.latency_s < problem.all_slow_s());
    assert!(a.0.contains(&2) && a.0.contains(&1));
}
