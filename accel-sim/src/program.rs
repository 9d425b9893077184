//! The program IR: a fixed schedule of ops over buffers.
//!
//! Time is the op index in the schedule: op `t` runs at logical time `t`, `0..T`.
//! A buffer is written by at most one op (its definition) and read by any number of later
//! ops. Weights and program inputs have no defining op: they exist in level 0 from the
//! program start, so their live range starts at time 0 (as XLA's entry parameters do).
//! Program outputs must survive to the end, so their live range ends at `T - 1`.

use serde::{Deserialize, Serialize};
use std::fmt;

mod error;

pub use error::ProgramError;

/// Index of a buffer in [`Program::buffers`].
pub type BufferId = usize;
/// Index of an op in [`Program::ops`]; also its logical time.
pub type OpId = usize;

/// What a buffer holds. Decides where it starts and where it must end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferKind {
    /// A parameter of the model: no defining op, starts in level 0.
    Weight,
    /// A program input: no defining op, starts in level 0.
    Input,
    /// An intermediate value, defined by one op.
    Activation,
    /// A program result, defined by one op; must end in level 0.
    Output,
}

impl BufferKind {
    /// Weights and inputs have no defining op.
    pub fn is_entry(self) -> bool {
        matches!(self, BufferKind::Weight | BufferKind::Input)
    }
    /// The kind's name in files and reports (`weight`, `input`, `activation`, `output`).
    pub fn as_str(self) -> &'static str {
        match self {
            BufferKind::Weight => "weight",
            BufferKind::Input => "input",
            BufferKind::Activation => "activation",
            BufferKind::Output => "output",
        }
    }
    /// Every kind, in the order reports list them.
    pub const ALL: [BufferKind; 4] = [
        BufferKind::Weight,
        BufferKind::Input,
        BufferKind::Activation,
        BufferKind::Output,
    ];
}

impl fmt::Display for BufferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tensor with a size in bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    /// The buffer's name: unique in the program; mapping files name buffers by it.
    pub name: String,
    /// Size in bytes, > 0.
    pub size: u64,
    /// What the buffer holds, which decides where it starts and must end.
    pub kind: BufferKind,
}

/// One instruction of the schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// The op's name, for reports.
    pub name: String,
    /// Free-form op kind (`conv2d`, `matmul`, `add`, ...), for reports only.
    pub kind: String,
    /// Floating-point operations, >= 0.
    pub flops: f64,
    /// Buffers read, each at most once.
    pub reads: Vec<BufferId>,
    /// Buffers written (defined) by this op, each at most once.
    pub writes: Vec<BufferId>,
}

/// The most bytes a program may hold in all its buffers together, and the largest capacity
/// a level may have: 2^53 (8 PiB). Every sum of sizes the workspace forms (an op's traffic,
/// bytes live at once, a level's occupancy) is then at most this, so none overflows, and
/// every size converts to `f64` exactly, so the cost model and the simulator agree.
pub const MAX_BYTES: u64 = 1 << 53;

/// The most FLOPs one op may have.
pub const MAX_FLOPS_PER_OP: f64 = 1e24;

/// A validated program with its derived live ranges and use lists.
///
/// Build one with [`Program::new`]; the fields it derives cannot go out of date because
/// the program is immutable afterwards.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    name: String,
    description: String,
    buffers: Vec<Buffer>,
    ops: Vec<Op>,
    def: Vec<Option<OpId>>,
    uses: Vec<Vec<OpId>>,
    live: Vec<(OpId, OpId)>,
}

/// Every buffer's uses in one flat vector: the cost model and the simulator each keep a
/// copy, and one vector per buffer made building them slow on large programs.
#[derive(Clone, Debug)]
pub(crate) struct UseLists {
    /// The ops reading buffer `b` are `ops[start[b]..start[b + 1]]`, in order.
    start: Vec<usize>,
    ops: Vec<OpId>,
}

impl UseLists {
    pub(crate) fn new(program: &Program) -> UseLists {
        let n = program.buffers().len();
        let mut start = Vec::with_capacity(n + 1);
        let mut ops = Vec::new();
        for b in 0..n {
            start.push(ops.len());
            ops.extend_from_slice(program.uses(b));
        }
        start.push(ops.len());
        UseLists { start, ops }
    }

    /// The ops that read buffer `b`, in order.
    pub(crate) fn of(&self, b: BufferId) -> &[OpId] {
        &self.ops[self.start[b]..self.start[b + 1]]
    }
}

/// Sizes are positive and add up to at most [`MAX_BYTES`]; names are unique.
fn check_buffers(buffers: &[Buffer]) -> Result<(), ProgramError> {
    let mut total: u64 = 0;
    let mut seen: std::collections::HashMap<&str, BufferId> =
        std::collections::HashMap::with_capacity(buffers.len());
    for (index, b) in buffers.iter().enumerate() {
        if b.size == 0 {
            return Err(ProgramError::ZeroSize {
                index,
                name: b.name.clone(),
                size: b.size,
            });
        }
        total = total
            .checked_add(b.size)
            .filter(|&t| t <= MAX_BYTES)
            .ok_or_else(|| ProgramError::TooLarge {
                index,
                name: b.name.clone(),
                limit: MAX_BYTES,
            })?;
        if let Some(first) = seen.insert(b.name.as_str(), index) {
            return Err(ProgramError::DuplicateName {
                name: b.name.clone(),
                first,
                second: index,
            });
        }
    }
    Ok(())
}

/// Each buffer's defining op (none for an entry) and its uses in schedule order.
type DefsAndUses = (Vec<Option<OpId>>, Vec<Vec<OpId>>);

/// Each buffer's defining op and its uses, checking every op's reads and writes: known
/// buffers, no repeats, none both read and written, no read before the write, entries never
/// written, nothing written twice.
fn defs_and_uses(buffers: &[Buffer], ops: &[Op]) -> Result<DefsAndUses, ProgramError> {
    let n = buffers.len();
    let mut def: Vec<Option<OpId>> = vec![None; n];
    let mut uses: Vec<Vec<OpId>> = vec![Vec::new(); n];
    // Per buffer, the last (op, list) that named it: a repeat in one list is found in
    // one look, however long the list (an op may read a million buffers).
    let mut seen: Vec<Option<(OpId, usize)>> = vec![None; n];
    for (t, op) in ops.iter().enumerate() {
        // 1e24 FLOPs is a million times the largest op of any model here: past it, sums
        // of op times could overflow to infinity.
        if !(op.flops.is_finite() && (0.0..=MAX_FLOPS_PER_OP).contains(&op.flops)) {
            return Err(ProgramError::BadFlops {
                op: t,
                op_name: op.name.clone(),
                flops: op.flops,
            });
        }
        check_names(t, op, buffers, &mut seen)?;
        for &b in &op.reads {
            // Marked (t, 1) above: the op writes it too.
            if seen[b] == Some((t, 1)) {
                return Err(ProgramError::ReadAndWrite {
                    op: t,
                    op_name: op.name.clone(),
                    buffer: buffers[b].name.clone(),
                });
            }
            if !buffers[b].kind.is_entry() && def[b].is_none() {
                return Err(ProgramError::ReadBeforeWrite {
                    op: t,
                    op_name: op.name.clone(),
                    buffer: buffers[b].name.clone(),
                });
            }
            uses[b].push(t);
        }
        for &b in &op.writes {
            if buffers[b].kind.is_entry() {
                return Err(ProgramError::EntryWritten {
                    op: t,
                    op_name: op.name.clone(),
                    buffer: buffers[b].name.clone(),
                    kind: buffers[b].kind,
                });
            }
            if let Some(first) = def[b] {
                return Err(ProgramError::WrittenTwice {
                    buffer: buffers[b].name.clone(),
                    first,
                    second: t,
                });
            }
            def[b] = Some(t);
        }
    }
    Ok((def, uses))
}

/// Refuses an unknown buffer, or one named twice in one of op `t`'s lists (`seen` holds, per
/// buffer, the last `(op, list)` that named it: 0 reads, 1 writes).
fn check_names(
    t: OpId,
    op: &Op,
    buffers: &[Buffer],
    seen: &mut [Option<(OpId, usize)>],
) -> Result<(), ProgramError> {
    let n = buffers.len();
    for (which, (field, list)) in [("reads", &op.reads), ("writes", &op.writes)]
        .into_iter()
        .enumerate()
    {
        for &b in list {
            if b >= n {
                return Err(ProgramError::UnknownBuffer {
                    op: t,
                    op_name: op.name.clone(),
                    field,
                    buffer: b,
                    count: n,
                });
            }
            if seen[b].replace((t, which)) == Some((t, which)) {
                return Err(ProgramError::Duplicate {
                    op: t,
                    op_name: op.name.clone(),
                    field,
                    buffer: buffers[b].name.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The live ranges: from the defining op (an entry's from op 0) to the last use (an
/// output's to the last op). Refuses an entry never read and a buffer never written.
fn live_ranges(
    buffers: &[Buffer],
    def: &[Option<OpId>],
    uses: &[Vec<OpId>],
    last: OpId,
) -> Result<Vec<(OpId, OpId)>, ProgramError> {
    let mut live = Vec::with_capacity(buffers.len());
    for (b, buf) in buffers.iter().enumerate() {
        if buf.kind.is_entry() {
            if uses[b].is_empty() {
                return Err(ProgramError::NeverUsed {
                    buffer: buf.name.clone(),
                    kind: buf.kind,
                });
            }
        } else if def[b].is_none() {
            return Err(ProgramError::NeverDefined {
                buffer: buf.name.clone(),
                kind: buf.kind,
            });
        }
        let start = def[b].unwrap_or(0);
        let end = match buf.kind {
            BufferKind::Output => last,
            _ => uses[b].last().copied().unwrap_or(start),
        };
        live.push((start, end));
    }
    Ok(live)
}

impl Program {
    /// Validates the ops and buffers and derives live ranges.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        buffers: Vec<Buffer>,
        ops: Vec<Op>,
    ) -> Result<Program, ProgramError> {
        if ops.is_empty() {
            return Err(ProgramError::NoOps);
        }
        check_buffers(&buffers)?;
        let (def, uses) = defs_and_uses(&buffers, &ops)?;
        let live = live_ranges(&buffers, &def, &uses, ops.len() - 1)?;
        Ok(Program {
            name: name.into(),
            description: description.into(),
            buffers,
            ops,
            def,
            uses,
            live,
        })
    }

    /// The program's name (a workload's, or the file's `name`): saved games, mappings and
    /// runs name the program by it.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What the program is, in words (may be empty).
    pub fn description(&self) -> &str {
        &self.description
    }
    /// Every buffer, indexed by [`BufferId`].
    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }
    /// Every op, in schedule order, indexed by [`OpId`].
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }
    /// Buffer `b`.
    pub fn buffer(&self, b: BufferId) -> &Buffer {
        &self.buffers[b]
    }
    /// Op `t`.
    pub fn op(&self, t: OpId) -> &Op {
        &self.ops[t]
    }
    /// Number of ops, `T`.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// Always false: a program has at least one op.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// The op that writes `b`, or `None` for weights and inputs.
    pub fn def(&self, b: BufferId) -> Option<OpId> {
        self.def[b]
    }
    /// The ops that read `b`, in schedule order.
    pub fn uses(&self, b: BufferId) -> &[OpId] {
        &self.uses[b]
    }
    /// Inclusive live range `[start, end]` (see the module docs for entries and outputs).
    pub fn live_range(&self, b: BufferId) -> (OpId, OpId) {
        self.live[b]
    }
    /// Total bytes an op reads and writes.
    pub fn op_bytes(&self, t: OpId) -> u64 {
        let op = &self.ops[t];
        op.reads
            .iter()
            .chain(op.writes.iter())
            .map(|&b| self.buffers[b].size)
            .sum()
    }
    /// The FLOPs of every op together.
    pub fn total_flops(&self) -> f64 {
        self.ops.iter().map(|o| o.flops).sum()
    }
    /// Bytes live at each time: the sum of sizes of buffers whose live range covers it.
    pub fn live_bytes(&self) -> Vec<u64> {
        let t = self.ops.len();
        let mut diff = vec![0i128; t + 1];
        for (b, &(s, e)) in self.live.iter().enumerate() {
            diff[s] += self.buffers[b].size as i128;
            diff[e + 1] -= self.buffers[b].size as i128;
        }
        let mut acc = 0i128;
        diff[..t]
            .iter()
            .map(|d| {
                acc += d;
                acc as u64
            })
            .collect()
    }
    /// The largest number of bytes live at once.
    pub fn peak_live_bytes(&self) -> u64 {
        self.live_bytes().into_iter().max().unwrap_or(0)
    }
    /// The ops `ops.start..ops.end` as a program of their own (a cut of a workload, small
    /// enough to solve exactly). A buffer the window touches keeps its name and size; one
    /// made before the window and read in it becomes an input (weights stay weights), and
    /// one made in the window and read after it, or a program output, becomes an output,
    /// since the rest of the program needs it back in level 0.
    pub fn window(&self, ops: std::ops::Range<OpId>) -> Result<Program, ProgramError> {
        let ops = ops.start.min(self.len())..ops.end.min(self.len());
        let mut index: Vec<Option<BufferId>> = vec![None; self.buffers.len()];
        let mut buffers = Vec::new();
        let mut cut_ops = Vec::with_capacity(ops.len());
        for t in ops.clone() {
            let op = &self.ops[t];
            let mut renumber = |list: &[BufferId]| -> Vec<BufferId> {
                list.iter()
                    .map(|&b| {
                        *index[b].get_or_insert_with(|| {
                            buffers.push(self.window_buffer(b, &ops));
                            buffers.len() - 1
                        })
                    })
                    .collect()
            };
            let reads = renumber(&op.reads);
            let writes = renumber(&op.writes);
            cut_ops.push(Op {
                reads,
                writes,
                ..op.clone()
            });
        }
        let name = format!("{}@{}..{}", self.name, ops.start, ops.end);
        let description = format!("ops {}..{} of {}", ops.start, ops.end, self.name);
        Program::new(name, description, buffers, cut_ops)
    }

    /// Buffer `b` as the window `ops` sees it.
    fn window_buffer(&self, b: BufferId, ops: &std::ops::Range<OpId>) -> Buffer {
        let buf = &self.buffers[b];
        let made_before = self.def[b].is_none_or(|d| d < ops.start);
        let read_after = self.uses[b].last().is_some_and(|&u| u >= ops.end);
        let kind = match buf.kind {
            BufferKind::Weight => BufferKind::Weight,
            _ if made_before => BufferKind::Input,
            BufferKind::Output => BufferKind::Output,
            _ if read_after => BufferKind::Output,
            _ => BufferKind::Activation,
        };
        Buffer {
            kind,
            ..buf.clone()
        }
    }

    /// A stable 64-bit FNV-1a hash of the program's contents (names, sizes, kinds, ops),
    /// used by saved games to detect a changed workload.
    pub fn content_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.str(&self.name);
        h.u64(self.buffers.len() as u64);
        for b in &self.buffers {
            h.str(&b.name);
            h.u64(b.size);
            h.str(b.kind.as_str());
        }
        h.u64(self.ops.len() as u64);
        for op in &self.ops {
            h.str(&op.name);
            h.str(&op.kind);
            h.u64(op.flops.to_bits());
            h.u64(op.reads.len() as u64);
            op.reads.iter().for_each(|&b| h.u64(b as u64));
            h.u64(op.writes.len() as u64);
            op.writes.iter().for_each(|&b| h.u64(b as u64));
        }
        h.0
    }
}

struct Fnv(u64);
impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, bytes: &[u8]) {
        for &x in bytes {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn buf(name: &str, size: u64, kind: BufferKind) -> Buffer {
        Buffer {
            name: name.into(),
            size,
            kind,
        }
    }
    pub(crate) fn op(name: &str, flops: f64, reads: &[usize], writes: &[usize]) -> Op {
        Op {
            name: name.into(),
            kind: "test".into(),
            flops,
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }

    #[test]
    fn a_buffer_named_twice_by_one_op_is_an_error_naming_it() {
        let bufs = || {
            vec![
                buf("x", 4, BufferKind::Input),
                buf("y", 4, BufferKind::Activation),
                buf("z", 4, BufferKind::Output),
            ]
        };
        let new = |ops| Program::new("p", "", bufs(), ops);
        let e = new(vec![op("o", 1.0, &[0, 0], &[1]), op("q", 1.0, &[1], &[2])]).unwrap_err();
        assert!(
            matches!(
                e,
                ProgramError::Duplicate {
                    op: 0,
                    field: "reads",
                    ..
                }
            ),
            "{e}"
        );
        let e = new(vec![op("o", 1.0, &[0], &[1, 1]), op("q", 1.0, &[1], &[2])]).unwrap_err();
        assert!(
            matches!(
                e,
                ProgramError::Duplicate {
                    op: 0,
                    field: "writes",
                    ..
                }
            ),
            "{e}"
        );
        let e = new(vec![op("o", 1.0, &[0], &[1]), op("q", 1.0, &[1], &[2, 2])]).unwrap_err();
        assert!(
            matches!(
                e,
                ProgramError::Duplicate {
                    op: 1,
                    field: "writes",
                    ..
                }
            ),
            "{e}"
        );
        let e = new(vec![op("o", 1.0, &[0], &[1]), op("q", 1.0, &[1, 2], &[2])]).unwrap_err();
        assert!(matches!(e, ProgramError::ReadAndWrite { op: 1, .. }), "{e}");
        // One buffer in two ops' lists is no repeat.
        let p = new(vec![op("o", 1.0, &[0], &[1]), op("q", 1.0, &[1, 0], &[2])]).unwrap();
        assert_eq!(p.uses(0), &[0, 1]);
        // An op of 200,000 reads validates in one pass over them.
        let n = 200_000;
        let mut many: Vec<Buffer> = (0..n)
            .map(|k| buf(&format!("x{k}"), 4, BufferKind::Input))
            .collect();
        many.push(buf("y", 4, BufferKind::Output));
        let reads: Vec<usize> = (0..n).collect();
        let p = Program::new("wide", "", many, vec![op("o", 1.0, &reads, &[n])]).unwrap();
        assert_eq!(p.op(0).reads.len(), n);
    }

    #[test]
    fn a_window_turns_what_crosses_its_edges_into_inputs_and_outputs() {
        let p = crate::fixtures::three_ops("p", 8, 1.0);
        // op1 alone: `a` comes from before (input), `b` is read after (output).
        let w = p.window(1..2).unwrap();
        assert_eq!(w.name(), "p@1..2");
        assert_eq!(w.len(), 1);
        let kinds: Vec<(&str, BufferKind)> = w
            .buffers()
            .iter()
            .map(|b| (b.name.as_str(), b.kind))
            .collect();
        assert_eq!(kinds, [("a", BufferKind::Input), ("b", BufferKind::Output)]);
        // ops 1..3: `w` stays a weight, `b` is made and used inside, `y` stays an output.
        let w = p.window(1..3).unwrap();
        let kind = |n: &str| w.buffers().iter().find(|b| b.name == n).unwrap().kind;
        assert_eq!(kind("w"), BufferKind::Weight);
        assert_eq!(kind("b"), BufferKind::Activation);
        assert_eq!(kind("y"), BufferKind::Output);
        assert_eq!(w.op(1).reads.len(), 2);
        // The whole program is itself; an empty window is an error.
        assert_eq!(p.window(0..3).unwrap().buffers(), p.buffers());
        assert_eq!(p.window(2..2), Err(ProgramError::NoOps));
        assert_eq!(p.window(5..9), Err(ProgramError::NoOps));
    }

    #[test]
    fn live_ranges_of_a_chain() {
        let p = Program::new(
            "chain",
            "",
            vec![
                buf("x", 10, BufferKind::Input),
                buf("w", 4, BufferKind::Weight),
                buf("a", 10, BufferKind::Activation),
                buf("y", 10, BufferKind::Output),
            ],
            vec![
                op("op0", 1.0, &[0, 1], &[2]),
                op("op1", 1.0, &[2], &[3]),
                op("op2", 1.0, &[1], &[]),
            ],
        )
        .unwrap();
        assert_eq!(p.live_range(0), (0, 0));
        assert_eq!(p.live_range(1), (0, 2));
        assert_eq!(p.live_range(2), (0, 1));
        assert_eq!(p.live_range(3), (1, 2));
        assert_eq!(p.uses(1), &[0, 2]);
        assert_eq!(p.def(3), Some(1));
        assert_eq!(p.live_bytes(), vec![24, 24, 14]);
        assert_eq!(p.peak_live_bytes(), 24);
        assert_eq!(p.op_bytes(0), 24);
    }

    #[test]
    fn sizes_that_overflow_and_repeated_names_are_refused() {
        // Two 2^63-byte buffers: their sum wraps a u64 (this once printed a 1e-10 s
        // cost-model latency next to a 6e7 s simulated one).
        let big = 1u64 << 63;
        let e = Program::new(
            "p",
            "",
            vec![
                buf("x", 100, BufferKind::Input),
                buf("a", big, BufferKind::Activation),
                buf("b", big, BufferKind::Activation),
            ],
            vec![op("o", 1.0, &[0], &[1, 2]), op("o2", 1.0, &[1, 2], &[])],
        )
        .unwrap_err();
        assert!(matches!(e, ProgramError::TooLarge { index: 1, .. }), "{e}");
        assert!(e.to_string().contains("buffer 1 (`a`)"), "{e}");
        // Exactly at the limit is fine; one byte more is not.
        let at = |last: u64| {
            Program::new(
                "p",
                "",
                vec![
                    buf("x", MAX_BYTES - 4, BufferKind::Input),
                    buf("y", last, BufferKind::Output),
                ],
                vec![op("o", 1.0, &[0], &[1])],
            )
        };
        assert!(at(4).is_ok());
        assert!(matches!(
            at(5),
            Err(ProgramError::TooLarge { index: 1, .. })
        ));
        let e = Program::new(
            "p",
            "",
            vec![
                buf("x", 1, BufferKind::Input),
                buf("x", 1, BufferKind::Output),
            ],
            vec![op("o", 1.0, &[0], &[1])],
        )
        .unwrap_err();
        assert_eq!(
            e,
            ProgramError::DuplicateName {
                name: "x".into(),
                first: 0,
                second: 1
            }
        );
    }

    #[test]
    fn rejects_bad_programs_with_named_errors() {
        let bufs = || {
            vec![
                buf("x", 10, BufferKind::Input),
                buf("a", 10, BufferKind::Activation),
            ]
        };
        let e = Program::new("p", "", bufs(), vec![op("o", 1.0, &[1], &[])]).unwrap_err();
        assert!(e.to_string().contains("reads buffer `a` before"), "{e}");
        let e = Program::new("p", "", bufs(), vec![op("o", 1.0, &[0], &[0])]).unwrap_err();
        assert!(e.to_string().contains("`x`"), "{e}");
        let e = Program::new(
            "p",
            "",
            bufs(),
            vec![op("o", 1.0, &[0], &[1]), op("o2", 1.0, &[0], &[1])],
        )
        .unwrap_err();
        assert!(matches!(e, ProgramError::WrittenTwice { .. }));
        let mut b = bufs();
        b[1].size = 0;
        let e = Program::new("p", "", b, vec![op("o", 1.0, &[0], &[1])]).unwrap_err();
        assert!(e.to_string().contains("size must be > 0"));
        let e = Program::new("p", "", bufs(), vec![op("o", 1.0, &[0], &[7])]).unwrap_err();
        assert!(e.to_string().contains("buffer 7"));
        let e = Program::new("p", "", bufs(), vec![op("o", -1.0, &[0], &[1])]).unwrap_err();
        assert!(e.to_string().contains("flops"));
        let e = Program::new("p", "", bufs(), vec![op("o", 1e308, &[0], &[1])]).unwrap_err();
        assert!(e.to_string().contains("flops must be in [0, 1e24]"), "{e}");
        assert_eq!(
            Program::new("p", "", bufs(), vec![]).unwrap_err(),
            ProgramError::NoOps
        );
    }

    #[test]
    fn content_hash_sees_size_changes() {
        let mk = |s| {
            Program::new(
                "p",
                "",
                vec![
                    buf("x", s, BufferKind::Input),
                    buf("y", 4, BufferKind::Output),
                ],
                vec![op("o", 1.0, &[0], &[1])],
            )
            .unwrap()
        };
        assert_eq!(mk(4).content_hash(), mk(4).content_hash());
        assert_ne!(mk(4).content_hash(), mk(8).content_hash());
    }
}
