//! pUCT (MuZero's pseudocode): `score = Q_norm + P * sqrt(N) * (c1 + ln((N + c2 + 1) / c2))
//! / (1 + n)`, with `Q_norm` min-max normalised over all Q values seen in this root's tree
//! and 0 for unexpanded children; Dirichlet noise mixed into the root priors (over legal
//! actions). The action is the most visited one, or sampled from `n^(1/T)`.

use rand::Rng;

use super::tree::{Tree, NONE};
use super::SearchConfig;

impl Tree {
    /// Walks down by pUCT to an unexpanded edge: (node, action).
    pub(super) fn select_puct(
        &self,
        b: usize,
        config: &SearchConfig,
        scores: &mut [f32],
    ) -> (usize, usize) {
        let (a, base) = (self.actions, b * self.cap);
        let (c_base, discount) = (config.pb_c_base, config.discount);
        let root_legal = &self.legal[b * a..(b + 1) * a];
        // Normalisation as an affine map keeps the scoring loop branch-free (it vectorises).
        let (lo, scale) = self.minmax[b].affine();
        let mut node = 0;
        loop {
            let i = base + node;
            let n = self.node_visits[i] as f32;
            let pb_c = (config.pb_c_init + ((n + c_base + 1.0) / c_base).ln()) * n.sqrt();
            let e = i * a..(i + 1) * a;
            let edges = self.edge_visits[e.clone()]
                .iter()
                .zip(&self.prior[e.clone()])
                .zip(
                    self.edge_reward[e.clone()]
                        .iter()
                        .zip(&self.edge_value[e.clone()]),
                );
            for (sc, ((&visits, &p), (&r, &v))) in scores.iter_mut().zip(edges) {
                // Visited edges are exactly the expanded ones (visits >= 1 on expansion).
                let q = if visits > 0 {
                    (r + discount * v - lo) * scale
                } else {
                    0.0
                };
                *sc = pb_c * p / (visits as f32 + 1.0) + q;
            }
            let mut best_a = usize::MAX;
            let mut best = f32::NEG_INFINITY;
            for (act, &sc) in scores[..a].iter().enumerate() {
                if node == 0 && !root_legal[act] {
                    continue;
                }
                // `best_a == MAX` takes the first allowed action even if every score is NaN.
                if sc > best || best_a == usize::MAX {
                    best = sc;
                    best_a = act;
                }
            }
            match self.child[e.start + best_a] {
                NONE => return (node, best_a),
                c => node = c as usize,
            }
        }
    }
}

/// Plays `argmax` of the visits (first on ties) at `temperature` 0, else samples an action
/// with probability proportional to `visits^(1/temperature)`, so unvisited actions
/// (illegal ones included) are never sampled. With no visits at all: action 0.
pub fn select_by_visits<R: Rng + ?Sized>(visits: &[u32], temperature: f32, rng: &mut R) -> usize {
    let (best, max) = argmax_u32(visits);
    if temperature <= 0.0 || max == 0 {
        return best;
    }
    // Relative to the max so large counts and small temperatures cannot overflow.
    let inv_t = 1.0 / temperature as f64;
    let weight = |v: u32| (v as f64 / max as f64).powf(inv_t);
    let total: f64 = visits.iter().map(|&v| weight(v)).sum();
    let mut r = rng.random::<f64>() * total;
    for (a, &v) in visits.iter().enumerate() {
        let w = weight(v);
        if v > 0 && r < w {
            return a;
        }
        r -= w;
    }
    best
}

fn argmax_u32(v: &[u32]) -> (usize, u32) {
    let mut best = (0, 0);
    for (i, &x) in v.iter().enumerate() {
        if x > best.1 {
            best = (i, x);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::fixtures::{close, scripted};
    use crate::search::search;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn puct_on_a_hand_built_tree_matches_hand_computed_numbers() {
        let config = SearchConfig {
            simulations: 3,
            dirichlet_fraction: 0.0,
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
        // Sim 1: tie -> a0, Q = 1 + 2 = 3; root value (0 + 3) / 2 = 1.5.
        // Sim 2: a0 scores 0.442 + norm(3) = 1.442 over a1's 0.884: down a0, then a0 again
        //   (node 5, Q = -0.5); node 1 value (2 - 0.5) / 2 = 0.75; root (3 + 0.5) / 3.
        // Sim 3: min-max range [-0.5, 3], so a0 scores 0.3609 + (1.75 + 0.5) / 3.5 = 1.0038
        //   and a1 scores 1.0827: a1 (without normalisation a0 would win with 2.11).
        assert_eq!(o.visit_counts, vec![2, 1]);
        assert!(close(o.root_value, 1.0), "{}", o.root_value);
        assert!(close(o.policy_target[0], 2.0 / 3.0) && close(o.policy_target[1], 1.0 / 3.0));
        assert_eq!(o.action, 0);
        assert_eq!(o.max_depth, 2);
        assert!(close(o.mean_depth, 4.0 / 3.0));
    }

    #[test]
    fn visit_sampling_follows_the_temperature() {
        let mut rng = StdRng::seed_from_u64(1);
        let visits = [3, 0, 1, 0];
        assert_eq!(select_by_visits(&visits, 0.0, &mut rng), 0);
        let mut counts = [0u32; 4];
        for _ in 0..4000 {
            counts[select_by_visits(&visits, 1.0, &mut rng)] += 1;
        }
        // T = 1: 3:1 odds between a0 and a2; unvisited actions never.
        assert_eq!((counts[1], counts[3]), (0, 0));
        let ratio = counts[0] as f32 / counts[2] as f32;
        assert!((2.6..3.4).contains(&ratio), "{counts:?}");
        // T -> small: effectively the argmax.
        assert!((0..100).all(|_| select_by_visits(&visits, 0.05, &mut rng) == 0));
    }
}
