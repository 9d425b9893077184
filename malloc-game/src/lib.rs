//! malloc-game: the mallocGame, its players, saved games, pictures, and the baseline
//! solvers of the mapping problem.
//!
//! - [`Game`], [`GameSetup`]: the game (state, legal actions, rewards) over a program and a
//!   hardware config.
//! - [`GameOptions`]: the rules' knobs (levels, [`Mode`]s, K offset slots, [`Order`]).
//! - [`observation`]: the fixed-size observation vector.
//! - (private) `occupancy`: which canonical offsets fit a chunk over an interval, best fit
//!   first.
//! - [`PickerConfig`]: XLA's prefetch interval picker, shared by the game and the xla
//!   baseline.
//! - [`players`]: `random`, `xla` (the XLA heuristic as a policy), `greedy`, `beam`.
//! - [`record`]: saved games and their verified replay.
//! - [`render`]: SVG memory maps and latency timelines.
//! - [`baselines`]: `all-slow`, `xla` (XLA-style memory space assignment), `greedy-size`
//!   (TFLite-style), and the `bound` (the physical limit, not a mapping).

pub mod anytime;
pub mod baselines;
mod game;
pub mod observation;
mod occupancy;
mod options;
mod picker;
pub mod players;
pub mod record;
pub mod render;

pub use game::{Game, GameError, GameSetup, Inexpressible};

/// The version of the game's rules (docs/mallocgame.md): 2 since a turn decides one use
/// of a buffer. Files that record games or what was trained on them carry it.
pub const RULES_VERSION: u32 = 2;
pub use options::{GameOptions, Mode, Order, MAX_SLOTS};
pub use picker::{PickerConfig, PrefetchWindow};

/// A seed for one role in one step of a seeded run (an iteration, a generation), apart from
/// every other: so every random draw of a run is reproducible, resumable, and the same for
/// any thread count. Shared by the trainer and EGRL.
pub fn seed_for(seed: u64, step: u64, role: u64) -> u64 {
    let mut x =
        seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ role.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}
