//! A generic MuZero engine: batched search over a learned model, networks, prioritized
//! replay and an optimizer. Like mctx it knows no game: a game comes in through
//! [`env::Environment`] and the search calls a [`model::Model`]; the mallocGame's adapter
//! and training driver live in the `malloc-muzero` crate.
//!
//! The modules are private; the types below are the engine's API:
//! - a game: [`Environment`] (and [`EnvError`]);
//! - the model the search calls in batches: [`Model`], [`ModelOutput`], [`ModelError`];
//! - the search: [`Searcher`] (batched MuZero pUCT and Gumbel MuZero), [`SearchConfig`],
//!   [`GumbelConfig`], [`SearchOutput`], [`search`];
//! - the networks (candle): [`MuZeroNet`], [`NetworkConfig`], [`LossWeights`], [`device`];
//! - learning: [`ReplayBuffer`] (prioritized, n-step targets, reanalyse), [`GameHistory`],
//!   [`TrainingBatch`], [`Optimizer`] (AdamW with warm-up, decay, clipping; resumable);
//! - [`Support`]: categorical value/reward supports with the h(x) transform;
//! - `toy` (feature `toy`): toy games and an exact model, test doubles for the engine's
//!   tests and benches, not API.

#![warn(missing_docs)]

mod batch;
mod cpu_infer;
mod env;
mod env_model;
mod model;
mod network;
mod optim;
mod replay;
mod search;
mod sharded;
mod support;
#[cfg(any(test, feature = "toy"))]
pub mod toy;

pub use batch::TrainingBatch;
pub use env::{EnvError, Environment};
pub use env_model::EnvironmentModel;
pub use model::{Model, ModelError, ModelOutput};
pub use network::{
    device, keep_candle_elementwise_single_threaded, keep_candle_matmuls_single_threaded,
    LossOutput, LossParts, LossWeights, MuZeroNet, NetError, NetworkConfig, MAX_PARAMETERS,
    MAX_WIDTH,
};
pub use optim::{Decay, Gradients, OptimConfig, OptimError, Optimizer, StepStats};
pub use replay::{GameHistory, ReplayBuffer, ReplayConfig, ReplayError};
pub use search::{
    search, select_by_visits, GumbelConfig, SearchConfig, SearchError, SearchOutput, Searcher,
    MAX_SIMULATIONS,
};
pub use sharded::{train_step, StepError, StepReport};
pub use support::Support;
