//! The solve: the model without offsets first, then offsets lazily (docs/exact.md).
//!
//! Each round solves the model with the disjunctions added so far, which is a relaxation
//! of the whole one: its bound is a bound on every mapping. If the holds it takes can be
//! given offsets, that mapping costs what the model says and, the round being solved to
//! optimality, is optimal. Offsets come from first fit, then from the model's own offsets
//! when it already keeps every pair of those holds apart, then from a search for offsets
//! alone with those holds fixed (a far smaller problem). If none places them, what first
//! fit can place of them is kept as a valid mapping, the disjunctions of every pair of
//! holds taken so far that meet in time join the model, and it is solved again.

use crate::candidates::{self, Candidate};
use crate::model::{MipError, MipLimits, Model, Pair, Start};
use crate::packing;
use crate::region::{Region, TrustRegion};
use crate::windows::Windows;
use accel_sim::{CostModel, Hardware, Mapping, Program, Simulator};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

/// The latency the model minimises, and so what its bound bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// The simulator's relaxation ([`CostModel::relaxation`]): the bound is a bound on
    /// the simulated latency of every valid mapping (docs/exact.md).
    #[default]
    Simulated,
    /// XLA's cost model ([`CostModel::new`]): the cost model's own optimum. Its bound is a
    /// bound on the simulated latency too where no fast level is slower than level 0.
    Proxy,
}

impl Objective {
    /// The names [`Objective::from_str`](std::str::FromStr) accepts.
    pub const NAMES: [&'static str; 2] = ["simulated", "proxy"];

    /// The objective's name on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Objective::Simulated => "simulated",
            Objective::Proxy => "proxy",
        }
    }

    /// The model of this objective.
    pub fn cost_model(self, program: &Program, hw: &Hardware) -> CostModel {
        match self {
            Objective::Simulated => CostModel::relaxation(program, hw),
            Objective::Proxy => CostModel::new(program, hw),
        }
    }

    /// Whether a lower bound on this objective is one on the simulated latency of every
    /// valid mapping on `hw` (docs/exact.md, "A lower bound on the simulated latency").
    pub fn bounds_simulation(self, hw: &Hardware) -> bool {
        match self {
            Objective::Simulated => true,
            Objective::Proxy => no_fast_level_slower(hw),
        }
    }
}

impl std::str::FromStr for Objective {
    type Err = String;

    fn from_str(s: &str) -> Result<Objective, String> {
        match s {
            "simulated" => Ok(Objective::Simulated),
            "proxy" => Ok(Objective::Proxy),
            other => Err(format!(
                "unknown exact objective `{other}` ({})",
                Objective::NAMES.join(", ")
            )),
        }
    }
}

/// No fast level reads or writes slower than level 0 (as on every preset).
pub fn no_fast_level_slower(hw: &Hardware) -> bool {
    let l0 = &hw.levels[0];
    hw.levels[1..]
        .iter()
        .all(|l| l.read_bw >= l0.read_bw && l.write_bw >= l0.write_bw)
}

/// The solver's limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactConfig {
    /// Wall-clock seconds for the whole solve.
    pub seconds: f64,
    /// Stop once the best mapping is within this fraction of the bound (0: prove it).
    pub relative_gap: f64,
    /// What the model minimises.
    #[serde(default)]
    pub objective: Objective,
    /// Whether the pipeline repairs the mapping window by window after the whole model
    /// (docs/exact.md, "Windows"); under `auto` and `on` the whole model is not built for
    /// a program past the backend's reach ([`WHOLE_MODEL_REACH`]).
    #[serde(default)]
    pub windows: Windows,
}

impl Default for ExactConfig {
    fn default() -> Self {
        ExactConfig {
            seconds: 60.0,
            relative_gap: 0.0,
            objective: Objective::default(),
            windows: Windows::default(),
        }
    }
}

/// Candidate holds past which the whole model is not built where windows may run: the
/// backend would not solve even its first relaxation within a minute (microlp: no bound in
/// 30 s on a program of 109,779 holds, a bound on one of 73,298; HiGHS: a 1,097,489-hold
/// program proven in 21 s; docs/exact.md, "Scale"). Within it, the whole model is still
/// not built where its nonzeros would not be set up in half the time left
/// ([`SETUP_NONZEROS_PER_S`]).
pub const WHOLE_MODEL_REACH: usize = if cfg!(feature = "highs") {
    2_000_000
} else {
    80_000
};

/// Nonzeros a backend takes in a second before its search begins and heeds its time
/// limit: good_lp builds the rows, then HiGHS checks the matrix and sets up its presolve.
/// Measured with HiGHS on the lowered ResNet-50 step at the scale rule (32.4 million
/// nonzeros: 20 s to build, then 58 s in HiGHS under a 13 s limit; docs/results.md,
/// "HiGHS within its budget"). microlp heeds its limit sooner but is held to the same
/// rate: on the scale tier it builds the same whole models under it as before.
pub const SETUP_NONZEROS_PER_S: f64 = 400_000.0;

/// The share of the time left a model's setup may take at [`SETUP_NONZEROS_PER_S`].
const SETUP_SHARE: f64 = 0.5;

/// Whether a model of `nonzeros` is set up within its share of `left` seconds.
fn sets_up_within(nonzeros: usize, left: f64) -> bool {
    nonzeros as f64 <= SETUP_NONZEROS_PER_S * SETUP_SHARE * left.max(0.0)
}

/// Whether the whole model of `cands` is set up within its share of `left` seconds:
/// counted first by its op rows alone (cheap), then whole.
fn whole_model_sets_up(model: &Model, left: f64) -> bool {
    let shifts: usize = model.candidates.iter().map(|c| c.shifts.len()).sum();
    sets_up_within(shifts + model.candidates.len(), left)
        && sets_up_within(model.nonzeros(&[]), left)
}

/// The size of a program's whole model, before any disjunction: what decides whether the
/// pipeline builds it ([`WHOLE_MODEL_REACH`], [`SETUP_NONZEROS_PER_S`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSize {
    /// Candidate holds: the model's binary columns.
    pub holds: usize,
    /// Nonzeros as the model would be built (cover rows chained where that is smaller).
    pub nonzeros: usize,
    /// Buffers and levels whose cover rows would be chained.
    pub chained: usize,
}

impl ModelSize {
    /// Whether the pipeline builds this model when `seconds` are left: within the
    /// backend's hold reach, and set up within half of them.
    pub fn built_within(&self, seconds: f64) -> bool {
        self.holds <= WHOLE_MODEL_REACH && sets_up_within(self.nonzeros, seconds)
    }
}

/// The size of `program`'s whole model on `hw` under `objective`.
pub fn model_size(program: &Program, hw: &Hardware, objective: Objective) -> ModelSize {
    let cost = objective.cost_model(program, hw);
    let cands = candidates::enumerate(program, hw, &cost);
    let model = Model::plain(&cands, &cost, hw);
    ModelSize {
        holds: cands.len(),
        nonzeros: model.nonzeros(&[]),
        chained: model.covers().chained(),
    }
}

/// Where the solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The mapping is optimal for the cost model.
    Optimal,
    /// Within the requested gap of the bound.
    GapReached,
    /// The time limit came first: the gap is what was proven.
    TimeLimit,
}

/// The exact solver's answer.
#[derive(Clone, Debug)]
pub struct ExactSolution {
    /// What the model minimised.
    pub objective: Objective,
    /// The mapping returned: under [`Objective::Simulated`], the fastest in simulation of
    /// every mapping the solve built or was given; under [`Objective::Proxy`], the
    /// model's best.
    pub mapping: Mapping,
    /// `mapping`'s simulated latency, seconds.
    pub simulated_s: f64,
    /// The model's best mapping's latency in the objective, seconds: what `status` and
    /// `gap` speak of.
    pub latency_s: f64,
    /// No valid mapping has a lower latency in the objective, seconds.
    pub lower_bound_s: f64,
    /// Whether the solve proved the optimum, reached the gap tolerance, or stopped at the
    /// time limit.
    pub status: Status,
    /// `(latency - lower bound) / latency`.
    pub gap: f64,
    /// Seconds the solve took, models and simulations included.
    pub solve_s: f64,
    /// Candidate holds in the model.
    pub candidates: usize,
    /// Disjunctions (pairs of holds kept apart by offsets) in the last model.
    pub pairs: usize,
    /// Models solved.
    pub rounds: usize,
}

impl ExactSolution {
    /// Proven optimal (to the solver's tolerance).
    pub fn optimal(&self) -> bool {
        self.status == Status::Optimal
    }

    /// A proven lower bound on the simulated latency of every valid mapping on `hw`,
    /// where the objective gives one.
    pub fn simulated_bound_s(&self, hw: &Hardware) -> Option<f64> {
        self.objective
            .bounds_simulation(hw)
            .then_some(self.lower_bound_s)
    }
}

/// Why the solve failed.
#[derive(Debug, thiserror::Error)]
pub enum ExactError {
    /// The MIP solver failed or found nothing.
    #[error(transparent)]
    Mip(#[from] MipError),
    /// A config value is out of range (its field named).
    #[error("config: {0}")]
    Config(String),
    /// The mapping built does not validate (a bug).
    #[error("the exact solver built an invalid mapping (a bug): {0}")]
    Invalid(String),
}

/// Relative gap under which a proven solution counts as optimal: HiGHS's tolerances.
const OPTIMAL_GAP: f64 = 1e-6;

/// The cost-model optimum of `program` on `hw` (or the best found and a bound on it within
/// `config`'s limits). `known` mappings (valid ones; others are skipped) start the search:
/// the answer is never worse than any of them.
pub fn solve(
    program: &Program,
    hw: &Hardware,
    config: &ExactConfig,
    known: &[Mapping],
) -> Result<ExactSolution, ExactError> {
    let cost = config.objective.cost_model(program, hw);
    solve_model(program, hw, &cost, config, known)
}

/// [`solve`] minimising `cost` in place of the objective's model: to measure how far a
/// variant of the model (a [`CostModel::tightened`] one) moves the bound. The solution's
/// `objective` still says `config.objective`; its `lower_bound_s` bounds `cost`.
pub fn solve_model(
    program: &Program,
    hw: &Hardware,
    cost: &CostModel,
    config: &ExactConfig,
    known: &[Mapping],
) -> Result<ExactSolution, ExactError> {
    check(config)?;
    solve_within(program, hw, cost, config, known, None)
}

/// [`solve`] kept inside `region`: a mapping no more than `region.delta` uses from its
/// centre (local branching), started from the fastest of `known` the region admits. The
/// answer is still never worse than any of `known`, inside the region or not. No bound:
/// a region's optimum bounds nothing outside it, so `lower_bound_s` is 0 and the status
/// [`Status::TimeLimit`]. The whole model only: where windows would run in its place
/// (past [`WHOLE_MODEL_REACH`] or [`SETUP_NONZEROS_PER_S`] under `auto` and `on`) it
/// returns the best of `known`.
pub fn solve_in_region(
    program: &Program,
    hw: &Hardware,
    config: &ExactConfig,
    known: &[Mapping],
    region: &TrustRegion,
) -> Result<ExactSolution, ExactError> {
    check(config)?;
    region.check(program, hw).map_err(ExactError::Config)?;
    let cost = config.objective.cost_model(program, hw);
    solve_within(program, hw, &cost, config, known, Some(region))
}

fn solve_within(
    program: &Program,
    hw: &Hardware,
    cost: &CostModel,
    config: &ExactConfig,
    known: &[Mapping],
    region: Option<&TrustRegion>,
) -> Result<ExactSolution, ExactError> {
    let t0 = Instant::now();
    let cands = candidates::enumerate(program, hw, cost);
    // One model for the check and the rounds: its cover rows are found once.
    let mut model = Model::plain(&cands, cost, hw);
    let whole = config.windows == Windows::Off
        || (cands.len() <= WHOLE_MODEL_REACH && whole_model_sets_up(&model, left_of(config, t0)));
    let in_region = region.is_some();
    // The row is only read by the whole model.
    let region = region
        .filter(|_| whole)
        .map(|r| Region::new(program, &cands, r));
    let mut search = Search {
        program,
        hw,
        cost,
        cands: &cands,
        best: None,
        sim: Simulator::new(program, hw),
        fastest: None,
        keep_fastest: config.objective == Objective::Simulated,
        region: region.as_ref(),
        inside: None,
    };
    search.offer_known(known);
    model.region = region.as_ref();
    let mut lazy = Lazy {
        pairs: BTreeSet::new(),
        ever: BTreeSet::new(),
        bound: f64::NEG_INFINITY,
        rounds: 0,
        proven: cands.is_empty(),
    };
    while whole && !cands.is_empty() {
        match lazy.round(&model, &mut search, config, t0) {
            Ok(true) => {}
            Ok(false) => break,
            // No mapping of the model lies in the region (its centre over capacity, say):
            // the solve goes on over the whole space, as if it had been given none.
            Err(ExactError::Mip(MipError::Infeasible)) if model.region.is_some() => {
                model.region = None;
                search.region = None;
            }
            Err(e) => return Err(e),
        }
    }
    // A region's optimum proves nothing about the whole space.
    let (bound, proven) = if in_region {
        (f64::NEG_INFINITY, false)
    } else {
        (lazy.bound, lazy.proven)
    };
    search.finish(Finish {
        bound,
        proven,
        config,
        t0,
        pairs: lazy.pairs.len(),
        rounds: lazy.rounds,
    })
}

/// The rounds of the solve: the disjunctions added so far and what was proven.
struct Lazy {
    pairs: BTreeSet<Pair>,
    /// Every hold taken in some round.
    ever: BTreeSet<usize>,
    /// The best proven lower bound, seconds.
    bound: f64,
    rounds: usize,
    proven: bool,
}

impl Lazy {
    /// One round; `Ok(true)` when another is wanted.
    fn round(
        &mut self,
        model: &Model,
        search: &mut Search,
        config: &ExactConfig,
        t0: Instant,
    ) -> Result<bool, ExactError> {
        let left = left_of(config, t0);
        if left <= 0.0 {
            return Ok(false);
        }
        let pair_list: Vec<Pair> = self.pairs.iter().copied().collect();
        let limits = MipLimits {
            fixed: None,
            seconds: left,
            relative_gap: config.relative_gap,
        };
        let start = match model.region {
            None => search.best.as_ref().map(|b| &b.start),
            Some(_) => search.inside.as_ref().map(|(_, s)| s),
        };
        // The first round was decided with the whole model; a later one's pairs may make
        // it too big to set up in the time left.
        if self.rounds > 0 && !sets_up_within(model.nonzeros(&pair_list), left) {
            return Ok(false);
        }
        let r = match model.solve(&pair_list, start, &limits) {
            Ok(r) => r,
            // microlp can fail numerically ("Singular matrix") on a large model where it
            // solved a smaller one: the rounds end there, as a window's do, and the solve
            // keeps the mappings it has and the bound proven before (unproven).
            Err(MipError::NoSolution | MipError::Solver(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        self.rounds += 1;
        self.bound = self.bound.max(r.bound_s);
        let cands = model.candidates;
        let hw = model.hw;
        let taken: Vec<usize> = (0..cands.len()).filter(|&c| r.taken[c]).collect();
        let offsets = packing::first_fit(cands, &taken, hw)
            .or_else(|| {
                let all_in = meeting_pairs(cands, &taken)
                    .iter()
                    .all(|p| self.pairs.contains(p));
                all_in
                    .then(|| packing::stacked(cands, &taken, &r.offsets, hw))
                    .flatten()
            })
            .or_else(|| offsets_alone(model, &taken, left_of(config, t0)));
        if let Some(offsets) = offsets {
            search.offer(&taken, &offsets);
            self.proven = r.optimal;
            return Ok(false);
        }
        // A valid mapping near the model's: what first fit places of it.
        let (kept, offsets) = packing::repair(cands, &taken, hw, |kept, offsets| {
            model.cost.latency(&search.mapping(kept, offsets))
        });
        search.offer(&kept, &offsets);
        // Holds taken in any round so far are likely again: keep every pair of them apart
        // from now on, not only this round's.
        self.ever.extend(taken.iter().copied());
        let pool: Vec<usize> = self.ever.iter().copied().collect();
        let before = self.pairs.len();
        self.pairs.extend(meeting_pairs(cands, &pool));
        // No new pair: the model's own offsets did not place its holds (numerical
        // trouble), and another round would return the same.
        Ok(self.pairs.len() > before)
    }
}

fn left_of(config: &ExactConfig, t0: Instant) -> f64 {
    config.seconds - t0.elapsed().as_secs_f64()
}

/// Offsets for exactly the holds `taken`, from the model with them fixed and only their
/// pairs' disjunctions: a far smaller search than the whole model, given a share of the
/// time left. `None` when it finds none in time (or none exist).
fn offsets_alone(model: &Model, taken: &[usize], left: f64) -> Option<Vec<u64>> {
    let cands = model.candidates;
    let pairs = meeting_pairs(cands, taken);
    if !sets_up_within(model.nonzeros(&pairs), left * OFFSETS_ALONE_SHARE) {
        return None;
    }
    let mut fixed = vec![Some(false); cands.len()];
    for &c in taken {
        fixed[c] = Some(true);
    }
    let limits = MipLimits {
        fixed: Some(fixed),
        seconds: left * OFFSETS_ALONE_SHARE,
        relative_gap: 0.0,
    };
    let r = model.solve(&pairs, None, &limits).ok()?;
    packing::stacked(cands, taken, &r.offsets, model.hw)
}

/// The share of the time left one search for offsets alone gets: most rounds end there.
const OFFSETS_ALONE_SHARE: f64 = 0.5;

fn check(config: &ExactConfig) -> Result<(), ExactError> {
    if !(config.seconds.is_finite() && config.seconds > 0.0) {
        return Err(ExactError::Config(format!(
            "seconds must be a positive number, got {}",
            config.seconds
        )));
    }
    if !(0.0..1.0).contains(&config.relative_gap) {
        return Err(ExactError::Config(format!(
            "relative gap must be in [0, 1), got {}",
            config.relative_gap
        )));
    }
    Ok(())
}

/// The pairs of `taken` holds in one level that meet in time.
fn meeting_pairs(cands: &[Candidate], taken: &[usize]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (i, &a) in taken.iter().enumerate() {
        for &b in &taken[i + 1..] {
            let (ca, cb) = (&cands[a], &cands[b]);
            if ca.buffer != cb.buffer && ca.meets(cb) {
                out.push((a.min(b), a.max(b)));
            }
        }
    }
    out
}

/// The best mapping so far, and the same as holds with offsets (the next round's start).
struct Best {
    latency_s: f64,
    mapping: Mapping,
    start: Start,
}

struct Search<'a> {
    program: &'a Program,
    hw: &'a Hardware,
    cost: &'a CostModel,
    cands: &'a [Candidate],
    best: Option<Best>,
    sim: Simulator,
    /// The fastest mapping in simulation offered so far, and its simulated latency, kept
    /// when `keep_fastest` (the simulated objective returns it).
    fastest: Option<(f64, Mapping)>,
    keep_fastest: bool,
    /// The trust region the solve is kept in, if any.
    region: Option<&'a Region>,
    /// The best offered that `region` admits, and its latency: a start the region's model
    /// accepts.
    inside: Option<(f64, Start)>,
}

/// `mapping`'s holds as candidates (each made canonical: no costlier, no larger, reading
/// the same uses from the same levels) and their offsets; holds never worth their copy,
/// which no candidate matches, are left out. `index` finds a candidate by buffer and hold.
fn holds_in(
    program: &Program,
    cost: &CostModel,
    index: &HashMap<(usize, accel_sim::Allocation), usize>,
    mapping: &Mapping,
) -> (Vec<usize>, Vec<u64>) {
    let mut taken = Vec::new();
    let mut offsets = Vec::new();
    for (b, p) in mapping.buffers.iter().enumerate() {
        for a in &p.allocations {
            let mut hold = candidates::canonical(program, cost, b, a);
            hold.offset = 0;
            if let Some(&c) = index.get(&(b, hold)) {
                taken.push(c);
                offsets.push(a.offset);
            }
        }
    }
    (taken, offsets)
}

/// [`holds_in`] over `cands`.
#[cfg(test)]
pub(crate) fn holds_of(
    program: &Program,
    cost: &CostModel,
    cands: &[Candidate],
    mapping: &Mapping,
) -> (Vec<usize>, Vec<u64>) {
    let index = cands
        .iter()
        .enumerate()
        .map(|(i, c)| ((c.buffer, c.hold), i))
        .collect();
    holds_in(program, cost, &index, mapping)
}

struct Finish<'a> {
    bound: f64,
    proven: bool,
    config: &'a ExactConfig,
    t0: Instant,
    pairs: usize,
    rounds: usize,
}

impl Search<'_> {
    /// Known mappings as candidate holds: each hold made canonical (no costlier, no
    /// larger), holds never worth their copy dropped; invalid mappings skipped.
    fn offer_known(&mut self, known: &[Mapping]) {
        let index: HashMap<(usize, accel_sim::Allocation), usize> = self
            .cands
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.buffer, c.hold), i))
            .collect();
        for mapping in known {
            if mapping.validate(self.program, self.hw).is_err() {
                continue;
            }
            // As given too: making its holds canonical can slow it in simulation.
            self.offer_fastest(mapping);
            let (taken, offsets) = holds_in(self.program, self.cost, &index, mapping);
            self.offer(&taken, &offsets);
        }
    }

    /// A valid mapping, kept if it simulates faster than the fastest so far (only when
    /// the fastest is wanted: simulating every offer costs a whole run each).
    fn offer_fastest(&mut self, mapping: &Mapping) {
        if !self.keep_fastest {
            return;
        }
        let s = self.sim.run(mapping, false).latency_s;
        if self.fastest.as_ref().is_none_or(|(best, _)| s < *best) {
            self.fastest = Some((s, mapping.clone()));
        }
    }

    /// Holds `taken` at `offsets`, kept if better than the best so far.
    fn offer(&mut self, taken: &[usize], offsets: &[u64]) {
        let mapping = self.mapping(taken, offsets);
        // Built from placed holds, so valid; `finish` validates what it returns.
        self.offer_fastest(&mapping);
        let latency_s = self.cost.latency(&mapping);
        let start = || {
            let mut start = Start {
                taken: vec![false; self.cands.len()],
                offsets: vec![0; self.cands.len()],
            };
            for (&c, &o) in taken.iter().zip(offsets) {
                start.taken[c] = true;
                start.offsets[c] = o;
            }
            start
        };
        if let Some(region) = self.region {
            if self.inside.as_ref().is_none_or(|(l, _)| latency_s < *l) {
                let s = start();
                if region.admits(&s.taken) {
                    self.inside = Some((latency_s, s));
                }
            }
        }
        if self.best.as_ref().is_some_and(|b| b.latency_s <= latency_s) {
            return;
        }
        let start = start();
        self.best = Some(Best {
            latency_s,
            mapping,
            start,
        });
    }

    fn mapping(&self, taken: &[usize], offsets: &[u64]) -> Mapping {
        let mut mapping = Mapping::all_slow(self.program);
        for (&c, &o) in taken.iter().zip(offsets) {
            let cand = &self.cands[c];
            let mut hold = cand.hold;
            hold.offset = o;
            mapping.buffers[cand.buffer].allocations.push(hold);
        }
        for p in &mut mapping.buffers {
            p.allocations.sort_by_key(|a| a.start);
        }
        mapping
    }

    fn finish(mut self, f: Finish) -> Result<ExactSolution, ExactError> {
        let (mut mapping, latency_s) = match self.best.take() {
            Some(b) => (b.mapping, b.latency_s),
            None => (
                Mapping::all_slow(self.program),
                self.cost.all_slow_latency(),
            ),
        };
        let invalid = |e: accel_sim::MappingError| ExactError::Invalid(e.to_string());
        mapping.validate(self.program, self.hw).map_err(invalid)?;
        // Every mapping offered was simulated when the fastest is kept, the model's best
        // among them.
        let simulated_s = match self.fastest.take() {
            Some((s, m)) => {
                m.validate(self.program, self.hw).map_err(invalid)?;
                mapping = m;
                s
            }
            None => self.sim.run(&mapping, false).latency_s,
        };
        let lower_bound_s = if f.proven && self.cands.is_empty() {
            latency_s
        } else {
            f.bound.min(latency_s)
        };
        let gap = if lower_bound_s.is_finite() {
            ((latency_s - lower_bound_s) / latency_s).max(0.0)
        } else {
            1.0
        };
        let status = if f.proven && gap <= OPTIMAL_GAP.max(f.config.relative_gap) {
            if gap <= OPTIMAL_GAP {
                Status::Optimal
            } else {
                Status::GapReached
            }
        } else {
            Status::TimeLimit
        };
        Ok(ExactSolution {
            objective: f.config.objective,
            mapping,
            simulated_s,
            latency_s,
            lower_bound_s: if lower_bound_s.is_finite() {
                lower_bound_s
            } else {
                0.0
            },
            status,
            gap,
            solve_s: f.t0.elapsed().as_secs_f64(),
            candidates: self.cands.len(),
            pairs: f.pairs,
            rounds: f.rounds,
        })
    }
}
