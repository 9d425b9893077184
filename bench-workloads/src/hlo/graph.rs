//! The call graph of a module: which instruction calls which computation (a call, a
//! fusion, a reducer, a loop's condition or body, a conditional's branch). A computation
//! that reaches itself is refused naming it, and the graph is walked with an explicit
//! stack, so neither a cycle nor a chain of thousands of computations recurses.

use super::shape::snippet;
use super::text::{Computation, TextError};
use std::collections::HashMap;

/// Instruction `inst` of a computation calls computation `callee`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub inst: usize,
    pub callee: usize,
}

/// Attributes naming a called computation (or a list of them).
const CALLS: [&str; 7] = [
    "calls",
    "to_apply",
    "condition",
    "body",
    "branch_computations",
    "true_computation",
    "false_computation",
];

/// Attributes naming a called computation on a `select-and-scatter` only.
const SELECT_AND_SCATTER: [&str; 2] = ["select", "scatter"];

/// Per computation, the computations its instructions call, in the order written; a name
/// that is no computation is an error naming the instruction. Each instruction keeps the
/// computation each of its attributes names ([`super::text::Instruction::callees`]).
pub(crate) fn calls(
    computations: &mut [Computation],
    by_name: &HashMap<String, usize>,
) -> Result<Vec<Vec<Call>>, TextError> {
    let mut out = Vec::with_capacity(computations.len());
    for c in computations.iter_mut() {
        let mut edges = Vec::new();
        for (i, inst) in c.instructions.iter_mut().enumerate() {
            let extra: &[&'static str] = match inst.opcode.as_str() {
                "select-and-scatter" => &SELECT_AND_SCATTER,
                _ => &[],
            };
            let mut callees = Vec::new();
            for &key in CALLS.iter().chain(extra) {
                let Some(v) = inst.attr(key) else { continue };
                let list = v.trim().starts_with('{');
                for callee in v.trim_matches(|c| c == '{' || c == '}').split(',') {
                    let callee = callee.trim().trim_start_matches('%');
                    let &callee = by_name.get(callee).ok_or_else(|| {
                        inst.error(format!("{key}={v}: no computation named `{callee}`"))
                    })?;
                    edges.push(Call { inst: i, callee });
                }
                let one = edges.last().filter(|_| !list).map(|e| e.callee);
                callees.push((key, one));
            }
            inst.callees = callees;
        }
        out.push(edges);
    }
    Ok(out)
}

/// Every computation, each after all the computations it calls; a computation that
/// reaches itself (directly or through others) is an error at the call that closes the
/// cycle, naming the cycle.
pub(crate) fn callees_first(
    computations: &[Computation],
    calls: &[Vec<Call>],
) -> Result<Vec<usize>, TextError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let n = computations.len();
    let mut mark = vec![Mark::New; n];
    let mut order = Vec::with_capacity(n);
    // (computation, next call of it to follow)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if mark[start] != Mark::New {
            continue;
        }
        mark[start] = Mark::Open;
        stack.push((start, 0));
        while let Some(&mut (c, ref mut next)) = stack.last_mut() {
            let Some(&call) = calls[c].get(*next) else {
                mark[c] = Mark::Done;
                order.push(c);
                stack.pop();
                continue;
            };
            *next += 1;
            match mark[call.callee] {
                Mark::Done => {}
                Mark::New => {
                    mark[call.callee] = Mark::Open;
                    stack.push((call.callee, 0));
                }
                Mark::Open => return Err(cycle(computations, &stack, c, call)),
            }
        }
    }
    Ok(order)
}

/// The error for `call` of computation `c`, whose callee is open on `stack`.
fn cycle(
    computations: &[Computation],
    stack: &[(usize, usize)],
    c: usize,
    call: Call,
) -> TextError {
    let from = stack
        .iter()
        .position(|&(s, _)| s == call.callee)
        .unwrap_or(0);
    let mut path: Vec<&str> = stack[from..]
        .iter()
        .map(|&(s, _)| computations[s].name.as_str())
        .collect();
    path.push(&computations[call.callee].name);
    // A cycle through thousands of computations is named by its ends.
    let shown = if path.len() > 9 {
        let mut s: Vec<String> = path[..4].iter().map(|p| snippet(p)).collect();
        s.push(format!("... ({} more)", path.len() - 8));
        s.extend(path[path.len() - 4..].iter().map(|p| snippet(p)));
        s
    } else {
        path.iter().map(|p| snippet(p)).collect()
    };
    computations[c].instructions[call.inst].error(format!(
        "computation `{}` reaches itself: {} (a call, fusion, reducer or loop may not run the computation it is in)",
        snippet(&computations[call.callee].name),
        shown.join(" -> ")
    ))
}
