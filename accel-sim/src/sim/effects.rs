//! What one allocation changes in a simulation, op by op: the one definition the whole run
//! and the incremental run both read, so that they charge the same things.

use super::queues::{CopyKey, Issue};
use crate::hardware::Hardware;
use crate::mapping::{Allocation, Arrival};
use crate::program::{BufferId, OpId, Program, UseLists};

/// One allocation's effect on one op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Effect {
    /// The op's memory time and its level-0 traffic time change by these amounts.
    Access { op: OpId, mem_s: f64, level0_s: f64 },
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
    /// Per op: its memory time with every access in level 0.
    pub(crate) all_slow_mem: Vec<f64>,
    uses: UseLists,
}

impl SimModel {
    pub(crate) fn new(program: &Program, hw: &Hardware) -> SimModel {
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
            all_slow_mem,
            uses: UseLists::new(program),
        }
    }

    /// Number of ops.
    pub(crate) fn len(&self) -> usize {
        self.compute.len()
    }

    fn issue(&self, b: BufferId, a: &Allocation, eviction: bool) -> Issue {
        Issue {
            key: CopyKey::new(b, a.start),
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
                });
                if let Some(e) = a.eviction {
                    let issue = self.issue(b, a, true);
                    f(Effect::IssueAfter { op: e, issue });
                    f(Effect::Need {
                        op: a.end + 1,
                        key: issue.key,
                    });
                }
            }
            Arrival::Prefetch => {
                let issue = self.issue(b, a, false);
                f(Effect::IssueBefore { op: a.start, issue });
                // Needed by the first use it serves; later uses come later.
                if let Some(&u) = uses.get(uses.partition_point(|&u| u < a.start)) {
                    f(Effect::Need {
                        op: u,
                        key: issue.key,
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
            });
        }
    }
}
