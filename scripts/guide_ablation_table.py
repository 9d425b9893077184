#!/usr/bin/env python3
"""Markdown table of issue 43's ablation at equal moves, from the JSON lines of
`cargo run --release -p malloc-muzero --example guide_ablation -- SET MOVES SEEDS [GUIDES]`.

Per case: each guide's best latency per seed, and the speedup of each guide over the first
(uniform: the local search itself) in geomean over the seeds (> 1: faster than the local
search); then the geomean over all cases and pairs, the count of pairs ahead / level /
behind, and each guide's CPU seconds per move against the first's (the network's cost,
which an equal-time race charges and equal moves do not).

    python3 scripts/guide_ablation_table.py runs/ablation.jsonl [more.jsonl ...]
"""

import json
import math
import sys
from collections import defaultdict


def main(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            runs += [json.loads(line) for line in f if line.strip()]
    if not runs:
        sys.exit("no runs in " + ", ".join(paths))
    guides = list(dict.fromkeys(r["guide"] for r in runs))
    cases = list(dict.fromkeys(r["case"] for r in runs))
    lat = defaultdict(dict)
    cpu = defaultdict(float)
    moves = defaultdict(int)
    for r in runs:
        lat[(r["case"], r["guide"])][r["seed"]] = r["latency_us"]
        cpu[r["guide"]] += r["cpu_s"]
        moves[r["guide"]] += r["moves"]
    base = guides[0]
    head = ["case"] + [f"{g} (us)" for g in guides] + [f"{g} vs {base}" for g in guides[1:]]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    logs = defaultdict(list)
    tally = defaultdict(lambda: [0, 0, 0])
    for c in cases:
        seeds = sorted(lat[(c, base)])
        cells = [c]
        for g in guides:
            cells.append(" / ".join(f"{lat[(c, g)].get(s, float('nan')):.2f}" for s in seeds))
        for g in guides[1:]:
            ratios = [lat[(c, base)][s] / lat[(c, g)][s] for s in seeds if s in lat[(c, g)]]
            for x in ratios:
                logs[g].append(math.log(x))
                tally[g][0 if x > 1 + 1e-9 else 1 if x > 1 - 1e-9 else 2] += 1
            gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
            cells.append(f"{gm:.4f}x")
        print("| " + " | ".join(cells) + " |")
    print()
    for g in guides[1:]:
        gm = math.exp(sum(logs[g]) / len(logs[g])) if logs[g] else float("nan")
        a, l, b = tally[g]
        per_move = (cpu[g] / moves[g]) / (cpu[base] / moves[base]) if moves[g] else float("nan")
        print(
            f"- {g}: {gm:.4f}x {base} in geomean over {len(logs[g])} pairs "
            f"(ahead {a}, level {l}, behind {b}); CPU seconds per move {per_move:.3f}x {base}'s"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
