//! End-to-end tests of the `mallocmuzero` binary: output shapes, bad input, and a saved
//! game replayed from disk.

mod common;
use common::run;

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn evaluate_json_has_every_field_and_xla_beats_all_slow() {
    let v = json(&["evaluate", "--workload", "diamond", "--json"]);
    let rows = v["results"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for r in rows {
        for f in [
            "workload",
            "hardware",
            "solver",
            "latency_s",
            "proxy_latency_s",
            "valid",
            "speedup_vs_xla",
        ] {
            assert!(r.get(f).is_some(), "missing {f} in {r}");
        }
        assert_eq!(r["valid"], true);
        assert!(r["latency_s"].as_f64().unwrap() >= r["bound_latency_s"].as_f64().unwrap());
    }
    let by = |s: &str| {
        rows.iter()
            .find(|r| r["solver"] == s)
            .unwrap_or_else(|| panic!("no {s}"))["latency_s"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        rows.iter().find(|r| r["solver"] == "xla").unwrap()["speedup_vs_xla"],
        1.0
    );
    assert!(by("xla") < by("all-slow"));
}

#[test]
fn bad_input_gets_one_line_and_status_2() {
    let dir = std::env::temp_dir().join(format!("cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_json = dir.join("bad.json");
    std::fs::write(
        &bad_json,
        "{\"format\": \"mallocmuzero-program\", \"version\": 1,",
    )
    .unwrap();
    let zero = dir.join("zero.json");
    std::fs::write(
        &zero,
        r#"{"format":"mallocmuzero-program","version":1,"name":"z",
            "buffers":[{"name":"a","kind":"input","bytes":0}],"ops":[]}"#,
    )
    .unwrap();
    let odd_case = dir.join("odd-case.json");
    std::fs::write(&odd_case, r#"[{"workload": "alexnet", "hardware": "x"}]"#).unwrap();
    let no_cases = dir.join("no-cases.json");
    std::fs::write(&no_cases, "[]").unwrap();
    let unknown_case = dir.join("unknown-case.json");
    std::fs::write(
        &unknown_case,
        r#"[{"workload": "alexnet"}, {"workload": "nope"}]"#,
    )
    .unwrap();
    let garbage = dir.join("g.game");
    std::fs::write(&garbage, [7u8; 40]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["evaluate".into(), "--workload".into(), "nope".into()],
            "unknown workload `nope`",
        ),
        (
            vec!["evaluate".into(), "--hw".into(), "tpu-v9".into()],
            "unknown hardware `tpu-v9`",
        ),
        (
            vec![
                "evaluate".into(),
                "--solver".into(),
                "muzero".into(),
                "--search-model".into(),
                "exact".into(),
            ],
            "expected `learned` or `game`",
        ),
        (
            vec![
                "evaluate".into(),
                "--workload".into(),
                bad_json.display().to_string(),
            ],
            "bad.json",
        ),
        (
            vec![
                "evaluate".into(),
                "--workload".into(),
                zero.display().to_string(),
            ],
            "buffers[0].bytes: must be > 0, got 0",
        ),
        (
            vec!["evaluate".into(), "--fast-capacity".into(), "10B".into()],
            "smaller than the level's alignment (512 B)",
        ),
        (
            vec![
                "evaluate".into(),
                "--workload".into(),
                "chain".into(),
                "--fast-capacity".into(),
                "512B".into(),
            ],
            "smaller than the smallest buffer",
        ),
        (
            vec!["evaluate".into(), "--solver".into(), "magic".into()],
            "unknown solver `magic`",
        ),
        (
            vec![
                "train".into(),
                "--init".into(),
                dir.join("no-run-here").display().to_string(),
                "--out".into(),
                dir.join("init-run").display().to_string(),
            ],
            "--init",
        ),
        (
            vec![
                "train".into(),
                "--cases".into(),
                odd_case.display().to_string(),
            ],
            "odd-case.json: unknown field `hardware`",
        ),
        (
            vec![
                "train".into(),
                "--cases".into(),
                no_cases.display().to_string(),
            ],
            "no-cases.json: the list of cases is empty",
        ),
        (
            vec![
                "train".into(),
                "--cases".into(),
                unknown_case.display().to_string(),
            ],
            "case 1 (`nope`)",
        ),
        (
            vec!["replay".into(), garbage.display().to_string()],
            "bad magic",
        ),
        (
            vec!["play".into(), "--player".into(), "beam:0".into()],
            "unknown player `beam:0`",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err} should say {want}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--solver muzero` without a checkpoint plays the bundled generalist; `--init bundled`
/// fine-tunes it; a multi-program run (`--cases`) trains, reports every case and resumes.
#[test]
fn the_bundled_generalist_plays_fine_tunes_and_a_suite_run_resumes() {
    let dir = std::env::temp_dir().join(format!("cli-generalist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let v = json(&[
        "evaluate",
        "--workload",
        "diamond",
        "--solver",
        "xla",
        "--solver",
        "muzero",
        "--simulations",
        "4",
        "--json",
    ]);
    let rows = v["results"].as_array().unwrap();
    let agent = rows.iter().find(|r| r["solver"] == "muzero").unwrap();
    assert_eq!(agent["valid"], true, "{agent}");
    // The same network searching its learned model instead of the game.
    let v = json(&[
        "evaluate",
        "--workload",
        "diamond",
        "--solver",
        "muzero",
        "--simulations",
        "4",
        "--search-model",
        "learned",
        "--json",
    ]);
    assert_eq!(v["results"][0]["valid"], true, "{v}");

    let tuned = dir.join("tuned").display().to_string();
    let s = json(&[
        "train",
        "--workload",
        "diamond",
        "--init",
        "bundled",
        "--steps",
        "20",
        "--out",
        &tuned,
        "--keep-checkpoints",
        "--json",
    ]);
    assert!(s["train_steps"].as_u64().unwrap() >= 20, "{s}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tuned/run.json")).unwrap())
            .unwrap();
    assert_eq!(run["config"]["init"], "bundled");
    assert_eq!(run["config"]["keep_checkpoints"], true);

    let cases = dir.join("cases.json");
    std::fs::write(
        &cases,
        r#"[{"workload": "diamond", "fast_capacity": "2MiB"},
            {"workload": "chain", "hw": "tpu-v4i-like", "fast_capacity": "16MiB"}]"#,
    )
    .unwrap();
    let suite = dir.join("suite").display().to_string();
    let cases = cases.display().to_string();
    let first = json(&[
        "train",
        "--cases",
        &cases,
        "--steps",
        "40",
        "--threads",
        "1",
        "--out",
        &suite,
        "--json",
    ]);
    let names: Vec<&str> = first["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["diamond@tpu-v4i-like/2MiB", "chain@tpu-v4i-like/16MiB"]
    );
    let more = json(&["train", "--resume", &suite, "--steps", "80", "--json"]);
    assert!(
        more["iterations"].as_u64() > first["iterations"].as_u64(),
        "{more}"
    );
    let agent = json(&[
        "evaluate",
        "--workload",
        "chain",
        "--solver",
        "muzero",
        "--checkpoint",
        &suite,
        "--simulations",
        "4",
        "--json",
    ]);
    assert_eq!(agent["results"][0]["valid"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn play_saves_games_that_replay_and_render() {
    let dir = std::env::temp_dir().join(format!("cli-play-{}", std::process::id()));
    let d = dir.display().to_string();
    let v = json(&[
        "play",
        "--workload",
        "random-dag",
        "--player",
        "beam:4",
        "--episodes",
        "2",
        "--seed",
        "5",
        "--save",
        &d,
        "--json",
    ]);
    assert_eq!(v["episodes"].as_array().unwrap().len(), 2);
    assert_eq!(v["best"]["valid"], true);
    assert_eq!(v["best"]["solver"], "beam:4");
    let game = dir.join("random-dag-tpu-v4i-like-beam-4-5.game");
    let map = dir.join("map.svg");
    let timeline = dir.join("t.svg");
    let exported = dir.join("game.json");
    let r = json(&[
        "replay",
        &game.display().to_string(),
        "--render",
        &map.display().to_string(),
        "--timeline",
        &timeline.display().to_string(),
        "--export-json",
        &exported.display().to_string(),
        "--json",
    ]);
    assert_eq!(r["verified"], true);
    let best_return = v["episodes"][0]["return"].as_f64().unwrap();
    assert_eq!(r["return"].as_f64().unwrap(), best_return);
    assert!(std::fs::read_to_string(&map).unwrap().starts_with("<svg"));
    assert!(std::fs::read_to_string(&timeline)
        .unwrap()
        .contains("</svg>"));
    // The JSON export replays too.
    let r2 = json(&["replay", &exported.display().to_string(), "--json"]);
    assert_eq!(r2["return"], r["return"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn listings_are_json() {
    let w = json(&["workloads", "--json"]);
    let w = w["workloads"].as_array().unwrap();
    assert!(w.len() >= 14);
    // Both tiers, then the generalist's programs of the scale tier's size.
    let scale: Vec<_> = w.iter().filter(|r| r["tier"] == "scale").collect();
    assert!(scale.len() >= 10, "{}", scale.len());
    let tiers: Vec<&str> = w.iter().map(|r| r["tier"].as_str().unwrap()).collect();
    let first = |t| tiers.iter().position(|x| *x == t).unwrap();
    assert!(first("standard") < first("scale") && first("scale") < first("generalist"));
    assert!(tiers
        .iter()
        .all(|t| ["standard", "scale", "generalist"].contains(t)));
    assert!(w
        .iter()
        .filter(|r| r["tier"] != "standard")
        .all(|r| (500..=20_000).contains(&r["ops"].as_u64().unwrap())));
    let h = json(&["hardware", "--json"]);
    assert_eq!(h["hardware"].as_array().unwrap().len(), 2);
    for args in [&["suite", "--json"][..], &["suite", "scale", "--json"]] {
        let s = json(args);
        for c in s["suite"].as_array().unwrap() {
            assert!(c["beneficial_over_capacity"].as_f64().unwrap() > 1.0, "{c}");
        }
    }
    let s = json(&["suite", "scale", "--json"]);
    assert_eq!(s["suite"].as_array().unwrap().len(), 2 * scale.len());
}

/// `--suite` alone is the benchmark suite's 14 cases; `--suite scale` the scale tier's
/// (every program on both presets); any other name is refused with the known ones.
#[test]
fn suite_takes_an_optional_name() {
    let cases = |v: &serde_json::Value| {
        let mut c: Vec<(String, String)> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["workload"].to_string(), r["hardware"].to_string()))
            .collect();
        c.dedup();
        c
    };
    let standard = json(&["evaluate", "--suite", "--solver", "all-slow", "--json"]);
    assert_eq!(cases(&standard).len(), 14);
    let named = json(&[
        "evaluate", "--suite", "standard", "--solver", "all-slow", "--json",
    ]);
    assert_eq!(cases(&named), cases(&standard));
    // The flag may come last, before another flag, or with its value.
    let last = json(&["evaluate", "--solver", "all-slow", "--json", "--suite"]);
    assert_eq!(cases(&last), cases(&standard));
    let scale = json(&["evaluate", "--suite", "scale", "--solver", "xla", "--json"]);
    let scale_cases = cases(&scale);
    assert!(scale_cases.len() >= 20, "{}", scale_cases.len());
    assert!(scale_cases.iter().all(|(w, _)| w.starts_with("\"jax-")));
    for r in scale["results"].as_array().unwrap() {
        assert_eq!(r["valid"], true, "{r}");
        let cap = r["fast_capacity_bytes"].as_u64().unwrap();
        assert!(r["fast_bytes_used"].as_u64().unwrap() <= cap, "{r}");
    }
    let race = json(&[
        "race",
        "--suite",
        "scale",
        "--seconds",
        "0.01",
        "--solver",
        "xla",
        "--threads",
        "1",
        "--json",
    ]);
    assert_eq!(race["results"].as_array().unwrap().len(), scale_cases.len());
    let (code, _, err) = run(&["evaluate", "--suite", "big", "--solver", "xla"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown suite `big` (known: standard, scale)"),
        "{err}"
    );
}

/// `race --json` gives each solver's best latency, validity and curve; `--out` keeps the
/// mappings, the curves and the results, and a second race into the same folder keeps the
/// results already there; an unknown solver costs no budget and exits 2.
#[test]
fn race_json_out_and_resume() {
    let out = std::env::temp_dir().join(format!("mmz-race-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = out.to_str().unwrap();
    let args = [
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "0.3",
        "--solver",
        "xla",
        "--solver",
        "local-search",
        "--solver",
        "random",
        "--out",
        o,
        "--json",
    ];
    let v = json(&args);
    assert_eq!(v["seconds"], 0.3);
    assert_eq!(v["seed"], 0);
    assert!(v["threads"].as_u64().is_some_and(|t| t >= 1), "{v}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    let local = results
        .iter()
        .find(|r| r["solver"] == "local-search")
        .unwrap();
    assert!(local["moves"].as_u64().is_some_and(|m| m > 0), "{local}");
    for r in results {
        for f in [
            "workload",
            "hardware",
            "solver",
            "best_latency_s",
            "valid",
            "curve",
        ] {
            assert!(r.get(f).is_some(), "missing {f} in {r}");
        }
        assert_eq!(r["valid"], true);
        let curve = r["curve"].as_array().unwrap();
        let last = curve.last().unwrap();
        assert_eq!(last[1], r["best_latency_s"]);
    }
    let case = out.join("diamond-tpu-v4i-like");
    for f in [
        "xla.mapping.json",
        "local-search.mapping.json",
        "curves.svg",
    ] {
        assert!(case.join(f).exists(), "{f}");
    }
    // The saved results are reused, not raced again.
    let again = json(&args);
    assert_eq!(again["results"], v["results"]);
    let (code, _, err) = run(&[
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "1",
        "--solver",
        "nope",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown race solver `nope`"), "{err}");
    // A setting no solver of the race reads would be dropped without a word: refused.
    let (code, _, err) = run(&[
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "1",
        "--solver",
        "xla",
        "--search-model",
        "learned",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "--search-model: only the muzero-train solver reads it, and it is not in this race"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `solvers` lists the registry: every name a race or `evaluate` takes, each saying what
/// it runs and where.
#[test]
fn solvers_lists_the_registry() {
    let v = json(&["solvers", "--json"]);
    let rows = v["solvers"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    for n in harness::registry::race_names()
        .into_iter()
        .chain(harness::registry::evaluate_names())
    {
        assert!(names.contains(&n), "{n} is not listed");
    }
    for r in rows {
        assert!(!r["about"].as_str().unwrap().is_empty(), "{r}");
        assert!(!r["runs_in"].as_array().unwrap().is_empty(), "{r}");
    }
    let muzero = rows.iter().find(|r| r["name"] == "muzero").unwrap();
    assert!(muzero["about"].as_str().unwrap().contains("local search"));
    let (code, text, _) = run(&["solvers"]);
    assert_eq!(code, 0);
    assert!(text.contains("guided-bundled") && text.contains("runs in: race (when named)"));
}
