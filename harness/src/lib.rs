//! The evaluation harness every front end (the command line, tests, scripts, the Python
//! package) calls: the same cases, solvers and rows everywhere.
//!
//! - [`registry`]: the one solver registry: each solver's name, what it is, the settings
//!   it reads and the functions that build it; every front end builds solvers there.
//! - [`evaluate`]: cases and suites, solve -> validate -> simulate -> [`Row`], with its
//!   solvers in [`solver`].
//! - [`exact_run`]: the exact solver's MIP, then the local search for the budget left.
//! - [`bounds`]: a case's best proven lower bound on the simulated latency.
//! - [`reference`]: a result's yardsticks: the best instant heuristic and the bound.
//! - [`race`]: every solver on a case under the same wall-clock budget and threads, with
//!   each kind of solver's run in [`race_runs`], its pictures in [`curves`] and its folder (results, mappings, reuse) in
//!   [`race_folder`], and the settings only some of its solvers read in
//!   [`race_settings`].

#![warn(missing_docs)]

pub mod bounds;
pub mod curves;
pub mod evaluate;
pub mod exact_run;
pub mod injection;
pub mod race;
pub mod race_folder;
pub mod race_runs;
pub mod race_settings;
pub mod reference;
pub mod registry;
pub mod solver;

pub use evaluate::{evaluate_case, Case, EvalError, EvalProgress, Row};
pub use race::RaceConfig;
pub use solver::{Solver, SolverContext};

/// docs/architecture.md's examples, compiled and run as doctests so the page stays true.
#[cfg(doctest)]
#[doc = include_str!("../../docs/architecture.md")]
pub struct ArchitectureDocExamples;
