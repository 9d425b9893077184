//! A trust region for the MIP: local branching (Fischetti and Lodi, 2003) in the form the
//! learned-start literature injects a prediction (Predict-and-Search, Han et al. 2023):
//! the solve may read at most `delta` uses of buffers from another level than a centre
//! says. A use is a site `(buffer, op reading it)`; the centre names the level of each
//! use it holds fast, every other use it reads from level 0.
//!
//! The row is linear in the holds taken: a use is read from level `l` exactly when one of
//! its buffer's holds in `l` covers it (at most one does, by the buffer rows), so the
//! number of uses whose level differs from the centre's is `|centre|` plus, per hold
//! taken, the uses it covers that the centre reads from elsewhere less those it agrees on.
//! The solve within a region proves nothing about the whole space: its bound is dropped
//! ([`crate::solve_in_region`]).

use crate::candidates::Candidate;
use accel_sim::{BufferId, Hardware, Mapping, OpId, Program};
use std::collections::BTreeSet;

/// At most `delta` uses read from another level than `centre` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustRegion {
    /// The uses the centre reads from a fast level, as `(buffer, op, level)`; every other
    /// use it reads from level 0.
    pub centre: Vec<(BufferId, OpId, usize)>,
    /// How many uses may read from another level than the centre's.
    pub delta: usize,
}

impl TrustRegion {
    /// The region of `delta` flips around `mapping`'s own fast uses.
    pub fn around(program: &Program, mapping: &Mapping, delta: usize) -> TrustRegion {
        TrustRegion {
            centre: mapping.fast_uses(program),
            delta,
        }
    }

    /// Every centre entry a use of its buffer, in a fast level of `hw`, and no use named
    /// twice; else what is wrong, naming the entry.
    pub fn check(&self, program: &Program, hw: &Hardware) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for (i, &(b, u, level)) in self.centre.iter().enumerate() {
            let bad = |what: &str| {
                Err(format!(
                    "trust region: centre[{i}] = ({b}, {u}, {level}): {what}"
                ))
            };
            if b >= program.buffers().len() {
                return bad("no such buffer");
            }
            if program.uses(b).binary_search(&u).is_err() {
                return bad("the op does not read the buffer");
            }
            if level == 0 || level >= hw.levels.len() {
                return bad("not a fast level of the hardware");
            }
            if !seen.insert((b, u)) {
                return bad("the use is named twice");
            }
        }
        Ok(())
    }
}

/// The region's row over the candidates: `sum(coef[c] x[c]) <= delta - |centre|`.
pub(crate) struct Region {
    /// Per candidate: the uses it covers that the centre reads elsewhere, less those it
    /// reads where the centre does.
    pub(crate) coef: Vec<i64>,
    centre: i64,
    delta: i64,
}

impl Region {
    /// The row of `region` over `cands`. A centre use no candidate reads from its level
    /// (a hold never worth its copy) leaves the centre: every mapping of the model flips
    /// it, so it would only shrink Δ.
    pub(crate) fn new(program: &Program, cands: &[Candidate], region: &TrustRegion) -> Region {
        let centre: BTreeSet<(BufferId, OpId, usize)> = region.centre.iter().copied().collect();
        // The centre's uses some candidate covers: the others leave it.
        let mut reached = BTreeSet::new();
        let mut coef = Vec::with_capacity(cands.len());
        for c in cands {
            let uses = program.uses(c.buffer);
            let lo = uses.partition_point(|&u| u < c.hold.start);
            let hi = uses.partition_point(|&u| u <= c.hold.end);
            let mut covered: Vec<OpId> = uses[lo..hi].to_vec();
            covered.dedup();
            let mut sum = 0;
            for u in covered {
                let site = (c.buffer, u, c.hold.level);
                if centre.contains(&site) {
                    reached.insert(site);
                    sum -= 1;
                } else {
                    sum += 1;
                }
            }
            coef.push(sum);
        }
        Region {
            coef,
            centre: reached.len() as i64,
            delta: region.delta as i64,
        }
    }

    /// The row's right-hand side.
    pub(crate) fn rhs(&self) -> i64 {
        self.delta - self.centre
    }

    /// How many uses the holds `taken` read from another level than the centre's.
    pub(crate) fn flips(&self, taken: &[bool]) -> i64 {
        self.centre
            + taken
                .iter()
                .zip(&self.coef)
                .filter(|(&t, _)| t)
                .map(|(_, &c)| c)
                .sum::<i64>()
    }

    /// Whether the holds `taken` lie in the region.
    pub(crate) fn admits(&self, taken: &[bool]) -> bool {
        self.flips(taken) <= self.delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates;
    use crate::model::{MipLimits, Model};
    use accel_sim::CostModel;

    /// The tests' solves: 20 s at most, the cost model's objective.
    fn config() -> crate::ExactConfig {
        crate::ExactConfig {
            seconds: 20.0,
            objective: crate::Objective::Proxy,
            ..Default::default()
        }
    }

    /// A case with several uses held fast by the optimum: its program, hardware, cost
    /// model, candidates and the optimum's mapping.
    fn case() -> (Program, Hardware, CostModel, Mapping) {
        let program = bench_workloads::load("alexnet").unwrap();
        let hw = Hardware::preset("tpu-v4i-like").unwrap();
        let cost = CostModel::new(&program, &hw);
        let config = config();
        let starts = crate::Exact::starts(&program, &hw);
        let solution = crate::solve(&program, &hw, &config, &starts).unwrap();
        (program, hw, cost, solution.mapping)
    }

    /// The MIP with every hold fixed to `taken`: whether the region admits it.
    fn model_admits(
        cands: &[Candidate],
        cost: &CostModel,
        hw: &Hardware,
        region: &Region,
        taken: &[bool],
    ) -> bool {
        let model = Model {
            region: Some(region),
            ..Model::plain(cands, cost, hw)
        };
        let limits = MipLimits {
            fixed: Some(taken.iter().map(|&t| Some(t)).collect()),
            seconds: 30.0,
            relative_gap: 0.0,
        };
        model.solve(&[], None, &limits).is_ok()
    }

    /// The region admits its centre's own mapping and refuses one `delta + 1` flips away,
    /// in its count and in the MIP itself.
    #[test]
    fn the_region_admits_its_centre_and_refuses_one_flip_too_many() {
        let (program, hw, cost, mapping) = case();
        let cands = candidates::enumerate(&program, &hw, &cost);
        let (holds, _) = crate::solve::holds_of(&program, &cost, &cands, &mapping);
        let mut taken = vec![false; cands.len()];
        for c in holds {
            taken[c] = true;
        }
        let own = mapping.fast_uses(&program);
        assert!(own.len() >= 4, "the case holds {} uses fast", own.len());
        let centred = TrustRegion::around(&program, &mapping, 0);
        centred.check(&program, &hw).unwrap();
        let region = Region::new(&program, &cands, &centred);
        assert_eq!(region.flips(&taken), 0);
        assert!(model_admits(&cands, &cost, &hw, &region, &taken));
        // A centre that reads three of the mapping's fast uses from level 0: the mapping
        // is three flips from it.
        let moved = TrustRegion {
            centre: own[3..].to_vec(),
            delta: 2,
        };
        let region = Region::new(&program, &cands, &moved);
        assert_eq!(region.flips(&taken), 3);
        assert!(!model_admits(&cands, &cost, &hw, &region, &taken));
        let wider = Region::new(&program, &cands, &TrustRegion { delta: 3, ..moved });
        assert!(model_admits(&cands, &cost, &hw, &wider, &taken));
    }

    /// Solving within a region returns a mapping inside it, and no bound: here a region
    /// of two flips around the optimum less three of its fast uses, which the optimum
    /// itself is not in.
    #[test]
    fn a_solve_in_a_region_stays_in_it() {
        let (program, hw, _, optimum) = case();
        let own = optimum.fast_uses(&program);
        let region = TrustRegion {
            centre: own[3..].to_vec(),
            delta: 2,
        };
        let config = config();
        let found = crate::solve_in_region(&program, &hw, &config, &[], &region).unwrap();
        found.mapping.validate(&program, &hw).unwrap();
        let centre: BTreeSet<_> = region.centre.iter().copied().collect();
        let got: BTreeSet<_> = found.mapping.fast_uses(&program).into_iter().collect();
        let flips = centre.symmetric_difference(&got).count();
        assert!(flips <= 2, "{flips} flips");
        assert_eq!(found.lower_bound_s, 0.0);
    }

    /// A region no mapping of the model lies in (every use held fast, no flip allowed:
    /// far over capacity) does not fail the solve: it goes on over the whole space.
    #[test]
    fn a_region_no_mapping_lies_in_falls_back_to_the_whole_space() {
        let (program, hw, _, _) = case();
        let centre = (0..program.buffers().len())
            .flat_map(|b| program.uses(b).iter().map(move |&u| (b, u, 1)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let region = TrustRegion { centre, delta: 0 };
        let config = config();
        let found = crate::solve_in_region(&program, &hw, &config, &[], &region).unwrap();
        found.mapping.validate(&program, &hw).unwrap();
        assert!(!found.mapping.fast_uses(&program).is_empty());
    }

    #[test]
    fn a_bad_centre_is_named() {
        let program = bench_workloads::load("alexnet").unwrap();
        let hw = Hardware::preset("tpu-v4i-like").unwrap();
        let b = 0;
        let u = program.uses(b)[0];
        let twice = TrustRegion {
            centre: vec![(b, u, 1), (b, u, 1)],
            delta: 1,
        };
        assert!(twice
            .check(&program, &hw)
            .unwrap_err()
            .contains("centre[1]"));
        let slow = TrustRegion {
            centre: vec![(b, u, 0)],
            delta: 1,
        };
        assert!(slow
            .check(&program, &hw)
            .unwrap_err()
            .contains("fast level"));
    }
}
