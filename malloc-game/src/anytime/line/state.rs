//! The states a line resumes from: checkpoints between two buffers, taken when the line
//! was played turn by turn, each with the runs it holds. A later line of the same search
//! shares them: a checkpoint whose runs differ from the line's (a move changed a buffer
//! before it) swaps the line's runs in, and keeps the result for the next time; the
//! buffers from the checkpoint to the state asked for are fast-forwarded from their runs.

use super::Line;
use crate::game::runs::Run;
use crate::game::Game;
use std::sync::{Arc, Mutex, MutexGuard};

/// A state between two buffers, before position `at`, and the runs it holds.
pub(super) struct Checkpoint {
    state: Game,
    runs: imbl::Vector<Arc<Run>>,
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
            });
            g
        };
        for q in from..at {
            let ok = g.fast_forward(&self.runs[q]);
            debug_assert!(ok, "a line's run fits where the line played it");
        }
        g
    }

    /// The checkpoint [`Line::state_at`] starts from for position `at`, and how many of
    /// its runs it would swap for this line's first (at most: runs that are copies but
    /// equal count too).
    pub(super) fn checkpoint_for(&self, at: usize) -> (usize, usize) {
        let (from, slot) = self.checkpoints.before(at);
        let cp = Arc::clone(&lock(slot));
        if cp.runs.ptr_eq(&self.runs) {
            return (from, 0);
        }
        let lo = self.shape.pass_range(self.shape.pass_of(from)).start;
        let mine = self.runs.iter().skip(lo).take(from - lo);
        let stale = cp.runs.iter().skip(lo).take(from - lo).zip(mine);
        (from, stale.filter(|(a, b)| !Arc::ptr_eq(a, b)).count())
    }

    /// Checkpoint `cp` (before position `from`) with this line's runs in place of those
    /// that differ.
    fn refreshed(&self, from: usize, cp: &Checkpoint) -> Game {
        let mut g = cp.state.clone();
        let pass = self.shape.pass_of(from);
        let lo = self.shape.pass_range(pass).start;
        let mut pairs: Vec<(&Run, &Run)> = Vec::new();
        let mine = self.runs.iter().skip(lo).take(from - lo);
        for (old, new) in cp.runs.iter().skip(lo).take(from - lo).zip(mine) {
            if !Arc::ptr_eq(old, new) && **old != **new {
                pairs.push((old, new));
            }
        }
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
