//! A generic MuZero engine: batched search over a learned model, networks, prioritized
//! replay and an optimizer. Like mctx it knows no game: a game comes in through
//! [`env::Environment`] and the search calls a [`model::Model`]; the mallocGame's adapter
//! and training driver live in the `malloc-muzero` crate.
//!
//! - [`env`]: the [`env::Environment`] trait a game implements.
//! - [`model`]: the [`model::Model`] trait the search calls in batches.
//! - [`batch`]: [`batch::TrainingBatch`], what replay samples and the learner consumes.
//! - [`search`]: batched MuZero pUCT and Gumbel MuZero search over a [`model::Model`].
//! - [`network`]: the candle networks (representation, dynamics, prediction) and the loss.
//! - [`support`]: categorical value/reward supports with the h(x) transform.
//! - [`optim`]: AdamW with warm-up, decay and global-norm clipping; resumable state.
//! - [`replay`]: game histories, prioritized replay, n-step targets, reanalyse.
//! - `toy` (feature `toy`): toy games and an exact model, test doubles for the engine's tests.

pub mod batch;
mod cpu_infer;
pub mod env;
pub mod model;
pub mod network;
pub mod optim;
pub mod replay;
pub mod search;
pub mod support;
#[cfg(any(test, feature = "toy"))]
pub mod toy;
