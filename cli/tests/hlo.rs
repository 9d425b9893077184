//! HLO text from the command line: a JAX program evaluates, bad text exits 2 with one
//! line naming the file and the line.

mod common;
use common::run;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bench-workloads/tests/data/hlo")
        .join(name)
}

#[test]
fn an_hlo_file_evaluates_and_bad_hlo_exits_2_naming_the_line() {
    let good = data("mlp-train.hlo.txt");
    let (code, out, err) = run(&[
        "evaluate",
        "--workload",
        good.to_str().unwrap(),
        "--fast-capacity",
        "1MiB",
        "--solver",
        "xla",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["results"][0]["valid"], true);

    let dir = std::env::temp_dir().join(format!("mmz-hlo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let bad = dir.join("bad.hlo.txt");
    let entry = text.find("ENTRY").unwrap();
    for (what, body, says) in [
        (
            "truncated",
            text[..entry + 400].to_string(),
            "truncated text",
        ),
        (
            "unknown opcode",
            text.replacen(" dot(", " frobnicate(", 1),
            "unknown opcode `frobnicate`",
        ),
    ] {
        std::fs::write(&bad, body).unwrap();
        let (code, _, err) = run(&["evaluate", "--workload", bad.to_str().unwrap()]);
        assert_eq!(code, 2, "{what}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        assert!(err.contains("bad.hlo.txt: line "), "{what}: {err}");
        assert!(err.contains(says), "{what}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A module of computations `comps` and an entry body, in HLO text.
fn module(comps: &[String], entry: &str) -> String {
    let mut t = String::from("HloModule hostile\n\n");
    for c in comps {
        t.push_str(c);
        t.push_str("\n\n");
    }
    format!("{t}ENTRY main {{\n{entry}\n}}\n")
}

/// Status 2 and one line naming the file, a line of it, and `says`.
fn refused(args: &[&str], env: Option<(&str, &str)>, file: &str, says: &str) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mallocmuzero"));
    cmd.args(args);
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{says}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{says}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(&format!("{file}: ")), "{says}: {err}");
    assert!(err.contains(says), "expected `{says}` in {err}");
}

#[test]
fn hostile_hlo_exits_2_with_one_line_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("mmz-hlo-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hostile.hlo.txt");
    let path = file.to_str().unwrap();
    let args = ["evaluate", "--workload", path, "--solver", "xla"];
    // 48 levels each calling the next twice: 2^48 negations (today: 4 GB, then abort).
    let mut comps = Vec::new();
    for k in 0..48 {
        comps.push(format!(
            "l{k} {{\n  p = f32[4] parameter(0)\n  a = f32[4] call(p), to_apply=l{n}\n  ROOT b = f32[4] call(a), to_apply=l{n}\n}}",
            n = k + 1
        ));
    }
    comps.push("l48 {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}".into());
    let doubling = module(
        &comps,
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=l0",
    );
    let neg = |x: &str| module(&[], &format!("  x = {x}\n  ROOT y = f32[4] negate(x)"));
    let cases = [
        (
            module(
                &[
                    "a {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=a\n}"
                        .into(),
                ],
                "  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=a",
            ),
            "line 5 (`%c`): computation `a` reaches itself",
        ),
        (doubling.clone(), "would make 1407374883553279 instructions"),
        (
            neg("f32[4611686018427387905] parameter(0)"),
            "line 4 (`%x`)",
        ),
        (
            neg("f32[4] parameter(99999999999)"),
            "parameter(99999999999)",
        ),
        (
            module(
                &[],
                "  x = f32[4] parameter(0)\n  ROOT r = f32[4] add(r, x)",
            ),
            "names itself",
        ),
    ];
    for (text, says) in &cases {
        std::fs::write(&file, text).unwrap();
        refused(&args, None, "hostile.hlo.txt", says);
    }
    // The budget is the environment's to set: lower, it refuses a program that loads.
    let small = module(
        &[],
        "  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)",
    );
    std::fs::write(&file, &small).unwrap();
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let budget = Some(("MALLOCMUZERO_HLO_MAX_OPS", "1"));
    refused(&args, budget, "hostile.hlo.txt", "past the budget of 1");
    let nonsense = Some(("MALLOCMUZERO_HLO_MAX_OPS", "lots"));
    refused(
        &args,
        nonsense,
        "hostile.hlo.txt",
        "MALLOCMUZERO_HLO_MAX_OPS=lots",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
