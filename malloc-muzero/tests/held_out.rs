//! The bundled generalist loads and plays every held-out program (issue 28): the suite's
//! held-out workloads and the families of `bench-workloads/heldout/`, each on tpu-v4i-like
//! at 8 MiB, zero-shot, as `evaluate --solver muzero` plays them. Its time per program is
//! measured by `scripts/generalist_table.py` (docs/results.md), not here.

mod common;

use accel_sim::Hardware;
use malloc_muzero::Agent;

#[test]
fn the_bundled_generalist_plays_every_held_out_program() {
    let agent = Agent::bundled(None).unwrap();
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 8 << 20).unwrap();
    for program in common::held_out_programs() {
        let mapping = agent
            .play(&program, &hw)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
        mapping
            .validate(&program, &hw)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
    }
}
