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
//!
//! Nothing here recurses on the text's depth: calls and loop trips are frames on an
//! explicit stack, values live in one arena (a tuple of tuples is indices, never copies),
//! and every instruction visited is counted against the op budget ([`super::budget`]).

use super::budget;
use super::cost::Flops;
use super::loops;
use super::shape::Shape;
use super::text::{at, parameter_number, Instruction, Module, TextError};
use accel_sim::{Buffer, BufferKind, Op, MAX_BYTES};
use std::collections::{BTreeSet, HashMap, HashSet};

mod op;

use op::fused_update;

/// A value: an index into the lowering's arena of [`Node`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ref(usize);

/// An array leaf (a version of a buffer, or nothing for tokens and empty arrays) or a
/// tuple of values.
#[derive(Debug)]
enum Node {
    Leaf(Option<usize>),
    Tuple(Vec<Ref>),
}

/// The arena's first node: no buffer.
const NOTHING: Ref = Ref(0);

/// A version of a buffer; `superseded_by` is the step of the in-place update that made
/// the next version, `last_use` the last step that read it or updated it (`usize::MAX`:
/// the program returns it).
struct Value {
    buffer: usize,
    superseded_by: Option<usize>,
    last_use: usize,
}

/// What the lowering made, and what it counted for the description.
pub(crate) struct Lowered {
    pub buffers: Vec<Buffer>,
    pub ops: Vec<Op>,
    pub whiles: usize,
    pub calls: usize,
    pub in_place: usize,
}

/// What a module gives every pass: computed once.
struct Facts<'m> {
    m: &'m Module,
    weights: HashSet<usize>,
    flops: Flops,
    sizes: budget::Sizes,
    /// Per computation, as a fused computation: the parameter its root updates in place.
    fused_update: Vec<Option<usize>>,
    /// Per `while` (computation, instruction): what its text says of its trip count, read
    /// once however often the loop is reached.
    loops: HashMap<(usize, usize), Loop>,
    max_ops: u64,
}

/// One computation being emitted: a call's callee, or one trip of a loop's body.
struct Frame {
    c: usize,
    args: Vec<Ref>,
    /// Names the ops it makes: the path of calls and trips to it (`w/3/`).
    prefix: String,
    /// The values of its instructions emitted so far, in order.
    env: Vec<Ref>,
    /// What the frame above it is for: its result is the value of instruction
    /// `env.len()` here.
    waiting: Option<Waiting>,
}

enum Waiting {
    Call,
    Loop {
        body: usize,
        trips: usize,
        done: usize,
    },
}

/// The next thing an instruction gives: its value, or a frame to emit first.
enum Next {
    Value(Ref),
    Enter(Frame),
}

struct Lower<'m> {
    f: &'m Facts<'m>,
    buffers: Vec<Buffer>,
    /// The instruction (computation, index) each buffer is of.
    made_by: Vec<(usize, usize)>,
    names: HashSet<String>,
    /// Per name taken, the next `#k` to try for another buffer of that name.
    next_suffix: HashMap<String, usize>,
    ops: Vec<Op>,
    values: Vec<Value>,
    nodes: Vec<Node>,
    /// Per buffer, the last step that read it (to list an op's reads once each).
    read_at: Vec<usize>,
    /// Integer scalar constants by value, for counted loops before optimization.
    scalars: HashMap<usize, i64>,
    constants: HashMap<(usize, usize), Ref>,
    step: usize,
    /// Instructions visited, and the other work counted against the budget.
    work: u64,
    copied: &'m HashSet<usize>,
    conflicts: BTreeSet<usize>,
    /// Each update that could be in place: its step and the value it updates.
    candidates: Vec<(usize, usize)>,
    whiles: usize,
    calls: usize,
    in_place: usize,
}

/// Lowers the module; `weights` are the entry parameter numbers that hold weights, and
/// `max_ops` the op budget.
pub(crate) fn lower(m: &Module, weights: &[usize], max_ops: u64) -> Result<Lowered, TextError> {
    lower_settling(m, weights, max_ops, Settle::AtOnce).map(|(l, _passes)| l)
}

/// How the passes find the updates that must copy.
#[derive(Clone, Copy, PartialEq)]
enum Settle {
    /// Every update whose value is used after it, from the first pass that finds one.
    AtOnce,
    /// Only the updates a pass saw conflict (one link of a chain per pass): the slow
    /// fixpoint `AtOnce` must equal.
    #[cfg(test)]
    ConflictsOnly,
}

fn lower_settling(
    m: &Module,
    weights: &[usize],
    max_ops: u64,
    settle: Settle,
) -> Result<(Lowered, usize), TextError> {
    let sizes = budget::sizes(m);
    budget::check(m, &sizes, max_ops)?;
    let facts = Facts {
        m,
        weights: weights.iter().copied().collect(),
        flops: Flops::of_module(m),
        sizes,
        fused_update: m.computations.iter().map(fused_update).collect(),
        loops: loops_of(m),
        max_ops,
    };
    let mut copied = HashSet::new();
    // An in-place update whose old contents turn out to be read later becomes a copy. A
    // pass that finds such a read also saw every use of every value (a use does not depend
    // on which updates share their buffer), so the next pass copies every update whose
    // value is used after it, and settles: two passes, not one per update of a chain.
    for pass in 1..=64 {
        let mut l = Lower {
            f: &facts,
            buffers: Vec::new(),
            made_by: Vec::new(),
            names: HashSet::new(),
            next_suffix: HashMap::new(),
            ops: Vec::new(),
            values: Vec::new(),
            nodes: vec![Node::Leaf(None)],
            read_at: Vec::new(),
            scalars: HashMap::new(),
            constants: HashMap::new(),
            step: 0,
            work: 0,
            copied: &copied,
            conflicts: BTreeSet::new(),
            candidates: Vec::new(),
            whiles: 0,
            calls: 0,
            in_place: 0,
        };
        l.run()?;
        if l.conflicts.is_empty() {
            return Ok((l.finish()?, pass));
        }
        let used_later: Vec<usize> = l
            .candidates
            .iter()
            .filter(|&&(step, v)| settle == Settle::AtOnce && l.values[v].last_use > step)
            .map(|&(step, _)| step)
            .collect();
        let conflicts = std::mem::take(&mut l.conflicts);
        drop(l);
        copied.extend(used_later);
        copied.extend(conflicts);
    }
    Err(at(1, None, "in-place updates did not settle in 64 passes"))
}

impl<'m> Lower<'m> {
    fn m(&self) -> &'m Module {
        self.f.m
    }

    fn run(&mut self) -> Result<(), TextError> {
        let m = self.m();
        let entry = &m.computations[m.entry];
        // Parameters are numbered 0..n once each (the parser checks).
        let count = entry
            .instructions
            .iter()
            .filter(|i| i.opcode == "parameter")
            .count();
        let mut args = vec![NOTHING; count];
        for (i, inst) in entry.instructions.iter().enumerate() {
            if inst.opcode != "parameter" {
                continue;
            }
            let n = parameter_number(inst)?;
            let kind = if self.f.weights.contains(&n) {
                BufferKind::Weight
            } else {
                BufferKind::Input
            };
            let name = op_name(inst).unwrap_or(&inst.name).to_string();
            let r = self.make(&inst.shape, &name, kind, (m.entry, i))?;
            if let Some(slot) = args.get_mut(n) {
                *slot = r;
            }
        }
        let root = self.emit(args)?;
        let root_inst = &entry.instructions[entry.root];
        let mut outs = Vec::new();
        self.leaves(root, &mut outs, root_inst)?;
        for v in outs {
            self.read_value(v, usize::MAX);
            let b = self.values[v].buffer;
            if self.buffers[b].kind == BufferKind::Activation {
                self.buffers[b].kind = BufferKind::Output;
            }
        }
        Ok(())
    }

    /// Counts `n` against the budget; past it, an error at `inst`.
    fn charge(&mut self, n: u64, inst: &Instruction) -> Result<(), TextError> {
        self.work = self.work.saturating_add(n);
        if self.work > self.f.max_ops {
            return Err(inst.error(format!(
                "loading makes more instructions than the budget allows, counting calls inlined and loops unrolled, tuple elements read and names made: {}",
                budget::past(self.f.max_ops)
            )));
        }
        Ok(())
    }

    fn node(&mut self, n: Node) -> Ref {
        self.nodes.push(n);
        Ref(self.nodes.len() - 1)
    }

    /// The array leaves of `r` in order (no recursion: tuples nest as deep as the text
    /// writes them), each tuple element counted against the budget.
    fn leaves(
        &mut self,
        r: Ref,
        out: &mut Vec<usize>,
        inst: &Instruction,
    ) -> Result<(), TextError> {
        if let Node::Leaf(leaf) = self.nodes[r.0] {
            out.extend(leaf);
            return Ok(());
        }
        let mut stack = vec![r];
        while let Some(r) = stack.pop() {
            match &self.nodes[r.0] {
                Node::Leaf(Some(v)) => out.push(*v),
                Node::Leaf(None) => {}
                Node::Tuple(parts) => {
                    let n = parts.len() as u64;
                    stack.extend(parts.iter().rev());
                    self.charge(n, inst)?;
                }
            }
        }
        Ok(())
    }

    /// A name no buffer has yet: `name`, else `name#2`, `name#3`, ... (the first free).
    fn unique_name(&mut self, name: &str) -> String {
        if self.names.insert(name.to_string()) {
            return name.to_string();
        }
        // Every `name#j` below the next suffix is taken (names are never given back).
        let k = self.next_suffix.entry(name.to_string()).or_insert(2);
        loop {
            let unique = format!("{name}#{k}");
            *k += 1;
            if self.names.insert(unique.clone()) {
                return unique;
            }
        }
    }

    /// A fresh buffer per array leaf of `shape` (none for empty ones), made by instruction
    /// `by`; a tuple's elements and long names count against the budget.
    fn make(
        &mut self,
        shape: &Shape,
        name: &str,
        kind: BufferKind,
        by: (usize, usize),
    ) -> Result<Ref, TextError> {
        let m = self.m();
        let inst = &m.computations[by.0].instructions[by.1];
        match shape {
            Shape::Tuple(parts) => {
                self.charge(parts.len() as u64, inst)?;
                let mut refs = Vec::with_capacity(parts.len());
                // Shapes nest at most shape::MAX_TUPLE_DEPTH deep.
                for (k, p) in parts.iter().enumerate() {
                    refs.push(self.make(p, &format!("{name}.{k}"), kind, by)?);
                }
                Ok(self.node(Node::Tuple(refs)))
            }
            array => {
                let size = array.bytes();
                if size == 0 {
                    return Ok(NOTHING);
                }
                self.charge(name.len() as u64 / 64, inst)?;
                let unique = self.unique_name(name);
                self.buffers.push(Buffer {
                    name: unique,
                    size,
                    kind,
                });
                self.made_by.push(by);
                self.read_at.push(0);
                self.values.push(Value {
                    buffer: self.buffers.len() - 1,
                    superseded_by: None,
                    last_use: 0,
                });
                Ok(self.node(Node::Leaf(Some(self.values.len() - 1))))
            }
        }
    }

    /// Notes a read of `v` at step `at`: reading a version an in-place update has
    /// replaced means that update must be a copy.
    fn read_value(&mut self, v: usize, at: usize) {
        self.values[v].last_use = at;
        if let Some(step) = self.values[v].superseded_by {
            self.conflicts.insert(step);
        }
    }

    /// A frame for computation `c` called by `inst` with `args`.
    fn frame(
        &mut self,
        c: usize,
        args: Vec<Ref>,
        prefix: String,
        inst: &Instruction,
    ) -> Result<Frame, TextError> {
        self.charge(prefix.len() as u64 / 64, inst)?;
        Ok(Frame {
            c,
            args,
            prefix,
            env: Vec::with_capacity(self.m().computations[c].instructions.len()),
            waiting: None,
        })
    }

    /// Emits the entry computation with `args`, every call and trip a frame on a stack;
    /// returns the entry's root.
    fn emit(&mut self, args: Vec<Ref>) -> Result<Ref, TextError> {
        let m = self.m();
        let entry = &m.computations[m.entry];
        let root = &entry.instructions[entry.root];
        let mut stack = vec![self.frame(m.entry, args, String::new(), root)?];
        loop {
            let Some(top) = stack.last_mut() else {
                return Err(at(entry.line, None, "internal: no frame left to emit"));
            };
            let comp = &m.computations[top.c];
            if let Some(inst) = comp.instructions.get(top.env.len()) {
                match self.instruction(top, inst)? {
                    Next::Value(r) => top.env.push(r),
                    Next::Enter(frame) => stack.push(frame),
                }
                continue;
            }
            // The frame is done: its root is the value of the instruction waiting on it.
            let result = top.env[comp.root];
            stack.pop();
            let Some(parent) = stack.last_mut() else {
                return Ok(result);
            };
            let caller = &m.computations[parent.c].instructions[parent.env.len()];
            match parent.waiting.take() {
                Some(Waiting::Loop { body, trips, done }) if done + 1 < trips => {
                    parent.waiting = Some(Waiting::Loop {
                        body,
                        trips,
                        done: done + 1,
                    });
                    let prefix = format!("{}{}/{}/", parent.prefix, caller.name, done + 1);
                    let next = self.frame(body, vec![result], prefix, caller)?;
                    stack.push(next);
                }
                _ => parent.env.push(result),
            }
        }
    }

    /// Emits one instruction of `frame`'s computation.
    fn instruction(&mut self, frame: &mut Frame, inst: &'m Instruction) -> Result<Next, TextError> {
        let m = self.m();
        let (c, i) = (frame.c, frame.env.len());
        self.step += 1;
        // Its operands are gathered on every visit: a long list counts.
        self.charge(1 + inst.operands.len() as u64 / 8, inst)?;
        let mut operands = Vec::with_capacity(inst.operands.len());
        for &j in &inst.operands {
            // The parser lets an operand name only an earlier instruction.
            let r =
                frame.env.get(j).copied().ok_or_else(|| {
                    inst.error("an operand is used before the line that defines it")
                })?;
            operands.push(r);
        }
        let first = || {
            operands
                .first()
                .copied()
                .ok_or_else(|| inst.error(format!("{} needs an operand", inst.opcode)))
        };
        let r = match inst.opcode.as_str() {
            "parameter" => {
                let n = parameter_number(inst)?;
                frame.args.get(n).copied().ok_or_else(|| {
                    inst.error(format!(
                        "parameter({n}), but the caller passes {}",
                        frame.args.len()
                    ))
                })?
            }
            "tuple" => self.node(Node::Tuple(operands)),
            "get-tuple-element" => {
                let k = inst
                    .number
                    .ok_or_else(|| inst.error("get-tuple-element needs index=N"))?;
                match &self.nodes[first()?.0] {
                    Node::Tuple(parts) if k < parts.len() => parts[k],
                    _ => {
                        return Err(
                            inst.error(format!("index={k}: the operand has no element {k}"))
                        )
                    }
                }
            }
            "bitcast" | "optimization-barrier" | "opt-barrier" | "add-dependency" | "domain" => {
                first()?
            }
            "reshape" if !m.scheduled => first()?,
            "after-all" => NOTHING,
            "constant" => self.constant(c, i, &frame.prefix)?,
            "call" => {
                self.calls += 1;
                let callee = m.called(inst, "to_apply")?;
                let prefix = format!("{}{}/", frame.prefix, inst.name);
                frame.waiting = Some(Waiting::Call);
                return Ok(Next::Enter(self.frame(callee, operands, prefix, inst)?));
            }
            "while" => {
                let init = first()?;
                match self.enter_loop(frame, inst, init)? {
                    Some(next) => return Ok(Next::Enter(next)),
                    None => init,
                }
            }
            "conditional" => {
                return Err(inst.error(
                    "`conditional` is not supported: a program here has one fixed schedule (take the branch out of the jitted function, or use jnp.where)",
                ))
            }
            _ => self.op(c, i, &operands, &frame.prefix)?,
        };
        Ok(Next::Value(r))
    }

    /// Unrolls loop `inst` of `frame` from state `init`: its first trip's frame, or `None`
    /// for no trips (the state is the result). Past the budget, an error with the count.
    fn enter_loop(
        &mut self,
        frame: &mut Frame,
        inst: &Instruction,
        init: Ref,
    ) -> Result<Option<Frame>, TextError> {
        let m = self.m();
        let trips = self.trip_count((frame.c, frame.env.len()), inst, init)?;
        let body = m.called(inst, "body")?;
        let size = self.f.sizes.size[body];
        let need = (trips as u64).saturating_mul(size);
        if self.work.saturating_add(need) > self.f.max_ops {
            return Err(inst.error(format!(
                "unrolling {trips} trips of `{}` ({size} instructions each, inlined) would make {need} instructions, {}",
                m.computations[body].name,
                budget::past(self.f.max_ops)
            )));
        }
        self.whiles += 1;
        if trips == 0 {
            return Ok(None);
        }
        frame.waiting = Some(Waiting::Loop {
            body,
            trips,
            done: 0,
        });
        let prefix = format!("{}{}/0/", frame.prefix, inst.name);
        Ok(Some(self.frame(body, vec![init], prefix, inst)?))
    }

    fn constant(&mut self, c: usize, i: usize, prefix: &str) -> Result<Ref, TextError> {
        if let Some(r) = self.constants.get(&(c, i)) {
            return Ok(*r);
        }
        let m = self.m();
        let inst = &m.computations[c].instructions[i];
        let name = if c == m.entry || prefix.is_empty() {
            inst.name.clone()
        } else {
            format!("{}/{}", m.computations[c].name, inst.name)
        };
        let r = self.make(&inst.shape, &name, BufferKind::Weight, (c, i))?;
        if let (Node::Leaf(Some(v)), true) = (&self.nodes[r.0], inst.shape.dims().is_empty()) {
            if let Ok(n) = inst.literal.trim().parse::<i64>() {
                self.scalars.insert(*v, n);
            }
        }
        self.constants.insert((c, i), r);
        Ok(r)
    }

    /// XLA's `known_trip_count`, or before optimization a counted loop started from a
    /// constant.
    fn trip_count(
        &self,
        at: (usize, usize),
        inst: &Instruction,
        init: Ref,
    ) -> Result<usize, TextError> {
        let facts = self.f.loops.get(&at);
        if let Some(n) = facts.map_or(Ok(None), |l| l.known.clone())? {
            return Ok(n);
        }
        let counted = facts.and_then(|l| l.counted);
        counted.and_then(|c| self.counted_loop(c, init)).ok_or_else(|| {
            inst.error(
                "`while` without a known trip count (no known_trip_count in its backend_config, and not a counted loop `i < N; i += 1` from a constant): a program here has one fixed schedule; give the loop fixed bounds (lax.fori_loop or lax.scan over a fixed length, whose scheduled module states the count) or unroll it",
            )
        })
    }

    fn counted_loop(&self, counted: loops::Counted, init: Ref) -> Option<usize> {
        let Node::Tuple(parts) = &self.nodes[init.0] else {
            return None;
        };
        let Node::Leaf(Some(v)) = self.nodes[parts.get(counted.element)?.0] else {
            return None;
        };
        counted.trips(*self.scalars.get(&v)?)
    }

    /// Entry buffers no op reads are dropped (the IR wants every entry read); the program
    /// has an op and its buffers fit the IR's total, or an error names the line past it.
    fn finish(self) -> Result<Lowered, TextError> {
        let m = self.m();
        if self.ops.is_empty() {
            let entry = &m.computations[m.entry];
            return Err(at(
                entry.line,
                None,
                format!(
                    "the entry computation `{}` makes no op (parameters, constants and aliases only): nothing to map",
                    entry.name
                ),
            ));
        }
        let mut read = vec![false; self.buffers.len()];
        for op in &self.ops {
            for &b in &op.reads {
                read[b] = true;
            }
        }
        let mut new_id = vec![usize::MAX; self.buffers.len()];
        let mut buffers = Vec::new();
        let mut total: u64 = 0;
        for (b, buf) in self.buffers.into_iter().enumerate() {
            if !buf.kind.is_entry() || read[b] {
                total = total.saturating_add(buf.size);
                if total > MAX_BYTES {
                    let (c, i) = self.made_by[b];
                    return Err(m.computations[c].instructions[i].error(format!(
                        "buffer `{}` of {} bytes takes the program's buffers past {MAX_BYTES} bytes (8 PiB), the most a program here may have",
                        buf.name, buf.size
                    )));
                }
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
        Ok(Lowered {
            buffers,
            ops,
            whiles: self.whiles,
            calls: self.calls,
            in_place: self.in_place,
        })
    }
}

/// What a loop's text says of its trip count.
struct Loop {
    known: Result<Option<usize>, TextError>,
    counted: Option<loops::Counted>,
}

/// Every `while` of the module with what its text says of its trip count.
fn loops_of(m: &Module) -> HashMap<(usize, usize), Loop> {
    let mut out = HashMap::new();
    for (c, comp) in m.computations.iter().enumerate() {
        for (i, inst) in comp.instructions.iter().enumerate() {
            if inst.opcode == "while" {
                let known = loops::known_trip_count(inst);
                let counted = loops::counted(m, inst);
                out.insert((c, i), Loop { known, counted });
            }
        }
    }
    out
}

/// `metadata={op_name="params[0][0]" ...}`: JAX's name for an argument.
fn op_name(inst: &Instruction) -> Option<&str> {
    let meta = inst.attr("metadata")?;
    let at = meta.find("op_name=\"")? + 9;
    let name = meta[at..].split('"').next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests;
