"""The scale tier's JAX programs: training and inference steps of full-size models, whose
HLO (XLA's scheduled module, and the module before optimization) is bundled as the
`scale` suite (scripts/export_jax_hlo.py --scale writes it; docs/workloads.md lists it).

All of it is this project's own code, written for this purpose (no model code or weights
from elsewhere); parameters come from a fixed PRNG seed, since only shapes and the
schedule matter to a memory mapping. Layers are Python loops (no lax.scan), so every
program is straight-line HLO.

Each entry of SCALE is a function returning (fn, args, weight_argnums, description), as in
scripts/jax_programs.py: the arguments in `weight_argnums` hold weights and optimizer
state (they come first); the rest are inputs.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def _init(seed, shapes):
    """f32 parameters, random normal with scale 0.02 (norms' gains are applied as 1 + g)."""
    keys = jax.random.split(jax.random.PRNGKey(seed), len(shapes))
    return {n: jax.random.normal(k, s, jnp.float32) * 0.02 for k, (n, s) in zip(keys, shapes.items())}


def _zeros_like(tree):
    return jax.tree.map(jnp.zeros_like, tree)


def adamw(params, m, v, grads, t, lr=3e-4, b1=0.9, b2=0.95, eps=1e-8, wd=0.1):
    """AdamW (Loshchilov and Hutter): Adam's update plus weight decay applied to the
    parameter directly, not through the gradient; no decay on vectors (norm gains, biases)."""
    t = t + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    c1 = 1 - b1**t
    c2 = 1 - b2**t

    def update(p, m, v):
        step = (m / c1) / (jnp.sqrt(v / c2) + eps)
        decay = wd * p if p.ndim > 1 else 0.0
        return p - lr * (step + decay)

    params = jax.tree.map(update, params, m, v)
    return params, m, v, t


def _adamw_step(loss_fn):
    """A training step: loss and gradients by jax.value_and_grad, then AdamW."""

    def step(params, m, v, t, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        params, m, v, t = adamw(params, m, v, grads, t)
        return loss, params, m, v, t

    return step


def _adamw_args(params, *batch):
    z = _zeros_like(params)
    return (params, z, _zeros_like(params), jnp.zeros((), jnp.float32), *batch)


def _layer_norm(x, g, b=None):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) * jax.lax.rsqrt(var + 1e-5) * (1.0 + g)
    return y if b is None else y + b


def _rms_norm(x, g):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * (1.0 + g)


def _cross_entropy(logits, labels):
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1).mean()


# --------------------------------------------------------------------------------------
# A GPT-style decoder (GPT-2 small's shape): pre-LN, learned positions, GELU, tied output
# --------------------------------------------------------------------------------------
GPT = dict(layers=12, d=768, heads=12, ff=3072, vocab=32768, seq=1024, batch=2)


def gpt_params(seed, layers, d, ff, vocab, seq):
    shapes = {"wte": (vocab, d), "wpe": (seq, d)}
    for i in range(layers):
        shapes.update(
            {
                f"h{i}.ln1.g": (d,),
                f"h{i}.ln1.b": (d,),
                f"h{i}.attn.wqkv": (d, 3 * d),
                f"h{i}.attn.bqkv": (3 * d,),
                f"h{i}.attn.wo": (d, d),
                f"h{i}.attn.bo": (d,),
                f"h{i}.ln2.g": (d,),
                f"h{i}.ln2.b": (d,),
                f"h{i}.mlp.w1": (d, ff),
                f"h{i}.mlp.b1": (ff,),
                f"h{i}.mlp.w2": (ff, d),
                f"h{i}.mlp.b2": (d,),
            }
        )
    shapes.update({"ln_f.g": (d,), "ln_f.b": (d,)})
    return _init(seed, shapes)


def _causal_attention(q, k, v):
    """q, k, v: [batch, heads, seq, head_dim]."""
    s = q.shape[2]
    att = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((s, s), bool))
    att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", att, v)


def _heads(x, heads):
    b, s, d = x.shape
    return x.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)


def _merge(x):
    b, h, s, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * hd)


def _gpt_block(p, i, x, heads):
    h = _layer_norm(x, p[f"h{i}.ln1.g"], p[f"h{i}.ln1.b"])
    qkv = h @ p[f"h{i}.attn.wqkv"] + p[f"h{i}.attn.bqkv"]
    q, k, v = (_heads(t, heads) for t in jnp.split(qkv, 3, axis=-1))
    x = x + _merge(_causal_attention(q, k, v)) @ p[f"h{i}.attn.wo"] + p[f"h{i}.attn.bo"]
    h = _layer_norm(x, p[f"h{i}.ln2.g"], p[f"h{i}.ln2.b"])
    h = jax.nn.gelu(h @ p[f"h{i}.mlp.w1"] + p[f"h{i}.mlp.b1"])
    return x + h @ p[f"h{i}.mlp.w2"] + p[f"h{i}.mlp.b2"]


def gpt_loss(p, tokens, labels, layers, heads):
    x = p["wte"][tokens] + p["wpe"][None, : tokens.shape[1]]
    for i in range(layers):
        x = _gpt_block(p, i, x, heads)
    logits = _layer_norm(x, p["ln_f.g"], p["ln_f.b"]) @ p["wte"].T
    return _cross_entropy(logits, labels)


def gpt_train():
    c = GPT
    p = gpt_params(10, c["layers"], c["d"], c["ff"], c["vocab"], c["seq"])
    key = jax.random.PRNGKey(11)
    tokens = jax.random.randint(key, (c["batch"], c["seq"] + 1), 0, c["vocab"], jnp.int32)
    loss = lambda p, x, y: gpt_loss(p, x, y, c["layers"], c["heads"])
    return _adamw_step(loss), _adamw_args(p, tokens[:, :-1], tokens[:, 1:]), (0, 1, 2, 3), (
        f"a training step of a GPT-style decoder ({c['layers']} layers, d {c['d']}, "
        f"{c['heads']} heads, FFN {c['ff']}, pre-LN with biases, GELU, learned positions, "
        f"{c['vocab']}-token tied embedding), batch {c['batch']} x {c['seq']} tokens, "
        "next-token cross-entropy: jax.value_and_grad and AdamW (weight decay 0.1 on "
        "matrices) written by hand"
    )


# --------------------------------------------------------------------------------------
# A LLaMA-style decoder (TinyLlama-1.1B's shape): RMSNorm, rotary positions,
# grouped-query attention, SwiGLU, untied output. Prefill fills a KV cache; the decode
# step reads it and writes one position.
# --------------------------------------------------------------------------------------
LLAMA = dict(layers=22, d=2048, heads=32, kv_heads=4, ff=5632, vocab=32000, max_len=2048)


def llama_params(seed, layers, d, heads, kv_heads, ff, vocab):
    hd = d // heads
    shapes = {"embed": (vocab, d)}
    for i in range(layers):
        shapes.update(
            {
                f"l{i}.attn_norm": (d,),
                f"l{i}.wq": (d, heads * hd),
                f"l{i}.wk": (d, kv_heads * hd),
                f"l{i}.wv": (d, kv_heads * hd),
                f"l{i}.wo": (heads * hd, d),
                f"l{i}.mlp_norm": (d,),
                f"l{i}.w_gate": (d, ff),
                f"l{i}.w_up": (d, ff),
                f"l{i}.w_down": (ff, d),
            }
        )
    shapes.update({"norm": (d,), "lm_head": (d, vocab)})
    return _init(seed, shapes)


def _rope(x, positions):
    """Rotary positions on x: [batch, seq, heads, head_dim], positions: [batch, seq]."""
    hd = x.shape[-1]
    inv = 1.0 / (10000.0 ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))
    ang = positions.astype(jnp.float32)[..., None] * inv  # [b, s, hd/2]
    cos, sin = jnp.cos(ang)[:, :, None, :], jnp.sin(ang)[:, :, None, :]
    x1, x2 = jnp.split(x, 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _gqa(q, k, v, mask):
    """q: [b, s, h, hd]; k, v: [b, t, kvh, hd]; mask: [b, s, t] (True: attend)."""
    b, s, h, hd = q.shape
    kvh = k.shape[2]
    q = q.reshape(b, s, kvh, h // kvh, hd)
    att = jnp.einsum("bsgrd,btgd->bgrst", q, k) / math.sqrt(hd)
    att = jax.nn.softmax(jnp.where(mask[:, None, None], att, -1e9), axis=-1)
    o = jnp.einsum("bgrst,btgd->bsgrd", att, v)
    return o.reshape(b, s, h * hd)


def _llama_layer(p, i, x, cache_k, cache_v, start, mask, c):
    """One decoder layer over x: [b, s, d] at positions start..start+s, writing its keys
    and values into the cache at `start` and attending over the whole cache."""
    b, s, _ = x.shape
    hd = c["d"] // c["heads"]
    positions = start + jnp.broadcast_to(jnp.arange(s, dtype=jnp.int32), (b, s))
    h = _rms_norm(x, p[f"l{i}.attn_norm"])
    q = (h @ p[f"l{i}.wq"]).reshape(b, s, c["heads"], hd)
    k = (h @ p[f"l{i}.wk"]).reshape(b, s, c["kv_heads"], hd)
    v = (h @ p[f"l{i}.wv"]).reshape(b, s, c["kv_heads"], hd)
    q, k = _rope(q, positions), _rope(k, positions)
    cache_k = jax.lax.dynamic_update_slice(cache_k, k, (0, start, 0, 0))
    cache_v = jax.lax.dynamic_update_slice(cache_v, v, (0, start, 0, 0))
    x = x + _gqa(q, cache_k, cache_v, mask) @ p[f"l{i}.wo"]
    h = _rms_norm(x, p[f"l{i}.mlp_norm"])
    x = x + (jax.nn.silu(h @ p[f"l{i}.w_gate"]) * (h @ p[f"l{i}.w_up"])) @ p[f"l{i}.w_down"]
    return x, cache_k, cache_v


def llama_forward(p, tokens, caches, start, c):
    """Logits of the last position of each sequence and the updated caches."""
    b, s = tokens.shape
    t = caches[0][0].shape[1]
    x = p["embed"][tokens]
    # Query at start+j attends to cache positions <= start+j.
    qpos = start + jnp.arange(s, dtype=jnp.int32)
    mask = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32)[None, :] <= qpos[:, None], (b, s, t))
    new = []
    for i in range(c["layers"]):
        x, ck, cv = _llama_layer(p, i, x, caches[i][0], caches[i][1], start, mask, c)
        new.append((ck, cv))
    x = _rms_norm(x[:, -1], p["norm"])
    return x @ p["lm_head"], new


def _llama_caches(c, batch):
    hd = c["d"] // c["heads"]
    shape = (batch, c["max_len"], c["kv_heads"], hd)
    return [(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32)) for _ in range(c["layers"])]


def _llama_shape(c):
    return (
        f"a LLaMA-style decoder ({c['layers']} layers, d {c['d']}, {c['heads']} query and "
        f"{c['kv_heads']} key/value heads, SwiGLU FFN {c['ff']}, RMSNorm, rotary positions, "
        f"{c['vocab']}-token vocabulary, untied output) with a KV cache of {c['max_len']} "
        "positions"
    )


def llama_prefill(batch=1, prompt=1024):
    c = LLAMA
    p = llama_params(20, c["layers"], c["d"], c["heads"], c["kv_heads"], c["ff"], c["vocab"])
    tokens = jax.random.randint(jax.random.PRNGKey(21), (batch, prompt), 0, c["vocab"], jnp.int32)

    def prefill(p, tokens, caches):
        return llama_forward(p, tokens, caches, jnp.int32(0), c)

    return prefill, (p, tokens, _llama_caches(c, batch)), (0,), (
        f"the prefill of {_llama_shape(c)}: batch {batch} x {prompt} prompt tokens, "
        "causal attention, keys and values written into the cache, the last position's "
        "logits, inference"
    )


def llama_decode(batch=8):
    c = LLAMA
    p = llama_params(20, c["layers"], c["d"], c["heads"], c["kv_heads"], c["ff"], c["vocab"])
    tokens = jax.random.randint(jax.random.PRNGKey(22), (batch, 1), 0, c["vocab"], jnp.int32)

    def decode(p, tokens, caches, pos):
        return llama_forward(p, tokens, caches, pos, c)

    return decode, (p, tokens, _llama_caches(c, batch), jnp.int32(1024)), (0,), (
        f"one decode step of {_llama_shape(c)}: batch {batch}, one new token each at a "
        "position given as an input, its key and value written into the cache in place "
        "(dynamic-update-slice), attention over the cache masked to the positions so far, "
        "inference"
    )


# --------------------------------------------------------------------------------------
# ViT-B/16: patch embedding (a strided convolution), class token, learned positions,
# pre-LN encoder, a linear head on the class token
# --------------------------------------------------------------------------------------
VIT = dict(layers=12, d=768, heads=12, ff=3072, patch=16, image=224, classes=1000, batch=8)


def vit_params(seed, c):
    d, n = c["d"], (c["image"] // c["patch"]) ** 2 + 1
    shapes = {"patch.w": (c["patch"], c["patch"], 3, d), "patch.b": (d,), "cls": (1, 1, d), "pos": (1, n, d)}
    for i in range(c["layers"]):
        shapes.update(
            {
                f"b{i}.ln1.g": (d,),
                f"b{i}.ln1.b": (d,),
                f"b{i}.wqkv": (d, 3 * d),
                f"b{i}.bqkv": (3 * d,),
                f"b{i}.wo": (d, d),
                f"b{i}.bo": (d,),
                f"b{i}.ln2.g": (d,),
                f"b{i}.ln2.b": (d,),
                f"b{i}.w1": (d, c["ff"]),
                f"b{i}.b1": (c["ff"],),
                f"b{i}.w2": (c["ff"], d),
                f"b{i}.b2": (d,),
            }
        )
    shapes.update({"ln.g": (d,), "ln.b": (d,), "head.w": (d, c["classes"]), "head.b": (c["classes"],)})
    return _init(seed, shapes)


def vit_loss(p, images, labels, c):
    x = jax.lax.conv_general_dilated(
        images, p["patch.w"], (c["patch"],) * 2, "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    b = x.shape[0]
    x = x.reshape(b, -1, c["d"]) + p["patch.b"]
    x = jnp.concatenate([jnp.broadcast_to(p["cls"], (b, 1, c["d"])), x], axis=1) + p["pos"]
    for i in range(c["layers"]):
        h = _layer_norm(x, p[f"b{i}.ln1.g"], p[f"b{i}.ln1.b"])
        q, k, v = (_heads(t, c["heads"]) for t in jnp.split(h @ p[f"b{i}.wqkv"] + p[f"b{i}.bqkv"], 3, axis=-1))
        att = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1]), axis=-1)
        x = x + _merge(jnp.einsum("bhqk,bhkd->bhqd", att, v)) @ p[f"b{i}.wo"] + p[f"b{i}.bo"]
        h = _layer_norm(x, p[f"b{i}.ln2.g"], p[f"b{i}.ln2.b"])
        x = x + jax.nn.gelu(h @ p[f"b{i}.w1"] + p[f"b{i}.b1"]) @ p[f"b{i}.w2"] + p[f"b{i}.b2"]
    logits = _layer_norm(x[:, 0], p["ln.g"], p["ln.b"]) @ p["head.w"] + p["head.b"]
    return _cross_entropy(logits, labels)


def vit_train():
    c = VIT
    p = vit_params(30, c)
    images = jax.random.normal(jax.random.PRNGKey(31), (c["batch"], c["image"], c["image"], 3), jnp.float32)
    labels = jax.random.randint(jax.random.PRNGKey(32), (c["batch"],), 0, c["classes"], jnp.int32)
    loss = lambda p, x, y: vit_loss(p, x, y, c)
    return _adamw_step(loss), _adamw_args(p, images, labels), (0, 1, 2, 3), (
        f"a training step of ViT-B/16 ({c['layers']} layers, d {c['d']}, {c['heads']} heads, "
        f"MLP {c['ff']}, GELU, pre-LN, class token, learned positions, patch embedding as a "
        f"16x16 stride-16 convolution, {c['classes']} classes), batch {c['batch']} of "
        f"{c['image']}x{c['image']}x3, cross-entropy: jax.value_and_grad and AdamW written "
        "by hand"
    )


# --------------------------------------------------------------------------------------
# ResNet-50: bottleneck blocks [3, 4, 6, 3], batch norm in training mode (batch statistics,
# running averages updated), SGD with momentum and weight decay
# --------------------------------------------------------------------------------------
RESNET = dict(blocks=(3, 4, 6, 3), widths=(64, 128, 256, 512), classes=1000, image=224, batch=8)


def resnet_params(seed, c):
    shapes, stats = {"stem.w": (7, 7, 3, 64)}, {}

    def bn(name, ch):
        shapes[f"{name}.g"] = (ch,)
        shapes[f"{name}.b"] = (ch,)
        stats[f"{name}.mean"] = (ch,)
        stats[f"{name}.var"] = (ch,)

    bn("stem.bn", 64)
    cin = 64
    for s, (n, w) in enumerate(zip(c["blocks"], c["widths"])):
        for j in range(n):
            name = f"s{s}.b{j}"
            shapes[f"{name}.c1"] = (1, 1, cin, w)
            bn(f"{name}.bn1", w)
            shapes[f"{name}.c2"] = (3, 3, w, w)
            bn(f"{name}.bn2", w)
            shapes[f"{name}.c3"] = (1, 1, w, 4 * w)
            bn(f"{name}.bn3", 4 * w)
            if j == 0:
                shapes[f"{name}.proj"] = (1, 1, cin, 4 * w)
                bn(f"{name}.bnp", 4 * w)
            cin = 4 * w
    shapes.update({"fc.w": (cin, c["classes"]), "fc.b": (c["classes"],)})
    running = {k: (jnp.zeros(s) if k.endswith("mean") else jnp.ones(s)) for k, s in stats.items()}
    return _init(seed, shapes), running


def _conv(x, w, stride):
    k = w.shape[0]
    pad = ((k // 2, k // 2),) * 2
    return jax.lax.conv_general_dilated(x, w, (stride, stride), pad, dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _batch_norm(p, stats, new_stats, name, x):
    """Batch norm with the batch's statistics; the running averages go to new_stats."""
    mean = x.mean(axis=(0, 1, 2))
    var = ((x - mean) ** 2).mean(axis=(0, 1, 2))
    new_stats[f"{name}.mean"] = 0.9 * stats[f"{name}.mean"] + 0.1 * mean
    new_stats[f"{name}.var"] = 0.9 * stats[f"{name}.var"] + 0.1 * var
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * (1.0 + p[f"{name}.g"]) + p[f"{name}.b"]


def resnet_loss(p, stats, images, labels, c):
    new = {}
    x = jax.nn.relu(_batch_norm(p, stats, new, "stem.bn", _conv(images, p["stem.w"], 2)))
    x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
    for s, n in enumerate(c["blocks"]):
        for j in range(n):
            name = f"s{s}.b{j}"
            stride = 2 if j == 0 and s > 0 else 1
            h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn1", _conv(x, p[f"{name}.c1"], 1)))
            h = jax.nn.relu(_batch_norm(p, stats, new, f"{name}.bn2", _conv(h, p[f"{name}.c2"], stride)))
            h = _batch_norm(p, stats, new, f"{name}.bn3", _conv(h, p[f"{name}.c3"], 1))
            if j == 0:
                x = _batch_norm(p, stats, new, f"{name}.bnp", _conv(x, p[f"{name}.proj"], stride))
            x = jax.nn.relu(x + h)
    logits = x.mean(axis=(1, 2)) @ p["fc.w"] + p["fc.b"]
    return _cross_entropy(logits, labels), new


def resnet_train():
    c = RESNET
    p, stats = resnet_params(40, c)
    images = jax.random.normal(jax.random.PRNGKey(41), (c["batch"], c["image"], c["image"], 3), jnp.float32)
    labels = jax.random.randint(jax.random.PRNGKey(42), (c["batch"],), 0, c["classes"], jnp.int32)

    def step(params, mom, stats, images, labels):
        loss_fn = lambda p: resnet_loss(p, stats, images, labels, c)
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        # SGD with Nesterov-free momentum 0.9 and weight decay 1e-4 folded into the gradient.
        grads = jax.tree.map(lambda g, w: g + 1e-4 * w, grads, params)
        params, mom = _sgd_momentum(params, mom, grads, lr=0.1)
        return loss, params, mom, stats

    return step, (p, _zeros_like(p), stats, images, labels), (0, 1, 2), (
        f"a training step of ResNet-50 (bottleneck blocks {list(c['blocks'])}, batch norm "
        "with the batch's statistics and its running averages updated, ReLU, max pool, "
        f"{c['classes']} classes), batch {c['batch']} of {c['image']}x{c['image']}x3, "
        "cross-entropy: jax.value_and_grad and SGD with momentum and weight decay written "
        "by hand"
    )


def _sgd_momentum(params, mom, grads, lr, beta=0.9):
    mom = jax.tree.map(lambda m, g: beta * m + g, mom, grads)
    params = jax.tree.map(lambda p, m: p - lr * m, params, mom)
    return params, mom


# --------------------------------------------------------------------------------------
# A diffusion U-Net (DDPM's noise prediction on latents, a Stable-Diffusion-like layout at
# small size): residual blocks with GroupNorm, SiLU and the timestep embedding, self-
# attention at the two lowest resolutions, skip connections by concatenation
# --------------------------------------------------------------------------------------
UNET = dict(channels=(128, 256, 512), attention=(False, True, True), res_blocks=2, size=32, latent=4, batch=8, steps=1000)


def _unet_shapes(c):
    shapes, temb = {}, 4 * c["channels"][0]
    shapes.update({"t.w1": (c["channels"][0], temb), "t.b1": (temb,), "t.w2": (temb, temb), "t.b2": (temb,)})
    shapes.update({"in.w": (3, 3, c["latent"], c["channels"][0]), "in.b": (c["channels"][0],)})

    def res(name, cin, cout):
        shapes.update(
            {
                f"{name}.gn1.g": (cin,),
                f"{name}.gn1.b": (cin,),
                f"{name}.c1.w": (3, 3, cin, cout),
                f"{name}.c1.b": (cout,),
                f"{name}.t.w": (temb, cout),
                f"{name}.t.b": (cout,),
                f"{name}.gn2.g": (cout,),
                f"{name}.gn2.b": (cout,),
                f"{name}.c2.w": (3, 3, cout, cout),
                f"{name}.c2.b": (cout,),
            }
        )
        if cin != cout:
            shapes[f"{name}.skip.w"] = (1, 1, cin, cout)

    def attn(name, ch):
        shapes.update({f"{name}.gn.g": (ch,), f"{name}.gn.b": (ch,), f"{name}.qkv": (ch, 3 * ch), f"{name}.o": (ch, ch)})

    skips, ch = [c["channels"][0]], c["channels"][0]
    for lv, (cout, at) in enumerate(zip(c["channels"], c["attention"])):
        for j in range(c["res_blocks"]):
            res(f"d{lv}.r{j}", ch, cout)
            ch = cout
            if at:
                attn(f"d{lv}.a{j}", ch)
            skips.append(ch)
        if lv < len(c["channels"]) - 1:
            shapes[f"d{lv}.down"] = (3, 3, ch, ch)
            skips.append(ch)
    res("mid.r0", ch, ch)
    attn("mid.a", ch)
    res("mid.r1", ch, ch)
    for lv in reversed(range(len(c["channels"]))):
        cout, at = c["channels"][lv], c["attention"][lv]
        for j in range(c["res_blocks"] + 1):
            res(f"u{lv}.r{j}", ch + skips.pop(), cout)
            ch = cout
            if at:
                attn(f"u{lv}.a{j}", ch)
        if lv > 0:
            shapes[f"u{lv}.up"] = (3, 3, ch, ch)
    shapes.update({"out.gn.g": (ch,), "out.gn.b": (ch,), "out.w": (3, 3, ch, c["latent"]), "out.b": (c["latent"],)})
    return shapes


def _group_norm(x, g, b, groups=32):
    n, h, w, ch = x.shape
    y = x.reshape(n, h, w, groups, ch // groups)
    mean = y.mean(axis=(1, 2, 4), keepdims=True)
    var = ((y - mean) ** 2).mean(axis=(1, 2, 4), keepdims=True)
    y = ((y - mean) * jax.lax.rsqrt(var + 1e-5)).reshape(n, h, w, ch)
    return y * (1.0 + g) + b


def _unet_res(p, name, x, temb):
    h = _conv(jax.nn.silu(_group_norm(x, p[f"{name}.gn1.g"], p[f"{name}.gn1.b"])), p[f"{name}.c1.w"], 1) + p[f"{name}.c1.b"]
    h = h + (jax.nn.silu(temb) @ p[f"{name}.t.w"] + p[f"{name}.t.b"])[:, None, None, :]
    h = _conv(jax.nn.silu(_group_norm(h, p[f"{name}.gn2.g"], p[f"{name}.gn2.b"])), p[f"{name}.c2.w"], 1) + p[f"{name}.c2.b"]
    if f"{name}.skip.w" in p:
        x = _conv(x, p[f"{name}.skip.w"], 1)
    return x + h


def _unet_attn(p, name, x, heads=8):
    n, hh, ww, ch = x.shape
    h = _group_norm(x, p[f"{name}.gn.g"], p[f"{name}.gn.b"]).reshape(n, hh * ww, ch)
    q, k, v = (_heads(t, heads) for t in jnp.split(h @ p[f"{name}.qkv"], 3, axis=-1))
    att = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1]), axis=-1)
    o = _merge(jnp.einsum("bhqk,bhkd->bhqd", att, v)) @ p[f"{name}.o"]
    return x + o.reshape(n, hh, ww, ch)


def _timestep_embedding(t, dim):
    half = dim // 2
    freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    ang = t.astype(jnp.float32)[:, None] * freqs[None]
    return jnp.concatenate([jnp.cos(ang), jnp.sin(ang)], axis=-1)


def unet_apply(p, x, t, c):
    temb = _timestep_embedding(t, c["channels"][0])
    temb = jax.nn.silu(temb @ p["t.w1"] + p["t.b1"]) @ p["t.w2"] + p["t.b2"]
    x = _conv(x, p["in.w"], 1) + p["in.b"]
    skips = [x]
    for lv, at in enumerate(c["attention"]):
        for j in range(c["res_blocks"]):
            x = _unet_res(p, f"d{lv}.r{j}", x, temb)
            if at:
                x = _unet_attn(p, f"d{lv}.a{j}", x)
            skips.append(x)
        if lv < len(c["channels"]) - 1:
            x = _conv(x, p[f"d{lv}.down"], 2)
            skips.append(x)
    x = _unet_attn(p, "mid.a", _unet_res(p, "mid.r0", x, temb))
    x = _unet_res(p, "mid.r1", x, temb)
    for lv in reversed(range(len(c["channels"]))):
        for j in range(c["res_blocks"] + 1):
            x = _unet_res(p, f"u{lv}.r{j}", jnp.concatenate([x, skips.pop()], axis=-1), temb)
            if c["attention"][lv]:
                x = _unet_attn(p, f"u{lv}.a{j}", x)
        if lv > 0:
            x = jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2)  # nearest-neighbour upsampling
            x = _conv(x, p[f"u{lv}.up"], 1)
    x = jax.nn.silu(_group_norm(x, p["out.gn.g"], p["out.gn.b"]))
    return _conv(x, p["out.w"], 1) + p["out.b"]


def unet_diffusion_train():
    c = UNET
    p = _init(50, _unet_shapes(c))
    shape = (c["batch"], c["size"], c["size"], c["latent"])
    x0 = jax.random.normal(jax.random.PRNGKey(51), shape, jnp.float32)
    noise = jax.random.normal(jax.random.PRNGKey(52), shape, jnp.float32)
    t = jax.random.randint(jax.random.PRNGKey(53), (c["batch"],), 0, c["steps"], jnp.int32)
    # DDPM's linear schedule of beta from 1e-4 to 0.02: alpha-bar as a constant table.
    alpha_bar = jnp.cumprod(1.0 - jnp.linspace(1e-4, 0.02, c["steps"], dtype=jnp.float32))

    def loss(p, x0, noise, t):
        ab = alpha_bar[t][:, None, None, None]
        xt = jnp.sqrt(ab) * x0 + jnp.sqrt(1.0 - ab) * noise
        return jnp.mean((unet_apply(p, xt, t, c) - noise) ** 2)

    return _adamw_step(loss), _adamw_args(p, x0, noise, t), (0, 1, 2, 3), (
        f"a training step of a diffusion U-Net (DDPM noise prediction; levels of "
        f"{', '.join(map(str, c['channels']))} channels, {c['res_blocks']} residual blocks "
        "each with GroupNorm, SiLU and the timestep embedding, 8-head self-attention at "
        "the two lower resolutions and in the middle, skip connections by concatenation, "
        f"nearest upsampling) on {c['size']}x{c['size']}x{c['latent']} latents, batch "
        f"{c['batch']}, random timesteps of a {c['steps']}-step linear schedule, MSE: "
        "jax.value_and_grad and AdamW written by hand"
    )


# --------------------------------------------------------------------------------------
# A mixture-of-experts transformer: every FFN is 8 experts with top-2 routing (GShard
# style: tokens in groups, each expert taking at most its capacity from a group, dispatch
# and combine as one-hot einsums, the Switch load-balancing loss)
# --------------------------------------------------------------------------------------
MOE = dict(layers=4, d=512, heads=8, ff=2048, experts=8, top_k=2, capacity_factor=1.25, group=512, vocab=32768, seq=512, batch=8)


def moe_params(seed, c):
    d, e = c["d"], c["experts"]
    shapes = {"embed": (c["vocab"], d), "pos": (c["seq"], d)}
    for i in range(c["layers"]):
        shapes.update(
            {
                f"l{i}.ln1": (d,),
                f"l{i}.wqkv": (d, 3 * d),
                f"l{i}.wo": (d, d),
                f"l{i}.ln2": (d,),
                f"l{i}.router": (d, e),
                f"l{i}.w1": (e, d, c["ff"]),
                f"l{i}.w2": (e, c["ff"], d),
            }
        )
    shapes["ln_f"] = (d,)
    return _init(seed, shapes)


def _top_k_dispatch(probs, k, capacity):
    """GShard's dispatch: for each token its top-k experts in order of preference, each
    expert taking tokens first come first served up to `capacity`. probs: [g, s, e].
    Returns combine weights [g, s, e, c] and the dispatch mask (combine > 0)."""
    e = probs.shape[-1]
    remaining = probs
    combine = 0.0
    filled = jnp.zeros(probs.shape[:1] + (1, e), jnp.int32)
    for _ in range(k):
        choice = jnp.argmax(remaining, axis=-1)
        onehot = jax.nn.one_hot(choice, e, dtype=jnp.int32)  # [g, s, e]
        slot = jnp.cumsum(onehot, axis=1) - 1 + filled  # position within the expert
        keep = onehot * (slot < capacity)
        filled = filled + onehot.sum(axis=1, keepdims=True)
        gate = (probs * keep).sum(-1)  # [g, s]
        place = jax.nn.one_hot(jnp.where(keep.sum(-1) > 0, (slot * keep).sum(-1), capacity), capacity)
        combine = combine + gate[..., None, None] * keep[..., None] * place[:, :, None, :]
        remaining = jnp.where(onehot > 0, -1.0, remaining)
    return combine, (combine > 0).astype(probs.dtype)


def _moe_ffn(p, i, x, c):
    b, s, d = x.shape
    e, g = c["experts"], (b * s) // c["group"]
    capacity = int(math.ceil(c["top_k"] * c["group"] * c["capacity_factor"] / e))
    tokens = x.reshape(g, c["group"], d)
    probs = jax.nn.softmax(tokens @ p[f"l{i}.router"], axis=-1)
    combine, dispatch = _top_k_dispatch(probs, c["top_k"], capacity)
    # Switch's auxiliary loss: fraction of tokens routed to each expert (first choice)
    # times the mean router probability, summed and scaled by the number of experts.
    first = jax.nn.one_hot(jnp.argmax(probs, axis=-1), e)
    aux = e * jnp.sum(first.mean(axis=1) * probs.mean(axis=1), axis=-1).mean()
    xe = jnp.einsum("gsec,gsd->egcd", dispatch, tokens)
    h = jax.nn.gelu(jnp.einsum("egcd,edf->egcf", xe, p[f"l{i}.w1"]))
    ye = jnp.einsum("egcf,efd->egcd", h, p[f"l{i}.w2"])
    y = jnp.einsum("gsec,egcd->gsd", combine, ye)
    return y.reshape(b, s, d), aux


def moe_loss(p, tokens, labels, c):
    x = p["embed"][tokens] + p["pos"][None, : tokens.shape[1]]
    aux_total = 0.0
    for i in range(c["layers"]):
        h = _layer_norm(x, p[f"l{i}.ln1"])
        q, k, v = (_heads(t, c["heads"]) for t in jnp.split(h @ p[f"l{i}.wqkv"], 3, axis=-1))
        x = x + _merge(_causal_attention(q, k, v)) @ p[f"l{i}.wo"]
        y, aux = _moe_ffn(p, i, _layer_norm(x, p[f"l{i}.ln2"]), c)
        x = x + y
        aux_total = aux_total + aux
    logits = _layer_norm(x, p["ln_f"]) @ p["embed"].T
    return _cross_entropy(logits, labels) + 0.01 * aux_total / c["layers"]


def moe_train():
    c = MOE
    p = moe_params(60, c)
    tokens = jax.random.randint(jax.random.PRNGKey(61), (c["batch"], c["seq"] + 1), 0, c["vocab"], jnp.int32)
    loss = lambda p, x, y: moe_loss(p, x, y, c)
    return _adamw_step(loss), _adamw_args(p, tokens[:, :-1], tokens[:, 1:]), (0, 1, 2, 3), (
        f"a training step of a mixture-of-experts decoder ({c['layers']} layers, d {c['d']}, "
        f"{c['heads']} heads, every FFN {c['experts']} GELU experts of {c['ff']} with top-"
        f"{c['top_k']} routing in groups of {c['group']} tokens, capacity factor "
        f"{c['capacity_factor']}, GShard-style one-hot dispatch and combine, the Switch "
        f"load-balancing loss; {c['vocab']}-token tied embedding), batch {c['batch']} x "
        f"{c['seq']} tokens, next-token cross-entropy: jax.value_and_grad and AdamW written "
        "by hand"
    )


# The scale tier (scripts/export_jax_hlo.py --scale): each model as XLA's scheduled module
# (after optimization) and as the module before optimization (`-lowered`).
MODELS = {
    "jax-gpt-12l-train": gpt_train,
    "jax-llama-1b-prefill": llama_prefill,
    "jax-llama-1b-decode": llama_decode,
    "jax-vit-b16-train": vit_train,
    "jax-resnet50-train": resnet_train,
    "jax-unet-diffusion-train": unet_diffusion_train,
    "jax-moe-8e-train": moe_train,
}
