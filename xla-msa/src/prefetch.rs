//! XLA's prefetch: the picker's window of start times for a copy, and the search from
//! the preferred start, alternately later and earlier, for the first with a best-fit
//! chunk and room in the copy budget. Also the best-fit chunk for a use, stretched over
//! the later uses it could serve without a copy.

use crate::budgets::Budgets;
use crate::cursor::Item;
use crate::heap::Candidate;
use crate::pass::Pass;
use crate::picker::{first_true, PrefetchWindow};
use accel_sim::{BufferId, OpId};

impl Pass<'_> {
    /// XLA's `FindBestChunkCandidate` without a preferred offset: the best-fit offset for
    /// `[start, ends[k]]` with the largest `k` that fits (fitting is monotone in `k`, so a
    /// binary search finds it).
    pub(crate) fn best_chunk(&self, start: OpId, ends: &[(OpId, Item)], size: u64) -> Option<u64> {
        let first = self.fit(start, ends[0].0, size)?;
        Some(self.stretched(start, ends, size, first))
    }

    /// [`Pass::best_chunk`], with the free gaps over `[start, ends[0]]` written into `out`
    /// from the walk that gives the first fit.
    pub(crate) fn best_chunk_and_gaps(
        &self,
        start: OpId,
        ends: &[(OpId, Item)],
        size: u64,
        out: &mut Vec<Candidate>,
    ) -> Option<u64> {
        let top = self.opts.top_gap;
        let heap = &self.st.heap;
        let first = heap.candidates_and_best_fit(start, ends[0].0, size, top, out)?;
        Some(self.stretched(start, ends, size, first))
    }

    fn fit(&self, start: OpId, end: OpId, size: u64) -> Option<u64> {
        self.st
            .heap
            .best_fit(start, end, size, None, self.opts.top_gap)
    }

    /// The best fit over the longest `[start, ends[k]]` that has one, given `first`, the
    /// best fit over `[start, ends[0]]`.
    fn stretched(&self, start: OpId, ends: &[(OpId, Item)], size: u64, first: u64) -> u64 {
        let mut best = first;
        let (mut lo, mut hi) = (0, ends.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            match self.fit(start, ends[mid].0, size) {
                Some(o) => {
                    lo = mid;
                    best = o;
                }
                None => hi = mid,
            }
        }
        best
    }

    /// The picker's window for a prefetch of `b` for use `u` with level 0 holding the
    /// data from op `lo`, under this pass's op times; `None` when XLA would make none.
    pub(crate) fn window(&self, b: BufferId, lo: OpId, u: OpId) -> Option<PrefetchWindow> {
        if lo > u {
            return None;
        }
        let cost = self.cost;
        let copy = cost.copy_s(b, self.st.level);
        // The use's own saving from reading the fast level (XLA's `inst_elapsed_reduction`,
        // everything else in level 0).
        let timing = &self.st.timing;
        let red = timing.elapsed[u]
            - cost
                .compute_s(u)
                .max(timing.mem[u] + cost.mem_shift(b, false, 0, self.st.level));
        let span = |s: OpId| timing.span(s, u);
        self.opts
            .picker
            .window_with(lo, u, copy, red, self.st.max_copy, span)
    }

    /// The earliest start in `lo..=u` whose overlap with the ops before `u` stays under
    /// `max_copy` (`u` if none does): where a copy starts when the picker has no window.
    pub(crate) fn earliest_start(&self, lo: OpId, u: OpId) -> OpId {
        let timing = &self.st.timing;
        first_true(lo, u, |s| timing.span(s, u) <= self.st.max_copy)
    }

    /// XLA's prefetch with the cost-analysis interval picker: for the use `ends[0]`, with
    /// level 0 holding the data from op `lo`, the first start, from the preferred one
    /// alternately later and earlier, with a best-fit chunk and room in the copy budget.
    /// Returns the start and offset; changes nothing.
    /// With `gaps`, the free gaps over the chunk of the start found are written there, from
    /// the walk that found its offset.
    pub(crate) fn prefetch_search(
        &self,
        b: BufferId,
        lo: OpId,
        ends: &[(OpId, Item)],
        budgets: &Budgets,
        mut gaps: Option<&mut Vec<Candidate>>,
    ) -> Option<(OpId, u64)> {
        let u = ends[0].0;
        let window = self.window(b, lo, u)?;
        let size = self.program.buffer(b).size;
        let copy = self.cost.copy_s(b, self.st.level);
        let (earliest, latest, preferred) = (window.earliest, window.latest, window.preferred);
        // If no chunk fits from `s`, none fits from an earlier start (a longer interval).
        let mut oom: Option<OpId> = None;
        let (mut up, mut down) = (preferred + 1, preferred.checked_sub(1));
        let mut next = Some(preferred);
        let mut take_up = true;
        while let Some(s) = next {
            // The budget is asked first: it is cheaper than a chunk search, and a start it
            // refuses is no answer whatever the heap says. (That start then tells nothing
            // about the heap; the chunk searches of earlier starts it would have spared
            // find nothing either, so the answer is the same.)
            if oom.is_none_or(|m| s > m) && budgets.prefetch_fits(s, u, copy) {
                let found = match gaps.as_deref_mut() {
                    Some(out) => self.best_chunk_and_gaps(s, ends, size, out),
                    None => self.best_chunk(s, ends, size),
                };
                match found {
                    None => oom = Some(oom.map_or(s, |m| m.max(s))),
                    Some(off) => return Some((s, off)),
                }
            }
            // Alternate later and earlier candidates; when one side runs out, go on with
            // the other.
            next = None;
            for _ in 0..2 {
                if take_up && up <= latest {
                    next = Some(up);
                    up += 1;
                } else if !take_up && down.is_some_and(|d| d >= earliest) {
                    next = down;
                    down = down.and_then(|d| d.checked_sub(1));
                }
                take_up = !take_up;
                if next.is_some() {
                    break;
                }
            }
        }
        None
    }
}
