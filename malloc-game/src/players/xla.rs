//! The xla player: the `xla` baseline's mapping played as a trajectory of the game
//! (docs/xla-msa.md, "The xla player of the game").
//!
//! The game walks XLA's own passes and stops at each of its choices (rules v2,
//! docs/mallocgame.md), so the baseline's mapping is one line of play:
//! [`GameSetup::trajectory_of`] finds it, move by move. The player is exactly that line:
//! its game ends with the baseline's mapping, allocation for allocation, and the same
//! simulated latency. A beam that keeps this line can never end behind `xla`.

use super::{play_legal, Player};
use crate::game::{Game, GameSetup, Inexpressible};
use accel_sim::Mapping;
use std::sync::Arc;
use xla_msa::Xla;

/// The XLA-style player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XlaPlayer;

impl XlaPlayer {
    /// The finished game whose mapping is the `xla` baseline's over the game's fast
    /// levels, or where the game cannot follow it (a bug: every xla mapping is a
    /// trajectory; the tests hold it to that on the suite).
    pub fn trajectory(setup: &Arc<GameSetup>) -> Result<Game, Inexpressible> {
        setup.trajectory_of(&XlaPlayer::mapping(setup))
    }

    /// The `xla` baseline's mapping over the game's fast levels, which
    /// [`XlaPlayer::trajectory`] plays.
    pub fn mapping(setup: &GameSetup) -> Mapping {
        Xla::new(setup.xla_options().clone())
            .solve_detailed(setup.program(), setup.hardware())
            .into_mapping()
    }
}

impl Player for XlaPlayer {
    fn name(&self) -> String {
        "xla".into()
    }

    fn play(&self, setup: &Arc<GameSetup>, _seed: u64) -> Game {
        match XlaPlayer::trajectory(setup) {
            Ok(game) => game,
            Err(e) => {
                debug_assert!(false, "the xla mapping is not a trajectory: {e}");
                // The moves that did follow it, then level 0: still a valid game.
                let mut game = setup.start();
                for &a in &e.actions {
                    play_legal(&mut game, a);
                }
                while !game.is_terminal() {
                    play_legal(&mut game, 0);
                }
                game
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GameOptions;
    use accel_sim::{Hardware, Simulator};

    #[test]
    fn the_player_ends_with_the_xla_mapping() {
        let p = Arc::new(accel_sim::fixtures::three_ops("p", 1 << 20, 1e6));
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
        let setup = GameSetup::new(Arc::clone(&p), hw.clone(), GameOptions::default()).unwrap();
        let g = XlaPlayer.play(&setup, 0);
        let want = Xla::default().solve_detailed(&p, &hw).into_mapping();
        assert_eq!(g.mapping(), want);
        let s = Simulator::new(&p, &hw).run(&want, false).latency_s;
        assert_eq!(g.final_latency(), Some(s));
    }
}
