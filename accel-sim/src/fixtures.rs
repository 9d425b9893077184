//! Small programs shared by the workspace's tests (feature `fixtures`), so a test of the
//! validator, the game and the trainer talks about the same program instead of each
//! crate keeping its own copy.

use crate::{Buffer, BufferKind, Op, Program};

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
