//! The `xla` baseline: XLA's memory space assignment (MSA), re-implemented in our timing
//! conventions (accel-sim/src/mapping.rs) and described in docs/xla-msa.md.
//!
//! The pipeline, per fast level (see "Multi-level hardware" below):
//! 1. Order the buffers by ascending `(-memory_boundedness, -size, start - end,
//!    latest_use, start, id)` ([`xla_order`]).
//! 2. For each buffer, walk its uses in time order. Each use closes a *segment* that starts
//!    at the previous use (or the definition). For each segment:
//!    - **no-copy**: if the buffer is already in the fast level (or this is its first
//!      segment and it has a defining op) and the picker allows no-copy over the segment,
//!      extend the chunk at the same offset (for the first segment: best fit, choosing the
//!      offset that is free as far as the latest later use the buffer could also reach
//!      without a copy, as XLA's `FindBestChunkCandidate` does);
//!    - otherwise, if the buffer was defined in the fast level and level 0 has no copy of
//!      it: an **eviction**, issued after the definition, holding the chunk until the
//!      copy is done (extended towards the picker's preferred eviction end where the same
//!      offset is free);
//!    - then a **prefetch** for the use, trying the picker's start times from the
//!      preferred one, alternately later and earlier, the first with a best-fit chunk and
//!      copy budget winning;
//!    - else the use reads level 0.
//!
//!    If an eviction cannot be made, the buffer's pending chunks and copies are undone
//!    and it stays in level 0.
//!
//! Our conventions versus XLA's logical times: XLA's prefetch starting after instruction
//! `t` overlaps the instructions strictly between `t` and the use; ours starts when op `s`
//! begins and overlaps ops `s..u`, so `s = t + 1` and XLA's `interval(t, u)` is
//! `span_s(s, u)`. No-copy over a segment `[p, u]` compares `span_s(p + 1, u)` (the ops
//! strictly between). An eviction issued after the defining op `d` and held until op `E`
//! overlaps ops `d+1..=E` and must be done before op `E + 1`, which reads level 0.
//!
//! Choices where XLA's behaviour is unclear, each as XLA most plausibly makes it (listed in
//! docs/xla-msa.md, "Choices where XLA's behaviour is unclear"):
//! - A prefetch for a use starts no earlier than the op after the previous use (XLA's
//!   segment starts there: `inclusive_start_time`), nor before level 0 holds the data.
//! - Weights and inputs (XLA's entry parameters, defined at the program start) can be
//!   prefetched from op 0; they are never written into a fast level.
//! - A buffer is written into the fast level only by a successful no-copy of its first
//!   segment; if that fails, it is defined in level 0 and its uses may be prefetched.
//! - An eviction is issued right after the definition (XLA's `eviction_start_time` is the
//!   allocation's start). It never fails for space, since its hold up to the last use
//!   served is already reserved; only the copy budget can refuse it
//!   ([`EvictionOverBudget`]).
//! - An output's program end acts as a use that must read level 0.
//! - The picker and the budget use all-level-0 elapsed times (XLA's
//!   `GetInstructionElapsed`); a use's own saving (`red`) assumes everything else of the
//!   op in level 0.
//! - XLA's compile-time shortcut (exploring only a fixed number of earlier starts once the
//!   later ones run out) is left out: every start in the picker's window is tried.
//!
//! Multi-level hardware: XLA has one alternate memory. We run the algorithm with the
//! fastest level as the alternate memory, then (option [`XlaOptions::cascade`], on by
//! default) again for each slower fast level, fastest first, over the uses still read from
//! level 0. A later pass treats the earlier passes' allocations of a buffer as fixed: its
//! own allocations must end before them (with an eviction if level 0 must hold the data
//! when an earlier pass's prefetch starts) and start after them. All passes draw on one
//! copy budget, since every copy moves level-0 bytes. A later pass plans with the op times
//! under the mapping so far ([`CascadeTiming::Current`]): ops that now read a faster level
//! are shorter and hide less copy time, so its picker and budget use those times, with the
//! copies already made replayed into the budget.

use crate::copy_budget::CopyBudget;
use crate::heap::{pack_decreasing_size, Chunk, ChunkHeap, ChunkId, TopGap};
use crate::picker::{first_true, PickerConfig, PrefetchWindow};
use crate::Solver;
use accel_sim::{
    Allocation, Arrival, BufferId, BufferKind, BufferPlacement, CostModel, CostState, Hardware,
    Mapping, OpId, Program,
};

/// What to do with an eviction that the copy budget cannot carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EvictionOverBudget {
    /// Make it anyway, charging nothing. XLA does this on its last retry ("violates
    /// resource in last retry, setting resource = 0"), and with the default single try
    /// (`max_retries = 1`) every try is the last.
    #[default]
    Free,
    /// Refuse it: the buffer's pending chunks are undone and it stays in level 0.
    Refuse,
}

/// The knobs of the `xla` baseline. The defaults are XLA's where XLA has them.
#[derive(Clone, Debug, PartialEq)]
pub struct XlaOptions {
    /// The prefetch interval picker's overlap ratios. A prefetch must overlap at least
    /// `min_overlap` x its copy time (plus the use's own saving): that fixes the latest
    /// start; the search begins at the start closest to `preferred_overlap` x the copy
    /// time; neither a prefetch's overlap nor a no-copy segment may exceed `max_overlap`
    /// x the time to copy the whole level (`max_copy`).
    pub picker: PickerConfig,
    /// Enforce the asynchronous-copy budget (each op carries copy work up to its elapsed
    /// time, FIFO).
    pub copy_budget: bool,
    /// Prefetches and evictions draw on separate budgets, as XLA keeps
    /// `prefetch_async_copy_resource_` and `eviction_async_copy_resource_`.
    pub separate_eviction_budget: bool,
    /// What to do with an eviction the copy budget cannot carry.
    pub eviction_over_budget: EvictionOverBudget,
    /// How the gap above the highest overlapping chunk counts in best fit
    /// (docs/xla-msa.md, "Best-fit placement"). The default sizes it to the capacity; XLA's
    /// growing heap sizes it to the current peak address ([`TopGap::Peak`]).
    pub top_gap: TopGap,
    /// Run again for each slower fast level over the uses left in level 0.
    pub cascade: bool,
    /// At most this many fast levels, fastest first (`None`: every one the cascade
    /// reaches): the xla mapping a game over fewer levels can hold.
    pub max_levels: Option<usize>,
    /// Which op times a cascade pass after the first plans with.
    pub cascade_timing: CascadeTiming,
    /// XLA's `max_repacks`: when a buffer finds no chunk for a use (out of memory), the
    /// level's allocations so far are re-packed (new offsets, same live ranges; decreasing
    /// size best fit, XLA's `MemorySpaceAssignmentBestFitRepacker`) and the buffer tried
    /// again, at most this many times per level. 0 (the `xla` solver) never re-packs;
    /// `xla-repack` uses [`DEFAULT_MAX_REPACKS`].
    pub max_repacks: usize,
}

/// The re-packs `xla-repack` allows per level.
pub const DEFAULT_MAX_REPACKS: usize = 1_000_000;

/// The op times (elapsed) that a later cascade pass feeds its picker and copy budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CascadeTiming {
    /// The times under the mapping the earlier passes made: ops that now read the faster
    /// level are shorter and hide less copy time. The copies already made are replayed
    /// into budgets rebuilt from these times.
    #[default]
    Current,
    /// Every pass uses the all-level-0 times, as XLA's single pass does.
    Default,
}

impl Default for XlaOptions {
    fn default() -> Self {
        XlaOptions {
            picker: PickerConfig::default(),
            copy_budget: true,
            separate_eviction_budget: true,
            eviction_over_budget: EvictionOverBudget::Free,
            top_gap: TopGap::Capacity,
            cascade: true,
            max_levels: None,
            cascade_timing: CascadeTiming::Current,
            max_repacks: 0,
        }
    }
}

/// What one pass (one fast level) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XlaPassStats {
    pub level: usize,
    /// Buffers written into the level by their defining op.
    pub defined: usize,
    pub prefetches: usize,
    pub evictions: usize,
    /// Evictions made although the copy budget could not carry them.
    pub evictions_over_budget: usize,
    /// Buffers whose pending chunks were undone.
    pub undone: usize,
    /// Re-packs of the level's offsets that let a buffer be tried again.
    pub repacks: usize,
}

/// A mapping with what each pass did.
#[derive(Clone, Debug)]
pub struct XlaSolution {
    pub mapping: Mapping,
    /// One per pass, fastest level first.
    pub passes: Vec<XlaPassStats>,
}

/// The `xla` solver.
#[derive(Clone, Debug, Default)]
pub struct Xla {
    pub options: XlaOptions,
}

impl Xla {
    pub fn new(options: XlaOptions) -> Xla {
        Xla { options }
    }

    /// Runs the algorithm; the mapping is valid by construction (the tests check it on
    /// random programs).
    pub fn solve_detailed(&self, program: &Program, hw: &Hardware) -> XlaSolution {
        let cost = CostModel::new(program, hw);
        let t_count = program.len();
        let n = program.buffers().len();
        let mut allocs: Vec<Vec<Allocation>> = vec![Vec::new(); n];
        let default_mem: Vec<f64> = (0..t_count).map(|t| cost.default_mem_s(t)).collect();
        let mut budgets = Budgets::new(&self.options, &Timing::new(&cost, default_mem.clone()));
        let fastest = hw.fastest();
        let levels = pass_levels(&self.options, fastest);
        let mut passes = Vec::new();
        for level in levels {
            // A level the heap cannot model (zero capacity, bad alignment in a hand-built
            // config) is skipped: its buffers stay where the other passes put them.
            let Ok(heap) = ChunkHeap::for_level(hw, level, t_count) else {
                continue;
            };
            let timing =
                if passes.is_empty() || self.options.cascade_timing == CascadeTiming::Default {
                    Timing::new(&cost, default_mem.clone())
                } else {
                    let current = Mapping {
                        buffers: allocs
                            .iter()
                            .map(|a| BufferPlacement {
                                allocations: a.clone(),
                            })
                            .collect(),
                    };
                    let state = CostState::from_mapping(&cost, &current);
                    let timing = Timing::new(&cost, (0..t_count).map(|t| state.mem_s(t)).collect());
                    budgets = budgets.replayed(&self.options, &timing);
                    timing
                };
            let mut state = PassState {
                level,
                max_copy: self.options.picker.max_copy_s(hw, level),
                heap,
                timing: std::sync::Arc::new(timing),
                stats: XlaPassStats {
                    level,
                    ..Default::default()
                },
            };
            let mut pass = Pass {
                program,
                cost: &cost,
                opts: &self.options,
                st: &mut state,
            };
            let mut repacks_left = self.options.max_repacks;
            for b in xla_order(program, &cost, level) {
                let mut new = pass.place_repacking(b, &mut allocs, &mut budgets, &mut repacks_left);
                if !new.is_empty() {
                    allocs[b].append(&mut new);
                    allocs[b].sort_by_key(|a| a.start);
                }
            }
            passes.push(state.stats);
        }
        XlaSolution {
            mapping: Mapping {
                buffers: allocs
                    .into_iter()
                    .map(|allocations| BufferPlacement { allocations })
                    .collect(),
            },
            passes,
        }
    }
}

impl Solver for Xla {
    fn name(&self) -> &str {
        if self.options.max_repacks > 0 {
            "xla-repack"
        } else {
            "xla"
        }
    }
    fn solve(&self, program: &Program, hw: &Hardware) -> Mapping {
        crate::ensure_valid(program, hw, self.solve_detailed(program, hw).mapping)
    }
}

/// XLA's buffer order for placing into `level`: ascending
/// `(-memory_boundedness, -size, start - end, latest_use, start, id)`, i.e. most
/// memory-bound first, then larger, then longer-lived. `latest_use` of a buffer with no use
/// is its live-range end.
pub fn xla_order(program: &Program, cost: &CostModel, level: usize) -> Vec<BufferId> {
    let key = |b: BufferId| {
        let (s, e) = program.live_range(b);
        let latest = program.uses(b).last().copied().unwrap_or(e);
        (
            cost.memory_boundedness(b, level),
            std::cmp::Reverse(program.buffer(b).size),
            std::cmp::Reverse(e - s),
            latest,
            s,
            b,
        )
    };
    // Keys computed once (not per comparison); the id makes the order total, so any sort
    // gives the same one.
    let mut keyed: Vec<_> = (0..program.buffers().len()).map(key).collect();
    keyed.sort_unstable_by(|x, y| {
        y.0.total_cmp(&x.0)
            .then_with(|| (x.1, x.2, x.3, x.4, x.5).cmp(&(y.1, y.2, y.3, y.4, y.5)))
    });
    keyed.into_iter().map(|k| k.5).collect()
}

/// The hardware levels the passes fill, in order: the fastest first, then (with the
/// cascade) each slower fast level, at most `max_levels` of them.
pub fn pass_levels(options: &XlaOptions, fastest: usize) -> Vec<usize> {
    let count = if options.cascade { fastest } else { 1 };
    let count = options.max_levels.map_or(count, |m| count.min(m));
    (1..=fastest).rev().take(count).collect()
}

/// Per-op times a pass plans with: the op's memory time under the mapping so far, its
/// elapsed time `max(compute, mem)` and their prefix sums.
#[derive(Debug)]
pub struct Timing {
    pub mem: Vec<f64>,
    pub elapsed: Vec<f64>,
    /// `cum[t]` = elapsed time of ops `0..t`.
    cum: Vec<f64>,
}

impl Timing {
    pub fn new(cost: &CostModel, mem: Vec<f64>) -> Timing {
        let elapsed: Vec<f64> = mem
            .iter()
            .enumerate()
            .map(|(t, &m)| cost.compute_s(t).max(m))
            .collect();
        let mut cum = Vec::with_capacity(elapsed.len() + 1);
        cum.push(0.0);
        for e in &elapsed {
            cum.push(cum.last().copied().unwrap_or(0.0) + e);
        }
        Timing { mem, elapsed, cum }
    }
    /// Elapsed time of ops `s..e` (half-open).
    pub fn span(&self, s: OpId, e: OpId) -> f64 {
        if e <= s {
            0.0
        } else {
            self.cum[e] - self.cum[s]
        }
    }
}

/// A copy the budgets carry: (eviction?, first op, end op (exclusive), seconds).
type LoggedCopy = (bool, OpId, OpId, f64);

#[derive(Clone, Debug)]
pub struct Budgets {
    prefetch: CopyBudget,
    /// `None`: evictions share the prefetch budget.
    eviction: Option<CopyBudget>,
    enabled: bool,
    /// Every copy charged so far, for rebuilding the budgets on new op times.
    /// Persistent, as the budgets' queues are: a game state clones in `O(1)`.
    log: imbl::Vector<LoggedCopy>,
}

impl Budgets {
    pub fn new(opts: &XlaOptions, timing: &Timing) -> Budgets {
        Budgets {
            prefetch: CopyBudget::new(&timing.elapsed),
            eviction: opts
                .separate_eviction_budget
                .then(|| CopyBudget::new(&timing.elapsed)),
            enabled: opts.copy_budget,
            log: imbl::Vector::new(),
        }
    }

    /// Budgets over `timing` already carrying the logged copies, in FIFO order, each
    /// charged what its window still has.
    pub fn replayed(self, opts: &XlaOptions, timing: &Timing) -> Budgets {
        let mut fresh = Budgets::new(opts, timing);
        let mut log: Vec<LoggedCopy> = self.log.into_iter().collect();
        log.sort_by_key(|c| (c.1, c.2));
        for &(eviction, lo, hi, amount) in &log {
            match (&mut fresh.eviction, eviction) {
                (Some(e), true) => e.push_clipped(lo, hi, amount),
                _ => fresh.prefetch.push_clipped(lo, hi, amount),
            }
        }
        fresh.log = log.into_iter().collect();
        fresh
    }
}

/// What a buffer's turn has changed so far, to undo it on failure. A game never undoes
/// (its evictions are never refused), so it records nothing (`record` false): the budgets'
/// journals would otherwise grow for the whole episode.
#[derive(Default)]
pub struct Txn {
    record: bool,
    chunks: Vec<ChunkId>,
    /// A use found no chunk in the level (XLA's `kFailOutOfMemory`).
    out_of_memory: bool,
    /// Once a copy was tried: the budgets record their changes, and the log's length
    /// before the turn.
    budget: Option<usize>,
}

impl Txn {
    /// A transaction that records nothing.
    pub fn none() -> Txn {
        Txn::default()
    }
}

impl Budgets {
    fn each(&mut self, mut f: impl FnMut(&mut CopyBudget)) {
        f(&mut self.prefetch);
        if let Some(e) = self.eviction.as_mut() {
            f(e);
        }
    }

    /// Whether a prefetch of `amount` seconds beside ops `lo..hi` fits, changing nothing.
    pub fn prefetch_fits(&self, lo: OpId, hi: OpId, amount: f64) -> bool {
        !self.enabled || self.prefetch.fits(lo, hi, amount)
    }
}

/// A buffer's next event in time.
#[derive(Clone, Copy, Debug)]
pub enum Item {
    /// A use still read from level 0.
    Use(OpId),
    /// An allocation made by an earlier (faster) pass.
    Prior(Allocation),
    /// The program end, for an output: it must be in level 0 by then.
    End,
}

/// The allocation being built in this pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    pub arrival: Arrival,
    pub start: OpId,
    pub end: OpId,
    pub offset: u64,
}

impl Open {
    /// The chunk as an allocation in `level`, as it stands (no eviction).
    pub fn allocation(&self, level: usize) -> Allocation {
        Allocation {
            level,
            offset: self.offset,
            start: self.start,
            end: self.end,
            arrival: self.arrival,
            eviction: None,
        }
    }
}

/// One pass's own state: its level, the heap of that level, the op times it plans with
/// and what it did. Shared through [`Pass`] by the baseline and by the game.
#[derive(Clone, Debug)]
pub struct PassState {
    pub level: usize,
    pub max_copy: f64,
    pub heap: ChunkHeap,
    pub timing: std::sync::Arc<Timing>,
    pub stats: XlaPassStats,
}

/// Where one buffer stands in one pass: its events, what it holds and what it has closed.
/// The baseline walks it in one go; the game stops at each use for a decision.
#[derive(Clone, Debug)]
pub struct Cursor {
    pub b: BufferId,
    items: Vec<(OpId, Item)>,
    reach: Vec<usize>,
    /// The next item to process.
    next: usize,
    /// The allocations this pass has closed.
    pub out: Vec<Allocation>,
    /// From which op level 0 holds the data (None: only the fast level has it).
    pub level0_from: Option<OpId>,
    /// The earliest start of a prefetch for the next segment: after the previous use
    /// (XLA's `inclusive_start_time`) and after any earlier allocation of the buffer.
    pub seg_lo: OpId,
    /// The start of the current segment: the definition, then the previous use.
    pub p: OpId,
    /// Only the first segment may write the buffer into the level, and only if no
    /// earlier pass did and it has a defining op.
    pub can_define: bool,
    pub open: Option<Open>,
    stats: XlaPassStats,
}

impl Cursor {
    /// The use waiting for a decision, with the items a chunk for it could reach without
    /// a copy (`[0]` is the use itself).
    pub fn pending(&self) -> Option<(OpId, &[(OpId, Item)])> {
        match self.items.get(self.next)? {
            &(u, Item::Use(_)) => Some((u, &self.items[self.next..=self.reach[self.next]])),
            _ => None,
        }
    }

    /// How far the cursor has gone through its items (changes whenever it moves on).
    pub fn progress_mark(&self) -> usize {
        self.next
    }

    /// The uses decided so far and the uses in all, among this pass's items.
    pub fn progress(&self) -> (usize, usize) {
        let is_use = |x: &&(OpId, Item)| matches!(x.1, Item::Use(_));
        let done = self.items[..self.next].iter().filter(is_use).count();
        (done, self.items.iter().filter(is_use).count())
    }

    /// The open allocation as an allocation in `level`, as it stands (no eviction yet).
    pub fn open_allocation(&self, level: usize) -> Option<Allocation> {
        self.open.map(|o| o.allocation(level))
    }
}

pub struct Pass<'a> {
    pub program: &'a Program,
    pub cost: &'a CostModel,
    pub opts: &'a XlaOptions,
    pub st: &'a mut PassState,
}

impl Pass<'_> {
    /// XLA's `CanAllocateInAlternateMemoryNoCopy` for a segment from `p` to use `u`.
    pub fn no_copy_ok(&self, p: OpId, u: OpId) -> bool {
        self.st.max_copy > self.st.timing.span(p + 1, u)
    }

    fn items(&self, b: BufferId, prior: &[Allocation]) -> Vec<(OpId, Item)> {
        // `prior` is sorted by start and its holds are disjoint (a valid placement), so
        // one pointer walks it beside the uses.
        let mut k = 0;
        let mut held = |u: OpId| {
            while prior.get(k).is_some_and(|a| a.end < u) {
                k += 1;
            }
            prior.get(k).is_some_and(|a| a.start <= u)
        };
        let mut items: Vec<(OpId, Item)> = self
            .program
            .uses(b)
            .iter()
            .filter(|&&u| !held(u))
            .map(|&u| (u, Item::Use(u)))
            .collect();
        items.extend(prior.iter().map(|a| (a.start, Item::Prior(*a))));
        if self.program.buffer(b).kind == BufferKind::Output {
            items.push((self.program.len(), Item::End));
        }
        items.sort_by_key(|x| x.0);
        items
    }

    /// For each item, the last index of the run of items the buffer could reach from it
    /// without a copy: from a use, the consecutive uses after it, each segment allowed by
    /// no-copy, no earlier-pass allocation between. `items[i..=reach[i]]` are the end
    /// times XLA's `FindBestChunkCandidate` tries for the use at `i`. One backward pass,
    /// where collecting each run afresh cost the square of a buffer's uses.
    fn reach_ends(&self, items: &[(OpId, Item)]) -> Vec<usize> {
        let mut reach: Vec<usize> = (0..items.len()).collect();
        for i in (1..items.len()).rev() {
            if let (Item::Use(a), Item::Use(c)) = (items[i - 1].1, items[i].1) {
                if self.no_copy_ok(a, c) {
                    reach[i - 1] = reach[i];
                }
            }
        }
        reach
    }

    /// XLA's `FindBestChunkCandidate` without a preferred offset: the best-fit offset for
    /// `[start, ends[k]]` with the largest `k` that fits (fitting is monotone in `k`, so a
    /// binary search finds it).
    pub fn best_chunk(&self, start: OpId, ends: &[(OpId, Item)], size: u64) -> Option<u64> {
        let fit = |k: usize| {
            self.st
                .heap
                .best_fit(start, ends[k].0, size, None, self.opts.top_gap)
        };
        let mut best = fit(0)?;
        let (mut lo, mut hi) = (0, ends.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            match fit(mid) {
                Some(o) => {
                    lo = mid;
                    best = o;
                }
                None => hi = mid,
            }
        }
        Some(best)
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

    fn try_copy(
        &self,
        budgets: &mut Budgets,
        txn: &mut Txn,
        eviction: bool,
        lo: OpId,
        hi: OpId,
        amount: f64,
    ) -> bool {
        if !budgets.enabled {
            return true;
        }
        if txn.record && txn.budget.is_none() {
            budgets.each(CopyBudget::begin);
            txn.budget = Some(budgets.log.len());
        }
        let budget = match (&mut budgets.eviction, eviction) {
            (Some(e), true) => e,
            _ => &mut budgets.prefetch,
        };
        let ok = budget.try_add(lo, hi, amount);
        if ok {
            budgets.log.push_back((eviction, lo, hi, amount));
        }
        ok
    }

    /// Places buffer `b` in this pass's level, given the allocations earlier passes made.
    /// Returns the new allocations (none if it failed and was undone).
    /// [`Pass::place`], and while re-packs are left, a placement that ran out of memory is
    /// undone, the level's allocations so far (in `allocs`) are re-packed, and the buffer
    /// is placed again (XLA's retry after `Repack`). A re-pack that cannot fit them all
    /// changes nothing and keeps the first placement, as XLA ignores a failed one.
    fn place_repacking(
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
            let Some(heap) = self.repacked(allocs) else {
                return new;
            };
            (*budgets, self.st.stats) = before;
            self.st.heap = heap;
            self.st.stats.repacks += 1;
        }
    }

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

    /// Places buffer `b` in this pass's level, given the allocations earlier passes made.
    /// Returns the new allocations (none if it failed and was undone), and whether a use
    /// found no chunk.
    fn place(
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
                    budgets.each(CopyBudget::commit);
                }
                allocs
            }
            None => {
                for id in txn.chunks {
                    self.st.heap.remove(id);
                }
                if let Some(log_len) = txn.budget {
                    budgets.each(CopyBudget::rollback);
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
        let Some(mut c) = self.begin(b, prior) else {
            return Some(Vec::new());
        };
        loop {
            self.advance(&mut c, budgets, txn)?;
            if c.pending().is_none() {
                break;
            }
            self.xla_step(&mut c, budgets, txn)?;
        }
        Some(self.finish(c))
    }

    /// The cursor of buffer `b` at its first item; `None` when the buffer cannot be in
    /// this level at all (larger than it).
    pub fn begin(&self, b: BufferId, prior: &[Allocation]) -> Option<Cursor> {
        let program = self.program;
        if program.buffer(b).size > self.st.heap.capacity() {
            return None;
        }
        let def = program.def(b);
        let items = self.items(b, prior);
        let reach = self.reach_ends(&items);
        Some(Cursor {
            b,
            items,
            reach,
            next: 0,
            out: Vec::new(),
            level0_from: Some(def.map_or(0, |d| d + 1)),
            seg_lo: def.map_or(0, |d| d + 1),
            p: def.unwrap_or(0),
            can_define: def.is_some(),
            open: None,
            stats: XlaPassStats::default(),
        })
    }

    /// Processes the items that need no decision (an earlier pass's allocation, the
    /// program end of an output) up to the next use or the end. `None` if an eviction
    /// cannot be made.
    pub fn advance(&mut self, c: &mut Cursor, budgets: &mut Budgets, txn: &mut Txn) -> Option<()> {
        while let Some(&(time, item)) = c.items.get(c.next) {
            match item {
                Item::Use(_) => return Some(()),
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

    /// XLA's decision for the pending use: keep the chunk through it, write the buffer
    /// into the level, or end the chunk (evicting it) and prefetch for the use, else the
    /// use reads level 0.
    fn xla_step(&mut self, c: &mut Cursor, budgets: &mut Budgets, txn: &mut Txn) -> Option<()> {
        let size = self.program.buffer(c.b).size;
        let (u, ends) = c.pending()?;
        let mut served = false;
        let mut no_chunk = false;
        if self.no_copy_ok(c.p, u) {
            if let Some(o) = c.open {
                if self.st.heap.fits(o.end + 1, u, o.offset, size) {
                    self.keep(c, txn)?;
                    served = true;
                }
            } else if c.can_define {
                if let Some(off) = self.best_chunk(c.p, ends, size) {
                    self.define(c, off, txn)?;
                    served = true;
                } else {
                    no_chunk = true;
                }
            }
        }
        if !served {
            self.close_open(c, u, budgets, txn)?;
            if let Some(v) = c.level0_from {
                let lo = v.max(c.seg_lo);
                let (_, ends) = c.pending()?;
                if let Some((s, off)) = self.prefetch_search(c.b, lo, ends, budgets) {
                    self.prefetch_at(c, (s, off), true, budgets, txn)?;
                    served = true;
                } else if self.opts.max_repacks > 0 {
                    // Out of memory, not of copy budget: even the shortest prefetch the
                    // picker allows finds no chunk.
                    let latest = self.window(c.b, lo, u).map(|w| w.latest);
                    no_chunk |= latest.is_some_and(|s| self.best_chunk(s, ends, size).is_none());
                }
            }
        }
        txn.out_of_memory |= !served && no_chunk;
        self.end_use(c);
        Some(())
    }

    /// Extends the open chunk through the pending use at the same offset (the caller
    /// checked that it fits).
    pub fn keep(&mut self, c: &mut Cursor, txn: &mut Txn) -> Option<()> {
        let size = self.program.buffer(c.b).size;
        let (u, _) = c.pending()?;
        let o = c.open.as_mut()?;
        let (s, off) = (o.end + 1, o.offset);
        o.end = u;
        self.commit(txn, s, u, off, size)
    }

    /// Writes the buffer into the level at `offset`, from its definition through the
    /// pending use (the caller checked that it fits).
    pub fn define(&mut self, c: &mut Cursor, offset: u64, txn: &mut Txn) -> Option<()> {
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
        c.level0_from = None;
        c.stats.defined += 1;
        Some(())
    }

    /// Prefetches the buffer from op `s` at `offset` for the pending use: the copy budget
    /// takes the copy (the caller checked that it fits, unless `must_fit` is false: a copy
    /// XLA would not make, which the budget then does not carry) and the chunk is
    /// committed.
    pub fn prefetch_at(
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
        if !self.try_copy(budgets, txn, false, s, u, copy) && must_fit {
            return None;
        }
        self.commit(txn, s, u, offset, size)?;
        c.open = Some(Open {
            arrival: Arrival::Prefetch,
            start: s,
            end: u,
            offset,
        });
        c.stats.prefetches += 1;
        Some(())
    }

    /// Done with the pending use: the next segment starts there.
    pub fn end_use(&self, c: &mut Cursor) {
        if let Some((u, _)) = c.pending() {
            c.can_define = false;
            c.p = u;
            c.seg_lo = u + 1;
            c.next += 1;
        }
    }

    /// Ends the open allocation, if any, before op `next`.
    pub fn close_open(
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

    /// The buffer's allocations of this pass once its items are done: the open one stays
    /// in the level after its last use, with no eviction needed (an output was closed at
    /// its End item). What the buffer's turn did joins the pass's stats.
    pub fn finish(&mut self, mut c: Cursor) -> Vec<Allocation> {
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

    /// The last op the chunk of `o` would be held to if it were closed before op `next`:
    /// for a buffer defined in the level, XLA holds it until the preferred eviction end,
    /// the first op by which the copy has overlapped `preferred_overlap` x its time, but
    /// not past `next - 1`, never shorter than the uses served, and only as far as the
    /// same offset stays free.
    pub fn eviction_end(&self, b: BufferId, o: &Open, next: OpId) -> OpId {
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
        let a = self.closed(c, &o, next);
        let Some(d) = a.eviction else {
            return Some(a);
        };
        let size = self.program.buffer(c.b).size;
        let copy = self.cost.copy_s(c.b, self.st.level);
        if a.end > o.end {
            self.commit(txn, o.end + 1, a.end, o.offset, size)?;
        }
        if !self.try_copy(budgets, txn, true, d + 1, a.end + 1, copy) {
            match self.opts.eviction_over_budget {
                EvictionOverBudget::Free => c.stats.evictions_over_budget += 1,
                EvictionOverBudget::Refuse => return None,
            }
        }
        c.level0_from = Some(a.end + 1);
        c.stats.evictions += 1;
        Some(a)
    }

    /// The allocation the open chunk `o` of `c` becomes when it ends before op `next`,
    /// changing nothing: a prefetched chunk (or one level 0 also holds) as it is; a
    /// buffer only this level holds evicted right after its definition and held until
    /// [`Pass::eviction_end`].
    pub fn closed(&self, c: &Cursor, o: &Open, next: OpId) -> Allocation {
        let mut a = o.allocation(self.st.level);
        if o.arrival == Arrival::Defined && c.level0_from.is_none() {
            a.end = self.eviction_end(c.b, o, next);
            a.eviction = Some(o.start);
        }
        a
    }

    /// The picker's window for a prefetch of `b` for use `u` with level 0 holding the
    /// data from op `lo`, under this pass's op times; `None` when XLA would make none.
    pub fn window(&self, b: BufferId, lo: OpId, u: OpId) -> Option<PrefetchWindow> {
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
    pub fn earliest_start(&self, lo: OpId, u: OpId) -> OpId {
        let timing = &self.st.timing;
        first_true(lo, u, |s| timing.span(s, u) <= self.st.max_copy)
    }

    /// XLA's prefetch with the cost-analysis interval picker: for the use `ends[0]`, with
    /// level 0 holding the data from op `lo`, the first start, from the preferred one
    /// alternately later and earlier, with a best-fit chunk and room in the copy budget.
    /// Returns the start and offset; changes nothing.
    pub fn prefetch_search(
        &self,
        b: BufferId,
        lo: OpId,
        ends: &[(OpId, Item)],
        budgets: &Budgets,
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
            if oom.is_none_or(|m| s > m) {
                match self.best_chunk(s, ends, size) {
                    None => oom = Some(oom.map_or(s, |m| m.max(s))),
                    Some(off) => {
                        if budgets.prefetch_fits(s, u, copy) {
                            return Some((s, off));
                        }
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::{Buffer, Op};

    const MB: u64 = 1_000_000;

    /// Level 0 at 1 GB/s (1 MB = 1 ms), level 1 at 10 GB/s with `capacity` bytes and no
    /// alignment, 1 TFLOP/s (1e9 FLOP = 1 ms), no overheads: numbers easy to work by hand.
    fn hw(capacity: u64) -> Hardware {
        let mut hw = Hardware::tpu_v4i_like().with_capacity(1, capacity).unwrap();
        hw.levels[0].read_bw = 1e9;
        hw.levels[0].write_bw = 1e9;
        hw.levels[1].read_bw = 1e10;
        hw.levels[1].write_bw = 1e10;
        hw.levels[1].alignment = 1;
        hw.peak_flops = 1e12;
        hw.op_overhead_s = 0.0;
        hw.dma.setup_s = 0.0;
        hw
    }

    fn buf(name: &str, size: u64, kind: BufferKind) -> Buffer {
        Buffer {
            name: name.into(),
            size,
            kind,
        }
    }

    /// An op of `ms` milliseconds of compute.
    fn op(ms: f64, reads: &[usize], writes: &[usize]) -> Op {
        Op {
            name: format!("op{reads:?}{writes:?}"),
            kind: "t".into(),
            flops: ms * 1e9,
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }

    fn defined(offset: u64, start: OpId, end: OpId, eviction: Option<OpId>) -> Allocation {
        Allocation {
            level: 1,
            offset,
            start,
            end,
            arrival: Arrival::Defined,
            eviction,
        }
    }

    fn prefetch(offset: u64, start: OpId, end: OpId) -> Allocation {
        Allocation {
            level: 1,
            offset,
            start,
            end,
            arrival: Arrival::Prefetch,
            eviction: None,
        }
    }

    fn solve(p: &Program, hw: &Hardware, options: XlaOptions) -> XlaSolution {
        let sol = Xla::new(options).solve_detailed(p, hw);
        sol.mapping.validate(p, hw).unwrap();
        sol
    }

    #[test]
    fn order_best_fit_and_no_copy() {
        // op0 writes p (3 MB) and q (1 MB); op1 reads p; op2 writes r (1 MB); op3 reads q
        // and r. No FLOPs: every op is memory-bound, and each access moved to level 1
        // saves 0.9 ms per MB. Capacity 5 MB, so max_copy = 5 ms x 10 = 50 ms.
        let p = Program::new(
            "order",
            "",
            vec![
                buf("p", 3 * MB, BufferKind::Activation),
                buf("q", MB, BufferKind::Activation),
                buf("r", MB, BufferKind::Activation),
            ],
            vec![
                op(0.0, &[], &[0, 1]),
                op(0.0, &[0], &[]),
                op(0.0, &[], &[2]),
                op(0.0, &[1, 2], &[]),
            ],
        )
        .unwrap();
        let hw = hw(5 * MB);
        // Memory-boundedness: p (2.7 + 2.7 ms) / sqrt(3e6) = 3.1e-6; q and r
        // (0.9 + 0.9 ms) / sqrt(1e6) = 1.8e-6, tied on size; q lives longer, so it comes
        // first.
        let cost = CostModel::new(&p, &hw);
        assert_eq!(xla_order(&p, &cost, 1), vec![0, 1, 2]);
        // p: no-copy over [0, 1] (no op strictly between) -> best fit in the empty level:
        // offset 0. q: no-copy over [0, 3] (ops 1 and 2 between: 3 + 1 ms < 50 ms), beside
        // p -> the gap [3 MB, 5 MB): offset 3 MB. r over [2, 3], beside q only: gaps
        // [0, 3 MB) and [4 MB, 5 MB); best fit takes the smaller: 4 MB (first fit would
        // take 0). All uses are served: no evictions.
        let sol = solve(&p, &hw, XlaOptions::default());
        let m = &sol.mapping;
        assert_eq!(m.buffers[0].allocations, vec![defined(0, 0, 1, None)]);
        assert_eq!(m.buffers[1].allocations, vec![defined(3 * MB, 0, 3, None)]);
        assert_eq!(m.buffers[2].allocations, vec![defined(4 * MB, 2, 3, None)]);
        assert_eq!(sol.passes[0].defined, 3);
        // XLA's own heap sizes the top gap by its peak address (4 MB): [4 MB, 5 MB) then
        // counts as empty and r goes into the hole at 0.
        let peak = XlaOptions {
            top_gap: TopGap::Peak,
            ..Default::default()
        };
        let m = solve(&p, &hw, peak).mapping;
        assert_eq!(m.buffers[2].allocations, vec![defined(0, 2, 3, None)]);
    }

    #[test]
    fn a_far_use_needs_an_eviction_then_a_prefetch() {
        // a (1 MB) is written by op0 and read by op1 and op5; ops 2..=4 compute for 8 ms
        // each. Capacity 2 MB: max_copy = 2 ms x 10 = 20 ms.
        let p = Program::new(
            "evict",
            "",
            vec![buf("a", MB, BufferKind::Activation)],
            vec![
                op(0.0, &[], &[0]),
                op(0.0, &[0], &[]),
                op(8.0, &[], &[]),
                op(8.0, &[], &[]),
                op(8.0, &[], &[]),
                op(0.0, &[0], &[]),
            ],
        )
        .unwrap();
        let hw = hw(2 * MB);
        // Segment [0, 1]: no-copy (nothing between), and the segment [1, 5] has 24 ms
        // between > 20 ms, so the chunk is chosen for [0, 1] only: offset 0.
        // Segment [1, 5]: no-copy refused (24 ms > 20 ms), so a is evicted after op0.
        // The preferred eviction end is the first E with span(ops 1..=E) >= 1.5 x 1 ms:
        // E = 2 (1 + 8 ms); offset 0 is free at op 2, so the hold is [0, 2].
        // Prefetch for op5 from op 3 (level 0 has a from E + 1): latest start 5 (the use's
        // saving, 0.9 ms, covers 0.8 x 1 ms), earliest 3 (16 ms <= 20 ms), preferred the
        // overlap nearest 1.5 ms: s = 5 (0 ms) beats s = 4 (8 ms) and s = 3 (16 ms). A
        // copy beside no op has no budget, so the next candidate, s = 4 (later first, but
        // 6 is past the latest), wins.
        let sol = solve(&p, &hw, XlaOptions::default());
        assert_eq!(
            sol.mapping.buffers[0].allocations,
            vec![defined(0, 0, 2, Some(0)), prefetch(0, 4, 5)]
        );
        assert_eq!((sol.passes[0].evictions, sol.passes[0].prefetches), (1, 1));
        // Without the budget, the preferred start wins.
        let no_budget = XlaOptions {
            copy_budget: false,
            ..Default::default()
        };
        let m = solve(&p, &hw, no_budget).mapping;
        assert_eq!(m.buffers[0].allocations[1], prefetch(0, 5, 5));
    }

    /// w (1 MB weight) read by op4; ops 0..=3 compute for 0.5, 1, 1 and 0.2 ms. With
    /// `blocker`, z (2 MB, the whole level) is written by op1 (2 ms of memory time) and
    /// read by op2 (2 ms).
    fn picker_program(blocker: bool) -> Program {
        let mut buffers = vec![buf("w", MB, BufferKind::Weight)];
        let (w1, r2): (Vec<usize>, Vec<usize>) = if blocker {
            buffers.push(buf("z", 2 * MB, BufferKind::Activation));
            (vec![1], vec![1])
        } else {
            (vec![], vec![])
        };
        Program::new(
            "picker",
            "",
            buffers,
            vec![
                op(0.5, &[], &[]),
                op(1.0, &[], &w1),
                op(1.0, &r2, &[]),
                op(0.2, &[], &[]),
                op(0.0, &[0], &[]),
            ],
        )
        .unwrap()
    }

    #[test]
    fn the_picker_chooses_the_prefetch_start() {
        // Overlaps with op4: s = 0: 2.7 ms, 1: 2.2, 2: 1.2, 3: 0.2, 4: 0. Latest start 4
        // (0.9 ms saving >= 0.8 x 1 ms), earliest 0 (2.7 ms <= 20 ms). Preferred: nearest
        // 1.5 ms -> s = 2 (1.2 ms), whose 1.2 ms of ops carry the 1 ms copy.
        let p = picker_program(false);
        let m = solve(&p, &hw(2 * MB), XlaOptions::default()).mapping;
        assert_eq!(m.buffers[0].allocations, vec![prefetch(0, 2, 4)]);
    }

    #[test]
    fn the_copy_budget_limits_a_prefetch() {
        // z (memory-boundedness (1 + 1 ms) / sqrt(2e6) = 1.4e-6) goes before w (0.9e-6):
        // written at op1 and read at op2, it fills the level over [1, 2].
        // w: op times are now 0.5, 2, 2, 0.2, 1 ms; overlaps with op4: s = 0: 4.7 ms,
        // 1: 4.2, 2: 2.2, 3: 0.2, 4: 0. Preferred s = 2 (2.2 ms, nearest 1.5 ms), then
        // 3, 1, 4, 0. s = 2 overlaps z: no chunk, and no earlier start can have one. s = 3
        // has a chunk, but op3's 0.2 ms cannot carry the 1 ms copy; s = 4 has no op at all.
        let p = picker_program(true);
        let hw = hw(2 * MB);
        let m = solve(&p, &hw, XlaOptions::default()).mapping;
        assert_eq!(m.buffers[1].allocations, vec![defined(0, 1, 2, None)]);
        assert!(m.buffers[0].allocations.is_empty(), "{m:?}");
        // Without the budget, s = 3 is taken.
        let no_budget = XlaOptions {
            copy_budget: false,
            ..Default::default()
        };
        let m = solve(&p, &hw, no_budget).mapping;
        assert_eq!(m.buffers[0].allocations, vec![prefetch(0, 3, 4)]);
    }

    /// y (1 MB output) written by op0 and read by op1. Level 0 writes at 0.5 GB/s, so a
    /// copy of y takes 2 ms, while op1 (reading y from level 0) lasts 1 ms.
    fn undo_case() -> (Program, Hardware) {
        let p = Program::new(
            "undo",
            "",
            vec![buf("y", MB, BufferKind::Output)],
            vec![op(0.0, &[], &[0]), op(0.0, &[0], &[])],
        )
        .unwrap();
        let mut hw = hw(2 * MB);
        hw.levels[0].write_bw = 0.5e9;
        (p, hw)
    }

    #[test]
    fn an_eviction_over_budget_is_free_or_undoes_the_buffer() {
        // y: no-copy over [0, 1] puts it in level 1 at 0 (pending). As an output it must be
        // evicted before the end: hold [0, 1] (nothing after op1), a copy of 2 ms beside
        // op1's 1 ms: over budget. XLA (last retry) makes it anyway.
        let (p, hw) = undo_case();
        let sol = solve(&p, &hw, XlaOptions::default());
        assert_eq!(
            sol.mapping.buffers[0].allocations,
            vec![defined(0, 0, 1, Some(0))]
        );
        assert_eq!(sol.passes[0].evictions_over_budget, 1);
        // Refusing it fails the buffer: its pending chunk is undone.
        let refuse = XlaOptions {
            eviction_over_budget: EvictionOverBudget::Refuse,
            ..Default::default()
        };
        let sol = solve(&p, &hw, refuse);
        assert!(sol.mapping.buffers[0].allocations.is_empty());
        assert_eq!(sol.passes[0].undone, 1);
        assert_eq!(sol.passes[0].evictions, 0);
    }

    #[test]
    fn an_undone_buffer_leaves_no_chunk_or_copy_behind() {
        let (p, hw) = undo_case();
        let cost = CostModel::new(&p, &hw);
        let opts = XlaOptions {
            eviction_over_budget: EvictionOverBudget::Refuse,
            separate_eviction_budget: false,
            ..Default::default()
        };
        let timing = Timing::new(&cost, vec![cost.default_mem_s(0), cost.default_mem_s(1)]);
        let mut budgets = Budgets::new(&opts, &timing);
        let mut state = PassState {
            level: 1,
            max_copy: 40e-3,
            heap: ChunkHeap::for_level(&hw, 1, p.len()).unwrap(),
            timing: std::sync::Arc::new(timing),
            stats: XlaPassStats::default(),
        };
        let mut pass = Pass {
            program: &p,
            cost: &cost,
            opts: &opts,
            st: &mut state,
        };
        assert!(pass.place(0, &[], &mut budgets).0.is_empty());
        assert!(pass.st.heap.is_empty());
        assert!(budgets.log.is_empty());
        assert_eq!(budgets.prefetch.snapshot(), vec![]);
    }

    #[test]
    fn cascade_puts_what_the_fastest_level_cannot_hold_in_the_next() {
        // Levels: 0 at 1 GB/s; 1 (4 MB) at 10 GB/s; 2 (1 MB) at 100 GB/s.
        // a (2 MB) written by op0, read by op1; b (0.5 MB) written by op1, read by op2.
        let mut hw = hw(4 * MB);
        let mut sram = hw.levels[1].clone();
        sram.name = "SRAM".into();
        sram.capacity = MB;
        sram.read_bw = 1e11;
        sram.write_bw = 1e11;
        hw.levels.push(sram);
        let p = Program::new(
            "cascade",
            "",
            vec![
                buf("a", 2 * MB, BufferKind::Activation),
                buf("b", MB / 2, BufferKind::Activation),
            ],
            vec![op(0.0, &[], &[0]), op(0.0, &[0], &[1]), op(0.0, &[1], &[])],
        )
        .unwrap();
        // Pass 1 (level 2): a does not fit in 1 MB; b does. Pass 2 (level 1): a fits.
        let sol = solve(&p, &hw, XlaOptions::default());
        let m = &sol.mapping;
        assert_eq!(
            m.buffers[0].allocations,
            vec![Allocation {
                level: 1,
                ..defined(0, 0, 1, None)
            }]
        );
        assert_eq!(
            m.buffers[1].allocations,
            vec![Allocation {
                level: 2,
                ..defined(0, 1, 2, None)
            }]
        );
        assert_eq!(
            sol.passes
                .iter()
                .map(|s| (s.level, s.defined))
                .collect::<Vec<_>>(),
            vec![(2, 1), (1, 1)]
        );
        // Without the cascade only the fastest level is used.
        let single = XlaOptions {
            cascade: false,
            ..Default::default()
        };
        let m = solve(&p, &hw, single).mapping;
        assert!(m.buffers[0].allocations.is_empty());
        assert_eq!(m.buffers[1].allocations.len(), 1);
    }
}
