#!/usr/bin/env python3
"""The scale table of docs/exact.md "Windows": the exact solver and the local search, each
raced for the same seconds and threads, on large programs at capacities that bind, with one
or more builds of the binary (today's pipeline, the pipeline with windows, HiGHS).

    python3 scripts/exact_windows.py LABEL=BINARY [LABEL=BINARY ...] [--seconds 60]
        [--threads 2] [--cases FILE] [--exact-only] [--out DIR]

A case is a line `WORKLOAD HARDWARE CAPACITY` (`--cases FILE`, `#` comments; default: the
cases below). Each (case, build) is one `race --json` process under `timeout` (three times
the seconds, plus a minute); its JSON is kept in `--out`. Prints one markdown row per case
and build: the exact solver's latency, the case's bound and its source, the gap, what the
MIP proved and how the mapping was found, and the local search's latency and gap beside it.
"""
import argparse
import json
import os
import subprocess
import sys

DEFAULT_CASES = """
bench-workloads/data/jax/jax-transformer-4l-train-lowered.hlo.txt tpu-v4i-like 16MiB
bench-workloads/data/jax/jax-transformer-4l-train-lowered.hlo.txt tpu-v4i-like 4MiB
bench-workloads/data/jax/jax-transformer-4l-train.hlo.txt tpu-v4i-like 8MiB
bench-workloads/data/jax/jax-transformer-4l-train.hlo.txt tpu-v4i-like 2MiB
bench-workloads/heldout/swin-t.json tpu-v4i-like 16MiB
bench-workloads/heldout/densenet121.json tpu-v4i-like 8MiB
"""


def cases_of(path):
    text = open(path).read() if path else DEFAULT_CASES
    out = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            w, h, c = line.split()
            out.append((w, h, c))
    return out


def race(binary, case, seconds, threads, exact_only):
    w, h, c = case
    cmd = [binary, "race", "--workload", w, "--hw", h, "--fast-capacity", c,
           "--seconds", str(seconds), "--threads", str(threads), "--solver", "exact", "--json"]
    if not exact_only:
        cmd += ["--solver", "local-search"]
    p = subprocess.run(["timeout", str(int(seconds * 3 + 60))] + cmd,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
    return json.loads(p.stdout), None


def short(path):
    name = os.path.basename(path)
    for ext in (".hlo.txt", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


def row(case, label, data):
    by = {r["solver"]: r for r in data["results"]}
    e = by.get("exact", {})
    ls = by.get("local-search")
    proof = e.get("proof") or {}
    us = lambda s: f"{s * 1e6:.1f}" if s else "-"
    gap = lambda r: f"{r['gap_to_bound'] * 100:.2f}%" if r and r.get("gap_to_bound") is not None else "-"
    how = []
    if proof:
        how.append(f"{proof['status']}, {proof['candidates']} holds")
        if proof.get("windows"):
            wnd = proof["windows"]
            how.append(f"{wnd['accepted']}/{wnd['repairs']} repairs")
        if proof.get("polished"):
            how.append("local search")
    return "| {} on {} ({}) | {} | {} ({}) | {} | {} | {} | {} | {} |".format(
        short(case[0]), case[1], case[2], label,
        us(e.get("lower_bound_s")), e.get("bound_source", "-"),
        us(e.get("best_latency_s")), gap(e), "; ".join(how) or "-",
        us(ls["best_latency_s"]) if ls else "-", gap(ls),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+", help="LABEL=BINARY")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases")
    ap.add_argument("--exact-only", action="store_true")
    ap.add_argument("--out", default="/tmp/exact-windows")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    builds = [b.split("=", 1) for b in a.builds]
    print("| case | build | bound (µs) | exact (µs) | gap | how | local search (µs) | gap |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for case in cases_of(a.cases):
        for label, binary in builds:
            data, err = race(binary, case, a.seconds, a.threads, a.exact_only)
            tag = f"{short(case[0])}-{case[1]}-{case[2]}-{label}"
            if err:
                print(f"| {short(case[0])} on {case[1]} ({case[2]}) | {label} | error: {err} |")
                continue
            with open(os.path.join(a.out, tag + ".json"), "w") as f:
                json.dump(data, f)
            print(row(case, label, data))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
