"""Torch modules as programs: `trace(module, example_inputs)` -> `Program`.

The one implementation of tracing (scripts/export_workloads.py, which made the bundled
workloads, calls it too). torch is optional: it is imported when a module is traced.

Graph -> program rules
----------------------
- Placeholders: parameters, buffers (e.g. batch-norm running stats) and lifted constants ->
  buffers of kind "weight" (named by their module path, e.g. "conv1.weight"); user inputs ->
  kind "input". Placeholders that no kept op reads (e.g. num_batches_tracked) are dropped, so
  every weight and input is read at least once.
- Every call_function node that computes a tensor -> one op (name = FX node name, kind = short
  aten name such as "convolution", "addmm", "scaled_dot_product_attention"). Its tensor
  result(s) -> buffers of kind "activation", or "output" if a graph output is (a view of) it.
  For multi-result ops (native_layer_norm, _native_batch_norm_legit_no_training,
  max_pool2d_with_indices, ...) each result reached through getitem is a buffer written by
  that op, named "<op>.<index>"; results that nothing uses are not written.
- Dead code: walking the schedule backwards, an op is kept only if one of its results is a
  graph output or is read by a kept op; dead results are dropped from "writes".
- View-like ops produce no op and no buffer: their result aliases the input's buffer, so an
  op reading a view reads the viewed buffer. Aliased: every ATen overload whose schema says
  its first result aliases its input without writing it (view, _unsafe_view, reshape alias,
  expand, t, transpose, permute, unsqueeze, squeeze, flatten, slice, select, split,
  split_with_sizes, unbind, alias, detach, as_strided, ...), getitem of such a view's
  tuple, and copies (clone, contiguous, _to_copy, lift_fresh_copy) whose source is already a
  dense row-major tensor of the same shape and dtype (a compiler would not copy those). Copies
  that change the layout (clone of a permuted or broadcast view) or the dtype are ops.
  Each file's description lists the aliased op names actually seen.
- Reads: the buffers behind an op's tensor arguments, in argument order, each once (two
  views of one buffer are one read). An op never reads a buffer it writes (its results are
  fresh buffers). *_like constructors (full_like, zeros_like, ...) read nothing: they only
  need the shape.
- Nodes with no tensor result (_assert_tensor_metadata, sym_size, ...) are skipped.
- Sizes: floating-point tensors take --dtype-bytes bytes per element (default 2: bf16); other
  dtypes keep their own element size (int64 token ids: 8, bool masks: 1). Tracing itself runs
  in float32; only the recorded sizes change.
- Batch norm stays unfused (_native_batch_norm_legit_no_training reads x, weight, bias,
  running_mean, running_var); attention stays fused (scaled_dot_product_attention).

FLOP table (FLOP_TABLE below; "per element" means per output element):
- convolution: 2*N*Cout*Hout*Wout*(Cin/groups)*Kh*Kw (+ N*Cout*Hout*Wout with a bias);
  transposed: 2*N*Cin*Hin*Win*(Cout/groups)*Kh*Kw (+ bias likewise).
- mm: 2*M*N*K; addmm: 2*M*N*K + M*N; bmm: 2*B*M*N*K; baddbmm: + B*M*N.
- scaled_dot_product_attention: 2*B*H*Lq*Lk*(D + Dv) (= 4*B*H*Lq*Lk*D) + softmax 5*B*H*Lq*Lk.
- elementwise arithmetic, comparisons, logic, relu, where: 1 per element; hardtanh/clamp: 2;
  pow: 2; rsqrt: 2; exp/log/tanh/sigmoid/erf: 4; silu: 5; gelu: 8.
- _native_batch_norm_legit_no_training: 4 per element; native_layer_norm: 8 per element;
  _softmax/_log_softmax: 5 per element; cumsum: 1 per element.
- max_pool2d(_with_indices)/avg_pool2d: Kh*Kw per element; _adaptive_avg_pool2d: one per
  input element plus one per output element; reductions (mean, sum, amax, any, ...): one per
  input element.
- pure data movement or creation (cat, clone, _to_copy, embedding, index, constant_pad_nd,
  full, arange, scalar_tensor, ...): 0.
- anything else: 1 per element, with a warning printed (extend the table).

Stats (same definitions as the Rust IR, accel_sim::Program): T = number of ops; live range
of a weight/input = [0, last use]; of an activation = [def, last use] ([def, def] if never
read); of an output = [def, T-1]; peak_live_bytes = max over t of the bytes of buffers whose
inclusive live range covers t; total_flops = sum of op flops in schedule order.
"""

from __future__ import annotations

import json
import math
import operator

_NEEDS_TORCH = "mallocmuzero.trace needs torch (pip install torch, or the package's [trace] extra)"


def _fx():
    try:
        from mallocmuzero import _fx
    except ModuleNotFoundError as e:
        if e.name == "torch" or (e.name or "").startswith("torch."):
            raise ImportError(_NEEDS_TORCH) from e
        raise
    return _fx


def trace_to_dict(
    module,
    example_inputs,
    *,
    name: str = "model",
    dtype_bytes: int = 2,
    description: str | None = None,
    generator: str = "mallocmuzero.trace",
    source: dict | None = None,
) -> dict:
    """The program file (a dict in the `mallocmuzero-program` format) of `module` run on
    `example_inputs` (a tensor or a tuple of them), traced in eval mode under no_grad.
    `description` opens the file's description (what the model and its input are); the
    rest of it records how it was traced. `source` adds fields to the file's `source`."""
    dtype_bytes = _dtype_bytes(dtype_bytes)
    fx = _fx()
    torch = fx.torch
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("example_inputs: a tensor or a tuple of tensors")
    ep = fx.export(module, args)
    conv = fx.Converter(ep, dtype_bytes)
    buffers, ops = conv.run()
    check_program(buffers, ops)
    stats = compute_stats(buffers, ops)
    label = fx.dtype_label(torch.float32, dtype_bytes)
    kinds = {op["kind"] for op in ops}
    structure = ""
    if "_native_batch_norm_legit_no_training" in kinds:
        structure += "unfused batch norm (_native_batch_norm_legit_no_training); "
    if "scaled_dot_product_attention" in kinds:
        structure += "fused attention (scaled_dot_product_attention kept); "
    if description is None:
        shapes = ", ".join("x".join(str(d) for d in a.shape) for a in args)
        description = f"{type(module).__name__}, input {shapes}"
    desc = (
        f"{description}, eval mode, torch.export + core ATen decompositions; "
        f"floating-point tensors {label} ({dtype_bytes} B/elem), integer tensors at their own "
        f"size; {structure}views aliased, no op and no buffer "
        f"({', '.join(sorted(conv.aliased)) or 'none seen'}); "
        f"dead ops and unused placeholders dropped; FLOPs per the table in "
        f"{generator}"
    )
    for op in ops:
        op["flops"] = num(float(op["flops"]))
    return {
        "format": "mallocmuzero-program",
        "version": 1,
        "name": name,
        "description": desc,
        "source": {"generator": generator, **(source or {}), "dtype_bytes": dtype_bytes},
        "stats": {**stats, "total_flops": num(stats["total_flops"])},
        "buffers": buffers,
        "ops": [{k: op[k] for k in ("name", "kind", "flops", "reads", "writes")} for op in ops],
    }


def _dtype_bytes(dtype_bytes) -> int:
    # 2.0 and True pass `in (1, 2, 4, 8)` (2.0 would make every size a float, True one
    # byte); checked before torch is imported, so the error does not wait on it.
    try:
        if isinstance(dtype_bytes, bool):
            raise TypeError
        n = operator.index(dtype_bytes)
    except TypeError:
        raise TypeError(
            f"dtype_bytes: expected an int (1, 2, 4 or 8), got {type(dtype_bytes).__name__} {dtype_bytes!r}"
        ) from None
    if n not in (1, 2, 4, 8):
        raise ValueError(f"dtype_bytes: must be 1, 2, 4 or 8, got {n}")
    return n


def trace(module, example_inputs, *, name: str = "model", dtype_bytes: int = 2):
    """`module` on `example_inputs` as a `mallocmuzero.Program` (see `trace_to_dict`), ready
    for `Game`, `evaluate` or `Program.to_json()` (a file every command reads)."""
    doc = trace_to_dict(module, example_inputs, name=name, dtype_bytes=dtype_bytes)
    from mallocmuzero._native import Program

    return Program.from_json(json.dumps(doc), f"trace of {name}")


def unknown_op_kinds() -> set:
    """Op kinds traced so far that the FLOP table lacks (counted 1 per element)."""
    return set(_fx().unknown_ops)


def check_program(buffers, ops):
    """The rules Program::new enforces, so a bad file fails here, not in Rust."""
    defined = [None] * len(buffers)
    read = [False] * len(buffers)
    for t, op in enumerate(ops):
        assert len(set(op["reads"])) == len(op["reads"]), op
        assert len(set(op["writes"])) == len(op["writes"]), op
        assert not set(op["reads"]) & set(op["writes"]), op
        assert op["flops"] >= 0 and math.isfinite(op["flops"]), op
        for b in op["reads"]:
            assert buffers[b]["kind"] in ("weight", "input") or defined[b] is not None, (op, b)
            read[b] = True
        for b in op["writes"]:
            assert buffers[b]["kind"] in ("activation", "output"), (op, b)
            assert defined[b] is None, (op, b)
            defined[b] = t
    for b, buf in enumerate(buffers):
        assert buf["bytes"] > 0, buf
        if buf["kind"] in ("weight", "input"):
            assert read[b], f"entry {buf['name']} never read"
        else:
            assert defined[b] is not None, f"{buf['name']} never defined"


def compute_stats(buffers, ops):
    n_ops = len(ops)
    start = [0] * len(buffers)
    end = [None] * len(buffers)
    for t, op in enumerate(ops):
        for b in op["writes"]:
            start[b] = t
        for b in op["reads"]:
            end[b] = t
    diff = [0] * (n_ops + 1)
    for b, buf in enumerate(buffers):
        if buf["kind"] == "output":
            e = n_ops - 1
        else:
            e = end[b] if end[b] is not None else start[b]
        diff[start[b]] += buf["bytes"]
        diff[e + 1] -= buf["bytes"]
    peak = acc = 0
    for d in diff[:n_ops]:
        acc += d
        peak = max(peak, acc)
    total = 0.0
    for op in ops:
        total += float(op["flops"])
    return {
        "ops": n_ops,
        "buffers": len(buffers),
        "total_flops": total,
        "peak_live_bytes": peak,
        "weight_bytes": sum(b["bytes"] for b in buffers if b["kind"] == "weight"),
    }


# --------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------
def num(x):
    """Integral floats as integers: shorter, and parse to the same f64."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


def dump(doc):
    """Readable header, one compact line per buffer and per op."""
    c = lambda o: json.dumps(o, separators=(",", ":"))
    lines = ["{"]
    for key in ("format", "version", "name", "description", "source", "stats"):
        lines.append(f"  {json.dumps(key)}: {c(doc[key])},")
    lines.append('  "buffers": [')
    lines.append(",\n".join("    " + c(b) for b in doc["buffers"]))
    lines.append("  ],")
    lines.append('  "ops": [')
    lines.append(",\n".join("    " + c(o) for o in doc["ops"]))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
