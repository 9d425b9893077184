//! One op of the lowered program: the buffers it reads, and the buffer it writes, new or
//! (an in-place update: a `dynamic-update-slice` or `scatter`, or a fusion rooted in one)
//! the one it updates.

use super::{Lower, Node, Ref, Value};
use crate::hlo::text::{parameter_number, Computation, Instruction, TextError};
use accel_sim::{BufferKind, Op, MAX_FLOPS_PER_OP};

impl Lower<'_> {
    pub(super) fn op(
        &mut self,
        c: usize,
        i: usize,
        operands: &[Ref],
        prefix: &str,
    ) -> Result<Ref, TextError> {
        let m = self.m();
        let comp = &m.computations[c];
        let inst = &comp.instructions[i];
        let flops = self.f.flops.of(m, c, i)?;
        if !(flops.is_finite() && (0.0..=MAX_FLOPS_PER_OP).contains(&flops)) {
            return Err(inst.error(format!(
                "{flops:e} FLOPs: past the {MAX_FLOPS_PER_OP:e} an op may have"
            )));
        }
        let step = self.step;
        let target = self.in_place_target(inst, operands);
        let reads = self.reads(inst, operands, target.map(|(k, _)| k))?;
        let name = format!("{prefix}{}", inst.name);
        self.charge(name.len() as u64 / 64, inst)?;
        let (result, writes) = match target {
            Some((_, v)) => {
                self.in_place += 1;
                let buffer = self.values[v].buffer;
                self.values[v].superseded_by = Some(step);
                self.values.push(Value {
                    buffer,
                    superseded_by: None,
                    last_use: 0,
                });
                let r = self.node(Node::Leaf(Some(self.values.len() - 1)));
                (r, Vec::new())
            }
            None => {
                let before = self.buffers.len();
                let r = self.make(&inst.shape, &name, BufferKind::Activation, (c, i))?;
                (r, (before..self.buffers.len()).collect())
            }
        };
        let kind = match inst.opcode.as_str() {
            "fusion" => {
                let fused = &m.computations[m.called(inst, "calls")?];
                format!("fusion:{}", fused.instructions[fused.root].opcode)
            }
            other => other.to_string(),
        };
        self.ops.push(Op {
            name,
            kind,
            flops,
            reads,
            writes,
        });
        Ok(result)
    }

    /// The operand (its index and value) an update at this step writes into in place, if
    /// it does; every update that could is noted with the value it updates.
    fn in_place_target(&mut self, inst: &Instruction, operands: &[Ref]) -> Option<(usize, usize)> {
        let step = self.step;
        let k = self.in_place_operand(inst)?;
        let Node::Leaf(Some(v)) = self.nodes[operands.get(k)?.0] else {
            return None;
        };
        if self.buffers[self.values[v].buffer].kind.is_entry() {
            return None;
        }
        self.candidates.push((step, v));
        self.values[v].last_use = step;
        (!self.copied.contains(&step) && self.values[v].superseded_by.is_none()).then_some((k, v))
    }

    /// The buffers an op reads through its operands (but `skip`, the one it updates in
    /// place), each once, in order.
    fn reads(
        &mut self,
        inst: &Instruction,
        operands: &[Ref],
        skip: Option<usize>,
    ) -> Result<Vec<usize>, TextError> {
        let step = self.step;
        let mut reads = Vec::new();
        let mut leaves = Vec::new();
        for (k, &r) in operands.iter().enumerate() {
            if skip == Some(k) {
                continue;
            }
            leaves.clear();
            self.leaves(r, &mut leaves, inst)?;
            for &v in &leaves {
                self.read_value(v, step);
                let b = self.values[v].buffer;
                if self.read_at[b] != step {
                    self.read_at[b] = step;
                    reads.push(b);
                }
            }
        }
        Ok(reads)
    }

    /// The operand an in-place update writes into: operand 0 of a `dynamic-update-slice`
    /// or single-operand `scatter`; for a fusion whose root is one of those, the fusion
    /// operand that root updates.
    fn in_place_operand(&self, inst: &Instruction) -> Option<usize> {
        match inst.opcode.as_str() {
            "dynamic-update-slice" => Some(0),
            "scatter" if inst.operands.len() == 3 => Some(0),
            "fusion" => self.f.fused_update[self.m().called(inst, "calls").ok()?],
            _ => None,
        }
    }
}

/// For a fused computation whose root (through bitcasts) is a `dynamic-update-slice` or
/// single-operand `scatter`: the parameter it updates (through bitcasts). Operands are
/// earlier instructions, so following them ends.
pub(super) fn fused_update(fused: &Computation) -> Option<usize> {
    let through_bitcasts = |mut i: usize| {
        while fused.instructions[i].opcode == "bitcast" {
            i = *fused.instructions[i].operands.first()?;
        }
        Some(i)
    };
    let root = &fused.instructions[through_bitcasts(fused.root)?];
    let updates = root.opcode == "dynamic-update-slice"
        || (root.opcode == "scatter" && root.operands.len() == 3);
    if !updates {
        return None;
    }
    let p = &fused.instructions[through_bitcasts(*root.operands.first()?)?];
    (p.opcode == "parameter")
        .then(|| parameter_number(p).ok())
        .flatten()
}
