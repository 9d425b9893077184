//! The holds a buffer can have, enumerated so that every valid mapping is matched, hold for
//! hold, by candidates that cost no more and occupy no more (docs/exact.md, "The space").
//!
//! A hold is one [`Allocation`] without its offset: a fast level, an interval, and how the
//! data arrives. For buffer `b` with uses `u_1 < ... < u_k` and definition `d`:
//! - prefetch `(s, i, j)`: a copy from level 0 issued at op `s` serves uses `u_i..=u_j` and
//!   the hold ends at `u_j` (holding longer costs space and saves nothing). `s` runs from the
//!   latest op whose copy is still hidden before `u_i` (earlier starts cost the same and
//!   hold longer) up to `u_i`, and after `u_{i-1}` and after `d`.
//! - defined `end`, with eviction: the defining op writes it into the level, the copy back
//!   is issued right after it (the cost model's exposed copy time only shrinks when the
//!   eviction is issued earlier), and the hold ends at `end`: every op up to the one where
//!   the copy back is hidden, and every later use.
//! - defined, never evicted (not for outputs): the whole live range.
//!
//! The cost model is additive over a buffer's holds, which are disjoint in time: each
//! candidate carries its exposed copy time and its memory-time shift at each op it touches.
//! A candidate whose best case (its shifts alone, at the all-level-0 op times) does not pay
//! for its copy is dropped: with every level at least as fast as level 0, other buffers'
//! holds only shrink what it saves.

use accel_sim::{Allocation, Arrival, BufferId, CostModel, Hardware, OpId, Program};

/// One possible hold of one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub buffer: BufferId,
    /// The hold, at offset 0 (the solver chooses the offset).
    pub hold: Allocation,
    /// Bytes it occupies.
    pub size: u64,
    /// `size` rounded up to the level's alignment: what it takes when another hold sits
    /// above it.
    pub stacked_size: u64,
    /// Exposed copy time, seconds.
    pub copy_s: f64,
    /// The change of each touched op's memory time, seconds, by op.
    pub shifts: Vec<(OpId, f64)>,
    /// Per entry of `shifts`: the level-0 traffic time the op no longer has, seconds.
    pub relief: Vec<f64>,
    /// Its copy's whole transfer time (0 when it makes no copy), seconds.
    pub work_s: f64,
    /// The ops its copy runs beside, `lo..hi` (a prefetch: from its issue to its first
    /// use; an eviction: after its issue to the hold's end).
    pub copy_window: (OpId, OpId),
}

impl Candidate {
    pub(crate) fn new(
        program: &Program,
        cost: &CostModel,
        hw: &Hardware,
        buffer: BufferId,
        hold: Allocation,
    ) -> Candidate {
        let size = program.buffer(buffer).size;
        let mut shifts = Vec::new();
        cost.for_each_shift(buffer, &[], &[hold], |t, s| shifts.push((t, s)));
        let l0 = &hw.levels[0];
        let relief = shifts
            .iter()
            .map(|&(t, _)| {
                let write = hold.arrival == Arrival::Defined && t == hold.start;
                size as f64 / if write { l0.write_bw } else { l0.read_bw }
            })
            .collect();
        let align = hw.levels[hold.level].alignment;
        let (work_s, copy_window) = match (hold.arrival, hold.eviction) {
            (Arrival::Prefetch, _) => {
                let uses = program.uses(buffer);
                let first = uses
                    .get(uses.partition_point(|&u| u < hold.start))
                    .copied()
                    .unwrap_or(hold.start);
                (cost.copy_s(buffer, hold.level), (hold.start, first))
            }
            (Arrival::Defined, Some(e)) => (cost.copy_s(buffer, hold.level), (e + 1, hold.end + 1)),
            (Arrival::Defined, None) => (0.0, (hold.start, hold.start)),
        };
        Candidate {
            buffer,
            hold,
            size,
            stacked_size: size.div_ceil(align) * align,
            copy_s: cost.copy_cost(buffer, &[hold]),
            shifts,
            relief,
            work_s,
            copy_window,
        }
    }

    /// Keeps only its traffic at ops `first..=last` (a hold clipped to a window).
    pub(crate) fn retain_ops(&mut self, first: OpId, last: OpId) {
        let keep: Vec<bool> = self
            .shifts
            .iter()
            .map(|&(t, _)| first <= t && t <= last)
            .collect();
        let mut k = keep.iter();
        self.shifts.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        self.relief.retain(|_| *k.next().unwrap());
    }

    /// What it saves alone, at the all-level-0 op times, less its copy time: an upper
    /// bound on what it saves beside any other holds when no level is slower than level 0.
    fn best_saving_s(&self, cost: &CostModel) -> f64 {
        let saved: f64 = self
            .shifts
            .iter()
            .map(|&(t, s)| {
                let c = cost.compute_s(t);
                let m = cost.default_mem_s(t);
                c.max(m) - c.max(m + s)
            })
            .sum();
        saved - self.copy_s
    }

    /// A prefetched hold of buffer 0 in level 1 with no costs: the shared fixture of the
    /// model's and the packer's tests.
    #[cfg(test)]
    pub(crate) fn fixture(start: OpId, end: OpId, size: u64, stacked_size: u64) -> Candidate {
        Candidate {
            buffer: 0,
            hold: Allocation {
                level: 1,
                offset: 0,
                start,
                end,
                arrival: Arrival::Prefetch,
                eviction: None,
            },
            size,
            stacked_size,
            copy_s: 0.0,
            shifts: vec![],
            relief: vec![],
            work_s: 0.0,
            copy_window: (start, start),
        }
    }

    /// Whether it and `other` hold the same level at some op: then their offsets must keep
    /// them apart.
    pub fn meets(&self, other: &Candidate) -> bool {
        self.hold.level == other.hold.level
            && self.hold.start <= other.hold.end
            && other.hold.start <= self.hold.end
    }
}

/// Every candidate hold of every buffer of `program` (see the module docs), by buffer.
pub fn enumerate(program: &Program, hw: &Hardware, cost: &CostModel) -> Vec<Candidate> {
    let no_level_slower = crate::solve::no_fast_level_slower(hw);
    let mut out = Vec::new();
    for b in 0..program.buffers().len() {
        for level in 1..hw.levels.len() {
            if program.buffer(b).size > hw.levels[level].capacity {
                continue;
            }
            for hold in holds_of(program, cost, b, level) {
                let c = Candidate::new(program, cost, hw, b, hold);
                let helps = c.shifts.iter().any(|&(_, s)| s < 0.0);
                if helps && !(no_level_slower && c.best_saving_s(cost) <= 0.0) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The holds of buffer `b` in `level` (module docs), before pricing.
fn holds_of(program: &Program, cost: &CostModel, b: BufferId, level: usize) -> Vec<Allocation> {
    let uses = program.uses(b);
    let def = program.def(b);
    let (_, live_end) = program.live_range(b);
    let hold = |start, end, arrival, eviction| Allocation {
        level,
        offset: 0,
        start,
        end,
        arrival,
        eviction,
    };
    let mut holds = Vec::new();
    // Level 0 holds the data from op `d + 1` (or the start, for weights and inputs).
    let valid_from = def.map_or(0, |d| d + 1);
    let copy = cost.copy_s(b, level);
    for (i, &first) in uses.iter().enumerate() {
        let after_previous = if i == 0 { 0 } else { uses[i - 1] + 1 };
        let lowest = valid_from.max(after_previous);
        if first < lowest {
            continue;
        }
        for s in (lowest..=first).rev() {
            for &last in &uses[i..] {
                holds.push(hold(s, last, Arrival::Prefetch, None));
            }
            if cost.span_s(s, first) >= copy {
                break;
            }
        }
    }
    if let Some(d) = def {
        for end in d..=live_end {
            let hidden_before = cost.span_s(d + 1, end) >= copy;
            let is_use = uses.binary_search(&end).is_ok();
            if hidden_before && !is_use {
                continue;
            }
            holds.push(hold(d, end, Arrival::Defined, Some(d)));
        }
        if program.buffer(b).kind != accel_sim::BufferKind::Output {
            holds.push(hold(d, live_end, Arrival::Defined, None));
        }
    }
    holds
}

/// `hold` of buffer `b` made canonical (module docs): the same reads, no more copy time,
/// no longer an interval. Every hold of a valid mapping becomes one of [`enumerate`]'s
/// (unless it is dropped there as never worth its copy), which is how a known mapping
/// becomes a starting solution.
pub fn canonical(
    program: &Program,
    cost: &CostModel,
    b: BufferId,
    hold: &Allocation,
) -> Allocation {
    let uses = program.uses(b);
    let copy = cost.copy_s(b, hold.level);
    let mut h = *hold;
    match hold.arrival {
        Arrival::Prefetch => {
            let i = uses.partition_point(|&u| u < hold.start);
            let j = uses.partition_point(|&u| u <= hold.end);
            // A valid prefetch serves at least one use: i < j.
            let (first, last) = (uses[i], uses[j - 1]);
            let mut s = hold.start;
            while s < first && cost.span_s(s + 1, first) >= copy {
                s += 1;
            }
            h.start = s;
            h.end = last;
        }
        Arrival::Defined => {
            let d = hold.start;
            if hold.eviction.is_some() {
                h.eviction = Some(d);
                // Shorten to the last use inside it, or to where the copy is hidden,
                // whichever is later: the enumeration's end.
                let mut end = hold.end;
                while end > d {
                    let is_use = uses.binary_search(&end).is_ok();
                    if is_use || cost.span_s(d + 1, end) < copy {
                        break;
                    }
                    end -= 1;
                }
                h.end = end;
            }
        }
    }
    h
}

/// Per op of a program of `ops` ops, the most its memory time can shrink whatever holds are
/// taken: over the buffers it touches, the most negative shift of each one's holds there
/// (a buffer has one hold at a time; 0 where none saves), seconds. An op touches a few
/// buffers: a short list an op, not a map over a million candidates' shifts.
pub(crate) fn least_shifts(cands: &[Candidate], ops: usize) -> Vec<f64> {
    let mut least: Vec<Vec<(BufferId, f64)>> = vec![Vec::new(); ops];
    for c in cands {
        for &(t, s) in &c.shifts {
            let here = &mut least[t];
            match here.iter_mut().find(|(b, _)| *b == c.buffer) {
                Some((_, m)) => *m = m.min(s),
                None => here.push((c.buffer, s.min(0.0))),
            }
        }
    }
    least
        .iter()
        .map(|here| here.iter().map(|(_, s)| s).sum())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::Mapping;
    use malloc_game::players::player;
    use malloc_game::{GameOptions, GameSetup};
    use std::sync::Arc;

    /// Mappings of a program by random games, greedy and xla: many kinds of holds.
    fn mappings(program: &Program, hw: &Hardware) -> Vec<Mapping> {
        let setup = GameSetup::new(
            Arc::new(program.clone()),
            hw.clone(),
            GameOptions::default(),
        )
        .unwrap();
        let mut out = Vec::new();
        for (name, seeds) in [("random", 6), ("greedy", 1), ("xla", 1)] {
            let p = player(name).unwrap();
            for seed in 0..seeds {
                out.push(p.play(&setup, seed).mapping());
            }
        }
        out
    }

    #[test]
    fn every_hold_of_a_valid_mapping_has_a_candidate_no_worse() {
        // The completeness the solver's optimality rests on: each hold, made canonical,
        // reads the same ops from the same level, costs no more copy time, holds no
        // longer, and is enumerated, unless it never pays for its copy: in the cost model
        // and in the simulator's relaxation alike.
        let mut holds = 0;
        for seed in 0..12 {
            let program = bench_workloads::synthetic::random_dag(14, 50 + seed % 6);
            let hw = Hardware::preset(if seed % 2 == 0 {
                "tpu-v4i-like"
            } else {
                "nnp-i-like"
            })
            .unwrap();
            let fastest = hw.fastest();
            let hw = hw
                .with_capacity(fastest, program.peak_live_bytes() / 3)
                .unwrap();
            let cost = if seed < 6 {
                CostModel::new(&program, &hw)
            } else {
                CostModel::relaxation(&program, &hw)
            };
            let cands = enumerate(&program, &hw, &cost);
            for m in mappings(&program, &hw) {
                m.validate(&program, &hw).unwrap();
                for (b, p) in m.buffers.iter().enumerate() {
                    for a in &p.allocations {
                        holds += 1;
                        let mut h = canonical(&program, &cost, b, a);
                        assert!(a.start <= h.start && h.end <= a.end, "{a:?} -> {h:?}");
                        assert!(cost.copy_cost(b, &[h]) <= cost.copy_cost(b, &[*a]) + 1e-15);
                        let shifts = |x: &Allocation| {
                            let mut v = Vec::new();
                            cost.for_each_shift(b, &[], &[*x], |t, s| v.push((t, s)));
                            v
                        };
                        assert_eq!(shifts(&h), shifts(a));
                        h.offset = 0;
                        let c = Candidate::new(&program, &cost, &hw, b, h);
                        let listed = cands.iter().any(|k| k.buffer == b && k.hold == h);
                        let pays =
                            c.shifts.iter().any(|&(_, s)| s < 0.0) && c.best_saving_s(&cost) > 0.0;
                        assert!(
                            listed || !pays,
                            "buffer {b}: {h:?} pays but is not a candidate"
                        );
                    }
                }
            }
        }
        assert!(holds > 100, "{holds}");
    }
}
