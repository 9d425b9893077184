"""Small JAX programs: the HLO loader's cross-checks against XLA and the bundled JAX
workloads. All of it is this project's own code (no model code or weights from elsewhere);
the weights are random, since only shapes and the schedule matter to a memory mapping.

Each entry of PROGRAMS is a function returning (fn, args, weight_argnums, description):
the arguments in `weight_argnums` hold weights (and optimizer state); the rest are inputs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _init(key, shapes):
    keys = jax.random.split(key, len(shapes))
    return {n: jax.random.normal(k, s, jnp.float32) * 0.02 for k, (n, s) in zip(keys, shapes.items())}


# --------------------------------------------------------------------------------------
# MLP
# --------------------------------------------------------------------------------------
def mlp_params(key, sizes):
    shapes = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        shapes[f"w{i}"] = (a, b)
        shapes[f"b{i}"] = (b,)
    return _init(key, shapes)


def mlp_apply(params, x):
    n = len(params) // 2
    for i in range(n):
        x = x @ params[f"w{i}"] + params[f"b{i}"]
        if i < n - 1:
            x = jax.nn.relu(x)
    return x


def mlp_loss(params, x, y):
    return jnp.mean((mlp_apply(params, x) - y) ** 2)


def mlp_inference():
    p = mlp_params(jax.random.PRNGKey(0), [256, 512, 512, 10])
    x = jnp.ones((32, 256), jnp.float32)
    return mlp_apply, (p, x), (0,), "a 3-layer MLP (256-512-512-10, ReLU), batch 32, inference"


def sgd_momentum(params, mom, grads, lr=1e-2, beta=0.9):
    mom = jax.tree.map(lambda m, g: beta * m + g, mom, grads)
    params = jax.tree.map(lambda p, m: p - lr * m, params, mom)
    return params, mom


def mlp_train():
    p = mlp_params(jax.random.PRNGKey(0), [256, 512, 512, 10])
    mom = jax.tree.map(jnp.zeros_like, p)
    x = jnp.ones((32, 256), jnp.float32)
    y = jnp.ones((32, 10), jnp.float32)

    def step(params, mom, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        params, mom = sgd_momentum(params, mom, grads)
        return loss, params, mom

    return (
        step,
        (p, mom, x, y),
        (0, 1),
        "a training step of a 3-layer MLP (256-512-512-10, ReLU, MSE loss), batch 32: "
        "jax.value_and_grad and SGD with momentum written by hand",
    )


# --------------------------------------------------------------------------------------
# Transformer
# --------------------------------------------------------------------------------------
def transformer_params(key, layers, d, ff, vocab):
    shapes = {"embed": (vocab, d)}
    for i in range(layers):
        shapes.update(
            {
                f"l{i}.ln1": (d,),
                f"l{i}.wqkv": (d, 3 * d),
                f"l{i}.wo": (d, d),
                f"l{i}.ln2": (d,),
                f"l{i}.w1": (d, ff),
                f"l{i}.w2": (ff, d),
            }
        )
    shapes["ln_f"] = (d,)
    return _init(key, shapes)


def _layer_norm(x, g):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * (1.0 + g)


def _block(p, i, x, heads):
    b, s, d = x.shape
    h = _layer_norm(x, p[f"l{i}.ln1"])
    q, k, v = jnp.split(h @ p[f"l{i}.wqkv"], 3, axis=-1)
    q, k, v = (t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
    att = (q @ k.transpose(0, 1, 3, 2)) / jnp.sqrt(d // heads)
    mask = jnp.tril(jnp.ones((s, s), bool))
    att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
    o = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + o @ p[f"l{i}.wo"]
    h = _layer_norm(x, p[f"l{i}.ln2"])
    return x + jax.nn.gelu(h @ p[f"l{i}.w1"]) @ p[f"l{i}.w2"]


def transformer_logits(params, tokens, layers, heads):
    x = params["embed"][tokens]
    for i in range(layers):
        x = _block(params, i, x, heads)
    return _layer_norm(x, params["ln_f"]) @ params["embed"].T


def transformer_loss(params, tokens, layers, heads):
    logits = transformer_logits(params, tokens[:, :-1], layers, heads)
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1).mean()


def adam(params, m, v, grads, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    t = t + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    scale = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)
    params = jax.tree.map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v)
    return params, m, v, t


def transformer_block_inference():
    p = transformer_params(jax.random.PRNGKey(1), 1, 128, 512, 256)
    tokens = jnp.zeros((4, 64), jnp.int32)
    fn = lambda p, t: transformer_logits(p, t, 1, 4)
    return fn, (p, tokens), (0,), (
        "one pre-LN transformer block (d 128, 4 heads, FFN 512, GELU, causal attention) with "
        "a 256-token embedding and tied output, batch 4 x 64 tokens, inference"
    )


def _train_step(layers, heads):
    def step(params, m, v, t, tokens):
        loss, grads = jax.value_and_grad(transformer_loss)(params, tokens, layers, heads)
        params, m, v, t = adam(params, m, v, grads, t)
        return loss, params, m, v, t

    return step


def transformer_block_train():
    p = transformer_params(jax.random.PRNGKey(1), 1, 128, 512, 256)
    zeros = jax.tree.map(jnp.zeros_like, p)
    tokens = jnp.zeros((4, 65), jnp.int32)
    return _train_step(1, 4), (p, zeros, zeros, jnp.zeros((), jnp.float32), tokens), (0, 1, 2, 3), (
        "a training step of one pre-LN transformer block (d 128, 4 heads, FFN 512) with a "
        "256-token tied embedding, batch 4 x 64 tokens, next-token cross-entropy: "
        "jax.value_and_grad and Adam written by hand"
    )


def transformer_train_4l():
    p = transformer_params(jax.random.PRNGKey(2), 4, 128, 512, 512)
    zeros = jax.tree.map(jnp.zeros_like, p)
    tokens = jnp.zeros((8, 65), jnp.int32)
    return _train_step(4, 4), (p, zeros, zeros, jnp.zeros((), jnp.float32), tokens), (0, 1, 2, 3), (
        "a training step of a 4-layer pre-LN transformer (d 128, 4 heads, FFN 512, GELU, "
        "causal) with a 512-token tied embedding, batch 8 x 64 tokens, next-token "
        "cross-entropy: jax.value_and_grad and Adam written by hand"
    )


# --------------------------------------------------------------------------------------
# Convolutional network
# --------------------------------------------------------------------------------------
def convnet_params(key):
    return _init(
        key,
        {
            "c1": (3, 3, 3, 32),
            "c2": (3, 3, 32, 64),
            "c3": (3, 3, 64, 64),
            "fc": (64, 10),
        },
    )


def convnet_apply(p, x):
    dn = ("NHWC", "HWIO", "NHWC")
    for name, stride in (("c1", 1), ("c2", 2), ("c3", 2)):
        x = jax.lax.conv_general_dilated(x, p[name], (stride, stride), "SAME", dimension_numbers=dn)
        x = jax.nn.relu(x)
    return x.mean(axis=(1, 2)) @ p["fc"]


def convnet_inference():
    p = convnet_params(jax.random.PRNGKey(3))
    x = jnp.ones((8, 32, 32, 3), jnp.float32)
    return convnet_apply, (p, x), (0,), (
        "a 3-convolution network (3x3 convolutions to 32, 64, 64 channels, strides 1, 2, 2, "
        "ReLU, global average pool, dense to 10), batch 8 of 32x32x3, inference"
    )


def convnet_train():
    p = convnet_params(jax.random.PRNGKey(3))
    mom = jax.tree.map(jnp.zeros_like, p)
    x = jnp.ones((8, 32, 32, 3), jnp.float32)
    y = jnp.ones((8, 10), jnp.float32)

    def step(params, mom, x, y):
        loss_fn = lambda p: jnp.mean((convnet_apply(p, x) - y) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        params, mom = sgd_momentum(params, mom, grads)
        return loss, params, mom

    return step, (p, mom, x, y), (0, 1), (
        "a training step of a 3-convolution network (3x3 convolutions to 32, 64, 64 "
        "channels, strides 1, 2, 2, ReLU, average pool, dense to 10, MSE loss), batch 8 of "
        "32x32x3: jax.value_and_grad and SGD with momentum written by hand"
    )


# --------------------------------------------------------------------------------------
# A loop: an RNN over a sequence with lax.scan
# --------------------------------------------------------------------------------------
def rnn_scan(unroll=1):
    p = _init(jax.random.PRNGKey(4), {"wx": (64, 128), "wh": (128, 128), "wo": (128, 16)})
    xs = jnp.ones((12, 16, 64), jnp.float32)

    def fn(p, xs):
        def cell(h, x):
            h = jnp.tanh(x @ p["wx"] + h @ p["wh"])
            return h, h @ p["wo"]

        h0 = jnp.zeros((xs.shape[1], 128), jnp.float32)
        _, ys = jax.lax.scan(cell, h0, xs, unroll=unroll)
        return ys

    return fn, (p, xs), (0,), (
        "an Elman RNN (64 in, 128 hidden, tanh, 16 out) over 12 steps of a batch of 16 with "
        "jax.lax.scan, inference"
    )


# --------------------------------------------------------------------------------------
# Many opcodes at once: the FLOP rules beyond dots and elementwise ops
# --------------------------------------------------------------------------------------
def op_mix():
    p = _init(jax.random.PRNGKey(5), {"k": (3, 3, 1, 4), "w": (32, 32)})
    x = jnp.ones((16, 32), jnp.float32)
    idx = jnp.arange(16, dtype=jnp.int32)

    def fn(p, x, idx):
        pool = lambda z: jax.lax.reduce_window(z, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        img = x[None, :, :, None]
        pooled, pool_grad = jax.value_and_grad(lambda z: pool(z).sum())(img)  # select-and-scatter
        up = jax.lax.conv_transpose(img, p["k"], (2, 2), "SAME")  # dilated convolution
        half = (x.astype(jnp.bfloat16) @ p["w"].astype(jnp.bfloat16)).astype(jnp.float32)
        rows = x[idx[::-1]]  # gather
        hist = jnp.zeros((4, 32)).at[idx % 4].add(x)  # scatter
        return (
            jnp.sort(x, axis=-1),
            jnp.argmax(x, axis=-1),  # a variadic reduce
            jnp.cumsum(half, axis=0),  # reduce-window
            rows + hist.sum(),
            pooled,
            pool_grad,
            up.mean(),
        )

    return fn, (p, x, idx), (0,), (
        "sort, argmax, cumsum, gather, scatter-add, max pooling and its gradient, a "
        "transposed convolution and a bf16 matmul on 16x32 values"
    )


# The cross-checks against XLA (scripts/export_jax_hlo.py --checks).
CHECKS = {
    "mlp": mlp_inference,
    "mlp-train": mlp_train,
    "transformer-block": transformer_block_inference,
    "transformer-block-train": transformer_block_train,
    "convnet": convnet_inference,
    "rnn-scan": rnn_scan,
    "op-mix": op_mix,
}

# The bundled workloads (scripts/export_jax_hlo.py --bundle).
BUNDLED = {
    "jax-transformer-4l-train": transformer_train_4l,
    "jax-convnet-train": convnet_train,
    "jax-mlp-train": mlp_train,
    "jax-rnn-scan": rnn_scan,
    "jax-transformer-4l-train-lowered": transformer_train_4l,
}

# Bundled as the module before XLA's optimizations (every JAX op, program order).
BUNDLED_LOWERED = {"jax-transformer-4l-train-lowered"}
