//! The programs the bounds' tests run on, shared by the bound by blocks and the bound by
//! prices: small random DAGs on hardware whose capacity binds, both presets, both
//! objectives, with the mappings each bound must stay below.

use crate::solve::Objective;
use accel_sim::{Hardware, Mapping, Program, Simulator};
use malloc_game::players::player;
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;

/// One program of the bounds' tests.
pub(crate) struct BoundCase {
    pub(crate) seed: u64,
    pub(crate) program: Arc<Program>,
    pub(crate) hw: Hardware,
    pub(crate) objective: Objective,
}

/// 8 random DAGs of 24 to 52 ops, tpu-v4i-like and nnp-i-like in turn at a capacity that
/// binds, the last two under the cost model.
pub(crate) fn bound_cases() -> Vec<BoundCase> {
    (0..8u64)
        .map(|seed| {
            let program = Arc::new(bench_workloads::synthetic::random_dag(
                24 + 4 * seed as usize,
                40 + seed,
            ));
            let preset = if seed % 2 == 0 {
                "tpu-v4i-like"
            } else {
                "nnp-i-like"
            };
            let hw = accel_sim::fixtures::binding_hw(&program, preset, 3);
            let objective = if seed < 6 {
                Objective::Simulated
            } else {
                Objective::Proxy
            };
            BoundCase {
                seed,
                program,
                hw,
                objective,
            }
        })
        .collect()
}

impl BoundCase {
    /// Asserts `bound` is at most the latency of four random games' mappings and of
    /// `more`, in the objective and (under the simulated one) in simulation.
    pub(crate) fn assert_below_mappings(&self, bound: f64, more: &[&Mapping], what: &str) {
        let setup = GameSetup::new(
            Arc::clone(&self.program),
            self.hw.clone(),
            GameOptions::default(),
        )
        .unwrap();
        let random: Vec<Mapping> = (0..4)
            .map(|s| player("random").unwrap().play(&setup, s).mapping())
            .collect();
        let cost = self.objective.cost_model(&self.program, &self.hw);
        let mut sim = Simulator::new(&self.program, &self.hw);
        for m in random.iter().chain(more.iter().copied()) {
            let l = cost.latency(m);
            assert!(bound <= l * (1.0 + 1e-9), "{what}: {bound:e} above {l:e}");
            if self.objective == Objective::Simulated {
                let s = sim.run(m, false).latency_s;
                assert!(
                    bound <= s * (1.0 + 1e-9),
                    "{what}: {bound:e} above {s:e} simulated"
                );
            }
        }
    }
}
