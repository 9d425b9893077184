//! Programs and hardware as Python objects.

use crate::args::{uint, uint_as};
use crate::errors::{bad_arg, err};
use accel_sim::{BufferKind, Hardware as HwInner, Program as ProgramInner};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::Arc;

/// An ML program: a fixed schedule of ops over buffers (a built-in workload, a file, a
/// window of either, or a traced torch module).
#[pyclass(module = "mallocmuzero._native", frozen)]
#[derive(Clone)]
pub struct Program {
    pub inner: Arc<ProgramInner>,
    /// How it was named (`resnet50`, a path, `resnet50@0..40`), or `None` when built in
    /// Python: a named program keeps the suite's defaults for its hardware.
    pub spec: Option<String>,
}

#[pymethods]
impl Program {
    /// A built-in workload by name or a program file (`.json`, `.csv`), optionally with a
    /// window of its ops: `resnet50@0..40`.
    #[staticmethod]
    fn load(py: Python<'_>, spec: &str) -> PyResult<Program> {
        let p = py.detach(|| bench_workloads::load(spec)).map_err(err)?;
        Ok(Program {
            inner: Arc::new(p),
            spec: Some(spec.to_string()),
        })
    }

    /// A program from the text of a program file (JSON); `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<json>"))]
    fn from_json(text: &str, origin: &str) -> PyResult<Program> {
        let p = bench_workloads::json::parse_program(text, origin).map_err(err)?;
        Ok(Program {
            inner: Arc::new(p),
            spec: None,
        })
    }

    /// A program from XLA's HLO text (scheduled, or before optimization); `origin` names
    /// it in errors, `weight_parameters` are the entry parameter numbers holding weights
    /// (the rest are inputs), `name` replaces the module's name and `description` opens
    /// the program's description. `mallocmuzero.trace_jax` calls it.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<hlo>", *, name = None, weight_parameters = Vec::new(), description = None))]
    fn from_hlo(
        py: Python<'_>,
        text: &str,
        origin: &str,
        name: Option<String>,
        weight_parameters: Vec<usize>,
        description: Option<String>,
    ) -> PyResult<Program> {
        let options = bench_workloads::hlo::Options {
            name,
            weight_parameters,
            description,
            max_ops: None,
        };
        let p = py
            .detach(|| bench_workloads::hlo::parse_program_with(text, origin, &options))
            .map_err(err)?;
        Ok(Program {
            inner: Arc::new(p),
            spec: None,
        })
    }

    /// The program file's text (JSON).
    fn to_json(&self) -> String {
        bench_workloads::json::to_json(&self.inner, None)
    }

    /// Its ops `start..end` alone; buffers crossing the edges become inputs and outputs.
    fn window(&self, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<Program> {
        let start: usize = uint(start, "start")?;
        let end: usize = uint(end, "end")?;
        if start >= end || end > self.inner.len() {
            return Err(bad_arg(format!(
                "window: ops {start}..{end} is not a non-empty range inside ops 0..{}",
                self.inner.len()
            )));
        }
        let p = self.inner.window(start..end).map_err(err)?;
        Ok(Program {
            inner: Arc::new(p),
            spec: self.spec.as_ref().map(|s| format!("{s}@{start}..{end}")),
        })
    }

    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }
    #[getter]
    fn num_ops(&self) -> usize {
        self.inner.len()
    }
    #[getter]
    fn num_buffers(&self) -> usize {
        self.inner.buffers().len()
    }
    #[getter]
    fn peak_live_bytes(&self) -> u64 {
        self.inner.peak_live_bytes()
    }
    #[getter]
    fn total_flops(&self) -> f64 {
        self.inner.total_flops()
    }
    /// A content hash: equal programs, equal hashes (run folders and saved games keep it).
    #[getter]
    fn content_hash(&self) -> u64 {
        self.inner.content_hash()
    }

    /// The buffers as columns: `size` (bytes), `start` and `end` (the ops of the live
    /// range, inclusive), `kind` (names) and `name`.
    fn buffers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = &self.inner;
        let n = p.buffers().len();
        let (mut size, mut start, mut end) = (Vec::with_capacity(n), Vec::new(), Vec::new());
        for (b, buf) in p.buffers().iter().enumerate() {
            let (s, e) = p.live_range(b);
            size.push(buf.size);
            start.push(s as u64);
            end.push(e as u64);
        }
        let d = PyDict::new(py);
        d.set_item("size", size.into_pyarray(py))?;
        d.set_item("start", start.into_pyarray(py))?;
        d.set_item("end", end.into_pyarray(py))?;
        let kinds: Vec<&str> = p.buffers().iter().map(|b| kind_name(b.kind)).collect();
        d.set_item("kind", kinds)?;
        let names: Vec<&str> = p.buffers().iter().map(|b| b.name.as_str()).collect();
        d.set_item("name", names)?;
        Ok(d)
    }

    /// Bytes live at each op (the memory pressure the mapping works against).
    fn live_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.inner.live_bytes().into_pyarray(py)
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Program({:?}, ops={}, buffers={})",
            self.inner.name(),
            self.inner.len(),
            self.inner.buffers().len()
        )
    }
}

fn kind_name(k: BufferKind) -> &'static str {
    k.as_str()
}

/// An accelerator's memory levels (level 0 the large slow one) and compute.
#[pyclass(module = "mallocmuzero._native", frozen)]
#[derive(Clone)]
pub struct Hardware {
    pub inner: HwInner,
}

#[pymethods]
impl Hardware {
    /// A preset (`hardware_presets()`) or a `.json`/`.toml` config file.
    #[staticmethod]
    fn load(spec: &str) -> PyResult<Hardware> {
        Ok(Hardware {
            inner: HwInner::by_name_or_file(spec).map_err(err)?,
        })
    }

    /// The same hardware with a capacity changed: bytes (an int, the fastest level), or a
    /// spec string: `16MiB` (the fastest level) or `1:16MiB` (level 1).
    fn with_fast_capacity(&self, capacity: &Bound<'_, PyAny>) -> PyResult<Hardware> {
        let spec = capacity_spec(capacity, "capacity")?;
        Ok(Hardware {
            inner: self.inner.clone().with_capacity_spec(&spec).map_err(err)?,
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The levels, slowest first: name, capacity (bytes; `None` for the unbounded level 0),
    /// read and write bandwidth (bytes/s), offset alignment.
    fn levels<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .levels
            .iter()
            .map(|l| {
                let d = PyDict::new(py);
                d.set_item("name", &l.name)?;
                // Level 0 is unbounded.
                d.set_item("capacity", (l.capacity != u64::MAX).then_some(l.capacity))?;
                d.set_item("read_bytes_per_s", l.read_bw)?;
                d.set_item("write_bytes_per_s", l.write_bw)?;
                d.set_item("alignment", l.alignment)?;
                Ok(d)
            })
            .collect()
    }

    /// The config file's text (JSON), which `Hardware.load` reads back.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.inner.to_file()).map_err(err)
    }

    fn __repr__(&self) -> String {
        let caps: Vec<String> = self.inner.levels[1..]
            .iter()
            .map(|l| accel_sim::format_size(l.capacity))
            .collect();
        format!("Hardware({:?}, fast={})", self.inner.name, caps.join("+"))
    }
}

/// A capacity given from Python (an int of bytes or a spec string) as the CLI's spec;
/// `name` is the parameter.
pub fn capacity_spec(capacity: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    if let Ok(spec) = capacity.cast::<PyString>() {
        return Ok(spec.to_string());
    }
    let expected = "bytes (an int) or a size such as `16MiB` or `1:16MiB`";
    uint_as::<u64>(capacity, name, expected).map(|bytes| bytes.to_string())
}

/// The built-in workloads' names.
#[pyfunction]
pub fn workloads() -> Vec<&'static str> {
    bench_workloads::names()
}

/// The hardware presets' names.
#[pyfunction]
pub fn hardware_presets() -> Vec<&'static str> {
    accel_sim::PRESETS.to_vec()
}
