"""The torch side of `mallocmuzero.trace`: torch.export, the FLOP table, and the FX graph ->
program conversion. Imported only when tracing (torch is an optional extra)."""

import math
import operator

import torch

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

# Op kinds met that the FLOP table lacks (counted 1 per element), for a warning.
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
                raise ValueError(f"unsupported input kind {k} for {spec.arg.name}")
        outputs = []
        for spec in sig.output_specs:
            if spec.kind.name != "USER_OUTPUT":
                raise ValueError(f"unsupported output kind {spec.kind.name} (mutation in eval?)")
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
                raise ValueError(f"unsupported node {node.op} {node.name}")

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
                raise ValueError(f"view {node.name} ({kind}) has {len(inputs)} tensor inputs")
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
                raise ValueError(f"graph output {name} is the {self.buffers[b]['kind']} "
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
