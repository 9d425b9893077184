//! The random player: uniform over the legal actions at every turn.

use super::{play_legal, Player};
use crate::game::{Game, GameSetup};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Picks each action uniformly among the legal ones (action 0 included), from
/// `StdRng::seed_from_u64(seed)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomPlayer;

impl Player for RandomPlayer {
    fn name(&self) -> String {
        "random".into()
    }

    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Game {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut game = setup.start();
        while !game.is_terminal() {
            let legal = game.legal_actions();
            let action = legal[rng.random_range(0..legal.len())];
            play_legal(&mut game, action);
        }
        game
    }
}
