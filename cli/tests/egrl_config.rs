//! `train-egrl`'s settings: how the config file and the flags merge, the bounds checked
//! before anything is spent, a resumed run's `run.json` against its checkpoint, and run
//! folders of one trainer given to the other.

mod common;
use common::run;
use std::path::{Path, PathBuf};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mmz-egrl-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Status 2, one line, no panic, and every one of `says` in it.
fn refused(args: &[&str], says: &[&str]) -> String {
    let (code, _, err) = run(args);
    assert_eq!(code, 2, "{args:?}: status {code}, stderr {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    for want in says {
        assert!(err.contains(want), "{args:?}: expected `{want}` in {err}");
    }
    err
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A tiny search (one generation, small population) on alexnet into `out`.
fn tiny_run(dir: &Path, out: &Path, config: &str, extra: &[&str]) -> serde_json::Value {
    let file = dir.join("tiny.json");
    std::fs::write(&file, config).unwrap();
    let mut args = vec![
        "train-egrl",
        "--workload",
        "alexnet",
        "--generations",
        "1",
        "--config",
        s(&file),
        "--out",
        s(out),
        "--json",
    ];
    args.extend(extra);
    json(&args)
}

/// A config that is not a JSON object (or whose nested configs are not) was read by
/// position or taken as the defaults; now it is refused, naming the file and the field.
#[test]
fn a_config_must_be_a_json_object_at_every_level() {
    let dir = temp("shape");
    let cases = [
        ("[]", "must be a JSON object"),
        (r#"["egrl-pg", 7]"#, "must be a JSON object"),
        ("7", "must be a JSON object"),
        (
            r#"{"learner": [0.5, 64]}"#,
            "learner: must be a JSON object",
        ),
        (r#"{"evolution": []}"#, "evolution: must be a JSON object"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let file = dir.join(format!("c{i}.json"));
        std::fs::write(&file, text).unwrap();
        refused(
            &[
                "train-egrl",
                "--workload",
                "alexnet",
                "--generations",
                "1",
                "--config",
                s(&file),
                "--out",
                s(&dir.join(format!("run{i}"))),
            ],
            &[want, s(&file)],
        );
        assert!(!dir.join(format!("run{i}")).exists(), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// defaults < file < flags: a flag that is not given leaves the file's value alone; one
/// given wins over the file, says so, and --help says so.
#[test]
fn flags_override_the_file_only_when_given() {
    let dir = temp("merge");
    let config = r#"{"variant": "egrl-ea", "seed": 7, "threads": 1, "gnn_members": 2, "boltzmann_members": 2}"#;
    let from_file = dir.join("from-file");
    let v = tiny_run(&dir, &from_file, config, &[]);
    assert_eq!(v["solver"], "egrl-ea", "{v}");
    let info = read_json(&from_file.join("run.json"));
    assert_eq!(info["config"]["variant"], "egrl-ea");
    assert_eq!(info["config"]["seed"], 7);
    assert_eq!(info["config"]["threads"], 1);

    let flagged = dir.join("flagged");
    let file = dir.join("tiny.json");
    let (code, out, err) = run(&[
        "train-egrl",
        "--workload",
        "alexnet",
        "--generations",
        "1",
        "--config",
        s(&file),
        "--out",
        s(&flagged),
        "--json",
        "--variant",
        "egrl-pg",
        "--seed",
        "3",
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["solver"], "egrl-pg", "{v}");
    let info = read_json(&flagged.join("run.json"));
    assert_eq!(info["config"]["variant"], "egrl-pg");
    assert_eq!(info["config"]["seed"], 3);
    assert_eq!(info["config"]["threads"], 2);
    for named in ["--variant", "--seed", "--threads"] {
        assert!(
            err.contains(named),
            "the override of {named} is named: {err}"
        );
    }

    let (code, help, _) = run(&["train-egrl", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("over the config file"), "{help}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every float setting is finite and in a sane range, named by its full path: a learning
/// rate of 1e300 made the loss NaN, written as null, and the run ended with status 0.
#[test]
fn float_settings_out_of_range_are_refused_by_their_path() {
    let dir = temp("floats");
    let cases = [
        (
            r#"{"learner": {"learning_rate": 1e300}}"#,
            "learner.learning_rate",
        ),
        (
            r#"{"learner": {"learning_rate": 0}}"#,
            "learner.learning_rate",
        ),
        (
            r#"{"learner": {"initial_alpha": 1e300}}"#,
            "learner.initial_alpha",
        ),
        (
            r#"{"learner": {"target_entropy": 2}}"#,
            "learner.target_entropy",
        ),
        (
            r#"{"learner": {"alpha_learning_rate": 1e300}}"#,
            "learner.alpha_learning_rate",
        ),
        (r#"{"violation_penalty": 1e300}"#, "violation_penalty"),
        (
            r#"{"evolution": {"gnn_mutation_sigma": 1e30}}"#,
            "evolution.gnn_mutation_sigma",
        ),
        (
            r#"{"evolution": {"boltzmann_mutation_sigma": 1e39}}"#,
            "evolution.boltzmann_mutation_sigma",
        ),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let file = dir.join(format!("f{i}.json"));
        std::fs::write(&file, text).unwrap();
        refused(
            &[
                "train-egrl",
                "--workload",
                "alexnet",
                "--generations",
                "3",
                "--config",
                s(&file),
                "--out",
                s(&dir.join(format!("run{i}"))),
            ],
            &[field, s(&file)],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each size within its bound, the whole population far beyond memory: refused before
/// anything is allocated (it aborted with status 134 under a 3 GB limit).
#[cfg(unix)]
#[test]
fn a_population_too_large_for_memory_is_refused_before_it_is_made() {
    let dir = temp("huge");
    let file = dir.join("huge.json");
    std::fs::write(&file, r#"{"hidden": 4096, "gnn_members": 1000}"#).unwrap();
    let out = dir.join("run");
    let script = format!(
        "ulimit -v 3000000; exec '{}' train-egrl --workload alexnet --generations 1 --config '{}' --out '{}'",
        env!("CARGO_BIN_EXE_mallocmuzero"),
        s(&file),
        s(&out)
    );
    let o = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for want in ["parameters", "hidden", "gnn_members", s(&file)] {
        assert!(err.contains(want), "expected `{want}` in {err}");
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run.json` edited after the start disagrees with the checkpoint, which the run would
/// follow: refused, naming the file, the field and both values. `--threads` on resume is
/// not a disagreement (results do not depend on it).
#[test]
fn resume_refuses_a_run_json_that_disagrees_with_the_checkpoint() {
    let dir = temp("edited");
    let out = dir.join("run");
    tiny_run(
        &dir,
        &out,
        r#"{"gnn_members": 2, "boltzmann_members": 2, "threads": 1}"#,
        &[],
    );
    let info_path = out.join("run.json");
    let original = std::fs::read_to_string(&info_path).unwrap();
    let json_resume = |generations: &str, threads: &[&str]| {
        let mut args = vec![
            "train-egrl",
            "--resume",
            s(&out),
            "--generations",
            generations,
            "--json",
        ];
        args.extend(threads);
        json(&args)
    };
    assert_eq!(json_resume("2", &["--threads", "2"])["generations"], 2);
    assert_eq!(json_resume("3", &[])["generations"], 3);

    let edits = [
        (
            ("variant", serde_json::json!("egrl-ea")),
            ["config.variant", "egrl-ea", "\"egrl\""],
        ),
        (
            ("hidden", serde_json::json!(64)),
            ["config.hidden", "64", "32"],
        ),
    ];
    for ((field, value), says) in edits {
        let mut info: serde_json::Value = serde_json::from_str(&original).unwrap();
        info["config"][field] = value;
        std::fs::write(&info_path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
        let mut want = vec![s(&info_path), "checkpoint"];
        want.extend(says);
        refused(
            &["train-egrl", "--resume", s(&out), "--generations", "4"],
            &want,
        );
    }
    // The hardware is not in the checkpoint: its best mapping, rescored, tells.
    let mut info: serde_json::Value = serde_json::from_str(&original).unwrap();
    info["hardware"]["peak_tflops"] = serde_json::json!(4.0);
    std::fs::write(&info_path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
    refused(
        &["train-egrl", "--resume", s(&out), "--generations", "4"],
        &[s(&info_path), "hardware", "checkpoint"],
    );
    std::fs::write(&info_path, &original).unwrap();
    assert_eq!(json_resume("4", &[])["generations"], 4);
    // The resume line counts generations as metrics.jsonl and --generations do.
    let (code, _, err) = run(&["train-egrl", "--resume", s(&out), "--generations", "5"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("resumed after generation 4)"), "{err}");
    let metrics = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    assert_eq!(last["generation"], 5);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An EGRL run folder given where a mallocMuZero run is expected is called that (it was
/// "made under rules v1"), and the other way round.
#[test]
fn a_run_folder_of_the_other_trainer_is_named_as_such() {
    let dir = temp("mixup");
    let egrl_run = dir.join("egrl");
    tiny_run(
        &dir,
        &egrl_run,
        r#"{"gnn_members": 2, "boltzmann_members": 2, "threads": 1}"#,
        &[],
    );
    let e = s(&egrl_run);
    let fresh = dir.join("fresh");
    for args in [
        vec!["train", "--resume", e, "--steps", "1"],
        vec![
            "train",
            "--init",
            e,
            "--workload",
            "alexnet",
            "--steps",
            "1",
            "--out",
            s(&fresh),
        ],
        vec![
            "evaluate",
            "--workload",
            "alexnet",
            "--solver",
            "muzero",
            "--checkpoint",
            e,
        ],
    ] {
        let err = refused(&args, &["EGRL run folder", "train-egrl"]);
        assert!(!err.contains("rules v"), "{args:?}: {err}");
    }

    let muzero_run = dir.join("muzero");
    json(&[
        "train",
        "--workload",
        "alexnet",
        "--steps",
        "1",
        "--out",
        s(&muzero_run),
        "--json",
    ]);
    refused(
        &["train-egrl", "--resume", s(&muzero_run)],
        &["a training run folder", "mallocmuzero train --resume"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The race checks an EGRL config against each case's size before the first solver runs
/// (a replay buffer too large for bert was found only after xla had run).
#[test]
fn the_race_checks_an_egrl_config_against_the_case_before_any_solver_runs() {
    let dir = temp("race");
    let file = dir.join("big.json");
    std::fs::write(&file, r#"{"replay_capacity": 10000000}"#).unwrap();
    let out = dir.join("race");
    let (code, stdout, err) = run(&[
        "race",
        "--workload",
        "bert-base-s128",
        "--hw",
        "nnp-i-like",
        "--seconds",
        "1",
        "--solver",
        "xla",
        "--solver",
        "egrl",
        "--egrl-config",
        s(&file),
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("replay_capacity"), "{err}");
    assert!(
        !stdout.contains("xla") && !err.contains("xla:"),
        "{stdout}{err}"
    );
    assert!(!out.join("results.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
