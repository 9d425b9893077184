#!/usr/bin/env python3
"""The bundled generalist on held-out programs: zero-shot, then after a short fine-tune.

    cargo build --release -p mallocmuzero
    python3 scripts/generalist_table.py [--capacities 8MiB 16MiB] [--finetune-minutes 2]
        [--simulations 64] [--proposal-rounds R] [--out runs/generalist-eval]
        [--json results.json] [--no-finetune]

Held-out programs: the bundled workloads the generalist never trained on
(malloc_muzero::generalist::HELD_OUT_WORKLOADS, listed below) and every program file in
bench-workloads/heldout/ (families the suite lacks). Each runs on tpu-v4i-like at each
capacity.

Per case:
- the heuristics (xla, xla-repack, greedy-size, egrl-dp, greedy, beam, xla-game) and the
  bundled generalist (`evaluate --solver muzero --simulations 64`: one noise-free game,
  zero-shot, its search stepping through the game, the default, then its rounds of
  branch proposals from that game, 64 unless `--proposal-rounds`) in one `evaluate --json`
  call; `solve_s` of the muzero row is the time it took (network loaded and played); then
  the generalist again with `--search-model learned`;
- the fine-tune: `train --workload W --init bundled --minutes M` into its own folder (kept
  and reused if it exists), then its agent played the same way (`--checkpoint`, searching
  the game, and again with `--search-model learned`), and the best mapping the fine-tune
  run found (`best/summary.json`), which is what a user keeps.

Prints a markdown table (speedups over xla and over the best heuristic; geometric means and
how many cases are no slower than xla) and optionally writes every figure as JSON.
"""

import argparse
import glob
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
HELD_OUT_BUNDLED = ["resnet101", "mobilenet-v2", "bert-base-s384", "gpt2-small-s128"]
HEURISTICS = ["xla", "xla-repack", "greedy-size", "egrl-dp", "greedy", "beam", "xla-game"]
HARDWARE = "tpu-v4i-like"


def held_out_programs():
    files = sorted(glob.glob(os.path.join(ROOT, "bench-workloads", "heldout", "*.json")))
    return [(w, w) for w in HELD_OUT_BUNDLED] + [
        (os.path.splitext(os.path.basename(f))[0], f) for f in files
    ]


def run_json(cli, *args):
    out = subprocess.run([cli, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def case_args(workload, capacity):
    return ["--workload", workload, "--hw", HARDWARE, "--fast-capacity", capacity]


def zero_shot(cli, workload, capacity, sims, rounds=None, checkpoint=None, model=None,
              heuristics=False):
    solvers = [a for s in HEURISTICS for a in ("--solver", s)] if heuristics else []
    extra = ["--checkpoint", checkpoint] if checkpoint else []
    extra += ["--proposal-rounds", str(rounds)] if rounds is not None else []
    extra += ["--search-model", model] if model else []
    rows = run_json(
        cli, "evaluate", *case_args(workload, capacity), *solvers, "--solver", "muzero",
        "--simulations", str(sims), *extra,
    )["results"]
    return {r["solver"]: r for r in rows}


def fine_tune(cli, workload, capacity, minutes, out):
    if os.path.exists(os.path.join(out, "run.json")):
        return json.load(open(os.path.join(out, "best", "summary.json")))
    t0 = time.time()
    summary = run_json(
        cli, "train", *case_args(workload, capacity), "--init", "bundled",
        "--minutes", str(minutes), "--out", out,
    )
    summary["wall_s"] = time.time() - t0
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", default=os.path.join(ROOT, "target", "release", "mallocmuzero"))
    p.add_argument("--capacities", nargs="+", default=["8MiB", "16MiB"])
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--proposal-rounds", type=int, help="the agent's default unless given")
    p.add_argument("--finetune-minutes", type=float, default=2.0)
    p.add_argument("--no-finetune", action="store_true")
    p.add_argument("--out", default=os.path.join(ROOT, "runs", "generalist-eval"))
    p.add_argument("--json")
    a = p.parse_args()
    results = []
    for name, workload in held_out_programs():
        for cap in a.capacities:
            sims, rounds = a.simulations, a.proposal_rounds
            rows = zero_shot(a.cli, workload, cap, sims, rounds, heuristics=True)
            learned = zero_shot(a.cli, workload, cap, sims, rounds, model="learned")["muzero"]
            xla = rows["xla"]["latency_s"]
            heuristics = [s for s in rows if s != "muzero" and rows[s]["valid"]]
            heur = min(heuristics, key=lambda s: rows[s]["latency_s"])
            r = {
                "program": name, "capacity": cap, "xla_s": xla,
                "best_heuristic": heur, "best_heuristic_s": rows[heur]["latency_s"],
                "zero_shot_s": rows["muzero"]["latency_s"], "zero_shot_time_s": rows["muzero"]["solve_s"],
                "lower_bound_s": rows["muzero"].get("lower_bound_s"),
                "zero_shot_learned_s": learned["latency_s"],
                "zero_shot_learned_time_s": learned["solve_s"],
            }
            if not a.no_finetune:
                out = os.path.join(a.out, f"{name}-{cap}")
                summary = fine_tune(a.cli, workload, cap, a.finetune_minutes, out)
                tuned = zero_shot(a.cli, workload, cap, sims, rounds, checkpoint=out)["muzero"]
                tuned_learned = zero_shot(
                    a.cli, workload, cap, sims, rounds, checkpoint=out, model="learned"
                )["muzero"]
                r.update(
                    fine_tuned_s=tuned["latency_s"],
                    fine_tuned_learned_s=tuned_learned["latency_s"],
                    fine_tune_best_s=summary["best_latency_s"],
                )
            results.append(r)
            print(json.dumps(r), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print_table(results, a)


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def print_table(results, a):
    tuned = not a.no_finetune
    head = ["program", "fast", "xla (us)", "best heuristic", "zero-shot vs xla", "vs best heur.",
            "gap to bound", "time (s)"]
    if tuned:
        head += ["fine-tuned vs xla", "vs best heur.", "gap to bound",
                 "fine-tune best vs xla", "vs best heur.", "gap to bound"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    cols = {k: [] for k in ["zero_shot_s", "zero_shot_learned_s", "fine_tuned_s",
                            "fine_tuned_learned_s", "fine_tune_best_s"]}
    for r in results:
        x, h = r["xla_s"], r["best_heuristic_s"]
        cells = [r["program"], r["capacity"], f"{x * 1e6:.1f}", f"{r['best_heuristic']} {x / h:.3f}x"]
        keys = ["zero_shot_s"] + (["fine_tuned_s", "fine_tune_best_s"] if tuned else [])
        for k in keys:
            v = r[k]
            cols[k].append((x / v, h / v))
            bound = r.get("lower_bound_s")
            cells += [f"{x / v:.3f}x", f"{h / v:.3f}x", f"{v / bound - 1:.2%}" if bound else "-"]
            if k == "zero_shot_s":
                cells.append(f"{r['zero_shot_time_s']:.2f}")
        print("| " + " | ".join(cells) + " |")
        for k in ["zero_shot_learned_s"] + (["fine_tuned_learned_s"] if tuned else []):
            cols[k].append((x / r[k], h / r[k]))
    times = [r["zero_shot_time_s"] for r in results]
    learned_times = [r["zero_shot_learned_time_s"] for r in results]
    print(f"\nzero-shot time per program: {min(times):.2f} to {max(times):.2f} s searching the "
          f"game, {min(learned_times):.2f} to {max(learned_times):.2f} s its learned model")
    for k, label in [("zero_shot_s", "zero-shot (searching the game, the default)"),
                     ("zero_shot_learned_s", "zero-shot (searching its learned model)"),
                     ("fine_tuned_s", "fine-tuned agent (searching the game, the default)"),
                     ("fine_tuned_learned_s", "fine-tuned agent (searching its learned model)"),
                     ("fine_tune_best_s", "fine-tune best mapping")]:
        v = cols[k]
        if not v:
            continue
        ok_xla = sum(1 for s, _ in v if s >= 1.0 - 1e-9)
        ok_heur = sum(1 for _, s in v if s >= 1.0 - 1e-9)
        print(f"\n{label}: geomean {gmean([s for s, _ in v]):.4f}x vs xla, "
              f"{gmean([s for _, s in v]):.4f}x vs the best heuristic; no slower than xla on "
              f"{ok_xla}/{len(v)}, than the best heuristic on {ok_heur}/{len(v)}")


if __name__ == "__main__":
    main()
