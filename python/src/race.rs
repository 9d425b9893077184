//! `race(...)`: the command line's `race`, into a folder it resumes, returning its JSON
//! results as dicts.

use crate::args::{number, opt_uint};
use crate::case::{cases_of, Hw, OptionArgs, Workload};
use crate::errors::{bad_arg, err};
use crate::solvers::solver_list;
use harness::race::{race_case, RaceConfig};
use harness::race_folder::{race_into, Finished};
use harness::race_settings::{self, Setting};
use harness::Case;
use malloc_game::GameOptions;
use malloc_muzero::train::TrainConfig;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Races `solvers` on a case (or on every case of a suite: `suite=True` the benchmark
/// suite's 14, `suite="scale"` the scale tier's), each for
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
/// continues); `config` (JSON text, `TrainConfig`'s fields) and `search_model` (`"game"` or
/// `"learned"`): `muzero-train`'s training; `egrl_config` (JSON text, `EgrlConfig`'s fields
/// but the seed, threads and variant the race sets): the EGRL solvers'. A setting that no
/// solver of the race reads is an `Error` before any budget is spent. `exact_objective`:
/// `"simulated"` (the default) or `"proxy"`; `mip_share` (0 to 0.9): the share of the
/// `muzero` and `guided-*` solvers' budget spent on the MIP whose line is one of their
/// starts (default 0.75); `slots`, `order`, `fast_levels` and `reward`: the game's rules
/// for the game solvers.
#[pyfunction]
#[pyo3(signature = (
    workload = None, solvers = None, hw = None, fast_capacity = None, *, seconds,
    suite = None, seed = 0, threads = 1, out = None, checkpoint = None, config = None,
    search_model = None, egrl_config = None,
    exact_objective = None, mip_share = None, slots = None, order = None, fast_levels = None,
    reward = None
))]
#[allow(clippy::too_many_arguments)] // the command line's flags, as keyword arguments
pub fn race(
    py: Python<'_>,
    workload: Option<Workload>,
    solvers: Option<&Bound<'_, PyAny>>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
    seconds: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = crate::args::named::suite)] suite: Option<
        bench_workloads::suite::SuiteName,
    >,
    #[pyo3(from_py_with = crate::args::named::seed)] seed: u64,
    #[pyo3(from_py_with = crate::args::named::threads)] threads: usize,
    out: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    config: Option<&str>,
    search_model: Option<&str>,
    egrl_config: Option<&str>,
    exact_objective: Option<&str>,
    mip_share: Option<&Bound<'_, PyAny>>,
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
    let seconds = budget(seconds)?;
    let exact_objective: exact::Objective = exact_objective
        .map(str::parse)
        .transpose()
        .map_err(|e| bad_arg(format!("exact_objective: {e}")))?
        .unwrap_or_default();
    let mip_share = mip_share.map(mip_share_of).transpose()?;
    let train = train_config(config, search_model)?;
    let egrl = egrl_config_of(egrl_config)?;
    let fast_levels: Option<usize> = opt_uint(fast_levels, "fast_levels")?;
    let options = OptionArgs::parse(slots, order, None, reward)?;
    let cases = cases_of(py, suite, workload, hw, fast_capacity)?;
    let given = [
        ("checkpoint", checkpoint.is_some(), Setting::Checkpoint),
        ("config", config.is_some(), Setting::TrainConfig),
        ("search_model", search_model.is_some(), Setting::SearchModel),
        ("egrl_config", egrl_config.is_some(), Setting::EgrlConfig),
        ("mip_share", mip_share.is_some(), Setting::MipShare),
    ];
    check_flags_read(&solvers, checkpoint.is_some(), given, cases.len())?;
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
        train: train.clone(),
        checkpoint: checkpoint.clone(),
        agent_dir: None,
        egrl: egrl.clone(),
        exact_objective,
        mip_share,
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
    to_python(py, dropped, &finished)
}

/// The seconds each solver gets (> 0).
fn budget(seconds: &Bound<'_, PyAny>) -> PyResult<f64> {
    let seconds = number(seconds, "seconds")?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(bad_arg(format!("seconds: must be > 0, got {seconds}")));
    }
    Ok(seconds)
}

/// `mip_share`: a share of the budget in 0..=0.9 (the search must keep some).
fn mip_share_of(v: &Bound<'_, PyAny>) -> PyResult<f64> {
    let v = number(v, "mip_share")?;
    if !(0.0..=0.9).contains(&v) {
        return Err(bad_arg(format!("mip_share: must be in 0..=0.9, got {v}")));
    }
    Ok(v)
}

/// Refuses an argument that no raced solver reads, and a continued training run over many
/// cases.
fn check_flags_read(
    solvers: &[String],
    continues: bool,
    given: [(&'static str, bool, Setting); 5],
    n_cases: usize,
) -> PyResult<()> {
    if race_settings::continues_on_many_cases(solvers, continues, n_cases) {
        return Err(bad_arg(
            "checkpoint: muzero-train continues one run, so it needs one case, not suite=True",
        ));
    }
    if let Some(why) = race_settings::first_unread(solvers, given) {
        return Err(bad_arg(why));
    }
    Ok(())
}

/// The results as Python objects (each marked `reused` or not), the dropped saved results
/// as warnings.
fn to_python(
    py: Python<'_>,
    dropped: Vec<String>,
    finished: &[Finished],
) -> PyResult<Vec<Py<PyAny>>> {
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

/// `muzero-train`'s config: `config`'s fields (JSON text, as `train --config` reads a
/// file) over the defaults, then `search_model`.
fn train_config(config: Option<&str>, search_model: Option<&str>) -> PyResult<TrainConfig> {
    let mut train = crate::remote::parse_config(config)?.unwrap_or_default();
    if let Some(m) = search_model {
        train.search_model = m
            .parse()
            .map_err(|e| bad_arg(format!("search_model: {e}")))?;
    }
    Ok(train)
}

/// The EGRL solvers' config: `text`'s fields (JSON, as `race --egrl-config` reads a file)
/// over the defaults. The race sets the seed, the threads and the variant, so a text that
/// sets one is refused rather than overridden without a word.
fn egrl_config_of(text: Option<&str>) -> PyResult<egrl::EgrlConfig> {
    let Some(text) = text else {
        return Ok(egrl::EgrlConfig::default());
    };
    let (config, fields) = egrl::EgrlConfig::from_json_with_fields(text)
        .map_err(|e| bad_arg(format!("egrl_config: {e}")))?;
    if let Some(f) = race_settings::raced_egrl_field(fields.iter().map(String::as_str)) {
        return Err(bad_arg(format!(
            "egrl_config: field `{f}`: the race sets it (seed=, threads= and the solver's name for the variant); remove it"
        )));
    }
    Ok(config)
}

/// The solver names `race` takes, in the order it runs them when none is named: the
/// harness's registry, the one the command line reads.
#[pyfunction]
pub fn race_solver_names() -> Vec<&'static str> {
    harness::registry::race_names()
}
