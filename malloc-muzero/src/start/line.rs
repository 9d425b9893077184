//! The prediction's own line: the game played by following a [`Prediction`]. At each
//! turn (a use, in the pass of one fast level) where the prediction holds the use in the
//! pass's level, the legal move into the level that the game's cost delta ranks best
//! (each mode's slot 0, as the greedy player ranks them: the running latency, then the
//! cost model's); level 0 where it does not, and at a buffer's definition turn.

use super::Prediction;
use malloc_game::anytime::Limit;
use malloc_game::{Game, GameSetup};
use std::sync::Arc;

/// The game that follows `prediction` on `setup`; `None` where `limit` runs out first
/// (checked every 64 turns).
pub fn learned_line(
    setup: &Arc<GameSetup>,
    prediction: &Prediction,
    limit: &Limit,
) -> Option<Game> {
    let fastest = setup.hardware().fastest();
    let program = setup.program();
    let mut game = setup.start();
    while !game.is_terminal() {
        if game.turn() % 64 == 0 && limit.expired() {
            return None;
        }
        let level = fastest.saturating_sub(game.pass());
        let action = match game.pending() {
            // A definition turn decides no use: the prediction says nothing there.
            Some((b, u))
                if program.uses(b).binary_search(&u).is_ok()
                    && prediction.level_of(b, u) == level =>
            {
                best_move_into_level(&game)
            }
            _ => 0,
        };
        game.apply_action(action).ok()?;
    }
    Some(game)
}

/// Among the legal moves into the pass's level (each mode's slot 0), the one with the
/// smallest running-latency change, then cost-model change, the first of equals; 0 where
/// there is none.
fn best_move_into_level(game: &Game) -> usize {
    let options = game.setup().options();
    let mut best: Option<(usize, f64, f64)> = None;
    game.for_each_legal(|action, _, _| {
        if options.decode(action).is_some_and(|(_, slot)| slot == 0) {
            let (latency, model) = (game.cost_delta(action), game.model_delta(action));
            let better = best
                .is_none_or(|(_, l, m)| latency.total_cmp(&l).then(model.total_cmp(&m)).is_lt());
            if better {
                best = Some((action, latency, model));
            }
        }
    });
    best.map_or(0, |(a, _, _)| a)
}
