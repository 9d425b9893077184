//! Dev check: the time of one learner step and one GNN forward on a workload.
//! `cargo run --release -p egrl --example learner_speed -- resnet50`
use accel_sim::Hardware;
use egrl::gnn::{forward, GnnShape, GraphTensors};
use egrl::learner::{Learner, LearnerConfig};
use egrl::{feature_width, Assignment, OpGraph, Problem};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let workload = std::env::args().nth(1).unwrap_or("resnet50".into());
    let program = Arc::new(bench_workloads::load(&workload).unwrap());
    let hw = Hardware::nnp_i_like().with_capacity_spec("4MiB").unwrap();
    let problem = Problem::new(program, hw, 0.1).unwrap();
    let graph =
        Arc::new(GraphTensors::new(&OpGraph::of(&problem), &candle_core::Device::Cpu).unwrap());
    let shape = GnnShape {
        features: feature_width(3),
        hidden: 32,
        rounds: 3,
        levels: 3,
    };
    let mut rng = StdRng::seed_from_u64(0);
    let p = shape
        .init(&mut rng)
        .tensors(&shape, &candle_core::Device::Cpu)
        .unwrap();
    let t0 = Instant::now();
    for _ in 0..50 {
        forward(&shape, &p, &graph).unwrap();
    }
    println!("forward: {:.2} ms", t0.elapsed().as_secs_f64() * 1e3 / 50.0);
    let mut l = Learner::new(shape, graph, LearnerConfig::default(), &mut rng).unwrap();
    let d = problem.decisions().len();
    let data: Vec<(Assignment, f64)> = (0..64)
        .map(|_| {
            (
                Assignment((0..d).map(|_| rng.random_range(0..3)).collect()),
                rng.random(),
            )
        })
        .collect();
    let batch: Vec<(&Assignment, f64)> = data.iter().map(|(a, f)| (a, *f)).collect();
    let t0 = Instant::now();
    for _ in 0..20 {
        l.train_step(&batch).unwrap();
    }
    println!(
        "train step: {:.2} ms",
        t0.elapsed().as_secs_f64() * 1e3 / 20.0
    );
    let t0 = Instant::now();
    for _ in 0..20 {
        l.actor_logits().unwrap();
    }
    println!(
        "actor logits: {:.2} ms",
        t0.elapsed().as_secs_f64() * 1e3 / 20.0
    );
}
