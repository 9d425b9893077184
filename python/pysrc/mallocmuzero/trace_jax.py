"""JAX functions as programs: `trace_jax(fn, *example_args)` -> `Program`.

The function is jitted (`jax.jit(fn, keep_unused=True)`, so entry parameter k is the k-th
leaf of the flattened arguments), lowered on the example arguments, and its HLO text read
by the Rust HLO loader (bench_workloads::hlo; docs/workloads.md has the rules):

- stage="optimized" (the default): `lowered.compile().as_text()`, the module XLA optimized
  and scheduled for this machine's backend: XLA's schedule, XLA's fusions (on CPU they are
  coarse: the buffers between fused ops are gone);
- stage="lowered": `lowered.as_text(dialect="hlo")`, the module before XLA's
  optimizations: every op of the JAX program in program order (calls inlined).

A training step traces the same way: `jax.value_and_grad` and an update (optax or by
hand) inside `fn`. jax is optional: it is imported when a function is traced.
"""

from __future__ import annotations

import json

_NEEDS_JAX = "mallocmuzero.trace_jax needs jax (pip install jax, or the package's [jax] extra)"
STAGES = ("optimized", "lowered")


def _jax():
    try:
        import jax
    except ModuleNotFoundError as e:
        if e.name == "jax" or (e.name or "").startswith("jax."):
            raise ImportError(_NEEDS_JAX) from e
        raise
    return jax


def hlo_text(fn, *example_args, stage: str = "optimized") -> str:
    """The HLO text of `fn` jitted and lowered on `example_args`, at `stage`."""
    if stage not in STAGES:
        raise ValueError(f"stage: must be one of {', '.join(STAGES)}, got {stage!r}")
    jax = _jax()
    lowered = jax.jit(fn, keep_unused=True).lower(*example_args)
    if stage == "optimized":
        return lowered.compile().as_text()
    return lowered.as_text(dialect="hlo")


def weight_parameters(example_args, weights) -> list:
    """The entry parameter numbers of the leaves of the arguments numbered in `weights`."""
    jax = _jax()
    chosen = set(weights)
    bad = [w for w in chosen if not (isinstance(w, int) and 0 <= w < len(example_args))]
    if bad:
        raise ValueError(f"weights: argument numbers in 0..{len(example_args)}, got {sorted(bad, key=str)}")
    out, n = [], 0
    for i, a in enumerate(example_args):
        k = len(jax.tree_util.tree_leaves(a))
        if i in chosen:
            out.extend(range(n, n + k))
        n += k
    return out


def _program(fn, example_args, name, stage, weights, description):
    from mallocmuzero._native import Program

    text = hlo_text(fn, *example_args, stage=stage)
    return Program.from_hlo(
        text,
        f"trace_jax of {name}",
        name=name,
        weight_parameters=weight_parameters(example_args, weights),
        description=description,
    )


def trace_jax(fn, *example_args, name: str = "model", stage: str = "optimized", weights=(0,), description=None):
    """`fn` on `example_args` as a `mallocmuzero.Program`, ready for `Game`, `evaluate` or
    `Program.to_json()`. `weights`: the numbers of the arguments that hold weights (and
    optimizer state); their leaves become `weight` buffers, the rest `input`s."""
    return _program(fn, example_args, name, stage, weights, description)


def trace_jax_to_dict(fn, *example_args, name: str = "model", stage: str = "optimized", weights=(0,), description=None) -> dict:
    """The program file (a dict in the `mallocmuzero-program` format) of `fn` on
    `example_args` (see `trace_jax`); its `source` records jax's version and the stage."""
    jax = _jax()
    p = _program(fn, example_args, name, stage, weights, description)
    doc = json.loads(p.to_json())
    doc["source"] = {"generator": "mallocmuzero.trace_jax", "jax": jax.__version__, "stage": stage}
    return doc
