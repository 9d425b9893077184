//! The best-fit chunk heap of one fast level: chunks `[offset, offset+size)` committed over
//! inclusive op intervals `[start, end]`, after XLA's `GlobalDecreasingSizeBestFitHeap`
//! (docs/xla-msa.md, "Best-fit placement").
//!
//! Queries see the chunks that overlap the asked interval in time only through the union
//! of their address ranges, which the time index keeps in pieces
//! ([`crate::occupancy`]'s `TimeIndex`): a query costs `O(log T)` plus the chunks live at
//! its first op plus the pieces of `O(log T)` unions, however many chunks the interval
//! overlaps. The gap walk then sorts those pieces by offset.

use crate::occupancy::index::{Rect, TimeIndex};
use crate::occupancy::mass::Mass;
pub use crate::occupancy::mass::{LaneMass, LANES as MASS_LANES};
use accel_sim::{Hardware, OpId};
use std::sync::OnceLock;

/// A committed chunk: bytes `[offset, offset + size)` held over ops `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Chunk {
    /// The first op the chunk is held over.
    pub start: OpId,
    /// The last op the chunk is held over (inclusive).
    pub end: OpId,
    /// The chunk's first byte in the level.
    pub offset: u64,
    /// The buffer's size in bytes.
    pub size: u64,
}

impl Chunk {
    /// One past the chunk's last byte (saturating: a committed chunk ends within the
    /// capacity, so only a chunk the heap refuses can saturate).
    pub fn top(&self) -> u64 {
        self.offset.saturating_add(self.size)
    }

    /// The chunk as the time index and the mass hold it.
    fn rect(&self) -> Rect {
        Rect {
            start: self.start,
            end: self.end,
            offset: self.offset,
            top: self.top(),
        }
    }
}

/// Handle of a committed chunk, for [`ChunkHeap::remove`].
pub type ChunkId = usize;

pub use crate::occupancy::Candidate;
use crate::occupancy::{align_up, fitting_gaps, with_scratch};

/// How big the gap above the highest overlapping chunk counts in a best-fit choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TopGap {
    /// It reaches the capacity (docs/xla-msa.md, "Best-fit placement"): it competes with
    /// the gaps below by its real size.
    #[default]
    Capacity,
    /// It reaches only the heap's current peak address, as in XLA's heap, which grows on
    /// demand and checks the capacity afterwards. A chunk goes above the peak (growing the
    /// heap) only when no gap below the peak holds it, so the heap stays compact.
    Peak,
}

/// A chunk the heap cannot take; names the value that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeapError {
    /// A level with no bytes holds no chunk.
    #[error("heap capacity must be > 0")]
    ZeroCapacity,
    /// Offsets are multiples of the alignment, which must be a power of two (the value
    /// given).
    #[error("heap alignment must be a power of two, got {0}")]
    BadAlignment(u64),
    /// A heap over no ops holds no chunk.
    #[error("heap horizon (number of ops) must be > 0")]
    ZeroHorizon,
    /// The heap was asked for a level that is level 0 (slow memory, no heap) or past the
    /// hardware's levels.
    #[error("level {level} is not a fast level of hardware `{hw}` (levels 1..{max})")]
    NotFastLevel {
        /// The hardware's name.
        hw: String,
        /// The level asked for.
        level: usize,
        /// The hardware's fastest level.
        max: usize,
    },
    /// A chunk of no bytes: a buffer of size 0 is never placed.
    #[error("chunk size must be > 0")]
    ZeroSize,
    /// A chunk's live range is empty or runs past the heap's ops.
    #[error("chunk interval {start}..={end} is not inside ops 0..{horizon}")]
    BadInterval {
        /// Its first op.
        start: OpId,
        /// Its last op.
        end: OpId,
        /// The heap's number of ops.
        horizon: usize,
    },
    /// A chunk whose offset breaks the level's alignment.
    #[error("chunk offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned {
        /// The chunk's offset.
        offset: u64,
        /// The level's alignment.
        alignment: u64,
    },
    /// A chunk that ends above the level's capacity.
    #[error("chunk offset {offset} + size {size} exceeds the capacity {capacity}")]
    OverCapacity {
        /// The chunk's offset.
        offset: u64,
        /// Its size.
        size: u64,
        /// The level's capacity.
        capacity: u64,
    },
    /// A chunk that shares bytes and ops with one already committed: the heap never holds
    /// two buffers in one byte at one time.
    #[error("chunk [{offset}, {top}) over ops {start}..={end} overlaps a committed chunk [{other_offset}, {other_top}) over ops {other_start}..={other_end}")]
    Overlap {
        /// The new chunk's first byte.
        offset: u64,
        /// One past its last byte.
        top: u64,
        /// Its first op.
        start: OpId,
        /// Its last op.
        end: OpId,
        /// The committed chunk's first byte.
        other_offset: u64,
        /// One past its last byte.
        other_top: u64,
        /// Its first op.
        other_start: OpId,
        /// Its last op.
        other_end: OpId,
    },
}

/// The committed chunks of one fast level.
#[derive(Clone, Debug)]
pub struct ChunkHeap {
    capacity: u64,
    alignment: u64,
    /// By [`ChunkId`], which is also the chunk's id in `index`. Persistent, as the index
    /// is: a game state that holds a heap clones in `O(1)`.
    chunks: imbl::Vector<Option<Chunk>>,
    index: TimeIndex,
    /// The chunks' byte-op mass by start and address lane, for occupancy grids: built at
    /// the first query ([`ChunkHeap::mass_starting_in`]) and kept up from then on, so that
    /// a heap nobody asks (a baseline's, a local search's) pays nothing for it.
    mass: OnceLock<Mass>,
}

impl ChunkHeap {
    /// An empty heap of `capacity` bytes over ops `0..horizon`.
    pub fn new(capacity: u64, alignment: u64, horizon: usize) -> Result<ChunkHeap, HeapError> {
        if capacity == 0 {
            return Err(HeapError::ZeroCapacity);
        }
        if alignment == 0 || !alignment.is_power_of_two() {
            return Err(HeapError::BadAlignment(alignment));
        }
        if horizon == 0 {
            return Err(HeapError::ZeroHorizon);
        }
        Ok(ChunkHeap {
            capacity,
            alignment,
            chunks: imbl::Vector::new(),
            index: TimeIndex::new(horizon),
            mass: OnceLock::new(),
        })
    }

    /// An empty heap for fast level `level` of `hw` (its capacity and alignment).
    pub fn for_level(hw: &Hardware, level: usize, horizon: usize) -> Result<ChunkHeap, HeapError> {
        if level == 0 || level >= hw.levels.len() {
            return Err(HeapError::NotFastLevel {
                hw: hw.name.clone(),
                level,
                max: hw.levels.len().saturating_sub(1),
            });
        }
        let l = &hw.levels[level];
        ChunkHeap::new(l.capacity, l.alignment, horizon)
    }

    /// The level's size in bytes: no chunk ends above it.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// The level's alignment: every offset is a multiple of it.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }
    /// The number of ops the heap spans: chunks are held within ops `0..horizon`.
    pub fn horizon(&self) -> usize {
        self.index.horizon()
    }
    /// The highest `offset + size` of any committed chunk (0 when empty).
    pub fn peak_address(&self) -> u64 {
        self.index.peak()
    }
    /// Number of committed chunks.
    pub fn len(&self) -> usize {
        self.index.len()
    }
    /// Whether no chunk is committed.
    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }
    /// A committed chunk by id.
    pub fn get(&self, id: ChunkId) -> Option<&Chunk> {
        self.chunks.get(id).and_then(Option::as_ref)
    }
    /// Every committed chunk with its id.
    pub fn iter(&self) -> impl Iterator<Item = (ChunkId, &Chunk)> {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
    }

    /// Calls `f` on every committed chunk that overlaps ops `start..=end` in time, each
    /// once: those live at `start`, then those starting later by start. `O(log T + k)`.
    pub fn for_each_overlapping(&self, start: OpId, end: OpId, mut f: impl FnMut(&Chunk)) {
        if start >= self.horizon() || start > end {
            return;
        }
        let end = end.min(self.horizon() - 1);
        crate::watch::chunks(start, end, self.capacity);
        let chunks = &self.chunks;
        let mut visit = |id: usize, _: &Rect| {
            if let Some(c) = &chunks[id] {
                f(c);
            }
        };
        self.index.stab(start, &mut visit);
        if end > start {
            self.index.starting_in(start + 1, end, &mut visit);
        }
    }

    /// For each address lane (lane `j` holds bytes `[lane_start(j), lane_start(j + 1))`),
    /// the sum over the committed chunks starting in ops `lo..=hi` of their ops held times
    /// their bytes in the lane, whole chunks even where they end past `hi`. An occupancy
    /// grid sums these instead of visiting every chunk its interval overlaps: `O(log T)`
    /// per op with a start in the `2 * 15` ops at the ends, plus one per 16 ops between.
    /// The first call builds the sums from every chunk; commits and removals keep them.
    pub fn mass_starting_in(&self, lo: OpId, hi: OpId) -> LaneMass {
        let mut out = [0; MASS_LANES];
        let hi = hi.min(self.horizon().saturating_sub(1));
        if lo <= hi {
            // Whole chunks: what one starting here holds past `hi` counts too.
            crate::watch::chunks(lo, hi, self.capacity);
            let mass = self.mass.get_or_init(|| {
                let rects = self.iter().map(|(_, c)| c.rect());
                Mass::of(self.capacity, self.horizon(), rects)
            });
            mass.starting_in(&self.index, lo, hi, &mut out);
        }
        out
    }

    /// The first byte of address lane `j` of [`ChunkHeap::mass_starting_in`] (the capacity
    /// at `j = MASS_LANES`): `floor(j * capacity / MASS_LANES)`.
    pub fn lane_start(&self, j: usize) -> u64 {
        crate::occupancy::mass::lane_start(self.capacity, j)
    }

    /// Whether `[offset, offset + size)` is free over ops `start..=end`, aligned, and under
    /// the capacity.
    pub fn fits(&self, start: OpId, end: OpId, offset: u64, size: u64) -> bool {
        if size == 0 || start > end || end >= self.horizon() || offset % self.alignment != 0 {
            return false;
        }
        let Some(top) = offset.checked_add(size) else {
            return false;
        };
        if top > self.capacity {
            return false;
        }
        crate::watch::heap(start, end, offset, top);
        self.index.is_free(start, end, offset, top)
    }

    /// Removes every committed chunk of `size` bytes at `offset` that lies within ops
    /// `start..=end` (the pieces an allocation was committed in, which cover it with no
    /// gap); returns how many. Chunks at one offset never overlap in time, so these are
    /// the allocation's own: each piece is found live where the one before it ends.
    pub fn remove_at(&mut self, start: OpId, end: OpId, offset: u64, size: u64) -> usize {
        self.remove_all_at(&[(start, end, offset, size)])
    }

    /// [`ChunkHeap::remove_at`] for each `(start, end, offset, size)`, the time index's
    /// unions rebuilt once for all.
    pub fn remove_all_at(&mut self, allocations: &[(OpId, OpId, u64, u64)]) -> usize {
        let mut gone: Vec<(usize, Rect)> = Vec::new();
        for &(start, end, offset, size) in allocations {
            let top = offset.saturating_add(size);
            let mut t = start;
            while t <= end && t < self.horizon() {
                let mut piece = None;
                // Each piece starts where the one before it ends (at the allocation's
                // start, the first): the chunks starting at `t` are a few, where those
                // live at `t` were every chunk of the level then (a local search's moves
                // took a tenth of their time here).
                self.index.starting_in(t, t, |id, r| {
                    if r.offset == offset && r.top == top && r.start >= start && r.end <= end {
                        piece = Some((id, *r));
                    }
                });
                let Some((id, r)) = piece else {
                    break;
                };
                gone.push((id, r));
                t = r.end + 1;
            }
        }
        for &(id, r) in &gone {
            if let Some(slot) = self.chunks.get_mut(id) {
                *slot = None;
            }
            if let Some(m) = self.mass.get_mut() {
                m.change(&r, false);
            }
        }
        self.index.remove_many(&gone);
        gone.len()
    }

    /// Calls `f(lo, hi)` for every free gap `[lo, hi)` over ops `start..=end`, from the
    /// lowest; the last one ends at the capacity (it may be empty).
    fn for_each_gap(&self, start: OpId, end: OpId, f: impl FnMut(u64, u64, bool)) {
        crate::watch::heap(start, end, 0, self.capacity);
        with_scratch(|scratch| {
            self.index.busy(start, end, scratch);
            crate::occupancy::for_each_gap(scratch.sorted(), self.capacity, f);
        });
    }

    /// The canonical candidate offsets for a chunk of `size` bytes over ops
    /// `start..=end`: 0 and the top of every chunk overlapping the interval in time
    /// (aligned up), kept where the chunk fits, sorted by the size of the free gap each
    /// starts (best fit first), then by offset. These are exactly the starts of the free
    /// gaps that hold the chunk. Written into `out` (cleared first).
    pub fn candidates(&self, start: OpId, end: OpId, size: u64, out: &mut Vec<Candidate>) {
        out.clear();
        if start > end || end >= self.horizon() {
            return;
        }
        crate::watch::heap(start, end, 0, self.capacity);
        with_scratch(|scratch| {
            self.index.busy(start, end, scratch);
            fitting_gaps(scratch.sorted(), size, self.alignment, self.capacity, out);
        });
    }

    /// [`ChunkHeap::candidates`] into `out`, and the offset [`ChunkHeap::best_fit`] gives
    /// without a preferred offset, from one walk of the free gaps instead of two.
    pub fn candidates_and_best_fit(
        &self,
        start: OpId,
        end: OpId,
        size: u64,
        top: TopGap,
        out: &mut Vec<Candidate>,
    ) -> Option<u64> {
        self.candidates(start, end, size, out);
        self.note_peak(top);
        // The candidates are the aligned starts of the gaps that hold the chunk, with
        // their true sizes; best fit sizes the last gap (the one ending at the capacity)
        // by `top` instead.
        let peak = self.peak_address();
        let capacity = self.capacity;
        let mut best: Option<(u64, u64)> = None;
        let mut grow: Option<u64> = None;
        for c in out.iter() {
            let last = c.offset + c.gap == capacity;
            let gap = match (top, last) {
                (TopGap::Peak, true) => peak.max(c.offset).min(capacity) - c.offset,
                _ => c.gap,
            };
            if gap >= size {
                if best.is_none_or(|b| (gap, c.offset) < b) {
                    best = Some((gap, c.offset));
                }
            } else {
                grow = Some(c.offset);
            }
        }
        best.map(|(_, o)| o).or(grow)
    }

    /// The offset a chunk of `size` bytes over ops `start..=end` gets: `preferred` if the
    /// chunk fits there, else the smallest free gap that holds it (lower offset on ties),
    /// with the top gap sized by `top`. `None` when it fits nowhere under the capacity.
    pub fn best_fit(
        &self,
        start: OpId,
        end: OpId,
        size: u64,
        preferred: Option<u64>,
        top: TopGap,
    ) -> Option<u64> {
        if size == 0 || size > self.capacity || start > end || end >= self.horizon() {
            return None;
        }
        if let Some(p) = preferred {
            if self.fits(start, end, p, size) {
                return Some(p);
            }
        }
        self.note_peak(top);
        let alignment = self.alignment;
        let peak = self.peak_address();
        let capacity = self.capacity;
        let mut best: Option<(u64, u64)> = None;
        let mut grow: Option<u64> = None;
        self.for_each_gap(start, end, |lo, hi, last| {
            let Some(o) = align_up(lo, alignment) else {
                return;
            };
            if o >= hi || hi - o < size {
                return;
            }
            let nominal_hi = match (top, last) {
                (TopGap::Peak, true) => peak.max(o).min(capacity),
                _ => hi,
            };
            let gap = nominal_hi - o;
            if gap >= size {
                if best.is_none_or(|b| (gap, o) < b) {
                    best = Some((gap, o));
                }
            } else {
                grow = Some(o);
            }
        });
        best.map(|(_, o)| o).or(grow)
    }

    /// Commits a chunk; fails (changing nothing) if it is out of bounds, misaligned or
    /// overlaps a committed chunk.
    pub fn commit(&mut self, chunk: Chunk) -> Result<ChunkId, HeapError> {
        let Chunk {
            start,
            end,
            offset,
            size,
        } = chunk;
        if size == 0 {
            return Err(HeapError::ZeroSize);
        }
        let horizon = self.horizon();
        if start > end || end >= horizon {
            return Err(HeapError::BadInterval {
                start,
                end,
                horizon,
            });
        }
        if offset % self.alignment != 0 {
            return Err(HeapError::Misaligned {
                offset,
                alignment: self.alignment,
            });
        }
        let Some(top) = offset.checked_add(size).filter(|&t| t <= self.capacity) else {
            return Err(HeapError::OverCapacity {
                offset,
                size,
                capacity: self.capacity,
            });
        };
        crate::watch::heap(start, end, offset, top);
        if !self.index.is_free(start, end, offset, top) {
            // Rare (a caller's bug): name the first clashing chunk in overlap order.
            let mut clash: Option<Chunk> = None;
            self.for_each_overlapping(start, end, |c| {
                if clash.is_none() && c.offset < top && offset < c.top() {
                    clash = Some(*c);
                }
            });
            if let Some(c) = clash {
                return Err(HeapError::Overlap {
                    offset,
                    top,
                    start,
                    end,
                    other_offset: c.offset,
                    other_top: c.top(),
                    other_start: c.start,
                    other_end: c.end,
                });
            }
        }
        let rect = chunk.rect();
        let id = self.index.insert(rect);
        if let Some(m) = self.mass.get_mut() {
            m.change(&rect, true);
        }
        if id == self.chunks.len() {
            self.chunks.push_back(Some(chunk));
        } else {
            self.chunks.set(id, Some(chunk));
        }
        Ok(id)
    }

    /// A best fit that sizes the top gap by the peak address reads the whole heap.
    fn note_peak(&self, top: TopGap) {
        if top == TopGap::Peak {
            crate::watch::heap(0, self.horizon().saturating_sub(1), 0, self.capacity);
        }
    }

    /// Removes a committed chunk (undoing a commit); `None` if `id` is not committed.
    pub fn remove(&mut self, id: ChunkId) -> Option<Chunk> {
        let chunk = self.chunks.get_mut(id)?.take()?;
        let rect = chunk.rect();
        self.index.remove(id, rect);
        if let Some(m) = self.mass.get_mut() {
            m.change(&rect, false);
        }
        Some(chunk)
    }
}

/// The result of [`pack_decreasing_size`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Packing {
    /// Per interval (input order): its offset, or `None` if it did not fit.
    pub(crate) offsets: Vec<Option<u64>>,
    /// How many intervals fit.
    pub(crate) placed: usize,
    /// The highest `offset + size` among the placed ones.
    pub(crate) peak: u64,
}

/// XLA's "global decreasing size best fit" packing of `(start, end, size)` intervals
/// (inclusive op ranges) into `capacity` bytes: largest first, then longest-lived, then
/// input order; each at its best-fit offset, or left out if it fits nowhere.
pub(crate) fn pack_decreasing_size(
    intervals: &[(OpId, OpId, u64)],
    capacity: u64,
    alignment: u64,
    top: TopGap,
) -> Result<Packing, HeapError> {
    let horizon = intervals.iter().map(|i| i.1 + 1).max().unwrap_or(1);
    let mut heap = ChunkHeap::new(capacity, alignment, horizon)?;
    let mut order: Vec<usize> = (0..intervals.len()).collect();
    order.sort_by_key(|&i| {
        let (s, e, size) = intervals[i];
        (
            std::cmp::Reverse(size),
            std::cmp::Reverse(e.saturating_sub(s)),
            i,
        )
    });
    let mut offsets = vec![None; intervals.len()];
    let mut placed = 0;
    for i in order {
        let (start, end, size) = intervals[i];
        if let Some(offset) = heap.best_fit(start, end, size, None, top) {
            heap.commit(Chunk {
                start,
                end,
                offset,
                size,
            })?;
            offsets[i] = Some(offset);
            placed += 1;
        }
    }
    Ok(Packing {
        offsets,
        placed,
        peak: heap.peak_address(),
    })
}

#[cfg(test)]
mod tests;
