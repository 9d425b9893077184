//! Where a result is reused or a setting is merged: a race's saved results, `train --init`,
//! and the inputs whose errors must name their problem (issue 29). Each test failed before
//! its fix.

mod common;

use common::run;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cli-reuse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn race(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = out.display().to_string();
    let mut args = vec![
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "1",
        "--threads",
        "1",
        "--solver",
        "xla",
        "--solver",
        "greedy-size",
        "--out",
        &out,
        "--json",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn latency_of(stdout: &str, solver: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("race --json");
    let r = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["solver"] == solver)
        .unwrap_or_else(|| panic!("no {solver} in {v}"));
    r["best_latency_s"].as_f64().unwrap()
}

/// A saved result is reused only under the settings it was found under: another capacity
/// or other rules of the game is refused, naming what differs, before any budget is spent.
#[test]
fn a_race_reuses_nothing_found_under_other_settings() {
    let dir = scratch("settings");
    let out = dir.join("r1");
    let (code, _, err) = race(&out, &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = race(&out, &["--fast-capacity", "2MiB"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("other settings") && err.contains("hardware"),
        "{err}"
    );
    let out2 = dir.join("r2").display().to_string();
    let beam = |extra: &[&str]| {
        let mut a = vec![
            "race",
            "--workload",
            "diamond",
            "--seconds",
            "1",
            "--threads",
            "1",
            "--solver",
            "beam",
            "--out",
            &out2,
            "--json",
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    assert_eq!(beam(&[]).0, 0);
    let (code, _, err) = beam(&["--slots", "2", "--order", "by-size"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("options.slots") && err.contains("options.order"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reused result is re-validated and re-simulated from its mapping file: an edited
/// latency or a missing mapping is raced again, never printed.
#[test]
fn reused_race_results_are_checked_again() {
    let dir = scratch("recheck");
    let out = dir.join("r");
    let (code, first, err) = race(&out, &[]);
    assert_eq!(code, 0, "{err}");
    let xla = latency_of(&first, "xla");
    let greedy = latency_of(&first, "greedy-size");

    let results = out.join("results.json");
    let text = std::fs::read_to_string(&results).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for r in v["results"].as_array_mut().unwrap() {
        if r["solver"] == "xla" {
            r["best_latency_s"] = serde_json::json!(1e-9);
        }
    }
    std::fs::write(&results, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, again, err) = race(&out, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("does not check out"), "{err}");
    assert_eq!(latency_of(&again, "xla"), xla);

    let case = out.join("diamond-tpu-v4i-like");
    std::fs::remove_file(case.join("greedy-size.mapping.json")).unwrap();
    let (code, again, err) = race(&out, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("mapping file is missing"), "{err}");
    assert_eq!(latency_of(&again, "greedy-size"), greedy);
    assert!(case.join("greedy-size.mapping.json").exists());
    // Checked out: reused as it is, without a word.
    let (code, _, err) = race(&out, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("does not check out"), "{err}");

    // A results.json of an older build (no settings in its results) is refused by version.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("version");
    std::fs::write(&results, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, _, err) = race(&out, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`version`") && err.contains("version 1"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every solver's settings and the output folder are checked before the first budget: a
/// bad one later in the list costs nothing of the earlier solvers' budgets.
#[test]
fn a_race_checks_every_setting_before_spending_a_budget() {
    let dir = scratch("upfront");
    let corrupt = dir.join("corrupt-run");
    std::fs::create_dir_all(&corrupt).unwrap();
    std::fs::write(corrupt.join("run.json"), "{ not json").unwrap();
    let egrl = dir.join("egrl.json");
    std::fs::write(&egrl, r#"{"hidden": 0}"#).unwrap();
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let corrupt = corrupt.display().to_string();
    let egrl = egrl.display().to_string();
    let unwritable = blocker.join("out").display().to_string();
    let cases: [&[&str]; 3] = [
        &["--solver", "muzero", "--checkpoint", &corrupt],
        &["--solver", "egrl", "--egrl-config", &egrl],
        &["--out", &unwritable],
    ];
    for extra in cases {
        let mut args = vec![
            "race",
            "--workload",
            "diamond",
            "--seconds",
            "30",
            "--threads",
            "1",
            "--solver",
            "local-search",
        ];
        args.extend_from_slice(extra);
        let t0 = Instant::now();
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(
            t0.elapsed().as_secs_f64() < 20.0,
            "{extra:?}: the local search's 30 s were spent before the error: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `race --solver muzero-train --checkpoint RUN` of another program is refused before
/// training, and the run folder is left as it was (the race continues a copy); the `muzero`
/// solver takes any run's network as its guide.
#[test]
fn a_race_never_trains_someone_elses_run() {
    let dir = scratch("checkpoint");
    let runc = dir.join("chain-run");
    let runc_s = runc.display().to_string();
    let (code, _, err) = run(&[
        "train",
        "--workload",
        "chain",
        "--steps",
        "2",
        "--out",
        &runc_s,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let metrics = std::fs::read_to_string(runc.join("metrics.jsonl")).unwrap();
    let (code, _, err) = run(&[
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "5",
        "--solver",
        "muzero-train",
        "--checkpoint",
        &runc_s,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("another case") && err.contains("program"),
        "{err}"
    );
    // Its own case: raced on a copy; the user's run is untouched.
    let out = dir.join("race").display().to_string();
    let (code, _, err) = run(&[
        "race",
        "--workload",
        "chain",
        "--seconds",
        "2",
        "--threads",
        "1",
        "--solver",
        "muzero-train",
        "--checkpoint",
        &runc_s,
        "--out",
        &out,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(runc.join("metrics.jsonl")).unwrap(),
        metrics
    );
    let (code, out, err) = run(&[
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "1",
        "--threads",
        "1",
        "--solver",
        "muzero",
        "--checkpoint",
        &runc_s,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let agent = &v["results"][0];
    assert_eq!(agent["valid"], true, "{agent}");
    assert!(agent["settings"]["guide"]
        .as_str()
        .unwrap()
        .contains("chain-run"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `train --init bundled` plays the bundled network's game: other game options are refused,
/// naming them, even where the observation and action sizes agree.
#[test]
fn fine_tuning_refuses_other_game_options() {
    let dir = scratch("init");
    let out = dir.join("tuned").display().to_string();
    let (code, _, err) = run(&[
        "train",
        "--workload",
        "diamond",
        "--init",
        "bundled",
        "--order",
        "by-size",
        "--steps",
        "1",
        "--out",
        &out,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("init") && err.contains("order"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Errors that name their problem, and a `cut` that writes only what loads again.
#[test]
fn vague_inputs_get_errors_that_name_the_problem() {
    let dir = scratch("inputs");
    let (code, _, err) = run(&["race", "--workload", "diamond", "--seconds", "-1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--seconds") && err.contains("more than 0"),
        "{err}"
    );
    let (code, _, err) = run(&["evaluate", "--workload", "resnet50@36..48@1..3"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("window") && !err.contains("unknown workload"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "evaluate",
        "--workload",
        "diamond",
        "--fast-capacity",
        "-5MiB",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("negative"), "{err}");
    let cases = dir.join("cases.json");
    std::fs::write(
        &cases,
        r#"[{"workload": "diamond", "fast_capacity": "-5MiB"}]"#,
    )
    .unwrap();
    let (code, _, err) = run(&[
        "train",
        "--cases",
        &cases.display().to_string(),
        "--steps",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("negative") && !err.contains("unknown unit"),
        "{err}"
    );
    for bad in ["a.csv", "noext"] {
        let out = dir.join(bad);
        let (code, _, err) = run(&[
            "cut",
            "--workload",
            "resnet50",
            "--ops",
            "0..4",
            "--out",
            &out.display().to_string(),
        ]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("*.json"), "{err}");
        assert!(!out.exists(), "{bad} was written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A huge `--cases` file is refused at once, naming the count; cases that share a program
/// share its copy in the run folder, and the run resumes from it.
#[test]
fn case_files_are_bounded_and_programs_kept_once() {
    let dir = scratch("cases");
    let many = dir.join("many.json");
    let one = r#"{"workload": "diamond", "fast_capacity": "2MiB"}"#;
    std::fs::write(&many, format!("[{}]", vec![one; 10_000].join(","))).unwrap();
    let t0 = Instant::now();
    let (code, _, err) = run(&[
        "train",
        "--cases",
        &many.display().to_string(),
        "--steps",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("10000 cases") && err.contains("at most"),
        "{err}"
    );
    assert!(t0.elapsed().as_secs_f64() < 10.0);

    let cases = dir.join("cases.json");
    std::fs::write(
        &cases,
        r#"[{"workload": "diamond", "fast_capacity": "2MiB"},
            {"workload": "diamond", "fast_capacity": "4MiB"},
            {"workload": "chain", "fast_capacity": "2MiB"}]"#,
    )
    .unwrap();
    let out = dir.join("run");
    let out_s = out.display().to_string();
    let train = |extra: &[&str]| {
        let mut a = vec!["train", "--json"];
        a.extend_from_slice(extra);
        run(&a)
    };
    let cases = cases.display().to_string();
    let (code, _, err) = train(&[
        "--cases",
        &cases,
        "--threads",
        "1",
        "--steps",
        "2",
        "--out",
        &out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    let copies = std::fs::read_dir(out.join("programs")).unwrap().count();
    assert_eq!(copies, 2, "one copy per distinct program");
    let (code, _, err) = train(&["--resume", &out_s, "--steps", "4"]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A config file is an object of fields by name: `[]` and arrays read by position are
/// refused for the agent's config as for EGRL's, and a race names the EGRL config's file
/// and refuses the fields it sets itself.
#[test]
fn config_files_are_objects_and_a_race_names_what_it_overrides() {
    let dir = scratch("configs");
    let file = dir.join("c.json");
    let out = dir.join("run").display().to_string();
    let path = file.display().to_string();
    for bad in ["[]", "[7]", r#"{"search": [1, 2]}"#, r#"{"network": [4]}"#] {
        std::fs::write(&file, bad).unwrap();
        let (code, _, err) = run(&[
            "train",
            "--workload",
            "diamond",
            "--config",
            &path,
            "--steps",
            "1",
            "--out",
            &out,
        ]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("must be a JSON object"), "{bad}: {err}");
    }
    // A demonstration the registry does not know: refused, the file named, before the
    // run's folder is made.
    std::fs::write(&file, r#"{"demonstrations": ["xla", "beam:4"]}"#).unwrap();
    let (code, _, err) = run(&[
        "train",
        "--workload",
        "diamond",
        "--config",
        &path,
        "--steps",
        "1",
        "--out",
        &out,
    ]);
    assert_eq!(code, 2, "{err}");
    let unknown = "demonstrations: unknown `beam:4` (known: xla, greedy-size, beam, greedy)";
    assert!(err.contains("c.json") && err.contains(unknown), "{err}");
    assert!(!dir.join("run").exists());
    // Flags over the file, and the override said.
    std::fs::write(&file, r#"{"seed": 7}"#).unwrap();
    let (code, _, err) = run(&[
        "train",
        "--workload",
        "diamond",
        "--config",
        &path,
        "--seed",
        "5",
        "--steps",
        "1",
        "--out",
        &out,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("--seed 5 overrides the config file's 7"),
        "{err}"
    );
    let run_json = std::fs::read_to_string(dir.join("run").join("run.json")).unwrap();
    let run_json: serde_json::Value = serde_json::from_str(&run_json).unwrap();
    assert_eq!(run_json["config"]["seed"], 5);
    for (text, needle) in [
        (r#"{"seed": 7}"#, "field `seed`"),
        (r#"{"variant": "egrl-ea"}"#, "field `variant`"),
        (r#"{"hidden": 0}"#, "hidden"),
    ] {
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = run(&[
            "race",
            "--workload",
            "diamond",
            "--seconds",
            "1",
            "--solver",
            "egrl",
            "--egrl-config",
            &path,
        ]);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(&path) && err.contains(needle), "{text}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The table's "vs xla" is each case's own xla, wherever xla stands among the solvers.
#[test]
fn the_race_table_compares_each_row_with_its_own_cases_xla() {
    let (code, out, err) = run(&[
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "0.5",
        "--threads",
        "1",
        "--solver",
        "greedy-size",
        "--solver",
        "xla",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.contains("greedy-size"))
        .unwrap_or_else(|| panic!("{out}"));
    let vs_xla = row.split_whitespace().nth(4).unwrap();
    assert!(vs_xla.ends_with('x'), "{row}");
}
