//! The walk over XLA's passes: where each of XLA's choices is written, once. At a buffer's
//! pending use the [`Choices`] say what XLA's rules offer (keep the chunk through the use,
//! write the buffer into the level at its definition, end the chunk and prefetch, or read
//! level 0), and [`Choice`] is applied the same way whoever chose it. The `xla` baseline
//! takes XLA's own choice at every use ([`Choices::xla`]); the mallocGame stops at each use
//! and lets a player choose among them ([`Walk`]).

use crate::budgets::Budgets;
pub use crate::budgets::{Charge, ChargeMark};
use crate::cursor::{Cursor, Item};
use crate::heap::{Candidate, ChunkHeap};
use crate::options::XlaOptions;
use crate::order::pass_levels;
use crate::pass::{Ctx, Pass, PassMut, PassState, Txn};
use crate::picker::PrefetchWindow;
use crate::timing::Timing;
use crate::watch::{BudgetKind, CopyKey};
use accel_sim::{Allocation, Arrival, BufferId, CostModel, Hardware, Mapping, OpId, Program};
use std::cell::OnceCell;
use std::sync::Arc;

/// One of XLA's choices at a buffer's pending use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Choice {
    /// The use reads level 0; a chunk held so far ends before it (evicted if only the
    /// level holds the buffer).
    Level0,
    /// The chunk held so far stays through the use ([`Choices::keep`]).
    Keep,
    /// The defining op writes the buffer into the level at `offset`, held through the use
    /// (`Choices::define`).
    Define {
        /// Where in the level the buffer is written.
        offset: u64,
    },
    /// The chunk held so far ends, and a copy from op `start` brings the buffer in at
    /// `offset` for the use. `within_budget`: the copy budget must carry it, as it carries
    /// XLA's copies; otherwise a copy XLA would not make, which the budget does not carry.
    Prefetch {
        /// The op after which the copy from level 0 is issued.
        start: OpId,
        /// Where in the level the copy lands.
        offset: u64,
        /// Whether the copy budget must carry the copy (XLA's copies) or the copy is one
        /// XLA would not make, beyond the budget.
        within_budget: bool,
    },
}

/// How a chunk ends, where a move says so instead of XLA's rule: the last op it is held
/// through and, for a chunk the defining op wrote, the op after which its copy back to
/// level 0 is issued (`None`: no eviction, unless level 0 needs the buffer back, when it
/// is evicted right after the definition as XLA does). A hold is cut short where the ops
/// before the buffer's next event, or the free offset, end first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hold {
    /// The last op the chunk is held through.
    pub end: OpId,
    /// The op after which a chunk the defining op wrote is copied back to level 0; `None`:
    /// no eviction unless level 0 needs the buffer back.
    pub eviction: Option<OpId>,
}

/// What XLA's rules offer at a buffer's pending use, worked out on demand and changing
/// nothing. Keep and define are XLA's no-copy moves, which XLA makes only where its
/// no-copy rule allows them (`Choices::no_copy`); prefetches are planned as if the
/// chunk held so far had already ended ([`Choices::closed`]).
pub struct Choices<'w> {
    pass: Pass<'w>,
    c: &'w Cursor,
    budgets: &'w Budgets,
    u: OpId,
    /// The use and the later uses a chunk for it could reach without a copy.
    ends: &'w [(OpId, Item)],
    size: u64,
    /// The chunk held so far as it would end before the use, and the first op a prefetch
    /// may start at.
    closing: OnceCell<(Option<Allocation>, Option<OpId>)>,
    /// Where evictions share the prefetches' budget and ending the chunk evicts it: the
    /// budgets after that eviction, which a prefetch then meets.
    after_close: OnceCell<Option<Budgets>>,
    window: OnceCell<Option<PrefetchWindow>>,
}

impl<'w> Pass<'w> {
    /// The choices at the pending use of `c`; `None` when no use is pending.
    pub(crate) fn choices(self, c: &'w Cursor, budgets: &'w Budgets) -> Option<Choices<'w>> {
        let (u, ends) = c.pending()?;
        Some(Choices {
            pass: self,
            c,
            budgets,
            u,
            ends,
            size: self.program.buffer(c.b).size,
            closing: OnceCell::new(),
            after_close: OnceCell::new(),
            window: OnceCell::new(),
        })
    }
}

impl Choices<'_> {
    /// The op of the pending use.
    pub fn use_op(&self) -> OpId {
        self.u
    }
    /// The fast level of the pass.
    pub(crate) fn level(&self) -> usize {
        self.pass.st.level
    }
    /// The buffer's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the turn is at the buffer's definition (its first event in the pass is not
    /// a use): only the chunk the defining op writes is on offer, and XLA makes none.
    pub fn at_definition(&self) -> bool {
        self.c.at_definition()
    }

    /// Whether a chunk of the buffer at `offset` is free over ops `start..=` the use.
    pub fn fits(&self, start: OpId, offset: u64) -> bool {
        start <= self.u && self.pass.st.heap.fits(start, self.u, offset, self.size)
    }

    /// Whether any move but reading level 0 could be made at the use: a chunk held
    /// through it (some offset free over the use alone, and a chunk could start by then:
    /// written at the definition, or copied in from level 0), or a chunk the defining op
    /// writes that ends before it ([`Choices::can_write_before`] at some offset).
    pub fn any_chunk(&self) -> bool {
        let heap = &self.pass.st.heap;
        let top = self.pass.opts.top_gap;
        let free_at = |t: OpId| heap.best_fit(t, t, self.size, None, top).is_some();
        let can_start =
            self.define_start().is_some() || self.prefetch_from().is_some_and(|lo| lo <= self.u);
        let write_before = self.c.open.is_none()
            && self.c.can_define
            && !self.at_definition()
            && self.c.p < self.u
            && free_at(self.c.p);
        (can_start && free_at(self.u)) || write_before
    }

    /// Whether the defining op could write the buffer into the level at `offset` and
    /// `hold` end that chunk before the use (a chunk serving no use, evicted so that level
    /// 0 holds the buffer for the use): the first segment, no chunk held, the chunk free
    /// over the definition, and the hold ending before the use.
    pub fn can_write_before(&self, offset: u64, hold: Hold) -> bool {
        let d = self.c.p;
        self.c.open.is_none()
            && self.c.can_define
            && !self.at_definition()
            && d <= hold.end
            && hold.end < self.u
            && self.pass.st.heap.fits(d, d, offset, self.size)
    }

    /// The chunk the buffer holds so far (through its last use decided), if any.
    pub fn held(&self) -> Option<Allocation> {
        self.c.open_allocation(self.level())
    }

    /// XLA's no-copy rule (`CanAllocateInAlternateMemoryNoCopy`) over the segment: the ops
    /// between its start and the use are short enough for the buffer to stay in the level
    /// through them. XLA keeps or defines only where it holds.
    pub(crate) fn no_copy(&self) -> bool {
        self.pass.no_copy_ok(self.c.p, self.u)
    }

    /// Keep: the chunk held so far, extended through the use, if its offset stays free.
    pub fn keep(&self) -> Option<Allocation> {
        let o = self.c.open?;
        self.pass
            .st
            .heap
            .fits(o.end + 1, self.u, o.offset, self.size)
            .then(|| Allocation {
                end: self.u,
                ..o.allocation(self.level())
            })
    }

    /// Define: on the buffer's first segment (it has a defining op and no earlier pass
    /// holds it), the chunk from the definition through the use at XLA's best-fit offset,
    /// if one fits.
    pub(crate) fn define(&self) -> Option<Allocation> {
        self.define_start()?;
        let start = self.c.p;
        let offset = self.pass.best_chunk(start, self.ends, self.size)?;
        Some(self.chunk(start, offset, Arrival::Defined))
    }

    /// Where a define would start (the definition), on the buffer's first segment only;
    /// its offset is `Choices::best_chunk` from there.
    pub fn define_start(&self) -> Option<OpId> {
        (self.c.open.is_none() && self.c.can_define).then_some(self.c.p)
    }

    fn closing(&self) -> &(Option<Allocation>, Option<OpId>) {
        self.closing.get_or_init(|| {
            let c = self.c;
            let closed = c.open.map(|o| self.pass.closed(c, &o, self.u));
            // A buffer only this level holds is evicted: level 0 has the data from the op
            // after the eviction's hold.
            let level0_from = match closed {
                Some(a) if a.eviction.is_some() => Some(a.end + 1),
                _ => c.level0_from,
            };
            // A chunk held past its last use (as a move may say) ends before the next.
            let after = closed.map_or(0, |a| a.end + 1);
            (closed, level0_from.map(|v| v.max(c.seg_lo).max(after)))
        })
    }

    /// The chunk held so far as it ends before the use, if any: evicted right after its
    /// definition (and held a while longer, as XLA holds it) where only the level has the
    /// buffer.
    pub fn closed(&self) -> Option<Allocation> {
        self.closing().0
    }

    /// The first op a prefetch for the use may start at: level 0 holds the data by then,
    /// and it is after the previous use. `None`: no copy can be made (only the level
    /// holds the buffer and it cannot be evicted in time, or the turn is the definition's,
    /// which no copy serves).
    pub fn prefetch_from(&self) -> Option<OpId> {
        if self.at_definition() {
            return None;
        }
        self.closing().1
    }

    fn prefetch_budgets(&self) -> &Budgets {
        let after = self.after_close.get_or_init(|| {
            let a = self.closed()?;
            let d = a.eviction?;
            if !self.budgets.shared() {
                return None;
            }
            let mut budgets = self.budgets.clone();
            let copy = self.pass.cost.copy_s(self.c.b, self.level());
            budgets.try_copy(&mut Txn::none(), true, d + 1, a.end + 1, copy);
            Some(budgets)
        });
        after.as_ref().unwrap_or(self.budgets)
    }

    /// XLA's prefetch for the use: the picker's first start, from the preferred one
    /// alternately later and earlier, with a best-fit chunk and room in the copy budget.
    pub(crate) fn prefetch(&self) -> Option<Allocation> {
        self.prefetch_with(None)
    }

    /// `Choices::prefetch`, with the free gaps a chunk from its start through the use
    /// fits in written into `out` from the walk that found its offset.
    pub fn prefetch_and_gaps(&self, out: &mut Vec<Candidate>) -> Option<Allocation> {
        self.prefetch_with(Some(out))
    }

    fn prefetch_with(&self, gaps: Option<&mut Vec<Candidate>>) -> Option<Allocation> {
        let lo = self.prefetch_from()?;
        let budgets = self.prefetch_budgets();
        let (s, offset) = self
            .pass
            .prefetch_search(self.c.b, lo, self.ends, budgets, gaps)?;
        Some(self.chunk(s, offset, Arrival::Prefetch))
    }

    /// The picker's window of prefetch starts for the use (`None` where XLA would make
    /// no prefetch).
    pub fn window(&self) -> Option<PrefetchWindow> {
        *self
            .window
            .get_or_init(|| self.pass.window(self.c.b, self.prefetch_from()?, self.u))
    }

    /// The earliest start of a copy for the use: the window's, or where the picker has no
    /// window, the first start whose overlap stays under the level's `max_copy`.
    pub fn earliest_start(&self) -> Option<OpId> {
        let lo = self.prefetch_from()?;
        Some(match self.window() {
            Some(w) => w.earliest,
            None => self.pass.earliest_start(lo, self.u),
        })
    }

    /// Whether the copy budget carries a copy for the use from op `start`.
    pub fn copy_fits(&self, start: OpId) -> bool {
        let copy = self.pass.cost.copy_s(self.c.b, self.level());
        self.prefetch_budgets().prefetch_fits(start, self.u, copy)
    }

    /// XLA's best-fit offset for a chunk from `start` through the use, stretched as far
    /// over the later uses as the level allows (XLA's `FindBestChunkCandidate`).
    pub(crate) fn best_chunk(&self, start: OpId) -> Option<u64> {
        self.pass.best_chunk(start, self.ends, self.size)
    }

    /// `Choices::best_chunk`, with the free gaps a chunk from `start` through the use
    /// fits in written into `out` from the same walk.
    pub fn best_chunk_and_gaps(&self, start: OpId, out: &mut Vec<Candidate>) -> Option<u64> {
        self.pass
            .best_chunk_and_gaps(start, self.ends, self.size, out)
    }

    /// The free gaps a chunk from `start` through the use fits in (into `out`), and the
    /// plain best-fit offset for that chunk (the heap's, not stretched over later uses as
    /// `Choices::best_chunk` is) from the same walk.
    pub fn gaps_and_best_fit(&self, start: OpId, out: &mut Vec<Candidate>) -> Option<u64> {
        let top = self.pass.opts.top_gap;
        self.pass
            .st
            .heap
            .candidates_and_best_fit(start, self.u, self.size, top, out)
    }

    /// The free gaps a chunk from `start` through the use fits in (into `out`).
    pub fn gaps(&self, start: OpId, out: &mut Vec<Candidate>) {
        self.pass.st.heap.candidates(start, self.u, self.size, out);
    }

    /// The buffer's chunk in the level from `start` through the use at `offset`.
    pub fn chunk(&self, start: OpId, offset: u64, arrival: Arrival) -> Allocation {
        Allocation {
            level: self.level(),
            offset,
            start,
            end: self.u,
            arrival,
            eviction: None,
        }
    }

    /// XLA's choice: keep the chunk through the use, else write the buffer into the level
    /// (each only where the no-copy rule allows), else end the chunk and prefetch, else
    /// read level 0.
    pub(crate) fn xla(&self) -> Choice {
        if self.at_definition() {
            return Choice::Level0;
        }
        if self.no_copy() {
            if self.keep().is_some() {
                return Choice::Keep;
            }
            if let Some(a) = self.define() {
                return Choice::Define { offset: a.offset };
            }
        }
        match self.prefetch() {
            Some(a) => Choice::Prefetch {
                start: a.start,
                offset: a.offset,
                within_budget: true,
            },
            None => Choice::Level0,
        }
    }

    /// Whether XLA's choice here reads level 0 for want of memory, not of copy budget
    /// (XLA's `kFailOutOfMemory`, which a re-pack may cure): no chunk for writing the
    /// buffer into the level, or none for even the shortest prefetch the picker allows.
    fn out_of_memory(&self) -> bool {
        if self.at_definition() {
            return false;
        }
        let no_define =
            self.no_copy() && self.c.open.is_none() && self.c.can_define && self.define().is_none();
        no_define
            || (self.pass.opts.max_repacks > 0
                && self
                    .window()
                    .is_some_and(|w| self.best_chunk(w.latest).is_none()))
    }
}

impl PassMut<'_> {
    /// Makes `choice` at the pending use of `c` and moves on past the use. `None` if a copy
    /// the choice needs cannot be made (an eviction refused over budget, a prefetch the
    /// budget cannot carry), which undoes the buffer in the baseline.
    pub(crate) fn apply(
        &mut self,
        c: &mut Cursor,
        choice: Choice,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        let (u, _) = c.pending()?;
        let done = match choice {
            Choice::Level0 => self.close_open(c, u, budgets, txn),
            Choice::Keep => self.keep(c, txn),
            Choice::Define { offset } => self.define(c, offset, txn),
            Choice::Prefetch {
                start,
                offset,
                within_budget,
            } => self
                .close_open(c, u, budgets, txn)
                .and_then(|_| self.prefetch_at(c, (start, offset), within_budget, budgets, txn)),
        };
        c.end_use();
        done
    }

    /// XLA's turn at the pending use of `c`: its choice, applied.
    pub(crate) fn xla_step(
        &mut self,
        c: &mut Cursor,
        budgets: &mut Budgets,
        txn: &mut Txn,
    ) -> Option<()> {
        let (choice, out_of_memory) = {
            let choices = self.view().choices(c, budgets)?;
            let choice = choices.xla();
            (choice, choice == Choice::Level0 && choices.out_of_memory())
        };
        self.apply(c, choice, budgets, txn)?;
        txn.out_of_memory |= out_of_memory;
        Some(())
    }
}

/// What every walk over one program and hardware shares: the program, the cost model,
/// XLA's options, the levels of the passes (fastest first) and the all-level-0 op times
/// the first pass plans with.
#[derive(Debug)]
pub struct Rules {
    program: Arc<Program>,
    hw: Hardware,
    cost: CostModel,
    opts: XlaOptions,
    levels: Vec<usize>,
    default_timing: Arc<Timing>,
}

impl Rules {
    /// The rules of XLA's passes over `program` on `hw` with `opts`: the cost model and the
    /// level 0 op times the first pass plans with, worked out once.
    pub fn new(program: Arc<Program>, hw: Hardware, opts: XlaOptions) -> Rules {
        let cost = CostModel::new(&program, &hw);
        let levels = pass_levels(&opts, hw.fastest());
        let default_mem = (0..program.len()).map(|t| cost.default_mem_s(t)).collect();
        let default_timing = Arc::new(Timing::new(&cost, default_mem));
        Rules {
            program,
            hw,
            cost,
            opts,
            levels,
            default_timing,
        }
    }
    /// The program whose buffers the walk places.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }
    /// The hardware: its levels, their capacities and copy bandwidths.
    pub fn hardware(&self) -> &Hardware {
        &self.hw
    }
    /// The cost model the passes time their copies with.
    pub fn cost_model(&self) -> &CostModel {
        &self.cost
    }
    /// XLA's options the walk follows (the picker's overlaps, copy budgets, cascade).
    pub fn options(&self) -> &XlaOptions {
        &self.opts
    }
    /// The hardware level of each pass, fastest first.
    pub fn levels(&self) -> &[usize] {
        &self.levels
    }
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            program: &self.program,
            hw: &self.hw,
            cost: &self.cost,
            opts: &self.opts,
        }
    }
}

/// One walk through XLA's passes over [`Rules`], stopping at each pending use for a
/// [`Choice`]: pass by pass, buffer by buffer (in an order the walker picks), use by use.
/// What XLA does without choosing (ending chunks before an earlier pass's allocation or
/// an output's end, a pass's op times and copy budgets) the walk does itself. Its heaps
/// and budgets are persistent: a clone shares them until it changes them.
#[derive(Clone, Debug)]
pub struct Walk {
    /// The pass under way, as an index into [`Rules::levels`] (their count once done).
    pass: usize,
    /// The passes started so far; the last is the one under way.
    passes: Vec<PassState>,
    budgets: Budgets,
    /// The buffer whose uses are being decided.
    cursor: Option<Cursor>,
    /// A pass is under way: [`Walk::start_pass`] found one.
    under_way: bool,
}

impl Walk {
    /// A walk before its first pass ([`Walk::start_pass`]).
    pub fn new(rules: &Rules) -> Walk {
        Walk {
            pass: 0,
            passes: Vec::new(),
            budgets: Budgets::new(&rules.opts, &rules.default_timing),
            cursor: None,
            under_way: false,
        }
    }

    /// Starts the pass [`Walk::pass`], or where the heap cannot model its level the next
    /// one it can (XLA's per-level setup, [`crate::Xla`]'s too). `mapping` gives the
    /// mapping so far, which a later pass takes its op times from. `false` when no pass is
    /// left: [`Walk::pass`] is then the number of levels.
    pub fn start_pass(&mut self, rules: &Rules, mapping: impl FnOnce() -> Mapping) -> bool {
        // `start` calls it only for a level it starts, and then the loop ends.
        let mut mapping = Some(mapping);
        while let Some(&level) = rules.levels.get(self.pass) {
            let first = self.passes.is_empty();
            let started = PassState::start(
                rules.ctx(),
                level,
                first,
                &rules.default_timing,
                || {
                    mapping.take().map_or(
                        Mapping {
                            buffers: Vec::new(),
                        },
                        |f| f(),
                    )
                },
                &mut self.budgets,
            );
            if let Some(st) = started {
                self.passes.push(st);
                self.under_way = true;
                return true;
            }
            self.pass += 1;
        }
        self.under_way = false;
        false
    }

    /// Ends the pass under way and starts the next ([`Walk::start_pass`]).
    pub fn next_pass(&mut self, rules: &Rules, mapping: impl FnOnce() -> Mapping) -> bool {
        self.pass += 1;
        self.start_pass(rules, mapping)
    }

    /// The pass under way (0 = the fastest level).
    pub fn pass(&self) -> usize {
        self.pass
    }

    /// Whether a pass is under way (a pass started, and the last one has not ended).
    pub fn in_pass(&self) -> bool {
        self.under_way
    }

    /// The chunks placed so far in `level` (`None` before its pass starts).
    pub fn heap(&self, level: usize) -> Option<&ChunkHeap> {
        self.passes
            .iter()
            .find(|s| s.level == level)
            .map(|s| &s.heap)
    }

    /// Begins buffer `b`'s turn in the pass under way, given its allocations from earlier
    /// passes (sorted by start). `false`, changing nothing, when it cannot be in the level
    /// (larger than it) or no pass is under way.
    pub fn begin_buffer(&mut self, rules: &Rules, b: BufferId, prior: &[Allocation]) -> bool {
        let Some(st) = self.passes.last() else {
            return false;
        };
        self.cursor = rules.ctx().pass(st).begin(b, prior);
        self.cursor.is_some()
    }

    /// Goes through the buffer's events that need no choice (an earlier pass's
    /// allocation, the program end of an output) up to its next use or its end. Whether
    /// any was passed over (the buffer's allocations may then have changed).
    pub fn advance(&mut self, rules: &Rules) -> bool {
        let (Some(st), Some(c)) = (self.passes.last_mut(), self.cursor.as_mut()) else {
            return false;
        };
        let before = c.next;
        // Evictions are made even over budget (XLA's last try): this cannot fail.
        let _ = rules
            .ctx()
            .pass_mut(st)
            .advance(c, &mut self.budgets, &mut Txn::none());
        c.next != before
    }

    /// The buffer whose turn it is and its use waiting for a choice.
    pub fn pending(&self) -> Option<(BufferId, OpId)> {
        let c = self.cursor.as_ref()?;
        c.pending().map(|(u, _)| (c.b, u))
    }

    /// The choices at the pending use.
    pub fn choices<'w>(&'w self, rules: &'w Rules) -> Option<Choices<'w>> {
        let st = self.passes.last()?;
        rules
            .ctx()
            .pass(st)
            .choices(self.cursor.as_ref()?, &self.budgets)
    }

    /// Makes `choice` (one the [`Choices`] offered) at the pending use and moves past it.
    /// `false` if it could not be made in full (a prefetch the copy budget cannot carry
    /// with `within_budget`, or a chunk that does not fit): a bug in the caller.
    pub fn apply(&mut self, rules: &Rules, choice: Choice) -> bool {
        let (Some(st), Some(c)) = (self.passes.last_mut(), self.cursor.as_mut()) else {
            return false;
        };
        rules
            .ctx()
            .pass_mut(st)
            .apply(c, choice, &mut self.budgets, &mut Txn::none())
            .is_some()
    }

    /// Says how the chunk the buffer now holds ends, if it ends before the buffer's next
    /// turn in the level (`None`: as XLA ends it). Made after a move that opens or keeps a
    /// chunk; a later move that keeps it may say it again.
    pub fn hold_until(&mut self, hold: Option<Hold>) {
        if let Some(c) = self.cursor.as_mut().filter(|c| c.open.is_some()) {
            c.until = hold;
        }
    }

    /// Before a move at the pending use: the defining op writes the buffer into the level
    /// at `offset`, held and evicted as `hold` says, ending before the use
    /// ([`Choices::can_write_before`]). `false`, changing nothing, where it cannot.
    pub fn write_before(&mut self, rules: &Rules, offset: u64, hold: Hold) -> bool {
        let ok = self
            .choices(rules)
            .is_some_and(|ch| ch.can_write_before(offset, hold));
        let (Some(st), Some(c)) = (self.passes.last_mut(), self.cursor.as_mut()) else {
            return false;
        };
        ok && rules
            .ctx()
            .pass_mut(st)
            .write_before(c, offset, hold, &mut self.budgets, &mut Txn::none())
            .is_some()
    }

    /// Ends the buffer's turn once no use is pending: its allocations of this pass (the
    /// chunk still held stays in the level after its last use, or as a move said).
    pub fn finish_buffer(&mut self, rules: &Rules) -> Option<(BufferId, Vec<Allocation>)> {
        let st = self.passes.last_mut()?;
        let c = self.cursor.take()?;
        let b = c.b;
        Some((b, rules.ctx().pass_mut(st).finish(c, &mut self.budgets)))
    }

    /// The buffer whose turn it is.
    pub fn buffer(&self) -> Option<BufferId> {
        self.cursor.as_ref().map(|c| c.b)
    }

    /// The buffer's allocations of this pass so far: those it has ended, then the chunk
    /// it holds (as it stands, without the eviction it may still get).
    pub fn pass_allocations(&self) -> impl Iterator<Item = Allocation> + '_ {
        let closed = self.cursor.iter().flat_map(|c| c.out.iter().copied());
        closed.chain(self.open_allocation())
    }

    /// The chunk the buffer holds in the pass's level (through its last use decided).
    pub fn open_allocation(&self) -> Option<Allocation> {
        let level = self.passes.last()?.level;
        self.cursor.as_ref()?.open_allocation(level)
    }

    /// The buffer's uses decided so far in this pass, and in all.
    pub fn uses_decided(&self) -> (usize, usize) {
        self.cursor.as_ref().map_or((0, 0), |c| c.progress())
    }

    /// The op that starts the buffer's current segment: the previous use (or the
    /// definition).
    pub fn segment_start(&self) -> Option<OpId> {
        self.cursor.as_ref().map(|c| c.p)
    }

    /// Numbers the copies queued from now on from `rank`, the place in the pass's order of
    /// the buffer about to begin: a copy's key then depends on which buffer queued it, not
    /// on how many copies the game made before, so that two games that reach the buffer
    /// with the same moves queue it at the same keys. The order of copies with the same
    /// window stays the order they came in.
    pub fn order_copies(&mut self, rank: u64) {
        self.budgets.order_from((1 << 62) | (rank << 24));
    }

    /// Where the copy budgets stand, to list the copies queued from there
    /// ([`Walk::charges_since`]).
    pub fn charge_mark(&self) -> ChargeMark {
        self.budgets.mark()
    }

    /// The copies queued since `mark`, in the order they came.
    pub fn charges_since(&self, mark: &ChargeMark) -> Vec<Charge> {
        self.budgets.charges_since(mark)
    }

    /// The fast level of the pass under way.
    pub fn level(&self) -> Option<usize> {
        self.passes
            .last()
            .filter(|_| self.under_way)
            .map(|s| s.level)
    }

    /// Commits a buffer's `allocations` in the pass's level (`size` bytes each) into its
    /// heap, as another game of the same walk made them. `false` if one does not fit (the
    /// heap then holds those before it).
    pub fn place(&mut self, size: u64, allocations: &[Allocation]) -> bool {
        let Some(st) = self.passes.last_mut() else {
            return false;
        };
        allocations.iter().filter(|a| a.level == st.level).all(|a| {
            st.heap
                .commit(crate::heap::Chunk {
                    start: a.start,
                    end: a.end,
                    offset: a.offset,
                    size,
                })
                .is_ok()
        })
    }

    /// Takes buffers' allocations in the pass's level out of its heap ([`Walk::place`]
    /// undone): each `(size, allocations)` a buffer's.
    pub fn unplace(&mut self, buffers: &[(u64, &[Allocation])]) {
        if let Some(st) = self.passes.last_mut() {
            let level = st.level;
            let all: Vec<(OpId, OpId, u64, u64)> = buffers
                .iter()
                .flat_map(|&(size, allocations)| {
                    allocations
                        .iter()
                        .filter(move |a| a.level == level)
                        .map(move |a| (a.start, a.end, a.offset, size))
                })
                .collect();
            st.heap.remove_all_at(&all);
        }
    }

    /// Queues `charges` (copies another game of the same walk queued) whatever the
    /// budgets' windows say.
    pub fn charge(&mut self, charges: &[Charge]) {
        self.budgets.insert(charges);
    }

    /// Takes `charges` out of the budgets' queues (the last pass's only: the log a later
    /// pass replays keeps them).
    pub fn uncharge(&mut self, charges: &[Charge]) {
        self.budgets.remove(charges);
    }

    /// Per copy budget, the keys where its queue disagrees with the queue that holds
    /// `removed` instead of `added` (which this one holds), sorted: what a look at the
    /// budgets must not read to get the same answer from both.
    pub fn copies_differing(
        &self,
        removed: &[Charge],
        added: &[Charge],
    ) -> Vec<(BudgetKind, Vec<CopyKey>)> {
        self.budgets.differing(removed, added)
    }
}
