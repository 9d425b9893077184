//! Gumbel: Gumbel top-k at the root among legal actions with sequential halving of the
//! budget, completed Q values (unvisited children take the mixed value), `sigma(q) =
//! (c_visit + max_b n(b)) * c_scale * q` of min-max rescaled completed Q, the deterministic
//! "improved policy minus visits" selection inside the tree, the policy target
//! `softmax(logits + sigma(q))` and the action `argmax(g + logits + sigma(q))` among the
//! most visited considered actions.

use super::tree::{softmax, Tree, NONE};
use super::{GumbelConfig, Scratch};

/// mctx's `score_considered` floor: keeps `-inf` logits comparable.
pub(crate) const LOW_LOGIT: f32 = -1e9;

impl Tree {
    /// Walks down by Gumbel MuZero's rules to an unexpanded edge: (node, action).
    pub(super) fn select_gumbel(
        &self,
        b: usize,
        sim: usize,
        sims: usize,
        discount: f32,
        g: &GumbelConfig,
        s: &mut Scratch,
    ) -> (usize, usize) {
        let (a, base) = (self.actions, b * self.cap);
        let root_legal = &self.legal[b * a..(b + 1) * a];
        // Root: sequential halving. Considered actions are those whose visits equal the
        // table's count for this simulation; among them the best `g + logits + sigma(q)`.
        let m = (g.max_considered.min(self.legal_count[b] as usize)).max(1);
        let considered = s.table[m * sims + sim];
        let sigma = &mut s.sigma[..a];
        self.sigma_completed_q(base, Some(root_legal), discount, g, sigma);
        let e0 = base * a;
        let score = |act: usize| {
            (self.gumbel[b * a + act] + self.logits[e0 + act] + sigma[act]).max(LOW_LOGIT)
        };
        let pick = |need: Option<u32>| {
            (0..a)
                .filter(|&act| {
                    root_legal[act] && need.is_none_or(|c| self.edge_visits[e0 + act] == c)
                })
                .fold(None, |best: Option<(usize, f32)>, act| {
                    let sc = score(act);
                    match best {
                        Some((_, bs)) if bs >= sc => best,
                        _ => Some((act, sc)),
                    }
                })
                .map(|(act, _)| act)
        };
        // The table guarantees a match; the fallback only guards against a bug there.
        let act = pick(Some(considered)).or_else(|| pick(None)).unwrap_or(0);
        let mut node = match self.child[e0 + act] {
            NONE => return (0, act),
            c => c as usize,
        };
        loop {
            let i = base + node;
            let e0 = i * a;
            let sigma = &mut s.sigma[..a];
            self.sigma_completed_q(i, None, discount, g, sigma);
            for (act, z) in sigma.iter_mut().enumerate() {
                *z += self.logits[e0 + act];
            }
            let probs = &mut s.probs[..a];
            softmax(sigma, None, probs);
            let visits = &self.edge_visits[e0..e0 + a];
            let total = 1.0 + visits.iter().sum::<u32>() as f32;
            let mut best_a = 0;
            let mut best = f32::NEG_INFINITY;
            for act in 0..a {
                let sc = probs[act] - visits[act] as f32 / total;
                if sc > best {
                    best = sc;
                    best_a = act;
                }
            }
            match self.child[e0 + best_a] {
                NONE => return (node, best_a),
                c => node = c as usize,
            }
        }
    }

    /// `sigma(completed q)` of node `i`'s children (mctx's `qtransform_completed_by_mix_value`):
    /// visited children keep `r + discount * v`, unvisited ones take the mixed value
    /// `(v_raw + sum_n * sum_visited(p q) / sum_visited(p)) / (1 + sum_n)`; the completed
    /// values are min-max rescaled over the allowed actions (all inside the tree, the legal
    /// ones at the root: illegal ones would only drag the range toward the mixed value)
    /// and scaled by `(c_visit + max n) * c_scale`.
    pub(super) fn sigma_completed_q(
        &self,
        i: usize,
        mask: Option<&[bool]>,
        discount: f32,
        g: &GumbelConfig,
        out: &mut [f32],
    ) {
        let a = self.actions;
        let e0 = i * a;
        let visits = &self.edge_visits[e0..e0 + a];
        let mut sum_n = 0u32;
        let mut max_n = 0u32;
        let mut sum_p = 0.0f32;
        let mut sum_pq = 0.0f32;
        for act in 0..a {
            let n = visits[act];
            if n > 0 {
                let q = self.edge_reward[e0 + act] + discount * self.edge_value[e0 + act];
                out[act] = q;
                // mctx floors priors so a visited zero-prior action still counts.
                let p = self.prior[e0 + act].max(f32::MIN_POSITIVE);
                sum_p += p;
                sum_pq += p * q;
                sum_n += n;
                max_n = max_n.max(n);
            }
        }
        let raw = self.raw_value[i];
        let mixed = if sum_n > 0 {
            (raw + sum_n as f32 * (sum_pq / sum_p)) / (sum_n as f32 + 1.0)
        } else {
            raw
        };
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for act in 0..a {
            if visits[act] == 0 {
                out[act] = mixed;
            }
            if mask.is_none_or(|m| m[act]) {
                lo = lo.min(out[act]);
                hi = hi.max(out[act]);
            }
        }
        let scale = (g.c_visit + max_n as f32) * g.c_scale / (hi - lo).max(g.min_q_range);
        for q in out.iter_mut() {
            *q = (*q - lo) * scale;
        }
    }
}

/// mctx's `get_sequence_of_considered_visits`: for each simulation, the visit count an
/// action must have at the root to be considered (sequential halving over `m` actions).
fn considered_visit_sequence(m: usize, sims: usize, out: &mut Vec<u32>) {
    let start = out.len();
    if m <= 1 {
        out.extend(0..sims as u32);
        return;
    }
    // ceil(log2(m)) for m >= 2.
    let log2max = (usize::BITS - (m - 1).leading_zeros()) as usize;
    let mut visits = vec![0u32; m];
    let mut considered = m;
    while out.len() - start < sims {
        let extra = (sims / (log2max * considered)).max(1);
        for _ in 0..extra {
            out.extend_from_slice(&visits[..considered]);
            for v in &mut visits[..considered] {
                *v += 1;
            }
        }
        considered = (considered / 2).max(2);
    }
    out.truncate(start + sims);
}

/// mctx's `get_table_of_considered_visits`: rows `m` in `0..=max_m`, `sims` entries each.
pub(super) fn considered_visit_table(max_m: usize, sims: usize, out: &mut Vec<u32>) {
    out.clear();
    for m in 0..=max_m {
        considered_visit_sequence(m, sims, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::fixtures::{close, scripted};
    use crate::search::{search, SearchConfig};
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn gumbel_on_a_hand_built_tree_matches_hand_computed_numbers() {
        let g = GumbelConfig {
            c_scale: 0.02,
            gumbel_scale: 0.0,
            ..Default::default()
        };
        let config = SearchConfig {
            simulations: 3,
            gumbel: Some(g),
            ..Default::default()
        };
        let out = search(
            &scripted(),
            &[0.0],
            &[true, true],
            1,
            &config,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap();
        let o = &out[0];
        // Halving table for m = 2, 3 sims: [0, 0, 1]: a0, a1, then the better of the two
        // (sigma = 1.02 * [1, 0]): a0, whose child picks a0 (all-equal completed Q).
        // Final: Q = [1 + 0.75, 0.5] -> rescaled [1, 0] -> sigma = (50 + 2) * 0.02 * [1, 0].
        assert_eq!(o.visit_counts, vec![2, 1]);
        let p0 = 1.04f32.exp() / (1.04f32.exp() + 1.0);
        assert!(
            close(o.policy_target[0], p0) && close(o.policy_target[1], 1.0 - p0),
            "{:?}",
            o.policy_target
        );
        assert!(close(p0, 0.738850));
        assert!(close(o.root_value, 1.0), "{}", o.root_value);
        assert_eq!(o.action, 0);
        assert_eq!((o.max_depth, o.mean_depth), (2, 4.0 / 3.0));
    }

    /// One node, three actions: visits [2, 1, 0], priors [0.5, 0.3, 0.2], raw value 0.4,
    /// Q = [0.1 + 0.9 * 0.5, 0.9 * 0.2] = [0.55, 0.18] (discount 0.9).
    fn one_node_tree() -> Tree {
        let mut t = Tree::default();
        t.prepare(1, 1, 3);
        t.raw_value[0] = 0.4;
        t.edge_visits[..3].copy_from_slice(&[2, 1, 0]);
        t.prior[..3].copy_from_slice(&[0.5, 0.3, 0.2]);
        t.edge_reward[..3].copy_from_slice(&[0.1, 0.0, 0.0]);
        t.edge_value[..3].copy_from_slice(&[0.5, 0.2, 0.0]);
        t
    }

    #[test]
    fn completed_q_and_sigma_match_hand_computed_numbers() {
        let t = one_node_tree();
        let g = GumbelConfig::default();
        let mut s = [0.0; 3];
        t.sigma_completed_q(0, None, 0.9, &g, &mut s);
        // Mixed value: (0.4 + 3 * (0.5 * 0.55 + 0.3 * 0.18) / 0.8) / 4 = 0.4084375, the
        // completed Q of the unvisited a2; rescaled over [0.18, 0.55]; times 50 + max n 2.
        let expect = [52.0, 0.0, 52.0 * (0.4084375 - 0.18) / 0.37];
        for (x, e) in s.iter().zip(expect) {
            assert!(close(*x, e), "{s:?} vs {expect:?}");
        }
        assert!(close(expect[2], 32.104_73));
        // c_scale multiplies; a root mask narrows the rescaling range to the legal actions.
        let g = GumbelConfig {
            c_scale: 0.1,
            ..Default::default()
        };
        t.sigma_completed_q(0, Some(&[true, false, true]), 0.9, &g, &mut s);
        assert!(close(s[0], 5.2) && close(s[2], 0.0), "{s:?}");
        // Nothing visited: every Q is the raw value, so sigma is 0 everywhere.
        let mut t = one_node_tree();
        t.edge_visits[..3].fill(0);
        t.sigma_completed_q(0, None, 0.9, &GumbelConfig::default(), &mut s);
        assert_eq!(s, [0.0; 3]);
    }

    #[test]
    fn a_q_range_floor_rescales_only_ranges_narrower_than_it() {
        let t = one_node_tree();
        let (mut at_default, mut s) = ([0.0; 3], [0.0; 3]);
        t.sigma_completed_q(0, None, 0.9, &GumbelConfig::default(), &mut at_default);
        // The values span 0.37: a floor under it changes nothing.
        let under = GumbelConfig {
            min_q_range: 0.3,
            ..Default::default()
        };
        t.sigma_completed_q(0, None, 0.9, &under, &mut s);
        assert_eq!(s, at_default);
        // A floor of 1 keeps them at their own size: 52 * (q - 0.18).
        let over = GumbelConfig {
            min_q_range: 1.0,
            ..Default::default()
        };
        t.sigma_completed_q(0, None, 0.9, &over, &mut s);
        let expect = [52.0 * 0.37, 0.0, 52.0 * (0.4084375 - 0.18)];
        for (x, e) in s.iter().zip(expect) {
            assert!(close(*x, e), "{s:?} vs {expect:?}");
        }
    }

    #[test]
    fn considered_visit_sequences_match_mctx() {
        let seq = |m, n| {
            let mut v = Vec::new();
            considered_visit_sequence(m, n, &mut v);
            v
        };
        assert_eq!(seq(4, 8), [0, 0, 0, 0, 1, 1, 2, 2]);
        // mctx's "minimum simulations" case: 8 actions, 8 * log2(8) simulations.
        let mut want = vec![0; 8];
        want.extend([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        assert_eq!(seq(8, 24), want);
        assert_eq!(seq(1, 4), [0, 1, 2, 3]);
        let s3 = seq(3, 32);
        assert_eq!(s3.len(), 32);
        assert_eq!(&s3[..6], [0, 0, 0, 1, 1, 1]);
        assert_eq!(&s3[15..19], [5, 5, 6, 6]);
        let mut table = Vec::new();
        considered_visit_table(2, 5, &mut table);
        assert_eq!(table, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 0, 1, 1, 2]);
    }
}
