#!/usr/bin/env python3
"""The backend table of docs/exact.md "Backends: microlp and HiGHS": the exact solver with
microlp and with HiGHS on every suite case and every small case (bench_workloads::small),
one `evaluate --solver exact --json` process per case and backend, the two backends
interleaved case by case so that machine noise hits both alike.

    cargo build --release -p mallocmuzero && cp target/release/mallocmuzero /tmp/mmz-microlp
    cargo build --release -p mallocmuzero --features highs && cp target/release/mallocmuzero /tmp/mmz-highs
    python3 scripts/exact_backends.py /tmp/mmz-microlp /tmp/mmz-highs [--seconds 60] [--out DIR]

Each call runs under `timeout` (twice the solver's seconds) and, where `taskset` exists, on
one core (`--cpu 1`). microlp has no time limit of its own: the solve stops waiting at the
limit and its thread runs on until the process exits, so every case is its own process.
The small cases come from `cargo run --release -p exact --example small_cases -- list`
(or `--small FILE` with its output), the suite from `BIN suite --json`. Prints the markdown
table, a summary line per backend, and any disagreement between the backends (a proven
optimum above the other's mapping, or a bound above the other's mapping, is a bug).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def suite_cases(binary):
    # No capacity: `evaluate` gives a suite workload on its suite hardware the suite's own.
    # (`suite --json`'s fast_capacity_bytes is every fast level's together, while
    # `--fast-capacity` sets the fastest level's: on nnp-i-like they differ.)
    out = subprocess.run([binary, "suite", "--json"], check=True, capture_output=True, text=True)
    return [(c["workload"], c["hardware"], None) for c in json.loads(out.stdout)["suite"]]


def small_cases(path):
    if path:
        with open(path) as f:
            text = f.read()
    else:
        text = subprocess.run(
            ["cargo", "run", "--release", "-q", "-p", "exact", "--example", "small_cases", "--", "list"],
            check=True, capture_output=True, text=True,
        ).stdout
    cases = []
    for line in text.splitlines():
        if line.strip():
            w, h, c = line.split()
            cases.append((w, h, int(c)))
    return cases


def run_case(binary, case, seconds, objective, cpu, out_dir, tag):
    w, h, cap = case
    cmd = []
    if cpu is not None and shutil.which("taskset"):
        cmd += ["taskset", "-c", str(cpu)]
    cmd += ["timeout", str(2 * seconds), binary, "evaluate", "--workload", w, "--hw", h]
    if cap is not None:
        cmd += ["--fast-capacity", str(cap)]
    cmd += ["--solver", "exact", "--exact-seconds", str(seconds), "--exact-objective", objective, "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    row = {"workload": w, "hardware": h, "capacity": cap,
           "backend": tag, "rc": p.returncode, "wall_s": wall}
    if out_dir:
        with open(os.path.join(out_dir, f"{w}-{h}-{tag}.json"), "w") as f:
            f.write(p.stdout)
        if p.stderr:
            with open(os.path.join(out_dir, f"{w}-{h}-{tag}.stderr"), "w") as f:
                f.write(p.stderr)
    if p.returncode == 0:
        r = next(r for r in json.loads(p.stdout)["results"] if r["solver"] == "exact")
        row.update(r)
    else:
        row["error"] = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return row


def us(x):
    return f"{x * 1e6:.2f}"


def cell_row(r):
    if "proof" not in r:
        kind = "timeout (killed)" if r["rc"] in (124, 137) else f"error rc {r['rc']}"
        return f"| {r['name']} | {r['backend']} | {kind} | - | {r['wall_s']:.1f} | - | - | - | - |"
    p = r["proof"]
    proven = "yes" if p["optimal"] else f"no ({p['status']})"
    return (f"| {r['name']} | {p['backend']} | {proven} | {p['candidates']:,} | {r['solve_s']:.2f} | "
            f"{us(p['lower_bound_s']) if p['lower_bound_s'] > 0 else '0 (none)'} | {us(r['proxy_latency_s'])} | {p['gap'] * 100:.3f}% | "
            f"{us(r['latency_s'])} |")


def check(name, a, b):
    """Disagreements between two backends' rows of one case."""
    out = []
    if "proof" not in a or "proof" not in b:
        return out
    tol = 1e-9
    for x, y in [(a, b), (b, a)]:
        px, py = x["proof"], y["proof"]
        if px["optimal"] and x["proxy_latency_s"] > y["proxy_latency_s"] * (1 + tol):
            out.append(f"{name}: {px['backend']} says optimal at {us(x['proxy_latency_s'])} us but "
                       f"{py['backend']} found {us(y['proxy_latency_s'])} us")
        if px["lower_bound_s"] > y["proxy_latency_s"] * (1 + tol):
            out.append(f"{name}: {px['backend']}'s bound {us(px['lower_bound_s'])} us is above "
                       f"{py['backend']}'s mapping at {us(y['proxy_latency_s'])} us")
    return out


def excess(a, b):
    """a's unproven mapping above b's proven optimum, as text, or None."""
    if "proof" in a and "proof" in b and not a["proof"]["optimal"] and b["proof"]["optimal"]:
        return f"{a['name']} {(a['proxy_latency_s'] / b['proxy_latency_s'] - 1) * 100:+.2f}%"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("microlp", help="mallocmuzero built without --features highs")
    ap.add_argument("highs", help="mallocmuzero built with --features highs")
    ap.add_argument("--seconds", type=int, default=60, help="--exact-seconds per case (default 60)")
    ap.add_argument("--objective", default="proxy",
                    help="--exact-objective (default proxy: the MIP alone; simulated adds the local search, which spends the whole budget)")
    ap.add_argument("--cpu", type=int, default=1, help="core for taskset (-1: no pinning)")
    ap.add_argument("--small", help="the small cases' list (default: run the small_cases example)")
    ap.add_argument("--out", help="folder for each call's JSON")
    args = ap.parse_args()
    cpu = None if args.cpu < 0 else args.cpu
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    cases = [("suite", c) for c in suite_cases(args.microlp)] + [("small", c) for c in small_cases(args.small)]
    backends = [("microlp", args.microlp), ("highs", args.highs)]
    t0 = time.monotonic()
    rows, problems, unproven = [], [], {}
    for kind, case in cases:
        w, h, cap = case
        name = f"{w} on {h}" if kind == "suite" else f"{w} on {h} ({cap / 2**20:.2f} MiB)"
        pair = []
        for tag, binary in backends:
            r = run_case(binary, case, args.seconds, args.objective, cpu, args.out, tag)
            r["name"], r["kind"] = name, kind
            pair.append(r)
            print(f"{name} {tag}: rc {r['rc']} in {r['wall_s']:.1f} s "
                  f"{r.get('proof', {}).get('status', r.get('error', ''))}", file=sys.stderr, flush=True)
        problems += check(name, *pair)
        for x, y in [pair, pair[::-1]]:
            e = excess(x, y)
            if e:
                unproven.setdefault(x["backend"], []).append(e)
        rows += pair
    wall = time.monotonic() - t0

    print("| case | backend | proven | candidates | seconds | bound (µs) | cost model (µs) | gap | simulated (µs) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(cell_row(r))
    print()
    for tag, _ in backends:
        mine = [r for r in rows if r["backend"] == tag]
        proven = [r for r in mine if r.get("proof", {}).get("optimal")]
        parts = []
        for kind in ["suite", "small"]:
            part = [r for r in mine if r["kind"] == kind]
            parts.append(f"{kind} {sum(1 for r in part if r in proven)} of {len(part)}")
        secs = [r["solve_s"] if "solve_s" in r else r["wall_s"] for r in mine]
        median_proven = f"{statistics.median(r['solve_s'] for r in proven):.2f} s" if proven else "-"
        print(f"- **{tag}**: proven on {len(proven)} of {len(mine)} ({', '.join(parts)}); "
              f"median {statistics.median(secs):.2f} s over all (unproven at the limit), "
              f"{median_proven} over the proven; slowest proof "
              f"{max((r['solve_s'] for r in proven), default=0):.2f} s; {sum(secs):.1f} s in all")
    for tag, items in unproven.items():
        print(f"- {tag}'s unproven mappings above the other backend's proven optimum (cost model): "
              + ", ".join(items))
    print()
    print(f"({args.seconds} s per case; measured in {wall / 60:.1f} min of wall time.)")
    if problems:
        print()
        print("Disagreements:")
        for p in problems:
            print(f"- {p}")


if __name__ == "__main__":
    main()
