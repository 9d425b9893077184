//! The simulator kept alive over a mapping that changes one buffer at a time.
//!
//! A change to a buffer's allocations touches a few ops (the hold's start, its uses, its
//! eviction and the ops that wait for its copies). The run is redone from the first of
//! them, with the copy queues as they stood before it, and stops at the first op past the
//! last of them where the queues are again as the previous run left them: from there on
//! every op sees the same queues and the same inputs, so it takes the same time. The
//! latency moves by the difference over the ops redone. The per-op state sits in a
//! persistent vector, so a clone is `O(1)` and a change copies only what it rewrites.

use super::effects::{Effect, SimModel};
use super::queues::{CopyKey, CopyQueues, Issue, OpStep};
use crate::mapping::Allocation;
use crate::program::{BufferId, OpId};
use std::sync::Arc;

/// The copies an op issues and waits for, as the whole run orders them: issues by
/// [`super::queues::QueueRank`], needs by key (the wait does not depend on their order).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct OpEvents {
    pub(super) before: Vec<Issue>,
    pub(super) need: Vec<CopyKey>,
    pub(super) after: Vec<Issue>,
}

impl OpEvents {
    pub(super) fn is_empty(&self) -> bool {
        self.before.is_empty() && self.need.is_empty() && self.after.is_empty()
    }
}

/// One op of the run (the last entry stands for the program end: its `need` are the
/// copies that must land before the end, and its stall is the wait for them).
#[derive(Clone, Debug, Default)]
struct OpRec {
    mem_s: f64,
    level0_s: f64,
    stall_s: f64,
    run_s: f64,
    idle_s: f64,
    events: Option<Arc<OpEvents>>,
    /// The queues just before the op (`None`: both empty).
    entry: Option<Arc<CopyQueues>>,
}

/// What the simulator knows at one op of a [`LiveSim`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpState {
    /// Waiting for copies before the op began.
    pub stall_s: f64,
    /// The op's own duration.
    pub run_s: f64,
    /// Level 0's idle time during the op (what copies could use).
    pub idle_s: f64,
    /// Seconds of copy work queued just before the op: prefetches, evictions.
    pub backlog_s: [f64; 2],
}

/// A simulation of a mapping kept up to date as the mapping changes one buffer at a
/// time, with the same arithmetic as [`super::Simulator`]: its latency stays within
/// rounding of a whole run of the same mapping (the tests hold it to 1e-9). Start from
/// [`super::Simulator::live`] (the all-level-0 mapping).
#[derive(Clone, Debug)]
pub struct LiveSim {
    model: Arc<SimModel>,
    ops: imbl::Vector<OpRec>,
    latency_s: f64,
    stall_s: f64,
}

/// One allocation's effect with its sign: +1 for a hold the change adds, -1 for one it
/// removes.
pub(super) type Change = (OpId, Effect, f64);

/// The ops a change rewrites, with their new records.
type Writes = Vec<(OpId, OpRec)>;

thread_local! {
    /// A change's effects and the ops it rewrites, reused across the changes of a thread
    /// (allocating them every turn was a tenth of a game's simulation time).
    static SCRATCH: std::cell::Cell<(Vec<Change>, Writes)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

impl LiveSim {
    pub(super) fn new(model: Arc<SimModel>) -> LiveSim {
        let mut queues = CopyQueues::default();
        let mut latency_s = 0.0;
        let mut ops: Vec<OpRec> = (0..model.len())
            .map(|t| {
                let mem_s = model.all_slow_mem[t];
                let time = queues.run_op(&OpStep {
                    before: &[],
                    need: &[],
                    after: &[],
                    compute_s: model.compute[t],
                    mem_s,
                    level0_s: mem_s,
                    overhead_s: model.overhead,
                });
                latency_s += time.run_s;
                OpRec {
                    mem_s,
                    level0_s: mem_s,
                    stall_s: 0.0,
                    run_s: time.run_s,
                    idle_s: time.idle_s,
                    events: None,
                    entry: None,
                }
            })
            .collect();
        ops.push(OpRec::default());
        LiveSim {
            model,
            ops: ops.into_iter().collect(),
            latency_s,
            stall_s: 0.0,
        }
    }

    /// The simulated latency of the mapping as it stands.
    pub fn latency_s(&self) -> f64 {
        self.latency_s
    }

    /// The total wait for copies.
    pub fn stall_s(&self) -> f64 {
        self.stall_s
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.model.len()
    }

    /// Always false for a program (a program has an op).
    pub fn is_empty(&self) -> bool {
        self.model.len() == 0
    }

    /// What the simulator knows at op `t` (`t == len()`: the program end, whose stall is
    /// the wait for the last copies).
    pub fn op(&self, t: OpId) -> OpState {
        let r = &self.ops[t];
        OpState {
            stall_s: r.stall_s,
            run_s: r.run_s,
            idle_s: r.idle_s,
            backlog_s: r.entry.as_ref().map_or([0.0; 2], |q| q.backlog()),
        }
    }

    /// The sums of the stalls and of level 0's idle time over ops `lo..=hi`.
    pub fn stall_and_idle(&self, lo: OpId, hi: OpId) -> (f64, f64) {
        let mut focus = self.ops.focus();
        let (mut stall, mut idle) = (0.0, 0.0);
        for t in lo..=hi.min(self.model.len().saturating_sub(1)) {
            if let Some(r) = focus.get(t) {
                stall += r.stall_s;
                idle += r.idle_s;
            }
        }
        (stall, idle)
    }

    /// Buffer `b`'s allocations change from `old` to `new` (each sorted by start, as in a
    /// valid mapping); returns the new latency.
    pub fn change(&mut self, b: BufferId, old: &[Allocation], new: &[Allocation]) -> f64 {
        let (mut changes, mut writes) = SCRATCH.take();
        self.changes(b, old, new, &mut changes);
        if !changes.is_empty() {
            writes.clear();
            let (latency, stall) = self.rerun(&changes, Some(&mut writes));
            let mut focus = self.ops.focus_mut();
            for (t, rec) in writes.drain(..) {
                if let Some(slot) = focus.get_mut(t) {
                    *slot = rec;
                }
            }
            self.latency_s += latency;
            self.stall_s += stall;
        }
        SCRATCH.set((changes, writes));
        self.latency_s
    }

    /// The latency if buffer `b`'s allocations changed from `old` to `new`, leaving this
    /// simulation as it is.
    pub fn latency_with(&self, b: BufferId, old: &[Allocation], new: &[Allocation]) -> f64 {
        let (mut changes, writes) = SCRATCH.take();
        self.changes(b, old, new, &mut changes);
        let latency = if changes.is_empty() {
            self.latency_s
        } else {
            self.latency_s + self.rerun(&changes, None).0
        };
        SCRATCH.set((changes, writes));
        latency
    }

    /// The effects of the holds that differ between `old` and `new`, sorted by op, into
    /// `out` (cleared first).
    fn changes(&self, b: BufferId, old: &[Allocation], new: &[Allocation], out: &mut Vec<Change>) {
        // What the simulator sees of a hold: its offset does not matter.
        let seen = |a: &Allocation| (a.level, a.start, a.end, a.arrival, a.eviction);
        out.clear();
        let (mut i, mut j) = (0, 0);
        let mut push = |a: &Allocation, sign: f64| {
            self.model.effects(b, a, |e| out.push((op_of(&e), e, sign)));
        };
        while i < old.len() || j < new.len() {
            match (old.get(i), new.get(j)) {
                (Some(x), Some(y)) if seen(x) == seen(y) => {
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.start <= y.start => {
                    push(x, -1.0);
                    i += 1;
                    if x.start == y.start {
                        push(y, 1.0);
                        j += 1;
                    }
                }
                (Some(x), None) => {
                    push(x, -1.0);
                    i += 1;
                }
                (_, Some(y)) => {
                    push(y, 1.0);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        out.sort_by_key(|c| c.0);
    }

    /// Runs again from the first op `changes` touch until the queues match the stored
    /// run past the last; returns the change in latency and in stall, and the ops to
    /// store into `writes` when given. An op that no change touches, reached with the
    /// queues the stored run had there, runs as stored (the same inputs give the same
    /// times and leave the same queues), and so does every op up to the next change: the
    /// run jumps there, so its cost follows the ops whose queues differ, not the span of
    /// the buffer's live range.
    fn rerun(&self, changes: &[Change], mut writes: Option<&mut Writes>) -> (f64, f64) {
        let t_count = self.model.len();
        let mut focus = self.ops.focus();
        let mut t = changes[0].0;
        let mut queues = CopyQueues::default();
        load_queues(&mut queues, focus.get(t).and_then(|r| r.entry.as_deref()));
        let (mut d_latency, mut d_stall) = (0.0, 0.0);
        let mut next = 0;
        let none = OpEvents::default();
        // A changed op's events, rebuilt in one buffer for the whole run.
        let mut edited = OpEvents::default();
        while t <= t_count {
            let Some(stored) = focus.get(t) else { break };
            let mine = changes[next..].iter().take_while(|c| c.0 == t).count();
            let same = same_queues(stored.entry.as_deref(), &queues);
            if mine == 0 && same {
                match changes.get(next) {
                    Some(c) => {
                        t = c.0;
                        load_queues(&mut queues, focus.get(t).and_then(|r| r.entry.as_deref()));
                        continue;
                    }
                    None => break,
                }
            }
            let (mem_s, level0_s, events) = if mine > 0 {
                let (m, l) = apply(stored, &changes[next..next + mine], &mut edited);
                (m, l, &edited)
            } else {
                let events = stored.events.as_deref().unwrap_or(&none);
                (stored.mem_s, stored.level0_s, events)
            };
            // The queues before the op, shared with the stored run where they agree with
            // it; empty ones are stored as none.
            let entry = match &writes {
                None => None,
                Some(_) if same => stored.entry.clone(),
                Some(_) => (!queues.is_empty()).then(|| Arc::new(queues.clone())),
            };
            let (stall_s, run_s, idle_s) = if t == t_count {
                (queues.wait_for(&events.need), 0.0, 0.0)
            } else {
                let time = queues.run_op(&OpStep {
                    before: &events.before,
                    need: &events.need,
                    after: &events.after,
                    compute_s: self.model.compute[t],
                    mem_s,
                    level0_s,
                    overhead_s: self.model.overhead,
                });
                (time.stall_s, time.run_s, time.idle_s)
            };
            d_latency += (stall_s + run_s) - (stored.stall_s + stored.run_s);
            d_stall += stall_s - stored.stall_s;
            if let Some(w) = writes.as_deref_mut() {
                let events = if mine > 0 {
                    (!edited.is_empty()).then(|| Arc::new(edited.clone()))
                } else {
                    stored.events.clone()
                };
                w.push((
                    t,
                    OpRec {
                        mem_s,
                        level0_s,
                        stall_s,
                        run_s,
                        idle_s,
                        events,
                        entry,
                    },
                ));
            }
            next += mine;
            t += 1;
        }
        (d_latency, d_stall)
    }
}

pub(super) fn op_of(e: &Effect) -> OpId {
    match *e {
        Effect::Access { op, .. }
        | Effect::IssueBefore { op, .. }
        | Effect::IssueAfter { op, .. }
        | Effect::Need { op, .. } => op,
    }
}

/// Sets `queues` to the stored queues before an op, reusing its buffers.
pub(super) fn load_queues(queues: &mut CopyQueues, stored: Option<&CopyQueues>) {
    match stored {
        Some(q) => queues.copy_from(q),
        None => queues.clear(),
    }
}

/// Whether the stored queues before an op (`None`: empty) are `queues`.
pub(super) fn same_queues(stored: Option<&CopyQueues>, queues: &CopyQueues) -> bool {
    match stored {
        None => queues.is_empty(),
        Some(s) => s == queues,
    }
}

/// The inputs of `rec`'s op after `changes` (all at that op): its memory times, returned
/// in the order the changes add them, and its events, written into `events`.
fn apply(rec: &OpRec, changes: &[Change], events: &mut OpEvents) -> (f64, f64) {
    match rec.events.as_deref() {
        Some(e) => {
            events.before.clone_from(&e.before);
            events.need.clone_from(&e.need);
            events.after.clone_from(&e.after);
        }
        None => {
            events.before.clear();
            events.need.clear();
            events.after.clear();
        }
    }
    let (mut m, mut l) = (rec.mem_s, rec.level0_s);
    for &(_, e, sign) in changes {
        match e {
            Effect::Access {
                mem_s, level0_s, ..
            } => {
                m += sign * mem_s;
                l += sign * level0_s;
            }
            Effect::IssueBefore { issue, .. } => edit(&mut events.before, issue, sign, |i| i.rank),
            Effect::IssueAfter { issue, .. } => edit(&mut events.after, issue, sign, |i| i.rank),
            Effect::Need { key, .. } => edit(&mut events.need, key, sign, |&k| k),
        }
    }
    (m, l)
}

/// Inserts `item` into `list` in key order (`sign > 0`) or removes it.
pub(super) fn edit<T: Copy, K: Ord>(list: &mut Vec<T>, item: T, sign: f64, key: impl Fn(&T) -> K) {
    let k = key(&item);
    let at = list.partition_point(|x| key(x) < k);
    if sign > 0.0 {
        list.insert(at, item);
    } else if list.get(at).is_some_and(|x| key(x) == k) {
        list.remove(at);
    }
}
