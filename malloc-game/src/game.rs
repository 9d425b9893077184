//! The mallocGame, rules v2 (docs/mallocgame.md; what changed from v1 and why is listed
//! there).
//!
//! The game walks XLA's memory-space assignment (baselines/xla.rs) and stops wherever XLA
//! makes a choice: one pass per fast level, fastest first; in each pass the buffers in
//! XLA's order; for each buffer one turn per use still read from level 0. A turn says what
//! happens at that use: it reads level 0 (action 0), the chunk held so far stays through
//! it (`keep`), the defining op writes the buffer into the level (`define`), or a copy
//! brings it in (`prefetch`, `prefetch-late`), each of the last three at one of K offset
//! slots. What XLA does without choosing (ending a chunk, evicting a buffer the fast
//! level alone holds, the program end of an output, a pass's op times and copy budget) the
//! game does the same way between turns. So the XLA mapping is one trajectory of the game
//! ([`GameSetup::trajectory_of`]), every finished game is a valid mapping, and the
//! undiscounted return is `(S0 - S) / S0`.

use crate::options::{GameOptions, Mode, Order, Reward};
use accel_sim::{
    Allocation, Arrival, BufferId, CostModel, CostState, Hardware, LiveSim, Mapping, OpId, Program,
    Simulator,
};
use std::sync::Arc;
use xla_msa::heap::{Candidate, ChunkHeap};
use xla_msa::xla::{
    pass_levels, xla_order, Budgets, Cursor, Pass, PassState, Timing, Txn, XlaOptions, XlaPassStats,
};

/// A problem with a game's setup or with an action.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GameError {
    #[error("game options: {0}")]
    Options(String),
    #[error("the game is over: no action can be applied")]
    Terminal,
    #[error("action {action} is illegal for buffer `{buffer}`: {reason}")]
    Illegal {
        action: usize,
        buffer: String,
        reason: String,
    },
}

/// Where a mapping leaves the game's trajectories ([`GameSetup::trajectory_of`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a trajectory of the game: turn {turn}, buffer `{buffer}`, use at op {op}: {reason}")]
pub struct Inexpressible {
    pub turn: usize,
    pub buffer: String,
    pub op: OpId,
    pub reason: String,
    /// The actions up to that turn, each reproducing the mapping.
    pub actions: Vec<usize>,
}

/// Everything about a game that does not change while it is played: shared by every
/// episode and clone through an `Arc`.
#[derive(Debug)]
pub struct GameSetup {
    program: Arc<Program>,
    hw: Hardware,
    options: GameOptions,
    cost: CostModel,
    /// The XLA rules the game walks: XLA's defaults over the game's fast levels.
    xla: XlaOptions,
    /// Hardware level of each pass, fastest first.
    levels: Vec<usize>,
    /// The buffers of each pass in the order they take their turns.
    orders: Vec<Vec<BufferId>>,
    /// The all-level-0 op times, which the first pass plans with.
    default_timing: Arc<Timing>,
    /// Simulated latency of the all-level-0 mapping.
    s0: f64,
    /// The simulation of the all-level-0 mapping, which every game starts from.
    live0: LiveSim,
    /// The whole-run simulator of a finished game (cloned: it keeps scratch space).
    simulator: Simulator,
    /// Memory-boundedness of each buffer in the fastest level (observation feature).
    boundedness: Vec<f64>,
    /// The most turns a game can take.
    max_turns: usize,
}

impl GameSetup {
    pub fn new(
        program: Arc<Program>,
        hw: Hardware,
        options: GameOptions,
    ) -> Result<Arc<GameSetup>, GameError> {
        options
            .check(hw.levels.len() - 1)
            .map_err(GameError::Options)?;
        let cost = CostModel::new(&program, &hw);
        let xla = XlaOptions {
            max_levels: Some(options.fast_levels),
            ..XlaOptions::default()
        };
        let fastest = hw.fastest();
        let levels = pass_levels(&xla, fastest);
        let n = program.buffers().len();
        let boundedness: Vec<f64> = (0..n)
            .map(|b| cost.memory_boundedness(b, fastest))
            .collect();
        let orders: Vec<Vec<BufferId>> = levels
            .iter()
            .map(|&level| match options.order {
                Order::Xla => xla_order(&program, &cost, level),
                Order::ByStart => {
                    let mut ids: Vec<BufferId> = (0..n).collect();
                    ids.sort_by_key(|&b| (program.live_range(b).0, b));
                    ids
                }
                Order::BySize => {
                    let mut ids: Vec<BufferId> = (0..n).collect();
                    ids.sort_by_key(|&b| (std::cmp::Reverse(program.buffer(b).size), b));
                    ids
                }
            })
            .collect();
        let max_turns = levels
            .iter()
            .map(|&level| {
                let cap = hw.levels[level].capacity;
                (0..n)
                    .filter(|&b| program.buffer(b).size <= cap)
                    .map(|b| program.uses(b).len())
                    .sum::<usize>()
            })
            .sum();
        let default_mem: Vec<f64> = (0..program.len()).map(|t| cost.default_mem_s(t)).collect();
        let default_timing = Arc::new(Timing::new(&cost, default_mem));
        // The same arithmetic as a whole run of the all-level-0 mapping.
        let simulator = Simulator::new(&program, &hw);
        let live0 = simulator.live();
        let s0 = live0.latency_s();
        Ok(Arc::new(GameSetup {
            program,
            hw,
            options,
            cost,
            xla,
            levels,
            orders,
            default_timing,
            s0,
            live0,
            simulator,
            boundedness,
            max_turns,
        }))
    }

    pub fn program(&self) -> &Program {
        &self.program
    }
    pub fn program_arc(&self) -> &Arc<Program> {
        &self.program
    }
    pub fn hardware(&self) -> &Hardware {
        &self.hw
    }
    pub fn options(&self) -> &GameOptions {
        &self.options
    }
    pub fn cost_model(&self) -> &CostModel {
        &self.cost
    }
    /// The buffers of pass `pass` (0 = fastest level) in the order they take their turns.
    pub fn order(&self, pass: usize) -> &[BufferId] {
        self.orders.get(pass).map_or(&[], |o| o)
    }
    /// Number of passes (fast levels filled).
    pub fn passes(&self) -> usize {
        self.levels.len()
    }
    /// The hardware level of pass `li` (0 = fastest).
    pub fn level(&self, li: usize) -> usize {
        self.levels[li]
    }
    /// Simulated latency with everything in level 0 (`S0`).
    pub fn all_slow_latency(&self) -> f64 {
        self.s0
    }
    /// Memory-boundedness of buffer `b` in the fastest level.
    pub fn boundedness(&self, b: BufferId) -> f64 {
        self.boundedness[b]
    }
    pub fn action_count(&self) -> usize {
        self.options.action_count()
    }
    /// The rules of the XLA passes the game walks: XLA's defaults over its fast levels.
    pub fn xla_options(&self) -> &XlaOptions {
        &self.xla
    }
    /// The most turns a game can take: every use of every buffer that fits, per pass.
    pub fn max_turns(&self) -> usize {
        self.max_turns
    }

    /// A new episode, at its first turn (or finished, if the game has no choice to make).
    pub fn start(self: &Arc<Self>) -> Game {
        let timing = Arc::clone(&self.default_timing);
        let mut g = Game {
            setup: Arc::clone(self),
            turn: 0,
            allocs: {
                let none = Arc::new(Vec::new());
                (0..self.program.buffers().len())
                    .map(|_| Arc::clone(&none))
                    .collect()
            },
            pass: 0,
            states: Vec::new(),
            budgets: Budgets::new(&self.xla, &timing),
            pos: 0,
            cursor: None,
            shown: Vec::new(),
            menu: Vec::new(),
            closed: None,
            tally: Tally::new(&self.cost, self.program.buffers().len()),
            sim: self.live0.clone(),
            rewards: imbl::Vector::new(),
            actions: imbl::Vector::new(),
            final_latency: None,
        };
        g.start_pass();
        let before = g.latency();
        g.settle();
        // Nothing before the first choice can change the mapping: no chunk is open.
        debug_assert_eq!(before, g.latency());
        g
    }

    /// The simulated latency `S` of a finished game's mapping, by a whole run (the figure
    /// every other tool gives the mapping), and what the last turn's reward adds to the
    /// change in the game's running latency: under [`Reward::Proxy`], the correction from
    /// the cost model's `P(end)` to `S`; under [`Reward::Simulated`], the rounding between
    /// the incremental `S(end)` and the whole run.
    fn finish(&self, game: &Game) -> (f64, f64) {
        let s = self.simulator.clone().run(&game.mapping(), false).latency_s;
        let extra = match self.options.reward {
            Reward::Simulated => (game.sim.latency_s() - s) / self.s0,
            Reward::Proxy => {
                let p0 = self.cost.all_slow_latency();
                (game.tally.latency() - s) / self.s0 - (p0 - self.s0) / self.s0
            }
        };
        (s, extra)
    }

    /// A short human name of an action: `prefetch slot 0`, `keep`; `level 0` for action 0.
    pub fn action_name(&self, action: usize) -> String {
        match self.options.decode(action) {
            None if action == 0 => "level 0".into(),
            None => format!("invalid action {action}"),
            Some((mi, k)) => match self.options.modes[mi] {
                Mode::Keep => "keep".into(),
                m => format!("{} slot {k}", m.as_str()),
            },
        }
    }

    /// The game's actions that rebuild `mapping`, as a finished game: at each turn the
    /// move whose chunk is the one `mapping` gives the buffer at that use (action 0 where
    /// it gives none in the pass's level). The error names the first use where no legal
    /// move matches, or the first buffer whose finished allocations differ (an eviction
    /// held longer or shorter than the game's rule, a level the game does not fill).
    pub fn trajectory_of(self: &Arc<Self>, mapping: &Mapping) -> Result<Game, Inexpressible> {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let action = g.move_of(mapping).map_err(|w| Inexpressible {
                turn: g.turn,
                buffer: self.program.buffer(b).name.clone(),
                op: u,
                reason: format!(
                    "no legal move gives the chunk {:?} from op {} at offset {} in level {}",
                    w.arrival, w.start, w.offset, w.level
                ),
                actions: g.actions(),
            })?;
            // The action came from the legal menu.
            let _ = g.apply_action(action);
        }
        if let Some((b, have, want)) = self.unlike(&g.mapping(), mapping) {
            return Err(Inexpressible {
                turn: g.turn,
                buffer: self.program.buffer(b).name.clone(),
                op: want.first().or(have.first()).map_or(0, |a| a.start),
                reason: format!("the game ends with {have:?}, the mapping has {want:?}"),
                actions: g.actions(),
            });
        }
        Ok(g)
    }

    /// The first buffer whose allocations in the game's levels differ between `got` (a
    /// finished game's mapping) and `mapping`, with both lists (`got`'s first).
    pub(crate) fn unlike(
        &self,
        got: &Mapping,
        mapping: &Mapping,
    ) -> Option<(BufferId, Vec<Allocation>, Vec<Allocation>)> {
        mapping.buffers.iter().enumerate().find_map(|(b, p)| {
            let want: Vec<Allocation> = p
                .allocations
                .iter()
                .filter(|a| self.levels.contains(&a.level))
                .copied()
                .collect();
            let have = got.buffers.get(b).map_or(&[][..], |x| &x.allocations);
            (want != have).then(|| (b, have.to_vec(), want))
        })
    }
}

impl Game {
    /// The move of the pending turn whose chunk is the one `mapping` gives the buffer at
    /// that use ([`GameSetup::trajectory_of`]): action 0 where it gives none in the pass's
    /// level (or the game is over); `Err` with that chunk where no legal move gives it.
    pub(crate) fn move_of(&self, mapping: &Mapping) -> Result<usize, Allocation> {
        let Some((b, u)) = self.pending() else {
            return Ok(0);
        };
        let level = self.setup.levels[self.pass];
        let want = mapping.buffers.get(b).and_then(|p| {
            p.allocations
                .iter()
                .find(|a| a.level == level && a.start <= u && u <= a.end)
        });
        match want {
            None => Ok(0),
            Some(w) => self
                .menu
                .iter()
                .find(|m| {
                    let a = &m.allocation;
                    (a.start, a.offset, a.arrival) == (w.start, w.offset, w.arrival)
                })
                .map(|m| m.action)
                .ok_or(*w),
        }
    }
}

impl GameSetup {
    /// The game that follows `mapping` as closely as the rules allow: at each turn the move
    /// whose chunk is the mapping's (as [`GameSetup::trajectory_of`]), else one with the
    /// same start and arrival at another offset, else one with the same arrival and the
    /// nearest start, else action 0. A mapping the game cannot express (another
    /// solver's offsets, whole live ranges the no-copy rule forbids) becomes a game as
    /// near it as the game allows, scored by its own true return.
    pub fn nearest_trajectory(self: &Arc<Self>, mapping: &Mapping) -> Game {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let level = self.levels[g.pass];
            let want = mapping.buffers.get(b).and_then(|p| {
                p.allocations
                    .iter()
                    .find(|a| a.level == level && a.start <= u && u <= a.end)
            });
            let action = want.map_or(0, |w| {
                let key = |m: &Move| {
                    let a = &m.allocation;
                    let exact = (a.start, a.offset, a.arrival) == (w.start, w.offset, w.arrival);
                    let same_start = (a.start, a.arrival) == (w.start, w.arrival);
                    let same_arrival = a.arrival == w.arrival;
                    (
                        !exact,
                        !same_start,
                        !same_arrival,
                        a.start.abs_diff(w.start),
                        m.action,
                    )
                };
                g.menu.iter().min_by_key(|m| key(m)).map_or(0, |m| m.action)
            });
            // The action came from the legal menu (or is action 0).
            let _ = g.apply_action(action);
        }
        g
    }
}

/// A legal move other than action 0: the chunk it opens or extends, held through the
/// pending use, and the free gap that chunk sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Move {
    action: usize,
    mode: Mode,
    allocation: Allocation,
    gap: u64,
}

/// The cost model's running totals over persistent vectors (the arithmetic of
/// [`accel_sim::CostTally`], through [`CostModel::delta_in`] and [`CostModel::apply_in`]),
/// so a game state clones in `O(1)`.
#[derive(Clone, Debug)]
struct Tally {
    mem: MemStore,
    copy: imbl::Vector<f64>,
    total: f64,
}

/// Per-op memory times.
#[derive(Clone, Debug)]
struct MemStore(imbl::Vector<f64>);

impl accel_sim::MemTimes for MemStore {
    fn mem_s(&self, t: OpId) -> f64 {
        self.0[t]
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        self.0.set(t, v);
    }
}

impl Tally {
    fn new(model: &CostModel, buffers: usize) -> Tally {
        Tally {
            mem: MemStore((0..model.len()).map(|t| model.default_mem_s(t)).collect()),
            copy: (0..buffers).map(|_| 0.0).collect(),
            total: model.all_slow_latency(),
        }
    }
    fn latency(&self) -> f64 {
        self.total
    }
    fn delta(&self, model: &CostModel, b: BufferId, old: &[Allocation], new: &[Allocation]) -> f64 {
        model.delta_in(|t| self.mem.0[t], self.copy[b], b, old, new)
    }
    fn apply(&mut self, model: &CostModel, b: BufferId, old: &[Allocation], new: &[Allocation]) {
        let mut copy = self.copy[b];
        model.apply_in(&mut self.mem, &mut self.total, &mut copy, b, old, new);
        self.copy.set(b, copy);
    }
}

/// One episode of the mallocGame. The allocations, heaps, copy budgets, cost tally and
/// history are persistent structures, so cloning a game is `O(1)` and each move then
/// copies only the few pieces it changes (`O(log n)` each); the setup is shared.
#[derive(Clone, Debug)]
pub struct Game {
    setup: Arc<GameSetup>,
    turn: usize,
    /// Each buffer's allocations from its finished turns, sorted by start. Each list sits
    /// behind its own `Arc`: copying a shared piece of the vector then copies pointers,
    /// not lists (a large beam search spent a tenth of its time on those before).
    allocs: imbl::Vector<Arc<Vec<Allocation>>>,
    /// The pass under way (`setup.levels.len()` once all are done).
    pass: usize,
    /// The passes started so far; the last is the one under way.
    states: Vec<PassState>,
    budgets: Budgets,
    /// The next buffer of the pass's order.
    pos: usize,
    /// The buffer whose uses are being decided.
    cursor: Option<Cursor>,
    /// That buffer's allocations as the cost tally and the simulation hold them.
    shown: Vec<Allocation>,
    /// The legal moves of the pending use, in action order.
    menu: Vec<Move>,
    /// The open chunk as it would be closed before the pending use (evicted if need be).
    closed: Option<Allocation>,
    tally: Tally,
    /// The simulation of the mapping so far.
    sim: LiveSim,
    rewards: imbl::Vector<f64>,
    actions: imbl::Vector<usize>,
    final_latency: Option<f64>,
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

    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.setup
    }
    pub fn action_count(&self) -> usize {
        self.setup.action_count()
    }
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
        let c = self.cursor.as_ref()?;
        c.pending().map(|(u, _)| (c.b, u))
    }
    /// The pass under way (0 = the fastest level); [`GameSetup::passes`] once over.
    pub fn pass(&self) -> usize {
        self.pass
    }
    /// The rewards of the turns played so far.
    pub fn rewards(&self) -> Vec<f64> {
        self.rewards.iter().copied().collect()
    }
    /// The actions played so far.
    pub fn actions(&self) -> Vec<usize> {
        self.actions.iter().copied().collect()
    }
    /// The action of turn `t`, once played.
    pub fn action_at(&self, t: usize) -> Option<usize> {
        self.actions.get(t).copied()
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
        match self.setup.options.reward {
            Reward::Simulated => self.sim.latency_s(),
            Reward::Proxy => self.tally.latency(),
        }
    }
    /// The simulation of the mapping so far, for what it knows op by op (the observation).
    pub fn simulation(&self) -> &LiveSim {
        &self.sim
    }
    /// The simulated latency `S`, once the game is over.
    pub fn final_latency(&self) -> Option<f64> {
        self.final_latency
    }
    /// The allocations of buffer `b` from its finished turns.
    pub fn allocations(&self, b: BufferId) -> &[Allocation] {
        &self.allocs[b]
    }
    /// The chunks placed so far in the level of pass `li` (`None` before it starts): XLA's
    /// bookkeeping, for the observation; not the game's surface.
    pub(crate) fn heap(&self, li: usize) -> Option<&ChunkHeap> {
        self.states
            .iter()
            .find(|s| s.level == self.setup.levels[li])
            .map(|s| &s.heap)
    }
    /// The chunk the current buffer holds in the pass's level (through its last use
    /// decided so far), and whether its defining op wrote it there.
    pub(crate) fn open_chunk(&self) -> Option<(Allocation, bool)> {
        let c = self.cursor.as_ref()?;
        let level = self.states.last()?.level;
        let a = c.open_allocation(level)?;
        Some((a, a.arrival == Arrival::Defined))
    }
    /// The current buffer's uses decided so far in this pass, and in all.
    pub fn uses_decided(&self) -> (usize, usize) {
        self.cursor.as_ref().map_or((0, 0), |c| c.progress())
    }
    /// The position in the pass's order of the buffer after the current one.
    pub fn next_in_order(&self) -> usize {
        self.pos
    }
    /// The op that starts the current segment: the previous use (or the definition).
    pub fn segment_start(&self) -> Option<OpId> {
        self.cursor.as_ref().map(|c| c.p)
    }

    /// The observation vector (see [`crate::observation`]); its length depends only on
    /// the game options.
    pub fn observation(&self) -> Vec<f32> {
        let mut out = vec![0.0; crate::observation::observation_len(&self.setup.options)];
        crate::observation::encode(self, &mut out);
        out
    }

    /// The mapping built so far (uses not decided yet read level 0).
    pub fn mapping(&self) -> Mapping {
        let mut m = Mapping::all_slow(&self.setup.program);
        for (b, a) in self.allocs.iter().enumerate() {
            m.buffers[b].allocations.clone_from(&**a);
        }
        if let Some(c) = &self.cursor {
            m.buffers[c.b].allocations.clone_from(&self.shown);
        }
        m
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

    /// Whether `action` is legal now.
    pub fn is_legal(&self, action: usize) -> bool {
        !self.is_terminal() && (action == 0 || self.menu.iter().any(|m| m.action == action))
    }

    /// The current buffer's allocations after `action` (legal) at the pending use.
    fn after(&self, action: usize) -> Vec<Allocation> {
        let mut v = self.shown.clone();
        let mv = self.menu.iter().find(|m| m.action == action);
        let level = self.states.last().map_or(0, |s| s.level);
        let open = self.cursor.as_ref().and_then(|c| c.open_allocation(level));
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
        match self.setup.options.reward {
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
    pub fn allocations_so_far(&self, b: BufferId) -> &[Allocation] {
        match &self.cursor {
            Some(c) if c.b == b => &self.shown,
            _ => self.allocs.get(b).map_or(&[], |a| a.as_slice()),
        }
    }

    /// The cost model's latency change if `action` (legal) were played now, counting only
    /// this turn's move: [`Game::cost_delta`] under `reward: proxy`, and under the
    /// simulated reward the tie-breaker of the planners (a move whose effect the simulator
    /// hides behind compute changes `S` by nothing now, but not the cost model's view).
    pub fn model_delta(&self, action: usize) -> f64 {
        self.moved(action).map_or(0.0, |(b, new)| {
            self.tally.delta(&self.setup.cost, b, &self.shown, &new)
        })
    }

    /// The current buffer and its allocations after `action`, if it is legal now.
    fn moved(&self, action: usize) -> Option<(BufferId, Vec<Allocation>)> {
        let c = self.cursor.as_ref()?;
        (!self.is_terminal() && self.is_legal(action)).then(|| (c.b, self.after(action)))
    }

    /// Plays `action` for the pending use; returns its reward.
    pub fn apply_action(&mut self, action: usize) -> Result<f64, GameError> {
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
        let before = self.latency();
        self.play(mv);
        self.turn += 1;
        self.actions.push_back(action);
        let last = self.settle();
        let mut reward = (before - self.latency()) / self.setup.s0;
        if let Some(last) = last {
            reward += last;
        }
        self.rewards.push_back(reward);
        Ok(reward)
    }

    fn illegal(&self, action: usize) -> GameError {
        let setup = &*self.setup;
        let b = self.current_buffer().unwrap_or(0);
        let reason = match setup.options.decode(action) {
            None => format!("actions are 0..{}", setup.action_count()),
            Some((mi, k)) => format!(
                "{} slot {k} is not on offer at this use (the mode does not apply, no offset fits, the copy budget is full, or it repeats a lower-numbered action)",
                setup.options.modes[mi].as_str()
            ),
        };
        GameError::Illegal {
            action,
            buffer: setup.program.buffer(b).name.clone(),
            reason,
        }
    }
}

/// The game's walk through XLA's passes between turns.
impl Game {
    /// Runs `f` with the pass under way (its heap and op times) and the copy budgets.
    fn with_pass<R>(
        &mut self,
        f: impl FnOnce(&mut Pass<'_>, &mut Option<Cursor>, &mut Budgets) -> R,
    ) -> Option<R> {
        let setup = Arc::clone(&self.setup);
        let st = self.states.last_mut()?;
        let mut pass = Pass {
            program: &setup.program,
            cost: &setup.cost,
            opts: &setup.xla,
            st,
        };
        Some(f(&mut pass, &mut self.cursor, &mut self.budgets))
    }

    /// Makes the move (`None`: action 0) at the pending use.
    fn play(&mut self, mv: Option<Move>) {
        self.with_pass(|pass, cursor, budgets| {
            let Some(c) = cursor.as_mut() else {
                return;
            };
            let Some((u, _)) = c.pending() else {
                return;
            };
            let mut txn = Txn::none();
            // Every move was checked when the menu was made: none of these can fail
            // (evictions are made even over budget, as XLA does on its last try).
            let done = match mv {
                None => pass.close_open(c, u, budgets, &mut txn),
                Some(m) => match m.mode {
                    Mode::Keep => pass.keep(c, &mut txn),
                    Mode::Define => pass.define(c, m.allocation.offset, &mut txn),
                    Mode::Prefetch | Mode::PrefetchLate | Mode::PrefetchEarly => {
                        pass.close_open(c, u, budgets, &mut txn).and_then(|_| {
                            let a = m.allocation;
                            // Only `prefetch-early` may go beyond the copy budget.
                            let must_fit = m.mode != Mode::PrefetchEarly;
                            pass.prefetch_at(c, (a.start, a.offset), must_fit, budgets, &mut txn)
                        })
                    }
                },
            };
            debug_assert!(done.is_some(), "a move from the menu failed: {mv:?}");
            pass.end_use(c);
        });
        self.sync_latencies();
    }

    /// Brings the cost tally and the simulation up to the current buffer's allocations.
    fn sync_latencies(&mut self) {
        let Some(c) = &self.cursor else {
            return;
        };
        let level = self.states.last().map_or(0, |s| s.level);
        let mut now = self.allocs[c.b].to_vec();
        now.extend_from_slice(&c.out);
        now.extend(c.open_allocation(level));
        now.sort_by_key(|a| a.start);
        if now != self.shown {
            self.tally.apply(&self.setup.cost, c.b, &self.shown, &now);
            self.sim.change(c.b, &self.shown, &now);
            self.shown = now;
        }
    }

    /// Starts pass `self.pass` (skipping levels the heap cannot model): its heap, and
    /// after the first pass the op times under the mapping so far, with the copies made
    /// replayed into budgets over those times, as the baseline's cascade does.
    fn start_pass(&mut self) {
        let setup = Arc::clone(&self.setup);
        while let Some(&level) = setup.levels.get(self.pass) {
            let Ok(heap) = ChunkHeap::for_level(&setup.hw, level, setup.program.len()) else {
                self.pass += 1;
                continue;
            };
            let timing = if self.states.is_empty() {
                Arc::clone(&setup.default_timing)
            } else {
                let mapping = self.mapping();
                let state = CostState::from_mapping(&setup.cost, &mapping);
                let mem = (0..setup.program.len()).map(|t| state.mem_s(t)).collect();
                let timing = Arc::new(Timing::new(&setup.cost, mem));
                let budgets = std::mem::replace(
                    &mut self.budgets,
                    Budgets::new(&setup.xla, &setup.default_timing),
                );
                self.budgets = budgets.replayed(&setup.xla, &timing);
                timing
            };
            self.states.push(PassState {
                level,
                max_copy: setup.xla.picker.max_copy_s(&setup.hw, level),
                heap,
                timing,
                stats: XlaPassStats {
                    level,
                    ..Default::default()
                },
            });
            self.pos = 0;
            return;
        }
    }

    /// Goes on from the last move to the next use with a choice: the items that need
    /// none, uses where only action 0 is on offer, buffers, passes. Returns the last
    /// turn's extra reward if the game ends here.
    fn settle(&mut self) -> Option<f64> {
        let setup = Arc::clone(&self.setup);
        loop {
            if self.cursor.is_some() {
                let moved = self.with_pass(|pass, cursor, budgets| {
                    let c = cursor.as_mut()?;
                    let before = c.progress_mark();
                    let _ = pass.advance(c, budgets, &mut Txn::none());
                    Some(c.progress_mark() != before)
                });
                // Only an item passed over can have changed the buffer's allocations.
                if moved.flatten() == Some(true) {
                    self.sync_latencies();
                }
                if self.cursor.as_ref().is_some_and(|c| c.pending().is_some()) {
                    self.make_menu();
                    if !self.menu.is_empty() {
                        return None;
                    }
                    self.play(None);
                    continue;
                }
                // The buffer is done in this pass.
                let done =
                    self.with_pass(|pass, cursor, _| cursor.take().map(|c| (c.b, pass.finish(c))));
                if let Some(Some((b, out))) = done {
                    if let Some(mine) = self.allocs.get_mut(b).map(Arc::make_mut) {
                        mine.extend(out);
                        mine.sort_by_key(|a| a.start);
                    }
                    debug_assert_eq!(*self.allocs[b], self.shown);
                }
                self.shown.clear();
                continue;
            }
            if self.pass < setup.levels.len() && !self.states.is_empty() {
                if let Some(&b) = setup.orders[self.pass].get(self.pos) {
                    self.pos += 1;
                    let prior = self.allocs[b].clone();
                    let cursor = self.with_pass(|pass, _, _| pass.begin(b, &prior)).flatten();
                    if let Some(c) = cursor {
                        self.shown = self.allocs[b].to_vec();
                        self.cursor = Some(c);
                    }
                    continue;
                }
                self.pass += 1;
                self.start_pass();
                continue;
            }
            // Every pass is done.
            self.pass = setup.levels.len();
            self.menu.clear();
            let (s, last) = setup.finish(self);
            self.final_latency = Some(s);
            return Some(last);
        }
    }

    /// The legal moves of the pending use (docs/mallocgame.md, "One turn").
    fn make_menu(&mut self) {
        let setup = Arc::clone(&self.setup);
        let options = &setup.options;
        let mut menu = std::mem::take(&mut self.menu);
        menu.clear();
        let closed = self
            .with_pass(|pass, cursor, budgets| {
                let c = cursor.as_ref()?;
                menu_of(pass, c, budgets, options, &mut menu)
            })
            .flatten();
        self.menu = menu;
        self.closed = closed;
    }
}

/// The size of the free gap from `offset` up, among `cands` (the fitting gaps of an
/// interval); `size` when no gap holds the offset.
fn gap_at(cands: &[Candidate], offset: u64, size: u64) -> u64 {
    cands
        .iter()
        .find(|c| c.offset <= offset && offset < c.offset + c.gap)
        .map_or(size, |c| c.offset + c.gap - offset)
}

/// The moves on offer at the pending use of `c`, appended to `menu`; returns its open
/// chunk as it would be closed before that use.
fn menu_of(
    pass: &Pass<'_>,
    c: &Cursor,
    budgets: &Budgets,
    options: &GameOptions,
    menu: &mut Vec<Move>,
) -> Option<Allocation> {
    let (u, ends) = c.pending()?;
    let b = c.b;
    let level = pass.st.level;
    let size = pass.program.buffer(b).size;
    // Ending the open chunk before `u`: a buffer only this level holds is evicted, and
    // level 0 has the data from the op after the eviction's hold.
    let closed = c.open.map(|o| pass.closed(c, &o, u));
    let level0_from = match (c.open, closed) {
        (Some(o), Some(a)) if o.arrival == Arrival::Defined && c.level0_from.is_none() => {
            Some(a.end + 1)
        }
        _ => c.level0_from,
    };
    let lo = level0_from.map(|v| v.max(c.seg_lo));
    let search = lo.and_then(|lo| pass.prefetch_search(b, lo, ends, budgets));
    let window = lo.and_then(|lo| pass.window(b, lo, u));
    let late = window.map(|w| w.latest).filter(|&s| {
        // The search's start is `prefetch`'s: the same start here is its twin.
        let twin = options.modes.contains(&Mode::Prefetch) && search.is_some_and(|(x, _)| x == s);
        !twin && budgets.prefetch_fits(s, u, pass.cost.copy_s(b, level))
    });
    let mut cands = Vec::new();
    for (mi, &mode) in options.modes.iter().enumerate() {
        let slots = |start: OpId,
                     first: Option<u64>,
                     cands: &mut Vec<Candidate>,
                     menu: &mut Vec<Move>,
                     arrival| {
            let Some(first) = first else { return };
            pass.st.heap.candidates(start, u, size, cands);
            let others = cands
                .iter()
                .filter(|c| c.offset != first)
                .map(|c| (c.offset, c.gap));
            let all = std::iter::once((first, gap_at(cands, first, size))).chain(others);
            for (k, (offset, gap)) in all.take(options.slots).enumerate() {
                menu.push(Move {
                    action: options.encode(mi, k),
                    mode,
                    allocation: Allocation {
                        level,
                        offset,
                        start,
                        end: u,
                        arrival,
                        eviction: None,
                    },
                    gap,
                });
            }
        };
        match mode {
            Mode::Keep => {
                if let Some(o) = c.open {
                    if pass.st.heap.fits(o.end + 1, u, o.offset, size) {
                        // The gap over the extension: over the whole hold, the chunk's
                        // own bytes would hide it.
                        pass.st.heap.candidates(o.end + 1, u, size, &mut cands);
                        let gap = gap_at(&cands, o.offset, size);
                        menu.push(Move {
                            action: options.encode(mi, 0),
                            mode,
                            allocation: Allocation {
                                level,
                                offset: o.offset,
                                start: o.start,
                                end: u,
                                arrival: o.arrival,
                                eviction: None,
                            },
                            gap,
                        });
                    }
                }
            }
            Mode::Define => {
                if c.open.is_none() && c.can_define {
                    let first = pass.best_chunk(c.p, ends, size);
                    slots(c.p, first, &mut cands, menu, Arrival::Defined);
                }
            }
            Mode::Prefetch => {
                if let Some((s, off)) = search {
                    slots(s, Some(off), &mut cands, menu, Arrival::Prefetch);
                }
            }
            Mode::PrefetchLate => {
                if let Some(s) = late {
                    let first = pass.best_chunk(s, ends, size);
                    slots(s, first, &mut cands, menu, Arrival::Prefetch);
                }
            }
            Mode::PrefetchEarly => {
                let Some(lo) = lo else { continue };
                let s = match window {
                    Some(w) => w.earliest,
                    None => pass.earliest_start(lo, u),
                };
                let twin = |m: Mode, x: Option<OpId>| options.modes.contains(&m) && x == Some(s);
                if !twin(Mode::Prefetch, search.map(|x| x.0)) && !twin(Mode::PrefetchLate, late) {
                    // A move XLA does not make: slot 0 is the plain best fit over the
                    // chunk (no search over later ends).
                    let first = pass.st.heap.best_fit(s, u, size, None, pass.opts.top_gap);
                    slots(s, first, &mut cands, menu, Arrival::Prefetch);
                }
            }
        }
    }
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Arc<Program> {
        Arc::new(accel_sim::fixtures::three_ops("small", 1 << 20, 1e6))
    }

    fn hw() -> Hardware {
        Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap()
    }

    #[test]
    fn every_action_sequence_ends_valid_with_the_right_return() {
        // Every legal action at every turn of a small game (the whole tree), checking the
        // invariants at each leaf.
        let g = Game::new(small(), hw(), GameOptions::default()).unwrap();
        let mut stack = vec![g];
        let mut leaves = 0;
        while let Some(g) = stack.pop() {
            if g.is_terminal() {
                let m = g.mapping();
                m.validate(g.setup().program(), g.setup().hardware())
                    .unwrap();
                let s0 = g.setup().all_slow_latency();
                let s = g.final_latency().unwrap();
                assert!((g.total_return() - (s0 - s) / s0).abs() < 1e-12);
                assert_eq!(g.length(), g.turn());
                leaves += 1;
                continue;
            }
            let legal = g.legal_actions();
            assert_eq!(legal[0], 0);
            assert!(legal.len() >= 2, "a turn with only action 0 is skipped");
            for a in legal {
                let mut c = g.clone();
                let delta = c.cost_delta(a);
                let before = c.proxy_latency();
                c.apply_action(a).unwrap();
                // The move's own delta, before what the game does up to the next turn.
                assert!(delta.is_finite() && before.is_finite());
                stack.push(c);
            }
        }
        assert!(leaves >= 4, "{leaves}");
    }

    #[test]
    fn illegal_actions_are_errors_and_change_nothing() {
        let mut g = Game::new(small(), hw(), GameOptions::default()).unwrap();
        let legal = g.legal_actions();
        let illegal = (0..g.action_count()).find(|a| !legal.contains(a)).unwrap();
        let before = g.mapping();
        assert!(matches!(
            g.apply_action(illegal),
            Err(GameError::Illegal { .. })
        ));
        assert!(g.apply_action(999).is_err());
        assert_eq!(g.mapping(), before);
        assert_eq!(g.turn(), 0);
        while !g.is_terminal() {
            g.apply_action(0).unwrap();
        }
        assert_eq!(g.apply_action(0), Err(GameError::Terminal));
        assert!(g.total_return().abs() < 1e-12);
        assert_eq!(g.mapping(), Mapping::all_slow(g.setup().program()));
    }

    #[test]
    fn slot_zero_of_a_mode_is_xla_best_fit_and_slots_differ() {
        let g = Game::new(small(), hw(), GameOptions::default()).unwrap();
        let mut seen = Vec::new();
        g.for_each_legal(|a, alloc, gap| {
            assert!(gap >= g.setup().program().buffer(g.current_buffer().unwrap()).size);
            seen.push((a, alloc));
        });
        for (i, x) in seen.iter().enumerate() {
            for y in &seen[i + 1..] {
                assert_ne!(x.1, y.1, "twins {} and {}", x.0, y.0);
            }
        }
    }

    #[test]
    fn a_mapping_outside_the_rules_is_named() {
        let p = small();
        let setup = GameSetup::new(Arc::clone(&p), hw(), GameOptions::default()).unwrap();
        // The all-slow mapping is the all-zero trajectory.
        let g = setup.trajectory_of(&Mapping::all_slow(&p)).unwrap();
        assert!(g.actions().iter().all(|&a| a == 0));
        // A chunk at an offset no slot offers (not a gap start, misaligned for best fit).
        let mut m = Mapping::all_slow(&p);
        m.buffers[2].allocations = vec![Allocation {
            level: 1,
            offset: 512,
            start: 0,
            end: 1,
            arrival: Arrival::Defined,
            eviction: None,
        }];
        m.validate(&p, &hw()).unwrap();
        let e = setup.trajectory_of(&m).unwrap_err();
        assert!(e.reason.contains("no legal move"), "{e}");
        assert_eq!(e.buffer, "a");
    }
}
