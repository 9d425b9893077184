#!/usr/bin/env python3
"""Moves of the local search in a fixed time, binaries side by side (issue 58.2).

Runs `race --solver local-search --threads 1` for each workload with each binary, the
binaries alternating round after round (the machine's noise falls on both), and prints
each run's moves, the mean per binary, and each workload's moves over those on the
reference workload (issue 58 asks the large programs at least a quarter of
gpt2-small-s128's).

    python3 scripts/move_speed.py --bin before=/path/a --bin after=target/release/mallocmuzero \
        --workloads gpt2-small-s128 jax-gpt-12l-train-lowered --seconds 30 --rounds 2
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from generalist_validate import write_json

SCALE = "scale-rule"


def moves(binary, workload, seconds, seed, scale, out):
    cmd = [binary, "race", "--workload", workload, "--hw", "tpu-v4i-like", "--solver",
           "local-search", "--seconds", str(seconds), "--threads", "1", "--seed", str(seed),
           "--out", out, "--json"]
    if scale:
        cmd += ["--fast-capacity", SCALE]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"move_speed.py: {' '.join(cmd)} failed ({run.returncode}): {run.stderr[-500:]}")
    result = json.loads(run.stdout)["results"][0]
    return result.get("moves") or 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--workloads", nargs="+", required=True)
    ap.add_argument("--reference", default="gpt2-small-s128",
                    help="the workload the others' moves are divided by")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the runs and the means here")
    a = ap.parse_args()
    bins = []
    for b in a.bin:
        name, sep, path = b.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"move_speed.py: --bin {b!r}: want NAME=PATH to an executable")
        bins.append((name, path))
    # The tier's programs race at the scale rule's capacity, the others at the
    # hardware's own.
    suite = subprocess.run([bins[0][1], "suite", "scale", "--json"], capture_output=True,
                           text=True, check=True)
    tier = {c["workload"] for c in json.loads(suite.stdout)["suite"]}
    runs = {name: {w: [] for w in a.workloads} for name, _ in bins}
    with tempfile.TemporaryDirectory() as tmp:
        k = 0
        for r in range(a.rounds):
            for w in a.workloads:
                scale = w in tier
                for name, path in bins:
                    k += 1
                    n = moves(path, w, a.seconds, a.seed, scale, os.path.join(tmp, str(k)))
                    runs[name][w].append(n)
                    print(f"round {r} {name:>8} {w}: {n} moves", flush=True)
    means = {name: {w: statistics.mean(v) for w, v in per.items()} for name, per in runs.items()}
    for name, per in means.items():
        ref = per.get(a.reference)
        for w, m in per.items():
            ratio = f", {m / ref:.4f} of {a.reference}" if ref and w != a.reference else ""
            print(f"{name:>8} {w}: {m:.1f} moves in {a.seconds} s{ratio}")
    if len(bins) == 2:
        (n0, _), (n1, _) = bins
        for w in a.workloads:
            if means[n0][w]:
                print(f"{w}: {n1}/{n0} {means[n1][w] / means[n0][w]:.3f}x")
    if a.json:
        write_json(a.json, {"seconds": a.seconds, "seed": a.seed, "runs": runs, "means": means})


if __name__ == "__main__":
    main()
