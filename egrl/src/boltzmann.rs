//! Boltzmann chromosomes: EGRL's fast, stateless policies. Per decision a prior (one
//! logit per level) and one temperature for the whole chromosome; an action samples each
//! decision from `softmax(logits / temperature)`.

use crate::problem::Assignment;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The lowest temperature (mutation keeps it within this and [`MAX_TEMPERATURE`]).
pub const MIN_TEMPERATURE: f32 = 0.05;
/// The highest temperature: a chromosome this hot samples nearly uniformly.
pub const MAX_TEMPERATURE: f32 = 5.0;
/// Logits stay within +-this: unbounded, repeated mutations grow them until one more
/// perturbation can no longer change a decision.
pub const LOGIT_LIMIT: f32 = 4.0;

/// A Boltzmann chromosome over `decisions x levels`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Boltzmann {
    /// Levels per decision (the slowest, 0, included).
    pub levels: usize,
    /// `decisions x levels`, row-major.
    pub logits: Vec<f32>,
    /// The softmax temperature: low makes the chromosome act by its largest logits, high
    /// makes it explore.
    pub temperature: f32,
}

impl Boltzmann {
    /// Logits drawn uniformly in `[-scale, scale]`, temperature 1.
    pub fn random(decisions: usize, levels: usize, scale: f32, rng: &mut impl Rng) -> Boltzmann {
        Boltzmann {
            levels,
            logits: (0..decisions * levels)
                .map(|_| rng.random_range(-scale..=scale))
                .collect(),
            temperature: 1.0,
        }
    }

    /// A chromosome with the given prior (a policy's logits) at temperature 1.
    pub fn from_logits(logits: Vec<f32>, levels: usize) -> Boltzmann {
        Boltzmann {
            levels,
            logits,
            temperature: 1.0,
        }
    }

    /// The number of decisions the chromosome covers.
    pub fn decisions(&self) -> usize {
        self.logits.len() / self.levels.max(1)
    }

    /// Decision `d`'s level probabilities.
    pub fn probabilities(&self, d: usize) -> Vec<f64> {
        let row = &self.logits[d * self.levels..(d + 1) * self.levels];
        let t = self.temperature.max(MIN_TEMPERATURE) as f64;
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let e: Vec<f64> = row.iter().map(|&l| ((l as f64 - m) / t).exp()).collect();
        let s: f64 = e.iter().sum();
        e.into_iter().map(|x| x / s).collect()
    }

    /// One action: every decision sampled from its probabilities.
    pub fn sample(&self, rng: &mut impl Rng) -> Assignment {
        Assignment(
            (0..self.decisions())
                .map(|d| sample_index(&self.probabilities(d), rng) as u8)
                .collect(),
        )
    }

    /// Perturbs a `rate` share of the decisions' logits (at least one) by Gaussian noise of
    /// `sigma` (a quarter of those re-drawn outright; all kept within [`LOGIT_LIMIT`]) and the temperature by a log-normal
    /// factor.
    pub fn mutate(&mut self, rate: f64, sigma: f32, rng: &mut impl Rng) {
        let n = self.decisions();
        let mut changed = false;
        for d in 0..n {
            if rng.random_bool(rate.clamp(0.0, 1.0)) {
                self.perturb(d, sigma, rng);
                changed = true;
            }
        }
        if !changed && n > 0 {
            // On a small graph a rate per decision often picks none: a mutation that
            // changes nothing wastes the child.
            let d = rng.random_range(0..n);
            self.perturb(d, sigma, rng);
        }
        let t = self.temperature * (gauss(rng) * 0.2).exp();
        self.temperature = t.clamp(MIN_TEMPERATURE, MAX_TEMPERATURE);
    }

    fn perturb(&mut self, d: usize, sigma: f32, rng: &mut impl Rng) {
        let levels = self.levels;
        let row = &mut self.logits[d * levels..(d + 1) * levels];
        if rng.random_bool(0.25) {
            row.iter_mut()
                .for_each(|l| *l = rng.random_range(-1.0..=1.0) * sigma * 2.0);
        } else {
            row.iter_mut().for_each(|l| *l += gauss(rng) * sigma);
        }
        row.iter_mut()
            .for_each(|l| *l = l.clamp(-LOGIT_LIMIT, LOGIT_LIMIT));
    }

    /// Uniform crossover per decision; the temperature of either parent.
    pub fn crossover(a: &Boltzmann, b: &Boltzmann, rng: &mut impl Rng) -> Boltzmann {
        let levels = a.levels;
        let mut child = a.clone();
        for d in 0..a.decisions().min(b.decisions()) {
            if rng.random_bool(0.5) {
                child.logits[d * levels..(d + 1) * levels]
                    .copy_from_slice(&b.logits[d * levels..(d + 1) * levels]);
            }
        }
        if rng.random_bool(0.5) {
            child.temperature = b.temperature;
        }
        child
    }
}

/// An index drawn with the given probabilities (summing to 1).
pub fn sample_index(p: &[f64], rng: &mut impl Rng) -> usize {
    let mut u: f64 = rng.random();
    for (i, &x) in p.iter().enumerate() {
        if u < x {
            return i;
        }
        u -= x;
    }
    p.len().saturating_sub(1)
}

/// A standard normal draw (Box-Muller).
pub fn gauss(rng: &mut impl Rng) -> f32 {
    let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.random();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn sampling_matches_the_probabilities() {
        let c = Boltzmann {
            levels: 3,
            logits: vec![0.0, 1.0, 2.0, 3.0, -1.0, 0.5],
            temperature: 0.7,
        };
        let mut rng = StdRng::seed_from_u64(7);
        let n = 200_000;
        let mut counts = [[0usize; 3]; 2];
        for _ in 0..n {
            let a = c.sample(&mut rng);
            for d in 0..2 {
                counts[d][a.0[d] as usize] += 1;
            }
        }
        for (d, row) in counts.iter().enumerate() {
            let p = c.probabilities(d);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            for (l, &k) in row.iter().enumerate() {
                let f = k as f64 / n as f64;
                // Five standard errors.
                let se = (p[l] * (1.0 - p[l]) / n as f64).sqrt();
                assert!(
                    (f - p[l]).abs() < 5.0 * se + 1e-9,
                    "d{d} l{l}: {f} vs {}",
                    p[l]
                );
            }
        }
        // Temperature sharpens: at 0.7, logit gap 1 is a ratio of e^(1/0.7).
        let p = c.probabilities(0);
        assert!((p[1] / p[0] - (1.0 / f64::from(0.7f32)).exp()).abs() < 1e-9);
    }

    #[test]
    fn mutation_keeps_the_temperature_in_range_and_crossover_mixes_parents() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut c = Boltzmann::random(50, 3, 1.0, &mut rng);
        for _ in 0..500 {
            c.mutate(0.3, 1.0, &mut rng);
            assert!((MIN_TEMPERATURE..=MAX_TEMPERATURE).contains(&c.temperature));
        }
        let a = Boltzmann::random(50, 3, 1.0, &mut rng);
        let b = Boltzmann::random(50, 3, 1.0, &mut rng);
        let child = Boltzmann::crossover(&a, &b, &mut rng);
        for d in 0..50 {
            let row = &child.logits[d * 3..d * 3 + 3];
            assert!(row == &a.logits[d * 3..d * 3 + 3] || row == &b.logits[d * 3..d * 3 + 3]);
        }
        assert_ne!(child.logits, a.logits);
        assert_ne!(child.logits, b.logits);
    }
}
