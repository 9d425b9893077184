//! A case (program on hardware) and the game's options from Python arguments, with the
//! command line's defaults and rules.

use crate::args::opt_uint;
use crate::errors::{bad_arg, err};
use crate::program::{capacity_spec, Hardware, Program};
use harness::evaluate::{DEFAULT_HARDWARE, DEFAULT_WORKLOAD};
use harness::Case;
use malloc_game::{GameOptions, GameSetup, Order, Reward};
use pyo3::prelude::*;
use std::sync::Arc;

/// A program given from Python: a spec string or a `Program`.
pub enum Workload {
    Named(String),
    Built(Program),
}

impl<'py> FromPyObject<'_, 'py> for Workload {
    type Error = PyErr;
    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(p) = ob.cast::<Program>() {
            let p = p.get().clone();
            return Ok(match p.spec.clone() {
                Some(spec) => Workload::Named(spec),
                None => Workload::Built(p),
            });
        }
        ob.extract::<String>()
            .map(Workload::Named)
            .map_err(|_| bad_arg("workload: expected a workload name or file, or a Program"))
    }
}

/// Hardware given from Python: a preset name or file, or a `Hardware`.
pub enum Hw {
    Named(String),
    Built(Hardware),
}

impl<'py> FromPyObject<'_, 'py> for Hw {
    type Error = PyErr;
    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(h) = ob.cast::<Hardware>() {
            return Ok(Hw::Built(h.get().clone()));
        }
        ob.extract::<String>()
            .map(Hw::Named)
            .map_err(|_| bad_arg("hw: expected a preset name or config file, or a Hardware"))
    }
}

/// The cases of `evaluate` and `race`: a suite's, or the one case the arguments name.
pub fn cases_of(
    py: Python<'_>,
    suite: Option<bench_workloads::suite::SuiteName>,
    workload: Option<Workload>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Case>> {
    let Some(name) = suite else {
        return Ok(vec![case_of(workload, hw, fast_capacity)?]);
    };
    if workload.is_some() || hw.is_some() || fast_capacity.is_some() {
        return Err(bad_arg(
            "suite names its own cases: drop workload, hw and fast_capacity",
        ));
    }
    py.detach(|| Case::suite_named(name)).map_err(err)
}

/// The case the arguments name, as `mallocmuzero evaluate --workload --hw --fast-capacity`
/// does: a suite workload named on its suite hardware without a capacity gets the suite's
/// capacity; the defaults are the command line's (resnet50 on tpu-v4i-like).
pub fn case_of(
    workload: Option<Workload>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
) -> PyResult<Case> {
    let capacity = fast_capacity
        .map(|c| capacity_spec(c, "fast_capacity"))
        .transpose()?;
    let named = |w: &Option<Workload>| match w {
        Some(Workload::Named(s)) => Some(s.clone()),
        _ => None,
    };
    let built_program = matches!(workload, Some(Workload::Built(_)));
    if !built_program && !matches!(hw, Some(Hw::Built(_))) {
        let hw_name = match &hw {
            Some(Hw::Named(s)) => Some(s.clone()),
            _ => None,
        };
        let w = named(&workload);
        return Case::named(w.as_deref(), hw_name.as_deref(), capacity.as_deref()).map_err(err);
    }
    let program = match workload {
        Some(Workload::Built(p)) => (*p.inner).clone(),
        Some(Workload::Named(s)) => bench_workloads::load(&s).map_err(err)?,
        None => bench_workloads::load(DEFAULT_WORKLOAD).map_err(err)?,
    };
    let mut hardware = match hw {
        Some(Hw::Built(h)) => h.inner,
        Some(Hw::Named(s)) => accel_sim::Hardware::by_name_or_file(&s).map_err(err)?,
        None => accel_sim::Hardware::preset(DEFAULT_HARDWARE).map_err(err)?,
    };
    if let Some(c) = capacity {
        hardware = hardware.with_capacity_spec(&c).map_err(err)?;
    }
    Case::new(program, hardware).map_err(err)
}

/// The game's options from Python (the command line's `--slots`, `--order`,
/// `--fast-levels`, `--reward`); the defaults are the command line's.
pub struct OptionArgs {
    pub slots: Option<usize>,
    pub order: Option<String>,
    pub fast_levels: Option<usize>,
    pub reward: Option<String>,
}

impl OptionArgs {
    /// The options as Python passes them (`slots` and `fast_levels` ints or `None`).
    pub fn parse(
        slots: Option<&Bound<'_, PyAny>>,
        order: Option<String>,
        fast_levels: Option<&Bound<'_, PyAny>>,
        reward: Option<String>,
    ) -> PyResult<OptionArgs> {
        Ok(OptionArgs {
            slots: opt_uint(slots, "slots")?,
            order,
            fast_levels: opt_uint(fast_levels, "fast_levels")?,
            reward,
        })
    }

    pub fn options(&self, hw: &accel_sim::Hardware) -> PyResult<GameOptions> {
        let d = GameOptions::default();
        let order = match &self.order {
            Some(o) => o
                .parse::<Order>()
                .map_err(|e| bad_arg(format!("order: {e}")))?,
            None => d.order,
        };
        let reward = match &self.reward {
            Some(r) => r
                .parse::<Reward>()
                .map_err(|e| bad_arg(format!("reward: {e}")))?,
            None => d.reward,
        };
        Ok(GameOptions {
            fast_levels: self.fast_levels.unwrap_or(hw.levels.len() - 1),
            slots: self.slots.unwrap_or(d.slots),
            order,
            reward,
            ..d
        })
    }
}

/// The game of `case` with `options`.
pub fn setup_of(case: Case, options: &OptionArgs) -> PyResult<Arc<GameSetup>> {
    let options = options.options(&case.hw)?;
    GameSetup::new(case.program, case.hw, options).map_err(err)
}

/// The game the Python arguments name (the case as [`case_of`] reads it), built with the
/// GIL released.
pub fn game_setup(
    py: Python<'_>,
    workload: Option<Workload>,
    hw: Option<Hw>,
    fast_capacity: Option<&Bound<'_, PyAny>>,
    options: OptionArgs,
) -> PyResult<Arc<GameSetup>> {
    let case = case_of(workload, hw, fast_capacity)?;
    py.detach(|| setup_of(case, &options))
}
