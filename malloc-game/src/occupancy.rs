//! Occupancy of one fast level: the chunks committed so far, over time x address.
//!
//! The question the game asks every turn is "at which canonical offsets does a chunk of
//! this size fit over this interval, best fit first?". Canonical offsets are 0 and the top
//! of every chunk overlapping the interval in time; the free ones are exactly the starts
//! of the free gaps, so the query walks the gaps between the chunks that overlap in time,
//! which the time index (`occupancy/index.rs`) hands over as a few merged pieces, however
//! many chunks the interval overlaps.

pub(crate) mod index;

use accel_sim::MemoryLevel;
use index::{Rect, TimeIndex};
use serde::{Deserialize, Serialize};

/// A committed chunk: `[offset, top)` held over ops `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub start: usize,
    pub end: usize,
    pub offset: u64,
    pub top: u64,
}

/// A place where a chunk fits: its offset and the size of the free gap it starts (from the
/// offset to the next chunk above it, or to the capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub offset: u64,
    pub gap: u64,
}

/// Calls `f(lo, hi, last)` for every free gap `[lo, hi)` between the `busy` ranges
/// `(offset, top)` (sorted here), from the lowest; the `last` one ends at `capacity`.
pub fn for_each_gap(busy: &mut [(u64, u64)], capacity: u64, mut f: impl FnMut(u64, u64, bool)) {
    // The time index hands the ranges over as a few sorted runs, which a stable sort
    // merges rather than sorting from scratch.
    busy.sort();
    let mut reach = 0u64;
    for &(o, t) in busy.iter() {
        if o > reach {
            f(reach, o, false);
        }
        reach = reach.max(t);
    }
    if reach < capacity {
        f(reach, capacity, true);
    }
}

/// The canonical offsets where `size` bytes fit between the `busy` ranges: the aligned
/// starts of the free gaps that hold the chunk, best fit first (smallest gap), then lower
/// offset. Written into `out` (cleared first).
pub fn fitting_gaps(
    busy: &mut [(u64, u64)],
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

/// The chunks of one level, indexed over time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// In insertion order; a chunk's position is its id in `index`.
    chunks: Vec<Chunk>,
    index: TimeIndex,
    peak_top: u64,
}

impl Occupancy {
    /// An empty level for a program of `horizon` ops (a later chunk may still reach
    /// past it: the index then grows).
    pub fn new(horizon: usize) -> Occupancy {
        Occupancy {
            chunks: Vec::new(),
            index: TimeIndex::new(horizon),
            peak_top: 0,
        }
    }

    /// The chunks, by start time (ties in insertion order).
    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        let mut out = Vec::with_capacity(self.chunks.len());
        self.index
            .starting_in(0, usize::MAX, |id, _| out.push(&self.chunks[id]));
        out.into_iter()
    }
    /// The highest address any chunk reaches.
    pub fn peak_top(&self) -> u64 {
        self.peak_top
    }

    /// Adds a chunk; it must hold at least one byte (`top > offset`).
    pub fn insert(&mut self, chunk: Chunk) {
        debug_assert!(chunk.start <= chunk.end && chunk.offset < chunk.top);
        if chunk.end >= self.index.horizon() {
            // Doubling keeps the total cost of growing linear.
            let want = chunk.end.saturating_add(1).max(2 * self.index.horizon());
            self.index = self.index.grown(want);
        }
        self.index.insert(Rect {
            start: chunk.start,
            end: chunk.end,
            offset: chunk.offset,
            top: chunk.top,
        });
        self.chunks.push(chunk);
        self.peak_top = self.peak_top.max(chunk.top);
    }

    /// Calls `f(chunk)` for every chunk overlapping `start..=end` in time, by start time
    /// (ties in insertion order). `O(log T + k log k)` for `k` chunks.
    pub fn for_each_overlapping(&self, start: usize, end: usize, mut f: impl FnMut(&Chunk)) {
        let mut earlier: Vec<(usize, usize)> = Vec::new();
        self.index.stab(start, |id, r| {
            if r.start < start && r.start <= end {
                earlier.push((r.start, id));
            }
        });
        earlier.sort_unstable();
        for (_, id) in earlier {
            f(&self.chunks[id]);
        }
        self.index
            .starting_in(start, end, |id, _| f(&self.chunks[id]));
    }

    /// The fitting canonical offsets for `size` bytes over `start..=end` in `level`, best
    /// fit first (smallest gap), then lower offset; at most `max` of them, into `out`.
    pub fn candidates(
        &self,
        start: usize,
        end: usize,
        size: u64,
        level: &MemoryLevel,
        max: usize,
        out: &mut Vec<Candidate>,
    ) {
        with_scratch(|busy| {
            self.busy(start, end, busy);
            fitting_gaps(busy, size, level.alignment, level.capacity, out);
        });
        out.truncate(max);
    }

    /// Appends to `busy` address ranges whose union is the union of the chunks
    /// overlapping `start..=end` in time (unsorted; they may overlap each other).
    pub fn busy(&self, start: usize, end: usize, busy: &mut Vec<(u64, u64)>) {
        self.index.busy(start, end, busy);
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<(u64, u64)>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` with an empty vector for busy ranges, reused across the queries of a thread
/// (a query allocating its own made allocation a large part of a solver's time).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<(u64, u64)>) -> R) -> R {
    let mut v = SCRATCH.take();
    v.clear();
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

    fn chunk(start: usize, end: usize, offset: u64, top: u64) -> Chunk {
        Chunk {
            start,
            end,
            offset,
            top,
        }
    }

    fn level(alignment: u64, capacity: u64) -> MemoryLevel {
        MemoryLevel {
            name: "fast".into(),
            capacity,
            read_bw: 1.0,
            write_bw: 1.0,
            alignment,
        }
    }

    #[test]
    fn best_fit_first_then_lower_offset() {
        let mut occ = Occupancy::default();
        // Over ops 0..=9: busy [0,10), [30,40), [45,50); gaps [10,30) 20, [40,45) 5,
        // [50,100) 50.
        occ.insert(chunk(0, 9, 0, 10));
        occ.insert(chunk(2, 5, 30, 40));
        occ.insert(chunk(5, 9, 45, 50));
        occ.insert(chunk(20, 30, 10, 30)); // not overlapping in time
        let mut out = Vec::new();
        occ.candidates(0, 9, 5, &level(1, 100), 8, &mut out);
        let offsets: Vec<_> = out.iter().map(|c| (c.offset, c.gap)).collect();
        assert_eq!(offsets, vec![(40, 5), (10, 20), (50, 50)]);
        occ.candidates(0, 9, 6, &level(1, 100), 8, &mut out);
        assert_eq!(out[0].offset, 10);
        occ.candidates(0, 9, 6, &level(1, 100), 1, &mut out);
        assert_eq!(out.len(), 1);
        // Alignment 16: gap [40,45) cannot take it; [10,30) starts at 16 (gap 14).
        occ.candidates(0, 9, 5, &level(16, 100), 8, &mut out);
        let offsets: Vec<_> = out.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, vec![16, 64]);
        // Only the chunk at [10,30) overlaps ops 20..=30: offsets 0 (gap 10) and 30.
        occ.candidates(20, 30, 10, &level(1, 100), 8, &mut out);
        let offsets: Vec<_> = out.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, vec![0, 30]);
        occ.candidates(20, 30, 101, &level(1, 100), 8, &mut out);
        assert!(out.is_empty());
        assert_eq!(occ.peak_top(), 50);
    }
}
