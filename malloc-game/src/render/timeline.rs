//! The latency timeline of a simulation: each op's stall, compute and memory time.

use super::{axes, escape, fmt_us, tint, MapLegend, Svg};
use super::{COMMON_STYLE, HEAD, LEFT, PLOT_W, STALL_COLOUR};
use accel_sim::{Bound, Op, OpTiming, Program, SimReport};
use std::fmt::Write;

/// Latency timeline of a detailed simulation (`Simulator::run(mapping, true)`): x = time in
/// microseconds. Each op is one `<g class="op">` drawn in three lanes: the stall before it
/// (red), its compute time and its memory time (the binding one saturated); a thin band
/// of alternating grey marks op boundaries. A second panel plots op index against time, so
/// stalls and slow stretches show as flat parts. A summary line gives the total latency,
/// total stall and the compute-bound / memory-bound / stalled op counts.
pub fn timeline_svg(program: &Program, report: &SimReport, legend: &MapLegend) -> String {
    let gantt_h: f64 = LANES.iter().map(|l| l.1).sum::<f64>() + BAND;
    let gantt_top = HEAD + 26.0;
    let prog_top = gantt_top + gantt_h + 74.0;
    let height = prog_top + PROGRESS_H + 50.0;
    let mut svg = Svg::new(height, &style());
    let clock = Clock::of(report);
    let drawn = report.ops.len().min(program.len());
    caption(&mut svg, program, report, legend, drawn);
    gantt(
        &mut svg,
        program,
        report,
        &clock,
        (gantt_top, gantt_h),
        drawn,
    );
    progress(&mut svg, program, report, &clock, prog_top, drawn);
    svg.finish()
}

/// The Gantt panel's lanes (name, height), and the band of op boundaries under them.
const LANES: [(&str, f64); 3] = [("stall", 22.0), ("compute", 56.0), ("memory", 56.0)];
const BAND: f64 = 6.0;
/// The progress panel's height.
const PROGRESS_H: f64 = 260.0;

/// The timeline's style block: the lanes' fills (binding saturated) and the progress
/// line's strokes.
fn style() -> String {
    let mut style = String::from(COMMON_STYLE);
    let _ = write!(
        style,
        ".st{{fill:{STALL_COLOUR}}}.c{{fill:{}}}.c.b{{fill:#4e79a7}}.m{{fill:{}}}.m.b{{fill:#f28e2b}}\
         .o0{{fill:#bbb}}.o1{{fill:#777}}.op:hover rect{{stroke:#000;stroke-width:0.6}}\
         .lane{{font-size:12px;fill:#333;text-anchor:end}}\
         .prog{{fill:none;stroke:#333;stroke-width:1.2}}\
         .pst{{stroke:{STALL_COLOUR};stroke-width:2.5}}",
        tint("#4e79a7", 0.6),
        tint("#f28e2b", 0.6)
    );
    style
}

/// The time axis: the program's end (the report's latency, or its last op's end where
/// later) and where its last op ends.
struct Clock {
    total: f64,
    end_of_ops: f64,
    total_us: f64,
}

impl Clock {
    fn of(report: &SimReport) -> Clock {
        let end_of_ops = report
            .ops
            .last()
            .map_or(0.0, |o| o.start_s + o.run_s)
            .max(0.0);
        let total = if report.latency_s.is_finite() {
            report.latency_s.max(end_of_ops)
        } else {
            end_of_ops
        };
        let total_us = if total > 0.0 { total * 1e6 } else { 1.0 };
        Clock {
            total,
            end_of_ops,
            total_us,
        }
    }

    /// The x of time `s` (seconds).
    fn x(&self, s: f64) -> f64 {
        LEFT + (s * 1e6 / self.total_us).clamp(0.0, 1.0) * PLOT_W
    }

    /// The wait after the last op for evictions to land.
    fn tail(&self) -> f64 {
        self.total - self.end_of_ops
    }
}

/// The title, the summary line, the swatches and the warning where the report does not
/// match the program (whose first `drawn` ops are drawn).
fn caption(svg: &mut Svg, program: &Program, report: &SimReport, legend: &MapLegend, drawn: usize) {
    let ops = &report.ops;
    let (mut nc, mut nm, mut ns) = (0, 0, 0);
    for o in ops {
        match o.bound {
            Bound::Compute => nc += 1,
            Bound::Memory => nm += 1,
            Bound::Stalled => ns += 1,
        }
    }
    svg.text(
        LEFT,
        26.0,
        "title",
        &format!(
            "Latency timeline: {} on {} · solver: {}",
            legend.workload, legend.hardware, legend.solver
        ),
    );
    let share = if report.latency_s > 0.0 {
        format!(" ({:.1}%)", 100.0 * report.stall_s / report.latency_s)
    } else {
        String::new()
    };
    svg.text(
        LEFT,
        48.0,
        "sub",
        &format!(
            "total latency {} · total stall {}{share} · {} ops: {nc} compute-bound, {nm} memory-bound, {ns} stalled",
            fmt_us(report.latency_s),
            fmt_us(report.stall_s),
            ops.len()
        ),
    );
    let sy = 64.0;
    let swatches = [
        (STALL_COLOUR.to_string(), "stall (waiting for a copy)"),
        ("#4e79a7".to_string(), "compute (binding)"),
        (tint("#4e79a7", 0.6), "compute (not binding)"),
        ("#f28e2b".to_string(), "memory (binding)"),
        (tint("#f28e2b", 0.6), "memory (not binding)"),
    ];
    let mut x = LEFT;
    for (colour, label) in swatches {
        svg.fmt(format_args!(
            "<rect x=\"{x:.1}\" y=\"{sy}\" width=\"14\" height=\"12\" fill=\"{colour}\"/>\n"
        ));
        svg.text(x + 19.0, sy + 10.5, "tick", label);
        x += 200.0;
    }
    if ops.is_empty() {
        svg.text(
            LEFT,
            92.0,
            "warn",
            "no per-op detail in this report: run the simulator with detail = true",
        );
    } else if ops.len() != program.len() {
        svg.text(
            LEFT,
            92.0,
            "warn",
            &format!(
                "warning: the report has {} ops, the program {}: drawing the first {drawn}",
                ops.len(),
                program.len()
            ),
        );
    }
}

/// A bar of `class` from time `s0` to `s1` in the lane at `(y, h)`. Stalls are what a
/// mapping should avoid: one never shrinks below a pixel.
fn bar(svg: &mut Svg, clock: &Clock, class: &str, (s0, s1): (f64, f64), (y, h): (f64, f64)) {
    let x0 = clock.x(s0);
    let mut w = clock.x(s1) - x0;
    if class == "st" && s1 > s0 {
        w = w.max(1.0);
    }
    if w > 0.0 {
        svg.fmt(format_args!(
            "<rect class=\"{class}\" x=\"{x0:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{:.1}\"/>",
            y + 1.0,
            h - 2.0
        ));
    }
}

/// The Gantt panel at `(top, height)`: its axes and lanes, a group per drawn op, and the
/// wait at the end.
fn gantt(
    svg: &mut Svg,
    program: &Program,
    report: &SimReport,
    clock: &Clock,
    (gantt_top, gantt_h): (f64, f64),
    drawn: usize,
) {
    svg.text(
        LEFT,
        gantt_top - 8.0,
        "panel",
        "ops over time: stall, compute and memory time of each op (hover for details)",
    );
    axes(
        svg,
        gantt_top,
        gantt_h,
        clock.total_us,
        16.0,
        false,
        1.0,
        1.0,
        false,
    );
    let mut lane_y = Vec::new();
    let mut y = gantt_top;
    for (name, h) in LANES {
        lane_y.push((y, h));
        svg.text(LEFT - 6.0, y + h / 2.0 + 4.0, "lane", name);
        y += h;
    }
    let band_y = y;
    svg.text(
        LEFT + PLOT_W / 2.0,
        gantt_top + gantt_h + 32.0,
        "axis",
        "time (µs)",
    );
    let lanes = Lanes {
        y: lane_y,
        band: band_y,
    };
    for (t, o) in report.ops.iter().take(drawn).enumerate() {
        op_group(svg, clock, &lanes, t, program.op(t), o);
    }
    let tail = clock.tail();
    if !report.ops.is_empty() && tail > 0.0 {
        svg.fmt(format_args!(
            "<g class=\"tail\"><title>end of program: waiting {} for evictions to land in level 0</title>",
            fmt_us(tail)
        ));
        bar(
            svg,
            clock,
            "st",
            (clock.end_of_ops, clock.total),
            lanes.y[0],
        );
        svg.raw("</g>\n");
    }
}

/// The Gantt panel's lanes: each lane's `(top, height)`, and the top of the band of whole
/// op extents below them.
struct Lanes {
    y: Vec<(f64, f64)>,
    band: f64,
}

/// One op's group: its details on hover, its stall, compute and memory bars, and its whole
/// extent in the band.
fn op_group(svg: &mut Svg, clock: &Clock, lanes: &Lanes, t: usize, op: &Op, o: &OpTiming) {
    svg.fmt(format_args!(
        "<g class=\"op\"><title>op {t} {} ({})\nstart {} · run {}\ncompute {} · memory {} · stall before {}\n{}</title>",
        escape(&op.name),
        escape(&op.kind),
        fmt_us(o.start_s),
        fmt_us(o.run_s),
        fmt_us(o.compute_s),
        fmt_us(o.memory_s),
        fmt_us(o.stall_s),
        match o.bound {
            Bound::Compute => "compute-bound",
            Bound::Memory => "memory-bound",
            Bound::Stalled => "stalled",
        }
    ));
    if o.stall_s > 0.0 {
        bar(
            svg,
            clock,
            "st",
            (o.start_s - o.stall_s, o.start_s),
            lanes.y[0],
        );
    }
    let c_bind = if o.compute_s >= o.memory_s { " b" } else { "" };
    let m_bind = if o.compute_s < o.memory_s { " b" } else { "" };
    let compute = (o.start_s, o.start_s + o.compute_s);
    bar(svg, clock, &format!("c{c_bind}"), compute, lanes.y[1]);
    let memory = (o.start_s, o.start_s + o.memory_s);
    bar(svg, clock, &format!("m{m_bind}"), memory, lanes.y[2]);
    // The op's whole extent (run time including overhead) in the boundary band; the
    // band keeps a hover target for ops with neither compute nor memory time.
    let x0 = clock.x(o.start_s);
    let w = (clock.x(o.start_s + o.run_s) - x0).max(0.5);
    svg.fmt(format_args!(
        "<rect class=\"o{}\" x=\"{x0:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{BAND}\"/></g>\n",
        t % 2,
        lanes.band
    ));
}

/// The progress panel at `prog_top`: op index against time, stalls in red.
fn progress(
    svg: &mut Svg,
    program: &Program,
    report: &SimReport,
    clock: &Clock,
    prog_top: f64,
    drawn: usize,
) {
    let prog_h = PROGRESS_H;
    let t_count = program.len().max(1) as f64;
    svg.text(
        LEFT,
        prog_top - 8.0,
        "panel",
        "progress: ops completed over time (flat = time spent in few ops; red = stall)",
    );
    axes(
        svg,
        prog_top,
        prog_h,
        clock.total_us,
        16.0,
        false,
        t_count,
        1.0,
        true,
    );
    svg.fmt(format_args!(
        "<text class=\"axis\" transform=\"translate({:.1},{:.1}) rotate(-90)\">op index</text>\n",
        LEFT - 52.0,
        prog_top + prog_h / 2.0
    ));
    svg.text(
        LEFT + PLOT_W / 2.0,
        prog_top + prog_h + 32.0,
        "axis",
        "time (µs)",
    );
    let yp = |t: f64| prog_top + prog_h - t / t_count * prog_h;
    let xs = |s: f64| clock.x(s);
    let mut pts = String::new();
    let mut stalls = String::new();
    for (t, o) in report.ops.iter().take(drawn).enumerate() {
        let y = yp(t as f64);
        if o.stall_s > 0.0 {
            let _ = write!(
                stalls,
                "<line class=\"pst\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                xs(o.start_s - o.stall_s),
                xs(o.start_s)
            );
        }
        let _ = write!(
            pts,
            "{:.1},{y:.1} {:.1},{:.1} ",
            xs(o.start_s),
            xs(o.start_s + o.run_s),
            yp(t as f64 + 1.0)
        );
    }
    if drawn > 0 {
        if clock.tail() > 0.0 {
            let y = yp(drawn as f64);
            let _ = write!(
                stalls,
                "<line class=\"pst\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                xs(clock.end_of_ops),
                xs(clock.total)
            );
        }
        svg.fmt(format_args!(
            "<polyline class=\"prog\" points=\"{}\"/>\n{stalls}\n",
            pts.trim_end()
        ));
    }
}
