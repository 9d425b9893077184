//! The HLO loader's mapping onto the IR: aliases, in-place updates, loops, calls, outputs,
//! and the errors bad text gets.

use accel_sim::{BufferKind, Program};
use bench_workloads::hlo::parse_program;

fn load(text: &str) -> Program {
    parse_program(text, "t.hlo.txt").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    parse_program(text, "t.hlo.txt").unwrap_err().to_string()
}

fn buffer(p: &Program, name: &str) -> usize {
    p.buffers()
        .iter()
        .position(|b| b.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"))
}

const ALIASES: &str = "HloModule aliases, is_scheduled=true

ENTRY %main (x: f32[4,8], w: f32[8,8]) -> (f32[4,8], f32[32]) {
  %x = f32[4,8]{1,0} parameter(0), metadata={op_name=\"x\"}
  %w = f32[8,8]{1,0} parameter(1), metadata={op_name=\"params['w']\"}
  %unused = f32[4,8]{1,0} parameter(2)
  %d = f32[4,8]{1,0} dot(f32[4,8]{1,0} %x, f32[8,8]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = (f32[4,8]{1,0}, f32[8,8]{1,0}) tuple(%d, %w)
  %g = f32[4,8]{1,0} get-tuple-element(%t), index=0
  %flat = f32[32]{0} bitcast(%g)
  %e = f32[32]{0} exponential(%flat)
  ROOT %out = (f32[4,8]{1,0}, f32[32]{0}, f32[8,8]{1,0}) tuple(%g, %e, %w)
}
";

#[test]
fn tuples_get_tuple_element_and_bitcasts_alias_their_operand() {
    let p = load(ALIASES);
    // Only the dot and the exponential are ops: the rest name buffers already there.
    let kinds: Vec<&str> = p.ops().iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["dot", "exponential"]);
    let d = buffer(&p, "d");
    assert_eq!(p.op(1).reads, vec![d], "exponential reads the dot's buffer");
    assert_eq!(p.op(0).flops, 2.0 * 4.0 * 8.0 * 8.0);
    assert_eq!(p.buffer(d).kind, BufferKind::Output);
    assert_eq!(p.buffer(buffer(&p, "e")).kind, BufferKind::Output);
    // The parameter returned as it is stays an entry buffer; the unused one is dropped.
    assert_eq!(p.buffer(buffer(&p, "params['w']")).kind, BufferKind::Input);
    assert_eq!(p.buffers().len(), 4);
    assert!(p.buffers().iter().all(|b| b.name != "unused"));
}

const IN_PLACE: &str = "HloModule in_place

ENTRY main {
  x = f32[8,4]{1,0} parameter(0)
  u = f32[1,4]{1,0} parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  acc = f32[8,4]{1,0} negate(x)
  acc2 = f32[8,4]{1,0} dynamic-update-slice(acc, u, i, zero)
  acc3 = f32[8,4]{1,0} dynamic-update-slice(acc2, u, zero, zero)
  ROOT r = f32[8,4]{1,0} add(acc3, x)
}
";

#[test]
fn an_in_place_update_shares_its_buffer_unless_the_old_contents_are_read_later() {
    let p = load(IN_PLACE);
    assert_eq!(p.len(), 4);
    let acc = buffer(&p, "acc");
    // Both updates write into `acc`: they read the update and indices and write nothing.
    for t in [1, 2] {
        assert!(p.op(t).writes.is_empty(), "op {t}");
        assert!(!p.op(t).reads.contains(&acc));
    }
    assert_eq!(p.op(3).reads[0], acc, "the add reads the updated buffer");
    // Reading `acc` after the first update forces that update to copy.
    let p = load(&IN_PLACE.replace("add(acc3, x)", "add(acc3, acc)"));
    let acc2 = buffer(&p, "acc2");
    assert_eq!(p.op(1).writes, vec![acc2]);
    assert!(
        p.op(2).writes.is_empty(),
        "the second update is still in place"
    );
    assert_eq!(p.op(3).reads, vec![acc2, buffer(&p, "acc")]);
    // An update of a parameter copies (the caller's buffer is not the program's to write).
    let p = load(&IN_PLACE.replace("dynamic-update-slice(acc, u", "dynamic-update-slice(x, u"));
    assert_eq!(p.op(1).writes, vec![buffer(&p, "acc2")]);
}

const LOOP: &str = "HloModule loop, is_scheduled=true

%body (p: (s32[], f32[16,16])) -> (s32[], f32[16,16]) {
  %p = (s32[], f32[16,16]{1,0}) parameter(0)
  %one = s32[] constant(1)
  %x = f32[16,16]{1,0} get-tuple-element(%p), index=1
  %i = s32[] get-tuple-element(%p), index=0
  %y = f32[16,16]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %j = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[16,16]{1,0}) tuple(%j, %y)
}

%cond (p: (s32[], f32[16,16])) -> pred[] {
  %p = (s32[], f32[16,16]{1,0}) parameter(0)
  %n = s32[] constant(3)
  %i = s32[] get-tuple-element(%p), index=0
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%twice (a: f32[16,16]) -> f32[16,16] {
  %a = f32[16,16]{1,0} parameter(0)
  ROOT %s = f32[16,16]{1,0} add(%a, %a)
}

ENTRY %main (x: f32[16,16]) -> f32[16,16] {
  %x = f32[16,16]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[16,16]{1,0}) tuple(%zero, %x)
  %w = (s32[], f32[16,16]{1,0}) while(%init), condition=%cond, body=%body, backend_config={\"known_trip_count\":{\"n\":\"3\"}}
  %r = f32[16,16]{1,0} get-tuple-element(%w), index=1
  ROOT %c = f32[16,16]{1,0} call(%r), to_apply=%twice
}
";

#[test]
fn a_while_with_a_known_trip_count_unrolls_and_a_call_inlines() {
    let p = load(LOOP);
    let names: Vec<&str> = p.ops().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["w/0/y", "w/0/j", "w/1/y", "w/1/j", "w/2/y", "w/2/j", "c/s"]
    );
    // The loop-carried value flows from one iteration's dot into the next.
    assert_eq!(p.op(2).reads, vec![buffer(&p, "w/0/y")]);
    assert_eq!(p.op(6).reads, vec![buffer(&p, "w/2/y")]);
    assert_eq!(p.buffer(buffer(&p, "c/s")).kind, BufferKind::Output);
    assert_eq!(
        p.total_flops(),
        3.0 * (2.0 * 16.0 * 16.0 * 16.0 + 1.0) + 256.0
    );
    // Before optimization there is no backend config: the counted loop is read off the
    // condition and the body.
    let lowered = LOOP
        .replace(", is_scheduled=true", "")
        .replace(", backend_config={\"known_trip_count\":{\"n\":\"3\"}}", "");
    assert_eq!(load(&lowered).len(), 7);
    let e = err(&lowered.replace("direction=LT", "direction=NE"));
    assert!(
        e.starts_with("t.hlo.txt: line 29 (`%w`): `while` without a known trip count"),
        "{e}"
    );
}

#[test]
fn conditionals_are_refused_naming_the_instruction() {
    let text = "HloModule c\n\nb0 {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a)\n}\n\nENTRY main {\n  p = pred[] parameter(0)\n  x = f32[2] parameter(1)\n  ROOT c = f32[2] conditional(p, x, x), true_computation=b0, false_computation=b0\n}\n";
    let e = err(text);
    assert!(
        e.starts_with("t.hlo.txt: line 11 (`%c`): `conditional` is not supported"),
        "{e}"
    );
}

/// The four kinds of bad text the issue names, each one error naming the line.
#[test]
fn bad_text_gets_one_error_naming_the_line() {
    let truncated = &ALIASES[..ALIASES.find("  %e =").unwrap()];
    let e = err(truncated);
    assert!(
        e.starts_with("t.hlo.txt: line 10: truncated text: computation `main` opened at line 3"),
        "{e}"
    );
    let e = err(&ALIASES.replace("exponential(%flat)", "frobnicate(%flat)"));
    assert!(
        e.starts_with("t.hlo.txt: line 11 (`%e`): unknown opcode `frobnicate`"),
        "{e}"
    );
    let e = err(&ALIASES.replace("%d = f32[4,8]{1,0}", "%d = f32[4;8]{1,0}"));
    assert!(
        e.starts_with("t.hlo.txt: line 7 (`%d`): shape `f32[4;8]"),
        "{e}"
    );
    let e = err(&ALIASES.replace("bitcast(%g)", "bitcast(%h)"));
    assert!(e.starts_with("t.hlo.txt: line 10 (`%flat`): operand `%h` is not an instruction of computation `main`"), "{e}");
}
