//! Playing games with the network: self-play, evaluation, reanalyse, and the xla baseline.

use super::{TrainConfig, TrainError};
use crate::search_model::{BatchSearch, SearchModel};
use malloc_game::anytime::Line;
use malloc_game::record::SearchStats;
use malloc_game::{observation, Game, GameSetup};
use muzero::MuZeroNet;
use muzero::{GameHistory, ReplayBuffer};
use muzero::{SearchConfig, Searcher};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;

// A seed for one role in one iteration, so every draw is reproducible and resumable.
pub(super) use malloc_game::seed_for;

/// One finished game with what the learner and the records need.
pub struct PlayedGame {
    /// The finished game.
    pub game: Game,
    /// Its positions as the learner stores them (none for a branch proposal, which searched
    /// nothing of its own).
    pub history: GameHistory,
    /// The search's visit counts and root value at each turn, for the saved game.
    pub search: Vec<SearchStats>,
}

/// Plays `count` games of `setup` in lockstep, one batched search through `model` per
/// turn; each turn plays a random legal action instead of the search's with probability
/// `explore_epsilon`.
pub fn play_games(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    count: usize,
    search: (&SearchConfig, SearchModel),
    explore_epsilon: f64,
    seed: u64,
) -> Result<Vec<PlayedGame>, TrainError> {
    let starts = (0..count).map(|_| setup.start()).collect();
    let play = SelfPlay {
        net,
        search: search.0,
        model: search.1,
        explore_epsilon,
        cancelled: &|| false,
    };
    Ok(play.play_from(starts, seed)?.unwrap_or_default())
}

/// How self-play plays: the network, its search and what it steps through, the
/// exploration, and when to give up.
pub(super) struct SelfPlay<'a> {
    pub net: &'a MuZeroNet,
    pub search: &'a SearchConfig,
    pub model: SearchModel,
    pub explore_epsilon: f64,
    /// Asked every turn; `true` abandons the games (`Ok(None)`).
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl SelfPlay<'_> {
    /// Plays the games `starts` (fresh games, or games part-played elsewhere: their
    /// histories hold only the turns played here) to their ends in lockstep.
    pub fn play_from(
        &self,
        starts: Vec<Game>,
        seed: u64,
    ) -> Result<Option<Vec<PlayedGame>>, TrainError> {
        let Some(setup) = starts.first().map(|g| Arc::clone(g.setup())) else {
            return Ok(Some(Vec::new()));
        };
        let count = starts.len();
        let obs_len = observation::observation_len(setup.options());
        let a = setup.action_count();
        let mut games = starts;
        let mut histories = vec![GameHistory::new(obs_len, a); count];
        // A part-played game's earlier turns were not searched here: empty statistics.
        let mut stats: Vec<Vec<SearchStats>> =
            games.iter().map(|g| unsearched(a, g.turn())).collect();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut searcher = Searcher::new();
        let mut obs = vec![0f32; count * obs_len];
        let mut legal = vec![false; count * a];
        // Games take different numbers of turns (a turn decides one use, and how many uses
        // have a choice depends on the moves): each step searches the games still going.
        let mut live: Vec<usize> = Vec::with_capacity(count);
        loop {
            live.clear();
            live.extend((0..count).filter(|&i| !games[i].is_terminal()));
            if live.is_empty() {
                break;
            }
            if (self.cancelled)() {
                return Ok(None);
            }
            for (j, &i) in live.iter().enumerate() {
                observation::encode(&games[i], &mut obs[j * obs_len..(j + 1) * obs_len]);
                games[i].legal_mask(&mut legal[j * a..(j + 1) * a]);
            }
            let n = live.len();
            let outs = self
                .batch()
                .run(
                    &mut searcher,
                    live.iter().map(|&i| &games[i]),
                    &obs[..n * obs_len],
                    &legal[..n * a],
                    &mut rng,
                )
                .map_err(TrainError::Search)?;
            for (j, out) in outs.iter().enumerate() {
                let i = live[j];
                let action = self.explored(&mut rng, &legal[j * a..(j + 1) * a], out.action);
                let r = games[i].apply_action(action)?;
                histories[i].push_step(
                    &obs[j * obs_len..(j + 1) * obs_len],
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
        Ok(Some(
            games
                .into_iter()
                .zip(histories)
                .zip(stats)
                .map(|((game, history), search)| PlayedGame {
                    game,
                    history,
                    search,
                })
                .collect(),
        ))
    }

    /// The search's `action`, or with probability `explore_epsilon` a uniformly drawn
    /// legal one instead.
    fn explored(&self, rng: &mut StdRng, legal: &[bool], action: usize) -> usize {
        if !(self.explore_epsilon > 0.0 && rng.random_bool(self.explore_epsilon)) {
            return action;
        }
        let n = legal.iter().filter(|&&l| l).count();
        let k = rng.random_range(0..n.max(1));
        (0..legal.len())
            .filter(|&x| legal[x])
            .nth(k)
            .unwrap_or(action)
    }

    fn batch(&self) -> BatchSearch<'_> {
        BatchSearch {
            net: self.net,
            model: self.model,
            search: self.search,
        }
    }

    /// [`SelfPlay::play_from`] with the games split among `threads` threads (contiguous runs
    /// of games; run `k` seeded from `seed` and `k`, run 0 from `seed` itself), results in
    /// the order of `starts`.
    pub fn play_threaded(
        &self,
        starts: Vec<Game>,
        seed: u64,
        threads: usize,
    ) -> Result<Option<Vec<PlayedGame>>, TrainError> {
        let threads = threads.clamp(1, starts.len().max(1));
        if threads == 1 {
            return self.play_from(starts, seed);
        }
        let per = starts.len().div_ceil(threads);
        let mut parts: Vec<Vec<Game>> = Vec::new();
        let mut rest = starts;
        while !rest.is_empty() {
            let tail = rest.split_off(per.min(rest.len()));
            parts.push(rest);
            rest = tail;
        }
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(k, part)| {
                    let seed = if k == 0 {
                        seed
                    } else {
                        seed_for(seed, k as u64, 7)
                    };
                    s.spawn(move || self.play_from(part, seed))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(Err(TrainError::SelfPlayPanicked)))
                .collect()
        });
        let mut all = Vec::new();
        for r in results {
            match r? {
                Some(games) => all.extend(games),
                None => return Ok(None),
            }
        }
        Ok(Some(all))
    }
}

/// What one batch of self-play needs: the game, the run's config, and the threads that
/// replay branch proposals. The trainer and a remote worker ([`super::SelfPlayWorker`])
/// collect games the same way.
pub(super) struct Collector<'a> {
    pub setup: &'a Arc<GameSetup>,
    pub config: &'a TrainConfig,
    pub pool: &'a rayon::ThreadPool,
}

impl Collector<'_> {
    /// One iteration's self-play games, with `weights` (run on the self-play thread): a
    /// share of them branch from `best`, the agent's best game so far. `None` if
    /// `cancelled` said so first.
    pub fn collect(
        &self,
        weights: &MuZeroNet,
        iteration: u64,
        best: Option<&Game>,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<Vec<PlayedGame>>, TrainError> {
        let c = self.config;
        let count = c.games_per_iteration;
        let branches = best.map_or(0, |_| (count as f64 * c.branch_fraction).round() as usize);
        let mut rng = StdRng::seed_from_u64(seed_for(c.seed, iteration, 5));
        let mut starts = Vec::with_capacity(count);
        for _ in 0..branches {
            let Some(best) = best else { break };
            let turn = rng.random_range(0..best.turn().max(1));
            let mut g = self.setup.start();
            for a in best.actions().into_iter().take(turn) {
                g.apply_action(a)?;
            }
            starts.push(g);
        }
        starts.extend((starts.len()..count).map(|_| self.setup.start()));
        let play = SelfPlay {
            net: weights,
            search: &c.search,
            model: c.search_model,
            explore_epsilon: c.explore_epsilon,
            cancelled,
        };
        let Some(mut played) =
            play.play_threaded(starts, seed_for(c.seed, iteration, 1), c.threads)?
        else {
            return Ok(None);
        };
        if !self.proposals(&play, best, iteration, &mut played)? {
            return Ok(None);
        }
        Ok(Some(played))
    }

    /// The iteration's proposal rounds, from the agent's best game (annealing restarts
    /// from it each iteration). Proposals faster than every game so far join `played`.
    /// `Ok(false)` if the deadline came first.
    fn proposals(
        &self,
        play: &SelfPlay,
        best: Option<&Game>,
        iteration: u64,
        played: &mut Vec<PlayedGame>,
    ) -> Result<bool, TrainError> {
        let c = self.config;
        let Some(line) = best.and_then(|b| Line::of(b, 16)) else {
            return Ok(true);
        };
        let record = played
            .iter()
            .filter_map(|g| g.game.final_latency())
            .fold(line.latency(), f64::min);
        let rounds = ProposalRounds {
            rounds: c.proposal_rounds,
            per_round: c.proposals_per_round,
            temperature: c.proposal_temperature,
            seed: &|round| seed_for(c.seed, iteration, 100 + round as u64),
            accept_seed: seed_for(c.seed, iteration, 99),
        };
        let faster = self
            .pool
            .install(|| rounds.run(play, line, record, &mut |l| played.push(proposal_game(l))))?;
        Ok(faster.is_some())
    }
}

/// Rounds of branch proposals ([`propose`]) from a line: each round's fastest proposal
/// becomes the current line if it is faster, or else with probability
/// `exp(-d / temperature)` for a relative slowdown `d`.
pub(super) struct ProposalRounds<'a> {
    pub rounds: usize,
    pub per_round: usize,
    pub temperature: f64,
    /// The seed of round `r`'s proposals.
    pub seed: &'a (dyn Fn(usize) -> u64 + Sync),
    /// The seed of the acceptance draws.
    pub accept_seed: u64,
}

impl ProposalRounds<'_> {
    /// Runs the rounds from `line`, handing `faster` each proposal faster than `record`
    /// and every one before it. Returns the game of the last such proposal (the fastest),
    /// `line`'s own if there was none, or `None` if `play` was cancelled first.
    pub fn run(
        &self,
        play: &SelfPlay,
        mut line: Line,
        mut record: f64,
        faster: &mut (dyn FnMut(&Line) + Send),
    ) -> Result<Option<Game>, TrainError> {
        let mut best = line.game().clone();
        let mut accept = StdRng::seed_from_u64(self.accept_seed);
        for round in 0..self.rounds {
            let found = propose(play, &line, self.per_round, (self.seed)(round))?;
            let Some(found) = found else {
                return Ok(None);
            };
            let Some(next) = found
                .into_iter()
                .min_by(|a, b| a.latency().total_cmp(&b.latency()))
            else {
                continue;
            };
            if next.latency() < record {
                record = next.latency();
                best = next.game().clone();
                faster(&next);
            }
            let d = (next.latency() - line.latency()) / line.latency();
            let t = self.temperature;
            if d < 0.0 || (t > 0.0 && accept.random_bool((-d / t).exp().clamp(0.0, 1.0))) {
                line = next;
            }
        }
        Ok(Some(best))
    }
}

/// Branch proposals: at `count` random turns of `line` (the agent's current line) the
/// search picks a move; each that differs from the line's is played and the rest of the
/// game repaired from the line ([`Line::branch`]). Returns the new lines, or `None` if
/// `cancelled` said so first.
pub(super) fn propose(
    play: &SelfPlay,
    line: &Line,
    count: usize,
    seed: u64,
) -> Result<Option<Vec<Line>>, TrainError> {
    if line.is_empty() || count == 0 {
        return Ok(Some(Vec::new()));
    }
    let setup = line.game().setup();
    let obs_len = observation::observation_len(setup.options());
    let a = setup.action_count();
    let mut rng = StdRng::seed_from_u64(seed);
    let turns: Vec<usize> = (0..count)
        .map(|_| rng.random_range(0..line.len()))
        .collect();
    let states: Vec<Game> = turns.iter().map(|&t| line.state_before(t)).collect();
    let mut obs = vec![0f32; count * obs_len];
    let mut legal = vec![false; count * a];
    for (j, g) in states.iter().enumerate() {
        observation::encode(g, &mut obs[j * obs_len..(j + 1) * obs_len]);
        g.legal_mask(&mut legal[j * a..(j + 1) * a]);
    }
    let outs = play
        .batch()
        .run(&mut Searcher::new(), &states, &obs, &legal, &mut rng)
        .map_err(TrainError::Search)?;
    let moves: Vec<(usize, usize)> = turns
        .iter()
        .zip(&outs)
        .filter(|(&t, out)| line.action_at(t) != Some(out.action))
        .map(|(&t, out)| (t, out.action))
        .collect();
    let cancelled = play.cancelled;
    let branches: Vec<Option<Line>> = moves
        .par_iter()
        .map(|&(t, action)| line.branch(t, &[action], &|| cancelled()))
        .collect();
    if cancelled() {
        return Ok(None);
    }
    Ok(Some(branches.into_iter().flatten().collect()))
}

/// Search statistics for `turns` turns that were not searched (no visits among `a`
/// actions): a saved game's record needs one entry per turn.
fn unsearched(a: usize, turns: usize) -> Vec<SearchStats> {
    let empty = SearchStats {
        visits: vec![0; a],
        root_value: 0.0,
    };
    vec![empty; turns]
}

/// A proposal's game as a self-play result: no history (the learner meets it only if it
/// becomes the best game) and no search statistics.
pub(super) fn proposal_game(line: &Line) -> PlayedGame {
    let setup = line.game().setup();
    let (obs_len, a) = (
        observation::observation_len(setup.options()),
        setup.action_count(),
    );
    PlayedGame {
        search: unsearched(a, line.len()),
        game: line.game().clone(),
        history: GameHistory::new(obs_len, a),
    }
}

/// One iteration's reanalyse: `count` games (`config.reanalyse_games_per_iteration`) from
/// game `iteration * count` on (modulo the games stored, oldest first), so the schedule
/// follows from the buffer alone and resumes exactly; games branched from the best line
/// are passed over (their early turns are not stored). Returns how many games were
/// reanalysed.
pub(super) fn reanalyse_round(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    replay: &mut ReplayBuffer,
    config: &TrainConfig,
    iteration: u64,
) -> Result<usize, TrainError> {
    let count = config.reanalyse_games_per_iteration;
    let search = (&config.search, config.search_model);
    let seed = seed_for(config.seed, iteration, 4);
    let stored = replay.games();
    if count == 0 || stored == 0 {
        return Ok(0);
    }
    let first = (iteration as usize).wrapping_mul(count) % stored;
    let all: Vec<usize> = replay.iter_games().map(|(id, _)| id).collect();
    // A game branched from the best line holds only the turns played after the branch,
    // which do not replay from the start: the next stored games stand in for it.
    let fresh = setup.start().observation();
    let mut done = 0;
    for j in 0..stored {
        if done == count {
            break;
        }
        let id = all[(first + j) % stored];
        let starts_fresh = replay
            .game(id)
            .is_some_and(|h| h.observations.get(..fresh.len()) == Some(&fresh[..]));
        if starts_fresh && reanalyse_game(net, setup, replay, search, id, seed)? {
            done += 1;
        }
    }
    Ok(done)
}

/// Re-searches every position of stored game `id` with `net` (one batched, noise-free
/// search over all its positions, through `search.1`) and stores the new search policies
/// and root values. The states and legal masks are rebuilt by replaying the game's
/// actions. Returns `false` when the game is no longer stored.
pub fn reanalyse_game(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    replay: &mut ReplayBuffer,
    search: (&SearchConfig, SearchModel),
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
    let mut states = Vec::with_capacity(len);
    for (t, &action) in history.actions.iter().enumerate() {
        game.legal_mask(&mut legal[t * a..(t + 1) * a]);
        states.push(game.clone());
        game.apply_action(action)
            .map_err(|source| TrainError::Reanalyse {
                game: id,
                turn: t,
                source,
            })?;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let deterministic = search.0.deterministic();
    let batch = BatchSearch {
        net,
        model: search.1,
        search: &deterministic,
    };
    let outs = batch
        .run(
            &mut Searcher::new(),
            &states,
            &history.observations,
            &legal,
            &mut rng,
        )
        .map_err(TrainError::Search)?;
    let root_values: Vec<f32> = outs.iter().map(|o| o.root_value).collect();
    let policies: Vec<f32> = outs
        .iter()
        .flat_map(|o| o.policy_target.iter().copied())
        .collect();
    Ok(replay.reanalyse(id, &root_values, &policies)?)
}

/// Plays one game with no search noise, searching through `search.1`: the trained
/// agent's mapping.
pub fn play_greedy(
    net: &MuZeroNet,
    setup: &Arc<GameSetup>,
    search: (&SearchConfig, SearchModel),
    seed: u64,
) -> Result<PlayedGame, TrainError> {
    let deterministic = search.0.deterministic();
    let mut v = play_games(net, setup, 1, (&deterministic, search.1), 0.0, seed)?;
    // Unreachable: `play_games` returns the `count` games it was asked for.
    v.pop()
        .ok_or_else(|| TrainError::Config("no evaluation game was played".into()))
}

/// A trained agent's proposals after its game (at inference, as self-play makes them each
/// iteration): `config.proposal_rounds` rounds of `config.proposals_per_round` branch
/// proposals from `game`, each searched with `config.search` through `model`, seeded by
/// `config.seed`. Returns the fastest game met: `game` itself if no proposal was faster.
pub fn improve_by_proposals(
    net: &MuZeroNet,
    game: &Game,
    config: &TrainConfig,
    model: SearchModel,
) -> Result<Game, TrainError> {
    let Some(line) = Line::of(game, 16) else {
        return Ok(game.clone());
    };
    let play = SelfPlay {
        net,
        search: &config.search,
        model,
        explore_epsilon: 0.0,
        cancelled: &|| false,
    };
    let rounds = ProposalRounds {
        rounds: config.proposal_rounds,
        per_round: config.proposals_per_round,
        temperature: config.proposal_temperature,
        // An iteration no run reaches: draws of their own, the same ones every time.
        seed: &|round| seed_for(config.seed, u64::MAX, 100 + round as u64),
        accept_seed: seed_for(config.seed, u64::MAX, 99),
    };
    let record = line.latency();
    let best = rounds.run(&play, line, record, &mut |_| {})?;
    Ok(best.unwrap_or_else(|| game.clone()))
}

/// The xla baseline's simulated latency on this setup.
pub fn xla_latency(setup: &GameSetup) -> Result<f64, TrainError> {
    xla_msa::xla_latency(setup.program(), setup.hardware()).map_err(TrainError::Baseline)
}
