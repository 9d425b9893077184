//! One episode of the game and its surface, OpenSpiel-like: the legal actions, applying
//! one, the rewards, whether it is over, the observation; and what the players and the
//! viewer read of a turn (each move's chunk and its effect on the latency).

use super::menu::Offer;
use super::moves::Decision;
use super::setup::GameSetup;
use super::tally::Tally;
use super::turns::{Boundaries, NoHook, Settled};
use super::GameError;
use crate::options::{GameOptions, Mode, Reward};
use accel_sim::{Allocation, Arrival, BufferId, Hardware, LiveSim, Mapping, OpId, Program};
use std::sync::Arc;
use xla_msa::{ChunkHeap, Walk};

/// One episode of the mallocGame. The allocations, heaps, copy budgets, cost tally and
/// history are persistent structures, so cloning a game is `O(1)` and each move then
/// copies only the few pieces it changes (`O(log n)` each); the setup is shared.
#[derive(Clone, Debug)]
pub struct Game {
    pub(super) setup: Arc<GameSetup>,
    pub(super) turn: usize,
    /// Each buffer's allocations from its finished turns, sorted by start. Each list sits
    /// behind its own `Arc`: copying a shared piece of the vector then copies pointers,
    /// not lists (a large beam search spent a tenth of its time on those before).
    pub(super) allocs: imbl::Vector<Arc<Vec<Allocation>>>,
    /// XLA's passes, walked to the pending use: the pass under way, its heap and op
    /// times, the copy budgets and the buffer whose uses are being decided.
    pub(super) walk: Walk,
    /// The next buffer of the pass's order.
    pub(super) pos: usize,
    /// The current buffer's allocations as the cost tally and the simulation hold them.
    pub(super) shown: Vec<Allocation>,
    /// The legal moves of the pending use, in action order.
    pub(super) menu: Vec<Offer>,
    /// The open chunk as it would be closed before the pending use (evicted if need be).
    pub(super) closed: Option<Allocation>,
    pub(super) tally: Tally,
    /// The simulation of the mapping so far.
    pub(super) sim: LiveSim,
    pub(super) rewards: imbl::Vector<f64>,
    /// What each turn decided.
    pub(super) decisions: imbl::Vector<Decision>,
    pub(super) final_latency: Option<f64>,
    /// Buffers whose allocations a line changed in this state without the cost tally and
    /// the simulation (the allocations those still hold): empty in a game played turn by
    /// turn ([`Game::sync_simulation`]).
    pub(super) lag: imbl::OrdMap<BufferId, Arc<Vec<Allocation>>>,
    /// The tally and the simulation wait until asked ([`Game::defer_simulation`]).
    pub(super) defer: bool,
}

impl Game {
    /// A new game over `program` on `hw`.
    pub fn new(
        program: Arc<Program>,
        hw: Hardware,
        options: GameOptions,
    ) -> Result<Game, GameError> {
        Ok(GameSetup::new(program, hw, options)?.start())
    }

    /// The setup the game was started from.
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.setup
    }
    /// Actions on a turn's menu (the same every turn).
    pub fn action_count(&self) -> usize {
        self.setup.action_count()
    }
    /// Whether every turn has been played: the mapping is final.
    pub fn is_terminal(&self) -> bool {
        self.final_latency.is_some()
    }
    /// Turns played so far.
    pub fn turn(&self) -> usize {
        self.turn
    }
    /// The most turns the whole game can take ([`GameSetup::max_turns`]); a game ends
    /// sooner when uses are served by a faster level or have only action 0 on offer.
    pub fn length(&self) -> usize {
        if self.is_terminal() {
            self.turn
        } else {
            self.setup.max_turns.max(self.turn + 1)
        }
    }
    /// The buffer whose turn it is.
    pub fn current_buffer(&self) -> Option<BufferId> {
        self.pending().map(|(b, _)| b)
    }
    /// The buffer whose turn it is and the use the turn decides.
    pub fn pending(&self) -> Option<(BufferId, OpId)> {
        if self.is_terminal() {
            return None;
        }
        self.walk.pending()
    }
    /// The pass under way (0 = the fastest level); [`GameSetup::passes`] once over.
    pub fn pass(&self) -> usize {
        self.walk.pass()
    }
    /// The rewards of the turns played so far.
    pub fn rewards(&self) -> Vec<f64> {
        self.rewards.iter().copied().collect()
    }
    /// The numbered actions played so far; a turn decided by a move given in full
    /// ([`Game::apply_move`]) is [`Game::MOVE_GIVEN`] ([`Game::decisions`] has it).
    pub fn actions(&self) -> Vec<usize> {
        self.decisions.iter().map(numbered).collect()
    }
    /// The numbered action of turn `t`, once played ([`Game::actions`]).
    pub fn action_at(&self, t: usize) -> Option<usize> {
        self.decisions.get(t).map(numbered)
    }
    /// What each turn decided so far.
    pub fn decisions(&self) -> Vec<Decision> {
        self.decisions.iter().copied().collect()
    }
    /// What turn `t` decided, once played.
    pub fn decision_at(&self, t: usize) -> Option<Decision> {
        self.decisions.get(t).copied()
    }
    /// Whether every turn so far played a numbered action.
    pub fn all_numbered(&self) -> bool {
        self.decisions
            .iter()
            .all(|d| matches!(d, Decision::Action(_)))
    }
    /// Sum of the rewards so far; at the end, `(S0 - S) / S0`.
    pub fn total_return(&self) -> f64 {
        self.rewards.iter().sum()
    }
    /// The cost model's latency of the placements so far (`P(t)`), seconds.
    pub fn proxy_latency(&self) -> f64 {
        self.tally.latency()
    }
    /// The simulated latency of the mapping so far (`S(t)`; uses not decided yet read
    /// level 0), seconds, kept up to date turn by turn. At the end it is within rounding of
    /// [`Game::final_latency`], which is a whole run.
    pub fn simulated_latency(&self) -> f64 {
        self.sim.latency_s()
    }
    /// The running latency the rewards measure ([`GameOptions::reward`]): `S(t)` or `P(t)`.
    pub fn latency(&self) -> f64 {
        match self.setup.options().reward {
            Reward::Simulated => self.sim.latency_s(),
            Reward::Proxy => self.tally.latency(),
        }
    }
    /// The simulation of the mapping so far, for what it knows op by op (the observation).
    pub(crate) fn simulation(&self) -> &LiveSim {
        &self.sim
    }
    /// The simulated latency `S`, once the game is over.
    pub fn final_latency(&self) -> Option<f64> {
        self.final_latency
    }
    /// The chunks placed so far in the level of pass `li` (`None` before it starts): XLA's
    /// bookkeeping, for the observation; not the game's surface.
    pub(crate) fn heap(&self, li: usize) -> Option<&ChunkHeap> {
        self.walk.heap(self.setup.level(li))
    }
    /// The chunk the current buffer holds in the pass's level (through its last use
    /// decided so far), and whether its defining op wrote it there.
    pub(crate) fn open_chunk(&self) -> Option<(Allocation, bool)> {
        let a = self.walk.open_allocation()?;
        Some((a, a.arrival == Arrival::Defined))
    }
    /// The current buffer's uses decided so far in this pass, and in all.
    pub(crate) fn uses_decided(&self) -> (usize, usize) {
        self.walk.uses_decided()
    }
    /// The position in the pass's order of the buffer after the current one.
    pub(crate) fn next_in_order(&self) -> usize {
        self.pos
    }
    /// The op that starts the current segment: the previous use (or the definition).
    pub(crate) fn segment_start(&self) -> Option<OpId> {
        self.walk.segment_start()
    }

    /// The observation vector (see [`crate::observation`]); its length depends only on
    /// the game options.
    pub fn observation(&self) -> Vec<f32> {
        let mut out = vec![0.0; crate::observation::observation_len(self.setup.options())];
        crate::observation::encode(self, &mut out);
        out
    }

    /// The mapping built so far (uses not decided yet read level 0).
    pub fn mapping(&self) -> Mapping {
        let mut m = self.finished_mapping();
        if let Some(b) = self.walk.buffer() {
            m.buffers[b].allocations.clone_from(&self.shown);
        }
        m
    }

    fn finished_mapping(&self) -> Mapping {
        finished_mapping(&self.setup, &self.allocs)
    }

    /// Calls `f(action, allocation, gap)` for every legal action but 0, in action order:
    /// the chunk the action opens or extends, held through the pending use, and the size
    /// of the free gap it sits in.
    pub fn for_each_legal(&self, mut f: impl FnMut(usize, Allocation, u64)) {
        if self.is_terminal() {
            return;
        }
        for m in &self.menu {
            f(m.action, m.allocation, m.gap);
        }
    }

    /// The legal actions, ascending; empty once the game is over. Action 0 is always legal
    /// before the end.
    pub fn legal_actions(&self) -> Vec<usize> {
        if self.is_terminal() {
            return Vec::new();
        }
        let mut v = Vec::with_capacity(self.menu.len() + 1);
        v.push(0);
        v.extend(self.menu.iter().map(|m| m.action));
        v
    }

    /// Writes the legal-action mask into `mask` (length `action_count`).
    pub fn legal_mask(&self, mask: &mut [bool]) {
        mask.fill(false);
        if self.is_terminal() {
            return;
        }
        mask[0] = true;
        for m in &self.menu {
            mask[m.action] = true;
        }
    }

    /// Whether the game is not over and action 0 is the only numbered action on offer (a
    /// turn that exists for moves given in full alone).
    pub fn only_action_0(&self) -> bool {
        !self.is_terminal() && self.menu.is_empty()
    }

    /// Whether `action` is legal now.
    pub fn is_legal(&self, action: usize) -> bool {
        !self.is_terminal() && (action == 0 || self.menu.iter().any(|m| m.action == action))
    }

    /// The current buffer's allocations after `action` (legal) at the pending use.
    fn after(&self, action: usize) -> Vec<Allocation> {
        // Room for the move's chunk: growing the copy was most of the cost.
        let mut v = Vec::with_capacity(self.shown.len() + 1);
        v.extend_from_slice(&self.shown);
        let mv = self.menu.iter().find(|m| m.action == action);
        let open = self.walk.open_allocation();
        // The open chunk is extended by `keep`, and ends (as `closed`) otherwise.
        if let Some(i) = open.and_then(|o| v.iter().position(|a| *a == o)) {
            match mv {
                Some(m) if m.mode == Mode::Keep => {
                    v[i] = m.allocation;
                    return v;
                }
                _ => v[i] = self.closed.unwrap_or(v[i]),
            }
        }
        if let Some(m) = mv {
            v.push(m.allocation);
            v.sort_by_key(|a| a.start);
        }
        v
    }

    /// The change in the running latency ([`Game::latency`]: simulated, or the cost
    /// model's under [`Reward::Proxy`]) if `action` (legal) were played now, counting only
    /// this turn's move (not what the game does before the next turn).
    pub fn cost_delta(&self, action: usize) -> f64 {
        match self.setup.options().reward {
            Reward::Simulated => self.simulated_delta(action),
            Reward::Proxy => self.model_delta(action),
        }
    }

    /// The change in the simulated latency `S` if `action` (legal) were played now,
    /// counting only this turn's move, whatever the reward kind: what the viewer shows for
    /// each alternative.
    pub fn simulated_delta(&self, action: usize) -> f64 {
        self.moved(action).map_or(0.0, |(b, new)| {
            self.sim.latency_with(b, &self.shown, &new) - self.sim.latency_s()
        })
    }

    /// Buffer `b`'s allocations in the mapping so far ([`Game::mapping`]'s, without
    /// building the whole mapping): for the buffer whose turn it is, the chunks decided so
    /// far too.
    pub(crate) fn allocations_so_far(&self, b: BufferId) -> &[Allocation] {
        match self.walk.buffer() {
            Some(c) if c == b => &self.shown,
            _ => self.allocs.get(b).map_or(&[], |a| a.as_slice()),
        }
    }

    /// The cost model's latency change if `action` (legal) were played now, counting only
    /// this turn's move: [`Game::cost_delta`] under `reward: proxy`, and under the
    /// simulated reward the tie-breaker of the planners (a move whose effect the simulator
    /// hides behind compute changes `S` by nothing now, but not the cost model's view).
    pub fn model_delta(&self, action: usize) -> f64 {
        self.moved(action).map_or(0.0, |(b, new)| {
            self.tally
                .delta(self.setup.cost_model(), b, &self.shown, &new)
        })
    }

    /// [`Game::cost_delta`] and [`Game::model_delta`] of `action`, from one look at the
    /// move (a planner scores every child by both).
    pub(crate) fn deltas(&self, action: usize) -> (f64, f64) {
        let Some((b, new)) = self.moved(action) else {
            return (0.0, 0.0);
        };
        let model = self
            .tally
            .delta(self.setup.cost_model(), b, &self.shown, &new);
        let latency = match self.setup.options().reward {
            Reward::Simulated => self.sim.latency_with(b, &self.shown, &new) - self.sim.latency_s(),
            Reward::Proxy => model,
        };
        (latency, model)
    }

    /// The current buffer and its allocations after `action`, if it is legal now.
    fn moved(&self, action: usize) -> Option<(BufferId, Vec<Allocation>)> {
        let b = self.walk.buffer()?;
        if self.is_terminal() || !self.is_legal(action) {
            return None;
        }
        if action != 0 && self.at_definition() {
            // The chunk a definition's turn writes ends before the buffer's next turn (an
            // output's is evicted for the program end): its move is judged with that end,
            // which a planner would otherwise not see.
            let mut next = self.clone();
            next.apply_action(action).ok()?;
            return Some((b, next.allocations_so_far(b).to_vec()));
        }
        Some((b, self.after(action)))
    }

    /// Whether the pending turn is a buffer's definition, not one of its uses.
    pub(crate) fn at_definition(&self) -> bool {
        self.walk
            .choices(&self.setup.rules)
            .is_some_and(|c| c.at_definition())
    }

    /// Plays `action` for the pending use; returns its reward.
    pub fn apply_action(&mut self, action: usize) -> Result<f64, GameError> {
        self.apply_action_with(action, &mut NoHook)
    }

    /// [`Game::apply_action`], the walk to the next turn told to `hook`.
    pub(crate) fn apply_action_with(
        &mut self,
        action: usize,
        hook: &mut dyn Boundaries,
    ) -> Result<f64, GameError> {
        if self.is_terminal() {
            return Err(GameError::Terminal);
        }
        let mv = if action == 0 {
            None
        } else {
            match self.menu.iter().find(|m| m.action == action) {
                Some(m) => Some(*m),
                None => return Err(self.illegal(action)),
            }
        };
        Ok(self.decide(Decision::Action(action), |g| g.play(mv), hook))
    }

    /// Makes a checked decision with `play` (the walk's part) and goes on to the next
    /// turn (or, where `hook` says so, to the end of a buffer); returns its reward.
    pub(super) fn decide(
        &mut self,
        d: Decision,
        play: impl FnOnce(&mut Game),
        hook: &mut dyn Boundaries,
    ) -> f64 {
        let before = self.latency();
        play(self);
        self.turn += 1;
        self.decisions.push_back(d);
        let last = match self.settle_with(hook) {
            Settled::Over(last) => Some(last),
            _ => None,
        };
        let mut reward = (before - self.latency()) / self.setup.s0;
        if let Some(last) = last {
            reward += last;
        }
        self.rewards.push_back(reward);
        reward
    }

    fn illegal(&self, action: usize) -> GameError {
        let setup = &*self.setup;
        let b = self.current_buffer().unwrap_or(0);
        let reason = match setup.options().decode(action) {
            None => format!("actions are 0..{}", setup.action_count()),
            Some((mi, k)) => format!(
                "{} slot {k} is not on offer at this use (the mode does not apply, no offset fits, the copy budget is full, or it repeats a lower-numbered action)",
                setup.options().modes[mi].as_str()
            ),
        };
        GameError::Illegal {
            action,
            buffer: setup.program().buffer(b).name.clone(),
            reason,
        }
    }
}

impl Game {
    /// What [`Game::actions`] gives for a turn decided by a move given in full.
    pub const MOVE_GIVEN: usize = usize::MAX;
}

fn numbered(d: &Decision) -> usize {
    match d {
        Decision::Action(a) => *a,
        Decision::Move(_) => Game::MOVE_GIVEN,
    }
}

/// The allocations of a game's finished turns, as a mapping.
pub(super) fn finished_mapping(
    setup: &GameSetup,
    allocs: &imbl::Vector<Arc<Vec<Allocation>>>,
) -> Mapping {
    let mut m = Mapping::all_slow(setup.program());
    for (b, a) in allocs.iter().enumerate() {
        m.buffers[b].allocations.clone_from(&**a);
    }
    m
}

#[cfg(test)]
mod tests;
