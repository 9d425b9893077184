//! [`CaseRun`]: one case of a run (its game, demonstrations, xla baseline and best
//! mapping) and how the games played on it reach the best mapping and the learner. A
//! [`super::Trainer`] has one per case (a run of one program, one).

use super::best::{Best, Found};
use super::demos::{corrected_history, imitate, Demonstrations};
use super::selfplay::{play_greedy, seed_for, xla_latency, PlayedGame};
use super::summary::Progress;
use super::{TrainConfig, TrainError};
use malloc_game::anytime::Line;
use malloc_game::{Game, GameSetup};
use muzero::{MuZeroNet, ReplayBuffer, SearchConfig};
use std::path::Path;
use std::sync::Arc;

/// Where a case's games teach the learner: its demonstrations buffer (the best games'
/// moves as policy targets, DAgger corrections) unless `demo_fraction` is 0, and when they
/// were found (for `found.json`).
pub(super) struct Learner<'a> {
    pub demos: &'a mut ReplayBuffer,
    pub demo_fraction: f64,
    pub found: Found,
}

/// A case as a run keeps it.
pub(super) struct CaseRun {
    pub setup: Arc<GameSetup>,
    /// The demonstrations' games (deterministic: recomputed when a run resumes).
    pub demos: Vec<Game>,
    /// The fastest mapping the agent found, kept in `best_dir`.
    pub best: Best,
    pub xla: f64,
    /// The latency of the case's last evaluation game in this session.
    pub last_eval: Option<f64>,
}

impl CaseRun {
    /// The case of `setup`, with its demonstrations (`config.demonstrations`, played by
    /// `known`), its xla latency and the best mapping saved in `best_dir` (named `name` in
    /// `found.json`).
    pub fn new(
        setup: Arc<GameSetup>,
        best_dir: &Path,
        name: &str,
        config: &TrainConfig,
        known: &Demonstrations,
    ) -> Result<CaseRun, TrainError> {
        let demos = known.games(&setup, &config.demonstrations);
        let xla = xla_latency(&setup)?;
        let best = Best::read_back(best_dir, &setup, name, config.seed, xla)?;
        Ok(CaseRun {
            setup,
            demos,
            best,
            xla,
            last_eval: None,
        })
    }

    /// The game branch games and proposals start from: the agent's best game, or the best
    /// demonstration where that is faster (search improves on the best heuristic).
    pub fn line_to_improve(&self) -> Option<Game> {
        let latency = |g: &Game| g.final_latency().unwrap_or(f64::INFINITY);
        self.best
            .game
            .iter()
            .chain(&self.demos)
            .min_by(|a, b| latency(a).total_cmp(&latency(b)))
            .cloned()
    }

    /// The game whose moves the policy imitates at the start: the agent's best game from
    /// an earlier start of the run, or the best demonstration where that returns more.
    pub fn first_target(&self) -> Option<&Game> {
        let mut first = self.best.game.as_ref();
        for game in &self.demos {
            if first.is_none_or(|f| game.total_return() > f.total_return()) {
                first = Some(game);
            }
        }
        first
    }

    /// `p` with this case's results: its last evaluation game, best mapping and xla.
    pub fn report(&self, p: Progress) -> Progress {
        Progress {
            eval_latency_s: self.last_eval,
            best_latency_s: self.best.latency,
            best_return: self.best.ret,
            xla_latency_s: self.xla,
            speedup_vs_xla: self.xla / self.best.latency,
            ..p
        }
    }

    /// The evaluation game (no noise) with `weights`.
    pub fn eval_game(
        &self,
        weights: &MuZeroNet,
        c: &TrainConfig,
        iteration: u64,
    ) -> Result<PlayedGame, TrainError> {
        let search = SearchConfig {
            simulations: c.eval_simulations,
            ..c.search.clone()
        };
        play_greedy(
            weights,
            &self.setup,
            (&search, c.search_model),
            seed_for(c.seed, iteration, 3),
        )
    }

    /// Keeps `g` as the best if it is, and then makes it the line the policy imitates
    /// (in `demos`) when it is no slower than every demonstration. A branch game or
    /// proposal whose mapping is a demonstration's (its search chose the demonstration's
    /// moves) is not the agent's result.
    pub fn consider(&mut self, g: &PlayedGame, to: &mut Learner<'_>) -> Result<(), TrainError> {
        // A branch game or a proposal played only part of the game itself (its history
        // is shorter than the game); if its line was a demonstration's, it may be that
        // demonstration. A game the agent played from the start counts even if it
        // reproduces one.
        let branched = g.history.len() < g.game.turn();
        if branched && self.demos.iter().any(|d| d.mapping() == g.game.mapping()) {
            return Ok(());
        }
        let latency = g.game.final_latency().unwrap_or(f64::INFINITY);
        let best_demo = self
            .demos
            .iter()
            .filter_map(Game::final_latency)
            .fold(f64::INFINITY, f64::min);
        if self.best.consider(g, &to.found)? && to.demo_fraction > 0.0 && latency <= best_demo {
            imitate(to.demos, &g.game)?;
        }
        Ok(())
    }

    /// The evaluation game `g`: its latency, whether it is the best, and where it left the
    /// best line, that line's moves as targets for the states it reached (DAgger).
    pub fn record_eval(&mut self, g: &PlayedGame, to: &mut Learner<'_>) -> Result<(), TrainError> {
        self.last_eval = g.game.final_latency();
        self.consider(g, to)?;
        let line = self.line_to_improve();
        let best = line.as_ref().and_then(Game::final_latency);
        let off_line = best.is_some_and(|b| b < g.game.final_latency().unwrap_or(f64::INFINITY));
        if to.demo_fraction > 0.0 && off_line {
            if let Some(best) = line.as_ref().and_then(|b| Line::of(b, 16)) {
                to.demos.push(corrected_history(&g.game, &best)?)?;
            }
        }
        Ok(())
    }
}
