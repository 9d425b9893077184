#!/usr/bin/env python3
"""Markdown table of two solvers raced side by side, one `race --json` file per case.

Per case: each solver's best latency, the second's speedup over the first (> 1: the second
is faster), both primal integrals and both move counts; then the geomean over the cases
and how many the second is no slower on.

    python3 scripts/race_pair_table.py local-search muzero runs/*.json
"""

import json
import math
import os
import sys


def main(first, second, paths):
    rows = []
    for p in sorted(paths):
        with open(p) as f:
            results = {r["solver"]: r for r in json.load(f)["results"]}
        if first not in results or second not in results:
            sys.exit(f"{p}: no {first} or no {second} result")
        case = os.path.splitext(os.path.basename(p))[0]
        rows.append((case, results[first], results[second]))
    if not rows:
        sys.exit("no files")
    print(f"| case | {first} (us) | {second} (us) | {second} vs {first} "
          f"| primal integral, {first} / {second} | moves, {first} / {second} |")
    print("|---|---:|---:|---:|---:|---:|")
    logs, ahead, behind = 0.0, 0, 0
    for case, a, b in rows:
        la, lb = a["best_latency_s"] * 1e6, b["best_latency_s"] * 1e6
        x = la / lb
        logs += math.log(x)
        ahead += lb < la
        behind += lb > la
        pi = lambda r: "-" if r.get("primal_integral") is None else f"{r['primal_integral']:.3f}"
        print(f"| {case} | {la:.2f} | {lb:.2f} | {x:.4f}x | {pi(a)} / {pi(b)} "
              f"| {a.get('moves', '-')} / {b.get('moves', '-')} |")
    n = len(rows)
    print(f"\n{second} {math.exp(logs / n):.4f}x {first} over {n} cases; no slower on "
          f"{n - behind} (ahead {ahead}, level {n - ahead - behind}, behind {behind})")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
