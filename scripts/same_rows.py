#!/usr/bin/env python3
"""Whether two `mallocmuzero evaluate --json` outputs give the same rows, timings aside.

A refactor that should change nothing but speed is checked by running the same evaluate
command with the binary before and after it and comparing the two files:

    python3 scripts/same_rows.py before.json after.json

Every field but the timing ones (`solve_s`, and any other key ending in `_s` named by
`--ignore`) must be equal, row by row, in the same order; floats compare exactly, since
the solvers are deterministic. Exit 0 when identical, 1 with the first differences listed,
2 on a file that cannot be read.
"""

import argparse
import json
import sys

TIMING = {"solve_s"}


def rows(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        print(f"error: {path}: no `results` list", file=sys.stderr)
        sys.exit(2)
    return results


def key(row):
    return (row.get("workload"), row.get("hardware"), row.get("solver"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--ignore", action="append", default=[], help="another field to skip")
    args = ap.parse_args()
    skip = TIMING | set(args.ignore)
    a, b = rows(args.before), rows(args.after)
    diffs = []
    if len(a) != len(b):
        diffs.append(f"{len(a)} rows before, {len(b)} after")
    for i, (x, y) in enumerate(zip(a, b)):
        if key(x) != key(y):
            diffs.append(f"row {i}: {key(x)} before, {key(y)} after")
            continue
        for field in sorted((set(x) | set(y)) - skip):
            if x.get(field) != y.get(field):
                diffs.append(f"row {i} {key(x)}: {field}: {x.get(field)!r} -> {y.get(field)!r}")
    if diffs:
        for d in diffs[:20]:
            print(d)
        if len(diffs) > 20:
            print(f"... {len(diffs) - 20} more")
        return 1
    print(f"identical: {len(a)} rows (ignoring {', '.join(sorted(skip))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
