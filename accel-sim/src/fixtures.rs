//! Small programs shared by the workspace's tests (feature `fixtures`), so a test of the
//! validator, the game and the trainer talks about the same program instead of each
//! crate keeping its own copy.

use crate::{Buffer, BufferKind, Hardware, Op, Program};

/// `x -> op0 -> a -> op1 -> b -> op2 -> y`, with a weight `w` read by `op0` and `op2`:
/// five buffers, sizes `unit` (x, a, b, y) and `2 * unit` (w), each op `flops` FLOPs.
/// Small enough to solve by enumerating every mapping, and it has one buffer (`w`) with
/// two uses far apart, the case where eviction and prefetch matter.
pub fn three_ops(name: &str, unit: u64, flops: f64) -> Program {
    let buf = |n: &str, size, kind| Buffer {
        name: n.into(),
        size,
        kind,
    };
    let op = |n: &str, reads: &[usize], writes: &[usize]| Op {
        name: n.into(),
        kind: "t".into(),
        flops,
        reads: reads.to_vec(),
        writes: writes.to_vec(),
    };
    Program::new(
        name,
        "",
        vec![
            buf("x", unit, BufferKind::Input),
            buf("w", 2 * unit, BufferKind::Weight),
            buf("a", unit, BufferKind::Activation),
            buf("b", unit, BufferKind::Activation),
            buf("y", unit, BufferKind::Output),
        ],
        vec![
            op("op0", &[0, 1], &[2]),
            op("op1", &[2], &[3]),
            op("op2", &[3, 1], &[4]),
        ],
    )
    .expect("the fixture is a valid program")
}

/// `program` and `mapping` with buffer `b` renamed `order[b]` (a permutation of the buffer
/// ids): the same program, numbered otherwise. Each op lists its buffers in the same
/// order as before, so nothing but the numbering changes.
pub fn renumbered(
    program: &Program,
    mapping: &crate::Mapping,
    order: &[usize],
) -> (Program, crate::Mapping) {
    let n = program.buffers().len();
    assert_eq!(order.len(), n, "one new id per buffer");
    let mut buffers = vec![None; n];
    let mut placements = vec![None; n];
    for (b, &to) in order.iter().enumerate() {
        buffers[to] = Some(program.buffers()[b].clone());
        placements[to] = Some(mapping.buffers[b].clone());
    }
    let rename = |list: &[usize]| list.iter().map(|&b| order[b]).collect();
    let ops = program
        .ops()
        .iter()
        .map(|op| Op {
            reads: rename(&op.reads),
            writes: rename(&op.writes),
            ..op.clone()
        })
        .collect();
    let buffers = buffers
        .into_iter()
        .map(|b| b.expect("`order` is a permutation"))
        .collect();
    let program = Program::new(program.name(), program.description(), buffers, ops)
        .expect("renumbering keeps a program valid");
    let mapping = crate::Mapping {
        buffers: placements
            .into_iter()
            .map(|p| p.expect("`order` is a permutation"))
            .collect(),
    };
    (program, mapping)
}

/// `preset` with its fastest level cut to `1/divisor` of `program`'s peak live bytes (at
/// least 64 KiB): a capacity that binds, so a solver has choices to make.
pub fn binding_hw(program: &Program, preset: &str, divisor: u64) -> Hardware {
    let hw = Hardware::preset(preset).expect("a preset name");
    let fastest = hw.fastest();
    hw.with_capacity(fastest, (program.peak_live_bytes() / divisor).max(1 << 16))
        .expect("a capacity of at least 64 KiB")
}
