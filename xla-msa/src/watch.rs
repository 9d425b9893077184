//! What a stretch of the walk looked at: the parts of a heap and of the copy budgets whose
//! contents its answers depend on.
//!
//! A caller that replays a walk against a state that differs from the one it was first
//! played on in a few known places (a local search changing one buffer's chunks) needs to
//! know whether a later buffer's turns would see the difference. Every heap query the walk
//! plans with (a fit, the free gaps, the peak address) depends only on which bytes are held
//! over its interval in time (for a fit at one offset, over its bytes): not on which chunks
//! hold them, so two states that hold the same bytes there answer it the same. A query
//! that hands over the chunks themselves (an observation's grid) depends on the chunks
//! overlapping its interval, whole. Every copy-budget query depends only on the queued
//! copies between the one before its key and the last one it pushed back. So the walk
//! notes those regions while a watch is on ([`watch`]) and hands them over ([`Seen`]):
//! where no held byte differs in the first kind, no chunk differs in the second and no
//! copy in the third, the stretch plays out the same. Off (the default), noting costs one
//! thread-local look per query.

use std::cell::RefCell;

/// A queued copy's place in a budget's queue: (issue op, deadline op, order of arrival).
pub type CopyKey = (usize, usize, u64);

/// The lowest key there is, for ranges open below.
pub const KEY_MIN: CopyKey = (0, 0, 0);
/// The highest key there is, for ranges open above.
pub const KEY_MAX: CopyKey = (usize::MAX, usize::MAX, u64::MAX);

/// A region of a heap: bytes `[lo, hi)` over ops `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The first op.
    pub start: usize,
    /// The last op (inclusive).
    pub end: usize,
    /// The first byte.
    pub lo: u64,
    /// The byte past the last.
    pub hi: u64,
}

impl Region {
    /// Whether the two regions share an op and a byte.
    pub fn meets(&self, o: &Region) -> bool {
        self.start <= o.end && o.start <= self.end && self.lo < o.hi && o.lo < self.hi
    }

    /// The parts of this region outside `o`, at most four: before and after `o` in time
    /// (all bytes), then below and above it in bytes (its ops).
    pub fn less(&self, o: &Region) -> Vec<Region> {
        if !self.meets(o) {
            return vec![*self];
        }
        let mut out = Vec::with_capacity(4);
        if self.start < o.start {
            out.push(Region {
                end: o.start - 1,
                ..*self
            });
        }
        if o.end < self.end {
            out.push(Region {
                start: o.end + 1,
                ..*self
            });
        }
        let (start, end) = (self.start.max(o.start), self.end.min(o.end));
        if self.lo < o.lo {
            out.push(Region {
                start,
                end,
                hi: o.lo,
                ..*self
            });
        }
        if o.hi < self.hi {
            out.push(Region {
                start,
                end,
                lo: o.hi,
                ..*self
            });
        }
        out
    }
}

/// Which of the walk's copy budgets: the prefetches' (which the evictions share where the
/// budgets are not separate) or the evictions'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BudgetKind {
    /// The prefetches' budget.
    Prefetch,
    /// The evictions' budget.
    Eviction,
}

/// What a watched stretch looked at: the heap regions of its queries (each once) and, per
/// copy budget, the ranges of queue keys its answers read (inclusive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    /// The heap regions whose held bytes its queries read, sorted, each once.
    pub heap: Vec<Region>,
    /// The heap regions whose chunks its queries read (each chunk overlapping one, whole),
    /// sorted, each once.
    pub chunks: Vec<Region>,
    /// Per budget, the ranges of queue keys its answers read (first and last, inclusive),
    /// sorted by budget and key, disjoint.
    pub budgets: Vec<(BudgetKind, CopyKey, CopyKey)>,
    /// The ops `heap` and `chunks` span, kept: a local search asks it of every later
    /// buffer on each move.
    span: Option<(usize, usize)>,
    /// How many ranges `budgets` held when last compacted, while the watch is on.
    budgets_compacted: usize,
}

impl Seen {
    /// Sorts the regions (dropping repeats) and merges each budget's overlapping ranges.
    fn compact(&mut self) {
        for regions in [&mut self.heap, &mut self.chunks] {
            regions.sort_unstable_by_key(|r| (r.start, r.end, r.lo, r.hi));
            regions.dedup();
        }
        merge_ranges(&mut self.budgets);
        self.budgets_compacted = 0;
        let all = || self.heap.iter().chain(&self.chunks);
        self.span = all().map(|r| r.start).min().zip(all().map(|r| r.end).max());
    }

    /// The ops the heap regions of both kinds span, first and last (as [`seen`] handed
    /// them over).
    pub fn span(&self) -> Option<(usize, usize)> {
        self.span
    }
}

thread_local! {
    static SEEN: RefCell<Option<Seen>> = const { RefCell::new(None) };
}

/// Starts noting what the walk looks at on this thread (forgetting what a watch still on
/// had noted).
pub fn watch() {
    SEEN.with(|s| *s.borrow_mut() = Some(Seen::default()));
}

/// Stops the watch on this thread and returns what it saw (`None` if none was on).
pub fn seen() -> Option<Seen> {
    let mut seen = SEEN.with(|s| s.borrow_mut().take())?;
    seen.compact();
    Some(seen)
}

/// Notes a look at bytes `[lo, hi)` over ops `start..=end` of a heap.
pub(crate) fn heap(start: usize, end: usize, lo: u64, hi: u64) {
    SEEN.with(|s| {
        if let Some(seen) = s.borrow_mut().as_mut() {
            seen.heap.push(Region { start, end, lo, hi });
        }
    });
}

/// Notes a look at the chunks overlapping ops `start..=end` of a heap (each whole).
pub(crate) fn chunks(start: usize, end: usize, capacity: u64) {
    SEEN.with(|s| {
        if let Some(seen) = s.borrow_mut().as_mut() {
            seen.chunks.push(Region {
                start,
                end,
                lo: 0,
                hi: capacity,
            });
        }
    });
}

/// Notes a look at the keys `lo..=hi` of a copy budget's queue.
pub(crate) fn budget(kind: BudgetKind, lo: CopyKey, hi: CopyKey) {
    SEEN.with(|s| {
        if let Some(seen) = s.borrow_mut().as_mut() {
            let ranges = &mut seen.budgets;
            // A buffer's turns look at the budgets thousands of times, mostly where the
            // look before did: those are merged as they come, and the list is compacted
            // whenever it doubles.
            match ranges.last_mut() {
                Some(b) if b.0 == kind && lo <= b.2 && b.1 <= hi => {
                    b.1 = b.1.min(lo);
                    b.2 = b.2.max(hi);
                }
                _ => ranges.push((kind, lo, hi)),
            }
            if ranges.len() >= seen.budgets_compacted.max(MAX_RANGES) * 2 {
                merge_ranges(ranges);
                seen.budgets_compacted = ranges.len();
            }
        }
    });
}

/// Past this many ranges of one budget, a stretch's neighbouring ranges are merged in
/// pairs: a bound on what a line keeps per buffer, at the price of a coarser look.
const MAX_RANGES: usize = 64;

/// Sorts the ranges by budget and key and merges those that overlap; then, per budget,
/// merges neighbours in pairs while there are more than [`MAX_RANGES`].
fn merge_ranges(ranges: &mut Vec<(BudgetKind, CopyKey, CopyKey)>) {
    let rank = |k: BudgetKind| matches!(k, BudgetKind::Eviction);
    ranges.sort_unstable_by_key(|&(k, lo, hi)| (rank(k), lo, hi));
    let mut out: Vec<(BudgetKind, CopyKey, CopyKey)> = Vec::with_capacity(ranges.len());
    for &(k, lo, hi) in ranges.iter() {
        match out.last_mut() {
            Some(b) if b.0 == k && lo <= b.2 => b.2 = b.2.max(hi),
            _ => out.push((k, lo, hi)),
        }
    }
    for kind in [BudgetKind::Prefetch, BudgetKind::Eviction] {
        while out.iter().filter(|b| b.0 == kind).count() > MAX_RANGES {
            // Every other pair of neighbours of this budget merged: halves the count.
            let mut merged: Vec<(BudgetKind, CopyKey, CopyKey)> = Vec::with_capacity(out.len());
            let mut odd = false;
            for &b in &out {
                match merged.last_mut() {
                    Some(m) if b.0 == kind && m.0 == kind && odd => {
                        m.2 = m.2.max(b.2);
                        odd = false;
                    }
                    _ => {
                        merged.push(b);
                        odd = b.0 == kind;
                    }
                }
            }
            out = merged;
        }
    }
    *ranges = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many looks a stretch makes at a budget, it keeps at most [`MAX_RANGES`]
    /// ranges of it, and every key it looked at is in one of them.
    #[test]
    fn many_looks_keep_few_ranges_that_cover_them() {
        watch();
        let looks: Vec<(CopyKey, CopyKey)> = (0..1000u64)
            .map(|i| {
                let op = ((i * 7919) % 5000) as usize;
                ((op, op + 3, i), (op + 1, op + 4, i))
            })
            .collect();
        for &(lo, hi) in &looks {
            budget(BudgetKind::Prefetch, lo, hi);
        }
        budget(BudgetKind::Eviction, (1, 2, 0), (1, 2, 0));
        let s = seen().unwrap();
        let prefetch: Vec<_> = s
            .budgets
            .iter()
            .filter(|b| b.0 == BudgetKind::Prefetch)
            .collect();
        assert!(prefetch.len() <= MAX_RANGES, "{} ranges", prefetch.len());
        assert!(
            prefetch.windows(2).all(|w| w[0].2 < w[1].1),
            "sorted and disjoint"
        );
        for (lo, hi) in looks {
            assert!(
                prefetch.iter().any(|b| b.1 <= lo && hi <= b.2),
                "{lo:?}..={hi:?} not covered"
            );
        }
        assert_eq!(
            s.budgets.last(),
            Some(&(BudgetKind::Eviction, (1, 2, 0), (1, 2, 0)))
        );
    }

    /// A region less another holds exactly the cells of the first outside the second,
    /// each once: every pair of small regions on a grid, cell by cell.
    #[test]
    fn a_region_less_another_is_the_cells_outside_it() {
        let mut regions = Vec::new();
        for (start, end) in [(0, 0), (0, 3), (1, 2), (2, 5), (4, 5)] {
            for (lo, hi) in [(0, 1), (0, 4), (1, 3), (2, 6), (5, 6)] {
                regions.push(Region { start, end, lo, hi });
            }
        }
        let cell = |t: usize, x: u64| Region {
            start: t,
            end: t,
            lo: x,
            hi: x + 1,
        };
        for a in &regions {
            for b in &regions {
                let parts = a.less(b);
                assert!(parts.len() <= 4);
                for t in 0..7 {
                    for x in 0..7 {
                        let c = cell(t, x);
                        let want = a.meets(&c) && !b.meets(&c);
                        let n = parts.iter().filter(|p| p.meets(&c)).count();
                        assert_eq!(n, usize::from(want), "{a:?} less {b:?} at ({t}, {x})");
                    }
                }
            }
        }
    }

    #[test]
    fn a_watch_notes_only_while_on() {
        heap(0, 5, 0, 10);
        assert_eq!(seen(), None);
        watch();
        heap(15, 30, 128, 256);
        heap(10, 20, 0, 64);
        heap(15, 30, 128, 256);
        budget(BudgetKind::Prefetch, (3, 9, 0), (5, 9, 2));
        budget(BudgetKind::Prefetch, (1, 4, 0), (2, 7, 1));
        budget(BudgetKind::Eviction, KEY_MIN, KEY_MAX);
        budget(BudgetKind::Prefetch, (4, 9, 3), (6, 9, 1));
        chunks(40, 44, 512);
        chunks(40, 44, 512);
        let s = seen().unwrap();
        assert_eq!(
            s.heap,
            vec![
                Region {
                    start: 10,
                    end: 20,
                    lo: 0,
                    hi: 64
                },
                Region {
                    start: 15,
                    end: 30,
                    lo: 128,
                    hi: 256
                }
            ]
        );
        assert_eq!(
            s.chunks,
            vec![Region {
                start: 40,
                end: 44,
                lo: 0,
                hi: 512
            }]
        );
        assert_eq!(s.span(), Some((10, 44)), "both kinds of look");
        assert_eq!(
            s.budgets,
            vec![
                (BudgetKind::Prefetch, (1, 4, 0), (2, 7, 1)),
                (BudgetKind::Prefetch, (3, 9, 0), (6, 9, 1)),
                (BudgetKind::Eviction, KEY_MIN, KEY_MAX)
            ]
        );
        assert_eq!(seen(), None, "the watch is off again");
        let a = Region {
            start: 0,
            end: 4,
            lo: 0,
            hi: 8,
        };
        assert!(a.meets(&Region {
            start: 4,
            end: 9,
            lo: 7,
            hi: 9
        }));
        assert!(!a.meets(&Region {
            start: 5,
            end: 9,
            lo: 0,
            hi: 8
        }));
        assert!(!a.meets(&Region {
            start: 0,
            end: 9,
            lo: 8,
            hi: 9
        }));
    }
}
