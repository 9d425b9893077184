//! How many operands an opcode takes, where XLA fixes it: an instruction with another
//! count is refused where it is written, so nothing that reads operands (FLOPs, in-place
//! updates, loops, aliases) meets an instruction without the operand it needs. Opcodes
//! not listed (calls, fusions, custom calls, tuples, ...) take any number.

use super::text::{Instruction, TextError};

/// Opcodes of exactly one operand.
const ONE: &[&str] = &[
    "abs",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "cbrt",
    "ceil",
    "clz",
    "convert",
    "copy",
    "cosine",
    "domain",
    "erf",
    "exponential",
    "exponential-minus-one",
    "floor",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "negate",
    "not",
    "opt-barrier",
    "optimization-barrier",
    "popcnt",
    "real",
    "reduce-precision",
    "reshape",
    "reverse",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "sign",
    "sine",
    "slice",
    "sqrt",
    "tan",
    "tanh",
    "transpose",
    "while",
];

/// Opcodes of exactly two operands.
const TWO: &[&str] = &[
    "add",
    "add-dependency",
    "and",
    "atan2",
    "compare",
    "complex",
    "convolution",
    "divide",
    "dot",
    "gather",
    "maximum",
    "minimum",
    "multiply",
    "or",
    "pad",
    "power",
    "remainder",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "stochastic-convert",
    "subtract",
    "xor",
];

/// The operand counts `opcode` may have: (fewest, most, a multiple of).
fn counts(opcode: &str) -> Option<(usize, usize, usize)> {
    Some(match opcode {
        o if ONE.contains(&o) => (1, 1, 1),
        o if TWO.contains(&o) => (2, 2, 1),
        "select" | "clamp" | "select-and-scatter" => (3, 3, 1),
        "constant" | "parameter" | "iota" | "partition-id" | "replica-id" => (0, 0, 1),
        // Operand, update, one index per dimension.
        "dynamic-update-slice" => (2, usize::MAX, 1),
        "dynamic-slice" | "sort" | "map" | "concatenate" => (1, usize::MAX, 1),
        // Inputs then as many initial values.
        "reduce" | "reduce-window" => (2, usize::MAX, 2),
        // Operands, indices, as many updates: an odd count.
        "scatter" => (3, usize::MAX, 1),
        _ => return None,
    })
}

/// The instruction's operand count fits its opcode, or an error naming it.
pub(crate) fn check(inst: &Instruction) -> Result<(), TextError> {
    let Some((fewest, most, multiple)) = counts(&inst.opcode) else {
        return Ok(());
    };
    let n = inst.operands.len();
    let odd_scatter = inst.opcode != "scatter" || n % 2 == 1;
    if (fewest..=most).contains(&n) && n % multiple == 0 && odd_scatter {
        return Ok(());
    }
    let takes = match (fewest, most) {
        (a, b) if a == b => format!("{a}"),
        (a, usize::MAX) => format!("at least {a}"),
        (a, b) => format!("{a} to {b}"),
    };
    let kind = match (inst.opcode.as_str(), multiple) {
        ("scatter", _) => ", an odd number",
        (_, 2) => ", an even number",
        _ => "",
    };
    Err(inst.error(format!(
        "`{}` takes {takes} operand(s){kind}; this one has {n}",
        inst.opcode
    )))
}
