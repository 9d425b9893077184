"""Writes the HLO text of the JAX programs in scripts/jax_programs.py,
scripts/jax_scale_programs.py and scripts/jax_generalist_programs.py (needs jax==0.10.2).

    python3 scripts/export_jax_hlo.py --checks   # bench-workloads/tests/data/hlo/
    python3 scripts/export_jax_hlo.py --bundle   # bench-workloads/data/jax/
    python3 scripts/export_jax_hlo.py --scale    # bench-workloads/data/scale/
    python3 scripts/export_jax_hlo.py --generalist # bench-workloads/data/generalist/

--checks writes each cross-check program's scheduled module (NAME.hlo.txt), its module
before optimization (NAME.lowered.hlo.txt), and XLA's own figures for them (xla.json:
cost_analysis() and memory_analysis() of the compiled program, and which entry parameters
hold weights), which bench-workloads/tests/hlo_xla.rs compares the loader against.
--bundle writes the bundled workloads' scheduled modules (the module before optimization
for those in jax_programs.BUNDLED_LOWERED).
--scale writes the scale tier: each model of jax_scale_programs.MODELS as its scheduled
module (NAME.hlo.txt.gz) and its module before optimization (NAME-lowered.hlo.txt.gz),
gzip-compressed, and scale.json: for each program its file, stage, weight parameter count,
description and XLA's figures of the compiled program (bench-workloads/src/scale.rs reads
it; ONLY=NAME,NAME rewrites some models and keeps the others' entries).
--generalist writes the generalist's training and validation programs of the tier's size
(jax_generalist_programs.MODELS) the same way, with generalist.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_programs  # noqa: E402
import jax_scale_programs  # noqa: E402
import jax_generalist_programs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def weight_parameters(args, weight_argnums):
    """The entry parameter numbers of the leaves of `weight_argnums` (jit with
    keep_unused=True numbers the flattened leaves of the arguments in order)."""
    out, n = [], 0
    for i, a in enumerate(args):
        k = len(jax.tree_util.tree_leaves(a))
        if i in weight_argnums:
            out.extend(range(n, n + k))
        n += k
    return out


def figures(compiled):
    cost = compiled.cost_analysis()
    if isinstance(cost, list):  # older jax returned one dict per device
        cost = cost[0]
    mem = compiled.memory_analysis()
    return {
        "flops": cost.get("flops", 0.0),
        "transcendentals": cost.get("transcendentals", 0.0),
        "bytes_accessed": cost.get("bytes accessed", 0.0),
        "argument_bytes": mem.argument_size_in_bytes,
        "output_bytes": mem.output_size_in_bytes,
        "alias_bytes": mem.alias_size_in_bytes,
        "temp_bytes": mem.temp_size_in_bytes,
    }


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_gz(path, text):
    """gzip with no name and no time in its header, so the same text gives the same bytes."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
        f.write(text.encode())
    os.replace(tmp, path)


def checks(out):
    os.makedirs(out, exist_ok=True)
    table = {"jax": jax.__version__, "programs": {}}
    for name, make in jax_programs.CHECKS.items():
        fn, args, weights, description = make()
        lowered = jax.jit(fn, keep_unused=True).lower(*args)
        compiled = lowered.compile()
        write(os.path.join(out, f"{name}.hlo.txt"), compiled.as_text())
        write(os.path.join(out, f"{name}.lowered.hlo.txt"), lowered.as_text(dialect="hlo"))
        entry = {
            "description": description,
            "weight_parameters": weight_parameters(args, weights),
            "xla": figures(compiled),
        }
        if name == "rnn-scan":
            # XLA's cost analysis counts a while loop's body once; the loop fully unrolled
            # by JAX is the straight-line program whose totals the unrolled loader matches.
            fn_u, args_u, _, _ = jax_programs.rnn_scan(unroll=True)
            unrolled = jax.jit(fn_u, keep_unused=True).lower(*args_u).compile()
            entry["xla_unrolled"] = figures(unrolled)
        table["programs"][name] = entry
        print(name, entry["xla"], flush=True)
    write(os.path.join(out, "xla.json"), json.dumps(table, indent=1) + "\n")


def bundle(out):
    os.makedirs(out, exist_ok=True)
    for name, make in jax_programs.BUNDLED.items():
        fn, args, weights, description = make()
        params = weight_parameters(args, weights)
        assert params == list(range(len(params))), "weights must be the first arguments"
        lowered = jax.jit(fn, keep_unused=True).lower(*args)
        if name in jax_programs.BUNDLED_LOWERED:
            text = lowered.as_text(dialect="hlo")
        else:
            text = lowered.compile().as_text()
        write(os.path.join(out, f"{name}.hlo.txt"), text)
        print(f"{name}: weights {len(params)}: {description}")


def tier(out, only, models, manifest):
    """Each model of `models` in both stages, gzip-compressed, and the manifest."""
    os.makedirs(out, exist_ok=True)
    manifest_path = os.path.join(out, manifest)
    kept = []
    if only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            kept = [p for p in json.load(f)["programs"] if p["model"] not in only and p["model"] in models]
    programs = []
    for name, make in models.items():
        if only and name not in only:
            continue
        fn, args, weights, description = make()
        params = weight_parameters(args, weights)
        assert params == list(range(len(params))), "weights must be the first arguments"
        lowered = jax.jit(fn, keep_unused=True).lower(*args)
        compiled = lowered.compile()
        xla = figures(compiled)
        del args
        for stage, suffix, text in (
            ("optimized", "", compiled.as_text()),
            ("lowered", "-lowered", lowered.as_text(dialect="hlo")),
        ):
            file = f"{name}{suffix}.hlo.txt.gz"
            write_gz(os.path.join(out, file), text)
            programs.append(
                {
                    "name": name + suffix,
                    "model": name,
                    "file": file,
                    "stage": stage,
                    "weights": len(params),
                    "description": description,
                    "xla": xla,
                }
            )
            print(f"{name}{suffix}: {len(text)} chars, weights {len(params)}", flush=True)
    order = list(models)
    programs = sorted(kept + programs, key=lambda p: (order.index(p["model"]), p["stage"] == "lowered"))
    table = {"jax": jax.__version__, "programs": programs}
    write(manifest_path, json.dumps(table, indent=1) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checks", action="store_true")
    ap.add_argument("--bundle", action="store_true")
    ap.add_argument("--scale", action="store_true")
    ap.add_argument("--generalist", action="store_true")
    ap.add_argument("--checks-dir", default=os.path.join(ROOT, "bench-workloads/tests/data/hlo"))
    ap.add_argument("--bundle-dir", default=os.path.join(ROOT, "bench-workloads/data/jax"))
    ap.add_argument("--scale-dir", default=os.path.join(ROOT, "bench-workloads/data/scale"))
    ap.add_argument("--generalist-dir", default=os.path.join(ROOT, "bench-workloads/data/generalist"))
    a = ap.parse_args()
    if not (a.checks or a.bundle or a.scale or a.generalist):
        ap.error("give --checks, --bundle, --scale, --generalist or several")
    if a.checks:
        checks(a.checks_dir)
    if a.bundle:
        bundle(a.bundle_dir)
    only = {n for n in os.environ.get("ONLY", "").split(",") if n}
    for chosen, models, out, manifest in (
        (a.scale, jax_scale_programs.MODELS, a.scale_dir, "scale.json"),
        (a.generalist, jax_generalist_programs.MODELS, a.generalist_dir, "generalist.json"),
    ):
        if not chosen:
            continue
        unknown = only - set(models)
        if unknown:
            ap.error(f"ONLY: no such model {sorted(unknown)} (models: {list(models)})")
        tier(out, only, models, manifest)


if __name__ == "__main__":
    main()
