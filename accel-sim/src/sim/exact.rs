//! A whole run kept alive over a mapping that changes one buffer at a time, whose latency
//! is the whole run's to the bit.
//!
//! [`super::LiveSim`] keeps each op's memory time as a running sum of the changes made to
//! it, so its latency drifts from a whole run's by rounding. This one keeps what the whole
//! run starts from instead: the bytes each op reads and writes in each level (integers,
//! which add exactly) and its copies, and works out the op's memory time from them as the
//! whole run does ([`SimModel::op_mem`]). A change re-runs the ops it touches with the
//! queues the stored run had there, until the queues agree again, as `LiveSim` does; the
//! stored run is then, op for op, what a whole run of the mapping computes, and the latency
//! is summed in the whole run's order when asked. So a search that changes a few buffers
//! of a large mapping gets the simulator's own figure without simulating every op.

use super::effects::{Effect, SimModel};
use super::live::{edit, load_queues, op_of, same_queues, Change, OpEvents};
use super::queues::{CopyQueues, OpStep};
use crate::mapping::Allocation;
use crate::program::{BufferId, OpId};
use std::sync::Arc;

/// One op of the stored run (the last entry stands for the program end: its `need` are
/// the copies that must land before the end, and its stall is the wait for them).
#[derive(Clone, Debug, Default)]
struct Op {
    /// Per fast level `l` (at `l - 1`): the bytes the op reads and writes there; `None`
    /// when every access is in level 0.
    fast: Option<Arc<Vec<[u64; 2]>>>,
    stall_s: f64,
    run_s: f64,
    events: Option<Arc<OpEvents>>,
    /// The queues just before the op (`None`: both empty).
    entry: Option<Arc<CopyQueues>>,
}

/// A simulation of a mapping that stays equal to a whole run of it ([`super::Simulator::run`])
/// as buffers' allocations change: [`ExactSim::latency_s`] is the whole run's latency, to
/// the bit. Start from [`super::Simulator::exact`] (the all-level-0 mapping) or
/// [`super::Simulator::exact_of`] (any valid mapping). Clones in `O(1)`; a change copies
/// only the ops it re-runs.
#[derive(Clone, Debug)]
pub struct ExactSim {
    model: Arc<SimModel>,
    ops: imbl::Vector<Op>,
}

/// A change's buffers kept between calls: the changes and the ops' rewrites.
type Scratch = (Vec<Change>, Vec<(OpId, Op)>);

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

impl ExactSim {
    /// The stored run of `placements` (each buffer's allocations, sorted by start): one
    /// forward run, as [`super::Simulator::run_with`] makes it.
    pub(super) fn of<'a>(
        model: Arc<SimModel>,
        placements: impl IntoIterator<Item = (BufferId, &'a [Allocation])>,
    ) -> ExactSim {
        let t_count = model.len();
        let fast = model.levels() - 1;
        let mut ops: Vec<Op> = vec![Op::default(); t_count + 1];
        let mut events: Vec<OpEvents> = vec![OpEvents::default(); t_count + 1];
        for (b, allocations) in placements {
            for a in allocations {
                model.effects(b, a, |e| match e {
                    Effect::Access {
                        op,
                        bytes,
                        level,
                        write,
                        ..
                    } => {
                        let f = ops[op]
                            .fast
                            .get_or_insert_with(|| Arc::new(vec![[0, 0]; fast]));
                        Arc::make_mut(f)[level - 1][usize::from(write)] += bytes;
                    }
                    Effect::IssueBefore { op, issue } => {
                        edit(&mut events[op].before, issue, 1.0, |i| i.rank)
                    }
                    Effect::IssueAfter { op, issue } => {
                        edit(&mut events[op].after, issue, 1.0, |i| i.rank)
                    }
                    Effect::Need { op, key } => edit(&mut events[op].need, key, 1.0, |&k| k),
                });
            }
        }
        let mut queues = CopyQueues::default();
        for (t, (op, ev)) in ops.iter_mut().zip(events).enumerate() {
            op.entry = (!queues.is_empty()).then(|| Arc::new(queues.clone()));
            if t == t_count {
                op.stall_s = queues.wait_for(&ev.need);
            } else {
                let (mem_s, level0_s) = mem_of(&model, t, op.fast.as_deref());
                let time = queues.run_op(&OpStep {
                    before: &ev.before,
                    need: &ev.need,
                    after: &ev.after,
                    compute_s: model.compute[t],
                    mem_s,
                    level0_s,
                    overhead_s: model.overhead,
                });
                op.stall_s = time.stall_s;
                op.run_s = time.run_s;
            }
            op.events = (!ev.is_empty()).then(|| Arc::new(ev));
        }
        ExactSim {
            model,
            ops: ops.into_iter().collect(),
        }
    }

    /// The whole run's latency of the mapping as it stands: its ops' stalls and run times
    /// summed in op order, then the wait for the last copies, as the whole run sums them.
    pub fn latency_s(&self) -> f64 {
        let mut now = 0.0;
        let t_count = self.model.len();
        for (t, op) in self.ops.iter().enumerate() {
            if t == t_count {
                now += op.stall_s;
            } else {
                now += op.stall_s;
                now += op.run_s;
            }
        }
        now
    }

    /// Buffer `b`'s allocations change from `old` to `new` (each sorted by start, as in a
    /// valid mapping).
    pub fn change(&mut self, b: BufferId, old: &[Allocation], new: &[Allocation]) {
        let (mut changes, mut writes) = SCRATCH.take();
        changes.clear();
        differences(&self.model, b, old, new, &mut changes);
        if !changes.is_empty() {
            writes.clear();
            self.rerun(&changes, &mut writes);
            let mut focus = self.ops.focus_mut();
            for (t, op) in writes.drain(..) {
                if let Some(slot) = focus.get_mut(t) {
                    *slot = op;
                }
            }
        }
        SCRATCH.set((changes, writes));
    }

    /// Runs again from the first op `changes` touch until the queues agree with the stored
    /// run past the last, jumping over the untouched ops reached with the stored queues
    /// (they run as stored); the ops re-run go to `writes`.
    fn rerun(&self, changes: &[Change], writes: &mut Vec<(OpId, Op)>) {
        let model = &*self.model;
        let t_count = model.len();
        let mut focus = self.ops.focus();
        let mut t = changes[0].0;
        let mut queues = CopyQueues::default();
        load_queues(&mut queues, focus.get(t).and_then(|r| r.entry.as_deref()));
        let mut next = 0;
        let none = OpEvents::default();
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
            let (fast, events) = if mine > 0 {
                let fast = apply(stored, &changes[next..next + mine], &mut edited);
                (fast, &edited)
            } else {
                (
                    stored.fast.clone(),
                    stored.events.as_deref().unwrap_or(&none),
                )
            };
            let entry = if same {
                stored.entry.clone()
            } else {
                (!queues.is_empty()).then(|| Arc::new(queues.clone()))
            };
            let (stall_s, run_s) = if t == t_count {
                (queues.wait_for(&events.need), 0.0)
            } else {
                let (mem_s, level0_s) = mem_of(model, t, fast.as_deref());
                let time = queues.run_op(&OpStep {
                    before: &events.before,
                    need: &events.need,
                    after: &events.after,
                    compute_s: model.compute[t],
                    mem_s,
                    level0_s,
                    overhead_s: model.overhead,
                });
                (time.stall_s, time.run_s)
            };
            let events = if mine > 0 {
                (!edited.is_empty()).then(|| Arc::new(edited.clone()))
            } else {
                stored.events.clone()
            };
            writes.push((
                t,
                Op {
                    fast,
                    stall_s,
                    run_s,
                    events,
                    entry,
                },
            ));
            next += mine;
            t += 1;
        }
    }
}

/// An op's memory time and level-0 traffic from the bytes it moves in each fast level.
fn mem_of(model: &SimModel, t: OpId, fast: Option<&Vec<[u64; 2]>>) -> (f64, f64) {
    match fast {
        Some(f) => model.op_mem(t, f),
        None => model.op_mem(t, &[]),
    }
}

/// The effects of the holds that differ between `old` and `new`, sorted by op, into `out`.
fn differences(
    model: &SimModel,
    b: BufferId,
    old: &[Allocation],
    new: &[Allocation],
    out: &mut Vec<Change>,
) {
    // What the simulator sees of a hold: its offset does not matter.
    let seen = |a: &Allocation| (a.level, a.start, a.end, a.arrival, a.eviction);
    let mut o: Vec<&Allocation> = old.iter().collect();
    let mut n: Vec<&Allocation> = new.iter().collect();
    // Holds in both are left alone; the rest come off and go on.
    o.retain(|a| match n.iter().position(|x| seen(x) == seen(a)) {
        Some(i) => {
            n.remove(i);
            false
        }
        None => true,
    });
    for a in o {
        model.effects(b, a, |e| out.push((op_of(&e), e, -1.0)));
    }
    for a in n {
        model.effects(b, a, |e| out.push((op_of(&e), e, 1.0)));
    }
    out.sort_by_key(|c| c.0);
}

/// The bytes and events of `op` after `changes` (all at that op): the bytes returned, the
/// events written into `events`.
fn apply(op: &Op, changes: &[Change], events: &mut OpEvents) -> Option<Arc<Vec<[u64; 2]>>> {
    match op.events.as_deref() {
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
    let mut fast: Option<Vec<[u64; 2]>> = None;
    for &(_, e, sign) in changes {
        match e {
            Effect::Access {
                bytes,
                level,
                write,
                ..
            } => {
                let f = fast.get_or_insert_with(|| match op.fast.as_deref() {
                    Some(v) => v.clone(),
                    None => Vec::new(),
                });
                if f.len() < level {
                    f.resize(level, [0, 0]);
                }
                let slot = &mut f[level - 1][usize::from(write)];
                if sign > 0.0 {
                    *slot += bytes;
                } else {
                    *slot -= bytes;
                }
            }
            Effect::IssueBefore { issue, .. } => edit(&mut events.before, issue, sign, |i| i.rank),
            Effect::IssueAfter { issue, .. } => edit(&mut events.after, issue, sign, |i| i.rank),
            Effect::Need { key, .. } => edit(&mut events.need, key, sign, |&k| k),
        }
    }
    match fast {
        None => op.fast.clone(),
        Some(f) if f.iter().all(|x| *x == [0, 0]) => None,
        Some(f) => Some(Arc::new(f)),
    }
}
