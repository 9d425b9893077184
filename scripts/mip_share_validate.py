#!/usr/bin/env python3
"""Chooses the share of mallocMuZero's race budget spent on the MIP whose line starts its
search (`race --mip-share`), on validation programs: never a case of the suite, the scale
tier or the held-out programs.

    python3 scripts/mip_share_validate.py [--seconds 30] [--threads 2] [--shares 0 0.25 0.5]
        [--cli target/release/mallocmuzero] [--json out.json]
        [--hw nnp-i-like --fast-capacity scale-rule] [--programs tier-size]

Each case is raced once per share (`--solver muzero --mip-share X`), the shares of one case
one after another so that they meet the same machine; prints each case's latency per
share, which start the search came from, and the geometric mean of each share's latency
over the best share's per case (lower is better). Exit 2 on a failed race.
"""

import argparse
import json
import math
import subprocess
import sys

# Validation programs at capacities that bind (about 1/4 to 1/10 of their peak live
# bytes): the generalist's validation families, the bundled JAX training steps, and two
# bundled models outside the suite.
CASES = [
    ("shufflenet-v2", "2MiB"),
    ("regnet-y-400mf", "4MiB"),
    ("googlenet", "4MiB"),
    ("llama-small-s128", "16MiB"),
    ("jax-transformer-4l-train", "8MiB"),
    ("jax-transformer-4l-train-lowered", "8MiB"),
]


# Validation programs of the scale tier's size (537-3,052 ops, optimized and lowered): the
# generalist's JAX programs (bench-workloads/data/generalist), none of the suite, the tier or
# the held-out programs, each at the scale rule's capacity.
TIER_SIZE = [(f"jax-{m}{form}", "scale-rule")
             for m in ["bert-6l-mlm-train", "encoder-24l-forward", "llama-6l-train", "mixer-8l-train",
                       "regnety-train", "wrn-16-train"]
             for form in ["", "-lowered"]]


def race(cli, workload, cap, seconds, threads, share, hw):
    args = [cli, "race", "--workload", workload, "--hw", hw, "--fast-capacity", cap, "--seconds", str(seconds),
            "--threads", str(threads), "--solver", "muzero", "--mip-share", str(share), "--json"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"error: {' '.join(args)}: {out.stderr.strip()}", file=sys.stderr)
        sys.exit(2)
    r = json.loads(out.stdout)["results"][0]
    return r["best_latency_s"], r.get("start", "?"), r.get("moves"), r.get("mip_beside")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.25, 0.5])
    ap.add_argument("--cli", default="target/release/mallocmuzero")
    ap.add_argument("--json")
    ap.add_argument("--hw", default="tpu-v4i-like",
                    help="the hardware (nnp-i-like: two fast levels)")
    ap.add_argument("--fast-capacity",
                    help="one capacity for every case in place of the table's (scale-rule, say)")
    ap.add_argument("--programs", choices=["small", "tier-size"], default="small",
                    help="small: the table above; tier-size: the generalist's programs of the tier's size")
    a = ap.parse_args()
    cases = CASES if a.programs == "small" else TIER_SIZE
    rows = []
    print(f"| case | " + " | ".join(f"share {s}" for s in a.shares) + " |")
    print("|---|" + "---:|" * len(a.shares))
    for w, cap in cases:
        cap = a.fast_capacity or cap
        got = [race(a.cli, w, cap, a.seconds, a.threads, s, a.hw) for s in a.shares]
        rows.append({"workload": w, "fast_capacity": cap,
                     "by_share": {str(s): {"latency_s": l, "start": st, "moves": m, "mip_beside": mb}
                                  for s, (l, st, m, mb) in zip(a.shares, got)}})
        cells = [f"{l * 1e6:.2f} ({st})" for l, st, _, _ in got]
        print(f"| {w} at {cap} | " + " | ".join(cells) + " |", flush=True)
    print()
    for s in a.shares:
        ratios = []
        for r in rows:
            best = min(v["latency_s"] for v in r["by_share"].values())
            ratios.append(r["by_share"][str(s)]["latency_s"] / best)
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"share {s}: geomean {g:.5f} of the best share per case; best on "
              f"{sum(1 for x in ratios if x == 1.0)} of {len(ratios)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seconds": a.seconds, "threads": a.threads, "hw": a.hw, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
