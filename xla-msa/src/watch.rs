//! What a stretch of the walk looked at: the parts of a heap and of the copy budgets whose
//! contents its answers depend on.
//!
//! A caller that replays a walk against a state that differs from the one it was first
//! played on in a few known places (a local search changing one buffer's chunks) needs to
//! know whether a later buffer's turns would see the difference. Every heap query depends
//! only on the chunks overlapping its interval in time (and, for a fit at one offset, on
//! those meeting its bytes), and every copy-budget query only on the queued copies between
//! the one before its key and the last one it pushed back. So the walk notes those regions
//! while a watch is on ([`watch`]) and hands them over ([`Seen`]); where none of them meets
//! a difference, the stretch plays out the same. Off (the default), noting costs one
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
/// copy budget, the range of queue keys its answers read (inclusive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    /// The heap regions its queries looked at, sorted, each once.
    pub heap: Vec<Region>,
    /// Per budget, the first and the last queue key its answers read.
    pub budgets: Vec<(BudgetKind, CopyKey, CopyKey)>,
    /// The ops `heap` spans, kept: a local search asks it of every later buffer on each
    /// move.
    span: Option<(usize, usize)>,
}

impl Seen {
    /// Sorts the regions (dropping repeats) and merges each budget's ranges into one.
    fn compact(&mut self) {
        self.heap
            .sort_unstable_by_key(|r| (r.start, r.end, r.lo, r.hi));
        self.heap.dedup();
        let mut budgets: Vec<(BudgetKind, CopyKey, CopyKey)> = Vec::new();
        for (k, lo, hi) in self.budgets.drain(..) {
            match budgets.iter_mut().find(|b| b.0 == k) {
                Some(b) => {
                    b.1 = b.1.min(lo);
                    b.2 = b.2.max(hi);
                }
                None => budgets.push((k, lo, hi)),
            }
        }
        self.budgets = budgets;
        self.span = self.heap.first().map(|first| {
            let hi = self.heap.iter().map(|r| r.end).max().unwrap_or(first.end);
            (first.start, hi)
        });
    }

    /// The ops the heap regions span, first and last (as [`seen`] handed them over).
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

/// Notes a look at the keys `lo..=hi` of a copy budget's queue.
pub(crate) fn budget(kind: BudgetKind, lo: CopyKey, hi: CopyKey) {
    SEEN.with(|s| {
        if let Some(seen) = s.borrow_mut().as_mut() {
            // One range per budget (what `compact` leaves): a walk looks at the budgets
            // thousands of times, which grew the list to pages.
            match seen.budgets.iter_mut().find(|b| b.0 == kind) {
                Some(b) => {
                    b.1 = b.1.min(lo);
                    b.2 = b.2.max(hi);
                }
                None => seen.budgets.push((kind, lo, hi)),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(s.span(), Some((10, 30)));
        assert_eq!(
            s.budgets,
            vec![
                (BudgetKind::Prefetch, (1, 4, 0), (5, 9, 2)),
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
