//! `mallocmuzero`: the command line over the workspace's library crates. It holds flags and
//! printing only, so that everything it runs can be reached from Rust and Python too:
//! accel-sim (hardware, validation, the simulator), bench-workloads (programs, the suite,
//! windows), binio (atomic writes of what it saves), xla-msa (XLA's machinery and the
//! baselines), malloc-game (the game, players, saved games, pictures), muzero (the engine:
//! networks and search for `bench`, candle's thread setting), malloc-muzero (training and
//! the trained agent), harness (evaluate, the race, the solver registry), egrl
//! (`train-egrl`) and exact (the exact solver's limits and status).
//! Errors print one line and exit with status 2; nothing here panics on input.

#[macro_use]
mod output;
mod bench;
mod case;
mod clash;
mod egrl;
mod evaluate;
mod play;
mod race;
mod talk;
mod train;
mod viewer;

use anyhow::{Context, Result};

/// Persistent game states allocate and free small nodes at a high rate; mimalloc keeps
/// that a small part of a beam search, where glibc's malloc took half of it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mallocmuzero",
    version,
    about = "Learned memory mapping of ML programs: evaluate mappings against the XLA-style baseline"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// List the built-in workloads with their statistics.
    Workloads {
        #[arg(long)]
        json: bool,
    },
    /// List the built-in hardware configs.
    Hardware {
        #[arg(long)]
        json: bool,
    },
    /// List a suite (the benchmark suite, or `scale`): each case's hardware, fast
    /// capacity, and the bytes that would benefit from fast memory at once.
    Suite {
        /// `standard` (the 14 cases, the default) or `scale` (the scale tier's).
        #[arg(value_parser = clap::value_parser!(bench_workloads::suite::SuiteName))]
        name: Option<bench_workloads::suite::SuiteName>,
        #[arg(long)]
        json: bool,
    },
    /// Cut ops `A..B` of a workload out as a program file of its own (every command also
    /// takes `--workload W@A..B` directly).
    Cut {
        /// A built-in workload name or a program file.
        #[arg(long)]
        workload: String,
        /// The ops to keep, `A..B` (half-open), or `..B` for the first B.
        #[arg(long)]
        ops: String,
        /// The program file to write (JSON, the workload format).
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Every solver the registry knows: its name, where it runs (evaluate, play, race),
    /// the settings it reads, and what it is.
    Solvers {
        #[arg(long)]
        json: bool,
    },
    /// Run solvers on workloads, validate and simulate their mappings, print a table.
    Evaluate(evaluate::EvaluateArgs),
    /// Throughput figures of the simulator, the cost model and the game.
    Bench(bench::BenchArgs),
    /// Play the mallocGame with a player; print return and latency per episode.
    Play(play::PlayArgs),
    /// Replay a saved game, verify every reward, print or draw what happened.
    Replay(play::ReplayArgs),
    /// Train the mallocMuZero agent by self-play (default: a few minutes on alexnet).
    Train(train::TrainArgs),
    /// Every solver under the same wall-clock budget and threads; the best valid mapping
    /// each finds against time.
    Race(race::RaceArgs),
    /// EGRL (evolutionary graph RL, Khadka et al. 2021) or an ablation on one case, into a
    /// resumable run folder (default: 3 minutes on resnet50, nnp-i-like).
    TrainEgrl(egrl::TrainEgrlArgs),
}

fn main() {
    // Before any thread starts: candle's elementwise thread pool spins and stalls when the
    // cores are shared, and its split matmuls are slower than whole ones on this project's
    // small matrices (see muzero::network).
    muzero::keep_candle_elementwise_single_threaded();
    muzero::keep_candle_matmuls_single_threaded();
    ignore_file_size_signal();
    keep_freed_memory();
    let cli = parse_args();
    let result = match cli.command {
        None => evaluate::run(&evaluate::EvaluateArgs::default()),
        Some(Command::Workloads { json }) => workloads(json),
        Some(Command::Hardware { json }) => hardware(json),
        Some(Command::Suite { name, json }) => suite(name.unwrap_or_default(), json),
        Some(Command::Cut { workload, ops, out }) => cut(&workload, &ops, &out),
        Some(Command::Solvers { json }) => solvers(json),
        Some(Command::Evaluate(args)) => evaluate::run(&args),
        Some(Command::Bench(args)) => bench::run(&args),
        Some(Command::Play(args)) => play::run_play(&args),
        Some(Command::Replay(args)) => play::run_replay(&args),
        Some(Command::Train(args)) => train::run(&args),
        Some(Command::Race(args)) => race::run(&args),
        Some(Command::TrainEgrl(args)) => egrl::run(&args),
    };
    if let Err(e) = result {
        // One line, whatever names its message quotes.
        errln!("error: {}", output::shown(&one_line(&e)));
        std::process::exit(2);
    }
}

/// A write past the file-size limit (`ulimit -f`) raises SIGXFSZ, whose default action
/// kills the process with no message and leaves the write's temporary file behind.
/// Ignored, the write fails with `File too large` instead, which is reported (naming the
/// file) and cleaned up like any other failed write.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: `signal` with SIG_IGN installs no handler code; it runs before any thread
    // of this process starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Tells mimalloc never to hand freed memory back to the system. A local search's moves on
/// a program of thousands of buffers build and drop game states of megabytes each; with
/// the default delay (a second) the freed pages went back and were faulted in again,
/// zeroed (7% of a profile's samples), and taken back slowly (1.27x the moves in 30 s on
/// jax-gpt-12l-train-lowered with `MIMALLOC_PURGE_DELAY=-1` against without, side by
/// side, `scripts/move_speed.py`). The process keeps its peak instead.
fn keep_freed_memory() {
    // SAFETY: setting an option is allowed at any time; no pointer is passed.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

/// `mi_option_purge_delay` in mimalloc 2 and 3's option list (the bindings name the
/// options around it, not it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The command line, with a negative number taken as a flag's value (`--seconds -1` is
/// then refused by the flag's own check, naming it) rather than as an unknown flag.
fn parse_args() -> Cli {
    fn negatives_are_values(cmd: clap::Command) -> clap::Command {
        cmd.allow_negative_numbers(true)
            .mut_subcommands(negatives_are_values)
    }
    let matches = negatives_are_values(Cli::command()).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The error and its causes on one line. Library errors already print their cause inside
/// their own message, so a cause whose text is already there is not repeated.
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if c.contains(&msg) {
            // A context that only named the file its cause names too (`X`, then
            // `X: cannot write: ...`): the cause says it all, once.
            msg = c;
        } else if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn cut(workload: &str, ops: &str, out: &std::path::Path) -> Result<()> {
    // What is written must load again: the program format is JSON, and a loader picks
    // the format by the extension (`.csv` is minimalloc's lifetimes, read only).
    if out.extension().and_then(|e| e.to_str()) != Some("json") {
        anyhow::bail!(
            "--out {}: `cut` writes a program file in the JSON workload format; name it *.json",
            out.display()
        );
    }
    let source = workload_file(workload);
    let inputs: Vec<clash::Named> = source
        .iter()
        .map(|path| clash::Named {
            flag: "--workload",
            what: "the program being cut",
            path,
        })
        .collect();
    let output = clash::Named {
        flag: "--out",
        what: "",
        path: out,
    };
    clash::refuse_clashes(&inputs, &[output])?;
    let ops = if ops.starts_with("..") {
        format!("0{ops}")
    } else {
        ops.to_string()
    };
    let program = bench_workloads::load(&format!("{workload}@{ops}"))?;
    let text = bench_workloads::json::to_json(&program, None);
    binio::write_bytes_atomic(out, text.as_bytes())
        .with_context(|| format!("{}", out.display()))?;
    outln!(
        "{}: {} ops, {} buffers -> {}",
        output::shown(program.name()),
        program.len(),
        program.buffers().len(),
        out.display()
    );
    Ok(())
}

/// The program file a `--workload` spec reads, if it names one (`FILE`, `FILE@A..B`); a
/// built-in's name reads none.
pub(crate) fn workload_file(spec: &str) -> Option<std::path::PathBuf> {
    let file = spec.rsplit_once('@').map_or(spec, |(f, _)| f);
    [spec, file]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
}

/// The registry's entries, in its order.
fn solvers(json: bool) -> Result<()> {
    let rows: Vec<serde_json::Value> = harness::registry::SOLVERS
        .iter()
        .map(|e| {
            let mut runs = Vec::new();
            if e.evaluated() {
                runs.push("evaluate");
            }
            if e.player.is_some() {
                runs.push("play");
            }
            if e.raced_by_default() {
                runs.push("race");
            } else if e.race.is_some() {
                runs.push("race (when named)");
            }
            let mut reads: Vec<&str> = Vec::new();
            let lists = [
                e.one_shot.map(|o| o.reads),
                e.player.map(|_| harness::registry::PLAYER_READS),
                e.race.map(|r| r.reads),
            ];
            for s in lists.into_iter().flatten().flatten() {
                if !reads.contains(&s.name()) {
                    reads.push(s.name());
                }
            }
            serde_json::json!({
                "name": e.name,
                "player": e.player.map(|p| p.name),
                "runs_in": runs,
                "reads": reads,
                "about": e.about,
            })
        })
        .collect();
    if json {
        outln!("{}", serde_json::json!({ "solvers": rows }));
        return Ok(());
    }
    for r in &rows {
        let list = |k: &str| {
            r[k].as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        outln!("{}", r["name"].as_str().unwrap_or_default());
        outln!("    {}", r["about"].as_str().unwrap_or_default());
        outln!("    runs in: {}", list("runs_in"));
        if !list("reads").is_empty() {
            outln!("    reads: {}", list("reads"));
        }
    }
    Ok(())
}

fn workloads(json: bool) -> Result<()> {
    let mut rows = Vec::new();
    let tiers = [
        ("standard", bench_workloads::names()),
        ("scale", bench_workloads::scale::names()),
        ("generalist", bench_workloads::scale::generalist_names()),
    ];
    for (tier, name) in tiers
        .iter()
        .flat_map(|(tier, names)| names.iter().map(move |n| (*tier, *n)))
    {
        let p = bench_workloads::load(name).with_context(|| format!("workload `{name}`"))?;
        let weights: u64 = p
            .buffers()
            .iter()
            .filter(|b| b.kind == accel_sim::BufferKind::Weight)
            .map(|b| b.size)
            .sum();
        rows.push(serde_json::json!({
            "name": name,
            "tier": tier,
            "ops": p.len(),
            "buffers": p.buffers().len(),
            "gflops": p.total_flops() / 1e9,
            "weight_bytes": weights,
            "peak_live_bytes": p.peak_live_bytes(),
            "description": p.description(),
        }));
    }
    if json {
        outln!("{}", serde_json::json!({ "workloads": rows }));
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r["name"].as_str().unwrap_or_default().len())
        .max()
        .unwrap_or(0)
        .max(18);
    outln!(
        "{:<width$} {:>6} {:>8} {:>10} {:>11} {:>11}",
        "workload",
        "ops",
        "buffers",
        "GFLOPs",
        "weights",
        "peak live"
    );
    for (i, r) in rows.iter().enumerate() {
        let tier = r["tier"].as_str().unwrap_or_default();
        if i > 0 && rows[i - 1]["tier"].as_str() != Some(tier) {
            match tier {
                "generalist" => outln!(
                    "\nfor the generalist (the tier's size, not the tier's: its training and validation programs):"
                ),
                _ => outln!("\n{tier} tier (`evaluate --suite {tier}`, `suite {tier}`):"),
            }
        }
        outln!(
            "{:<width$} {:>6} {:>8} {:>10.2} {:>11} {:>11}",
            r["name"].as_str().unwrap_or_default(),
            r["ops"].as_u64().unwrap_or_default(),
            r["buffers"].as_u64().unwrap_or_default(),
            r["gflops"].as_f64().unwrap_or_default(),
            accel_sim::format_size(r["weight_bytes"].as_u64().unwrap_or_default()),
            accel_sim::format_size(r["peak_live_bytes"].as_u64().unwrap_or_default()),
        );
    }
    Ok(())
}

fn hardware(json: bool) -> Result<()> {
    let all: Vec<_> = accel_sim::PRESETS
        .iter()
        .map(|n| accel_sim::Hardware::preset(n).map(|h| h.to_file()))
        .collect::<Result<_, _>>()?;
    if json {
        outln!("{}", serde_json::json!({ "hardware": all }));
        return Ok(());
    }
    for h in &all {
        outln!(
            "{}: {} TFLOP/s peak, {} us per op, {} DMA engine(s)",
            h.name,
            h.peak_tflops,
            h.op_overhead_us,
            h.dma.engines
        );
        for (i, l) in h.levels.iter().enumerate() {
            let cap = match &l.capacity {
                None => "unbounded".to_string(),
                Some(accel_sim::ByteSize::Bytes(b)) => accel_sim::format_size(*b),
                Some(accel_sim::ByteSize::Text(t)) => t.clone(),
            };
            outln!(
                "  level {i} {:<6} {:>10}  read {:>7} GB/s  write {:>7} GB/s  align {} B",
                l.name,
                cap,
                l.read_gb_per_s,
                l.write_gb_per_s,
                l.alignment
            );
        }
    }
    Ok(())
}

fn suite(name: bench_workloads::suite::SuiteName, json: bool) -> Result<()> {
    use accel_sim::format_size;
    let mut rows = Vec::new();
    for case in harness::Case::suite_named(name)? {
        let (p, hw) = (&case.program, &case.hw);
        let fastest = hw.fastest();
        let beneficial = bench_workloads::suite::beneficial_peak(p, hw, fastest);
        let capacities: Vec<u64> = hw.levels[1..].iter().map(|l| l.capacity).collect();
        let capacity: u64 = capacities.iter().sum();
        rows.push(serde_json::json!({
            "workload": p.name(),
            "hardware": hw.name,
            "fast_capacity_bytes": capacity,
            "fast_level_capacities_bytes": capacities,
            "beneficial_peak_bytes": beneficial,
            "beneficial_over_capacity": beneficial as f64 / capacity as f64,
            "peak_live_bytes": p.peak_live_bytes(),
        }));
    }
    if json {
        outln!("{}", serde_json::json!({ "suite": rows }));
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r["workload"].as_str().unwrap_or_default().len())
        .max()
        .unwrap_or(0)
        .max(18);
    outln!(
        "{:<width$} {:<13} {:>20} {:>16} {:>10} {:>12}",
        "workload",
        "hardware",
        "fast cap",
        "beneficial peak",
        "x cap",
        "peak live"
    );
    for r in &rows {
        let levels: Vec<String> = r["fast_level_capacities_bytes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| format_size(c.as_u64().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        outln!(
            "{:<width$} {:<13} {:>20} {:>16} {:>9.1}x {:>12}",
            r["workload"].as_str().unwrap_or_default(),
            r["hardware"].as_str().unwrap_or_default(),
            levels.join(" + "),
            format_size(r["beneficial_peak_bytes"].as_u64().unwrap_or_default()),
            r["beneficial_over_capacity"].as_f64().unwrap_or_default(),
            format_size(r["peak_live_bytes"].as_u64().unwrap_or_default()),
        );
    }
    outln!();
    outln!("beneficial peak: the most bytes live at once among buffers that some op reads or writes faster from the fastest level (XLA's memory-boundedness > 0); weights and inputs count from their first use. x cap: over all fast levels together.");
    if name == bench_workloads::suite::SuiteName::Scale {
        outln!("capacities: the scale rule, each fast level of the preset divided by the smallest power of two that leaves them together at most 1/{} of the program's peak live bytes (docs/workloads.md).", bench_workloads::suite::SCALE_PEAK_SHARE);
    }
    Ok(())
}

/// A duration flag: a finite number of seconds in (0, 86400]. Rejects what would panic
/// `Duration::from_secs_f64` (negative, NaN, infinite) or never end.
pub(crate) fn positive_seconds(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!(
            "`{text}`: must be more than 0 and at most 86400 seconds"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;
    use anyhow::Context;

    #[test]
    fn the_purge_delay_is_the_option_set() {
        // The option at that place in the list has the purge delay's default (a second)
        // until set: the bindings' list has not moved under the constant.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reading an option passes no pointer.
            assert_eq!(
                unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) },
                1000
            );
        }
        super::keep_freed_memory();
        // SAFETY: as above.
        assert_eq!(
            unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) },
            -1
        );
    }

    #[test]
    fn a_path_is_said_once() {
        let write: std::result::Result<(), binio::BinError> = Err(binio::BinError::Write {
            path: "out/x.json".into(),
            source: std::io::Error::other("File too large"),
        });
        let e = write.context("out/x.json").unwrap_err();
        assert_eq!(one_line(&e), "out/x.json: cannot write: File too large");
        let e = anyhow::anyhow!("bad value")
            .context("field x")
            .context("config.json");
        assert_eq!(one_line(&e), "config.json: field x: bad value");
    }
}
