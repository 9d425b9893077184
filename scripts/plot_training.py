#!/usr/bin/env python3
"""Training curve of a `mallocmuzero train` run as SVG (standard library only): simulated
latency against wall-clock time, for the best mapping found so far and each noise-free
evaluation game, with the xla baseline as a line.

    python3 scripts/plot_training.py runs/bert/metrics.jsonl docs/img/train-bert.svg [--title T]
"""
import argparse
import json
from xml.sax.saxutils import escape

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("out")
ap.add_argument("--title", default=None)
args = ap.parse_args()

rows = [json.loads(line) for line in open(args.metrics) if line.strip()]
if not rows:
    raise SystemExit(f"{args.metrics}: no metrics lines")
t = [r["elapsed_s"] / 60 for r in rows]
best = [r["best_latency_s"] * 1e6 for r in rows]
evals = [(r["elapsed_s"] / 60, r["eval_latency_s"] * 1e6) for r in rows if r.get("eval_latency_s")]
xla = rows[-1]["xla_latency_s"] * 1e6
ys = best + [e for _, e in evals] + [xla]
lo, hi = min(ys), max(ys)
pad = (hi - lo) * 0.08 or 1.0
lo, hi = lo - pad, hi + pad
W, H, L, R, T, B = 900, 420, 70, 20, 50, 50
x_max = max(t) or 1.0


def X(v):
    return L + (W - L - R) * v / x_max


def Y(v):
    return T + (H - T - B) * (hi - v) / (hi - lo)


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>']
title = args.title or f"mallocMuZero training: {rows[-1].get('workload', args.metrics)}"
svg.append(f'<text x="{L}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>')
svg.append(f'<text x="{L}" y="40" fill="#555">best {best[-1]:.1f} us = {xla / best[-1]:.4f}x vs xla ({xla:.1f} us); '
           f'{rows[-1]["train_steps"]} training steps, {rows[-1]["positions"]} positions</text>')
for i in range(6):
    v = lo + (hi - lo) * i / 5
    svg.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#eee"/>')
    svg.append(f'<text x="{L - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
for i in range(6):
    v = x_max * i / 5
    svg.append(f'<text x="{X(v):.1f}" y="{H - B + 18}" text-anchor="middle">{v:.1f}</text>')
svg.append(f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle">minutes</text>')
svg.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" text-anchor="middle">simulated latency (us)</text>')
svg.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(xla):.1f}" y2="{Y(xla):.1f}" stroke="#c0392b" stroke-dasharray="6 4"/>')
svg.append(f'<text x="{W - R - 4}" y="{Y(xla) - 5:.1f}" text-anchor="end" fill="#c0392b">xla baseline</text>')
for x, e in evals:
    svg.append(f'<circle cx="{X(x):.1f}" cy="{Y(e):.1f}" r="2" fill="#7f8c8d"><title>evaluation game {e:.1f} us</title></circle>')
pts = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in zip(t, best))
svg.append(f'<polyline points="{pts}" fill="none" stroke="#2c6fbb" stroke-width="2"/>')
svg.append(f'<text x="{W - R - 8}" y="{T + 14}" text-anchor="end" fill="#2c6fbb">best mapping found</text>')
svg.append(f'<text x="{W - R - 8}" y="{T + 30}" text-anchor="end" fill="#7f8c8d">noise-free evaluation games</text>')
svg.append('</svg>')
open(args.out, "w").write("\n".join(svg))
print(f"wrote {args.out}")
