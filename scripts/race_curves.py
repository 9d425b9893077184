#!/usr/bin/env python3
"""One case of a race drawn as SVG: each solver's best mapping against time, as a speedup
over xla (a step line from its first mapping to the end of the budget; higher is faster).

Reads the JSON `race --json` prints (or a race folder's `results.json`); the standard
library only, so the picture on the front page can be redrawn anywhere:

    python3 scripts/race_curves.py docs/race-suite-120s-guided.json resnet50 nnp-i-like \
        docs/img/race-120s-resnet50-nnp-i-like.svg 120

The last argument, the budget in seconds, is needed only for a file that does not say it
(a `results` list merged from several races). A case the file does not hold, a case without an `xla` result, or a result that is not
valid stops the script with a message naming it.
"""

import json
import sys
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 420
LEFT, TOP, PLOT_W, PLOT_H = 70, 40, 480, 330
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def case_results(path, workload, hardware, seconds):
    with open(path) as f:
        race = json.load(f)
    seconds = race.get("seconds", seconds)
    if seconds is None:
        sys.exit(f"{path}: the file does not say the race's budget: give it in seconds")
    rows = [r for r in race["results"] if (r["workload"], r["hardware"]) == (workload, hardware)]
    if not rows:
        sys.exit(f"{path}: no result for {workload} on {hardware}")
    for r in rows:
        if not r.get("valid", False) or not r["curve"]:
            sys.exit(f"{path}: {r['solver']} on {workload}: no valid mapping")
    xla = [r for r in rows if r["solver"] == "xla"]
    if not xla:
        sys.exit(f"{path}: {workload} on {hardware} has no xla result to measure against")
    return float(seconds), xla[0]["best_latency_s"], rows


def svg(seconds, xla_s, rows, title):
    """The picture: a step line per solver, its final speedup in the legend."""
    speedups = [xla_s / lat for r in rows for _, lat in r["curve"]]
    lo, hi = min(speedups), max(speedups)
    pad = (hi - lo) * 0.05 or 0.01
    lo, hi = lo - pad, hi + pad
    x = lambda t: LEFT + PLOT_W * min(max(t, 0.0), seconds) / seconds
    y = lambda s: TOP + PLOT_H * (hi - s) / (hi - lo)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + PLOT_W}" y2="{TOP + PLOT_H}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}" stroke="black"/>',
        f'<text x="{LEFT + PLOT_W / 2}" y="{HEIGHT - 12}" text-anchor="middle">seconds</text>',
        f'<text x="16" y="{TOP + PLOT_H / 2}" transform="rotate(-90 16 {TOP + PLOT_H / 2})" '
        'text-anchor="middle">speedup over xla</text>',
    ]
    for k in range(5):
        t = seconds * k / 4
        s = lo + (hi - lo) * k / 4
        out.append(f'<text x="{x(t):.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{LEFT - 6}" y="{y(s) + 4:.1f}" text-anchor="end">{s:.3f}x</text>')
    for i, r in enumerate(rows):
        colour = COLOURS[i % len(COLOURS)]
        points = []
        for t, lat in r["curve"]:
            if points:
                points.append((x(t), points[-1][1]))
            points.append((x(t), y(xla_s / lat)))
        points.append((x(seconds), points[-1][1]))
        # Improvements closer than a tenth of a pixel draw as one point.
        shown = [f"{px:.1f},{py:.1f}" for px, py in points]
        line = " ".join(p for k, p in enumerate(shown) if k == 0 or p != shown[k - 1])
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{line}"/>')
        ly = TOP + 16 * i
        final = xla_s / r["best_latency_s"]
        out.append(f'<rect x="{LEFT + PLOT_W + 12}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{LEFT + PLOT_W + 26}" y="{ly}">{escape(r["solver"])} {final:.4f}x</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    path, workload, hardware, out = sys.argv[1:5]
    budget = float(sys.argv[5]) if len(sys.argv) == 6 else None
    seconds, xla_s, rows = case_results(path, workload, hardware, budget)
    title = f"{workload} on {hardware}: best mapping against time ({seconds:g} s per solver)"
    with open(out, "w") as f:
        f.write(svg(seconds, xla_s, rows, title))


if __name__ == "__main__":
    main()
