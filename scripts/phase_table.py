#!/usr/bin/env python3
"""Two solvers' best latency at chosen moments of their races, from `race --json` files:
where each phase of a long race left them.

    python3 scripts/phase_table.py A B --at 150,450,600 FILE.json [FILE.json ...]

Prints, per case (workload and hardware) that both solvers raced, each one's best so far
(from its curve) at each moment in µs, then the change from the first moment to the last.
A moment before a solver's first point prints `-`. Exit 2 on an unreadable file or when
no case has both.
"""

import argparse
import json
import sys


def best_at(curve, t):
    seen = [latency for (at, latency) in curve if at <= t]
    return seen[-1] if seen else None


def cell(v):
    return "-" if v is None else f"{v * 1e6:,.1f}"


def change(first, last):
    if first is None or last is None:
        return "-"
    return f"{(1 - last / first) * 100:.1f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--at", required=True, help="seconds into the race, comma-separated (150,450,600)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    try:
        args.at = [float(t) for t in args.at.split(",")]
    except ValueError:
        print(f"error: --at: expected seconds separated by commas, got {args.at!r}", file=sys.stderr)
        sys.exit(2)
    rows = []
    for path in args.files:
        try:
            with open(path) as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            sys.exit(2)
        by = {r.get("solver"): r for r in results if isinstance(r, dict)}
        if args.a not in by or args.b not in by:
            continue
        case = f"{by[args.a].get('workload', '?')} on {by[args.a].get('hardware', '?')}"
        cells = []
        for name in (args.a, args.b):
            curve = by[name].get("curve") or []
            values = [best_at(curve, t) for t in args.at]
            cells += [cell(v) for v in values] + [change(values[0], values[-1])]
        rows.append((case, cells))
    if not rows:
        print(f"error: no file has both {args.a} and {args.b}", file=sys.stderr)
        sys.exit(2)
    head = [c for n in (args.a, args.b) for c in [f"{n} at {t:g} s" for t in args.at] + [f"{n}, first to last"]]
    print("| case | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    for case, cells in rows:
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
