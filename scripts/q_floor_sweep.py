#!/usr/bin/env python3
"""The bundled generalist's search with floors on the range its Q values are rescaled over.

    cargo build --release -p mallocmuzero
    python3 scripts/q_floor_sweep.py RUN --floors 1e-8,1e-4,1e-3,1e-2 [--tier-size] \\
        [--simulations 64] [--keep-views DIR] [--json OUT]

RUN is the run folder the bundled network came from (runs/generalist-tier: its weights at
iteration 437 are the bundled ones). For each floor, a view of RUN whose run.json sets
`config.search.gumbel.min_q_range` to it plays every validation case of
scripts/generalist_validate.py (its game alone, `--proposal-rounds 0`), two processes at
once. `--keep-views DIR` leaves the views there, one folder a floor, for `evaluate
--checkpoint` or scripts/zero_shot_table.py. A floor is chosen on these cases only.
"""

import argparse
import json
import math
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generalist_validate as gv  # noqa: E402


def make_view(run, floor, into):
    """RUN with its latest checkpoint alone and its search's Q range floored at FLOOR."""
    folder = os.path.join(run, "checkpoints")
    latest = json.load(open(os.path.join(folder, "latest.json")))
    gv.view(run, folder, latest["dir"], into)
    path = os.path.join(into, "run.json")
    info = json.load(open(os.path.realpath(path)))
    if not info["config"]["search"].get("gumbel"):
        sys.exit(f"{run}/run.json: its search is pUCT, which has no Q range floor (Gumbel only)")
    info["config"]["search"]["gumbel"]["min_q_range"] = floor
    os.remove(path)
    with open(path, "w") as f:
        json.dump(info, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("--floors", required=True, help="comma-separated floors, e.g. 1e-8,1e-3")
    p.add_argument("--cli", default=os.path.join(gv.ROOT, "target", "release", "mallocmuzero"))
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--tier-size", action="store_true")
    p.add_argument("--keep-views")
    p.add_argument("--json")
    a = p.parse_args()
    floors = [float(f) for f in a.floors.split(",")]
    base = a.keep_views or tempfile.mkdtemp()
    views = {}
    for f in floors:
        views[f] = os.path.join(base, f"q-floor-{f:g}")
        make_view(a.run, f, views[f])
    todo = [(w, cap) for w in gv.VALIDATION for cap in gv.CAPACITIES]
    if a.tier_size:
        todo += gv.TIER_SIZE
    jobs = [(f, w, cap) for f in floors for (w, cap) in todo]

    def run(job):
        f, w, cap = job
        return job, gv.play(a.cli, w, cap, a.simulations, 0, views[f])

    with ThreadPoolExecutor(max_workers=2) as pool:
        played = dict(pool.map(run, jobs))
    out = {}
    print("| case | " + " | ".join(f"floor {f:g}" for f in floors) + " |")
    print("|---|" + "---:|" * len(floors))
    for w, cap in todo:
        cells = [played[(f, w, cap)] for f in floors]
        print(f"| {w} {cap} | " + " | ".join(f"{xla / agent:.4f}x" for xla, agent, _ in cells) + " |")
    for f in floors:
        s = [played[(f, w, cap)][0] / played[(f, w, cap)][1] for w, cap in todo]
        out[f"{f:g}"] = {
            "geomean_vs_xla": math.exp(sum(map(math.log, s)) / len(s)),
            "no_slower_than_xla": sum(1 for x in s if x >= 1.0 - 1e-9),
            "cases": [{"workload": w, "capacity": cap, "xla_s": played[(f, w, cap)][0],
                       "agent_s": played[(f, w, cap)][1], "time_s": played[(f, w, cap)][2]}
                      for w, cap in todo],
        }
        print(f"floor {f:g}: {out[f'{f:g}']['geomean_vs_xla']:.4f}x xla, "
              f"no slower on {out[f'{f:g}']['no_slower_than_xla']}/{len(todo)}")
    if a.json:
        gv.write_json(a.json, out)


if __name__ == "__main__":
    main()
