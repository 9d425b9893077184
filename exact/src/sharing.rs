//! Copies share level 0's idle time (docs/exact.md, "Copies share the idle time"): the
//! families of op intervals over which the model counts the copy work against the idle
//! time of the ops, beside each copy's own exposed time.
//!
//! For an interval `I` of ops and the copies whose windows lie inside it, their transfer
//! during the ops of `I` is at most the ops' idle time together, so their work done
//! during stalls is at least their work less that idle time. The intervals form laminar
//! families (trees of halving intervals, one of them shifted by a third), so each family's
//! rows chain up its tree: a node's stall share is at least its children's and its own
//! copies' exposed times, and at least its subtree's work less its ops' idle time.

use crate::candidates::Candidate;
use crate::model::{Col, Columns, Model, Vars, MICROS};
use accel_sim::OpId;
use good_lp::{variable, Constraint, Expression};

/// One interval of a family: ops `lo..hi`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub lo: OpId,
    pub hi: OpId,
    /// Nodes inside it (disjoint), lowest first.
    pub children: Vec<usize>,
    /// Copies (candidate indices) whose window lies inside it and inside none of its
    /// children.
    pub copies: Vec<usize>,
    /// Its ops outside every child, as ranges `lo..hi`.
    pub own: Vec<(OpId, OpId)>,
}

/// One laminar family.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    /// The nodes inside no other, lowest first.
    pub tops: Vec<usize>,
    /// Copies inside no node.
    pub loose: Vec<usize>,
}

/// The families over `ops` ops of `candidates`' copies; `least_idle_s` is the idle time
/// every op has under any mapping (its overhead), for leaving out rows that never bind.
pub(crate) fn families(candidates: &[Candidate], ops: usize, least_idle_s: f64) -> Vec<Tree> {
    let copies: Vec<(usize, OpId, OpId)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.work_s > 0.0)
        .map(|(i, c)| {
            let (lo, hi) = c.copy_window;
            // A copy with no op beside it stalls whole: any interval holding its
            // neighbourhood holds it.
            let lo = lo.min(ops.saturating_sub(1));
            (i, lo, hi.max(lo + 1).min(ops.max(lo + 1)))
        })
        .collect();
    if copies.is_empty() || ops == 0 {
        return Vec::new();
    }
    let span = ops.next_power_of_two();
    [0, span / 3]
        .into_iter()
        .map(|shift| {
            let mut b = Builder {
                candidates,
                ops,
                shift,
                least_idle_s,
                tree: Tree::default(),
            };
            let top = b.build(0, span * 2, copies.clone());
            b.finish(top)
        })
        .collect()
}

struct Builder<'a> {
    candidates: &'a [Candidate],
    ops: usize,
    shift: usize,
    least_idle_s: f64,
    tree: Tree,
}

/// What a subtree gives its parent: its nodes, lowest first, and the copies no node of it
/// keeps.
struct Built {
    nodes: Vec<usize>,
    loose: Vec<usize>,
}

impl Builder<'_> {
    /// The ops of positions `at..at + size` of the shifted line.
    fn ops_of(&self, at: usize, size: usize) -> (OpId, OpId) {
        let lo = at.saturating_sub(self.shift).min(self.ops);
        let hi = (at + size).saturating_sub(self.shift).min(self.ops);
        (lo, hi)
    }

    fn build(&mut self, at: usize, size: usize, copies: Vec<(usize, OpId, OpId)>) -> Built {
        let (lo, hi) = self.ops_of(at, size);
        if copies.is_empty() || hi <= lo {
            return Built {
                nodes: Vec::new(),
                loose: copies.into_iter().map(|c| c.0).collect(),
            };
        }
        let mut here = Vec::new();
        let mut children = Vec::new();
        if size > 1 {
            let half = size / 2;
            let (_, mid) = self.ops_of(at, half);
            let (mut left, mut right) = (Vec::new(), Vec::new());
            for c in copies {
                if c.2 <= mid {
                    left.push(c);
                } else if c.1 >= mid {
                    right.push(c);
                } else {
                    here.push(c.0);
                }
            }
            for (a, part) in [(at, left), (at + half, right)] {
                let built = self.build(a, half, part);
                children.extend(built.nodes);
                here.extend(built.loose);
            }
        } else {
            here.extend(copies.into_iter().map(|c| c.0));
        }
        let work: f64 = here.iter().map(|&c| self.candidates[c].work_s).sum::<f64>()
            + children.iter().map(|&n| self.subtree_work(n)).sum::<f64>();
        // A node whose work cannot exceed its ops' least idle time adds no row: its
        // copies go up.
        if work <= self.least_idle_s * (hi - lo) as f64 {
            return Built {
                nodes: children,
                loose: here,
            };
        }
        let mut own = Vec::new();
        let mut cursor = lo;
        for &n in &children {
            let child = &self.tree.nodes[n];
            if child.lo > cursor {
                own.push((cursor, child.lo));
            }
            cursor = child.hi;
        }
        if cursor < hi {
            own.push((cursor, hi));
        }
        self.tree.nodes.push(Node {
            lo,
            hi,
            children,
            copies: here,
            own,
        });
        Built {
            nodes: vec![self.tree.nodes.len() - 1],
            loose: Vec::new(),
        }
    }

    /// The most work a node's subtree can hold (every copy taken).
    fn subtree_work(&self, n: usize) -> f64 {
        let node = &self.tree.nodes[n];
        node.copies
            .iter()
            .map(|&c| self.candidates[c].work_s)
            .sum::<f64>()
            + node
                .children
                .iter()
                .map(|&k| self.subtree_work(k))
                .sum::<f64>()
    }

    fn finish(mut self, top: Built) -> Tree {
        self.tree.tops = top.nodes;
        self.tree.loose = top.loose;
        self.tree
    }
}

/// The model's columns for the families: each touched op's idle time, each node's stall
/// share `z` and its work less idle time `g`, and the stall `s` every family bounds.
pub(crate) struct SharingVars {
    trees: Vec<Tree>,
    /// Per op, its idle-time column where a hold touches it.
    idle: Vec<Option<Col>>,
    /// Per family, per node: `(z, g)`.
    nodes: Vec<Vec<(Col, Col)>>,
    stall: Col,
}

impl SharingVars {
    /// The columns of `trees` (non-empty), after the model's own.
    pub fn add(columns: &mut Columns, model: &Model, vars: &Vars, trees: Vec<Tree>) -> SharingVars {
        let mut idle = vec![None; model.cost.len()];
        for &(t, _) in &vars.y {
            let cap = model.cost.span_s(t, t + 1) * MICROS;
            idle[t] = Some(columns.add(variable().min(0.0).max(cap)));
        }
        let nodes = trees
            .iter()
            .map(|tree| {
                tree.nodes
                    .iter()
                    .map(|_| (columns.add(variable().min(0.0)), columns.add(variable())))
                    .collect()
            })
            .collect();
        let stall = columns.add(variable().min(0.0));
        SharingVars {
            trees,
            idle,
            nodes,
            stall,
        }
    }

    /// The stall the families bound, which stands for every copy's exposed time in the
    /// objective.
    pub fn stall(&self) -> good_lp::Variable {
        self.stall.var
    }

    /// Idle time of op `t` under any mapping when no hold touches it, microseconds.
    fn untouched_idle(model: &Model, t: OpId) -> f64 {
        let cap = model.cost.span_s(t, t + 1);
        let m0 = model.cost.default_mem_s(t);
        let run = model.cost.compute_s(t).max(m0) + model.hw.op_overhead_s;
        cap.min(run - m0) * MICROS
    }

    pub fn rows(&self, model: &Model, vars: &Vars, rows: &mut Vec<Constraint>) {
        // Each op's idle time is at most its run less its own level-0 traffic.
        let mut at_op: std::collections::BTreeMap<OpId, Expression> = vars
            .y
            .iter()
            .map(|&(t, y)| (t, self.idle[t].unwrap().var - y.var))
            .collect();
        for (c, x) in model.candidates.iter().zip(&vars.x) {
            for (&(t, _), &r) in c.shifts.iter().zip(&c.relief) {
                *at_op.get_mut(&t).expect("every touched op has a y") -= r * MICROS * x.var;
            }
        }
        for (t, e) in at_op {
            let m0 = model.cost.default_mem_s(t);
            rows.push(e.leq((model.hw.op_overhead_s - m0) * MICROS));
        }
        for (tree, cols) in self.trees.iter().zip(&self.nodes) {
            for (node, &(z, g)) in tree.nodes.iter().zip(cols) {
                let mut exposed = Expression::from(z.var);
                let mut net = Expression::from(g.var);
                for &k in &node.children {
                    exposed -= cols[k].0.var;
                    net -= cols[k].1.var;
                }
                for &c in &node.copies {
                    let cand = &model.candidates[c];
                    exposed -= cand.copy_s * MICROS * vars.x[c].var;
                    net -= cand.work_s * MICROS * vars.x[c].var;
                }
                let mut fixed_idle = 0.0;
                for &(lo, hi) in &node.own {
                    for t in lo..hi {
                        match self.idle[t] {
                            Some(d) => net += d.var,
                            None => fixed_idle += Self::untouched_idle(model, t),
                        }
                    }
                }
                rows.push(exposed.geq(0.0));
                rows.push(net.geq(-fixed_idle));
                rows.push((z.var - g.var).geq(0.0));
            }
            let mut top = Expression::from(self.stall.var);
            for &n in &tree.tops {
                top -= cols[n].0.var;
            }
            for &c in &tree.loose {
                top -= model.candidates[c].copy_s * MICROS * vars.x[c].var;
            }
            rows.push(top.geq(0.0));
        }
    }

    /// Values of the columns for the holds `taken`, given each touched op's time `y`
    /// (microseconds): a feasible start.
    pub fn start(&self, model: &Model, taken: &[bool], y: &[(OpId, f64)], values: &mut [f64]) {
        let mut idle = vec![0.0; model.cost.len()];
        let mut level0: std::collections::HashMap<OpId, f64> = y
            .iter()
            .map(|&(t, _)| (t, model.cost.default_mem_s(t)))
            .collect();
        for (c, cand) in model.candidates.iter().enumerate() {
            if taken[c] {
                for (&(t, _), &r) in cand.shifts.iter().zip(&cand.relief) {
                    *level0.get_mut(&t).unwrap() -= r;
                }
            }
        }
        for (t, v) in idle.iter_mut().enumerate() {
            *v = Self::untouched_idle(model, t);
        }
        for &(t, yt) in y {
            let cap = model.cost.span_s(t, t + 1) * MICROS;
            let d = (yt + (model.hw.op_overhead_s - level0[&t]) * MICROS).clamp(0.0, cap);
            idle[t] = d;
            values[self.idle[t].unwrap().index] = d;
        }
        let mut stall = 0.0f64;
        for (tree, cols) in self.trees.iter().zip(&self.nodes) {
            // Children come before their parents.
            let mut zg = vec![(0.0, 0.0); tree.nodes.len()];
            for (n, node) in tree.nodes.iter().enumerate() {
                let (mut exposed, mut net) = (0.0, 0.0);
                for &k in &node.children {
                    exposed += zg[k].0;
                    net += zg[k].1;
                }
                for &c in node.copies.iter().filter(|&&c| taken[c]) {
                    exposed += model.candidates[c].copy_s * MICROS;
                    net += model.candidates[c].work_s * MICROS;
                }
                for &(lo, hi) in &node.own {
                    net -= idle[lo..hi].iter().sum::<f64>();
                }
                zg[n] = (exposed.max(net).max(0.0), net);
                values[cols[n].0.index] = zg[n].0;
                values[cols[n].1.index] = net;
            }
            let top: f64 = tree.tops.iter().map(|&n| zg[n].0).sum::<f64>()
                + tree
                    .loose
                    .iter()
                    .filter(|&&c| taken[c])
                    .map(|&c| model.candidates[c].copy_s * MICROS)
                    .sum::<f64>();
            stall = stall.max(top);
        }
        values[self.stall.index] = stall;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(lo: OpId, hi: OpId, work_s: f64) -> Candidate {
        let mut c = Candidate::fixture(lo, hi, 1, 1);
        c.work_s = work_s;
        c.copy_window = (lo, hi);
        c
    }

    /// Every copy is kept exactly once per family, by a node whose interval holds its
    /// window (or loose), and children lie inside their parent, disjoint.
    #[test]
    fn each_family_is_laminar_and_holds_each_copy_once() {
        let mut x = 3u64;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let ops = 300;
        let cands: Vec<Candidate> = (0..500)
            .map(|_| {
                let lo = next(ops as u64) as usize;
                let len = if next(8) == 0 { next(200) } else { next(12) } as usize;
                copy(lo, (lo + len).min(ops), 1.0 + next(5) as f64)
            })
            .collect();
        let trees = families(&cands, ops, 0.5);
        assert_eq!(trees.len(), 2);
        for tree in &trees {
            let mut seen = vec![0; cands.len()];
            for &c in &tree.loose {
                seen[c] += 1;
            }
            for node in &tree.nodes {
                assert!(node.lo < node.hi && node.hi <= ops);
                for &c in &node.copies {
                    seen[c] += 1;
                    let (lo, hi) = cands[c].copy_window;
                    assert!(
                        node.lo <= lo && hi.max(lo + 1) <= node.hi,
                        "{node:?} {lo}..{hi}"
                    );
                }
                let mut end = node.lo;
                for &k in &node.children {
                    let child = &tree.nodes[k];
                    assert!(end <= child.lo && child.hi <= node.hi);
                    end = child.hi;
                }
            }
            assert!(seen.iter().all(|&s| s == 1));
            // The two families differ: one is shifted.
        }
        assert_ne!(trees[0], trees[1]);
    }
}
