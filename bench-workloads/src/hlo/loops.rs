//! A `while`'s trip count: XLA's `known_trip_count`, or before optimization a counted
//! loop `i = c; while i < N: ...; i = i + 1` read off its condition and body.

use super::text::{Computation, Instruction, Module, TextError};

/// XLA's `known_trip_count` in the loop's `backend_config`, where it states one.
pub(crate) fn known_trip_count(inst: &Instruction) -> Result<Option<usize>, TextError> {
    let Some(cfg) = inst.attr("backend_config") else {
        return Ok(None);
    };
    let Some(at) = cfg.find("\"known_trip_count\"") else {
        return Ok(None);
    };
    let rest = &cfg[at..];
    rest.find("\"n\":\"")
        .map(|i| &rest[i + 5..])
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse::<usize>().ok())
        .map(Some)
        .ok_or_else(|| inst.error("known_trip_count in backend_config does not parse"))
}

/// A counted loop: element `element` of the loop's state counts up by one while it is
/// below `limit`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counted {
    pub element: usize,
    pub limit: i64,
}

impl Counted {
    /// Trips from a start value.
    pub(crate) fn trips(self, start: i64) -> Option<usize> {
        usize::try_from(self.limit.saturating_sub(start).max(0)).ok()
    }
}

/// The loop `inst` as a counted loop, when its condition is `gte(state, k) < constant`
/// and its body's root a tuple whose element `k` is that element plus the constant 1.
pub(crate) fn counted(m: &Module, inst: &Instruction) -> Option<Counted> {
    let cond = &m.computations[m.called(inst, "condition").ok()?];
    let body = &m.computations[m.called(inst, "body").ok()?];
    let root = &cond.instructions[cond.root];
    if root.opcode != "compare" || root.attr("direction") != Some("LT") {
        return None;
    }
    let element = tuple_index(cond, *root.operands.first()?)?;
    let limit = int_constant(&cond.instructions[*root.operands.get(1)?])?;
    let step = &body.instructions[body.root];
    if step.opcode != "tuple" {
        return None;
    }
    let next = &body.instructions[*step.operands.get(element)?];
    if next.opcode != "add" || next.operands.len() != 2 {
        return None;
    }
    let (a, b) = (next.operands[0], next.operands[1]);
    let one = |x: usize| int_constant(&body.instructions[x]) == Some(1);
    let same = |x: usize| tuple_index(body, x) == Some(element);
    if !((same(a) && one(b)) || (same(b) && one(a))) {
        return None;
    }
    Some(Counted { element, limit })
}

/// The trip count of loop `inst` of computation `comp` as the text alone states it: the
/// known count, or a counted loop started from a constant in the tuple it is given.
/// `None` where only lowering can tell (the start comes from elsewhere) or it is an error.
pub(crate) fn written_trips(m: &Module, comp: &Computation, inst: &Instruction) -> Option<usize> {
    if let Some(n) = known_trip_count(inst).ok()? {
        return Some(n);
    }
    let counted = counted(m, inst)?;
    let init = &comp.instructions[*inst.operands.first()?];
    if init.opcode != "tuple" {
        return None;
    }
    let start = int_constant(&comp.instructions[*init.operands.get(counted.element)?])?;
    counted.trips(start)
}

/// The tuple element `x` reads: `get-tuple-element(parameter(0)), index=k`.
fn tuple_index(c: &Computation, x: usize) -> Option<usize> {
    let g = &c.instructions[x];
    if g.opcode != "get-tuple-element" || c.instructions[*g.operands.first()?].opcode != "parameter"
    {
        return None;
    }
    g.number
}

/// The value of an integer scalar constant.
pub(crate) fn int_constant(i: &Instruction) -> Option<i64> {
    (i.opcode == "constant" && i.shape.dims().is_empty())
        .then(|| i.literal.trim().parse().ok())
        .flatten()
}
