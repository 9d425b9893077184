//! `evaluate(...)`: the command line's `evaluate`, returning its JSON rows as dicts.

use crate::args::{describe, named, opt_uint, wrong_type};
use crate::case::{cases_of, Hw, OptionArgs, Workload};
use crate::errors::{bad_arg, err};
use harness::{evaluate_case, Row, Solver, SolverContext};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::path::PathBuf;

/// Runs `solvers` on a case (or on every case of a suite: `suite=True` the benchmark
/// suite's 14, `suite="scale"` the scale tier's), validates and
/// simulates each mapping, and returns one dict per (case, solver): the rows of
/// `mallocmuzero evaluate --json` (`results`), field for field. `solvers` is a list of the
/// command line's solver names (`solver_names()`; `solvers=['xla']`), `None` its default
/// list. `muzero` plays the run folder `checkpoint`, or without one the bundled
/// generalist, then makes `proposal_rounds` rounds of branch proposals (default 64; 0: its
/// game alone); its search steps through `search_model`: `"learned"` (MuZero's dynamics
/// network) or `"game"` (the game itself, the default). `exact_objective`: `"simulated"` (the
/// default: the exact solver's bound bounds the simulated latency, and the local search has
/// what its MIP leaves of `exact_seconds`) or `"proxy"` (XLA's cost model). `threads`
/// (1 to 256) is what a solver may use where sharing its work out leaves its result the
/// same (the beam's steps). An invalid mapping is a row with `valid: False`, not an
/// exception.
#[pyfunction]
#[pyo3(signature = (
    workload = None, solvers = None, hw = None, fast_capacity = None, *, suite = None,
    seed = 0, threads = 1, checkpoint = None, simulations = None, proposal_rounds = None,
    search_model = None,
    exact_seconds = 60.0, exact_gap = 0.0, exact_objective = None,
    mapping = None, slots = None, order = None, fast_levels = None, reward = None
))]
#[allow(clippy::too_many_arguments)] // the command line's flags, as keyword arguments
pub fn evaluate(
    py: Python<'_>,
    workload: Option<Workload>,
    solvers: Option<&Bound<'_, PyAny>>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = named::suite)] suite: Option<bench_workloads::suite::SuiteName>,
    #[pyo3(from_py_with = named::seed)] seed: u64,
    #[pyo3(from_py_with = named::threads)] threads: usize,
    checkpoint: Option<PathBuf>,
    simulations: Option<&Bound<'_, PyAny>>,
    proposal_rounds: Option<&Bound<'_, PyAny>>,
    search_model: Option<&str>,
    #[pyo3(from_py_with = named::exact_seconds)] exact_seconds: f64,
    #[pyo3(from_py_with = named::exact_gap)] exact_gap: f64,
    exact_objective: Option<&str>,
    mapping: Option<PathBuf>,
    slots: Option<&Bound<'_, PyAny>>,
    order: Option<String>,
    fast_levels: Option<&Bound<'_, PyAny>>,
    reward: Option<String>,
) -> PyResult<Vec<Py<PyAny>>> {
    let solvers = solvers.map(solver_list).transpose()?;
    let simulations: Option<usize> = opt_uint(simulations, "simulations")?;
    let proposal_rounds: Option<usize> = opt_uint(proposal_rounds, "proposal_rounds")?;
    let options = OptionArgs::parse(slots, order, fast_levels, reward)?;
    let exact_objective: exact::Objective = exact_objective
        .map(str::parse)
        .transpose()
        .map_err(|e| bad_arg(format!("exact_objective: {e}")))?
        .unwrap_or_default();
    let search_model = search_model
        .map(str::parse)
        .transpose()
        .map_err(|e| bad_arg(format!("search_model: {e}")))?;
    check_numbers(exact_seconds, exact_gap)?;
    let cases = cases_of(py, suite, workload, hw, fast_capacity)?;
    let ctx = SolverContext {
        seed,
        checkpoint,
        simulations,
        proposal_rounds,
        search_model,
        exact: exact::ExactConfig {
            seconds: exact_seconds,
            relative_gap: exact_gap,
            objective: exact_objective,
            ..Default::default()
        },
        threads,
    };
    let rows: Vec<Row> = py.detach(|| -> PyResult<Vec<Row>> {
        let mut solvers = Solver::all_named(&solvers.unwrap_or_default(), &ctx).map_err(err)?;
        if let Some(path) = mapping {
            solvers.push(Solver::File(path));
        }
        let mut rows = Vec::new();
        for case in &cases {
            let options = options.options(&case.hw)?;
            rows.extend(evaluate_case(case, &solvers, &options, &mut |_| {}).map_err(err)?);
        }
        Ok(rows)
    })?;
    let json = py.import("json")?;
    rows.iter()
        .map(|r| {
            let text = serde_json::to_string(r).map_err(err)?;
            Ok(json.call_method1("loads", (text,))?.unbind())
        })
        .collect()
}

/// The exact solver's budget and gap, in range.
fn check_numbers(exact_seconds: f64, exact_gap: f64) -> PyResult<()> {
    if !(exact_seconds.is_finite() && exact_seconds > 0.0) {
        return Err(bad_arg(format!(
            "exact_seconds: must be > 0, got {exact_seconds}"
        )));
    }
    if !(0.0..1.0).contains(&exact_gap) {
        return Err(bad_arg(format!(
            "exact_gap: must be in [0, 1), got {exact_gap}"
        )));
    }
    Ok(())
}

/// The solver names of `evaluate(solvers=...)`: a list or tuple of strs, never empty
/// (`None` is the way to the defaults; the libraries read an empty list as them).
pub(crate) fn solver_list(ob: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if ob.is_instance_of::<PyString>() {
        // A str is a sequence of one-letter names: say how to pass one solver.
        return Err(PyTypeError::new_err(format!(
            "solvers: expected a list of solver names, got {}; for one solver write solvers=[{}]",
            describe(ob),
            ob.repr()?
        )));
    }
    let Ok(items) = ob.try_iter() else {
        return Err(wrong_type("solvers", "a list of solver names", ob));
    };
    let mut names = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        let name = item
            .cast::<PyString>()
            .map_err(|_| wrong_type(&format!("solvers[{i}]"), "a solver name (a str)", &item))?;
        names.push(name.to_string());
    }
    if names.is_empty() {
        return Err(bad_arg(
            "solvers: empty list; name at least one solver or pass None for the defaults",
        ));
    }
    Ok(names)
}

/// The solver names `evaluate` knows besides game players with a width (`beam:W`): the
/// harness's registry, the one the command line reads.
#[pyfunction]
pub fn solver_names() -> Vec<&'static str> {
    harness::registry::evaluate_names()
}
