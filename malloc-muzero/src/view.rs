//! How a guide's network reads a game's state ([`GuideView`]): the game's own observation,
//! or the pass under way as one fast level, for a network that learned one fast level.

use malloc_game::observation::{encode, encode_pass_view, observation_len};
use malloc_game::{Game, GameOptions};

/// How a guide's network reads a game's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuideView {
    /// The game's own observation: the rules are the ones the network learned.
    Direct,
    /// The observation of the pass under way as one fast level ([`encode_pass_view`]).
    Pass,
}

impl GuideView {
    /// The length of the observation this view reads from a game under `options`.
    pub fn observation_len(self, options: &GameOptions) -> usize {
        match self {
            GuideView::Direct => observation_len(options),
            GuideView::Pass => observation_len(&GameOptions {
                fast_levels: 1,
                ..options.clone()
            }),
        }
    }

    /// `game`'s state as this view reads it, into `out` (of [`GuideView::observation_len`]);
    /// `full` is scratch space.
    pub fn encode(self, game: &Game, full: &mut Vec<f32>, out: &mut [f32]) {
        match self {
            GuideView::Direct => encode(game, out),
            GuideView::Pass => encode_pass_view(game, full, out),
        }
    }
}
