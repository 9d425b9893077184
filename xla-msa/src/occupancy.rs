//! Free space in a fast level: the time index of chunks (`occupancy/index.rs`, behind the
//! baseline heap that the game also plays on) and the gap walk over its answers.
//!
//! The question the game asks every turn is "at which canonical offsets does a chunk of
//! this size fit over this interval, best fit first?". Canonical offsets are 0 and the top
//! of every chunk overlapping the interval in time; the free ones are exactly the starts
//! of the free gaps, so the query walks the gaps between the chunks that overlap in time,
//! which the time index (`occupancy/index.rs`) hands over as a few merged pieces, however
//! many chunks the interval overlaps.

pub(crate) mod index;
pub(crate) mod mass;
mod parray;
mod shared_array;

/// A place where a chunk fits: its offset and the size of the free gap it starts (from the
/// offset to the next chunk above it, or to the capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// The offset the chunk would start at.
    pub offset: u64,
    /// The free bytes from the offset up to the next chunk above it (or the capacity): how
    /// much room the chunk would leave, which best fit minimises.
    pub gap: u64,
}

/// Calls `f(lo, hi, last)` for every free gap `[lo, hi)` between the `busy` ranges
/// `(offset, top)` (sorted by offset; they may overlap), from the lowest; the `last` one
/// ends at `capacity`.
pub fn for_each_gap(busy: &[(u64, u64)], capacity: u64, mut f: impl FnMut(u64, u64, bool)) {
    let mut reach = 0u64;
    for &(o, t) in busy {
        if o > reach {
            f(reach, o, false);
        }
        reach = reach.max(t);
    }
    if reach < capacity {
        f(reach, capacity, true);
    }
}

/// The canonical offsets where `size` bytes fit between the `busy` ranges (sorted by
/// offset): the aligned starts of the free gaps that hold the chunk, best fit first
/// (smallest gap), then lower offset. Written into `out` (cleared first).
pub fn fitting_gaps(
    busy: &[(u64, u64)],
    size: u64,
    alignment: u64,
    capacity: u64,
    out: &mut Vec<Candidate>,
) {
    out.clear();
    if size == 0 || size > capacity {
        return;
    }
    for_each_gap(busy, capacity, |lo, hi, _| {
        if let Some(o) = align_up(lo, alignment) {
            if o < hi && hi - o >= size {
                out.push(Candidate {
                    offset: o,
                    gap: hi - o,
                });
            }
        }
    });
    out.sort_unstable_by_key(|c| (c.gap, c.offset));
}

/// The busy ranges of a gap walk, reused across the queries of a thread (a query
/// allocating its own made allocation a large part of a solver's time).
#[derive(Default)]
pub(crate) struct Scratch {
    pieces: Vec<(u64, u64)>,
}

impl Scratch {
    /// Takes a list of address ranges.
    pub(crate) fn add(&mut self, run: &[(u64, u64)]) {
        self.pieces.extend_from_slice(run);
    }

    /// Everything added, sorted by offset: the order a gap walk needs.
    ///
    /// The time index hands the ranges over as sorted runs, but most are short (a leaf's
    /// few starts), too short for a stable sort to merge them, and merging them pairwise
    /// was slower still (measured). Only the offsets are compared: ranges with the same
    /// offset may come in either order, since the walk takes the highest top of those
    /// it has passed.
    pub(crate) fn sorted(&mut self) -> &[(u64, u64)] {
        self.pieces.sort_unstable_by_key(|p| p.0);
        &self.pieces
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = const {
        std::cell::Cell::new(Scratch { pieces: Vec::new() })
    };
}

/// Runs `f` with an empty [`Scratch`], reused across the queries of a thread.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut v = SCRATCH.take();
    v.pieces.clear();
    let out = f(&mut v);
    SCRATCH.set(v);
    out
}

/// `x` rounded up to a multiple of `alignment` (a power of two); `None` on overflow.
pub fn align_up(x: u64, alignment: u64) -> Option<u64> {
    x.checked_add(alignment - 1).map(|v| v & !(alignment - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges of `runs` through a [`Scratch`], sorted.
    fn sorted(runs: &[&[(u64, u64)]]) -> Vec<(u64, u64)> {
        let mut sc = Scratch::default();
        for r in runs {
            sc.add(r);
        }
        sc.sorted().to_vec()
    }

    #[test]
    fn best_fit_first_then_lower_offset() {
        // Busy [0,10), [30,40), [45,50) (one range twice, in three lists): gaps [10,30)
        // 20, [40,45) 5, [50,100) 50.
        let busy = sorted(&[&[(30, 40)], &[(0, 10), (45, 50)], &[(0, 10)]]);
        assert_eq!(busy, vec![(0, 10), (0, 10), (30, 40), (45, 50)]);
        let mut out = Vec::new();
        fitting_gaps(&busy, 5, 1, 100, &mut out);
        let offsets: Vec<_> = out.iter().map(|c| (c.offset, c.gap)).collect();
        assert_eq!(offsets, vec![(40, 5), (10, 20), (50, 50)]);
        fitting_gaps(&busy, 6, 1, 100, &mut out);
        assert_eq!(out[0].offset, 10);
        // Alignment 16: gap [40,45) cannot take it; [10,30) starts at 16 (gap 14).
        fitting_gaps(&busy, 5, 16, 100, &mut out);
        let offsets: Vec<_> = out.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, vec![16, 64]);
        fitting_gaps(&busy, 101, 1, 100, &mut out);
        assert!(out.is_empty());
    }
}
