//! A local move on a line: re-decide a few turns, then repair the rest of the game from
//! the line, re-playing only the buffers whose walk could come out differently.
//!
//! After the re-decided turns (and the rest of their buffers' turns, repaired), the new
//! game and the line differ in a few buffers' runs: their chunks (heap regions) and their
//! copies (keys of the budgets' queues, [`xla_msa::Walk::copies_differing`]). A later
//! buffer whose run looked at none of those (`Run::seen`) plays out as in the line: its
//! decisions are the line's (legal, since every look answers the same), and so are its
//! chunks and copies. A walk's looks at the heap mostly read only which bytes are held
//! ([`Seen`]): there the difference is the bytes held in one game and free in the other,
//! so a buffer moved to other ops at the same offset differs only where the two lives do
//! not overlap. One that did is re-played from the new game's state before it (the
//! line's state there with the differing runs swapped in, or the state the move carries
//! with the runs between fast-forwarded), and joins the differences if its run changes.
//! Once no difference is left, nothing later can change.

use super::lineage::Lineage;
use super::record::Recorder;
use super::Line;
use crate::game::runs::Run;
use crate::game::{Decision, Game};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use xla_msa::watch::{BudgetKind, CopyKey, Region, Seen};
use xla_msa::Charge;

/// What the new game holds differently from the line so far: the runs that changed, by
/// position, and those whose chunks or copies differ (what later walks could see).
#[derive(Default)]
struct Changes {
    runs: BTreeMap<usize, Arc<Run>>,
    walk: BTreeMap<usize, ()>,
}

/// The regions of the heap and the budgets where the new game and the line differ.
#[derive(Default)]
struct Differences {
    /// The chunks of the line's runs that differ, and the new game's in their place.
    heap: Vec<Region>,
    /// The time span of `heap`, to turn most looks away at once.
    span: Option<(usize, usize)>,
    /// The bytes held in one game and not in the other: `heap`'s regions less what the
    /// same run holds in the other game (a superset of the difference).
    held: Vec<Region>,
    /// The time span of `held`.
    held_span: Option<(usize, usize)>,
    /// Per budget, the keys where the queues differ, sorted.
    budgets: Vec<(BudgetKind, Vec<CopyKey>)>,
    /// The copies of the line's runs that differ, and the new game's in their place.
    removed: Vec<Charge>,
    added: Vec<Charge>,
}

impl Differences {
    /// The budgets' differing keys, from the new game `g` (past every changed run).
    fn recount(&mut self, g: &Game) {
        self.budgets = if self.removed == self.added {
            Vec::new()
        } else {
            g.copies_differing(&self.removed, &self.added)
        };
    }

    fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.budgets.is_empty()
    }

    /// Whether a walk that looked at `seen` could see a difference.
    fn met_by(&self, seen: &Seen) -> bool {
        let meets = |looked: &[Region], span: Option<(usize, usize)>, differ: &[Region]| {
            span.is_some_and(|(lo, hi)| {
                seen.span().is_some_and(|(a, b)| a <= hi && lo <= b)
                    && looked
                        .iter()
                        .any(|r| r.start <= hi && lo <= r.end && differ.iter().any(|d| d.meets(r)))
            })
        };
        meets(&seen.heap, self.held_span, &self.held)
            || meets(&seen.chunks, self.span, &self.heap)
            || seen.budgets.iter().any(|&(k, lo, hi)| {
                self.budgets.iter().any(|(dk, keys)| {
                    *dk == k
                        && keys
                            .get(keys.partition_point(|d| *d < lo))
                            .is_some_and(|d| *d <= hi)
                })
            })
    }
}

impl Line {
    /// The line that re-decides turns from `t` on (`redecide(line, game, i)` gives the
    /// `i`-th, `None` once done; each must be legal in `game`) and repairs the rest of the
    /// game from this line. `None` if `cancelled` says so first.
    pub(crate) fn moved(
        &self,
        t: usize,
        redecide: &mut dyn FnMut(&Line, &mut Game, usize) -> Option<Decision>,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Line> {
        let at = self.position_of_turn(t);
        let lazy = self.shape.pass_of(at) == self.last_pass;
        let mut g = self.state_at(at);
        g.defer_simulation();
        let every = self.every;
        let mut rec = Recorder::new(&self.shape, (!lazy).then_some(every));
        rec.resume(&mut g);
        for k in self.first_turn[at]..t {
            rec.play(&mut g, self.decisions[k]);
        }
        let mut i = 0;
        while g.pending().is_some() {
            let Some(d) = redecide(self, &mut g, i) else {
                break;
            };
            rec.play(&mut g, d);
            i += 1;
        }
        rec.stop = lazy;
        let mut played = 0usize;
        while g.pending().is_some() {
            played += 1;
            if played % 256 == 0 && cancelled() {
                let _ = xla_msa::watch::seen();
                return None;
            }
            let d = self.repair_in(&mut g);
            rec.play(&mut g, d);
        }
        if !lazy {
            let (runs, states) = (rec.runs, rec.states);
            return Some(self.replayed(at, runs, states, g, false));
        }
        self.spliced(g, rec.runs, cancelled)
    }

    /// Goes on from `g` (the new game, between two buffers of the last pass or over, with
    /// `done` the runs it re-played) through the rest of the last pass, re-playing only
    /// the buffers that could see a difference.
    fn spliced(
        &self,
        mut g: Game,
        done: Vec<(usize, Run)>,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Line> {
        let mut changes = Changes::default();
        let mut next = done.last().map_or(0, |(at, _)| at + 1);
        for (at, run) in done {
            self.note(&mut changes, at, run);
        }
        let end = self.shape.pass_range(self.last_pass).end;
        let mut diff = Differences::default();
        for &p in changes.walk.keys() {
            self.differ(&mut diff, p, &changes);
        }
        diff.recount(&g);
        let mut q = next;
        while q < end && !g.is_terminal() && !diff.is_empty() {
            if !diff.met_by(&self.runs[q].seen) {
                q += 1;
                continue;
            }
            if cancelled() {
                return None;
            }
            g = self.state_for(g, next, q, &changes);
            let mut rec = Recorder::new(&self.shape, None);
            rec.once();
            rec.resume(&mut g);
            while g.pending().is_some() {
                let d = self.repair_in(&mut g);
                rec.play(&mut g, d);
            }
            let mut copies = false;
            for (at, run) in rec.runs {
                if self.note(&mut changes, at, run) {
                    copies |= self.differ(&mut diff, at, &changes);
                }
            }
            if copies {
                diff.recount(&g);
            }
            next = q + 1;
            q = next;
        }
        Some(self.with_changes(changes))
    }

    /// The new game before position `q`: `g` (before position `next`) with the runs
    /// between fast-forwarded, or the line's state there with the changes swapped in,
    /// whichever is less work (a run to take or swap out, each).
    fn state_for(&self, mut g: Game, next: usize, q: usize, changes: &Changes) -> Game {
        let swaps = 2 * changes.walk.len() + 8;
        let jump = (q - next)
            .checked_sub(swaps)
            .and_then(|limit| self.state_cost(q, limit));
        if jump.is_none() {
            for k in next..q {
                let ok = g.fast_forward(&self.runs[k]);
                debug_assert!(ok, "a run no difference meets fits as the line played it");
            }
            return g;
        }
        let mut g = self.state_at(q);
        g.defer_simulation();
        let pairs: Vec<(&Run, &Run)> = changes
            .walk
            .keys()
            .map(|&p| (&*self.runs[p], &*changes.runs[&p]))
            .collect();
        let ok = g.swap_runs(&pairs);
        debug_assert!(ok, "the new game's runs fit together");
        g.set_history(self.decisions_until(q, changes));
        g
    }

    /// Notes the new game's run at position `at`; whether it differs from the line's in
    /// what later walks could see.
    fn note(&self, changes: &mut Changes, at: usize, run: Run) -> bool {
        let mine = &self.runs[at];
        let same_walk = run.same_walk(mine);
        if same_walk && run.turns == mine.turns {
            changes.runs.remove(&at);
        } else {
            changes.runs.insert(at, Arc::new(run));
        }
        if same_walk {
            changes.walk.remove(&at);
        } else {
            changes.walk.insert(at, ());
        }
        !same_walk
    }

    /// Adds where the new game's run at position `p` (one of `changes.walk`) differs from
    /// the line's to `diff`; whether its copies differ.
    fn differ(&self, diff: &mut Differences, p: usize, changes: &Changes) -> bool {
        let (old, new) = (&self.runs[p], &changes.runs[&p]);
        let size = self.setup.program().buffer(old.b).size;
        let region = |a: &accel_sim::Allocation| Region {
            start: a.start,
            end: a.end,
            lo: a.offset,
            hi: a.offset + size,
        };
        let old_only = old.placed.iter().filter(|a| !new.placed.contains(a));
        let new_only = new.placed.iter().filter(|a| !old.placed.contains(a));
        // The other game holds what the same run holds there: those bytes do not differ.
        let tagged = old_only
            .map(|a| (a, &new.placed))
            .chain(new_only.map(|a| (a, &old.placed)));
        for (a, other) in tagged {
            let r = region(a);
            widen(&mut diff.span, &r);
            diff.heap.push(r);
            // Only what meets `r` can cut it: a weight's run holds hundreds of chunks.
            let mut left = vec![r];
            for o in other.iter().map(region).filter(|o| o.meets(&r)) {
                left = left.iter().flat_map(|piece| piece.less(&o)).collect();
            }
            for piece in left {
                widen(&mut diff.held_span, &piece);
                diff.held.push(piece);
            }
        }
        if old.charges == new.charges {
            return false;
        }
        diff.removed.extend_from_slice(&old.charges);
        diff.added.extend_from_slice(&new.charges);
        true
    }

    /// The new game's decisions up to position `q`.
    fn decisions_until(&self, q: usize, changes: &Changes) -> imbl::Vector<Decision> {
        let mut v = self.decisions.take(self.first_turn[q]);
        for (&p, run) in changes.runs.range(..q).rev() {
            splice_turns(&mut v, self.first_turn[p]..self.first_turn[p + 1], run);
        }
        v
    }

    /// This line with the changed runs in place.
    fn with_changes(&self, changes: Changes) -> Line {
        let mut new = self.clone();
        new.game = Arc::new(OnceLock::new());
        let mut recount = false;
        for (&p, run) in changes.runs.iter().rev() {
            let old = &self.runs[p];
            if run.turns != old.turns {
                let turns = self.first_turn[p]..self.first_turn[p + 1];
                splice_turns(&mut new.decisions, turns, run);
                recount |= run.turns.len() != old.turns.len();
            }
        }
        for (&p, run) in &changes.runs {
            if changes.walk.contains_key(&p) {
                let old = &self.runs[p];
                new.sim.change(run.b, &old.allocations, &run.allocations);
                new.allocs.set(run.b, Arc::clone(&run.allocations));
            }
            new.runs.set(p, Arc::clone(run));
        }
        if recount {
            new.first_turn = Arc::new(super::first_turns(&new.runs));
        }
        new.lineage = Lineage::child(&self.lineage, changes.runs.keys().copied());
        new.latency = new.sim.latency_s();
        new
    }
}

/// Widens `span` to take in `r`'s ops.
fn widen(span: &mut Option<(usize, usize)>, r: &Region) {
    *span = Some(span.map_or((r.start, r.end), |(lo, hi)| {
        (lo.min(r.start), hi.max(r.end))
    }));
}

/// Puts `run`'s decisions in place of turns `turns` of `v`.
fn splice_turns(v: &mut imbl::Vector<Decision>, turns: std::ops::Range<usize>, run: &Run) {
    let tail = v.split_off(turns.end);
    v.truncate(turns.start);
    v.extend(run.turns.iter().map(|&(_, d)| d));
    v.append(tail);
}
