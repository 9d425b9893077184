//! `egrl-dp`: the dynamic-programming (knapsack) mapper EGRL is compared with, over the
//! same decisions.
//!
//! Fast levels are filled one at a time (see [`knapsack_pass`] for the order). At a level,
//! every decision that would gain there (cost-model saving) is a candidate. While some op
//! has more bytes live than the level holds, the most over-full op is fixed exactly: a 0/1
//! knapsack by dynamic programming over the candidates live at that op (value: their gain;
//! weight: their bytes live there, rounded up to 1/[`KNAPSACK_UNITS`] of the room, so the
//! choice always fits) keeps the best subset, and the rest stay where they were. The
//! packer and its repair then place the result (fragmentation may still demote a buffer).
//!
//! The savings of buffers read by the same op do not add up (an op stops being
//! memory-bound), so the first pass, valued against the all-slow mapping, over-values
//! crowded ops. [`MARGINAL_ROUNDS`] more passes value each decision by its marginal saving
//! in the previous pass's mapping (cost model, the rest held fixed). All of that is done
//! under each prefetch limit (`prefetch_limits`), and the mapper returns the pass whose
//! mapping simulates fastest.
//!
//! The cost model sees each copy alone; the simulator, which judges, queues them. So the
//! same passes are made again with every value measured by the simulator instead (the
//! saving of a buffer's resident placement, the rest held fixed: against the all-slow
//! mapping first, then against the previous pass's mapping, each by an incremental
//! re-simulation, [`accel_sim::LiveSim`]), and those passes compete too.

use crate::problem::{Assignment, Problem, Slot};
use accel_sim::{BufferPlacement, CostModel, CostState, LiveSim, Mapping};

/// The capacity's granularity in the knapsack.
pub const KNAPSACK_UNITS: usize = 1024;

/// Passes valued by marginal savings after the first.
pub const MARGINAL_ROUNDS: usize = 3;

/// The knapsack mapper's assignment for `problem`: the fastest (simulated) of its passes,
/// for each limit on prefetching (see [`prefetch_limits`]).
pub fn dp_assignment(problem: &Problem) -> Assignment {
    let mut sim = problem.simulator();
    let cost = CostModel::new(problem.program(), problem.hardware());
    let mut best: Option<(f64, Assignment)> = None;
    for lowest in prefetch_limits(problem.levels()) {
        let mut all = passes(problem, &cost, lowest);
        all.extend(simulated_passes(problem, &sim.live(), lowest));
        for a in all {
            let latency = problem.score(&mut sim, &a).1.latency_s;
            if best.as_ref().is_none_or(|(l, _)| latency < *l) {
                best = Some((latency, a));
            }
        }
    }
    best.map(|(_, a)| a)
        .unwrap_or_else(|| Assignment(vec![0; problem.decisions().len()]))
}

/// The prefetch limits tried: a decision of weights (or inputs), which arrive by prefetch,
/// may go to levels below the limit only. The cost model sees each copy alone, while the
/// DMA engines queue them: filling the small level with prefetched weights looked 1.8x
/// faster to the cost model than the simulator found it (bert-base-s128, 4 MiB SRAM: cost
/// model 2634 us, simulator 4727 us). So the mapper also tries keeping
/// prefetches out of the fastest levels, one level at a time, and lets the simulator choose.
fn prefetch_limits(levels: usize) -> Vec<usize> {
    (1..=levels).rev().collect()
}

/// The first pass (valued against all-slow) and the [`MARGINAL_ROUNDS`] after it, with
/// prefetches into levels below `limit` only.
fn passes(problem: &Problem, cost: &CostModel, limit: usize) -> Vec<Assignment> {
    let decisions = problem.decisions();
    let allowed = |d: usize, level: usize| decisions[d].slot == Slot::A || level < limit;
    let all_slow_value = |d: usize, level: usize| -> f64 {
        if !allowed(d, level) {
            return 0.0;
        }
        decisions[d]
            .buffers
            .iter()
            .map(|&b| problem.saving(b, level))
            .sum()
    };
    let mut out = vec![knapsack_pass(problem, &all_slow_value)];
    for _ in 0..MARGINAL_ROUNDS {
        let mapping = problem
            .decode(out.last().expect("one pass at least"))
            .mapping;
        let state = CostState::from_mapping(cost, &mapping);
        let marginal = |d: usize, level: usize| -> f64 {
            if !allowed(d, level) {
                return 0.0;
            }
            decisions[d]
                .buffers
                .iter()
                .map(|&b| {
                    let here = state
                        .placement(b)
                        .allocations
                        .first()
                        .map_or(0, |a| a.level);
                    let slow = BufferPlacement::default();
                    // Saving at `level` against level 0, the others where they are.
                    let out = if here == 0 {
                        0.0
                    } else {
                        state.delta(b, &slow)
                    };
                    let at = BufferPlacement {
                        allocations: vec![problem.resident_allocation(b, level)],
                    };
                    out - state.delta(b, &at)
                })
                .sum()
        };
        out.push(knapsack_pass(problem, &marginal));
    }
    out
}

/// [`passes`] with every value measured by the simulator: per decision and level, the
/// simulated saving of its buffers' resident placements there against level 0, the rest
/// of the mapping (all-slow, then the previous pass's) held fixed.
fn simulated_passes(problem: &Problem, all_slow: &LiveSim, limit: usize) -> Vec<Assignment> {
    let mut out = Vec::new();
    let mut mapping = Mapping::all_slow(problem.program());
    for _ in 0..=MARGINAL_ROUNDS {
        let mut live = all_slow.clone();
        for (b, p) in mapping.buffers.iter().enumerate() {
            live.change(b, &[], &p.allocations);
        }
        let table = simulated_values(problem, &live, &mapping, limit);
        let a = knapsack_pass(problem, &|d, level| table[d][level]);
        mapping = problem.decode(&a).mapping;
        out.push(a);
    }
    out
}

/// `values[d][level]`: the simulated saving of decision `d`'s buffers resident in `level`
/// against level 0, in `mapping` (which `live` simulates) with the rest held fixed; 0 where
/// the prefetch limit forbids the level.
fn simulated_values(
    problem: &Problem,
    live: &LiveSim,
    mapping: &Mapping,
    limit: usize,
) -> Vec<Vec<f64>> {
    let levels = problem.levels();
    problem
        .decisions()
        .iter()
        .map(|d| {
            let mut row = vec![0.0; levels];
            for (level, v) in row.iter_mut().enumerate().skip(1) {
                if d.slot != Slot::A && level >= limit {
                    continue;
                }
                *v = d
                    .buffers
                    .iter()
                    .map(|&b| {
                        let now = &mapping.buffers[b].allocations;
                        let slow = live.latency_with(b, now, &[]);
                        let at = [problem.resident_allocation(b, level)];
                        slow - live.latency_with(b, now, &at)
                    })
                    .sum();
            }
            row
        })
        .collect()
}

/// One pass over the fast levels with `value(decision, level)` (the saving at `level`
/// against level 0): slowest fast level first, each faster level then taking what gains
/// most over where it sits (its value there less its value where it is), and the slower
/// levels refilled, fastest first, with what is still in level 0. Fastest-first would
/// spend the small level on buffers the large one serves nearly as well.
fn knapsack_pass(problem: &Problem, value: &dyn Fn(usize, usize) -> f64) -> Assignment {
    let levels = problem.levels();
    let mut level_of = vec![0u8; problem.decisions().len()];
    let upward = 1..levels;
    let refill = (1..levels.saturating_sub(1)).rev();
    for (pass, level) in upward.chain(refill).enumerate() {
        let up = pass < levels - 1;
        let gain = |d: usize| {
            let here = level_of[d] as usize;
            value(d, level) - if here == 0 { 0.0 } else { value(d, here) }
        };
        let movable = |d: usize| {
            let here = level_of[d] as usize;
            if up {
                here < level
            } else {
                here == 0
            }
        };
        let chosen = fill_level(problem, level, &level_of, &gain, &movable);
        for d in chosen {
            level_of[d] = level as u8;
        }
    }
    Assignment(level_of)
}

/// The decisions that move into `level`: of those `movable` with a positive `gain`, the
/// best subset (a knapsack at each over-full op in turn) that fits beside the decisions
/// already there.
fn fill_level(
    problem: &Problem,
    level: usize,
    level_of: &[u8],
    gain: &dyn Fn(usize) -> f64,
    movable: &dyn Fn(usize) -> bool,
) -> Vec<usize> {
    let n = problem.program().len();
    let decisions = problem.decisions();
    let capacity = problem.hardware().levels[level].capacity;
    let bytes_at = |d: usize, t: usize| -> u64 {
        decisions[d]
            .buffers
            .iter()
            .filter(|&&b| {
                let (s, e) = problem.interval(b, level);
                s <= t && t <= e
            })
            .map(|&b| problem.program().buffer(b).size)
            .sum()
    };
    let load_of = |set: &mut dyn Iterator<Item = usize>| {
        let mut load = vec![0u64; n];
        for d in set {
            for &b in &decisions[d].buffers {
                let (s, e) = problem.interval(b, level);
                let size = problem.program().buffer(b).size;
                for l in &mut load[s..=e.min(n - 1)] {
                    *l = l.saturating_add(size);
                }
            }
        }
        load
    };
    let fixed = load_of(&mut (0..decisions.len()).filter(|&d| level_of[d] as usize == level));
    let mut chosen: Vec<usize> = (0..decisions.len())
        .filter(|&d| movable(d) && gain(d) > 0.0)
        .collect();
    loop {
        let load = load_of(&mut chosen.iter().copied());
        let over = (0..n)
            .map(|t| (load[t].saturating_add(fixed[t]), t))
            .filter(|&(l, _)| l > capacity)
            .max_by_key(|&(l, t)| (l, std::cmp::Reverse(t)));
        let Some((_, worst)) = over else {
            return chosen;
        };
        let here: Vec<usize> = chosen
            .iter()
            .copied()
            .filter(|&d| bytes_at(d, worst) > 0)
            .collect();
        let items: Vec<(f64, u64)> = here
            .iter()
            .map(|&d| (gain(d), bytes_at(d, worst)))
            .collect();
        let room = capacity.saturating_sub(fixed[worst]);
        let keep = if room == 0 {
            vec![false; items.len()]
        } else {
            knapsack(&items, room)
        };
        let dropped: Vec<usize> = here
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| !k)
            .map(|(&d, _)| d)
            .collect();
        chosen.retain(|d| !dropped.contains(d));
    }
}

/// The most valuable subset of `items` (value, bytes) within `capacity`, each weight
/// rounded up to `capacity / KNAPSACK_UNITS`: which items it keeps.
pub fn knapsack(items: &[(f64, u64)], capacity: u64) -> Vec<bool> {
    let unit = capacity.div_ceil(KNAPSACK_UNITS as u64).max(1);
    // Whole units only: `units * unit <= capacity`.
    let units = (capacity / unit) as usize;
    let weight: Vec<usize> = items
        .iter()
        .map(|&(_, b)| b.div_ceil(unit).min(units as u64 + 1) as usize)
        .collect();
    // best[i][w]: the most value of the first i items in w units.
    let mut best = vec![vec![0f64; units + 1]; items.len() + 1];
    for (i, &(v, _)) in items.iter().enumerate() {
        for w in 0..=units {
            let skip = best[i][w];
            let take = if weight[i] <= w && v > 0.0 {
                best[i][w - weight[i]] + v
            } else {
                f64::NEG_INFINITY
            };
            best[i + 1][w] = skip.max(take);
        }
    }
    let mut keep = vec![false; items.len()];
    let mut w = units;
    for i in (0..items.len()).rev() {
        if best[i + 1][w] != best[i][w] {
            keep[i] = true;
            w -= weight[i];
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knapsack_is_exact_on_a_small_case() {
        // 100 bytes (under KNAPSACK_UNITS: one byte per unit, exact).
        let cap = 100;
        let items = [(6.0, 50), (5.0, 40), (5.0, 40), (2.0, 20)];
        let keep = knapsack(&items, cap);
        // 5 + 5 + 2 (100 bytes of 100) beats 6 + 5 (90 bytes).
        assert_eq!(keep, vec![false, true, true, true]);
        let weight: u64 = items
            .iter()
            .zip(&keep)
            .filter(|p| *p.1)
            .map(|p| p.0 .1)
            .sum();
        assert!(weight <= cap);
    }
}
