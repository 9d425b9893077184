//! One pass of XLA's algorithm: one fast level, its heap and op times, and the moves a
//! buffer's cursor makes in it (keep a chunk, write the buffer into the level, prefetch,
//! end a chunk and evict). A placement the baseline cannot finish is undone through a
//! [`Txn`]; the game never undoes.

use crate::budgets::Budgets;
use crate::cursor::{Cursor, Item, Open};
use crate::heap::{Chunk, ChunkHeap, ChunkId};
use crate::options::{CascadeTiming, EvictionOverBudget, XlaOptions};
use crate::picker::first_true;
use crate::timing::Timing;
use crate::walk::Hold;
use accel_sim::{
    Allocation, Arrival, BufferId, BufferPlacement, CostModel, CostState, Hardware, Mapping, OpId,
    Program,
};
use std::sync::Arc;

/// What one pass (one fast level) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XlaPassStats {
    pub(crate) level: usize,
    /// Buffers written into the level by their defining op.
    pub(crate) defined: usize,
    pub(crate) prefetches: usize,
    pub(crate) evictions: usize,
    /// Evictions made although the copy budget could not carry them.
    pub(crate) evictions_over_budget: usize,
    /// Buffers whose pending chunks were undone.
    pub(crate) undone: usize,
    /// Re-packs of the level's offsets that let a buffer be tried again.
    pub(crate) repacks: usize,
}

impl XlaPassStats {
    /// How many times the pass re-packed its level's offsets to try a buffer again
    /// (`XlaOptions::max_repacks` bounds it).
    pub fn repacks(&self) -> usize {
        self.repacks
    }
}

/// What does not change while XLA's passes run over one program.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) program: &'a Program,
    pub(crate) hw: &'a Hardware,
    pub(crate) cost: &'a CostModel,
    pub(crate) opts: &'a XlaOptions,
}

/// One pass's own state: its level, the heap of that level, the op times it plans with
/// and what it did. Shared through [`Pass`] by the baseline and by the game.
#[derive(Clone, Debug)]
pub(crate) struct PassState {
    pub(crate) level: usize,
    pub(crate) max_copy: f64,
    pub(crate) heap: ChunkHeap,
    pub(crate) timing: Arc<Timing>,
    pub(crate) stats: XlaPassStats,
}

impl PassState {
    /// XLA's setup of the pass over `level`, for the baseline and the game alike: an
    /// empty heap, and the op times it plans with. The first pass (and every pass under
    /// [`CascadeTiming::Default`]) uses the all-level-0 times; a later one the times under
    /// `mapping` (what the earlier passes made), with `budgets` rebuilt on them and the
    /// copies already made replayed. `None` (nothing changed) for a level the heap cannot
    /// model (zero capacity, bad alignment in a hand-built config): the caller skips it.
    pub(crate) fn start(
        ctx: Ctx<'_>,
        level: usize,
        first: bool,
        default_timing: &Arc<Timing>,
        mapping: impl FnOnce() -> Mapping,
        budgets: &mut Budgets,
    ) -> Option<PassState> {
        let heap = ChunkHeap::for_level(ctx.hw, level, ctx.program.len()).ok()?;
        let timing = if first || ctx.opts.cascade_timing == CascadeTiming::Default {
            Arc::clone(default_timing)
        } else {
            let state = CostState::from_mapping(ctx.cost, &mapping());
            let mem = (0..ctx.program.len()).map(|t| state.mem_s(t)).collect();
            let timing = Arc::new(Timing::new(ctx.cost, mem));
            let old = std::mem::replace(budgets, Budgets::new(ctx.opts, default_timing));
            *budgets = old.replayed(ctx.opts, &timing);
            timing
        };
        Some(PassState {
            level,
            max_copy: ctx.opts.picker.max_copy_s(ctx.hw, level),
            heap,
            timing,
            stats: XlaPassStats {
                level,
                ..Default::default()
            },
        })
    }
}

/// A mapping of the allocations so far (the op times of a later pass come from it).
pub(crate) fn mapping_of<'a>(allocs: impl Iterator<Item = &'a [Allocation]>) -> Mapping {
    Mapping {
        buffers: allocs
            .map(|a| BufferPlacement {
                allocations: a.to_vec(),
            })
            .collect(),
    }
}

/// What a buffer's turn has changed so far, to undo it on failure. A game never undoes
/// (its evictions are never refused), so it records nothing (`record` false): the budgets'
/// journals would otherwise grow for the whole episode.
#[derive(Default)]
pub(crate) struct Txn {
    pub(crate) record: bool,
    pub(crate) chunks: Vec<ChunkId>,
    /// A use found no chunk in the level (XLA's `kFailOutOfMemory`).
    pub(crate) out_of_memory: bool,
    /// Once a copy was tried: the budgets record their changes, and the log's length
    /// before the turn.
    pub(crate) budget: Option<usize>,
}

impl Txn {
    /// A transaction that records nothing.
    pub(crate) fn none() -> Txn {
        Txn::default()
    }
}

/// A pass seen, not changed: what XLA would choose, where a chunk fits.
#[derive(Clone, Copy)]
pub(crate) struct Pass<'a> {
    pub(crate) program: &'a Program,
    pub(crate) cost: &'a CostModel,
    pub(crate) opts: &'a XlaOptions,
    pub(crate) st: &'a PassState,
}

/// A pass being changed: chunks committed, copies charged, cursors moved on.
pub(crate) struct PassMut<'a> {
    pub(crate) program: &'a Program,
    pub(crate) cost: &'a CostModel,
    pub(crate) opts: &'a XlaOptions,
    pub(crate) st: &'a mut PassState,
}

impl<'a> Ctx<'a> {
    pub(crate) fn pass<'s>(&self, st: &'s PassState) -> Pass<'s>
    where
        'a: 's,
    {
        Pass {
            program: self.program,
            cost: self.cost,
            opts: self.opts,
            st,
        }
    }
    pub(crate) fn pass_mut<'s>(&self, st: &'s mut PassState) -> PassMut<'s>
    where
        'a: 's,
    {
        PassMut {
            program: self.program,
            cost: self.cost,
            opts: self.opts,
            st,
        }
    }
}

impl Pass<'_> {
    /// XLA's `CanAllocateInAlternateMemoryNoCopy` for a segment from `p` to use `u`.
    pub(crate) fn no_copy_ok(&self, p: OpId, u: OpId) -> bool {
        self.st.max_copy > self.st.timing.span(p + 1, u)
    }

    /// The last op the chunk of `o` would be held to if it were closed before op `next`:
    /// for a buffer defined in the level, XLA holds it until the preferred eviction end,
    /// the first op by which the copy has overlapped `preferred_overlap` x its time, but
    /// not past `next - 1`, never shorter than the uses served, and only as far as the
    /// same offset stays free.
    pub(crate) fn eviction_end(&self, b: BufferId, o: &Open, next: OpId) -> OpId {
        let size = self.program.buffer(b).size;
        let copy = self.cost.copy_s(b, self.st.level);
        let d = o.start;
        let latest = next - 1;
        let want = self.opts.picker.preferred_overlap * copy;
        let timing = &self.st.timing;
        // The overlap grows with the hold, and a longer extension fits only where a
        // shorter one does: both ends are binary searches.
        let preferred = first_true(d, latest + 1, |e| timing.span(d + 1, e + 1) >= want)
            .min(latest)
            .max(o.end);
        let from = o.end + 1;
        let fits = |e: OpId| self.st.heap.fits(from, e, o.offset, size);
        match first_true(from, preferred + 1, |e| !fits(e)).checked_sub(1) {
            Some(e) if e >= from => e,
            _ => o.end,
        }
    }

    /// The allocation the open chunk `o` of `c` becomes when it ends before op `next`,
    /// changing nothing: a prefetched chunk (or one level 0 also holds) as it is; a
    /// buffer only this level holds evicted right after its definition and held until
    /// [`Pass::eviction_end`]. Where a move said how the chunk ends ([`Cursor::until`]),
    /// it ends so, as far as the ops before `next` and the free offset allow; a buffer
    /// only this level holds is evicted all the same.
    pub(crate) fn closed(&self, c: &Cursor, o: &Open, next: OpId) -> Allocation {
        let mut a = o.allocation(self.st.level);
        let must_evict = o.arrival == Arrival::Defined && c.level0_from.is_none();
        match c.until {
            None if must_evict => {
                a.end = self.eviction_end(c.b, o, next);
                a.eviction = Some(o.start);
            }
            None => {}
            Some(h) => {
                a.end = self.held_until(c.b, o, h.end.min(next.saturating_sub(1)));
                if o.arrival == Arrival::Defined {
                    let asked = h.eviction.map(|e| e.clamp(o.start, a.end));
                    a.eviction = asked.or(must_evict.then_some(o.start));
                }
            }
        }
        a
    }

    /// The last op up to `want` that the open chunk `o` can be held through at its offset
    /// (never before the last use it serves).
    pub(crate) fn held_until(&self, b: BufferId, o: &Open, want: OpId) -> OpId {
        let size = self.program.buffer(b).size;
        let from = o.end + 1;
        if want < from {
            return o.end;
        }
        let fits = |e: OpId| self.st.heap.fits(from, e, o.offset, size);
        match first_true(from, want + 1, |e| !fits(e)).checked_sub(1) {
            Some(e) if e >= from => e,
            _ => o.end,
        }
    }
}

impl PassMut<'_> {
    pub(crate) fn view(&self) -> Pass<'_> {
        Pass {
            program: self.program,
            cost: self.cost,
            opts: self.opts,
            st: self.st,
        }
    }

    /// Commits a chunk the heap just offered. `None` (the buffer is then undone) only if
    /// the heap refuses it, which would be a bug here, not a reason to abort the run.
    fn commit(
        &mut self,
        txn: &mut Txn,
        start: OpId,
        end: OpId,
        offset: u64,
        size: u64,
    ) -> Option<()> {
        let id = self
            .st
            .heap
            .commit(Chunk {
                start,
                end,
                offset,
                size,
            })
            .ok()?;
        if txn.record {
            txn.chunks.push(id);
        }
        Some(())
    }

    /// Places buffer `b` in this pass's level, given the allocations earlier passes made,
    /// as XLA does: at each use, XLA's choice ([`crate::walk`]). Returns the new
    /// allocations (none if it failed and was undone), and whether a use found no chunk.
    pub(crate) fn place(
        &mut self,
        b: BufferId,
        prior: &[Allocation],
        budgets: &mut Budgets,
    ) -> (Vec<Allocation>, bool) {
        let mut txn = Txn {
            record: true,
            ..Txn::default()
        };
        let placed = self.place_inner(b, prior, budgets, &mut txn);
        let out_of_memory = txn.out_of_memory;
        let new = match placed {
            Some(allocs) => {
                if txn.budget.is_some() {
                    budgets.each(crate::copy_budget::CopyBudget::commit);
                }
                allocs
            }
            None => {
                for id in txn.chunks {
                    self.st.heap.remove(id);
                }
                if let Some(log_len) = txn.budget {
                    budgets.each(crate::copy_budget::CopyBudget::rollback);
                    budgets.log.truncate(log_len);
                }
                self.st.stats.undone += 1;
                Vec::new()
            }
        };
        (new, out_of_memory)
    }

    fn place_inner(
        &mut self,
        b: BufferId,
        prior: &[Allocation],
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<Vec<Allocation>> {
        let Some(mut c) = self.view().begin(b, prior) else {
            return Some(Vec::new());
        };
        loop {
            self.advance(&mut c, budgets, txn)?;
            if c.pending().is_none() {
                break;
            }
            self.xla_step(&mut c, budgets, txn)?;
        }
        Some(self.finish(c, budgets))
    }

    /// Processes the items that need no decision (an earlier pass's allocation, the
    /// program end of an output) up to the next use or the end. `None` if an eviction
    /// cannot be made.
    pub(crate) fn advance(
        &mut self,
        c: &mut Cursor,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        while let Some((time, item)) = c.item() {
            match item {
                Item::Use(_) | Item::Def => return Some(()),
                Item::Prior(a) => {
                    self.close_open(c, a.start, budgets, txn)?;
                    c.can_define = false;
                    if a.arrival == Arrival::Defined {
                        c.level0_from = a.eviction.map(|_| a.end + 1);
                    }
                    c.p = a.end;
                    c.seg_lo = a.end + 1;
                }
                Item::End => self.close_open(c, time, budgets, txn)?,
            }
            c.next += 1;
        }
        Some(())
    }

    /// Extends the open chunk through the pending use at the same offset (the caller
    /// checked that it fits).
    pub(crate) fn keep(&mut self, c: &mut Cursor, txn: &mut Txn) -> Option<()> {
        let size = self.program.buffer(c.b).size;
        let (u, _) = c.pending()?;
        let o = c.open.as_mut()?;
        let (s, off) = (o.end + 1, o.offset);
        o.end = u;
        self.commit(txn, s, u, off, size)
    }

    /// Writes the buffer into the level at `offset`, from its definition through the
    /// pending use (the caller checked that it fits).
    pub(crate) fn define(&mut self, c: &mut Cursor, offset: u64, txn: &mut Txn) -> Option<()> {
        let size = self.program.buffer(c.b).size;
        let (u, _) = c.pending()?;
        let d = c.p;
        self.commit(txn, d, u, offset, size)?;
        c.open = Some(Open {
            arrival: Arrival::Defined,
            start: d,
            end: u,
            offset,
        });
        c.until = None;
        c.level0_from = None;
        c.stats.defined += 1;
        Some(())
    }

    /// Prefetches the buffer from op `s` at `offset` for the pending use: the copy budget
    /// takes the copy (the caller checked that it fits, unless `must_fit` is false: a copy
    /// XLA would not make, which the budget then does not carry) and the chunk is
    /// committed.
    pub(crate) fn prefetch_at(
        &mut self,
        c: &mut Cursor,
        (s, offset): (OpId, u64),
        must_fit: bool,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        let size = self.program.buffer(c.b).size;
        let (u, _) = c.pending()?;
        let copy = self.cost.copy_s(c.b, self.st.level);
        if !budgets.try_copy(txn, false, s, u, copy) && must_fit {
            return None;
        }
        self.commit(txn, s, u, offset, size)?;
        c.open = Some(Open {
            arrival: Arrival::Prefetch,
            start: s,
            end: u,
            offset,
        });
        c.until = None;
        c.stats.prefetches += 1;
        Some(())
    }

    /// Ends the open allocation, if any, before op `next`.
    pub(crate) fn close_open(
        &mut self,
        c: &mut Cursor,
        next: OpId,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        if let Some(o) = c.open.take() {
            let closed = self.close(c, o, next, budgets, txn)?;
            c.out.push(closed);
        }
        Some(())
    }

    /// Ends the open allocation before op `next` (the next use read elsewhere, an earlier
    /// pass's allocation, or the program end). A buffer defined in the level is evicted;
    /// `None` if the eviction cannot be made.
    fn close(
        &mut self,
        c: &mut Cursor,
        o: Open,
        next: OpId,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<Allocation> {
        let a = self.view().closed(c, &o, next);
        c.until = None;
        self.settle_closed(c, &o, a, budgets, txn)
    }

    /// Commits what closing `o` as `a` adds: the hold past its last use, and the eviction.
    fn settle_closed(
        &mut self,
        c: &mut Cursor,
        o: &Open,
        a: Allocation,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<Allocation> {
        let size = self.program.buffer(c.b).size;
        if a.end > o.end {
            self.commit(txn, o.end + 1, a.end, o.offset, size)?;
        }
        let Some(e) = a.eviction else {
            return Some(a);
        };
        let copy = self.cost.copy_s(c.b, self.st.level);
        if !budgets.try_copy(txn, true, e + 1, a.end + 1, copy) {
            match self.opts.eviction_over_budget {
                EvictionOverBudget::Free => c.stats.evictions_over_budget += 1,
                EvictionOverBudget::Refuse => return None,
            }
        }
        c.level0_from = Some(a.end + 1);
        c.stats.evictions += 1;
        Some(a)
    }

    /// Writes the buffer into the level at `offset` from its definition and ends that
    /// chunk as `hold` says, before the pending use (which reads elsewhere): a chunk that
    /// serves no use, made for the faster write. Only before the buffer's first segment
    /// ends; the caller checked that it fits and ends before the use. `None` if not.
    pub(crate) fn write_before(
        &mut self,
        c: &mut Cursor,
        offset: u64,
        hold: Hold,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        let (u, _) = c.pending()?;
        let d = c.p;
        if c.open.is_some() || !c.can_define || hold.end >= u || hold.end < d {
            return None;
        }
        let size = self.program.buffer(c.b).size;
        self.commit(txn, d, d, offset, size)?;
        let o = Open {
            arrival: Arrival::Defined,
            start: d,
            end: d,
            offset,
        };
        c.level0_from = None;
        c.stats.defined += 1;
        c.until = Some(hold);
        let a = self.view().closed(c, &o, u);
        c.until = None;
        let a = self.settle_closed(c, &o, a, budgets, txn)?;
        c.out.push(a);
        c.can_define = false;
        c.seg_lo = c.seg_lo.max(a.end + 1);
        Some(())
    }

    /// The buffer's allocations of this pass once its items are done: the open one stays
    /// in the level after its last use, with no eviction needed (an output was closed at
    /// its End item), or as a move said it ends. What the buffer's turn did joins the
    /// pass's stats.
    pub(crate) fn finish(&mut self, mut c: Cursor, budgets: &mut Budgets) -> Vec<Allocation> {
        if let (Some(o), Some(h)) = (c.open, c.until.take()) {
            c.open = None;
            let live_end = self.program.live_range(c.b).1;
            let mut a = o.allocation(self.st.level);
            a.end = self.view().held_until(c.b, &o, h.end.min(live_end));
            if o.arrival == Arrival::Defined {
                a.eviction = h.eviction.map(|e| e.clamp(o.start, a.end));
            }
            // Nothing of the pass is undone once the buffer is done: a refusal leaves
            // the chunk as it stood.
            let a = self
                .settle_closed(&mut c, &o, a, budgets, &mut Txn::none())
                .unwrap_or(o.allocation(self.st.level));
            c.out.push(a);
        }
        let (s, mine) = (&mut self.st.stats, &c.stats);
        s.defined += mine.defined;
        s.prefetches += mine.prefetches;
        s.evictions += mine.evictions;
        s.evictions_over_budget += mine.evictions_over_budget;
        if let Some(a) = c.open_allocation(self.st.level) {
            c.out.push(a);
        }
        c.out
    }
}
