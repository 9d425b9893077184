"""MaskablePPO (sb3-contrib) on the mallocGame, against the xla baseline.

    pip install ./python sb3-contrib==2.9.2 gymnasium==1.4.0
    python python/examples/maskable_ppo.py --workload alexnet --minutes 3

Trains for the given wall-clock minutes on `mallocmuzero/MallocGame-v0` (action masks from
`env.action_masks()`), then plays the policy deterministically and reports the simulated
latency of its mapping, and of the best mapping any training episode reached, against xla's
(`mallocmuzero.evaluate`). An example, not a test dependency.
"""

import argparse
import json
import time

import gymnasium as gym
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

import mallocmuzero as mmz
from mallocmuzero.env import ENV_ID


class Budget(BaseCallback):
    """Stops at the deadline and keeps the fastest finished episode's latency."""

    def __init__(self, seconds: float):
        super().__init__()
        self.deadline = time.monotonic() + seconds
        self.best = float("inf")
        self.episodes = 0

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "latency_s" in info:
                self.episodes += 1
                self.best = min(self.best, info["latency_s"])
        return time.monotonic() < self.deadline


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="alexnet")
    p.add_argument("--hw", default=None)
    p.add_argument("--fast-capacity", default=None)
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    case = dict(workload=a.workload, hw=a.hw, fast_capacity=a.fast_capacity)
    env = gym.make(ENV_ID, **case)
    model = MaskablePPO("MlpPolicy", env, seed=a.seed, n_steps=512, batch_size=64, verbose=0, device="cpu")
    budget = Budget(a.minutes * 60)
    t0 = time.monotonic()
    model.learn(total_timesteps=10**9, callback=budget)
    trained_s = time.monotonic() - t0
    obs, info = env.reset(seed=a.seed)
    while True:
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
        obs, _, terminated, _, info = env.step(int(action))
        if terminated:
            break
    rows = mmz.evaluate(a.workload, ["xla", "greedy-size"], a.hw, a.fast_capacity)
    xla = next(r for r in rows if r["solver"] == "xla")["latency_s"]
    greedy_size = next(r for r in rows if r["solver"] == "greedy-size")["latency_s"]
    result = {
        "workload": a.workload,
        "minutes": trained_s / 60,
        "timesteps": model.num_timesteps,
        "episodes": budget.episodes,
        "policy_latency_s": info["latency_s"],
        "best_episode_latency_s": budget.best,
        "xla_latency_s": xla,
        "greedy_size_latency_s": greedy_size,
        "policy_speedup_vs_xla": xla / info["latency_s"],
        "best_episode_speedup_vs_xla": xla / budget.best,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
