//! `train-egrl`, the race's EGRL solvers and `evaluate --solver egrl-dp`, end to end.

mod common;
use common::run;

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mmz-egrl-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A run folder with the checkpoint, metrics and best mapping; `--resume` continues it to
/// the generation asked; `evaluate --mapping` accepts its best mapping.
#[test]
fn train_egrl_writes_a_run_that_resumes_and_evaluates() {
    let dir = temp("run");
    let d = dir.to_str().unwrap();
    let case = ["--workload", "alexnet", "--hw", "nnp-i-like"];
    let mut args = vec!["train-egrl", "--generations", "4", "--out", d, "--json"];
    args.extend(case);
    let v = json(&args);
    assert_eq!(v["generations"], 4);
    let best = v["best_latency_s"].as_f64().unwrap();
    assert!(best <= v["all_slow_latency_s"].as_f64().unwrap());
    for f in [
        "run.json",
        "program.json",
        "checkpoint.bin",
        "metrics.jsonl",
        "best/mapping.json",
        "best/summary.json",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 4);
    let v = json(&["train-egrl", "--resume", d, "--generations", "7", "--json"]);
    assert_eq!(v["generations"], 7);
    assert!(v["best_latency_s"].as_f64().unwrap() <= best);
    let mapping = dir.join("best/mapping.json");
    let mut args = vec!["evaluate", "--mapping", mapping.to_str().unwrap(), "--json"];
    args.extend(case);
    let rows = json(&args);
    let row = rows["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["solver"].as_str().unwrap().starts_with("file:"))
        .unwrap();
    assert_eq!(row["valid"], true, "{row}");
    assert_eq!(row["latency_s"], v["best_latency_s"], "{row}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each mistake gets one line naming what was wrong, and exit status 2.
#[test]
fn train_egrl_bad_input_gets_one_line_and_status_2() {
    let dir = temp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let unknown_field = dir.join("unknown.json");
    std::fs::write(&unknown_field, r#"{"hiddn": 8}"#).unwrap();
    let empty = dir.join("empty.json");
    std::fs::write(&empty, r#"{"gnn_members": 0, "boltzmann_members": 0}"#).unwrap();
    let existing = dir.join("existing");
    let e = existing.to_str().unwrap();
    let ok = json(&[
        "train-egrl",
        "--workload",
        "alexnet",
        "--generations",
        "1",
        "--out",
        e,
        "--json",
    ]);
    assert_eq!(ok["generations"], 1);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--variant", "nope"], "--variant: unknown `nope`"),
        (
            vec!["--config", unknown_field.to_str().unwrap()],
            "unknown field `hiddn`",
        ),
        (
            vec!["--config", empty.to_str().unwrap()],
            "the population is empty",
        ),
        (vec!["--out", e], "a run is already here"),
        (vec!["--minutes", "0"], "--minutes: must be > 0"),
        (vec!["--hw", "nope"], "nope"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["train-egrl", "--workload", "alexnet", "--generations", "1"];
        args.extend(extra.iter());
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let missing = dir.join("missing");
    let (code, _, err) = run(&["train-egrl", "--resume", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("run.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The race runs the EGRL solvers beside xla, keeps their evaluation curves and draws
/// them; `evaluate` knows the knapsack mapper.
#[test]
fn race_runs_egrl_solvers_and_draws_their_evaluation_curves() {
    let out = temp("race");
    let o = out.to_str().unwrap();
    let mut args = vec![
        "race",
        "--workload",
        "alexnet",
        "--hw",
        "nnp-i-like",
        "--seconds",
        "1",
        "--out",
        o,
        "--json",
    ];
    for s in ["xla", "egrl-dp", "egrl", "egrl-ea", "egrl-pg"] {
        args.extend(["--solver", s]);
    }
    let v = json(&args);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for r in results {
        assert_eq!(r["valid"], true, "{r}");
        if r["solver"].as_str().unwrap().starts_with("egrl") {
            let curve = r["evaluations_curve"].as_array().unwrap();
            assert_eq!(curve.last().unwrap()[1], r["best_latency_s"], "{r}");
        }
    }
    let case = out.join("alexnet-nnp-i-like");
    assert!(case.join("evaluations.svg").exists());
    assert!(case.join("egrl.mapping.json").exists());
    let rows = json(&[
        "evaluate",
        "--workload",
        "alexnet",
        "--hw",
        "nnp-i-like",
        "--solver",
        "egrl-dp",
        "--json",
    ]);
    let dp = &rows["results"].as_array().unwrap()[0];
    assert_eq!(dp["valid"], true);
    let raced = results.iter().find(|r| r["solver"] == "egrl-dp").unwrap();
    assert_eq!(dp["latency_s"], raced["best_latency_s"]);
    let _ = std::fs::remove_dir_all(&out);
}

/// Ctrl-C stops after a generation with a checkpoint (exit 130); SIGKILL mid-run leaves the
/// last checkpoint; both resume to the generation asked, and the best never gets worse.
#[cfg(unix)]
#[test]
fn train_egrl_survives_sigint_and_sigkill() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = temp("kill");
    let d = dir.to_str().unwrap();
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mallocmuzero"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_for = |path: &std::path::Path| {
        let t0 = Instant::now();
        while !path.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no {}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let best_of = |dir: &std::path::Path| -> f64 {
        let text = std::fs::read_to_string(dir.join("best/summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["latency_s"].as_f64().unwrap()
    };
    // A long run checkpointing every 0.2 s: interrupt it once it has a best mapping.
    let child = spawn(&[
        "train-egrl",
        "--workload",
        "resnet50",
        "--minutes",
        "5",
        "--checkpoint-seconds",
        "0.2",
        "--out",
        d,
    ]);
    wait_for(&dir.join("best/summary.json"));
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("train-egrl --resume"), "{err}");
    let best = best_of(&dir);
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let generations = metrics.lines().count() as u64;
    assert!(generations > 0);
    // Resumed, then killed with -9 mid-run: the checkpoint before the kill stays readable.
    let mut child = spawn(&[
        "train-egrl",
        "--resume",
        d,
        "--minutes",
        "5",
        "--checkpoint-seconds",
        "0.2",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(best_of(&dir) <= best);
    let after_kill = std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .count() as u64;
    assert!(after_kill >= generations);
    let target = after_kill + 40;
    let v = json(&[
        "train-egrl",
        "--resume",
        d,
        "--generations",
        &target.to_string(),
        "--json",
    ]);
    assert_eq!(v["generations"], target);
    assert!(v["best_latency_s"].as_f64().unwrap() <= best);
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    assert_eq!(
        metrics.lines().count() as u64,
        target,
        "one metrics line per generation"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
