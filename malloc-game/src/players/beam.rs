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
//! with it. The games in the beam share what they have in common: each keeps its
//! occupancy ([`crate::occupancy`]'s time index), its per-op memory times and its turns
//! in persistent structures, so a clone costs a few pointers and a turn copies only the
//! `O(log T)` nodes it writes. Cloning whole games (and their every placement) made a
//! beam quadratic in the number of buffers. The best finished line becomes a [`Game`]
//! again at the end.

use super::pvec::PVec;
use super::Player;
use crate::game::{Game, GameSetup, Plan};
use crate::occupancy::index::{Rect, TimeIndex};
use crate::occupancy::{fitting_gaps, Candidate};
use accel_sim::{Allocation, BufferId, Mapping};
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

/// One played turn of a line, linked to the turns before it (shared with the lines that
/// branched off later).
#[derive(Debug)]
struct Turn {
    prev: Option<Arc<Turn>>,
    action: usize,
    reward: f64,
    allocation: Option<Allocation>,
}

impl Drop for Turn {
    /// Unlinks the chain one turn at a time: the default drop would recurse once per
    /// turn and overflow the stack on a long game.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(turn) = prev {
            match Arc::try_unwrap(turn) {
                Ok(mut t) => prev = t.prev.take(),
                Err(_) => break,
            }
        }
    }
}

/// A game of the beam, in the persistent form described in the module docs: what
/// [`Game`] keeps, less what the beam never reads.
#[derive(Clone, Debug)]
struct Line {
    /// Per level index: the chunks placed there.
    levels: Vec<TimeIndex>,
    /// The cost tally's per-op memory times.
    mem: PVec,
    /// The cost tally's latency (the game's `proxy_latency`).
    total: f64,
    turns: Option<Arc<Turn>>,
    turn: usize,
    final_latency: Option<f64>,
}

impl Line {
    fn start(setup: &GameSetup) -> Line {
        let cost = setup.cost_model();
        let mem: Vec<f64> = (0..cost.len()).map(|t| cost.default_mem_s(t)).collect();
        Line {
            levels: vec![TimeIndex::new(cost.len()); setup.options().fast_levels],
            mem: PVec::from_slice(&mem),
            total: cost.all_slow_latency(),
            turns: None,
            turn: 0,
            final_latency: None,
        }
    }

    /// The best-fit offset (slot 0) for `size` bytes under `plan` in level index `li`.
    fn best_fit(
        &self,
        setup: &GameSetup,
        li: usize,
        plan: &Plan,
        size: u64,
        scratch: &mut Scratch,
    ) -> Option<u64> {
        let level = &setup.hardware().levels[setup.level(li)];
        scratch.busy.clear();
        self.levels[li].busy(plan.start, plan.end, &mut scratch.busy);
        fitting_gaps(
            &mut scratch.busy,
            size,
            level.alignment,
            level.capacity,
            &mut scratch.fits,
        );
        scratch.fits.first().map(|c| c.offset)
    }

    /// Pushes this line's children for buffer `b`: action 0, then slot 0 of each mode
    /// that has a fitting offset, in action order.
    fn children(
        &self,
        setup: &GameSetup,
        b: BufferId,
        parent: usize,
        scratch: &mut Scratch,
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
        let size = setup.program().buffer(b).size;
        let options = setup.options();
        for li in 0..options.fast_levels {
            for mi in 0..options.modes.len() {
                let Some(plan) = setup.plan(b, li, mi) else {
                    continue;
                };
                let Some(offset) = self.best_fit(setup, li, &plan, size, scratch) else {
                    continue;
                };
                let a = setup.allocation(li, &plan, offset);
                // The buffer has no placement yet: its exposed copy time is 0.
                let delta = setup
                    .cost_model()
                    .delta_in(&self.mem, 0.0, b, &[], std::slice::from_ref(&a));
                out.push(Child {
                    score: base + delta,
                    delta,
                    parent,
                    action: options.encode(li, mi, 0),
                    placed: Some((li, a)),
                });
            }
        }
    }

    /// Plays `child` for buffer `b`, with the arithmetic of [`Game::apply_action`].
    fn play(&mut self, setup: &GameSetup, b: BufferId, child: &Child) {
        let before = self.total;
        if let Some((li, a)) = child.placed {
            let size = setup.program().buffer(b).size;
            self.levels[li].insert(Rect {
                start: a.start,
                end: a.end,
                offset: a.offset,
                // Within the capacity: the offset came from a gap that holds the buffer.
                top: a.offset.saturating_add(size),
            });
            let mut copy = 0.0;
            setup.cost_model().apply_in(
                &mut self.mem,
                &mut self.total,
                &mut copy,
                b,
                &[],
                std::slice::from_ref(&a),
            );
        }
        let s0 = setup.all_slow_latency();
        let mut reward = (before - self.total) / s0;
        self.turn += 1;
        let allocation = child.placed.map(|(_, a)| a);
        self.turns = Some(Arc::new(Turn {
            prev: self.turns.take(),
            action: child.action,
            reward,
            allocation,
        }));
        if self.turn == setup.order().len() {
            let (s, last) = setup.finish(self.total, &self.mapping(setup));
            self.final_latency = Some(s);
            reward += last;
            if let Some(t) = self.turns.as_mut().and_then(Arc::get_mut) {
                t.reward = reward;
            }
        }
    }

    /// Each turn's action and allocation, and its reward, in turn order.
    fn history(&self) -> (Vec<(usize, Option<Allocation>)>, Vec<f64>) {
        let mut turns = Vec::with_capacity(self.turn);
        let mut rewards = Vec::with_capacity(self.turn);
        let mut at = self.turns.as_deref();
        while let Some(t) = at {
            turns.push((t.action, t.allocation));
            rewards.push(t.reward);
            at = t.prev.as_deref();
        }
        turns.reverse();
        rewards.reverse();
        (turns, rewards)
    }

    fn mapping(&self, setup: &GameSetup) -> Mapping {
        let mut m = Mapping::all_slow(setup.program());
        let (turns, _) = self.history();
        for ((_, allocation), &b) in turns.iter().zip(setup.order()) {
            if let Some(a) = allocation {
                m.buffers[b].allocations.push(*a);
            }
        }
        m
    }
}

/// Buffers reused by every query of a turn.
#[derive(Default)]
struct Scratch {
    busy: Vec<(u64, u64)>,
    fits: Vec<Candidate>,
}

impl Player for BeamPlayer {
    fn name(&self) -> String {
        format!("beam:{}", self.width)
    }

    fn play(&self, setup: &Arc<GameSetup>, _seed: u64) -> Game {
        // Invariant: beam[0] is the greedy line.
        let mut beam = vec![Line::start(setup)];
        let mut children: Vec<Child> = Vec::new();
        let mut kept: Vec<Child> = Vec::with_capacity(self.width);
        let mut scratch = Scratch::default();
        for &b in setup.order() {
            children.clear();
            for (parent, g) in beam.iter().enumerate() {
                g.children(setup, b, parent, &mut scratch, &mut children);
            }
            self.keep(&mut children, &mut kept);
            beam = expand(setup, b, beam, &kept);
        }
        // Every game finished on the same turn; ties go to the earlier one (greedy first).
        let mut best: Option<(f64, Vec<(usize, Option<Allocation>)>, Vec<f64>, Option<f64>)> =
            None;
        for g in &beam {
            let (turns, rewards) = g.history();
            let ret: f64 = rewards.iter().sum();
            if best.as_ref().is_none_or(|(r, ..)| ret > *r) {
                best = Some((ret, turns, rewards, g.final_latency));
            }
        }
        match best {
            Some((_, turns, rewards, final_latency)) => {
                Game::from_turns(setup, &turns, rewards, final_latency)
            }
            None => setup.start(),
        }
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

/// Plays the kept children of buffer `b`, in order, cloning a parent only while a later
/// child still needs it (a clone costs a few pointers).
fn expand(setup: &GameSetup, b: BufferId, parents: Vec<Line>, kept: &[Child]) -> Vec<Line> {
    let mut uses = vec![0usize; parents.len()];
    for c in kept {
        uses[c.parent] += 1;
    }
    let mut parents: Vec<Option<Line>> = parents.into_iter().map(Some).collect();
    let mut next = Vec::with_capacity(kept.len());
    for c in kept {
        uses[c.parent] -= 1;
        let slot = &mut parents[c.parent];
        let mut g = if uses[c.parent] == 0 {
            slot.take()
        } else {
            slot.clone()
        }
        .expect("a parent is taken only by its last kept child");
        g.play(setup, b, c);
        next.push(g);
    }
    next
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
        let mut children = Vec::new();
        Line::start(&s).children(&s, b, 0, &mut Scratch::default(), &mut children);
        assert!(children.len() >= 2);
        let (placing, stay) = (children[1], children[0]);
        let next = expand(&s, b, vec![Line::start(&s)], &[placing, stay]);
        assert_eq!(next.len(), 2);
        assert_eq!(next[0].history().0, vec![(placing.action, placing.placed.map(|p| p.1))]);
        assert_eq!(next[1].history().0, vec![(0, None)]);
        assert_eq!(next[0].levels[0].len(), 1);
        assert_eq!(next[1].levels[0].len(), 0, "the clone does not see its sibling's chunk");
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
