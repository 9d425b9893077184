//! What one allocation changes in a simulation, op by op: the one definition the whole run
//! and the incremental run both read, so that they charge the same things.

use super::queues::{CopyKey, Issue, QueueRank};
use crate::hardware::Hardware;
use crate::mapping::{Allocation, Arrival};
use crate::program::{BufferId, OpId, Program, UseLists};

/// One allocation's effect on one op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Effect {
    /// The op's memory time and its level-0 traffic time change by these amounts: it
    /// reads (or, with `write`, writes) `bytes` in fast level `level` instead of level 0.
    Access {
        op: OpId,
        mem_s: f64,
        level0_s: f64,
        bytes: u64,
        level: usize,
        write: bool,
    },
    /// A copy is issued when the op begins.
    IssueBefore { op: OpId, issue: Issue },
    /// A copy is issued after the op completes.
    IssueAfter { op: OpId, issue: Issue },
    /// A copy must be done before the op begins (`op == T`: before the program ends).
    Need { op: OpId, key: CopyKey },
}

/// The simulator's constants for one (program, hardware) pair.
#[derive(Clone, Debug)]
pub(crate) struct SimModel {
    pub(crate) compute: Vec<f64>,
    pub(crate) overhead: f64,
    inv_read: Vec<f64>,
    inv_write: Vec<f64>,
    copy_bw: Vec<f64>,
    setup: f64,
    size: Vec<f64>,
    bytes: Vec<u64>,
    /// Per op: the bytes it reads and writes in all.
    pub(crate) op_bytes: Vec<[u64; 2]>,
    /// Per op: its memory time with every access in level 0.
    pub(crate) all_slow_mem: Vec<f64>,
    uses: UseLists,
}

impl SimModel {
    pub(crate) fn new(program: &Program, hw: &Hardware) -> SimModel {
        let size: Vec<f64> = program.buffers().iter().map(|b| b.size as f64).collect();
        let inv_read: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.read_bw).collect();
        let inv_write: Vec<f64> = hw.levels.iter().map(|l| 1.0 / l.write_bw).collect();
        let bytes: Vec<u64> = program.buffers().iter().map(|b| b.size).collect();
        let op_bytes: Vec<[u64; 2]> = program
            .ops()
            .iter()
            .map(|op| {
                let sum = |list: &[BufferId]| list.iter().map(|&b| bytes[b]).sum::<u64>();
                [sum(&op.reads), sum(&op.writes)]
            })
            .collect();
        let all_slow_mem = op_bytes
            .iter()
            .map(|&[r, w]| r as f64 * inv_read[0] + w as f64 * inv_write[0])
            .collect();
        SimModel {
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
            bytes,
            op_bytes,
            all_slow_mem,
            uses: UseLists::new(program),
        }
    }

    /// Number of ops.
    pub(crate) fn len(&self) -> usize {
        self.compute.len()
    }

    /// Number of memory levels.
    pub(crate) fn levels(&self) -> usize {
        self.inv_read.len()
    }

    /// An op's memory time and its level-0 traffic time when it reads and writes
    /// `fast[l - 1] = [read, write]` bytes in fast level `l` and the rest in level 0. The
    /// sums run over bytes, which add exactly, and then over levels in a fixed order, so
    /// the times do not depend on the order the accesses were counted in.
    pub(crate) fn op_mem(&self, t: OpId, fast: &[[u64; 2]]) -> (f64, f64) {
        let [mut r0, mut w0] = self.op_bytes[t];
        for &[r, w] in fast {
            r0 -= r;
            w0 -= w;
        }
        let level0 = r0 as f64 * self.inv_read[0] + w0 as f64 * self.inv_write[0];
        let mut mem = level0;
        for (l, &[r, w]) in fast.iter().enumerate() {
            mem += r as f64 * self.inv_read[l + 1] + w as f64 * self.inv_write[l + 1];
        }
        (mem, level0)
    }

    fn issue(&self, b: BufferId, a: &Allocation, eviction: bool, need: OpId) -> Issue {
        Issue {
            rank: QueueRank {
                need,
                bytes: self.bytes[b],
                level: a.level,
                key: CopyKey::new(b, a.start),
            },
            seconds: self.size[b] / self.copy_bw[a.level] + self.setup,
            eviction,
        }
    }

    /// Calls `f` with each effect of allocation `a` of buffer `b`, in a fixed order.
    #[inline(always)]
    pub(crate) fn effects(&self, b: BufferId, a: &Allocation, mut f: impl FnMut(Effect)) {
        let size = self.size[b];
        let lvl = a.level;
        let uses = self.uses.of(b);
        match a.arrival {
            Arrival::Defined => {
                f(Effect::Access {
                    op: a.start,
                    mem_s: size * (self.inv_write[lvl] - self.inv_write[0]),
                    level0_s: -size * self.inv_write[0],
                    bytes: self.bytes[b],
                    level: lvl,
                    write: true,
                });
                if let Some(e) = a.eviction {
                    let issue = self.issue(b, a, true, a.end + 1);
                    f(Effect::IssueAfter { op: e, issue });
                    f(Effect::Need {
                        op: a.end + 1,
                        key: issue.key(),
                    });
                }
            }
            Arrival::Prefetch => {
                // Needed by the first use it serves; later uses come later. A valid
                // mapping's prefetch serves a use; without one nothing waits for it.
                let need = uses.get(uses.partition_point(|&u| u < a.start)).copied();
                let issue = self.issue(b, a, false, need.unwrap_or(self.len()));
                f(Effect::IssueBefore { op: a.start, issue });
                if let Some(u) = need {
                    f(Effect::Need {
                        op: u,
                        key: issue.key(),
                    });
                }
            }
        }
        // The uses the hold serves, found by binary search: a buffer with many uses and
        // many allocations made a scan per allocation quadratic.
        let first = uses.partition_point(|&u| u < a.start);
        let last = uses.partition_point(|&u| u <= a.end).max(first);
        for &u in &uses[first..last] {
            f(Effect::Access {
                op: u,
                mem_s: size * (self.inv_read[lvl] - self.inv_read[0]),
                level0_s: -size * self.inv_read[0],
                bytes: self.bytes[b],
                level: lvl,
                write: false,
            });
        }
    }
}
