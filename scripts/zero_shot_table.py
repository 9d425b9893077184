#!/usr/bin/env python3
"""Zero-shot play of two generalists side by side, against xla (issue 59.4's measure).

    cargo build --release -p mallocmuzero
    python3 scripts/zero_shot_table.py [--checkpoint RUN_OR_VIEW] [--cli BIN] \\
        [--workloads W,W,...] [--simulations 64] [--json OUT]

For each workload, `evaluate --workload W --solver xla --solver muzero --simulations 64
--threads 1 --json` (the generalist's game searched with 64 simulations a turn, then its
proposal rounds, evaluate's default) runs twice at once, one process per core: once with
the bundled generalist (no `--checkpoint`) and once with `--checkpoint`'s network (a run
folder, or a folder holding one checkpoint made the way scripts/generalist_validate.py
makes it). The tier's programs run on tpu-v4i-like at the scale rule's capacity, the
others at their default case. Prints a markdown table (µs, speedup over xla, seconds of the
agent's play) and the count no slower than xla for each network.
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
sys.path.insert(0, HERE)
from generalist_validate import write_json  # noqa: E402
BUNDLED_JAX = [
    "jax-transformer-4l-train",
    "jax-transformer-4l-train-lowered",
    "jax-convnet-train",
    "jax-mlp-train",
    "jax-rnn-scan",
]
TIER = [
    "jax-gpt-12l-train",
    "jax-llama-1b-prefill",
    "jax-llama-1b-decode",
    "jax-vit-b16-train",
    "jax-resnet50-train",
    "jax-unet-diffusion-train",
    "jax-moe-8e-train",
]


def command(cli, workload, sims, checkpoint):
    cmd = [cli, "evaluate", "--workload", workload]
    if workload in TIER or workload.removesuffix("-lowered") in TIER:
        cmd += ["--hw", "tpu-v4i-like", "--fast-capacity", "scale-rule"]
    cmd += ["--solver", "xla", "--solver", "muzero", "--simulations", str(sims), "--threads", "1", "--json"]
    if checkpoint:
        cmd += ["--checkpoint", checkpoint]
    return cmd


def rows(stdout):
    return {r["solver"]: r for r in json.loads(stdout)["results"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--cli", default=os.path.join(ROOT, "target", "release", "mallocmuzero"))
    p.add_argument("--workloads", default=",".join(BUNDLED_JAX + TIER))
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--json")
    a = p.parse_args()
    out = []
    for w in a.workloads.split(","):
        with tempfile.TemporaryFile() as f0, tempfile.TemporaryFile() as f1:
            procs = [
                subprocess.Popen(command(a.cli, w, a.simulations, c), stdout=f, stderr=subprocess.DEVNULL)
                for c, f in ((None, f0), (a.checkpoint, f1))
            ]
            codes = [pr.wait() for pr in procs]
            if any(codes):
                sys.exit(f"{w}: evaluate exited {codes}")
            got = []
            for f in (f0, f1):
                f.seek(0)
                got.append(rows(f.read().decode()))
        xla = got[0]["xla"]["latency_s"]
        row = {"workload": w, "xla_s": xla}
        for key, r in zip(("bundled", "new"), got):
            row[key] = {"latency_s": r["muzero"]["latency_s"], "speedup": xla / r["muzero"]["latency_s"],
                        "solve_s": r["muzero"]["solve_s"]}
        out.append(row)
        print(f"{w}: bundled {row['bundled']['speedup']:.4f}x, new {row['new']['speedup']:.4f}x", file=sys.stderr)
    print("| program | xla | bundled | vs xla | s | retrained | vs xla | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in out:
        b, n = r["bundled"], r["new"]
        print(f"| {r['workload']} | {r['xla_s'] * 1e6:,.1f} | {b['latency_s'] * 1e6:,.1f} | {b['speedup']:.4f}x | "
              f"{b['solve_s']:.1f} | {n['latency_s'] * 1e6:,.1f} | {n['speedup']:.4f}x | {n['solve_s']:.1f} |")
    for key in ("bundled", "new"):
        s = [r[key]["speedup"] for r in out]
        geo = math.exp(sum(map(math.log, s)) / len(s))
        print(f"{key}: no slower than xla on {sum(x >= 1 - 1e-9 for x in s)} of {len(s)}, geomean {geo:.4f}x")
    if a.json:
        write_json(a.json, out)


if __name__ == "__main__":
    main()
