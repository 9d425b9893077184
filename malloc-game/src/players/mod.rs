//! Players of the mallocGame: policies that play a whole episode and return the finished
//! game (its mapping, rewards and simulated return).
//!
//! - [`random`]: uniform over the legal actions (the floor any learned player must clear).
//! - [`greedy`]: the action with the largest saving of the running latency at each turn
//!   (simulated; the cost model's under `reward: proxy`).
//! - [`xla`]: the `xla` baseline's mapping as a trajectory of the game, so the game is
//!   scored against XLA on equal terms.
//! - [`beam`]: beam search over whole games, ranked by the running latency, finished by
//!   the simulator.
//!
//! Every player only ever plays legal actions, so every game it returns is finished and
//! its mapping is valid.

pub mod beam;
pub mod greedy;
pub mod random;
pub mod xla;

pub use beam::{BeamPlayer, BeamStats};
pub use greedy::{greedy_action, GreedyPlayer};
pub use random::RandomPlayer;
pub use xla::XlaPlayer;

use crate::game::{Game, GameSetup};
use std::sync::Arc;

/// A policy that plays whole episodes.
pub trait Player: Send + Sync {
    /// The spec that [`player`] parses back into this player (`beam:8`).
    fn name(&self) -> String;
    /// Plays a fresh episode of `setup` to its end; deterministic given `seed`.
    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Game;

    /// [`Player::play`], telling `progress` now and then how many turns are played out of
    /// how many: on a program of 100k buffers a beam takes seconds, and a caller may want
    /// to show it. The default reports only the end.
    fn play_with_progress(
        &self,
        setup: &Arc<GameSetup>,
        seed: u64,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Game {
        let g = self.play(setup, seed);
        progress(g.turn(), g.length());
        g
    }
}

/// How many turns a player plays between two progress reports.
pub const PROGRESS_EVERY: usize = 4096;

/// The widest beam a name may ask for: the beam's work and memory grow with W (each state
/// keeps its own placements and the candidates are W times the actions), and a careless
/// `beam:99999999999` must be an unknown name, not an allocation that aborts the process.
pub const MAX_BEAM_WIDTH: usize = 4096;

/// "random", "xla", "greedy", "beam" (width [`beam::DEFAULT_WIDTH`]), "beam:W" (width W);
/// `None` if the name is unknown or W is not in 1..=[`MAX_BEAM_WIDTH`]. One thread a game.
/// A shorthand for this crate's tests and examples and those of the crates below `harness`
/// (feature `fixtures`): the front ends build players through `harness::registry`, which
/// names them the same way.
#[cfg(any(test, feature = "fixtures"))]
pub fn player(spec: &str) -> Option<Box<dyn Player>> {
    match spec {
        "random" => Some(Box::new(RandomPlayer)),
        "xla" => Some(Box::new(XlaPlayer)),
        "greedy" => Some(Box::new(GreedyPlayer)),
        "beam" => Some(Box::new(BeamPlayer::new(beam::DEFAULT_WIDTH))),
        _ => {
            let w: usize = spec.strip_prefix("beam:")?.parse().ok()?;
            (1..=MAX_BEAM_WIDTH)
                .contains(&w)
                .then(|| Box::new(BeamPlayer::new(w)) as Box<dyn Player>)
        }
    }
}

/// Plays `action`, which the caller took from the game's own legal set. Should it be
/// refused anyway (a bug in a player, not bad input), action 0 is played instead: it is
/// legal on every turn, so the episode still ends in a valid mapping.
fn play_legal(game: &mut Game, action: usize) {
    if game.apply_action(action).is_err() {
        debug_assert!(false, "a player chose illegal action {action}");
        // Action 0 can only fail on a finished game, where there is nothing left to do.
        let _ = game.apply_action(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_round_trip_through_name() {
        for spec in ["random", "xla", "greedy", "beam:1", "beam:8", "beam:32"] {
            assert_eq!(player(spec).unwrap().name(), spec);
        }
        assert_eq!(player("beam").unwrap().name(), "beam:8");
        for bad in [
            "",
            "beam:0",
            "beam:",
            "beam:x",
            "beam:-1",
            "beam8",
            "xla:1",
            "Greedy",
            "beam:4097",
            "beam:99999999999",
        ] {
            assert!(player(bad).is_none(), "{bad}");
        }
    }
}
