//! The mallocGame (rules: docs/mallocgame.md; changes from the first design are noted here).
//!
//! One turn per buffer, in the presentation order. Action 0 leaves the buffer in level 0;
//! every other action is a (level, mode, slot) triple that places the buffer's one fast
//! allocation at the slot-th best-fit canonical offset. Every finished game is a valid
//! mapping, and the undiscounted return is `(S0 - S) / S0`: the fraction of the all-slow
//! simulated latency that the mapping saves.
//!
//! Changes from the first design of the rules, and why (docs/mallocgame.md lists them all):
//! - A `resident` *output* is held from its definition to its last use (not to the program
//!   end), with its eviction issued right after the definition: holding it to the end
//!   would only waste the level, since level 0 receives it anyway.
//! - The picker's `latest` start falls back to its earliest start when no start hides
//!   `min_overlap` of the copy (XLA would refuse the prefetch; the game lets the player try
//!   and the simulator judge).

use crate::occupancy::{Candidate, Chunk, Occupancy};
use crate::options::{GameOptions, Mode, Order};
use crate::picker::PickerConfig;
use accel_sim::{
    Allocation, Arrival, BufferId, BufferKind, CostModel, CostTally, Hardware, Mapping, OpId,
    Program, Simulator,
};
use std::sync::Arc;

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

/// A placement plan for one (buffer, level, mode): the interval, without the offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub start: OpId,
    pub end: OpId,
    arrival: Arrival,
    eviction: Option<OpId>,
}

/// Everything about a game that does not change while it is played: shared by every
/// episode and clone through an `Arc`.
#[derive(Debug)]
pub struct GameSetup {
    program: Arc<Program>,
    hw: Hardware,
    options: GameOptions,
    cost: CostModel,
    /// Hardware level of each level index, fastest first.
    levels: Vec<usize>,
    order: Vec<BufferId>,
    /// `plans[b][li * modes + mi]`; `None` when the mode does not apply or twins a
    /// lower-numbered one.
    plans: Vec<Vec<Option<Plan>>>,
    /// Simulated latency of the all-level-0 mapping.
    s0: f64,
    /// Memory-boundedness of each buffer in the fastest level (observation feature).
    boundedness: Vec<f64>,
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
        let levels: Vec<usize> = (0..options.fast_levels).map(|i| hw.fastest() - i).collect();
        let n = program.buffers().len();
        let fastest = hw.fastest();
        let boundedness: Vec<f64> = (0..n)
            .map(|b| cost.memory_boundedness(b, fastest))
            .collect();
        let order = match options.order {
            Order::Xla => crate::baselines::xla::xla_order(&program, &cost, fastest),
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
        };
        let picker = PickerConfig::default();
        let plans = (0..n)
            .map(|b| {
                let mut row = Vec::with_capacity(levels.len() * options.modes.len());
                for &level in &levels {
                    let first = row.len();
                    for &mode in &options.modes {
                        let p = plan(&program, &hw, &cost, &picker, b, level, mode);
                        let twin = row[first..].contains(&p);
                        row.push(if twin { None } else { p });
                    }
                }
                row
            })
            .collect();
        let s0 = Simulator::new(&program, &hw)
            .run(&Mapping::all_slow(&program), false)
            .latency_s;
        Ok(Arc::new(GameSetup {
            program,
            hw,
            options,
            cost,
            levels,
            order,
            plans,
            s0,
            boundedness,
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
    /// The buffers in the order they take their turns.
    pub fn order(&self) -> &[BufferId] {
        &self.order
    }
    /// The hardware level of level index `li` (0 = fastest).
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

    /// A new episode.
    pub fn start(self: &Arc<Self>) -> Game {
        let tally = CostTally::new(&self.cost);
        Game {
            setup: Arc::clone(self),
            turn: 0,
            placements: vec![None; self.program.buffers().len()],
            occupancy: vec![Occupancy::new(self.program.len()); self.levels.len()],
            tally,
            rewards: Vec::with_capacity(self.order.len()),
            actions: Vec::with_capacity(self.order.len()),
            final_latency: None,
        }
    }

    /// The plan of mode index `mi` in level index `li` for buffer `b`; `None` when the
    /// mode does not apply or twins a lower-numbered one.
    pub(crate) fn plan(&self, b: BufferId, li: usize, mi: usize) -> Option<Plan> {
        self.plans[b][li * self.options.modes.len() + mi]
    }

    /// The allocation `plan` makes in level index `li` at `offset`.
    pub(crate) fn allocation(&self, li: usize, plan: &Plan, offset: u64) -> Allocation {
        Allocation {
            level: self.levels[li],
            offset,
            start: plan.start,
            end: plan.end,
            arrival: plan.arrival,
            eviction: plan.eviction,
        }
    }

    /// The simulated latency `S` of a finished game's mapping and what its last turn adds
    /// to the reward, given the cost model's latency `proxy` of that mapping.
    pub(crate) fn finish(&self, proxy: f64, mapping: &Mapping) -> (f64, f64) {
        let s = Simulator::new(&self.program, &self.hw)
            .run(mapping, false)
            .latency_s;
        (s, self.last_reward(proxy, s))
    }

    /// What the last turn adds to the reward of a game whose mapping has the cost-model
    /// latency `proxy` and the simulated latency `s`.
    pub(crate) fn last_reward(&self, proxy: f64, s: f64) -> f64 {
        let p0 = self.cost.all_slow_latency();
        (proxy - s) / self.s0 - (p0 - self.s0) / self.s0
    }

    /// A short human name of an action: `level 1 CMEM prefetch slot 0`.
    pub fn action_name(&self, action: usize) -> String {
        match self.options.decode(action) {
            None if action == 0 => "level 0".into(),
            None => format!("invalid action {action}"),
            Some((li, mi, k)) => {
                let level = self.levels[li];
                format!(
                    "{} {} slot {k}",
                    self.hw.levels[level].name,
                    self.options.modes[mi].as_str()
                )
            }
        }
    }
}

/// The interval a mode gives buffer `b` in `level` (docs/mallocgame.md, "One turn").
fn plan(
    program: &Program,
    hw: &Hardware,
    cost: &CostModel,
    picker: &PickerConfig,
    b: BufferId,
    level: usize,
    mode: Mode,
) -> Option<Plan> {
    let uses = program.uses(b);
    let def = program.def(b);
    let (_, live_end) = program.live_range(b);
    let available = def.map_or(0, |d| d + 1);
    let last_use = uses.last().copied();
    let prefetch = |lo: OpId, u: OpId, late: bool| {
        let w = picker.window(cost, hw, b, level, lo, u);
        Plan {
            start: if late { w.latest } else { w.preferred },
            end: live_end.min(last_use.unwrap_or(u)),
            arrival: Arrival::Prefetch,
            eviction: None,
        }
    };
    match mode {
        Mode::Resident => Some(match def {
            None => Plan {
                start: 0,
                end: live_end,
                arrival: Arrival::Prefetch,
                eviction: None,
            },
            Some(d) => {
                let output = program.buffer(b).kind == BufferKind::Output;
                Plan {
                    start: d,
                    end: if output {
                        last_use.unwrap_or(d).max(d)
                    } else {
                        live_end
                    },
                    arrival: Arrival::Defined,
                    eviction: output.then_some(d),
                }
            }
        }),
        Mode::Prefetch | Mode::PrefetchLate => {
            let u = *uses.iter().find(|&&u| u >= available)?;
            Some(prefetch(available, u, mode == Mode::PrefetchLate))
        }
        Mode::PrefetchLast => {
            let u = *uses.last()?;
            let lo = match uses.len() {
                1 => available,
                n => available.max(uses[n - 2] + 1),
            };
            (lo <= u).then(|| prefetch(lo, u, false))
        }
    }
}

/// One episode of the mallocGame. Cloning copies the placements, the occupancy index and
/// the cost tally, `O(buffers + ops)`; the setup is shared.
#[derive(Clone, Debug)]
pub struct Game {
    setup: Arc<GameSetup>,
    turn: usize,
    placements: Vec<Option<Allocation>>,
    occupancy: Vec<Occupancy>,
    tally: CostTally,
    rewards: Vec<f64>,
    actions: Vec<usize>,
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
        self.turn >= self.setup.order.len()
    }
    /// Turns played so far.
    pub fn turn(&self) -> usize {
        self.turn
    }
    /// Turns in a whole game (one per buffer).
    pub fn length(&self) -> usize {
        self.setup.order.len()
    }
    /// The buffer whose turn it is.
    pub fn current_buffer(&self) -> Option<BufferId> {
        self.setup.order.get(self.turn).copied()
    }
    /// The rewards of the turns played so far.
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }
    /// The actions played so far.
    pub fn actions(&self) -> &[usize] {
        &self.actions
    }
    /// Sum of the rewards so far; at the end, `(S0 - S) / S0`.
    pub fn total_return(&self) -> f64 {
        self.rewards.iter().sum()
    }
    /// The cost model's latency of the placements so far (`P(t)`), seconds.
    pub fn proxy_latency(&self) -> f64 {
        self.tally.latency()
    }
    /// The simulated latency `S`, once the game is over.
    pub fn final_latency(&self) -> Option<f64> {
        self.final_latency
    }
    /// The fast allocation each buffer got so far.
    pub fn placement(&self, b: BufferId) -> Option<&Allocation> {
        self.placements[b].as_ref()
    }
    /// The occupancy of level index `li` (0 = fastest).
    pub fn occupancy(&self, li: usize) -> &Occupancy {
        &self.occupancy[li]
    }

    /// The observation vector (see [`crate::observation`]); its length depends only on
    /// the game options.
    pub fn observation(&self) -> Vec<f32> {
        let mut out = vec![0.0; crate::observation::observation_len(&self.setup.options)];
        crate::observation::encode(self, &mut out);
        out
    }

    /// The mapping built so far (buffers without a turn yet are in level 0).
    pub fn mapping(&self) -> Mapping {
        let mut m = Mapping::all_slow(&self.setup.program);
        for (b, p) in self.placements.iter().enumerate() {
            if let Some(a) = p {
                m.buffers[b].allocations.push(*a);
            }
        }
        m
    }

    /// A finished game rebuilt from its turns (each turn's action and the allocation it
    /// made) and rewards, as [`Game::apply_action`] would have left it, without searching
    /// for offsets again. The caller vouches that the turns are legal.
    pub(crate) fn from_turns(
        setup: &Arc<GameSetup>,
        turns: &[(usize, Option<Allocation>)],
        rewards: Vec<f64>,
        final_latency: Option<f64>,
    ) -> Game {
        let mut g = setup.start();
        for (&(action, allocation), &b) in turns.iter().zip(&setup.order) {
            if let Some(a) = allocation {
                g.place(b, a);
            }
            g.actions.push(action);
        }
        g.turn = turns.len();
        g.rewards = rewards;
        g.final_latency = final_latency;
        g
    }

    /// Enters buffer `b`'s allocation in the occupancy, the cost tally and the placements.
    fn place(&mut self, b: BufferId, a: Allocation) {
        let setup = Arc::clone(&self.setup);
        let li = setup.levels.iter().position(|&l| l == a.level).unwrap_or(0);
        self.occupancy[li].insert(Chunk {
            start: a.start,
            end: a.end,
            offset: a.offset,
            // Within the capacity: the offset came from a gap that holds the buffer.
            top: a.offset.saturating_add(setup.program.buffer(b).size),
        });
        self.tally
            .apply(&setup.cost, b, &[], std::slice::from_ref(&a));
        self.placements[b] = Some(a);
    }

    fn candidates(
        &self,
        b: BufferId,
        li: usize,
        plan: &Plan,
        max: usize,
        out: &mut Vec<Candidate>,
    ) {
        let setup = &*self.setup;
        let level = &setup.hw.levels[setup.levels[li]];
        self.occupancy[li].candidates(
            plan.start,
            plan.end,
            setup.program.buffer(b).size,
            level,
            max,
            out,
        );
    }

    /// Calls `f(action, allocation, gap)` for every legal action but 0, in action order;
    /// `gap` is the size of the free gap the allocation starts.
    pub fn for_each_legal(&self, mut f: impl FnMut(usize, Allocation, u64)) {
        let Some(b) = self.current_buffer() else {
            return;
        };
        let setup = &*self.setup;
        let modes = setup.options.modes.len();
        let mut out = Vec::with_capacity(setup.options.slots);
        for li in 0..setup.levels.len() {
            for mi in 0..modes {
                let Some(plan) = setup.plans[b][li * modes + mi] else {
                    continue;
                };
                self.candidates(b, li, &plan, setup.options.slots, &mut out);
                for (k, c) in out.iter().enumerate() {
                    f(
                        setup.options.encode(li, mi, k),
                        Allocation {
                            level: setup.levels[li],
                            offset: c.offset,
                            start: plan.start,
                            end: plan.end,
                            arrival: plan.arrival,
                            eviction: plan.eviction,
                        },
                        c.gap,
                    );
                }
            }
        }
    }

    /// The legal actions, ascending; empty once the game is over. Action 0 is always legal
    /// before the end.
    pub fn legal_actions(&self) -> Vec<usize> {
        if self.is_terminal() {
            return Vec::new();
        }
        let mut v = vec![0];
        self.for_each_legal(|a, _, _| v.push(a));
        v
    }

    /// Writes the legal-action mask into `mask` (length `action_count`).
    pub fn legal_mask(&self, mask: &mut [bool]) {
        mask.fill(false);
        if self.is_terminal() {
            return;
        }
        mask[0] = true;
        self.for_each_legal(|a, _, _| mask[a] = true);
    }

    /// The allocation a legal non-zero action makes, or the reason it is illegal.
    pub fn allocation_for(&self, action: usize) -> Result<Option<Allocation>, GameError> {
        let b = self.current_buffer().ok_or(GameError::Terminal)?;
        let setup = &*self.setup;
        if action == 0 {
            return Ok(None);
        }
        let illegal = |reason: String| GameError::Illegal {
            action,
            buffer: setup.program.buffer(b).name.clone(),
            reason,
        };
        let (li, mi, k) = setup
            .options
            .decode(action)
            .ok_or_else(|| illegal(format!("actions are 0..{}", setup.action_count())))?;
        let plan = setup.plans[b][li * setup.options.modes.len() + mi].ok_or_else(|| {
            illegal(format!(
                "mode `{}` does not apply to this buffer (or gives the same placement as a lower-numbered action)",
                setup.options.modes[mi].as_str()
            ))
        })?;
        let mut out = Vec::with_capacity(k + 1);
        self.candidates(b, li, &plan, k + 1, &mut out);
        let c = out
            .get(k)
            .ok_or_else(|| illegal(format!("slot {k}: only {} offsets fit", out.len())))?;
        Ok(Some(Allocation {
            level: setup.levels[li],
            offset: c.offset,
            start: plan.start,
            end: plan.end,
            arrival: plan.arrival,
            eviction: plan.eviction,
        }))
    }

    /// The cost model's latency change if the current buffer took `allocation`.
    pub fn cost_delta(&self, allocation: &Allocation) -> f64 {
        match self.current_buffer() {
            Some(b) => self
                .tally
                .delta(&self.setup.cost, b, &[], std::slice::from_ref(allocation)),
            None => 0.0,
        }
    }

    /// Plays `action` for the current buffer; returns its reward.
    pub fn apply_action(&mut self, action: usize) -> Result<f64, GameError> {
        let allocation = self.allocation_for(action)?;
        self.apply_legal(action, allocation)
    }

    /// Plays `action`, which makes `allocation`: what [`Game::for_each_legal`] offered
    /// for it on this very state (a player that has it saves searching the offset again).
    pub(crate) fn apply_legal(
        &mut self,
        action: usize,
        allocation: Option<Allocation>,
    ) -> Result<f64, GameError> {
        let b = self.current_buffer().ok_or(GameError::Terminal)?;
        let setup = Arc::clone(&self.setup);
        let before = self.tally.latency();
        if let Some(a) = allocation {
            self.place(b, a);
        }
        let mut reward = (before - self.tally.latency()) / setup.s0;
        self.turn += 1;
        if self.is_terminal() {
            let (s, last) = setup.finish(self.tally.latency(), &self.mapping());
            self.final_latency = Some(s);
            reward += last;
        }
        self.rewards.push(reward);
        self.actions.push(action);
        Ok(reward)
    }
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
        // Play every legal action at every turn through a small tree (depth-first over a
        // few branches), checking the invariants at each leaf.
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
                leaves += 1;
                continue;
            }
            for a in g.legal_actions() {
                let mut c = g.clone();
                c.apply_action(a).unwrap();
                stack.push(c);
            }
        }
        assert!(leaves >= 50, "{leaves}");
    }

    #[test]
    fn illegal_actions_are_errors() {
        let mut g = Game::new(small(), hw(), GameOptions::default()).unwrap();
        let legal = g.legal_actions();
        let illegal = (0..g.action_count()).find(|a| !legal.contains(a)).unwrap();
        assert!(matches!(
            g.apply_action(illegal),
            Err(GameError::Illegal { .. })
        ));
        assert!(g.apply_action(999).is_err());
        while !g.is_terminal() {
            g.apply_action(0).unwrap();
        }
        assert_eq!(g.apply_action(0), Err(GameError::Terminal));
        assert!(g.total_return().abs() < 1e-12);
    }

    #[test]
    fn twins_are_illegal() {
        // `a` has one use, so prefetch-last would repeat prefetch.
        let g = Game::new(small(), hw(), GameOptions::default()).unwrap();
        let setup = g.setup();
        let a = 2;
        let modes = setup.options().modes.len();
        let pos = |m: Mode| setup.options().modes.iter().position(|&x| x == m).unwrap();
        assert!(setup.plans[a][pos(Mode::Prefetch)].is_some());
        assert!(setup.plans[a][pos(Mode::PrefetchLast)].is_none());
        assert_eq!(setup.plans[a].len(), modes);
    }
}
