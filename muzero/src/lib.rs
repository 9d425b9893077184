//! mallocMuZero: learned-model MCTS self-play, replay buffer, networks and training.
//!
//! - [`env`]: the [`env::Environment`] trait the agent plays (toy games and the mallocGame).
//! - [`model`]: the [`model::Model`] trait the search calls in batches.
//! - [`batch`]: [`batch::TrainingBatch`], what replay samples and the learner consumes.

pub mod batch;
pub mod env;
pub mod model;
