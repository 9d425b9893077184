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
