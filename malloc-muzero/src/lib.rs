//! mallocMuZero: the generic `muzero` engine applied to the mallocGame.
//!
//! This crate is the game's side of the line the engine does not cross:
//! - [`MallocEnv`]: the mallocGame as a [`muzero::Environment`].
//! - [`train`]: the training driver (self-play and learner side by side, evaluation
//!   against xla, checkpoints, resume, interrupts).
//! - [`Agent`]: a trained agent loaded from a run folder, or the bundled [`generalist`].
//! - [`GuidedSearch`]: the local search with its moves drawn from a network's policy
//!   ([`NetGuide`]), or uniformly: the guides of issue 43's ablation ([`GuideKind`]),
//!   a network guide optionally learning from the search's moves ([`OnlineConfig`]).
//! - [`start`]: the learned start (issue 59.2): a predictor of which uses a best mapping
//!   holds fast, trained on solution pools, and the line that follows it.
//!
//! Evaluating it beside the other solvers (cases, the solver registry, the race) is the
//! `harness` crate's.

#![warn(missing_docs)]

mod agent;
mod beside;
mod env;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod generalist;
mod guide;
mod online;
mod outcomes;
mod search_model;
pub mod start;
pub mod train;
mod view;

pub use agent::{Agent, AgentError, DEFAULT_PROPOSAL_ROUNDS, MAX_PROPOSAL_ROUNDS};
pub use beside::Beside;
pub use env::MallocEnv;
pub use guide::{GuideKind, GuideStats, GuidedSearch, NetGuide, DEFAULT_GUIDE_TEMPERATURE};
pub use online::OnlineConfig;
pub use outcomes::{collect_outcomes, train_on_outcomes, Outcome, OutcomeTraining, OutcomeWeight};
pub use search_model::SearchModel;
pub use view::GuideView;
