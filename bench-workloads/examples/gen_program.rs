//! Writes a [`bench_workloads::synthetic::large_random`] program as program JSON, for
//! timing the solvers at scale:
//!
//! ```text
//! cargo run --release -p bench-workloads --example gen_program -- --ops 100000 --seed 0 --out /tmp/big.json
//! ```

use bench_workloads::{json, synthetic};
use std::process::ExitCode;

const USAGE: &str = "usage: gen_program --ops N [--seed S] --out FILE.json";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_program: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let (mut ops, mut seed, mut out) = (None, 0u64, None);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--ops" => {
                let v = value()?;
                ops = Some(v.parse::<usize>().map_err(|e| format!("--ops {v}: {e}"))?);
            }
            "--seed" => {
                let v = value()?;
                seed = v.parse().map_err(|e| format!("--seed {v}: {e}"))?;
            }
            "--out" => out = Some(value()?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let ops = ops.ok_or("--ops is required")?;
    let out = out.ok_or("--out is required")?;
    let program = synthetic::large_random(ops, seed);
    std::fs::write(&out, json::to_json(&program, None)).map_err(|e| format!("{out}: {e}"))?;
    println!(
        "{out}: {} ops, {} buffers",
        program.len(),
        program.buffers().len()
    );
    Ok(())
}
