//! The mixed-integer program (docs/exact.md, "The model"), built with `good_lp` and solved
//! by HiGHS, or by microlp where HiGHS is not built.
//!
//! Units keep the coefficients near 1: times in microseconds, offsets as fractions of the
//! level's capacity.
//!
//! - `x[c]` in {0, 1}: candidate hold `c` is taken.
//! - `y[t] >= compute(t)`, `y[t] >= mem0(t) + sum_c shift(c, t) x[c]`: op `t`'s elapsed
//!   time, the cost model's `max` made linear (minimising pushes `y` down onto it).
//! - per buffer, at each op where one of its holds starts: at most one hold covers it.
//! - per level, at each op where a hold starts: the sizes held there fit the capacity.
//! - for the pairs of holds named in `pairs` (both in one level, overlapping in time):
//!   offsets `o[c]` in `[0, 1 - size/capacity]` and an order `z` with
//!   `o[a] + stacked(a) <= o[b]` or `o[b] + stacked(b) <= o[a]` when both are taken.
//!
//! Minimise `sum_t y[t] + sum_c copy(c) x[c]` plus the ops no hold touches.

use crate::candidates::Candidate;
use crate::region::Region;
use crate::sharing::{self, SharingVars};
use accel_sim::{CostModel, Hardware, OpId};
use good_lp::{variable, Expression, ProblemVariables, Variable};
use std::collections::BTreeSet;

/// Seconds to the model's time unit.
pub(crate) const MICROS: f64 = 1e6;

/// A pair of holds (indices into the candidates, `a < b`) whose offsets must not meet.
pub type Pair = (usize, usize);

/// The program's model over its candidates.
pub struct Model<'a> {
    pub candidates: &'a [Candidate],
    pub cost: &'a CostModel,
    pub hw: &'a Hardware,
    /// Copies share level 0's idle time ([`crate::sharing`]): only with the simulator's
    /// relaxation as `cost`, whose hide times are the idle caps the rows need.
    pub sharing: bool,
    /// A trust region's row ([`crate::TrustRegion`]), when the solve is kept inside one.
    pub region: Option<&'a Region>,
}

/// A starting solution: the taken holds and their offsets (bytes).
pub struct Start {
    pub taken: Vec<bool>,
    pub offsets: Vec<u64>,
}

/// What the MIP solver returned.
pub struct MipResult {
    /// The holds taken.
    pub taken: Vec<bool>,
    /// Offsets of the holds in `pairs` (fractions of capacity; 0 for others).
    pub offsets: Vec<f64>,
    /// Proven lower bound on the model's optimum, seconds.
    pub bound_s: f64,
    /// The part of the objective no hold changes (the ops no hold touches, at their
    /// all-level-0 times, and every op's overhead), seconds: in `bound_s`.
    pub constant_s: f64,
    /// The solver proved `objective_s` optimal within its tolerances.
    pub optimal: bool,
}

/// Limits of one MIP solve.
pub struct MipLimits {
    /// When set, per hold: `Some(taken)` fixes it, `None` leaves it to the solve. All
    /// fixed: the solve only looks for their offsets; some: a window's repair, the rest
    /// of the mapping held as it is.
    pub fixed: Option<Vec<Option<bool>>>,
    pub seconds: f64,
    pub relative_gap: f64,
}

/// Why the MIP solver gave no solution.
#[derive(Debug, thiserror::Error)]
pub enum MipError {
    /// The MIP solver failed (its message).
    #[error("the MIP solver failed: {0}")]
    Solver(String),
    /// The MIP solver stopped at its time limit before it found any solution.
    #[error("the MIP solver found no solution within its time limit")]
    NoSolution,
    /// The model has no solution (a trust region no mapping of the model lies in).
    #[error("the model has no solution")]
    Infeasible,
}

/// The variables, each with its column: good_lp numbers them in creation order but keeps
/// the number private, so the count is kept here.
pub(crate) struct Vars {
    pub(crate) x: Vec<Col>,
    pub(crate) y: Vec<(OpId, Col)>,
    o: Vec<Option<Col>>,
    z: Vec<Col>,
}

#[derive(Clone, Copy)]
pub(crate) struct Col {
    pub(crate) var: Variable,
    pub(crate) index: usize,
}

pub(crate) struct Columns {
    problem: ProblemVariables,
    count: usize,
}

impl Columns {
    pub(crate) fn add(&mut self, def: good_lp::VariableDefinition) -> Col {
        let var = self.problem.add(def);
        self.count += 1;
        Col {
            var,
            index: self.count - 1,
        }
    }
}

impl Model<'_> {
    /// Solves the model with the disjunctions of `pairs`, from `start` when given.
    pub fn solve(
        &self,
        pairs: &[Pair],
        start: Option<&Start>,
        limits: &MipLimits,
    ) -> Result<MipResult, MipError> {
        let mut columns = Columns {
            problem: ProblemVariables::new(),
            count: 0,
        };
        let vars = self.variables(&mut columns, pairs, limits.fixed.as_deref());
        let trees = if self.sharing {
            sharing::families(self.candidates, self.cost.len(), self.hw.op_overhead_s)
        } else {
            Vec::new()
        };
        let share = (!trees.is_empty()).then(|| SharingVars::add(&mut columns, self, &vars, trees));
        let count = columns.count;
        let problem = columns.problem;
        let (objective, constant) = self.objective(&vars, share.as_ref());
        let mut rows = self.rows(&vars, pairs);
        if let Some(region) = self.region {
            let sum: Expression = (vars.x.iter().zip(&region.coef))
                .filter(|(_, &c)| c != 0)
                .map(|(x, &c)| c as f64 * x.var)
                .sum();
            rows.push(sum.leq(region.rhs() as f64));
        }
        if let Some(share) = &share {
            share.rows(self, &vars, &mut rows);
        }
        let start_values = start.map(|s| self.start_values(&vars, pairs, s, share.as_ref(), count));
        let solved = backend::solve(problem, objective, rows, start_values, limits)?;
        let offsets = vars
            .o
            .iter()
            .map(|o| o.map_or(0.0, |v| solved.values[v.index]))
            .collect();
        Ok(MipResult {
            taken: vars
                .x
                .iter()
                .map(|v| solved.values[v.index] > 0.5)
                .collect(),
            offsets,
            bound_s: (solved.bound + constant) / MICROS,
            constant_s: constant / MICROS,
            optimal: solved.optimal,
        })
    }

    fn variables(
        &self,
        problem: &mut Columns,
        pairs: &[Pair],
        fixed: Option<&[Option<bool>]>,
    ) -> Vars {
        let x = (0..self.candidates.len())
            .map(|c| match fixed.and_then(|f| f[c]) {
                Some(taken) => {
                    let v = if taken { 1.0 } else { 0.0 };
                    problem.add(variable().integer().min(v).max(v))
                }
                None => problem.add(variable().binary()),
            })
            .collect();
        let touched: BTreeSet<OpId> = self
            .candidates
            .iter()
            .flat_map(|c| c.shifts.iter().map(|&(t, _)| t))
            .collect();
        let y = touched
            .into_iter()
            .map(|t| {
                (
                    t,
                    problem.add(variable().min(self.cost.compute_s(t) * MICROS)),
                )
            })
            .collect();
        let mut o = vec![None; self.candidates.len()];
        for &(a, b) in pairs {
            for c in [a, b] {
                if o[c].is_none() {
                    let cand = &self.candidates[c];
                    let cap = self.hw.levels[cand.hold.level].capacity as f64;
                    o[c] = Some(problem.add(variable().min(0.0).max(1.0 - cand.size as f64 / cap)));
                }
            }
        }
        let z = pairs
            .iter()
            .map(|_| problem.add(variable().binary()))
            .collect();
        Vars { x, y, o, z }
    }

    /// The objective over the variables, and the constant part (the ops no hold touches).
    fn objective(&self, vars: &Vars, share: Option<&SharingVars>) -> (Expression, f64) {
        let mut e = Expression::default();
        let mut constant = self.cost.all_slow_latency() * MICROS;
        for &(t, y) in &vars.y {
            e += y.var;
            constant -= self.cost.default_elapsed_s(t) * MICROS;
        }
        // With the families, their stall stands for every copy's exposed time (and more).
        if let Some(share) = share {
            e += share.stall();
            return (e, constant);
        }
        for (c, &x) in self.candidates.iter().zip(&vars.x) {
            if c.copy_s > 0.0 {
                e += c.copy_s * MICROS * x.var;
            }
        }
        (e, constant)
    }

    fn rows(&self, vars: &Vars, pairs: &[Pair]) -> Vec<good_lp::Constraint> {
        let mut rows = Vec::new();
        // Op times, in op order: a std HashMap's order differs between processes, and the
        // rows' order decides which of equal optima the solver returns (its simulated
        // latency then differed from run to run).
        let mut at_op: std::collections::BTreeMap<OpId, Expression> = vars
            .y
            .iter()
            .map(|&(t, y)| (t, Expression::from(y.var)))
            .collect();
        for (c, &x) in self.candidates.iter().zip(&vars.x) {
            for &(t, s) in &c.shifts {
                *at_op.get_mut(&t).expect("every touched op has a y") -= s * MICROS * x.var;
            }
        }
        for (t, e) in at_op {
            rows.push(e.geq(self.cost.default_mem_s(t) * MICROS));
        }
        // One hold per buffer at a time; capacity per level.
        let by_buffer = group(self.candidates, |c| c.buffer);
        for ids in by_buffer {
            for_each_cover(self.candidates, &ids, |cover, _| {
                if cover.len() > 1 {
                    let sum: Expression = cover.iter().map(|&c| vars.x[c].var).sum();
                    rows.push(sum.leq(1.0));
                }
            });
        }
        for ids in group(self.candidates, |c| c.hold.level) {
            let level = self.candidates[ids[0]].hold.level;
            let cap = self.hw.levels[level].capacity as f64;
            // Most ops' holds fit together: their row is never built.
            for_each_cover(self.candidates, &ids, |cover, bytes| {
                if bytes as f64 > cap {
                    let sum: Expression = cover
                        .iter()
                        .map(|&c| (self.candidates[c].size as f64 / cap) * vars.x[c].var)
                        .sum();
                    rows.push(sum.leq(1.0));
                }
            });
        }
        // Disjunctions: `o[a] + s(a) <= o[b]` when z, `o[b] + s(b) <= o[a]` when not,
        // both relaxed unless both are taken.
        for (&(a, b), z) in pairs.iter().zip(&vars.z) {
            let z = z.var;
            let (ca, cb) = (&self.candidates[a], &self.candidates[b]);
            let cap = self.hw.levels[ca.hold.level].capacity as f64;
            let (oa, ob) = (vars.o[a].unwrap().var, vars.o[b].unwrap().var);
            let (xa, xb) = (vars.x[a].var, vars.x[b].var);
            let sa = ca.stacked_size as f64 / cap;
            let sb = cb.stacked_size as f64 / cap;
            // The largest `o[a] + s(a) - o[b]` can be: the tightest big-M that relaxes it.
            let ma = 1.0 - ca.size as f64 / cap + sa;
            let mb = 1.0 - cb.size as f64 / cap + sb;
            rows.push((oa + sa - ob - ma + ma * z - 2.0 * ma + ma * xa + ma * xb).leq(0.0));
            rows.push((ob + sb - oa - mb * z - 2.0 * mb + mb * xa + mb * xb).leq(0.0));
        }
        rows
    }

    /// Column values of a starting solution (variables in creation order).
    fn start_values(
        &self,
        vars: &Vars,
        pairs: &[Pair],
        start: &Start,
        share: Option<&SharingVars>,
        count: usize,
    ) -> Vec<f64> {
        let mut values = vec![0.0; count];
        let mut mem: std::collections::HashMap<OpId, f64> = vars
            .y
            .iter()
            .map(|&(t, _)| (t, self.cost.default_mem_s(t)))
            .collect();
        for (c, &x) in vars.x.iter().enumerate() {
            if start.taken[c] {
                values[var_index(x)] = 1.0;
                for &(t, s) in &self.candidates[c].shifts {
                    *mem.get_mut(&t).unwrap() += s;
                }
            }
        }
        let mut y_values = Vec::with_capacity(vars.y.len());
        for &(t, y) in &vars.y {
            let v = self.cost.compute_s(t).max(mem[&t]) * MICROS;
            values[var_index(y)] = v;
            y_values.push((t, v));
        }
        if let Some(share) = share {
            share.start(self, &start.taken, &y_values, &mut values);
        }
        let fraction = |c: usize| {
            let cap = self.hw.levels[self.candidates[c].hold.level].capacity as f64;
            start.offsets[c] as f64 / cap
        };
        for (c, o) in vars.o.iter().enumerate() {
            if let Some(o) = o {
                values[var_index(*o)] = if start.taken[c] { fraction(c) } else { 0.0 };
            }
        }
        for (&(a, b), &z) in pairs.iter().zip(&vars.z) {
            let a_below = start.taken[a] && start.taken[b] && start.offsets[a] < start.offsets[b];
            values[var_index(z)] = if a_below { 1.0 } else { 0.0 };
        }
        values
    }
}

fn var_index(v: Col) -> usize {
    v.index
}

/// Candidate indices grouped by a key, each group in index order.
fn group<K: Ord>(candidates: &[Candidate], key: impl Fn(&Candidate) -> K) -> Vec<Vec<usize>> {
    let mut map: std::collections::BTreeMap<K, Vec<usize>> = Default::default();
    for (i, c) in candidates.iter().enumerate() {
        map.entry(key(c)).or_default().push(i);
    }
    map.into_values().collect()
}

/// For each op where one of `ids` starts, the ones covering it: the most held at once
/// over intervals is reached at some start. (No set is inside an earlier one: it holds the
/// holds that start there.)
#[cfg(test)]
fn covers(candidates: &[Candidate], ids: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for_each_cover(candidates, ids, |cover, _| {
        out.push(cover.iter().copied().collect())
    });
    out
}

/// Calls `f` with the holds of `ids` covering each op where one of them starts, in op
/// order, each set in index order, and their bytes: a sweep over the starts, so the cost
/// is the starts and ends plus what `f` reads, not starts x holds (a 100k-op program has
/// 370k holds).
fn for_each_cover(
    candidates: &[Candidate],
    ids: &[usize],
    mut f: impl FnMut(&BTreeSet<usize>, u64),
) {
    let mut by_start = ids.to_vec();
    by_start.sort_by_key(|&c| (candidates[c].hold.start, c));
    let mut ends: std::collections::BinaryHeap<std::cmp::Reverse<(OpId, usize)>> =
        Default::default();
    let mut active = BTreeSet::new();
    let mut bytes = 0u64;
    let mut i = 0;
    while i < by_start.len() {
        let t = candidates[by_start[i]].hold.start;
        while i < by_start.len() && candidates[by_start[i]].hold.start == t {
            let c = by_start[i];
            active.insert(c);
            bytes += candidates[c].size;
            ends.push(std::cmp::Reverse((candidates[c].hold.end, c)));
            i += 1;
        }
        while let Some(&std::cmp::Reverse((end, c))) = ends.peek() {
            if end >= t {
                break;
            }
            active.remove(&c);
            bytes -= candidates[c].size;
            ends.pop();
        }
        f(&active, bytes);
    }
}

/// What a backend returns: column values in creation order, the bound without the
/// constant, and whether it is proven optimal.
struct Solved {
    values: Vec<f64>,
    bound: f64,
    optimal: bool,
}

#[cfg(feature = "highs")]
mod backend {
    use super::{MipError, MipLimits, Solved};
    use good_lp::{Constraint, Expression, ProblemVariables, SolverModel};
    use highs::HighsModelStatus as S;

    pub(super) fn solve(
        problem: ProblemVariables,
        objective: Expression,
        rows: Vec<Constraint>,
        start: Option<Vec<f64>>,
        limits: &MipLimits,
    ) -> Result<Solved, MipError> {
        let mut p = problem.minimise(objective).using(good_lp::highs);
        for r in rows {
            p.add_constraint(r);
        }
        let mut model = p
            .try_into_inner()
            .map_err(|e| MipError::Solver(e.to_string()))?;
        model.make_quiet();
        option(&mut model, "time_limit", limits.seconds.max(0.01))?;
        option(&mut model, "mip_rel_gap", limits.relative_gap)?;
        option(&mut model, "mip_abs_gap", 1e-7)?;
        // One thread, always: HiGHS fixes its thread pool at the first solve of a process
        // and refuses another count later; its branch and bound is serial anyway.
        option(&mut model, "threads", 1)?;
        option(&mut model, "random_seed", 0)?;
        if let Some(start) = &start {
            model
                .try_set_solution(Some(start), None, None, None)
                .map_err(|e| MipError::Solver(format!("starting solution: {e:?}")))?;
        }
        let solved = model
            .try_solve()
            .map_err(|e| MipError::Solver(format!("{e:?}")))?;
        let status = solved.status();
        let optimal = match status {
            S::Optimal => true,
            S::ReachedTimeLimit
            | S::ReachedSolutionLimit
            | S::ReachedInterrupt
            | S::ReachedIterationLimit
            | S::ReachedMemoryLimit
            | S::ObjectiveBound
            | S::ObjectiveTarget => false,
            S::Infeasible => return Err(MipError::Infeasible),
            other => return Err(MipError::Solver(format!("HiGHS status {other:?}"))),
        };
        if solved.primal_solution_status() != highs::HighsSolutionStatus::Feasible {
            return Err(MipError::NoSolution);
        }
        let objective = solved.objective_value();
        let bound = solved
            .double_info_value(c"mip_dual_bound")
            .ok()
            .filter(|b| b.is_finite())
            .unwrap_or(f64::NEG_INFINITY);
        Ok(Solved {
            values: solved.get_solution().columns().to_vec(),
            // HiGHS proves the bound within its tolerances; it never exceeds what it found.
            bound: if optimal && bound == f64::NEG_INFINITY {
                objective
            } else {
                bound.min(objective)
            },
            optimal,
        })
    }

    fn option<V: highs::HighsOptionValue>(
        model: &mut highs::Model,
        name: &str,
        value: V,
    ) -> Result<(), MipError> {
        model
            .try_set_option(name, value)
            .map_err(|e| MipError::Solver(format!("HiGHS option {name}: {e:?}")))
    }
}

#[cfg(not(feature = "highs"))]
mod backend {
    use super::{MipError, MipLimits, Solved};
    use good_lp::solvers::{WithInitialSolution, WithMipGap, WithTimeLimit};
    use good_lp::{
        Constraint, Expression, ProblemVariables, ResolutionError, Solution, SolverModel,
    };

    pub(super) fn solve(
        problem: ProblemVariables,
        objective: Expression,
        rows: Vec<Constraint>,
        start: Option<Vec<f64>>,
        limits: &MipLimits,
    ) -> Result<Solved, MipError> {
        let vars: Vec<good_lp::Variable> =
            problem.iter_variables_with_def().map(|(v, _)| v).collect();
        let value_of = objective.clone();
        let mut p = problem
            .minimise(objective)
            .using(good_lp::microlp)
            .with_time_limit(limits.seconds.max(0.0))
            .with_mip_gap(limits.relative_gap as f32)
            .map_err(|e| MipError::Solver(format!("gap tolerance: {e}")))?;
        if let Some(start) = start {
            p = p.with_initial_solution(vars.iter().copied().zip(start));
        }
        for r in rows {
            p.add_constraint(r);
        }
        let s = p.solve().map_err(|e| match e {
            // Stopped by the time limit before any mapping was found.
            ResolutionError::Other(_) => MipError::NoSolution,
            ResolutionError::Infeasible => MipError::Infeasible,
            e => MipError::Solver(e.to_string()),
        })?;
        let values: Vec<f64> = vars.iter().map(|&v| s.value(v)).collect();
        let objective = value_of.eval_with(&s);
        let s = s.into_inner();
        let optimal = s.termination_reason() == microlp::TerminationReason::ProvenOptimal;
        let bound = match s.stats().best_bound {
            _ if optimal => objective,
            Some(b) if b.is_finite() => b.min(objective),
            _ => f64::NEG_INFINITY,
        };
        Ok(Solved {
            values,
            bound,
            optimal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_are_the_holds_at_each_start() {
        let cand = |start, end| Candidate::fixture(start, end, 1, 1);
        let cs = [cand(0, 5), cand(1, 2), cand(3, 4), cand(4, 6)];
        let ids = [0, 1, 2, 3];
        assert_eq!(
            covers(&cs, &ids),
            vec![vec![0], vec![0, 1], vec![0, 2], vec![0, 2, 3]]
        );
        // One set per start, however many holds start there.
        let cs2 = [cand(0, 5), cand(0, 3)];
        assert_eq!(covers(&cs2, &[0, 1]), vec![vec![0, 1]]);
    }
}
