//! What happens around a run folder and the output streams (issue 44): two processes on
//! one folder, a lost `checkpoints/latest.json`, a write past the file-size limit, and
//! standard output on a full device or a closed pipe. Each runs the real binary.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mallocmuzero");

fn folder(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("mmz-folders-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

fn bin(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn output(mut c: Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(90), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid a locked folder's lock file names.
fn holder(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join(binio::LOCK_FILE))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A config whose checkpoints come every 2 iterations (many, quickly).
fn config(root: &Path) -> PathBuf {
    let path = root.join("config.json");
    std::fs::write(
        &path,
        r#"{"checkpoint_every": 2, "demo_pretrain_steps": 10}"#,
    )
    .unwrap();
    path
}

/// The second process on a folder is refused at once, naming the folder and the holder's
/// pid, exit 2, and writes nothing: for `train --out`, `train --resume` and `race --out`.
#[test]
fn a_second_writer_of_a_run_folder_is_refused_naming_the_holder() {
    let root = folder("two-writers");
    let (dir, config) = (root.join("run"), config(&root));
    let first = common::train_diamond(&dir, &config, "100000")
        .spawn()
        .unwrap();
    let pid = first.id();
    wait_until("the first run holds its folder", || {
        holder(&dir) == Some(pid) && dir.join("run.json").exists()
    });
    let metrics_before = std::fs::read(dir.join("metrics.jsonl")).unwrap_or_default();
    let refused = |c: Command, what: &str| {
        let t0 = Instant::now();
        let (code, _, err) = output(c);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains(&dir.display().to_string())
                && err.contains(&format!("pid {pid}"))
                && err.contains("in use by another process"),
            "{what}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{what}: refused late"
        );
    };
    refused(common::train_diamond(&dir, &config, "50"), "train --out");
    let resume = bin(&["train", "--resume", dir.to_str().unwrap(), "--steps", "50"]);
    refused(resume, "train --resume");
    stop(first);
    // The refused processes wrote nothing: a later resume finds one history.
    let now = std::fs::read(dir.join("metrics.jsonl")).unwrap_or_default();
    assert!(now.starts_with(&metrics_before));

    // A race folder, the same way: the lock of a live race refuses a second.
    let out = root.join("race");
    let race = |seconds: &str| {
        bin(&[
            "race",
            "--workload",
            "diamond",
            "--seconds",
            seconds,
            "--solver",
            "local-search",
            "--threads",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ])
    };
    let racing = race("4").spawn().unwrap();
    let pid = racing.id();
    wait_until("the first race holds its folder", || {
        holder(&out) == Some(pid)
    });
    let (code, _, err) = output(race("1"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");
    stop(racing);
    // With the holder gone (even killed), the folder is free again.
    let (code, _, err) = output(race("4"));
    assert_eq!(code, 0, "{err}");

    // train-egrl's folder, started and resumed.
    let egrl_dir = root.join("egrl");
    let egrl = |extra: &[&str]| {
        let mut c = bin(&["train-egrl", "--json"]);
        c.args(extra);
        c
    };
    let d = egrl_dir.to_str().unwrap();
    let (code, _, err) = output(egrl(&[
        "--workload",
        "diamond",
        "--generations",
        "2",
        "--out",
        d,
    ]));
    assert_eq!(code, 0, "{err}");
    let evolving = egrl(&["--resume", d, "--generations", "1000000"])
        .spawn()
        .unwrap();
    let pid = evolving.id();
    wait_until("the resumed EGRL run holds its folder", || {
        holder(&egrl_dir) == Some(pid)
    });
    let (code, _, err) = output(egrl(&["--resume", d, "--generations", "3"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");
    stop(evolving);
    let _ = std::fs::remove_dir_all(&root);
}

fn latest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("checkpoints/latest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn checkpoint_folders(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("iter-"))
        .collect();
    names.sort();
    names
}

/// A lost `latest.json` is recovered from the newest complete checkpoint folder; a run
/// with nothing complete left is refused with what is there, and deleted only on
/// `--restart`.
#[test]
fn a_lost_latest_json_is_recovered_never_wiped() {
    let root = folder("lost-latest");
    let (dir, config) = (root.join("run"), config(&root));
    let mut first = common::train_diamond(&dir, &config, "60");
    first.arg("--keep-checkpoints");
    let (code, _, err) = output(first);
    assert_eq!(code, 0, "{err}");
    let kept = checkpoint_folders(&dir);
    assert!(kept.len() >= 2, "{kept:?}");
    let newest = latest(&dir);
    std::fs::remove_file(dir.join("checkpoints/latest.json")).unwrap();

    let resume = |extra: &[&str]| {
        let mut c = bin(&["train", "--resume", dir.to_str().unwrap(), "--json"]);
        c.args(extra);
        output(c)
    };
    let (code, out, err) = resume(&["--steps", "61"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("latest.json is missing") && err.contains(newest["dir"].as_str().unwrap()),
        "{err}"
    );
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(summary["iterations"].as_u64() > newest["iteration"].as_u64());
    // Every checkpoint kept (the run keeps them) and none deleted by the recovery.
    for name in &kept {
        assert!(dir.join("checkpoints").join(name).is_dir(), "{name} gone");
    }

    // Nothing complete left: every checkpoint.json gone with latest.json.
    std::fs::remove_file(dir.join("checkpoints/latest.json")).unwrap();
    for name in checkpoint_folders(&dir) {
        std::fs::remove_file(dir.join("checkpoints").join(&name).join("checkpoint.json")).unwrap();
    }
    let before = checkpoint_folders(&dir);
    let metrics = std::fs::read(dir.join("metrics.jsonl")).unwrap();
    let (code, _, err) = resume(&["--steps", "70"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nothing was deleted") && err.contains("--restart"),
        "{err}"
    );
    assert_eq!(checkpoint_folders(&dir), before);
    assert_eq!(std::fs::read(dir.join("metrics.jsonl")).unwrap(), metrics);

    // Asked to, it starts afresh: checkpoints and metrics of the old run go, best/ stays.
    let (code, out, err) = resume(&["--steps", "10", "--restart"]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(summary["train_steps"], 10);
    assert!(dir.join("best/game.game").is_file());
    let _ = std::fs::remove_dir_all(&root);
}

/// Past the file-size limit, a write fails with a message naming the file (the signal
/// that would kill the process silently is ignored) and leaves no temporary file.
#[test]
fn a_write_past_the_file_size_limit_is_an_error_and_leaves_nothing() {
    let root = folder("fsize");
    let saves = root.join("games");
    std::fs::create_dir_all(&saves).unwrap();
    // 1 block (512 or 1024 bytes, by shell) is less than any saved game.
    let script = format!(
        "ulimit -f 1 && exec '{BIN}' play --workload resnet50 --player greedy --episodes 1 --save '{}'",
        saves.display()
    );
    let mut c = Command::new("sh");
    c.args(["-c", &script]);
    let (code, _, err) = output(c);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("File too large") && err.contains(&saves.display().to_string()),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&saves).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Standard output on a full device is an error (exit 2, one line); a reader that went
/// away ends the command quietly. Neither panics.
#[test]
fn standard_output_never_panics() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    if let Ok(full) = full {
        let out = Command::new(BIN)
            .args(["evaluate", "--workload", "diamond", "--json"])
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("cannot write to standard output") && !err.contains("panicked"),
            "{err}"
        );
    }
    // The reader goes away before the command writes.
    let closed_pipe = |args: &[&str]| {
        let mut child = bin(args).spawn().unwrap();
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    };
    let out = closed_pipe(&["replay", "--help"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // A closed pipe under a longer output: the workloads table.
    let out = closed_pipe(&["workloads"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Ctrl-C in the middle of a long iteration stops the run within moments (the iteration
/// is dropped, as at a time limit), with a checkpoint and status 130.
#[test]
fn an_interrupt_mid_iteration_stops_within_moments() {
    let root = folder("interrupt-mid");
    let config = root.join("config.json");
    // Thousands of proposal rounds on resnet50 make one iteration take minutes.
    std::fs::write(
        &config,
        r#"{"checkpoint_every": 1000, "demo_pretrain_steps": 1, "proposal_rounds": 60000}"#,
    )
    .unwrap();
    let dir = root.join("run");
    let child = bin(&[
        "train",
        "--workload",
        "resnet50",
        "--steps",
        "100000",
        "--config",
        config.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ])
    .spawn()
    .unwrap();
    wait_until("the run's start", || dir.join("run.json").exists());
    // Into the first iteration's proposals (the demonstrations take about a second).
    std::thread::sleep(Duration::from_secs(5));
    let sent = Instant::now();
    let status = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let waited = sent.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        waited < Duration::from_secs(10),
        "stopped after {waited:?}: {err}"
    );
    // The first iteration never completed: nothing to checkpoint, and the message says so.
    assert!(
        err.contains("no iteration completed, so no checkpoint"),
        "{err}"
    );
    assert!(!dir.join("checkpoints/latest.json").exists(), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(summary["interrupted"], true);
    let _ = std::fs::remove_dir_all(&root);
}

/// The smaller items: `replay --steps --json` carries the search's statistics of an agent
/// game, and a damaged `best/game.game` is refused with how to go on without it.
#[test]
fn a_damaged_best_game_says_how_to_go_on_and_replay_shows_the_search() {
    let root = folder("best-game");
    let (dir, config) = (root.join("run"), config(&root));
    let (code, _, err) = output(common::train_diamond(&dir, &config, "20"));
    assert_eq!(code, 0, "{err}");
    let best = dir.join("best/game.game");
    let (code, out, err) = output(bin(&[
        "replay",
        best.to_str().unwrap(),
        "--steps",
        "--json",
    ]));
    assert_eq!(code, 0, "{err}");
    let replay: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let turns = replay["turns"].as_array().unwrap();
    assert!(!turns.is_empty());
    for t in turns {
        assert!(t["visits"].as_array().is_some_and(|v| !v.is_empty()), "{t}");
        assert!(t["root_value"].as_f64().is_some(), "{t}");
    }

    let mut bytes = std::fs::read(&best).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&best, &bytes).unwrap();
    let resume = || {
        output(bin(&[
            "train",
            "--resume",
            dir.to_str().unwrap(),
            "--steps",
            "25",
            "--json",
        ]))
    };
    let (code, _, err) = resume();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("game.game") && err.contains("move it aside"),
        "{err}"
    );
    std::fs::rename(&best, dir.join("best/game.game.damaged")).unwrap();
    let (code, _, err) = resume();
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
