#!/usr/bin/env python3
"""Chooses the generalist's checkpoint on the validation families.

    cargo build --release -p mallocmuzero
    python3 scripts/generalist_validate.py RUN [CHECKPOINTS] [--proposal-rounds R] [--tier-size] [--json OUT]
    python3 scripts/generalist_validate.py --bundled [--tier-size]   # the bundled network alone

RUN is a `train --suite` run folder; CHECKPOINTS a folder of checkpoints, one sub-folder
per checkpoint (`iter-000049/` with its `weights.safetensors` and `checkpoint.json`, or
the `latest.json` the run wrote at that iteration), by default RUN/checkpoints: a run
started with `--keep-checkpoints` keeps each one there. Each checkpoint plays, zero-shot and noise-free
(`evaluate --solver muzero --simulations 64 --proposal-rounds 0`, its game alone, searching
the game: how the bundled checkpoint was chosen; `--proposal-rounds R` adds the agent's
proposals after the game), every validation case:
the workloads of malloc_muzero::generalist::VALIDATION_WORKLOADS (whole families the run
never trains on, none of them held out) on tpu-v4i-like at 8 and 16 MiB; `--tier-size` adds
generalist::TIER_SIZE_VALIDATION (RegNetY at the scale tier's size: the training step at the
scale rule's capacity and 32 MiB, its lowered form at the scale rule), the cases on which the
bundled network was compared with the one before it.

The choice, fixed before any checkpoint was measured: the highest geometric-mean speedup
over xla; within 0.1% of it, the checkpoint no slower than xla on more cases; then the
earlier one. No held-out program is played.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
VALIDATION = ["shufflenet-v2", "regnet-y-400mf", "vit-b16"]
CAPACITIES = ["8MiB", "16MiB"]
TIER_SIZE = [("jax-regnety-train", "scale-rule"), ("jax-regnety-train", "32MiB"),
             ("jax-regnety-train-lowered", "scale-rule")]
HARDWARE = "tpu-v4i-like"


def view(run, ckpt_dir, name, into):
    """A run folder that is RUN with only checkpoint NAME, so `--checkpoint` loads it."""
    os.makedirs(os.path.join(into, "checkpoints", name))
    for entry in os.listdir(run):
        if entry != "checkpoints":
            os.symlink(os.path.abspath(os.path.join(run, entry)), os.path.join(into, entry))
    src = os.path.join(ckpt_dir, name)
    os.symlink(os.path.abspath(os.path.join(src, "weights.safetensors")),
               os.path.join(into, "checkpoints", name, "weights.safetensors"))
    os.symlink(os.path.abspath(describe(src)), os.path.join(into, "checkpoints", "latest.json"))


def describe(src):
    """The file that says which iterations checkpoint folder SRC holds."""
    for name in ("checkpoint.json", "latest.json"):
        if os.path.exists(os.path.join(src, name)):
            return os.path.join(src, name)
    sys.exit(f"{src}: no checkpoint.json or latest.json (not a checkpoint folder)")


def write_json(path, value):
    """VALUE as JSON at PATH, written whole or not at all."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=1)
    os.replace(tmp, path)


def play(cli, workload, capacity, sims, rounds, checkpoint):
    extra = ["--checkpoint", checkpoint] if checkpoint else []
    extra += ["--proposal-rounds", str(rounds)]
    out = subprocess.run(
        [cli, "evaluate", "--workload", workload, "--hw", HARDWARE, "--fast-capacity", capacity,
         "--solver", "xla", "--solver", "muzero", "--simulations", str(sims), *extra, "--json"],
        check=True, capture_output=True, text=True,
    )
    rows = {r["solver"]: r for r in json.loads(out.stdout)["results"]}
    return rows["xla"]["latency_s"], rows["muzero"]["latency_s"], rows["muzero"]["solve_s"]


def measure(cli, sims, rounds, checkpoint, tier_size=False):
    cases = []
    todo = [(w, cap) for w in VALIDATION for cap in CAPACITIES] + (TIER_SIZE if tier_size else [])
    for w, cap in todo:
        xla, agent, secs = play(cli, w, cap, sims, rounds, checkpoint)
        cases.append({"workload": w, "capacity": cap, "xla_s": xla, "agent_s": agent,
                      "speedup": xla / agent, "time_s": secs})
    speedups = [c["speedup"] for c in cases]
    return {
        "geomean_vs_xla": math.exp(sum(math.log(s) for s in speedups) / len(speedups)),
        "no_slower_than_xla": sum(1 for s in speedups if s >= 1.0 - 1e-9),
        "cases": cases,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", nargs="?")
    p.add_argument("checkpoints", nargs="?")
    p.add_argument("--cli", default=os.path.join(ROOT, "target", "release", "mallocmuzero"))
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--proposal-rounds", type=int, default=0)
    p.add_argument("--tier-size", action="store_true")
    p.add_argument("--bundled", action="store_true", help="play the bundled network (no RUN)")
    p.add_argument("--json")
    a = p.parse_args()
    if a.bundled:
        r = measure(a.cli, a.simulations, a.proposal_rounds, None, a.tier_size)
        for c in r["cases"]:
            print(f"{c['workload']} {c['capacity']}: {c['speedup']:.4f}x")
        print(f"bundled: {r['geomean_vs_xla']:.4f}x vs xla, no slower on {r['no_slower_than_xla']}/{len(r['cases'])}")
        return
    if not a.run:
        p.error("give RUN, or --bundled")
    folder = a.checkpoints or os.path.join(a.run, "checkpoints")
    names = sorted(n for n in os.listdir(folder) if os.path.isdir(os.path.join(folder, n)))
    if not names:
        sys.exit(f"{folder}: no checkpoint folders")
    results = {}
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            run_view = os.path.join(tmp, "run")
            view(a.run, folder, name, run_view)
            r = measure(a.cli, a.simulations, a.proposal_rounds, run_view, a.tier_size)
        latest = json.load(open(describe(os.path.join(folder, name))))
        r["train_steps"] = latest["train_steps"]
        results[name] = r
        print(f"{name} ({latest['train_steps']} steps): {r['geomean_vs_xla']:.4f}x vs xla, "
              f"no slower on {r['no_slower_than_xla']}/{len(r['cases'])}", file=sys.stderr)
    best = max(r["geomean_vs_xla"] for r in results.values())
    near = [n for n in sorted(results) if results[n]["geomean_vs_xla"] >= best * 0.999]
    chosen = max(near, key=lambda n: (results[n]["no_slower_than_xla"], -near.index(n)))
    print("| checkpoint | training steps | geomean vs xla | no slower than xla |")
    print("|---|---:|---:|---:|")
    for n in sorted(results):
        r = results[n]
        mark = "**" if n == chosen else ""
        print(f"| {mark}{n}{mark} | {r['train_steps']} | {r['geomean_vs_xla']:.4f}x | "
              f"{r['no_slower_than_xla']}/{len(r['cases'])} |")
    print(f"\nchosen: {chosen}")
    if a.json:
        write_json(a.json, {"chosen": chosen, "checkpoints": results})


if __name__ == "__main__":
    main()
