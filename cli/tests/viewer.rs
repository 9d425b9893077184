//! `replay --html` and `--compare`: the page is written (atomically, in one piece) and
//! described; bad input is one error line naming the file, exit 2.

mod common;

use common::run;
use std::path::{Path, PathBuf};

fn folder(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmz-viewer-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn play(dir: &Path, args: &[&str]) {
    let d = dir.display().to_string();
    let mut all = vec!["play", "--save", &d, "--json"];
    all.extend_from_slice(args);
    let (code, _, err) = run(&all);
    assert_eq!(code, 0, "{err}");
}

/// Exit 2 with one line on stderr that contains every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: stdout {out}, stderr {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` not in {err}");
    }
}

/// The path `play --save DIR` gives `workload`'s game by `player` at seed 0 on the default
/// hardware.
fn saved(dir: &Path, workload: &str, player: &str) -> String {
    let name = format!("{workload}-tpu-v4i-like-{player}-0.game");
    dir.join(name).display().to_string()
}

#[test]
fn html_pages_are_written_and_described() {
    let dir = folder("ok");
    play(&dir, &["--workload", "alexnet", "--player", "greedy"]);
    play(&dir, &["--workload", "alexnet", "--player", "xla"]);
    let g = saved(&dir, "alexnet", "greedy");
    let x = saved(&dir, "alexnet", "xla");
    let page = dir.join("g.html");
    let p = page.display().to_string();
    let (code, out, err) = run(&["replay", &g, "--html", &p]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("viewer: wrote {p}")), "{out}");
    assert!(!out.contains("left out"), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let cmp = dir.join("c.html").display().to_string();
    let (code, out, err) = run(&["replay", &g, "--compare", &x, "--html", &cmp, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let h = &v["html"];
    assert_eq!(h["path"], cmp.as_str());
    assert_eq!(
        h["bytes"].as_u64().unwrap(),
        std::fs::metadata(&cmp).unwrap().len()
    );
    let gap = h["gap_s"].as_f64().unwrap();
    let (_, gx, _) = run(&["replay", &x, "--json"]);
    let gx: serde_json::Value = serde_json::from_str(gx.lines().last().unwrap()).unwrap();
    let want = v["latency_s"].as_f64().unwrap() - gx["latency_s"].as_f64().unwrap();
    assert!((gap - want).abs() < 1e-12, "{gap} vs {want}");
    // No temporary file is left beside the page.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_error_naming_the_file() {
    let dir = folder("bad");
    play(&dir, &["--workload", "alexnet", "--player", "greedy"]);
    play(&dir, &["--workload", "unet", "--player", "greedy"]);
    let other_hw = dir.join("hw");
    std::fs::create_dir_all(&other_hw).unwrap();
    play(
        &other_hw,
        &[
            "--workload",
            "alexnet",
            "--player",
            "xla",
            "--fast-capacity",
            "2MiB",
        ],
    );
    let g = saved(&dir, "alexnet", "greedy");
    let u = saved(&dir, "unet", "greedy");
    let h = saved(&other_hw, "alexnet", "xla");
    let out = dir.join("x.html").display().to_string();
    // A game of another program.
    refused(
        &["replay", &g, "--compare", &u, "--html", &out],
        &["--compare", &u, "`unet`"],
    );
    // A game of the same program on other hardware.
    refused(
        &["replay", &g, "--compare", &h, "--html", &out],
        &[
            "--compare",
            &h,
            "different settings: hardware.levels[1].capacity is",
            "in A and 2097152 in B",
        ],
    );
    // A truncated game, as GAME and as --compare.
    let bytes = std::fs::read(&g).unwrap();
    let cut = dir.join("cut.game");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let c = cut.display().to_string();
    refused(&["replay", &c, "--html", &out], &[&c]);
    refused(&["replay", &g, "--compare", &c, "--html", &out], &[&c]);
    // A page that cannot be written: its folder is missing, or it is a folder.
    let nowhere = dir.join("missing").join("x.html").display().to_string();
    refused(&["replay", &g, "--html", &nowhere], &[&nowhere]);
    let d = dir.display().to_string();
    refused(&["replay", &g, "--html", &d], &[&d]);
    assert!(!Path::new(&out).exists());
    // --compare means nothing without --html.
    let (code, _, err) = run(&["replay", &g, "--compare", &u]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--html"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
