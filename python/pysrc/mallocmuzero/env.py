"""The mallocGame as Gymnasium environments.

``gymnasium.make("mallocmuzero/MallocGame-v0", workload="alexnet", hw=None,
fast_capacity=None)`` (after ``import mallocmuzero``): one buffer-use decision per step.

- Actions: ``Discrete(action_count)``. Which are legal depends on the state: each step's
  ``info["action_mask"]`` and ``env.action_masks()`` (what sb3-contrib's MaskablePPO reads)
  give them. **An illegal action raises ``mallocmuzero.IllegalActionError``** (a
  ``ValueError``) and leaves the game as it was; it is never silently replaced. An action
  is an ``int`` or a numpy integer (a 0-d integer array too); anything else (a float, a
  string, a bool) raises ``TypeError`` rather than being rounded into some action.
  ``action_space.sample()`` without a mask draws a legal action of the current state
  (``sample(mask=...)`` uses the mask given).
- Observations: ``Box(-inf, inf, (observation_len,), float32)``, the agent's features
  (docs/mallocgame.md).
- Rewards: the cost model's latency saved by the move, a fraction of the all-slow latency;
  an episode's return is the cost model's speedup over all-slow. At the end
  ``info["latency_s"]`` is the simulator's latency of the mapping.
- ``reset(seed=...)``: the game itself has no randomness; the seed seeds the action space.

``MallocGameVectorEnv`` (``mallocmuzero/MallocGame-v0`` through
``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``) steps ``num_envs``
games in Rust in one call, restarting a game in the step it ends (``AutoresetMode.SAME_STEP``:
its last observation is ``infos["final_obs"]``, its latency ``infos["latency_s"]``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from mallocmuzero._native import Game, VecGame

ENV_ID = "mallocmuzero/MallocGame-v0"


class LegalDiscrete(spaces.Discrete):
    """``Discrete(n)`` whose ``sample()`` without a mask draws among the actions legal now."""

    def __init__(self, n: int, legal_mask, seed=None):
        super().__init__(n, seed=seed)
        self._legal_mask = legal_mask

    def sample(self, mask=None, probability=None):
        if mask is None and probability is None:
            legal = self._legal_mask()
            if legal is not None and legal.any():
                mask = legal.astype(np.int8)
        return super().sample(mask=mask, probability=probability)


def _no_render(render_mode) -> None:
    if render_mode is not None:
        raise ValueError("render_mode: MallocGame-v0 has no render modes (see SavedGame)")


def _observation_space(length: int) -> spaces.Box:
    return spaces.Box(low=-np.inf, high=np.inf, shape=(length,), dtype=np.float32)


class MallocGameEnv(gym.Env):
    """One mallocGame (see the module's documentation)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        workload="alexnet",
        hw=None,
        fast_capacity=None,
        *,
        slots=None,
        order=None,
        fast_levels=None,
        reward=None,
        render_mode=None,
    ):
        _no_render(render_mode)
        self._start = Game(
            workload, hw, fast_capacity, slots=slots, order=order, fast_levels=fast_levels,
            reward=reward,
        )
        self._game = self._start.clone()
        self.action_space = LegalDiscrete(self._start.action_count, self.action_masks)
        self.observation_space = _observation_space(self._start.observation_len)

    @property
    def game(self) -> Game:
        """A copy of the game being played (its moves, rewards, mapping)."""
        return self._game.clone()

    def action_masks(self) -> np.ndarray:
        """The legal actions of the current state, as booleans (MaskablePPO's hook)."""
        return self._game.action_mask()

    def _info(self) -> dict:
        info = {"action_mask": self._game.action_mask()}
        latency = self._game.final_latency()
        if latency is not None:
            info["latency_s"] = latency
            info["all_slow_latency_s"] = self._game.all_slow_latency()
        return info

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        self._game = self._start.restart()
        return self._game.observation(), self._info()

    def step(self, action):
        # Passed as given: int() would play 2.9 as 2 and "14" as 14; the game takes
        # integers only.
        reward = self._game.apply_action(action)
        terminated = self._game.is_terminal()
        return self._game.observation(), float(reward), terminated, False, self._info()


class MallocGameVectorEnv(VectorEnv):
    """``num_envs`` mallocGames stepped together in Rust (see the module's documentation)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        workload="alexnet",
        hw=None,
        fast_capacity=None,
        *,
        slots=None,
        order=None,
        fast_levels=None,
        reward=None,
        render_mode=None,
    ):
        _no_render(render_mode)
        self._games = VecGame(
            num_envs, workload, hw, fast_capacity, slots=slots, order=order, fast_levels=fast_levels,
            reward=reward,
        )
        self.num_envs = num_envs
        self.single_action_space = spaces.Discrete(self._games.action_count)
        self.single_observation_space = _observation_space(self._games.observation_len)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self._masks = self._games.action_masks()

    def action_masks(self) -> np.ndarray:
        """``[num_envs, actions]``: the legal actions of each game now."""
        return self._masks.copy()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        obs, self._masks = self._games.reset()
        return obs, {"action_mask": self._masks.copy()}

    def step(self, actions):
        # Passed as given (an integer array of shape (num_envs,) or a list of ints): a cast
        # to int64 would play 2.9 as 2, a reshape would take any shape of the right size.
        obs, rewards, terminated, masks, latency, final_obs = self._games.step(actions)
        self._masks = masks
        infos = {"action_mask": masks.copy()}
        if terminated.any():
            infos["latency_s"] = latency
            infos["_latency_s"] = terminated.copy()
            infos["final_obs"] = final_obs
            infos["_final_obs"] = terminated.copy()
        truncated = np.zeros(self.num_envs, dtype=bool)
        return obs, rewards.astype(np.float64), terminated, truncated, infos


def register_envs() -> None:
    """Registers ``mallocmuzero/MallocGame-v0`` (single and vectorised) with Gymnasium."""
    if ENV_ID in gym.registry:
        return
    gym.register(
        id=ENV_ID,
        entry_point="mallocmuzero.env:MallocGameEnv",
        vector_entry_point="mallocmuzero.env:MallocGameVectorEnv",
        disable_env_checker=False,
    )
