//! Hostile or careless input to the binary: each gets one error line and status 2, never a
//! panic, a hang, a wrong number, or status 0 for an invalid mapping.

use std::path::{Path, PathBuf};

mod common;
use common::run;

/// Status 2 and one `error:` line that contains each of `says`.
fn refused(args: &[&str], says: &[&str]) {
    let (code, _, err) = run(args);
    assert_eq!(code, 2, "{args:?}: status {code}, stderr {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    // A slow read (512 MiB of /dev/zero on a loaded machine) may log a progress line
    // (`[  1.0 s] ...`) first; the first line of anything else is the one error.
    let first = err
        .lines()
        .find(|l| !l.starts_with('['))
        .unwrap_or_default();
    assert!(first.starts_with("error:"), "{args:?}: {err}");
    for s in says {
        assert!(err.contains(s), "{args:?}: expected `{s}` in {err}");
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cli-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A tiny program file: x -> op0 -> a -> op1 -> y, with a weight read by both ops.
fn program_json(name: &str, second_buffer: &str) -> String {
    format!(
        r#"{{"format": "mallocmuzero-program", "version": 1, "name": "{name}",
  "buffers": [
    {{"name": "x", "bytes": 65536, "kind": "input"}},
    {{"name": "{second_buffer}", "bytes": 131072, "kind": "weight"}},
    {{"name": "a", "bytes": 65536, "kind": "activation"}},
    {{"name": "y", "bytes": 65536, "kind": "output"}}
  ],
  "ops": [
    {{"name": "op0", "kind": "matmul", "flops": 1e9, "reads": [0, 1], "writes": [2]}},
    {{"name": "op1", "kind": "matmul", "flops": 1e9, "reads": [2, 1], "writes": [3]}}
  ]}}"#
    )
}

#[test]
fn sizes_that_overflow_are_errors_not_wrong_numbers() {
    let dir = temp_dir("wrap");
    let csv = dir.join("wrap.csv");
    std::fs::write(
        &csv,
        "id,lower,upper,size\n0,0,3,100\n1,1,4,9223372036854775808\n2,1,4,9223372036854775808\n",
    )
    .unwrap();
    refused(
        &[
            "evaluate",
            "--workload",
            s(&csv),
            "--solver",
            "xla",
            "--json",
        ],
        &["wrap.csv", "2^53"],
    );
    for cap in [
        "1:18446744073709551615",
        "99999999999999999999GiB",
        "1:1e30",
    ] {
        refused(
            &["evaluate", "--hw", "nnp-i-like", "--fast-capacity", cap],
            &["fast-capacity"],
        );
    }
    // Below the level's alignment (64 B on nnp-i-like's level 1).
    refused(
        &["evaluate", "--hw", "nnp-i-like", "--fast-capacity", "1:32"],
        &["alignment"],
    );
}

#[test]
fn bad_durations_are_refused() {
    for v in ["-1", "NaN", "inf", "0"] {
        let arg = format!("--seconds={v}");
        refused(&["bench", &arg], &["--seconds"]);
    }
}

#[test]
fn an_invalid_or_foreign_mapping_exits_2() {
    let dir = temp_dir("mapping");
    let program = dir.join("tiny.json");
    std::fs::write(&program, program_json("tiny", "w")).unwrap();
    let base = ["evaluate", "--workload", s(&program), "--solver", "xla"];
    let write = |name: &str, workload: &str, entries: &str| {
        let p = dir.join(name);
        std::fs::write(
            &p,
            format!(
                r#"{{"format": "mallocmuzero-mapping", "version": 1, "workload": "{workload}", "buffers": [{entries}]}}"#
            ),
        )
        .unwrap();
        p
    };
    let alloc = |offset: u64| {
        format!(
            r#"{{"level": 1, "offset": {offset}, "start": 0, "end": 1, "arrival": "prefetch"}}"#
        )
    };
    // Overlapping the capacity: the validator's message, status 2.
    let too_far = write(
        "far.json",
        "tiny",
        &format!(r#"{{"buffer": "w", "allocations": [{}]}}"#, alloc(1 << 40)),
    );
    let mut args = base.to_vec();
    args.extend(["--mapping", s(&too_far)]);
    refused(&args, &["invalid mapping", "far.json"]);
    // One buffer listed twice.
    let twice = write(
        "twice.json",
        "tiny",
        &format!(
            r#"{{"buffer": "w", "allocations": []}}, {{"buffer": "w", "allocations": [{}]}}"#,
            alloc(0)
        ),
    );
    let mut args = base.to_vec();
    args.extend(["--mapping", s(&twice)]);
    refused(&args, &["twice.json", "buffers[1]", "already listed"]);
    // A mapping of another program.
    let other = write("other.json", "resnet50", "");
    let mut args = base.to_vec();
    args.extend(["--mapping", s(&other)]);
    refused(&args, &["other.json", "workload", "resnet50"]);
}

#[test]
fn repeated_buffer_names_are_refused_at_load() {
    let dir = temp_dir("names");
    let p = dir.join("dup.json");
    std::fs::write(&p, program_json("dup", "x")).unwrap();
    refused(
        &["evaluate", "--workload", s(&p)],
        &["dup.json", "both named `x`"],
    );
}

#[test]
fn a_program_name_cannot_steer_a_saved_game_out_of_its_folder() {
    let dir = temp_dir("escape");
    let p = dir.join("evil.json");
    std::fs::write(&p, program_json("../escaped", "w")).unwrap();
    let save = dir.join("games");
    let (code, _, err) = run(&[
        "play",
        "--workload",
        s(&p),
        "--player",
        "greedy",
        "--save",
        s(&save),
    ]);
    assert_eq!(code, 0, "{err}");
    let inside: Vec<_> = std::fs::read_dir(&save)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(inside.len(), 1, "{inside:?}");
    assert!(!inside[0].starts_with('.'), "{inside:?}");
    let outside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("escaped"))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    // The saved game of a file program names the flag that replays it.
    let game = save.join(&inside[0]);
    refused(&["replay", s(&game)], &["--workload FILE"]);
    let (code, _, err) = run(&["replay", s(&game), "--workload", s(&p)]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let dir = temp_dir("bom");
    let p = dir.join("bom.json");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(program_json("bom", "w").as_bytes());
    std::fs::write(&p, bytes).unwrap();
    let (code, _, err) = run(&["evaluate", "--workload", s(&p), "--solver", "xla"]);
    assert_eq!(code, 0, "{err}");
    let c = dir.join("bom.csv");
    std::fs::write(
        &c,
        b"\xEF\xBB\xBFid,lower,upper,size\n0,0,2,100\n1,1,3,100\n",
    )
    .unwrap();
    let (code, _, err) = run(&["evaluate", "--workload", s(&c), "--solver", "xla"]);
    assert_eq!(code, 0, "{err}");
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_at_the_size_cap() {
    let dir = temp_dir("zero");
    let p = dir.join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    refused(&["evaluate", "--workload", s(&p)], &["zero.json", "limit"]);
    let h = dir.join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &h).unwrap();
    refused(&["evaluate", "--hw", s(&h)], &["zero.toml", "limit"]);
    let m = dir.join("zero-mapping.json");
    std::os::unix::fs::symlink("/dev/zero", &m).unwrap();
    refused(
        &["evaluate", "--workload", "diamond", "--mapping", s(&m)],
        &["zero-mapping.json", "limit"],
    );
    let c = dir.join("zero-config.json");
    std::os::unix::fs::symlink("/dev/zero", &c).unwrap();
    let out = dir.join("run");
    refused(
        &[
            "train",
            "--workload",
            "diamond",
            "--config",
            s(&c),
            "--out",
            s(&out),
        ],
        &["zero-config.json", "limit"],
    );
    let g = dir.join("zero.game");
    std::os::unix::fs::symlink("/dev/zero", &g).unwrap();
    refused(&["replay", s(&g)], &["zero.game"]);
}

#[test]
fn a_damaged_saved_game_is_described_in_words() {
    let dir = temp_dir("damaged");
    let (code, _, err) = run(&[
        "play",
        "--workload",
        "diamond",
        "--player",
        "greedy",
        "--save",
        s(&dir),
    ]);
    assert_eq!(code, 0, "{err}");
    let game = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&game).unwrap();
    for cut in [bytes.len() - 3, 20, 5] {
        std::fs::write(&game, &bytes[..cut]).unwrap();
        let (code, _, err) = run(&["replay", s(&game)]);
        assert_eq!(code, 2, "{err}");
        assert!(
            !err.contains("UnexpectedEnd") && !err.contains('{'),
            "{err}"
        );
    }
}
