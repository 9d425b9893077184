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

use super::{play_legal, Player};
use crate::game::{Game, GameSetup};
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
}

impl Player for BeamPlayer {
    fn name(&self) -> String {
        format!("beam:{}", self.width)
    }

    fn play(&self, setup: &Arc<GameSetup>, _seed: u64) -> Game {
        // Invariant: beam[0] is the greedy line.
        let mut beam = vec![setup.start()];
        let mut children: Vec<Child> = Vec::new();
        let mut kept: Vec<Child> = Vec::with_capacity(self.width);
        while !beam[0].is_terminal() {
            children.clear();
            for (parent, g) in beam.iter().enumerate() {
                let base = g.proxy_latency();
                children.push(Child {
                    score: base,
                    delta: 0.0,
                    parent,
                    action: 0,
                });
                g.for_each_legal(|action, allocation, _| {
                    let delta = g.cost_delta(&allocation);
                    children.push(Child {
                        score: base + delta,
                        delta,
                        parent,
                        action,
                    });
                });
            }
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
            // Siblings with the same score (the slots of one mode, which the cost model
            // cannot tell apart; modes that change nothing) are adjacent after the sort;
            // only the first, the lowest-numbered, is kept.
            let mut prev: Option<&Child> = None;
            for c in &children {
                if kept.len() == self.width {
                    break;
                }
                let twin = prev.is_some_and(|p| p.parent == c.parent && p.score == c.score);
                prev = Some(c);
                if !twin && !is_greedy(c) {
                    kept.push(*c);
                }
            }
            beam = expand(beam, &kept);
        }
        // Every game finished on the same turn; ties go to the earlier one (greedy first).
        let mut best = 0;
        for (i, g) in beam.iter().enumerate() {
            if g.total_return() > beam[best].total_return() {
                best = i;
            }
        }
        beam.swap_remove(best)
    }
}

/// Plays the kept children, in order, cloning a parent only while a later child still
/// needs it.
fn expand(parents: Vec<Game>, kept: &[Child]) -> Vec<Game> {
    let mut uses = vec![0usize; parents.len()];
    for c in kept {
        uses[c.parent] += 1;
    }
    let mut parents: Vec<Option<Game>> = parents.into_iter().map(Some).collect();
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
        play_legal(&mut g, c.action);
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
        let g = s.start();
        let child = |parent, action| Child {
            score: 0.0,
            delta: 0.0,
            parent,
            action,
        };
        let legal = g.legal_actions();
        assert!(legal.len() >= 2);
        let next = expand(vec![g], &[child(0, legal[1]), child(0, 0)]);
        assert_eq!(next.len(), 2);
        assert_eq!(next[0].actions(), &[legal[1]]);
        assert_eq!(next[1].actions(), &[0]);
    }
}
