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

/// The FLOPs of every instruction of a module, computed once (a fused or applied
/// computation's total is summed once, however many times it is fused or applied, and
/// however deep fusions nest). An instruction whose FLOPs are an error has its error
/// computed again when it is asked for, so only the programs that use it fail.
pub(crate) struct Flops {
    /// Per computation, per instruction; `None` where the FLOPs are an error.
    per_instruction: Vec<Vec<Option<f64>>>,
    /// Per computation, the sum over its instructions when it is fused or applied.
    totals: Vec<Result<f64, TextError>>,
}

impl Flops {
    pub(crate) fn of_module(m: &Module) -> Flops {
        let n = m.computations.len();
        let mut f = Flops {
            per_instruction: vec![Vec::new(); n],
            totals: (0..n).map(|_| Ok(0.0)).collect(),
        };
        // Callees first, so that every total a call site needs is there.
        for &c in &m.callees_first {
            let comp = &m.computations[c];
            let mut row = Vec::with_capacity(comp.instructions.len());
            let mut total: Result<f64, TextError> = Ok(0.0);
            for inst in &comp.instructions {
                let r = flops(m, comp, inst, &f.totals);
                row.push(r.as_ref().ok().copied());
                if let Ok(sum) = &mut total {
                    if matches!(inst.opcode.as_str(), "call" | "while" | "conditional") {
                        total = Err(inst.error(format!(
                            "`{}` inside a fused or applied computation is not supported",
                            inst.opcode
                        )));
                    } else {
                        match r {
                            Ok(x) => *sum += x,
                            Err(e) => total = Err(e),
                        }
                    }
                }
            }
            f.per_instruction[c] = row;
            f.totals[c] = total;
        }
        f
    }

    /// FLOPs of instruction `i` of computation `c`.
    pub(crate) fn of(&self, m: &Module, c: usize, i: usize) -> Result<f64, TextError> {
        match self.per_instruction[c].get(i) {
            Some(Some(x)) => Ok(*x),
            _ => {
                let comp = &m.computations[c];
                flops(m, comp, &comp.instructions[i], &self.totals)
            }
        }
    }
}

/// FLOPs of one instruction of computation `comp`; `totals` has the FLOPs of the
/// computations it calls.
fn flops(
    m: &Module,
    comp: &Computation,
    inst: &Instruction,
    totals: &[Result<f64, TextError>],
) -> Result<f64, TextError> {
    let out = inst.shape.elements() as f64;
    let operand = |k: usize| -> Result<&Instruction, TextError> {
        inst.operands
            .get(k)
            .map(|&i| &comp.instructions[i])
            .ok_or_else(|| inst.error(format!("{} needs operand {k}", inst.opcode)))
    };
    let called = |key: &str| -> Result<f64, TextError> { totals[m.called(inst, key)?].clone() };
    let first_leaf = || {
        inst.shape
            .leaves()
            .first()
            .map(|l| l.elements() as f64)
            .ok_or_else(|| inst.error(format!("{}: an empty tuple is no result", inst.opcode)))
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
            let output = first_leaf()?;
            (input - output).max(0.0) * called("to_apply")?
        }
        "reduce-window" => {
            let window: f64 = window_sizes(inst)?.iter().map(|&w| w as f64).product();
            let output = first_leaf()?;
            output * (window - 1.0).max(0.0) * called("to_apply")?
        }
        "map" => out * called("to_apply")?,
        "scatter" => {
            let last = inst.operands.len().checked_sub(1);
            let updates = operand(last.unwrap_or(0))?.shape.elements() as f64;
            updates * called("to_apply")?
        }
        "select-and-scatter" => {
            let source = operand(1)?.shape.elements() as f64;
            let window: f64 = window_sizes(inst)?.iter().map(|&w| w as f64).product();
            source * (window * called("select")? + called("scatter")?)
        }
        "sort" => {
            // XLA's rule: n ceil(log2 n) comparisons of the first operand's n elements,
            // whatever the comparator does.
            let n = operand(0)?.shape.elements().max(1) as f64;
            n * n.log2().ceil()
        }
        "fusion" => called("calls")?,
        _ => {
            return Err(inst.error(format!(
                "unknown opcode `{op}`: this loader has no FLOP rule for it (docs/workloads.md lists the opcodes it reads)"
            )))
        }
    })
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
/// dimension: XLA counts no work for taps in the padding. Counted in closed form over
/// the shorter of the two ranges, so a wide convolution costs its window, not its
/// outputs times its window.
fn valid_taps(input: u64, output: u64, w: &Window, d: usize) -> u64 {
    let (stride, rhs_dilate) = (w.stride[d] as i128, w.rhs_dilate[d] as i128);
    // Positions past 2^100 are past every tap (outputs x window is at most 10^8 here).
    let dilated = ((input.max(1) - 1) as i128)
        .checked_mul(w.lhs_dilate[d] as i128)
        .map_or(1 << 100, |x| (x + 1).min(1 << 100));
    let every = w.lhs_dilate[d].max(1) as i128;
    let pad = w.pad_lo[d] as i128;
    let (outputs, taps) = (output as i128, w.size[d] as i128);
    let total: i128 = if outputs <= taps {
        (0..outputs)
            .map(|o| landing(taps, rhs_dilate, o * stride - pad, dilated, every))
            .sum()
    } else {
        (0..taps)
            .map(|k| landing(outputs, stride, k * rhs_dilate - pad, dilated, every))
            .sum()
    };
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// How many `j` in `0..n` put `j * step + offset` in `0..end` on a multiple of `every`.
fn landing(n: i128, step: i128, offset: i128, end: i128, every: i128) -> i128 {
    let lands = |pos: i128| (0..end).contains(&pos) && pos.rem_euclid(every) == 0;
    if n <= 0 {
        return 0;
    }
    if step == 0 {
        return if lands(offset) { n } else { 0 };
    }
    // The `j` inside `0..end`: offset + j step >= 0 and < end.
    let lo = div_ceil(-offset, step).max(0);
    let hi = (end - 1 - offset).div_euclid(step).min(n - 1);
    if lo > hi {
        return 0;
    }
    if every == 1 {
        return hi - lo + 1;
    }
    // Of those, the ones with j step = -offset (mod every).
    let g = gcd(step.rem_euclid(every), every);
    let want = (-offset).rem_euclid(every);
    if want % g != 0 {
        return 0;
    }
    let period = every / g;
    let inverse = mod_inverse((step / g).rem_euclid(period), period);
    let first = mul_mod((want / g).rem_euclid(period), inverse, period);
    // j = first (mod period) in lo..=hi.
    (hi - first).div_euclid(period) - (lo - 1 - first).div_euclid(period)
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -((-a).div_euclid(b))
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `a b mod m` for `a, b < m <= 2^64`, without overflow.
fn mul_mod(a: i128, b: i128, m: i128) -> i128 {
    ((a as u128 * b as u128) % m as u128) as i128
}

/// The inverse of `a` modulo `m` (`a` and `m` coprime); 0 when `m` is 1.
fn mod_inverse(a: i128, m: i128) -> i128 {
    let (mut r0, mut r1) = (m, a.rem_euclid(m));
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    t0.rem_euclid(m)
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
        let f = Flops::of_module(&m);
        (0..m.computations[m.entry].instructions.len())
            .map(|i| f.of(&m, m.entry, i).unwrap())
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
        let e = Flops::of_module(&m)
            .of(&m, m.entry, 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("line 5 (`%y`): unknown opcode `frobnicate`"),
            "{e}"
        );
    }

    /// The taps counted one by one, as XLA's cost analysis walks them.
    fn taps_one_by_one(input: u64, output: u64, w: &Window, d: usize) -> u64 {
        let dilated = (input.max(1) - 1) * w.lhs_dilate[d] + 1;
        let mut taps = 0;
        for o in 0..output {
            for k in 0..w.size[d] {
                let pos = (o * w.stride[d] + k * w.rhs_dilate[d]) as i64 - w.pad_lo[d];
                if pos >= 0 && (pos as u64) < dilated && (pos as u64) % w.lhs_dilate[d].max(1) == 0
                {
                    taps += 1;
                }
            }
        }
        taps
    }

    #[test]
    fn taps_in_closed_form_equal_taps_one_by_one() {
        // A seeded walk over small windows: strides, dilations (0 included), padding of
        // either sign, more outputs than taps and fewer.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20_000 {
            let w = Window {
                size: vec![next(9)],
                stride: vec![next(5)],
                pad_lo: vec![next(13) as i64 - 6],
                lhs_dilate: vec![next(5)],
                rhs_dilate: vec![next(5)],
            };
            let (input, output) = (next(20), next(24));
            assert_eq!(
                valid_taps(input, output, &w, 0),
                taps_one_by_one(input, output, &w, 0),
                "input {input} output {output} size {:?} stride {:?} pad {:?} lhs {:?} rhs {:?}",
                w.size,
                w.stride,
                w.pad_lo,
                w.lhs_dilate,
                w.rhs_dilate
            );
        }
    }
}
