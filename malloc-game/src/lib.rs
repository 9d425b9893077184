//! malloc-game: the mallocGame, its players, saved games and pictures. XLA's machinery
//! that the game walks, and the baselines built on it, are the `xla-msa` crate's.
//!
//! - [`Game`], [`GameSetup`]: the game (state, legal actions, rewards) over a program and a
//!   hardware config.
//! - [`GameOptions`]: the rules' knobs (levels, [`Mode`]s, K offset slots, [`Order`],
//!   [`Reward`]).
//! - [`observation`]: the fixed-size observation vector.
//! - [`players`]: `random`, `xla` (the XLA heuristic as a policy), `greedy`, `beam`.
//! - [`record`]: saved games and their verified replay.
//! - [`render`]: SVG memory maps and latency timelines.
//! - [`viewer`]: a saved game, or two compared, as one self-contained HTML page.

#![warn(missing_docs)]

pub mod anytime;
mod game;
pub mod observation;
mod options;
pub mod players;
pub mod record;
pub mod render;
pub mod viewer;

pub use game::{Decision, Game, GameError, GameSetup, Hold, Inexpressible, Move, Read};

/// The version of the game's rules (docs/mallocgame.md): 2 since a turn decides one use
/// of a buffer, 3 since every valid mapping is a line (moves given in full, a turn at a
/// definition). Files that record games or what was trained on them carry it.
pub const RULES_VERSION: u32 = 3;
/// The rules whose observation and numbered actions are this build's: a network trained
/// under any of them reads this game (rules v3 kept v2's observation and menu and only
/// added turns), though a training run's stored games replay only under its own rules.
pub const NETWORK_RULES: [u32; 2] = [2, 3];
pub use options::{GameOptions, Mode, Order, Reward, MAX_SLOTS};

pub use accel_sim::seed_for;
