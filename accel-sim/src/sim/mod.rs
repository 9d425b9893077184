//! The event-driven simulator: the source of "true" latency.
//!
//! In the spirit of XLA's runtime simulator (docs/simulator.md), and more faithful than the
//! cost model:
//! - ops run one after another; op `t` takes `max(compute, mem) + op_overhead`, with `mem`
//!   as in the cost model;
//! - copies wait in two FIFO queues (prefetches, evictions) and progress only while level 0
//!   is idle: during op `t` that is its duration minus its own level-0 traffic time. When
//!   both queues hold copies they share the bandwidth half and half;
//! - a copy runs at `min(level 0 bandwidth, fast level bandwidth)` (copies also use the
//!   fast level's write bandwidth), plus the DMA setup latency, of which up to
//!   `dma.engines` copies overlap;
//! - an op that reads a prefetched buffer whose copy is not done waits (a stall), and so
//!   does the op after a hold whose eviction is not done; the program ends when every
//!   eviction is done. While waiting, nothing else uses level 0, so the queues drain at
//!   full bandwidth.

mod effects;
mod exact;
mod live;
mod queues;

use crate::hardware::Hardware;
use crate::mapping::{Allocation, Mapping};
use crate::program::{BufferId, OpId, Program};
use effects::{Effect, SimModel};
pub use exact::ExactSim;
pub use live::{LiveSim, OpState};
use queues::{CopyKey, CopyQueues, Issue, OpStep};
use std::sync::Arc;

/// Why an op took the time it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Its compute time was the longer.
    Compute,
    /// Its memory traffic was the longer.
    Memory,
    /// It waited for a copy longer than it ran.
    Stalled,
}

impl Bound {
    /// The bound's name in reports (`compute`, `memory`, `stalled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Stalled => "stalled",
        }
    }
}

/// One op's timing in a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct OpTiming {
    /// When the op began (after any stall), seconds from the program start.
    pub start_s: f64,
    /// `flops / peak`, seconds.
    pub compute_s: f64,
    /// Its traffic at each level's bandwidth, seconds.
    pub memory_s: f64,
    /// Waiting for copies before the op could begin.
    pub stall_s: f64,
    /// The op's own duration (`max(compute, memory) + overhead`).
    pub run_s: f64,
    /// Which of those set the op's time.
    pub bound: Bound,
}

/// The result of one simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    /// The program's end-to-end time, seconds.
    pub latency_s: f64,
    /// Total waiting for copies.
    pub stall_s: f64,
    /// Per op, when asked for (empty otherwise).
    pub ops: Vec<OpTiming>,
}

/// A simulator for one (program, hardware) pair. Keeps scratch space between runs so a
/// run allocates nothing once its vectors have grown.
#[derive(Clone, Debug)]
pub struct Simulator {
    model: Arc<SimModel>,
    // scratch
    mem: Vec<f64>,
    level0: Vec<f64>,
    /// Per op and fast level (`t * fast + l - 1`): the bytes it reads and writes there.
    fast_bytes: Vec<[u64; 2]>,
    /// Copies issued when the op begins / after it completes / needed before it begins,
    /// with their ops; the issues are sorted by op, then [`queues::QueueRank`].
    issue_before: Vec<(OpId, Issue)>,
    issue_after: Vec<(OpId, Issue)>,
    need: Vec<(OpId, CopyKey)>,
    /// The same lists bucketed by op: op `t`'s are `items[first[t]..first[t + 1]]`.
    before_by_op: ByOp<Issue>,
    after_by_op: ByOp<Issue>,
    need_by_op: ByOp<CopyKey>,
}

impl Simulator {
    /// A simulator of `program` on `hw`; runs start with empty scratch space.
    pub fn new(program: &Program, hw: &Hardware) -> Simulator {
        let model = SimModel::new(program, hw);
        let t_count = model.len();
        Simulator {
            model: Arc::new(model),
            mem: vec![0.0; t_count],
            level0: vec![0.0; t_count],
            fast_bytes: Vec::new(),
            issue_before: Vec::new(),
            issue_after: Vec::new(),
            need: Vec::new(),
            before_by_op: ByOp::default(),
            after_by_op: ByOp::default(),
            need_by_op: ByOp::default(),
        }
    }

    /// An incremental simulation of the all-level-0 mapping, sharing this simulator's
    /// constants ([`LiveSim`]).
    pub fn live(&self) -> LiveSim {
        LiveSim::new(Arc::clone(&self.model))
    }

    /// A whole run of each placed buffer's allocations kept alive as they change
    /// ([`ExactSim`]), sharing this simulator's constants.
    pub fn exact_of<'a>(
        &self,
        placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>,
    ) -> ExactSim {
        ExactSim::of(Arc::clone(&self.model), placements)
    }

    /// Per-op memory times, level-0 traffic and the copies of the placements, none of
    /// which depends on the order the placements come in.
    fn prepare<'a>(&mut self, placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>) {
        self.issue_before.clear();
        self.issue_after.clear();
        self.need.clear();
        let model = Arc::clone(&self.model);
        let fast = model.levels() - 1;
        self.fast_bytes.clear();
        self.fast_bytes.resize(model.len() * fast, [0, 0]);
        for (b, allocations) in placements {
            for a in allocations {
                model.effects(b, a, |e| match e {
                    Effect::Access {
                        op,
                        bytes,
                        level,
                        write,
                        ..
                    } => self.fast_bytes[op * fast + level - 1][usize::from(write)] += bytes,
                    Effect::IssueBefore { op, issue } => self.issue_before.push((op, issue)),
                    Effect::IssueAfter { op, issue } => self.issue_after.push((op, issue)),
                    Effect::Need { op, key } => self.need.push((op, key)),
                });
            }
        }
        for t in 0..model.len() {
            let (mem, level0) = model.op_mem(t, &self.fast_bytes[t * fast..(t + 1) * fast]);
            self.mem[t] = mem;
            self.level0[t] = level0;
        }
        // Copies issued at one op join their queue by rank, not by the order they came in.
        self.issue_before
            .sort_unstable_by_key(|&(op, i)| (op, i.rank));
        self.issue_after
            .sort_unstable_by_key(|&(op, i)| (op, i.rank));
        // Needs at `T` wait for the program end.
        let buckets = self.mem.len() + 1;
        self.before_by_op.fill(&self.issue_before, buckets);
        self.after_by_op.fill(&self.issue_after, buckets);
        self.need_by_op.fill(&self.need, buckets);
    }

    /// Simulates `mapping`, which must be valid (see [`Mapping::validate`]); `detail` asks
    /// for the per-op breakdown.
    pub fn run(&mut self, mapping: &Mapping, detail: bool) -> SimReport {
        let placements = mapping.buffers.iter().enumerate();
        self.run_with(
            placements.map(|(b, p)| (b, p.allocations.as_slice())),
            detail,
        )
    }

    /// [`Simulator::run`] over each placed buffer's allocations, in any order (a caller
    /// holding them elsewhere need not build a [`Mapping`]).
    pub fn run_with<'a>(
        &mut self,
        placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>,
        detail: bool,
    ) -> SimReport {
        let t_count = self.model.len();
        self.prepare(placements);
        let mut queues = CopyQueues::default();
        let mut now = 0.0;
        let mut stall_total = 0.0;
        let mut ops = Vec::with_capacity(if detail { t_count } else { 0 });
        for t in 0..t_count {
            let time = queues.run_op(&OpStep {
                before: self.before_by_op.at(t),
                need: self.need_by_op.at(t),
                after: self.after_by_op.at(t),
                compute_s: self.model.compute[t],
                mem_s: self.mem[t],
                level0_s: self.level0[t],
                overhead_s: self.model.overhead,
            });
            now += time.stall_s;
            stall_total += time.stall_s;
            if detail {
                ops.push(self.timing(t, now, time.stall_s, time.mem_s, time.run_s));
            }
            now += time.run_s;
        }
        // Outputs and evicted buffers must land before the program ends.
        let tail = queues.wait_for(self.need_by_op.at(t_count));
        now += tail;
        stall_total += tail;
        SimReport {
            latency_s: now,
            stall_s: stall_total,
            ops,
        }
    }

    fn timing(&self, t: OpId, start_s: f64, stall: f64, mem: f64, run: f64) -> OpTiming {
        let compute_s = self.model.compute[t];
        let bound = if stall > run {
            Bound::Stalled
        } else if compute_s >= mem {
            Bound::Compute
        } else {
            Bound::Memory
        };
        OpTiming {
            start_s,
            compute_s,
            memory_s: mem,
            stall_s: stall,
            run_s: run,
            bound,
        }
    }
}

/// Items bucketed by op, each bucket in the order the items were made.
#[derive(Clone, Debug)]
struct ByOp<T> {
    first: Vec<usize>,
    items: Vec<T>,
    /// Scratch: where each bucket's next item goes.
    next: Vec<usize>,
}

impl<T> Default for ByOp<T> {
    fn default() -> Self {
        ByOp {
            first: Vec::new(),
            items: Vec::new(),
            next: Vec::new(),
        }
    }
}

impl<T: Copy> ByOp<T> {
    /// Buckets `events` (ops below `buckets`) by a counting sort, which keeps their order
    /// within an op.
    fn fill(&mut self, events: &[(OpId, T)], buckets: usize) {
        self.first.clear();
        self.first.resize(buckets + 1, 0);
        for e in events {
            self.first[e.0 + 1] += 1;
        }
        for t in 0..buckets {
            self.first[t + 1] += self.first[t];
        }
        self.items.clear();
        let Some(&(_, any)) = events.first() else {
            return;
        };
        self.items.resize(events.len(), any);
        self.next.clone_from(&self.first);
        for &(op, item) in events {
            self.items[self.next[op]] = item;
            self.next[op] += 1;
        }
    }

    fn at(&self, t: OpId) -> &[T] {
        match (self.first.get(t), self.first.get(t + 1)) {
            (Some(&a), Some(&b)) => &self.items[a..b],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::CostModel;
    use crate::mapping::{Allocation, Arrival, BufferPlacement};
    use crate::program::{Buffer, BufferKind, Op};

    fn chain(n: usize, flops: f64) -> Program {
        let mut buffers = vec![Buffer {
            name: "w".into(),
            size: 1_000_000,
            kind: BufferKind::Weight,
        }];
        let mut ops = Vec::new();
        for i in 0..n {
            buffers.push(Buffer {
                name: format!("a{i}"),
                size: 1_000_000,
                kind: if i + 1 == n {
                    BufferKind::Output
                } else {
                    BufferKind::Activation
                },
            });
            let mut reads = if i == 0 { vec![] } else { vec![i] };
            if i + 1 == n {
                reads.push(0);
            }
            ops.push(Op {
                name: format!("op{i}"),
                kind: "t".into(),
                flops,
                reads,
                writes: vec![i + 1],
            });
        }
        Program::new("chain", "", buffers, ops).unwrap()
    }

    fn hw() -> Hardware {
        let mut hw = Hardware::tpu_v4i_like();
        hw.levels[0].read_bw = 1e9;
        hw.levels[0].write_bw = 1e9;
        hw.levels[1].read_bw = 1e10;
        hw.levels[1].write_bw = 1e10;
        hw.op_overhead_s = 0.0;
        hw.dma.setup_s = 0.0;
        hw
    }

    #[test]
    fn all_slow_matches_the_cost_model_without_overheads() {
        let p = chain(5, 1e6);
        let h = hw();
        let m = Mapping::all_slow(&p);
        let r = Simulator::new(&p, &h).run(&m, true);
        let c = CostModel::new(&p, &h).latency(&m);
        assert!((r.latency_s - c).abs() < 1e-12, "{} vs {}", r.latency_s, c);
        assert_eq!(r.ops.len(), 5);
        assert_eq!(r.stall_s, 0.0);
    }

    #[test]
    fn a_prefetch_hidden_behind_compute_does_not_stall() {
        // Ops are compute-bound (10 ms each at 138 TFLOP/s needs 1.38e12 flops); the 1 ms
        // copy of w hides behind op 0..3 entirely.
        let p = chain(5, 1.38e12);
        let h = hw();
        let mut m = Mapping::all_slow(&p);
        m.buffers[0] = BufferPlacement {
            allocations: vec![Allocation {
                level: 1,
                offset: 0,
                start: 0,
                end: 4,
                arrival: Arrival::Prefetch,
                eviction: None,
            }],
        };
        m.validate(&p, &h).unwrap();
        let r = Simulator::new(&p, &h).run(&m, false);
        assert_eq!(r.stall_s, 0.0);
        // A prefetch issued at the use itself stalls for the whole copy (1 ms).
        m.buffers[0].allocations[0].start = 4;
        let r = Simulator::new(&p, &h).run(&m, true);
        assert!((r.stall_s - 1e-3).abs() < 1e-12, "{}", r.stall_s);
        assert_eq!(r.ops[4].stall_s, r.stall_s);
    }

    #[test]
    fn copies_share_level0_bandwidth_with_ops() {
        // Memory-bound ops leave level 0 no idle time, so a prefetch issued at op 0 makes
        // no progress until op 4 waits for it: 1 ms stall, unlike the cost model's 0.
        let p = chain(5, 0.0);
        let h = hw();
        let mut m = Mapping::all_slow(&p);
        m.buffers[0].allocations = vec![Allocation {
            level: 1,
            offset: 0,
            start: 1,
            end: 4,
            arrival: Arrival::Prefetch,
            eviction: None,
        }];
        let r = Simulator::new(&p, &h).run(&m, false);
        assert!((r.stall_s - 1e-3).abs() < 1e-12, "{}", r.stall_s);
        let cm = CostModel::new(&p, &h);
        assert!(cm.latency(&m) < r.latency_s);
    }

    #[test]
    fn evictions_must_finish_before_the_end() {
        let p = chain(2, 0.0);
        let h = hw();
        let mut m = Mapping::all_slow(&p);
        // The output a1 is defined in fast memory at op 1 and evicted right after.
        m.buffers[2].allocations = vec![Allocation {
            level: 1,
            offset: 0,
            start: 1,
            end: 1,
            arrival: Arrival::Defined,
            eviction: Some(1),
        }];
        m.validate(&p, &h).unwrap();
        let r = Simulator::new(&p, &h).run(&m, false);
        // op0 writes a0 (1 ms); op1 reads a0 (1 ms) + w (1 ms), writes a1 fast (0.1 ms);
        // then the 1 ms eviction.
        assert!((r.latency_s - 4.1e-3).abs() < 1e-12, "{}", r.latency_s);
        assert!((r.stall_s - 1e-3).abs() < 1e-12);
    }
}
