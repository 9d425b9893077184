//! What a line of the game keeps of each buffer's turn in a pass ([`Run`]), and how a game
//! state takes a run without playing it: between two buffers of a pass, the walk's heap
//! and copy budgets take the run's chunks and copies as they are, and the mapping its
//! allocations ([`Game::fast_forward`]); a run another line made in place of one this
//! state holds is swapped in ([`Game::swap_runs`]). The cost tally and the simulation
//! catch up only when asked ([`Game::sync_simulation`]): a local search's replay needs
//! them only where it ranks moves.

use super::moves::Decision;
use super::state::Game;
use accel_sim::{Allocation, BufferId, OpId};
use std::sync::Arc;
use xla_msa::watch::Seen;
use xla_msa::{Charge, ChargeMark};

/// One buffer's turn in one pass, as a line played it: from the buffer's beginning in
/// the pass's order to its end.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    pub(crate) b: BufferId,
    /// The buffer's allocations made in this pass (in the pass's level).
    pub(crate) placed: Vec<Allocation>,
    /// All of the buffer's allocations once done (earlier passes' too).
    pub(crate) allocations: Arc<Vec<Allocation>>,
    /// The copies the walk's budgets queued for it.
    pub(crate) charges: Vec<Charge>,
    /// Its turns: the use each decided, and what it decided.
    pub(crate) turns: Vec<(OpId, Decision)>,
    /// What its walk looked at in the heap and the budgets.
    pub(crate) seen: Seen,
}

impl Run {
    /// Whether a later buffer's walk could tell the two apart: other chunks or copies.
    pub(crate) fn same_walk(&self, other: &Run) -> bool {
        self.placed == other.placed && self.charges == other.charges
    }
}

impl Game {
    /// Where the walk's copy budgets stand ([`Game::charges_since`]).
    pub(crate) fn charge_mark(&self) -> ChargeMark {
        self.walk.charge_mark()
    }

    /// The copies the budgets queued since `mark`.
    pub(crate) fn charges_since(&self, mark: &ChargeMark) -> Vec<Charge> {
        self.walk.charges_since(mark)
    }

    /// The fast level of the pass under way.
    pub(crate) fn pass_level(&self) -> Option<usize> {
        self.walk.level()
    }

    /// Buffer `b`'s allocations from its finished turns.
    pub(crate) fn finished_allocations(&self, b: BufferId) -> Arc<Vec<Allocation>> {
        Arc::clone(&self.allocs[b])
    }

    /// Every buffer's allocations from its finished turns.
    pub(crate) fn all_allocations(&self) -> imbl::Vector<Arc<Vec<Allocation>>> {
        self.allocs.clone()
    }

    /// Per copy budget, the keys where this game's queue disagrees with the queue holding
    /// `removed` instead of `added` ([`xla_msa::Walk::copies_differing`]), sorted.
    pub(crate) fn copies_differing(
        &self,
        removed: &[Charge],
        added: &[Charge],
    ) -> Vec<(xla_msa::watch::BudgetKind, Vec<xla_msa::watch::CopyKey>)> {
        self.walk.copies_differing(removed, added)
    }

    /// Whether the walk stands between two buffers of a pass (a line's recorder stopped
    /// it there): no buffer under way, and the game not over.
    pub(crate) fn between_buffers(&self) -> bool {
        self.walk.buffer().is_none() && !self.is_terminal()
    }

    /// Notes that buffer `b`'s allocations change without the tally and the simulation.
    fn lag_behind(&mut self, b: BufferId) {
        if !self.lag.contains_key(&b) {
            let held = Arc::clone(&self.allocs[b]);
            self.lag.insert(b, held);
        }
    }

    /// Takes `run` (the next buffer's in the pass's order; the state between two
    /// buffers) as played: its chunks, copies, allocations and turns, without playing
    /// them. `false` (a bug in the caller) if its chunks do not fit.
    pub(crate) fn fast_forward(&mut self, run: &Run) -> bool {
        debug_assert!(self.walk.buffer().is_none());
        let size = self.setup.program().buffer(run.b).size;
        if !self.walk.place(size, &run.placed) {
            return false;
        }
        self.walk.charge(&run.charges);
        self.lag_behind(run.b);
        self.allocs.set(run.b, Arc::clone(&run.allocations));
        self.pos += 1;
        self.turn += run.turns.len();
        for &(_, d) in &run.turns {
            self.decisions.push_back(d);
            // A line's state keeps no rewards of its own: the line's game has them.
            self.rewards.push_back(0.0);
        }
        true
    }

    /// Puts each pair's second run in place of its first (runs of buffers already done in
    /// the pass under way): chunks, copies and allocations. The turns are the caller's.
    /// `false` (a bug in the caller) if a chunk does not fit.
    pub(crate) fn swap_runs(&mut self, pairs: &[(&Run, &Run)]) -> bool {
        let program = Arc::clone(self.setup.program_arc());
        let olds: Vec<(u64, &[Allocation])> = pairs
            .iter()
            .map(|(old, _)| (program.buffer(old.b).size, old.placed.as_slice()))
            .collect();
        self.walk.unplace(&olds);
        for (old, _) in pairs {
            self.walk.uncharge(&old.charges);
        }
        for (_, new) in pairs {
            let size = program.buffer(new.b).size;
            if !self.walk.place(size, &new.placed) {
                return false;
            }
            self.walk.charge(&new.charges);
            self.lag_behind(new.b);
            self.allocs.set(new.b, Arc::clone(&new.allocations));
        }
        true
    }

    /// Sets the turn count and the decisions so far (a line's, after [`Game::swap_runs`]).
    pub(crate) fn set_history(&mut self, decisions: imbl::Vector<Decision>) {
        let n = decisions.len();
        self.turn = n;
        self.decisions = decisions;
        if self.rewards.len() > n {
            self.rewards.truncate(n);
        }
        while self.rewards.len() < n {
            self.rewards.push_back(0.0);
        }
    }

    /// Brings the cost tally and the simulation up to the mapping, where a line changed
    /// it without them: what ranking moves, the observation and the rewards read. The
    /// figures then agree with those of the game played turn by turn within rounding (the
    /// same mapping, summed in another order).
    pub(crate) fn sync_simulation(&mut self) {
        if self.lag.is_empty() {
            return;
        }
        let lag = std::mem::take(&mut self.lag);
        let cost = Arc::clone(&self.setup);
        let current = self.walk.buffer();
        for (b, held) in lag {
            // The buffer under way shows its chunks so far.
            let shown;
            let now: &[Allocation] = if Some(b) == current {
                &self.shown
            } else {
                shown = Arc::clone(&self.allocs[b]);
                &shown
            };
            if *held != *now {
                self.tally.apply(cost.cost_model(), b, &held, now);
                self.sim.change(b, &held, now);
            }
        }
    }

    /// From now on the tally and the simulation wait until asked
    /// ([`Game::sync_simulation`]): a line's replay, which ranks no move, skips them.
    /// The rewards of the turns played meanwhile are not the game's.
    pub(crate) fn defer_simulation(&mut self) {
        self.defer = true;
    }
}
