//! The `xla` baseline's tests: worked by hand on small programs.

use super::*;
use crate::budgets::Budgets;
use crate::heap::{ChunkHeap, TopGap};
use crate::order::xla_order;
use crate::pass::{PassMut, PassState};
use crate::timing::Timing;
use crate::{EvictionOverBudget, XlaPassStats};
use accel_sim::{Allocation, Arrival, BufferKind, CostModel, OpId};
use accel_sim::{Buffer, Op};

const MB: u64 = 1_000_000;

/// Level 0 at 1 GB/s (1 MB = 1 ms), level 1 at 10 GB/s with `capacity` bytes and no
/// alignment, 1 TFLOP/s (1e9 FLOP = 1 ms), no overheads: numbers easy to work by hand.
fn hw(capacity: u64) -> Hardware {
    let mut hw = Hardware::tpu_v4i_like().with_capacity(1, capacity).unwrap();
    hw.levels[0].read_bw = 1e9;
    hw.levels[0].write_bw = 1e9;
    hw.levels[1].read_bw = 1e10;
    hw.levels[1].write_bw = 1e10;
    hw.levels[1].alignment = 1;
    hw.peak_flops = 1e12;
    hw.op_overhead_s = 0.0;
    hw.dma.setup_s = 0.0;
    hw
}

fn buf(name: &str, size: u64, kind: BufferKind) -> Buffer {
    Buffer {
        name: name.into(),
        size,
        kind,
    }
}

/// An op of `ms` milliseconds of compute.
fn op(ms: f64, reads: &[usize], writes: &[usize]) -> Op {
    Op {
        name: format!("op{reads:?}{writes:?}"),
        kind: "t".into(),
        flops: ms * 1e9,
        reads: reads.to_vec(),
        writes: writes.to_vec(),
    }
}

fn defined(offset: u64, start: OpId, end: OpId, eviction: Option<OpId>) -> Allocation {
    Allocation {
        level: 1,
        offset,
        start,
        end,
        arrival: Arrival::Defined,
        eviction,
    }
}

fn prefetch(offset: u64, start: OpId, end: OpId) -> Allocation {
    Allocation {
        level: 1,
        offset,
        start,
        end,
        arrival: Arrival::Prefetch,
        eviction: None,
    }
}

fn solve(p: &Program, hw: &Hardware, options: XlaOptions) -> XlaSolution {
    let sol = Xla::new(options).solve_detailed(p, hw);
    sol.mapping.validate(p, hw).unwrap();
    sol
}

#[test]
fn order_best_fit_and_no_copy() {
    // op0 writes p (3 MB) and q (1 MB); op1 reads p; op2 writes r (1 MB); op3 reads q
    // and r. No FLOPs: every op is memory-bound, and each access moved to level 1
    // saves 0.9 ms per MB. Capacity 5 MB, so max_copy = 5 ms x 10 = 50 ms.
    let p = Program::new(
        "order",
        "",
        vec![
            buf("p", 3 * MB, BufferKind::Activation),
            buf("q", MB, BufferKind::Activation),
            buf("r", MB, BufferKind::Activation),
        ],
        vec![
            op(0.0, &[], &[0, 1]),
            op(0.0, &[0], &[]),
            op(0.0, &[], &[2]),
            op(0.0, &[1, 2], &[]),
        ],
    )
    .unwrap();
    let hw = hw(5 * MB);
    // Memory-boundedness: p (2.7 + 2.7 ms) / sqrt(3e6) = 3.1e-6; q and r
    // (0.9 + 0.9 ms) / sqrt(1e6) = 1.8e-6, tied on size; q lives longer, so it comes
    // first.
    let cost = CostModel::new(&p, &hw);
    assert_eq!(xla_order(&p, &cost, 1), vec![0, 1, 2]);
    // p: no-copy over [0, 1] (no op strictly between) -> best fit in the empty level:
    // offset 0. q: no-copy over [0, 3] (ops 1 and 2 between: 3 + 1 ms < 50 ms), beside
    // p -> the gap [3 MB, 5 MB): offset 3 MB. r over [2, 3], beside q only: gaps
    // [0, 3 MB) and [4 MB, 5 MB); best fit takes the smaller: 4 MB (first fit would
    // take 0). All uses are served: no evictions.
    let sol = solve(&p, &hw, XlaOptions::default());
    let m = &sol.mapping;
    assert_eq!(m.buffers[0].allocations, vec![defined(0, 0, 1, None)]);
    assert_eq!(m.buffers[1].allocations, vec![defined(3 * MB, 0, 3, None)]);
    assert_eq!(m.buffers[2].allocations, vec![defined(4 * MB, 2, 3, None)]);
    assert_eq!(sol.passes[0].defined, 3);
    // XLA's own heap sizes the top gap by its peak address (4 MB): [4 MB, 5 MB) then
    // counts as empty and r goes into the hole at 0.
    let peak = XlaOptions {
        top_gap: TopGap::Peak,
        ..Default::default()
    };
    let m = solve(&p, &hw, peak).mapping;
    assert_eq!(m.buffers[2].allocations, vec![defined(0, 2, 3, None)]);
}

#[test]
fn a_far_use_needs_an_eviction_then_a_prefetch() {
    // a (1 MB) is written by op0 and read by op1 and op5; ops 2..=4 compute for 8 ms
    // each. Capacity 2 MB: max_copy = 2 ms x 10 = 20 ms.
    let p = Program::new(
        "evict",
        "",
        vec![buf("a", MB, BufferKind::Activation)],
        vec![
            op(0.0, &[], &[0]),
            op(0.0, &[0], &[]),
            op(8.0, &[], &[]),
            op(8.0, &[], &[]),
            op(8.0, &[], &[]),
            op(0.0, &[0], &[]),
        ],
    )
    .unwrap();
    let hw = hw(2 * MB);
    // Segment [0, 1]: no-copy (nothing between), and the segment [1, 5] has 24 ms
    // between > 20 ms, so the chunk is chosen for [0, 1] only: offset 0.
    // Segment [1, 5]: no-copy refused (24 ms > 20 ms), so a is evicted after op0.
    // The preferred eviction end is the first E with span(ops 1..=E) >= 1.5 x 1 ms:
    // E = 2 (1 + 8 ms); offset 0 is free at op 2, so the hold is [0, 2].
    // Prefetch for op5 from op 3 (level 0 has a from E + 1): latest start 5 (the use's
    // saving, 0.9 ms, covers 0.8 x 1 ms), earliest 3 (16 ms <= 20 ms), preferred the
    // overlap nearest 1.5 ms: s = 5 (0 ms) beats s = 4 (8 ms) and s = 3 (16 ms). A
    // copy beside no op has no budget, so the next candidate, s = 4 (later first, but
    // 6 is past the latest), wins.
    let sol = solve(&p, &hw, XlaOptions::default());
    assert_eq!(
        sol.mapping.buffers[0].allocations,
        vec![defined(0, 0, 2, Some(0)), prefetch(0, 4, 5)]
    );
    assert_eq!((sol.passes[0].evictions, sol.passes[0].prefetches), (1, 1));
    // Without the budget, the preferred start wins.
    let no_budget = XlaOptions {
        copy_budget: false,
        ..Default::default()
    };
    let m = solve(&p, &hw, no_budget).mapping;
    assert_eq!(m.buffers[0].allocations[1], prefetch(0, 5, 5));
}

/// w (1 MB weight) read by op4; ops 0..=3 compute for 0.5, 1, 1 and 0.2 ms. With
/// `blocker`, z (2 MB, the whole level) is written by op1 (2 ms of memory time) and
/// read by op2 (2 ms).
fn picker_program(blocker: bool) -> Program {
    let mut buffers = vec![buf("w", MB, BufferKind::Weight)];
    let (w1, r2): (Vec<usize>, Vec<usize>) = if blocker {
        buffers.push(buf("z", 2 * MB, BufferKind::Activation));
        (vec![1], vec![1])
    } else {
        (vec![], vec![])
    };
    Program::new(
        "picker",
        "",
        buffers,
        vec![
            op(0.5, &[], &[]),
            op(1.0, &[], &w1),
            op(1.0, &r2, &[]),
            op(0.2, &[], &[]),
            op(0.0, &[0], &[]),
        ],
    )
    .unwrap()
}

#[test]
fn the_picker_chooses_the_prefetch_start() {
    // Overlaps with op4: s = 0: 2.7 ms, 1: 2.2, 2: 1.2, 3: 0.2, 4: 0. Latest start 4
    // (0.9 ms saving >= 0.8 x 1 ms), earliest 0 (2.7 ms <= 20 ms). Preferred: nearest
    // 1.5 ms -> s = 2 (1.2 ms), whose 1.2 ms of ops carry the 1 ms copy.
    let p = picker_program(false);
    let m = solve(&p, &hw(2 * MB), XlaOptions::default()).mapping;
    assert_eq!(m.buffers[0].allocations, vec![prefetch(0, 2, 4)]);
}

#[test]
fn the_copy_budget_limits_a_prefetch() {
    // z (memory-boundedness (1 + 1 ms) / sqrt(2e6) = 1.4e-6) goes before w (0.9e-6):
    // written at op1 and read at op2, it fills the level over [1, 2].
    // w: op times are now 0.5, 2, 2, 0.2, 1 ms; overlaps with op4: s = 0: 4.7 ms,
    // 1: 4.2, 2: 2.2, 3: 0.2, 4: 0. Preferred s = 2 (2.2 ms, nearest 1.5 ms), then
    // 3, 1, 4, 0. s = 2 overlaps z: no chunk, and no earlier start can have one. s = 3
    // has a chunk, but op3's 0.2 ms cannot carry the 1 ms copy; s = 4 has no op at all.
    let p = picker_program(true);
    let hw = hw(2 * MB);
    let m = solve(&p, &hw, XlaOptions::default()).mapping;
    assert_eq!(m.buffers[1].allocations, vec![defined(0, 1, 2, None)]);
    assert!(m.buffers[0].allocations.is_empty(), "{m:?}");
    // Without the budget, s = 3 is taken.
    let no_budget = XlaOptions {
        copy_budget: false,
        ..Default::default()
    };
    let m = solve(&p, &hw, no_budget).mapping;
    assert_eq!(m.buffers[0].allocations, vec![prefetch(0, 3, 4)]);
}

/// y (1 MB output) written by op0 and read by op1. Level 0 writes at 0.5 GB/s, so a
/// copy of y takes 2 ms, while op1 (reading y from level 0) lasts 1 ms.
fn undo_case() -> (Program, Hardware) {
    let p = Program::new(
        "undo",
        "",
        vec![buf("y", MB, BufferKind::Output)],
        vec![op(0.0, &[], &[0]), op(0.0, &[0], &[])],
    )
    .unwrap();
    let mut hw = hw(2 * MB);
    hw.levels[0].write_bw = 0.5e9;
    (p, hw)
}

#[test]
fn an_eviction_over_budget_is_free_or_undoes_the_buffer() {
    // y: no-copy over [0, 1] puts it in level 1 at 0 (pending). As an output it must be
    // evicted before the end: hold [0, 1] (nothing after op1), a copy of 2 ms beside
    // op1's 1 ms: over budget. XLA (last retry) makes it anyway.
    let (p, hw) = undo_case();
    let sol = solve(&p, &hw, XlaOptions::default());
    assert_eq!(
        sol.mapping.buffers[0].allocations,
        vec![defined(0, 0, 1, Some(0))]
    );
    assert_eq!(sol.passes[0].evictions_over_budget, 1);
    // Refusing it fails the buffer: its pending chunk is undone.
    let refuse = XlaOptions {
        eviction_over_budget: EvictionOverBudget::Refuse,
        ..Default::default()
    };
    let sol = solve(&p, &hw, refuse);
    assert!(sol.mapping.buffers[0].allocations.is_empty());
    assert_eq!(sol.passes[0].undone, 1);
    assert_eq!(sol.passes[0].evictions, 0);
}

#[test]
fn an_undone_buffer_leaves_no_chunk_or_copy_behind() {
    let (p, hw) = undo_case();
    let cost = CostModel::new(&p, &hw);
    let opts = XlaOptions {
        eviction_over_budget: EvictionOverBudget::Refuse,
        separate_eviction_budget: false,
        ..Default::default()
    };
    let timing = Timing::new(&cost, vec![cost.default_mem_s(0), cost.default_mem_s(1)]);
    let mut budgets = Budgets::new(&opts, &timing);
    let mut state = PassState {
        level: 1,
        max_copy: 40e-3,
        heap: ChunkHeap::for_level(&hw, 1, p.len()).unwrap(),
        timing: std::sync::Arc::new(timing),
        stats: XlaPassStats::default(),
    };
    let mut pass = PassMut {
        program: &p,
        cost: &cost,
        opts: &opts,
        st: &mut state,
    };
    assert!(pass.place(0, &[], &mut budgets).0.is_empty());
    assert!(pass.st.heap.is_empty());
    assert!(budgets.log.is_empty());
    assert_eq!(budgets.prefetch.snapshot(), vec![]);
}

#[test]
fn cascade_puts_what_the_fastest_level_cannot_hold_in_the_next() {
    // Levels: 0 at 1 GB/s; 1 (4 MB) at 10 GB/s; 2 (1 MB) at 100 GB/s.
    // a (2 MB) written by op0, read by op1; b (0.5 MB) written by op1, read by op2.
    let mut hw = hw(4 * MB);
    let mut sram = hw.levels[1].clone();
    sram.name = "SRAM".into();
    sram.capacity = MB;
    sram.read_bw = 1e11;
    sram.write_bw = 1e11;
    hw.levels.push(sram);
    let p = Program::new(
        "cascade",
        "",
        vec![
            buf("a", 2 * MB, BufferKind::Activation),
            buf("b", MB / 2, BufferKind::Activation),
        ],
        vec![op(0.0, &[], &[0]), op(0.0, &[0], &[1]), op(0.0, &[1], &[])],
    )
    .unwrap();
    // Pass 1 (level 2): a does not fit in 1 MB; b does. Pass 2 (level 1): a fits.
    let sol = solve(&p, &hw, XlaOptions::default());
    let m = &sol.mapping;
    assert_eq!(
        m.buffers[0].allocations,
        vec![Allocation {
            level: 1,
            ..defined(0, 0, 1, None)
        }]
    );
    assert_eq!(
        m.buffers[1].allocations,
        vec![Allocation {
            level: 2,
            ..defined(0, 1, 2, None)
        }]
    );
    assert_eq!(
        sol.passes
            .iter()
            .map(|s| (s.level, s.defined))
            .collect::<Vec<_>>(),
        vec![(2, 1), (1, 1)]
    );
    // Without the cascade only the fastest level is used.
    let single = XlaOptions {
        cascade: false,
        ..Default::default()
    };
    let m = solve(&p, &hw, single).mapping;
    assert!(m.buffers[0].allocations.is_empty());
    assert_eq!(m.buffers[1].allocations.len(), 1);
}
