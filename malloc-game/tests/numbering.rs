//! One latency, whatever the numbering: renumbering a program's buffers (and its mapping
//! with it) leaves the simulated latency unchanged to the bit. The mappings come from the
//! baselines (greedy-size issues many copies at one op) and from random play, on every
//! suite case and on generated programs with one and two fast levels.

use accel_sim::fixtures::renumbered;
use accel_sim::{Hardware, Mapping, Program, Simulator};
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::Arc;

/// The mappings each case is checked with: every baseline's and a few random games'.
fn mappings(program: &Arc<Program>, hw: &Hardware, games: u64) -> Vec<(String, Mapping)> {
    let mut out: Vec<(String, Mapping)> = xla_msa::baselines()
        .iter()
        .map(|s| (s.name().to_string(), s.solve(program, hw)))
        .collect();
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    let setup = GameSetup::new(Arc::clone(program), hw.clone(), options).unwrap();
    let random = player("random").unwrap();
    for seed in 0..games {
        out.push((
            format!("random seed {seed}"),
            random.play(&setup, seed).mapping(),
        ));
    }
    out
}

/// Checks every mapping of `program` under `permutations` random renumberings.
fn check(name: &str, program: &Arc<Program>, hw: &Hardware, games: u64, permutations: u64) {
    for (solver, mapping) in mappings(program, hw, games) {
        mapping.validate(program, hw).unwrap();
        let latency = Simulator::new(program, hw).run(&mapping, false).latency_s;
        for seed in 0..permutations {
            let mut order: Vec<usize> = (0..program.buffers().len()).collect();
            order.shuffle(&mut StdRng::seed_from_u64(seed));
            let (p, m) = renumbered(program, &mapping, &order);
            m.validate(&p, hw).unwrap();
            let again = Simulator::new(&p, hw).run(&m, false).latency_s;
            assert_eq!(
                latency.to_bits(),
                again.to_bits(),
                "{name}, {solver}, renumbering {seed}: {latency} s against {again} s"
            );
        }
    }
}

#[test]
fn renumbering_buffers_leaves_the_latency_unchanged_on_every_suite_case() {
    for case in bench_workloads::suite::cases() {
        let program = Arc::new(bench_workloads::load(case.workload).unwrap());
        let name = format!("{} on {}", case.workload, case.hardware);
        check(&name, &program, &case.hardware(), 2, 3);
    }
}

#[test]
fn renumbering_buffers_leaves_the_latency_unchanged_on_generated_programs() {
    let mut tpu = Hardware::tpu_v4i_like();
    tpu.levels[1].capacity = 2 << 20;
    let mut nnp = Hardware::nnp_i_like();
    nnp.levels[1].capacity = 4 << 20;
    nnp.levels[2].capacity = 1 << 20;
    for seed in 0..12 {
        let program = Arc::new(bench_workloads::synthetic::random_dag(60, seed));
        for hw in [&tpu, &nnp] {
            let name = format!("random_dag(60, {seed}) on {}", hw.name);
            check(&name, &program, hw, 4, 4);
        }
    }
}

/// A window over every op only renumbers the buffers (in the order they first appear),
/// so the same mapping, carried over by name, simulates to the same latency.
#[test]
fn a_window_over_every_op_simulates_as_the_program_does() {
    for case in bench_workloads::suite::cases() {
        let program = Arc::new(bench_workloads::load(case.workload).unwrap());
        let hw = case.hardware();
        let window = program.window(0..program.len()).unwrap();
        for (solver, mapping) in mappings(&program, &hw, 1) {
            let by_name: std::collections::HashMap<&str, usize> = program
                .buffers()
                .iter()
                .enumerate()
                .map(|(b, buf)| (buf.name.as_str(), b))
                .collect();
            let carried = Mapping {
                buffers: window
                    .buffers()
                    .iter()
                    .map(|buf| mapping.buffers[by_name[buf.name.as_str()]].clone())
                    .collect(),
            };
            carried.validate(&window, &hw).unwrap();
            let a = Simulator::new(&program, &hw).run(&mapping, false).latency_s;
            let b = Simulator::new(&window, &hw).run(&carried, false).latency_s;
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{} on {}, {solver}: {a} s against {b} s over its window",
                case.workload,
                case.hardware
            );
        }
    }
}
