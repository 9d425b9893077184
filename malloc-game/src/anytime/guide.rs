//! What a local-search move re-decides and what it plays there: the move's two random
//! choices, behind [`MoveGuide`] so that a learned policy can make them (the agent's
//! guided search, in `malloc-muzero`) while the machinery (lines, snapshots, repair,
//! annealing, a chain per thread) stays the local search's.
//!
//! [`UniformGuide`] is the local search's own: it draws exactly what the search always
//! drew, from the same generator in the same order, so a search guided by it is the
//! `local-search` solver, move for move.

use super::Line;
use crate::game::Game;
use rand::rngs::StdRng;
use rand::Rng;

/// The most consecutive turns one move re-decides.
pub const MAX_CHANGED: usize = 64;

/// The turns a move re-decides: `changed` consecutive turns from turn `first` (fewer
/// where the game ends first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first turn re-decided.
    pub first: usize,
    /// How many turns from it are re-decided.
    pub changed: usize,
}

/// The two choices of a local-search move. One guide per chain (so per thread); the
/// chain calls [`MoveGuide::span`], then [`MoveGuide::action`] at each re-decided turn as
/// the replay reaches it, then replays the rest of the game from the line.
pub trait MoveGuide {
    /// The turns the next move from `line` (not empty) re-decides: `first < line.len()`,
    /// `1 <= changed <= MAX_CHANGED`. `mean_changed` is the search's setting.
    fn span(&mut self, line: &Line, mean_changed: f64, rng: &mut StdRng) -> Span;

    /// The action of the `i`-th re-decided turn (from 0), `game` the state before it (not
    /// terminal); it must be legal there. At `i = 0` the state is the line's own, and the
    /// action should differ from the line's there (`line.action_at(game.turn())`) where
    /// another is legal: else the move changes nothing.
    fn action(&mut self, line: &Line, game: &Game, i: usize, rng: &mut StdRng) -> usize;

    /// The chain's line changed from turn `from` on: a move from there was accepted, or
    /// (`from = 0`) the chain took another line. What a guide cached about the line's
    /// turns before `from` still holds.
    fn line_changed(&mut self, _from: usize) {}

    /// Whether [`MoveGuide::action`] reads the simulation through the game (the
    /// observation, a move's simulated delta): the game is then brought up to date before
    /// each call. A guide that only looks at the legal moves says no, and a move skips the
    /// work.
    fn reads_simulation(&self) -> bool {
        true
    }

    /// The move just made changed the line's latency by `change` (relative: -0.01 is 1%
    /// faster) and the chain `accepted` it. Called after each move, before
    /// [`MoveGuide::line_changed`]; a guide that learns from the search's outcomes
    /// listens here.
    fn judged(&mut self, _change: f64, _accepted: bool) {}
}

/// The local search's own choices: a turn uniformly, a geometric number of turns with
/// mean `mean_changed` (at most [`MAX_CHANGED`]), and a uniform legal action at each,
/// other than the line's at the first.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformGuide;

/// The uniform span ([`UniformGuide`]'s), for guides that choose only the actions.
pub fn uniform_span(line: &Line, mean_changed: f64, rng: &mut StdRng) -> Span {
    let first = rng.random_range(0..line.len());
    let mut changed = 1;
    let p_more = 1.0 - 1.0 / mean_changed.max(1.0);
    while changed < MAX_CHANGED && rng.random_bool(p_more) {
        changed += 1;
    }
    Span { first, changed }
}

impl MoveGuide for UniformGuide {
    fn reads_simulation(&self) -> bool {
        false
    }

    fn span(&mut self, line: &Line, mean_changed: f64, rng: &mut StdRng) -> Span {
        uniform_span(line, mean_changed, rng)
    }

    fn action(&mut self, line: &Line, game: &Game, i: usize, rng: &mut StdRng) -> usize {
        let old = if i == 0 {
            line.action_at(game.turn())
        } else {
            None
        };
        let choices: Vec<usize> = game
            .legal_actions()
            .into_iter()
            .filter(|&a| Some(a) != old)
            .collect();
        match choices.len() {
            0 => old.unwrap_or(0),
            n => choices[rng.random_range(0..n)],
        }
    }
}
