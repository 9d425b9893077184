"""Self-play positions per second on Ray against the Rust trainer alone.

    python python/bench/selfplay.py [--workload alexnet] [--seconds 60]

Runs, one after another on this machine, with the same (default) training config, so the
same network and search: `mallocmuzero train --threads 1` and `--threads 2` (self-play
threads beside the learner, one process), then `python -m mallocmuzero.ray_train` with 1
and with 2 self-play actors (plus the learner actor). Each figure is positions gained per
second between the first and the last line of the run's metrics.jsonl (so the start-up and
the demonstrations' pre-training are left out of every run alike). With the default
config the learner bounds every run (it trains 0.05 steps per position generated, and both
paths wait for it); `--config` with a smaller `train_steps_per_position` measures
self-play itself.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def rate(run_dir: Path) -> dict:
    lines = [json.loads(l) for l in (run_dir / "metrics.jsonl").read_text().splitlines()]
    first, last = lines[0], lines[-1]
    seconds = last["elapsed_s"] - first["elapsed_s"]
    return {
        "iterations": len(lines),
        "positions_per_s": (last["positions"] - first["positions"]) / seconds,
        "train_steps_per_s": (last["train_steps"] - first["train_steps"]) / seconds,
        "best_latency_s": last["best_latency_s"],
        "xla_latency_s": last["xla_latency_s"],
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="alexnet")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--config", help="a TrainConfig JSON file given to every run (default: the defaults)")
    p.add_argument("--cli", default=os.environ.get("MMZ_CLI", str(REPO / "target" / "release" / "mallocmuzero")))
    a = p.parse_args()
    results = {}
    config = ["--config", a.config] if a.config else []
    with tempfile.TemporaryDirectory() as tmp:
        for threads in (1, 2):
            out = Path(tmp) / f"rust-{threads}"
            subprocess.run(
                [a.cli, "train", "--workload", a.workload, "--minutes", str(a.seconds / 60), "--threads", str(threads), "--out", out, "--json", *config],
                check=True, capture_output=True,
            )
            results[f"rust_trainer_threads_{threads}"] = rate(out)
        for actors in (1, 2):
            out = Path(tmp) / f"ray-{actors}"
            subprocess.run(
                [sys.executable, "-m", "mallocmuzero.ray_train", "--workload", a.workload, "--actors", str(actors), "--seconds", str(a.seconds), "--out", out, "--json", *config],
                check=True, capture_output=True,
            )
            results[f"ray_actors_{actors}"] = rate(out)
    print(json.dumps({"workload": a.workload, "seconds": a.seconds, "config": a.config, "cpus": os.cpu_count(), **results}))
    base = results["rust_trainer_threads_2"]["positions_per_s"]
    for name, r in results.items():
        print(f"{name:26} {r['positions_per_s']:8.1f} positions/s ({r['positions_per_s'] / base:5.2f}x Rust trainer, 2 threads), {r['train_steps_per_s']:6.1f} train steps/s, {r['iterations']} iterations")


if __name__ == "__main__":
    main()
