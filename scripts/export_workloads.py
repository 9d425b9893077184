#!/usr/bin/env python3
"""Trace real models with torch.export and write them as mallocmuzero program JSON files.

Development-time only (CI never runs it): the JSON files it writes are committed under
bench-workloads/data/ and embedded in the Rust crate. Requirements: scripts/requirements-export.txt.

    python scripts/export_workloads.py [--dtype-bytes 2] [--out bench-workloads/data] [names...]

Every model is built with random weights (nothing is downloaded), put in eval mode, and
traced under torch.no_grad() with torch.export.export, then decomposed to core ATen with
torch.export.default_decompositions() minus aten.scaled_dot_product_attention, so attention
stays the fused op that transformers/torchvision emit.

The graph -> program rules, the FLOP table and the stats are the package's tracing
(python/pysrc/mallocmuzero/trace.py and _fx.py, `mallocmuzero.trace`): one implementation
for these files and for users tracing their own modules. This script only says which models,
with which inputs, and writes the files; it imports the package's sources directly, so it
runs without installing the package.

Models (names exactly): resnet50, resnet101, alexnet, mobilenet-v2, vgg16, vit-b16 (torchvision,
weights=None, input 8x3x224x224), bert-base-s128, bert-base-s384 (BertModel(BertConfig()),
input_ids 4x128 / 4x384, no attention mask), gpt2-small-s128 (GPT2Model(GPT2Config(
use_cache=False)), input_ids 4x128), unet (the U-Net below: 4 down / 4 up levels, base 64
channels, conv3x3-BN-ReLU pairs, padding 1, max-pool down, 2x2 transposed-conv up, concat
skips, 1x1 head to 2 classes; input 1x3x256x256). Training families of the bundled
generalist (TRAIN_EXTRA_NAMES, embedded too): googlenet, squeezenet1-1, shufflenet-v2,
regnet-y-400mf (torchvision, 8x3x224x224), llama-small-s128 (LlamaModel, hidden 512, 8
layers, input_ids 4x128). Held-out families (UNSEEN_NAMES, written with --out
bench-workloads/heldout, never embedded or trained on): densenet121, efficientnet-b0,
convnext-tiny, swin-t (torchvision, 8x3x224x224), opt-125m-s128 (OPTModel(OPTConfig()),
4x128), t5-small-enc-s128 (T5EncoderModel(T5Config()), 4x128).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn as nn


def _package_sources():
    """The package's pure-Python modules without its native module (which needs a build):
    `mallocmuzero` as a bare package over python/pysrc/mallocmuzero."""
    import types

    here = os.path.dirname(os.path.abspath(__file__))
    pkg = types.ModuleType("mallocmuzero")
    pkg.__path__ = [os.path.join(here, "..", "python", "pysrc", "mallocmuzero")]
    sys.modules.setdefault("mallocmuzero", pkg)


_package_sources()
from mallocmuzero.trace import dump, trace_to_dict, unknown_op_kinds  # noqa: E402

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
# trained or tuned on (issues 10 and 14): dense connectivity, compound-scaled inverted
# residuals with squeeze-excitation, a ConvNeXt, a shifted-window transformer, OPT
# (decoder) and T5's encoder (relative position biases, RMS norm). Exported on request
# only, into bench-workloads/heldout/ (not embedded; never trained on).
UNSEEN_NAMES = [
    "densenet121",
    "efficientnet-b0",
    "convnext-tiny",
    "swin-t",
    "opt-125m-s128",
    "t5-small-enc-s128",
]

# More families for the bundled generalist's training only (issue 14), into
# malloc-muzero/generalist/programs/: inception (GoogLeNet), fire modules (SqueezeNet),
# channel shuffle (ShuffleNet v2), RegNet, and a small LLaMA-style decoder (RMS norm,
# rotary positions, gated MLP).
TRAIN_EXTRA_NAMES = [
    "googlenet",
    "squeezenet1-1",
    "shufflenet-v2",
    "regnet-y-400mf",
    "llama-small-s128",
]

ALL_NAMES = MODEL_NAMES + UNSEEN_NAMES + TRAIN_EXTRA_NAMES

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
        "swin-t": torchvision.models.swin_t,
        "googlenet": torchvision.models.googlenet,
        "squeezenet1-1": torchvision.models.squeezenet1_1,
        "shufflenet-v2": torchvision.models.shufflenet_v2_x1_0,
        "regnet-y-400mf": torchvision.models.regnet_y_400mf,
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
    if name == "opt-125m-s128":
        from transformers import OPTConfig, OPTModel

        ids = torch.randint(0, 50272, (TRANSFORMER_BATCH, 128))
        model = OPTModel(OPTConfig(use_cache=False))
        return (
            model,
            (ids,),
            f"transformers OPTModel(OPTConfig(use_cache=False)) (opt-125m: 12 layers, hidden "
            f"768), input_ids {shape_str(ids)} int64, causal mask built in the graph, output "
            f"last_hidden_state, attention {model.config._attn_implementation}",
        )
    if name == "t5-small-enc-s128":
        from transformers import T5Config, T5EncoderModel

        ids = torch.randint(0, 32128, (TRANSFORMER_BATCH, 128))
        model = T5EncoderModel(T5Config())
        return (
            model,
            (ids,),
            f"transformers T5EncoderModel(T5Config()) (t5-small encoder: 6 layers, d_model "
            f"512), input_ids {shape_str(ids)} int64, output last_hidden_state, attention "
            f"{model.config._attn_implementation}",
        )
    if name == "llama-small-s128":
        from transformers import LlamaConfig, LlamaModel

        ids = torch.randint(0, 32000, (TRANSFORMER_BATCH, 128))
        config = LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
                             num_attention_heads=8, num_key_value_heads=8, use_cache=False)
        model = LlamaModel(config)
        return (
            model,
            (ids,),
            f"transformers LlamaModel(LlamaConfig(hidden_size=512, intermediate_size=1376, "
            f"num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=8, "
            f"use_cache=False)), input_ids {shape_str(ids)} int64, output last_hidden_state, "
            f"attention {model.config._attn_implementation}",
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
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(ALL_NAMES)}")


def shape_str(t):
    return "x".join(str(d) for d in t.shape)


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
    doc = trace_to_dict(
        model,
        args,
        name=name,
        dtype_bytes=dtype_bytes,
        description=f"{model_desc}; random weights",
        generator="scripts/export_workloads.py",
        source=versions(),
    )
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w") as f:
        f.write(dump(doc))
    stats = dict(doc["stats"], total_flops=float(doc["stats"]["total_flops"]))
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
        if n not in ALL_NAMES:
            p.error(f"unknown model {n!r}; known: {', '.join(ALL_NAMES)}")
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for n in names:
        stats, secs, size = export_one(n, a.dtype_bytes, a.out)
        rows.append((n, stats, size))
        print(f"{n}: {stats['ops']} ops in {secs:.1f} s", file=sys.stderr)
    unknown = unknown_op_kinds()
    if unknown:
        print(f"warning: ops not in the FLOP table (counted 1 per element): "
              f"{', '.join(sorted(unknown))}", file=sys.stderr)
    print(f"{'name':<18}{'ops':>6}{'buffers':>9}{'GFLOPs':>10}{'weight MB':>11}{'peak live MB':>14}{'file KB':>9}")
    for n, s, size in rows:
        print(f"{n:<18}{s['ops']:>6}{s['buffers']:>9}{s['total_flops'] / 1e9:>10.2f}"
              f"{s['weight_bytes'] / 1e6:>11.2f}{s['peak_live_bytes'] / 1e6:>14.2f}{size / 1e3:>9.1f}")


if __name__ == "__main__":
    main()
