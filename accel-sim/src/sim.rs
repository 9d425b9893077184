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

use crate::hardware::Hardware;
use crate::mapping::{Allocation, Arrival, Mapping};
use crate::program::{BufferId, OpId, Program, UseLists};
use std::collections::VecDeque;

/// Why an op took the time it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Compute,
    Memory,
    /// It waited for a copy longer than it ran.
    Stalled,
}

impl Bound {
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
    pub compute_s: f64,
    pub memory_s: f64,
    /// Waiting for copies before the op could begin.
    pub stall_s: f64,
    /// The op's own duration (`max(compute, memory) + overhead`).
    pub run_s: f64,
    pub bound: Bound,
}

/// The result of one simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    pub latency_s: f64,
    /// Total waiting for copies.
    pub stall_s: f64,
    /// Per op, when asked for (empty otherwise).
    pub ops: Vec<OpTiming>,
}

#[derive(Clone, Copy, Debug)]
struct Copy {
    /// Seconds of transfer left at full bandwidth.
    left: f64,
    done_at: f64,
}

/// A simulator for one (program, hardware) pair. Keeps scratch space between runs so a
/// run allocates nothing once its vectors have grown.
#[derive(Clone, Debug)]
pub struct Simulator {
    compute: Vec<f64>,
    overhead: f64,
    inv_read: Vec<f64>,
    inv_write: Vec<f64>,
    copy_bw: Vec<f64>,
    setup: f64,
    size: Vec<f64>,
    /// Per op: its memory time with every access in level 0.
    all_slow_mem: Vec<f64>,
    uses: UseLists,
    // scratch
    mem: Vec<f64>,
    level0: Vec<f64>,
    /// (op, copy): copies issued when the op begins / after it completes / needed before
    /// it begins; sorted by op (stably: a run takes them in the order they were made).
    issue_before: Vec<(OpId, usize)>,
    issue_after: Vec<(OpId, usize)>,
    need: Vec<(OpId, usize)>,
    copies: Vec<Copy>,
    is_eviction: Vec<bool>,
}

impl Simulator {
    pub fn new(program: &Program, hw: &Hardware) -> Simulator {
        let t_count = program.len();
        let size: Vec<f64> = program.buffers().iter().map(|b| b.size as f64).collect();
        let inv_read: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.read_bw).collect();
        let inv_write: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.write_bw).collect();
        let all_slow_mem = program
            .ops()
            .iter()
            .map(|op| {
                let r: f64 = op.reads.iter().map(|&b| size[b]).sum();
                let w: f64 = op.writes.iter().map(|&b| size[b]).sum();
                r * inv_read[0] + w * inv_write[0]
            })
            .collect();
        Simulator {
            compute: program
                .ops()
                .iter()
                .map(|o| o.flops / hw.peak_flops)
                .collect(),
            overhead: hw.op_overhead_s,
            copy_bw: (0..hw.levels.len())
                .map(|l| if l == 0 { f64::INFINITY } else { hw.copy_bw(l) })
                .collect(),
            setup: hw.dma.setup_s / hw.dma.engines as f64,
            inv_read,
            inv_write,
            size,
            all_slow_mem,
            uses: UseLists::new(program),
            mem: vec![0.0; t_count],
            level0: vec![0.0; t_count],
            issue_before: Vec::new(),
            issue_after: Vec::new(),
            need: Vec::new(),
            copies: Vec::new(),
            is_eviction: Vec::new(),
        }
    }

    /// Per-op memory times, level-0 traffic and the copies of the placements.
    fn prepare<'a>(&mut self, placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>) {
        self.issue_before.clear();
        self.issue_after.clear();
        self.need.clear();
        self.copies.clear();
        self.is_eviction.clear();
        // Memory time per op: every access at level 0, then shift the placed ones.
        self.level0.copy_from_slice(&self.all_slow_mem);
        self.mem.copy_from_slice(&self.all_slow_mem);
        for (b, allocations) in placements {
            let size = self.size[b];
            for a in allocations {
                let lvl = a.level;
                match a.arrival {
                    Arrival::Defined => {
                        let shift = size * (self.inv_write[lvl] - self.inv_write[0]);
                        self.mem[a.start] += shift;
                        self.level0[a.start] -= size * self.inv_write[0];
                        if let Some(e) = a.eviction {
                            let id = self.new_copy(b, lvl, true);
                            self.issue_after.push((e, id));
                            self.need.push((a.end + 1, id));
                        }
                    }
                    Arrival::Prefetch => {
                        let id = self.new_copy(b, lvl, false);
                        self.issue_before.push((a.start, id));
                        // Needed by the first use it serves; later uses come later.
                        let uses = self.uses.of(b);
                        if let Some(&u) = uses.get(uses.partition_point(|&u| u < a.start)) {
                            self.need.push((u, id));
                        }
                    }
                }
                // The uses the hold serves, found by binary search: a buffer with many
                // uses and many allocations made a scan per allocation quadratic.
                let uses = self.uses.of(b);
                let first = uses.partition_point(|&u| u < a.start);
                let last = uses.partition_point(|&u| u <= a.end).max(first);
                for &u in &uses[first..last] {
                    self.mem[u] += size * (self.inv_read[lvl] - self.inv_read[0]);
                    self.level0[u] -= size * self.inv_read[0];
                }
            }
        }
        for events in [
            &mut self.issue_before,
            &mut self.issue_after,
            &mut self.need,
        ] {
            events.sort_by_key(|e| e.0);
        }
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

    /// [`Simulator::run`] over each placed buffer's allocations, by ascending buffer (a
    /// caller holding them elsewhere need not build a [`Mapping`]).
    pub fn run_with<'a>(
        &mut self,
        placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>,
        detail: bool,
    ) -> SimReport {
        let t_count = self.compute.len();
        self.prepare(placements);
        let mut engine = Engine::default();
        let mut now = 0.0;
        let mut stall_total = 0.0;
        let mut ops = Vec::with_capacity(if detail { t_count } else { 0 });
        // Cursors into the event lists, which are sorted by op.
        let (mut before, mut after, mut need) = (0, 0, 0);
        for t in 0..t_count {
            while let Some(&(_, id)) = self.issue_before.get(before).filter(|e| e.0 == t) {
                engine.push(id, self.is_eviction[id]);
                before += 1;
            }
            let mut stall = 0.0;
            while let Some(&(_, id)) = self.need.get(need).filter(|e| e.0 == t) {
                if self.copies[id].done_at.is_infinite() {
                    stall += engine.drain_until(&mut self.copies, id, now + stall);
                }
                need += 1;
            }
            now += stall;
            stall_total += stall;
            let mem = self.mem[t].max(0.0);
            let run = self.compute[t].max(mem) + self.overhead;
            let idle = (run - self.level0[t].max(0.0)).max(0.0);
            engine.drain_for(&mut self.copies, idle, now + run - idle);
            if detail {
                ops.push(self.timing(t, now, stall, mem, run));
            }
            now += run;
            while let Some(&(_, id)) = self.issue_after.get(after).filter(|e| e.0 == t) {
                engine.push(id, self.is_eviction[id]);
                after += 1;
            }
        }
        // Outputs and evicted buffers must land before the program ends.
        let mut tail = 0.0;
        for &(_, id) in &self.need[need..] {
            if self.copies[id].done_at.is_infinite() {
                tail += engine.drain_until(&mut self.copies, id, now + tail);
            }
        }
        now += tail;
        stall_total += tail;
        SimReport {
            latency_s: now,
            stall_s: stall_total,
            ops,
        }
    }

    fn timing(&self, t: OpId, start_s: f64, stall: f64, mem: f64, run: f64) -> OpTiming {
        let bound = if stall > run {
            Bound::Stalled
        } else if self.compute[t] >= mem {
            Bound::Compute
        } else {
            Bound::Memory
        };
        OpTiming {
            start_s,
            compute_s: self.compute[t],
            memory_s: mem,
            stall_s: stall,
            run_s: run,
            bound,
        }
    }

    fn new_copy(&mut self, b: usize, level: usize, eviction: bool) -> usize {
        self.copies.push(Copy {
            left: self.size[b] / self.copy_bw[level] + self.setup,
            done_at: f64::INFINITY,
        });
        self.is_eviction.push(eviction);
        self.copies.len() - 1
    }
}

/// The two FIFO copy queues.
#[derive(Default)]
struct Engine {
    prefetch: VecDeque<usize>,
    eviction: VecDeque<usize>,
}

impl Engine {
    fn push(&mut self, id: usize, eviction: bool) {
        if eviction {
            self.eviction.push_back(id);
        } else {
            self.prefetch.push_back(id);
        }
    }

    /// Advances the queues for `avail` seconds of idle level 0 starting at `clock`.
    fn drain_for(&mut self, copies: &mut [Copy], mut avail: f64, mut clock: f64) {
        while avail > 0.0 {
            let p = self.prefetch.front().copied();
            let e = self.eviction.front().copied();
            match (p, e) {
                (None, None) => return,
                (Some(a), Some(b)) => {
                    // Both progress at half rate until the first finishes.
                    let dt = (2.0 * copies[a].left).min(2.0 * copies[b].left).min(avail);
                    copies[a].left -= dt / 2.0;
                    copies[b].left -= dt / 2.0;
                    avail -= dt;
                    clock += dt;
                    self.pop_done(copies, clock);
                }
                (Some(a), None) | (None, Some(a)) => {
                    let dt = copies[a].left.min(avail);
                    copies[a].left -= dt;
                    avail -= dt;
                    clock += dt;
                    self.pop_done(copies, clock);
                }
            }
        }
    }

    fn pop_done(&mut self, copies: &mut [Copy], clock: f64) {
        const EPS: f64 = 1e-18;
        for q in [&mut self.prefetch, &mut self.eviction] {
            while let Some(&id) = q.front() {
                if copies[id].left <= EPS {
                    copies[id].left = 0.0;
                    copies[id].done_at = clock;
                    q.pop_front();
                } else {
                    break;
                }
            }
        }
    }

    /// Drains at full bandwidth until copy `id` is done; returns the time waited.
    fn drain_until(&mut self, copies: &mut [Copy], id: usize, clock: f64) -> f64 {
        let mut waited = 0.0;
        while copies[id].done_at.is_infinite() {
            let p = self.prefetch.front().copied();
            let e = self.eviction.front().copied();
            let step = match (p, e) {
                (Some(a), Some(b)) => 2.0 * copies[a].left.min(copies[b].left),
                (Some(a), None) | (None, Some(a)) => copies[a].left,
                (None, None) => unreachable!("copy {id} was never issued: invalid mapping"),
            };
            self.drain_for(copies, step, clock + waited);
            waited += step;
        }
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::CostModel;
    use crate::mapping::{Allocation, BufferPlacement};
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
