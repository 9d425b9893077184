//! The mallocGame as an [`Environment`].

use malloc_game::{observation, Game};
use muzero::{EnvError, Environment};

/// A mallocGame episode seen by the agent.
#[derive(Clone, Debug)]
pub struct MallocEnv {
    /// The game being played.
    pub game: Game,
}

impl MallocEnv {
    /// The environment of `game`, from wherever it stands.
    pub fn new(game: Game) -> MallocEnv {
        MallocEnv { game }
    }
}

impl Environment for MallocEnv {
    fn observation_len(&self) -> usize {
        observation::observation_len(self.game.setup().options())
    }
    fn action_count(&self) -> usize {
        self.game.action_count()
    }
    fn observe(&self, out: &mut [f32]) {
        observation::encode(&self.game, out);
    }
    fn legal_mask(&self, mask: &mut [bool]) {
        self.game.legal_mask(mask);
    }
    fn apply(&mut self, action: usize) -> Result<f32, EnvError> {
        self.game
            .apply_action(action)
            .map(|r| r as f32)
            .map_err(|e| EnvError(e.to_string()))
    }
    fn is_terminal(&self) -> bool {
        self.game.is_terminal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::Hardware;
    use malloc_game::{GameOptions, GameSetup};
    use std::sync::Arc;

    #[test]
    fn plays_a_whole_game_through_the_trait() {
        let p = Arc::new(bench_workloads::load("diamond").unwrap());
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 4 << 20).unwrap();
        let setup = GameSetup::new(p, hw, GameOptions::default()).unwrap();
        let mut env = MallocEnv::new(setup.start());
        let mut obs = vec![0.0; env.observation_len()];
        let mut mask = vec![false; env.action_count()];
        let mut total = 0.0f64;
        while !env.is_terminal() {
            env.observe(&mut obs);
            assert!(obs.iter().all(|x| x.is_finite()));
            env.legal_mask(&mut mask);
            // The highest legal action: places as much as it can.
            let a = mask.iter().rposition(|&m| m).unwrap();
            total += env.apply(a).unwrap() as f64;
        }
        assert!((total - env.game.total_return()).abs() < 1e-5);
        assert!(env.apply(0).is_err());
    }
}
