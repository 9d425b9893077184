//! The greedy player: at each turn, the legal action that saves the most running latency
//! ([`Game::cost_delta`]: simulated, or the cost model's under `reward: proxy`).

use super::{play_legal, Player, PROGRESS_EVERY};
use crate::game::{Game, GameSetup};
use std::sync::Arc;

/// The legal action with the smallest [`Game::cost_delta`] (ties broken by the cost
/// model's [`Game::model_delta`]); remaining ties go to the lower action
/// number, so a move that saves nothing more than level 0 is not taken and, among equal
/// savings, the first mode's slot 0 wins. Returns 0 on a finished game.
pub fn greedy_action(game: &Game) -> usize {
    let mut deltas = Vec::new();
    slot0_deltas(game, &mut deltas);
    pick(&deltas)
}

/// Action 0 and every legal slot-0 action, in action order, with its
/// [`Game::cost_delta`], into `out` (cleared first). The slots of one mode differ only in
/// offset, which neither latency sees: they tie with slot 0, which comes first.
pub(crate) fn slot0_deltas(game: &Game, out: &mut Vec<(usize, Delta)>) {
    out.clear();
    out.push((0, Delta::of(game, 0)));
    let options = game.setup().options();
    game.for_each_legal(|action, _, _| {
        if options.decode(action).is_some_and(|(_, slot)| slot == 0) {
            out.push((action, Delta::of(game, action)));
        }
    });
}

/// The greedy choice among [`slot0_deltas`]: the smallest delta, the first of equals.
pub(crate) fn pick(deltas: &[(usize, Delta)]) -> usize {
    let mut best = deltas.first().copied().unwrap_or((0, Delta::default()));
    for &(action, delta) in deltas.iter().skip(1) {
        // Strict: the deltas are in action order, so the first of equals stays.
        if delta.cmp(&best.1).is_lt() {
            best = (action, delta);
        }
    }
    best.0
}

/// What a move changes: the running latency ([`Game::cost_delta`]), then the cost
/// model's latency ([`Game::model_delta`]), which breaks the ties the first leaves: under
/// the simulated reward a move whose effect hides behind compute changes `S` by nothing
/// now, which is not to say it is worth nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Delta {
    pub(crate) latency: f64,
    pub(crate) model: f64,
}

impl Delta {
    pub(crate) fn of(game: &Game, action: usize) -> Delta {
        let (latency, model) = game.deltas(action);
        Delta { latency, model }
    }

    pub(crate) fn cmp(&self, other: &Delta) -> std::cmp::Ordering {
        self.latency
            .total_cmp(&other.latency)
            .then(self.model.total_cmp(&other.model))
    }
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
            let action = greedy_action(&game);
            play_legal(&mut game, action);
            if game.turn() % PROGRESS_EVERY == 0 {
                progress(game.turn(), game.length());
            }
        }
        progress(game.turn(), game.length());
        game
    }
}
