//! Loads HLO text files (or built-in workloads) and prints what the loader makes of each:
//! ops, buffers, GFLOPs, peak live bytes and the time the load took. For sizing a model
//! before bundling it:
//!
//! ```text
//! cargo run --release -p bench-workloads --example hlo_stats -- model.hlo.txt scale-gpt-12l-train
//! ```

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let specs: Vec<String> = std::env::args().skip(1).collect();
    if specs.is_empty() {
        eprintln!("usage: hlo_stats FILE.hlo.txt|WORKLOAD ...");
        return ExitCode::FAILURE;
    }
    println!("workload\tops\tbuffers\tgflops\tpeak_live_bytes\tload_s");
    for spec in specs {
        let t = Instant::now();
        match bench_workloads::load(&spec) {
            Ok(p) => println!(
                "{}\t{}\t{}\t{:.2}\t{}\t{:.2}",
                p.name(),
                p.len(),
                p.buffers().len(),
                p.total_flops() / 1e9,
                p.peak_live_bytes(),
                t.elapsed().as_secs_f64()
            ),
            Err(e) => {
                eprintln!("hlo_stats: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
