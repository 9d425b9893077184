#!/usr/bin/env python3
"""exact's proven bound per case from several races side by side, and each one's gap to
the fastest mapping any solver found in any of the files given (issue 58.3: exact's best
within 10% of its proven bound).

    python3 scripts/exact_bound_table.py LABEL=DIR_OR_FILE [LABEL=DIR_OR_FILE ...] \\
        [--best DIR_OR_FILE ...]

Each LABEL's files give exact's rows (its `lower_bound_s`, what proved it, and its own
mapping's latency); the fastest mapping is taken over those files and the --best ones.
The gap is `1 - bound / latency`: how far below a mapping the bound sits (exact's own
mapping, and the fastest of all).
"""

import json
import os
import sys


def results(path):
    files = [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".json")] \
        if os.path.isdir(path) else [path]
    for f in files:
        for r in json.load(open(f))["results"]:
            yield r


def main():
    args = sys.argv[1:]
    best_paths = []
    if "--best" in args:
        i = args.index("--best")
        best_paths = args[i + 1:]
        args = args[:i]
    if not args or any("=" not in a for a in args):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    labelled = [a.split("=", 1) for a in args]
    fastest, exact = {}, {}
    for label, path in labelled:
        for r in results(path):
            if not r.get("valid", False):
                continue
            key = r["workload"], r["hardware"]
            fastest[key] = min(fastest.get(key, float("inf")), r["best_latency_s"])
            if r["solver"] == "exact":
                exact.setdefault(label, {})[key] = r
    for path in best_paths:
        for r in results(path):
            if r.get("valid", False):
                key = r["workload"], r["hardware"]
                fastest[key] = min(fastest.get(key, float("inf")), r["best_latency_s"])
    labels = [l for l, _ in labelled]
    print("| case | fastest, µs | " + " | ".join(
        f"{l}: bound, µs (by) | {l}: gap, its own / fastest" for l in labels) + " |")
    print("|---|---:|" + "---:|---:|" * len(labels))
    within = {l: 0 for l in labels}
    cases = sorted({k for l in labels for k in exact.get(l, {})})
    for key in cases:
        cells = []
        for l in labels:
            r = exact.get(l, {}).get(key)
            if r is None:
                cells += ["", ""]
                continue
            b = r["lower_bound_s"]
            by = (r.get("proof") or {}).get("bound_by", "?")
            own = 1 - b / r["best_latency_s"]
            fast = 1 - b / fastest[key]
            within[l] += own <= 0.10
            cells += [f"{b * 1e6:,.1f} ({by})", f"{own:.1%} / {fast:.1%}"]
        print(f"| {key[0]} on {key[1]} | {fastest[key] * 1e6:,.1f} | " + " | ".join(cells) + " |")
    print()
    for l in labels:
        n = len(exact.get(l, {}))
        print(f"{l}: exact's own mapping within 10% of its bound on {within[l]} of {n}")


if __name__ == "__main__":
    main()
