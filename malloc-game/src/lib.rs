//! malloc-game: the mallocGame, its players, saved games, pictures, and the baseline
//! solvers of the mapping problem.
//!
//! - [`game`]: the game (state, legal actions, rewards) over a program and a hardware config.
//! - [`options`]: the rules' knobs (levels, modes, K offset slots, presentation order).
//! - [`observation`]: the fixed-size observation vector.
//! - [`occupancy`]: which canonical offsets fit a chunk over an interval, best fit first.
//! - [`picker`]: XLA's prefetch interval picker, shared by the game and the xla baseline.
//! - [`players`]: `random`, `xla` (the XLA heuristic as a policy), `greedy`, `beam`.
//! - [`record`]: saved games and their verified replay.
//! - [`render`]: SVG memory maps and latency timelines.
//! - [`baselines`]: `all-slow`, `xla` (XLA-style memory space assignment), `greedy-size`
//!   (TFLite-style), and the `bound` (the physical limit, not a mapping).

pub mod baselines;
pub mod game;
pub mod observation;
pub mod occupancy;
pub mod options;
pub mod picker;
pub mod players;
pub mod record;
pub mod render;

pub use game::{Game, GameError, GameSetup};
pub use options::{GameOptions, Mode, Order};
