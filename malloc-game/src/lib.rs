//! malloc-game: the mallocGame and the baseline players of the mapping problem.
//!
//! - [`game`]: the game (state, legal actions, rewards) over a program and a hardware config.
//! - [`options`]: the rules' knobs (levels, modes, K offset slots, presentation order).
//! - [`occupancy`]: which canonical offsets fit a chunk over an interval, best fit first.
//! - [`picker`]: XLA's prefetch interval picker, shared by the game and the xla baseline.
//! - [`baselines`]: `all-slow`, `xla` (XLA-style memory space assignment), `greedy-size`
//!   (TFLite-style), and the `bound` (the physical limit, not a mapping).

pub mod baselines;
pub mod game;
pub mod observation;
pub mod occupancy;
pub mod options;
pub mod picker;

pub use game::{Game, GameError, GameSetup};
pub use options::{GameOptions, Mode, Order};
