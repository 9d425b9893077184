//! The XLA-style prefetch interval picker (docs/xla-msa.md, "The prefetch interval picker"),
//! in our timing convention: a prefetch that starts at `s` for a use at `u` runs beside ops
//! `s..u` (half-open), so XLA's `interval(t, use)` becomes [`CostModel::span_s`]`(s, u)`.

use accel_sim::{BufferId, CostModel, Hardware, OpId};

/// XLA's overlap ratios (the values its own tests use).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PickerConfig {
    /// The least overlap a prefetch must get, as a multiple of its copy time: a start that
    /// hides less of the copy is not allowed (XLA gives up on the prefetch when none hides
    /// this much).
    pub min_overlap: f64,
    /// The overlap the picker aims for, as a multiple of the copy time: its preferred start
    /// is the one closest to it.
    pub preferred_overlap: f64,
    /// The most overlap allowed, as a multiple of the time to copy the whole level: it
    /// bounds how early a prefetch may start, and how long a buffer may stay in the level
    /// without a copy (XLA's no-copy rule).
    pub max_overlap: f64,
}

impl Default for PickerConfig {
    fn default() -> Self {
        PickerConfig {
            min_overlap: 0.8,
            preferred_overlap: 1.5,
            max_overlap: 10.0,
        }
    }
}

/// Start times the picker allows for one prefetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchWindow {
    /// The earliest start: the first op from which level 0 holds the data and the overlap
    /// stays within `max_overlap`.
    pub earliest: OpId,
    /// The latest start that still overlaps `min_overlap` x the copy time; `earliest` when
    /// no start does (the copy cannot be hidden: start it as early as allowed).
    pub latest: OpId,
    /// The start closest to `preferred_overlap` x the copy time, within the window.
    pub preferred: OpId,
}

impl PickerConfig {
    /// Longest copy the picker lets overlap: `copy(capacity) * max_overlap`.
    pub fn max_copy_s(&self, hw: &Hardware, level: usize) -> f64 {
        hw.copy_seconds(level, hw.levels[level].capacity) * self.max_overlap
    }

    /// XLA's no-copy rule: may a buffer stay in `level` over `start..=end`?
    pub fn allows_no_copy(
        &self,
        cost: &CostModel,
        hw: &Hardware,
        level: usize,
        start: OpId,
        end: OpId,
    ) -> bool {
        // XLA's interval(start, end) counts the ops strictly between the two.
        self.max_copy_s(hw, level) > cost.span_s(start + 1, end)
    }

    /// The picker's window for a copy of `copy` seconds that must be done by op `u`, when
    /// level 0 holds the data from op `lo` on. `span(s)` is the elapsed time of ops
    /// `s..u`; `red` is what the use itself saves by reading the fast level (XLA's
    /// `inst_elapsed_reduction`). `None` when no start overlaps `min_overlap` x the copy:
    /// XLA then gives up on the prefetch.
    ///
    /// `span` must not grow with `s` (a difference of prefix sums of times >= 0 does not,
    /// even in floating point): each bound and the preferred start are then binary
    /// searches, `O(log (u - lo))`, with the results of a scan over every start.
    pub(crate) fn window_with(
        &self,
        lo: OpId,
        u: OpId,
        copy: f64,
        red: f64,
        max_copy: f64,
        span: impl Fn(OpId) -> f64,
    ) -> Option<PrefetchWindow> {
        if lo > u {
            return None;
        }
        let min_iv = self.min_overlap * copy;
        // The overlap falls as s grows: the starts that hide enough are a prefix.
        let hides = |s: OpId| min_iv <= span(s) + red;
        let latest = first_true(lo, u + 1, |s| !hides(s)).checked_sub(1)?;
        if latest < lo {
            return None;
        }
        let earliest = first_true(lo, latest, |s| span(s) <= max_copy);
        let want = self.preferred_overlap * copy;
        // `want - span(s)` grows with s, so |want - span(s)| falls then rises; the scan
        // kept the first start with the smallest value. The candidates: the first start
        // with a non-negative difference, and the first start with the value of the last
        // negative one.
        let diff = |s: OpId| want - span(s);
        let p = first_true(earliest, latest + 1, |s| diff(s) >= 0.0);
        let preferred = if p == earliest {
            p
        } else {
            let last_neg = diff(p - 1);
            let q = first_true(earliest, p - 1, |s| diff(s) >= last_neg);
            if p <= latest && diff(p).abs() < last_neg.abs() {
                p
            } else {
                q
            }
        };
        Some(PrefetchWindow {
            earliest,
            latest,
            preferred,
        })
    }

    /// The game's window for prefetching buffer `b` into `level` for its use at `u`, when
    /// level 0 holds the data from op `available` on, with every op timed as if all its
    /// data were in level 0. Where no start hides `min_overlap` of the copy, the game
    /// (unlike XLA) still offers the earliest start the `max_copy` rule allows, and lets
    /// the simulator judge.
    pub fn window(
        &self,
        cost: &CostModel,
        hw: &Hardware,
        b: BufferId,
        level: usize,
        available: OpId,
        u: OpId,
    ) -> PrefetchWindow {
        debug_assert!(available <= u);
        let copy = cost.copy_s(b, level);
        let max_copy = self.max_copy_s(hw, level);
        let red = cost.use_saving_s(b, level, u);
        let span = |s: OpId| cost.span_s(s, u);
        self.window_with(available, u, copy, red, max_copy, span)
            .unwrap_or_else(|| {
                let s = first_true(available, u, |s| span(s) <= max_copy);
                PrefetchWindow {
                    earliest: s,
                    latest: s,
                    preferred: s,
                }
            })
    }
}

/// The first `s` in `lo..hi` where `pred` holds, or `hi` if none does; `pred` must be
/// false up to some point and true from there on. `O(log (hi - lo))` calls.
pub(crate) fn first_true(lo: usize, hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::{Buffer, BufferKind, Op, Program};

    /// A weight of 1 MB read by the last of 10 compute-bound ops of 1 ms each.
    #[test]
    fn window_on_a_hand_worked_program() {
        let mut buffers = vec![Buffer {
            name: "w".into(),
            size: 1_000_000,
            kind: BufferKind::Weight,
        }];
        let mut ops = Vec::new();
        for t in 0..10 {
            buffers.push(Buffer {
                name: format!("a{t}"),
                size: 1000,
                kind: BufferKind::Activation,
            });
            ops.push(Op {
                name: format!("op{t}"),
                kind: "t".into(),
                flops: 1e9,
                reads: if t == 9 {
                    vec![0, t]
                } else if t > 0 {
                    vec![t]
                } else {
                    vec![]
                },
                writes: vec![t + 1],
            });
        }
        let p = Program::new("w", "", buffers, ops).unwrap();
        let mut hw = Hardware::tpu_v4i_like();
        hw.peak_flops = 1e12; // 1 ms per op
        hw.levels[0].read_bw = 0.5e9; // copy of w: 2 ms
        hw.levels[0].write_bw = 0.5e9;
        hw.levels[1].read_bw = 1e12;
        hw.levels[1].write_bw = 1e12;
        let cost = CostModel::new(&p, &hw);
        let w = PickerConfig::default().window(&cost, &hw, 0, 1, 0, 9);
        // copy = 2 ms. red: op 9 takes max(1 ms, 2.004 ms) in level 0 and max(1 ms, ~0) with
        // w fast: red = 1.004 ms. latest: largest s with 1.6 ms <= span(s, 9) + red -> s = 8
        // (span 1 ms). preferred: span closest to 3 ms -> s = 6. earliest: max_copy (128 MiB
        // copy x 10) allows any start.
        assert_eq!(w.latest, 8);
        assert_eq!(w.preferred, 6);
        assert_eq!(w.earliest, 0);
        // A 20 us max copy (1000 B capacity) allows only s = 9 (span 0), which cannot hide
        // the copy; the min-overlap bound wins, as in XLA: the window is just s = 8.
        let hw_small = hw.clone().with_capacity(1, 1000).unwrap();
        let w = PickerConfig::default().window(&cost, &hw_small, 0, 1, 0, 9);
        assert_eq!((w.earliest, w.latest, w.preferred), (8, 8, 8));
        // No start hides the copy when the use is at op 0: XLA gives up, the game offers
        // the only start there is.
        let span = |s: usize| cost.span_s(s, 0);
        let cfg = PickerConfig::default();
        assert_eq!(cfg.window_with(0, 0, 1e-3, 0.0, 1.0, span), None);
        let w = cfg.window(&cost, &hw, 0, 1, 0, 0);
        assert_eq!((w.earliest, w.latest, w.preferred), (0, 0, 0));
    }
}
