#!/usr/bin/env python3
"""Markdown table of the guide ablation (issue 43) over seeds: each guide against `uniform`.

The guides are race solvers: `uniform` is the local search (`local-search`, whose moves
`guided-uniform` reproduces), `bundled` is `muzero` or `guided-bundled` (the bundled generalist
guiding the local search; one name per race), `bundled+online` is `guided-bundled+online` and `untrained` is `guided-untrained`.
Each argument is `SEED=FILE[,FILE...]`: the `race --json` outputs of one seed, merged (e.g. a
guide raced on its own afterwards, with the same --seconds and --threads).

Per case: each guide's best latency (us) on each seed, and its speedup over uniform (> 1: the
guide is faster), the geomean over the case's seeds. Then, per guide, the geomean over every (case, seed) pair and over each seed
alone, on how many pairs it is ahead, level and behind, and its moves against uniform's
(geomean; where every result counts its moves). A guide missing on a case of a
seed where it was raced, or an invalid result, stops the script.

    python3 scripts/ablation_table.py 0=docs/race-suite-60s-guided.json 1=docs/race-suite-60s-seed1.json,runs/online-s1.json
"""

import json
import math
import sys

GUIDES = [
    ("uniform", ["local-search"]),
    ("bundled", ["muzero", "guided-bundled"]),
    ("bundled+online", ["guided-bundled+online"]),
    ("untrained", ["guided-untrained"]),
]
NAME = {s: g for g, names in GUIDES for s in names}


def load(arg):
    seed, _, files = arg.partition("=")
    if not files:
        sys.exit(f"{arg}: expected SEED=FILE[,FILE...]")
    cases = {}
    for p in files.split(","):
        with open(p) as f:
            data = json.load(f)
        if "seed" in data and str(data["seed"]) != seed:
            sys.exit(f"{p}: a race with --seed {data['seed']}, given as seed {seed}")
        for r in data["results"]:
            if not r.get("valid", False):
                sys.exit(f"{p}: {r['solver']} on {r['workload']}: not a valid result")
            case = f"{r['workload']} on {r['hardware']}"
            guide = NAME.get(r["solver"])
            if guide is None:
                continue
            rs = cases.setdefault(case, {})
            if guide in rs:
                sys.exit(f"seed {seed}, {case}: two results of the {guide} guide")
            rs[guide] = (r["best_latency_s"] * 1e6, r.get("moves"))
    return seed, cases


def main(args):
    seeds = [load(a) for a in args]
    raced = [g for g, _ in GUIDES if any(g in rs for _, cs in seeds for rs in cs.values())]
    for seed, cases in seeds:
        here = {g for g in raced if any(g in rs for rs in cases.values())}
        for case, rs in cases.items():
            missing = [g for g in here | {"uniform"} if g not in rs]
            if missing:
                sys.exit(f"seed {seed}, {case}: no result of {', '.join(missing)}")
    guides = [g for g in raced if g != "uniform"]
    names = " / ".join(seed for seed, _ in seeds)
    print(f"| case | uniform, seeds {names} | "
          + " | ".join(f"{g} | {g} vs uniform" for g in guides) + " |")
    print("|---|---:|" + "---:|---:|" * len(guides))
    pairs = {g: [] for g in guides}
    every = sorted({case for _, cases in seeds for case in cases})
    for case in every:
        here = [(seed, cases[case]) for seed, cases in seeds if case in cases]
        cells = [" / ".join(f"{rs['uniform'][0]:.2f}" for _, rs in here)]
        for g in guides:
            mine = []
            for seed, rs in here:
                if g in rs:
                    (u, u_moves), (latency, moves) = rs["uniform"], rs[g]
                    speed = moves / u_moves if moves and u_moves else None
                    mine.append((seed, u / latency, speed))
                    pairs[g].append(mine[-1])
            lat = " / ".join(f"{rs[g][0]:.2f}" if g in rs else "-" for _, rs in here)
            x = f"{geomean([x for _, x, _ in mine]):.4f}x" if mine else "-"
            cells += [lat, x]
        print(f"| {case} | " + " | ".join(cells) + " |")
    print()
    for g in guides:
        xs = [x for _, x, _ in pairs[g]]
        if not xs:
            continue
        per_seed = ", ".join(
            f"seed {s} {geomean([x for t, x, _ in pairs[g] if t == s]):.4f}x"
            for s in dict.fromkeys(t for t, _, _ in pairs[g])
        )
        ahead = sum(x > 1 for x in xs)
        behind = sum(x < 1 for x in xs)
        speeds = [v for _, _, v in pairs[g] if v is not None]
        moves = f"; moves {geomean(speeds):.2f}x uniform's" if len(speeds) == len(xs) else ""
        print(f"{g}: {geomean(xs):.4f}x uniform over {len(xs)} pairs ({per_seed}); "
              f"ahead {ahead}, level {len(xs) - ahead - behind}, behind {behind}{moves}")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
