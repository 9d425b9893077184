//! Demonstrations: the heuristics' games as training data, so the agent starts where the
//! heuristics end. They go to the learner only: the agent's result counts only the games
//! it plays itself.

use super::TrainError;
use malloc_game::anytime::Line;
use malloc_game::{observation, Game, GameSetup};
use muzero::{GameHistory, ReplayBuffer};
use std::sync::Arc;

/// A heuristic whose game a run may ask for by name ([`super::TrainConfig::demonstrations`]).
/// The front end that starts a run gives the ones it knows ([`Demonstrations`]): this
/// crate builds none by name.
#[derive(Clone, Copy, Debug)]
pub struct Demonstration {
    /// The name a training config gives it.
    pub name: &'static str,
    /// Its game on a setup (a game that does not finish is left out). A demonstration
    /// teaches action indices: a heuristic whose mapping is seldom a line of numbered
    /// actions (greedy-size's) plays the nearest game that is
    /// ([`GameSetup::nearest_numbered`]), with that game's own true return.
    pub play: fn(&Arc<GameSetup>) -> Game,
}

/// The demonstrations a run may ask for, in the order messages list them.
#[derive(Clone, Debug)]
pub struct Demonstrations(Vec<Demonstration>);

impl Demonstrations {
    /// These demonstrations (a name given twice: the first counts).
    pub fn new(known: Vec<Demonstration>) -> Demonstrations {
        Demonstrations(known)
    }

    /// Their names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|d| d.name).collect()
    }

    /// Refuses a name in `asked` (a config's `demonstrations`) that is not one of these.
    pub fn check(&self, asked: &[String]) -> Result<(), TrainError> {
        match asked.iter().find(|a| self.get(a).is_none()) {
            Some(d) => Err(TrainError::Config(format!(
                "demonstrations: unknown `{d}` (known: {})",
                self.names().join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// The demonstration named `name`, if it is one of these.
    pub fn get(&self, name: &str) -> Option<&Demonstration> {
        self.0.iter().find(|d| d.name == name)
    }

    /// The finished games of the demonstrations `asked` names on `setup`, in that order
    /// (an unknown name plays nothing: [`Demonstrations::check`] refused it before).
    pub(super) fn games(&self, setup: &Arc<GameSetup>, asked: &[String]) -> Vec<Game> {
        asked
            .iter()
            .filter_map(|name| self.get(name))
            .map(|d| (d.play)(setup))
            .filter(Game::is_terminal)
            .collect()
    }
}

/// `game` as training data: its observations, actions and true rewards, and the return
/// still to come as the root value; with `imitate`, the action played as the policy target
/// (else none: the game teaches values and rewards only).
pub(super) fn history_of(game: &Game, imitate: bool) -> Result<GameHistory, TrainError> {
    let target = |_: &Game, action: usize| imitate.then_some(action);
    labelled(game, &target)
}

/// The agent's noise-free game labelled with the moves of its best game (DAgger): at each
/// state it reached, the policy target is what `best` decides for the same (pass, buffer,
/// use), repaired where that is not legal ([`Line::repair`]). Once the noise-free game
/// leaves the best game's line, its states are ones the imitation never saw; these labels
/// lead it back.
pub(super) fn corrected_history(game: &Game, best: &Line) -> Result<GameHistory, TrainError> {
    labelled(game, &|state: &Game, _| best.repair(state).action())
}

/// `game`'s observations, actions, true rewards and return-to-go, with the policy target
/// `target(state, action played)` (none: no policy target).
fn labelled(
    game: &Game,
    target: &dyn Fn(&Game, usize) -> Option<usize>,
) -> Result<GameHistory, TrainError> {
    let setup = game.setup();
    // The learner's histories hold action indices: a game with moves given in full
    // teaches as the nearest game of numbered actions, with that game's own rewards.
    let numbered;
    let game = if game.all_numbered() {
        game
    } else {
        numbered = setup.nearest_numbered(&game.mapping());
        &numbered
    };
    let (obs_len, a) = (
        observation::observation_len(setup.options()),
        setup.action_count(),
    );
    let rewards = game.rewards();
    let mut to_go: f64 = rewards.iter().sum();
    let mut history = GameHistory::new(obs_len, a);
    let mut replay = setup.start();
    let mut obs = vec![0f32; obs_len];
    let mut policy = vec![0f32; a];
    for (t, action) in game.actions().into_iter().enumerate() {
        observation::encode(&replay, &mut obs);
        policy.iter_mut().for_each(|p| *p = 0.0);
        if let Some(t) = target(&replay, action) {
            policy[t] = 1.0;
        }
        let r = replay.apply_action(action)?;
        history.push_step(&obs, action, r as f32, to_go as f32, &policy)?;
        to_go -= rewards[t];
    }
    Ok(history)
}

/// Makes `game` the one game of `demos` whose moves the policy imitates: every stored
/// game's policy targets are cleared (they keep teaching values and rewards), and `game`
/// enters with its moves as targets. One target line, not several, so the policy learns
/// the best game rather than an average of heuristics that disagree.
pub(super) fn imitate(demos: &mut ReplayBuffer, game: &Game) -> Result<(), TrainError> {
    // In a multi-program run the buffer holds every case's demonstrations: only the games
    // of `game`'s case (those that start from its first observation) give up their
    // targets. In a run of one program that is every game.
    let setup = game.setup();
    let mut start = vec![0f32; observation::observation_len(setup.options())];
    observation::encode(&setup.start(), &mut start);
    let stored: Vec<(usize, Vec<f32>, usize)> = demos
        .iter_games()
        .filter(|(_, h)| h.observations.get(..start.len()) == Some(&start[..]))
        .map(|(id, h)| (id, h.root_values.clone(), h.policies.len()))
        .collect();
    for (id, root_values, n) in stored {
        demos.reanalyse(id, &root_values, &vec![0.0; n])?;
    }
    demos.push(history_of(game, true)?)?;
    Ok(())
}
