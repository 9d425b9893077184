//! xla-msa: XLA's memory space assignment machinery, apart from the game that walks it,
//! and the baseline solvers of the mapping problem built on it.
//!
//! The machinery (docs/xla-msa.md): the prefetch interval picker, the best-fit chunk
//! heap over canonical offsets ([`ChunkHeap`]), the copy budgets, and XLA's passes, each
//! buffer's cursor through its uses and the choices at each use. All of it is private but
//! for the [`walk`](Walk): the baseline runs XLA's passes straight through, taking XLA's
//! [`Choice`] at every use; the mallocGame (`malloc-game`) walks the same passes one use
//! at a time and lets a player choose among the [`Choices`]. XLA's rules are written once,
//! in the walk. EGRL's packer and the exact solver's warm starts use the heap and the
//! baselines without depending on the game.
//!
//! The baselines:
//! - `all-slow`: everything in level 0 ([`Mapping::all_slow`]).
//! - `xla`: XLA's memory space assignment ([`Xla`], docs/xla-msa.md).
//! - `xla-repack`: the same with XLA's re-packing of offsets when a buffer runs out of
//!   memory ([`XlaOptions::max_repacks`]).
//! - `greedy-size`: TFLite-style whole-live-range placement, largest first
//!   ([`GreedySize`]).
//! - [`bound_latency`]: the latency with unbounded fast memory and free copies.

#![warn(missing_docs)]

mod bound;
mod budgets;
mod copy_budget;
mod cursor;
mod greedy_size;
mod heap;
mod occupancy;
mod options;
mod order;
mod pass;
mod picker;
mod prefetch;
mod repack;
mod timing;
mod walk;
pub mod watch;
mod xla;

pub use bound::bound_latency;
pub use greedy_size::GreedySize;
pub use heap::{Candidate, Chunk, ChunkHeap, ChunkId, HeapError, LaneMass, TopGap, MASS_LANES};
pub use options::{CascadeTiming, EvictionOverBudget, XlaOptions, DEFAULT_MAX_REPACKS};
pub use order::xla_order;
pub use pass::XlaPassStats;
pub use picker::{PickerConfig, PrefetchWindow};
pub use walk::{Charge, ChargeMark, Choice, Choices, Hold, Rules, Walk};
pub use xla::{Xla, XlaSolution};

use accel_sim::{Hardware, Mapping, MappingError, Program};

/// A one-shot solver: a program and a hardware in, one mapping out, at once (the
/// baselines, and EGRL's knapsack mapper). Searches that improve a mapping for as long as
/// they are given are `malloc_game::anytime::AnytimeSolver`s instead.
pub trait OneShotSolver: Send + Sync {
    /// The solver's name in the registry (`xla`, `greedy-size`, ...), as rows and races
    /// print it.
    fn name(&self) -> &str;
    /// A valid mapping (Mapping::validate passes) of `program` on `hw`.
    fn solve(&self, program: &Program, hw: &Hardware) -> Mapping;
}

/// Every baseline with its default options: `all-slow`, `xla`, `xla-repack` and
/// `greedy-size` (each solver's [`OneShotSolver::name`], the name `harness::registry` gives
/// it).
pub fn baselines() -> Vec<Box<dyn OneShotSolver>> {
    let repack = XlaOptions {
        max_repacks: DEFAULT_MAX_REPACKS,
        ..XlaOptions::default()
    };
    vec![
        Box::new(AllSlow),
        Box::new(Xla::default()),
        Box::new(Xla::new(repack)),
        Box::new(GreedySize),
    ]
}

/// The baseline of [`OneShotSolver::name`] `name` ([`baselines`]): a shorthand for tests
/// and examples (feature `fixtures`); the front ends build solvers from names in one place,
/// `harness::registry`.
#[cfg(any(test, feature = "fixtures"))]
pub fn solver(name: &str) -> Option<Box<dyn OneShotSolver>> {
    baselines().into_iter().find(|s| s.name() == name)
}

/// The standalone xla solver's mapping, validated. `Err` is the validator's message (a
/// bug: the solver builds valid mappings).
pub fn xla_mapping(program: &Program, hw: &Hardware) -> Result<Mapping, String> {
    let m = Xla::default().solve(program, hw);
    m.validate(program, hw).map_err(|e| e.to_string())?;
    Ok(m)
}

/// The standalone xla solver's simulated latency: every speedup is measured against it.
pub fn xla_latency(program: &Program, hw: &Hardware) -> Result<f64, String> {
    let m = xla_mapping(program, hw)?;
    Ok(accel_sim::Simulator::new(program, hw)
        .run(&m, false)
        .latency_s)
}

/// Everything in level 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllSlow;

impl OneShotSolver for AllSlow {
    fn name(&self) -> &str {
        "all-slow"
    }
    fn solve(&self, program: &Program, _hw: &Hardware) -> Mapping {
        Mapping::all_slow(program)
    }
}

/// The solvers build valid mappings by construction and their tests check it on random
/// programs; this net keeps the `OneShotSolver` promise even against a bug: each buffer the
/// validator names loses its fast allocations (level 0 is always valid for it).
pub(crate) fn ensure_valid(program: &Program, hw: &Hardware, mut mapping: Mapping) -> Mapping {
    if mapping.buffers.len() != program.buffers().len() {
        return Mapping::all_slow(program);
    }
    for _ in 0..=program.buffers().len() {
        let name = match mapping.validate(program, hw) {
            Ok(_) => return mapping,
            Err(MappingError::Bad { buffer, .. }) => buffer,
            Err(MappingError::Overlap { b, .. }) => b,
            Err(MappingError::WrongLength { .. }) => break,
        };
        let before = mapping
            .buffers
            .iter()
            .filter(|p| !p.allocations.is_empty())
            .count();
        for (i, buf) in program.buffers().iter().enumerate() {
            if buf.name == name {
                mapping.buffers[i].allocations.clear();
            }
        }
        let after = mapping
            .buffers
            .iter()
            .filter(|p| !p.allocations.is_empty())
            .count();
        if after == before {
            break;
        }
    }
    Mapping::all_slow(program)
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::{Allocation, Arrival, Buffer, BufferKind, Op, Simulator};

    fn prog() -> Program {
        let buf = |n: &str, s: u64, k| Buffer {
            name: n.into(),
            size: s,
            kind: k,
        };
        Program::new(
            "p",
            "",
            vec![
                buf("x", 1 << 20, BufferKind::Input),
                buf("a", 1 << 20, BufferKind::Activation),
                buf("y", 1 << 20, BufferKind::Output),
            ],
            vec![
                Op {
                    name: "op0".into(),
                    kind: "t".into(),
                    flops: 1e9,
                    reads: vec![0],
                    writes: vec![1],
                },
                Op {
                    name: "op1".into(),
                    kind: "t".into(),
                    flops: 1e6,
                    reads: vec![1],
                    writes: vec![2],
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn every_name_builds_its_solver() {
        let names: Vec<String> = baselines().iter().map(|s| s.name().to_string()).collect();
        assert_eq!(names, ["all-slow", "xla", "xla-repack", "greedy-size"]);
        for name in &names {
            assert_eq!(solver(name).unwrap().name(), name);
        }
        assert!(solver("nope").is_none());
    }

    #[test]
    fn bound_is_below_every_solver_and_all_slow_is_slowest_here() {
        let p = prog();
        let hw = Hardware::tpu_v4i_like();
        let b = bound_latency(&p, &hw);
        // op0: max(1e9 / 138e12, 2 MiB / 2000 GB/s) + 0.5 us; op1 likewise.
        let mib2 = (2u64 << 20) as f64 / 2000e9;
        let want = (1e9 / 138e12f64).max(mib2) + (1e6 / 138e12f64).max(mib2) + 1e-6;
        assert!((b - want).abs() < 1e-15, "{b} vs {want}");
        let mut sim = Simulator::new(&p, &hw);
        let slow = sim.run(&Mapping::all_slow(&p), false).latency_s;
        for s in baselines() {
            let (n, m) = (s.name(), s.solve(&p, &hw));
            m.validate(&p, &hw).unwrap();
            let l = sim.run(&m, false).latency_s;
            assert!(l >= b, "{n}: {l} < bound {b}");
            assert!(l <= slow * (1.0 + 1e-12), "{n}: {l} > all-slow {slow}");
        }
    }

    #[test]
    fn the_safety_net_clears_only_the_named_buffer() {
        let p = prog();
        let hw = Hardware::tpu_v4i_like();
        let mut m = Mapping::all_slow(&p);
        let ok = Allocation {
            level: 1,
            offset: 0,
            start: 0,
            end: 1,
            arrival: Arrival::Defined,
            eviction: None,
        };
        m.buffers[1].allocations = vec![ok];
        // y is an output defined in fast without an eviction: invalid.
        m.buffers[2].allocations = vec![Allocation {
            offset: 1 << 20,
            start: 1,
            end: 1,
            ..ok
        }];
        let fixed = ensure_valid(&p, &hw, m);
        assert_eq!(fixed.buffers[1].allocations, vec![ok]);
        assert!(fixed.buffers[2].allocations.is_empty());
        fixed.validate(&p, &hw).unwrap();
    }
}
