//! Builds a solution pool: the learned start's training data (`malloc_muzero::start::pool`).
//!
//!     cargo run --release -p harness --example solution_pool -- OUT_DIR \
//!         [--exact-seconds 10] [--search-seconds 4] [--searches 2] [--threads 2]
//!
//! The programs are none of the suite's, the scale tier's, the held-out or the validation
//! programs (of the generalist or of the MIP's share): bundled models outside all of them,
//! generated random DAGs of 40 to 300 ops and two generated programs of 600 and 1,200 ops,
//! each at the scale tier's capacity rule and at half of it on tpu-v4i-like, and the bundled
//! ones also on nnp-i-like (two fast levels). Per case it keeps the exact pipeline's best
//! mapping (the MIP, then windows) and the local search's best of each seed, with their
//! simulated latencies. Cases run in parallel, one thread each; each file is written
//! atomically and the manifest after every case, so a stopped run keeps what it finished.

use accel_sim::{Hardware, Mapping, MappingFile, Program, Simulator};
use bench_workloads::suite::{divide_fast_levels, scale_hardware};
use malloc_game::anytime::{AnytimeSolver, Incumbent, Limit, LocalSearch};
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::start::pool::{Pool, PoolCase, PoolMapping};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Bundled programs outside the suite, the tier, the held-out and every validation set.
const BUNDLED: &[&str] = &[
    "googlenet",
    "squeezenet1-1",
    "llama-small-s128",
    "jax-convnet-train",
    "jax-mlp-train",
    "jax-rnn-scan",
    "chain",
    "diamond",
];

struct Args {
    out: PathBuf,
    exact_seconds: f64,
    search_seconds: f64,
    searches: u64,
    threads: usize,
}

fn parse(args: Vec<String>) -> Result<Args, String> {
    let mut it = args.into_iter();
    let out = it.next().ok_or("OUT_DIR is required")?;
    let mut a = Args {
        out: PathBuf::from(out),
        exact_seconds: 10.0,
        search_seconds: 4.0,
        searches: 2,
        threads: 2,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: String| format!("{flag} {v}: {e}");
        match flag.as_str() {
            "--exact-seconds" => a.exact_seconds = v.parse().map_err(|e| bad(format!("{e}")))?,
            "--search-seconds" => a.search_seconds = v.parse().map_err(|e| bad(format!("{e}")))?,
            "--searches" => a.searches = v.parse().map_err(|e| bad(format!("{e}")))?,
            "--threads" => a.threads = v.parse().map_err(|e| bad(format!("{e}")))?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

/// One case to solve: its name, its program (and the file it is saved as, for generated
/// ones) and its hardware.
struct Job {
    name: String,
    program: Arc<Program>,
    file: Option<String>,
    hw: Hardware,
}

fn jobs() -> Result<Vec<Job>, String> {
    let tpu = Hardware::preset("tpu-v4i-like").map_err(|e| e.to_string())?;
    let nnp = Hardware::preset("nnp-i-like").map_err(|e| e.to_string())?;
    let mut programs: Vec<(Arc<Program>, Option<String>, bool)> = Vec::new();
    for name in BUNDLED {
        let p = bench_workloads::load(name).map_err(|e| e.to_string())?;
        programs.push((Arc::new(p), None, true));
    }
    for (k, ops) in [40, 80, 120, 200, 300].into_iter().enumerate() {
        for seed in 2..6u64 {
            let p = bench_workloads::synthetic::random_dag(ops, 100 * k as u64 + seed);
            programs.push((
                Arc::new(p),
                Some(format!("programs/random-dag-{ops}-{seed}.json")),
                false,
            ));
        }
    }
    for (ops, seed) in [(600, 7u64), (1200, 8)] {
        let p = bench_workloads::synthetic::large_random(ops, seed);
        programs.push((
            Arc::new(p),
            Some(format!("programs/large-{ops}-{seed}.json")),
            false,
        ));
    }
    let mut jobs = Vec::new();
    for (program, file, bundled) in programs {
        let label = file.as_deref().map_or(program.name().to_string(), |f| {
            f.trim_start_matches("programs/")
                .trim_end_matches(".json")
                .to_string()
        });
        let rule = scale_hardware(&program, tpu.clone());
        let mut hws = vec![
            ("tpu-rule", rule.clone()),
            ("tpu-half", divide_fast_levels(rule, 2)),
        ];
        if bundled {
            hws.push(("nnp-rule", scale_hardware(&program, nnp.clone())));
        }
        for (tag, hw) in hws {
            jobs.push(Job {
                name: format!("{label}@{tag}"),
                program: Arc::clone(&program),
                file: file.clone(),
                hw,
            });
        }
    }
    Ok(jobs)
}

/// The exact pipeline's mapping within `seconds`: the MIP for half, windows for the rest.
fn exact_mapping(program: &Program, hw: &Hardware, seconds: f64, seed: u64) -> Option<Mapping> {
    let t0 = Instant::now();
    let config = exact::ExactConfig {
        seconds: seconds * 0.5,
        relative_gap: 0.0,
        objective: exact::Objective::Simulated,
        windows: exact::Windows::Auto,
    };
    let starts = exact::Exact::starts(program, hw);
    let solution = exact::solve(program, hw, &config, &starts).ok()?;
    if solution.optimal() {
        return Some(solution.mapping);
    }
    let windows = exact::WindowConfig {
        seconds: (seconds - t0.elapsed().as_secs_f64()).max(0.0),
        seed,
    };
    match exact::improve(program, hw, &solution.mapping, &windows, &mut |_, _| {}) {
        Ok(found) if found.simulated_s < solution.simulated_s => Some(found.mapping),
        _ => Some(solution.mapping),
    }
}

/// The kept mappings of one case, fastest first, each with its solver, seed and latency.
fn solve(job: &Job, args: &Args) -> Result<Vec<(Mapping, String, u64, f64)>, String> {
    let (program, hw) = (job.program.as_ref(), &job.hw);
    let mut found = Vec::new();
    if let Some(m) = exact_mapping(program, hw, args.exact_seconds, 0) {
        found.push((m, "exact".to_string(), 0));
    }
    let setup = GameSetup::new(Arc::clone(&job.program), hw.clone(), GameOptions::default())
        .map_err(|e| format!("{}: {e}", job.name))?;
    for seed in 0..args.searches {
        let incumbent = Incumbent::new(Instant::now());
        let limit = Limit::from_now(args.search_seconds, 1);
        LocalSearch::default().run(&setup, seed, &limit, &incumbent);
        if let Some(g) = incumbent.best() {
            found.push((g.mapping(), "local-search".to_string(), seed));
        }
    }
    let mut sim = Simulator::new(program, hw);
    let mut kept: Vec<(Mapping, String, u64, f64)> = Vec::new();
    for (m, solver, seed) in found {
        m.validate(program, hw)
            .map_err(|e| format!("{}: {solver}: {e}", job.name))?;
        let latency = sim.run(&m, false).latency_s;
        kept.push((m, solver, seed, latency));
    }
    kept.sort_by(|a, b| a.3.total_cmp(&b.3));
    Ok(kept)
}

fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    binio::write_bytes_atomic(path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(args: Args) -> Result<(), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let jobs = jobs()?;
    for job in &jobs {
        if let Some(f) = &job.file {
            let text = bench_workloads::json::to_json(&job.program, None);
            write_atomic(&args.out.join(f), &text)?;
        }
    }
    let pool = Mutex::new(Pool::new());
    let done = AtomicUsize::new(0);
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..args.threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= jobs.len() || failed.lock().map_or(true, |f| f.is_some()) {
                    break;
                }
                if let Err(e) = one_case(&jobs[i], &args, &pool, &done, jobs.len()) {
                    if let Ok(mut f) = failed.lock() {
                        f.get_or_insert(e);
                    }
                }
            });
        }
    });
    match failed.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err("a case panicked".into()),
    }
}

/// Solves `job` and adds it to the pool, written at once.
fn one_case(
    job: &Job,
    args: &Args,
    pool: &Mutex<Pool>,
    done: &AtomicUsize,
    total: usize,
) -> Result<(), String> {
    let kept = solve(job, args)?;
    let xla = xla_msa::OneShotSolver::solve(&xla_msa::Xla::default(), &job.program, &job.hw);
    let xla_latency_s = Simulator::new(&job.program, &job.hw)
        .run(&xla, false)
        .latency_s;
    let mut mappings = Vec::new();
    for (k, (m, solver, seed, latency_s)) in kept.iter().enumerate() {
        let file = format!("mappings/{}-{k}.json", job.name.replace('@', "-"));
        let text = serde_json::to_string(&MappingFile::from_mapping(&job.program, m))
            .map_err(|e| e.to_string())?;
        write_atomic(&args.out.join(&file), &text)?;
        mappings.push(PoolMapping {
            file,
            solver: solver.clone(),
            seed: *seed,
            latency_s: *latency_s,
        });
    }
    let case = PoolCase {
        name: job.name.clone(),
        program: job
            .file
            .clone()
            .unwrap_or_else(|| job.program.name().to_string()),
        hardware: job.hw.to_file(),
        xla_latency_s,
        mappings,
    };
    let mut pool = pool.lock().map_err(|_| "a case panicked".to_string())?;
    pool.cases.push(case);
    pool.cases.sort_by(|a, b| a.name.cmp(&b.name));
    pool.write(&args.out).map_err(|e| e.to_string())?;
    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
    let best = kept.first().map_or(f64::NAN, |k| k.3);
    eprintln!(
        "[{n}/{total}] {}: {} mappings, best {:.1} us, xla {:.1} us",
        job.name,
        kept.len(),
        best * 1e6,
        xla_latency_s * 1e6
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1).collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("solution_pool: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("solution_pool: {e}");
            ExitCode::FAILURE
        }
    }
}
