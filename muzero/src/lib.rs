//! mallocMuZero: learned-model MCTS self-play, replay buffer, networks and training.
//!
//! - [`env`]: the [`env::Environment`] trait the agent plays (toy games and the mallocGame).
//! - [`model`]: the [`model::Model`] trait the search calls in batches.
//! - [`malloc`]: the mallocGame as an environment.
//! - [`batch`]: [`batch::TrainingBatch`], what replay samples and the learner consumes.
//! - [`search`]: batched MuZero pUCT and Gumbel MuZero search over a [`model::Model`].
//! - [`network`]: the candle networks (representation, dynamics, prediction) and the loss.
//! - [`support`]: categorical value/reward supports with the h(x) transform.
//! - [`optim`]: AdamW with warm-up, decay and global-norm clipping; resumable state.
//! - [`replay`]: game histories, prioritized replay, n-step targets, reanalyse.
//! - [`train`]: self-play and learner side by side, evaluation, checkpoints, resume.
//! - [`toy`]: toy games and an exact model, for testing the core.

pub mod batch;
mod cpu_infer;
pub mod env;
pub mod malloc;
pub mod model;
pub mod network;
pub mod optim;
pub mod replay;
pub mod search;
pub mod support;
pub mod toy;
pub mod train;
