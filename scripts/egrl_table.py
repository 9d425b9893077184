#!/usr/bin/env python3
"""The EGRL table of docs/results.md from a race's results.json.

    python3 scripts/egrl_table.py races/egrl/results.json

One row per case: each solver's simulated latency (us), EGRL's speedup over xla and over
greedy-size (the native-compiler stand-ins), the mappings each search evaluated, and
whether the paper's ordering (EGRL ahead of EA alone, PG alone and DP) holds.
"""

import json
import sys

SOLVERS = ["xla", "greedy-size", "egrl-dp", "egrl-pg", "egrl-ea", "egrl", "muzero"]
SEARCHES = ["egrl-pg", "egrl-ea", "egrl"]


def main(path):
    with open(path) as f:
        results = json.load(f)["results"]
    cases = []
    for r in results:
        key = (r["workload"], r["hardware"])
        if key not in cases:
            cases.append(key)
    head = ["case"] + SOLVERS + ["egrl vs xla", "egrl vs greedy-size", "egrl vs muzero",
                                 "evaluations (pg / ea / egrl)", "egrl ahead of ea, pg, dp"]
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 2) + "|---|")
    for case in cases:
        by = {r["solver"]: r for r in results if (r["workload"], r["hardware"]) == case}
        lat = {s: by[s]["best_latency_s"] for s in SOLVERS if s in by and by[s]["valid"]}
        cells = [f"{case[0]} {case[1]}"]
        cells += [f"{lat[s] * 1e6:.1f}" if s in lat else "-" for s in SOLVERS]
        egrl = lat.get("egrl")
        for other in ["xla", "greedy-size", "muzero"]:
            cells.append(f"{lat[other] / egrl:.4f}x" if egrl and other in lat else "-")
        evals = []
        for s in SEARCHES:
            curve = by.get(s, {}).get("evaluations_curve") or []
            evals.append(str(curve[-1][0]) if curve else "-")
        cells.append(" / ".join(evals) + " (to the best)")
        ahead = [s for s in ["egrl-ea", "egrl-pg", "egrl-dp"] if s in lat and egrl is not None]
        verdict = []
        for s in ahead:
            if egrl < lat[s]:
                verdict.append(f"ahead of {s}")
            elif egrl == lat[s]:
                verdict.append(f"tied with {s}")
            else:
                verdict.append(f"**behind {s}** ({lat[s] / egrl:.4f}x)")
        cells.append(", ".join(verdict))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "races/egrl/results.json")
