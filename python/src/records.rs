//! Saved games (`.game` files, `mallocmuzero play --save`, a run's `best/` and `games/`):
//! load, replay with every reward verified, render.

use crate::errors::{bad_arg, err};
use crate::game::Game;
use crate::program::Program;
use accel_sim::Simulator;
use malloc_game::record::GameRecord;
use malloc_game::render::{self, MapLegend};
use malloc_game::viewer::{self, GameView, ViewLimits};
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A saved game. `SavedGame.load(path)`; `replay()` plays its moves again and checks every
/// reward and the final latency.
#[pyclass(module = "mallocmuzero._native", frozen)]
pub struct SavedGame {
    record: GameRecord,
    path: PathBuf,
}

#[pymethods]
impl SavedGame {
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<SavedGame> {
        let record = GameRecord::load(&path).map_err(err)?;
        Ok(SavedGame { record, path })
    }

    #[getter]
    fn workload(&self) -> &str {
        &self.record.workload
    }
    #[getter]
    fn player(&self) -> &str {
        &self.record.player
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.record.seed
    }
    #[getter]
    fn final_latency_s(&self) -> f64 {
        self.record.final_latency_s
    }
    #[getter]
    fn all_slow_latency_s(&self) -> f64 {
        self.record.all_slow_latency_s
    }
    fn actions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.record.actions.clone().into_pyarray(py)
    }
    fn rewards<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.record.rewards.clone().into_pyarray(py)
    }

    /// The search's visit counts per turn `[turns, actions]` (a searching player's game),
    /// else `None`.
    fn visits<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<u32>>>> {
        let Some(search) = &self.record.search else {
            return Ok(None);
        };
        let rows: Vec<Vec<u32>> = search.iter().map(|s| s.visits.clone()).collect();
        Ok(Some(
            PyArray2::from_vec2(py, &rows).map_err(|e| bad_arg(e.to_string()))?,
        ))
    }

    /// Replays the moves on `program` (default: the program of the run folder the game
    /// was saved in, else the built-in workload it names) and checks every reward and the
    /// final latency. Returns `{"game": Game, "latency_s", "return", "turns": [{"buffer",
    /// "action", "action_name", "reward", "proxy_latency_s"}, ...]}`.
    #[pyo3(signature = (program = None))]
    fn replay<'py>(
        &self,
        py: Python<'py>,
        program: Option<Bound<'py, Program>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let program = self.program(program.map(|p| p.get().clone()))?;
        let replay = py
            .detach(|| self.record.replay(program))
            .map_err(|e| bad_arg(format!("{}: {}", self.path.display(), e)))?;
        let d = PyDict::new(py);
        d.set_item("latency_s", replay.game.final_latency())?;
        d.set_item("return", replay.game.total_return())?;
        let turns: Vec<Bound<'py, PyDict>> = replay
            .turns
            .iter()
            .map(|t| {
                let row = PyDict::new(py);
                row.set_item("buffer", &t.buffer)?;
                row.set_item("action", t.action)?;
                row.set_item("action_name", &t.action_name)?;
                row.set_item("reward", t.reward)?;
                row.set_item("proxy_latency_s", t.proxy_latency_s)?;
                Ok(row)
            })
            .collect::<PyResult<_>>()?;
        d.set_item("turns", turns)?;
        d.set_item("game", Game { inner: replay.game })?;
        Ok(d)
    }

    /// The replayed mapping's memory map (SVG text), as `mallocmuzero replay --render`.
    #[pyo3(signature = (program = None))]
    fn render_svg(&self, py: Python<'_>, program: Option<Bound<'_, Program>>) -> PyResult<String> {
        let (program, game) = self.replayed(py, program.map(|p| p.get().clone()))?;
        let hw = game.setup().hardware();
        let legend = self.legend(&program, &game);
        Ok(render::memory_map_svg(
            &program,
            hw,
            &game.mapping(),
            &legend,
        ))
    }

    /// The replayed mapping's simulated timeline (SVG text), as `replay --timeline`.
    #[pyo3(signature = (program = None))]
    fn timeline_svg(
        &self,
        py: Python<'_>,
        program: Option<Bound<'_, Program>>,
    ) -> PyResult<String> {
        let (program, game) = self.replayed(py, program.map(|p| p.get().clone()))?;
        let hw = game.setup().hardware();
        let report = py.detach(|| Simulator::new(&program, hw).run(&game.mapping(), true));
        let legend = self.legend(&program, &game);
        Ok(render::timeline_svg(&program, &report, &legend))
    }

    /// The game viewer (one self-contained HTML page, as `replay --html`): the game turn
    /// by turn, or, with `compare` (another saved game of the same program, hardware and
    /// game options), this game against that one. `program` as for `replay`.
    #[pyo3(signature = (compare = None, program = None))]
    fn viewer_html(
        &self,
        py: Python<'_>,
        compare: Option<Bound<'_, SavedGame>>,
        program: Option<Bound<'_, Program>>,
    ) -> PyResult<String> {
        let (program, game) = self.replayed(py, program.map(|p| p.get().clone()))?;
        let limits = ViewLimits::default();
        let view = |record: &GameRecord, game: &malloc_game::Game| {
            GameView::of(
                game,
                &record.player,
                record.seed,
                record.search.as_deref(),
                &limits,
            )
        };
        let a = py.detach(|| view(&self.record, &game));
        let Some(other) = compare else {
            return Ok(viewer::game_html(&a));
        };
        let other = other.get();
        let replay = py
            .detach(|| other.record.replay(Arc::clone(&program)))
            .map_err(|e| bad_arg(format!("compare {}: {e}", other.path.display())))?;
        let b = py.detach(|| view(&other.record, &replay.game));
        viewer::compare_html(&a, &b).map_err(|e| {
            bad_arg(format!(
                "compare {}: cannot compare with {}: {e}",
                other.path.display(),
                self.path.display()
            ))
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "SavedGame({:?}, player {:?}, {} turns, {:.2} us)",
            self.record.workload,
            self.record.player,
            self.record.actions.len(),
            self.record.final_latency_s * 1e6
        )
    }
}

impl SavedGame {
    /// The program to replay on: the one given, else the run folder's (`RUN/best/x.game`,
    /// `RUN/games/x.game`), else the built-in the record names.
    fn program(&self, given: Option<Program>) -> PyResult<Arc<accel_sim::Program>> {
        if let Some(p) = given {
            return Ok(p.inner);
        }
        let run_dir = self.path.parent().and_then(Path::parent);
        if let Some(dir) = run_dir.filter(|d| d.join("run.json").is_file()) {
            let info = malloc_muzero::train::read_run_info(dir).map_err(err)?;
            return Ok(Arc::new(info.load_program(dir).map_err(err)?));
        }
        if !bench_workloads::is_builtin(&self.record.workload) {
            return Err(bad_arg(format!(
                "{}: the game was played on `{}`, which is not a built-in workload: pass its program",
                self.path.display(),
                self.record.workload
            )));
        }
        Ok(Arc::new(
            bench_workloads::load(&self.record.workload).map_err(err)?,
        ))
    }

    fn replayed(
        &self,
        py: Python<'_>,
        program: Option<Program>,
    ) -> PyResult<(Arc<accel_sim::Program>, malloc_game::Game)> {
        let program = self.program(program)?;
        let replay = py
            .detach(|| self.record.replay(Arc::clone(&program)))
            .map_err(|e| bad_arg(format!("{}: {}", self.path.display(), e)))?;
        Ok((program, replay.game))
    }

    fn legend(&self, program: &accel_sim::Program, game: &malloc_game::Game) -> MapLegend {
        MapLegend {
            workload: program.name().to_string(),
            hardware: game.setup().hardware().name.clone(),
            solver: self.record.player.clone(),
            latency_s: game.final_latency(),
        }
    }
}
