//! The evolutionary population: GNN policies and Boltzmann chromosomes side by side, bred
//! by elitism, tournament selection, crossover (between members of the same kind) and
//! mutation.

use crate::boltzmann::{gauss, Boltzmann};
use crate::gnn::Params;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One member of the population.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Member {
    /// A GNN policy (acts greedily: the most likely level per decision).
    Gnn(Params),
    /// A Boltzmann chromosome (acts by sampling).
    Boltzmann(Boltzmann),
}

impl Member {
    /// The member's kind in reports: `gnn` or `boltzmann`.
    pub fn kind(&self) -> &'static str {
        match self {
            Member::Gnn(_) => "gnn",
            Member::Boltzmann(_) => "boltzmann",
        }
    }
}

/// The breeding knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvolutionConfig {
    /// Share of the population copied unchanged (at least one member).
    pub elite_fraction: f64,
    /// Members drawn per tournament.
    pub tournament: usize,
    /// Chance that a child is a crossover of two same-kind parents.
    pub crossover_probability: f64,
    /// Chance that each GNN weight is perturbed.
    pub gnn_mutation_rate: f64,
    /// The standard deviation of a GNN weight's perturbation.
    pub gnn_mutation_sigma: f32,
    /// Share of a chromosome's decisions perturbed.
    pub boltzmann_mutation_rate: f64,
    /// The standard deviation of a chromosome's logit perturbation.
    pub boltzmann_mutation_sigma: f32,
}

impl Default for EvolutionConfig {
    fn default() -> Self {
        EvolutionConfig {
            elite_fraction: 0.1,
            tournament: 3,
            crossover_probability: 0.5,
            gnn_mutation_rate: 0.1,
            gnn_mutation_sigma: 0.1,
            boltzmann_mutation_rate: 0.05,
            boltzmann_mutation_sigma: 1.0,
        }
    }
}

/// The indices of `fitness` from best to worst (ties: lower index first).
pub fn ranking(fitness: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..fitness.len()).collect();
    order.sort_by(|&a, &b| fitness[b].total_cmp(&fitness[a]).then(a.cmp(&b)));
    order
}

/// The next generation, the same size as `population` and with as many members of each
/// kind: the elite first, unchanged, then children of tournament winners of the same kind.
///
/// Why per kind: a GNN acts greedily, so its fitness carries no sampling noise, and in
/// tournaments over the whole population the GNNs crowded the Boltzmann chromosomes out
/// within a few dozen generations; the population then lost the per-decision moves only a
/// chromosome makes (on a 9-decision program it stuck one decision away from the optimum).
pub fn next_generation(
    population: &[Member],
    fitness: &[f64],
    config: &EvolutionConfig,
    rng: &mut impl Rng,
) -> Vec<Member> {
    let n = population.len();
    if n == 0 {
        return Vec::new();
    }
    let order = ranking(fitness);
    let elite = ((n as f64 * config.elite_fraction).ceil() as usize).clamp(1, n);
    let mut next: Vec<Member> = order[..elite]
        .iter()
        .map(|&i| population[i].clone())
        .collect();
    for kind in ["gnn", "boltzmann"] {
        let members: Vec<usize> = (0..n).filter(|&i| population[i].kind() == kind).collect();
        let kept = order[..elite]
            .iter()
            .filter(|&&i| population[i].kind() == kind)
            .count();
        let kin_fitness: Vec<f64> = members.iter().map(|&i| fitness[i]).collect();
        for _ in kept..members.len() {
            let a = members[tournament(&kin_fitness, config.tournament, rng)];
            let mut child = population[a].clone();
            if rng.random_bool(config.crossover_probability.clamp(0.0, 1.0)) {
                let b = members[tournament(&kin_fitness, config.tournament, rng)];
                child = crossover(&child, &population[b], rng);
            }
            mutate(&mut child, config, rng);
            next.push(child);
        }
    }
    next
}

/// The fittest of `size` members drawn at random (with replacement).
pub fn tournament(fitness: &[f64], size: usize, rng: &mut impl Rng) -> usize {
    let mut best = rng.random_range(0..fitness.len());
    for _ in 1..size.max(1) {
        let c = rng.random_range(0..fitness.len());
        if fitness[c] > fitness[best] || (fitness[c] == fitness[best] && c < best) {
            best = c;
        }
    }
    best
}

/// A child of `a` and `b` (per tensor for GNNs, per decision for chromosomes); `a` itself
/// when they differ in kind or shape.
fn crossover(a: &Member, b: &Member, rng: &mut impl Rng) -> Member {
    match (a, b) {
        (Member::Gnn(x), Member::Gnn(y)) if x.0.len() == y.0.len() => Member::Gnn(Params(
            x.0.iter()
                .zip(&y.0)
                .map(|(p, q)| if rng.random_bool(0.5) { p } else { q }.clone())
                .collect(),
        )),
        (Member::Boltzmann(x), Member::Boltzmann(y)) => {
            Member::Boltzmann(Boltzmann::crossover(x, y, rng))
        }
        _ => a.clone(),
    }
}

fn mutate(member: &mut Member, config: &EvolutionConfig, rng: &mut impl Rng) {
    match member {
        Member::Gnn(p) => {
            let rate = config.gnn_mutation_rate.clamp(0.0, 1.0);
            for w in p.0.iter_mut().flatten() {
                if rng.random_bool(rate) {
                    *w += gauss(rng) * config.gnn_mutation_sigma;
                }
            }
        }
        Member::Boltzmann(c) => c.mutate(
            config.boltzmann_mutation_rate,
            config.boltzmann_mutation_sigma,
            rng,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn the_elite_survives_unchanged_and_the_size_is_kept() {
        let mut rng = StdRng::seed_from_u64(3);
        let pop: Vec<Member> = (0..20)
            .map(|i| {
                if i % 2 == 0 {
                    Member::Boltzmann(Boltzmann::random(30, 3, 1.0, &mut rng))
                } else {
                    Member::Gnn(Params(vec![vec![i as f32; 8], vec![0.5; 3]]))
                }
            })
            .collect();
        let fitness: Vec<f64> = (0..20).map(|i| ((i * 7) % 20) as f64).collect();
        let config = EvolutionConfig {
            elite_fraction: 0.1,
            ..EvolutionConfig::default()
        };
        for _ in 0..20 {
            let next = next_generation(&pop, &fitness, &config, &mut rng);
            assert_eq!(next.len(), pop.len());
            let gnns = |p: &[Member]| p.iter().filter(|m| m.kind() == "gnn").count();
            assert_eq!(gnns(&next), gnns(&pop));
            let order = ranking(&fitness);
            // 10% of 20: the two best, first and untouched.
            assert_eq!(next[0], pop[order[0]]);
            assert_eq!(next[1], pop[order[1]]);
        }
    }

    #[test]
    fn tournaments_favour_the_fit() {
        let mut rng = StdRng::seed_from_u64(5);
        let fitness: Vec<f64> = (0..10).map(f64::from).collect();
        let wins = (0..10_000)
            .filter(|_| tournament(&fitness, 3, &mut rng) >= 5)
            .count();
        // P(best of 3 in the top half) = 1 - 0.5^3 = 0.875.
        assert!((8500..9000).contains(&wins), "{wins}");
    }
}
