//! Where one buffer stands in one pass: its events in time (the uses still read from
//! level 0, what earlier passes hold, an output's program end), the chunk it holds and
//! what it has closed. The baseline moves it along in one go; the game stops it at each
//! use for a decision.

use crate::pass::{Pass, XlaPassStats};
use crate::walk::Hold;
use accel_sim::{Allocation, Arrival, BufferId, BufferKind, OpId};

/// A buffer's next event in time.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Item {
    /// The definition of a buffer whose first event in the pass is not a use (it is never
    /// read, or an earlier pass serves its first use): a turn of its own, where the only
    /// chunk on offer is the one the defining op writes (XLA makes none).
    Def,
    /// A use still read from level 0.
    Use(OpId),
    /// An allocation made by an earlier (faster) pass.
    Prior(Allocation),
    /// The program end, for an output: it must be in level 0 by then.
    End,
}

/// The allocation being built in this pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Open {
    pub(crate) arrival: Arrival,
    pub(crate) start: OpId,
    pub(crate) end: OpId,
    pub(crate) offset: u64,
}

impl Open {
    /// The chunk as an allocation in `level`, as it stands (no eviction).
    pub(crate) fn allocation(&self, level: usize) -> Allocation {
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

#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    pub(crate) b: BufferId,
    items: Vec<(OpId, Item)>,
    reach: Vec<usize>,
    /// The next item to process.
    pub(crate) next: usize,
    /// The allocations this pass has closed.
    pub(crate) out: Vec<Allocation>,
    /// From which op level 0 holds the data (None: only the fast level has it).
    pub(crate) level0_from: Option<OpId>,
    /// The earliest start of a prefetch for the next segment: after the previous use
    /// (XLA's `inclusive_start_time`) and after any earlier allocation of the buffer.
    pub(crate) seg_lo: OpId,
    /// The start of the current segment: the definition, then the previous use.
    pub(crate) p: OpId,
    /// Only the first segment may write the buffer into the level, and only if no
    /// earlier pass did and it has a defining op.
    pub(crate) can_define: bool,
    pub(crate) open: Option<Open>,
    /// How the open chunk ends, when a move said so; `None`: as XLA ends it.
    pub(crate) until: Option<Hold>,
    pub(crate) stats: XlaPassStats,
}

impl Cursor {
    /// The use waiting for a decision (or the definition, at an [`Item::Def`] turn), with
    /// the items a chunk for it could reach without a copy (`[0]` is the use itself).
    pub(crate) fn pending(&self) -> Option<(OpId, &[(OpId, Item)])> {
        match self.items.get(self.next)? {
            &(u, Item::Use(_) | Item::Def) => {
                Some((u, &self.items[self.next..=self.reach[self.next]]))
            }
            _ => None,
        }
    }

    /// Whether the pending turn is a definition's ([`Item::Def`]), not a use's.
    pub(crate) fn at_definition(&self) -> bool {
        matches!(self.items.get(self.next), Some((_, Item::Def)))
    }

    /// The item after the pending use, if any.
    pub(crate) fn item(&self) -> Option<(OpId, Item)> {
        self.items.get(self.next).copied()
    }

    /// The uses decided so far and the uses in all, among this pass's items.
    pub(crate) fn progress(&self) -> (usize, usize) {
        let is_use = |x: &&(OpId, Item)| matches!(x.1, Item::Use(_));
        let done = self.items[..self.next].iter().filter(is_use).count();
        (done, self.items.iter().filter(is_use).count())
    }

    /// The open allocation as an allocation in `level`, as it stands (no eviction yet).
    pub(crate) fn open_allocation(&self, level: usize) -> Option<Allocation> {
        self.open.map(|o| o.allocation(level))
    }

    /// Done with the pending use: the next segment starts there.
    pub(crate) fn end_use(&mut self) {
        if let Some((u, _)) = self.pending() {
            self.can_define = false;
            self.p = u;
            self.seg_lo = u + 1;
            self.next += 1;
        }
    }
}

impl Pass<'_> {
    /// The cursor of buffer `b` at its first item; `None` when the buffer cannot be in
    /// this level at all (larger than it).
    pub(crate) fn begin(&self, b: BufferId, prior: &[Allocation]) -> Option<Cursor> {
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
            until: None,
            stats: XlaPassStats::default(),
        })
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
        // A buffer whose first event is not a use gets a turn at its definition, so that
        // a chunk the defining op writes can be made where no use would offer one. An
        // earlier pass that wrote it there holds the definition already.
        if let Some(d) = self.program.def(b) {
            let written = prior.first().is_some_and(|a| a.start == d);
            let first_is_use = matches!(items.first(), Some((_, Item::Use(_))));
            if !written && !first_is_use {
                items.insert(0, (d, Item::Def));
            }
        }
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
}
