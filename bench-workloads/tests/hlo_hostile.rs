//! Hostile HLO text, one generator per class of attack: each ends in one error naming the
//! file and the line, or in the right program, never a panic, a hang, a stack overflow or
//! memory past the op budget (docs/workloads.md, "Bounds").

use bench_workloads::hlo::{parse_program, parse_program_with, Options};

const FILE: &str = "t.hlo.txt";

fn err(text: &str) -> String {
    match parse_program(text, FILE) {
        Ok(p) => panic!("loaded ({} ops), expected an error", p.len()),
        Err(e) => e.to_string(),
    }
}

/// One line, naming the file and a line, containing each of `says`.
fn refused(text: &str, says: &[&str]) -> String {
    let e = err(text);
    assert!(e.starts_with("t.hlo.txt: line "), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    for s in says {
        assert!(e.contains(s), "expected `{s}` in: {e}");
    }
    e
}

/// A module of `computations` (each `name {...}` text) and an entry body.
fn module(computations: &[String], entry: &str) -> String {
    let mut t = String::from("HloModule hostile\n\n");
    for c in computations {
        t.push_str(c);
        t.push_str("\n\n");
    }
    t.push_str("ENTRY main {\n");
    t.push_str(entry);
    t.push_str("\n}\n");
    t
}

fn comp(name: &str, body: &str) -> String {
    format!("{name} {{\n{body}\n}}")
}

const ADD: &str =
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}";

#[test]
fn a_computation_that_reaches_itself_is_refused_naming_it() {
    // A call of the computation it is in.
    let t = module(
        &[comp(
            "a",
            "  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=a",
        )],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=a",
    );
    refused(
        &t,
        &["line 5 (`%c`)", "computation `a` reaches itself", "a -> a"],
    );
    // Mutually: a calls b calls a.
    let t = module(
        &[
            comp(
                "a",
                "  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=b",
            ),
            comp(
                "b",
                "  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=a",
            ),
        ],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=a",
    );
    refused(&t, &["reaches itself", "a -> b -> a"]);
    // A fusion of itself.
    let t = module(
        &[comp(
            "f",
            "  p = f32[4] parameter(0)\n  ROOT c = f32[4] fusion(p), kind=kLoop, calls=f",
        )],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] fusion(x), kind=kLoop, calls=f",
    );
    refused(&t, &["computation `f` reaches itself"]);
    // A reducer that reduces with itself.
    let t = module(
        &[comp(
            "r",
            "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] reduce(a, b), dimensions={}, to_apply=r",
        )],
        "  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT y = f32[] reduce(x, z), dimensions={0}, to_apply=r",
    );
    refused(&t, &["computation `r` reaches itself"]);
    // A while body (and a condition) that runs the loop it is in.
    let lp = |key: &str| {
        let inner = match key {
            "body" => "condition=cond, body=body",
            _ => "condition=body, body=body",
        };
        module(
            &[
                comp(
                    "cond",
                    "  p = (s32[], f32[4]) parameter(0)\n  ROOT t = pred[] constant(true)",
                ),
                comp(
                    "body",
                    &format!("  p = (s32[], f32[4]) parameter(0)\n  ROOT w = (s32[], f32[4]) while(p), {inner}, backend_config={{\"known_trip_count\":{{\"n\":\"2\"}}}}"),
                ),
            ],
            "  i = s32[] constant(0)\n  x = f32[4] parameter(0)\n  t = (s32[], f32[4]) tuple(i, x)\n  ROOT w = (s32[], f32[4]) while(t), condition=cond, body=body, backend_config={\"known_trip_count\":{\"n\":\"2\"}}",
        )
    };
    refused(&lp("body"), &["computation `body` reaches itself"]);
    refused(&lp("condition"), &["computation `body` reaches itself"]);
}

/// `levels` computations, each calling the next twice; the last negates.
fn doubling_calls(levels: usize) -> String {
    let mut comps = Vec::new();
    for k in 0..levels {
        comps.push(comp(
            &format!("l{k}"),
            &format!(
                "  p = f32[4] parameter(0)\n  a = f32[4] call(p), to_apply=l{n}\n  ROOT b = f32[4] call(a), to_apply=l{n}",
                n = k + 1
            ),
        ));
    }
    comps.push(comp(
        &format!("l{levels}"),
        "  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)",
    ));
    module(
        &comps,
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=l0",
    )
}

#[test]
fn calls_that_would_inline_past_the_op_budget_are_refused_with_the_count() {
    let t = doubling_calls(48);
    assert!(t.len() < 8 << 10, "{} bytes", t.len());
    // Each level: its parameter and two calls, each call its callee's instructions again.
    let mut size: u128 = 2;
    for _ in 0..48 {
        size = 3 + 2 * size;
    }
    let total = 2 + size; // the entry's parameter and call
    let e = refused(
        &t,
        &[
            &format!("would make {total} instructions"),
            "MALLOCMUZERO_HLO_MAX_OPS",
        ],
    );
    assert!(e.contains("(`%y`)"), "{e}");
    // Small enough, the same shape loads: 2^10 negations.
    let p = parse_program(&doubling_calls(10), FILE).unwrap();
    assert_eq!(p.len(), 1 << 10);
}

#[test]
fn the_op_budget_is_stated_and_can_be_raised_or_lowered() {
    // 1024 ops; 5119 instructions inlined (2 + l0, l_k = 3 + 2 l_k+1, l10 = 2).
    let t = doubling_calls(10);
    let with = |max_ops| Options {
        max_ops: Some(max_ops),
        ..Options::default()
    };
    let e = parse_program_with(&t, FILE, &with(5118))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("would make 5119 instructions, past the budget of 5118"),
        "{e}"
    );
    assert_eq!(
        parse_program_with(&t, FILE, &with(5119)).unwrap().len(),
        1024
    );
    // Unset, the budget is the stated default.
    if std::env::var_os(bench_workloads::hlo::MAX_OPS_VARIABLE).is_none() {
        let e = err(&doubling_calls(48));
        let default = bench_workloads::hlo::DEFAULT_MAX_OPS;
        assert!(e.contains(&format!("past the budget of {default} ")), "{e}");
    }
}

/// `depth` while loops nested, `trips` each, the innermost body making no op.
fn nested_empty_loops(depth: usize, trips: u64) -> String {
    let state = "(s32[], f32[4])";
    let cfg = format!("backend_config={{\"known_trip_count\":{{\"n\":\"{trips}\"}}}}");
    let mut comps = vec![comp(
        "cond",
        &format!("  p = {state} parameter(0)\n  ROOT t = pred[] constant(true)"),
    )];
    for k in 0..depth {
        comps.push(comp(
            &format!("body{k}"),
            &format!(
                "  p = {state} parameter(0)\n  ROOT w = {state} while(p), condition=cond, body=body{n}, {cfg}",
                n = k + 1
            ),
        ));
    }
    comps.push(comp(
        &format!("body{depth}"),
        &format!("  ROOT p = {state} parameter(0)"),
    ));
    module(
        &comps,
        &format!("  i = s32[] constant(0)\n  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  t = {state} tuple(i, n)\n  w = {state} while(t), condition=cond, body=body0, {cfg}\n  ROOT g = f32[4] get-tuple-element(w), index=1"),
    )
}

#[test]
fn nested_loops_whose_bodies_make_no_op_stop_at_the_budget() {
    refused(
        &nested_empty_loops(5, 1_000_000),
        &["(`%w`)", "past the budget of"],
    );
    refused(&nested_empty_loops(40, 1 << 40), &["at least"]);
    // A handful of trips loads: the one negation is the program.
    assert_eq!(
        parse_program(&nested_empty_loops(3, 10), FILE)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_loop_whose_count_is_known_only_while_lowering_stops_at_the_budget() {
    // The counted loop starts from the caller's constant: its trip count (10^12) is known
    // only when the call is inlined.
    let state = "(s32[], f32[4])";
    let t = module(
        &[
            comp(
                "cond",
                &format!("  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant(1000000000000)\n  ROOT lt = pred[] compare(i, n), direction=LT"),
            ),
            comp(
                "body",
                &format!("  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  ROOT t = {state} tuple(j, x)"),
            ),
            comp(
                "run",
                &format!("  p = {state} parameter(0)\n  ROOT w = {state} while(p), condition=cond, body=body"),
            ),
        ],
        &format!("  z = s32[] constant(0)\n  x = f32[4] parameter(0)\n  t = {state} tuple(z, x)\n  c = {state} call(t), to_apply=run\n  ROOT g = f32[4] get-tuple-element(c), index=1"),
    );
    refused(&t, &["(`%w`)", "past the budget of"]);
}

#[test]
fn an_instruction_that_names_itself_is_refused() {
    let t = module(
        &[],
        "  x = f32[4] parameter(0)\n  ROOT r = f32[4] add(r, x)",
    );
    refused(&t, &["line 5 (`%r`)", "names itself"]);
    // In a fused computation, whose root the in-place check follows through bitcasts.
    let t = module(
        &[comp(
            "f",
            "  p = f32[4] parameter(0)\n  ROOT r = f32[4] bitcast(r)",
        )],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] fusion(x), kind=kLoop, calls=f",
    );
    refused(&t, &["line 5 (`%r`)", "names itself"]);
    // A use before the line that defines it (which would let two bitcasts name each other).
    let t = module(
        &[comp(
            "f",
            "  p = f32[4] parameter(0)\n  a = f32[4] bitcast(b)\n  ROOT b = f32[4] bitcast(a)",
        )],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] fusion(x), kind=kLoop, calls=f",
    );
    refused(
        &t,
        &[
            "line 5 (`%a`)",
            "operand `%b` is used before the line that defines it",
        ],
    );
}

#[test]
fn nested_fusions_are_counted_without_visiting_every_path() {
    // 60 levels, each fusing the next twice: 2^60 negations of a scalar.
    let mut comps = Vec::new();
    for k in 0..60 {
        comps.push(comp(
            &format!("f{k}"),
            &format!(
                "  p = f32[] parameter(0)\n  a = f32[] fusion(p), kind=kLoop, calls=f{n}\n  ROOT b = f32[] fusion(a), kind=kLoop, calls=f{n}",
                n = k + 1
            ),
        ));
    }
    comps.push(comp(
        "f60",
        "  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)",
    ));
    let t = module(
        &comps,
        "  x = f32[] parameter(0)\n  ROOT y = f32[] fusion(x), kind=kLoop, calls=f0",
    );
    let p = parse_program(&t, FILE).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p.op(0).flops, 2f64.powi(60));
}

#[test]
fn a_shape_past_u64_bytes_is_refused_naming_the_instruction() {
    for (shape, says) in [
        // 2^64 bytes: wrapped to 0 (no buffer at all).
        ("f32[4611686018427387904]", "bytes"),
        // 2^64 + 4 bytes: wrapped to a 4-byte buffer.
        ("f32[4611686018427387905]", "bytes"),
        ("f32[4294967296,4294967296]", "elements"),
        ("token[4294967296,4294967296]", "elements"),
        (
            "(f32[2305843009213693952], f32[2305843009213693952])",
            "bytes",
        ),
    ] {
        let t = module(
            &[],
            &format!("  x = {shape} parameter(0)\n  ROOT y = f32[4] negate(x)"),
        );
        refused(&t, &["line 4 (`%x`)", says, "2^64"]);
    }
    // Fits u64 but not a program: one error naming the instruction, not the IR's own.
    let t = module(
        &[],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[1125899906842624,4] broadcast(x), dimensions={1}",
    );
    refused(&t, &["line 5 (`%y`)", "bytes"]);
}

#[test]
fn malformed_instructions_get_one_line_not_a_panic() {
    let state = "(s32[], f32[4])";
    let counted = |cond_root: &str| {
        module(
            &[
                comp(
                    "cond",
                    &format!("  p = {state} parameter(0)\n  n = s32[] constant(3)\n  ROOT lt = pred[] {cond_root}"),
                ),
                comp(
                    "body",
                    &format!("  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  ROOT t = {state} tuple(j, x)"),
                ),
            ],
            &format!("  z = s32[] constant(0)\n  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  t = {state} tuple(z, n)\n  ROOT w = {state} while(t), condition=cond, body=body"),
        )
    };
    // The counted loop loads; a `compare()` with no operands in its condition is refused.
    assert_eq!(
        parse_program(
            &counted("compare(i, n), direction=LT").replace(
                "  n = s32[] constant(3)\n",
                "  n = s32[] constant(3)\n  i = s32[] get-tuple-element(p), index=0\n"
            ),
            FILE
        )
        .unwrap()
        .len(),
        1 + 3
    );
    refused(
        &counted("compare(), direction=LT"),
        &[
            "line 6 (`%lt`)",
            "`compare` takes 2 operand(s); this one has 0",
        ],
    );
    for (root, says) in [
        (
            "f32[4] dynamic-update-slice()",
            "takes at least 2 operand(s)",
        ),
        ("f32[4] bitcast()", "takes 1 operand(s)"),
        ("f32[4] scatter(p, p), to_apply=add", "an odd number"),
        (
            "() reduce(p, p), dimensions={0}, to_apply=add",
            "an empty tuple",
        ),
    ] {
        let t = module(
            &[
                ADD.to_string(),
                comp("f", &format!("  p = f32[4] parameter(0)\n  ROOT r = {root}")),
            ],
            "  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  ROOT y = f32[4] fusion(n), kind=kLoop, calls=f",
        );
        refused(&t, &[says]);
    }
    for (entry, says) in [
        (
            "  x = f32[4] parameter(18446744073709551615)\n  ROOT y = f32[4] negate(x)",
            "parameter(18446744073709551615)",
        ),
        (
            "  x = f32[4] parameter(99999999999)\n  ROOT y = f32[4] negate(x)",
            "parameter(99999999999)",
        ),
        (
            "  x = f32[4] parameter(-1)\n  ROOT y = f32[4] negate(x)",
            "not a parameter number",
        ),
        (
            "  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = () reduce(x, z), dimensions={0}, to_apply=add",
            "(`%r`): reduce: an empty tuple is no result",
        ),
        (
            "  x = f32[4] parameter(0)\n  ROOT r = f32[4] reduce-window(), to_apply=add",
            "(`%r`): `reduce-window` takes at least 2",
        ),
        (
            "  x = f32[4] parameter(0)\n  ROOT r = f32[4] scatter(), to_apply=add",
            "(`%r`): `scatter` takes at least 3",
        ),
        (
            "  x = f32[4] parameter(0)\n  ROOT r = f32[4] get-tuple-element(), index=0",
            "(`%r`): `get-tuple-element` takes 1",
        ),
        (
            "  x = f32[4] parameter(0)\n  ROOT r = f32[4] get-tuple-element(x), index=0",
            "(`%r`): index=0: the operand has no element 0",
        ),
    ] {
        let t = module(&[ADD.to_string()], entry);
        refused(&t, &[says]);
    }
}

#[test]
fn duplicate_computations_and_parameter_numbers_are_refused() {
    let neg = comp(
        "f",
        "  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)",
    );
    let t = module(
        &[neg.clone(), neg.replace("negate", "exponential")],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=f",
    );
    refused(
        &t,
        &[
            "line 8",
            "a second computation named `f` (the first at line 3)",
        ],
    );
    let t = module(
        &[],
        "  x = f32[4] parameter(0)\n  w = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, w)",
    );
    refused(
        &t,
        &[
            "line 5 (`%w`)",
            "a second parameter(0) (the first at line 4)",
        ],
    );
    let t = module(
        &[],
        "  x = f32[4] parameter(0)\n  w = f32[4] parameter(2)\n  ROOT y = f32[4] add(x, w)",
    );
    refused(&t, &["line 5 (`%w`)", "parameter(2)", "2 parameter(s)"]);
}

/// `n` one-dimensional convolutions in a chain, `width` outputs each with a window of
/// `window` taps, padded to keep the width.
fn convolutions(n: usize, width: u64, window: u64) -> String {
    let pad = (window - 1) / 2;
    let shape = format!("f32[1,{width},1]");
    let mut entry = format!("  c0 = {shape} parameter(0)\n  w = f32[{window},1,1] parameter(1)\n");
    for k in 1..=n {
        entry.push_str(&format!(
            "  c{k} = {shape} convolution(c{}, w), window={{size={window} pad={pad}_{pad}}}, dim_labels=b0f_0io->b0f\n",
            k - 1
        ));
    }
    entry.push_str(&format!("  ROOT r = {shape} negate(c{n})"));
    module(&[], &entry)
}

#[test]
fn thousands_of_large_convolutions_load_with_xlas_counts() {
    let (width, window) = (10_000, 9_999);
    let t = convolutions(3_000, width, window);
    assert!(t.len() > 300_000, "{} bytes", t.len());
    let p = parse_program(&t, FILE).unwrap();
    assert_eq!(p.len(), 3_001);
    // Taps that land on the input: all width x window, less those in the padding.
    let h = (window - 1) / 2;
    let taps = width * window - h * (h + 1);
    assert_eq!(p.op(0).flops, 2.0 * taps as f64);
}

#[test]
fn tuples_nested_a_hundred_thousand_deep_load_in_linear_memory() {
    let n = 100_000;
    let mut entry = String::from(
        "  x = f32[4] parameter(0)\n  e = f32[4] exponential(x)\n  t0 = (f32[4]) tuple(e)\n",
    );
    for k in 1..n {
        entry.push_str(&format!("  t{k} = (f32[4]) tuple(t{})\n", k - 1));
    }
    entry.push_str(&format!("  ROOT r = (f32[4]) tuple(t{})", n - 1));
    let p = parse_program(&module(&[], &entry), FILE).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p.buffers().len(), 2);
}

#[test]
fn a_tuple_of_exponentially_many_elements_stops_at_the_budget() {
    let mut entry = String::from(
        "  x = f32[4] parameter(0)\n  e = f32[4] exponential(x)\n  t0 = (f32[4]) tuple(e)\n",
    );
    for k in 1..70 {
        entry.push_str(&format!("  t{k} = (f32[4]) tuple(t{p}, t{p})\n", p = k - 1));
    }
    entry.push_str("  ROOT r = f32[4] custom-call(t69), custom_call_target=\"x\"");
    refused(&module(&[], &entry), &["(`%r`)", "past the budget of"]);
}

#[test]
fn deep_nesting_is_refused_or_loaded_without_recursion() {
    // A tuple shape nested 100,000 deep.
    let shape = format!("{}f32[]{}", "(".repeat(100_000), ")".repeat(100_000));
    let t = module(
        &[],
        &format!("  x = {shape} parameter(0)\n  ROOT y = f32[] negate(x)"),
    );
    refused(&t, &["line 4 (`%x`)", "nested"]);
    // 20,000 computations each calling the next: loads, one negation deep down.
    let n = 20_000;
    let mut comps = Vec::new();
    for k in 0..n {
        comps.push(comp(
            &format!("c{k}"),
            &format!(
                "  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=c{}",
                k + 1
            ),
        ));
    }
    comps.push(comp(
        &format!("c{n}"),
        "  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)",
    ));
    let chain = module(
        &comps,
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=c0",
    );
    // The op's name is its path of 20,000 calls: past the budget's allowance for names.
    refused(&chain, &["past the budget of"]);
    let p = parse_program_with(
        &chain,
        FILE,
        &Options {
            max_ops: Some(100_000_000),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(p.len(), 1);
    // The same chain of fusions: counted, not recursed into.
    let fused = chain
        .replace("call(p), to_apply=", "fusion(p), kind=kLoop, calls=")
        .replace("call(x), to_apply=", "fusion(x), kind=kLoop, calls=");
    let p = parse_program(&fused, FILE).unwrap();
    assert_eq!(p.op(0).flops, 4.0);
    // A chain of 20,000 mutually calling computations closed into a cycle.
    let cycle = chain.replace(
        &format!("c{n} {{\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)"),
        &format!("c{n} {{\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] call(p), to_apply=c0"),
    );
    let e = refused(&cycle, &["reaches itself"]);
    assert!(e.len() < 1000, "{} bytes", e.len());
}

#[test]
fn many_buffers_of_one_name_are_named_in_linear_time() {
    let n = 20_000;
    let mut entry = String::new();
    for k in 0..n {
        entry.push_str(&format!(
            "  p{k} = f32[4] parameter({k}), metadata={{op_name=\"x\"}}\n"
        ));
    }
    let operands: Vec<String> = (0..n).map(|k| format!("p{k}")).collect();
    entry.push_str(&format!(
        "  ROOT r = f32[4] custom-call({}), custom_call_target=\"x\"",
        operands.join(", ")
    ));
    let p = parse_program(&module(&[], &entry), FILE).unwrap();
    assert_eq!(p.op(0).reads.len(), n);
    assert_eq!(p.buffer(p.op(0).reads[n - 1]).name, format!("x#{n}"));
}

/// A loop of `trips` over a body holding `inner` (an instruction of `x`, the state's array).
fn loop_over(inner: &str, trips: u64, extra: &[String]) -> String {
    let state = "(s32[], f32[4])";
    let mut comps = vec![
        comp(
            "cond",
            &format!("  p = {state} parameter(0)\n  ROOT t = pred[] constant(true)"),
        ),
        comp(
            "body",
            &format!("  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n{inner}\n  ROOT t = {state} tuple(i, y)"),
        ),
    ];
    comps.extend(extra.iter().cloned());
    module(
        &comps,
        &format!("  z = s32[] constant(0)\n  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  t = {state} tuple(z, n)\n  w = {state} while(t), condition=cond, body=body, backend_config={{\"known_trip_count\":{{\"n\":\"{trips}\"}}}}\n  ROOT g = f32[4] get-tuple-element(w), index=1"),
    )
}

#[test]
fn an_instruction_a_loop_repeats_is_read_once_and_its_operands_count() {
    let junk: Vec<String> = (0..20_000).map(|k| format!("junk{k}=1")).collect();
    let junk = junk.join(", ");
    // Attributes before the ones read (index=, calls=): read once, not once a trip.
    let inner = format!(
        "  x = f32[4] get-tuple-element(p), {junk}, index=1\n  y = f32[4] fusion(x), kind=kLoop, {junk}, calls=f"
    );
    let f = comp(
        "f",
        "  a = f32[4] parameter(0)\n  ROOT e = f32[4] exponential(a)",
    );
    let t = loop_over(&inner, 100_000, &[f]);
    let p = parse_program(&t, FILE).unwrap();
    assert_eq!(p.len(), 1 + 100_000);
    // A tuple of 20,000 operands built on every trip: counted, so the budget stops it.
    let operands = vec!["x"; 20_000].join(", ");
    let inner = format!(
        "  x = f32[4] get-tuple-element(p), index=1\n  big = (f32[4]) tuple({operands})\n  y = f32[4] negate(x)"
    );
    refused(
        &loop_over(&inner, 100_000, &[]),
        &["(`%big`)", "past the budget of"],
    );
}

/// Load times of the large cases, printed (not asserted: the tests above hold the
/// behaviour): `cargo test --release -p bench-workloads --test hlo_hostile -- --ignored
/// --nocapture load_times`. docs/workloads.md ("Bounds") gives the figures.
#[test]
#[ignore]
fn load_times() {
    let time = |what: &str, text: &str, max_ops: Option<u64>| {
        let options = Options {
            max_ops,
            ..Options::default()
        };
        let t = std::time::Instant::now();
        let outcome = match parse_program_with(text, FILE, &options) {
            Ok(p) => format!("{} ops", p.len()),
            Err(e) => format!("refused: {}", &e.to_string()[..60]),
        };
        println!(
            "{what}: {} KB, {:.2?}, {outcome}",
            text.len() >> 10,
            t.elapsed()
        );
    };
    time(
        "3,000 convolutions (10,000 outputs x 9,999 taps)",
        &convolutions(3_000, 10_000, 9_999),
        None,
    );
    let mut nested = String::from(
        "  x = f32[4] parameter(0)\n  e = f32[4] exponential(x)\n  t0 = (f32[4]) tuple(e)\n",
    );
    for k in 1..100_000 {
        nested.push_str(&format!("  t{k} = (f32[4]) tuple(t{})\n", k - 1));
    }
    nested.push_str("  ROOT r = (f32[4]) tuple(t99999)");
    time("100,000 nested tuples", &module(&[], &nested), None);
    time("48 levels of doubling calls", &doubling_calls(48), None);
    let chain: Vec<String> = (0..36)
        .map(|k| {
            format!(
                "  y{k} = f32[4] exponential({})",
                if k == 0 {
                    "x".into()
                } else {
                    format!("y{}", k - 1)
                }
            )
        })
        .collect();
    let body = format!(
        "  x = f32[4] get-tuple-element(p), index=1\n{}\n  y = f32[4] negate(y35)",
        chain.join("\n")
    );
    // 41 instructions a trip: 97,000 trips are just inside the default budget.
    time(
        "a loop of 97,000 trips of 41 instructions (the default budget)",
        &loop_over(&body, 97_000, &[]),
        None,
    );
}
