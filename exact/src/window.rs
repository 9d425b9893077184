//! One window's repair (docs/exact.md, "Windows"): the MIP over the holds of a window of
//! ops, every other hold of the incumbent fixed where it is.
//!
//! The incumbent's holds inside the window are freed; every candidate hold inside it whose
//! buffer holds nothing fixed at the same time is free. The holds of the incumbent that
//! reach into the window from outside stay, as candidates fixed taken (clipped to the
//! window: only there do they meet a free hold), so the model charges their traffic and
//! their room in the capacity rows. The model's best then gets offsets beside the fixed
//! holds at their own offsets, and the mapping is kept only if the validator passes it and
//! the simulator finds it faster: the model ranks by the relaxation, the answer by the
//! latency that counts.

use crate::candidates::{self, Candidate};
use crate::model::{MipError, MipLimits, Model, Start};
use crate::packing;
use accel_sim::{Allocation, BufferId, CostModel, Hardware, Mapping, OpId, Program, Simulator};
use std::collections::HashMap;

/// The whole program's candidates, indexed for windows.
pub(crate) struct Repairer<'a> {
    pub program: &'a Program,
    pub hw: &'a Hardware,
    pub cost: &'a CostModel,
    pub cands: &'a [Candidate],
    /// Candidate indices by hold start.
    by_start: Vec<usize>,
    pub sim: Simulator,
}

/// What one repair found.
pub(crate) struct Outcome {
    /// The repaired mapping and its simulated latency, when valid and faster.
    pub better: Option<(Mapping, f64)>,
    /// The window's model was solved to optimality within its time.
    pub proven: bool,
    /// The repair built a mapping the validator refused (a bug; never returned).
    pub invalid: bool,
    /// The MIP solver failed on the window's model (microlp can, numerically).
    pub failed: bool,
}

impl<'a> Repairer<'a> {
    pub fn new(
        program: &'a Program,
        hw: &'a Hardware,
        cost: &'a CostModel,
        cands: &'a [Candidate],
    ) -> Repairer<'a> {
        let mut by_start: Vec<usize> = (0..cands.len()).collect();
        by_start.sort_by_key(|&c| (cands[c].hold.start, c));
        Repairer {
            program,
            hw,
            cost,
            cands,
            by_start,
            sim: Simulator::new(program, hw),
        }
    }

    /// Free candidate holds of ops `first..=last`, counted without building the model.
    pub fn free_count(&self, first: OpId, last: OpId) -> usize {
        self.inside(first, last).count()
    }

    /// Candidates whose hold lies in ops `first..=last`.
    fn inside(&self, first: OpId, last: OpId) -> impl Iterator<Item = usize> + '_ {
        let from = self
            .by_start
            .partition_point(|&c| self.cands[c].hold.start < first);
        self.by_start[from..]
            .iter()
            .copied()
            .take_while(move |&c| self.cands[c].hold.start <= last)
            .filter(move |&c| self.cands[c].hold.end <= last)
    }

    /// Repairs ops `first..=last` of `incumbent` (valid, simulated in `latency_s`) within
    /// `seconds`.
    pub fn repair(
        &mut self,
        incumbent: &Mapping,
        latency_s: f64,
        (first, last): (OpId, OpId),
        seconds: f64,
    ) -> Outcome {
        let sub = self.subproblem(incumbent, first, last);
        let mut outcome = Outcome {
            better: None,
            proven: false,
            invalid: false,
            failed: false,
        };
        if sub.free_count == 0 {
            outcome.proven = true;
            return outcome;
        }
        let model = Model {
            sharing: true,
            ..Model::plain(&sub.cands, self.cost, self.hw)
        };
        let limits = MipLimits {
            fixed: Some(sub.fixed.clone()),
            seconds,
            relative_gap: 0.0,
        };
        let r = match model.solve(&[], Some(&sub.start), &limits) {
            Ok(r) => r,
            Err(MipError::NoSolution) => return outcome,
            // Numerical trouble on one window's model: the next window is another model.
            Err(MipError::Solver(_) | MipError::Infeasible) => {
                outcome.failed = true;
                return outcome;
            }
        };
        outcome.proven = r.optimal;
        let taken: Vec<usize> = (0..sub.free_count).filter(|&c| r.taken[c]).collect();
        let mapping = self.place(incumbent, &sub, &taken, first, last);
        if mapping.validate(self.program, self.hw).is_err() {
            outcome.invalid = true;
            return outcome;
        }
        let l = self.sim.run(&mapping, false).latency_s;
        if l < latency_s {
            outcome.better = Some((mapping, l));
        }
        outcome
    }

    /// The window's model: its free candidates first, then the incumbent's holds that
    /// reach into it, fixed.
    fn subproblem(&self, incumbent: &Mapping, first: OpId, last: OpId) -> Subproblem {
        let inside = |a: &Allocation| first <= a.start && a.end <= last;
        let meets = |a: &Allocation| a.start <= last && first <= a.end;
        // Per buffer, the ops its fixed holds in the window cover.
        let mut fixed_at: HashMap<BufferId, Vec<(OpId, OpId)>> = HashMap::new();
        let mut fixed = Vec::new();
        for (b, p) in incumbent.buffers.iter().enumerate() {
            for a in p.allocations.iter().filter(|a| !inside(a) && meets(a)) {
                fixed_at.entry(b).or_default().push((a.start, a.end));
                fixed.push((b, *a));
            }
        }
        let clear = |c: &Candidate| {
            fixed_at.get(&c.buffer).is_none_or(|spans| {
                spans
                    .iter()
                    .all(|&(s, e)| c.hold.end < s || e < c.hold.start)
            })
        };
        let mut cands: Vec<Candidate> = self
            .inside(first, last)
            .filter(|&c| clear(&self.cands[c]))
            .map(|c| self.cands[c].clone())
            .collect();
        let free_count = cands.len();
        let index: HashMap<(BufferId, Allocation), usize> = cands
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.buffer, c.hold), i))
            .collect();
        let mut start = Start {
            taken: vec![false; free_count],
            offsets: vec![0; free_count],
        };
        for (b, p) in incumbent.buffers.iter().enumerate() {
            for a in p.allocations.iter().filter(|a| inside(a)) {
                let mut hold = candidates::canonical(self.program, self.cost, b, a);
                hold.offset = 0;
                if let Some(&c) = index.get(&(b, hold)) {
                    start.taken[c] = true;
                }
            }
        }
        let mut placed = Vec::with_capacity(fixed.len());
        for &(b, a) in &fixed {
            placed.push((cands.len(), a.offset));
            cands.push(self.clipped(b, a, first, last));
        }
        let mut fixed_flags = vec![None; free_count];
        fixed_flags.resize(cands.len(), Some(true));
        start.taken.resize(cands.len(), true);
        start.offsets.resize(cands.len(), 0);
        Subproblem {
            cands,
            free_count,
            fixed: fixed_flags,
            start,
            placed,
        }
    }

    /// A fixed hold as a candidate of the window's model: its traffic inside the window
    /// and its room there; its copy is paid whatever the window does, so it costs nothing.
    fn clipped(&self, b: BufferId, a: Allocation, first: OpId, last: OpId) -> Candidate {
        let mut hold = a;
        hold.offset = 0;
        let mut c = Candidate::new(self.program, self.cost, self.hw, b, hold);
        c.hold.start = a.start.max(first);
        c.hold.end = a.end.min(last);
        c.retain_ops(first, last);
        c.copy_s = 0.0;
        // Its copy's share of the transfer the window's ops run beside.
        let (lo, hi) = c.copy_window;
        let (clo, chi) = (lo.max(first), hi.min(last + 1));
        let whole = self.cost.span_s(lo, hi);
        c.work_s = if chi <= clo {
            0.0
        } else if whole > 0.0 {
            c.work_s * self.cost.span_s(clo, chi) / whole
        } else {
            c.work_s
        };
        c.copy_window = (clo, chi.max(clo));
        c
    }

    /// The incumbent with its holds inside the window replaced by the free candidates
    /// `taken`, placed beside the fixed holds (first fit; what does not fit is left out).
    fn place(
        &self,
        incumbent: &Mapping,
        sub: &Subproblem,
        taken: &[usize],
        first: OpId,
        last: OpId,
    ) -> Mapping {
        let mut base = incumbent.clone();
        for p in &mut base.buffers {
            p.allocations
                .retain(|a| !(first <= a.start && a.end <= last));
        }
        let with = |kept: &[usize], offsets: &[u64]| {
            let mut m = base.clone();
            for (&c, &o) in kept.iter().zip(offsets) {
                let cand = &sub.cands[c];
                let mut hold = cand.hold;
                hold.offset = o;
                m.buffers[cand.buffer].allocations.push(hold);
            }
            for p in &mut m.buffers {
                p.allocations.sort_by_key(|a| a.start);
            }
            m
        };
        match packing::first_fit_around(&sub.cands, &sub.placed, taken, self.hw) {
            Some(offsets) => with(taken, &offsets),
            None => {
                let (kept, offsets) =
                    packing::repair_around(&sub.cands, &sub.placed, taken, self.hw, |k, o| {
                        self.cost.latency(&with(k, o))
                    });
                with(&kept, &offsets)
            }
        }
    }
}

/// A window's model and what the repair needs to turn its answer into a mapping.
struct Subproblem {
    /// The free candidates (`..free_count`), then the fixed holds, clipped.
    cands: Vec<Candidate>,
    free_count: usize,
    fixed: Vec<Option<bool>>,
    /// The incumbent's own holds in the window, where they are candidates.
    start: Start,
    /// The fixed holds as (candidate, offset).
    placed: Vec<(usize, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use malloc_game::players::player;
    use malloc_game::{GameOptions, GameSetup};
    use std::sync::Arc;

    /// Valid mappings of many kinds: random games (holds nothing canonical), greedy,
    /// xla and greedy-size.
    fn incumbents(program: &Program, hw: &Hardware) -> Vec<Mapping> {
        let setup = GameSetup::new(
            Arc::new(program.clone()),
            hw.clone(),
            GameOptions::default(),
        )
        .unwrap();
        let mut out: Vec<Mapping> = ["xla", "greedy-size"]
            .iter()
            .filter_map(|n| xla_msa::solver(n))
            .map(|s| s.solve(program, hw))
            .collect();
        for (name, seeds) in [("random", 3), ("greedy", 1)] {
            let p = player(name).unwrap();
            for seed in 0..seeds {
                out.push(p.play(&setup, seed).mapping());
            }
        }
        out
    }

    /// A repair never returns an invalid mapping, nor one slower in simulation than the
    /// incumbent, and never builds an invalid one to refuse: on random windows (the whole
    /// program included) of random programs on both presets at binding capacities, from
    /// incumbents of every kind.
    #[test]
    fn a_repair_is_valid_and_never_slower() {
        let mut repairs = 0;
        let mut better = 0;
        for seed in 0..6u64 {
            let program = bench_workloads::synthetic::random_dag(18 + seed as usize % 5, seed);
            let preset = if seed % 2 == 0 {
                "tpu-v4i-like"
            } else {
                "nnp-i-like"
            };
            let hw = accel_sim::fixtures::binding_hw(&program, preset, 4);
            let cost = CostModel::relaxation(&program, &hw);
            let cands = candidates::enumerate(&program, &hw, &cost);
            let mut repairer = Repairer::new(&program, &hw, &cost, &cands);
            let ops = program.len();
            for incumbent in incumbents(&program, &hw) {
                incumbent.validate(&program, &hw).unwrap();
                let latency = repairer.sim.run(&incumbent, false).latency_s;
                for (i, len) in [3, 7, 12, ops].into_iter().enumerate() {
                    let first = (seed as usize * 5 + i * 11) % ops.saturating_sub(len - 1).max(1);
                    let window = (first, (first + len - 1).min(ops - 1));
                    let outcome = repairer.repair(&incumbent, latency, window, 2.0);
                    assert!(!outcome.failed, "seed {seed}, window {window:?}");
                    repairs += 1;
                    assert!(!outcome.invalid, "seed {seed}, window {window:?}");
                    if let Some((m, l)) = outcome.better {
                        better += 1;
                        m.validate(&program, &hw).unwrap();
                        assert!(l < latency);
                        assert_eq!(repairer.sim.run(&m, false).latency_s, l);
                        // Outside the window, every hold is the incumbent's.
                        for (b, p) in m.buffers.iter().enumerate() {
                            let outside =
                                |a: &&Allocation| !(window.0 <= a.start && a.end <= window.1);
                            let kept: Vec<_> = p.allocations.iter().filter(outside).collect();
                            let had: Vec<_> = incumbent.buffers[b]
                                .allocations
                                .iter()
                                .filter(outside)
                                .collect();
                            assert_eq!(kept, had, "buffer {b}");
                        }
                    }
                }
            }
        }
        assert!(
            repairs >= 100 && better > 0,
            "{repairs} repairs, {better} better"
        );
    }
}
