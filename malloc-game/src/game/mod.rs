//! The mallocGame, rules v2 (docs/mallocgame.md; what changed from v1 and why is listed
//! there).
//!
//! The game walks XLA's memory-space assignment (`xla_msa::Walk`) and stops wherever XLA
//! makes a choice: one pass per fast level, fastest first; in each pass the buffers in
//! XLA's order; for each buffer one turn per use still read from level 0. A turn says what
//! happens at that use: it reads level 0 (action 0), the chunk held so far stays through
//! it (`keep`), the defining op writes the buffer into the level (`define`), or a copy
//! brings it in (`prefetch`, `prefetch-late`), each of the last three at one of K offset
//! slots. What XLA does without choosing (ending a chunk, evicting a buffer the fast
//! level alone holds, the program end of an output, a pass's op times and copy budget) the
//! game does the same way between turns. So the XLA mapping is one trajectory of the game
//! ([`GameSetup::trajectory_of`]), every finished game is a valid mapping, and the
//! undiscounted return is `(S0 - S) / S0`.
//!
//! The code, by concept: the setup every episode shares ([`GameSetup`], setup.rs), one
//! episode's state and its OpenSpiel-like surface ([`Game`], state.rs), the walk through
//! XLA's passes between turns (turns.rs), the menu of legal moves at a turn (menu.rs), the
//! cost model's running tally (tally.rs), and the games that follow a given mapping
//! (trajectory.rs).

use accel_sim::OpId;

mod menu;
mod moves;
pub(crate) mod runs;
mod setup;
mod state;
mod tally;
mod trajectory;
pub(crate) mod turns;

pub use moves::{Decision, Hold, Move, Read};
pub use setup::GameSetup;
pub use state::Game;

/// A problem with a game's setup or with an action.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GameError {
    /// The game's options do not fit the program or hardware (its field named).
    #[error("game options: {0}")]
    Options(String),
    /// An action was applied after the game ended.
    #[error("the game is over: no action can be applied")]
    Terminal,
    /// A numbered action is not on the turn's menu.
    #[error("action {action} is illegal for buffer `{buffer}`: {reason}")]
    Illegal {
        /// The action.
        action: usize,
        /// The buffer whose turn it was.
        buffer: String,
        /// Why it is illegal.
        reason: String,
    },
    /// A move given in full breaks the rules at the turn.
    #[error("the move is illegal for buffer `{buffer}`: {reason}")]
    IllegalMove {
        /// The buffer whose turn it was.
        buffer: String,
        /// Why it is illegal.
        reason: String,
    },
}

/// Where a mapping leaves the game's trajectories ([`GameSetup::trajectory_of`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a trajectory of the game: turn {turn}, buffer `{buffer}`, use at op {op}: {reason}")]
pub struct Inexpressible {
    /// The turn at which the mapping leaves the game.
    pub turn: usize,
    /// The buffer whose turn it is.
    pub buffer: String,
    /// The op of the use the turn decides.
    pub op: OpId,
    /// What the mapping does there that no move can.
    pub reason: String,
    /// The actions up to that turn, each reproducing the mapping.
    pub actions: Vec<usize>,
}
