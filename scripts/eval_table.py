#!/usr/bin/env python3
"""Render `mallocmuzero evaluate --json` output (stdin) as a markdown table: one row per
case, simulated latency per solver, speedup over xla, and each solver's gap to the bound.

    cargo run --release -p mallocmuzero -- evaluate --suite --json | python3 scripts/eval_table.py
"""
import json
import sys

rows = json.load(sys.stdin)["results"]
solvers = []
for r in rows:
    if r["solver"] not in solvers:
        solvers.append(r["solver"])
cases = {}
for r in rows:
    cases.setdefault((r["workload"], r["hardware"], r["fast_capacity_bytes"]), {})[r["solver"]] = r


def size(b):
    return f"{b / 2**20:.0f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"


head = ["workload", "hardware", "fast"] + [f"{s} (us)" for s in solvers] + ["bound (us)", "best vs xla"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for (w, hw, cap), by in cases.items():
    cells = [w, hw, size(cap)]
    best = None
    for s in solvers:
        r = by.get(s)
        if r is None or not r["valid"]:
            cells.append("invalid" if r else "-")
            continue
        lat = r["latency_s"]
        cells.append(f"{lat * 1e6:.0f} ({r['speedup_vs_xla']:.3f}x, +{r['gap_to_bound'] * 100:.0f}%)")
        if s != "xla" and (best is None or lat < best[1]):
            best = (s, lat, r["speedup_vs_xla"])
    bound = next(iter(by.values()))["bound_latency_s"]
    cells.append(f"{bound * 1e6:.0f}")
    cells.append(f"{best[0]} {best[2]:.3f}x" if best else "-")
    print("| " + " | ".join(cells) + " |")
