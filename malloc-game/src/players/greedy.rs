//! The greedy player: at each turn, the legal action the cost model says saves the most.

use super::{play_legal, Player};
use crate::game::{Game, GameSetup};
use std::sync::Arc;

/// The legal action with the smallest [`Game::cost_delta`] (action 0 counts as 0); ties go
/// to the lower action number, so a placement that saves nothing is not taken and, among
/// equal savings, the best-fit slot wins. Returns 0 on a finished game.
pub fn greedy_action(game: &Game) -> usize {
    let mut best = (0, 0.0);
    game.for_each_legal(|action, allocation, _| {
        let delta = game.cost_delta(&allocation);
        // Strict: `for_each_legal` goes in action order, so the first of equals stays.
        if delta < best.1 {
            best = (action, delta);
        }
    });
    best.0
}

/// Plays [`greedy_action`] every turn; ignores the seed.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyPlayer;

impl Player for GreedyPlayer {
    fn name(&self) -> String {
        "greedy".into()
    }

    fn play(&self, setup: &Arc<GameSetup>, _seed: u64) -> Game {
        let mut game = setup.start();
        while !game.is_terminal() {
            let action = greedy_action(&game);
            play_legal(&mut game, action);
        }
        game
    }
}
