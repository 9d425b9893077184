//! `race(...)`: the command line's `race`, into a folder it resumes, returning its JSON
//! results as dicts.

use crate::args::{number, opt_uint};
use crate::case::{case_of, Hw, OptionArgs, Workload};
use crate::errors::{bad_arg, err};
use crate::solvers::solver_list;
use harness::race::{race_case, RaceConfig};
use harness::race_folder::{race_into, Finished};
use harness::Case;
use malloc_game::GameOptions;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Races `solvers` on a case (or on every suite case with `suite=True`), each for
/// `seconds` of wall-clock time on `threads` threads, one after another, and returns one
/// dict per (case, solver): the results of `mallocmuzero race --json`, field for field,
/// plus `reused`. `solvers` is a list of the race's names (`race_solver_names()`), `None`
/// its default list. With `out` (a folder), the race is kept there as `race --out` keeps
/// it (`results.json`, each solver's best mapping, the curves): a race run again into the
/// same folder with the same `seconds`, `seed` and `threads` keeps each saved result whose
/// mapping still checks out (`reused: True`) and races only the rest, so a race stopped at
/// any moment resumes; the command line and Python resume each other's folders. A folder
/// of another race, or one another process is writing, is an `Error`. `checkpoint`: a
/// `train` run folder whose network guides the `muzero` solver (and which `muzero-train`
/// continues); `exact_objective`: `"simulated"` (the default) or `"proxy"`; `slots`,
/// `order`, `fast_levels` and `reward`: the game's rules for the game solvers.
#[pyfunction]
#[pyo3(signature = (
    workload = None, solvers = None, hw = None, fast_capacity = None, *, seconds,
    suite = false, seed = 0, threads = 1, out = None, checkpoint = None,
    exact_objective = None, slots = None, order = None, fast_levels = None, reward = None
))]
#[allow(clippy::too_many_arguments)] // the command line's flags, as keyword arguments
pub fn race(
    py: Python<'_>,
    workload: Option<Workload>,
    solvers: Option<&Bound<'_, PyAny>>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
    seconds: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = crate::args::named::suite)] suite: bool,
    #[pyo3(from_py_with = crate::args::named::seed)] seed: u64,
    #[pyo3(from_py_with = crate::args::named::threads)] threads: usize,
    out: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    exact_objective: Option<&str>,
    slots: Option<&Bound<'_, PyAny>>,
    order: Option<String>,
    fast_levels: Option<&Bound<'_, PyAny>>,
    reward: Option<String>,
) -> PyResult<Vec<Py<PyAny>>> {
    let solvers: Vec<String> = match solvers {
        Some(s) => solver_list(s)?,
        None => harness::registry::race_default_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let seconds = number(seconds, "seconds")?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(bad_arg(format!("seconds: must be > 0, got {seconds}")));
    }
    if !(1..=256).contains(&threads) {
        return Err(bad_arg(format!(
            "threads: must be in 1..=256, got {threads}"
        )));
    }
    let exact_objective: exact::Objective = exact_objective
        .map(str::parse)
        .transpose()
        .map_err(|e| bad_arg(format!("exact_objective: {e}")))?
        .unwrap_or_default();
    let fast_levels: Option<usize> = opt_uint(fast_levels, "fast_levels")?;
    let options = OptionArgs::parse(slots, order, None, reward)?;
    let cases = if suite {
        if workload.is_some() || hw.is_some() || fast_capacity.is_some() {
            return Err(bad_arg(
                "suite=True names its own cases: drop workload, hw and fast_capacity",
            ));
        }
        py.detach(Case::suite).map_err(err)?
    } else {
        vec![case_of(workload, hw, fast_capacity)?]
    };
    // The rules but the fast levels are the same on every case (their number is the
    // case's hardware's but one, as on the command line, unless given).
    let base: GameOptions = options.options(&cases[0].hw)?;
    let config_of = |case: &Case| RaceConfig {
        seconds,
        threads,
        seed,
        options: GameOptions {
            fast_levels: fast_levels.unwrap_or(case.hw.levels.len() - 1),
            ..base.clone()
        },
        train: Default::default(),
        checkpoint: checkpoint.clone(),
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective,
    };
    let mut dropped = Vec::new();
    let finished: Vec<Finished> = py
        .detach(|| {
            race_into(
                out.as_deref(),
                &cases,
                &solvers,
                &config_of,
                &mut |case, name, config| Ok(race_case(case, name, config, &mut |_, _| {})?),
                &mut |case, name, why| {
                    dropped.push(format!(
                        "{} on {}: the saved {name} result does not check out ({why}): raced again",
                        case.program.name(),
                        case.hw.name
                    ))
                },
            )
        })
        .map_err(err)?;
    let warnings = py.import("warnings")?;
    for d in dropped {
        warnings.call_method1("warn", (d,))?;
    }
    let json = py.import("json")?;
    finished
        .iter()
        .map(|f| {
            let mut value = serde_json::to_value(&f.result).map_err(err)?;
            value["reused"] = serde_json::Value::Bool(f.reused);
            let text = serde_json::to_string(&value).map_err(err)?;
            Ok(json.call_method1("loads", (text,))?.unbind())
        })
        .collect()
}

/// The solver names `race` takes, in the order it runs them when none is named: the
/// harness's registry, the one the command line reads.
#[pyfunction]
pub fn race_solver_names() -> Vec<&'static str> {
    harness::registry::race_names()
}
