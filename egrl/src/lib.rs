//! egrl: EGRL (Khadka et al., "Optimizing Memory Placement using Evolutionary Graph
//! Reinforcement Learning", ICLR 2021) over accel-sim, with the baselines it is compared
//! with.
//!
//! - [`Problem`]: what EGRL decides (per op, the level of its weights and of its output
//!   activations), the repair of choices that do not fit, and the fitness.
//! - [`Egrl`]: the search: a population of GNN policies and Boltzmann chromosomes
//!   ([`evolve`]) beside a discrete-SAC learner ([`learner`]) through a shared replay
//!   buffer, with [`Variant::Ea`] (evolution alone) and [`Variant::Pg`] (the learner
//!   alone) as ablations.
//! - [`dp_assignment`]: the knapsack (dynamic-programming) mapper, `egrl-dp`.
//! - [`RunFolder`]: `train-egrl`'s run folder (checkpoint, metrics, best mapping), resumable.
//! - [`race`]: one solver under a deadline, for `mallocmuzero race`.

#![warn(missing_docs)]

pub mod boltzmann;
mod config;
mod dp;
mod engine;
pub mod evolve;
mod features;
pub mod gnn;
pub mod learner;
mod problem;
mod race;
mod replay;
mod run_dir;

pub use config::{EgrlConfig, Variant};
pub use dp::{dp_assignment, knapsack, KNAPSACK_UNITS};
pub use engine::{CurvePoint, Egrl, EgrlState, Found, GenerationMetrics, RunLimits};
pub use features::{feature_width, OpGraph, KIND_BUCKETS};
pub use problem::{
    decision_count, Assignment, Decision, Decoded, Problem, ProblemError, Scored, Slot,
};
pub use race::{race, RaceOutcome};
pub use replay::Replay;
pub use run_dir::{RunFolder, RunInfo, Summary};

/// Why an EGRL run could not go on; each names the file or the field.
#[derive(Debug, thiserror::Error)]
pub enum EgrlError {
    /// A config value is out of range (its field named).
    #[error("egrl config: {0}")]
    Config(String),
    /// The learner's loss, entropy or temperature stopped being a number.
    #[error("the learner diverged at {0}")]
    Diverged(String),
    /// The problem cannot be built on this hardware or program.
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// The tensor backend failed.
    #[error("network: {0}")]
    Candle(#[from] candle_core::Error),
    /// A checkpoint could not be read or written.
    #[error(transparent)]
    Bin(#[from] binio::BinError),
    /// The run folder is another process's.
    #[error(transparent)]
    Lock(#[from] binio::LockError),
    /// The folder holds another kind of run ([`binio::FolderKind`]).
    #[error(transparent)]
    Kind(#[from] binio::KindError),
    /// The workload could not be loaded.
    #[error(transparent)]
    Workload(#[from] bench_workloads::WorkloadError),
    /// The hardware config could not be loaded.
    #[error(transparent)]
    Hardware(#[from] accel_sim::HardwareError),
    /// A file of the run folder is unreadable or not what it should be.
    #[error("{path}: {msg}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        msg: String,
    },
}
