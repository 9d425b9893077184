//! The bundled generalist loads and plays every held-out program (issue 28): the suite's
//! held-out workloads and the families of `bench-workloads/heldout/`, each on tpu-v4i-like
//! at 8 MiB, zero-shot, as `evaluate --solver muzero` plays them. Its time per program is
//! measured by `scripts/generalist_table.py` (docs/results.md), not here.

use accel_sim::{Hardware, Program};
use malloc_muzero::generalist::HELD_OUT_WORKLOADS;
use malloc_muzero::Agent;
use std::path::Path;

fn held_out_programs() -> Vec<Program> {
    let mut programs: Vec<Program> = HELD_OUT_WORKLOADS
        .iter()
        .map(|w| bench_workloads::load(w).unwrap())
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-workloads/heldout");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 6,
        "{} files in {}",
        files.len(),
        dir.display()
    );
    for f in files {
        programs.push(bench_workloads::load(f.to_str().unwrap()).unwrap());
    }
    programs
}

#[test]
fn the_bundled_generalist_plays_every_held_out_program() {
    let agent = Agent::bundled(None).unwrap();
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 8 << 20).unwrap();
    for program in held_out_programs() {
        let mapping = agent
            .play(&program, &hw)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
        mapping
            .validate(&program, &hw)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
    }
}
