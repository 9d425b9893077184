//! Beam search over whole games.
//!
//! All games in the beam are at the same turn, so their cost-model latencies
//! (`proxy_latency`) compare like for like. Each turn, every child of every game in the
//! beam is scored with `cost_delta` alone (no clone); only the `width` best are cloned and
//! played, and a parent whose only kept child is the last one to use it is moved, not
//! cloned. At the end the simulator has scored every finished game (`total_return`) and the
//! best one is returned.
//!
//! Identical children cannot occur (the beam starts from one game, two actions of one game
//! give the buffer different allocations, and children of different games inherit their
//! parents' differences), but many are the same to the ranking: the slots of one mode
//! differ only in offset, which the cost model does not see. Filling the beam with them
//! leaves no room for other lines, so among the children of one game with the same score
//! only the lowest-numbered one (action 0, else the best fit of the earliest mode) is
//! kept. On the traced suite this never did worse than keeping them all, and often better.
//!
//! The greedy line (the game [`super::GreedyPlayer`] plays) is always kept in the beam, in
//! place of the worst kept child if need be. Ranking by the cost model can drop it in
//! favour of lines the simulator then judges worse; keeping it makes `beam:W` at least as
//! good as `greedy` on every program, and `beam:1` equal to it.
//!
//! Since only the lowest-numbered of equal siblings can be kept, a game's children are
//! scored from slot 0 (the best fit) of each mode alone: the other slots could only tie
//! with it.
//!
//! The games of a beam differ in few decisions (tens on a 100k-op program), however long
//! ago they parted. So the beam keeps the placements every game has made once: a shared
//! occupancy index and shared per-op memory times; each game keeps only its own
//! placements (those not all games made) and the memory times of the ops they touch. A
//! turn queries the shared index once per mode, and each game adds its own chunks to the
//! answer. A placement every game holds (usually at once: the games mostly agree) moves
//! into the shared part. Cloning whole games made a beam quadratic in the number of
//! buffers; this costs `O(log T)` per query and insert, plus, per game and turn, the
//! number of its own placements. The best finished game is rebuilt as a [`Game`] at the
//! end. Every number is computed with the arithmetic of [`Game`] itself, in the same
//! order, so the result is the one the beam of whole games found.

use super::{Player, PROGRESS_EVERY};
use crate::game::{Game, GameSetup, Plan};
use crate::occupancy::index::{Rect, TimeIndex};
use crate::occupancy::{fitting_gaps, Candidate};
use accel_sim::MemTimes;
use accel_sim::{Allocation, BufferId, CostModel, OpId, Simulator};
use std::sync::Arc;

/// The width of `beam`.
pub const DEFAULT_WIDTH: usize = 8;

/// Beam search of width `width` (at least 1); ignores the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeamPlayer {
    width: usize,
}

impl BeamPlayer {
    /// A width of 0 is taken as 1.
    pub fn new(width: usize) -> BeamPlayer {
        BeamPlayer {
            width: width.max(1),
        }
    }
    pub fn width(&self) -> usize {
        self.width
    }
}

/// A child of a game in the beam, not played yet.
#[derive(Clone, Copy, Debug)]
struct Child {
    /// Cost-model latency after the action.
    score: f64,
    /// The action's cost-model delta (compared on its own for the greedy line, as the
    /// greedy player does, so that rounding in `score` cannot change its choice).
    delta: f64,
    /// Index of the parent in the beam.
    parent: usize,
    action: usize,
    /// The level index and allocation the action makes; `None` for action 0.
    placed: Option<(usize, Allocation)>,
}

/// An allocation some games of the beam made for the buffer of one turn.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Placement {
    /// One id per turn and allocation: games that made the same one share it.
    id: usize,
    turn: usize,
    li: usize,
    allocation: Allocation,
    rect: Rect,
}

/// One played turn of a game.
#[derive(Clone, Copy, Debug)]
struct Turn {
    action: usize,
    reward: f64,
    allocation: Option<Allocation>,
}

/// Turns a game played, in blocks of [`Turns::BLOCK`], linked to the blocks before them:
/// shared with the games that branched off later, so a clone copies only the last block.
#[derive(Debug)]
struct TurnBlock {
    prev: Option<Arc<TurnBlock>>,
    turns: Vec<Turn>,
}

impl Drop for TurnBlock {
    /// Unlinks the chain one block at a time: the default drop would recurse once per
    /// block and could overflow the stack on a long game.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(block) = prev {
            match Arc::try_unwrap(block) {
                Ok(mut b) => prev = b.prev.take(),
                Err(_) => break,
            }
        }
    }
}

/// A game's turns: the full blocks, shared, and the last few, its own.
#[derive(Clone, Debug, Default)]
struct Turns {
    done: Option<Arc<TurnBlock>>,
    last: Vec<Turn>,
}

impl Turns {
    const BLOCK: usize = 32;

    fn push(&mut self, turn: Turn) {
        if self.last.len() == Self::BLOCK {
            let turns = std::mem::replace(&mut self.last, Vec::with_capacity(Self::BLOCK));
            self.done = Some(Arc::new(TurnBlock {
                prev: self.done.take(),
                turns,
            }));
        }
        self.last.push(turn);
    }

    /// Every turn, in order.
    fn all(&self) -> Vec<Turn> {
        let mut blocks = vec![self.last.as_slice()];
        let mut at = self.done.as_deref();
        while let Some(b) = at {
            blocks.push(&b.turns);
            at = b.prev.as_deref();
        }
        blocks.into_iter().rev().flatten().copied().collect()
    }
}

/// What every game of the beam holds: the placements all of them made.
struct Shared {
    /// Per level index: the shared placements' chunks.
    levels: Vec<TimeIndex>,
    /// Per-op memory times under the shared placements.
    mem: Vec<f64>,
    /// Per op: (turn, shift) of each shared placement touching it, by turn, to fold the
    /// op's time again in turn order when a placement older than others joins.
    shifts: Shifts,
    /// Per placement id: how many games of the beam hold it.
    holders: Vec<usize>,
    /// Per buffer: the shared placement's allocation.
    placed: Vec<Option<Allocation>>,
}

/// A game of the beam: the shared part plus its own placements.
#[derive(Clone, Debug)]
struct Line {
    /// The placements not every game made, by turn.
    own: Vec<Placement>,
    /// (op, memory time, own placements touching it) for the ops its own placements
    /// touch, by op; the other ops have the shared times.
    mem: Vec<(OpId, f64, usize)>,
    /// The cost tally's latency (the game's `proxy_latency`).
    total: f64,
    turns: Turns,
    turn: usize,
    /// The sum of the rewards so far, added up as [`Game::total_return`] does.
    ret: f64,
    final_latency: Option<f64>,
}

/// A game's memory times over the shared ones, as [`CostModel::apply_in`] updates them:
/// each op written is touched by one more own placement.
struct LineMem<'a> {
    shared: &'a [f64],
    own: &'a mut Vec<(OpId, f64, usize)>,
}

impl MemTimes for LineMem<'_> {
    fn mem_s(&self, t: OpId) -> f64 {
        mem_at(self.shared, self.own, t)
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        match self.own.binary_search_by_key(&t, |e| e.0) {
            Ok(i) => {
                self.own[i].1 = v;
                self.own[i].2 += 1;
            }
            Err(i) => self.own.insert(i, (t, v, 1)),
        }
    }
}

/// A game's memory times while it plays a placement every game makes this turn: the
/// shared times will take it (appended last to each op's fold, so to the same value),
/// and only the game's own times are written.
struct SharedMem<'a> {
    shared: &'a [f64],
    own: &'a mut Vec<(OpId, f64, usize)>,
}

impl MemTimes for SharedMem<'_> {
    fn mem_s(&self, t: OpId) -> f64 {
        mem_at(self.shared, self.own, t)
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        if let Ok(i) = self.own.binary_search_by_key(&t, |e| e.0) {
            self.own[i].1 = v;
        }
    }
}

fn mem_at(shared: &[f64], own: &[(OpId, f64, usize)], t: OpId) -> f64 {
    match own.binary_search_by_key(&t, |e| e.0) {
        Ok(i) => own[i].1,
        Err(_) => shared[t],
    }
}

/// What one turn asks every game: per (level index, mode index), the plan and the
/// shared index's busy ranges over it with their best fit.
#[derive(Default)]
struct Queries {
    plans: Vec<Option<Plan>>,
    busy: Vec<Vec<(u64, u64)>>,
    best: Vec<Option<u64>>,
    /// The cost delta of `best` under the shared memory times, once a game needed it.
    delta: Vec<Option<f64>>,
    scratch: Vec<(u64, u64)>,
    fits: Vec<Candidate>,
}

impl Queries {
    fn ask(&mut self, setup: &GameSetup, shared: &Shared, b: BufferId) {
        let options = setup.options();
        let n = options.fast_levels * options.modes.len();
        self.plans.clear();
        self.best.clear();
        self.delta.clear();
        self.delta.resize(n, None);
        self.busy.resize_with(n, Vec::new);
        for k in 0..n {
            let (li, mi) = (k / options.modes.len(), k % options.modes.len());
            let plan = setup.plan(b, li, mi);
            self.plans.push(plan);
            self.busy[k].clear();
            let best = plan.and_then(|p| {
                shared.levels[li].busy(p.start, p.end, &mut self.busy[k]);
                let level = &setup.hardware().levels[setup.level(li)];
                let size = setup.program().buffer(b).size;
                fitting_gaps(
                    &mut self.busy[k],
                    size,
                    level.alignment,
                    level.capacity,
                    &mut self.fits,
                );
                self.fits.first().map(|c| c.offset)
            });
            self.best.push(best);
        }
    }

    /// The best fit of query `k` for a game with these own placements, and whether it
    /// is the shared one (no own chunk in the way).
    fn best_for(
        &mut self,
        setup: &GameSetup,
        b: BufferId,
        k: usize,
        own: &[Placement],
    ) -> Option<(u64, bool)> {
        let plan = self.plans[k]?;
        let li = k / setup.options().modes.len();
        let mine =
            |p: &&Placement| p.li == li && p.rect.start <= plan.end && plan.start <= p.rect.end;
        if !own.iter().any(|p| mine(&p)) {
            return self.best[k].map(|o| (o, true));
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.busy[k]);
        self.scratch
            .extend(own.iter().filter(mine).map(|p| (p.rect.offset, p.rect.top)));
        let level = &setup.hardware().levels[setup.level(li)];
        let size = setup.program().buffer(b).size;
        fitting_gaps(
            &mut self.scratch,
            size,
            level.alignment,
            level.capacity,
            &mut self.fits,
        );
        self.fits.first().map(|c| (c.offset, false))
    }
}

impl Line {
    /// A game before its first turn.
    fn start(setup: &GameSetup) -> Line {
        Line {
            own: Vec::new(),
            mem: Vec::new(),
            total: setup.cost_model().all_slow_latency(),
            turns: Turns::default(),
            turn: 0,
            // The sum of no rewards, as `Iterator::sum` starts it.
            ret: -0.0,
            final_latency: None,
        }
    }

    /// Pushes this game's children for buffer `b`: action 0, then slot 0 of each mode
    /// that has a fitting offset, in action order.
    fn children(
        &self,
        setup: &GameSetup,
        shared: &Shared,
        b: BufferId,
        parent: usize,
        queries: &mut Queries,
        out: &mut Vec<Child>,
    ) {
        let base = self.total;
        out.push(Child {
            score: base,
            delta: 0.0,
            parent,
            action: 0,
            placed: None,
        });
        let modes = setup.options().modes.len();
        // Whether this game's memory times at the buffer's ops are the shared ones.
        let program = setup.program();
        let mine = |t: &OpId| self.mem.binary_search_by_key(t, |e| e.0).is_ok();
        let shared_times = self.mem.is_empty()
            || !(program.def(b).iter().any(mine) || program.uses(b).iter().any(mine));
        for k in 0..queries.plans.len() {
            let Some((offset, shared_fit)) = queries.best_for(setup, b, k, &self.own) else {
                continue;
            };
            let (li, mi) = (k / modes, k % modes);
            let Some(plan) = queries.plans[k] else {
                continue;
            };
            let a = setup.allocation(li, &plan, offset);
            // The buffer has no placement yet: its exposed copy time is 0.
            let delta_over = |mem: &dyn Fn(OpId) -> f64| {
                setup
                    .cost_model()
                    .delta_in(mem, 0.0, b, &[], std::slice::from_ref(&a))
            };
            let delta = if shared_fit && shared_times {
                // The same allocation over the same times: the shared game's delta.
                *queries.delta[k].get_or_insert_with(|| delta_over(&|t| shared.mem[t]))
            } else {
                delta_over(&|t| mem_at(&shared.mem, &self.mem, t))
            };
            out.push(Child {
                score: base + delta,
                delta,
                parent,
                action: setup.options().encode(li, mi, 0),
                placed: Some((li, a)),
            });
        }
    }

    /// Plays `child` for buffer `b` as its placement `placed`, with the arithmetic of
    /// [`Game::apply_action`]. A placement every game makes this turn (`shared_now`)
    /// goes straight into the shared part afterwards, so it is not kept as an own one.
    fn play(
        &mut self,
        setup: &GameSetup,
        shared: &Shared,
        b: BufferId,
        child: &Child,
        placed: Option<(Placement, bool)>,
    ) {
        let before = self.total;
        if let Some((p, shared_now)) = placed {
            let mut copy = 0.0;
            let a = std::slice::from_ref(&p.allocation);
            let cost = setup.cost_model();
            if shared_now {
                let mut mem = SharedMem {
                    shared: &shared.mem,
                    own: &mut self.mem,
                };
                cost.apply_in(&mut mem, &mut self.total, &mut copy, b, &[], a);
            } else {
                self.own.push(p);
                let mut mem = LineMem {
                    shared: &shared.mem,
                    own: &mut self.mem,
                };
                cost.apply_in(&mut mem, &mut self.total, &mut copy, b, &[], a);
            }
        }
        let reward = (before - self.total) / setup.all_slow_latency();
        self.turn += 1;
        self.turns.push(Turn {
            action: child.action,
            reward,
            allocation: placed.map(|p| p.0.allocation),
        });
        // The last turn's reward is completed by `finish`.
        if self.turn < setup.order().len() {
            self.ret += reward;
        }
    }

    /// Scores the finished game with the simulator and completes its last reward, as
    /// [`Game::apply_action`] does.
    fn finish(&mut self, setup: &GameSetup, shared: &Shared, sim: &mut Simulator) {
        // The mapping: the shared placements and this game's own (a buffer has one of
        // them at most), by buffer.
        let mut own: Vec<(BufferId, &Allocation)> = self
            .own
            .iter()
            .map(|p| (setup.order()[p.turn], &p.allocation))
            .collect();
        own.sort_unstable_by_key(|x| x.0);
        let mut next = own.iter().peekable();
        let placements =
            shared
                .placed
                .iter()
                .enumerate()
                .map(|(b, p)| match next.next_if(|x| x.0 == b) {
                    Some((_, a)) => (b, std::slice::from_ref(*a)),
                    None => (b, p.as_slice()),
                });
        let s = sim.run_with(placements, false).latency_s;
        let last = setup.last_reward(self.total, s);
        self.final_latency = Some(s);
        // The last turn is always in the game's own block.
        if let Some(t) = self.turns.last.last_mut() {
            t.reward += last;
            self.ret += t.reward;
        }
    }

    /// Each turn's action and allocation, and its reward, in turn order.
    fn history(&self) -> (Vec<(usize, Option<Allocation>)>, Vec<f64>) {
        let all = self.turns.all();
        let turns = all.iter().map(|t| (t.action, t.allocation)).collect();
        (turns, all.iter().map(|t| t.reward).collect())
    }
}

impl Shared {
    fn new(setup: &GameSetup) -> Shared {
        let cost = setup.cost_model();
        Shared {
            levels: vec![TimeIndex::new(cost.len()); setup.options().fast_levels],
            mem: (0..cost.len()).map(|t| cost.default_mem_s(t)).collect(),
            shifts: Shifts::new(cost.len()),
            holders: Vec::new(),
            placed: vec![None; setup.program().buffers().len()],
        }
    }

    /// Moves placement `p`, which every game holds as an own one, into the shared part.
    fn join(&mut self, setup: &GameSetup, p: &Placement, beam: &mut [Line]) {
        let touched = self.add(setup, p);
        for g in beam.iter_mut() {
            g.own.retain(|q| q.id != p.id);
            for &t in &touched {
                if let Ok(i) = g.mem.binary_search_by_key(&t, |e| e.0) {
                    g.mem[i].2 -= 1;
                    if g.mem[i].2 == 0 {
                        debug_assert_eq!(g.mem[i].1, self.mem[t], "op {t}: the folds differ");
                        g.mem.remove(i);
                    }
                }
            }
        }
    }

    /// Enters placement `p` in the shared occupancy and memory times; returns the ops
    /// whose times it changes.
    fn add(&mut self, setup: &GameSetup, p: &Placement) -> Vec<OpId> {
        self.levels[p.li].insert(p.rect);
        let cost: &CostModel = setup.cost_model();
        let b = setup.order()[p.turn];
        self.placed[b] = Some(p.allocation);
        let mut touched = Vec::new();
        cost.for_each_shift(b, &[], std::slice::from_ref(&p.allocation), |t, shift| {
            if self.shifts.insert(t, p.turn, shift) {
                // The newest: the fold every game made goes on by one step.
                self.mem[t] += shift;
            } else {
                // The fold every game made, in turn order, from the all-level-0 time.
                self.mem[t] = self.shifts.fold(t, cost.default_mem_s(t));
            }
            touched.push(t);
        });
        touched
    }
}

/// Per op, a list of (turn, shift) sorted by turn, all in one arena (a vector per op
/// made building and dropping the beam's state slow on large programs).
struct Shifts {
    /// Per op: the index of its first entry, or `NONE`.
    head: Vec<u32>,
    /// (turn, shift, index of the next entry of the op or `NONE`).
    entries: Vec<(usize, f64, u32)>,
}

impl Shifts {
    const NONE: u32 = u32::MAX;

    fn new(ops: usize) -> Shifts {
        Shifts {
            head: vec![Self::NONE; ops],
            entries: Vec::new(),
        }
    }

    /// Enters `(turn, shift)` for op `t` in turn order; whether it went last.
    fn insert(&mut self, t: OpId, turn: usize, shift: f64) -> bool {
        let at = u32::try_from(self.entries.len()).expect("fewer than 2^32 shifts");
        let (mut prev, mut next) = (None, self.head[t]);
        while next != Self::NONE && self.entries[next as usize].0 < turn {
            prev = Some(next);
            next = self.entries[next as usize].2;
        }
        match prev {
            None => self.head[t] = at,
            Some(p) => self.entries[p as usize].2 = at,
        }
        self.entries.push((turn, shift, next));
        next == Self::NONE
    }

    /// `start` plus op `t`'s shifts, added one by one in turn order.
    fn fold(&self, t: OpId, start: f64) -> f64 {
        let (mut m, mut at) = (start, self.head[t]);
        while at != Self::NONE {
            let (_, shift, next) = self.entries[at as usize];
            m += shift;
            at = next;
        }
        m
    }
}

impl Player for BeamPlayer {
    fn name(&self) -> String {
        format!("beam:{}", self.width)
    }

    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Game {
        self.play_with_progress(setup, seed, &mut |_, _| {})
    }

    fn play_with_progress(
        &self,
        setup: &Arc<GameSetup>,
        _seed: u64,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Game {
        // Invariant: beam[0] is the greedy line.
        let mut beam = vec![Line::start(setup)];
        let mut shared = Shared::new(setup);
        let mut queries = Queries::default();
        let mut children: Vec<Child> = Vec::new();
        let mut kept: Vec<Child> = Vec::with_capacity(self.width);
        for (turn, &b) in setup.order().iter().enumerate() {
            queries.ask(setup, &shared, b);
            children.clear();
            for (parent, g) in beam.iter().enumerate() {
                g.children(setup, &shared, b, parent, &mut queries, &mut children);
            }
            self.keep(&mut children, &mut kept);
            beam = expand(setup, &mut shared, (turn, b), beam, &kept);
            let everyone: Vec<Placement> = beam[0]
                .own
                .iter()
                .filter(|p| shared.holders[p.id] == beam.len())
                .copied()
                .collect();
            for p in &everyone {
                shared.join(setup, p, &mut beam);
            }
            if (turn + 1) % PROGRESS_EVERY == 0 {
                progress(turn + 1, setup.order().len());
            }
        }
        progress(setup.order().len(), setup.order().len());
        finished(setup, &shared, &mut beam)
    }
}

/// Scores the finished games and rebuilds the best one (ties to the earlier one: greedy
/// first) as a [`Game`].
fn finished(setup: &Arc<GameSetup>, shared: &Shared, beam: &mut [Line]) -> Game {
    let mut sim = Simulator::new(setup.program(), setup.hardware());
    let mut best: Option<&Line> = None;
    for g in beam.iter_mut() {
        g.finish(setup, shared, &mut sim);
    }
    for g in beam.iter() {
        if best.is_none_or(|b| g.ret > b.ret) {
            best = Some(g);
        }
    }
    match best {
        Some(g) if g.turn > 0 => {
            let (turns, rewards) = g.history();
            Game::from_turns(setup, &turns, rewards, g.final_latency)
        }
        _ => setup.start(),
    }
}

impl BeamPlayer {
    /// The children to play, into `kept`: the greedy line's child first, then the best
    /// scores, one per (parent, score).
    fn keep(&self, children: &mut [Child], kept: &mut Vec<Child>) {
        // Parent 0's children come first, in action order: the greedy player's scan.
        let mut greedy = children[0];
        for c in children.iter().take_while(|c| c.parent == 0) {
            if c.delta < greedy.delta {
                greedy = *c;
            }
        }
        children.sort_unstable_by(|a, b| {
            a.score
                .total_cmp(&b.score)
                .then(a.parent.cmp(&b.parent))
                .then(a.action.cmp(&b.action))
        });
        let is_greedy = |c: &Child| c.parent == 0 && c.action == greedy.action;
        kept.clear();
        kept.push(greedy);
        // Siblings with the same score (modes that change nothing) are adjacent after the
        // sort; only the first, the lowest-numbered, is kept.
        let mut prev: Option<&Child> = None;
        for c in children.iter() {
            if kept.len() == self.width {
                break;
            }
            let twin = prev.is_some_and(|p| p.parent == c.parent && p.score == c.score);
            prev = Some(c);
            if !twin && !is_greedy(c) {
                kept.push(*c);
            }
        }
    }
}

/// Plays the kept children of the buffer `b` of `turn`, in order, cloning a parent only
/// while a later child still needs it, and counts who holds each placement.
fn expand(
    setup: &GameSetup,
    shared: &mut Shared,
    (turn, b): (usize, BufferId),
    parents: Vec<Line>,
    kept: &[Child],
) -> Vec<Line> {
    let mut uses = vec![0usize; parents.len()];
    for c in kept {
        uses[c.parent] += 1;
    }
    // A parent's own placements gain a holder per kept child past the first, and lose
    // the parent's if it has none.
    for (p, g) in parents.iter().enumerate() {
        for q in &g.own {
            shared.holders[q.id] = (shared.holders[q.id] + uses[p]).saturating_sub(1);
        }
    }
    // A placement every kept child makes is shared at once.
    let made: Vec<(Placement, bool)> = placements(setup, shared, (turn, b), kept)
        .into_iter()
        .map(|p| (p, shared.holders[p.id] == kept.len()))
        .collect();
    let mut parents: Vec<Option<Line>> = parents.into_iter().map(Some).collect();
    let mut next = Vec::with_capacity(kept.len());
    for c in kept {
        let placed = c.placed.and_then(|(li, a)| {
            made.iter()
                .find(|(p, _)| p.li == li && p.allocation == a)
                .copied()
        });
        uses[c.parent] -= 1;
        let slot = &mut parents[c.parent];
        let mut g = if uses[c.parent] == 0 {
            slot.take()
        } else {
            slot.clone()
        }
        .expect("a parent is taken only by its last kept child");
        g.play(setup, shared, b, c, placed);
        next.push(g);
    }
    for (p, _) in made.iter().filter(|m| m.1) {
        shared.add(setup, p);
    }
    next
}

/// The distinct placements the kept children of `turn` make, each with a new id and as
/// many holders as children making it.
fn placements(
    setup: &GameSetup,
    shared: &mut Shared,
    (turn, b): (usize, BufferId),
    kept: &[Child],
) -> Vec<Placement> {
    let size = setup.program().buffer(b).size;
    let mut made: Vec<Placement> = Vec::new();
    for (li, a) in kept.iter().filter_map(|c| c.placed) {
        let id = match made.iter().find(|p| p.li == li && p.allocation == a) {
            Some(p) => p.id,
            None => {
                shared.holders.push(0);
                let id = shared.holders.len() - 1;
                let rect = Rect {
                    start: a.start,
                    end: a.end,
                    offset: a.offset,
                    // Within the capacity: the offset came from a gap that holds it.
                    top: a.offset.saturating_add(size),
                };
                made.push(Placement {
                    id,
                    turn,
                    li,
                    allocation: a,
                    rect,
                });
                id
            }
        };
        shared.holders[id] += 1;
    }
    made
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GameOptions;
    use crate::players::GreedyPlayer;
    use accel_sim::{Buffer, BufferKind, Hardware, Op, Program};

    /// Two weights that both want the fast level over the same ops but only one fits at a
    /// time, read by memory-bound ops.
    fn contention() -> Arc<Program> {
        let buf = |n: &str, s: u64, k| Buffer {
            name: n.into(),
            size: s,
            kind: k,
        };
        let op = |n: &str, r: Vec<usize>, w: Vec<usize>| Op {
            name: n.into(),
            kind: "t".into(),
            flops: 1e6,
            reads: r,
            writes: w,
        };
        Arc::new(
            Program::new(
                "contention",
                "",
                vec![
                    buf("x", 1 << 20, BufferKind::Input),
                    buf("w0", 3 << 20, BufferKind::Weight),
                    buf("w1", 2 << 20, BufferKind::Weight),
                    buf("a", 1 << 20, BufferKind::Activation),
                    buf("b", 1 << 20, BufferKind::Activation),
                    buf("y", 1 << 20, BufferKind::Output),
                ],
                vec![
                    op("op0", vec![0, 1], vec![3]),
                    op("op1", vec![3, 2], vec![4]),
                    op("op2", vec![4, 1, 2], vec![5]),
                ],
            )
            .unwrap(),
        )
    }

    fn setup() -> Arc<GameSetup> {
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 4 << 20).unwrap();
        GameSetup::new(contention(), hw, GameOptions::default()).unwrap()
    }

    #[test]
    fn width_one_is_greedy() {
        let s = setup();
        let b = BeamPlayer::new(1).play(&s, 0);
        let g = GreedyPlayer.play(&s, 0);
        assert_eq!(b.actions(), g.actions());
        assert_eq!(BeamPlayer::new(0).width(), 1);
    }

    #[test]
    fn wider_beams_never_lose_to_greedy_and_find_the_exhaustive_best() {
        let s = setup();
        let greedy = GreedyPlayer.play(&s, 0).total_return();
        // Exhaustive search over the tiny game: the best simulated return there is.
        let mut stack = vec![s.start()];
        let mut best = f64::NEG_INFINITY;
        let mut leaves = 0;
        while let Some(g) = stack.pop() {
            if g.is_terminal() {
                best = best.max(g.total_return());
                leaves += 1;
                continue;
            }
            for a in g.legal_actions() {
                let mut c = g.clone();
                c.apply_action(a).unwrap();
                stack.push(c);
            }
        }
        for w in [2, 4, 8] {
            let r = BeamPlayer::new(w).play(&s, 0).total_return();
            assert!(r >= greedy, "beam:{w} {r} < greedy {greedy}");
            assert!(r <= best + 1e-12);
        }
        // Wide enough to hold every game at every turn: beam search is exhaustive then.
        let r = BeamPlayer::new(leaves).play(&s, 0).total_return();
        assert!((r - best).abs() < 1e-12, "{r} vs {best}");
    }

    #[test]
    fn expand_moves_the_last_user_and_clones_the_others() {
        let s = setup();
        let b = s.order()[0];
        let mut shared = Shared::new(&s);
        let start = Line::start(&s);
        let mut queries = Queries::default();
        queries.ask(&s, &shared, b);
        let mut children = Vec::new();
        start.children(&s, &shared, b, 0, &mut queries, &mut children);
        assert!(children.len() >= 2);
        let (placing, stay) = (children[1], children[0]);
        let next = expand(&s, &mut shared, (0, b), vec![start], &[placing, stay]);
        assert_eq!(next.len(), 2);
        let placed = placing.placed.map(|p| p.1);
        assert_eq!(next[0].history().0, vec![(placing.action, placed)]);
        assert_eq!(next[1].history().0, vec![(0, None)]);
        assert_eq!(next[0].own.len(), 1);
        assert!(
            next[1].own.is_empty(),
            "the clone does not see its sibling's chunk"
        );
        assert_eq!(shared.holders, vec![1]);
    }

    #[test]
    fn beam_games_match_replays_of_their_actions() {
        // The persistent lines must end exactly where the game itself would.
        let s = setup();
        for w in [1, 2, 8] {
            let g = BeamPlayer::new(w).play(&s, 0);
            let mut replay = s.start();
            for &a in g.actions() {
                replay.apply_action(a).unwrap();
            }
            assert_eq!(replay.rewards(), g.rewards());
            assert_eq!(replay.mapping(), g.mapping());
            assert_eq!(replay.proxy_latency(), g.proxy_latency());
            assert_eq!(replay.final_latency(), g.final_latency());
        }
    }
}
