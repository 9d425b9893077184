//! An HLO module lowered into the IR's ops and buffers.
//!
//! The entry computation's instructions, in the order written (XLA's schedule in a
//! scheduled module, program order before optimization), become ops; `call`s are inlined
//! and `while`s with a known trip count unrolled into the same sequence. Each HLO value is
//! a tree of leaves (a tuple of arrays); each array leaf is a version of one buffer.
//!
//! - Aliases make no op and no buffer; their uses are uses of the buffers they name:
//!   `tuple`, `get-tuple-element`, `bitcast`, `optimization-barrier`, `add-dependency`,
//!   `domain`, `after-all` (a token: no buffer), and, before optimization only, `reshape`
//!   (a row-major reshape moves no data; XLA turns it into a bitcast; a `reshape` that
//!   survives optimization is a real copy and stays an op).
//! - Entry parameters are entry buffers (`input`, or `weight` where the caller says so),
//!   one per array leaf, named by their `metadata={op_name=...}` (JAX writes the argument's
//!   path there) or their instruction. A parameter no op reads is dropped.
//! - `constant`s are `weight` buffers (literals the program carries, live from the start
//!   as XLA's constant allocations are), one per instruction however often a loop runs it.
//! - In-place updates: a `dynamic-update-slice` or `scatter`, or a fusion whose root is
//!   one, updating a buffer some op made, writes into that buffer instead of a new one, as
//!   XLA's buffer assignment shares it; the op reads its other operands and writes
//!   nothing, and later uses of its result are uses of the updated buffer. It is a copy
//!   (a new buffer) when the old contents are still read afterwards, or when the buffer is
//!   a parameter or constant (XLA inserts a copy there too).
//! - Every other instruction is one op reading the buffers behind its operands (each
//!   once) and writing one new buffer per array leaf of its result.
//! - The entry root's leaves made by ops are the `output`s (a parameter or constant
//!   returned as it is stays an entry buffer: the caller has it already).

use super::cost;
use super::shape::Shape;
use super::text::{at, Computation, Instruction, Module, TextError};
use accel_sim::{Buffer, BufferKind, Op};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The most ops unrolling may make: past it a trip count is a mistake, not a program.
pub(crate) const MAX_OPS: usize = 2_000_000;

/// A value: an array leaf (a version of a buffer, or nothing for tokens and empty arrays)
/// or a tuple of values.
#[derive(Clone, Debug)]
enum Ref {
    Leaf(Option<usize>),
    Tuple(Vec<Ref>),
}

impl Ref {
    fn leaves(&self, out: &mut Vec<usize>) {
        match self {
            Ref::Leaf(Some(v)) => out.push(*v),
            Ref::Leaf(None) => {}
            Ref::Tuple(parts) => parts.iter().for_each(|p| p.leaves(out)),
        }
    }
}

/// A version of a buffer; `superseded_by` is the step of the in-place update that made
/// the next version.
struct Value {
    buffer: usize,
    superseded_by: Option<usize>,
}

/// What the lowering made, and what it counted for the description.
pub(crate) struct Lowered {
    pub buffers: Vec<Buffer>,
    pub ops: Vec<Op>,
    pub whiles: usize,
    pub calls: usize,
    pub in_place: usize,
}

struct Lower<'m> {
    m: &'m Module,
    weights: &'m [usize],
    buffers: Vec<Buffer>,
    names: HashSet<String>,
    ops: Vec<Op>,
    values: Vec<Value>,
    /// Integer scalar constants by value, for counted loops before optimization.
    scalars: HashMap<usize, i64>,
    constants: HashMap<(usize, usize), Ref>,
    step: usize,
    copied: &'m HashSet<usize>,
    conflicts: BTreeSet<usize>,
    whiles: usize,
    calls: usize,
    in_place: usize,
}

/// Lowers the module; `weights` are the entry parameter numbers that hold weights.
pub(crate) fn lower(m: &Module, weights: &[usize]) -> Result<Lowered, TextError> {
    let mut copied = HashSet::new();
    // An in-place update whose old contents turn out to be read later becomes a copy; that
    // only removes sharing, so a few passes settle it.
    for _ in 0..64 {
        let mut l = Lower {
            m,
            weights,
            buffers: Vec::new(),
            names: HashSet::new(),
            ops: Vec::new(),
            values: Vec::new(),
            scalars: HashMap::new(),
            constants: HashMap::new(),
            step: 0,
            copied: &copied,
            conflicts: BTreeSet::new(),
            whiles: 0,
            calls: 0,
            in_place: 0,
        };
        l.run()?;
        if l.conflicts.is_empty() {
            return Ok(l.finish());
        }
        copied.extend(l.conflicts);
    }
    Err(at(1, None, "in-place updates did not settle in 64 passes"))
}

impl<'m> Lower<'m> {
    fn run(&mut self) -> Result<(), TextError> {
        let entry = &self.m.computations[self.m.entry];
        let mut args: Vec<Option<Ref>> = Vec::new();
        for inst in entry
            .instructions
            .iter()
            .filter(|i| i.opcode == "parameter")
        {
            let n = parameter_number(inst)?;
            if args.len() <= n {
                args.resize(n + 1, None);
            }
            let kind = if self.weights.contains(&n) {
                BufferKind::Weight
            } else {
                BufferKind::Input
            };
            let name = op_name(inst).unwrap_or(&inst.name).to_string();
            args[n] = Some(self.make(&inst.shape, &name, kind));
        }
        let args: Vec<Ref> = args
            .into_iter()
            .map(|a| a.unwrap_or(Ref::Leaf(None)))
            .collect();
        let root = self.emit(self.m.entry, &args, "")?;
        let mut outs = Vec::new();
        root.leaves(&mut outs);
        for v in outs {
            self.read_value(v);
            let b = self.values[v].buffer;
            if self.buffers[b].kind == BufferKind::Activation {
                self.buffers[b].kind = BufferKind::Output;
            }
        }
        Ok(())
    }

    /// A fresh buffer per array leaf of `shape` (none for empty ones).
    fn make(&mut self, shape: &Shape, name: &str, kind: BufferKind) -> Ref {
        match shape {
            Shape::Tuple(parts) => Ref::Tuple(
                parts
                    .iter()
                    .enumerate()
                    .map(|(k, p)| self.make(p, &format!("{name}.{k}"), kind))
                    .collect(),
            ),
            array => {
                let size = array.bytes();
                if size == 0 {
                    return Ref::Leaf(None);
                }
                let mut unique = name.to_string();
                let mut k = 2;
                while !self.names.insert(unique.clone()) {
                    unique = format!("{name}#{k}");
                    k += 1;
                }
                self.buffers.push(Buffer {
                    name: unique,
                    size,
                    kind,
                });
                self.values.push(Value {
                    buffer: self.buffers.len() - 1,
                    superseded_by: None,
                });
                Ref::Leaf(Some(self.values.len() - 1))
            }
        }
    }

    /// Notes a read of `v`: reading a version an in-place update has replaced means that
    /// update must be a copy.
    fn read_value(&mut self, v: usize) {
        if let Some(step) = self.values[v].superseded_by {
            self.conflicts.insert(step);
        }
    }

    fn emit(&mut self, c: usize, args: &[Ref], prefix: &str) -> Result<Ref, TextError> {
        let comp: &'m Computation = &self.m.computations[c];
        let mut env: Vec<Option<Ref>> = vec![None; comp.instructions.len()];
        for (i, inst) in comp.instructions.iter().enumerate() {
            self.step += 1;
            let mut operands = Vec::with_capacity(inst.operands.len());
            for &j in &inst.operands {
                operands.push(env[j].clone().ok_or_else(|| {
                    inst.error(format!(
                        "operand `%{}` is used before the line that defines it",
                        comp.instructions[j].name
                    ))
                })?);
            }
            let first = || {
                operands
                    .first()
                    .cloned()
                    .ok_or_else(|| inst.error(format!("{} needs an operand", inst.opcode)))
            };
            let r = match inst.opcode.as_str() {
                "parameter" => {
                    let n = parameter_number(inst)?;
                    args.get(n).cloned().ok_or_else(|| {
                        inst.error(format!("parameter({n}), but the caller passes {}", args.len()))
                    })?
                }
                "tuple" => Ref::Tuple(operands.clone()),
                "get-tuple-element" => {
                    let k: usize = inst
                        .attr("index")
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| inst.error("get-tuple-element needs index=N"))?;
                    match first()? {
                        Ref::Tuple(mut parts) if k < parts.len() => parts.swap_remove(k),
                        _ => return Err(inst.error(format!("index={k}: the operand has no element {k}"))),
                    }
                }
                "bitcast" | "optimization-barrier" | "opt-barrier" | "add-dependency"
                | "domain" => first()?,
                "reshape" if !self.m.scheduled => first()?,
                "after-all" => Ref::Leaf(None),
                "constant" => self.constant(c, i, inst, prefix),
                "call" => {
                    self.calls += 1;
                    let callee = self.m.called(inst, "to_apply")?;
                    self.emit(callee, &operands, &format!("{prefix}{}/", inst.name))?
                }
                "while" => self.unroll(inst, first()?, prefix)?,
                "conditional" => {
                    return Err(inst.error(
                        "`conditional` is not supported: a program here has one fixed schedule (take the branch out of the jitted function, or use jnp.where)",
                    ))
                }
                _ => self.op(comp, inst, &operands, prefix)?,
            };
            env[i] = Some(r);
        }
        Ok(env[comp.root].clone().expect("the root was emitted"))
    }

    fn constant(&mut self, c: usize, i: usize, inst: &Instruction, prefix: &str) -> Ref {
        if let Some(r) = self.constants.get(&(c, i)) {
            return r.clone();
        }
        let name = if c == self.m.entry || prefix.is_empty() {
            inst.name.clone()
        } else {
            format!("{}/{}", self.m.computations[c].name, inst.name)
        };
        let r = self.make(&inst.shape, &name, BufferKind::Weight);
        if let (Ref::Leaf(Some(v)), true) = (&r, inst.shape.dims().is_empty()) {
            if let Ok(n) = inst.literal.trim().parse::<i64>() {
                self.scalars.insert(*v, n);
            }
        }
        self.constants.insert((c, i), r.clone());
        r
    }

    fn unroll(&mut self, inst: &Instruction, init: Ref, prefix: &str) -> Result<Ref, TextError> {
        let trips = self.trip_count(inst, &init)?;
        let body = self.m.called(inst, "body")?;
        let body_size = self.m.computations[body].instructions.len();
        if self.ops.len() + trips.saturating_mul(body_size) > MAX_OPS {
            return Err(inst.error(format!(
                "unrolling {trips} trips of a {body_size}-instruction body would pass {MAX_OPS} ops"
            )));
        }
        self.whiles += 1;
        let mut state = init;
        for k in 0..trips {
            state = self.emit(body, &[state], &format!("{prefix}{}/{k}/", inst.name))?;
        }
        Ok(state)
    }

    /// XLA's `known_trip_count`, or before optimization a counted loop
    /// `i = c; while i < N: ...; i = i + 1` read off the condition and the body.
    fn trip_count(&self, inst: &Instruction, init: &Ref) -> Result<usize, TextError> {
        if let Some(cfg) = inst.attr("backend_config") {
            if let Some(at) = cfg.find("\"known_trip_count\"") {
                let rest = &cfg[at..];
                let n = rest
                    .find("\"n\":\"")
                    .map(|i| &rest[i + 5..])
                    .and_then(|r| r.split('"').next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| {
                        inst.error("known_trip_count in backend_config does not parse")
                    })?;
                return Ok(n);
            }
        }
        self.counted_loop(inst, init).ok_or_else(|| {
            inst.error(
                "`while` without a known trip count (no known_trip_count in its backend_config, and not a counted loop `i < N; i += 1` from a constant): a program here has one fixed schedule; give the loop fixed bounds (lax.fori_loop or lax.scan over a fixed length, whose scheduled module states the count) or unroll it",
            )
        })
    }

    fn counted_loop(&self, inst: &Instruction, init: &Ref) -> Option<usize> {
        let cond = &self.m.computations[self.m.called(inst, "condition").ok()?];
        let body = &self.m.computations[self.m.called(inst, "body").ok()?];
        let root = &cond.instructions[cond.root];
        if root.opcode != "compare" || root.attr("direction") != Some("LT") {
            return None;
        }
        let k = tuple_index(cond, root.operands[0])?;
        let limit = int_constant(&cond.instructions[*root.operands.get(1)?])?;
        let step = &body.instructions[body.root];
        if step.opcode != "tuple" {
            return None;
        }
        let next = &body.instructions[*step.operands.get(k)?];
        if next.opcode != "add" || next.operands.len() != 2 {
            return None;
        }
        let (a, b) = (next.operands[0], next.operands[1]);
        let one = |x: usize| int_constant(&body.instructions[x]) == Some(1);
        let same = |x: usize| tuple_index(body, x) == Some(k);
        if !((same(a) && one(b)) || (same(b) && one(a))) {
            return None;
        }
        let Ref::Tuple(parts) = init else { return None };
        let Ref::Leaf(Some(v)) = parts.get(k)? else {
            return None;
        };
        let start = *self.scalars.get(v)?;
        usize::try_from(limit.saturating_sub(start).max(0)).ok()
    }

    fn op(
        &mut self,
        comp: &Computation,
        inst: &Instruction,
        operands: &[Ref],
        prefix: &str,
    ) -> Result<Ref, TextError> {
        let flops = cost::flops(self.m, comp, inst)?;
        let step = self.step;
        let target = in_place_operand(self.m, inst).and_then(|k| match operands.get(k) {
            Some(Ref::Leaf(Some(v)))
                if !self.copied.contains(&step)
                    && self.values[*v].superseded_by.is_none()
                    && !self.buffers[self.values[*v].buffer].kind.is_entry() =>
            {
                Some((k, *v))
            }
            _ => None,
        });
        let mut reads = Vec::new();
        let mut leaves = Vec::new();
        for (k, r) in operands.iter().enumerate() {
            if target.is_some_and(|(t, _)| t == k) {
                continue;
            }
            leaves.clear();
            r.leaves(&mut leaves);
            for &v in &leaves {
                self.read_value(v);
                let b = self.values[v].buffer;
                if !reads.contains(&b) {
                    reads.push(b);
                }
            }
        }
        let name = format!("{prefix}{}", inst.name);
        let (result, writes) = match target {
            Some((_, v)) => {
                self.in_place += 1;
                let buffer = self.values[v].buffer;
                self.values[v].superseded_by = Some(step);
                self.values.push(Value {
                    buffer,
                    superseded_by: None,
                });
                (Ref::Leaf(Some(self.values.len() - 1)), Vec::new())
            }
            None => {
                let before = self.buffers.len();
                let r = self.make(&inst.shape, &name, BufferKind::Activation);
                (r, (before..self.buffers.len()).collect())
            }
        };
        let kind = match inst.opcode.as_str() {
            "fusion" => {
                let fused = &self.m.computations[self.m.called(inst, "calls")?];
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

    /// Entry buffers no op reads are dropped (the IR wants every entry read).
    fn finish(self) -> Lowered {
        let mut read = vec![false; self.buffers.len()];
        for op in &self.ops {
            for &b in &op.reads {
                read[b] = true;
            }
        }
        let mut new_id = vec![usize::MAX; self.buffers.len()];
        let mut buffers = Vec::new();
        for (b, buf) in self.buffers.into_iter().enumerate() {
            if !buf.kind.is_entry() || read[b] {
                new_id[b] = buffers.len();
                buffers.push(buf);
            }
        }
        let ops = self
            .ops
            .into_iter()
            .map(|mut op| {
                op.reads.iter_mut().for_each(|b| *b = new_id[*b]);
                op.writes.iter_mut().for_each(|b| *b = new_id[*b]);
                op
            })
            .collect();
        Lowered {
            buffers,
            ops,
            whiles: self.whiles,
            calls: self.calls,
            in_place: self.in_place,
        }
    }
}

fn parameter_number(inst: &Instruction) -> Result<usize, TextError> {
    inst.literal.trim().parse().map_err(|_| {
        inst.error(format!(
            "parameter({}): not a parameter number",
            inst.literal
        ))
    })
}

/// `metadata={op_name="params[0][0]" ...}`: JAX's name for an argument.
fn op_name(inst: &Instruction) -> Option<&str> {
    let meta = inst.attr("metadata")?;
    let at = meta.find("op_name=\"")? + 9;
    let name = meta[at..].split('"').next()?;
    (!name.is_empty()).then_some(name)
}

/// The operand an in-place update writes into: operand 0 of a `dynamic-update-slice` or
/// single-operand `scatter`; for a fusion whose root is one of those (through bitcasts),
/// the fusion operand that root updates.
fn in_place_operand(m: &Module, inst: &Instruction) -> Option<usize> {
    match inst.opcode.as_str() {
        "dynamic-update-slice" => Some(0),
        "scatter" if inst.operands.len() == 3 => Some(0),
        "fusion" => {
            let fused = &m.computations[m.called(inst, "calls").ok()?];
            let mut i = fused.root;
            while fused.instructions[i].opcode == "bitcast" {
                i = fused.instructions[i].operands[0];
            }
            let root = &fused.instructions[i];
            let updates = root.opcode == "dynamic-update-slice"
                || (root.opcode == "scatter" && root.operands.len() == 3);
            if !updates {
                return None;
            }
            let mut j = root.operands[0];
            while fused.instructions[j].opcode == "bitcast" {
                j = fused.instructions[j].operands[0];
            }
            let p = &fused.instructions[j];
            (p.opcode == "parameter")
                .then(|| p.literal.trim().parse().ok())
                .flatten()
        }
        _ => None,
    }
}

/// The tuple element `x` reads: `get-tuple-element(parameter(0)), index=k`.
fn tuple_index(c: &Computation, x: usize) -> Option<usize> {
    let g = &c.instructions[x];
    if g.opcode != "get-tuple-element" || c.instructions[*g.operands.first()?].opcode != "parameter"
    {
        return None;
    }
    g.attr("index")?.parse().ok()
}

fn int_constant(i: &Instruction) -> Option<i64> {
    (i.opcode == "constant" && i.shape.dims().is_empty())
        .then(|| i.literal.trim().parse().ok())
        .flatten()
}
