//! What the binary's end-to-end tests share. Each test binary uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the binary with `args`: (status, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mallocmuzero"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `train --json` of the tiny case (diamond on tpu-v4i-like at 4 MiB) into `dir` with the
/// config file `config`, for `steps` steps, its output piped.
pub fn train_diamond(dir: &Path, config: &Path, steps: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mallocmuzero"));
    c.args(["train", "--workload", "diamond", "--hw", "tpu-v4i-like"])
        .args(["--fast-capacity", "4MiB", "--steps", steps])
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(dir)
        .arg("--json");
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}
