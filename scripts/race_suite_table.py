#!/usr/bin/env python3
"""Markdown table of one solver against every other in a race (`race --suite --json`).

Per case: every solver's best latency (us), the best solver other than AGENT (the first of
equals in the order raced), AGENT's speedup over it (> 1: AGENT is faster), AGENT's gap to
the lower bound, and the primal integrals of AGENT and of PEER. Then the figures issue 43
asks for: on how many cases AGENT is no slower than every other solver and strictly faster,
its geomean over the best other, and on how many its primal integral is no higher than
PEER's. Several files (e.g. a solver raced on its own afterwards) are merged; a case
missing a solver, or a result that is not valid, stops the script (with --missing-ok a
missing solver's cell is `-`, the best other is among those raced, and a case without
PEER is left out of the primal-integral count; AGENT must be in every case; --leave-out S drops
solver S's results, and may be given more than once). A program raced at two fast capacities on
one hardware is two cases, labelled with the capacity. A file's bound is the
best its race knew (a solver raced alone knows only the physical one), so the gaps and the
primal integrals are computed here from each result's curve against the case's tightest
bound over all the files: merged results are compared on one bound.

    python3 scripts/race_suite_table.py muzero local-search race.json [more.json ...] [--missing-ok]
        [--leave-out SOLVER ...]
"""

import json
import math
import sys

from pair_table import fast_capacities, mib


def load(paths, missing_ok=False, leave_out=()):
    cases, solvers = {}, []
    for p in paths:
        with open(p) as f:
            race = json.load(f)
            for r in race["results"]:
                if r["solver"] in leave_out:
                    continue
                # Files of older races do not say their budget: their own integral is kept.
                r["budget_s"] = race.get("seconds")
                if not r.get("valid", False):
                    sys.exit(f"{p}: {r['solver']} on {r['workload']}: not a valid result")
                # A program raced at two capacities on one hardware is two cases.
                case = (r["workload"], r["hardware"], fast_capacities(r))
                cases.setdefault(case, {})[r["solver"]] = r
                if r["solver"] not in solvers:
                    solvers.append(r["solver"])
    per_hw = {}
    for w, h, caps in cases:
        per_hw.setdefault((w, h), set()).add(caps)
    labelled = {}
    for (w, h, caps), rs in cases.items():
        # As in pair_table.py: a result naming no capacity beside one that does cannot be
        # told apart from another case, so refuse rather than split the case in two.
        if () in per_hw[(w, h)] and len(per_hw[(w, h)]) > 1:
            sys.exit(f"{w} on {h}: some results name no fast capacity and others do")
        # The capacity joins the label only where it tells two cases apart.
        if len(per_hw[(w, h)]) > 1:
            h = f"{h} at {'+'.join(mib(c) for c in caps)}"
        missing = [s for s in solvers if s not in rs]
        if missing and not missing_ok:
            sys.exit(f"{w} on {h}: no result of {', '.join(missing)}")
        labelled[(w, h)] = rs
    return labelled, solvers


def integral(r, bound):
    """The primal integral of `r`'s curve over its budget against `bound`, as the race
    computes it (harness/src/bounds.rs): the gap 1 - bound/latency, 1 before the first
    point, integrated over time and divided by the budget."""
    budget = r["budget_s"]
    if budget is None:
        v = r.get("primal_integral")
        return math.inf if v is None else v
    if not bound or bound <= 0 or not budget > 0:
        return math.inf
    area, t_prev, g_prev = 0.0, 0.0, 1.0
    for t, l in r.get("curve", []):
        t = min(max(t, t_prev), budget)
        area += g_prev * (t - t_prev)
        t_prev = t
        g_prev = min(g_prev, min(max(1.0 - bound / l, 0.0), 1.0))
    area += g_prev * (budget - t_prev)
    return area / budget


def main(agent, peer, paths, missing_ok=False, leave_out=()):
    cases, solvers = load(paths, missing_ok, leave_out)
    if agent not in solvers or peer not in solvers:
        sys.exit(f"no {agent} or no {peer} result")
    others = [s for s in solvers if s != agent]
    print(f"| case | {' | '.join(solvers)} | best other | {agent} vs best other "
          f"| {agent} gap to bound | primal integral, {agent} / {peer} |")
    print("|---|" + "---:|" * len(solvers) + "---|---:|---:|---|")
    logs, no_slower, faster, pi_ok, pi_n = 0.0, 0, 0, 0, 0
    for (w, h), rs in cases.items():
        if agent not in rs:
            sys.exit(f"{w} on {h}: no result of {agent}")
        us = {s: rs[s]["best_latency_s"] * 1e6 for s in solvers if s in rs}
        if len(us) < 2:
            sys.exit(f"{w} on {h}: no result of a solver other than {agent}")
        best = min((s for s in others if s in rs), key=lambda s: us[s])
        x = us[best] / us[agent]
        logs += math.log(x)
        no_slower += us[agent] <= us[best]
        faster += us[agent] < us[best]
        bound = max((r.get("lower_bound_s") or 0.0) for r in rs.values())
        if peer in rs:
            pis = {s: integral(rs[s], bound) for s in (agent, peer)}
            pi_ok += pis[agent] <= pis[peer]
            pi_n += 1
            pi = f"{pis[agent]:.3f} / {pis[peer]:.3f}"
        else:
            pi = f"{integral(rs[agent], bound):.3f} / -"
        gap = "-" if not bound else f"{(rs[agent]['best_latency_s'] / bound - 1) * 100:.2f}%"
        cells = " | ".join("-" if s not in us else f"*{us[s]:.1f}*" if s == best
                           else f"{us[s]:.1f}" for s in solvers)
        print(f"| {w} on {h} | {cells} | {best} | {x:.4f}x | {gap} | {pi} |")
    n = len(cases)
    print(f"\n{agent}: no slower than every other solver on {no_slower} of {n}, strictly "
          f"faster on {faster}; {math.exp(logs / n):.4f}x the best other in geomean; primal "
          f"integral no higher than {peer}'s on {pi_ok} of {pi_n}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--missing-ok"]
    leave_out = []
    while "--leave-out" in args:
        i = args.index("--leave-out")
        if i + 1 >= len(args):
            sys.exit("--leave-out needs a solver's name")
        leave_out.append(args[i + 1])
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    main(args[0], args[1], args[2:], missing_ok="--missing-ok" in sys.argv[1:],
         leave_out=leave_out)
