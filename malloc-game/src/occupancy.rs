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

/// A place where a chunk fits: its offset and the size of the free gap it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub offset: u64,
    pub gap: u64,
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
        let (alignment, capacity) = (level.alignment, level.capacity);
        out.clear();
        if size > capacity || max == 0 {
            return;
        }
        let mut busy: Vec<(u64, u64)> = Vec::new();
        self.for_each_overlapping(start, end, |c| busy.push((c.offset, c.top)));
        busy.sort_unstable();
        let mut push = |lo: u64, hi: u64| {
            let o = align_up(lo, alignment);
            if o.checked_add(size).is_some_and(|t| t <= hi) {
                out.push(Candidate {
                    offset: o,
                    gap: hi - lo,
                });
            }
        };
        let mut lo = 0u64;
        for &(o, t) in &busy {
            if o > lo {
                push(lo, o);
            }
            lo = lo.max(t);
        }
        if capacity > lo {
            push(lo, capacity);
        }
        out.sort_unstable_by_key(|c| (c.gap, c.offset));
        out.truncate(max);
    }
}

/// `x` rounded up to a multiple of `alignment` (a power of two).
pub fn align_up(x: u64, alignment: u64) -> u64 {
    (x + alignment - 1) & !(alignment - 1)
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
        // Alignment 16: gap [40,45) cannot take it; [10,30) starts at 16.
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
