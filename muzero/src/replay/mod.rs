//! Game histories, the prioritized replay buffer, and MuZero's n-step targets.
//!
//! The buffer keeps whole games, first in first out, up to a capacity counted in
//! positions. Sampling is over positions, proportional to `priority^alpha` (alpha 0 is
//! uniform), through a sum tree: O(log N) per sample. Games are named by a monotonic id,
//! so the `(game id, position)` pairs a batch hands to the learner stay meaningful after
//! older games are evicted; a pair whose game is gone is simply ignored.
//!
//! Targets follow [`crate::batch`]: the n-step value target of position `t` is
//! `sum_{i < n, t+i < len} d^i r_{t+i} + d^n v_{t+n}`, bootstrapping from the stored
//! search value only when `t + n < len` (at the end the game is over and its value is 0).
//!
//! The files, by idea: `history` (one played game and its n-step targets), `sum_tree`
//! (prefix sums over the priorities), `buffer` (the prioritized buffer: its config,
//! eviction, priorities, reanalyse and sampling), `snapshot` (its saved form, checked on
//! load). This file holds the error.

mod buffer;
mod history;
mod snapshot;
mod sum_tree;

pub use buffer::{ReplayBuffer, ReplayConfig};
pub use history::GameHistory;

/// Bad configuration, a malformed game, a bad priority or a bad snapshot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// A config value is out of range.
    #[error("replay config: {field} = {value}: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// Its value, as given.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A game's vectors do not have the lengths its positions need.
    #[error("{context}: {field} has {found} entries, expected {expected}")]
    Shape {
        /// What was being checked (a game history, reanalyse, priorities).
        context: &'static str,
        /// The vector.
        field: &'static str,
        /// Its length.
        found: usize,
        /// The length it needs.
        expected: usize,
    },
    /// An entry of a game is not finite, or out of its range (a policy that does not sum to
    /// 1, an action past the count).
    #[error("{context}: {field}[{index}] = {value}: {reason}")]
    Value {
        /// What was being checked.
        context: &'static str,
        /// The vector.
        field: &'static str,
        /// The entry's index.
        index: usize,
        /// Its value.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A game's observation or action count is not the buffer's.
    #[error(
        "game history: {field} = {found}, but this buffer holds games with {field} = {expected}"
    )]
    Mismatch {
        /// `observation_len` or `action_count`.
        field: &'static str,
        /// The game's.
        found: usize,
        /// The buffer's.
        expected: usize,
    },
    /// A game of no positions: nothing to learn from.
    #[error("game history: empty game (no positions to learn from)")]
    EmptyGame,
    /// Sampling from a buffer that holds no game.
    #[error("cannot sample from an empty replay buffer")]
    Empty,
    /// A batch of size 0 was asked for.
    #[error("cannot sample a batch of size 0")]
    ZeroBatch,
    /// A priority update whose priorities are not one per position it names.
    #[error("update_priorities: {indices} indices but {priorities} priorities")]
    PriorityCount {
        /// Positions named.
        indices: usize,
        /// Priorities given.
        priorities: usize,
    },
    /// A saved buffer that does not decode into one (its message).
    #[error("replay snapshot: {0}")]
    Snapshot(String),
}

#[cfg(test)]
mod fixtures {
    //! What the files' tests share.
    use super::*;

    pub(super) fn game(len: usize, tag: f32) -> GameHistory {
        let mut g = GameHistory::new(2, 3);
        for t in 0..len {
            g.push_step(&[tag, t as f32], t % 3, 1.0, 0.5, &[0.2, 0.3, 0.5])
                .unwrap();
        }
        g
    }
}
