//! `mallocmuzero bench`: throughput of the simulator and of the cost model's incremental
//! deltas, on resnet50 with the xla mapping, on one core.

use accel_sim::{BufferPlacement, CostModel, CostState, Simulator};
use anyhow::{Context, Result};
use clap::Args;
use malloc_game::baselines;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Args, Clone, Default)]
pub struct BenchArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Seconds to spend on each measurement.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
}

/// Runs `f` repeatedly for about `seconds`; returns calls per second.
fn rate(seconds: f64, mut f: impl FnMut() -> usize) -> f64 {
    let budget = Duration::from_secs_f64(seconds);
    let t0 = Instant::now();
    let mut calls = 0usize;
    while t0.elapsed() < budget {
        calls += f();
    }
    calls as f64 / t0.elapsed().as_secs_f64()
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == "resnet50")
        .context("resnet50 is in the suite")?;
    let program = bench_workloads::load(case.workload)?;
    let hw = case.hardware();
    let xla = baselines::solver("xla").context("xla solver")?;
    let mapping = xla.solve(&program, &hw);
    mapping.validate(&program, &hw)?;

    let mut sim = Simulator::new(&program, &hw);
    let sim_per_s = rate(args.seconds, || {
        black_box(sim.run(black_box(&mapping), false).latency_s);
        1
    });

    // Deltas from a half-built state (every other buffer placed as xla placed it), each
    // asking about a real change: a placed buffer back to level 0, an unplaced one to its
    // xla placement. Buffers xla left in level 0 ask nothing.
    let cost = CostModel::new(&program, &hw);
    let mut state = CostState::new(&cost);
    for (b, p) in mapping.buffers.iter().enumerate() {
        if b % 2 == 0 {
            state.apply(b, p.clone());
        }
    }
    let empty = BufferPlacement::default();
    let candidates: Vec<(usize, &BufferPlacement)> = mapping
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.allocations.is_empty())
        .map(|(b, p)| if b % 2 == 0 { (b, &empty) } else { (b, p) })
        .collect();
    let delta_per_s = rate(args.seconds, || {
        let mut acc = 0.0;
        for &(b, p) in &candidates {
            acc += state.delta(b, black_box(p));
        }
        black_box(acc);
        candidates.len()
    });

    let game = game_figures(&program, &hw, args.seconds)?;

    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "sim_per_s": sim_per_s,
                "costmodel_delta_per_s": delta_per_s,
                "env_steps_per_s": game.steps_per_s,
                "env_steps_with_obs_per_s": game.steps_obs_per_s,
                "episodes_per_s": game.episodes_per_s,
                "replay_verify_ms": game.replay_ms,
                "workload": program.name(),
                "hardware": hw.name,
                "ops": program.len(),
                "buffers": program.buffers().len(),
                "threads": 1,
            })
        );
    } else {
        println!(
            "{} ({} ops, {} buffers) on {}, one core:",
            program.name(),
            program.len(),
            program.buffers().len(),
            hw.name
        );
        println!("  simulations of the xla mapping: {sim_per_s:>12.0} /s");
        println!("  cost-model placement deltas:    {delta_per_s:>12.0} /s");
        println!(
            "  game steps, random legal play:  {:>12.0} /s",
            game.steps_per_s
        );
        println!(
            "  game steps with observations:   {:>12.0} /s",
            game.steps_obs_per_s
        );
        println!(
            "  episodes, random legal play:    {:>12.1} /s",
            game.episodes_per_s
        );
        println!(
            "  load + replay + verify a game:  {:>12.2} ms",
            game.replay_ms
        );
    }
    Ok(())
}

struct GameFigures {
    steps_per_s: f64,
    steps_obs_per_s: f64,
    episodes_per_s: f64,
    replay_ms: f64,
}

/// Random legal play (the `random` player, legal actions included), the same with the
/// observation encoded every step, and the time to load, replay and verify a saved game.
fn game_figures(
    program: &accel_sim::Program,
    hw: &accel_sim::Hardware,
    seconds: f64,
) -> Result<GameFigures> {
    use malloc_game::{observation, players, record::GameRecord, GameOptions, GameSetup};
    use std::sync::Arc;
    let program = Arc::new(program.clone());
    let setup = GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default())?;
    let random = players::player("random").context("random player")?;
    let t0 = Instant::now();
    let (mut steps, mut episodes) = (0usize, 0usize);
    let mut last = None;
    while t0.elapsed().as_secs_f64() < seconds {
        let g = random.play(&setup, episodes as u64);
        steps += g.length();
        episodes += 1;
        last = Some(g);
    }
    let dt = t0.elapsed().as_secs_f64();
    let (steps_per_s, episodes_per_s) = (steps as f64 / dt, episodes as f64 / dt);

    // With the observation: the same uniform choice, drawn from a tiny xorshift so the
    // figure measures the game, not a generator.
    let mut obs = vec![0f32; observation::observation_len(setup.options())];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let t0 = Instant::now();
    let mut obs_steps = 0usize;
    let mut legal = Vec::new();
    while t0.elapsed().as_secs_f64() < seconds {
        let mut g = setup.start();
        while !g.is_terminal() {
            observation::encode(&g, &mut obs);
            legal.clear();
            legal.push(0);
            g.for_each_legal(|a, _, _| legal.push(a));
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            g.apply_action(legal[(x % legal.len() as u64) as usize])?;
            obs_steps += 1;
        }
    }
    let steps_obs_per_s = obs_steps as f64 / t0.elapsed().as_secs_f64();

    let game = last.context("at least one episode")?;
    let dir = std::env::temp_dir().join(format!("mallocmuzero-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("resnet50.game");
    GameRecord::from_game(&game, "random", 0, None)?.save(&path)?;
    let mut times = Vec::new();
    for _ in 0..9 {
        let t0 = Instant::now();
        let record = GameRecord::load(&path)?;
        let replay = record
            .replay(Arc::clone(&program))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        black_box(replay.game.total_return());
        times.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_dir_all(&dir);
    times.sort_by(f64::total_cmp);
    Ok(GameFigures {
        steps_per_s,
        steps_obs_per_s,
        episodes_per_s,
        replay_ms: times[times.len() / 2],
    })
}
