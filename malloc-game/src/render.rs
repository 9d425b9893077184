//! SVG pictures: the memory map of a mapping and the latency timeline of a simulation.
//!
//! Both are plain strings (no dependencies) on a fixed 1600 px wide canvas, made to stay
//! readable and small for programs of about 1,000 buffers and 1,000 ops: shapes carry no
//! labels, only `<title>` tooltips, and the styling lives in one `<style>` block so each
//! shape costs a class name instead of repeated attributes.
//!
//! Stable hooks for tests and scripts: every fast allocation is one
//! `<rect class="alloc ...">`, every op of the timeline one `<g class="op">`.
//!
//! Neither function panics on inconsistent input (a mapping for another program, a level
//! the hardware lacks, a report without per-op detail): what cannot be drawn is counted in
//! a warning line of the picture instead.

use accel_sim::{Arrival, Bound, BufferKind, Hardware, Mapping, Program, SimReport};
use std::borrow::Cow;
use std::fmt::Write;

/// The caption of a picture: what was mapped, on what, by whom, and how fast it ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapLegend {
    pub workload: String,
    pub hardware: String,
    pub solver: String,
    /// Simulated latency of the mapping, seconds; `None` when not measured.
    pub latency_s: Option<f64>,
}

const WIDTH: f64 = 1600.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const HEAD: f64 = 100.0;
const MIB: f64 = (1u64 << 20) as f64;

/// Base colour of each buffer kind (Tableau 10), in [`BufferKind::ALL`] order.
pub(crate) const KIND_COLOURS: [&str; 4] = ["#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"];
const STALL_COLOUR: &str = "#d62728";
pub(crate) const EVICT_COLOUR: &str = "#c00000";

/// XML-escapes text for element content and attribute values. Characters XML 1.0 cannot
/// carry at all (most C0 controls, U+FFFE/U+FFFF) become U+FFFD, so that a buffer name
/// from a user file can never make the picture unparsable.
fn escape(text: &str) -> Cow<'_, str> {
    let needs = |c: char| {
        matches!(c, '&' | '<' | '>' | '"' | '\'' | '\u{FFFE}' | '\u{FFFF}')
            || (c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
    };
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if needs(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Human size: `1.50 MiB`, `12.0 KiB`, `128 B`.
fn fmt_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.2} MiB", b / MIB)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Microseconds with a precision that suits the magnitude; `n/a` for a non-finite value.
fn fmt_us(seconds: f64) -> String {
    let us = seconds * 1e6;
    if !us.is_finite() {
        "n/a".into()
    } else if us.abs() >= 100.0 {
        format!("{us:.1} µs")
    } else {
        format!("{us:.3} µs")
    }
}

/// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `range`.
fn nice_step(range: f64, target: f64) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / target.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Tick values `0, step, 2 step, ... <= max` (at most a few hundred, whatever the input).
fn ticks(max: f64, step: f64) -> Vec<f64> {
    if !(max.is_finite() && step.is_finite() && step > 0.0) {
        return vec![0.0];
    }
    let n = ((max / step).floor() as usize).min(500);
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick label with as many decimals as the step needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// Mixes a `#rrggbb` colour with white; `amount` 0 keeps it, 1 gives white.
pub(crate) fn tint(hex: &str, amount: f64) -> String {
    let channel = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    let mix = |c: u8| (c as f64 + (255.0 - c as f64) * amount).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(channel(1)),
        mix(channel(3)),
        mix(channel(5))
    )
}

/// An SVG document under construction. Writing to a `String` cannot fail, so the
/// `fmt::Result`s are dropped here once.
struct Svg {
    out: String,
}

impl Svg {
    fn new(height: f64, style: &str) -> Svg {
        let mut out = String::with_capacity(1 << 16);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
             viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"Helvetica, Arial, sans-serif\">\n\
             <style>{style}</style>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
        );
        Svg { out }
    }
    fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }
    fn fmt(&mut self, args: std::fmt::Arguments<'_>) {
        let _ = self.out.write_fmt(args);
    }
    fn text(&mut self, x: f64, y: f64, class: &str, content: &str) {
        self.fmt(format_args!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" class=\"{class}\">{}</text>\n",
            escape(content)
        ));
    }
    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

const COMMON_STYLE: &str = "\
text{font-size:12px;fill:#333}\
.title{font-size:18px;font-weight:bold;fill:#111}\
.sub{font-size:13px}\
.warn{font-size:13px;fill:#c00000;font-weight:bold}\
.tick{font-size:11px;fill:#555}\
.tickx{font-size:11px;fill:#555;text-anchor:middle}\
.ticky{font-size:11px;fill:#555;text-anchor:end}\
.axis{font-size:12px;fill:#333;text-anchor:middle}\
.panel{font-size:13px;font-weight:bold;fill:#222}\
.frame{fill:#fbfbfb;stroke:#999;stroke-width:1}\
.grid{stroke:#e3e3e3;stroke-width:1}";

/// Draws the frame, grid and tick labels of a plot area.
#[allow(clippy::too_many_arguments)]
fn axes(
    svg: &mut Svg,
    top: f64,
    height: f64,
    x_max: f64,
    x_target: f64,
    x_integer: bool,
    y_max: f64,
    y_unit: f64,
    y_ticks: bool,
) {
    svg.fmt(format_args!(
        "<rect class=\"frame\" x=\"{LEFT}\" y=\"{top:.1}\" width=\"{PLOT_W}\" height=\"{height:.1}\"/>\n"
    ));
    let mut step = nice_step(x_max, x_target);
    if x_integer {
        step = step.max(1.0).round();
    }
    for v in ticks(x_max, step) {
        let x = LEFT + v / x_max.max(f64::MIN_POSITIVE) * PLOT_W;
        svg.fmt(format_args!(
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\n",
            top + height
        ));
        svg.text(x, top + height + 14.0, "tickx", &tick_label(v, step));
    }
    if y_ticks {
        let range = y_max / y_unit;
        let ystep = nice_step(range, (height / 40.0).max(2.0));
        for v in ticks(range, ystep) {
            let y = top + height - v / range.max(f64::MIN_POSITIVE) * height;
            svg.fmt(format_args!(
                "<line class=\"grid\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\n",
                LEFT + PLOT_W
            ));
            svg.text(LEFT - 6.0, y + 4.0, "ticky", &tick_label(v, ystep));
        }
    }
}

/// A unit for an offset axis whose top is `max` bytes, and its name.
fn offset_unit(max: f64) -> (f64, &'static str) {
    if max >= MIB {
        (MIB, "MiB")
    } else if max >= 1024.0 {
        (1024.0, "KiB")
    } else {
        (1.0, "B")
    }
}

/// Memory map: x = time (op index), y = offset, one panel per fast level (fastest on top),
/// one `<rect class="alloc ...">` per fast allocation coloured by buffer kind. Prefetched
/// allocations are lighter, with the copy window (issue to first served use) hatched and a
/// dark tick at the copy start; evictions are a red line where the copy back is issued. A
/// step line shows the bytes held at each time, so the gap to the top of the rectangles is
/// fragmentation. Each allocation has a tooltip (buffer, kind, size, interval, mode).
pub fn memory_map_svg(
    program: &Program,
    hw: &Hardware,
    mapping: &Mapping,
    legend: &MapLegend,
) -> String {
    let t_count = program.len().max(1);
    let fast: Vec<usize> = (1..hw.levels.len()).rev().collect();
    let panel_h = if fast.len() <= 1 { 440.0 } else { 300.0 };
    let panel_title = 26.0;
    let panel_bottom = 44.0;
    let panel_step = panel_title + panel_h + panel_bottom;
    let height = HEAD + panel_step * fast.len().max(1) as f64 + 10.0;

    let mut style = String::from(COMMON_STYLE);
    style.push_str(".alloc{stroke:#fff;stroke-width:0.3}.alloc:hover{stroke:#000;stroke-width:1}");
    for (k, colour) in BufferKind::ALL.iter().zip(KIND_COLOURS) {
        let _ = write!(
            style,
            ".{k}{{fill:{colour}}}.prefetch.{k}{{fill:{}}}",
            tint(colour, 0.55)
        );
    }
    let _ = write!(
        style,
        ".cw{{fill:url(#hatch);pointer-events:none}}\
         .cs{{stroke:#222;stroke-width:1.2;pointer-events:none}}\
         .ev{{stroke:{EVICT_COLOUR};stroke-width:1.5;pointer-events:none}}\
         .used{{fill:none;stroke:#111;stroke-width:1;stroke-dasharray:3 2;pointer-events:none}}\
         .cap{{stroke:{EVICT_COLOUR};stroke-width:1;stroke-dasharray:6 3}}"
    );
    let mut svg = Svg::new(height, &style);
    svg.raw(
        "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\" \
         patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" \
         stroke=\"#000\" stroke-opacity=\"0.45\" stroke-width=\"1.6\"/></pattern></defs>\n",
    );

    // Gather what can be drawn; count what cannot instead of failing.
    let n_buf = program.buffers().len().min(mapping.buffers.len());
    let mut skipped = mapping.buffers.len().saturating_sub(n_buf);
    let mut per_level: Vec<Vec<(usize, accel_sim::Allocation)>> = vec![Vec::new(); hw.levels.len()];
    let (mut n_alloc, mut n_prefetch, mut n_evict, mut n_placed) = (0, 0, 0, 0);
    for (b, p) in mapping.buffers.iter().enumerate().take(n_buf) {
        if !p.allocations.is_empty() {
            n_placed += 1;
        }
        for a in &p.allocations {
            if a.level == 0 || a.level >= hw.levels.len() {
                skipped += 1;
                continue;
            }
            n_alloc += 1;
            n_prefetch += usize::from(a.arrival == Arrival::Prefetch);
            n_evict += usize::from(a.eviction.is_some());
            per_level[a.level].push((b, *a));
        }
    }

    svg.text(
        LEFT,
        26.0,
        "title",
        &format!("Memory map: {} on {}", legend.workload, legend.hardware),
    );
    let latency = match legend.latency_s {
        Some(s) => format!("simulated latency {}", fmt_us(s)),
        None => "latency not measured".into(),
    };
    svg.text(
        LEFT,
        48.0,
        "sub",
        &format!(
            "solver: {} · {latency} · {n_placed} of {} buffers in fast memory: {n_alloc} allocations ({n_prefetch} prefetched, {n_evict} evicted) · {} ops",
            legend.solver,
            program.buffers().len(),
            program.len()
        ),
    );
    // Swatches.
    let mut x = LEFT;
    let sy = 64.0;
    for (k, colour) in BufferKind::ALL.iter().zip(KIND_COLOURS) {
        svg.fmt(format_args!(
            "<rect x=\"{x:.1}\" y=\"{sy}\" width=\"14\" height=\"12\" fill=\"{colour}\"/>\n"
        ));
        svg.text(x + 19.0, sy + 10.5, "tick", k.as_str());
        x += 100.0;
    }
    svg.fmt(format_args!(
        "<rect x=\"{x:.1}\" y=\"{sy}\" width=\"40\" height=\"12\" fill=\"{}\"/>\
         <rect class=\"cw\" x=\"{x:.1}\" y=\"{sy}\" width=\"16\" height=\"12\"/>\
         <line class=\"cs\" x1=\"{x:.1}\" y1=\"{sy}\" x2=\"{x:.1}\" y2=\"{}\"/>\n",
        tint(KIND_COLOURS[0], 0.55),
        sy + 12.0
    ));
    svg.text(
        x + 46.0,
        sy + 10.5,
        "tick",
        "prefetched (lighter; hatched: copy in flight until the first use; tick: copy issued)",
    );
    x += 520.0;
    svg.fmt(format_args!(
        "<line class=\"ev\" x1=\"{x:.1}\" y1=\"{sy}\" x2=\"{x:.1}\" y2=\"{}\"/>\n",
        sy + 12.0
    ));
    svg.text(x + 6.0, sy + 10.5, "tick", "eviction issued");
    x += 120.0;
    svg.fmt(format_args!(
        "<line class=\"used\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{:.1}\" y2=\"{}\"/>\n",
        sy + 6.0,
        x + 24.0,
        sy + 6.0
    ));
    svg.text(x + 30.0, sy + 10.5, "tick", "bytes held");
    if skipped > 0 {
        svg.text(
            LEFT,
            92.0,
            "warn",
            &format!("warning: {skipped} allocations or placements not drawn (level not a fast level of this hardware, or buffer not in this program)"),
        );
    }

    let xs = |t: f64| LEFT + t / t_count as f64 * PLOT_W;
    for (i, &level) in fast.iter().enumerate() {
        let lvl = &hw.levels[level];
        let allocs = &per_level[level];
        let size_of = |b: usize| program.buffer(b).size;
        let peak = allocs
            .iter()
            .map(|(b, a)| a.offset.saturating_add(size_of(*b)))
            .max()
            .unwrap_or(0);
        // An invalid mapping may overflow the level: stretch the axis rather than clip.
        let y_max = if lvl.capacity == u64::MAX {
            peak.max(1)
        } else {
            lvl.capacity.max(peak).max(1)
        } as f64;
        let top = HEAD + i as f64 * panel_step + panel_title;
        svg.text(
            LEFT,
            top - 8.0,
            "panel",
            &format!(
                "level {level}: {} · capacity {} · read {:.0} GB/s · peak address {} · {} allocations",
                lvl.name,
                if lvl.capacity == u64::MAX { "unbounded".into() } else { fmt_bytes(lvl.capacity) },
                lvl.read_bw / 1e9,
                fmt_bytes(peak),
                allocs.len()
            ),
        );
        let (unit, unit_name) = offset_unit(y_max);
        axes(
            &mut svg,
            top,
            panel_h,
            t_count as f64,
            16.0,
            true,
            y_max,
            unit,
            true,
        );
        svg.fmt(format_args!(
            "<text class=\"axis\" transform=\"translate({:.1},{:.1}) rotate(-90)\">offset ({unit_name})</text>\n",
            LEFT - 52.0,
            top + panel_h / 2.0
        ));
        svg.text(
            LEFT + PLOT_W / 2.0,
            top + panel_h + 32.0,
            "axis",
            "op index (schedule time)",
        );
        if (lvl.capacity as f64) < y_max {
            let y = top + panel_h - lvl.capacity as f64 / y_max * panel_h;
            svg.fmt(format_args!(
                "<line class=\"cap\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\n",
                LEFT + PLOT_W
            ));
        }
        let ys = |bytes: f64| top + panel_h - bytes / y_max * panel_h;
        let mut held = vec![0i128; t_count + 1];
        for &(b, a) in allocs {
            let buf = program.buffer(b);
            let x0 = xs(a.start as f64);
            let x1 = xs((a.end as f64 + 1.0).min(t_count as f64));
            let w = (x1 - x0).max(0.8);
            let y1 = ys(a.offset as f64);
            let y0 = ys(a.offset as f64 + buf.size as f64);
            // Tiny buffers would vanish at MiB scale: keep them a hair visible.
            let h = (y1 - y0).max(0.8);
            let y0 = y1 - h;
            let s = a.start.min(t_count);
            let e = (a.end + 1).min(t_count);
            if s < e {
                held[s] += buf.size as i128;
                held[e] -= buf.size as i128;
            }
            let first_use = program
                .uses(b)
                .iter()
                .copied()
                .find(|&u| u >= a.start && u <= a.end);
            let mode = match (a.arrival, a.eviction) {
                (Arrival::Prefetch, _) => format!(
                    "prefetch: copy issued as op {} begins{}",
                    a.start,
                    first_use.map_or(String::new(), |u| format!(", first use op {u}"))
                ),
                (Arrival::Defined, Some(ev)) => {
                    format!("defined by op {}; eviction issued after op {ev}", a.start)
                }
                (Arrival::Defined, None) => format!("defined by op {}; no eviction", a.start),
            };
            let arrival = match a.arrival {
                Arrival::Prefetch => "prefetch",
                Arrival::Defined => "defined",
            };
            svg.fmt(format_args!(
                "<rect class=\"alloc {} {arrival}\" x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{w:.1}\" height=\"{h:.1}\"><title>{}\n{}, {} ({} B)\nlevel {level} {} at offset {} ({:.3} MiB)\nops {}..={}\n{}</title></rect>\n",
                buf.kind,
                escape(&buf.name),
                buf.kind,
                fmt_bytes(buf.size),
                buf.size,
                escape(&lvl.name),
                a.offset,
                a.offset as f64 / MIB,
                a.start,
                a.end,
                mode
            ));
            if a.arrival == Arrival::Prefetch {
                if let Some(u) = first_use.filter(|&u| u > a.start) {
                    let cw = (xs(u as f64) - x0).max(0.0);
                    svg.fmt(format_args!(
                        "<rect class=\"cw\" x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{cw:.1}\" height=\"{h:.1}\"/>\n"
                    ));
                }
                let (ty0, ty1) = (y0.min(y1 - 4.0), y1.max(y0 + 4.0));
                svg.fmt(format_args!(
                    "<line class=\"cs\" x1=\"{x0:.1}\" y1=\"{ty0:.1}\" x2=\"{x0:.1}\" y2=\"{ty1:.1}\"/>\n"
                ));
            }
            if let Some(ev) = a.eviction {
                let xe = xs((ev as f64 + 1.0).min(t_count as f64));
                let (ty0, ty1) = (y0.min(y1 - 4.0), y1.max(y0 + 4.0));
                svg.fmt(format_args!(
                    "<line class=\"ev\" x1=\"{xe:.1}\" y1=\"{ty0:.1}\" x2=\"{xe:.1}\" y2=\"{ty1:.1}\"/>\n"
                ));
            }
        }
        // Bytes held over time as a step line.
        let mut pts = String::new();
        let mut acc = 0i128;
        for (t, d) in held.iter().take(t_count).enumerate() {
            acc += d;
            let y = ys(acc.max(0) as f64);
            let _ = write!(
                pts,
                "{:.1},{y:.1} {:.1},{y:.1} ",
                xs(t as f64),
                xs(t as f64 + 1.0)
            );
        }
        svg.fmt(format_args!(
            "<polyline class=\"used\" points=\"{}\"/>\n",
            pts.trim_end()
        ));
    }
    if fast.is_empty() {
        svg.text(
            LEFT,
            HEAD + 30.0,
            "warn",
            "this hardware has no fast level: nothing to draw",
        );
    }
    svg.finish()
}

/// Latency timeline of a detailed simulation (`Simulator::run(mapping, true)`): x = time in
/// microseconds. Each op is one `<g class="op">` drawn in three lanes: the stall before it
/// (red), its compute time and its memory time (the binding one saturated); a thin band
/// of alternating grey marks op boundaries. A second panel plots op index against time, so
/// stalls and slow stretches show as flat parts. A summary line gives the total latency,
/// total stall and the compute-bound / memory-bound / stalled op counts.
pub fn timeline_svg(program: &Program, report: &SimReport, legend: &MapLegend) -> String {
    let lanes = [("stall", 22.0), ("compute", 56.0), ("memory", 56.0)];
    let band = 6.0;
    let gantt_h: f64 = lanes.iter().map(|l| l.1).sum::<f64>() + band;
    let gantt_top = HEAD + 26.0;
    let prog_top = gantt_top + gantt_h + 74.0;
    let prog_h = 260.0;
    let height = prog_top + prog_h + 50.0;

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
    let mut svg = Svg::new(height, &style);

    let ops = &report.ops;
    let drawn = ops.len().min(program.len());
    let end_of_ops = ops.last().map_or(0.0, |o| o.start_s + o.run_s).max(0.0);
    let total = if report.latency_s.is_finite() {
        report.latency_s.max(end_of_ops)
    } else {
        end_of_ops
    };
    let total_us = if total > 0.0 { total * 1e6 } else { 1.0 };
    let xs = |s: f64| LEFT + (s * 1e6 / total_us).clamp(0.0, 1.0) * PLOT_W;

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

    // Gantt lanes.
    svg.text(
        LEFT,
        gantt_top - 8.0,
        "panel",
        "ops over time: stall, compute and memory time of each op (hover for details)",
    );
    axes(
        &mut svg, gantt_top, gantt_h, total_us, 16.0, false, 1.0, 1.0, false,
    );
    let mut lane_y = Vec::new();
    let mut y = gantt_top;
    for (name, h) in lanes {
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
    // Stalls are what a mapping should avoid: never let one shrink below a pixel.
    let bar = |svg: &mut Svg, class: &str, s0: f64, s1: f64, (y, h): (f64, f64)| {
        let x0 = xs(s0);
        let mut w = xs(s1) - x0;
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
    };
    for (t, o) in ops.iter().take(drawn).enumerate() {
        let op = program.op(t);
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
            bar(&mut svg, "st", o.start_s - o.stall_s, o.start_s, lane_y[0]);
        }
        let c_bind = if o.compute_s >= o.memory_s { " b" } else { "" };
        let m_bind = if o.compute_s < o.memory_s { " b" } else { "" };
        bar(
            &mut svg,
            &format!("c{c_bind}"),
            o.start_s,
            o.start_s + o.compute_s,
            lane_y[1],
        );
        bar(
            &mut svg,
            &format!("m{m_bind}"),
            o.start_s,
            o.start_s + o.memory_s,
            lane_y[2],
        );
        // The op's whole extent (run time including overhead) in the boundary band; the
        // band keeps a hover target for ops with neither compute nor memory time.
        let x0 = xs(o.start_s);
        let w = (xs(o.start_s + o.run_s) - x0).max(0.5);
        svg.fmt(format_args!(
            "<rect class=\"o{}\" x=\"{x0:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{band}\"/></g>\n",
            t % 2,
            band_y
        ));
    }
    let tail = total - end_of_ops;
    if !ops.is_empty() && tail > 0.0 {
        svg.fmt(format_args!(
            "<g class=\"tail\"><title>end of program: waiting {} for evictions to land in level 0</title>",
            fmt_us(tail)
        ));
        bar(&mut svg, "st", end_of_ops, total, lane_y[0]);
        svg.raw("</g>\n");
    }

    // Progress: op index against time.
    let t_count = program.len().max(1) as f64;
    svg.text(
        LEFT,
        prog_top - 8.0,
        "panel",
        "progress: ops completed over time (flat = time spent in few ops; red = stall)",
    );
    axes(
        &mut svg, prog_top, prog_h, total_us, 16.0, false, t_count, 1.0, true,
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
    let mut pts = String::new();
    let mut stalls = String::new();
    for (t, o) in ops.iter().take(drawn).enumerate() {
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
        if tail > 0.0 {
            let y = yp(drawn as f64);
            let _ = write!(
                stalls,
                "<line class=\"pst\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                xs(end_of_ops),
                xs(total)
            );
        }
        svg.fmt(format_args!(
            "<polyline class=\"prog\" points=\"{}\"/>\n{stalls}\n",
            pts.trim_end()
        ));
    }
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_quotes_and_controls() {
        assert!(matches!(escape("plain_name.0"), Cow::Borrowed(_)));
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\tz\u{FFFF}"), "x\u{FFFD}y\tz\u{FFFD}");
    }

    #[test]
    fn nice_steps_are_1_2_5_times_a_power_of_ten() {
        assert_eq!(nice_step(1000.0, 10.0), 100.0);
        assert_eq!(nice_step(16.0, 8.0), 2.0);
        assert_eq!(nice_step(174.0, 16.0), 20.0);
        assert!((nice_step(0.9, 10.0) - 0.1).abs() < 1e-12);
        assert_eq!(nice_step(0.0, 10.0), 1.0);
        assert_eq!(nice_step(f64::NAN, 10.0), 1.0);
        assert_eq!(ticks(16.0, 2.0).len(), 9);
        assert_eq!(ticks(f64::INFINITY, 2.0), vec![0.0]);
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(40.0, 20.0), "40");
    }

    #[test]
    fn sizes_times_and_tints_format() {
        assert_eq!(fmt_bytes(128), "128 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(3 << 19), "1.50 MiB");
        assert_eq!(fmt_us(1.5e-3), "1500.0 µs");
        assert_eq!(fmt_us(2.5e-6), "2.500 µs");
        assert_eq!(fmt_us(f64::NAN), "n/a");
        assert_eq!(tint("#000000", 0.5), "#808080");
        assert_eq!(tint("#4e79a7", 0.0), "#4e79a7");
        assert_eq!(tint("#4e79a7", 1.0), "#ffffff");
    }
}
