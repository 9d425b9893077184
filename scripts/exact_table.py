#!/usr/bin/env python3
"""The small-case table of docs/results.md "The exact solver", from the folders
scripts/exact_small_cases.sh writes: per case the proven optimum, the time to prove it, and
each solver's cost-model latency as % above the optimum (simulated latency in a second
table, against the optimal mapping's).

    python3 scripts/exact_table.py races/exact-small
"""
import json
import os
import sys

COLUMNS = ["xla", "greedy-size", "beam:64", "local-search", "egrl", "muzero"]


def rows_of(case_dir):
    """solver -> (cost-model latency, simulated latency), and the exact row."""
    out, exact = {}, None
    with open(os.path.join(case_dir, "evaluate.json")) as f:
        for r in json.load(f)["results"]:
            out[r["solver"]] = (r["proxy_latency_s"], r["latency_s"])
            if r["solver"] == "exact":
                exact = r
    for race in ["race30", "race120"]:
        path = os.path.join(case_dir, race, "results.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for r in json.load(f)["results"]:
                if r["solver"] != "exact" and r.get("valid"):
                    out[r["solver"]] = (r["proxy_latency_s"], r["best_latency_s"])
    return out, exact


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "races/exact-small"
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    head = "| case | optimum (us) | proved in | " + " | ".join(COLUMNS) + " |"
    print(head)
    print("|---|---:|---:|" + "---:|" * len(COLUMNS))
    sims = []
    for d in cases:
        rows, exact = rows_of(os.path.join(root, d))
        proof = exact["proof"]
        assert proof["optimal"], d
        opt_model, opt_sim = exact["proxy_latency_s"], exact["latency_s"]
        cells = []
        sim_cells = []
        for c in COLUMNS:
            if c in rows:
                model, sim = rows[c]
                cells.append(f"+{(model / opt_model - 1) * 100:.2f}%")
                sim_cells.append(f"{(sim / opt_sim - 1) * 100:+.2f}%")
            else:
                cells.append("-")
                sim_cells.append("-")
        print(f"| {d} | {opt_model * 1e6:.2f} | {exact['solve_s']:.2f} s | " + " | ".join(cells) + " |")
        sims.append(f"| {d} | {opt_sim * 1e6:.2f} | " + " | ".join(sim_cells) + " |")
    print()
    print("| case | optimal mapping, simulated (us) | " + " | ".join(COLUMNS) + " |")
    print("|---|---:|" + "---:|" * len(COLUMNS))
    print("\n".join(sims))


if __name__ == "__main__":
    main()
