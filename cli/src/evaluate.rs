//! `mallocmuzero evaluate`: solvers x cases -> validated, simulated results.

use accel_sim::{CostModel, Hardware, Mapping, Program, Simulator};
use anyhow::{bail, Context, Result};
use bench_workloads::suite;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_game::baselines;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// Which program on which hardware.
#[derive(Args, Clone, Default, Debug)]
pub struct CaseArgs {
    /// A built-in workload name or a program file (.json, or .csv lifetimes).
    #[arg(long)]
    pub workload: Option<String>,
    /// A hardware preset name or a .json/.toml config file.
    #[arg(long)]
    pub hw: Option<String>,
    /// Capacity of the fastest level (`16MiB`) or of level N (`1:16MiB`). Default: the
    /// suite's capacity for a suite workload on its suite hardware, else the preset's.
    #[arg(long)]
    pub fast_capacity: Option<String>,
}

#[derive(Args, Clone)]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub case: CaseArgs,
    /// Every case of the benchmark suite (each with its own hardware and capacity).
    #[arg(long, conflicts_with_all = ["workload", "hw", "fast_capacity", "mapping"])]
    pub suite: bool,
    /// Solvers to run (repeat the flag): baselines (all-slow, xla, greedy-size) and game
    /// players (random, greedy, beam, beam:W, xla-game). Default: all-slow, xla,
    /// greedy-size, greedy, beam.
    #[arg(long = "solver")]
    pub solvers: Vec<String>,
    /// Seed of the game players.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The run directory of a trained agent, for `--solver muzero`.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Search simulations per move of `--solver muzero` (default: the run's evaluation
    /// setting).
    #[arg(long)]
    pub simulations: Option<usize>,
    #[command(flatten)]
    pub game: crate::play::GameArgs,
    /// A mapping file (JSON, `mallocmuzero-mapping`) to evaluate beside the solvers.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Default for EvaluateArgs {
    /// The built-in default: resnet50 on tpu-v4i-like at its suite capacity, every solver.
    fn default() -> Self {
        EvaluateArgs {
            case: CaseArgs {
                workload: Some("resnet50".into()),
                ..CaseArgs::default()
            },
            suite: false,
            solvers: Vec::new(),
            seed: 0,
            checkpoint: None,
            simulations: None,
            game: crate::play::GameArgs::default(),
            mapping: None,
            json: false,
        }
    }
}

/// One row of the results, in the JSON form of `evaluate --json`.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub workload: String,
    pub hardware: String,
    pub solver: String,
    /// Simulated ("true") latency; null when the mapping is invalid.
    pub latency_s: Option<f64>,
    pub proxy_latency_s: Option<f64>,
    pub valid: bool,
    pub speedup_vs_xla: Option<f64>,
    /// The physical limit of this case (see `malloc_game::baselines::bound_latency`).
    pub bound_latency_s: f64,
    /// `latency / bound - 1`: how much room is left above this solver.
    pub gap_to_bound: Option<f64>,
    pub fast_capacity_bytes: u64,
    /// Peak bytes held in the fast levels by this mapping.
    pub fast_bytes_used: Option<u64>,
    pub solve_s: f64,
    /// The validator's message when `valid` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A case to evaluate: a program on a hardware config.
pub struct Case {
    pub program: Program,
    pub hw: Hardware,
}

/// A named way to get a mapping.
enum Source {
    Solver(Box<dyn baselines::Solver>),
    /// A game player, playing one episode with the given seed.
    Player(Box<dyn malloc_game::players::Player>, u64),
    /// The trained agent of a run directory: its network, its run's game options, a
    /// search without noise.
    MuZero(Box<Agent>),
    File(PathBuf),
}

/// A trained agent loaded from a run directory.
pub struct Agent {
    net: muzero::network::MuZeroNet,
    options: malloc_game::GameOptions,
    search: muzero::search::SearchConfig,
    seed: u64,
}

impl Agent {
    pub fn load(dir: &std::path::Path, simulations: Option<usize>) -> Result<Agent> {
        let info = muzero::train::read_run_info(dir)?;
        let net = muzero::train::load_network(dir)?;
        let search = muzero::search::SearchConfig {
            simulations: simulations.unwrap_or(info.config.eval_simulations),
            ..info.config.search.clone()
        };
        search
            .check()
            .map_err(|m| anyhow::anyhow!("--simulations: {m}"))?;
        Ok(Agent {
            net,
            options: info.options,
            search,
            seed: info.config.seed,
        })
    }

    /// The agent's mapping of `program` on `hw`: one game, greedy over the search.
    pub fn play(&self, program: &Program, hw: &Hardware) -> Result<Mapping> {
        let setup = malloc_game::GameSetup::new(
            std::sync::Arc::new(program.clone()),
            hw.clone(),
            self.options.clone(),
        )?;
        let g = muzero::train::play_greedy(&self.net, &setup, &self.search, self.seed)?;
        Ok(g.game.mapping())
    }
}

/// The solvers `evaluate` runs when none is named.
pub const DEFAULT_SOLVERS: [&str; 5] = ["all-slow", "xla", "greedy-size", "greedy", "beam"];

/// The standalone xla solver's simulated latency: every speedup is measured against it.
pub fn xla_latency(program: &Program, hw: &Hardware) -> Result<f64> {
    let xla = baselines::solver("xla").context("the xla solver is built in")?;
    let m = xla.solve(program, hw);
    m.validate(program, hw)
        .context("the xla baseline produced an invalid mapping (a bug)")?;
    Ok(Simulator::new(program, hw).run(&m, false).latency_s)
}

pub fn run(args: &EvaluateArgs) -> Result<()> {
    let cases = cases(args)?;
    let mut sources = Vec::new();
    let names: Vec<String> = if args.solvers.is_empty() {
        DEFAULT_SOLVERS.iter().map(|s| s.to_string()).collect()
    } else {
        args.solvers.clone()
    };
    for name in &names {
        if name == "muzero" {
            let dir = args
                .checkpoint
                .as_ref()
                .context("--solver muzero needs --checkpoint RUN_DIR (a `train` run directory)")?;
            sources.push(Source::MuZero(Box::new(Agent::load(
                dir,
                args.simulations,
            )?)));
        } else if let Some(s) = baselines::solver(name) {
            sources.push(Source::Solver(s));
        } else if let Some(p) =
            malloc_game::players::player(name.strip_suffix("-game").unwrap_or(name))
        {
            sources.push(Source::Player(p, args.seed));
        } else {
            bail!(
                "unknown solver `{name}` (baselines: {}; game players: {}, beam:W, xla-game; muzero with --checkpoint)",
                baselines::SOLVER_NAMES.join(", "),
                malloc_game::players::PLAYER_NAMES.join(", ")
            );
        }
    }
    if let Some(path) = &args.mapping {
        sources.push(Source::File(path.clone()));
    }
    let bar = ProgressBar::new((cases.len() * (sources.len() + 1)) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for case in &cases {
        bar.set_message(format!("{} on {}", case.program.name(), case.hw.name));
        rows.extend(evaluate_case(case, &sources, &args.game, &bar)?);
    }
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::json!({ "results": rows }));
    } else {
        print_table(&rows);
    }
    Ok(())
}

fn cases(args: &EvaluateArgs) -> Result<Vec<Case>> {
    if args.suite {
        return suite::cases()
            .into_iter()
            .map(|c| {
                let program = bench_workloads::load(c.workload)?;
                Ok(Case {
                    program,
                    hw: c.hardware(),
                })
            })
            .collect();
    }
    Ok(vec![single_case(&args.case)?])
}

/// The case named by `--workload`, `--hw` and `--fast-capacity`.
pub fn single_case(args: &CaseArgs) -> Result<Case> {
    let spec = args.workload.as_deref().unwrap_or("resnet50");
    let program = bench_workloads::load(spec)?;
    let hw_name = args.hw.as_deref().unwrap_or("tpu-v4i-like");
    let mut hw = Hardware::by_name_or_file(hw_name)?;
    match &args.fast_capacity {
        Some(c) => {
            let (level, bytes) = crate::parse_capacity(c, &hw)?;
            hw = hw.with_capacity(level, bytes)?;
        }
        None => {
            // A workload of the suite on its suite hardware gets the suite's capacity.
            if let Some(c) = suite::cases()
                .into_iter()
                .find(|c| c.workload == spec && c.hardware == hw_name)
            {
                hw = c.hardware();
            }
        }
    }
    check_capacity(&program, &hw)?;
    Ok(Case { program, hw })
}

/// A fast level that cannot hold even the smallest buffer is a mistake worth an error.
fn check_capacity(program: &Program, hw: &Hardware) -> Result<()> {
    let smallest = program.buffers().iter().map(|b| b.size).min().unwrap_or(0);
    for (i, l) in hw.levels.iter().enumerate().skip(1) {
        if l.capacity < smallest {
            bail!(
                "level {i} ({}) of `{}` has capacity {} B, smaller than the smallest buffer of `{}` ({} B): nothing could be placed",
                l.name,
                hw.name,
                l.capacity,
                program.name(),
                smallest
            );
        }
    }
    Ok(())
}

fn evaluate_case(
    case: &Case,
    sources: &[Source],
    game: &crate::play::GameArgs,
    bar: &ProgressBar,
) -> Result<Vec<Row>> {
    let (program, hw) = (&case.program, &case.hw);
    let cost = CostModel::new(program, hw);
    let mut sim = Simulator::new(program, hw);
    let bound = baselines::bound_latency(program, hw);
    let capacity: u64 = hw.levels[1..].iter().map(|l| l.capacity).sum();
    let xla_latency = xla_latency(program, hw)?;
    let shared = std::sync::Arc::new(program.clone());
    let mut setup = None;
    bar.inc(1);
    let mut rows = Vec::new();
    for source in sources {
        let t0 = Instant::now();
        let (name, mapping): (String, Mapping) = match source {
            Source::Solver(s) => (s.name().to_string(), s.solve(program, hw)),
            Source::Player(p, seed) => {
                if setup.is_none() {
                    setup = Some(malloc_game::GameSetup::new(
                        std::sync::Arc::clone(&shared),
                        hw.clone(),
                        game.options(hw),
                    )?);
                }
                let g = p.play(setup.as_ref().context("game setup")?, *seed);
                // The game's xla player is named apart from the standalone xla solver.
                let name = match p.name().as_str() {
                    "xla" => "xla-game".to_string(),
                    other => other.to_string(),
                };
                (name, g.mapping())
            }
            Source::MuZero(agent) => ("muzero".to_string(), agent.play(program, hw)?),
            Source::File(path) => {
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
                let file: accel_sim::mapping::MappingFile =
                    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
                let m = file
                    .to_mapping(program)
                    .map_err(|m| anyhow::anyhow!("{}: {m}", path.display()))?;
                (format!("file:{}", path.display()), m)
            }
        };
        let solve_s = t0.elapsed().as_secs_f64();
        let mut row = Row {
            workload: program.name().to_string(),
            hardware: hw.name.clone(),
            solver: name,
            latency_s: None,
            proxy_latency_s: None,
            valid: false,
            speedup_vs_xla: None,
            bound_latency_s: bound,
            gap_to_bound: None,
            fast_capacity_bytes: capacity,
            fast_bytes_used: None,
            solve_s,
            error: None,
        };
        match mapping.validate(program, hw) {
            Ok(stats) => {
                let latency = sim.run(&mapping, false).latency_s;
                row.valid = true;
                row.latency_s = Some(latency);
                row.proxy_latency_s = Some(cost.latency(&mapping));
                row.speedup_vs_xla = Some(xla_latency / latency);
                row.gap_to_bound = Some(latency / bound - 1.0);
                row.fast_bytes_used = Some(stats.peak_bytes[1..].iter().sum());
            }
            Err(e) => row.error = Some(e.to_string()),
        }
        rows.push(row);
        bar.inc(1);
    }
    Ok(rows)
}

fn print_table(rows: &[Row]) {
    use accel_sim::hardware::format_size;
    println!(
        "{:<16} {:<13} {:>10} {:<12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>8}",
        "workload",
        "hardware",
        "fast cap",
        "solver",
        "model (us)",
        "sim (us)",
        "vs xla",
        "vs bound",
        "fast used",
        "solve ms"
    );
    let mut last_case = String::new();
    for r in rows {
        let case = format!("{} {}", r.workload, r.hardware);
        if case != last_case && !last_case.is_empty() {
            println!();
        }
        last_case = case;
        let f = |v: Option<f64>, scale: f64, prec: usize| {
            v.map_or("-".to_string(), |x| format!("{:.*}", prec, x * scale))
        };
        println!(
            "{:<16} {:<13} {:>10} {:<12} {:>11} {:>11} {:>8} {:>8} {:>10} {:>8.1}",
            r.workload,
            r.hardware,
            format_size(r.fast_capacity_bytes),
            r.solver,
            f(r.proxy_latency_s, 1e6, 1),
            f(r.latency_s, 1e6, 1),
            r.speedup_vs_xla.map_or("-".into(), |s| format!("{s:.3}x")),
            r.gap_to_bound
                .map_or("-".into(), |g| format!("+{:.1}%", g * 100.0)),
            r.fast_bytes_used.map_or("-".into(), format_size),
            r.solve_s * 1e3,
        );
        if let Some(e) = &r.error {
            println!("    invalid mapping: {e}");
        }
    }
    println!(
        "\n`vs bound`: each solver's gap to the physical limit (fastest level unbounded, copies free)."
    );
}
