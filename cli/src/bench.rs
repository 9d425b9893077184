//! `mallocmuzero bench`: throughput of the simulator and of the cost model's incremental
//! deltas, on resnet50 with the xla mapping, on one core.

use accel_sim::{BufferPlacement, CostModel, CostState, Hardware, Mapping, Program, Simulator};
use anyhow::{Context, Result};
use clap::Args;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Args, Clone, Default)]
pub struct BenchArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Seconds to spend on each measurement (more than 0, at most a day).
    #[arg(long, default_value_t = 2.0, value_parser = crate::positive_seconds)]
    pub seconds: f64,
    /// Only the search figures on the reference shape (for scripts/bench_mctx.py).
    #[arg(long)]
    pub mcts_only: bool,
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
    let mcts = mcts_figures(args.seconds)?;
    if args.mcts_only {
        outln!("{}", serde_json::to_string(&mcts)?);
        return Ok(());
    }
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == "resnet50")
        .context("resnet50 is in the suite")?;
    let program = bench_workloads::load(case.workload)?;
    let hw = case.hardware();
    let mapping = xla_msa::OneShotSolver::solve(&xla_msa::Xla::default(), &program, &hw);
    mapping.validate(&program, &hw)?;

    let mut sim = Simulator::new(&program, &hw);
    let sim_per_s = rate(args.seconds, || {
        black_box(sim.run(black_box(&mapping), false).latency_s);
        1
    });

    let delta_per_s = delta_figure(&program, &hw, &mapping, args.seconds);

    let game = game_figures(&program, &hw, args.seconds)?;
    let train_steps_per_s = train_figure(&program, &hw, args.seconds)?;

    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "sim_per_s": sim_per_s,
                "costmodel_delta_per_s": delta_per_s,
                "env_steps_per_s": game.steps_per_s,
                "env_steps_with_obs_per_s": game.steps_obs_per_s,
                "episodes_per_s": game.episodes_per_s,
                "replay_verify_ms": game.replay_ms,
                "mcts_sims_per_s": mcts["gumbel"]["sims_per_s"],
                "mcts_mean_depth": mcts["gumbel"]["mean_depth"],
                "mcts_muzero_sims_per_s": mcts["muzero"]["sims_per_s"],
                "mcts_muzero_mean_depth": mcts["muzero"]["mean_depth"],
                // The search's network calls split their rows over every core.
                "mcts_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
                "train_steps_per_s": train_steps_per_s,
                "workload": program.name(),
                "hardware": hw.name,
                "ops": program.len(),
                "buffers": program.buffers().len(),
                "threads": 1,
            })
        );
    } else {
        let rates = Rates {
            sim_per_s,
            delta_per_s,
            train_steps_per_s,
        };
        print_figures(&program, &hw, &rates, &game, &mcts);
    }
    Ok(())
}

/// Cost-model deltas per second. Deltas from a half-built state (every other buffer placed as
/// xla placed it), each asking about a real change: a placed buffer back to level 0, an
/// unplaced one to its xla placement. Buffers xla left in level 0 ask nothing.
fn delta_figure(program: &Program, hw: &Hardware, mapping: &Mapping, seconds: f64) -> f64 {
    let cost = CostModel::new(program, hw);
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
    rate(seconds, || {
        let mut acc = 0.0;
        for &(b, p) in &candidates {
            acc += state.delta(b, black_box(p));
        }
        black_box(acc);
        candidates.len()
    })
}

/// What the simulator, the cost model and the learner do in a second.
struct Rates {
    sim_per_s: f64,
    delta_per_s: f64,
    train_steps_per_s: f64,
}

/// The figures as a table.
fn print_figures(
    program: &Program,
    hw: &Hardware,
    rates: &Rates,
    game: &GameFigures,
    mcts: &serde_json::Value,
) {
    let Rates {
        sim_per_s,
        delta_per_s,
        train_steps_per_s,
    } = rates;
    outln!(
        "{} ({} ops, {} buffers) on {}, one core unless noted:",
        crate::output::shown(program.name()),
        program.len(),
        program.buffers().len(),
        crate::output::shown(&hw.name)
    );
    outln!("  simulations of the xla mapping: {sim_per_s:>12.0} /s");
    outln!("  cost-model placement deltas:    {delta_per_s:>12.0} /s");
    outln!(
        "  game steps, random legal play:  {:>12.0} /s",
        game.steps_per_s
    );
    outln!(
        "  game steps with observations:   {:>12.0} /s",
        game.steps_obs_per_s
    );
    outln!(
        "  episodes, random legal play:    {:>12.1} /s",
        game.episodes_per_s
    );
    outln!(
        "  load + replay + verify a game:  {:>12.2} ms",
        game.replay_ms
    );
    for (name, key) in [("Gumbel MuZero", "gumbel"), ("MuZero pUCT", "muzero")] {
        outln!(
                "  MCTS, {name} (reference shape, batch 256 x 16, all cores): {:>9.0} sims/s, mean depth {:.2}",
                mcts[key]["sims_per_s"].as_f64().unwrap_or_default(),
                mcts[key]["mean_depth"].as_f64().unwrap_or_default()
            );
    }
    outln!("  training steps, default network (batch 128, K = 5): {train_steps_per_s:.1} /s");
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
    use malloc_game::players::{self, Player};
    use malloc_game::{observation, record::GameRecord, GameOptions, GameSetup};
    use std::sync::Arc;
    let program = Arc::new(program.clone());
    let setup = GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default())?;
    let random = players::RandomPlayer;
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

/// Search throughput on the reference shape (observation 512, hidden 256, 13
/// actions, 3 masked at the root; random weights), batch 256 x 16 simulations, for the
/// Gumbel MuZero root and for MuZero pUCT: what `scripts/bench_mctx.py` compares with mctx.
fn mcts_figures(seconds: f64) -> Result<serde_json::Value> {
    use muzero::{GumbelConfig, SearchConfig, Searcher};
    use muzero::{MuZeroNet, NetworkConfig};
    use rand::{Rng, SeedableRng};
    let config = NetworkConfig::reference();
    let net = MuZeroNet::new(&config, 0, &muzero::device())?;
    let (batch, sims) = (256usize, 16usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let obs: Vec<f32> = (0..batch * config.observation_len)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let legal: Vec<bool> = (0..batch * config.action_count)
        .map(|i| i % config.action_count < config.action_count - 3)
        .collect();
    let mut out = serde_json::Map::new();
    for (key, gumbel) in [("gumbel", Some(GumbelConfig::default())), ("muzero", None)] {
        let search = SearchConfig {
            simulations: sims,
            gumbel,
            ..SearchConfig::default()
        };
        let mut searcher = Searcher::new();
        let mut depth = 0.0f64;
        let mut calls = 0usize;
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < seconds || calls == 0 {
            let outs = searcher
                .search(&net, &obs, &legal, batch, &search, &mut rng)
                .map_err(|e| anyhow::anyhow!("search: {e}"))?;
            depth += outs.iter().map(|o| o.mean_depth as f64).sum::<f64>() / batch as f64;
            calls += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        out.insert(
            key.into(),
            serde_json::json!({
                "sims_per_s": (calls * batch * sims) as f64 / dt,
                "mean_depth": depth / calls as f64,
                "batch": batch, "simulations": sims,
            }),
        );
    }
    Ok(serde_json::Value::Object(out))
}

/// Training steps per second of the default network on resnet50's game (batch 128,
/// K = 5), from two random games in the replay buffer.
fn train_figure(
    program: &accel_sim::Program,
    hw: &accel_sim::Hardware,
    seconds: f64,
) -> Result<f64> {
    use malloc_game::players::{self, Player};
    use malloc_game::{GameOptions, GameSetup};
    use malloc_muzero::train::TrainConfig;
    use muzero::MuZeroNet;
    use muzero::Optimizer;
    use muzero::{GameHistory, ReplayBuffer};
    use rand::SeedableRng;
    use std::sync::Arc;
    let setup = GameSetup::new(
        Arc::new(program.clone()),
        hw.clone(),
        GameOptions::default(),
    )?;
    let config = TrainConfig::default();
    let net_config = config.network_for(&setup)?;
    let net = MuZeroNet::new(&net_config, 0, &muzero::device())?;
    let mut opt = Optimizer::new(net.vars(), config.optim.clone())?;
    let mut replay = ReplayBuffer::new(
        config.replay.clone(),
        net_config.observation_len,
        net_config.action_count,
    )?;
    let random = players::RandomPlayer;
    let a = setup.action_count();
    for seed in 0..2 {
        // Replay the random player's actions to record observations and rewards.
        let played = random.play(&setup, seed);
        let mut g = setup.start();
        let mut h = GameHistory::new(net_config.observation_len, a);
        let uniform = vec![1.0 / a as f32; a];
        for action in played.actions() {
            let obs = g.observation();
            let r = g.apply_action(action)?;
            h.push_step(&obs, action, r as f32, 0.0, &uniform)?;
        }
        replay.push(h)?;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let t0 = Instant::now();
    let mut steps = 0usize;
    while t0.elapsed().as_secs_f64() < seconds || steps == 0 {
        let batch = replay.sample(config.batch_size, &mut rng)?;
        let out = net.loss(&batch, &config.loss)?;
        opt.step(&out.loss)?;
        replay.update_priorities(&batch.indices, &out.value_errors)?;
        steps += 1;
    }
    Ok(steps as f64 / t0.elapsed().as_secs_f64())
}
