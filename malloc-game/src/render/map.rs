//! The memory map: where each buffer lives in each fast level, over time.

use super::{axes, escape, fmt_bytes, fmt_us, offset_unit, tint, MapLegend, Svg};
use super::{COMMON_STYLE, EVICT_COLOUR, HEAD, KIND_COLOURS, LEFT, MIB, PLOT_W};
use accel_sim::{Allocation, Arrival, BufferKind, Hardware, Mapping, Program};
use std::fmt::Write;

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
    let fast: Vec<usize> = (1..hw.levels.len()).rev().collect();
    let panel_h = if fast.len() <= 1 { 440.0 } else { 300.0 };
    let panel_step = PANEL_TITLE + panel_h + PANEL_BOTTOM;
    let height = HEAD + panel_step * fast.len().max(1) as f64 + 10.0;
    let mut svg = Svg::new(height, &style());
    svg.raw(HATCH);
    let drawn = Drawn::of(program, hw, mapping);
    caption(&mut svg, program, legend, &drawn);
    for (i, &level) in fast.iter().enumerate() {
        let panel = Panel {
            program,
            hw,
            level,
            top: HEAD + i as f64 * panel_step + PANEL_TITLE,
            height: panel_h,
            t_count: program.len().max(1),
        };
        panel.draw(&mut svg, &drawn.per_level[level]);
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

/// Above each panel: its title; below: its x-axis label.
const PANEL_TITLE: f64 = 26.0;
const PANEL_BOTTOM: f64 = 44.0;

/// The copy window's hatching.
const HATCH: &str =
    "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\" \
         patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" \
         stroke=\"#000\" stroke-opacity=\"0.45\" stroke-width=\"1.6\"/></pattern></defs>\n";

/// The map's style block: the common one, a fill per buffer kind (lighter prefetched) and
/// the marks' strokes.
fn style() -> String {
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
    style
}

/// What can be drawn, by level, and the counts the caption gives; what cannot is counted
/// instead of failing.
struct Drawn {
    per_level: Vec<Vec<(usize, Allocation)>>,
    skipped: usize,
    allocations: usize,
    prefetched: usize,
    evicted: usize,
    placed: usize,
}

impl Drawn {
    fn of(program: &Program, hw: &Hardware, mapping: &Mapping) -> Drawn {
        let n_buf = program.buffers().len().min(mapping.buffers.len());
        let mut d = Drawn {
            per_level: vec![Vec::new(); hw.levels.len()],
            skipped: mapping.buffers.len().saturating_sub(n_buf),
            allocations: 0,
            prefetched: 0,
            evicted: 0,
            placed: 0,
        };
        for (b, p) in mapping.buffers.iter().enumerate().take(n_buf) {
            if !p.allocations.is_empty() {
                d.placed += 1;
            }
            for a in &p.allocations {
                if a.level == 0 || a.level >= hw.levels.len() {
                    d.skipped += 1;
                    continue;
                }
                d.allocations += 1;
                d.prefetched += usize::from(a.arrival == Arrival::Prefetch);
                d.evicted += usize::from(a.eviction.is_some());
                d.per_level[a.level].push((b, *a));
            }
        }
        d
    }
}

/// The title, the summary line, the swatches and the warning of what was not drawn.
fn caption(svg: &mut Svg, program: &Program, legend: &MapLegend, d: &Drawn) {
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
            "solver: {} · {latency} · {} of {} buffers in fast memory: {} allocations ({} prefetched, {} evicted) · {} ops",
            legend.solver,
            d.placed,
            program.buffers().len(),
            d.allocations,
            d.prefetched,
            d.evicted,
            program.len()
        ),
    );
    swatches(svg);
    if d.skipped > 0 {
        svg.text(
            LEFT,
            92.0,
            "warn",
            &format!("warning: {} allocations or placements not drawn (level not a fast level of this hardware, or buffer not in this program)", d.skipped),
        );
    }
}

/// The key: a swatch per buffer kind, then the prefetch, eviction and bytes-held marks.
fn swatches(svg: &mut Svg) {
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
}

/// One fast level's panel: its plot's top edge and height in the picture.
struct Panel<'a> {
    program: &'a Program,
    hw: &'a Hardware,
    level: usize,
    top: f64,
    height: f64,
    t_count: usize,
}

impl Panel<'_> {
    /// The x of time `t` (ops).
    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.t_count as f64 * PLOT_W
    }

    /// The panel's frame and axes, its allocations and the bytes held over time.
    fn draw(&self, svg: &mut Svg, allocs: &[(usize, Allocation)]) {
        let y_max = self.frame(svg, allocs);
        let mut held = vec![0i128; self.t_count + 1];
        for &(b, a) in allocs {
            let size = self.program.buffer(b).size;
            let (s, e) = (a.start.min(self.t_count), (a.end + 1).min(self.t_count));
            if s < e {
                held[s] += size as i128;
                held[e] -= size as i128;
            }
            self.allocation(svg, b, &a, y_max);
        }
        // Bytes held over time as a step line.
        let mut pts = String::new();
        let mut acc = 0i128;
        for (t, d) in held.iter().take(self.t_count).enumerate() {
            acc += d;
            let y = self.y(acc.max(0) as f64, y_max);
            let _ = write!(
                pts,
                "{:.1},{y:.1} {:.1},{y:.1} ",
                self.x(t as f64),
                self.x(t as f64 + 1.0)
            );
        }
        svg.fmt(format_args!(
            "<polyline class=\"used\" points=\"{}\"/>\n",
            pts.trim_end()
        ));
    }

    /// The y of `bytes` on an axis up to `y_max`.
    fn y(&self, bytes: f64, y_max: f64) -> f64 {
        self.top + self.height - bytes / y_max * self.height
    }

    /// The title, frame, axes and capacity line; returns the offset axis's top.
    fn frame(&self, svg: &mut Svg, allocs: &[(usize, Allocation)]) -> f64 {
        let (level, top, panel_h) = (self.level, self.top, self.height);
        let lvl = &self.hw.levels[level];
        let peak = allocs
            .iter()
            .map(|(b, a)| a.offset.saturating_add(self.program.buffer(*b).size))
            .max()
            .unwrap_or(0);
        // An invalid mapping may overflow the level: stretch the axis rather than clip.
        let y_max = if lvl.capacity == u64::MAX {
            peak.max(1)
        } else {
            lvl.capacity.max(peak).max(1)
        } as f64;
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
            svg,
            top,
            panel_h,
            self.t_count as f64,
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
            let y = self.y(lvl.capacity as f64, y_max);
            svg.fmt(format_args!(
                "<line class=\"cap\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\n",
                LEFT + PLOT_W
            ));
        }
        y_max
    }

    /// Buffer `b`'s allocation `a`: its rectangle with a tooltip, and its copy marks.
    fn allocation(&self, svg: &mut Svg, b: usize, a: &Allocation, y_max: f64) {
        let (program, t_count) = (self.program, self.t_count);
        let buf = program.buffer(b);
        let x0 = self.x(a.start as f64);
        let x1 = self.x((a.end as f64 + 1.0).min(t_count as f64));
        let w = (x1 - x0).max(0.8);
        let y1 = self.y(a.offset as f64, y_max);
        let y0 = self.y(a.offset as f64 + buf.size as f64, y_max);
        // Tiny buffers would vanish at MiB scale: keep them a hair visible.
        let h = (y1 - y0).max(0.8);
        let y0 = y1 - h;
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
            "<rect class=\"alloc {} {arrival}\" x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{w:.1}\" height=\"{h:.1}\"><title>{}\n{}, {} ({} B)\nlevel {} {} at offset {} ({:.3} MiB)\nops {}..={}\n{}</title></rect>\n",
            buf.kind,
            escape(&buf.name),
            buf.kind,
            fmt_bytes(buf.size),
            buf.size,
            self.level,
            escape(&self.hw.levels[self.level].name),
            a.offset,
            a.offset as f64 / MIB,
            a.start,
            a.end,
            mode
        ));
        let (ty0, ty1) = (y0.min(y1 - 4.0), y1.max(y0 + 4.0));
        if a.arrival == Arrival::Prefetch {
            if let Some(u) = first_use.filter(|&u| u > a.start) {
                let cw = (self.x(u as f64) - x0).max(0.0);
                svg.fmt(format_args!(
                    "<rect class=\"cw\" x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{cw:.1}\" height=\"{h:.1}\"/>\n"
                ));
            }
            svg.fmt(format_args!(
                "<line class=\"cs\" x1=\"{x0:.1}\" y1=\"{ty0:.1}\" x2=\"{x0:.1}\" y2=\"{ty1:.1}\"/>\n"
            ));
        }
        if let Some(ev) = a.eviction {
            let xe = self.x((ev as f64 + 1.0).min(t_count as f64));
            svg.fmt(format_args!(
                "<line class=\"ev\" x1=\"{xe:.1}\" y1=\"{ty0:.1}\" x2=\"{xe:.1}\" y2=\"{ty1:.1}\"/>\n"
            ));
        }
    }
}
