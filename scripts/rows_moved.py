#!/usr/bin/env python3
"""The suite's rows before and after a change, side by side: `mallocmuzero evaluate
--json` outputs of the same command with two or more binaries (oldest first), one
Markdown row per case and one column per solver, `a -> b -> c` where a row moved.

    python3 scripts/rows_moved.py before.json middle.json after.json [--names A B C]

Prints the table, then per solver and step how many rows moved (to the bit), how many
got faster, and the geometric mean of the change. Exit 2 on a file that cannot be read or
files of other commands (another case or solver order).
"""

import argparse
import json
import math
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--names", nargs="+")
    a = ap.parse_args()
    runs = [load(f) for f in a.files]
    names = a.names or a.files
    key = lambda r: (r["workload"], r["hardware"], r["solver"])
    if any([key(r) for r in run] != [key(r) for r in runs[0]] for run in runs):
        print("error: the files are not of the same command (cases or solvers differ)", file=sys.stderr)
        sys.exit(2)
    solvers = list(dict.fromkeys(r["solver"] for r in runs[0]))
    cases = list(dict.fromkeys((r["workload"], r["hardware"]) for r in runs[0]))
    by = [{key(r): r["latency_s"] for r in run} for run in runs]
    print("| case | " + " | ".join(solvers) + " |")
    print("|---|" + "---:|" * len(solvers))
    for w, hw in cases:
        cells = []
        for s in solvers:
            vals = [b[(w, hw, s)] * 1e6 for b in by]
            if all(v == vals[0] for v in vals):
                cells.append(f"{vals[0]:.2f}")
            else:
                cells.append(" → ".join(f"{v:.2f}" for v in vals))
        print(f"| {w}, {hw} | " + " | ".join(cells) + " |")
    print()
    for i in range(1, len(runs)):
        print(f"{names[i - 1]} → {names[i]}:")
        for s in solvers:
            pairs = [(by[i - 1][(w, hw, s)], by[i][(w, hw, s)]) for w, hw in cases]
            moved = [(x, y) for x, y in pairs if x != y]
            faster = sum(1 for x, y in moved if y < x)
            g = math.exp(sum(math.log(y / x) for x, y in pairs) / len(pairs))
            print(f"  {s}: {len(moved)} of {len(pairs)} moved, {faster} faster; geomean {g:.5f}x the latency")


if __name__ == "__main__":
    main()
