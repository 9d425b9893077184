//! The game's walk through XLA's passes between turns: a move becomes the walk's
//! [`Choice`], and what needs no choice (items of a buffer, uses where only action 0 is on
//! offer, the next buffer of the pass's order, the next pass) the game does before the
//! next turn, keeping the cost tally and the simulation up to date.

use super::menu::Offer;
use super::state::{finished_mapping, Game};
use crate::options::Mode;
use std::sync::Arc;
use xla_msa::Choice;

impl Game {
    /// Makes the numbered move (`None`: action 0) at the pending use.
    pub(super) fn play(&mut self, mv: Option<Offer>) {
        let choice = match mv {
            None => Choice::Level0,
            Some(m) => match m.mode {
                Mode::Keep => Choice::Keep,
                Mode::Define => Choice::Define {
                    offset: m.allocation.offset,
                },
                Mode::Prefetch | Mode::PrefetchLate | Mode::PrefetchEarly => Choice::Prefetch {
                    start: m.allocation.start,
                    offset: m.allocation.offset,
                    // Only `prefetch-early` may go beyond the copy budget.
                    within_budget: m.mode != Mode::PrefetchEarly,
                },
            },
        };
        self.play_choice(choice, None);
    }

    /// Makes `choice` at the pending use; `hold`, where given, says how the chunk the use
    /// then reads from ends.
    pub(super) fn play_choice(&mut self, choice: Choice, hold: Option<xla_msa::Hold>) {
        if self.walk.pending().is_some() {
            // Every move was checked before: none can fail (evictions are made even over
            // budget, as XLA does on its last try).
            let done = self.walk.apply(&self.setup.rules, choice);
            debug_assert!(done, "a checked move failed: {choice:?}");
            if hold.is_some() && choice != Choice::Level0 {
                self.walk.hold_until(hold);
            }
        }
        self.sync_latencies();
    }

    /// Brings the cost tally and the simulation up to the current buffer's allocations.
    fn sync_latencies(&mut self) {
        let Some(b) = self.walk.buffer() else {
            return;
        };
        let mut now = self.allocs[b].to_vec();
        now.extend(self.walk.pass_allocations());
        now.sort_by_key(|a| a.start);
        if now != self.shown {
            if self.defer {
                if !self.lag.contains_key(&b) {
                    let held = std::mem::take(&mut self.shown);
                    self.lag.insert(b, Arc::new(held));
                }
                self.shown = now;
                return;
            }
            let cost = self.setup.cost_model();
            self.tally.apply(cost, b, &self.shown, &now);
            self.sim.change(b, &self.shown, &now);
            self.shown = now;
        }
    }

    /// Starts the walk's pass (`next`: the one after the pass under way), skipping levels
    /// the heap cannot model; a later pass plans with the op times of the mapping so far.
    pub(super) fn start_pass(&mut self, next: bool) {
        let setup = Arc::clone(&self.setup);
        // No buffer's turn is under way between passes: the finished turns are the
        // mapping so far.
        let allocs = &self.allocs;
        let mapping = || finished_mapping(&setup, allocs);
        let started = if next {
            self.walk.next_pass(&setup.rules, mapping)
        } else {
            self.walk.start_pass(&setup.rules, mapping)
        };
        if started {
            self.pos = 0;
        }
    }

    /// Goes on from the last move to the next use with a choice: the items that need
    /// none, uses where only action 0 is on offer, buffers, passes; `hook` hears where each
    /// buffer of a pass begins and ends, and may stop the walk between two buffers.
    pub(crate) fn settle_with(&mut self, hook: &mut dyn Boundaries) -> Settled {
        let setup = Arc::clone(&self.setup);
        loop {
            if let Some(b) = self.walk.buffer() {
                // Only an item passed over can have changed the buffer's allocations.
                if self.walk.advance(&setup.rules) {
                    self.sync_latencies();
                }
                if self.walk.pending().is_some() {
                    self.make_menu();
                    // A turn wherever a move other than level 0 exists: one of the menu's,
                    // or one given in full (another start or offset, or a chunk written
                    // before the use).
                    let any = || {
                        self.walk
                            .choices(&setup.rules)
                            .is_some_and(|ch| ch.any_chunk())
                    };
                    if !self.menu.is_empty() || any() {
                        return Settled::Turn;
                    }
                    self.play(None);
                    continue;
                }
                // The buffer is done in this pass.
                if let Some((b, out)) = self.walk.finish_buffer(&setup.rules) {
                    if let Some(mine) = self.allocs.get_mut(b).map(Arc::make_mut) {
                        mine.extend(out);
                        mine.sort_by_key(|a| a.start);
                    }
                    debug_assert_eq!(*self.allocs[b], self.shown);
                }
                self.shown.clear();
                hook.done(self, self.pos - 1, b);
                continue;
            }
            if self.walk.in_pass() {
                if let Some(&b) = setup.orders[self.walk.pass()].get(self.pos) {
                    // The buffer's copies are numbered from its place (before the hook,
                    // which notes where the budgets stand).
                    self.walk.order_copies(self.pos as u64);
                    if !hook.begin(self, self.pos) {
                        return Settled::Boundary;
                    }
                    self.pos += 1;
                    let prior = Arc::clone(&self.allocs[b]);
                    if self.walk.begin_buffer(&setup.rules, b, &prior) {
                        self.shown = prior.to_vec();
                    } else {
                        hook.done(self, self.pos - 1, b);
                    }
                    continue;
                }
                self.start_pass(true);
                continue;
            }
            // Every pass is done.
            self.menu.clear();
            let (s, last) = setup.finish(self);
            self.final_latency = Some(s);
            return Settled::Over(last);
        }
    }
}

/// Where [`Game::settle_with`] stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Settled {
    /// At a turn.
    Turn,
    /// Between two buffers of a pass, before the next begins: the hook said so.
    Boundary,
    /// At the end; the last turn's extra reward.
    Over(f64),
}

/// What a line's recorder hears of a game's walk between turns: each buffer of a pass
/// beginning and ending, at its place in the pass's order.
pub(crate) trait Boundaries {
    /// The buffer at place `pos` of the pass's order is about to begin (nothing of it is
    /// done yet); `false` stops the walk there.
    fn begin(&mut self, game: &Game, pos: usize) -> bool;
    /// The buffer at place `pos` (buffer `b`) is done in this pass: its allocations are
    /// in the game's mapping.
    fn done(&mut self, game: &Game, pos: usize, b: accel_sim::BufferId);
}

/// Hears nothing and never stops the walk: plain play.
pub(crate) struct NoHook;

impl Boundaries for NoHook {
    fn begin(&mut self, _: &Game, _: usize) -> bool {
        true
    }
    fn done(&mut self, _: &Game, _: usize, _: accel_sim::BufferId) {}
}
