#!/usr/bin/env python3
"""Trace real models with torch.export and write them as mallocmuzero program JSON files.

Development-time only (CI never runs it): the JSON files it writes are committed under
bench-workloads/data/ and embedded in the Rust crate. Requirements: scripts/requirements-export.txt.

    python scripts/export_workloads.py [--dtype-bytes 2] [--out bench-workloads/data] [names...]

Every model is built with random weights (nothing is downloaded), put in eval mode, and
traced under torch.no_grad() with torch.export.export, then decomposed to core ATen with
torch.export.default_decompositions() minus aten.scaled_dot_product_attention, so attention
stays the fused op that transformers/torchvision emit.

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

Models (names exactly): resnet50, resnet101, alexnet, mobilenet-v2, vgg16, vit-b16 (torchvision,
weights=None, input 8x3x224x224), bert-base-s128, bert-base-s384 (BertModel(BertConfig()),
input_ids 4x128 / 4x384, no attention mask), gpt2-small-s128 (GPT2Model(GPT2Config(
use_cache=False)), input_ids 4x128), unet (the U-Net below: 4 down / 4 up levels, base 64
channels, conv3x3-BN-ReLU pairs, padding 1, max-pool down, 2x2 transposed-conv up, concat
skips, 1x1 head to 2 classes; input 1x3x256x256).
"""

import argparse
import json
import math
import operator
import os
import sys
import time

import torch
import torch.nn as nn

MODEL_NAMES = [
    "resnet50",
    "resnet101",
    "alexnet",
    "mobilenet-v2",
    "vgg16",
    "vit-b16",
    "bert-base-s128",
    "bert-base-s384",
    "gpt2-small-s128",
    "unet",
]

# Models of other families than the suite's, for checking the agent on programs nobody
# tuned on (issue 10): dense connectivity, compound-scaled inverted residuals with
# squeeze-excitation, and a ConvNeXt. Exported on request only (not embedded).
UNSEEN_NAMES = ["densenet121", "efficientnet-b0", "convnext-tiny"]

CNN_BATCH = 8
TRANSFORMER_BATCH = 4
UNET_INPUT = (1, 3, 256, 256)


# --------------------------------------------------------------------------------------
# U-Net (Ronneberger et al. 2015, with batch norm and same-padding as is now standard)
# --------------------------------------------------------------------------------------
class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block(x)


class UNet(nn.Module):
    def __init__(self, in_channels=3, classes=2, base=64, depth=4):
        super().__init__()
        chans = [base * 2**i for i in range(depth + 1)]  # 64 .. 1024
        self.inc = DoubleConv(in_channels, chans[0])
        self.downs = nn.ModuleList(DoubleConv(chans[i], chans[i + 1]) for i in range(depth))
        self.pool = nn.MaxPool2d(2)
        self.ups = nn.ModuleList(
            nn.ConvTranspose2d(chans[i + 1], chans[i], 2, stride=2) for i in reversed(range(depth))
        )
        self.up_convs = nn.ModuleList(
            DoubleConv(chans[i] * 2, chans[i]) for i in reversed(range(depth))
        )
        self.head = nn.Conv2d(chans[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(self.pool(skips[-1])))
        y = skips.pop()
        for up, conv in zip(self.ups, self.up_convs):
            y = conv(torch.cat([skips.pop(), up(y)], dim=1))
        return self.head(y)


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------
def build(name):
    """(module, example args, human description of the model and its input)."""
    import torchvision

    tv = {
        "resnet50": torchvision.models.resnet50,
        "resnet101": torchvision.models.resnet101,
        "alexnet": torchvision.models.alexnet,
        "mobilenet-v2": torchvision.models.mobilenet_v2,
        "vgg16": torchvision.models.vgg16,
        "vit-b16": torchvision.models.vit_b_16,
        "densenet121": torchvision.models.densenet121,
        "efficientnet-b0": torchvision.models.efficientnet_b0,
        "convnext-tiny": torchvision.models.convnext_tiny,
    }
    if name in tv:
        x = torch.randn(CNN_BATCH, 3, 224, 224)
        return tv[name](weights=None), (x,), f"torchvision {tv[name].__name__}, input {shape_str(x)}"
    if name.startswith("bert-base-s"):
        from transformers import BertConfig, BertModel

        seq = int(name.rsplit("s", 1)[1])
        ids = torch.randint(0, 30522, (TRANSFORMER_BATCH, seq))
        model = BertModel(BertConfig())
        return (
            model,
            (ids,),
            f"transformers BertModel(BertConfig()) (bert-base, 12 layers, hidden 768), "
            f"input_ids {shape_str(ids)} int64, no attention mask, outputs last_hidden_state "
            f"and pooler_output, attention {model.config._attn_implementation}",
        )
    if name == "gpt2-small-s128":
        from transformers import GPT2Config, GPT2Model

        ids = torch.randint(0, 50257, (TRANSFORMER_BATCH, 128))
        model = GPT2Model(GPT2Config(use_cache=False))
        return (
            model,
            (ids,),
            f"transformers GPT2Model(GPT2Config(use_cache=False)) (gpt2 small, 12 layers, "
            f"hidden 768), input_ids {shape_str(ids)} int64, causal mask built in the graph, "
            f"output last_hidden_state, attention {model.config._attn_implementation}",
        )
    if name == "unet":
        x = torch.randn(*UNET_INPUT)
        return (
            UNet(),
            (x,),
            f"U-Net defined in the script (Ronneberger-style: 4 down / 4 up levels, channels "
            f"64-1024, conv3x3-BN-ReLU pairs with padding 1, max-pool down, 2x2 stride-2 "
            f"transposed conv up, concat skips, 1x1 head to 2 classes), input {shape_str(x)}",
        )
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES + UNSEEN_NAMES)}")


def shape_str(t):
    return "x".join(str(d) for d in t.shape)


def export(model, args):
    model.eval()
    table = torch.export.default_decompositions()
    # Keep attention fused, as the model emits it.
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    with torch.no_grad():
        ep = torch.export.export(model, args)
        return ep.run_decompositions(table)


# --------------------------------------------------------------------------------------
# FLOPs
# --------------------------------------------------------------------------------------
FLOP_TABLE = {}
for k in (
    "add sub mul div rsub neg relu where eq ne lt le gt ge bitwise_and bitwise_or "
    "bitwise_not bitwise_xor logical_not logical_and logical_or maximum minimum abs "
    "reciprocal sign cumsum masked_fill"
).split():
    FLOP_TABLE[k] = 1
for k in "hardtanh clamp clamp_min clamp_max pow rsqrt sqrt".split():
    FLOP_TABLE[k] = 2
for k in "exp log tanh sigmoid erf".split():
    FLOP_TABLE[k] = 4
FLOP_TABLE.update(
    {
        "silu": 5,
        "gelu": 8,
        "hardswish": 4,
        "_native_batch_norm_legit_no_training": 4,
        "native_layer_norm": 8,
        "_softmax": 5,
        "_log_softmax": 5,
    }
)
ZERO_FLOP = set(
    "cat clone _to_copy copy embedding index index_select gather constant_pad_nd full "
    "full_like zeros zeros_like ones ones_like empty empty_like arange scalar_tensor "
    "repeat slice_scatter select_scatter lift_fresh_copy alias_copy".split()
)
REDUCTIONS = set("mean sum amax amin any all prod var var_mean".split())
POOLS = set("max_pool2d_with_indices max_pool2d avg_pool2d".split())
LIKE_CONSTRUCTORS = set("full_like zeros_like ones_like empty_like rand_like randn_like".split())
COPY_OPS = set("clone _to_copy contiguous lift_fresh_copy alias_copy".split())

unknown_ops = set()


def numel(t):
    return math.prod(t.shape)


def op_flops(kind, node, outs):
    """FLOPs of one node; `outs` are its tensor results (fake tensors)."""
    a = [val_of(x) for x in node.args]
    out_elems = sum(numel(o) for o in outs)
    if kind == "convolution":
        x, w = a[0], a[1]
        bias = a[2] is not None
        transposed = bool(node.args[6])
        kernel = math.prod(w.shape[2:])
        y = outs[0]
        if transposed:
            flops = 2 * numel(x) * w.shape[1] * kernel
        else:
            flops = 2 * numel(y) * w.shape[1] * kernel
        return flops + (numel(y) if bias else 0)
    if kind in ("mm", "addmm"):
        m1, m2 = (a[0], a[1]) if kind == "mm" else (a[1], a[2])
        m, k = m1.shape
        n = m2.shape[1]
        return 2 * m * n * k + (m * n if kind == "addmm" else 0)
    if kind in ("bmm", "baddbmm"):
        b1, b2 = (a[0], a[1]) if kind == "bmm" else (a[1], a[2])
        b, m, k = b1.shape
        n = b2.shape[2]
        return 2 * b * m * n * k + (b * m * n if kind == "baddbmm" else 0)
    if kind == "scaled_dot_product_attention":
        q, k, v = a[0], a[1], a[2]
        batch = math.prod(q.shape[:-2])
        lq, d = q.shape[-2], q.shape[-1]
        lk, dv = k.shape[-2], v.shape[-1]
        return 2 * batch * lq * lk * (d + dv) + 5 * batch * lq * lk
    if kind in POOLS:
        kernel = list(node.args[1])
        return numel(outs[0]) * math.prod(kernel if len(kernel) > 1 else kernel * 2)
    if kind == "_adaptive_avg_pool2d":
        return numel(a[0]) + numel(outs[0])
    if kind in REDUCTIONS:
        return numel(a[0])
    if kind in ZERO_FLOP:
        return 0
    if kind in FLOP_TABLE:
        # Multi-result norms also return per-row statistics; count the main result only.
        return FLOP_TABLE[kind] * numel(outs[0])
    unknown_ops.add(kind)
    return out_elems


# --------------------------------------------------------------------------------------
# Graph -> program
# --------------------------------------------------------------------------------------
def val_of(x):
    if isinstance(x, torch.fx.Node):
        return x.meta.get("val")
    return x


def is_tensor(v):
    return isinstance(v, torch.Tensor)


def short_kind(target):
    if isinstance(target, torch._ops.OpOverload):
        return target._overloadpacket.__name__
    return getattr(target, "__name__", str(target))


def is_view_op(target):
    """True when the schema says result 0 aliases an input without writing it."""
    if not isinstance(target, torch._ops.OpOverload):
        return False
    rets = target._schema.returns
    if not rets:
        return False
    info = rets[0].alias_info
    return info is not None and not info.is_write


def dtype_label(dtype, dtype_bytes):
    if dtype.is_floating_point:
        return {1: "fp8", 2: "bf16", 4: "f32", 8: "f64"}[dtype_bytes]
    return {
        torch.int64: "i64",
        torch.int32: "i32",
        torch.int16: "i16",
        torch.int8: "i8",
        torch.uint8: "u8",
        torch.bool: "bool",
    }[dtype]


def tensor_bytes(t, dtype_bytes):
    elem = dtype_bytes if t.dtype.is_floating_point else t.element_size()
    n = numel(t)
    return max(n, 1) * elem  # a 0-dim tensor holds one element


class Converter:
    def __init__(self, ep, dtype_bytes):
        self.ep = ep
        self.dtype_bytes = dtype_bytes
        self.buffers = []  # dicts: name, kind, bytes, shape, dtype
        self.ops = []  # dicts: name, kind, flops, reads, writes (temporary buffer ids)
        self.base = {}  # node name -> buffer id it aliases or defines
        self.multi = {}  # node name -> (op index, {result index: buffer id}, fake results)
        self.view_lists = {}  # node name of a list-returning view op -> base buffer id
        self.aliased = set()

    def new_buffer(self, name, kind, val):
        self.buffers.append(
            {
                "name": name,
                "kind": kind,
                "bytes": tensor_bytes(val, self.dtype_bytes),
                "shape": list(val.shape),
                "dtype": dtype_label(val.dtype, self.dtype_bytes),
            }
        )
        return len(self.buffers) - 1

    def tensor_inputs(self, node):
        """Base buffers of the tensor arguments of `node`, in order, each once."""
        reads = []

        def visit(n):
            if n.name in self.base and self.base[n.name] not in reads:
                reads.append(self.base[n.name])
            return n

        torch.fx.node.map_arg((node.args, node.kwargs), visit)
        return reads

    def run(self):
        sig = self.ep.graph_signature
        entry_kind = {}
        for spec in sig.input_specs:
            k = spec.kind.name
            if k in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                entry_kind[spec.arg.name] = ("weight", spec.target)
            elif k == "USER_INPUT":
                entry_kind[spec.arg.name] = ("input", spec.arg.name)
            else:
                raise SystemExit(f"unsupported input kind {k} for {spec.arg.name}")
        outputs = []
        for spec in sig.output_specs:
            if spec.kind.name != "USER_OUTPUT":
                raise SystemExit(f"unsupported output kind {spec.kind.name} (mutation in eval?)")
            outputs.append(spec.arg.name)

        for node in self.ep.graph_module.graph.nodes:
            if node.op == "placeholder":
                v = val_of(node)
                if is_tensor(v):
                    kind, name = entry_kind[node.name]
                    self.base[node.name] = self.new_buffer(name, kind, v)
            elif node.op == "call_function":
                self.call(node)
            elif node.op not in ("output",):
                raise SystemExit(f"unsupported node {node.op} {node.name}")

        return self.finish(outputs)

    def call(self, node):
        target = node.target
        v = val_of(node)
        if target is operator.getitem:
            src, idx = node.args
            if src.name in self.view_lists:
                self.base[node.name] = self.view_lists[src.name]
                self.aliased.add("getitem")
            elif src.name in self.multi:
                op_i, results, vals = self.multi[src.name]
                if idx not in results:
                    results[idx] = self.new_buffer(f"{src.name}.{idx}", "activation", vals[idx])
                    self.ops[op_i]["writes"].append(results[idx])
                self.base[node.name] = results[idx]
            return
        kind = short_kind(target)
        if is_view_op(target):
            inputs = self.tensor_inputs(node)
            if len(inputs) != 1:
                raise SystemExit(f"view {node.name} ({kind}) has {len(inputs)} tensor inputs")
            if is_tensor(v):
                self.base[node.name] = inputs[0]
            else:
                self.view_lists[node.name] = inputs[0]
            self.aliased.add(kind)
            return
        if kind in COPY_OPS:
            src = val_of(node.args[0])
            if (
                is_tensor(src)
                and is_tensor(v)
                and src.dtype == v.dtype
                and tuple(src.shape) == tuple(v.shape)
                and src.is_contiguous()
            ):
                self.base[node.name] = self.base[node.args[0].name]
                self.aliased.add(f"{kind} of a dense tensor")
                return
        if is_tensor(v):
            outs = [v]
        elif isinstance(v, (tuple, list)) and any(is_tensor(x) for x in v):
            outs = [x for x in v if is_tensor(x)]
        else:
            return  # no tensor result: asserts, sym_size, ...
        reads = [] if kind in LIKE_CONSTRUCTORS else self.tensor_inputs(node)
        flops = op_flops(kind, node, outs)
        self.ops.append({"name": node.name, "kind": kind, "flops": flops, "reads": reads, "writes": []})
        op_i = len(self.ops) - 1
        if is_tensor(v):
            b = self.new_buffer(node.name, "activation", v)
            self.ops[op_i]["writes"].append(b)
            self.base[node.name] = b
        else:
            self.multi[node.name] = (op_i, {}, v)

    def finish(self, outputs):
        out_bufs = set()
        for name in outputs:
            b = self.base[name]
            if self.buffers[b]["kind"] != "activation" and self.buffers[b]["kind"] != "output":
                raise SystemExit(f"graph output {name} is the {self.buffers[b]['kind']} "
                                 f"{self.buffers[b]['name']}; needs a copy op")
            self.buffers[b]["kind"] = "output"
            out_bufs.add(b)
        # Backward dead-code pass: reads always refer to earlier ops, so one sweep is enough.
        needed = set(out_bufs)
        kept_ops = []
        for op in reversed(self.ops):
            writes = [b for b in op["writes"] if b in needed]
            if not writes:
                continue
            needed.update(op["reads"])
            kept_ops.append(dict(op, writes=writes))
        kept_ops.reverse()
        keep = [b for b in range(len(self.buffers)) if b in needed]
        renum = {b: i for i, b in enumerate(keep)}
        buffers = [self.buffers[b] for b in keep]
        ops = []
        for op in kept_ops:
            ops.append(dict(op, reads=[renum[b] for b in op["reads"]],
                            writes=[renum[b] for b in op["writes"]]))
        return buffers, ops


# --------------------------------------------------------------------------------------
# Checks and stats (same definitions as accel_sim::Program)
# --------------------------------------------------------------------------------------
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


def versions():
    import torchvision
    import transformers

    public = lambda v: v.split("+")[0]
    return {
        "torch": public(torch.__version__),
        "torchvision": public(torchvision.__version__),
        "transformers": public(transformers.__version__),
    }


def export_one(name, dtype_bytes, out_dir):
    torch.manual_seed(0)
    model, args, model_desc = build(name)
    t0 = time.time()
    ep = export(model, args)
    conv = Converter(ep, dtype_bytes)
    buffers, ops = conv.run()
    check_program(buffers, ops)
    stats = compute_stats(buffers, ops)
    label = dtype_label(torch.float32, dtype_bytes)
    kinds = {op["kind"] for op in ops}
    structure = ""
    if "_native_batch_norm_legit_no_training" in kinds:
        structure += "unfused batch norm (_native_batch_norm_legit_no_training); "
    if "scaled_dot_product_attention" in kinds:
        structure += "fused attention (scaled_dot_product_attention kept); "
    desc = (
        f"{model_desc}; random weights, eval mode, torch.export + core ATen decompositions; "
        f"floating-point tensors {label} ({dtype_bytes} B/elem), integer tensors at their own "
        f"size; {structure}views aliased, no op and no buffer "
        f"({', '.join(sorted(conv.aliased)) or 'none seen'}); "
        f"dead ops and unused placeholders dropped; FLOPs per the table in "
        f"scripts/export_workloads.py"
    )
    for op in ops:
        op["flops"] = num(float(op["flops"]))
    doc = {
        "format": "mallocmuzero-program",
        "version": 1,
        "name": name,
        "description": desc,
        "source": {"generator": "scripts/export_workloads.py", **versions(), "dtype_bytes": dtype_bytes},
        "stats": {**stats, "total_flops": num(stats["total_flops"])},
        "buffers": buffers,
        "ops": [{k: op[k] for k in ("name", "kind", "flops", "reads", "writes")} for op in ops],
    }
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w") as f:
        f.write(dump(doc))
    return stats, time.time() - t0, os.path.getsize(path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help=f"models to export (default: all of {', '.join(MODEL_NAMES)})")
    p.add_argument("--dtype-bytes", type=int, default=2, choices=[1, 2, 4, 8],
                   help="bytes per floating-point element (default 2: bf16)")
    p.add_argument("--out", default=os.path.join(here, "..", "bench-workloads", "data"))
    a = p.parse_args()
    names = a.names or MODEL_NAMES
    for n in names:
        if n not in MODEL_NAMES + UNSEEN_NAMES:
            p.error(f"unknown model {n!r}; known: {', '.join(MODEL_NAMES + UNSEEN_NAMES)}")
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for n in names:
        stats, secs, size = export_one(n, a.dtype_bytes, a.out)
        rows.append((n, stats, size))
        print(f"{n}: {stats['ops']} ops in {secs:.1f} s", file=sys.stderr)
    if unknown_ops:
        print(f"warning: ops not in the FLOP table (counted 1 per element): "
              f"{', '.join(sorted(unknown_ops))}", file=sys.stderr)
    print(f"{'name':<18}{'ops':>6}{'buffers':>9}{'GFLOPs':>10}{'weight MB':>11}{'peak live MB':>14}{'file KB':>9}")
    for n, s, size in rows:
        print(f"{n:<18}{s['ops']:>6}{s['buffers']:>9}{s['total_flops'] / 1e9:>10.2f}"
              f"{s['weight_bytes'] / 1e6:>11.2f}{s['peak_live_bytes'] / 1e6:>14.2f}{size / 1e3:>9.1f}")


if __name__ == "__main__":
    main()
