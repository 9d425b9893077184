//! The EGRL problem over accel-sim: per op, the level of its weights (W) and of its output
//! activations (A); each buffer then lives in its level over its whole live range, at the
//! offset the best-fit packer gives it.
//!
//! Which decision owns a buffer: an op's outputs (activations and program outputs) are its
//! A; weights and program inputs (entry buffers, no defining op) are the W of the first op
//! that reads them. A slot with no buffer is not a decision.
//!
//! Where a buffer sits in a fast level (whole live range, as EGRL's per-tensor placement):
//! - an activation is written there by its defining op and held to its last use;
//! - a program output likewise, evicted right after its definition (it must end in level 0)
//!   and held to the program end;
//! - a weight or input is prefetched from level 0 at the start XLA's prefetch interval
//!   picker prefers for its first use, and held to its last use.
//!
//! Repair: fast levels are filled fastest first; at each, the buffers asked for it (and
//! those pushed down from the level above) are placed in order of their cost-model saving
//! per byte there, best fit; one that fits nowhere moves one level slower. The least
//! beneficial buffers are thus the ones demoted. The *violation* of an assignment is
//! `sum(size * levels dropped) / sum(size * level asked)` (0 when nothing was asked or
//! nothing dropped), and its fitness
//!
//! `fitness = all_slow_latency / latency(repaired mapping) - penalty * violation`
//!
//! with the simulator's latencies: the speedup over the all-slow mapping, less the
//! constraint-violation feedback ([`crate::EgrlConfig::violation_penalty`]).

use accel_sim::{
    Allocation, Arrival, BufferId, BufferKind, BufferPlacement, CostModel, CostState, Hardware,
    Mapping, OpId, Program, Simulator,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use xla_msa::PickerConfig;
use xla_msa::{Chunk, ChunkHeap, TopGap};

/// Which of an op's two decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Slot {
    /// Its weights (and program inputs it reads first).
    W = 0,
    /// Its output activations.
    A = 1,
}

/// One decision: the level of the buffers of one op's slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The op.
    pub op: OpId,
    /// Which of its decisions: its weights' level or its outputs'.
    pub slot: Slot,
    /// The buffers the decision places.
    pub buffers: Vec<BufferId>,
}

/// A level per decision (0 = the slowest level), in [`Problem::decisions`] order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Assignment(pub Vec<u8>);

/// A decoded assignment: the repaired mapping and how far the repair moved it.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The repaired mapping.
    pub mapping: Mapping,
    /// See the module docs; in [0, 1].
    pub violation: f64,
}

/// An assignment scored by the simulator.
#[derive(Clone, Debug)]
pub struct Scored {
    /// The repaired mapping's simulated latency, seconds.
    pub latency_s: f64,
    /// How far the repair moved the assignment (0 to 1).
    pub violation: f64,
    /// The speedup over the all-slow mapping less the violation's penalty.
    pub fitness: f64,
}

/// Why a problem cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ProblemError {
    /// The hardware has only level 0: there is nothing to decide.
    #[error("hardware `{0}` has one memory level: EGRL needs at least two")]
    OneLevel(String),
    /// More levels than a decision's byte can name.
    #[error("hardware `{0}` has more than 255 levels")]
    TooManyLevels(String),
    /// The program has no buffer to place.
    #[error("program `{0}` has no buffer to place")]
    Empty(String),
}

/// A program on a hardware config, as EGRL sees it.
#[derive(Debug)]
pub struct Problem {
    program: Arc<Program>,
    hw: Hardware,
    decisions: Vec<Decision>,
    /// Per buffer, per fast level (index `level - 1`): its whole-live-range allocation at
    /// offset 0.
    resident: Vec<Vec<Allocation>>,
    /// Per buffer, per level: the cost-model seconds its resident placement there saves
    /// against level 0 (0 for level 0; negative where it costs).
    saving: Vec<Vec<f64>>,
    all_slow_s: f64,
    penalty: f64,
}

impl Problem {
    /// The problem of `program` on `hw`; `penalty` weighs the violation in the fitness.
    pub fn new(program: Arc<Program>, hw: Hardware, penalty: f64) -> Result<Problem, ProblemError> {
        if hw.levels.len() < 2 {
            return Err(ProblemError::OneLevel(hw.name.clone()));
        }
        if hw.levels.len() > u8::MAX as usize {
            return Err(ProblemError::TooManyLevels(hw.name.clone()));
        }
        let decisions = decisions_of(&program);
        if decisions.is_empty() {
            return Err(ProblemError::Empty(program.name().to_string()));
        }
        let cost = CostModel::new(&program, &hw);
        let picker = PickerConfig::default();
        let state = CostState::new(&cost);
        let mut resident = Vec::with_capacity(program.buffers().len());
        let mut saving = Vec::with_capacity(program.buffers().len());
        for b in 0..program.buffers().len() {
            let allocs: Vec<Allocation> = (1..hw.levels.len())
                .map(|level| resident_allocation(&program, &hw, &cost, &picker, b, level))
                .collect();
            let mut s = vec![0.0];
            for a in &allocs {
                let p = BufferPlacement {
                    allocations: vec![*a],
                };
                s.push(-state.delta(b, &p));
            }
            resident.push(allocs);
            saving.push(s);
        }
        let all_slow_s = Simulator::new(&program, &hw)
            .run(&Mapping::all_slow(&program), false)
            .latency_s;
        Ok(Problem {
            program,
            hw,
            decisions,
            resident,
            saving,
            all_slow_s,
            penalty,
        })
    }

    /// The program.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }
    /// The hardware.
    pub fn hardware(&self) -> &Hardware {
        &self.hw
    }
    /// Every decision, in the order assignments list their levels.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }
    /// Levels per decision (the slowest, 0, included).
    pub fn levels(&self) -> usize {
        self.hw.levels.len()
    }
    /// The simulated latency of the all-slow mapping.
    pub fn all_slow_s(&self) -> f64 {
        self.all_slow_s
    }
    /// The cost-model seconds buffer `b` saves resident in `level` (0 for level 0).
    pub fn saving(&self, b: BufferId, level: usize) -> f64 {
        self.saving[b][level]
    }
    /// The op interval buffer `b` holds in fast `level` (>= 1).
    pub fn interval(&self, b: BufferId, level: usize) -> (OpId, OpId) {
        let a = &self.resident[b][level - 1];
        (a.start, a.end)
    }

    /// Buffer `b`'s whole-live-range allocation in fast `level` (>= 1), at offset 0.
    pub fn resident_allocation(&self, b: BufferId, level: usize) -> Allocation {
        self.resident[b][level - 1]
    }

    /// The repaired mapping of `assignment` (see the module docs).
    pub fn decode(&self, assignment: &Assignment) -> Decoded {
        let program = &self.program;
        let levels = self.levels();
        let mut mapping = Mapping::all_slow(program);
        let mut wanted: Vec<Vec<BufferId>> = vec![Vec::new(); levels];
        let mut asked = vec![0u8; program.buffers().len()];
        for (d, &level) in self.decisions.iter().zip(&assignment.0) {
            let level = (level as usize).min(levels - 1);
            for &b in &d.buffers {
                wanted[level].push(b);
                asked[b] = level as u8;
            }
        }
        let mut carried: Vec<BufferId> = Vec::new();
        let mut dropped = 0f64;
        let mut total = 0f64;
        for level in (1..levels).rev() {
            let mut here = std::mem::take(&mut wanted[level]);
            here.append(&mut carried);
            here.sort_by(|&a, &b| {
                let key = |x: BufferId| self.saving[x][level] / program.buffer(x).size as f64;
                key(b).total_cmp(&key(a)).then(a.cmp(&b))
            });
            let Ok(mut heap) = ChunkHeap::for_level(&self.hw, level, program.len()) else {
                carried = here;
                continue;
            };
            for b in here {
                match self.place(&mut heap, b, level) {
                    Some(a) => mapping.buffers[b].allocations = vec![a],
                    None => carried.push(b),
                }
            }
        }
        for (b, &level) in asked.iter().enumerate() {
            let size = program.buffer(b).size as f64;
            let got = mapping.buffers[b]
                .allocations
                .first()
                .map_or(0, |a| a.level);
            total += size * level as f64;
            dropped += size * (level as usize).saturating_sub(got) as f64;
        }
        let violation = if total > 0.0 { dropped / total } else { 0.0 };
        Decoded { mapping, violation }
    }

    /// Buffer `b`'s resident allocation in `level` at its best-fit offset, committed to
    /// `heap`; `None` when it fits nowhere.
    fn place(&self, heap: &mut ChunkHeap, b: BufferId, level: usize) -> Option<Allocation> {
        let a = self.resident[b][level - 1];
        let size = self.program.buffer(b).size;
        let offset = heap.best_fit(a.start, a.end, size, None, TopGap::Capacity)?;
        let chunk = Chunk {
            start: a.start,
            end: a.end,
            offset,
            size,
        };
        heap.commit(chunk).ok()?;
        Some(Allocation { offset, ..a })
    }

    /// The fitness of a decoded assignment whose simulated latency is `latency_s`.
    pub fn fitness(&self, latency_s: f64, violation: f64) -> f64 {
        self.all_slow_s / latency_s - self.penalty * violation
    }

    /// Decodes and simulates `assignment` with `sim` (a simulator of this problem).
    pub fn score(&self, sim: &mut Simulator, assignment: &Assignment) -> (Decoded, Scored) {
        let decoded = self.decode(assignment);
        let latency_s = sim.run(&decoded.mapping, false).latency_s;
        let scored = Scored {
            latency_s,
            violation: decoded.violation,
            fitness: self.fitness(latency_s, decoded.violation),
        };
        (decoded, scored)
    }

    /// A simulator of this problem (one per thread).
    pub fn simulator(&self) -> Simulator {
        Simulator::new(&self.program, &self.hw)
    }
}

/// How many decisions EGRL makes on `program` (what [`Problem::decisions`] would hold),
/// without the cost model a problem builds: for checking a config before a race.
pub fn decision_count(program: &Program) -> usize {
    decisions_of(program).len()
}

fn decisions_of(program: &Program) -> Vec<Decision> {
    let mut slots: Vec<[Vec<BufferId>; 2]> = vec![[Vec::new(), Vec::new()]; program.len()];
    for (b, buf) in program.buffers().iter().enumerate() {
        let owner = if buf.kind.is_entry() {
            program.uses(b).first().map(|&u| (u, Slot::W))
        } else {
            program.def(b).map(|d| (d, Slot::A))
        };
        if let Some((op, slot)) = owner {
            slots[op][slot as usize].push(b);
        }
    }
    let mut out = Vec::new();
    for (op, [w, a]) in slots.into_iter().enumerate() {
        for (slot, buffers) in [(Slot::W, w), (Slot::A, a)] {
            if !buffers.is_empty() {
                out.push(Decision { op, slot, buffers });
            }
        }
    }
    out
}

fn resident_allocation(
    program: &Program,
    hw: &Hardware,
    cost: &CostModel,
    picker: &PickerConfig,
    b: BufferId,
    level: usize,
) -> Allocation {
    let (start, end) = program.live_range(b);
    let kind = program.buffer(b).kind;
    if kind.is_entry() {
        let first_use = program.uses(b).first().copied().unwrap_or(start);
        let window = picker.window(cost, hw, b, level, start, first_use);
        return Allocation {
            level,
            offset: 0,
            start: window.preferred,
            end,
            arrival: Arrival::Prefetch,
            eviction: None,
        };
    }
    Allocation {
        level,
        offset: 0,
        start,
        end,
        arrival: Arrival::Defined,
        eviction: (kind == BufferKind::Output).then_some(start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::fixtures::three_ops;

    fn problem() -> Problem {
        let p = three_ops("t", 1 << 20, 1e6);
        let hw = Hardware::nnp_i_like();
        Problem::new(Arc::new(p), hw, 0.1).unwrap()
    }

    #[test]
    fn every_buffer_has_one_decision() {
        let pr = problem();
        let mut seen = vec![0; pr.program().buffers().len()];
        for d in pr.decisions() {
            for &b in &d.buffers {
                seen[b] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        // op0 reads x and w first (W) and writes a (A); op1 writes b; op2 writes y.
        let shape: Vec<(OpId, Slot)> = pr.decisions().iter().map(|d| (d.op, d.slot)).collect();
        assert_eq!(
            shape,
            vec![(0, Slot::W), (0, Slot::A), (1, Slot::A), (2, Slot::A)]
        );
    }

    #[test]
    fn all_slow_assignment_decodes_to_all_slow_with_no_violation() {
        let pr = problem();
        let d = pr.decode(&Assignment(vec![0; pr.decisions().len()]));
        assert_eq!(d.mapping, Mapping::all_slow(pr.program()));
        assert_eq!(d.violation, 0.0);
    }

    #[test]
    fn an_overfull_level_demotes_and_reports_the_violation() {
        let p = three_ops("t", 3 << 20, 1e6);
        // SRAM holds 4 MiB: x+w (9 MiB) cannot all be there.
        let pr = Problem::new(Arc::new(p), Hardware::nnp_i_like(), 0.1).unwrap();
        let all_sram = Assignment(vec![2; pr.decisions().len()]);
        let d = pr.decode(&all_sram);
        d.mapping.validate(pr.program(), pr.hardware()).unwrap();
        assert!(d.violation > 0.0 && d.violation <= 1.0, "{}", d.violation);
        let levels: Vec<usize> = d
            .mapping
            .buffers
            .iter()
            .map(|p| p.allocations.first().map_or(0, |a| a.level))
            .collect();
        assert!(
            levels.contains(&1),
            "something demoted to the LLC: {levels:?}"
        );
    }
}
