//! Training from Python, split for a cluster: a `Learner` owns the run folder (the Rust
//! trainer: network, optimizer, replay, checkpoints, best mapping) and a `SelfPlayWorker`
//! plays batches of games with the weights it is sent. Between them travel bytes only
//! (the run's description, weights, work orders, batches of games), so each lives in its
//! own process (a Ray actor) and is built there.

use crate::args::{named, opt_uint, uint};
use crate::case::{game_setup, Hw, OptionArgs, Workload};
use crate::errors::{bad_arg, err};
use harness::registry;
use malloc_muzero::train::{self, Limits, TrainConfig, Trainer};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Serialize;
use std::path::PathBuf;

/// A self-play worker of one run: `SelfPlayWorker(description, threads=1)` with the
/// bytes of `Learner.describe()`.
#[pyclass(module = "mallocmuzero._native")]
pub struct SelfPlayWorker {
    inner: train::SelfPlayWorker,
}

#[pymethods]
impl SelfPlayWorker {
    #[new]
    #[pyo3(signature = (description, threads = 1))]
    fn new(
        py: Python<'_>,
        description: &[u8],
        #[pyo3(from_py_with = named::threads)] threads: usize,
    ) -> PyResult<SelfPlayWorker> {
        let inner = py
            .detach(|| train::SelfPlayWorker::new(description, threads))
            .map_err(err)?;
        Ok(SelfPlayWorker { inner })
    }

    /// The version of the weights it holds (`None` before any).
    #[getter]
    fn weights_version(&self) -> Option<u64> {
        self.inner.weights_version()
    }

    /// Takes the weights `data` (`Learner.weights()`) as `version`.
    fn load_weights(
        &mut self,
        py: Python<'_>,
        version: &Bound<'_, PyAny>,
        data: &[u8],
    ) -> PyResult<()> {
        let version: u64 = uint(version, "version")?;
        let inner = &mut self.inner;
        py.detach(|| inner.load_weights(version, data)).map_err(err)
    }

    /// Plays the batch `order` (`Learner.order()`) with its weights (the GIL released);
    /// the games as bytes for `Learner.absorb`.
    fn play<'py>(&self, py: Python<'py>, order: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        let bytes = py.detach(|| inner.play(order)).map_err(err)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// The learner of a run and the owner of its folder (the same folder `mallocmuzero train`
/// writes: `train --resume` and `evaluate --checkpoint` work on it).
#[pyclass(module = "mallocmuzero._native")]
pub struct Learner {
    trainer: Trainer,
}

#[pymethods]
impl Learner {
    /// Starts a run in `out` (as `mallocmuzero train --out`): the case as `Game` takes it,
    /// `config` a training config as JSON text (`TrainConfig`'s fields), `seed` replacing
    /// its seed.
    #[staticmethod]
    #[pyo3(signature = (out, workload = None, hw = None, fast_capacity = None, *, config = None, seed = None, slots = None, order = None, fast_levels = None, reward = None))]
    #[allow(clippy::too_many_arguments)] // the command line's flags, as keyword arguments
    fn start(
        py: Python<'_>,
        out: PathBuf,
        workload: Option<Workload>,
        hw: Option<Hw>,
        fast_capacity: Option<&Bound<'_, PyAny>>,
        config: Option<&str>,
        seed: Option<&Bound<'_, PyAny>>,
        slots: Option<&Bound<'_, PyAny>>,
        order: Option<String>,
        fast_levels: Option<&Bound<'_, PyAny>>,
        reward: Option<String>,
    ) -> PyResult<Learner> {
        let seed: Option<u64> = opt_uint(seed, "seed")?;
        let options = OptionArgs::parse(slots, order, fast_levels, reward)?;
        let name = match &workload {
            Some(Workload::Named(s)) => s.clone(),
            Some(Workload::Built(p)) => p.inner.name().to_string(),
            None => "alexnet".to_string(),
        };
        let workload = workload.or(Some(Workload::Named(name.clone())));
        let mut config = parse_config(config)?.unwrap_or_default();
        if let Some(s) = seed {
            config.seed = s;
        }
        let setup = game_setup(py, workload, hw, fast_capacity, options)?;
        let known = registry::demonstrations();
        let trainer = py
            .detach(|| Trainer::start(setup, &name, config, &out, &known))
            .map_err(err)?;
        Ok(Learner { trainer })
    }

    /// Resumes the run in `out` from its newest checkpoint (as `train --resume`).
    #[staticmethod]
    #[pyo3(signature = (out, config = None))]
    fn resume(py: Python<'_>, out: PathBuf, config: Option<&str>) -> PyResult<Learner> {
        let config = parse_config(config)?;
        let known = registry::demonstrations();
        let trainer = py
            .detach(|| Trainer::resume(&out, config, &known))
            .map_err(err)?;
        Ok(Learner { trainer })
    }

    /// The run as a worker needs it (bytes for `SelfPlayWorker`).
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.trainer.describe().map_err(err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The network's weights now (safetensors bytes).
    fn weights<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let trainer = &self.trainer;
        let bytes = py.detach(|| trainer.weights()).map_err(err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The next work order for a worker (bytes).
    fn order<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.trainer.order().map_err(err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The demonstrations-only steps before the first self-play games (at most `steps`).
    #[pyo3(signature = (steps = None))]
    fn pretrain(&mut self, py: Python<'_>, steps: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let limits = limits(opt_uint(steps, "steps")?);
        let trainer = &mut self.trainer;
        py.detach(|| trainer.pretrain(&limits)).map_err(err)
    }

    /// One iteration from a worker's batch: the games enter the replay buffer, the learner
    /// trains to the run's ratio of steps per position (at most `steps` in all), the
    /// evaluation game, metrics and a due checkpoint. Returns the iteration's progress
    /// (a `metrics.jsonl` line) with the batch's `ticket`, `weights_version`, `games` and
    /// `batch_positions`.
    #[pyo3(signature = (batch, steps = None))]
    fn absorb(
        &mut self,
        py: Python<'_>,
        batch: &[u8],
        steps: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let limits = limits(opt_uint(steps, "steps")?);
        let trainer = &mut self.trainer;
        let (info, progress) = py
            .detach(|| trainer.absorb_batch(batch, &limits))
            .map_err(err)?;
        let mut v = serde_json::to_value(&progress).map_err(err)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("ticket".into(), info.ticket.into());
            m.insert("weights_version".into(), info.weights_version.into());
            m.insert("games".into(), info.games.into());
            m.insert("batch_positions".into(), info.positions.into());
        }
        to_python(py, &v)
    }

    /// Saves a checkpoint of the iterations completed (unless the newest has them).
    fn checkpoint(&mut self, py: Python<'_>) -> PyResult<()> {
        let trainer = &mut self.trainer;
        py.detach(|| trainer.checkpoint()).map_err(err)
    }

    /// Ends the session: a checkpoint and `best/summary.json`; returns the summary.
    #[pyo3(signature = (interrupted = false))]
    fn finish(
        &mut self,
        py: Python<'_>,
        #[pyo3(from_py_with = named::interrupted)] interrupted: bool,
    ) -> PyResult<Py<PyAny>> {
        let trainer = &mut self.trainer;
        let summary = py.detach(|| trainer.finish(interrupted)).map_err(err)?;
        to_python(py, &summary)
    }

    #[getter]
    fn iterations(&self) -> u64 {
        self.trainer.iterations()
    }
    #[getter]
    fn positions(&self) -> u64 {
        self.trainer.positions()
    }
    #[getter]
    fn train_steps(&self) -> u64 {
        self.trainer.train_steps()
    }
    /// The fastest simulated latency found so far (inf before any game ended).
    #[getter]
    fn best_latency_s(&self) -> f64 {
        self.trainer.best_latency_s()
    }
    #[getter]
    fn dir(&self) -> PathBuf {
        self.trainer.dir().to_path_buf()
    }
    #[getter]
    fn workload(&self) -> String {
        self.trainer.info().workload.clone()
    }
    /// The run's training config (JSON text).
    fn config_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.trainer.info().config).map_err(err)
    }
}

fn limits(steps: Option<u64>) -> Limits {
    Limits {
        minutes: None,
        steps,
        deadline: None,
    }
}

/// A training config from JSON text (`TrainConfig`'s fields over the defaults), its errors
/// naming `config`: the argument's name wherever the package takes one.
pub(crate) fn parse_config(text: Option<&str>) -> PyResult<Option<TrainConfig>> {
    text.map(|t| TrainConfig::from_json(t).map_err(|e| bad_arg(format!("config: {e}"))))
        .transpose()
}

/// A serializable value as Python objects (through JSON, as the command line prints it).
fn to_python(py: Python<'_>, v: &impl Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(v).map_err(err)?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}
