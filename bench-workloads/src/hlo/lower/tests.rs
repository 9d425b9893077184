//! The in-place updates settled in two passes equal the one-conflict-a-pass fixpoint.
use super::super::text::parse_module;
use super::*;

/// A seeded program of in-place updates (plain, fused, scattered, in a loop) of values
/// read, updated again and returned in random order.
fn updates(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let st = "(s32[], f32[8])";
    let mut text = format!(
        "HloModule u\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\n\
         fdus {{\n  p0 = f32[8] parameter(0)\n  p1 = f32[1] parameter(1)\n  p2 = s32[] parameter(2)\n  b = f32[8] bitcast(p0)\n  ROOT d = f32[8] dynamic-update-slice(b, p1, p2)\n}}\n\n\
         body {{\n  p = {st} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  x = f32[8] get-tuple-element(p), index=1\n  u = f32[1] constant({{1}})\n  d = f32[8] dynamic-update-slice(x, u, i)\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  ROOT t = {st} tuple(j, d)\n}}\n\n\
         cond {{\n  p = {st} parameter(0)\n  ROOT c = pred[] constant(true)\n}}\n\n\
         ENTRY main {{\n  x = f32[8] parameter(0)\n  u = f32[1] parameter(1)\n  i = s32[] parameter(2)\n  z = s32[] constant(0)\n  v0 = f32[8] negate(x)\n"
    );
    let mut pool = vec!["x".to_string(), "v0".to_string()];
    for n in 1..=1 + next(18) {
        let t = pool[next(pool.len() as u64) as usize].clone();
        let other = pool[next(pool.len() as u64) as usize].clone();
        let line = match next(10) {
            0..=3 => format!("  v{n} = f32[8] dynamic-update-slice({t}, u, i)\n"),
            4 => format!("  v{n} = f32[8] fusion({t}, u, i), kind=kLoop, calls=fdus\n"),
            5 | 6 => format!("  v{n} = f32[8] add({t}, {other})\n"),
            7 => format!("  v{n} = f32[8] scatter({t}, i, u), to_apply=add\n"),
            8 => format!(
                "  t{n} = {st} tuple(z, {t})\n  w{n} = {st} while(t{n}), condition=cond, body=body, backend_config={{\"known_trip_count\":{{\"n\":\"{}\"}}}}\n  v{n} = f32[8] get-tuple-element(w{n}), index=1\n",
                next(4)
            ),
            _ => format!("  v{n} = f32[8] negate({t})\n"),
        };
        text.push_str(&line);
        pool.push(format!("v{n}"));
    }
    let a = &pool[next(pool.len() as u64) as usize];
    let b = &pool[next(pool.len() as u64) as usize];
    text.push_str(&format!(
        "  ROOT r = (f32[8], f32[8]) tuple({a}, {b})\n}}\n"
    ));
    text
}

#[test]
fn updates_settle_at_once_as_they_do_one_conflict_a_pass() {
    let mut chains = 0;
    for seed in 0..400 {
        let m = parse_module(&updates(seed)).unwrap();
        let (fast, fast_passes) = lower_settling(&m, &[], 1_000_000, Settle::AtOnce).unwrap();
        let (slow, slow_passes) =
            lower_settling(&m, &[], 1_000_000, Settle::ConflictsOnly).unwrap();
        assert_eq!(fast.ops, slow.ops, "seed {seed}");
        assert_eq!(fast.buffers, slow.buffers, "seed {seed}");
        assert_eq!(fast.in_place, slow.in_place, "seed {seed}");
        assert!(fast_passes <= 2, "seed {seed}: {fast_passes} passes");
        chains += usize::from(slow_passes > 2);
    }
    // Chains of updates one pass at a time: the case the two must agree on.
    assert!(chains > 20, "{chains} of 400 seeds needed a third pass");
}

#[test]
fn a_chain_of_updates_of_one_value_settles() {
    // 100 updates of `a`, then a read of `a`: every update copies. One conflict a pass
    // would need 100 passes.
    let mut t = String::from("HloModule c\n\nENTRY main {\n  x = f32[8] parameter(0)\n  u = f32[1] parameter(1)\n  i = s32[] parameter(2)\n  a = f32[8] negate(x)\n");
    for k in 0..100 {
        t.push_str(&format!("  d{k} = f32[8] dynamic-update-slice(a, u, i)\n"));
    }
    t.push_str("  ROOT r = f32[8] add(a, d99)\n}\n");
    let m = parse_module(&t).unwrap();
    let l = lower(&m, &[], 1_000_000).unwrap();
    assert_eq!(l.ops.len(), 102);
    assert_eq!(l.in_place, 0);
    // Without the read of `a` after them, the last update alone is in place.
    let m = parse_module(&t.replace("add(a, d99)", "negate(d99)")).unwrap();
    assert_eq!(lower(&m, &[], 1_000_000).unwrap().in_place, 1);
}
