//! `mallocmuzero._native`: the workspace's libraries as a Python module. The pure-Python
//! package around it (`python/pysrc/mallocmuzero`) adds the Gymnasium environment, the Ray
//! training and torch tracing; everything that computes lives here, in Rust, with the GIL
//! released while it runs.

mod args;
mod case;
mod errors;
mod game;
mod program;
mod race;
mod records;
mod remote;
mod solvers;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Tiny matmuls across candle's elementwise pool only spin on shared cores (as in the
    // CLI); a Ray actor or a notebook gets one thread per search unless told otherwise.
    muzero::keep_candle_elementwise_single_threaded();
    muzero::keep_candle_matmuls_single_threaded();
    errors::register(m)?;
    m.add_class::<program::Program>()?;
    m.add_class::<program::Hardware>()?;
    m.add_class::<game::Game>()?;
    m.add_class::<game::VecGame>()?;
    m.add_class::<records::SavedGame>()?;
    m.add_class::<remote::SelfPlayWorker>()?;
    m.add_class::<remote::Learner>()?;
    m.add_function(wrap_pyfunction!(program::workloads, m)?)?;
    m.add_function(wrap_pyfunction!(program::hardware_presets, m)?)?;
    m.add_function(wrap_pyfunction!(solvers::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(solvers::solver_names, m)?)?;
    m.add_function(wrap_pyfunction!(race::race, m)?)?;
    m.add_function(wrap_pyfunction!(race::race_solver_names, m)?)?;
    m.add("RULES_VERSION", malloc_game::RULES_VERSION)?;
    Ok(())
}
