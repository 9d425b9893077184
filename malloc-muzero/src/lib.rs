//! mallocMuZero: the generic `muzero` engine applied to the mallocGame, and the evaluation
//! harness every front end (the CLI, tests, scripts, a binding) calls.
//!
//! This crate is the game's side of the line the engine does not cross:
//! - [`MallocEnv`]: the mallocGame as a [`muzero::Environment`].
//! - [`train`]: the training driver (self-play and learner side by side, evaluation
//!   against xla, checkpoints, resume, interrupts).
//! - [`Agent`]: a trained agent loaded from a run folder, or the bundled [`generalist`].
//! - [`evaluate`]: cases, the solver registry, solve -> validate -> simulate -> [`Row`].

mod agent;
mod env;
pub mod evaluate;
pub mod generalist;
pub mod race;
pub mod train;

pub use agent::{Agent, AgentError, SearchModel};
pub use env::MallocEnv;
pub use evaluate::{evaluate_case, Case, EvalError, EvalProgress, Row, Solver, SolverContext};
