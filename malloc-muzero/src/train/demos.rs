//! Demonstrations: the heuristics' games as training data, so the agent starts where the
//! heuristics end. They go to the learner only: the agent's result counts only the games
//! it plays itself.

use super::TrainError;
use malloc_game::anytime::Line;
use malloc_game::players::{BeamPlayer, GreedyPlayer, Player, XlaPlayer};
use malloc_game::{observation, Game, GameSetup};
use muzero::{GameHistory, ReplayBuffer};
use std::sync::Arc;
use xla_msa::{GreedySize, OneShotSolver};

/// The demonstrations a run may ask for.
pub const DEMONSTRATION_NAMES: &[&str] = &["xla", "greedy-size", "beam", "greedy"];

/// The game of heuristic `name` on `setup`. greedy-size's mapping is seldom a line of
/// numbered actions (its offsets and whole live ranges), and a demonstration teaches
/// action indices, so its demonstration is the nearest game of numbered actions
/// ([`GameSetup::nearest_numbered`]), with that game's own true return.
pub(super) fn demonstration(setup: &Arc<GameSetup>, name: &str) -> Option<Game> {
    let game = match name {
        "xla" => XlaPlayer.play(setup, 0),
        "greedy" => GreedyPlayer.play(setup, 0),
        "beam" => BeamPlayer::new(malloc_game::players::beam::DEFAULT_WIDTH).play(setup, 0),
        "greedy-size" => {
            let mapping = GreedySize.solve(setup.program(), setup.hardware());
            setup.nearest_numbered(&mapping)
        }
        _ => return None,
    };
    game.is_terminal().then_some(game)
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
