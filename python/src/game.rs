//! The mallocGame from Python: one game (`Game`, OpenSpiel-style) and many stepped in one
//! call (`VecGame`, what a vectorised Gymnasium environment wraps).

use crate::args::{self, describe, shape_text, uint};
use crate::case::{game_setup, Hw, OptionArgs, Workload};
use crate::errors::{bad_arg, err, IllegalActionError};
use crate::program::{Hardware, Program};
use malloc_game::record::{GameRecord, SavedMove};
use malloc_game::{observation, Decision, Game as GameInner, GameSetup};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use rayon::prelude::*;
use std::sync::Arc;

/// One mallocGame: a decision per turn (where the current buffer's use goes: a level, an
/// offset slot, a prefetch or eviction), a reward per move (by default the change in the
/// simulated latency of the mapping so far; `reward="proxy"`: the paper's cost-model
/// rewards), and the simulator's latency at the end. `Game(workload, hw, fast_capacity)`
/// takes the command line's `--workload`, `--hw` and `--fast-capacity` (or a `Program` and
/// a `Hardware`).
#[pyclass(module = "mallocmuzero._native")]
#[derive(Clone)]
pub struct Game {
    pub inner: GameInner,
}

#[pymethods]
impl Game {
    #[new]
    #[pyo3(signature = (workload = None, hw = None, fast_capacity = None, *, slots = None, order = None, fast_levels = None, reward = None))]
    #[allow(clippy::too_many_arguments)] // the command line's flags, as keyword arguments
    fn new(
        py: Python<'_>,
        workload: Option<Workload>,
        hw: Option<Hw>,
        fast_capacity: Option<&Bound<'_, PyAny>>,
        slots: Option<&Bound<'_, PyAny>>,
        order: Option<String>,
        fast_levels: Option<&Bound<'_, PyAny>>,
        reward: Option<String>,
    ) -> PyResult<Game> {
        let options = OptionArgs::parse(slots, order, fast_levels, reward)?;
        let setup = game_setup(py, workload, hw, fast_capacity, options)?;
        Ok(Game {
            inner: setup.start(),
        })
    }

    /// The same game at its first turn.
    fn restart(&self) -> Game {
        Game {
            inner: self.inner.setup().start(),
        }
    }

    #[getter]
    fn action_count(&self) -> usize {
        self.inner.action_count()
    }
    #[getter]
    fn observation_len(&self) -> usize {
        observation::observation_len(self.inner.setup().options())
    }
    /// Turns played.
    #[getter]
    fn turn(&self) -> usize {
        self.inner.turn()
    }
    /// The most turns a game of this setup can take (a bound for episode lengths).
    #[getter]
    fn max_turns(&self) -> usize {
        self.inner.setup().max_turns()
    }
    fn is_terminal(&self) -> bool {
        self.inner.is_terminal()
    }

    /// The legal actions, ascending.
    fn legal_actions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .inner
            .legal_actions()
            .into_iter()
            .map(|a| a as i64)
            .collect();
        v.into_pyarray(py)
    }

    /// `mask[a]` is true when action `a` is legal (all false at the end).
    fn action_mask<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        let mut mask = vec![false; self.inner.action_count()];
        self.inner.legal_mask(&mut mask);
        mask.into_pyarray(py)
    }

    /// The agent's observation (float32, `observation_len` long).
    fn observation<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        self.inner.observation().into_pyarray(py)
    }

    /// Plays `action`; returns its reward (the cost model's latency saved, as a fraction of
    /// the all-slow latency). An illegal action raises `IllegalActionError` and changes
    /// nothing.
    fn apply_action(&mut self, action: &Bound<'_, PyAny>) -> PyResult<f64> {
        let action = args::action(action, "action", self.inner.action_count(), "")?;
        apply(&mut self.inner, action, None)
    }

    /// The rewards of the moves so far.
    fn rewards<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.rewards().into_pyarray(py)
    }
    /// The moves so far, as action numbers; -1 for a move given in full (a turn of a
    /// mapping's line that no numbered action makes: `play_mapping`).
    fn actions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .inner
            .actions()
            .into_iter()
            .map(|a| {
                if a == GameInner::MOVE_GIVEN {
                    -1
                } else {
                    a as i64
                }
            })
            .collect();
        v.into_pyarray(py)
    }

    /// The finished game that plays the mapping file at `path` exactly (its line: every
    /// valid mapping is one), on this game's program, hardware and options; what
    /// `mallocmuzero play --player mapping:FILE` plays. A mapping of another program or
    /// hardware raises `mallocmuzero.Error` naming the file.
    fn play_mapping(&self, path: std::path::PathBuf) -> PyResult<Game> {
        let line = harness::evaluate::mapping_line(&path, self.inner.setup()).map_err(err)?;
        Ok(Game { inner: line })
    }
    fn total_return(&self) -> f64 {
        self.inner.total_return()
    }
    /// The cost model's latency of the moves so far (seconds).
    fn proxy_latency(&self) -> f64 {
        self.inner.proxy_latency()
    }
    /// The simulated latency of the mapping so far (seconds; uses not decided yet read
    /// level 0), kept up to date turn by turn.
    fn simulated_latency(&self) -> f64 {
        self.inner.simulated_latency()
    }
    /// What the rewards measure: "simulated" or "proxy".
    #[getter]
    fn reward_kind(&self) -> &'static str {
        self.inner.setup().options().reward.as_str()
    }
    /// The simulator's latency of the finished mapping (seconds); `None` before the end.
    fn final_latency(&self) -> Option<f64> {
        self.inner.final_latency()
    }
    /// The simulated latency of the all-slow mapping (seconds), the game's scale.
    fn all_slow_latency(&self) -> f64 {
        self.inner.setup().all_slow_latency()
    }
    /// A move in words (`fast slot 2`, `prefetch ...`).
    fn action_name(&self, action: &Bound<'_, PyAny>) -> PyResult<String> {
        let action: usize = uint(action, "action")?;
        if action >= self.inner.action_count() {
            return Err(bad_arg(format!(
                "action {action}: the game has actions 0..{}",
                self.inner.action_count()
            )));
        }
        Ok(self.inner.setup().action_name(action))
    }

    /// The mapping so far as a mapping file (JSON), what `evaluate --mapping` reads.
    fn mapping_json(&self) -> PyResult<String> {
        let setup = self.inner.setup();
        let file = accel_sim::MappingFile::from_mapping(setup.program(), &self.inner.mapping());
        serde_json::to_string_pretty(&file).map_err(err)
    }

    #[getter]
    fn program(&self) -> Program {
        Program {
            inner: Arc::clone(self.inner.setup().program_arc()),
            spec: None,
        }
    }
    #[getter]
    fn hardware(&self) -> Hardware {
        Hardware {
            inner: self.inner.setup().hardware().clone(),
        }
    }

    /// Saves the finished game (what `mallocmuzero replay` reads), atomically.
    #[pyo3(signature = (path, player = "python", seed = 0))]
    fn save(
        &self,
        path: std::path::PathBuf,
        player: &str,
        #[pyo3(from_py_with = args::named::seed)] seed: u64,
    ) -> PyResult<()> {
        let record = GameRecord::from_game(&self.inner, player, seed, None).map_err(err)?;
        record.save(&path).map_err(err)
    }

    fn clone(&self) -> Game {
        Clone::clone(self)
    }
    fn __copy__(&self) -> Game {
        Clone::clone(self)
    }
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Game {
        Clone::clone(self)
    }

    /// Pickles as its setup (program, hardware, options) and its moves, replayed on load.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let state = encode_state(&slf.borrow().inner)?;
        let rebuild = py.get_type::<Game>().getattr("_from_state")?;
        (rebuild, (state,)).into_pyobject(py)
    }

    #[staticmethod]
    fn _from_state(state: &str) -> PyResult<Game> {
        decode_state(state).map(|inner| Game { inner })
    }

    fn __repr__(&self) -> String {
        let s = self.inner.setup();
        format!(
            "Game({:?} on {:?}, turn {}, {})",
            s.program().name(),
            s.hardware().name,
            self.inner.turn(),
            if self.inner.is_terminal() {
                "ended"
            } else {
                "running"
            }
        )
    }
}

/// Plays `action` on `game`, refusing an illegal one; `env` names the game of a batch.
fn apply(game: &mut GameInner, action: usize, env: Option<usize>) -> PyResult<f64> {
    let which = env.map_or(String::new(), |i| format!("env {i}: "));
    if !game.is_legal(action) {
        let why = if game.is_terminal() {
            "the game has ended (reset it)".to_string()
        } else {
            format!(
                "not legal at turn {} (legal: {:?})",
                game.turn(),
                game.legal_actions()
            )
        };
        return Err(IllegalActionError::new_err(format!(
            "{which}action {action}: {why}"
        )));
    }
    game.apply_action(action)
        .map_err(|e| IllegalActionError::new_err(format!("{which}action {action}: {e}")))
}

/// A game as JSON text: the program, hardware and options, and the moves.
fn encode_state(game: &GameInner) -> PyResult<String> {
    let s = game.setup();
    let state = serde_json::json!({
        "program": bench_workloads::json::to_json(s.program(), None),
        "hardware": s.hardware().to_file(),
        "options": s.options(),
        "actions": game.actions(),
        "moves": given_moves(game),
    });
    Ok(state.to_string())
}

fn decode_state(text: &str) -> PyResult<GameInner> {
    let bad = |m: String| bad_arg(format!("pickled game: {m}"));
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let field = |k: &str| v.get(k).cloned().ok_or_else(|| bad(format!("no `{k}`")));
    let program_text: String =
        serde_json::from_value(field("program")?).map_err(|e| bad(e.to_string()))?;
    let program =
        bench_workloads::json::parse_program(&program_text, "pickled game").map_err(err)?;
    let hw_file: accel_sim::HardwareFile =
        serde_json::from_value(field("hardware")?).map_err(|e| bad(e.to_string()))?;
    let hw = hw_file.into_hardware("pickled game: ").map_err(err)?;
    let options = serde_json::from_value(field("options")?).map_err(|e| bad(e.to_string()))?;
    let actions: Vec<usize> =
        serde_json::from_value(field("actions")?).map_err(|e| bad(e.to_string()))?;
    let moves: Vec<SavedMove> = match v.get("moves") {
        Some(m) => serde_json::from_value(m.clone()).map_err(|e| bad(e.to_string()))?,
        None => Vec::new(),
    };
    let setup = GameSetup::new(Arc::new(program), hw, options).map_err(err)?;
    let mut game = setup.start();
    let mut moves = moves.iter();
    for a in actions {
        if a != GameInner::MOVE_GIVEN {
            apply(&mut game, a, None)?;
            continue;
        }
        let m = moves
            .next()
            .and_then(SavedMove::to_move)
            .ok_or_else(|| bad("a move given in full is missing".into()))?;
        game.apply_move(m)
            .map_err(|e| IllegalActionError::new_err(e.to_string()))?;
    }
    Ok(game)
}

/// The moves given in full of `game`, by turn.
fn given_moves(game: &GameInner) -> Vec<SavedMove> {
    game.decisions()
        .iter()
        .enumerate()
        .filter_map(|(t, d)| match d {
            Decision::Move(m) => Some(SavedMove::of(t, m)),
            Decision::Action(_) => None,
        })
        .collect()
}

/// `num_envs` games of one setup stepped together in Rust: one call steps them all and
/// returns numpy arrays. A game that ends is restarted in the same step (its final
/// observation and latency come back beside the new game's first observation).
#[pyclass(module = "mallocmuzero._native")]
pub struct VecGame {
    games: Vec<GameInner>,
    setup: Arc<GameSetup>,
}

/// Observations `[n, obs_len]` and legal masks `[n, actions]`.
type ObsAndMasks<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<bool>>);

/// What one step of a `VecGame` returns, before it becomes numpy arrays.
struct Stepped {
    obs: Vec<f32>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    masks: Vec<bool>,
    final_latency: Vec<f64>,
    final_obs: Vec<f32>,
}

#[pymethods]
impl VecGame {
    #[new]
    #[pyo3(signature = (num_envs, workload = None, hw = None, fast_capacity = None, *, slots = None, order = None, fast_levels = None, reward = None))]
    #[allow(clippy::too_many_arguments)] // the Python signature: Game's and a count
    fn new(
        py: Python<'_>,
        num_envs: &Bound<'_, PyAny>,
        workload: Option<Workload>,
        hw: Option<Hw>,
        fast_capacity: Option<&Bound<'_, PyAny>>,
        slots: Option<&Bound<'_, PyAny>>,
        order: Option<String>,
        fast_levels: Option<&Bound<'_, PyAny>>,
        reward: Option<String>,
    ) -> PyResult<VecGame> {
        let num_envs: usize = uint(num_envs, "num_envs")?;
        if num_envs == 0 || num_envs > 1 << 16 {
            return Err(bad_arg(format!(
                "num_envs: must be in 1..=65536, got {num_envs}"
            )));
        }
        let options = OptionArgs::parse(slots, order, fast_levels, reward)?;
        let setup = game_setup(py, workload, hw, fast_capacity, options)?;
        Ok(VecGame {
            games: (0..num_envs).map(|_| setup.start()).collect(),
            setup,
        })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.games.len()
    }
    #[getter]
    fn action_count(&self) -> usize {
        self.setup.action_count()
    }
    #[getter]
    fn observation_len(&self) -> usize {
        observation::observation_len(self.setup.options())
    }
    #[getter]
    fn max_turns(&self) -> usize {
        self.setup.max_turns()
    }

    /// Restarts every game: `(observations [n, obs_len], masks [n, actions])`.
    fn reset<'py>(&mut self, py: Python<'py>) -> PyResult<ObsAndMasks<'py>> {
        let (obs, masks) = py.detach(|| {
            for g in &mut self.games {
                *g = self.setup.start();
            }
            (self.observations(), self.masks())
        });
        Ok((self.rows(py, obs)?, self.rows(py, masks)?))
    }

    /// Plays `actions[i]` in game `i` (all legal, else `IllegalActionError` and no game
    /// moves); `actions` is an integer array of shape `(num_envs,)` or a list of ints.
    /// Returns `(observations, rewards, terminated, masks, final_latency,
    /// final_observations)`: `final_latency[i]` is the simulated latency of game `i` if it
    /// ended in this step (it restarted; `final_observations[i]` is its last observation),
    /// else NaN.
    #[allow(clippy::type_complexity)] // one tuple of arrays, as Gymnasium's step returns
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, PyArray2<f32>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray2<bool>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray2<f32>>,
    )> {
        let actions = self.actions_of(actions)?;
        let s = py.detach(|| self.step_all(&actions))?;
        Ok((
            self.rows(py, s.obs)?,
            s.rewards.into_pyarray(py),
            s.terminated.into_pyarray(py),
            self.rows(py, s.masks)?,
            s.final_latency.into_pyarray(py),
            self.rows(py, s.final_obs)?,
        ))
    }

    /// The legal-action masks `[n, actions]`.
    fn action_masks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<bool>>> {
        self.rows(py, self.masks())
    }

    /// Game `i` (a copy).
    fn game(&self, i: &Bound<'_, PyAny>) -> PyResult<Game> {
        let i: usize = uint(i, "i")?;
        self.games
            .get(i)
            .map(|g| Game { inner: g.clone() })
            .ok_or_else(|| {
                bad_arg(format!(
                    "i: game {i} is out of range: there are {} games",
                    self.games.len()
                ))
            })
    }
}

impl VecGame {
    /// One action per game from Python, each an integer in range (else a `TypeError`
    /// naming `actions[i]`, or an `IllegalActionError` naming the game): an integer array
    /// of shape `(num_envs,)`, a list or tuple of ints, or anything numpy makes into one.
    /// Nothing is cast: `np.asarray(actions, dtype=np.int64)` would play 2.9 as 2.
    fn actions_of(&self, ob: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let (n, count) = (self.games.len(), self.setup.action_count());
        let one = |i: usize, x: &Bound<'_, PyAny>| {
            args::action(x, &format!("actions[{i}]"), count, &format!("env {i}: "))
        };
        if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            let len = ob.len()?;
            if len != n {
                return Err(bad_arg(format!(
                    "actions: {len} actions for {n} games (one per game)"
                )));
            }
            return (0..n).map(|i| one(i, &ob.get_item(i)?)).collect();
        }
        if ob.is_instance_of::<PyString>()
            || ob.is_instance_of::<PyBytes>()
            || !ob.hasattr("__len__")?
        {
            return Err(PyTypeError::new_err(format!(
                "actions: expected {n} integer actions (a list or an integer array of shape ({n},)), got {}",
                describe(ob)
            )));
        }
        let array = match ob.cast::<PyUntypedArray>() {
            Ok(a) => a.clone(),
            Err(_) => ob
                .py()
                .import("numpy")?
                .call_method1("asarray", (ob,))?
                .cast_into::<PyUntypedArray>()?,
        };
        let dtype = array.dtype();
        if !matches!(dtype.kind(), b'i' | b'u' | b'O') {
            return Err(PyTypeError::new_err(format!(
                "actions: expected integer actions, got an array of {dtype}"
            )));
        }
        if array.shape() != [n] {
            return Err(bad_arg(format!(
                "actions: expected shape ({n},), one action per game, got shape {}",
                shape_text(array.shape())
            )));
        }
        if let Ok(a) = array.cast::<PyArray1<i64>>() {
            let a = a.readonly();
            let a = a.as_array();
            return a
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    usize::try_from(x)
                        .ok()
                        .filter(|&x| x < count)
                        .ok_or_else(|| {
                            args::out_of_range(&format!("env {i}: "), &x.to_string(), count)
                        })
                })
                .collect();
        }
        // Narrower integer dtypes, uint64 and object arrays: element by element, each
        // checked as a Python int.
        let list = array.call_method0("tolist")?;
        (0..n).map(|i| one(i, &list.get_item(i)?)).collect()
    }

    fn step_all(&mut self, actions: &[usize]) -> PyResult<Stepped> {
        for (i, (g, &a)) in self.games.iter().zip(actions).enumerate() {
            if !g.is_legal(a) {
                let mut probe = g.clone();
                return Err(apply(&mut probe, a, Some(i)).err().unwrap_or_else(|| {
                    IllegalActionError::new_err(format!("env {i}: action {a}: not legal"))
                }));
            }
        }
        let (n, len, a) = (self.games.len(), self.obs_len(), self.setup.action_count());
        let mut s = Stepped {
            obs: vec![0.0; n * len],
            rewards: vec![0.0; n],
            terminated: vec![false; n],
            masks: vec![false; n * a],
            final_latency: vec![f64::NAN; n],
            final_obs: vec![0.0; n * len],
        };
        let setup = &self.setup;
        // The games are independent: rayon steps them on every core (a few per task, so a
        // small batch is not all overhead).
        self.games
            .par_iter_mut()
            .zip(actions.par_iter())
            .zip(s.obs.par_chunks_mut(len))
            .zip(s.final_obs.par_chunks_mut(len))
            .zip(s.masks.par_chunks_mut(a))
            .zip(s.rewards.par_iter_mut())
            .zip(s.terminated.par_iter_mut())
            .zip(s.final_latency.par_iter_mut())
            .enumerate()
            .with_min_len(8)
            .try_for_each(
                |(i, (((((((g, &action), obs), final_obs), mask), reward), ended), latency))| {
                    *reward = apply(g, action, Some(i))?;
                    *ended = g.is_terminal();
                    if *ended {
                        *latency = g.final_latency().unwrap_or(f64::NAN);
                        observation::encode(g, final_obs);
                        *g = setup.start();
                    }
                    observation::encode(g, obs);
                    g.legal_mask(mask);
                    Ok::<(), PyErr>(())
                },
            )?;
        Ok(s)
    }

    fn obs_len(&self) -> usize {
        observation::observation_len(self.setup.options())
    }

    fn observations(&self) -> Vec<f32> {
        let len = self.obs_len();
        let mut obs = vec![0f32; self.games.len() * len];
        for (g, out) in self.games.iter().zip(obs.chunks_mut(len)) {
            observation::encode(g, out);
        }
        obs
    }

    fn masks(&self) -> Vec<bool> {
        let a = self.setup.action_count();
        let mut masks = vec![false; self.games.len() * a];
        for (g, out) in self.games.iter().zip(masks.chunks_mut(a)) {
            g.legal_mask(out);
        }
        masks
    }

    fn rows<'py, T: numpy::Element>(
        &self,
        py: Python<'py>,
        v: Vec<T>,
    ) -> PyResult<Bound<'py, PyArray2<T>>> {
        reshape(py, v.into_pyarray(py), self.games.len())
    }
}

/// A flat array as `rows` rows, without a copy.
fn reshape<'py, T: numpy::Element>(
    _py: Python<'py>,
    flat: Bound<'py, PyArray1<T>>,
    rows: usize,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    use numpy::{PyArrayMethods, PyUntypedArrayMethods};
    let cols = PyUntypedArrayMethods::len(&flat) / rows.max(1);
    flat.reshape([rows, cols])
}
