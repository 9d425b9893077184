#!/usr/bin/env python3
"""Two race solvers side by side, per case and seed: an equal-wall-clock ablation's table
(any pair of solvers; scripts/ablation_table.py is issue 43's guide table on the suite).

    python3 scripts/pair_table.py A B DIR_OR_FILE [DIR_OR_FILE ...] [--json out.json]
        [--seed-free S1,S2,...] [--later-wins] [--leave-out S1,S2,...] [--a-from P1,P2,...]

B may be `best-other`: per case and seed, the fastest of every other solver raced at that
seed. A solver named in --seed-free (default: xla,xla-repack,greedy-size,beam, whose result
no seed changes) counts at every seed from the seed it was raced at; a solver named in
--leave-out (an ablation of A, say) is no other. With --a-from, A's rows come only from
those files and folders (one build, say) and A's rows elsewhere (another build's) count
as another solver, `A*`.

Reads every race result (`race --json`) in the files and folders given, keeps A's and B's
rows, and prints per case the latency of each per seed, the ratio B/A per seed (above 1:
A is faster), its geometric mean over the seeds the case has both for, and over all cases
the geometric mean of the per-case means and the count of cases where A is no slower.
A case is a program on a hardware at its fast capacities (the held-out cases run one program
at two). A seed raced twice for the same solver and case is an error (exit 2): the table would
depend on file order; with --later-wins the later file's row is taken (a solver re-raced).
"""

import json
import math
import os
import sys


def results(paths):
    for p in paths:
        files = [os.path.join(p, f) for f in sorted(os.listdir(p)) if f.endswith(".json")] \
            if os.path.isdir(p) else [p]
        for f in files:
            d = json.load(open(f))
            for r in d["results"]:
                yield p, f, d["seed"], r


def fast_capacities(r):
    """The fast levels' capacities in bytes, from the result's settings (empty if absent)."""
    levels = r.get("settings", {}).get("hardware", {}).get("levels", [])
    return tuple(lv["capacity"] for lv in levels[1:] if "capacity" in lv)


def mib(c):
    return f"{c / 2**20:g}MiB"


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    free = "xla,xla-repack,greedy-size,beam"
    if "--seed-free" in args:
        i = args.index("--seed-free")
        free = args[i + 1]
        del args[i:i + 2]
    free = set(filter(None, free.split(",")))
    left_out = set()
    if "--leave-out" in args:
        i = args.index("--leave-out")
        left_out = set(filter(None, args[i + 1].split(",")))
        del args[i:i + 2]
    a_from = None
    if "--a-from" in args:
        i = args.index("--a-from")
        a_from = set(filter(None, args[i + 1].split(",")))
        del args[i:i + 2]
    later_wins = "--later-wins" in args
    if later_wins:
        args.remove("--later-wins")
    a, b, paths = args[0], args[1], args[2:]
    best_other = b == "best-other"
    rows, fixed = {}, {}
    for p, f, seed, r in results(paths + sorted(a_from or [])):
        solver = r["solver"]
        if a_from is not None and solver == a and p not in a_from:
            solver = a + "*"
        if a_from is not None and p in a_from and solver != a:
            continue
        if not r.get("valid", False) or solver in left_out \
                or not (solver in (a, b) or best_other and solver != a):
            continue
        key = (r["workload"], r["hardware"], fast_capacities(r))
        if best_other and solver in free:
            fixed.setdefault(key, {})[solver] = r["best_latency_s"]
            continue
        cell = rows.setdefault(key, {}).setdefault(seed, {})
        if solver in cell and not later_wins:
            print(f"error: {f}: {solver} on {key[0]} ({key[1]}, fast {key[2]}) seed {seed} twice",
                  file=sys.stderr)
            sys.exit(2)
        cell[solver] = r["best_latency_s"]
    if best_other:
        for key, by_seed in rows.items():
            for cell in by_seed.values():
                others = [v for k, v in cell.items() if k != a] + list(fixed.get(key, {}).values())
                for k in [k for k in cell if k != a]:
                    del cell[k]
                if others:
                    cell[b] = min(others)
    seeds = sorted({s for c in rows.values() for s in c})
    # A program raced at two capacities on one hardware is two cases; the capacity joins the
    # label only then, so the tier's tables read as before.
    per_hw = {}
    for w, hw, caps in list(rows) + list(fixed):
        per_hw.setdefault((w, hw), set()).add(caps)
    for (w, hw), caps in sorted(per_hw.items()):
        # A result that names no capacity (one from before results carried their settings)
        # beside one that does cannot be told apart from another case: refuse, rather than
        # split one case in two and drop both halves from the table.
        if () in caps and len(caps) > 1:
            print(f"error: {w} ({hw}): some results name no fast capacity and others do; "
                  "race them again or pass them apart", file=sys.stderr)
            sys.exit(2)
    print(f"| case | " + " | ".join(f"{a} s{s} | {b} s{s}" for s in seeds) + f" | {b}/{a} per seed | geomean |")
    print("|---|" + "---:|---:|" * len(seeds) + "---|---:|")
    means, table = [], []
    for (w, hw, caps), by_seed in sorted(rows.items()):
        if len(per_hw[(w, hw)]) > 1:
            hw = f"{hw} at {'+'.join(mib(c) for c in caps)}"
        ratios = []
        cells = []
        for s in seeds:
            c = by_seed.get(s, {})
            la, lb = c.get(a), c.get(b)
            cells += [f"{la * 1e6:,.1f}" if la else "", f"{lb * 1e6:,.1f}" if lb else ""]
            if la and lb:
                ratios.append(lb / la)
        if not ratios:
            continue
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        means.append(g)
        table.append({"workload": w, "hardware": hw, "seeds": {str(s): by_seed.get(s, {}) for s in seeds},
                      "ratios": ratios, "geomean": g})
        print(f"| {w} on {hw} | " + " | ".join(cells) + " | " + ", ".join(f"{x:.4f}" for x in ratios)
              + f" | {g:.4f}x |")
    if means:
        total = math.exp(sum(math.log(x) for x in means) / len(means))
        no_slower = sum(1 for x in means if x >= 1.0)
        faster = sum(1 for x in means if x > 1.0)
        print(f"\n{a} against {b}: geomean {total:.4f}x over {len(means)} cases ({b}/{a}, above 1: {a} faster); "
              f"{a} no slower on {no_slower}, strictly faster on {faster}")
        if out:
            with open(out, "w") as fh:
                json.dump({"a": a, "b": b, "cases": table, "geomean": total,
                           "a_no_slower": no_slower, "a_faster": faster}, fh, indent=1)


if __name__ == "__main__":
    main()
