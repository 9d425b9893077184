//! The trees of all roots, struct-of-arrays: expansion (root noise included), backup, and
//! the min-max statistics of the Q values pUCT normalises with.

use rand::Rng;

use super::samplers::{sample_gamma, sample_gumbel};
use super::SearchConfig;
use crate::model::ModelOutput;

/// No child / no parent.
pub(super) const NONE: u32 = u32::MAX;

/// The trees of all roots, struct-of-arrays. Node `n` of root `b` is `b * cap + n`; its
/// edge to action `a` is `(b * cap + n) * actions + a`.
#[derive(Default)]
pub(super) struct Tree {
    pub(super) cap: usize,
    pub(super) actions: usize,
    pub(super) node_visits: Vec<u32>,
    pub(super) node_value: Vec<f32>,
    pub(super) raw_value: Vec<f32>,
    pub(super) parent: Vec<u32>,
    pub(super) parent_action: Vec<u32>,
    pub(super) depth: Vec<u32>,
    pub(super) child: Vec<u32>,
    pub(super) edge_visits: Vec<u32>,
    pub(super) edge_reward: Vec<f32>,
    /// Value of the child node, mirrored on the edge so a selection reads one cache line.
    pub(super) edge_value: Vec<f32>,
    pub(super) prior: Vec<f32>,
    pub(super) logits: Vec<f32>,
    /// Hidden states by creation step: node `n` of every root was made by model call `n`
    /// (0: `initial_inference`), so its state is row `b` of that call's output. Keeping
    /// the outputs (moved, not copied) saves copying each state into the tree. Slot `n`
    /// of the previous search is dropped just before call `n`, so the model's allocation
    /// can reuse that memory instead of faulting in fresh pages.
    pub(super) hidden: Vec<Vec<f32>>,
    /// Per root: the legal mask `[batch, actions]`, legal-action count, Gumbel noise
    /// `[batch, actions]`, min-max stats, depth stats.
    pub(super) legal: Vec<bool>,
    pub(super) legal_count: Vec<u32>,
    pub(super) gumbel: Vec<f32>,
    pub(super) minmax: Vec<MinMaxStats>,
    pub(super) depth_sum: Vec<u64>,
    pub(super) depth_max: Vec<u32>,
}

pub(super) fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        v.resize(n, T::default());
    }
}

/// MuZero's `MinMaxStats`: the range of Q values seen in one tree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MinMaxStats {
    min: f32,
    max: f32,
}

impl Default for MinMaxStats {
    fn default() -> Self {
        Self {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
        }
    }
}

impl MinMaxStats {
    fn update(&mut self, v: f32) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// MuZero's `normalize` as `(v - lo) * scale`: into [0, 1] once the tree has seen two
    /// distinct values, the identity before.
    pub(super) fn affine(&self) -> (f32, f32) {
        if self.max > self.min {
            (self.min, 1.0 / (self.max - self.min))
        } else {
            (0.0, 1.0)
        }
    }
}

impl Tree {
    pub(super) fn prepare(&mut self, batch: usize, cap: usize, actions: usize) {
        self.cap = cap;
        self.actions = actions;
        let (nodes, edges) = (batch * cap, batch * cap * actions);
        grow(&mut self.node_visits, nodes);
        grow(&mut self.node_value, nodes);
        grow(&mut self.raw_value, nodes);
        grow(&mut self.parent, nodes);
        grow(&mut self.parent_action, nodes);
        grow(&mut self.depth, nodes);
        grow(&mut self.child, edges);
        grow(&mut self.edge_visits, edges);
        grow(&mut self.edge_reward, edges);
        grow(&mut self.edge_value, edges);
        grow(&mut self.prior, edges);
        grow(&mut self.logits, edges);
        self.hidden.truncate(cap);
        grow(&mut self.legal, batch * actions);
        grow(&mut self.legal_count, batch);
        grow(&mut self.gumbel, batch * actions);
        grow(&mut self.minmax, batch);
        grow(&mut self.depth_sum, batch);
        grow(&mut self.depth_max, batch);
    }

    pub(super) fn release_hidden(&mut self, step: usize) {
        if let Some(v) = self.hidden.get_mut(step) {
            *v = Vec::new();
        }
    }

    pub(super) fn keep_hidden(&mut self, step: usize, hidden: Vec<f32>) {
        if step < self.hidden.len() {
            self.hidden[step] = hidden;
        } else {
            self.hidden.push(hidden);
        }
    }

    /// Writes node `n` of root `b` from row `row` of `out` with unmasked softmax priors.
    fn set_node(
        &mut self,
        b: usize,
        n: usize,
        link: (u32, u32, u32),
        out: &ModelOutput,
        row: usize,
    ) {
        let a = self.actions;
        let i = b * self.cap + n;
        let value = out.value[row];
        self.node_visits[i] = 1;
        self.node_value[i] = value;
        self.raw_value[i] = value;
        (self.parent[i], self.parent_action[i], self.depth[i]) = link;
        let e = i * a..(i + 1) * a;
        self.child[e.clone()].fill(NONE);
        self.edge_visits[e.clone()].fill(0);
        self.edge_reward[e.clone()].fill(0.0);
        self.edge_value[e.clone()].fill(0.0);
        let logits = &out.policy_logits[row * a..(row + 1) * a];
        self.logits[e.clone()].copy_from_slice(logits);
        softmax(logits, None, &mut self.prior[e]);
    }

    pub(super) fn expand_root<R: Rng + ?Sized>(
        &mut self,
        b: usize,
        out: &ModelOutput,
        legal: &[bool],
        config: &SearchConfig,
        rng: &mut R,
        noise: &mut Vec<f64>,
    ) {
        let a = self.actions;
        self.set_node(b, 0, (NONE, NONE, 0), out, b);
        let mask = &legal[b * a..(b + 1) * a];
        self.legal[b * a..(b + 1) * a].copy_from_slice(mask);
        self.legal_count[b] = mask.iter().filter(|&&l| l).count() as u32;
        let e0 = b * self.cap * a;
        // MuZero expands the root over legal actions only: priors renormalised over them.
        softmax(
            &out.policy_logits[b * a..(b + 1) * a],
            Some(mask),
            &mut self.prior[e0..e0 + a],
        );
        if let Some(g) = &config.gumbel {
            for (act, &l) in mask.iter().enumerate() {
                // Drawn for legal actions only: the stream depends on the mask, not on A.
                self.gumbel[b * a + act] = if l {
                    g.gumbel_scale * sample_gumbel(rng)
                } else {
                    0.0
                };
            }
        } else if config.dirichlet_fraction > 0.0 {
            noise.clear();
            let alpha = config.dirichlet_alpha as f64;
            noise.extend(
                mask.iter()
                    .filter(|&&l| l)
                    .map(|_| sample_gamma(alpha, rng)),
            );
            let total: f64 = noise.iter().sum();
            let frac = config.dirichlet_fraction;
            let mut k = 0;
            for (act, &l) in mask.iter().enumerate() {
                if l {
                    // A tiny alpha can underflow every gamma draw: fall back to uniform.
                    let d = if total > 0.0 {
                        noise[k] / total
                    } else {
                        1.0 / noise.len() as f64
                    };
                    let p = &mut self.prior[e0 + act];
                    *p = (1.0 - frac) * *p + frac * d as f32;
                    k += 1;
                }
            }
        }
        self.minmax[b] = MinMaxStats::default();
        self.depth_sum[b] = 0;
        self.depth_max[b] = 0;
    }

    pub(super) fn expand_child(
        &mut self,
        b: usize,
        n: usize,
        parent: usize,
        action: usize,
        out: &ModelOutput,
        row: usize,
    ) {
        let base = b * self.cap;
        let depth = self.depth[base + parent] + 1;
        self.set_node(b, n, (parent as u32, action as u32, depth), out, row);
        let e = (base + parent) * self.actions + action;
        self.child[e] = n as u32;
        self.edge_reward[e] = out.reward[row];
        self.depth_sum[b] += depth as u64;
        self.depth_max[b] = self.depth_max[b].max(depth);
    }

    /// Backs the leaf's model value up to the root (MuZero's `backpropagate`, with mctx's
    /// visit convention), updating the tree's min-max stats with every node's Q on the path.
    pub(super) fn backup(&mut self, b: usize, leaf: usize, discount: f32) {
        let base = b * self.cap;
        let a = self.actions;
        let mm = &mut self.minmax[b];
        let mut node = leaf;
        let mut value = self.raw_value[base + leaf];
        loop {
            let p = self.parent[base + node];
            if p == NONE {
                break;
            }
            let p = p as usize;
            let e = (base + p) * a + self.parent_action[base + node] as usize;
            let r = self.edge_reward[e];
            let v_node = self.node_value[base + node];
            self.edge_value[e] = v_node;
            self.edge_visits[e] += 1;
            mm.update(r + discount * v_node);
            value = r + discount * value;
            let pi = base + p;
            let n = self.node_visits[pi] as f32;
            self.node_value[pi] = (self.node_value[pi] * n + value) / (n + 1.0);
            self.node_visits[pi] += 1;
            node = p;
        }
        // The pseudocode also records the root (reward 0).
        mm.update(discount * self.node_value[base]);
    }
}

/// `softmax(z)` over the allowed entries into `out` (0 elsewhere). If no allowed entry is
/// finite (all `-inf`), uniform over the allowed ones.
pub(super) fn softmax(z: &[f32], mask: Option<&[bool]>, out: &mut [f32]) {
    let allowed = |i: usize| mask.is_none_or(|m| m[i]);
    let mut max = f32::NEG_INFINITY;
    let mut count = 0usize;
    for (i, &v) in z.iter().enumerate() {
        if allowed(i) {
            max = max.max(v);
            count += 1;
        }
    }
    if max == f32::NEG_INFINITY {
        for (i, o) in out.iter_mut().enumerate() {
            *o = if allowed(i) { 1.0 / count as f32 } else { 0.0 };
        }
        return;
    }
    let mut sum = 0.0;
    for (i, (o, &v)) in out.iter_mut().zip(z).enumerate() {
        *o = if allowed(i) { (v - max).exp() } else { 0.0 };
        sum += *o;
    }
    let inv = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::fixtures::close;

    #[test]
    fn min_max_stats_normalise_once_two_values_are_seen() {
        let mut mm = MinMaxStats::default();
        let norm = |mm: &MinMaxStats, v: f32| {
            let (lo, scale) = mm.affine();
            (v - lo) * scale
        };
        assert_eq!(norm(&mm, 0.7), 0.7);
        mm.update(2.0);
        assert_eq!(norm(&mm, 0.7), 0.7);
        mm.update(-2.0);
        mm.update(1.0);
        assert_eq!(norm(&mm, -2.0), 0.0);
        assert_eq!(norm(&mm, 1.0), 0.75);
        assert_eq!(norm(&mm, 2.0), 1.0);
    }

    #[test]
    fn softmax_respects_the_mask_and_survives_all_negative_infinity() {
        let mut out = [0.0; 3];
        softmax(
            &[0.0, 5.0, (2.0f32).ln()],
            Some(&[true, false, true]),
            &mut out,
        );
        assert!(
            close(out[0], 1.0 / 3.0) && out[1] == 0.0 && close(out[2], 2.0 / 3.0),
            "{out:?}"
        );
        softmax(
            &[f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY],
            Some(&[true, false, true]),
            &mut out,
        );
        assert_eq!(out, [0.5, 0.0, 0.5]);
    }
}
