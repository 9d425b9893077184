//! The `greedy-size` baseline, after TFLite's greedy-by-size planner: buffers largest
//! first, each resident in one fast level over its whole live range, at the best-fit
//! offset of the fastest level that holds it, if the cost model says it helps.
//!
//! "Resident" per kind: an activation is written into the level by its defining op and
//! held to its last use; an output likewise, evicted right after its definition (it must
//! end in level 0) and held to the program end; a weight or input is prefetched when op 0
//! begins and held to its last use.

use crate::heap::{ChunkHeap, TopGap};
use crate::OneShotSolver;
use accel_sim::{
    Allocation, Arrival, BufferKind, BufferPlacement, CostModel, CostState, Hardware, Mapping,
    Program,
};

/// The `greedy-size` solver.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedySize;

/// The whole-live-range placement of buffer `b` at `offset` of `level`.
pub fn resident(program: &Program, b: usize, level: usize, offset: u64) -> Allocation {
    let (start, end) = program.live_range(b);
    let kind = program.buffer(b).kind;
    Allocation {
        level,
        offset,
        start,
        end,
        arrival: if kind.is_entry() {
            Arrival::Prefetch
        } else {
            Arrival::Defined
        },
        eviction: (kind == BufferKind::Output).then_some(start),
    }
}

impl GreedySize {
    /// The mapping before the validity safety net (the tests check it directly).
    pub fn solve_raw(&self, program: &Program, hw: &Hardware) -> Mapping {
        let cost = CostModel::new(program, hw);
        let mut state = CostState::new(&cost);
        let t = program.len();
        let mut heaps: Vec<Option<ChunkHeap>> = (0..hw.levels.len())
            .map(|l| ChunkHeap::for_level(hw, l, t).ok())
            .collect();
        let mut order: Vec<usize> = (0..program.buffers().len()).collect();
        order.sort_by_key(|&b| (std::cmp::Reverse(program.buffer(b).size), b));
        for b in order {
            let (start, end) = program.live_range(b);
            let size = program.buffer(b).size;
            for level in (1..hw.levels.len()).rev() {
                let Some(heap) = heaps[level].as_mut() else {
                    continue;
                };
                let Some(offset) = heap.best_fit(start, end, size, None, TopGap::Capacity) else {
                    continue;
                };
                let placement = BufferPlacement {
                    allocations: vec![resident(program, b, level, offset)],
                };
                // A placement whose copy costs more than its faster accesses save (or that
                // saves nothing) is not worth its space.
                if state.delta(b, &placement) >= 0.0 {
                    continue;
                }
                let chunk = crate::heap::Chunk {
                    start,
                    end,
                    offset,
                    size,
                };
                if heap.commit(chunk).is_ok() {
                    state.apply(b, placement);
                    break;
                }
            }
        }
        state.mapping()
    }
}

impl OneShotSolver for GreedySize {
    fn name(&self) -> &str {
        "greedy-size"
    }
    fn solve(&self, program: &Program, hw: &Hardware) -> Mapping {
        crate::ensure_valid(program, hw, self.solve_raw(program, hw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::{Buffer, Op};

    #[test]
    fn largest_first_and_only_where_it_helps() {
        // op0: reads x (2 MB input), writes a (4 MB); op1: reads a, writes y (1 MB output).
        // Memory-bound (no flops). Fast level: 5 MB. Largest first: a (4 MB) takes [0, 4M);
        // x (2 MB) is live with a at op 0 and no longer fits; y (1 MB) fits at [4M, 5M).
        // x's prefetch would also be fully exposed: 2 ms of copy for 1.8 ms saved.
        let buf = |n: &str, s: u64, k| Buffer {
            name: n.into(),
            size: s,
            kind: k,
        };
        let op = |n: &str, r: Vec<usize>, w: Vec<usize>| Op {
            name: n.into(),
            kind: "t".into(),
            flops: 0.0,
            reads: r,
            writes: w,
        };
        let p = Program::new(
            "g",
            "",
            vec![
                buf("x", 2_000_000, BufferKind::Input),
                buf("a", 4_000_000, BufferKind::Activation),
                buf("y", 1_000_000, BufferKind::Output),
            ],
            vec![op("op0", vec![0], vec![1]), op("op1", vec![1], vec![2])],
        )
        .unwrap();
        let mut hw = Hardware::tpu_v4i_like()
            .with_capacity(1, 5_000_000)
            .unwrap();
        hw.levels[1].alignment = 1;
        hw.levels[0].read_bw = 1e9;
        hw.levels[0].write_bw = 1e9;
        hw.levels[1].read_bw = 1e10;
        hw.levels[1].write_bw = 1e10;
        let m = GreedySize.solve_raw(&p, &hw);
        m.validate(&p, &hw).unwrap();
        assert!(m.buffers[0].allocations.is_empty());
        assert_eq!(m.buffers[1].allocations, vec![resident(&p, 1, 1, 0)]);
        // y: a 1 MB eviction (1 ms) with nothing to overlap costs more than the 0.9 ms its
        // fast write saves, so it stays in level 0.
        assert!(m.buffers[2].allocations.is_empty());
        let a = &m.buffers[1].allocations[0];
        assert_eq!((a.start, a.end, a.arrival), (0, 1, Arrival::Defined));
    }
}
