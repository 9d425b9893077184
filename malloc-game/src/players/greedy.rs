//! The greedy player: at each turn, the legal action the cost model says saves the most.

use super::{Player, PROGRESS_EVERY};
use crate::game::{Game, GameSetup};
use accel_sim::Allocation;
use std::sync::Arc;

/// The legal action with the smallest [`Game::cost_delta`] (action 0 counts as 0); ties go
/// to the lower action number, so a placement that saves nothing is not taken and, among
/// equal savings, the best-fit slot wins. Returns 0 on a finished game.
pub fn greedy_action(game: &Game) -> usize {
    greedy_choice(game).0
}

/// [`greedy_action`] with the allocation it makes.
fn greedy_choice(game: &Game) -> (usize, Option<Allocation>) {
    let mut best = (0, 0.0, None);
    let options = game.setup().options();
    game.for_each_legal(|action, allocation, _| {
        // The slots of one mode differ only in offset, which the cost model does not see:
        // they tie with slot 0, which comes first and wins the strict comparison.
        if options.decode(action).is_some_and(|(_, _, slot)| slot > 0) {
            return;
        }
        let delta = game.cost_delta(&allocation);
        // Strict: `for_each_legal` goes in action order, so the first of equals stays.
        if delta < best.1 {
            best = (action, delta, Some(allocation));
        }
    });
    (best.0, best.2)
}

/// Plays [`greedy_action`] every turn; ignores the seed.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyPlayer;

impl Player for GreedyPlayer {
    fn name(&self) -> String {
        "greedy".into()
    }

    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Game {
        self.play_with_progress(setup, seed, &mut |_, _| {})
    }

    fn play_with_progress(
        &self,
        setup: &Arc<GameSetup>,
        _seed: u64,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Game {
        let mut game = setup.start();
        while !game.is_terminal() {
            let (action, allocation) = greedy_choice(&game);
            // Only a finished game refuses a turn.
            if game.apply_legal(action, allocation).is_err() {
                break;
            }
            if game.turn() % PROGRESS_EVERY == 0 {
                progress(game.turn(), game.length());
            }
        }
        progress(game.turn(), game.length());
        game
    }
}
