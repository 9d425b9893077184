//! The states a line resumes from: checkpoints between two buffers, taken when the line
//! was played turn by turn, each with the runs it holds. A later line of the same search
//! shares them: a checkpoint whose runs differ from the line's (a move changed a buffer
//! before it) swaps the line's runs in, and keeps the result for the next time; the
//! buffers from the checkpoint to the state asked for are fast-forwarded from their runs.
//! Where the runs differ is found from the two lines' lineages ([`Lineage::between`]).

use super::lineage::Lineage;
use super::Line;
use crate::game::runs::Run;
use crate::game::Game;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

/// A state between two buffers, before position `at`, and the runs it holds (those of
/// the line with lineage `lineage`).
pub(super) struct Checkpoint {
    state: Game,
    runs: imbl::Vector<Arc<Run>>,
    lineage: Arc<Lineage>,
}

type Slot = Mutex<Arc<Checkpoint>>;

/// A line's checkpoints by position, ascending; every pass's first position has one.
#[derive(Clone, Default)]
pub(super) struct Checkpoints(Arc<Vec<(usize, Arc<Slot>)>>);

fn lock(slot: &Slot) -> MutexGuard<'_, Arc<Checkpoint>> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

impl Checkpoints {
    /// These before position `from` (and at it), then `states` (taken from there on,
    /// holding `runs`).
    pub(super) fn replaced(
        &self,
        from: usize,
        states: Vec<(usize, Game)>,
        runs: &imbl::Vector<Arc<Run>>,
        lineage: &Arc<Lineage>,
    ) -> Checkpoints {
        let mut v: Vec<(usize, Arc<Slot>)> = self
            .0
            .iter()
            .filter(|(at, _)| *at <= from)
            .cloned()
            .collect();
        for (at, state) in states {
            if v.last().is_some_and(|(last, _)| *last >= at) {
                continue;
            }
            let cp = Checkpoint {
                state,
                runs: runs.clone(),
                lineage: Arc::clone(lineage),
            };
            v.push((at, Arc::new(Mutex::new(Arc::new(cp)))));
        }
        Checkpoints(Arc::new(v))
    }

    /// The last checkpoint at or before position `at`.
    pub(super) fn before(&self, at: usize) -> (usize, &Slot) {
        let i = self.0.partition_point(|(x, _)| *x <= at).max(1) - 1;
        let (x, slot) = &self.0[i];
        (*x, slot)
    }
}

impl Line {
    /// The line's state between two buffers, before position `at`. The tally and the
    /// simulation may lag behind its mapping ([`Game::sync_simulation`]).
    pub(super) fn state_at(&self, at: usize) -> Game {
        let (from, slot) = self.checkpoints.before(at);
        let cp = Arc::clone(&lock(slot));
        let mut g = if cp.runs.ptr_eq(&self.runs) {
            cp.state.clone()
        } else {
            let g = self.refreshed(from, &cp);
            *lock(slot) = Arc::new(Checkpoint {
                state: g.clone(),
                runs: self.runs.clone(),
                lineage: Arc::clone(&self.lineage),
            });
            g
        };
        for q in from..at {
            let ok = g.fast_forward(&self.runs[q]);
            debug_assert!(ok, "a line's run fits where the line played it");
        }
        g
    }

    /// The work [`Line::state_at`] would do for position `at`, counted in runs (one per
    /// run fast-forwarded from the checkpoint, two per stale run it swaps for this line's:
    /// at most, as runs that are copies but equal count too), where it is under `limit`;
    /// `None` where it is not, or where finding out would take as long.
    pub(super) fn state_cost(&self, at: usize, limit: usize) -> Option<usize> {
        let (from, slot) = self.checkpoints.before(at);
        let ahead = at - from;
        if ahead >= limit {
            return None;
        }
        let cp = Arc::clone(&lock(slot));
        if cp.runs.ptr_eq(&self.runs) {
            return Some(ahead);
        }
        let lo = self.shape.pass_range(self.shape.pass_of(from)).start;
        let moved = self.moved_since(&cp, lo..from, (limit - ahead - 1) / 2)?;
        Some(ahead + 2 * moved.len())
    }

    /// The positions in `range` where checkpoint `cp` holds a run other than this line's,
    /// ascending, from the moves between the two lines; `None` if their lineages do not
    /// meet, or more than `most` of those moves' positions fall in `range`.
    fn moved_since(&self, cp: &Checkpoint, range: Range<usize>, most: usize) -> Option<Vec<usize>> {
        let keep = |p: usize| range.contains(&p);
        let mut moved = Lineage::between(&cp.lineage, &self.lineage, keep, most)?;
        moved.sort_unstable();
        moved.dedup();
        moved.retain(|&p| !Arc::ptr_eq(&cp.runs[p], &self.runs[p]));
        Some(moved)
    }

    /// The positions in `range` (of one pass) where checkpoint `cp` holds a run other than
    /// this line's, ascending: among those the moves between the two lines changed, or
    /// where their lineages do not meet soon, among all.
    fn stale(&self, cp: &Checkpoint, range: Range<usize>) -> Vec<usize> {
        if let Some(moved) = self.moved_since(cp, range.clone(), range.len()) {
            return moved;
        }
        let mine = self.runs.focus().narrow(range.clone());
        let theirs = cp.runs.focus().narrow(range.clone());
        range
            .zip(theirs.into_iter().zip(mine))
            .filter(|(_, (a, b))| !Arc::ptr_eq(a, b))
            .map(|(p, _)| p)
            .collect()
    }

    /// Checkpoint `cp` (before position `from`) with this line's runs in place of those
    /// that differ.
    fn refreshed(&self, from: usize, cp: &Checkpoint) -> Game {
        let mut g = cp.state.clone();
        let pass = self.shape.pass_of(from);
        let lo = self.shape.pass_range(pass).start;
        let stale = self.stale(cp, lo..from);
        let pairs: Vec<(&Run, &Run)> = stale
            .iter()
            .map(|&p| (&*cp.runs[p], &*self.runs[p]))
            .filter(|(old, new)| old != new)
            .collect();
        debug_assert!(
            cp.runs
                .iter()
                .take(lo)
                .zip(self.runs.iter())
                .all(|(a, b)| **a == **b),
            "lines of one search differ only in the pass they splice in"
        );
        let ok = g.swap_runs(&pairs);
        debug_assert!(ok, "a line's runs fit where its moves played them");
        g.set_history(self.decisions.take(self.first_turn[from]));
        g
    }
}
