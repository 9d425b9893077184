//! Training: self-play and learning side by side, evaluation against the xla baseline,
//! checkpoints and resume.
//!
//! The schedule is pipelined and deterministic. Iteration `i`: a self-play worker thread
//! (fed over a crossbeam channel) plays `games_per_iteration` games in lockstep with the
//! weights the learner had at the start of `i`, while the learner trains on the games of
//! iterations `< i` until it has done `train_steps_per_position` steps per position
//! generated so far. Then the new games enter the replay buffer, an evaluation game (no
//! noise) is played and scored by the simulator, and every `checkpoint_every` iterations
//! the run is saved. Every random draw comes from the run seed and the iteration number,
//! so a run, and a resumed run, repeat exactly.
//!
//! A run directory holds `run.json` (what is being trained), `metrics.jsonl` (one line per
//! iteration), `checkpoints/iter-NNNNNN/` (weights, optimizer, replay buffer) with
//! `checkpoints/latest.json` pointing at the newest complete one (written last, atomically),
//! `best/` (the fastest mapping found, its saved game and a summary), and `games/` (the
//! evaluation games, with search statistics).

use crate::network::{LossWeights, MuZeroNet, NetError, NetworkConfig};
use crate::optim::{OptimConfig, OptimError, Optimizer};
use crate::replay::{GameHistory, ReplayBuffer, ReplayConfig, ReplayError};
use crate::search::{GumbelConfig, SearchConfig, Searcher};
use accel_sim::mapping::MappingFile;
use candle_core::Device;
use indicatif::{ProgressBar, ProgressStyle};
use malloc_game::record::{GameRecord, SearchStats};
use malloc_game::{binio, observation, Game, GameSetup};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Everything that shapes a training run. Loads from JSON (`--config FILE`); every field
/// has a default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    pub seed: u64,
    /// The network; `None` sizes [`NetworkConfig::small`] to the game.
    pub network: Option<NetworkConfig>,
    /// Self-play search (Gumbel MuZero with 16 simulations by default).
    pub search: SearchConfig,
    /// Self-play plays a uniformly random legal action instead of the search's with this
    /// probability per turn (the search policy stays the policy target). Why: once the
    /// policy is sharp, the Gumbel noise alone seldom tries an action the model misjudges,
    /// so the model never sees the true outcome and self-play settles on a local optimum.
    pub explore_epsilon: f64,
    /// Simulations of the evaluation game (its search has no noise).
    pub eval_simulations: usize,
    pub replay: ReplayConfig,
    pub optim: OptimConfig,
    pub loss: LossWeights,
    pub batch_size: usize,
    /// Games played in lockstep per iteration (one batched search call per turn).
    pub games_per_iteration: usize,
    /// The controlled ratio: the learner does this many training steps per position
    /// generated.
    pub train_steps_per_position: f64,
    /// Play an evaluation game every this many iterations.
    pub eval_every: usize,
    /// Save a checkpoint every this many iterations (and at the end).
    pub checkpoint_every: usize,
    /// MuZero Reanalyse: each iteration the learner re-searches this many stored games
    /// with its latest network (noise-free) and replaces their search policies, root
    /// values and value targets (with the default Monte Carlo value targets only the
    /// policy targets change). Games are taken round-robin over the buffer, oldest first.
    /// 0 (the default) turns it off.
    pub reanalyse_games_per_iteration: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 0,
            network: None,
            // c_scale 0.1 (mctx's default), not the paper's 1.0: with 1.0, sigma(q) over
            // min-max-rescaled Q spans ~66 and swamps the Gumbel noise, so self-play became
            // deterministic and stopped exploring (unet: every game identical from the
            // 9th iteration on).
            search: SearchConfig {
                simulations: 16,
                gumbel: Some(GumbelConfig {
                    c_scale: 0.1,
                    ..GumbelConfig::default()
                }),
                ..SearchConfig::default()
            },
            // 0.05: on the tiny test game, self-play without it found the optimum with 2 of 5
            // seeds in 3,000 steps (stuck behind a move whose model reward was wrong), with
            // it 5 of 5 (0.15: 4 of 4).
            explore_epsilon: 0.05,
            eval_simulations: 16,
            replay: ReplayConfig::default(),
            optim: OptimConfig::default(),
            loss: LossWeights::default(),
            batch_size: 128,
            games_per_iteration: 8,
            train_steps_per_position: 0.05,
            eval_every: 1,
            checkpoint_every: 5,
            reanalyse_games_per_iteration: 0,
        }
    }
}

/// A failure of training; names the file or field involved.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("train config: {0}")]
    Config(String),
    #[error(transparent)]
    Net(#[from] NetError),
    #[error(transparent)]
    Optim(#[from] OptimError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Bin(#[from] binio::BinError),
    #[error("{0}")]
    Game(String),
    #[error("{path}: {msg}")]
    File { path: String, msg: String },
    #[error("resume: {0}")]
    Resume(String),
}

impl TrainConfig {
    /// Refuses impossible values, naming the field.
    pub fn check(&self) -> Result<(), TrainError> {
        let bad = |m: String| Err(TrainError::Config(m));
        self.search
            .check()
            .map_err(|m| TrainError::Config(format!("search: {m}")))?;
        self.replay.check()?;
        self.optim
            .check()
            .map_err(|m| TrainError::Config(format!("optim: {m}")))?;
        if let Some(n) = &self.network {
            n.check()
                .map_err(|m| TrainError::Config(format!("network: {m}")))?;
        }
        if self.batch_size == 0 {
            return bad("batch_size: must be >= 1, got 0".into());
        }
        if self.games_per_iteration == 0 {
            return bad("games_per_iteration: must be >= 1, got 0".into());
        }
        if self.eval_simulations == 0 {
            return bad("eval_simulations: must be >= 1, got 0".into());
        }
        if !(self.train_steps_per_position.is_finite() && self.train_steps_per_position >= 0.0) {
            return bad(format!(
                "train_steps_per_position: must be >= 0, got {}",
                self.train_steps_per_position
            ));
        }
        if !(0.0..=1.0).contains(&self.explore_epsilon) {
            return bad(format!(
                "explore_epsilon: must be in [0, 1], got {}",
                self.explore_epsilon
            ));
        }
        if self.eval_every == 0 || self.checkpoint_every == 0 {
            return bad("eval_every, checkpoint_every: must be >= 1".into());
        }
        Ok(())
    }

    /// The network for a game with these sizes; a configured one must match them.
    pub fn network_for(&self, setup: &GameSetup) -> Result<NetworkConfig, TrainError> {
        let obs = observation::observation_len(setup.options());
        let actions = setup.action_count();
        match &self.network {
            None => Ok(NetworkConfig::small(obs, actions)),
            Some(n) if n.observation_len == obs && n.action_count == actions => Ok(n.clone()),
            Some(n) => Err(TrainError::Config(format!(
                "network: observation_len {} and action_count {} do not match this game's {obs} and {actions}",
                n.observation_len, n.action_count
            ))),
        }
    }
}

/// When to stop: whichever comes first (none: run until interrupted).
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub minutes: Option<f64>,
    /// Total training steps, counting those of a resumed run.
    pub steps: Option<u64>,
}

/// What a run reports at its end.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainSummary {
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    pub elapsed_s: f64,
    pub xla_latency_s: f64,
    pub all_slow_latency_s: f64,
    /// The fastest mapping found in training (self-play or evaluation games).
    pub best_latency_s: f64,
    pub best_return: f64,
    /// The last evaluation game (no noise).
    pub eval_latency_s: Option<f64>,
}

/// `run.json`: what a run trains, so `--resume` and `evaluate --checkpoint` rebuild it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    pub workload: String,
    pub program_hash: u64,
    pub hardware: accel_sim::hardware::HardwareFile,
    pub options: malloc_game::GameOptions,
    pub network: NetworkConfig,
    pub config: TrainConfig,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Latest {
    iteration: u64,
    dir: String,
    train_steps: u64,
    positions: u64,
    elapsed_s: f64,
}

const REPLAY_MAGIC: &[u8; 8] = b"MMZRPLY\0";
const REPLAY_VERSION: u32 = 1;

/// The device the networks run on: a CUDA GPU when built with the `cuda` feature and one
/// is present, else the CPU.
pub fn device() -> Device {
    #[cfg(feature = "cuda")]
    {
        if let Ok(d) = Device::cuda_if_available(0) {
            return d;
        }
    }
    Device::Cpu
}

/// A seed for one role in one iteration, so every draw is reproducible and resumable.
fn seed_for(seed: u64, iteration: u64, role: u64) -> u64 {
    let mut x = seed
        ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ role.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// One finished game with what the learner and the records need.
pub struct PlayedGame {
    pub game: Game,
    pub history: GameHistory,
    pub search: Vec<SearchStats>,
}

/// Plays `count` games of `setup` in lockstep, one batched search per turn; each turn
/// plays a random legal action instead of the search's with probability `explore_epsilon`.
pub fn play_games(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    count: usize,
    search: &SearchConfig,
    explore_epsilon: f64,
    seed: u64,
) -> Result<Vec<PlayedGame>, TrainError> {
    let obs_len = observation::observation_len(setup.options());
    let a = setup.action_count();
    let mut games: Vec<Game> = (0..count).map(|_| setup.start()).collect();
    let mut histories = vec![GameHistory::new(obs_len, a); count];
    let mut stats: Vec<Vec<SearchStats>> = vec![Vec::new(); count];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut searcher = Searcher::new();
    let mut obs = vec![0f32; count * obs_len];
    let mut legal = vec![false; count * a];
    // Every game has one turn per buffer, so all end together.
    while !games[0].is_terminal() {
        for (i, g) in games.iter().enumerate() {
            observation::encode(g, &mut obs[i * obs_len..(i + 1) * obs_len]);
            g.legal_mask(&mut legal[i * a..(i + 1) * a]);
        }
        let outs = searcher
            .search(net, &obs, &legal, count, search, &mut rng)
            .map_err(|e| TrainError::Game(format!("search: {e}")))?;
        for (i, out) in outs.iter().enumerate() {
            let mut action = out.action;
            if explore_epsilon > 0.0 && rng.random_bool(explore_epsilon) {
                let legal_here = &legal[i * a..(i + 1) * a];
                let n = legal_here.iter().filter(|&&l| l).count();
                let k = rng.random_range(0..n.max(1));
                action = (0..a).filter(|&j| legal_here[j]).nth(k).unwrap_or(action);
            }
            let r = games[i]
                .apply_action(action)
                .map_err(|e| TrainError::Game(e.to_string()))?;
            histories[i].push_step(
                &obs[i * obs_len..(i + 1) * obs_len],
                action,
                r as f32,
                out.root_value,
                &out.policy_target,
            )?;
            stats[i].push(SearchStats {
                visits: out.visit_counts.clone(),
                root_value: out.root_value,
            });
        }
    }
    Ok(games
        .into_iter()
        .zip(histories)
        .zip(stats)
        .map(|((game, history), search)| PlayedGame {
            game,
            history,
            search,
        })
        .collect())
}

/// One iteration's reanalyse: games `iteration * count ..` (modulo the games stored,
/// oldest first), so the schedule follows from the buffer alone and resumes exactly.
/// Returns how many games were reanalysed.
fn reanalyse_round(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    replay: &mut ReplayBuffer,
    search: &SearchConfig,
    iteration: u64,
    count: usize,
    seed: u64,
) -> Result<usize, TrainError> {
    let stored = replay.games();
    if count == 0 || stored == 0 {
        return Ok(0);
    }
    let first = (iteration as usize).wrapping_mul(count) % stored;
    let all: Vec<usize> = replay.iter_games().map(|(id, _)| id).collect();
    let ids: Vec<usize> = (0..count.min(stored))
        .map(|j| all[(first + j) % stored])
        .collect();
    for id in &ids {
        reanalyse_game(net, setup, replay, search, *id, seed)?;
    }
    Ok(ids.len())
}

/// Re-searches every position of stored game `id` with `net` (one batched, noise-free
/// search over all its positions) and stores the new search policies and root values.
/// The legal masks are rebuilt by replaying the game's actions. Returns `false` when the
/// game is no longer stored.
pub fn reanalyse_game(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    replay: &mut ReplayBuffer,
    search: &SearchConfig,
    id: usize,
    seed: u64,
) -> Result<bool, TrainError> {
    let Some(history) = replay.game(id) else {
        return Ok(false);
    };
    let (len, a) = (history.len(), setup.action_count());
    if len == 0 {
        return Ok(true);
    }
    let mut legal = vec![false; len * a];
    let mut game = setup.start();
    for (t, &action) in history.actions.iter().enumerate() {
        game.legal_mask(&mut legal[t * a..(t + 1) * a]);
        game.apply_action(action)
            .map_err(|e| TrainError::Game(format!("reanalyse of game {id}, turn {t}: {e}")))?;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let outs = Searcher::new()
        .search(
            net,
            &history.observations,
            &legal,
            len,
            &search.deterministic(),
            &mut rng,
        )
        .map_err(|e| TrainError::Game(format!("reanalyse search: {e}")))?;
    let root_values: Vec<f32> = outs.iter().map(|o| o.root_value).collect();
    let policies: Vec<f32> = outs
        .iter()
        .flat_map(|o| o.policy_target.iter().copied())
        .collect();
    Ok(replay.reanalyse(id, &root_values, &policies)?)
}

/// Plays one game with no search noise: the trained agent's mapping.
pub fn play_greedy(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    search: &SearchConfig,
    seed: u64,
) -> Result<PlayedGame, TrainError> {
    let mut v = play_games(net, setup, 1, &search.deterministic(), 0.0, seed)?;
    v.pop()
        .ok_or_else(|| TrainError::Game("no game was played".into()))
}

/// Maps an I/O or format error to one that names the file.
fn file_error<E: std::fmt::Display>(path: &Path) -> impl FnOnce(E) -> TrainError + '_ {
    move |e| TrainError::File {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), TrainError> {
    let text = serde_json::to_string_pretty(value).map_err(file_error(path))?;
    Ok(binio::write_bytes_atomic(path, text.as_bytes())?)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, TrainError> {
    let text = std::fs::read_to_string(path).map_err(file_error(path))?;
    serde_json::from_str(&text).map_err(file_error(path))
}

/// Reads a run's `run.json`.
pub fn read_run_info(dir: &Path) -> Result<RunInfo, TrainError> {
    read_json(&dir.join("run.json"))
}

/// Loads the newest checkpoint's network of a run directory.
pub fn load_network(dir: &Path) -> Result<MuZeroNet, TrainError> {
    let info = read_run_info(dir)?;
    let latest: Latest = read_json(&dir.join("checkpoints").join("latest.json"))?;
    let path = dir
        .join("checkpoints")
        .join(&latest.dir)
        .join("weights.safetensors");
    Ok(MuZeroNet::load(&path, &info.network, &device())?)
}

/// The xla baseline's simulated latency on this setup.
pub fn xla_latency(setup: &GameSetup) -> Result<f64, TrainError> {
    let (p, hw) = (setup.program(), setup.hardware());
    let xla = malloc_game::baselines::solver("xla")
        .ok_or_else(|| TrainError::Game("the xla solver is built in".into()))?;
    Ok(accel_sim::Simulator::new(p, hw)
        .run(&xla.solve(p, hw), false)
        .latency_s)
}

/// The fastest mapping found so far, and where and how to record a better one.
struct Best<'a> {
    ret: f64,
    latency: f64,
    dir: &'a Path,
    setup: &'a GameSetup,
    workload: &'a str,
    seed: u64,
    xla: f64,
}

/// Trains on `setup`, writing into `dir`. With `resume`, continues the run saved there.
pub fn train(
    setup: Arc<GameSetup>,
    workload: &str,
    config: TrainConfig,
    dir: &Path,
    resume: bool,
    limits: Limits,
) -> Result<TrainSummary, TrainError> {
    config.check()?;
    let started = Instant::now();
    let device = device();
    let xla = xla_latency(&setup)?;
    let s0 = setup.all_slow_latency();
    let games_dir = dir.join("games");
    let best_dir = dir.join("best");
    let ckpt_dir = dir.join("checkpoints");
    for d in [dir, &games_dir, &best_dir, &ckpt_dir] {
        std::fs::create_dir_all(d).map_err(file_error(d))?;
    }
    let net_config;
    let net;
    let mut opt;
    let mut replay;
    let mut iteration: u64;
    let mut train_steps: u64;
    let mut positions: u64;
    let mut elapsed_before = 0.0;
    let mut best = Best {
        ret: f64::NEG_INFINITY,
        latency: f64::INFINITY,
        dir: &best_dir,
        setup: &setup,
        workload,
        seed: config.seed,
        xla,
    };
    if resume {
        let info = read_run_info(dir)?;
        if info.program_hash != setup.program().content_hash() || info.workload != workload {
            return Err(TrainError::Resume(format!(
                "{} was trained on `{}` (program hash {:#x}); this is `{workload}` ({:#x})",
                dir.display(),
                info.workload,
                info.program_hash,
                setup.program().content_hash()
            )));
        }
        let latest: Latest = read_json(&ckpt_dir.join("latest.json"))?;
        let here = ckpt_dir.join(&latest.dir);
        net_config = info.network.clone();
        net = MuZeroNet::load(&here.join("weights.safetensors"), &net_config, &device)?;
        opt = Optimizer::load(
            &here.join("optimizer.bin"),
            net.vars(),
            Some(config.optim.clone()),
        )?;
        replay =
            binio::read::<ReplayBuffer>(&here.join("replay.bin"), REPLAY_MAGIC, REPLAY_VERSION)?;
        iteration = latest.iteration + 1;
        train_steps = latest.train_steps;
        positions = latest.positions;
        elapsed_before = latest.elapsed_s;
        if let Ok(b) = read_json::<TrainSummary>(&best_dir.join("summary.json")) {
            best.ret = b.best_return;
            best.latency = b.best_latency_s;
        }
    } else {
        net_config = config.network_for(&setup)?;
        net = MuZeroNet::new(&net_config, config.seed, &device)?;
        opt = Optimizer::new(net.vars(), config.optim.clone())?;
        replay = ReplayBuffer::new(
            config.replay.clone(),
            net_config.observation_len,
            net_config.action_count,
        )?;
        iteration = 0;
        train_steps = 0;
        positions = 0;
        write_json(
            &dir.join("run.json"),
            &RunInfo {
                workload: workload.to_string(),
                program_hash: setup.program().content_hash(),
                hardware: setup.hardware().to_file(),
                options: setup.options().clone(),
                network: net_config.clone(),
                config: config.clone(),
            },
        )?;
    }

    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut last_eval: Option<f64> = None;
    let mut last_saved = iteration.saturating_sub(1);
    let (job_tx, job_rx) = crossbeam_channel::bounded::<(u64, MuZeroNet)>(1);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<Result<Vec<PlayedGame>, TrainError>>(1);
    let result = std::thread::scope(|scope| -> Result<(), TrainError> {
        // The self-play worker: plays each iteration it is sent with the weights it gets.
        let worker_setup = Arc::clone(&setup);
        let worker_config = config.clone();
        scope.spawn(move || {
            for (it, weights) in job_rx.iter() {
                let played = play_games(
                    &weights,
                    &worker_setup,
                    worker_config.games_per_iteration,
                    &worker_config.search,
                    worker_config.explore_epsilon,
                    seed_for(worker_config.seed, it, 1),
                );
                if done_tx.send(played).is_err() {
                    break;
                }
            }
        });
        loop {
            let elapsed_min = started.elapsed().as_secs_f64() / 60.0;
            if limits.minutes.is_some_and(|m| elapsed_min >= m)
                || limits.steps.is_some_and(|s| train_steps >= s)
            {
                break;
            }
            job_tx
                .send((iteration, net.snapshot()?))
                .map_err(|_| TrainError::Game("the self-play worker stopped".into()))?;
            // Learn beside it, up to the ratio of what is already in the buffer.
            let mut learn_rng = StdRng::seed_from_u64(seed_for(config.seed, iteration, 2));
            let target = (config.train_steps_per_position * positions as f64).floor() as u64;
            let target = limits.steps.map_or(target, |s| target.min(s));
            let mut loss_sum = crate::network::LossParts::default();
            let mut last_step = None;
            let mut done = 0u64;
            while train_steps < target && replay.positions() > 0 {
                let batch = replay.sample(config.batch_size, &mut learn_rng)?;
                let out = net.loss(&batch, &config.loss)?;
                let stats = opt.step(&out.loss)?;
                replay.update_priorities(&batch.indices, &out.value_errors)?;
                loss_sum.value += out.parts.value;
                loss_sum.reward += out.parts.reward;
                loss_sum.policy += out.parts.policy;
                loss_sum.total += out.parts.total;
                last_step = Some(stats);
                train_steps += 1;
                done += 1;
            }
            let reanalysed = reanalyse_round(
                &net,
                &setup,
                &mut replay,
                &config.search,
                iteration,
                config.reanalyse_games_per_iteration,
                seed_for(config.seed, iteration, 4),
            )?;
            let played = done_rx
                .recv()
                .map_err(|_| TrainError::Game("the self-play worker stopped".into()))??;
            let mut returns = Vec::new();
            for g in played {
                positions += g.history.len() as u64;
                returns.push(g.game.total_return());
                best.consider(&g, train_steps)?;
                replay.push(g.history)?;
            }
            if iteration % config.eval_every as u64 == 0 {
                let eval_search = SearchConfig {
                    simulations: config.eval_simulations,
                    ..config.search.clone()
                };
                let g = play_greedy(
                    &net,
                    &setup,
                    &eval_search,
                    seed_for(config.seed, iteration, 3),
                )?;
                last_eval = g.game.final_latency();
                GameRecord::from_game(&g.game, "muzero", iteration, Some(g.search.clone()))
                    .map_err(|e| TrainError::Game(e.to_string()))?
                    .save(&games_dir.join(format!("eval-{iteration:06}.game")))
                    .map_err(|e| TrainError::Game(e.to_string()))?;
                best.consider(&g, train_steps)?;
            }
            let elapsed_s = elapsed_before + started.elapsed().as_secs_f64();
            let n = done.max(1) as f32;
            let line = serde_json::json!({
                "iteration": iteration,
                "elapsed_s": elapsed_s,
                "positions": positions,
                "train_steps": train_steps,
                "steps_this_iteration": done,
                "reanalysed_games": reanalysed,
                "loss": loss_sum.total / n,
                "loss_value": loss_sum.value / n,
                "loss_reward": loss_sum.reward / n,
                "loss_policy": loss_sum.policy / n,
                "lr": last_step.as_ref().map(|s| s.lr),
                "grad_norm": last_step.as_ref().map(|s| s.grad_norm),
                "selfplay_mean_return": returns.iter().sum::<f64>() / returns.len().max(1) as f64,
                "eval_latency_s": last_eval,
                "best_latency_s": best.latency,
                "best_return": best.ret,
                "xla_latency_s": xla,
                "speedup_vs_xla": xla / best.latency,
            });
            append_metrics(&dir.join("metrics.jsonl"), &line.to_string())?;
            bar.set_message(format!(
                "iteration {iteration}  positions {positions}  steps {train_steps}  loss {:.4}  best {:.2} us ({:.4}x vs xla {:.2} us)  eval {}  {:.0} positions/s",
                loss_sum.total / n,
                best.latency * 1e6,
                xla / best.latency,
                xla * 1e6,
                last_eval.map_or("-".into(), |l| format!("{:.2} us", l * 1e6)),
                positions as f64 / elapsed_s.max(1e-9),
            ));
            bar.tick();
            if (iteration + 1) % config.checkpoint_every as u64 == 0 {
                save_checkpoint(
                    &ckpt_dir,
                    iteration,
                    &net,
                    &opt,
                    &replay,
                    train_steps,
                    positions,
                    elapsed_s,
                )?;
                last_saved = iteration;
            }
            iteration += 1;
        }
        drop(job_tx);
        Ok(())
    });
    result?;
    let elapsed_s = elapsed_before + started.elapsed().as_secs_f64();
    if iteration > 0 && last_saved != iteration - 1 {
        save_checkpoint(
            &ckpt_dir,
            iteration - 1,
            &net,
            &opt,
            &replay,
            train_steps,
            positions,
            elapsed_s,
        )?;
    }
    bar.finish_and_clear();
    let summary = TrainSummary {
        iterations: iteration,
        train_steps,
        positions,
        elapsed_s,
        xla_latency_s: xla,
        all_slow_latency_s: s0,
        best_latency_s: best.latency,
        best_return: best.ret,
        eval_latency_s: last_eval,
    };
    write_json(&best_dir.join("summary.json"), &summary)?;
    Ok(summary)
}

fn append_metrics(path: &Path, line: &str) -> Result<(), TrainError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(file_error(path))?;
    writeln!(f, "{line}").map_err(file_error(path))
}

impl Best<'_> {
    /// Keeps `g` if it beats the best so far: its mapping, saved game and a summary.
    fn consider(&mut self, g: &PlayedGame, train_steps: u64) -> Result<(), TrainError> {
        let ret = g.game.total_return();
        if ret <= self.ret {
            return Ok(());
        }
        let latency = g.game.final_latency().unwrap_or(f64::INFINITY);
        self.ret = ret;
        self.latency = latency;
        let mapping = MappingFile::from_mapping(self.setup.program(), &g.game.mapping());
        write_json(&self.dir.join("mapping.json"), &mapping)?;
        GameRecord::from_game(&g.game, "muzero", self.seed, Some(g.search.clone()))
            .map_err(|e| TrainError::Game(e.to_string()))?
            .save(&self.dir.join("game.game"))
            .map_err(|e| TrainError::Game(e.to_string()))?;
        write_json(
            &self.dir.join("found.json"),
            &serde_json::json!({
                "workload": self.workload, "latency_s": latency, "return": ret,
                "speedup_vs_xla": self.xla / latency, "train_steps": train_steps,
            }),
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn save_checkpoint(
    ckpt_dir: &Path,
    iteration: u64,
    net: &MuZeroNet,
    opt: &Optimizer,
    replay: &ReplayBuffer,
    train_steps: u64,
    positions: u64,
    elapsed_s: f64,
) -> Result<(), TrainError> {
    let name = format!("iter-{iteration:06}");
    let here: PathBuf = ckpt_dir.join(&name);
    std::fs::create_dir_all(&here).map_err(file_error(&here))?;
    net.save(&here.join("weights.safetensors"))?;
    opt.save(&here.join("optimizer.bin"))?;
    binio::write_atomic(
        &here.join("replay.bin"),
        REPLAY_MAGIC,
        REPLAY_VERSION,
        replay,
    )?;
    // The pointer is written last: a checkpoint counts only once it is complete.
    write_json(
        &ckpt_dir.join("latest.json"),
        &Latest {
            iteration,
            dir: name.clone(),
            train_steps,
            positions,
            elapsed_s,
        },
    )?;
    if let Ok(entries) = std::fs::read_dir(ckpt_dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.starts_with("iter-") && n != name {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    Ok(())
}
