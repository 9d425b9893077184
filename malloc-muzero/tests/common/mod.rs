//! What the agent crate's integration tests share.

// Each test file uses some of these, none all of them.
#![allow(dead_code)]

use accel_sim::Program;
use malloc_game::anytime::{Limit, LocalSearch, LocalSearchConfig};
use malloc_muzero::generalist::HELD_OUT_WORKLOADS;
use std::path::Path;
use std::time::{Duration, Instant};

/// A local search of `moves` moves a chain (a counted run: it repeats per seed and thread
/// count), its chains meeting every 16.
pub fn counted(moves: usize) -> LocalSearch {
    LocalSearch {
        config: LocalSearchConfig {
            moves: Some(moves),
            sync_every: 16,
            ..LocalSearchConfig::default()
        },
    }
}

/// A deadline an hour away (a counted run ignores it) on `threads` threads.
pub fn limit(threads: usize) -> Limit {
    Limit {
        deadline: Instant::now() + Duration::from_secs(3600),
        threads,
        stop: None,
    }
}

/// Every held-out program: the suite's held-out workloads and the families of
/// `bench-workloads/heldout/` (at least six files), in name order.
pub fn held_out_programs() -> Vec<Program> {
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
