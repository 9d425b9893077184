//! The two FIFO copy queues (prefetches, evictions) and one op's step through them: the
//! simulator's dynamics, shared by the whole run ([`super::Simulator`]) and the
//! incremental one ([`super::LiveSim`]) so that both do the same arithmetic.

use std::collections::VecDeque;

/// A copy, named by its buffer and the first op of the hold it serves: a buffer's holds
/// are disjoint, and each makes at most one copy (a prefetch in, or an eviction out), so
/// no two copies of a valid mapping share a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct CopyKey(u64);

impl CopyKey {
    pub(crate) fn new(buffer: usize, start: usize) -> CopyKey {
        debug_assert!(buffer < 1 << 32 && start < 1 << 32);
        CopyKey(((buffer as u64) << 32) | start as u64)
    }
}

/// Where a copy joins its queue among the copies issued at the same op: the one needed
/// first goes first, then the smaller, then the one into the lower level. Nothing here
/// depends on how the program numbers its buffers, so neither does the latency: two
/// copies equal in all three take the same time and are needed by the same op, so which
/// of them goes first changes no op's time (the key only makes the order total).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct QueueRank {
    /// The op that must wait for the copy (`T`: the program end).
    pub(crate) need: usize,
    pub(crate) bytes: u64,
    pub(crate) level: usize,
    pub(crate) key: CopyKey,
}

/// A copy put in a queue: which one, where it goes among the copies issued beside it, and
/// its transfer time at full bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Issue {
    pub(crate) rank: QueueRank,
    pub(crate) seconds: f64,
    pub(crate) eviction: bool,
}

impl Issue {
    pub(crate) fn key(&self) -> CopyKey {
        self.rank.key
    }
}

/// A queued copy and the seconds of transfer it has left at full bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Transfer {
    key: CopyKey,
    left: f64,
}

/// What one op brings to the queues, and its own times.
pub(crate) struct OpStep<'a> {
    /// Copies issued when the op begins, in [`QueueRank`] order.
    pub(crate) before: &'a [Issue],
    /// Copies that must be done before it begins.
    pub(crate) need: &'a [CopyKey],
    /// Copies issued after it completes, in [`QueueRank`] order.
    pub(crate) after: &'a [Issue],
    pub(crate) compute_s: f64,
    /// Its memory time under the mapping.
    pub(crate) mem_s: f64,
    /// Its own level-0 traffic time.
    pub(crate) level0_s: f64,
    pub(crate) overhead_s: f64,
}

/// How long one op took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OpTime {
    pub(crate) stall_s: f64,
    /// `max(mem, 0)`: the memory time the op ran with.
    pub(crate) mem_s: f64,
    pub(crate) run_s: f64,
    /// Level 0's idle time during the op, which the queues used.
    pub(crate) idle_s: f64,
}

/// The prefetch and eviction queues between two ops.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CopyQueues {
    prefetch: VecDeque<Transfer>,
    eviction: VecDeque<Transfer>,
}

impl CopyQueues {
    pub(crate) fn is_empty(&self) -> bool {
        self.prefetch.is_empty() && self.eviction.is_empty()
    }

    /// Becomes a copy of `other`, in the buffers it has.
    pub(crate) fn copy_from(&mut self, other: &CopyQueues) {
        self.prefetch.clone_from(&other.prefetch);
        self.eviction.clone_from(&other.eviction);
    }

    pub(crate) fn clear(&mut self) {
        self.prefetch.clear();
        self.eviction.clear();
    }

    /// Seconds of transfer queued: prefetches, evictions.
    pub(crate) fn backlog(&self) -> [f64; 2] {
        let sum = |q: &VecDeque<Transfer>| q.iter().map(|c| c.left).sum();
        [sum(&self.prefetch), sum(&self.eviction)]
    }

    #[inline]
    pub(crate) fn push(&mut self, issue: &Issue) {
        let t = Transfer {
            key: issue.key(),
            left: issue.seconds,
        };
        if issue.eviction {
            self.eviction.push_back(t);
        } else {
            self.prefetch.push_back(t);
        }
    }

    /// Runs op `step` after the queues' state before it: returns its times and leaves the
    /// queues as they are after it.
    #[inline]
    pub(crate) fn run_op(&mut self, step: &OpStep<'_>) -> OpTime {
        for i in step.before {
            self.push(i);
        }
        let stall_s = self.wait_for(step.need);
        let mem_s = step.mem_s.max(0.0);
        let run_s = step.compute_s.max(mem_s) + step.overhead_s;
        let idle_s = (run_s - step.level0_s.max(0.0)).max(0.0);
        self.drain_for(idle_s);
        for i in step.after {
            self.push(i);
        }
        OpTime {
            stall_s,
            mem_s,
            run_s,
            idle_s,
        }
    }

    /// Waits, draining at full bandwidth (nothing else uses level 0 meanwhile), until each
    /// copy of `need` is done; returns the time waited. The wait is one sum of the same
    /// steps (one per copy finished) in whatever order `need` lists the copies.
    pub(crate) fn wait_for(&mut self, need: &[CopyKey]) -> f64 {
        let mut stall = 0.0;
        if self.is_empty() {
            return stall;
        }
        while need.iter().any(|&key| self.holds(key)) {
            let step = match (self.prefetch.front(), self.eviction.front()) {
                (Some(a), Some(b)) => 2.0 * a.left.min(b.left),
                (Some(a), None) | (None, Some(a)) => a.left,
                // `holds` found a needed copy in a queue.
                (None, None) => break,
            };
            self.drain_for(step);
            stall += step;
        }
        stall
    }

    fn holds(&self, key: CopyKey) -> bool {
        self.prefetch.iter().any(|c| c.key == key) || self.eviction.iter().any(|c| c.key == key)
    }

    /// Advances the queues for `avail` seconds of idle level 0.
    fn drain_for(&mut self, mut avail: f64) {
        while avail > 0.0 {
            match (self.prefetch.front_mut(), self.eviction.front_mut()) {
                (None, None) => return,
                (Some(a), Some(b)) => {
                    // Both progress at half rate until the first finishes.
                    let dt = (2.0 * a.left).min(2.0 * b.left).min(avail);
                    a.left -= dt / 2.0;
                    b.left -= dt / 2.0;
                    avail -= dt;
                }
                (Some(a), None) | (None, Some(a)) => {
                    let dt = a.left.min(avail);
                    a.left -= dt;
                    avail -= dt;
                }
            }
            self.pop_done();
        }
    }

    fn pop_done(&mut self) {
        const EPS: f64 = 1e-18;
        for q in [&mut self.prefetch, &mut self.eviction] {
            while q.front().is_some_and(|c| c.left <= EPS) {
                q.pop_front();
            }
        }
    }
}
