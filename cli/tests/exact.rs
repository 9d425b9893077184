//! `evaluate --solver exact`, `race --solver exact` and workload windows, end to end.

mod common;
use bench_workloads::small::SmallCase;
use common::run;

/// `command` on small case `c` (its workload, hardware and capacity), then `rest`.
fn on_case(command: &str, c: &SmallCase, rest: &[&str]) -> Vec<String> {
    let case = [
        command,
        "--workload",
        c.workload,
        "--hw",
        c.hardware,
        "--fast-capacity",
        &c.fast_capacity.to_string(),
    ]
    .map(String::from);
    case.into_iter()
        .chain(rest.iter().map(|a| a.to_string()))
        .collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The done-when of the exact solver: a valid mapping, `"optimal": true`, and no
/// solver's cost-model latency below it under `--exact-objective proxy`; every row
/// carries its gap to the case's bound, which is at least the optimum.
#[test]
fn evaluate_exact_proves_a_small_case_and_gives_every_row_its_gap() {
    let c = &bench_workloads::small::cases()[0];
    let args = on_case(
        "evaluate",
        c,
        &[
            "--solver",
            "xla",
            "--solver",
            "greedy-size",
            "--solver",
            "beam:8",
            "--solver",
            "exact",
            "--exact-objective",
            "proxy",
            "--json",
        ],
    );
    let v = json(&strs(&args));
    let rows = v["results"].as_array().unwrap();
    let exact = rows.iter().find(|r| r["solver"] == "exact").unwrap();
    assert_eq!(exact["valid"], true);
    assert_eq!(exact["proof"]["optimal"], true, "{exact}");
    assert_eq!(exact["proof"]["status"], "optimal");
    let optimum = exact["proxy_latency_s"].as_f64().unwrap();
    assert!((optimum - c.optimum_s).abs() <= 1e-9 * c.optimum_s);
    assert_eq!(exact["proof"]["objective"], "proxy");
    for r in rows {
        let model = r["proxy_latency_s"].as_f64().unwrap();
        assert!(model >= optimum * (1.0 - 1e-9), "{r}");
        let bound = r["lower_bound_s"].as_f64().unwrap();
        assert!(bound >= optimum * (1.0 - 1e-12), "{r}");
        let sim = r["latency_s"].as_f64().unwrap();
        let gap = r["gap_to_bound"].as_f64().unwrap();
        assert!((gap - (sim / bound - 1.0)).abs() < 1e-9);
        assert!(gap >= -1e-9, "{r}");
    }
    // The table says it in words, for either objective.
    for (objective, words) in [
        ("proxy", "optimal for the cost model"),
        ("simulated", "for the simulator's relaxation"),
    ] {
        // Two seconds: under `simulated` the local search has what the MIP leaves.
        let rest = [
            "--solver",
            "exact",
            "--exact-objective",
            objective,
            "--exact-seconds",
            "2",
        ];
        let (code, out, err) = run(&strs(&on_case("evaluate", c, &rest)));
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(words), "{out}");
        assert!(out.contains("lower bound"), "{out}");
    }
}

#[test]
fn a_time_limit_too_short_to_prove_still_returns_a_valid_mapping_and_its_gap() {
    // A nanosecond is over before the first model is built: the answer is the best of
    // the mappings the solve starts from (xla's, greedy-size's), with no proof.
    let v = json(&[
        "evaluate",
        "--workload",
        "random-dag",
        "--solver",
        "exact",
        "--exact-seconds",
        "1e-9",
        "--json",
    ]);
    let r = &v["results"][0];
    assert_eq!(r["valid"], true);
    assert_eq!(r["proof"]["optimal"], false, "{r}");
    assert_eq!(r["proof"]["status"], "time-limit");
    assert!(r["proof"]["gap"].as_f64().unwrap() > 0.0);
    // No proof: random-dag is a suite case, so its checked-in bound is the case's.
    assert_eq!(r["bound_source"], "cached");
    assert!(r["gap_to_bound"].as_f64().unwrap() >= 0.0);
}

#[test]
fn race_exact_fills_the_gap_column() {
    let c = &bench_workloads::small::cases()[1];
    let dir = std::env::temp_dir().join(format!("mmz-race-exact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let args = on_case(
        "race",
        c,
        &[
            "--seconds",
            "1",
            "--threads",
            "1",
            "--solver",
            "xla",
            "--solver",
            "local-search",
            "--solver",
            "exact",
            "--out",
            out,
            "--json",
        ],
    );
    let v = json(&strs(&args));
    for r in v["results"].as_array().unwrap() {
        assert!(r["gap_to_bound"].as_f64().unwrap() >= -1e-9, "{r}");
        assert!(r["lower_bound_s"].as_f64().unwrap() >= c.optimum_s * (1.0 - 1e-12));
    }
    // The saved results carry them too.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    for r in saved["results"].as_array().unwrap() {
        assert!(r["gap_to_bound"].is_f64(), "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_exact_flags_and_windows_are_one_line_errors() {
    // Flag values are refused by clap: its error line names the flag (a hint follows).
    for (args, flag) in [
        (
            &["evaluate", "--solver", "exact", "--exact-gap", "1.5"][..],
            "--exact-gap",
        ),
        (
            &["evaluate", "--solver", "exact", "--exact-seconds", "0"],
            "--exact-seconds",
        ),
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.lines().next().unwrap().contains(flag),
            "{args:?}: {err}"
        );
    }
    for spec in ["resnet50@40..10", "resnet50@0..100000", "resnet50@x..3"] {
        let (code, _, err) = run(&["evaluate", "--workload", spec, "--solver", "xla"]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{spec}: {err}");
        assert!(err.contains(spec) && err.contains("window"), "{err}");
    }
}

#[test]
fn cut_writes_a_window_as_a_program_file_that_loads_as_the_same_program() {
    let dir = std::env::temp_dir().join(format!("mmz-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("cut.json");
    let o = out.to_str().unwrap();
    let (code, _, err) = run(&["cut", "--workload", "resnet50", "--ops", "..20", "--out", o]);
    assert_eq!(code, 0, "{err}");
    let from_file = bench_workloads::load(o).unwrap();
    let direct = bench_workloads::load("resnet50@0..20").unwrap();
    assert_eq!(from_file.buffers(), direct.buffers());
    assert_eq!(from_file.ops(), direct.ops());
    let (code, _, err) = run(&["cut", "--workload", "resnet50", "--ops", "5..", "--out", o]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
