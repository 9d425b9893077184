#!/usr/bin/env python3
"""Search throughput side by side: DeepMind's mctx (JAX, CPU) against our search, in one run.

Reference shape (issue 4): observation 512, hidden 256, 13 actions; representation MLP
512-256-256, dynamics MLP on (hidden, one-hot action) 269-256-256 with a reward head,
prediction MLP 256-256 with policy and value heads; random weights; 3 actions masked at
the root; batch 256, 16 simulations; `gumbel_muzero_policy` and `muzero_policy`.

Set-up (once; jax[cpu] and mctx install in seconds):
    python3 -m venv .venv-mctx && .venv-mctx/bin/pip install "jax[cpu]" mctx
    cargo build --release -p mallocmuzero
Run:
    .venv-mctx/bin/python scripts/bench_mctx.py [--seconds 5] [--rounds 3]

Prints one JSON object with both rates (medians over rounds that alternate mctx and ours),
the ratios ours/mctx, and the mean tree depths.
Our side runs `mallocmuzero bench --mcts-only`, which uses the same shape with scalar
value/reward heads replaced by our categorical ones (25 bins: decoded to scalars).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import mctx

B, OBS, H, A, SIMS = 256, 512, 256, 13, 16


def dense(key, n_in, n_out):
    w = jax.random.normal(key, (n_in, n_out)) * (1.0 / jnp.sqrt(n_in))
    return w, jnp.zeros((n_out,))


def mlp(params, x):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = jax.nn.relu(x)
    return x


def minmax(h):
    lo = h.min(axis=-1, keepdims=True)
    hi = h.max(axis=-1, keepdims=True)
    return (h - lo) / jnp.maximum(hi - lo, 1e-5)


def build(seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 10)
    return {
        "repr": [dense(k[0], OBS, 256), dense(k[1], 256, H)],
        "dyn": [dense(k[2], H + A, 256), dense(k[3], 256, H)],
        "reward": [dense(k[4], H, 1)],
        "pred": [dense(k[5], H, 256)],
        "policy": [dense(k[6], 256, A)],
        "value": [dense(k[7], 256, 1)],
    }


def predict(params, h):
    x = jax.nn.relu(mlp(params["pred"], h))
    return mlp(params["policy"], x), mlp(params["value"], x)[..., 0]


def root_fn(params, obs):
    h = minmax(mlp(params["repr"], obs))
    logits, value = predict(params, h)
    return mctx.RootFnOutput(prior_logits=logits, value=value, embedding=h)


def recurrent_fn(params, rng, action, h):
    x = jnp.concatenate([h, jax.nn.one_hot(action, A)], axis=-1)
    h2 = minmax(mlp(params["dyn"], x))
    reward = mlp(params["reward"], h2)[..., 0]
    logits, value = predict(params, h2)
    out = mctx.RecurrentFnOutput(
        reward=reward, discount=jnp.ones_like(reward), prior_logits=logits, value=value
    )
    return out, h2


def mean_depth(tree):
    # Depth of each node: parents are stored per node; depth(root) = 0.
    parents = tree.parents  # [B, N]
    n = parents.shape[1]
    depth = jnp.zeros(parents.shape, dtype=jnp.int32)
    for _ in range(SIMS + 1):
        depth = jnp.where(parents >= 0, jnp.take_along_axis(depth, jnp.maximum(parents, 0), axis=1) + 1, 0)
    expanded = tree.node_visits > 0
    expanded = expanded.at[:, 0].set(False)
    return float((depth * expanded).sum() / jnp.maximum(expanded.sum(), 1))


def run_mctx(policy_name, seconds):
    params = build()
    obs = jax.random.uniform(jax.random.PRNGKey(1), (B, OBS), minval=-1, maxval=1)
    invalid = jnp.zeros((B, A), dtype=bool).at[:, A - 3:].set(True)
    policy = getattr(mctx, policy_name)

    @jax.jit
    def step(rng):
        root = root_fn(params, obs)
        return policy(
            params=params, rng_key=rng, root=root, recurrent_fn=recurrent_fn,
            num_simulations=SIMS, invalid_actions=invalid,
        )

    out = step(jax.random.PRNGKey(0))
    jax.block_until_ready(out.action)
    depth = mean_depth(out.search_tree)
    calls, t0 = 0, time.perf_counter()
    key = jax.random.PRNGKey(2)
    while time.perf_counter() - t0 < seconds or calls == 0:
        key, sub = jax.random.split(key)
        jax.block_until_ready(step(sub).action)
        calls += 1
    dt = time.perf_counter() - t0
    return {"sims_per_s": calls * B * SIMS / dt, "mean_depth": depth}


def run_ours(seconds, binary):
    if binary is None:
        here = os.path.dirname(os.path.abspath(__file__))
        binary = os.path.join(here, "..", "target", "release", "mallocmuzero")
    cmd = [binary] if os.path.exists(binary) else ["cargo", "run", "--release", "-q", "-p", "mallocmuzero", "--"]
    out = subprocess.run(cmd + ["bench", "--mcts-only", "--seconds", str(seconds)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    ap.add_argument("--rounds", type=int, default=3,
                    help="mctx and ours alternate this many times; medians are reported "
                         "(the machine is shared: alternating spreads its noise over both)")
    ap.add_argument("--binary", default=None,
                    help="the mallocmuzero binary (default target/release/mallocmuzero)")
    args = ap.parse_args()
    rounds = {"mctx_gumbel": [], "mctx_muzero": [], "ours_gumbel": [], "ours_muzero": []}
    for _ in range(max(args.rounds, 1)):
        rounds["mctx_gumbel"].append(run_mctx("gumbel_muzero_policy", args.seconds))
        rounds["mctx_muzero"].append(run_mctx("muzero_policy", args.seconds))
        ours = run_ours(args.seconds, args.binary)
        rounds["ours_gumbel"].append(ours["gumbel"])
        rounds["ours_muzero"].append(ours["muzero"])
    result = {
        "shape": {"batch": B, "simulations": SIMS, "observation": OBS, "hidden": H, "actions": A},
        "jax": jax.__version__, "mctx": mctx.__version__, "jax_devices": [str(d) for d in jax.devices()],
        "rounds": args.rounds, "seconds_each": args.seconds,
    }
    for key, runs in rounds.items():
        result[key] = {
            "sims_per_s": median([r["sims_per_s"] for r in runs]),
            "mean_depth": runs[0]["mean_depth"],
            "all_sims_per_s": [round(r["sims_per_s"]) for r in runs],
        }
    for policy in ["gumbel", "muzero"]:
        result["ratio_" + policy] = (result["ours_" + policy]["sims_per_s"]
                                     / result["mctx_" + policy]["sims_per_s"])
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
