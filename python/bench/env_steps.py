"""Steps per second of the mallocGame from Python against the Rust game itself.

    python python/bench/env_steps.py [--workload resnet50] [--seconds 5] [--num-envs 64]

Each step encodes the observation and the legal mask and plays a uniformly random legal
action, as `mallocmuzero bench` measures the Rust game (its `env_steps_with_obs_per_s`, run in
the same script before and after the Python figures). Figures: the Gymnasium environment
(one game per `step`), the vectorised environment (`num_envs` games per `step`, in Rust),
and the bare `Game` (no Gymnasium wrapper).
"""

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import mallocmuzero as mmz
from mallocmuzero.env import ENV_ID

REPO = Path(__file__).resolve().parents[2]


def rust_steps_per_s(cli: str, seconds: float) -> float:
    out = subprocess.run([cli, "bench", "--json", "--seconds", str(seconds)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["env_steps_with_obs_per_s"]


def gym_steps_per_s(workload, seconds):
    env = gym.make(ENV_ID, workload=workload, disable_env_checker=True).unwrapped
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a = rng.choice(np.flatnonzero(info["action_mask"]))
        _, _, term, _, info = env.step(a)
        steps += 1
        if term:
            _, info = env.reset()
    return steps / (time.perf_counter() - t0)


def game_steps_per_s(workload, seconds):
    g = mmz.Game(workload)
    rng = np.random.default_rng(0)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        g.observation()
        mask = g.action_mask()
        g.apply_action(int(rng.choice(np.flatnonzero(mask))))
        steps += 1
        if g.is_terminal():
            g = g.restart()
    return steps / (time.perf_counter() - t0)


def vec_steps_per_s(workload, seconds, n):
    venv = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", workload=workload)
    _, info = venv.reset(seed=0)
    masks = info["action_mask"]
    rng = np.random.default_rng(0)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        # A random legal action per game, vectorised: the largest random key among legal ones.
        keys = np.where(masks, rng.random(masks.shape), -1.0)
        _, _, _, _, info = venv.step(keys.argmax(axis=1))
        masks = info["action_mask"]
        steps += n
    return steps / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="resnet50", help="the Rust bench plays resnet50 on tpu-v4i-like")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--cli", default=os.environ.get("MMZ_CLI", str(REPO / "target" / "release" / "mallocmuzero")))
    a = p.parse_args()
    rust_before = rust_steps_per_s(a.cli, a.seconds)
    figures = {
        "gym_env": gym_steps_per_s(a.workload, a.seconds),
        "game": game_steps_per_s(a.workload, a.seconds),
        "vector_env": vec_steps_per_s(a.workload, a.seconds, a.num_envs),
    }
    rust_after = rust_steps_per_s(a.cli, a.seconds)
    rust = (rust_before + rust_after) / 2
    print(json.dumps({"workload": a.workload, "num_envs": a.num_envs, "rust_game": rust, "rust_before": rust_before, "rust_after": rust_after, **figures}))
    for name, v in [("Rust game (mallocmuzero bench)", rust), *figures.items()]:
        print(f"{name:32} {v:12.0f} steps/s  {v / rust:6.2f}x Rust")


if __name__ == "__main__":
    main()
