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

use std::borrow::Cow;
use std::fmt::Write;

mod map;
mod timeline;

pub use map::memory_map_svg;
pub use timeline::timeline_svg;

/// The caption of a picture: what was mapped, on what, by whom, and how fast it ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapLegend {
    /// The workload's name.
    pub workload: String,
    /// The hardware's name.
    pub hardware: String,
    /// Who made the mapping (a solver or player).
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
