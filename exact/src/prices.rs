//! A bound by prices (docs/exact.md, "A bound by prices"): the model's Lagrangian
//! relaxation, a proven lower bound on its optimum that reaches any program the
//! candidates can be listed for, in time linear in the candidates per round.
//!
//! The rows that tie buffers together are priced instead of kept: each op's memory row
//! (`y[t] >= mem0(t) + sum_c shift(c, t) x[c]`) with a weight `mu[t]` in `[0, 1]`, and each
//! level's capacity row at the ops where a hold starts with a price `lambda >= 0`. What is
//! left falls apart by buffer: each buffer takes the holds, disjoint in time, of least
//! priced cost, a weighted interval choice solved exactly. For any weights and prices the
//! result is at most the model's optimum (weak duality), so every round's value is a
//! bound; the rounds move the weights and prices by subgradient steps toward the best.
//! The capacity prices are what the floors of the bound by blocks lack: a level that
//! cannot hold every buffer's best hold at once.

use crate::candidates::{self, Candidate};
use crate::model::MICROS;
use crate::solve::{ExactError, Objective};
use accel_sim::{CostModel, Hardware, Program};
use std::time::Instant;

/// What the prices proved.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceBound {
    /// No valid mapping has a lower latency in the objective, seconds.
    pub lower_bound_s: f64,
    /// Rounds of prices tried.
    pub rounds: usize,
    /// Candidate holds priced.
    pub candidates: usize,
    /// Wall-clock seconds, the candidates' listing included.
    pub seconds: f64,
}

/// Rounds without a better bound before the step is halved.
const PATIENCE: usize = 12;
/// The step's scale below which the rounds stop: they no longer move the bound.
const LEAST_STEP: f64 = 1e-4;
/// A round's sum over a million terms rounds; the bound given is this much lower.
const ROUNDING: f64 = 1e-9;

/// The bound by prices of `program` on `hw` under `objective`, within about `seconds`
/// (at least one round). `target_s`: a latency in the objective some mapping reaches
/// (the best known), which sizes the steps; without it, everything in level 0.
pub fn price_bound(
    program: &Program,
    hw: &Hardware,
    objective: Objective,
    seconds: f64,
    target_s: Option<f64>,
) -> Result<PriceBound, ExactError> {
    let t0 = Instant::now();
    let cost = objective.cost_model(program, hw);
    let cands = candidates::enumerate(program, hw, &cost);
    let relaxed = Relaxed::new(&cands, &cost, hw);
    let target = target_s.map_or(cost.all_slow_latency(), |t| t.min(cost.all_slow_latency()));
    let mut prices = relaxed.first_prices();
    let mut best = f64::NEG_INFINITY;
    let (mut scale, mut idle, mut rounds) = (1.0, 0, 0);
    loop {
        let round = relaxed.round(&prices);
        rounds += 1;
        if best == f64::NEG_INFINITY || round.value > best + 1e-12 * best.abs() {
            best = round.value;
            idle = 0;
        } else {
            idle += 1;
            if idle >= PATIENCE {
                scale /= 2.0;
                idle = 0;
            }
        }
        let norm = prices.steepness(&round.slope);
        let out_of_time = t0.elapsed().as_secs_f64() >= seconds;
        if out_of_time || scale < LEAST_STEP || norm == 0.0 {
            break;
        }
        let step = scale * (target * MICROS - round.value).max(0.0) / norm;
        if step == 0.0 {
            break;
        }
        prices.step(&round.slope, step);
    }
    Ok(PriceBound {
        lower_bound_s: best / MICROS * (1.0 - ROUNDING),
        rounds,
        candidates: cands.len(),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The model with its tying rows priced, in flat arrays (µs).
struct Relaxed {
    /// The ops some hold touches: compute and all-level-0 memory time.
    compute: Vec<f64>,
    mem0: Vec<f64>,
    /// Their memory time with each buffer they touch at the most its holds save there.
    floor_mem: Vec<f64>,
    /// The objective's part no hold changes.
    constant: f64,
    /// Per candidate: its copy time, its shifts (by touched op) in `shifts[lo..hi]`.
    copy: Vec<f64>,
    shift_range: Vec<(u32, u32)>,
    shifts: Vec<(u32, f64)>,
    /// Per candidate: its capacity row's slot range `rows[lo..hi]` and its share of the
    /// level.
    row_range: Vec<(u32, u32)>,
    share: Vec<f64>,
    /// The capacity rows that can bind: per row, its level; rows of a level in op order,
    /// the levels one after another.
    rows: usize,
    /// Per buffer, its candidates by end, and per such entry, how many of them end
    /// before it starts.
    by_buffer: Vec<(Vec<u32>, Vec<u32>)>,
}

/// The weights of the memory rows and the prices of the capacity rows.
struct Prices {
    mu: Vec<f64>,
    lambda: Vec<f64>,
}

/// A round's value and its slope: the rows' slack at the holds it took.
struct Round {
    value: f64,
    slope: Prices,
}

impl Relaxed {
    fn new(cands: &[Candidate], cost: &CostModel, hw: &Hardware) -> Relaxed {
        let ops = cost.len();
        let mut touched = vec![u32::MAX; ops];
        let (mut compute, mut mem0) = (Vec::new(), Vec::new());
        let mut constant = cost.all_slow_latency() * MICROS;
        for c in cands {
            for &(t, _) in &c.shifts {
                if touched[t] == u32::MAX {
                    touched[t] = compute.len() as u32;
                    compute.push(cost.compute_s(t) * MICROS);
                    mem0.push(cost.default_mem_s(t) * MICROS);
                    constant -= cost.default_elapsed_s(t) * MICROS;
                }
            }
        }
        let mut shifts = Vec::new();
        let mut shift_range = Vec::with_capacity(cands.len());
        for c in cands {
            let lo = shifts.len() as u32;
            shifts.extend(c.shifts.iter().map(|&(t, s)| (touched[t], s * MICROS)));
            shift_range.push((lo, shifts.len() as u32));
        }
        let (rows, row_range, share) = capacity_rows(cands, hw, ops);
        // Each touched op's memory time with each buffer at the most its holds save.
        let least = candidates::least_shifts(cands, ops);
        let mut floor_mem = mem0.clone();
        for (t, &k) in touched.iter().enumerate().filter(|(_, &k)| k != u32::MAX) {
            floor_mem[k as usize] += least[t] * MICROS;
        }
        Relaxed {
            compute,
            mem0,
            floor_mem,
            constant,
            copy: cands.iter().map(|c| c.copy_s * MICROS).collect(),
            shift_range,
            shifts,
            row_range,
            share,
            rows,
            by_buffer: by_buffer(cands),
        }
    }

    /// Weights where each op stands at its floor (1 where its memory time leads even
    /// with each buffer at the most its holds save there, 0 where compute does) and no
    /// price: the first round is then at least the ops' floors the bound by blocks falls
    /// back to.
    fn first_prices(&self) -> Prices {
        Prices {
            mu: (self.compute.iter().zip(&self.floor_mem))
                .map(|(c, m)| if m >= c { 1.0 } else { 0.0 })
                .collect(),
            lambda: vec![0.0; self.rows],
        }
    }

    /// The relaxation's value at `p` and its slope.
    fn round(&self, p: &Prices) -> Round {
        let mut prefix = Vec::with_capacity(self.rows + 1);
        prefix.push(0.0);
        let mut sum = 0.0;
        for &l in &p.lambda {
            sum += l;
            prefix.push(sum);
        }
        let priced: Vec<f64> = (0..self.copy.len())
            .map(|c| {
                let (lo, hi) = self.shift_range[c];
                let mem: f64 = self.shifts[lo as usize..hi as usize]
                    .iter()
                    .map(|&(k, s)| p.mu[k as usize] * s)
                    .sum();
                let (a, b) = self.row_range[c];
                self.copy[c] + mem + self.share[c] * (prefix[b as usize] - prefix[a as usize])
            })
            .collect();
        let mut value = self.constant - sum;
        let mut slope = Prices {
            mu: (self.mem0.iter().zip(&self.compute))
                .map(|(m, c)| m - c)
                .collect(),
            lambda: vec![-1.0; self.rows],
        };
        for (k, (c, m)) in self.compute.iter().zip(&self.mem0).enumerate() {
            value += (1.0 - p.mu[k]) * c + p.mu[k] * m;
        }
        // Each row's load from the taken holds, as a difference over the rows' slots.
        let mut load = vec![0.0; self.rows + 1];
        for (order, before) in &self.by_buffer {
            for c in take_least(order, before, &priced) {
                value += priced[c];
                let (lo, hi) = self.shift_range[c];
                for &(k, s) in &self.shifts[lo as usize..hi as usize] {
                    slope.mu[k as usize] += s;
                }
                let (a, b) = self.row_range[c];
                load[a as usize] += self.share[c];
                load[b as usize] -= self.share[c];
            }
        }
        let mut running = 0.0;
        for (r, l) in slope.lambda.iter_mut().enumerate() {
            running += load[r];
            *l += running;
        }
        Round { value, slope }
    }
}

impl Prices {
    /// The squared length of `slope` as a step from here can follow it (a weight at its
    /// end that the slope pushes past it stays).
    fn steepness(&self, slope: &Prices) -> f64 {
        let mu = (self.mu.iter().zip(&slope.mu))
            .filter(|&(&m, &g)| !(m <= 0.0 && g < 0.0 || m >= 1.0 && g > 0.0))
            .map(|(_, g)| g * g)
            .sum::<f64>();
        let lambda = (self.lambda.iter().zip(&slope.lambda))
            .filter(|&(&l, &g)| !(l <= 0.0 && g < 0.0))
            .map(|(_, g)| g * g)
            .sum::<f64>();
        mu + lambda
    }

    fn step(&mut self, slope: &Prices, step: f64) {
        for (m, g) in self.mu.iter_mut().zip(&slope.mu) {
            *m = (*m + step * g).clamp(0.0, 1.0);
        }
        for (l, g) in self.lambda.iter_mut().zip(&slope.lambda) {
            *l = (*l + step * g).max(0.0);
        }
    }
}

/// The capacity rows that can bind (a level's holds covering an op where one starts are
/// more than its capacity), numbered level by level in op order; per candidate, the rows
/// it meets (a range: its rows are the level's between its start and its end) and its
/// share of the level.
fn capacity_rows(
    cands: &[Candidate],
    hw: &Hardware,
    ops: usize,
) -> (usize, Vec<(u32, u32)>, Vec<f64>) {
    let mut row_range = vec![(0u32, 0u32); cands.len()];
    let mut rows = 0usize;
    for level in 1..hw.levels.len() {
        let cap = hw.levels[level].capacity;
        let mine: Vec<usize> = (0..cands.len())
            .filter(|&c| cands[c].hold.level == level)
            .collect();
        let mut bytes = vec![0i128; ops + 1];
        let mut starts = vec![false; ops];
        for &c in &mine {
            let h = &cands[c].hold;
            bytes[h.start] += cands[c].size as i128;
            bytes[h.end + 1] -= cands[c].size as i128;
            starts[h.start] = true;
        }
        // Per op, the rows of this level before it: a hold's rows are those at its ops.
        let mut before = vec![0u32; ops + 1];
        let mut held = 0i128;
        for t in 0..ops {
            held += bytes[t];
            let binds = starts[t] && held > cap as i128;
            before[t + 1] = before[t] + u32::from(binds);
        }
        let base = rows as u32;
        for &c in &mine {
            let h = &cands[c].hold;
            row_range[c] = (base + before[h.start], base + before[h.end + 1]);
        }
        rows += before[ops] as usize;
    }
    let share = cands
        .iter()
        .map(|c| c.size as f64 / hw.levels[c.hold.level].capacity as f64)
        .collect();
    (rows, row_range, share)
}

/// Per buffer, its candidates by end, and for each, how many of them end before it
/// starts (the holds it can follow).
fn by_buffer(cands: &[Candidate]) -> Vec<(Vec<u32>, Vec<u32>)> {
    let mut groups: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
    for (i, c) in cands.iter().enumerate() {
        groups.entry(c.buffer).or_default().push(i as u32);
    }
    groups
        .into_values()
        .map(|mut order| {
            order.sort_by_key(|&c| (cands[c as usize].hold.end, c));
            let ends: Vec<usize> = order.iter().map(|&c| cands[c as usize].hold.end).collect();
            let before = order
                .iter()
                .map(|&c| ends.partition_point(|&e| e < cands[c as usize].hold.start) as u32)
                .collect();
            (order, before)
        })
        .collect()
}

/// The holds of one buffer, disjoint in time, of least total `priced` cost (none if none
/// costs less than nothing): `order` by end, `before[i]` the holds ending before the
/// `i`-th starts.
fn take_least(order: &[u32], before: &[u32], priced: &[f64]) -> Vec<usize> {
    if order.iter().all(|&c| priced[c as usize] >= 0.0) {
        return Vec::new();
    }
    let mut least = vec![0.0f64; order.len() + 1];
    for i in 0..order.len() {
        let with = priced[order[i] as usize] + least[before[i] as usize];
        least[i + 1] = least[i].min(with);
    }
    let mut taken = Vec::new();
    let mut i = order.len();
    while i > 0 {
        if least[i] < least[i - 1] {
            taken.push(order[i - 1] as usize);
            i = before[i - 1] as usize;
        } else {
            i -= 1;
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound_cases::bound_cases;
    use crate::solve::ExactConfig;

    /// The prices bound the whole model's proven optimum and every mapping, in the
    /// objective and (under the simulated one) in simulation; their first round is at
    /// least the ops' floors; and on a program whose capacity binds the rounds raise it.
    #[test]
    fn the_prices_bound_the_whole_optimum_and_every_mapping() {
        let mut compared = 0;
        let mut raised = 0;
        for case in bound_cases() {
            let (program, hw, objective) = (&case.program, &case.hw, case.objective);
            let what = format!("seed {}", case.seed);
            let p = price_bound(program, hw, objective, 5.0, None).unwrap();
            let first = price_bound(program, hw, objective, 0.0, None).unwrap();
            assert!(first.lower_bound_s <= p.lower_bound_s, "{what}");
            // With no time the bound by blocks is every op's floor; the first round is
            // never below it.
            let floors = crate::block_bound(program, hw, objective, 0.0).unwrap();
            assert_eq!(floors.proven, 0);
            assert!(
                first.lower_bound_s >= floors.lower_bound_s * (1.0 - 1e-6),
                "{what}: first round {} below the floors {}",
                first.lower_bound_s,
                floors.lower_bound_s
            );
            raised += usize::from(p.lower_bound_s > first.lower_bound_s * (1.0 + 1e-6));
            let config = ExactConfig {
                seconds: 30.0,
                objective,
                ..Default::default()
            };
            let whole = crate::Exact { config }.solve_proven(program, hw).unwrap();
            if whole.optimal() {
                compared += 1;
                assert!(
                    p.lower_bound_s <= whole.lower_bound_s * (1.0 + 1e-9),
                    "{what}: prices {} above the optimum {}",
                    p.lower_bound_s,
                    whole.lower_bound_s
                );
            }
            case.assert_below_mappings(p.lower_bound_s, &[&whole.mapping], &what);
        }
        assert!(compared >= 4, "{compared}");
        assert!(raised >= 1, "{raised}");
    }

    /// The interval choice takes the disjoint holds of least total cost.
    #[test]
    fn a_buffer_takes_its_cheapest_disjoint_holds() {
        // Holds by end: [0,2] -3, [1,4] -5, [3,5] -3, [6,7] +1.
        let spans = [(0usize, 2usize), (1, 4), (3, 5), (6, 7)];
        let priced = [-3.0, -5.0, -3.0, 1.0];
        let ends: Vec<usize> = spans.iter().map(|s| s.1).collect();
        let before: Vec<u32> = spans
            .iter()
            .map(|s| ends.partition_point(|&e| e < s.0) as u32)
            .collect();
        let order = [0u32, 1, 2, 3];
        let mut taken = take_least(&order, &before, &priced);
        taken.sort();
        // [0,2] and [3,5] (-6) beat [1,4] alone (-5).
        assert_eq!(taken, vec![0, 2]);
    }
}
