//! The run folder's own guards: what it reads and deletes stays inside it.

use super::*;

#[test]
fn latest_checkpoint_outside_the_run_is_refused() {
    let root = std::env::temp_dir().join(format!("mmz-latest-{}", std::process::id()));
    let run = RunDir::new(&root);
    std::fs::create_dir_all(run.checkpoints()).unwrap();
    let latest = |dir: &str| {
        format!(
            r#"{{"iteration": 3, "dir": "{dir}", "train_steps": 1, "positions": 1, "elapsed_s": 1.0}}"#
        )
    };
    let path = run.checkpoints().join("latest.json");
    for hostile in ["../../../../etc", "/etc", "iter-", "iter-1/../../x", ""] {
        std::fs::write(&path, latest(hostile)).unwrap();
        let err = run.read_latest().unwrap_err().to_string();
        assert!(
            err.contains("latest.json") && err.contains("`dir`"),
            "{err}"
        );
    }
    std::fs::write(&path, latest("iter-000003")).unwrap();
    assert_eq!(run.read_latest().unwrap().unwrap().dir, "iter-000003");
    std::fs::remove_dir_all(&root).unwrap();
}

/// `--restart` and the sweep of a start or resume delete only inside the run folder:
/// links named like a checkpoint, an evaluation game or a temporary file go
/// themselves, what they lead to stays; a run folder whose own folder is a link out
/// of it is refused.
#[cfg(unix)]
#[test]
fn a_restart_never_deletes_through_a_link() {
    use std::os::unix::fs::symlink;
    let root = std::env::temp_dir().join(format!("mmz-restart-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let outside = root.join("outside");
    std::fs::create_dir_all(outside.join("iter-000001")).unwrap();
    let theirs = [
        outside.join("iter-000001").join("weights.safetensors"),
        outside.join(".metrics.jsonl.tmp.1.1"),
        outside.join("eval-000009.game"),
    ];
    for f in &theirs {
        std::fs::write(f, b"theirs").unwrap();
    }
    let run = RunDir::new(&root.join("run"));
    run.create().unwrap();
    let cp = run.checkpoints();
    symlink(outside.join("iter-000001"), cp.join("iter-000001")).unwrap();
    symlink(&outside, cp.join("iter-000002")).unwrap();
    symlink(&theirs[1], cp.join(".latest.json.tmp.1.1")).unwrap();
    symlink(&theirs[2], run.games().join("eval-000009.game")).unwrap();
    symlink(&outside, run.best().join("000")).unwrap();
    std::fs::write(run.metrics(), "{\"iteration\": 0}\n").unwrap();
    run.forget_checkpoints().unwrap();
    for f in &theirs {
        assert_eq!(std::fs::read(f).unwrap(), b"theirs", "{}", f.display());
    }
    assert!(entries(&cp).unwrap().is_empty());
    assert!(entries(&run.games()).unwrap().is_empty());
    assert_eq!(std::fs::read(run.metrics()).unwrap(), b"");
    // The run's own folders are never links out of it.
    std::fs::remove_dir(run.games()).unwrap();
    symlink(&outside, run.games()).unwrap();
    let err = run.create().unwrap_err().to_string();
    assert!(
        err.contains("games") && err.contains("symbolic link"),
        "{err}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
