//! Issue 56, items 3 and 4, through the real binary: run folders stay inside themselves
//! and know their kind; names from user files neither blank a page nor drive the
//! terminal; an output never lands on what a command reads; saved games keep their
//! player and seed in the file name however long the program's name.

#![cfg(unix)]

mod common;

use common::run;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn folder(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("mmz-fan-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Exit 2, one line on stderr holding each of `says`, no panic.
fn refused(args: &[&str], says: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: stdout {out}, stderr {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    for want in says {
        assert!(err.contains(want), "{args:?}: `{want}` not in {err}");
    }
    err
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn train(dir: &Path, config: &Path) -> Vec<String> {
    [
        "train",
        "--workload",
        "diamond",
        "--fast-capacity",
        "4MiB",
        "--steps",
        "4",
        "--config",
        s(config),
        "--out",
        s(dir),
        "--json",
    ]
    .map(String::from)
    .to_vec()
}

fn race(dir: &Path) -> Vec<String> {
    [
        "race",
        "--workload",
        "diamond",
        "--seconds",
        "0.5",
        "--solver",
        "greedy-size",
        "--threads",
        "1",
        "--out",
        s(dir),
        "--json",
    ]
    .map(String::from)
    .to_vec()
}

fn egrl(dir: &Path) -> Vec<String> {
    [
        "train-egrl",
        "--workload",
        "diamond",
        "--generations",
        "1",
        "--out",
        s(dir),
        "--json",
    ]
    .map(String::from)
    .to_vec()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Every file under `dir` with its bytes, to show a refused command changed nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && e.file_name() != ".mallocmuzero.lock" {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Each command refuses a folder of another kind, naming what it is and changing nothing;
/// a regular file given as a run folder is said to be one; `--restart` needs `--resume`.
#[test]
fn a_run_folder_of_another_kind_is_refused_naming_what_it_is() {
    let root = folder("kinds");
    let config = root.join("config.json");
    std::fs::write(
        &config,
        r#"{"checkpoint_every": 2, "demo_pretrain_steps": 5}"#,
    )
    .unwrap();
    let (t, r, e) = (root.join("train"), root.join("race"), root.join("egrl"));
    ok(&args(&train(&t, &config)));
    ok(&args(&race(&r)));
    ok(&args(&egrl(&e)));
    for (d, word) in [(&t, "train"), (&r, "race"), (&e, "train-egrl")] {
        let kind = std::fs::read_to_string(d.join(".mallocmuzero.kind")).unwrap();
        assert_eq!(kind.trim(), word);
    }
    let before: Vec<_> = [&t, &r, &e].iter().map(|d| snapshot(d)).collect();
    let (tn, rn, en) = (
        "a training run folder",
        "a race folder",
        "an EGRL run folder",
    );
    refused(
        &args(&race(&t)),
        &[s(&t), tn, "`mallocmuzero race --out` writes only"],
    );
    refused(&args(&race(&e)), &[s(&e), en]);
    refused(
        &args(&train(&r, &config)),
        &[s(&r), rn, "`mallocmuzero train` writes only"],
    );
    refused(&args(&train(&e, &config)), &[s(&e), en]);
    refused(
        &args(&egrl(&t)),
        &[s(&t), tn, "`mallocmuzero train-egrl` writes only"],
    );
    refused(&args(&egrl(&r)), &[s(&r), rn]);
    refused(&["train", "--resume", s(&r)], &[s(&r), rn]);
    refused(
        &["train-egrl", "--resume", s(&t)],
        &[tn, "mallocmuzero train --resume"],
    );
    refused(
        &[
            "evaluate",
            "--workload",
            "diamond",
            "--solver",
            "muzero",
            "--checkpoint",
            s(&r),
        ],
        &[rn, "what is read here is a training run folder"],
    );
    let after: Vec<_> = [&t, &r, &e].iter().map(|d| snapshot(d)).collect();
    assert_eq!(before, after, "a refused command changed a folder");
    // Each still continues in its own command.
    ok(&["train", "--resume", s(&t), "--steps", "6", "--json"]);
    ok(&args(&race(&r)));
    ok(&[
        "train-egrl",
        "--resume",
        s(&e),
        "--generations",
        "2",
        "--json",
    ]);

    // A folder of an older build (no kind file) is known by its files, and still resumes.
    std::fs::remove_file(t.join(".mallocmuzero.kind")).unwrap();
    refused(&args(&race(&t)), &[tn, "(run.json)"]);
    ok(&["train", "--resume", s(&t), "--steps", "8", "--json"]);
    assert!(t.join(".mallocmuzero.kind").is_file());

    let file = root.join("a-file");
    std::fs::write(&file, b"mine").unwrap();
    for a in [train(&file, &config), race(&file), egrl(&file)] {
        refused(&args(&a), &[s(&file), "a regular file, not a folder"]);
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    let (code, _, err) = run(&["train", "--restart"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A lock file that is a link (to a file, or to nothing) is refused and nothing is written
/// where it leads; a run folder's own folder that is a link is refused too.
#[test]
fn nothing_is_written_outside_a_run_folder() {
    let root = folder("outside");
    let outside = root.join("outside.txt");
    std::fs::write(&outside, b"precious").unwrap();
    let config = root.join("config.json");
    std::fs::write(
        &config,
        r#"{"checkpoint_every": 2, "demo_pretrain_steps": 5}"#,
    )
    .unwrap();
    for (name, target) in [
        ("to-file", outside.clone()),
        ("dangling", root.join("made")),
    ] {
        let commands: [fn(&Path, &Path) -> Vec<String>; 3] =
            [train, |d, _| race(d), |d, _| egrl(d)];
        for a in commands {
            let dir = root.join(name);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            symlink(&target, dir.join(".mallocmuzero.lock")).unwrap();
            refused(
                &args(&a(&dir, &config)),
                &[".mallocmuzero.lock", "symbolic link"],
            );
        }
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
    assert!(!root.join("made").exists());

    // A training run whose `best/` was made a link out of it: refused, nothing written
    // there.
    let run_dir = root.join("run");
    ok(&args(&train(&run_dir, &config)));
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::rename(run_dir.join("best"), root.join("best-moved")).unwrap();
    symlink(&elsewhere, run_dir.join("best")).unwrap();
    refused(
        &[
            "train",
            "--resume",
            s(&run_dir),
            "--restart",
            "--steps",
            "6",
        ],
        &["best", "symbolic link"],
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&root);
}

/// A program whose names carry `<!--`, `</script>` and terminal escape sequences, with a
/// name of 130+ characters.
fn hostile_program(dir: &Path) -> PathBuf {
    let cut = dir.join("diamond.json");
    ok(&[
        "cut",
        "--workload",
        "diamond",
        "--ops",
        "..8",
        "--out",
        s(&cut),
    ]);
    let mut p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cut).unwrap()).unwrap();
    p["name"] = format!("ev\u{1b}]0;owned\u{7}<!--<script>{}", "x".repeat(130)).into();
    p["buffers"][1]["name"] = "w\u{1b}[2J<!--\nfake row".into();
    p.as_object_mut().unwrap().remove("stats");
    let path = dir.join("hostile.json");
    std::fs::write(&path, p.to_string()).unwrap();
    path
}

#[test]
fn names_never_blank_the_page_or_drive_the_terminal() {
    let root = folder("names");
    let program = hostile_program(&root);
    let w = s(&program);
    let games = root.join("games");
    for player in ["greedy", "beam:2", "random"] {
        let a = [
            "play",
            "--workload",
            w,
            "--player",
            player,
            "--episodes",
            "2",
        ];
        let out = ok(&[&a[..], &["--save", s(&games)]].concat());
        assert!(!out.contains('\u{1b}'), "{out}");
    }
    // Every player and seed kept a file of its own, with its extension.
    let mut names: Vec<String> = std::fs::read_dir(&games)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names.len(), 6, "{names:?}");
    for n in &names {
        assert!(n.ends_with(".game") && n.len() < 200, "{n}");
    }
    assert!(
        names.iter().any(|n| n.ends_with("-beam-2-1.game")),
        "{names:?}"
    );
    let game = games.join(&names[0]);
    let g = s(&game);

    // The terminal: no control character of a name reaches it, nor a line break of one.
    let steps = ok(&["replay", g, "--workload", w, "--steps"]);
    let eval = ok(&["evaluate", "--workload", w, "--solver", "greedy"]);
    for out in [&steps, &eval] {
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
        assert!(!out.lines().any(|l| l.starts_with("fake row")), "{out}");
    }
    assert!(steps.contains("w\\u{1b}[2J<!--\\nfake row"), "{steps}");
    assert!(eval.contains("ev\\u{1b}]0;owned\\u{7}"), "{eval}");

    // The page: no `<` of a name inside its data.
    let page = root.join("page.html");
    ok(&["replay", g, "--workload", w, "--html", s(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find("id=\"mmz-data\">").unwrap() + "id=\"mmz-data\">".len();
    let data = &html[start..start + html[start..].find("</script>").unwrap()];
    assert!(!data.contains('<'), "{}", &data[..300]);
    let v: serde_json::Value = serde_json::from_str(data).unwrap();
    assert!(v["a"]["workload"]
        .as_str()
        .unwrap()
        .contains("<!--<script>"));

    // Outputs onto what is read, or onto each other: refused, the game intact.
    let before = std::fs::read(&game).unwrap();
    let other = games.join(&names[1]);
    let json = root.join("g.json");
    for (a, says) in [
        (vec!["--html", g], "names the game being read (GAME"),
        (
            vec!["--html", s(&other), "--compare", s(&other)],
            "names the game compared against (--compare",
        ),
        (
            vec!["--html", w],
            "names the program being read (--workload",
        ),
        (vec!["--export-json", g], "names the game being read"),
        (
            vec!["--html", s(&json), "--export-json", s(&json)],
            "name one file",
        ),
    ] {
        let mut all = vec!["replay", g, "--workload", w];
        all.extend(a);
        refused(&all, &[says]);
    }
    assert_eq!(std::fs::read(&game).unwrap(), before);
    assert!(!json.exists());
    let _ = std::fs::remove_dir_all(&root);
}
