//! Test fixtures shared by this crate's tests and the harness's (feature `fixtures`, not
//! API): a small network's training config, the demonstrations a run may ask for, and
//! temporary folders.

use crate::train::{Demonstration, Demonstrations, TrainConfig};
use malloc_game::players::{beam, BeamPlayer, GreedyPlayer, Player, XlaPlayer};
use malloc_game::{Game, GameSetup};
use muzero::{NetworkConfig, SearchConfig};
use std::sync::Arc;
use xla_msa::{GreedySize, OneShotSolver};

/// A training config for small test games: a small network, 8 simulations, short batches
/// and few demonstration pre-training steps.
pub fn small_config(setup: &GameSetup) -> TrainConfig {
    let obs = malloc_game::observation::observation_len(setup.options());
    let mut network = NetworkConfig::small(obs, setup.action_count());
    network.hidden = 32;
    network.repr_layers = vec![64];
    network.dyn_layers = vec![64];
    network.pred_layers = vec![32];
    TrainConfig {
        network: Some(network),
        // The training default's Gumbel root (c_scale 0.1), with fewer simulations.
        search: SearchConfig {
            simulations: 8,
            ..TrainConfig::default().search
        },
        eval_simulations: 8,
        batch_size: 32,
        games_per_iteration: 4,
        train_steps_per_position: 0.5,
        demo_pretrain_steps: 20,
        ..TrainConfig::default()
    }
}

/// The demonstrations the command line's registry (`harness::registry::demonstrations`)
/// gives a run, for the tests below it: this crate builds none by name.
pub fn demonstrations() -> Demonstrations {
    let greedy_size =
        |s: &Arc<GameSetup>| s.nearest_numbered(&GreedySize.solve(s.program(), s.hardware()));
    Demonstrations::new(vec![
        Demonstration {
            name: "xla",
            play: |s| XlaPlayer.play(s, 0),
        },
        Demonstration {
            name: "greedy-size",
            play: greedy_size,
        },
        Demonstration {
            name: "beam",
            play: |s| BeamPlayer::new(beam::DEFAULT_WIDTH).play(s, 0),
        },
        Demonstration {
            name: "greedy",
            play: |s| GreedyPlayer.play(s, 0),
        },
    ])
}

/// A fresh temporary folder path (removed if it exists) for test `name`.
pub fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mmz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The finished game with the best return over every action sequence from `g` (small
/// games only: it enumerates them all).
pub fn optimal_game(g: Game) -> Game {
    if g.is_terminal() {
        return g;
    }
    g.legal_actions()
        .into_iter()
        .map(|a| {
            let mut c = g.clone();
            c.apply_action(a).unwrap();
            optimal_game(c)
        })
        .max_by(|a, b| a.total_return().total_cmp(&b.total_return()))
        .unwrap()
}
