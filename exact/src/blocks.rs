//! A bound by blocks (docs/exact.md, "A bound by blocks"): a proven lower bound on the
//! objective's optimum over the whole program, from the model cut into blocks of
//! consecutive ops, each solved on its own. It reaches programs whose whole model the
//! backend cannot solve within the time.
//!
//! Each candidate hold that meets a block enters its model clipped to the block: its
//! traffic and its room at the block's ops, and a share of its exposed copy time in
//! proportion to what it saves there (its shares add up to its copy time). Any valid
//! mapping's holds, so cut, are a solution of every block's model whose costs add up to
//! its latency in the objective; so the blocks' optima, and their proven bounds, add up to
//! at most that latency. A window's repair ([`crate::window`]) proves nothing about the
//! program; this does, because every block is solved with nothing fixed.

use crate::candidates::{self, Candidate};
use crate::model::{MipLimits, Model, Start};
use crate::solve::{ExactError, Objective};
use accel_sim::{Hardware, OpId, Program};
use std::collections::HashMap;
use std::time::Instant;

/// What the blocks proved.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockBound {
    /// No valid mapping has a lower latency in the objective, seconds.
    pub lower_bound_s: f64,
    /// Blocks of the cut whose sum this is.
    pub blocks: usize,
    /// Blocks whose model was solved to optimality (the others gave their proven bound,
    /// or their ops' compute time where the backend proved nothing).
    pub proven: usize,
    /// Wall-clock seconds every cut took together.
    pub seconds: f64,
}

/// Blocks of the first cut: at least this many, and at least one per this many candidate
/// holds; each cut after it has half as many.
const FIRST_BLOCKS: usize = 64;
const HOLDS_PER_FIRST_BLOCK: usize = 1000;
/// A block left less time than this is not solved: building its model would take longer.
const LEAST_BLOCK_SECONDS: f64 = 0.01;

/// The bound by blocks of `program` on `hw` under `objective`, within `seconds`.
///
/// Cuts into [`FIRST_BLOCKS`] blocks (more on a program of many holds), then into half as
/// many, and so on while time is left, each cut given half of the time left: larger
/// blocks cut fewer holds, so bound higher, but take longer to prove. Every cut's sum is
/// a bound; the highest is kept. It stops growing once most blocks of a cut go unproven
/// or one block holds the whole program.
pub fn block_bound(
    program: &Program,
    hw: &Hardware,
    objective: Objective,
    seconds: f64,
) -> Result<BlockBound, ExactError> {
    let t0 = Instant::now();
    let cost = objective.cost_model(program, hw);
    let cands = candidates::enumerate(program, hw, &cost);
    let mut best: Option<BlockBound> = None;
    let mut count = FIRST_BLOCKS.max(cands.len() / HOLDS_PER_FIRST_BLOCK);
    loop {
        let left = seconds - t0.elapsed().as_secs_f64();
        if left <= 0.0 && best.is_some() {
            break;
        }
        let blocks = cut(&cands, program.len(), count);
        let whole = blocks.len() <= 1;
        let share = if whole { left } else { left / 2.0 };
        let cut_bound = bound_of(hw, objective, &cost, &cands, &blocks, share);
        let mostly_proven = 2 * cut_bound.proven >= cut_bound.blocks;
        if best
            .as_ref()
            .is_none_or(|b| cut_bound.lower_bound_s > b.lower_bound_s)
        {
            best = Some(cut_bound);
        }
        if whole || !mostly_proven {
            break;
        }
        count /= 2;
    }
    let mut best = best.expect("the first cut always runs");
    best.seconds = t0.elapsed().as_secs_f64();
    Ok(best)
}

/// The sum of the blocks' bounds, each block given an equal share of what is left of
/// `seconds`.
fn bound_of(
    hw: &Hardware,
    objective: Objective,
    cost: &accel_sim::CostModel,
    cands: &[Candidate],
    blocks: &[(OpId, OpId)],
    seconds: f64,
) -> BlockBound {
    let t0 = Instant::now();
    let overhead_s = match objective {
        Objective::Simulated => hw.op_overhead_s,
        Objective::Proxy => 0.0,
    };
    let mut total = 0.0;
    let mut proven = 0;
    let mut floors: Option<Vec<f64>> = None;
    for (k, &(lo, hi)) in blocks.iter().enumerate() {
        // Out of time, a block is not even clipped (on a program of a million holds,
        // clipping every block alone takes minutes): its ops' floors are its part.
        let left = seconds - t0.elapsed().as_secs_f64();
        if left / ((blocks.len() - k) as f64) < LEAST_BLOCK_SECONDS {
            let floors = floors.get_or_insert_with(|| op_floors(cands, cost));
            total += floors[lo..hi].iter().sum::<f64>() + overhead_s * (hi - lo) as f64;
            continue;
        }
        let local = clipped(cands, lo, hi);
        let touched: std::collections::BTreeSet<OpId> = local
            .iter()
            .flat_map(|c| c.shifts.iter().map(|&(t, _)| t))
            .collect();
        let fixed: f64 = (lo..hi)
            .filter(|t| !touched.contains(t))
            .map(|t| cost.default_elapsed_s(t))
            .sum::<f64>()
            + overhead_s * (hi - lo) as f64;
        let floor = floor_of(&local, cost);
        let left = seconds - t0.elapsed().as_secs_f64();
        let share = left / (blocks.len() - k) as f64;
        let model = Model::plain(&local, cost, hw);
        let limits = MipLimits {
            fixed: None,
            seconds: share.max(0.0),
            relative_gap: 0.0,
        };
        let part = if local.is_empty() {
            proven += 1;
            0.0
        } else if share < LEAST_BLOCK_SECONDS {
            floor
        } else {
            // Nothing taken is a solution: with it the backend returns the bound it
            // proved even when its own search finds none in time.
            let nothing = Start {
                taken: vec![false; local.len()],
                offsets: vec![0; local.len()],
            };
            match model.solve(&[], Some(&nothing), &limits) {
                Ok(r) if (r.bound_s - r.constant_s).is_finite() => {
                    proven += usize::from(r.optimal);
                    (r.bound_s - r.constant_s).max(floor)
                }
                _ => floor,
            }
        };
        total += part + fixed;
    }
    BlockBound {
        lower_bound_s: total,
        blocks: blocks.len(),
        proven,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Per op, what it takes at least whatever holds are taken: [`floor_of`] over every
/// candidate at once (capped by its time with everything in level 0, what an op no
/// candidate touches takes). Every candidate counts, not only those that save in a
/// block, so each op's floor is at most its floor in any block's model, and a sum over a
/// block's ops bounds its part.
fn op_floors(cands: &[Candidate], cost: &accel_sim::CostModel) -> Vec<f64> {
    candidates::least_shifts(cands, cost.len())
        .iter()
        .enumerate()
        .map(|(t, s)| {
            let mem = cost.default_mem_s(t) + s;
            cost.compute_s(t).max(mem).min(cost.default_elapsed_s(t))
        })
        .collect()
}

/// What the touched ops of a block's model take at least, whatever it takes: each op its
/// compute time, or its memory time with each buffer it touches in the fastest place one
/// of its holds offers (a buffer has one hold at a time), whichever is longer. The
/// block's bound where the backend proves nothing.
fn floor_of(local: &[Candidate], cost: &accel_sim::CostModel) -> f64 {
    let mut least: std::collections::BTreeMap<(OpId, usize), f64> = Default::default();
    for c in local {
        for &(t, s) in &c.shifts {
            let e = least.entry((t, c.buffer)).or_insert(0.0);
            *e = e.min(s);
        }
    }
    let mut mem: std::collections::BTreeMap<OpId, f64> = std::collections::BTreeMap::new();
    for (&(t, _), &s) in &least {
        *mem.entry(t).or_insert_with(|| cost.default_mem_s(t)) += s;
    }
    mem.iter().map(|(&t, &m)| cost.compute_s(t).max(m)).sum()
}

/// About `count` blocks `lo..hi`, in op order, in which about as many candidate holds
/// start (at least one op each; the holds that reach into a block from before dedupe
/// there, [`clipped`], so they are not counted).
fn cut(cands: &[Candidate], ops: usize, count: usize) -> Vec<(OpId, OpId)> {
    let mut starts = vec![0usize; ops];
    for c in cands {
        starts[c.hold.start] += 1;
    }
    let per_block = cands.len().div_ceil(count.max(1)).max(1);
    let mut blocks = Vec::new();
    let mut lo = 0;
    while lo < ops {
        let mut held = starts[lo];
        let mut hi = lo + 1;
        while hi < ops && held + starts[hi] <= per_block {
            held += starts[hi];
            hi += 1;
        }
        blocks.push((lo, hi));
        lo = hi;
    }
    blocks
}

/// The candidates meeting ops `lo..hi`, clipped to them: each with its share of its copy
/// time, those that save nothing there left out, and of equal clipped holds the one with
/// the least share kept.
fn clipped(cands: &[Candidate], lo: OpId, hi: OpId) -> Vec<Candidate> {
    let saving = |c: &Candidate, range: std::ops::Range<OpId>| -> f64 {
        c.shifts
            .iter()
            .filter(|(t, s)| range.contains(t) && *s < 0.0)
            .map(|(_, s)| -s)
            .sum()
    };
    let mut best: HashMap<Vec<u64>, Candidate> = HashMap::new();
    for c in cands
        .iter()
        .filter(|c| c.hold.start < hi && lo <= c.hold.end)
    {
        let here = saving(c, lo..hi);
        if here <= 0.0 {
            continue;
        }
        let all = saving(c, 0..usize::MAX);
        let mut k = c.clone();
        k.hold.start = c.hold.start.max(lo);
        k.hold.end = c.hold.end.min(hi - 1);
        k.retain_ops(lo, hi - 1);
        // Shares that round up could add up to more than the copy time.
        k.copy_s = c.copy_s * (here / all).min(1.0) * (1.0 - 1e-12);
        let mut key = vec![
            k.buffer as u64,
            k.hold.level as u64,
            k.hold.start as u64,
            k.hold.end as u64,
        ];
        key.extend(k.shifts.iter().flat_map(|&(t, s)| [t as u64, s.to_bits()]));
        match best.get(&key) {
            Some(b) if b.copy_s <= k.copy_s => {}
            _ => {
                best.insert(key, k);
            }
        }
    }
    // In a fixed order: the rows' order decides which of equal optima a backend returns.
    let mut out: Vec<(Vec<u64>, Candidate)> = best.into_iter().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound_cases::bound_cases;
    use crate::solve::ExactConfig;

    /// Cut into many blocks, the sum of the blocks' optima is at most the whole model's
    /// proven optimum, and so at most every mapping's latency in the objective (and in
    /// simulation, under the relaxation); cut into one block it is the whole optimum.
    #[test]
    fn the_blocks_bound_the_whole_optimum_and_every_mapping() {
        let mut cuts = 0;
        for case in bound_cases() {
            let (program, hw, objective) = (&case.program, &case.hw, case.objective);
            let cost = objective.cost_model(program, hw);
            let cands = candidates::enumerate(program, hw, &cost);
            let config = ExactConfig {
                seconds: 30.0,
                objective,
                ..Default::default()
            };
            let whole = crate::Exact { config }.solve_proven(program, hw).unwrap();
            if !whole.optimal() {
                // microlp proves most of them within the limit, not all.
                continue;
            }
            for count in [12, 5, 2, 1] {
                let blocks = cut(&cands, program.len(), count);
                let b = bound_of(hw, objective, &cost, &cands, &blocks, 30.0);
                let what = format!("seed {}, {} blocks", case.seed, blocks.len());
                // With no time, every block is its ops' floors: a bound, and no higher.
                let floors = bound_of(hw, objective, &cost, &cands, &blocks, 0.0);
                assert_eq!(floors.proven, 0, "{what}");
                assert!(
                    floors.lower_bound_s <= b.lower_bound_s * (1.0 + 1e-9),
                    "{what}: floors {} above the proven blocks {}",
                    floors.lower_bound_s,
                    b.lower_bound_s
                );
                assert_eq!(b.proven, b.blocks, "{what}");
                assert!(
                    b.lower_bound_s <= whole.lower_bound_s * (1.0 + 1e-9),
                    "{what}"
                );
                if blocks.len() == 1 {
                    let rel = (b.lower_bound_s / whole.lower_bound_s - 1.0).abs();
                    assert!(
                        rel < 1e-9,
                        "{what}: {} vs {}",
                        b.lower_bound_s,
                        whole.lower_bound_s
                    );
                } else {
                    cuts += 1;
                }
                case.assert_below_mappings(b.lower_bound_s, &[&whole.mapping], &what);
            }
        }
        assert!(cuts >= 12, "{cuts}");
    }
}
