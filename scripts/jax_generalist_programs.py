"""Programs of the scale tier's size for the bundled generalist, not the tier's: five it
trains on (a BERT-style encoder, a LLaMA-style training step, an MLP-Mixer, a wide ResNet,
a deep encoder's inference; none of their families is held out, in
bench-workloads/heldout/ or generalist::HELD_OUT_WORKLOADS, or kept for validation) and one
it is validated on (a RegNetY-shaped convnet: a validation family at the tier's size).
`scripts/export_jax_hlo.py --generalist` writes them into bench-workloads/data/generalist/.

All of it is this project's own code, written for this purpose, in the manner of
scripts/jax_scale_programs.py (whose helpers it uses): random parameters from a fixed
seed, Python loops for layers (straight-line HLO). Each entry of MODELS returns
(fn, args, weight_argnums, description).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jax_scale_programs import (
    _adamw_args,
    _adamw_step,
    _batch_norm,
    _conv,
    _cross_entropy,
    _heads,
    _init,
    _layer_norm,
    _merge,
    _rms_norm,
    _rope,
    _sgd_momentum,
    _zeros_like,
)


def _attention(q, k, v, causal):
    """q, k, v: [batch, heads, seq, head_dim]."""
    att = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[2]
        att = jnp.where(jnp.tril(jnp.ones((s, s), bool)), att, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(att, axis=-1), v)


def _encoder_params(seed, layers, d, ff, vocab, seq):
    shapes = {"tok": (vocab, d), "pos": (seq, d), "emb.g": (d,), "emb.b": (d,)}
    for i in range(layers):
        for n, s in {
            "wqkv": (d, 3 * d),
            "bqkv": (3 * d,),
            "wo": (d, d),
            "bo": (d,),
            "ln1.g": (d,),
            "ln1.b": (d,),
            "w1": (d, ff),
            "b1": (ff,),
            "w2": (ff, d),
            "b2": (d,),
            "ln2.g": (d,),
            "ln2.b": (d,),
        }.items():
            shapes[f"e{i}.{n}"] = s
    return _init(seed, shapes)


def _encoder(p, tokens, layers, heads):
    """A BERT-style encoder: post-LN blocks, bidirectional attention, GELU."""
    x = _layer_norm(p["tok"][tokens] + p["pos"][None, : tokens.shape[1]], p["emb.g"], p["emb.b"])
    for i in range(layers):
        e = lambda n: p[f"e{i}.{n}"]  # noqa: E731
        q, k, v = (_heads(t, heads) for t in jnp.split(x @ e("wqkv") + e("bqkv"), 3, axis=-1))
        x = _layer_norm(x + _merge(_attention(q, k, v, False)) @ e("wo") + e("bo"), e("ln1.g"), e("ln1.b"))
        h = jax.nn.gelu(x @ e("w1") + e("b1")) @ e("w2") + e("b2")
        x = _layer_norm(x + h, e("ln2.g"), e("ln2.b"))
    return x


BERT = dict(layers=6, d=512, heads=8, ff=2048, vocab=30522, seq=512, batch=4)


def bert_mlm_train():
    c = BERT
    p = _encoder_params(50, c["layers"], c["d"], c["ff"], c["vocab"], c["seq"])
    tokens = jax.random.randint(jax.random.PRNGKey(51), (c["batch"], c["seq"]), 0, c["vocab"], jnp.int32)
    labels = jax.random.randint(jax.random.PRNGKey(52), (c["batch"], c["seq"]), 0, c["vocab"], jnp.int32)

    def loss(p, x, y):
        return _cross_entropy(_encoder(p, x, c["layers"], c["heads"]) @ p["tok"].T, y)

    return _adamw_step(loss), _adamw_args(p, tokens, labels), (0, 1, 2, 3), (
        f"a masked-LM training step of a BERT-style encoder ({c['layers']} layers, d {c['d']}, "
        f"{c['heads']} heads, FFN {c['ff']}, post-LN, GELU, learned positions, "
        f"{c['vocab']}-token tied embedding), batch {c['batch']} x {c['seq']} tokens, "
        "cross-entropy at every position: jax.value_and_grad and AdamW written by hand"
    )


ENCODER = dict(layers=24, d=1024, heads=16, ff=4096, vocab=30522, seq=384, batch=2)


def encoder_forward():
    c = ENCODER
    p = _encoder_params(60, c["layers"], c["d"], c["ff"], c["vocab"], c["seq"])
    tokens = jax.random.randint(jax.random.PRNGKey(61), (c["batch"], c["seq"]), 0, c["vocab"], jnp.int32)

    def forward(p, x):
        return _encoder(p, x, c["layers"], c["heads"])[:, 0]

    return forward, (p, tokens), (0,), (
        f"inference of a BERT-large-shaped encoder ({c['layers']} layers, d {c['d']}, "
        f"{c['heads']} heads, FFN {c['ff']}, post-LN, GELU), batch {c['batch']} x {c['seq']} "
        "tokens, the first position's features out"
    )


LLAMA_TRAIN = dict(layers=6, d=1024, heads=16, kv_heads=4, ff=2816, vocab=32000, seq=512, batch=2)


def llama_train():
    c = LLAMA_TRAIN
    d, hd = c["d"], c["d"] // c["heads"]
    shapes = {"embed": (c["vocab"], d), "norm": (d,), "out": (d, c["vocab"])}
    for i in range(c["layers"]):
        shapes.update(
            {
                f"l{i}.n1": (d,),
                f"l{i}.wq": (d, c["heads"] * hd),
                f"l{i}.wkv": (d, 2 * c["kv_heads"] * hd),
                f"l{i}.wo": (c["heads"] * hd, d),
                f"l{i}.n2": (d,),
                f"l{i}.wgu": (d, 2 * c["ff"]),
                f"l{i}.wd": (c["ff"], d),
            }
        )
    p = _init(70, shapes)
    tokens = jax.random.randint(jax.random.PRNGKey(71), (c["batch"], c["seq"] + 1), 0, c["vocab"], jnp.int32)

    def loss(p, x, y):
        b, s = x.shape
        pos = jnp.broadcast_to(jnp.arange(s)[None], (b, s))
        h = p["embed"][x]
        for i in range(c["layers"]):
            t = _rms_norm(h, p[f"l{i}.n1"])
            q = _rope((t @ p[f"l{i}.wq"]).reshape(b, s, c["heads"], hd), pos)
            k, v = jnp.split((t @ p[f"l{i}.wkv"]).reshape(b, s, 2 * c["kv_heads"], hd), 2, axis=2)
            k = jnp.repeat(_rope(k, pos), c["heads"] // c["kv_heads"], axis=2)
            v = jnp.repeat(v, c["heads"] // c["kv_heads"], axis=2)
            o = _attention(*(a.transpose(0, 2, 1, 3) for a in (q, k, v)), True)
            h = h + _merge(o) @ p[f"l{i}.wo"]
            g, u = jnp.split(_rms_norm(h, p[f"l{i}.n2"]) @ p[f"l{i}.wgu"], 2, axis=-1)
            h = h + (jax.nn.silu(g) * u) @ p[f"l{i}.wd"]
        return _cross_entropy(_rms_norm(h, p["norm"]) @ p["out"], y)

    return _adamw_step(loss), _adamw_args(p, tokens[:, :-1], tokens[:, 1:]), (0, 1, 2, 3), (
        f"a training step of a LLaMA-style decoder ({c['layers']} layers, d {d}, {c['heads']} "
        f"heads over {c['kv_heads']} key-value heads, SwiGLU {c['ff']}, RMSNorm, rotary "
        f"positions, untied {c['vocab']}-token output), batch {c['batch']} x {c['seq']} "
        "tokens, next-token cross-entropy: jax.value_and_grad and AdamW written by hand"
    )


MIXER = dict(layers=8, d=512, tokens_mlp=256, channels_mlp=2048, patch=16, image=224, classes=1000, batch=16)


def mixer_train():
    c = MIXER
    d, n = c["d"], (c["image"] // c["patch"]) ** 2
    shapes = {"stem.w": (c["patch"] * c["patch"] * 3, d), "stem.b": (d,)}
    for i in range(c["layers"]):
        shapes.update(
            {
                f"m{i}.ln1.g": (d,),
                f"m{i}.t1": (n, c["tokens_mlp"]),
                f"m{i}.t2": (c["tokens_mlp"], n),
                f"m{i}.ln2.g": (d,),
                f"m{i}.c1": (d, c["channels_mlp"]),
                f"m{i}.c2": (c["channels_mlp"], d),
            }
        )
    shapes.update({"ln.g": (d,), "head.w": (d, c["classes"])})
    p = _init(80, shapes)
    images = jax.random.normal(jax.random.PRNGKey(81), (c["batch"], c["image"], c["image"], 3), jnp.float32)
    labels = jax.random.randint(jax.random.PRNGKey(82), (c["batch"],), 0, c["classes"], jnp.int32)

    def loss(p, x, y):
        b, g = x.shape[0], c["image"] // c["patch"]
        x = x.reshape(b, g, c["patch"], g, c["patch"], 3).transpose(0, 1, 3, 2, 4, 5)
        x = x.reshape(b, n, -1) @ p["stem.w"] + p["stem.b"]
        for i in range(c["layers"]):
            m = lambda k: p[f"m{i}.{k}"]  # noqa: E731
            t = _layer_norm(x, m("ln1.g")).transpose(0, 2, 1)
            x = x + (jax.nn.gelu(t @ m("t1")) @ m("t2")).transpose(0, 2, 1)
            x = x + jax.nn.gelu(_layer_norm(x, m("ln2.g")) @ m("c1")) @ m("c2")
        return _cross_entropy(_layer_norm(x, p["ln.g"]).mean(1) @ p["head.w"], y)

    return _adamw_step(loss), _adamw_args(p, images, labels), (0, 1, 2, 3), (
        f"a training step of an MLP-Mixer ({c['layers']} layers, d {d}, token MLP "
        f"{c['tokens_mlp']}, channel MLP {c['channels_mlp']}, GELU, {c['patch']}x{c['patch']} "
        f"patches), batch {c['batch']} of {c['image']}x{c['image']}x3, cross-entropy: "
        "jax.value_and_grad and AdamW written by hand"
    )


def _sgd_step(loss, decay):
    """A training step of a convnet with batch norm: loss(params, stats, images, labels)
    returns the loss and the new running statistics; SGD with momentum 0.9, weight decay
    folded into the gradient."""

    def step(params, mom, stats, images, labels):
        (l, stats), grads = jax.value_and_grad(lambda p: loss(p, stats, images, labels), has_aux=True)(params)
        grads = jax.tree.map(lambda g, w: g + decay * w, grads, params)
        params, mom = _sgd_momentum(params, mom, grads, lr=0.1)
        return l, params, mom, stats

    return step


WRN = dict(blocks=(3, 3, 3), widths=(128, 256, 512), classes=100, image=32, batch=128)


def wide_resnet_train():
    """A wide ResNet of basic blocks (two 3x3 convolutions each) for 32x32 images: the
    ResNet family the generalist trains on, at another shape (ConvNeXt is held out)."""
    c = WRN
    shapes, stats = {"stem.w": (3, 3, 3, 16)}, {}

    def bn(name, ch):
        shapes[f"{name}.g"], shapes[f"{name}.b"] = (ch,), (ch,)
        stats[f"{name}.mean"], stats[f"{name}.var"] = (ch,), (ch,)

    cin = 16
    for s, (n, w) in enumerate(zip(c["blocks"], c["widths"])):
        for j in range(n):
            name = f"s{s}.b{j}"
            bn(f"{name}.bn1", cin)
            shapes[f"{name}.c1"] = (3, 3, cin, w)
            bn(f"{name}.bn2", w)
            shapes[f"{name}.c2"] = (3, 3, w, w)
            if cin != w:
                shapes[f"{name}.proj"] = (1, 1, cin, w)
            cin = w
    bn("out.bn", cin)
    shapes.update({"fc.w": (cin, c["classes"]), "fc.b": (c["classes"],)})
    p = _init(90, shapes)
    running = {k: (jnp.zeros(s) if k.endswith("mean") else jnp.ones(s)) for k, s in stats.items()}
    images = jax.random.normal(jax.random.PRNGKey(91), (c["batch"], c["image"], c["image"], 3), jnp.float32)
    labels = jax.random.randint(jax.random.PRNGKey(92), (c["batch"],), 0, c["classes"], jnp.int32)

    def loss(p, stats, x, y):
        new = {}
        x = _conv(x, p["stem.w"], 1)
        for s, n in enumerate(c["blocks"]):
            for j in range(n):
                name = f"s{s}.b{j}"
                stride = 2 if j == 0 and s > 0 else 1
                h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn1", x))
                short = _conv(h, p[f"{name}.proj"], stride) if f"{name}.proj" in p else x
                h = _conv(h, p[f"{name}.c1"], stride)
                h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn2", h))
                x = short + _conv(h, p[f"{name}.c2"], 1)
        x = jax.nn.relu(_batch_norm(p, stats, new, "out.bn", x))
        return _cross_entropy(x.mean(axis=(1, 2)) @ p["fc.w"] + p["fc.b"], y), new

    return _sgd_step(loss, 5e-4), (p, _zeros_like(p), running, images, labels), (0, 1, 2), (
        f"a training step of a wide ResNet (basic pre-activation blocks {list(c['blocks'])}, "
        f"widths {list(c['widths'])}, batch norm with the batch's statistics and its running "
        f"averages updated, {c['classes']} classes), batch {c['batch']} of "
        f"{c['image']}x{c['image']}x3, cross-entropy: jax.value_and_grad and SGD with "
        "momentum and weight decay written by hand"
    )


REGNETY = dict(widths=(48, 104, 208, 440), depths=(1, 3, 6, 6), group=8, se=0.25, classes=1000, image=224, batch=32)


def regnety_train():
    """A RegNetY-400MF-shaped convnet (grouped 3x3 convolutions, squeeze-excitation):
    the family the generalist is validated on, at the tier's size. Validation only."""
    c = REGNETY
    shapes, stats = {"stem.w": (3, 3, 3, 32)}, {}

    def bn(name, ch):
        shapes[f"{name}.g"], shapes[f"{name}.b"] = (ch,), (ch,)
        stats[f"{name}.mean"], stats[f"{name}.var"] = (ch,), (ch,)

    bn("stem.bn", 32)
    cin = 32
    for s, (w, n) in enumerate(zip(c["widths"], c["depths"])):
        for j in range(n):
            name, se = f"s{s}.b{j}", max(1, int(cin * c["se"]))
            shapes[f"{name}.c1"] = (1, 1, cin, w)
            bn(f"{name}.bn1", w)
            shapes[f"{name}.c2"] = (3, 3, c["group"], w)
            bn(f"{name}.bn2", w)
            shapes[f"{name}.se1"], shapes[f"{name}.se2"] = (w, se), (se, w)
            shapes[f"{name}.c3"] = (1, 1, w, w)
            bn(f"{name}.bn3", w)
            if j == 0:
                shapes[f"{name}.proj"] = (1, 1, cin, w)
                bn(f"{name}.bnp", w)
            cin = w
    shapes.update({"fc.w": (cin, c["classes"]), "fc.b": (c["classes"],)})
    p = _init(100, shapes)
    running = {k: (jnp.zeros(s) if k.endswith("mean") else jnp.ones(s)) for k, s in stats.items()}
    images = jax.random.normal(jax.random.PRNGKey(101), (c["batch"], c["image"], c["image"], 3), jnp.float32)
    labels = jax.random.randint(jax.random.PRNGKey(102), (c["batch"],), 0, c["classes"], jnp.int32)
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(p, stats, x, y):
        new = {}
        x = jax.nn.relu(_batch_norm(p, stats, new, "stem.bn", _conv(x, p["stem.w"], 2)))
        for s, (w, n) in enumerate(zip(c["widths"], c["depths"])):
            for j in range(n):
                name, stride = f"s{s}.b{j}", 2 if j == 0 else 1
                h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn1", _conv(x, p[f"{name}.c1"], 1)))
                h = jax.lax.conv_general_dilated(
                    h, p[f"{name}.c2"], (stride, stride), ((1, 1), (1, 1)), dimension_numbers=dn,
                    feature_group_count=w // c["group"],
                )
                h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn2", h))
                g = jax.nn.sigmoid(jax.nn.relu(h.mean(axis=(1, 2)) @ p[f"{name}.se1"]) @ p[f"{name}.se2"])
                h = _batch_norm(p, stats, new, f"{name}.bn3", _conv(h * g[:, None, None], p[f"{name}.c3"], 1))
                if j == 0:
                    x = _batch_norm(p, stats, new, f"{name}.bnp", _conv(x, p[f"{name}.proj"], stride))
                x = jax.nn.relu(x + h)
        return _cross_entropy(x.mean(axis=(1, 2)) @ p["fc.w"] + p["fc.b"], y), new

    return _sgd_step(loss, 5e-5), (p, _zeros_like(p), running, images, labels), (0, 1, 2), (
        f"a training step of a RegNetY-400MF-shaped convnet (widths {list(c['widths'])}, depths "
        f"{list(c['depths'])}, group width {c['group']}, squeeze-excitation 1/4, batch norm with "
        f"the batch's statistics), batch {c['batch']} of {c['image']}x{c['image']}x3, "
        "cross-entropy: jax.value_and_grad and SGD with momentum written by hand"
    )


# Each model as XLA's scheduled module (after optimization) and the module before
# optimization (`-lowered`), as the tier's; the generalist trains on those of
# generalist::TRAINING_PROGRAMS.
MODELS = {
    "jax-bert-6l-mlm-train": bert_mlm_train,
    "jax-llama-6l-train": llama_train,
    "jax-mixer-8l-train": mixer_train,
    "jax-wrn-16-train": wide_resnet_train,
    "jax-encoder-24l-forward": encoder_forward,
    # validation only (a validation family of the generalist's, at the tier's size)
    "jax-regnety-train": regnety_train,
}
