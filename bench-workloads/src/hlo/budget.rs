//! The op budget: inlining calls and unrolling loops makes at most so many instructions.
//!
//! Before anything is expanded, each computation's inlined size (its instructions, a
//! call's callee's again, a loop's body's times its trips) is computed once, callees
//! first, in saturating arithmetic: 48 levels each calling the next twice is refused with
//! the count it would make, in microseconds. A trip count only lowering can tell (a counted
//! loop started from a caller's constant) counts 0 here; lowering then checks each loop
//! against what is left, and counts every instruction it visits, so the budget holds
//! whatever the text hides. There, a tuple element an op reads or returns, and each 64
//! bytes of a name made (an op's path through calls and loops), count one more: those are
//! the lowering's other work.

use super::loops;
use super::text::{Instruction, Module, TextError};

/// The default budget: far above the largest program bundled here (the 4-layer
/// transformer's training step: 8,094 lines). A program this large (a loop unrolled to
/// 3.6 million ops) loads in about 20 s and 1.8 GB (docs/workloads.md, "Bounds").
pub const DEFAULT_MAX_OPS: u64 = 4_000_000;

/// The environment variable that sets the budget for the command line and Python.
pub const MAX_OPS_VARIABLE: &str = "MALLOCMUZERO_HLO_MAX_OPS";

/// Per computation, the instructions it makes when inlined.
pub(crate) struct Sizes {
    pub size: Vec<u64>,
    /// Whether `size` is the count (no loop of unknown trips inside, no saturation) rather
    /// than a lower bound.
    pub exact: Vec<bool>,
}

/// How many instructions an instruction of a computation makes inlined.
fn weight(m: &Module, s: &Sizes, c: usize, inst: &Instruction) -> (u64, bool) {
    let callee = |key| m.called(inst, key).ok();
    match inst.opcode.as_str() {
        "call" => match callee("to_apply") {
            Some(f) => (1u64.saturating_add(s.size[f]), s.exact[f]),
            None => (1, true),
        },
        "while" => {
            let trips = loops::written_trips(m, &m.computations[c], inst);
            match (callee("body"), trips) {
                (Some(b), Some(t)) => (
                    (t as u64).saturating_mul(s.size[b]).saturating_add(1),
                    s.exact[b],
                ),
                _ => (1, false),
            }
        }
        _ => (1, true),
    }
}

pub(crate) fn sizes(m: &Module) -> Sizes {
    let n = m.computations.len();
    let mut s = Sizes {
        size: vec![0; n],
        exact: vec![true; n],
    };
    for &c in &m.callees_first {
        let (mut size, mut exact) = (0u64, true);
        for inst in &m.computations[c].instructions {
            let (w, e) = weight(m, &s, c, inst);
            size = size.saturating_add(w);
            exact &= e;
        }
        s.size[c] = size;
        s.exact[c] = exact && size < u64::MAX;
    }
    s
}

/// The entry inlined within `max` instructions; past it, an error at the entry's
/// instruction that passes it, with the count the whole would make.
pub(crate) fn check(m: &Module, s: &Sizes, max: u64) -> Result<(), TextError> {
    let total = s.size[m.entry];
    if total <= max {
        return Ok(());
    }
    let entry = m.entry;
    let mut sum = 0u64;
    for inst in &m.computations[entry].instructions {
        sum = sum.saturating_add(weight(m, s, entry, inst).0);
        if sum > max {
            let count = if s.exact[entry] {
                format!("{total}")
            } else {
                format!("at least {total}")
            };
            return Err(inst.error(format!(
                "inlining calls and unrolling loops would make {count} instructions, {}",
                past(max)
            )));
        }
    }
    Ok(())
}

/// The end of a budget error: the budget and how to raise it.
pub(crate) fn past(max: u64) -> String {
    format!(
        "past the budget of {max} (set {MAX_OPS_VARIABLE} to raise it; docs/workloads.md, \"Bounds\")"
    )
}
