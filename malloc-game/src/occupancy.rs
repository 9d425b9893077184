//! Occupancy of one fast level: the chunks committed so far, over time x address.
//!
//! The question the game asks every turn is "at which canonical offsets does a chunk of
//! this size fit over this interval, best fit first?". Canonical offsets are 0 and the top
//! of every chunk overlapping the interval in time; the free ones are exactly the starts
//! of the free gaps, so the query walks the gaps between the chunks that overlap in time.

use accel_sim::MemoryLevel;
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
    busy.sort_unstable();
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

/// The chunks of one level, sorted by start time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    chunks: Vec<Chunk>,
    peak_top: u64,
}

impl Occupancy {
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }
    /// The highest address any chunk reaches.
    pub fn peak_top(&self) -> u64 {
        self.peak_top
    }

    pub fn insert(&mut self, chunk: Chunk) {
        let at = self.chunks.partition_point(|c| c.start <= chunk.start);
        self.chunks.insert(at, chunk);
        self.peak_top = self.peak_top.max(chunk.top);
    }

    /// Calls `f(offset, top)` for every chunk overlapping `start..=end` in time.
    pub fn for_each_overlapping(&self, start: usize, end: usize, mut f: impl FnMut(&Chunk)) {
        for c in &self.chunks {
            if c.start > end {
                break;
            }
            if c.end >= start {
                f(c);
            }
        }
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
        let mut busy: Vec<(u64, u64)> = Vec::new();
        self.for_each_overlapping(start, end, |c| busy.push((c.offset, c.top)));
        fitting_gaps(&mut busy, size, level.alignment, level.capacity, out);
        out.truncate(max);
    }
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
