//! `mallocmuzero train` interrupted by SIGINT (Ctrl-C) and killed by SIGKILL at several
//! moments (before its first checkpoint, mid-run, during a resume), then resumed or started
//! again: the best mapping is never lost or replaced by a worse one, every iteration has
//! one metrics line, and the run completes; a multi-program run keeps every case's best.
//! Also `--steps 0`.

#![cfg(unix)]

mod common;

use malloc_game::record::GameRecord;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mallocmuzero");
/// About 30 iterations of 0.2 s on diamond.
const STEPS: &str = "150";
const INTERRUPTED: i32 = 130;

/// A fresh folder for one test, with a config whose first checkpoint comes after 10
/// iterations (about 2 s), so there is time to interrupt a run before it, and few
/// demonstration pre-training steps, so the step limit leaves room for iterations.
fn folder(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("mmz-interrupt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let config = root.join("config.json");
    std::fs::write(
        &config,
        r#"{"checkpoint_every": 10, "demo_pretrain_steps": 10}"#,
    )
    .unwrap();
    (root.join("run"), config)
}

fn train(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("train").args(args).arg("--json");
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// `train` of a new run of the tiny case into `dir`.
fn start(dir: &Path, config: &Path) -> Command {
    start_with_steps(dir, config, STEPS)
}

fn start_with_steps(dir: &Path, config: &Path, steps: &str) -> Command {
    common::train_diamond(dir, config, steps)
}

fn resume(dir: &Path) -> Command {
    train(&["--resume", dir.to_str().unwrap(), "--steps", STEPS])
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(60), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sigint(child: &Child) {
    let status = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn metrics_lines(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("metrics.jsonl")).map_or(0, |t| t.lines().count())
}

/// `metrics.jsonl` has one line per iteration the run's `summary` counts, in order.
fn assert_one_metrics_line_per_iteration(dir: &Path, summary: &serde_json::Value) {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let iterations: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["iteration"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let expected: Vec<u64> = (0..summary["iterations"].as_u64().unwrap()).collect();
    assert_eq!(iterations, expected, "one metrics line per iteration");
}

fn has_checkpoint(dir: &Path) -> bool {
    dir.join("checkpoints/latest.json").exists()
}

/// The simulated latency of the saved best game (what the run commits to first).
fn best_latency(dir: &Path) -> f64 {
    GameRecord::load(&dir.join("best/game.game")).map_or(f64::INFINITY, |r| r.final_latency_s)
}

fn finished(child: Child, code: i32) -> serde_json::Value {
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr),
    );
    assert_eq!(status.code(), Some(code), "stdout: {out}\nstderr: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\nstderr: {err}"))
}

/// Runs to the end: the run completes with every metrics line once and a best no worse
/// than `best_before`.
fn completes(mut command: Command, dir: &Path, best_before: f64) {
    let summary = finished(command.spawn().unwrap(), 0);
    assert_eq!(
        summary["train_steps"].as_u64(),
        Some(STEPS.parse().unwrap())
    );
    assert_eq!(summary["interrupted"], false);
    let best = summary["best_latency_s"].as_f64().unwrap();
    assert!(
        best <= best_before,
        "best {best} after, {best_before} before"
    );
    assert_eq!(best, best_latency(dir));
    assert_one_metrics_line_per_iteration(dir, &summary);
}

/// Ctrl-C before the first checkpoint is due: the iteration running is finished and saved,
/// the command exits 130, and a resume continues from there.
#[test]
fn sigint_before_the_first_checkpoint_saves_one_and_resumes() {
    let (dir, config) = folder("int-early");
    let child = start(&dir, &config).spawn().unwrap();
    wait_until("the run's first iteration", || metrics_lines(&dir) >= 1);
    sigint(&child);
    let summary = finished(child, INTERRUPTED);
    assert_eq!(summary["interrupted"], true);
    assert!(has_checkpoint(&dir), "a checkpoint is written on interrupt");
    let best = best_latency(&dir);
    assert!(best.is_finite());
    assert!(summary["iterations"].as_u64().unwrap() < 10);
    completes(resume(&dir), &dir, best);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// SIGKILL before the first checkpoint leaves `run.json` and no checkpoint: `--resume`
/// starts the run afresh, and so does starting it again with `--out`.
#[test]
fn sigkill_before_the_first_checkpoint_resumes_afresh_or_restarts() {
    let (dir, config) = folder("kill-early");
    let mut child = start(&dir, &config).spawn().unwrap();
    wait_until("the run's second iteration", || metrics_lines(&dir) >= 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dir.join("run.json").exists() && !has_checkpoint(&dir));
    let best = best_latency(&dir);
    assert!(best.is_finite());
    let mut child = resume(&dir).spawn().unwrap();
    wait_until("the resumed run's second iteration", || {
        metrics_lines(&dir) >= 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let best = best.min(best_latency(&dir));
    completes(start(&dir, &config), &dir, best);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// SIGKILL mid-run (a checkpoint behind, metrics lines past it), then Ctrl-C during the
/// resume, then a second resume to the end.
#[test]
fn sigkill_and_sigint_mid_run_keep_the_best_and_the_metrics() {
    let (dir, config) = folder("mid");
    let mut child = start(&dir, &config).spawn().unwrap();
    wait_until("metrics past the first checkpoint", || {
        has_checkpoint(&dir) && metrics_lines(&dir) >= 13
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let best = best_latency(&dir);
    let child = resume(&dir).spawn().unwrap();
    // The resume cuts the metrics back to the checkpoint's 10 lines, then plays on.
    wait_until("the resumed run's iterations", || metrics_lines(&dir) >= 16);
    sigint(&child);
    assert_eq!(finished(child, INTERRUPTED)["interrupted"], true);
    let best_after = best_latency(&dir);
    assert!(best_after <= best);
    completes(resume(&dir), &dir, best_after);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// A second Ctrl-C exits at once (130), leaving a folder that resumes; a finished run
/// continues to a higher step count.
#[test]
fn a_second_sigint_exits_at_once_and_the_run_still_resumes() {
    let (dir, config) = folder("twice");
    let child = start(&dir, &config).spawn().unwrap();
    wait_until("the run's third iteration", || metrics_lines(&dir) >= 3);
    // Not yet reaped, so the second signal reaches this process even if it has exited.
    sigint(&child);
    std::thread::sleep(Duration::from_millis(20));
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(INTERRUPTED));
    let best = best_latency(&dir);
    completes(resume(&dir), &dir, best);
    // After the end: more steps continue the same run.
    let more = train(&["--resume", dir.to_str().unwrap(), "--steps", "200"]);
    let summary = finished({ more }.spawn().unwrap(), 0);
    assert_eq!(summary["train_steps"], 200);
    assert!(summary["best_latency_s"].as_f64().unwrap() <= best);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// `--steps 0` would make a run folder with nothing to continue from: an error, before
/// anything is written.
#[test]
fn zero_steps_is_refused_before_anything_is_written() {
    let (dir, config) = folder("zero");
    let out = start_with_steps(&dir, &config, "0").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--steps: must be >= 1"));
    assert!(!dir.exists());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// A multi-program run (`--cases`) killed mid-run resumes from its checkpoint: one
/// metrics line per iteration, and no case's best mapping lost or made worse.
#[test]
fn a_killed_suite_run_resumes_with_every_cases_best() {
    let (dir, config) = folder("suite");
    let cases = dir.parent().unwrap().join("cases.json");
    std::fs::write(
        &cases,
        r#"[{"workload": "diamond", "hw": "tpu-v4i-like", "fast_capacity": "4MiB"},
            {"workload": "chain", "hw": "tpu-v4i-like", "fast_capacity": "16MiB"}]"#,
    )
    .unwrap();
    let (d, c, k) = (
        dir.to_str().unwrap(),
        config.to_str().unwrap(),
        cases.to_str().unwrap(),
    );
    let best = |case: usize| {
        GameRecord::load(&dir.join(format!("best/{case:03}/game.game")))
            .map_or(f64::INFINITY, |r| r.final_latency_s)
    };
    let mut child = train(&[
        "--cases",
        k,
        "--steps",
        STEPS,
        "--threads",
        "1",
        "--config",
        c,
        "--out",
        d,
    ])
    .spawn()
    .unwrap();
    wait_until("metrics past the first checkpoint", || {
        has_checkpoint(&dir) && metrics_lines(&dir) >= 13
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let before = [best(0), best(1)];
    assert!(before.iter().all(|b| b.is_finite()), "{before:?}");
    let summary = finished(resume(&dir).spawn().unwrap(), 0);
    assert_eq!(
        summary["train_steps"].as_u64(),
        Some(STEPS.parse().unwrap())
    );
    for (case, b) in before.iter().enumerate() {
        let after = summary["cases"][case]["best_latency_s"].as_f64().unwrap();
        assert!(
            after <= *b && after == best(case),
            "case {case}: {after} vs {b}"
        );
    }
    assert_one_metrics_line_per_iteration(&dir, &summary);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
