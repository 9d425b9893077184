//! XLA's re-packing (`max_repacks`): when a buffer runs out of memory in a level, the
//! level's allocations so far get new offsets (decreasing size best fit, XLA's
//! `MemorySpaceAssignmentBestFitRepacker`) and the buffer is tried again.

use crate::budgets::Budgets;
use crate::heap::{pack_decreasing_size, Chunk, ChunkHeap};
use crate::pass::PassMut;
use accel_sim::{Allocation, BufferId};

impl PassMut<'_> {
    /// Places buffer `b` in this pass's level, given the allocations earlier passes made.
    /// Returns the new allocations (none if it failed and was undone).
    /// [`PassMut::place`], and while re-packs are left, a placement that ran out of memory is
    /// undone, the level's allocations so far (in `allocs`) are re-packed, and the buffer
    /// is placed again (XLA's retry after `Repack`). A re-pack that cannot fit them all
    /// changes nothing and keeps the first placement, as XLA ignores a failed one.
    pub(crate) fn place_repacking(
        &mut self,
        b: BufferId,
        allocs: &mut [Vec<Allocation>],
        budgets: &mut Budgets,
        repacks_left: &mut usize,
    ) -> Vec<Allocation> {
        loop {
            if *repacks_left == 0 {
                return self.place(b, &allocs[b], budgets).0;
            }
            // The heap needs no snapshot: a re-pack rebuilds it from `allocs`, which do
            // not hold this buffer's new allocations.
            let before = (budgets.clone(), self.st.stats.clone());
            let (new, out_of_memory) = self.place(b, &allocs[b], budgets);
            if !out_of_memory {
                return new;
            }
            *repacks_left -= 1;
            let Some(heap) = self.view().repacked(allocs) else {
                return new;
            };
            (*budgets, self.st.stats) = before;
            self.st.heap = heap;
            self.st.stats.repacks += 1;
        }
    }
}

impl crate::pass::Pass<'_> {
    /// The level's allocations in `allocs` re-packed by decreasing size best fit: their new
    /// offsets are written into `allocs` and the heap holding them is returned; `None`
    /// (and `allocs` unchanged) if they do not all fit or none moves.
    fn repacked(&self, allocs: &mut [Vec<Allocation>]) -> Option<ChunkHeap> {
        let level = self.st.level;
        let mut blocks = Vec::new();
        let mut intervals = Vec::new();
        for (b, list) in allocs.iter().enumerate() {
            for (k, a) in list.iter().enumerate().filter(|(_, a)| a.level == level) {
                blocks.push((b, k));
                intervals.push((a.start, a.end, self.program.buffer(b).size));
            }
        }
        let heap = &self.st.heap;
        let (capacity, alignment) = (heap.capacity(), heap.alignment());
        let packing =
            pack_decreasing_size(&intervals, capacity, alignment, self.opts.top_gap).ok()?;
        if packing.placed < intervals.len() {
            return None;
        }
        let offsets: Vec<u64> = packing.offsets.into_iter().collect::<Option<_>>()?;
        let mut fresh = ChunkHeap::new(capacity, alignment, heap.horizon()).ok()?;
        for (&(start, end, size), &offset) in intervals.iter().zip(&offsets) {
            let chunk = Chunk {
                start,
                end,
                offset,
                size,
            };
            fresh.commit(chunk).ok()?;
        }
        // As XLA's repacker reports "not modified", a packing that moves nothing is no
        // reason to try the buffer again (it would run out of memory the same way).
        let moved = blocks
            .iter()
            .zip(&offsets)
            .any(|(&(b, k), &o)| allocs[b][k].offset != o);
        if !moved {
            return None;
        }
        for ((b, k), offset) in blocks.into_iter().zip(offsets) {
            allocs[b][k].offset = offset;
        }
        Some(fresh)
    }
}
