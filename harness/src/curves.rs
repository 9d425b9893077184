//! The race's pictures: each solver's best latency as a step line, against time or
//! against mappings evaluated.

use crate::race::RaceResult;

/// An SVG of the race curves of one case: each solver's best latency against time, as a
/// speedup over `xla_latency_s` (higher is better), a step line per solver.
pub fn curves_svg(title: &str, results: &[RaceResult], seconds: f64, xla_latency_s: f64) -> String {
    let series: Vec<Series> = results
        .iter()
        .map(|r| Series {
            name: &r.solver,
            best_latency_s: r.best_latency_s,
            points: r.curve.clone(),
        })
        .collect();
    let axis = XAxis {
        label: "seconds",
        max: seconds,
        log: false,
    };
    steps_svg(title, &series, &axis, xla_latency_s)
}

/// An SVG of the solvers that score mappings one by one (EGRL's): best speedup over
/// `xla_latency_s` against the number of mappings evaluated, log scale (as EGRL's paper
/// plots its Figure 4). Solvers without such a curve are left out.
pub fn evaluations_svg(title: &str, results: &[RaceResult], xla_latency_s: f64) -> String {
    let series: Vec<Series> = results
        .iter()
        .filter(|r| !r.evaluations_curve.is_empty())
        .map(|r| Series {
            name: &r.solver,
            best_latency_s: r.best_latency_s,
            points: r
                .evaluations_curve
                .iter()
                .map(|&(e, l)| (e as f64, l))
                .collect(),
        })
        .collect();
    let max = series
        .iter()
        .flat_map(|s| s.points.last().map(|p| p.0))
        .fold(10.0f64, f64::max);
    let axis = XAxis {
        label: "mappings evaluated",
        max,
        log: true,
    };
    steps_svg(title, &series, &axis, xla_latency_s)
}

struct Series<'a> {
    name: &'a str,
    best_latency_s: Option<f64>,
    /// (x, best latency) at each improvement.
    points: Vec<(f64, f64)>,
}

struct XAxis {
    label: &'static str,
    max: f64,
    /// Log-10 scale from 1 to `max`.
    log: bool,
}

impl XAxis {
    /// Where `v` falls, 0 to 1.
    fn fraction(&self, v: f64) -> f64 {
        let f = if self.log {
            v.max(1.0).log10() / self.max.max(10.0).log10()
        } else {
            v / self.max
        };
        f.clamp(0.0, 1.0)
    }
    /// The axis value at fraction `f`.
    fn at(&self, f: f64) -> f64 {
        if self.log {
            10f64.powf(f * self.max.max(10.0).log10())
        } else {
            self.max * f
        }
    }
}

fn steps_svg(title: &str, series: &[Series], axis: &XAxis, xla_latency_s: f64) -> String {
    const COLORS: [&str; 8] = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    ];
    let (w, h, left, right, top, bottom) = (720.0, 420.0, 70.0, 170.0, 40.0, 50.0);
    // The axis spans the solvers' final results (and xla): a solver's early, far slower
    // mappings would squeeze the differences that matter into a sliver; its line is clipped.
    let speedups: Vec<f64> = series
        .iter()
        .filter_map(|r| r.best_latency_s.map(|l| xla_latency_s / l))
        .filter(|s| s.is_finite())
        .collect();
    let lo = speedups.iter().copied().fold(1.0f64, f64::min);
    let hi = speedups.iter().copied().fold(1.0f64, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.005);
    let (lo, hi) = (lo - pad, hi + pad);
    let x = |v: f64| left + axis.fraction(v) * (w - left - right);
    let y = |s: f64| top + (hi - s.clamp(lo, hi)) / (hi - lo) * (h - top - bottom);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{left}" y="20" font-size="14">{}</text>
<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="black"/>
<text x="{cx}" y="{xl}" text-anchor="middle">{}</text>
<text x="14" y="{cy}" transform="rotate(-90 14 {cy})" text-anchor="middle">speedup over xla</text>
"#,
        escape(title),
        axis.label,
        b = h - bottom,
        r = w - right,
        cx = (left + w - right) / 2.0,
        xl = h - 12.0,
        cy = (top + h - bottom) / 2.0,
    );
    for k in 0..=4 {
        let s = lo + (hi - lo) * k as f64 / 4.0;
        let t = axis.at(k as f64 / 4.0);
        svg += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{s:.3}x</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{t:.0}</text>\n",
            left - 6.0,
            y(s) + 4.0,
            x(t),
            h - bottom + 16.0
        );
    }
    for (i, r) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts = Vec::new();
        let mut last: Option<f64> = None;
        for &(t, l) in &r.points {
            let s = xla_latency_s / l;
            if let Some(prev) = last {
                pts.push(format!("{:.1},{:.1}", x(t), y(prev)));
            }
            pts.push(format!("{:.1},{:.1}", x(t), y(s)));
            last = Some(s);
        }
        if let Some(prev) = last {
            pts.push(format!("{:.1},{:.1}", x(axis.max), y(prev)));
            svg += &format!(
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
                pts.join(" ")
            );
        }
        let ly = top + 16.0 * i as f64;
        let best = r
            .best_latency_s
            .map_or("-".into(), |l| format!("{:.4}x", xla_latency_s / l));
        svg += &format!(
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{} {best}</text>\n",
            w - right + 10.0,
            ly - 9.0,
            w - right + 24.0,
            ly,
            escape(r.name)
        );
    }
    svg + "</svg>\n"
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
