//! `mallocmuzero play` and `mallocmuzero replay`.

use crate::case::{CaseArgs, GameArgs};
use accel_sim::{Program, Simulator};
use anyhow::{bail, Context, Result};
use clap::Args;
use harness::evaluate::{CaseScorer, Row};
use harness::Case;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_game::players::{self, Player};
use malloc_game::record::{GameRecord, Replay};
use malloc_game::render::{self, MapLegend};
use malloc_game::GameSetup;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Args, Clone)]
pub struct PlayArgs {
    #[command(flatten)]
    pub case: CaseArgs,
    #[arg(long, default_value = "greedy", help = player_help())]
    pub player: String,
    #[arg(long, default_value_t = 1)]
    pub episodes: u64,
    /// Threads one game may use (the beam shares each step out; the game it finds is the
    /// same on any number). Default: one per core.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Episode i plays with seed + i.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Save every game into this folder (`<workload>-<hardware>-<player>-<seed>.game`,
    /// with `beam:W` written `beam-W`).
    #[arg(long)]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub game: GameArgs,
    #[arg(long)]
    pub json: bool,
}

/// `--player`'s help, from the registry.
fn player_help() -> String {
    format!(
        "The game player: {}, beam:W (a beam of width W), or mapping:FILE (the line that plays a mapping file exactly).",
        harness::registry::player_names().join(", ")
    )
}

/// Who plays: a registered player, or a mapping file's line.
enum Who {
    Player(Box<dyn Player>),
    Mapping(PathBuf),
}

impl Who {
    fn of(spec: &str, threads: usize) -> Result<Who> {
        match spec.strip_prefix("mapping:") {
            Some("") => bail!("--player mapping:FILE: the file is missing"),
            Some(path) => Ok(Who::Mapping(PathBuf::from(path))),
            None => Ok(Who::Player(player_or_error(spec, threads)?)),
        }
    }

    fn name(&self) -> String {
        match self {
            Who::Player(p) => p.name(),
            // The file's name, not its folder: saved games are named after the player.
            Who::Mapping(path) => format!(
                "mapping:{}",
                path.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned())
            ),
        }
    }

    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Result<malloc_game::Game> {
        match self {
            Who::Player(p) => Ok(p.play(setup, seed)),
            // The error names the file and what is wrong with it.
            Who::Mapping(path) => Ok(harness::evaluate::mapping_line(path, setup)?),
        }
    }
}

pub fn player_or_error(spec: &str, threads: usize) -> Result<Box<dyn Player>> {
    harness::registry::player(spec, threads).with_context(|| {
        format!(
            "unknown player `{spec}` (available: {}, beam:W with W in 1..={})",
            harness::registry::player_names().join(", "),
            players::MAX_BEAM_WIDTH
        )
    })
}

pub fn run_play(args: &PlayArgs) -> Result<()> {
    if args.episodes == 0 {
        bail!("--episodes: must be >= 1");
    }
    let player = Who::of(&args.player, crate::case::threads(args.threads)?)?;
    if matches!(player, Who::Mapping(_)) && args.episodes > 1 {
        bail!(
            "--episodes: a mapping's line is one game, so 1, not {}",
            args.episodes
        );
    }
    let case = crate::case::single_case(&args.case)?;
    let (program, hw) = (Arc::clone(&case.program), case.hw.clone());
    let setup = GameSetup::new(Arc::clone(&program), hw.clone(), args.game.options(&hw))?;
    let mut scorer = CaseScorer::new(&case)?;
    let xla = scorer.xla_latency();
    if let Some(dir) = &args.save {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let bar = episode_bar(args.episodes);
    let mut episodes = Vec::new();
    let mut best: Option<(f64, Row, u64)> = None;
    let t0 = Instant::now();
    let mut steps = 0usize;
    for i in 0..args.episodes {
        let seed = args.seed + i;
        let game = player.play(&setup, seed)?;
        steps += game.length();
        let mapping = game.mapping();
        let valid = mapping.validate(&program, &hw).is_ok();
        let latency = game.final_latency().unwrap_or(f64::NAN);
        let ret = game.total_return();
        if let Some(dir) = &args.save {
            let file = malloc_game::record::saved_game_name(
                program.name(),
                &hw.name,
                &player.name(),
                seed,
            );
            let path = dir.join(file);
            // The save's error names the file already.
            GameRecord::from_game(&game, &player.name(), seed, None)?.save(&path)?;
        }
        if !args.json {
            let line = format!(
                "episode {i:>4}  seed {seed:>6}  return {ret:+.5}  latency {:>10.2} us  {:.4}x vs xla  {}",
                latency * 1e6,
                xla / latency,
                if valid { "valid" } else { "INVALID" }
            );
            // A hidden bar (output not a terminal) swallows its println.
            if bar.is_hidden() {
                outln!("{line}");
            } else {
                bar.println(line);
            }
        }
        episodes.push(serde_json::json!({
            "seed": seed, "return": ret, "latency_s": latency, "valid": valid,
        }));
        if best.as_ref().is_none_or(|(r, _, _)| ret > *r) {
            best = Some((ret, scorer.row(player.name(), &mapping, 0.0), seed));
        }
        bar.set_message(format!(
            "best latency {:.2} us, {:.0} steps/s",
            best.as_ref().and_then(|b| b.1.latency_s).unwrap_or(0.0) * 1e6,
            steps as f64 / t0.elapsed().as_secs_f64()
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    print_best(args, &case, episodes, best, xla)
}

/// The progress bar of `play`'s episodes.
fn episode_bar(episodes: u64) -> ProgressBar {
    let bar = ProgressBar::new(episodes);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed}] {bar:30} {pos}/{len} episodes ({per_sec}) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The best episode (by return), with the case's best proven bound; with `--json`, every
/// episode too.
fn print_best(
    args: &PlayArgs,
    case: &Case,
    episodes: Vec<serde_json::Value>,
    best: Option<(f64, Row, u64)>,
    xla: f64,
) -> Result<()> {
    let (ret, mut row, seed) = best.context("at least one episode")?;
    // The case's best proven bound (the checked-in proofs too), as evaluate prints it: the
    // physical limit alone is far weaker (156 against 279 us on alexnet).
    harness::evaluate::fill_gaps(std::slice::from_mut(&mut row), case)?;
    if args.json {
        let mut b = serde_json::to_value(&row)?;
        b["seed"] = seed.into();
        b["return"] = ret.into();
        outln!("{}", serde_json::json!({ "episodes": episodes, "best": b }));
    } else {
        outln!(
            "best: seed {seed}, return {ret:+.5}, latency {:.2} us ({:.4}x vs xla at {:.2} us; {})",
            row.latency_s.unwrap_or(f64::NAN) * 1e6,
            row.speedup_vs_xla.unwrap_or(f64::NAN),
            xla * 1e6,
            crate::evaluate::bound_line(row.lower_bound_s, row.bound_source)
        );
    }
    Ok(())
}

#[derive(Args, Clone)]
pub struct ReplayArgs {
    /// A saved game (`.game`, binary; or `.json` as written by `--export-json`).
    pub game: PathBuf,
    /// The program to replay against, when it is not a built-in workload (a .json or .csv
    /// file).
    #[arg(long)]
    pub workload: Option<String>,
    /// Print the per-turn table.
    #[arg(long)]
    pub steps: bool,
    /// Write the memory map of the replayed mapping as SVG.
    #[arg(long)]
    pub render: Option<PathBuf>,
    /// Write the simulated latency timeline as SVG.
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Write the record as JSON.
    #[arg(long)]
    pub export_json: Option<PathBuf>,
    /// Write the game viewer: one self-contained HTML page (no network) that steps through
    /// the game turn by turn: the memory map, each turn's legal alternatives and the
    /// latency each gives, the search's visits, the latency curve.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// With --html: compare GAME (A) against this saved game (B) of the same program,
    /// hardware and game options: where they first differ, and what each difference costs.
    #[arg(long, requires = "html")]
    pub compare: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

fn load_record(path: &Path) -> Result<GameRecord> {
    if path.extension().is_some_and(|e| e == "json") {
        let text = accel_sim::read_text(path)?;
        return Ok(GameRecord::from_json(&text, &path.display().to_string())?);
    }
    Ok(GameRecord::load(path)?)
}

/// The program a saved game is replayed against: `--workload`, else the program of the run
/// folder the game was saved in (`RUN/best/game.game`, `RUN/games/*.game`), else the
/// built-in workload the record names.
fn replay_program(args: &ReplayArgs, record: &GameRecord) -> Result<Program> {
    let shown = args.game.display();
    if let Some(spec) = &args.workload {
        return bench_workloads::load(spec)
            .with_context(|| format!("loading --workload for {shown}"));
    }
    let run_dir = args.game.parent().and_then(Path::parent);
    if let Some(dir) = run_dir.filter(|d| d.join("run.json").is_file()) {
        let info = malloc_muzero::train::read_run_info(dir)?;
        return info
            .load_program(dir)
            .with_context(|| format!("loading the program of the run folder of {shown}"));
    }
    if !bench_workloads::is_builtin(&record.workload) {
        bail!(
            "{shown}: the game was played on `{}`, which is not a built-in workload: pass the program file with --workload FILE",
            record.workload
        );
    }
    Ok(bench_workloads::load(&record.workload)?)
}

/// Refuses an output of `replay` on a file it reads (the game, the `--compare` game, the
/// `--workload` file) or on another of its outputs, before anything is read or written.
fn refuse_clashing_outputs(args: &ReplayArgs) -> Result<()> {
    use crate::clash::Named;
    let workload = args.workload.as_deref().and_then(crate::workload_file);
    let mut inputs = vec![Named {
        flag: "GAME",
        what: "the game being read",
        path: &args.game,
    }];
    if let Some(path) = &args.compare {
        let (flag, what) = ("--compare", "the game compared against");
        inputs.push(Named { flag, what, path });
    }
    if let Some(path) = &workload {
        let (flag, what) = ("--workload", "the program being read");
        inputs.push(Named { flag, what, path });
    }
    let outputs: Vec<Named> = [
        ("--html", &args.html),
        ("--export-json", &args.export_json),
        ("--render", &args.render),
        ("--timeline", &args.timeline),
    ]
    .into_iter()
    .filter_map(|(flag, p)| {
        let what = "";
        p.as_deref().map(|path| Named { flag, what, path })
    })
    .collect();
    crate::clash::refuse_clashes(&inputs, &outputs)
}

pub fn run_replay(args: &ReplayArgs) -> Result<()> {
    use crate::output::shown;
    refuse_clashing_outputs(args)?;
    let t0 = Instant::now();
    let record = load_record(&args.game)?;
    let program: Arc<Program> = Arc::new(replay_program(args, &record)?);
    let replay = record
        .replay(Arc::clone(&program))
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.game.display()))?;
    let verify_s = t0.elapsed().as_secs_f64();
    let game = &replay.game;
    let hw = game.setup().hardware();
    let latency = game.final_latency().unwrap_or(f64::NAN);
    if let Some(path) = &args.export_json {
        binio::write_bytes_atomic(path, record.to_json().as_bytes())?;
    }
    let html = match &args.html {
        None => None,
        Some(out) => Some(write_viewer(args, out, &record, &replay, &program)?),
    };
    write_pictures(args, &record, &replay)?;
    if args.json {
        let mut out = serde_json::json!({
            "workload": program.name(), "hardware": hw.name, "solver": record.player,
            "seed": record.seed, "reward_kind": record.options.reward.as_str(),
            "all_slow_latency_s": game.setup().all_slow_latency(),
            "return": game.total_return(), "latency_s": latency,
            "valid": true, "verified": true, "verify_s": verify_s,
        });
        if args.steps {
            out["turns"] = turns_json(&record, &replay).into();
        }
        if let Some(h) = &html {
            out["html"] = h.to_json();
        }
        outln!("{out}");
        return Ok(());
    }
    if args.steps {
        print_steps(&replay);
    }
    outln!(
        "verified {} turns of {} ({} on {}, player {}, seed {}, {} rewards): every reward matches; return {:+.5}, simulated latency {:.2} us ({:.1} ms to load, replay and verify)",
        replay.turns.len(),
        shown(&args.game.display().to_string()),
        shown(program.name()),
        shown(&hw.name),
        shown(&record.player),
        record.seed,
        record.options.reward.as_str(),
        game.total_return(),
        latency * 1e6,
        verify_s * 1e3
    );
    for line in html.iter().flat_map(|h| h.lines()) {
        outln!("{line}");
    }
    Ok(())
}

/// `--html` (with `--compare`'s game replayed against the same program).
fn write_viewer(
    args: &ReplayArgs,
    out: &Path,
    record: &GameRecord,
    replay: &Replay,
    program: &Arc<Program>,
) -> Result<crate::viewer::Written> {
    let other = match &args.compare {
        None => None,
        Some(path) => {
            let record_b = load_record(path)?;
            let replay_b = record_b
                .replay(Arc::clone(program))
                .map_err(|e| anyhow::anyhow!("--compare {}: {e}", path.display()))?;
            Some((record_b, replay_b, path))
        }
    };
    let b = other.as_ref().map(|(r, p, f)| (r, p, f.as_path()));
    crate::viewer::write(out, (record, replay, &args.game), b)
}

/// `--render` and `--timeline`.
fn write_pictures(args: &ReplayArgs, record: &GameRecord, replay: &Replay) -> Result<()> {
    let game = &replay.game;
    let program = game.setup().program();
    let hw = game.setup().hardware();
    let legend = MapLegend {
        workload: program.name().to_string(),
        hardware: hw.name.clone(),
        solver: record.player.clone(),
        latency_s: Some(game.final_latency().unwrap_or(f64::NAN)),
    };
    if let Some(path) = &args.render {
        let svg = render::memory_map_svg(program, hw, &game.mapping(), &legend);
        binio::write_bytes_atomic(path, svg.as_bytes())?;
    }
    if let Some(path) = &args.timeline {
        let report = Simulator::new(program, hw).run(&game.mapping(), true);
        let svg = render::timeline_svg(program, &report, &legend);
        binio::write_bytes_atomic(path, svg.as_bytes())?;
    }
    Ok(())
}

/// The turns for `--json --steps`, with what the agent's search saw where the file holds it.
fn turns_json(record: &GameRecord, replay: &Replay) -> Vec<serde_json::Value> {
    replay
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut turn = serde_json::json!({
                "buffer": t.buffer, "action": t.action, "action_name": t.action_name,
                "reward": t.reward, "latency_s": t.latency_s,
                "proxy_latency_s": t.proxy_latency_s,
            });
            if let Some(s) = record.search.as_ref().and_then(|s| s.get(i)) {
                turn["visits"] = s.visits.clone().into();
                turn["root_value"] = s.root_value.into();
            }
            turn
        })
        .collect()
}

/// The per-turn table of `--steps`.
fn print_steps(replay: &Replay) {
    use crate::output::shown;
    outln!(
        "{:>5}  {:<40} {:<28} {:>10} {:>14} {:>14}",
        "turn",
        "buffer",
        "action",
        "reward",
        "sim (us)",
        "model (us)"
    );
    for (i, t) in replay.turns.iter().enumerate() {
        outln!(
            "{i:>5}  {:<40} {:<28} {:>+10.6} {:>14.2} {:>14.2}",
            truncate(&shown(&t.buffer), 40),
            shown(&t.action_name),
            t.reward,
            t.latency_s * 1e6,
            t.proxy_latency_s * 1e6
        );
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
