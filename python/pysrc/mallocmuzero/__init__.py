"""mallocmuzero: learned memory mapping of ML programs, from Python.

The Rust workspace's libraries as a Python package: programs (``Program``), hardware
(``Hardware``), the solvers (``evaluate``: the rows of ``mallocmuzero evaluate --json``;
``race``: ``mallocmuzero race``'s results, into a folder it resumes),
saved games (``SavedGame``), the mallocGame (``Game``, ``VecGame``), and training split for
a cluster (``Learner``, ``SelfPlayWorker``; ``python -m mallocmuzero.ray_train``). With
Gymnasium installed, importing the package registers ``mallocmuzero/MallocGame-v0``
(``mallocmuzero.env``). ``trace`` turns a torch module into a ``Program`` (torch optional), ``trace_jax``
a jitted JAX function (inference or a training step; jax optional).
"""

from mallocmuzero._native import (
    RULES_VERSION,
    Error,
    Game,
    Hardware,
    IllegalActionError,
    Learner,
    Program,
    SavedGame,
    SelfPlayWorker,
    VecGame,
    evaluate,
    hardware_presets,
    race,
    race_solver_names,
    solver_names,
    workloads,
)
from mallocmuzero.trace import trace
from mallocmuzero.viewer import show
from mallocmuzero.trace_jax import trace_jax, trace_jax_to_dict

__all__ = [
    "RULES_VERSION",
    "Error",
    "Game",
    "Hardware",
    "IllegalActionError",
    "Learner",
    "Program",
    "SavedGame",
    "SelfPlayWorker",
    "VecGame",
    "evaluate",
    "hardware_presets",
    "race",
    "race_solver_names",
    "solver_names",
    "show",
    "trace",
    "trace_jax",
    "trace_jax_to_dict",
    "workloads",
]

try:  # Gymnasium is optional: the environments register only where it is installed.
    from mallocmuzero.env import register_envs as _register_envs
except ImportError:
    pass
else:
    _register_envs()
