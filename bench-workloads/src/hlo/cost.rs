//! FLOPs of HLO instructions, counted as XLA's `HloCostAnalysis` counts them (so that a
//! loaded program's total can be checked against `compiled.cost_analysis()`), except that
//! transcendental functions (`exp`, `tanh`, ...) count one FLOP an element here where XLA
//! keeps them apart as `transcendentals`: the checks compare with XLA's
//! `flops + transcendentals`.
//!
//! - elementwise ops (arithmetic, comparisons, `select`, `clamp`, `convert`, logic,
//!   transcendentals): 1 per output element;
//! - `dot`: 2 x output elements x the product of the contracting dimensions;
//! - `convolution`: 2 x batch x output features x input features per group x the number of
//!   (output position, window position) pairs that land on the input (padding and
//!   dilation excluded), per spatial dimension multiplied together;
//! - `reduce`: (input elements - output elements) x the FLOPs of its reducer;
//!   `reduce-window`: output elements x (window elements - 1) x the reducer's;
//!   `map`: elements x the mapped computation's; `scatter`: update elements x the
//!   combiner's; `select-and-scatter`: source elements x (window elements x select's +
//!   scatter's); `sort`: n x ceil(log2 n) for the n elements of its first operand;
//! - `fusion`: the sum of its fused computation's instructions;
//! - data movement and bookkeeping (`broadcast`, `transpose`, `reshape`, `copy`, `slice`,
//!   `dynamic-slice`, `dynamic-update-slice`, `concatenate`, `pad`, `gather`, `iota`,
//!   `reverse`, `constant`, `parameter`, `tuple`, `get-tuple-element`, `bitcast`,
//!   `bitcast-convert`, `rng-bit-generator`, ...): 0;
//! - `custom-call`: 0, a stated default (its target is opaque to XLA's cost analysis too);
//! - any other opcode: an error naming the instruction, never a silent zero.

use super::text::{Computation, Instruction, Module, TextError};

/// Elementwise opcodes: one FLOP per output element.
const ELEMENTWISE: &[&str] = &[
    "abs",
    "add",
    "and",
    "atan2",
    "cbrt",
    "ceil",
    "clamp",
    "clz",
    "compare",
    "complex",
    "convert",
    "cosine",
    "divide",
    "erf",
    "exponential",
    "exponential-minus-one",
    "floor",
    "imag",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "power",
    "real",
    "reduce-precision",
    "remainder",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "select",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "xor",
];

/// Opcodes that move, make or name data and compute nothing.
const MOVEMENT: &[&str] = &[
    "add-dependency",
    "after-all",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "concatenate",
    "constant",
    "copy",
    "custom-call",
    "domain",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "iota",
    "opt-barrier",
    "optimization-barrier",
    "pad",
    "parameter",
    "partition-id",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "set-dimension-size",
    "slice",
    "transpose",
    "tuple",
];

/// FLOPs of one instruction of computation `comp`.
pub(crate) fn flops(m: &Module, comp: &Computation, inst: &Instruction) -> Result<f64, TextError> {
    let out = inst.shape.elements() as f64;
    let operand = |k: usize| -> Result<&Instruction, TextError> {
        inst.operands
            .get(k)
            .map(|&i| &comp.instructions[i])
            .ok_or_else(|| inst.error(format!("{} needs operand {k}", inst.opcode)))
    };
    let op = inst.opcode.as_str();
    if ELEMENTWISE.contains(&op) {
        return Ok(out);
    }
    if MOVEMENT.contains(&op) {
        return Ok(0.0);
    }
    Ok(match op {
        "dot" => {
            let lhs = operand(0)?.shape.dims();
            let mut k = 1.0;
            for d in inst.dims_attr("lhs_contracting_dims")? {
                k *= *lhs
                    .get(d)
                    .ok_or_else(|| inst.error(format!("lhs_contracting_dims: no dimension {d}")))?
                    as f64;
            }
            2.0 * out * k
        }
        "convolution" => convolution(inst, operand(0)?, operand(1)?)?,
        "reduce" => {
            let input = operand(0)?.shape.elements() as f64;
            let output = inst.shape.leaves()[0].elements() as f64;
            (input - output).max(0.0) * called_flops(m, inst, "to_apply")?
        }
        "reduce-window" => {
            let window: f64 = window_sizes(inst)?.iter().product::<u64>() as f64;
            let output = inst.shape.leaves()[0].elements() as f64;
            output * (window - 1.0).max(0.0) * called_flops(m, inst, "to_apply")?
        }
        "map" => out * called_flops(m, inst, "to_apply")?,
        "scatter" => {
            let updates = operand(inst.operands.len() - 1)?.shape.elements() as f64;
            updates * called_flops(m, inst, "to_apply")?
        }
        "select-and-scatter" => {
            let source = operand(1)?.shape.elements() as f64;
            let window: f64 = window_sizes(inst)?.iter().product::<u64>() as f64;
            source * (window * called_flops(m, inst, "select")? + called_flops(m, inst, "scatter")?)
        }
        "sort" => {
            // XLA's rule: n ceil(log2 n) comparisons of the first operand's n elements,
            // whatever the comparator does.
            let n = operand(0)?.shape.elements().max(1) as f64;
            n * n.log2().ceil()
        }
        "fusion" => called_flops(m, inst, "calls")?,
        _ => {
            return Err(inst.error(format!(
                "unknown opcode `{op}`: this loader has no FLOP rule for it (docs/workloads.md lists the opcodes it reads)"
            )))
        }
    })
}

/// The FLOPs of one run of the computation an attribute names.
fn called_flops(m: &Module, inst: &Instruction, key: &str) -> Result<f64, TextError> {
    let c = &m.computations[m.called(inst, key)?];
    computation_flops(m, c)
}

/// The sum over a computation's instructions (fused and applied computations).
pub(crate) fn computation_flops(m: &Module, c: &Computation) -> Result<f64, TextError> {
    let mut total = 0.0;
    for inst in &c.instructions {
        if matches!(inst.opcode.as_str(), "call" | "while" | "conditional") {
            return Err(inst.error(format!(
                "`{}` inside a fused or applied computation is not supported",
                inst.opcode
            )));
        }
        total += flops(m, c, inst)?;
    }
    Ok(total)
}

/// `window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}`: one entry per
/// spatial dimension for each key.
struct Window {
    size: Vec<u64>,
    stride: Vec<u64>,
    pad_lo: Vec<i64>,
    lhs_dilate: Vec<u64>,
    rhs_dilate: Vec<u64>,
}

fn window(inst: &Instruction) -> Result<Window, TextError> {
    let text = inst.attr("window").unwrap_or("{}");
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let mut w = Window {
        size: Vec::new(),
        stride: Vec::new(),
        pad_lo: Vec::new(),
        lhs_dilate: Vec::new(),
        rhs_dilate: Vec::new(),
    };
    let bad = |part: &str| inst.error(format!("window={text}: `{part}` does not parse"));
    for part in inner.split_whitespace() {
        let (k, v) = part.split_once('=').ok_or_else(|| bad(part))?;
        let nums = |v: &str| -> Result<Vec<u64>, TextError> {
            v.split('x')
                .map(|n| n.parse().map_err(|_| bad(part)))
                .collect()
        };
        match k {
            "size" => w.size = nums(v)?,
            "stride" => w.stride = nums(v)?,
            "lhs_dilate" => w.lhs_dilate = nums(v)?,
            "rhs_dilate" => w.rhs_dilate = nums(v)?,
            "pad" => {
                for p in v.split('x') {
                    let lo = p.split('_').next().ok_or_else(|| bad(part))?;
                    w.pad_lo.push(lo.parse().map_err(|_| bad(part))?);
                }
            }
            _ => {}
        }
    }
    let n = w.size.len();
    for (v, one) in [
        (&mut w.stride, 1),
        (&mut w.lhs_dilate, 1),
        (&mut w.rhs_dilate, 1),
    ] {
        v.resize(n, one);
    }
    w.pad_lo.resize(n, 0);
    Ok(w)
}

fn window_sizes(inst: &Instruction) -> Result<Vec<u64>, TextError> {
    Ok(window(inst)?.size)
}

/// Output positions times window taps that land on the (dilated) input, in one spatial
/// dimension: XLA counts no work for taps in the padding.
fn valid_taps(input: u64, output: u64, w: &Window, d: usize) -> u64 {
    let dilated = (input.max(1) - 1) * w.lhs_dilate[d] + 1;
    let mut taps = 0;
    for o in 0..output {
        for k in 0..w.size[d] {
            let pos = (o * w.stride[d] + k * w.rhs_dilate[d]) as i64 - w.pad_lo[d];
            if pos >= 0 && (pos as u64) < dilated && (pos as u64) % w.lhs_dilate[d].max(1) == 0 {
                taps += 1;
            }
        }
    }
    taps
}

fn convolution(inst: &Instruction, lhs: &Instruction, rhs: &Instruction) -> Result<f64, TextError> {
    let labels = inst
        .attr("dim_labels")
        .ok_or_else(|| inst.error("convolution has no dim_labels="))?;
    let bad = || inst.error(format!("dim_labels={labels} does not parse"));
    let (ins, out) = labels.split_once("->").ok_or_else(bad)?;
    let (lhs_l, rhs_l) = ins.split_once('_').ok_or_else(bad)?;
    let pos = |l: &str, c: char| l.find(c).ok_or_else(bad);
    let (lhs_d, rhs_d, out_d) = (lhs.shape.dims(), rhs.shape.dims(), inst.shape.dims());
    let get = |dims: &[u64], i: usize| dims.get(i).copied().ok_or_else(bad);
    let batch = get(out_d, pos(out, 'b')?)?;
    let features_out = get(out_d, pos(out, 'f')?)?;
    let features_in = get(rhs_d, pos(rhs_l, 'i')?)?;
    let w = window(inst)?;
    let mut taps = 1.0;
    for d in 0..w.size.len() {
        let label = char::from_digit(d as u32, 10).ok_or_else(bad)?;
        let input = get(lhs_d, pos(lhs_l, label)?)?;
        let output = get(out_d, pos(out, label)?)?;
        if output.saturating_mul(w.size[d]) > 100_000_000 {
            return Err(inst.error(format!(
                "spatial dimension {d}: {output} outputs x a window of {} is past what this loader counts",
                w.size[d]
            )));
        }
        taps *= valid_taps(input, output, &w, d) as f64;
    }
    Ok(2.0 * batch as f64 * features_out as f64 * features_in as f64 * taps)
}

#[cfg(test)]
mod tests {
    use super::super::text::parse_module;
    use super::*;

    fn entry_flops(body: &str) -> Vec<f64> {
        let text = format!(
            "HloModule m\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\nENTRY main {{\n{body}\n}}\n"
        );
        let m = parse_module(&text).unwrap();
        let c = &m.computations[m.entry];
        c.instructions
            .iter()
            .map(|i| flops(&m, c, i).unwrap())
            .collect()
    }

    #[test]
    fn dots_convolutions_and_reductions_follow_xla() {
        let f = entry_flops(
            "  x = f32[4,8,16]{2,1,0} parameter(0)
  w = f32[4,16,32]{2,1,0} parameter(1)
  d = f32[4,8,32]{2,1,0} dot(x, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  z = f32[] constant(0)
  r = f32[4,32]{1,0} reduce(d, z), dimensions={1}, to_apply=add
  i = f32[1,8,8,3]{3,2,1,0} parameter(2)
  k = f32[3,3,3,16]{3,2,1,0} parameter(3)
  c = f32[1,8,8,16]{3,2,1,0} convolution(i, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = f32[1,8,8,16]{3,2,1,0} tanh(c)",
        );
        assert_eq!(f[2], 2.0 * 4.0 * 8.0 * 32.0 * 16.0);
        assert_eq!(f[4], (4.0 * 8.0 * 32.0 - 4.0 * 32.0) * 1.0);
        // 8 outputs x 3 taps per dimension, less the 2 taps that fall in the padding.
        assert_eq!(f[7], 2.0 * 16.0 * 3.0 * (22.0 * 22.0));
        assert_eq!(f[8], 1024.0);
        assert_eq!(f[0] + f[1] + f[3], 0.0);
    }

    #[test]
    fn an_unknown_opcode_is_an_error_not_a_zero() {
        let text = "HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] frobnicate(x)\n}\n";
        let m = parse_module(text).unwrap();
        let c = &m.computations[m.entry];
        let e = flops(&m, c, &c.instructions[1]).unwrap_err().to_string();
        assert!(
            e.starts_with("line 5 (`%y`): unknown opcode `frobnicate`"),
            "{e}"
        );
    }
}
